//! MCPL servers in memory.
//!
//! Each returns the served session (keep it alive) and the client's end of the transport;
//! some also return the [`Server`](mcpl_server::Server) (to announce changes) or a receiver of
//! what the server saw.

/// An MCPL server in memory: feature sets `alerts` (push events), `summaries` (inference
/// requests) and `editor` (tools); tools that push an event, ask for the host's model, and
/// ask the host to run an inference.
pub async fn alerts_server() -> mcpl_core::Result<(
    mcpl_server::Server,
    mcpl_server::Session,
    mcpl_core::transport::memory::MemoryTransport,
)> {
    use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    use mcpl_core::types::{Tool, ToolSchema};
    use mcpl_server::ToolOutput;
    use mcpl_server::mcpl::{Mcpl, PushEvent};
    let manifest = Manifest::new()
        .with_push_events(true)
        .with_model_info(true)
        .with_inference_request(Capability::Flag(true))
        .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
        .with_feature_set("summaries", FeatureSet::new("Summaries", ["inferenceRequest"]))
        .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    let server = mcpl_server::Server::builder("alerts", "1.0.0")
        .mcpl(Mcpl::new(manifest))
        .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")])
                .event_id("disk-1")
                .tags(["acme:disk", "urgent"]);
            match mcpl.push_event(event).await {
                Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
                Err(refused) => Ok(ToolOutput::error(refused.to_string())),
            }
        })
        .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            match mcpl.model_info().await {
                Ok(model) => Ok(ToolOutput::text(model.id)),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let params = InferenceRequestParams::new(
                "summaries",
                vec![InferenceMessage::new(
                    "user",
                    TextOrBlocks::Text("Summarize: disk almost full".into()),
                )],
            );
            match mcpl.request_inference(params).await {
                Ok(result) => Ok(ToolOutput::text(result.content)),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .build();
    let (ours, theirs) = mcpl_core::transport::memory::pair();
    let session = server.serve(theirs).await?;
    Ok((server, session, ours))
}

/// An MCPL server in memory whose tools ask things of the host: `stream` (a streamed
/// inference), `relay` (registers an inbound channel and forwards a chat message), `save`
/// (`state/update` then `state/get` for the `editor` feature set), `alert` (a push event).
pub async fn requests_server()
-> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    use mcpl_core::mcpl::channels::{Author, ChannelDescriptor, ChannelDirection, IncomingMessage};
    use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
    use mcpl_core::mcpl::inference::{InferenceMessage, InferenceRequestParams};
    use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    use mcpl_core::types::{Tool, ToolSchema};
    use mcpl_server::ToolOutput;
    use mcpl_server::mcpl::{Mcpl, PushEvent};
    let manifest = Manifest::new()
        .with_push_events(true)
        .with_inference_request(Capability::Flag(true))
        .with_channels(Capability::Flag(true))
        .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
        .with_feature_set(
            "summaries",
            FeatureSet::new("Summaries", ["inferenceRequest", "inferenceRequest.streaming"]),
        )
        .with_feature_set("editor", FeatureSet::new("Editing", ["tools"]));
    let server = mcpl_server::Server::builder("helper", "1.0.0")
        .mcpl(Mcpl::new(manifest))
        .tool(Tool::new("alert", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]).event_id("disk-1");
            match mcpl.push_event(event).await {
                Ok(result) => Ok(ToolOutput::text(format!("accepted: {}", result.accepted))),
                Err(refused) => Ok(ToolOutput::error(refused.to_string())),
            }
        })
        .tool(Tool::new("stream", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let params = InferenceRequestParams::new("summaries", vec![InferenceMessage::new("user", TextOrBlocks::Text("Say hello".into()))]);
            let chunks = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let sink = chunks.clone();
            match mcpl.request_inference_streaming(params, move |c| sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(c.delta)).await {
                Ok(result) => Ok(ToolOutput::text(format!("{} => {}", chunks.lock().unwrap_or_else(std::sync::PoisonError::into_inner).join("|"), result.content))),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .tool(Tool::new("relay", ToolSchema::object()), |ctx, _args| async move {
            let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
            let general = ChannelDescriptor::new("chat:general", "chat", "#general", ChannelDirection::Inbound);
            if let Err(e) = mcpl.register_channels(vec![general]).await { return Ok(ToolOutput::error(e.to_string())) }
            let message = IncomingMessage::new("chat:general", "m-7", Author::new("u-1", "Ada"), "2026-08-01T12:00:00.000Z", vec![McplContent::text("@bot what's the weather?")]);
            match mcpl.channels_incoming(vec![message]).await {
                Ok(answer) => Ok(ToolOutput::text(serde_json::to_string(&answer.results).unwrap_or_default())),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .tool(Tool::new("save", ToolSchema::object()), |ctx, _args| async move {
            let update = serde_json::json!({"featureSet": "editor", "checkpoint": "cp-1", "parent": null, "data": {"draft": "v1"}});
            let options = mcpl_core::engine::RequestOptions::new;
            if let Err(e) = ctx.peer().request("state/update", Some(update), options()).await {
                return Ok(ToolOutput::error(e.to_string()));
            }
            let get = serde_json::json!({"featureSet": "editor"});
            match ctx.peer().request("state/get", Some(get), options()).await {
                Ok(state) => Ok(ToolOutput::text(state.to_string())),
                Err(e) => Ok(ToolOutput::error(e.to_string())),
            }
        })
        .build();
    let (ours, theirs) = mcpl_core::transport::memory::pair();
    Ok((server.serve(theirs).await?, ours))
}

/// An MCPL chat server in memory: `channels/open` opens `room-<room>`; what the host sends
/// to a channel is reported on the returned receiver, one line each.
pub async fn chat_server() -> mcpl_core::Result<(
    mcpl_server::Session,
    mcpl_core::transport::memory::MemoryTransport,
    tokio::sync::mpsc::UnboundedReceiver<String>,
)> {
    use mcpl_core::mcpl::channels::*;
    use mcpl_core::mcpl::manifest::{Capability, Manifest};
    use mcpl_server::mcpl::Mcpl;
    let (log, lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let (l1, l2, l3, l4, l5) = (log.clone(), log.clone(), log.clone(), log.clone(), log.clone());
    let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true)))
        .on_channel_open(|_conn, params| async move {
            let room =
                params.address.get("room").and_then(|r| r.as_str()).unwrap_or("lobby").to_owned();
            let channel = ChannelDescriptor::new(
                format!("room-{room}"),
                params.channel_type,
                format!("#{room}"),
                ChannelDirection::Bidirectional,
            )
            .with_address(params.address.clone());
            Ok(OpenChannelResult::new(channel))
        })
        .on_channel_close(|_conn, _params| async { Ok(CloseChannelResult::new(true)) })
        .on_channel_publish(move |_conn, params| {
            l1.send(format!(
                "publish {} {}",
                params.channel_id,
                serde_json::to_string(&params.content).unwrap_or_default()
            ))
            .ok();
            async { Ok(PublishResult::new(true).with_message_id("m-1")) }
        })
        .on_channel_list(|_conn, _params| async {
            let lobby = ChannelDescriptor::new(
                "room-lobby",
                "chat",
                "#lobby",
                ChannelDirection::Bidirectional,
            );
            Ok(ListChannelsResult::default().with_channels(vec![lobby]))
        })
        .on_channel_typing(move |_conn, params| {
            l2.send(format!("typing {}", params.channel_id)).ok();
            async {}
        })
        .on_channel_acknowledge(move |_conn, params| {
            l3.send(format!("ack {} {} {}", params.channel_id, params.message_id, params.intent))
                .ok();
            async { Ok(AcknowledgeResult::new(true).with_representation("👍")) }
        })
        .on_channel_outgoing_chunk(move |_conn, chunk| {
            l4.send(format!("chunk {} {}", chunk.index, chunk.delta)).ok();
            async {}
        })
        .on_channel_outgoing_complete(move |_conn, done| {
            l5.send(format!("complete {}", done.channel_id)).ok();
            async {}
        });
    let server = mcpl_server::Server::builder("chat", "1.0.0").mcpl(mcpl).build();
    let (ours, theirs) = mcpl_core::transport::memory::pair();
    Ok((server.serve(theirs).await?, ours, lines))
}

/// An MCPL server in memory with a `notes` feature set: context injections (after the user
/// message and in the system prompt), inference lifecycle reports, rollback to `cp-1`.
pub async fn notes_server() -> mcpl_core::Result<(
    mcpl_server::Session,
    mcpl_core::transport::memory::MemoryTransport,
    tokio::sync::mpsc::UnboundedReceiver<String>,
)> {
    use mcpl_core::mcpl::content::TextOrBlocks;
    use mcpl_core::mcpl::hooks::{BeforeInferenceResult, ContextInjection, Position};
    use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    use mcpl_core::mcpl::state::RollbackResult;
    use mcpl_server::mcpl::Mcpl;
    fn inject(position: Position, text: &str) -> ContextInjection {
        ContextInjection::new("notes", position, TextOrBlocks::Text(text.into()))
    }
    let mut notes = FeatureSet::new(
        "Notes",
        ["contextHooks.beforeInference.inject.afterUser", "inferenceLifecycle", "tools"],
    );
    notes.rollback = Some(true);
    let manifest = Manifest::new()
        .with_context_hooks(Capability::Flag(true))
        .with_inference_lifecycle(true)
        .with_feature_set("notes", notes);
    let (log, lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mcpl = Mcpl::new(manifest)
        .on_before_inference(|_conn, params| async move {
            Ok(BeforeInferenceResult::new("notes").with_context_injections(vec![
                inject(Position::AfterUser, &format!("turn {}", params.turn_index)),
                inject(Position::System, "You keep notes."),
            ]))
        })
        .on_inference_lifecycle(move |_conn, params| {
            log.send(format!("{} {:?}", params.inference_id, params.phase)).ok();
            async {}
        })
        .on_rollback(|_conn, params| async move {
            if params.checkpoint != "cp-1" {
                return Err(mcpl_core::mcpl::errors::checkpoint_not_found(&params.checkpoint));
            }
            Ok(RollbackResult::new(params.checkpoint, true))
        });
    let server = mcpl_server::Server::builder("notes", "1.0.0")
        .mcpl(mcpl)
        .tool(
            mcpl_core::types::Tool::new("add_note", mcpl_core::types::ToolSchema::object()),
            |_ctx, _args| async { Ok(mcpl_server::ToolOutput::text("added")) },
        )
        .build();
    let (ours, theirs) = mcpl_core::transport::memory::pair();
    Ok((server.serve(theirs).await?, ours, lines))
}
