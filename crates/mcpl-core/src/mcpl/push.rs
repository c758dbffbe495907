//! `push/event` (spec §9): the server pushes an event for the model to see.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::McplContent;

/// `push/event` params (server to host, gated on `pushEvents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PushEventParams {
    /// The feature set the event belongs to (required).
    pub feature_set: String,
    /// Idempotency key: a retry reuses it, the host deduplicates by it.
    pub event_id: String,
    /// When it happened (ISO 8601).
    pub timestamp: String,
    /// Provenance, server-defined and untrusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Map<String, Value>>,
    /// What the model sees.
    pub payload: PushPayload,
    /// Event tags (untrusted claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PushEventParams {
    /// A `PushEventParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        feature_set: impl Into<String>,
        event_id: impl Into<String>,
        timestamp: impl Into<String>,
        payload: PushPayload,
    ) -> Self {
        Self {
            feature_set: feature_set.into(),
            event_id: event_id.into(),
            timestamp: timestamp.into(),
            origin: None,
            payload,
            tags: None,
            extra: Default::default(),
        }
    }
}

/// The payload of a push event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PushPayload {
    /// The content.
    pub content: Vec<McplContent>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PushPayload {
    /// A `PushPayload` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(content: Vec<McplContent>) -> Self {
        Self { content, extra: Default::default() }
    }
}

/// `push/event` result. `accepted: false` is the host's treatment of an admitted event
/// (deduplicated, throttled); authorization failures are errors instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PushEventResult {
    /// Whether the host accepted the event.
    pub accepted: bool,
    /// The inference the event triggered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_id: Option<String>,
    /// Why not accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PushEventResult {
    /// A `PushEventResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(accepted: bool) -> Self {
        Self { accepted, inference_id: None, reason: None, extra: Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip() {
        let v = json!({"featureSet": "mail", "eventId": "e1", "timestamp": "2026-08-01T10:00:00Z",
            "origin": {"source": "imap"}, "payload": {"content": [{"type": "text", "text": "hi"}]},
            "tags": ["chat:dm"], "x": 1});
        let p: PushEventParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        assert!(
            serde_json::from_value::<PushEventParams>(json!({"eventId": "e", "timestamp": "t",
            "payload": {"content": []}}))
            .is_err(),
            "featureSet is required"
        );
        let r = json!({"accepted": true, "inferenceId": "inf-1"});
        let res: PushEventResult = serde_json::from_value(r.clone()).unwrap();
        assert_eq!(serde_json::to_value(&res).unwrap(), r);
    }
}
