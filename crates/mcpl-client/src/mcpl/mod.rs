//! The MCPL 0.5 host side of one connection: advertisement, policy and grant, readiness,
//! admission of server requests, the host's own MCPL calls, manifest changes, diagnostics.
//!
//! An [`McplHost`] holds the host's [`HostPolicy`], the handlers for what servers ask of the
//! host, and the per-connection state. Attach it with
//! [`Client::with_mcpl`](crate::Client::with_mcpl); from then on [`Client::connect`](crate::Client::connect) speaks
//! the `initialize` era (MCPL lives there) and advertises `capabilities.experimental.mcpl`
//! from the handlers registered. Right after the handshake, if the server's `initialize`
//! result carries a manifest, the host sends the initial `featureSets/update` **request**
//! (the grant: understood ∩ supported ∩ policy) and waits for the receipt: until it arrives
//! every privileged server request is refused with `-32002`, and every host call fails with
//! [`McplError::NotActive`]. A server without MCPL stays plain MCP.
//!
//! ```no_run
//! use mcpl_client::Client;
//! use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
//! use mcpl_client::transport::ChildProcess;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let host = McplHost::new(HostPolicy::default())
//!     .on_push_event(|event| async move {
//!         println!("event {} from {}", event.event_id, event.feature_set);
//!         PushOutcome::accepted(None)
//!     })
//!     .on_diagnostic(|d| eprintln!("mcpl: {d:?}"));
//! let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
//! client.connect(ChildProcess::new("my-mcpl-server")).await?;
//! if host.is_ready() {
//!     println!("granted: {:?}", host.grant().map(|g| g.entries().to_vec()));
//! }
//! # Ok(()) }
//! ```
//!
//! - Policy changes: [`McplHost::set_policy`] applies reductions host-side before the
//!   request is sent, and activates expansions only once the receipt arrives.
//! - Server requests ([`inbound`]): `push/event` (deduplicated by `eventId`),
//!   `inference/request` (with streamed `inference/chunk`s), `model/info`, the channel
//!   methods, `mcpl/manifestChanged`. Each is admitted against the grant current at arrival.
//! - Host calls ([`calls`], [`channels`]): `context/beforeInference` (timeout, fail-open,
//!   injections authorized at receipt), `inference/lifecycle` (terminal tracking),
//!   `state/rollback`, the channel calls, `mcpl/manifest` (rate-limited, diffed, one
//!   [`ChangeReceipt`] per change).
//! - [`Diagnostic`]: every rejection, drop and defect, logged and handed to the sink.

pub mod calls;
pub mod channels;
mod diagnostics;
mod error;
pub mod inbound;
pub mod manifest;
mod policy;
mod session;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use futures::FutureExt;
use mcpl_core::engine::{BoxFuture, RequestOptions};
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::{CapabilityGrant, paths};
use mcpl_core::mcpl::channels::{ChannelDescriptor, IncomingMessage};
use mcpl_core::mcpl::hooks::ModelInfo;
use mcpl_core::mcpl::inference::InferenceResult;
use mcpl_core::mcpl::manifest::{
    Capability, ChannelsCapability, ContextHooksCapability, FeatureSetError, HostAdvertisement,
    InferenceRequestCapability, Manifest, McplCapabilities,
};
use mcpl_core::mcpl::methods::UpdateFeatureSets;
use mcpl_core::mcpl::policy::{DisabledReason, FeatureSetsUpdateParams, PolicyReceipt};
use mcpl_core::{Engine, Peer};
use serde_json::Value;

use crate::client::ServerDetails;

pub use self::calls::HookOutcome;
pub use self::diagnostics::Diagnostic;
pub use self::error::McplError;
pub use self::inbound::{
    ChunkSender, IncomingOutcome, InferenceCall, PushEvent, PushOutcome, StateCall,
};
pub use self::manifest::{ChangeEntry, ChangeReceipt};
pub use self::policy::HostPolicy;
pub use self::session::McplStatus;

use self::diagnostics::{Sink, emit};
use self::session::{Exchange, PendingPolicy, Session, intersect, intersect_derived};

/// The default timeout of `context/beforeInference` (spec: 5 s recommended).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::mcpl::{DEFAULT_HOOK_TIMEOUT, HostPolicy, McplHost};
///
/// assert_eq!(DEFAULT_HOOK_TIMEOUT, Duration::from_secs(5));
/// // A latency-sensitive host waits less for servers' context injections.
/// let host = McplHost::new(HostPolicy::default()).with_hook_timeout(DEFAULT_HOOK_TIMEOUT / 5);
/// # drop(host);
/// ```
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);
/// The default time the host waits for a `featureSets/update` receipt.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::mcpl::{DEFAULT_POLICY_TIMEOUT, HostPolicy, McplHost};
///
/// assert_eq!(DEFAULT_POLICY_TIMEOUT, Duration::from_secs(30));
/// let host = McplHost::new(HostPolicy::default()).with_policy_timeout(DEFAULT_POLICY_TIMEOUT * 2);
/// # drop(host);
/// ```
pub const DEFAULT_POLICY_TIMEOUT: Duration = Duration::from_secs(30);
/// How many accepted `eventId`s per connection are remembered for deduplication by default.
///
/// # Examples
///
/// ```
/// use mcpl_client::mcpl::{DEFAULT_PUSH_DEDUPE, HostPolicy, McplHost};
///
/// assert_eq!(DEFAULT_PUSH_DEDUPE, 1024);
/// // A chatty server: remember more event ids.
/// let host = McplHost::new(HostPolicy::default()).with_push_dedupe(8 * DEFAULT_PUSH_DEDUPE);
/// # drop(host);
/// ```
pub const DEFAULT_PUSH_DEDUPE: usize = 1024;
/// The default `mcpl/manifest` fetch budget: this many fetches ...
///
/// # Examples
///
/// ```
/// use mcpl_client::mcpl::{DEFAULT_FETCH_BURST, DEFAULT_FETCH_WINDOW, HostPolicy, McplHost};
///
/// assert_eq!(DEFAULT_FETCH_BURST, 3);
/// // Twice the default budget, over the same window.
/// let host = McplHost::new(HostPolicy::default())
///     .with_fetch_limit(2 * DEFAULT_FETCH_BURST, DEFAULT_FETCH_WINDOW);
/// # drop(host);
/// ```
pub const DEFAULT_FETCH_BURST: usize = 3;
/// ... per this window, per connection.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::mcpl::{DEFAULT_FETCH_BURST, DEFAULT_FETCH_WINDOW};
///
/// assert_eq!(DEFAULT_FETCH_WINDOW, Duration::from_secs(60));
/// assert_eq!((DEFAULT_FETCH_BURST, DEFAULT_FETCH_WINDOW), (3, Duration::from_secs(60)));
/// ```
pub const DEFAULT_FETCH_WINDOW: Duration = Duration::from_secs(60);

type Callback<P, R> = Arc<dyn Fn(P) -> BoxFuture<'static, R> + Send + Sync>;
type ModelInfoHandler =
    Arc<dyn Fn() -> BoxFuture<'static, Result<ModelInfo, ErrorObject>> + Send + Sync>;
type ReceiptSink = Arc<dyn Fn(&ChangeReceipt) + Send + Sync>;

/// The handlers for what servers ask of the host.
#[derive(Default, Clone)]
pub(crate) struct Handlers {
    pub(crate) push: Option<Callback<PushEvent, PushOutcome>>,
    pub(crate) inference: Option<Callback<InferenceCall, Result<InferenceResult, ErrorObject>>>,
    pub(crate) model_info: Option<ModelInfoHandler>,
    pub(crate) incoming: Option<Callback<IncomingMessage, IncomingOutcome>>,
    pub(crate) state: Option<Callback<StateCall, Result<Value, ErrorObject>>>,
}

/// Timeouts and bounds.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) hook_timeout: Duration,
    pub(crate) policy_timeout: Duration,
    pub(crate) push_dedupe: usize,
    pub(crate) fetch_burst: usize,
    pub(crate) fetch_window: Duration,
    pub(crate) refresh_on_change: bool,
    pub(crate) state_budget: mcpl_core::mcpl::state::StateBudget,
}

pub(crate) struct Inner {
    pub(crate) handlers: RwLock<Handlers>,
    pub(crate) options: RwLock<Options>,
    pub(crate) policy: Mutex<HostPolicy>,
    pub(crate) session: Mutex<Option<Session>>,
    /// Serializes grant changes (policy updates, manifest changes).
    pub(crate) grant_lock: tokio::sync::Mutex<()>,
    pub(crate) sink: RwLock<Option<Sink>>,
    pub(crate) receipts: RwLock<Option<ReceiptSink>>,
}

/// The MCPL host side of a [`Client`](crate::Client)'s connection. Cheap to clone; clones
/// share the handlers, the policy and the connection state.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, McplStatus, PushOutcome};
/// use mcpl_core::mcpl::capability::paths;
/// use mcpl_core::types::ContentBlock;
/// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
/// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
/// # /// ask the host to run an inference.
/// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
/// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
/// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
/// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
/// #     use mcpl_core::types::{Tool, ToolSchema};
/// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
/// #     use mcpl_server::ToolOutput;
/// #     let manifest = Manifest::new()
/// #         .with_push_events(true)
/// #         .with_model_info(true)
/// #         .with_inference_request(Capability::Flag(true))
/// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
/// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
/// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
/// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
/// #         .mcpl(Mcpl::new(manifest))
/// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
/// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
/// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
/// #                 .event_id("disk-1")
/// #                 .tags(["acme:disk", "urgent"]);
/// #             match mcpl.push_event(event).await {
/// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
/// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
/// #             }
/// #         })
/// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
/// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
/// #             match mcpl.model_info().await {
/// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
/// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
/// #             }
/// #         })
/// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
/// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
/// #             let params = InferenceRequestParams {
/// #                 feature_set: "summaries".into(),
/// #                 conversation_id: None,
/// #                 stream: None,
/// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
/// #                 preferences: None,
/// #                 extra: Default::default(),
/// #             };
/// #             match mcpl.request_inference(params).await {
/// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
/// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
/// #             }
/// #         })
/// #         .build();
/// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
/// #     let session = server.serve(theirs).await?;
/// #     Ok((server, session, ours))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_server, _session, transport) = mcpl_server().await?;
/// let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
/// let host = McplHost::new(HostPolicy::default()).on_push_event(move |event| {
///     let tx = tx.clone();
///     async move {
///         tx.send(event.feature_set).ok();
///         PushOutcome::accepted(None)
///     }
/// });
/// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
/// // `connect` returns once the initial policy has its receipt.
/// client.connect(transport).await?;
/// assert_eq!(host.status(), Some(McplStatus::Ready));
/// assert!(host.grant().is_some_and(|g| g.is_granted(paths::PUSH_EVENTS)));
///
/// // The server's `alert` tool pushes an event to the host.
/// let result = client.call_tool("alert", ()).await?;
/// assert_eq!(result.content, [ContentBlock::text("accepted: true")]);
/// assert_eq!(events.recv().await.as_deref(), Some("alerts"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McplHost {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for McplHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McplHost")
            .field("status", &self.status())
            .field("policy", &*lock(&self.inner.policy))
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn read<T: Clone>(l: &RwLock<T>) -> T {
    l.read().unwrap_or_else(PoisonError::into_inner).clone()
}

fn write<T>(l: &RwLock<T>, value: T) {
    *l.write().unwrap_or_else(PoisonError::into_inner) = value;
}

impl McplHost {
    /// A host side with `policy` and no handlers (so not advertising `pushEvents`,
    /// `inferenceRequest`, `modelInfo` or `channels.incoming` until handlers are set).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let host = McplHost::new(HostPolicy::default());
    /// // Without handlers, the host supports only what it initiates itself.
    /// assert!(host.supported().contains(paths::TOOLS));
    /// assert!(!host.supported().contains(paths::PUSH_EVENTS));
    /// assert_eq!(host.advertisement().capabilities.push_events, None);
    /// ```
    pub fn new(policy: HostPolicy) -> McplHost {
        McplHost {
            inner: Arc::new(Inner {
                handlers: RwLock::default(),
                options: RwLock::new(Options {
                    hook_timeout: DEFAULT_HOOK_TIMEOUT,
                    policy_timeout: DEFAULT_POLICY_TIMEOUT,
                    push_dedupe: DEFAULT_PUSH_DEDUPE,
                    fetch_burst: DEFAULT_FETCH_BURST,
                    fetch_window: DEFAULT_FETCH_WINDOW,
                    refresh_on_change: true,
                    state_budget: mcpl_core::mcpl::state::StateBudget::default(),
                }),
                policy: Mutex::new(policy),
                session: Mutex::new(None),
                grant_lock: tokio::sync::Mutex::new(()),
                sink: RwLock::new(None),
                receipts: RwLock::new(None),
            }),
        }
    }

    fn update_handlers(self, f: impl FnOnce(&mut Handlers)) -> McplHost {
        f(&mut self.inner.handlers.write().unwrap_or_else(PoisonError::into_inner));
        self
    }

    fn update_options(self, f: impl FnOnce(&mut Options)) -> McplHost {
        f(&mut self.inner.options.write().unwrap_or_else(PoisonError::into_inner));
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let inbox = Arc::new(Mutex::new(Vec::new()));
    /// let seen = inbox.clone();
    /// let host = McplHost::new(HostPolicy::default()).on_push_event(move |event| {
    ///     let seen = seen.clone();
    ///     async move {
    ///         for block in &event.payload.content {
    ///             if let McplContent::Text { text } = block {
    ///                 seen.lock().unwrap().push(text.clone());
    ///             }
    ///         }
    ///         PushOutcome::accepted(None)
    ///     }
    /// });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host);
    /// client.connect(transport).await?;
    ///
    /// let result = client.call_tool("alert", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("accepted: true")]);
    /// assert_eq!(*inbox.lock().unwrap(), ["Disk almost full"]);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_push_event<F, Fut>(self, handler: F) -> McplHost
    where
        F: Fn(PushEvent) -> Fut + Send + Sync + 'static,
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// // The host runs its model for the server (here a canned one).
    /// let host = McplHost::new(HostPolicy::default()).on_inference(|call| async move {
    ///     assert_eq!(call.params.feature_set, "summaries");
    ///     Ok(InferenceResult {
    ///         content: "The disk is nearly full.".into(),
    ///         model: "host-model".into(),
    ///         finish_reason: FinishReason::EndTurn,
    ///         usage: Usage { input_tokens: 12, output_tokens: 6 },
    ///         extra: Default::default(),
    ///     })
    /// });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host);
    /// client.connect(transport).await?;
    ///
    /// // The server's `summarize` tool asks the host for an inference.
    /// let result = client.call_tool("summarize", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("The disk is nearly full.")]);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_inference<F, Fut>(self, handler: F) -> McplHost
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default()).on_model_info(|| async {
    ///     Ok(ModelInfo {
    ///         id: "claude-example".into(),
    ///         vendor: "example".into(),
    ///         context_window: 200_000,
    ///         capabilities: vec!["tools".into()],
    ///         extra: Default::default(),
    ///     })
    /// });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host);
    /// client.connect(transport).await?;
    ///
    /// // The server's `model` tool asks which model the host runs.
    /// let result = client.call_tool("model", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("claude-example")]);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_model_info<F, Fut>(self, handler: F) -> McplHost
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
    /// let host = McplHost::new(HostPolicy::default()).on_channel_message(|message| async move {
    ///     // Route the message to the conversation of its channel.
    ///     let conversation_id = Some(format!("conversation-for-{}", message.channel_id));
    ///     IncomingOutcome::Accepted { conversation_id }
    /// });
    /// assert!(host.supported().contains(paths::CHANNELS_INCOMING));
    /// ```
    #[must_use]
    pub fn on_channel_message<F, Fut>(self, handler: F) -> McplHost
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
    /// let host = McplHost::new(HostPolicy::default()).on_state(move |call| {
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
    /// });
    /// # drop(host);
    /// ```
    #[must_use]
    pub fn on_state<F, Fut>(self, handler: F) -> McplHost
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let diagnostics = Arc::new(Mutex::new(Vec::new()));
    /// let sink = diagnostics.clone();
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|event| async move {
    ///         // The un-namespaced tag "urgent" was cleaned away before the handler saw the event.
    ///         assert_eq!(event.tags, Some(vec!["acme:disk".to_owned()]));
    ///         PushOutcome::accepted(None)
    ///     })
    ///     .on_diagnostic(move |d| sink.lock().unwrap().push(d.kind()));
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host);
    /// client.connect(transport).await?;
    ///
    /// // The server's event carries the tags "acme:disk" and "urgent".
    /// let result = client.call_tool("alert", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("accepted: true")]);
    /// assert!(!diagnostics.lock().unwrap().is_empty());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_diagnostic(self, sink: impl Fn(&Diagnostic) + Send + Sync + 'static) -> McplHost {
        write(&self.inner.sink, Some(Arc::new(sink)));
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = mcpl_server().await?;
    /// let (tx, mut receipts) = tokio::sync::mpsc::unbounded_channel();
    /// let host = McplHost::new(HostPolicy::default()).on_change_receipt(move |receipt| {
    ///     tx.send(receipt.clone()).ok();
    /// });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
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
    #[must_use]
    pub fn on_change_receipt(
        self,
        sink: impl Fn(&ChangeReceipt) + Send + Sync + 'static,
    ) -> McplHost {
        write(&self.inner.receipts, Some(Arc::new(sink)));
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
    /// let host = McplHost::new(HostPolicy::default()).with_hook_timeout(Duration::from_millis(500));
    /// # drop(host);
    /// ```
    #[must_use]
    pub fn with_hook_timeout(self, timeout: Duration) -> McplHost {
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default()).with_policy_timeout(Duration::from_secs(10));
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// // This server answers at once; one that did not within 10 s would leave MCPL off.
    /// assert_eq!(host.status(), Some(McplStatus::Ready));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_policy_timeout(self, timeout: Duration) -> McplHost {
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let handled = Arc::new(AtomicUsize::new(0));
    /// let count = handled.clone();
    /// let host = McplHost::new(HostPolicy::default())
    ///     .with_push_dedupe(256)
    ///     .on_push_event(move |_event| {
    ///         count.fetch_add(1, Ordering::SeqCst);
    ///         async { PushOutcome::accepted(None) }
    ///     });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host);
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
    #[must_use]
    pub fn with_push_dedupe(self, entries: usize) -> McplHost {
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
    /// let host = McplHost::new(HostPolicy::default()).with_state_budget(budget);
    /// # drop(host);
    /// ```
    #[must_use]
    pub fn with_state_budget(self, budget: mcpl_core::mcpl::state::StateBudget) -> McplHost {
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
    /// let host = McplHost::new(HostPolicy::default()).with_fetch_limit(1, Duration::from_secs(10));
    /// # drop(host);
    /// ```
    #[must_use]
    pub fn with_fetch_limit(self, burst: usize, window: Duration) -> McplHost {
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
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = mcpl_server().await?;
    /// let receipts = Arc::new(AtomicUsize::new(0));
    /// let count = receipts.clone();
    /// let host = McplHost::new(HostPolicy::default())
    ///     .refresh_on_change(false)
    ///     .on_change_receipt(move |_| {
    ///         count.fetch_add(1, Ordering::SeqCst);
    ///     });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// let before = host.manifest();
    ///
    /// let next = server.mcpl_manifest().expect("an MCPL server");
    /// server.set_mcpl_manifest(next.with_feature_set("digest", FeatureSet::new("Digest", ["pushEvents"])))?;
    /// client.ping().await?; // a round trip: time for the announcement to arrive
    /// // Announced, but not fetched: the host keeps the manifest it has until it asks.
    /// assert_eq!(host.manifest(), before);
    /// assert_eq!(receipts.load(Ordering::SeqCst), 0);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn refresh_on_change(self, refresh: bool) -> McplHost {
        self.update_options(|o| o.refresh_on_change = refresh)
    }

    /// The capability paths this host supports, from its handlers: the host-initiated
    /// features always, `pushEvents` / `inferenceRequest(.streaming)` / `modelInfo` /
    /// `channels.incoming` only with their handler.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let plain = McplHost::new(HostPolicy::default());
    /// assert!(!plain.supported().contains(paths::PUSH_EVENTS));
    /// let host = plain.on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// assert!(host.supported().contains(paths::PUSH_EVENTS));
    /// // The policy does not change what the host supports, only what it grants.
    /// assert!(host.supported().contains(paths::INJECT_SYSTEM));
    /// ```
    pub fn supported(&self) -> BTreeSet<&'static str> {
        let h = read(&self.inner.handlers);
        let mut set: BTreeSet<&'static str> = [
            paths::TOOLS,
            paths::INFERENCE_LIFECYCLE,
            paths::OBSERVE,
            paths::INJECT_SYSTEM,
            paths::INJECT_BEFORE_USER,
            paths::INJECT_AFTER_USER,
            paths::CHANNELS_REGISTER,
            paths::CHANNELS_LIFECYCLE,
            paths::CHANNELS_PUBLISH,
            paths::CHANNELS_STREAMING,
            paths::CHANNELS_ACKNOWLEDGE,
            paths::CHANNELS_TYPING,
        ]
        .into();
        if h.push.is_some() {
            set.insert(paths::PUSH_EVENTS);
        }
        if h.inference.is_some() {
            set.extend([paths::INFERENCE_REQUEST, paths::INFERENCE_REQUEST_STREAMING]);
        }
        if h.model_info.is_some() {
            set.insert(paths::MODEL_INFO);
        }
        if h.incoming.is_some() {
            set.insert(paths::CHANNELS_INCOMING);
        }
        set
    }

    /// The advertisement sent in `initialize` (`capabilities.experimental.mcpl`), built from
    /// [`supported`](Self::supported).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    ///
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// let advertisement = host.advertisement();
    /// assert_eq!(advertisement.capabilities.push_events, Some(true));
    /// assert_eq!(advertisement.capabilities.model_info, None);
    ///
    /// // What a client with this host sends in `initialize`.
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host);
    /// let experimental = client.capabilities().experimental.unwrap_or_default();
    /// assert_eq!(experimental["mcpl"]["pushEvents"], true);
    /// ```
    pub fn advertisement(&self) -> HostAdvertisement {
        let s = self.supported();
        let has = |p: &str| s.contains(p).then_some(true);
        let caps = McplCapabilities {
            push_events: has(paths::PUSH_EVENTS),
            context_hooks: Some(Capability::Detailed(ContextHooksCapability {
                before_inference: Some(Capability::Flag(true)),
                ..Default::default()
            })),
            inference_lifecycle: has(paths::INFERENCE_LIFECYCLE),
            inference_request: s.contains(paths::INFERENCE_REQUEST).then(|| {
                Capability::Detailed(InferenceRequestCapability {
                    streaming: has(paths::INFERENCE_REQUEST_STREAMING),
                    ..Default::default()
                })
            }),
            model_info: has(paths::MODEL_INFO),
            channels: Some(Capability::Detailed(ChannelsCapability {
                register: has(paths::CHANNELS_REGISTER),
                lifecycle: has(paths::CHANNELS_LIFECYCLE),
                publish: has(paths::CHANNELS_PUBLISH),
                incoming: has(paths::CHANNELS_INCOMING),
                streaming: has(paths::CHANNELS_STREAMING),
                acknowledge: has(paths::CHANNELS_ACKNOWLEDGE),
                typing: has(paths::CHANNELS_TYPING),
                ..Default::default()
            })),
        };
        HostAdvertisement::new(caps)
    }

    /// Where the MCPL negotiation of the current connection stands; `None` when not connected
    /// or the server does not speak MCPL.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, McplStatus};
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// assert_eq!(host.status(), None);
    /// client.connect(transport).await?;
    /// assert_eq!(host.status(), Some(McplStatus::Ready));
    /// client.close().await?;
    /// assert_eq!(host.status(), None);
    ///
    /// // A server without MCPL stays plain MCP.
    /// let (plain, theirs) = mcpl_core::transport::memory::pair();
    /// let _plain_session = mcpl_server::Server::builder("plain", "1").build().serve(theirs).await?;
    /// client.connect(plain).await?;
    /// assert_eq!(host.status(), None);
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> Option<McplStatus> {
        self.with_session(|s| s.status.clone())
    }

    /// Whether MCPL is in force (the initial policy receipt arrived and accepted).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// assert!(!host.is_ready());
    /// client.connect(transport).await?;
    /// assert!(host.is_ready());
    /// # Ok(()) }
    /// ```
    pub fn is_ready(&self) -> bool {
        self.status() == Some(McplStatus::Ready)
    }

    /// The grant the host enforces now (reductions already applied, expansions only after
    /// their receipt).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::capability::paths;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    ///
    /// let grant = host.grant().expect("MCPL in force");
    /// assert!(grant.is_granted(paths::PUSH_EVENTS));
    /// assert!(grant.is_granted(paths::TOOLS));
    /// // Advertised, but this host has no `inference/request` handler: not granted.
    /// assert!(!grant.is_granted(paths::INFERENCE_REQUEST));
    /// # Ok(()) }
    /// ```
    pub fn grant(&self) -> Option<CapabilityGrant> {
        self.with_session(|s| s.grant.clone())
    }

    /// The server's manifest in force, verbatim.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    ///
    /// let manifest = host.manifest().expect("an MCPL server");
    /// assert_eq!(manifest.version(), Some("0.5"));
    /// let sets = manifest.feature_sets().expect("declared")?;
    /// assert!(sets.get("alerts").is_some());
    /// assert_eq!(manifest.revision(), server.mcpl_manifest().and_then(|m| m.revision()));
    /// # Ok(()) }
    /// ```
    pub fn manifest(&self) -> Option<Manifest> {
        self.with_session(|s| s.manifest.clone())
    }

    /// The capability paths the server advertises that this SDK understands.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::capability::paths;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    ///
    /// // What the server advertises, whether or not this host supports or grants it.
    /// let understood = host.understood().expect("MCPL in force");
    /// assert!(understood.contains(paths::PUSH_EVENTS));
    /// assert!(understood.contains(paths::INFERENCE_REQUEST));
    /// assert!(understood.contains(paths::TOOLS));
    /// # Ok(()) }
    /// ```
    pub fn understood(&self) -> Option<BTreeSet<String>> {
        self.with_session(|s| s.understood.clone())
    }

    /// The declared feature sets the current grant and policy leave disabled, with why
    /// (`MissingCapabilities` names the capabilities their `uses` need that are not granted).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::policy::DisabledReason;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// // Push events are handled; `summaries` needs `inferenceRequest`, which this host lacks.
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// let disabled = host.disabled_feature_sets().expect("an MCPL connection");
    /// let missing = DisabledReason::MissingCapabilities(vec!["inferenceRequest".into()]);
    /// assert_eq!(disabled, [("summaries".to_owned(), missing)].into());
    /// # Ok(()) }
    /// ```
    pub fn disabled_feature_sets(&self) -> Option<BTreeMap<String, DisabledReason>> {
        self.with_session(|s| {
            let disabled =
                s.derived.iter().filter_map(|(n, r)| r.clone().err().map(|r| (n.clone(), r)));
            disabled.collect()
        })
    }

    /// The enabled feature sets under the current grant.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// // Push events are handled; `summaries` needs `inferenceRequest`, which this host lacks.
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// assert_eq!(host.enabled_feature_sets(), Some(vec!["alerts".to_owned(), "editor".to_owned()]));
    /// # Ok(()) }
    /// ```
    pub fn enabled_feature_sets(&self) -> Option<Vec<String>> {
        self.with_session(|s| {
            s.derived.iter().filter(|(_, r)| r.is_ok()).map(|(n, _)| n.clone()).collect()
        })
    }

    /// The last `featureSets/update` receipt (testimony, never entitlement).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::policy::PolicyReceipt;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// assert!(matches!(host.receipt(), Some(PolicyReceipt::Accepted(_))));
    /// # Ok(()) }
    /// ```
    pub fn receipt(&self) -> Option<PolicyReceipt> {
        self.with_session(|s| s.receipt.clone()).flatten()
    }

    /// The channels the server registered and the host accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// // This server registers no channels (see `channels/register`).
    /// for channel in host.channels() {
    ///     println!("{} ({:?})", channel.id, channel.direction);
    /// }
    /// assert!(host.channels().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn channels(&self) -> Vec<ChannelDescriptor> {
        self.with_session(|s| s.channels.values().cloned().collect()).unwrap_or_default()
    }

    /// Whether MCPL is in force and its grant denies `tools` (the client then sends no
    /// `tools/*`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::ErrorKind;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default().deny("tools"));
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    /// assert!(host.denies_tools());
    /// // So the client sends no `tools/*`.
    /// let err = client.list_tools().await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::CapabilityNotSupported);
    /// # Ok(()) }
    /// ```
    pub fn denies_tools(&self) -> bool {
        self.with_session(|s| s.status == McplStatus::Ready && !s.grant.is_granted(paths::TOOLS))
            .unwrap_or(false)
    }

    /// The policy in force.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let host = McplHost::new(HostPolicy::default().deny("channels.*"));
    /// let policy = host.policy();
    /// assert!(!policy.permits(paths::CHANNELS_PUBLISH));
    /// assert_eq!(policy, HostPolicy::default().deny("channels.*"));
    /// ```
    pub fn policy(&self) -> HostPolicy {
        lock(&self.inner.policy).clone()
    }

    pub(crate) fn with_session<R>(&self, f: impl FnOnce(&Session) -> R) -> Option<R> {
        lock(&self.inner.session).as_ref().map(f)
    }

    pub(crate) fn with_session_mut<R>(&self, f: impl FnOnce(&mut Session) -> R) -> Option<R> {
        lock(&self.inner.session).as_mut().map(f)
    }

    pub(crate) fn diagnose(&self, diagnostic: Diagnostic) {
        emit(read(&self.inner.sink).as_ref(), diagnostic);
    }

    pub(crate) fn options(&self) -> Options {
        read(&self.inner.options)
    }

    pub(crate) fn weak(&self) -> Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn from_weak(weak: &Weak<Inner>) -> Option<McplHost> {
        weak.upgrade().map(|inner| McplHost { inner })
    }

    /// Registers the server-request handlers on `engine` and the teardown on close.
    pub(crate) fn install(&self, engine: &Engine) {
        inbound::install(self, engine);
        let weak = self.weak();
        engine.on_close(move |_reason| {
            if let Some(host) = McplHost::from_weak(&weak) {
                host.detach();
            }
        });
    }

    /// Forgets the connection state.
    pub(crate) fn detach(&self) {
        lock(&self.inner.session).take();
    }

    /// Starts MCPL on a fresh connection: reads the manifest, then runs the initial policy
    /// exchange. A server without MCPL leaves the connection plain MCP.
    pub(crate) async fn attach(&self, peer: Peer, details: &ServerDetails) {
        let experimental = details.capabilities.experimental.as_ref();
        let manifest = match Manifest::from_experimental(experimental) {
            None => {
                tracing::debug!("server does not speak MCPL; plain MCP");
                self.detach();
                return;
            }
            Some(Err(_)) => {
                self.diagnose(Diagnostic::ManifestDefect {
                    detail: "experimental.mcpl is not an object; plain MCP".into(),
                });
                self.detach();
                return;
            }
            Some(Ok(m)) => m,
        };
        let declared = self.declared(&manifest);
        let session = Session::new(
            peer,
            manifest,
            declared,
            details.capabilities.tools.is_some(),
            self.options().push_dedupe,
            self.options().state_budget,
        );
        *lock(&self.inner.session) = Some(session);
        let _guard = self.inner.grant_lock.lock().await;
        let policy = self.policy();
        let supported = self.supported();
        let exchange = self.with_session_mut(|s| {
            let target = policy.grant_for(&s.understood, &supported);
            let derived = s.derive(&target, &policy);
            let params = policy.update_params(&target, &s.understood);
            let exchange = self.start_exchange(s.peer.clone(), params);
            s.pending =
                Some(PendingPolicy { exchange: exchange.clone(), target, derived, initial: true });
            exchange
        });
        if let Some(exchange) = exchange {
            let _ = exchange.await;
            self.settle();
        }
    }

    /// The `featureSets/update` request, as a future any party may poll.
    fn start_exchange(&self, peer: Peer, params: FeatureSetsUpdateParams) -> Exchange {
        let options = RequestOptions::new().timeout(self.options().policy_timeout);
        async move { peer.send::<UpdateFeatureSets>(params, options).await.map_err(Arc::new) }
            .boxed()
            .shared()
    }

    /// Applies the outcome of the policy exchange in flight, if its answer has arrived:
    /// an accepted receipt activates its grant (and, for the initial policy, readiness); a
    /// refusal turns MCPL off; no answer leaves the reduced grant (initial: MCPL off).
    pub(crate) fn settle(&self) {
        let applied = self
            .with_session_mut(|s| {
                let outcome = s.pending.as_ref()?.exchange.clone().now_or_never()?;
                let pending = s.pending.take()?;
                match &outcome {
                    Ok(receipt @ PolicyReceipt::Accepted(_)) => {
                        s.install(pending.target, pending.derived);
                        if pending.initial {
                            s.status = McplStatus::Ready;
                        }
                        s.receipt = Some(receipt.clone());
                    }
                    Ok(refused) => {
                        s.status = McplStatus::Refused;
                        s.receipt = Some(refused.clone());
                    }
                    Err(_) if pending.initial => s.status = McplStatus::Unanswered,
                    Err(_) => {}
                }
                Some(outcome)
            })
            .flatten();
        match applied {
            Some(Ok(refused @ PolicyReceipt::Refused(_))) => {
                self.diagnose(Diagnostic::PolicyRefused { receipt: refused });
            }
            Some(Err(e)) => self.diagnose(Diagnostic::PolicyUnanswered { reason: e.to_string() }),
            _ => {}
        }
    }

    /// The declared feature sets of `manifest`, with defects reported: each declaration that
    /// does not parse is left out (the others stand); an unreadable `featureSets` declares none.
    pub(crate) fn declared(&self, manifest: &Manifest) -> mcpl_core::mcpl::manifest::FeatureSets {
        let declared = match manifest.read_feature_sets() {
            None => Default::default(),
            Some(Ok(read)) => {
                // A few by name; a manifest full of them is one more diagnostic, not thousands.
                const NAMED: usize = 8;
                for invalid in read.invalid.iter().take(NAMED) {
                    let detail = match &invalid.error {
                        FeatureSetError::Malformed(e) => format!("{invalid}: {e}"),
                        other => format!("{invalid}: {other}"),
                    };
                    self.diagnose(Diagnostic::ManifestDefect { detail });
                }
                if read.invalid.len() > NAMED {
                    let more = read.invalid.len() - NAMED;
                    let detail = format!("{more} more malformed feature sets are left out");
                    self.diagnose(Diagnostic::ManifestDefect { detail });
                }
                read.sets
            }
            Some(Err(e)) => {
                self.diagnose(Diagnostic::ManifestDefect {
                    detail: format!("featureSets is malformed ({e}); no feature set is enabled"),
                });
                Default::default()
            }
        };
        for (name, set) in &declared.0 {
            if set.valid_uses().is_none() {
                self.diagnose(Diagnostic::ManifestDefect {
                    detail: format!("feature set {name:?} has invalid uses; disabled"),
                });
            }
        }
        if let (Some(claimed), Ok(computed)) = (manifest.revision(), manifest.compute_revision()) {
            if claimed != computed {
                self.diagnose(Diagnostic::ManifestDefect {
                    detail: format!("revision {claimed} is not the digest {computed}"),
                });
            }
        }
        declared
    }

    /// Changes the policy. The reducing part applies host-side at once (before the request
    /// is sent); the widening part only once the server's receipt arrives (a refusal or no
    /// answer leaves it inactive). Returns the receipt.
    ///
    /// # Errors
    ///
    /// [`McplError::NotActive`] if MCPL is not in force (the policy is still stored for the
    /// next connection); [`McplError::PolicyUnanswered`] if the request got no usable answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::capability::paths;
    /// use mcpl_core::mcpl::policy::PolicyReceipt;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    ///
    /// // Not connected: stored for the next connection.
    /// assert!(matches!(host.set_policy(HostPolicy::default()).await, Err(McplError::NotActive)));
    ///
    /// client.connect(transport).await?;
    /// // The user muted this server's notifications.
    /// let receipt = host.set_policy(HostPolicy::default().deny(paths::PUSH_EVENTS)).await?;
    /// assert!(matches!(receipt, PolicyReceipt::Accepted(_)));
    /// assert!(!host.grant().is_some_and(|g| g.is_granted(paths::PUSH_EVENTS)));
    /// assert_eq!(host.enabled_feature_sets(), Some(vec!["editor".to_owned()]));
    /// # Ok(()) }
    /// ```
    pub async fn set_policy(&self, policy: HostPolicy) -> Result<PolicyReceipt, McplError> {
        *lock(&self.inner.policy) = policy.clone();
        self.renegotiate().await
    }

    /// Sends the grant the current policy yields against the current manifest: what
    /// [`set_policy`](Self::set_policy) does, also the way to activate expansions a manifest
    /// change left pending ([`ChangeReceipt`]).
    ///
    /// # Errors
    ///
    /// As [`set_policy`](Self::set_policy).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::capability::paths;
    /// use mcpl_core::mcpl::policy::PolicyReceipt;
    /// # /// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
    /// # /// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
    /// # /// ask the host to run an inference.
    /// # async fn mcpl_server() -> mcpl_core::Result<(mcpl_server::Server, mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    /// #     use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// #     use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// #     use mcpl_core::types::{Tool, ToolSchema};
    /// #     use mcpl_server::mcpl::{Mcpl, PushEvent};
    /// #     use mcpl_server::ToolOutput;
    /// #     let manifest = Manifest::new()
    /// #         .with_push_events(true)
    /// #         .with_model_info(true)
    /// #         .with_inference_request(Capability::Flag(true))
    /// #         .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    /// #         .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
    /// #         .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    /// #     let server = mcpl_server::Server::builder("alerts", "1.0.0")
    /// #         .mcpl(Mcpl::new(manifest))
    /// #         .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    /// #                 .event_id("disk-1")
    /// #                 .tags(["acme:disk", "urgent"]);
    /// #             match mcpl.push_event(event).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
    /// #                 Err(refused) => Ok(ToolOutput::error(refused.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             match mcpl.model_info().await {
    /// #                 Ok(model) => Ok(ToolOutput::text(model.id)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    /// #             let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    /// #             let params = InferenceRequestParams {
    /// #                 feature_set: "summaries".into(),
    /// #                 conversation_id: None,
    /// #                 stream: None,
    /// #                 messages: vec![InferenceMessage { role: "user".into(), content: TextOrBlocks::Text("Summarize: disk almost full".into()) }],
    /// #                 preferences: None,
    /// #                 extra: Default::default(),
    /// #             };
    /// #             match mcpl.request_inference(params).await {
    /// #                 Ok(result) => Ok(ToolOutput::text(result.content)),
    /// #                 Err(e) => Ok(ToolOutput::error(e.to_string())),
    /// #             }
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     let session = server.serve(theirs).await?;
    /// #     Ok((server, session, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = mcpl_server().await?;
    /// let host = McplHost::new(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) });
    /// let client = Client::new("my-host", "1.0.0").with_mcpl(host.clone());
    /// client.connect(transport).await?;
    ///
    /// // Send the grant the current policy yields again, e.g. after a manifest change left an
    /// // expansion pending.
    /// let receipt = host.renegotiate().await?;
    /// assert!(matches!(receipt, PolicyReceipt::Accepted(_)));
    /// assert!(host.grant().is_some_and(|g| g.is_granted(paths::PUSH_EVENTS)));
    /// # Ok(()) }
    /// ```
    pub async fn renegotiate(&self) -> Result<PolicyReceipt, McplError> {
        let _guard = self.inner.grant_lock.lock().await;
        let policy = self.policy();
        let supported = self.supported();
        // 1. Apply the reducing part host-side, atomically, before anything is sent.
        let exchange = self
            .with_session_mut(|s| {
                if s.status != McplStatus::Ready {
                    return None;
                }
                let target = policy.grant_for(&s.understood, &supported);
                let derived = s.derive(&target, &policy);
                let interim = intersect(&s.grant, &target);
                let interim_derived = intersect_derived(&s.derived, &derived);
                s.install(interim, interim_derived);
                // 2. Ask; 3. the widening part activates only with an accepted receipt.
                let params = policy.update_params(&target, &s.understood);
                let exchange = self.start_exchange(s.peer.clone(), params);
                s.pending = Some(PendingPolicy {
                    exchange: exchange.clone(),
                    target,
                    derived,
                    initial: false,
                });
                Some(exchange)
            })
            .flatten()
            .ok_or(McplError::NotActive)?;
        let outcome = exchange.await;
        self.settle();
        outcome.map_err(|e| McplError::PolicyUnanswered { reason: e.to_string() })
    }
}

/// Reads the raw `featureSet` (for diagnostics).
pub(crate) fn str_member<'a>(params: &'a Option<Value>, key: &str) -> Option<&'a str> {
    params.as_ref().and_then(|p| p.get(key)).and_then(Value::as_str)
}
