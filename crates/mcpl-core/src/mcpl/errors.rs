//! MCPL's JSON-RPC error codes (spec §6.6, §8, §14) and constructors that carry the `data` the
//! spec asks for.
//!
//! `-32004` and `-32006` are not MCPL 0.5 codes. Errors are objects, never
//! `result: {accepted: false}`: an authorization failure is always one of these.

use serde_json::json;

use crate::jsonrpc::{ErrorCode, ErrorObject};

/// `-32001`: a server message is tagged with a feature set that is declared but disabled.
pub const FEATURE_SET_NOT_ENABLED: ErrorCode = ErrorCode(-32001);
/// `-32002`: the method needs a capability that is not in the grant (or the initial policy
/// exchange has not completed).
pub const CAPABILITY_DENIED: ErrorCode = ErrorCode(-32002);
/// `-32003`: a server message is tagged with a feature set that was never declared.
pub const UNKNOWN_FEATURE_SET: ErrorCode = ErrorCode(-32003);
/// `-32005`: `state/rollback` to a checkpoint that is unknown or pruned.
pub const CHECKPOINT_NOT_FOUND: ErrorCode = ErrorCode(-32005);
/// `-32017`: not allowed to publish to, or receive from, this channel.
pub const CHANNEL_NOT_PERMITTED: ErrorCode = ErrorCode(-32017);
/// `-32023`: the channel id is not registered.
pub const UNKNOWN_CHANNEL: ErrorCode = ErrorCode(-32023);
/// `-32024`: the server could not open the channel.
pub const CHANNEL_OPEN_FAILED: ErrorCode = ErrorCode(-32024);

/// The MCPL name of an MCPL error code, if it is one.
pub fn name(code: ErrorCode) -> Option<&'static str> {
    Some(match code {
        FEATURE_SET_NOT_ENABLED => "Feature set not enabled",
        CAPABILITY_DENIED => "Capability denied",
        UNKNOWN_FEATURE_SET => "Unknown feature set",
        CHECKPOINT_NOT_FOUND => "Checkpoint not found",
        CHANNEL_NOT_PERMITTED => "Channel not permitted",
        UNKNOWN_CHANNEL => "Unknown channel",
        CHANNEL_OPEN_FAILED => "Channel open failed",
        _ => return None,
    })
}

/// `-32001` with `data: {featureSet}`.
pub fn feature_set_not_enabled(feature_set: &str) -> ErrorObject {
    ErrorObject::new(FEATURE_SET_NOT_ENABLED, format!("feature set {feature_set:?} is not enabled"))
        .with_data(json!({ "featureSet": feature_set }))
}

/// `-32002` with `data: {capability}`.
pub fn capability_denied(capability: &str) -> ErrorObject {
    ErrorObject::new(CAPABILITY_DENIED, format!("capability {capability:?} is not granted"))
        .with_data(json!({ "capability": capability }))
}

/// `-32002` with `data: {capability, featureSet}`: the tagged feature set's `uses` lacks the
/// capability being exercised (a declaration mismatch), even if the connection grant allows it.
pub fn declaration_mismatch(capability: &str, feature_set: &str) -> ErrorObject {
    ErrorObject::new(
        CAPABILITY_DENIED,
        format!("feature set {feature_set:?} does not declare capability {capability:?}"),
    )
    .with_data(json!({ "capability": capability, "featureSet": feature_set }))
}

/// `-32003` with `data: {featureSet}`.
pub fn unknown_feature_set(feature_set: &str) -> ErrorObject {
    ErrorObject::new(UNKNOWN_FEATURE_SET, format!("feature set {feature_set:?} is not declared"))
        .with_data(json!({ "featureSet": feature_set }))
}

/// `-32005` with `data: {checkpoint}`.
pub fn checkpoint_not_found(checkpoint: &str) -> ErrorObject {
    ErrorObject::new(CHECKPOINT_NOT_FOUND, format!("checkpoint {checkpoint:?} not found"))
        .with_data(json!({ "checkpoint": checkpoint }))
}

/// `-32017` with `data: {channelId}`.
pub fn channel_not_permitted(channel_id: &str) -> ErrorObject {
    ErrorObject::new(CHANNEL_NOT_PERMITTED, format!("channel {channel_id:?} is not permitted"))
        .with_data(json!({ "channelId": channel_id }))
}

/// `-32023` with `data: {channelId}`.
pub fn unknown_channel(channel_id: &str) -> ErrorObject {
    ErrorObject::new(UNKNOWN_CHANNEL, format!("channel {channel_id:?} is not registered"))
        .with_data(json!({ "channelId": channel_id }))
}

/// `-32024` with a reason.
pub fn channel_open_failed(reason: &str) -> ErrorObject {
    ErrorObject::new(CHANNEL_OPEN_FAILED, format!("could not open channel: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_data() {
        let e = capability_denied("pushEvents");
        assert_eq!(e.code.0, -32002);
        assert_eq!(e.data, Some(json!({"capability": "pushEvents"})));
        let e = declaration_mismatch("pushEvents", "memory");
        assert_eq!(e.data, Some(json!({"capability": "pushEvents", "featureSet": "memory"})));
        assert_eq!(feature_set_not_enabled("m").code.0, -32001);
        assert_eq!(unknown_feature_set("m").code.0, -32003);
        assert_eq!(checkpoint_not_found("c").data, Some(json!({"checkpoint": "c"})));
        assert_eq!(channel_not_permitted("ui").code.0, -32017);
        assert_eq!(unknown_channel("ui").code.0, -32023);
        assert_eq!(channel_open_failed("busy").code.0, -32024);
        assert_eq!(name(CAPABILITY_DENIED), Some("Capability denied"));
        assert_eq!(name(ErrorCode(-32004)), None);
        assert_eq!(name(ErrorCode(-32006)), None);
        // Data survives the wire.
        let wire = serde_json::to_value(capability_denied("tools")).unwrap();
        let back: ErrorObject = serde_json::from_value(wire).unwrap();
        assert_eq!(back.data, Some(json!({"capability": "tools"})));
    }
}
