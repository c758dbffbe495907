//! An MCPL channel server: a small chat embodiment. It registers its channels once the host's
//! policy allows, opens and closes rooms, takes what the host publishes, relays messages from
//! its users to the host (`channels/incoming`, tagged with `chat:*`), and asks the host's model
//! for replies (`inference/request`, streamed) and about itself (`model/info`).
//!
//! Feature sets:
//! - `chat.relay` (`channels.register`, `channels.publish`, `channels.incoming`): the channels.
//! - `chat.assist` (`inferenceRequest`, `inferenceRequest.streaming`, `modelInfo`): `ask`.
//! - `chat.notify` (`pushEvents`): `notify`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::channels::{
    AcknowledgeResult, Author, ChannelDescriptor, ChannelDirection, CloseChannelResult,
    IncomingMessage, ListChannelsResult, OpenChannelParams, OpenChannelResult, PublishParams,
    PublishResult,
};
use mcpl_core::mcpl::content::McplContent;
use mcpl_core::mcpl::errors;
use mcpl_core::mcpl::manifest::{Capability, FeatureSet, InferenceRequestCapability, Manifest};
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::mcpl::{Mcpl, McplConnection, PushEvent};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};

use crate::mcpl_trigger::{Trigger, ping};

/// The feature set of the channels.
pub const RELAY: &str = "chat.relay";
/// The feature set of inference and model info.
pub const ASSIST: &str = "chat.assist";
/// The feature set of pushed notices.
pub const NOTIFY: &str = "chat.notify";

/// The channel server's manifest.
pub fn channel_manifest() -> Manifest {
    Manifest::new()
        .with_push_events(true)
        .with_model_info(true)
        .with_inference_request(Capability::Detailed(
            InferenceRequestCapability::default().with_streaming(true),
        ))
        .with_channels(Capability::Flag(true))
        .with_feature_set(
            RELAY,
            FeatureSet::new(
                "Chat rooms relayed to and from the host",
                [paths::CHANNELS_REGISTER, paths::CHANNELS_PUBLISH, paths::CHANNELS_INCOMING],
            ),
        )
        .with_feature_set(
            ASSIST,
            FeatureSet::new(
                "Replies drafted by the host's model",
                [paths::INFERENCE_REQUEST, paths::INFERENCE_REQUEST_STREAMING, paths::MODEL_INFO],
            ),
        )
        .with_feature_set(NOTIFY, FeatureSet::new("Room notices", [paths::PUSH_EVENTS]))
}

/// A channel descriptor.
pub fn descriptor(id: &str, channel_type: &str, label: &str) -> ChannelDescriptor {
    ChannelDescriptor::new(id, channel_type, label, ChannelDirection::Bidirectional)
}

/// A message from a human user on `channel_id`, mentioning the agent.
pub fn incoming_message(channel_id: &str, message_id: Option<&str>, text: &str) -> IncomingMessage {
    IncomingMessage::new(
        channel_id,
        message_id.map_or_else(|| format!("msg-{}", unique()), str::to_owned),
        Author::new("user-1", "Ada"),
        "2026-01-01T00:00:00.000Z",
        vec![McplContent::text(text)],
    )
    .with_tags(vec!["chat:mention".into(), "chat:from-human".into(), "chat:group".into()])
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The rooms: the channels this server has, and what the host published to each.
#[derive(Debug)]
struct Rooms {
    channels: BTreeMap<String, ChannelDescriptor>,
    published: Vec<(String, String)>,
}

type Shared = Arc<Mutex<Rooms>>;

fn lock(rooms: &Shared) -> MutexGuard<'_, Rooms> {
    rooms.lock().unwrap_or_else(PoisonError::into_inner)
}

fn text_of(content: &[McplContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            McplContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

fn open(rooms: &Shared, params: OpenChannelParams) -> Result<OpenChannelResult, ErrorObject> {
    if params.channel_type != "room" {
        return Err(errors::channel_open_failed(&format!(
            "cannot open channels of type {:?} (only \"room\")",
            params.channel_type
        )));
    }
    let Some(name) = params.address.get("name").and_then(Value::as_str) else {
        return Err(errors::channel_open_failed("a room address needs a name"));
    };
    let id = params.channel_id.unwrap_or_else(|| format!("room:{name}"));
    let mut channel = descriptor(&id, "room", &format!("#{name}"));
    channel.address = Some(params.address);
    lock(rooms).channels.insert(id, channel.clone());
    Ok(OpenChannelResult::new(channel))
}

fn publish(rooms: &Shared, params: PublishParams) -> Result<PublishResult, ErrorObject> {
    let mut r = lock(rooms);
    if !r.channels.contains_key(&params.channel_id) {
        return Err(errors::unknown_channel(&params.channel_id));
    }
    r.published.push((params.channel_id, text_of(&params.content)));
    let message_id = format!("out-{}", r.published.len());
    Ok(PublishResult::new(true).with_message_id(message_id))
}

async fn register(conn: McplConnection, rooms: Shared) {
    if !conn.is_granted(paths::CHANNELS_REGISTER) {
        tracing::info!("channels.register not granted: channels not registered");
        return;
    }
    let channels: Vec<ChannelDescriptor> = lock(&rooms).channels.values().cloned().collect();
    match conn.register_channels(channels).await {
        Ok(results) => {
            let accepted = results.results.iter().filter(|r| r.accepted).count();
            tracing::info!(accepted, "channels registered");
        }
        Err(e) => tracing::warn!(error = %e, "channels not registered"),
    }
}

/// The channel server; with `conformance`, also the `mcpl_conformance_trigger` tool.
pub fn channel_server(conformance: bool) -> Server {
    let rooms: Shared = Arc::new(Mutex::new(Rooms {
        channels: BTreeMap::from([
            ("ui".to_owned(), descriptor("ui", "ui", "Host UI")),
            ("room:lobby".to_owned(), descriptor("room:lobby", "room", "#lobby")),
        ]),
        published: Vec::new(),
    }));
    let (r_ready, r_open, r_close, r_publish, r_list, r_tool, r_said, r_trigger) = (
        rooms.clone(),
        rooms.clone(),
        rooms.clone(),
        rooms.clone(),
        rooms.clone(),
        rooms.clone(),
        rooms.clone(),
        rooms,
    );
    let mcpl = Mcpl::new(channel_manifest())
        .on_ready(move |conn| register(conn, r_ready.clone()))
        .on_channel_open(move |_conn, params| {
            let result = open(&r_open, params);
            async move { result }
        })
        .on_channel_close(move |_conn, params| {
            let removed = lock(&r_close).channels.remove(&params.channel_id);
            async move {
                match removed {
                    Some(_) => Ok(CloseChannelResult::new(true)),
                    None => Err(errors::unknown_channel(&params.channel_id)),
                }
            }
        })
        .on_channel_publish(move |_conn, params| {
            let result = publish(&r_publish, params);
            async move { result }
        })
        .on_channel_list(move |_conn, _params| {
            let channels = lock(&r_list).channels.values().cloned().collect::<Vec<_>>();
            async move { Ok(ListChannelsResult::default().with_channels(channels)) }
        })
        .on_channel_typing(|_conn, params| async move {
            tracing::info!(channel = %params.channel_id, "the agent is typing");
        })
        .on_channel_acknowledge(|_conn, params| async move {
            Ok(AcknowledgeResult::new(true).with_representation(params.value.unwrap_or_else(|| "seen".into())))
        })
        .on_channel_outgoing_chunk(|_conn, params| async move {
            tracing::debug!(channel = %params.channel_id, index = params.index, "draft chunk (advisory)");
        })
        .on_channel_outgoing_complete(|_conn, params| async move {
            tracing::debug!(channel = %params.channel_id, "draft complete (advisory; delivery is channels/publish)");
        });
    let say_schema = ToolSchema::object()
        .with_property("channelId", json!({"type": "string"}))
        .with_property("text", json!({"type": "string"}))
        .with_required("channelId")
        .with_required("text");
    let ask_schema = ToolSchema::object()
        .with_property("prompt", json!({"type": "string"}))
        .with_required("prompt");
    let mut builder = Server::builder("mcpl-channel-server", env!("CARGO_PKG_VERSION"))
        .instructions(
            "Chat rooms: messages arrive as channels/incoming; reply with channels/publish.",
        )
        .mcpl(mcpl)
        .tool(Tool::new("transcript", ToolSchema::object()), move |_ctx, _args| {
            let published = lock(&r_tool).published.clone();
            async move {
                let lines: Vec<String> =
                    published.iter().map(|(c, t)| format!("{c}: {t}")).collect();
                Ok(ToolOutput::text(lines.join("\n")))
            }
        })
        .tool(Tool::new("simulate_user", say_schema), move |ctx, args| {
            let known = args
                .get("channelId")
                .and_then(Value::as_str)
                .is_some_and(|c| lock(&r_said).channels.contains_key(c));
            async move {
                let (Some(channel), Some(text)) = (
                    args.get("channelId").and_then(Value::as_str),
                    args.get("text").and_then(Value::as_str),
                ) else {
                    return Err(ErrorObject::invalid_params("channelId and text are required"));
                };
                if !known {
                    return Ok(ToolOutput::error(format!("no channel {channel:?}")));
                }
                let Some(conn) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
                match conn.channels_incoming(vec![incoming_message(channel, None, text)]).await {
                    Ok(r) => Ok(ToolOutput::text(format!(
                        "accepted: {}",
                        r.results.iter().all(|i| i.accepted)
                    ))),
                    Err(e) => Ok(ToolOutput::error(e.to_string())),
                }
            }
        })
        .tool(Tool::new("ask", ask_schema), |ctx, args| async move {
            let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("ping").to_owned();
            let Some(conn) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let mut params = ping(ASSIST.into());
            params.messages[0].content = mcpl_core::mcpl::content::TextOrBlocks::Text(prompt);
            let streamed = Arc::new(Mutex::new(String::new()));
            let sink = streamed.clone();
            let result = conn
                .request_inference_streaming(params, move |chunk| {
                    sink.lock().unwrap_or_else(PoisonError::into_inner).push_str(&chunk.delta);
                })
                .await;
            match result {
                Ok(r) => Ok(ToolOutput::text(r.content)),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .tool(Tool::new("notify", ToolSchema::object()), |ctx, _args| async move {
            let Some(conn) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let event = PushEvent::new(NOTIFY, vec![McplContent::text("Someone joined #lobby")])
                .tags(["chat:ambient", "chat:group"]);
            match conn.push_event(event).await {
                Ok(r) => Ok(ToolOutput::text(format!("accepted: {}", r.accepted))),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        });
    if conformance {
        let channels = move || lock(&r_trigger).channels.values().cloned().collect();
        builder = Trigger { push: true, inference: true, channels: Some(Arc::new(channels)) }
            .install(builder);
    }
    builder.build()
}
