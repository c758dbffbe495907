//! [`McplHostBuilder`]: the host's handlers, sinks and limits, set once before the
//! [`McplHost`] exists.
//!
//! A built host has a fixed configuration: its clones share the connection state (readiness,
//! grant, manifest, channels) and nothing else can change what they do, except the policy
//! ([`McplHost::set_policy`]), which is runtime state.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::channels::IncomingMessage;
use mcpl_core::mcpl::hooks::ModelInfo;
use mcpl_core::mcpl::inference::InferenceResult;
use mcpl_core::mcpl::push::PushEventParams;
use serde_json::Value;

use super::diagnostics::Sink;
use super::{
    ChangeReceipt, DEFAULT_FETCH_BURST, DEFAULT_FETCH_WINDOW, DEFAULT_HOOK_TIMEOUT,
    DEFAULT_POLICY_TIMEOUT, DEFAULT_PUSH_DEDUPE, Diagnostic, Handlers, HostPolicy, IncomingOutcome,
    InferenceCall, Inner, McplHost, Options, PushOutcome, ReceiptSink, StateCall,
};

/// Configures an [`McplHost`]: the handlers for what servers ask of the host, the diagnostic
/// and change-receipt sinks, and the limits. [`build`](Self::build) makes the host once;
/// configuring a clone of the builder never changes a host already built.
///
/// # Examples
///
/// ```
/// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
/// use mcpl_core::mcpl::capability::paths;
///
/// let builder = McplHost::builder(HostPolicy::default());
/// let plain = builder.clone().build();
/// let host = builder.on_push_event(|_event| async { PushOutcome::accepted(None) }).build();
/// // Each host has the configuration it was built with.
/// assert!(host.supported().contains(paths::PUSH_EVENTS));
/// assert!(!plain.supported().contains(paths::PUSH_EVENTS));
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct McplHostBuilder {
    pub(super) policy: HostPolicy,
    pub(super) handlers: Handlers,
    pub(super) options: Options,
    pub(super) sink: Option<Sink>,
    pub(super) receipts: Option<ReceiptSink>,
}

impl std::fmt::Debug for McplHostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McplHostBuilder")
            .field("policy", &self.policy)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl From<McplHostBuilder> for McplHost {
    fn from(builder: McplHostBuilder) -> McplHost {
        builder.build()
    }
}

impl McplHostBuilder {
    /// A builder with `policy`, no handlers and the default limits.
    pub fn new(policy: HostPolicy) -> McplHostBuilder {
        McplHostBuilder {
            policy,
            handlers: Handlers::default(),
            options: Options {
                hook_timeout: DEFAULT_HOOK_TIMEOUT,
                policy_timeout: DEFAULT_POLICY_TIMEOUT,
                push_dedupe: DEFAULT_PUSH_DEDUPE,
                fetch_burst: DEFAULT_FETCH_BURST,
                fetch_window: DEFAULT_FETCH_WINDOW,
                refresh_on_change: true,
                state_budget: mcpl_core::mcpl::state::StateBudget::default(),
            },
            sink: None,
            receipts: None,
        }
    }

    /// Builds the host. Its configuration is fixed from here on.
    pub fn build(self) -> McplHost {
        McplHost {
            inner: Arc::new(Inner {
                handlers: self.handlers,
                options: self.options,
                policy: Mutex::new(self.policy),
                session: Mutex::new(None),
                grant_lock: tokio::sync::Mutex::new(()),
                sink: self.sink,
                receipts: self.receipts,
            }),
        }
    }

    fn update_handlers(mut self, f: impl FnOnce(&mut Handlers)) -> McplHostBuilder {
        f(&mut self.handlers);
        self
    }

    fn update_options(mut self, f: impl FnOnce(&mut Options)) -> McplHostBuilder {
        f(&mut self.options);
        self
    }

    /// Handles `push/event` (and advertises `pushEvents`). The handler sees each admitted
    /// event once: a repeated `eventId` is answered with the first answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_core::types::ContentBlock;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let inbox = Arc::new(Mutex::new(Vec::new()));
    /// let seen = inbox.clone();
    /// let host = McplHost::builder(HostPolicy::default()).on_push_event(move |event| {
    ///     let seen = seen.clone();
    ///     async move {
    ///         for block in &event.payload.content {
    ///             if let McplContent::Text { text } = block {
    ///                 seen.lock().unwrap().push(text.clone());
    ///             }
    ///         }
    ///         PushOutcome::accepted(None)
    ///     }
    /// }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    ///
    /// let result = client.call_tool("alert", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("accepted: true")]);
    /// assert_eq!(*inbox.lock().unwrap(), ["Disk almost full"]);
    /// # Ok(()) }
    /// ```
    pub fn on_push_event<F, Fut>(self, handler: F) -> McplHostBuilder
    where
        F: Fn(PushEventParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PushOutcome> + Send + 'static,
    {
        self.update_handlers(|h| h.push = Some(Arc::new(move |e| Box::pin(handler(e)))))
    }

    /// Handles `inference/request` (and advertises `inferenceRequest` with streaming). When
    /// the server asked for `stream: true`, [`InferenceCall::chunks`] sends `inference/chunk`s.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::hooks::Usage;
    /// use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
    /// use mcpl_core::types::ContentBlock;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// // The host runs its model for the server (here a canned one).
    /// let host = McplHost::builder(HostPolicy::default()).on_inference(|call| async move {
    ///     assert_eq!(call.params.feature_set, "summaries");
    ///     Ok(InferenceResult::new(
    ///         "The disk is nearly full.",
    ///         "host-model",
    ///         FinishReason::EndTurn,
    ///         Usage::new(12, 6),
    ///     ))
    /// }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    ///
    /// // The server's `summarize` tool asks the host for an inference.
    /// let result = client.call_tool("summarize", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("The disk is nearly full.")]);
    /// # Ok(()) }
    /// ```
    pub fn on_inference<F, Fut>(self, handler: F) -> McplHostBuilder
    where
        F: Fn(InferenceCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<InferenceResult, ErrorObject>> + Send + 'static,
    {
        self.update_handlers(|h| h.inference = Some(Arc::new(move |c| Box::pin(handler(c)))))
    }

    /// Answers `model/info` (and advertises `modelInfo`). Without it the host answers
    /// `-32601`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::hooks::ModelInfo;
    /// use mcpl_core::types::ContentBlock;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::builder(HostPolicy::default()).on_model_info(|| async {
    ///     Ok(ModelInfo::new("claude-example", "example", 200_000)
    ///         .with_capabilities(vec!["tools".into()]))
    /// }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    ///
    /// // The server's `model` tool asks which model the host runs.
    /// let result = client.call_tool("model", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("claude-example")]);
    /// # Ok(()) }
    /// ```
    pub fn on_model_info<F, Fut>(self, handler: F) -> McplHostBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ModelInfo, ErrorObject>> + Send + 'static,
    {
        self.update_handlers(|h| h.model_info = Some(Arc::new(move || Box::pin(handler()))))
    }

    /// Handles each admitted `channels/incoming` message (and advertises
    /// `channels.incoming`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, IncomingOutcome, McplHost};
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let host = McplHost::builder(HostPolicy::default()).on_channel_message(|message| async move {
    ///     // Route the message to the conversation of its channel.
    ///     let conversation_id = Some(format!("conversation-for-{}", message.channel_id));
    ///     IncomingOutcome::Accepted { conversation_id }
    /// }).build();
    /// assert!(host.supported().contains(paths::CHANNELS_INCOMING));
    /// ```
    pub fn on_channel_message<F, Fut>(self, handler: F) -> McplHostBuilder
    where
        F: Fn(IncomingMessage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = IncomingOutcome> + Send + 'static,
    {
        self.update_handlers(|h| h.incoming = Some(Arc::new(move |m| Box::pin(handler(m)))))
    }

    /// Serves the server's requests about host-kept state, `state/update` and `state/get`
    /// (methods of the unmerged MCPL 0.5 state branch, which hosts and servers in the wild
    /// use). Each is admitted like a tagged message exercising `tools`: after the initial
    /// policy, with `tools` granted, for a declared and enabled feature set (else `-32002`,
    /// `-32602`, `-32003`, `-32001`). Without a handler both are `-32601`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use std::sync::{Arc, Mutex};
    ///
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, StateCall};
    /// use mcpl_core::jsonrpc::ErrorObject;
    /// use serde_json::{Value, json};
    ///
    /// // The host keeps each feature set's latest state.
    /// let kept: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
    /// let host = McplHost::builder(HostPolicy::default()).on_state(move |call| {
    ///     let kept = kept.clone();
    ///     async move {
    ///         let mut kept = kept.lock().map_err(|_| ErrorObject::internal("state lock"))?;
    ///         match call {
    ///             StateCall::Update { feature_set, params } => {
    ///                 kept.insert(feature_set, params["data"].clone());
    ///                 Ok(json!({}))
    ///             }
    ///             StateCall::Get { feature_set } => Ok(json!({"data": kept.get(&feature_set)})),
    ///         }
    ///     }
    /// }).build();
    /// # drop(host);
    /// ```
    pub fn on_state<F, Fut>(self, handler: F) -> McplHostBuilder
    where
        F: Fn(StateCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.update_handlers(|h| h.state = Some(Arc::new(move |c| Box::pin(handler(c)))))
    }

    /// Receives every [`Diagnostic`] (they are also logged with `tracing`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::types::ContentBlock;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let diagnostics = Arc::new(Mutex::new(Vec::new()));
    /// let sink = diagnostics.clone();
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|event| async move {
    ///         // The un-namespaced tag "urgent" was cleaned away before the handler saw the event.
    ///         assert_eq!(event.tags, Some(vec!["acme:disk".to_owned()]));
    ///         PushOutcome::accepted(None)
    ///     })
    ///     .on_diagnostic(move |d| sink.lock().unwrap().push(d.kind()))
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    ///
    /// // The server's event carries the tags "acme:disk" and "urgent".
    /// let result = client.call_tool("alert", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("accepted: true")]);
    /// assert!(!diagnostics.lock().unwrap().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn on_diagnostic(
        mut self,
        sink: impl Fn(&Diagnostic) + Send + Sync + 'static,
    ) -> McplHostBuilder {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// Receives every [`ChangeReceipt`] (one per manifest change applied).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::changes::ChangeDomain;
    /// use mcpl_core::mcpl::manifest::FeatureSet;
    /// use mcpl_core::mcpl::policy::PolicyReceipt;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = alerts_server().await?;
    /// let (tx, mut receipts) = tokio::sync::mpsc::unbounded_channel();
    /// let host = McplHost::builder(HostPolicy::default()).on_change_receipt(move |receipt| {
    ///     tx.send(receipt.clone()).ok();
    /// }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// // The server adds a feature set; the host fetches the new manifest and reports the change.
    /// let mut next = server.mcpl_manifest().expect("an MCPL server");
    /// next = next.with_feature_set("digest", FeatureSet::new("Daily digest", ["pushEvents"]));
    /// let revision = server.set_mcpl_manifest(next)?;
    /// let receipt = receipts.recv().await.expect("a receipt");
    /// assert_eq!(receipt.revision, Some(revision.to_string()));
    /// assert_eq!(receipt.domains, [ChangeDomain::FeatureSets]);
    /// // The new grant went to the server with the change, and it answered.
    /// assert!(matches!(receipt.policy_receipt, Some(PolicyReceipt::Accepted(_))));
    /// # Ok(()) }
    /// ```
    pub fn on_change_receipt(
        mut self,
        sink: impl Fn(&ChangeReceipt) + Send + Sync + 'static,
    ) -> McplHostBuilder {
        self.receipts = Some(Arc::new(sink));
        self
    }

    /// The `context/beforeInference` timeout (default 5 s); on timeout the host goes on
    /// without that server's injections.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    ///
    /// // Go on without a slow server's injections after 500 ms.
    /// let host = McplHost::builder(HostPolicy::default()).with_hook_timeout(Duration::from_millis(500)).build();
    /// # drop(host);
    /// ```
    pub fn with_hook_timeout(self, timeout: Duration) -> McplHostBuilder {
        self.update_options(|o| o.hook_timeout = timeout)
    }

    /// How long the host waits for a `featureSets/update` receipt (default 30 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, McplStatus};
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::builder(HostPolicy::default()).with_policy_timeout(Duration::from_secs(10)).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// // This server answers at once; one that did not within 10 s would leave MCPL off.
    /// assert_eq!(host.status(), Some(McplStatus::Ready));
    /// # Ok(()) }
    /// ```
    pub fn with_policy_timeout(self, timeout: Duration) -> McplHostBuilder {
        self.update_options(|o| o.policy_timeout = timeout)
    }

    /// How many accepted `eventId`s are remembered per connection (default 1024).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::types::ContentBlock;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let handled = Arc::new(AtomicUsize::new(0));
    /// let count = handled.clone();
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .with_push_dedupe(256)
    ///     .on_push_event(move |_event| {
    ///         count.fetch_add(1, Ordering::SeqCst);
    ///         async { PushOutcome::accepted(None) }
    ///     })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    ///
    /// // The `alert` tool pushes the same event id each time: the handler sees it once, and the
    /// // repeat gets the first answer.
    /// for _ in 0..3 {
    ///     let result = client.call_tool("alert", ()).await?;
    ///     assert_eq!(result.content, [ContentBlock::text("accepted: true")]);
    /// }
    /// assert_eq!(handled.load(Ordering::SeqCst), 1);
    /// # Ok(()) }
    /// ```
    pub fn with_push_dedupe(self, entries: usize) -> McplHostBuilder {
        self.update_options(|o| o.push_dedupe = entries.max(1))
    }

    /// The budget every state the connection's
    /// [`StateTracker`](mcpl_core::mcpl::state::StateTracker) keeps (depth, size, patch
    /// operations and work; default: [`StateBudget::default`], derived from the default message
    /// size limit). A snapshot or patch crossing it is not kept: its checkpoint is tracked by
    /// reference only.
    ///
    /// [`StateBudget::default`]: mcpl_core::mcpl::state::StateBudget::default
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::state::StateBudget;
    ///
    /// // States of at most 256 KiB, 16 levels deep.
    /// let budget = StateBudget::for_message_size(256 * 1024).with_max_depth(16);
    /// let host = McplHost::builder(HostPolicy::default()).with_state_budget(budget).build();
    /// # drop(host);
    /// ```
    pub fn with_state_budget(self, budget: mcpl_core::mcpl::state::StateBudget) -> McplHostBuilder {
        self.update_options(|o| o.state_budget = budget)
    }

    /// The `mcpl/manifest` fetch budget per connection: `burst` fetches per `window`
    /// (default 3 per minute). Fetches beyond it are dropped, with one diagnostic per burst of
    /// drops; a change announced (`mcpl/manifestChanged`) while the budget is spent is fetched
    /// once the window has room again (one trailing fetch, however many announcements).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    ///
    /// // At most one `mcpl/manifest` fetch per ten seconds from each server.
    /// let host = McplHost::builder(HostPolicy::default()).with_fetch_limit(1, Duration::from_secs(10)).build();
    /// # drop(host);
    /// ```
    pub fn with_fetch_limit(self, burst: usize, window: Duration) -> McplHostBuilder {
        self.update_options(|o| {
            o.fetch_burst = burst.max(1);
            o.fetch_window = window;
        })
    }

    /// Whether `mcpl/manifestChanged` triggers a fetch (default: yes, within the budget).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::manifest::FeatureSet;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = alerts_server().await?;
    /// let receipts = Arc::new(AtomicUsize::new(0));
    /// let count = receipts.clone();
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .refresh_on_change(false)
    ///     .on_change_receipt(move |_| {
    ///         count.fetch_add(1, Ordering::SeqCst);
    ///     })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let before = host.manifest();
    ///
    /// let next = server.mcpl_manifest().expect("an MCPL server");
    /// server.set_mcpl_manifest(next.with_feature_set("digest", FeatureSet::new(
    ///     "Digest",
    ///     ["pushEvents"],
    /// )))?;
    /// client.ping().await?; // a round trip: time for the announcement to arrive
    /// // Announced, but not fetched: the host keeps the manifest it has until it asks.
    /// assert_eq!(host.manifest(), before);
    /// assert_eq!(receipts.load(Ordering::SeqCst), 0);
    /// # Ok(()) }
    /// ```
    pub fn refresh_on_change(self, refresh: bool) -> McplHostBuilder {
        self.update_options(|o| o.refresh_on_change = refresh)
    }
}
