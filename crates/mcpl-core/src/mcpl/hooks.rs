//! Context hooks and inference metadata (spec §10): `context/beforeInference`,
//! `inference/lifecycle`, and [`ModelInfo`].

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::capability::paths;
use super::content::TextOrBlocks;

/// A model: the result of `model/info` and a member of hook params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ModelInfo {
    /// The model id.
    pub id: String,
    /// The vendor.
    pub vendor: String,
    /// The context window, in tokens.
    pub context_window: u64,
    /// What the model can do (`vision`, `tools`, ...).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ModelInfo {
    /// A `ModelInfo` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(id: impl Into<String>, vendor: impl Into<String>, context_window: u64) -> Self {
        Self {
            id: id.into(),
            vendor: vendor.into(),
            context_window,
            capabilities: Default::default(),
            extra: Default::default(),
        }
    }
}

/// Token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// The tokens an inference read and wrote.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage { input_tokens, output_tokens }
    }
}

/// `context/beforeInference` params (host to server).
///
/// `userMessage` is always written (as `null` unless `...observe` is granted, and for continued
/// generation): a server with inject leaves but no `observe` is still called, write-without-read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct BeforeInferenceParams {
    /// Unique per inference.
    pub inference_id: String,
    /// Stable across turns.
    pub conversation_id: String,
    /// 0-based turn index.
    pub turn_index: u64,
    /// The user message, or `null`.
    #[serde(default)]
    pub user_message: Option<String>,
    /// The model about to run.
    pub model: ModelInfo,
    /// Channel context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<ChannelContext>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BeforeInferenceParams {
    /// A `BeforeInferenceParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        inference_id: impl Into<String>,
        conversation_id: impl Into<String>,
        turn_index: u64,
        model: ModelInfo,
    ) -> Self {
        Self {
            inference_id: inference_id.into(),
            conversation_id: conversation_id.into(),
            turn_index,
            user_message: None,
            model,
            channels: None,
            extra: Default::default(),
        }
    }
}

/// The channel context of an inference.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelContext {
    /// The message that triggered the inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming: Option<IncomingRef>,
    /// Where output goes by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_outgoing: Option<ChannelRef>,
    /// Channels the output may go to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<String>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A reference to an incoming message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct IncomingRef {
    /// The channel.
    pub channel_id: String,
    /// The message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

impl IncomingRef {
    /// An `IncomingRef` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channel_id: impl Into<String>) -> Self {
        Self { channel_id: channel_id.into(), message_id: None, thread_id: None }
    }
}

/// A reference to a channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelRef {
    /// The channel.
    pub channel_id: String,
}

impl ChannelRef {
    /// A `ChannelRef` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channel_id: impl Into<String>) -> Self {
        Self { channel_id: channel_id.into() }
    }
}

/// `context/beforeInference` result. The host authorizes **each** injection by its position
/// against the grant current when the response arrives, never by `featureSet`/`namespace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct BeforeInferenceResult {
    /// The feature set the contribution belongs to.
    pub feature_set: String,
    /// The injections.
    #[serde(default)]
    pub context_injections: Vec<ContextInjection>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BeforeInferenceResult {
    /// A `BeforeInferenceResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(feature_set: impl Into<String>) -> Self {
        Self {
            feature_set: feature_set.into(),
            context_injections: Default::default(),
            extra: Default::default(),
        }
    }
}

/// Where an injection goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Position {
    /// The system prompt.
    System,
    /// Before the user message.
    BeforeUser,
    /// After the user message.
    AfterUser,
}

impl Position {
    /// The capability path an injection at this position needs.
    pub fn capability(self) -> &'static str {
        match self {
            Position::System => paths::INJECT_SYSTEM,
            Position::BeforeUser => paths::INJECT_BEFORE_USER,
            Position::AfterUser => paths::INJECT_AFTER_USER,
        }
    }
}

/// One context injection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ContextInjection {
    /// Server-defined; not an authorization input.
    pub namespace: String,
    /// Where it goes.
    pub position: Position,
    /// The content (a string is one text block).
    pub content: TextOrBlocks,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ContextInjection {
    /// A `ContextInjection` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(namespace: impl Into<String>, position: Position, content: TextOrBlocks) -> Self {
        Self {
            namespace: namespace.into(),
            position,
            content,
            metadata: None,
            extra: Default::default(),
        }
    }
}

/// The phase an `inference/lifecycle` notification reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LifecyclePhase {
    /// The inference started.
    Started,
    /// It completed (terminal).
    Completed,
    /// It was aborted (terminal).
    Aborted,
    /// It failed (terminal).
    Failed,
}

impl LifecyclePhase {
    /// Whether the phase ends the inference.
    pub fn is_terminal(self) -> bool {
        !matches!(self, LifecyclePhase::Started)
    }
}

/// `inference/lifecycle` params (host to server, gated on `inferenceLifecycle`). Metadata only,
/// never content. Only `inferenceId` and `phase` are reliably present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct LifecycleParams {
    /// The inference.
    pub inference_id: String,
    /// The phase.
    pub phase: LifecyclePhase,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_index: Option<u64>,
    /// The model (only if `modelInfo` is granted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelInfo>,
    /// Token usage (only on `completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LifecycleParams {
    /// A `LifecycleParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(inference_id: impl Into<String>, phase: LifecyclePhase) -> Self {
        Self {
            inference_id: inference_id.into(),
            phase,
            conversation_id: None,
            turn_index: None,
            model: None,
            usage: None,
            extra: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model() -> Value {
        json!({"id": "claude", "vendor": "anthropic", "contextWindow": 200000, "capabilities": ["vision"]})
    }

    #[test]
    fn before_inference_round_trip() {
        let v = json!({"inferenceId": "i1", "conversationId": "c1", "turnIndex": 0,
            "userMessage": null, "model": model(),
            "channels": {"incoming": {"channelId": "discord:#g", "messageId": "m1"},
                "defaultOutgoing": {"channelId": "ui"}, "candidates": ["ui"]}});
        let p: BeforeInferenceParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(p.user_message, None);
        // `userMessage: null` is written explicitly.
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let r = json!({"featureSet": "memory", "contextInjections": [
            {"namespace": "mem", "position": "system", "content": "s"},
            {"namespace": "mem", "position": "afterUser", "content": [{"type": "text", "text": "t"}],
             "metadata": {"k": 1}}]});
        let res: BeforeInferenceResult = serde_json::from_value(r.clone()).unwrap();
        assert_eq!(res.context_injections[0].position.capability(), paths::INJECT_SYSTEM);
        assert_eq!(res.context_injections[1].position.capability(), paths::INJECT_AFTER_USER);
        assert_eq!(Position::BeforeUser.capability(), paths::INJECT_BEFORE_USER);
        assert_eq!(serde_json::to_value(&res).unwrap(), r);
        assert!(
            serde_json::from_value::<ContextInjection>(
                json!({"namespace": "n", "position": "middle", "content": "x"})
            )
            .is_err()
        );
    }

    #[test]
    fn lifecycle_is_lenient() {
        let minimal: LifecycleParams =
            serde_json::from_value(json!({"inferenceId": "i", "phase": "completed"})).unwrap();
        assert!(minimal.phase.is_terminal());
        let v = json!({"inferenceId": "i", "conversationId": "c", "turnIndex": 3, "phase": "started",
            "model": model(), "usage": {"inputTokens": 1, "outputTokens": 2}});
        let p: LifecycleParams = serde_json::from_value(v.clone()).unwrap();
        assert!(!p.phase.is_terminal());
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let m: ModelInfo = serde_json::from_value(model()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), model());
    }
}
