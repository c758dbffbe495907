//! Channels (spec §14): named, host-controlled destinations (`ui`, `discord:#general`).
//!
//! Register/changed results are itemized (one per descriptor), incoming results per message;
//! delivery happens only through `channels/publish`. `channels/acknowledge` and
//! `channels/typing` follow the public TypeScript library's shapes (the spec names them only).

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::McplContent;

/// Which way a channel carries messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelDirection {
    /// Host to the outside.
    Outbound,
    /// Outside to host.
    Inbound,
    /// Both.
    Bidirectional,
}

/// A channel a server registers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelDescriptor {
    /// Unique per connection.
    pub id: String,
    /// The kind (`discord`, `ui`, ...).
    #[serde(rename = "type")]
    pub channel_type: String,
    /// A human-readable label.
    pub label: String,
    /// Which way it carries messages.
    pub direction: ChannelDirection,
    /// Where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Map<String, Value>>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Members this SDK does not know (`initiallyOpen`, `capabilities`, ...), preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChannelDescriptor {
    /// A `ChannelDescriptor` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        id: impl Into<String>,
        channel_type: impl Into<String>,
        label: impl Into<String>,
        direction: ChannelDirection,
    ) -> Self {
        Self {
            id: id.into(),
            channel_type: channel_type.into(),
            label: label.into(),
            direction,
            address: None,
            metadata: None,
            extra: Default::default(),
        }
    }
}

/// `channels/register` params (server to host).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RegisterChannelsParams {
    /// The channels.
    pub channels: Vec<ChannelDescriptor>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RegisterChannelsParams {
    /// A `RegisterChannelsParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channels: Vec<ChannelDescriptor>) -> Self {
        Self { channels, extra: Default::default() }
    }
}

/// The per-descriptor outcome of a registration or change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelItemResult {
    /// The channel id.
    pub id: String,
    /// Whether the host accepted it.
    pub accepted: bool,
    /// Why not (e.g. `capability_denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChannelItemResult {
    /// A `ChannelItemResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(id: impl Into<String>, accepted: bool) -> Self {
        Self { id: id.into(), accepted, reason: None, extra: Default::default() }
    }
}

/// Result of `channels/register` and of the request form of `channels/changed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelResults {
    /// One entry per descriptor.
    pub results: Vec<ChannelItemResult>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `channels/changed` params (server to host; SDK servers always send the request form).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelsChangedParams {
    /// New channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<Vec<ChannelDescriptor>>,
    /// Removed channel ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<Vec<String>>,
    /// Changed channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<Vec<ChannelDescriptor>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `channels/list` params (empty).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListChannelsParams {
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `channels/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListChannelsResult {
    /// The channels.
    pub channels: Vec<ChannelDescriptor>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// History wanted when opening a channel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct HistoryRequest {
    /// At most this many messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Only messages before this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_message_id: Option<String>,
    /// Only messages since the host last saw the channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_last_seen: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `channels/open` params (host to server, gated on `channels.lifecycle`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct OpenChannelParams {
    /// The kind of channel.
    #[serde(rename = "type")]
    pub channel_type: String,
    /// Where.
    pub address: Map<String, Value>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A channel id the host proposes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    /// History to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryRequest>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OpenChannelParams {
    /// An `OpenChannelParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channel_type: impl Into<String>, address: Map<String, Value>) -> Self {
        Self {
            channel_type: channel_type.into(),
            address,
            metadata: None,
            channel_id: None,
            history: None,
            extra: Default::default(),
        }
    }
}

/// `channels/open` result (failure is error `-32024`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct OpenChannelResult {
    /// The opened channel.
    pub channel: ChannelDescriptor,
    /// History, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<IncomingMessage>>,
    /// Whether the history was cut short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_truncated: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OpenChannelResult {
    /// An `OpenChannelResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channel: ChannelDescriptor) -> Self {
        Self { channel, history: None, history_truncated: None, extra: Default::default() }
    }
}

/// `channels/close` params (unknown channel is error `-32023`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CloseChannelParams {
    /// The channel.
    pub channel_id: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CloseChannelParams {
    /// A `CloseChannelParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channel_id: impl Into<String>) -> Self {
        Self { channel_id: channel_id.into(), extra: Default::default() }
    }
}

/// `channels/close` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CloseChannelResult {
    /// Whether it was closed.
    pub closed: bool,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CloseChannelResult {
    /// A `CloseChannelResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(closed: bool) -> Self {
        Self { closed, extra: Default::default() }
    }
}

/// `channels/publish` params (host to server): the only way anything is delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PublishParams {
    /// The conversation the content comes from.
    pub conversation_id: String,
    /// The target channel.
    pub channel_id: String,
    /// Whether chunks were streamed before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The content.
    pub content: Vec<McplContent>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PublishParams {
    /// A `PublishParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        conversation_id: impl Into<String>,
        channel_id: impl Into<String>,
        content: Vec<McplContent>,
    ) -> Self {
        Self {
            conversation_id: conversation_id.into(),
            channel_id: channel_id.into(),
            stream: None,
            content,
            extra: Default::default(),
        }
    }
}

/// `channels/publish` result (request form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PublishResult {
    /// Whether it was delivered.
    pub delivered: bool,
    /// The id of the delivered message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PublishResult {
    /// A `PublishResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(delivered: bool) -> Self {
        Self { delivered, message_id: None, extra: Default::default() }
    }
}

/// The author of an incoming message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Author {
    /// The author's id.
    pub id: String,
    /// The author's name.
    pub name: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Author {
    /// An `Author` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), extra: Default::default() }
    }
}

/// A message arriving on a channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct IncomingMessage {
    /// The channel.
    pub channel_id: String,
    /// The message id.
    pub message_id: String,
    /// The thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Who wrote it.
    pub author: Author,
    /// When (ISO 8601).
    pub timestamp: String,
    /// The content.
    pub content: Vec<McplContent>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Event tags (untrusted claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IncomingMessage {
    /// An `IncomingMessage` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        channel_id: impl Into<String>,
        message_id: impl Into<String>,
        author: Author,
        timestamp: impl Into<String>,
        content: Vec<McplContent>,
    ) -> Self {
        Self {
            channel_id: channel_id.into(),
            message_id: message_id.into(),
            thread_id: None,
            author,
            timestamp: timestamp.into(),
            content,
            metadata: None,
            tags: None,
            extra: Default::default(),
        }
    }
}

/// `channels/incoming` params (server to host, gated on `channels.incoming`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct IncomingParams {
    /// The messages (batching allowed).
    pub messages: Vec<IncomingMessage>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IncomingParams {
    /// An `IncomingParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(messages: Vec<IncomingMessage>) -> Self {
        Self { messages, extra: Default::default() }
    }
}

/// The per-message outcome of `channels/incoming`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct IncomingItemResult {
    /// The message.
    pub message_id: String,
    /// Whether the host accepted it.
    pub accepted: bool,
    /// The conversation it went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Why not accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl IncomingItemResult {
    /// An `IncomingItemResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(message_id: impl Into<String>, accepted: bool) -> Self {
        Self {
            message_id: message_id.into(),
            accepted,
            conversation_id: None,
            reason: None,
            extra: Default::default(),
        }
    }
}

/// `channels/incoming` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct IncomingResult {
    /// One entry per message.
    pub results: Vec<IncomingItemResult>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `channels/outgoing/chunk` params (host to server, advisory, gated on `channels.streaming`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct OutgoingChunkParams {
    /// The inference producing the text.
    pub inference_id: String,
    /// The conversation.
    pub conversation_id: String,
    /// The target channel.
    pub channel_id: String,
    /// Monotonic per inference across all channels.
    pub index: u64,
    /// The text delta.
    pub delta: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OutgoingChunkParams {
    /// An `OutgoingChunkParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        inference_id: impl Into<String>,
        conversation_id: impl Into<String>,
        channel_id: impl Into<String>,
        index: u64,
        delta: impl Into<String>,
    ) -> Self {
        Self {
            inference_id: inference_id.into(),
            conversation_id: conversation_id.into(),
            channel_id: channel_id.into(),
            index,
            delta: delta.into(),
            extra: Default::default(),
        }
    }
}

/// `channels/outgoing/complete` params (host to server, advisory): the full moderated text,
/// once per (inference, channel) that got chunks. Not a delivery: servers must not post it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct OutgoingCompleteParams {
    /// The inference.
    pub inference_id: String,
    /// The conversation.
    pub conversation_id: String,
    /// The channel.
    pub channel_id: String,
    /// The full content.
    pub content: Vec<McplContent>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OutgoingCompleteParams {
    /// An `OutgoingCompleteParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        inference_id: impl Into<String>,
        conversation_id: impl Into<String>,
        channel_id: impl Into<String>,
        content: Vec<McplContent>,
    ) -> Self {
        Self {
            inference_id: inference_id.into(),
            conversation_id: conversation_id.into(),
            channel_id: channel_id.into(),
            content,
            extra: Default::default(),
        }
    }
}

/// `channels/acknowledge` params (host to server; shape from the TypeScript library).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct AcknowledgeParams {
    /// The channel.
    pub channel_id: String,
    /// The message acknowledged.
    pub message_id: String,
    /// What the acknowledgement means (e.g. `seen-not-opening`).
    pub intent: String,
    /// A representation (e.g. an emoji).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AcknowledgeParams {
    /// An `AcknowledgeParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(
        channel_id: impl Into<String>,
        message_id: impl Into<String>,
        intent: impl Into<String>,
    ) -> Self {
        Self {
            channel_id: channel_id.into(),
            message_id: message_id.into(),
            intent: intent.into(),
            value: None,
            extra: Default::default(),
        }
    }
}

/// `channels/acknowledge` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct AcknowledgeResult {
    /// Whether it was shown.
    pub acknowledged: bool,
    /// How it was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub representation: Option<String>,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AcknowledgeResult {
    /// An `AcknowledgeResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(acknowledged: bool) -> Self {
        Self { acknowledged, representation: None, reason: None, extra: Default::default() }
    }
}

/// `channels/typing` params (host to server notification).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TypingParams {
    /// The channel.
    pub channel_id: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TypingParams {
    /// A `TypingParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(channel_id: impl Into<String>) -> Self {
        Self { channel_id: channel_id.into(), extra: Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::json;

    fn round_trip<T: Serialize + DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    fn descriptor(id: &str) -> Value {
        json!({"id": id, "type": "discord", "label": "#general", "direction": "bidirectional",
            "address": {"guild": "g"}, "metadata": {"m": 1}, "initiallyOpen": true})
    }

    fn message() -> Value {
        json!({"channelId": "d1", "messageId": "m1", "threadId": "t", "author": {"id": "u", "name": "Ann"},
            "timestamp": "2026-08-01T00:00:00Z", "content": [{"type": "text", "text": "hi"}],
            "metadata": {}, "tags": ["chat:mention"]})
    }

    #[test]
    fn every_channel_message_round_trips() {
        let d: ChannelDescriptor = round_trip(descriptor("d1"));
        assert_eq!(d.direction, ChannelDirection::Bidirectional);
        assert_eq!(d.extra["initiallyOpen"], json!(true));
        round_trip::<RegisterChannelsParams>(
            json!({"channels": [descriptor("a"), descriptor("b")]}),
        );
        round_trip::<ChannelResults>(json!({"results": [{"id": "a", "accepted": true},
            {"id": "b", "accepted": false, "reason": "capability_denied"}]}));
        round_trip::<ChannelsChangedParams>(json!({"added": [descriptor("c")], "removed": ["a"],
            "updated": [descriptor("b")]}));
        round_trip::<ListChannelsParams>(json!({}));
        round_trip::<ListChannelsResult>(json!({"channels": [descriptor("a")]}));
        round_trip::<OpenChannelParams>(json!({"type": "discord", "address": {"channel": "x"},
            "channelId": "d2", "history": {"limit": 20, "sinceLastSeen": true}}));
        round_trip::<OpenChannelResult>(
            json!({"channel": descriptor("d2"), "history": [message()],
            "historyTruncated": false}),
        );
        round_trip::<CloseChannelParams>(json!({"channelId": "d2"}));
        round_trip::<CloseChannelResult>(json!({"closed": true}));
        round_trip::<PublishParams>(
            json!({"conversationId": "c", "channelId": "d1", "stream": false,
            "content": [{"type": "text", "text": "hello"}]}),
        );
        round_trip::<PublishResult>(json!({"delivered": true, "messageId": "m9"}));
        round_trip::<IncomingParams>(json!({"messages": [message()]}));
        round_trip::<IncomingResult>(json!({"results": [{"messageId": "m1", "accepted": true,
            "conversationId": "c"}, {"messageId": "m2", "accepted": false, "reason": "unregistered"}]}));
        round_trip::<OutgoingChunkParams>(json!({"inferenceId": "i", "conversationId": "c",
            "channelId": "d1", "index": 0, "delta": "He"}));
        round_trip::<OutgoingCompleteParams>(json!({"inferenceId": "i", "conversationId": "c",
            "channelId": "d1", "content": [{"type": "text", "text": "Hello"}]}));
        round_trip::<AcknowledgeParams>(json!({"channelId": "d1", "messageId": "m1",
            "intent": "seen-not-opening", "value": "👀"}));
        round_trip::<AcknowledgeResult>(json!({"acknowledged": true, "representation": "👀"}));
        round_trip::<TypingParams>(json!({"channelId": "d1"}));
    }

    #[test]
    fn invalid_channel_messages() {
        let mut d = descriptor("x");
        d["direction"] = json!("sideways");
        assert!(serde_json::from_value::<ChannelDescriptor>(d).is_err());
        assert!(serde_json::from_value::<IncomingMessage>(json!({"channelId": "d"})).is_err());
        assert!(serde_json::from_value::<ChannelsChangedParams>(json!({"removed": "a"})).is_err());
    }
}
