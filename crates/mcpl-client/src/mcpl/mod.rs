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
//! let host = McplHost::builder(HostPolicy::default())
//!     .on_push_event(|event| async move {
//!         println!("event {} from {}", event.event_id, event.feature_set);
//!         PushOutcome::accepted(None)
//!     })
//!     .on_diagnostic(|d| eprintln!("mcpl: {d:?}"))
//!     .build();
//! let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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

mod builder;
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
use std::sync::{Arc, Mutex, PoisonError, Weak};
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
use mcpl_core::mcpl::push::PushEventParams;
use mcpl_core::{Engine, Peer};
use serde_json::Value;

use crate::negotiation::ServerDetails;

pub use self::builder::McplHostBuilder;
pub use self::calls::HookOutcome;
pub use self::diagnostics::Diagnostic;
pub use self::error::McplError;
#[allow(deprecated)]
pub use self::inbound::PushEvent;
pub use self::inbound::{ChunkSender, IncomingOutcome, InferenceCall, PushOutcome, StateCall};
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
/// let host = McplHost::builder(HostPolicy::default()).with_hook_timeout(DEFAULT_HOOK_TIMEOUT / 5).build();
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
/// let host = McplHost::builder(HostPolicy::default()).with_policy_timeout(DEFAULT_POLICY_TIMEOUT * 2).build();
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
/// let host = McplHost::builder(HostPolicy::default()).with_push_dedupe(8 * DEFAULT_PUSH_DEDUPE).build();
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
/// let host = McplHost::builder(HostPolicy::default())
///     .with_fetch_limit(2 * DEFAULT_FETCH_BURST, DEFAULT_FETCH_WINDOW)
///     .build();
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
    pub(crate) push: Option<Callback<PushEventParams, PushOutcome>>,
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
    pub(crate) handlers: Handlers,
    pub(crate) options: Options,
    pub(crate) policy: Mutex<HostPolicy>,
    pub(crate) session: Mutex<Option<Session>>,
    /// Serializes grant changes (policy updates, manifest changes).
    pub(crate) grant_lock: tokio::sync::Mutex<()>,
    pub(crate) sink: Option<Sink>,
    pub(crate) receipts: Option<ReceiptSink>,
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
/// # use mcpl_test_kit::mcpl::alerts_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_server, _session, transport) = alerts_server().await?;
/// let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
/// let host = McplHost::builder(HostPolicy::default()).on_push_event(move |event| {
///     let tx = tx.clone();
///     async move {
///         tx.send(event.feature_set).ok();
///         PushOutcome::accepted(None)
///     }
/// }).build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
        McplHostBuilder::new(policy).build()
    }

    /// A builder for a host with `policy`: set the handlers, sinks and limits, then
    /// [`build`](McplHostBuilder::build). The configuration of a built host is fixed, so
    /// configuring one handle can never change another.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// assert!(host.supported().contains(paths::PUSH_EVENTS));
    /// ```
    pub fn builder(policy: HostPolicy) -> McplHostBuilder {
        McplHostBuilder::new(policy)
    }

    /// A builder with this host's configuration (policy, handlers, sinks, limits) and none of
    /// its connection state.
    fn to_builder(&self) -> McplHostBuilder {
        let inner = &self.inner;
        McplHostBuilder {
            policy: self.policy(),
            handlers: inner.handlers.clone(),
            options: inner.options.clone(),
            sink: inner.sink.clone(),
            receipts: inner.receipts.clone(),
        }
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_push_event`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_push_event(..)` then `build()`"
    )]
    pub fn on_push_event<F, Fut>(self, handler: F) -> McplHost
    where
        F: Fn(PushEventParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PushOutcome> + Send + 'static,
    {
        self.to_builder().on_push_event(handler).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_inference`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_inference(..)` then `build()`"
    )]
    pub fn on_inference<F, Fut>(self, handler: F) -> McplHost
    where
        F: Fn(InferenceCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<InferenceResult, ErrorObject>> + Send + 'static,
    {
        self.to_builder().on_inference(handler).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_model_info`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_model_info(..)` then `build()`"
    )]
    pub fn on_model_info<F, Fut>(self, handler: F) -> McplHost
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ModelInfo, ErrorObject>> + Send + 'static,
    {
        self.to_builder().on_model_info(handler).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_channel_message`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_channel_message(..)` then `build()`"
    )]
    pub fn on_channel_message<F, Fut>(self, handler: F) -> McplHost
    where
        F: Fn(IncomingMessage) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = IncomingOutcome> + Send + 'static,
    {
        self.to_builder().on_channel_message(handler).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_state`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_state(..)` then `build()`"
    )]
    pub fn on_state<F, Fut>(self, handler: F) -> McplHost
    where
        F: Fn(StateCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
    {
        self.to_builder().on_state(handler).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_diagnostic`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_diagnostic(..)` then `build()`"
    )]
    pub fn on_diagnostic(self, sink: impl Fn(&Diagnostic) + Send + Sync + 'static) -> McplHost {
        self.to_builder().on_diagnostic(sink).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::on_change_receipt`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).on_change_receipt(..)` then `build()`"
    )]
    pub fn on_change_receipt(
        self,
        sink: impl Fn(&ChangeReceipt) + Send + Sync + 'static,
    ) -> McplHost {
        self.to_builder().on_change_receipt(sink).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::with_hook_timeout`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).with_hook_timeout(..)` then `build()`"
    )]
    pub fn with_hook_timeout(self, timeout: Duration) -> McplHost {
        self.to_builder().with_hook_timeout(timeout).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::with_policy_timeout`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).with_policy_timeout(..)` then `build()`"
    )]
    pub fn with_policy_timeout(self, timeout: Duration) -> McplHost {
        self.to_builder().with_policy_timeout(timeout).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::with_push_dedupe`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).with_push_dedupe(..)` then `build()`"
    )]
    pub fn with_push_dedupe(self, entries: usize) -> McplHost {
        self.to_builder().with_push_dedupe(entries).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::with_state_budget`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).with_state_budget(..)` then `build()`"
    )]
    pub fn with_state_budget(self, budget: mcpl_core::mcpl::state::StateBudget) -> McplHost {
        self.to_builder().with_state_budget(budget).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::with_fetch_limit`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).with_fetch_limit(..)` then `build()`"
    )]
    pub fn with_fetch_limit(self, burst: usize, window: Duration) -> McplHost {
        self.to_builder().with_fetch_limit(burst, window).build()
    }

    /// Deprecated: configure the host before it exists, with
    /// [`McplHostBuilder::refresh_on_change`]. This returns a new host with this one's configuration
    /// plus the change; the host it is called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `McplHost::builder(policy).refresh_on_change(..)` then `build()`"
    )]
    pub fn refresh_on_change(self, refresh: bool) -> McplHost {
        self.to_builder().refresh_on_change(refresh).build()
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
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// assert!(host.supported().contains(paths::PUSH_EVENTS));
    /// // The policy does not change what the host supports, only what it grants.
    /// assert!(host.supported().contains(paths::INJECT_SYSTEM));
    /// ```
    pub fn supported(&self) -> BTreeSet<&'static str> {
        let h = &self.inner.handlers;
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
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// let advertisement = host.advertisement();
    /// assert_eq!(advertisement.capabilities.push_events, Some(true));
    /// assert_eq!(advertisement.capabilities.model_info, None);
    ///
    /// // What a client with this host sends in `initialize`.
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// let experimental = client.capabilities().experimental.unwrap_or_default();
    /// assert_eq!(experimental["mcpl"]["pushEvents"], true);
    /// ```
    pub fn advertisement(&self) -> HostAdvertisement {
        let s = self.supported();
        let has = |p: &str| s.contains(p).then_some(true);
        let caps = {
            let mut v = McplCapabilities::default()
                .with_context_hooks(Capability::Detailed(
                    ContextHooksCapability::default().with_before_inference(Capability::Flag(true)),
                ))
                .with_channels(Capability::Detailed({
                    let mut v = ChannelsCapability::default();
                    v.register = has(paths::CHANNELS_REGISTER);
                    v.lifecycle = has(paths::CHANNELS_LIFECYCLE);
                    v.publish = has(paths::CHANNELS_PUBLISH);
                    v.incoming = has(paths::CHANNELS_INCOMING);
                    v.streaming = has(paths::CHANNELS_STREAMING);
                    v.acknowledge = has(paths::CHANNELS_ACKNOWLEDGE);
                    v.typing = has(paths::CHANNELS_TYPING);
                    v
                }));
            v.push_events = has(paths::PUSH_EVENTS);
            v.inference_lifecycle = has(paths::INFERENCE_LIFECYCLE);
            v.inference_request = s.contains(paths::INFERENCE_REQUEST).then(|| {
                Capability::Detailed({
                    let mut v = InferenceRequestCapability::default();
                    v.streaming = has(paths::INFERENCE_REQUEST_STREAMING);
                    v
                })
            });
            v.model_info = has(paths::MODEL_INFO);
            v
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// // Push events are handled; `summaries` needs `inferenceRequest`, which this host lacks.
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// // Push events are handled; `summaries` needs `inferenceRequest`, which this host lacks.
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::new(HostPolicy::default().deny("tools"));
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
        emit(self.inner.sink.as_ref(), diagnostic);
    }

    pub(crate) fn options(&self) -> Options {
        self.inner.options.clone()
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
        if let (Some(claimed), Ok(computed)) = (manifest.revision(), manifest.compute_revision())
            && claimed != computed
        {
            self.diagnose(Diagnostic::ManifestDefect {
                detail: format!("revision {claimed} is not the digest {computed}"),
            });
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
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
