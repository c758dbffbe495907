//! [`McplConnection`]: one MCPL connection's policy and its gated server-to-host sends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use mcpl_core::Peer;
use mcpl_core::engine::RequestOptions;
use mcpl_core::mcpl::capability::{CapabilityGrant, paths};
use mcpl_core::mcpl::changes::{ManifestChangedParams, changed_domains};
use mcpl_core::mcpl::channels::{
    ChannelDescriptor, ChannelResults, ChannelsChangedParams, IncomingMessage, IncomingParams,
    IncomingResult, ListChannelsParams, ListChannelsResult, RegisterChannelsParams,
};
use mcpl_core::mcpl::content::McplContent;
use mcpl_core::mcpl::hooks::ModelInfo;
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
}

impl PushEvent {
    /// An event of `feature_set` showing the model `content`, with a fresh event id and the
    /// current time.
    pub fn new(feature_set: impl Into<String>, content: Vec<McplContent>) -> Self {
        PushEvent {
            params: PushEventParams {
                feature_set: feature_set.into(),
                event_id: random_id("evt"),
                timestamp: now_rfc3339(),
                origin: None,
                payload: PushPayload { content, extra: Map::new() },
                tags: None,
                extra: Map::new(),
            },
        }
    }

    /// Sets the event id (reuse it when retrying: the host deduplicates by it).
    pub fn event_id(mut self, id: impl Into<String>) -> Self {
        self.params.event_id = id.into();
        self
    }

    /// Sets the tags (`namespace:value`).
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.params.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the origin (provenance, server-defined).
    pub fn origin(mut self, origin: Map<String, Value>) -> Self {
        self.params.origin = Some(origin);
        self
    }

    /// The `push/event` params.
    pub fn into_params(self) -> PushEventParams {
        self.params
    }
}

impl From<PushEventParams> for PushEvent {
    fn from(params: PushEventParams) -> Self {
        PushEvent { params }
    }
}

impl McplConnection {
    pub(crate) fn new(peer: Peer, host: HostAdvertisement, hub: Arc<McplHub>) -> Self {
        McplConnection(Arc::new(ConnInner { peer, host, hub, policy: Mutex::default() }))
    }

    pub(crate) fn policy(&self) -> MutexGuard<'_, Policy> {
        self.0.policy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn hub(&self) -> &McplHub {
        &self.0.hub
    }

    /// The host's MCPL advertisement from its `initialize` request.
    pub fn host(&self) -> &HostAdvertisement {
        &self.0.host
    }

    /// The host, for anything outside MCPL. MCPL messages sent through it bypass the gate.
    pub fn peer(&self) -> &Peer {
        &self.0.peer
    }

    /// Whether the host's first `featureSets/update` request was answered.
    pub fn is_ready(&self) -> bool {
        self.policy().ready
    }

    /// The current capability grant (empty until the first `featureSets/update` request).
    pub fn grant(&self) -> CapabilityGrant {
        self.policy().grant.clone()
    }

    /// Whether capability `path` is granted now (and the connection is ready).
    pub fn is_granted(&self, path: &str) -> bool {
        let policy = self.policy();
        policy.ready && policy.grant.is_granted(path)
    }

    /// Every declared feature set and whether it is enabled (`Ok`) or why not, derived from the
    /// current manifest and policy.
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
    pub fn is_enabled(&self, name: &str) -> bool {
        self.is_ready() && self.feature_sets().get(name).is_some_and(Result::is_ok)
    }

    /// Resolves when the connection closes.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
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
                reason: reason.as_str(),
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
    pub async fn push_event(
        &self,
        event: impl Into<PushEvent>,
    ) -> Result<PushEventResult, SendError> {
        let params = event.into().into_params();
        self.admit(&[paths::PUSH_EVENTS], Some(&params.feature_set))?;
        self.exchange(names::PUSH_EVENT, &params, RequestOptions::new()).await
    }

    /// Sends `inference/request` without streaming (needs `inferenceRequest`, in the request's
    /// feature set); `params.stream` is sent as `false`.
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
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
                    Err(e) => tracing::warn!(error = %e, "malformed inference/chunk dropped"),
                }
            });
        self.exchange(names::INFERENCE_REQUEST, &params, options).await
    }

    /// Sends `model/info` (needs `modelInfo`).
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
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
    pub async fn register_channels(
        &self,
        channels: Vec<ChannelDescriptor>,
    ) -> Result<ChannelResults, SendError> {
        self.admit(&[paths::CHANNELS_REGISTER], None)?;
        let params = RegisterChannelsParams { channels, extra: Map::new() };
        self.exchange(names::CHANNELS_REGISTER, &params, RequestOptions::new()).await
    }

    /// Sends `channels/changed`, always as a request so the host can answer per item (needs
    /// `channels.register`).
    ///
    /// # Errors
    ///
    /// A gate refusal, the host's error, or a failed exchange.
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
    pub async fn channels_incoming(
        &self,
        messages: Vec<IncomingMessage>,
    ) -> Result<IncomingResult, SendError> {
        self.admit(&[paths::CHANNELS_INCOMING], None)?;
        let params = IncomingParams { messages, extra: Map::new() };
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
                let params = ManifestChangedParams { revision, domains, extra: Map::new() };
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

/// A random id with `prefix`: 128 random bits in hex.
pub(crate) fn random_id(prefix: &str) -> String {
    format!("{prefix}-{}", crate::ids::random_hex())
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
        assert_ne!(random_id("e"), random_id("e"));
        assert!(random_id("evt").starts_with("evt-"));
    }
}
