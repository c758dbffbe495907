//! Server-initiated inference (spec §11): `inference/request`, its streamed `inference/chunk`s,
//! and `model/info`.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::capability::paths;
use super::content::TextOrBlocks;
use super::hooks::Usage;
use super::open_enum::open_enum;
use crate::jsonrpc::RequestId;

/// `inference/request` params (server to host, gated on `inferenceRequest`, and on
/// `inferenceRequest.streaming` too when `stream` is true).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InferenceRequestParams {
    /// The feature set (required).
    pub feature_set: String,
    /// The conversation to run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Stream the answer as `inference/chunk` notifications (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The messages.
    pub messages: Vec<InferenceMessage>,
    /// Preferences (advisory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferences: Option<InferencePreferences>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InferenceRequestParams {
    /// An `InferenceRequestParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(feature_set: impl Into<String>, messages: Vec<InferenceMessage>) -> Self {
        Self {
            feature_set: feature_set.into(),
            conversation_id: None,
            stream: None,
            messages,
            preferences: None,
            extra: Default::default(),
        }
    }
}

impl InferenceRequestParams {
    /// The capability paths this request needs: `inferenceRequest`, plus
    /// `inferenceRequest.streaming` if `stream` is true.
    pub fn required_capabilities(&self) -> &'static [&'static str] {
        if self.stream == Some(true) {
            &[paths::INFERENCE_REQUEST, paths::INFERENCE_REQUEST_STREAMING]
        } else {
            &[paths::INFERENCE_REQUEST]
        }
    }
}

/// One message of an inference request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InferenceMessage {
    /// `user`, `assistant`, ...
    pub role: String,
    /// The content.
    pub content: TextOrBlocks,
}

impl InferenceMessage {
    /// An `InferenceMessage` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(role: impl Into<String>, content: TextOrBlocks) -> Self {
        Self { role: role.into(), content }
    }
}

/// Inference preferences; extra keys (`model`, `modelTier`, ...) are advisory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InferencePreferences {
    /// Maximum output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

open_enum! {
    /// Why generation stopped.
    FinishReason {
        /// The model ended its turn.
        EndTurn = "end_turn",
        /// The token limit was reached.
        MaxTokens = "max_tokens",
        /// A stop sequence was produced.
        StopSequence = "stop_sequence",
    }
}

/// `inference/request` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InferenceResult {
    /// The generated text.
    pub content: String,
    /// The model that actually ran.
    pub model: String,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Token usage.
    pub usage: Usage,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InferenceResult {
    /// An `InferenceResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        content: impl Into<String>,
        model: impl Into<String>,
        finish_reason: FinishReason,
        usage: Usage,
    ) -> Self {
        Self {
            content: content.into(),
            model: model.into(),
            finish_reason,
            usage,
            extra: Default::default(),
        }
    }
}

/// `inference/chunk` params (host to server, gated on `inferenceRequest.streaming`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InferenceChunkParams {
    /// The JSON-RPC id of the `inference/request` (a number or a string).
    pub request_id: RequestId,
    /// Counts from 0.
    pub index: u64,
    /// The text delta.
    pub delta: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InferenceChunkParams {
    /// An `InferenceChunkParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(request_id: RequestId, index: u64, delta: impl Into<String>) -> Self {
        Self { request_id, index, delta: delta.into(), extra: Default::default() }
    }
}

/// `model/info` params (empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ModelInfoParams {
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_round_trip_and_capabilities() {
        let v = json!({"featureSet": "summarize", "conversationId": "c", "stream": true,
            "messages": [{"role": "user", "content": "Summarize"}],
            "preferences": {"maxTokens": 100, "temperature": 0.5, "modelTier": "fast"}});
        let p: InferenceRequestParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            p.required_capabilities(),
            [paths::INFERENCE_REQUEST, paths::INFERENCE_REQUEST_STREAMING]
        );
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let p: InferenceRequestParams =
            serde_json::from_value(json!({"featureSet": "f", "messages": []})).unwrap();
        assert_eq!(p.required_capabilities(), [paths::INFERENCE_REQUEST]);
    }

    #[test]
    fn result_and_chunks() {
        let v = json!({"content": "done", "model": "m-1", "finishReason": "end_turn",
            "usage": {"inputTokens": 5, "outputTokens": 7}});
        let r: InferenceResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.finish_reason, FinishReason::EndTurn);
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        let r: InferenceResult = serde_json::from_value(json!({"content": "", "model": "m",
            "finishReason": "refusal", "usage": {"inputTokens": 0, "outputTokens": 0}}))
        .unwrap();
        assert_eq!(r.finish_reason, FinishReason::Other("refusal".into()));
        for id in [json!(7), json!("req-7")] {
            let v = json!({"requestId": id, "index": 0, "delta": "He"});
            let c: InferenceChunkParams = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&c).unwrap(), v);
        }
    }
}
