//! The `mcpl_conformance_trigger` tool: lets the MCPL conformance suite make an example server
//! send server-to-host messages, through the SDK's normal gated send path.
//!
//! Input `{"action": ..., ...}`; the result's `structuredContent` is
//! `{sent, refusal?, result?, error?}` (and `chunks` for a streamed inference). A refused send
//! is a normal result (`sent: false`), never a tool error.

use std::sync::{Arc, Mutex};

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::channels::{ChannelDescriptor, ChannelsChangedParams};
use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
use mcpl_core::types::{CallToolResult, Tool, ToolSchema};
use mcpl_server::mcpl::{McplConnection, PushEvent, SendError};
use mcpl_server::{Context, ServerBuilder, ToolOutput};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The tool's name, fixed by the convention.
pub const TRIGGER_TOOL: &str = "mcpl_conformance_trigger";

/// The feature set `change_manifest` toggles.
pub const EXTRA_FEATURE_SET: &str = "conformance.extra";

/// What an example server lets the trigger do.
#[derive(Clone, Default)]
pub struct Trigger {
    /// Serve `push`.
    pub push: bool,
    /// Serve `inference` and `model_info`.
    pub inference: bool,
    /// Serve `register_channels`, `channels_changed` and `incoming` with these descriptors.
    pub channels: Option<Arc<dyn Fn() -> Vec<ChannelDescriptor> + Send + Sync>>,
}

impl std::fmt::Debug for Trigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trigger")
            .field("push", &self.push)
            .field("inference", &self.inference)
            .field("channels", &self.channels.is_some())
            .finish()
    }
}

/// The `structuredContent` of a trigger result.
#[derive(Debug, Default, Serialize)]
struct Outcome {
    sent: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunks: Option<Vec<String>>,
}

impl Outcome {
    fn of<T: Serialize>(sent: Result<T, SendError>) -> Outcome {
        match sent {
            Ok(result) => Outcome {
                sent: true,
                result: Some(serde_json::to_value(result).unwrap_or(Value::Null)),
                ..Default::default()
            },
            Err(SendError::Host(error)) => {
                Outcome { sent: true, error: Some(error), ..Default::default() }
            }
            Err(SendError::Transport(e)) => {
                Outcome { sent: true, error: Some(ErrorObject::internal(e)), ..Default::default() }
            }
            Err(refused) => Outcome {
                sent: false,
                refusal: Some(refused.kind().as_str().to_owned()),
                ..Default::default()
            },
        }
    }

    fn into_result(self) -> CallToolResult {
        let value = serde_json::to_value(&self).unwrap_or(Value::Null);
        ToolOutput::structured_value(value)
    }
}

impl Trigger {
    /// Adds the trigger tool to `builder`.
    pub fn install(self, builder: ServerBuilder) -> ServerBuilder {
        let schema = ToolSchema::object()
            .with_property("action", json!({"type": "string"}))
            .with_required("action");
        let mut tool = Tool::new(TRIGGER_TOOL, schema);
        tool.description =
            Some("Conformance testing: sends one MCPL message through the gated path.".into());
        let this = Arc::new(self);
        builder.tool(tool, move |ctx: Context, args: Map<String, Value>| {
            let this = this.clone();
            async move { Ok(this.run(ctx, args).await) }
        })
    }

    async fn run(&self, ctx: Context, args: Map<String, Value>) -> CallToolResult {
        let action = args.get("action").and_then(Value::as_str).unwrap_or_default();
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        if action == "change_manifest" {
            return change_manifest(&ctx);
        }
        let Some(conn) = ctx.mcpl() else {
            let outcome = Outcome { refusal: Some("not_mcpl".into()), ..Default::default() };
            return outcome.into_result();
        };
        match action {
            "push" if self.push => {
                let Some(feature_set) = text("featureSet") else {
                    return ToolOutput::error("push needs featureSet");
                };
                let mut event = PushEvent::new(feature_set, vec![McplContent::text("ping")])
                    .tags(["chat:mention"]);
                if let Some(id) = text("eventId") {
                    event = event.event_id(id);
                }
                Outcome::of(conn.push_event(event).await).into_result()
            }
            "inference" if self.inference => {
                let Some(feature_set) = text("featureSet") else {
                    return ToolOutput::error("inference needs featureSet");
                };
                let stream = args.get("stream").and_then(Value::as_bool).unwrap_or(false);
                inference(&conn, feature_set, stream).await
            }
            "model_info" if self.inference => Outcome::of(conn.model_info().await).into_result(),
            "register_channels" | "channels_changed" | "incoming" => match &self.channels {
                Some(channels) => channel_action(&conn, action, channels(), &args).await,
                None => ToolOutput::error(format!("action {action:?} does not apply here")),
            },
            other => ToolOutput::error(format!("action {other:?} does not apply here")),
        }
    }
}

/// A user message "ping" in `feature_set`, streamed or not.
pub fn ping(feature_set: String) -> InferenceRequestParams {
    InferenceRequestParams::new(
        feature_set,
        vec![InferenceMessage::new("user", TextOrBlocks::Text("ping".into()))],
    )
}

async fn inference(conn: &McplConnection, feature_set: String, stream: bool) -> CallToolResult {
    if !stream {
        return Outcome::of(conn.request_inference(ping(feature_set)).await).into_result();
    }
    let chunks = Arc::new(Mutex::new(Vec::new()));
    let sink = chunks.clone();
    let result = conn
        .request_inference_streaming(ping(feature_set), move |chunk| {
            if let Ok(mut c) = sink.lock() {
                c.push((chunk.index, chunk.delta));
            }
        })
        .await;
    let mut outcome = Outcome::of(result);
    if outcome.sent {
        let mut got = chunks.lock().map(|c| c.clone()).unwrap_or_default();
        got.sort_by_key(|(index, _)| *index);
        outcome.chunks = Some(got.into_iter().map(|(_, delta)| delta).collect());
    }
    outcome.into_result()
}

async fn channel_action(
    conn: &McplConnection,
    action: &str,
    mut descriptors: Vec<ChannelDescriptor>,
    args: &Map<String, Value>,
) -> CallToolResult {
    match action {
        "register_channels" => Outcome::of(conn.register_channels(descriptors).await).into_result(),
        "channels_changed" => {
            let removed = descriptors.first().map(|d| d.id.clone()).unwrap_or_default();
            let mut added = descriptors
                .pop()
                .unwrap_or_else(|| crate::mcpl_channels::descriptor("ui", "ui", "UI"));
            added.id = format!("{}-added", added.id);
            added.label = format!("{} (added)", added.label);
            let changes = ChannelsChangedParams::default()
                .with_added(vec![added])
                .with_removed(vec![removed]);
            Outcome::of(conn.channels_changed(changes).await).into_result()
        }
        _ => {
            let Some(channel_id) = args.get("channelId").and_then(Value::as_str) else {
                return ToolOutput::error("incoming needs channelId");
            };
            let message_id = args.get("messageId").and_then(Value::as_str);
            let message = crate::mcpl_channels::incoming_message(channel_id, message_id, "ping");
            Outcome::of(conn.channels_incoming(vec![message]).await).into_result()
        }
    }
}

/// Toggles [`EXTRA_FEATURE_SET`] in the manifest and announces it.
fn change_manifest(ctx: &Context) -> CallToolResult {
    let Some(server) = ctx.server() else {
        return ToolOutput::error("no server");
    };
    let toggled = server.update_mcpl_manifest(toggle_extra);
    match toggled {
        Ok(revision) => Outcome {
            sent: true,
            result: Some(json!({ "revision": revision })),
            ..Default::default()
        }
        .into_result(),
        Err(e) => {
            Outcome { refusal: Some(e.kind().to_owned()), ..Default::default() }.into_result()
        }
    }
}

fn toggle_extra(manifest: Manifest) -> Manifest {
    let mut map = manifest.into_map();
    let sets = map.entry("featureSets").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(sets) = sets
        && sets.remove(EXTRA_FEATURE_SET).is_none()
    {
        let extra = FeatureSet::new("Toggled by the conformance trigger", ["tools"]);
        sets.insert(
            EXTRA_FEATURE_SET.to_owned(),
            serde_json::to_value(extra).unwrap_or(Value::Null),
        );
    }
    Manifest::from_map(map)
}
