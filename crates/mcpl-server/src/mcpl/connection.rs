//! [`McplConnection`]: one MCPL connection's policy and its gated server-to-host sends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime};

use mcpl_core::Peer;
use mcpl_core::engine::RequestOptions;
use mcpl_core::mcpl::capability::{CapabilityGrant, paths};
use mcpl_core::mcpl::changes::{ManifestChangedParams, changed_domains};
use mcpl_core::mcpl::channels::{
    ChannelDescriptor, ChannelResults, ChannelsChangedParams, IncomingMessage, IncomingParams,
    IncomingResult, ListChannelsParams, ListChannelsResult, RegisterChannelsParams,
};
use mcpl_core::mcpl::content::McplContent;
use mcpl_core::mcpl::hooks::{LifecycleParams, ModelInfo};
use mcpl_core::mcpl::inference::{
    InferenceChunkParams, InferenceRequestParams, InferenceResult, ModelInfoParams,
};
use mcpl_core::mcpl::manifest::{FeatureSets, HostAdvertisement, Manifest};
use mcpl_core::mcpl::methods::names;
use mcpl_core::mcpl::policy::{DisabledReason, derive_feature_sets};
use mcpl_core::mcpl::push::{PushEventParams, PushEventResult, PushPayload};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::watch;

use super::error::SendError;
use super::hub::McplHub;
use super::lifecycle::{Inferences, Verdict};

/// The policy the host set with `featureSets/update`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Policy {
    /// Whether a `featureSets/update` request was answered.
    pub(crate) ready: bool,
    pub(crate) grant: CapabilityGrant,
    pub(crate) enabled: Option<Vec<String>>,
    pub(crate) disabled: Vec<String>,
}

pub(crate) struct ConnInner {
    pub(crate) peer: Peer,
    pub(crate) host: HostAdvertisement,
    pub(crate) hub: Arc<McplHub>,
    pub(crate) policy: Mutex<Policy>,
    /// The `inference/lifecycle` bookkeeping.
    inferences: Mutex<Inferences>,
}

/// One MCPL connection: the host's advertisement and policy, and the one gated path for
/// server-to-host MCPL messages. Cheap to clone.
///
/// Get it from a handler's [`Context::mcpl`](crate::Context::mcpl), from the handlers of
/// [`Mcpl`](super::Mcpl), or from [`Server::mcpl_connections`](crate::Server::mcpl_connections).
/// Only connections whose host advertised MCPL in `initialize` have one.
///
/// # The policy
///
/// The host sets it with `featureSets/update`. As a request, it replaces the grant
/// (`effectiveCapabilities`, absent = nothing) and the `enabled` / `disabled` selection, makes
/// the connection ready and is answered with the degradation receipt; a path in both
/// `effectiveCapabilities` and `deniedCapabilities` is refused with `-32602` and leaves the grant
/// empty. As a notification, only its `disabled` list applies (narrowing, at once); grant fields
/// and `enabled` are ignored with a diagnostic.
///
/// # The gate
///
/// Every send checks, in order: the connection is ready ([`SendError::NotReady`]), each
/// capability the message needs is granted ([`SendError::NotGranted`]), and for messages tagged
/// with a feature set, the set is declared ([`SendError::FeatureSetUndeclared`]), enabled
/// ([`SendError::FeatureSetDisabled`]) and lists the capability in `uses`
/// ([`SendError::DeclarationMismatch`]). A refusal sends nothing.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::content::McplContent;
/// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
/// use mcpl_server::Server;
/// use mcpl_server::mcpl::{Mcpl, PushEvent, SendErrorKind};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let manifest = Manifest::new()
///     .with_push_events(true)
///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
/// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
/// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
/// // A host that speaks MCPL initialized: the connection exists, but is not ready.
/// let conn = session.mcpl().expect("the host speaks MCPL");
/// let alert = || PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]);
/// let refused = conn.push_event(alert()).await.unwrap_err();
/// assert_eq!(refused.kind(), SendErrorKind::NotReady);
///
/// // The host sets its policy: `pushEvents` is granted, so `alerts` is enabled.
/// let policy = json!({"effectiveCapabilities": ["pushEvents"]});
/// host.request("featureSets/update", Some(policy), Default::default()).await?;
/// assert!(conn.is_ready() && conn.is_enabled("alerts"));
/// assert!(conn.push_event(alert()).await?.accepted);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McplConnection(pub(crate) Arc<ConnInner>);

impl std::fmt::Debug for McplConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McplConnection")
            .field("host", &self.0.host)
            .field("policy", &*self.policy())
            .finish()
    }
}

/// A `push/event` to send: the feature set, the content, and optional tags and origin. The
/// event id and timestamp are generated unless set.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::content::McplContent;
/// use mcpl_server::mcpl::PushEvent;
///
/// let event = PushEvent::new("chat.relay", vec![McplContent::text("You were mentioned")])
///     .tags(["chat:mention"])
///     .event_id("evt-1");
/// let params = event.into_params();
/// assert_eq!(params.event_id, "evt-1");
/// assert!(params.timestamp.ends_with('Z'));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PushEvent {
    params: PushEventParams,
    /// The OS random source failed for the generated id: sending is refused unless an id is
    /// set.
    no_id: bool,
}

impl PushEvent {
    /// An event of `feature_set` showing the model `content`, with a fresh event id and the
    /// current time.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_server::mcpl::PushEvent;
    ///
    /// let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]);
    /// let params = event.into_params();
    /// assert_eq!(params.feature_set, "alerts");
    /// assert_eq!(params.payload.content, vec![McplContent::text("Disk almost full")]);
    /// assert!(params.event_id.starts_with("evt-"));
    /// // Each event gets its own id.
    /// let again = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]);
    /// assert_ne!(again.into_params().event_id, params.event_id);
    /// ```
    pub fn new(feature_set: impl Into<String>, content: Vec<McplContent>) -> Self {
        PushEvent::with_id(feature_set, content, random_id("evt"))
    }

    fn with_id(
        feature_set: impl Into<String>,
        content: Vec<McplContent>,
        id: Result<String, getrandom::Error>,
    ) -> Self {
        let no_id = id.is_err();
        PushEvent {
            no_id,
            params: PushEventParams::new(
                feature_set,
                id.unwrap_or_default(),
                now_rfc3339(),
                PushPayload::new(content),
            ),
        }
    }

    /// Sets the event id (reuse it when retrying: the host deduplicates by it).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_server::mcpl::PushEvent;
    ///
    /// // An id derived from what happened: a retry of the same alert carries the same id.
    /// let alert = |disk: &str| {
    ///     PushEvent::new("alerts", vec![McplContent::text(format!("{disk} almost full"))])
    ///         .event_id(format!("disk-full-{disk}"))
    /// };
    /// let first = alert("sda1").into_params();
    /// let retry = alert("sda1").into_params();
    /// assert_eq!(first.event_id, "disk-full-sda1");
    /// assert_eq!(retry.event_id, first.event_id);
    /// ```
    pub fn event_id(mut self, id: impl Into<String>) -> Self {
        self.params.event_id = id.into();
        self.no_id = false;
        self
    }

    /// Sets the tags (`namespace:value`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_server::mcpl::PushEvent;
    ///
    /// let event = PushEvent::new("chat.relay", vec![McplContent::text("@ada: are you there?")])
    ///     .tags(["chat:mention", "chat:direct"]);
    /// let params = event.into_params();
    /// assert_eq!(params.tags, Some(vec!["chat:mention".to_owned(), "chat:direct".to_owned()]));
    /// ```
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.params.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the origin (provenance, server-defined).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_server::mcpl::PushEvent;
    /// use serde_json::json;
    ///
    /// let origin = json!({"monitor": "disk", "host": "db-1"}).as_object().cloned().unwrap();
    /// let event = PushEvent::new(
    ///     "alerts",
    ///     vec![McplContent::text("Disk almost full")],
    /// ).origin(origin);
    /// let wire = serde_json::to_value(event.into_params())?;
    /// assert_eq!(wire["origin"]["host"], "db-1");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn origin(mut self, origin: Map<String, Value>) -> Self {
        self.params.origin = Some(origin);
        self
    }

    /// The `push/event` params.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_server::mcpl::PushEvent;
    ///
    /// let params = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
    ///     .event_id("evt-1")
    ///     .into_params();
    /// // What goes on the wire as the `push/event` params.
    /// let wire = serde_json::to_value(&params)?;
    /// assert_eq!(wire["featureSet"], "alerts");
    /// assert_eq!(wire["eventId"], "evt-1");
    /// assert_eq!(wire["payload"]["content"][0]["text"], "Disk almost full");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn into_params(self) -> PushEventParams {
        self.params
    }
}

impl From<PushEventParams> for PushEvent {
    fn from(params: PushEventParams) -> Self {
        PushEvent { params, no_id: false }
    }
}

impl McplConnection {
    pub(crate) fn new(peer: Peer, host: HostAdvertisement, hub: Arc<McplHub>) -> Self {
        let inferences = Mutex::new(Inferences::new(hub.lifecycle));
        McplConnection(Arc::new(ConnInner {
            peer,
            host,
            hub,
            policy: Mutex::default(),
            inferences,
        }))
    }

    /// Judges an `inference/lifecycle` phase before it reaches the handler: `false` drops it
    /// (a second terminal phase, a repeated `started`).
    pub(crate) fn admit_lifecycle(&self, params: &LifecycleParams) -> bool {
        let mut inferences = self.0.inferences.lock().unwrap_or_else(PoisonError::into_inner);
        match inferences.observe(&params.inference_id, params.phase, Instant::now()) {
            Verdict::Deliver => true,
            Verdict::Drop(why) => {
                tracing::debug!(inference_id = %params.inference_id, phase = ?params.phase, why, "inference/lifecycle dropped");
                false
            }
        }
    }

    pub(crate) fn policy(&self) -> MutexGuard<'_, Policy> {
        self.0.policy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn hub(&self) -> &McplHub {
        &self.0.hub
    }

    /// The host's MCPL advertisement from its `initialize` request.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, _host) = mcpl_test_kit::host::connect(&server).await?;
    /// // A host initialized with `"mcpl": {"version": "0.5", "featureSets": true}`.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// assert_eq!(conn.host().version, "0.5");
    /// assert_eq!(conn.host().feature_sets, Some(true));
    /// # Ok(()) }
    /// ```
    pub fn host(&self) -> &HostAdvertisement {
        &self.0.host
    }

    /// The host, for anything outside MCPL. MCPL messages sent through it bypass the gate.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, _host) = mcpl_test_kit::host::connect(&server).await?;
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// // A plain MCP request to the host: `ping` is no MCPL message.
    /// let pong = conn.peer().request("ping", None, Default::default()).await?;
    /// assert_eq!(pong, json!({}));
    /// # Ok(()) }
    /// ```
    pub fn peer(&self) -> &Peer {
        &self.0.peer
    }

    /// Whether the host's first `featureSets/update` request was answered.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// assert!(!conn.is_ready(), "the host has not sent its policy yet");
    /// // The host's first `featureSets/update` request is answered: the connection is ready.
    /// let policy = json!({"effectiveCapabilities": ["pushEvents"]});
    /// host.request("featureSets/update", Some(policy), Default::default()).await?;
    /// assert!(conn.is_ready());
    /// # Ok(()) }
    /// ```
    pub fn is_ready(&self) -> bool {
        self.policy().ready
    }

    /// The current capability grant (empty until the first `featureSets/update` request).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// assert!(conn.grant().is_empty());
    /// let policy = json!({"effectiveCapabilities": ["pushEvents", "channels.*"]});
    /// host.request("featureSets/update", Some(policy), Default::default()).await?;
    /// let grant = conn.grant();
    /// assert_eq!(grant.entries(), ["pushEvents", "channels.*"]);
    /// assert!(grant.is_granted("channels.typing"));
    /// assert!(!grant.is_granted("modelInfo"));
    /// # Ok(()) }
    /// ```
    pub fn grant(&self) -> CapabilityGrant {
        self.policy().grant.clone()
    }

    /// Whether capability `path` is granted now (and the connection is ready).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["pushEvents", "channels.*"]).await?;
    /// // The host granted `pushEvents` and `channels.*`.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// assert!(conn.is_granted("pushEvents"));
    /// assert!(conn.is_granted("channels.register"));
    /// assert!(!conn.is_granted("inferenceRequest"));
    /// # Ok(()) }
    /// ```
    pub fn is_granted(&self, path: &str) -> bool {
        let policy = self.policy();
        policy.ready && policy.grant.is_granted(path)
    }

    /// Every declared feature set and whether it is enabled (`Ok`) or why not, derived from the
    /// current manifest and policy.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// use mcpl_core::mcpl::policy::DisabledReason;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_inference_request(Capability::Flag(true))
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    ///     .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["pushEvents"]).await?;
    /// // The host granted `pushEvents` only.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let sets = conn.feature_sets();
    /// assert_eq!(sets["alerts"], Ok(()));
    /// assert_eq!(sets["summaries"], Err(DisabledReason::MissingCapabilities(vec!["inferenceRequest".into()])));
    /// # Ok(()) }
    /// ```
    pub fn feature_sets(&self) -> BTreeMap<String, Result<(), DisabledReason>> {
        let declared = declared_sets(&self.0.hub.manifest());
        let policy = self.policy();
        derive_feature_sets(
            &declared,
            &policy.grant,
            policy.enabled.as_deref(),
            Some(&policy.disabled),
        )
    }

    /// Whether feature set `name` is declared and enabled now (and the connection is ready).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let policy = json!({"effectiveCapabilities": ["pushEvents"]});
    /// host.request("featureSets/update", Some(policy), Default::default()).await?;
    /// assert!(conn.is_enabled("alerts"));
    /// assert!(!conn.is_enabled("reminders"), "not declared");
    /// // The user turns the alerts off.
    /// let policy = json!({"effectiveCapabilities": ["pushEvents"], "disabled": ["alerts"]});
    /// host.request("featureSets/update", Some(policy), Default::default()).await?;
    /// assert!(!conn.is_enabled("alerts"));
    /// # Ok(()) }
    /// ```
    pub fn is_enabled(&self, name: &str) -> bool {
        self.is_ready() && self.feature_sets().get(name).is_some_and(Result::is_ok)
    }

    /// The inferences the host reported `started` (`inference/lifecycle`) and not yet ended,
    /// oldest first. One whose terminal phase did not come within
    /// [`Mcpl::lifecycle_timeout`](super::Mcpl::lifecycle_timeout) is no longer listed.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    /// use tokio::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (phases, mut seen) = mpsc::unbounded_channel();
    /// let mcpl = Mcpl::new(Manifest::new().with_inference_lifecycle(true))
    ///     .on_inference_lifecycle(move |_conn, params| {
    ///         let _ = phases.send(params.inference_id);
    ///         async {}
    ///     });
    /// let server = Server::builder("activity", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["inferenceLifecycle"]).await?;
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let started = json!({"inferenceId": "inf-1", "phase": "started"});
    /// host.notify("inference/lifecycle", Some(started)).await?;
    /// assert_eq!(seen.recv().await.as_deref(), Some("inf-1"));
    /// assert_eq!(conn.inferences_in_flight(), ["inf-1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn inferences_in_flight(&self) -> Vec<String> {
        let mut inferences = self.0.inferences.lock().unwrap_or_else(PoisonError::into_inner);
        inferences.in_flight(Instant::now())
    }

    /// Resolves when the connection closes.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let host_engine = mcpl_test_kit::host::engine();
    /// # let (session, host) = mcpl_test_kit::host::connect_with(&server, &host_engine).await?;
    /// # mcpl_test_kit::host::grant(&host, &["pushEvents"]).await?;
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// // A background task that stops when the host goes away.
    /// let watcher = tokio::spawn(async move {
    ///     conn.closed().await;
    ///     "host gone"
    /// });
    /// host_engine.close().await?;
    /// assert_eq!(watcher.await?, "host gone");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub async fn closed(&self) {
        self.0.peer.closed().await;
    }

    /// The gate: readiness, then each capability, then the feature set (if the message has
    /// one): declared, enabled, and listing each capability in `uses`.
    pub(crate) fn admit(
        &self,
        capabilities: &[&str],
        feature_set: Option<&str>,
    ) -> Result<(), SendError> {
        let policy = self.policy().clone();
        if !policy.ready {
            return Err(SendError::NotReady);
        }
        if let Some(capability) = capabilities.iter().find(|c| !policy.grant.is_granted(c)) {
            return Err(SendError::NotGranted { capability: (*capability).to_owned() });
        }
        let Some(name) = feature_set else { return Ok(()) };
        let declared = declared_sets(&self.0.hub.manifest());
        let Some(set) = declared.get(name) else {
            return Err(SendError::FeatureSetUndeclared { feature_set: name.to_owned() });
        };
        let derived = derive_feature_sets(
            &FeatureSets(BTreeMap::from([(name.to_owned(), set.clone())])),
            &policy.grant,
            policy.enabled.as_deref(),
            Some(&policy.disabled),
        );
        if let Some(Err(reason)) = derived.get(name) {
            return Err(SendError::FeatureSetDisabled {
                feature_set: name.to_owned(),
                reason: reason.clone(),
            });
        }
        let uses = set.valid_uses().unwrap_or_default();
        if let Some(capability) = capabilities.iter().find(|c| !uses.iter().any(|u| u == *c)) {
            return Err(SendError::DeclarationMismatch {
                feature_set: name.to_owned(),
                capability: (*capability).to_owned(),
            });
        }
        Ok(())
    }

    async fn exchange<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<R, SendError> {
        let params = serde_json::to_value(params).map_err(|source| {
            SendError::Transport(mcpl_core::Error::Serialization {
                what: format!("{method} params"),
                source,
            })
        })?;
        let result = self
            .0
            .peer
            .request(method, Some(params), options)
            .await
            .map_err(SendError::from_exchange)?;
        serde_json::from_value(result).map_err(|source| {
            SendError::Transport(mcpl_core::Error::Serialization {
                what: format!("the host's {method} result"),
                source,
            })
        })
    }

    /// Sends `push/event` (needs `pushEvents`, in the event's feature set) and returns the
    /// host's treatment of it.
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::{Mcpl, PushEvent, SendErrorKind};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["pushEvents"]).await?;
    /// // The host granted `pushEvents` and accepts events.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let event = PushEvent::new(
    ///     "alerts",
    ///     vec![McplContent::text("Disk almost full")],
    /// ).event_id("disk-1");
    /// let result = conn.push_event(event).await?;
    /// assert!(result.accepted);
    /// assert_eq!(result.inference_id.as_deref(), Some("inf-for-disk-1"));
    /// // An event of an undeclared feature set is refused before it is sent.
    /// let stray = PushEvent::new("reminders", vec![McplContent::text("Call Bob")]);
    /// assert_eq!(conn.push_event(stray).await.unwrap_err().kind(), SendErrorKind::FeatureSetUndeclared);
    /// # Ok(()) }
    /// ```
    pub async fn push_event(
        &self,
        event: impl Into<PushEvent>,
    ) -> Result<PushEventResult, SendError> {
        let event = event.into();
        if event.no_id {
            return Err(SendError::NoRandomness);
        }
        let params = event.into_params();
        self.admit(&[paths::PUSH_EVENTS], Some(&params.feature_set))?;
        self.exchange(names::PUSH_EVENT, &params, RequestOptions::new()).await
    }

    /// Sends `inference/request` without streaming (needs `inferenceRequest`, in the request's
    /// feature set); `params.stream` is sent as `false`.
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::TextOrBlocks;
    /// use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_inference_request(Capability::Flag(true))
    ///     .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]));
    /// let server = Server::builder("summaries", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["inferenceRequest"]).await?;
    /// // The host granted `inferenceRequest` and runs the model for the server.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let params = InferenceRequestParams::new(
    ///     "summaries",
    ///     vec![InferenceMessage::new("user", TextOrBlocks::Text("ping".into()))],
    /// );
    /// let result = conn.request_inference(params).await?;
    /// assert_eq!(result.content, "pong");
    /// assert_eq!(result.usage.output_tokens, 2);
    /// # Ok(()) }
    /// ```
    pub async fn request_inference(
        &self,
        mut params: InferenceRequestParams,
    ) -> Result<InferenceResult, SendError> {
        params.stream = None;
        self.admit(params.required_capabilities(), Some(&params.feature_set))?;
        self.exchange(names::INFERENCE_REQUEST, &params, RequestOptions::new()).await
    }

    /// Sends `inference/request` with `stream: true` (needs `inferenceRequest` and
    /// `inferenceRequest.streaming`, in the request's feature set). `on_chunk` receives each
    /// `inference/chunk` the host sends for this request, in arrival order, before this
    /// resolves with the final result.
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use mcpl_core::mcpl::content::TextOrBlocks;
    /// use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    /// use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let uses = ["inferenceRequest", "inferenceRequest.streaming"];
    /// let manifest = Manifest::new()
    ///     .with_inference_request(Capability::Flag(true))
    ///     .with_feature_set("summaries", FeatureSet::new("Summaries", uses));
    /// let server = Server::builder("summaries", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["inferenceRequest", "inferenceRequest.streaming"]).await?;
    /// // The host granted streaming inference; it streams "po", "ng".
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let params = InferenceRequestParams::new(
    ///     "summaries",
    ///     vec![InferenceMessage::new("user", TextOrBlocks::Text("ping".into()))],
    /// );
    /// let streamed = Arc::new(Mutex::new(String::new()));
    /// let sink = streamed.clone();
    /// let result = conn
    ///     .request_inference_streaming(params, move |chunk| sink.lock().unwrap().push_str(&chunk.delta))
    ///     .await?;
    /// // Every chunk arrived before the final result.
    /// assert_eq!(*streamed.lock().unwrap(), "pong");
    /// assert_eq!(result.content, "pong");
    /// # Ok(()) }
    /// ```
    pub async fn request_inference_streaming(
        &self,
        mut params: InferenceRequestParams,
        on_chunk: impl Fn(InferenceChunkParams) + Send + Sync + 'static,
    ) -> Result<InferenceResult, SendError> {
        params.stream = Some(true);
        self.admit(params.required_capabilities(), Some(&params.feature_set))?;
        let options =
            RequestOptions::new().on_related_notification(names::INFERENCE_CHUNK, move |params| {
                match serde_json::from_value::<InferenceChunkParams>(params) {
                    Ok(chunk) => on_chunk(chunk),
                    Err(e) => tracing::debug!(error = %e, "malformed inference/chunk dropped"),
                }
            });
        self.exchange(names::INFERENCE_REQUEST, &params, options).await
    }

    /// Sends `model/info` (needs `modelInfo`).
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server =
    ///     Server::builder("sizer", "1").mcpl(Mcpl::new(
    ///         Manifest::new().with_model_info(true),
    ///     )).build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["modelInfo"]).await?;
    /// // The host granted `modelInfo`.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let model = conn.model_info().await?;
    /// assert_eq!(model.id, "m-1");
    /// // Size what goes into context by the model's window.
    /// assert!(model.context_window >= 100_000);
    /// # Ok(()) }
    /// ```
    pub async fn model_info(&self) -> Result<ModelInfo, SendError> {
        self.admit(&[paths::MODEL_INFO], None)?;
        let params = ModelInfoParams::default();
        self.exchange(names::MODEL_INFO, &params, RequestOptions::new()).await
    }

    /// Sends `channels/register` (needs `channels.register`); the host answers per descriptor.
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::{ChannelDescriptor, ChannelDirection};
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("chat", "1")
    ///     .mcpl(Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))))
    ///     .build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.register"]).await?;
    /// // The host granted `channels.register`.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let general = ChannelDescriptor::new(
    ///     "general",
    ///     "chat",
    ///     "#general",
    ///     ChannelDirection::Bidirectional,
    /// );
    /// let answer = conn.register_channels(vec![general]).await?;
    /// assert_eq!(answer.results.len(), 1);
    /// assert!(answer.results[0].id == "general" && answer.results[0].accepted);
    /// # Ok(()) }
    /// ```
    pub async fn register_channels(
        &self,
        channels: Vec<ChannelDescriptor>,
    ) -> Result<ChannelResults, SendError> {
        self.admit(&[paths::CHANNELS_REGISTER], None)?;
        let params = RegisterChannelsParams::new(channels);
        self.exchange(names::CHANNELS_REGISTER, &params, RequestOptions::new()).await
    }

    /// Sends `channels/changed`, always as a request so the host can answer per item (needs
    /// `channels.register`).
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::ChannelsChangedParams;
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("chat", "1")
    ///     .mcpl(Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))))
    ///     .build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.register"]).await?;
    /// // The host granted `channels.register`.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// // The room was deleted.
    /// let changes = ChannelsChangedParams::default().with_removed(vec!["general".into()]);
    /// let answer = conn.channels_changed(changes).await?;
    /// assert!(answer.results[0].id == "general" && answer.results[0].accepted);
    /// # Ok(()) }
    /// ```
    pub async fn channels_changed(
        &self,
        changes: ChannelsChangedParams,
    ) -> Result<ChannelResults, SendError> {
        self.admit(&[paths::CHANNELS_REGISTER], None)?;
        self.exchange(names::CHANNELS_CHANGED, &changes, RequestOptions::new()).await
    }

    /// Sends `channels/list`: the channels the host knows (needs `channels.register`).
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("chat", "1")
    ///     .mcpl(Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))))
    ///     .build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.register"]).await?;
    /// // The host granted `channels.register` and knows one channel.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let known = conn.list_channels().await?;
    /// let ids: Vec<&str> = known.channels.iter().map(|c| c.id.as_str()).collect();
    /// assert_eq!(ids, ["general"]);
    /// # Ok(()) }
    /// ```
    pub async fn list_channels(&self) -> Result<ListChannelsResult, SendError> {
        self.admit(&[paths::CHANNELS_REGISTER], None)?;
        let params = ListChannelsParams::default();
        self.exchange(names::CHANNELS_LIST, &params, RequestOptions::new()).await
    }

    /// Sends `channels/incoming` with `messages` (needs `channels.incoming`); the host answers
    /// per message.
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::{Author, IncomingMessage};
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("chat", "1")
    ///     .mcpl(Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))))
    ///     .build();
    /// # let (session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.incoming"]).await?;
    /// // The host granted `channels.incoming`.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// // A user wrote in the chat room.
    /// let message = IncomingMessage::new(
    ///     "general",
    ///     "m-7",
    ///     Author::new("u-1", "Ada"),
    ///     "2026-08-01T12:00:00.000Z",
    ///     vec![McplContent::text("@bot what's the weather?")],
    /// )
    ///     .with_tags(vec!["chat:mention".into()]);
    /// let answer = conn.channels_incoming(vec![message]).await?;
    /// assert!(answer.results[0].accepted);
    /// assert_eq!(answer.results[0].conversation_id.as_deref(), Some("c-1"));
    /// # Ok(()) }
    /// ```
    pub async fn channels_incoming(
        &self,
        messages: Vec<IncomingMessage>,
    ) -> Result<IncomingResult, SendError> {
        self.admit(&[paths::CHANNELS_INCOMING], None)?;
        let params = IncomingParams::new(messages);
        self.exchange(names::CHANNELS_INCOMING, &params, RequestOptions::new()).await
    }
}

/// The declared feature sets of `manifest`; a malformed `featureSets` declares none.
pub(crate) fn declared_sets(manifest: &Manifest) -> FeatureSets {
    match manifest.feature_sets() {
        Some(Ok(sets)) => sets,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "the MCPL manifest's featureSets is malformed");
            FeatureSets::default()
        }
        None => FeatureSets::default(),
    }
}

/// Announces manifest changes on one connection until it closes: each installed manifest
/// whose revision differs from the last one this host knows (from `initialize`, or the last
/// announcement) and which changes a domain. Bursts coalesce into one announcement.
pub(crate) async fn announce(
    peer: Peer,
    mut manifests: watch::Receiver<Arc<Manifest>>,
    mut known: Arc<Manifest>,
) {
    loop {
        tokio::select! {
            () = peer.closed() => return,
            changed = manifests.changed() => if changed.is_err() { return },
        }
        let current = manifests.borrow_and_update().clone();
        let Some(revision) = current.revision() else { continue };
        if known.revision().as_ref() == Some(&revision) {
            continue;
        }
        match changed_domains(&known, &current) {
            Ok(domains) if domains.is_empty() => {
                tracing::debug!(%revision, "manifest change without a domain (version only): not announced");
            }
            Ok(domains) => {
                let params = ManifestChangedParams::new(revision, domains);
                let Ok(params) = serde_json::to_value(params) else { continue };
                if peer.notify(names::MANIFEST_CHANGED, Some(params)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "manifest change not announced");
                continue;
            }
        }
        known = current;
    }
}

/// A random id with `prefix`: 128 random bits in hex, or the OS random source's failure.
pub(crate) fn random_id(prefix: &str) -> Result<String, getrandom::Error> {
    crate::ids::random_hex().map(|hex| format!("{prefix}-{hex}"))
}

/// The current UTC time as RFC 3339 (`2026-08-01T12:00:00.000Z`).
pub(crate) fn now_rfc3339() -> String {
    crate::ids::iso8601(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z') && &t[10..11] == "T", "{t}");
    }

    #[test]
    fn random_ids_differ() {
        assert_ne!(random_id("e").unwrap(), random_id("e").unwrap());
        assert!(random_id("evt").unwrap().starts_with("evt-"));
    }

    #[test]
    fn an_event_without_a_random_id_is_marked_unsendable() {
        // `push_event` refuses a marked event with `SendError::NoRandomness`.
        let event = PushEvent::with_id("alerts", Vec::new(), Err(getrandom::Error::UNSUPPORTED));
        assert!(event.no_id && event.params.event_id.is_empty());
        // An id of the caller's own makes it sendable again.
        assert!(!event.event_id("disk-1").no_id);
        assert_eq!(SendError::NoRandomness.kind().as_str(), "no_randomness");
    }
}
