//! MCPL methods as types: a marker per method implementing [`Method`] or
//! [`NotificationMethod`], like the MCP ones in [`crate::types`]. Methods that may be sent as
//! a request or as a notification have one marker of each kind.

use crate::types::{Method, NotificationMethod, notification_methods, request_methods};

use super::changes::{ManifestChangedParams, ManifestParams};
use super::channels::{
    AcknowledgeParams, AcknowledgeResult, ChannelResults, ChannelsChangedParams,
    CloseChannelParams, CloseChannelResult, IncomingParams, IncomingResult, ListChannelsParams,
    ListChannelsResult, OpenChannelParams, OpenChannelResult, OutgoingChunkParams,
    OutgoingCompleteParams, PublishParams, PublishResult, RegisterChannelsParams, TypingParams,
};
use super::hooks::{BeforeInferenceParams, BeforeInferenceResult, LifecycleParams, ModelInfo};
use super::inference::{
    InferenceChunkParams, InferenceRequestParams, InferenceResult, ModelInfoParams,
};
use super::manifest::Manifest;
use super::policy::{FeatureSetsUpdateParams, PolicyReceipt};
use super::push::{PushEventParams, PushEventResult};
use super::state::{RollbackParams, RollbackResult};

/// Every MCPL method name.
pub mod names {
    /// `featureSets/update` (host to server; request for any grant change).
    pub const FEATURE_SETS_UPDATE: &str = "featureSets/update";
    /// `push/event` (server to host).
    pub const PUSH_EVENT: &str = "push/event";
    /// `context/beforeInference` (host to server).
    pub const CONTEXT_BEFORE_INFERENCE: &str = "context/beforeInference";
    /// `inference/lifecycle` (host to server notification).
    pub const INFERENCE_LIFECYCLE: &str = "inference/lifecycle";
    /// `inference/request` (server to host).
    pub const INFERENCE_REQUEST: &str = "inference/request";
    /// `inference/chunk` (host to server notification).
    pub const INFERENCE_CHUNK: &str = "inference/chunk";
    /// `model/info` (server to host).
    pub const MODEL_INFO: &str = "model/info";
    /// `state/rollback` (host to server).
    pub const STATE_ROLLBACK: &str = "state/rollback";
    /// `channels/register` (server to host).
    pub const CHANNELS_REGISTER: &str = "channels/register";
    /// `channels/changed` (server to host, notification or request).
    pub const CHANNELS_CHANGED: &str = "channels/changed";
    /// `channels/list` (either direction).
    pub const CHANNELS_LIST: &str = "channels/list";
    /// `channels/open` (host to server).
    pub const CHANNELS_OPEN: &str = "channels/open";
    /// `channels/close` (host to server).
    pub const CHANNELS_CLOSE: &str = "channels/close";
    /// `channels/publish` (host to server, notification or request).
    pub const CHANNELS_PUBLISH: &str = "channels/publish";
    /// `channels/incoming` (server to host).
    pub const CHANNELS_INCOMING: &str = "channels/incoming";
    /// `channels/outgoing/chunk` (host to server notification).
    pub const CHANNELS_OUTGOING_CHUNK: &str = "channels/outgoing/chunk";
    /// `channels/outgoing/complete` (host to server notification).
    pub const CHANNELS_OUTGOING_COMPLETE: &str = "channels/outgoing/complete";
    /// `channels/acknowledge` (host to server).
    pub const CHANNELS_ACKNOWLEDGE: &str = "channels/acknowledge";
    /// `channels/typing` (host to server notification).
    pub const CHANNELS_TYPING: &str = "channels/typing";
    /// `mcpl/manifestChanged` (server to host notification, ungated).
    pub const MANIFEST_CHANGED: &str = "mcpl/manifestChanged";
    /// `mcpl/manifest` (host to server).
    pub const MANIFEST: &str = "mcpl/manifest";

    /// Methods removed in MCPL 0.5: tolerate or ignore them, answer a request with `-32601`.
    pub const REMOVED: [&str; 4] =
        ["context/afterInference", "featureSets/changed", "scope/elevate", "tags/describe"];
}

/// The capability path a method needs (the grant that gates it), per the method inventory.
/// `None` for the ungated methods (`featureSets/update`, `state/rollback`, `mcpl/manifest`,
/// `mcpl/manifestChanged`) and for `context/beforeInference`, which needs any of the four
/// `contextHooks.beforeInference.*` leaves; `inference/request` with `stream: true` also
/// needs `inferenceRequest.streaming`.
pub fn required_capability(method: &str) -> Option<&'static str> {
    use super::capability::paths;
    Some(match method {
        names::PUSH_EVENT => paths::PUSH_EVENTS,
        names::INFERENCE_LIFECYCLE => paths::INFERENCE_LIFECYCLE,
        names::INFERENCE_REQUEST => paths::INFERENCE_REQUEST,
        names::INFERENCE_CHUNK => paths::INFERENCE_REQUEST_STREAMING,
        names::MODEL_INFO => paths::MODEL_INFO,
        names::CHANNELS_REGISTER | names::CHANNELS_CHANGED | names::CHANNELS_LIST => {
            paths::CHANNELS_REGISTER
        }
        names::CHANNELS_OPEN | names::CHANNELS_CLOSE => paths::CHANNELS_LIFECYCLE,
        names::CHANNELS_PUBLISH => paths::CHANNELS_PUBLISH,
        names::CHANNELS_INCOMING => paths::CHANNELS_INCOMING,
        names::CHANNELS_OUTGOING_CHUNK | names::CHANNELS_OUTGOING_COMPLETE => {
            paths::CHANNELS_STREAMING
        }
        names::CHANNELS_ACKNOWLEDGE => paths::CHANNELS_ACKNOWLEDGE,
        names::CHANNELS_TYPING => paths::CHANNELS_TYPING,
        _ => return None,
    })
}

request_methods! {
    /// `featureSets/update` as a request: the grant and the feature-set selection; the result
    /// is the degradation receipt.
    UpdateFeatureSets = FEATURE_SETS_UPDATE, FeatureSetsUpdateParams => PolicyReceipt;
    /// `push/event`.
    PushEvent = PUSH_EVENT, PushEventParams => PushEventResult;
    /// `context/beforeInference`.
    BeforeInference = CONTEXT_BEFORE_INFERENCE, BeforeInferenceParams => BeforeInferenceResult;
    /// `inference/request`.
    InferenceRequest = INFERENCE_REQUEST, InferenceRequestParams => InferenceResult;
    /// `model/info`.
    GetModelInfo = MODEL_INFO, ModelInfoParams => ModelInfo;
    /// `state/rollback`.
    Rollback = STATE_ROLLBACK, RollbackParams => RollbackResult;
    /// `channels/register`.
    RegisterChannels = CHANNELS_REGISTER, RegisterChannelsParams => ChannelResults;
    /// `channels/changed` as a request (itemized result).
    ChannelsChanged = CHANNELS_CHANGED, ChannelsChangedParams => ChannelResults;
    /// `channels/list`.
    ListChannels = CHANNELS_LIST, ListChannelsParams => ListChannelsResult;
    /// `channels/open`.
    OpenChannel = CHANNELS_OPEN, OpenChannelParams => OpenChannelResult;
    /// `channels/close`.
    CloseChannel = CHANNELS_CLOSE, CloseChannelParams => CloseChannelResult;
    /// `channels/publish` as a request.
    Publish = CHANNELS_PUBLISH, PublishParams => PublishResult;
    /// `channels/incoming`.
    Incoming = CHANNELS_INCOMING, IncomingParams => IncomingResult;
    /// `channels/acknowledge`.
    Acknowledge = CHANNELS_ACKNOWLEDGE, AcknowledgeParams => AcknowledgeResult;
    /// `mcpl/manifest`: the complete current manifest.
    GetManifest = MANIFEST, ManifestParams => Manifest;
}

notification_methods! {
    /// `featureSets/update` as a notification: descriptive only; a server applies its
    /// `disabled` list and ignores any widening.
    UpdateFeatureSetsNotification = FEATURE_SETS_UPDATE, FeatureSetsUpdateParams;
    /// `inference/lifecycle`.
    InferenceLifecycle = INFERENCE_LIFECYCLE, LifecycleParams;
    /// `inference/chunk`.
    InferenceChunk = INFERENCE_CHUNK, InferenceChunkParams;
    /// `channels/changed` as a notification (cannot report rejections).
    ChannelsChangedNotification = CHANNELS_CHANGED, ChannelsChangedParams;
    /// `channels/publish` as a notification.
    PublishNotification = CHANNELS_PUBLISH, PublishParams;
    /// `channels/outgoing/chunk`.
    OutgoingChunk = CHANNELS_OUTGOING_CHUNK, OutgoingChunkParams;
    /// `channels/outgoing/complete`.
    OutgoingComplete = CHANNELS_OUTGOING_COMPLETE, OutgoingCompleteParams;
    /// `channels/typing`.
    Typing = CHANNELS_TYPING, TypingParams;
    /// `mcpl/manifestChanged`.
    ManifestChanged = MANIFEST_CHANGED, ManifestChangedParams;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorObject;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    /// Decodes params as the engine does: absent params read as `{}`, failures are `-32602`.
    fn decode_params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
        serde_json::from_value(params.unwrap_or_else(|| json!({})))
            .map_err(ErrorObject::invalid_params)
    }

    fn decode<M: Method>(params: Value) -> M::Params {
        decode_params::<M::Params>(Some(params)).unwrap()
    }

    #[test]
    fn markers_carry_names_and_types() {
        assert_eq!(UpdateFeatureSets::NAME, "featureSets/update");
        assert_eq!(UpdateFeatureSetsNotification::NAME, "featureSets/update");
        assert_eq!(GetManifest::NAME, "mcpl/manifest");
        assert_eq!(ManifestChanged::NAME, "mcpl/manifestChanged");
        let p = decode::<Rollback>(json!({"featureSet": "f", "checkpoint": "c"}));
        assert_eq!(p.checkpoint, "c");
        // Empty params decode from absent params.
        decode_params::<<GetModelInfo as Method>::Params>(None).unwrap();
        decode_params::<<GetManifest as Method>::Params>(None).unwrap();
        decode_params::<<ListChannels as Method>::Params>(None).unwrap();
        let e = decode_params::<<PushEvent as Method>::Params>(Some(json!({}))).unwrap_err();
        assert_eq!(e.code, crate::jsonrpc::ErrorCode::INVALID_PARAMS);
        let m: <GetManifest as Method>::Result =
            serde_json::from_value(json!({"version": "0.5"})).unwrap();
        assert_eq!(m.version(), Some("0.5"));
    }

    #[test]
    fn gates() {
        use super::super::capability::paths;
        assert_eq!(required_capability(PushEvent::NAME), Some(paths::PUSH_EVENTS));
        assert_eq!(required_capability(Typing::NAME), Some(paths::CHANNELS_TYPING));
        assert_eq!(required_capability(OutgoingComplete::NAME), Some(paths::CHANNELS_STREAMING));
        assert_eq!(required_capability(ListChannels::NAME), Some(paths::CHANNELS_REGISTER));
        assert_eq!(
            required_capability(InferenceChunk::NAME),
            Some(paths::INFERENCE_REQUEST_STREAMING)
        );
        assert_eq!(required_capability(ManifestChanged::NAME), None);
        assert_eq!(required_capability(GetManifest::NAME), None);
        assert_eq!(required_capability(UpdateFeatureSets::NAME), None);
        assert_eq!(required_capability(Rollback::NAME), None);
        assert!(names::REMOVED.contains(&"context/afterInference"));
    }
}
