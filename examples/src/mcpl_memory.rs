//! An MCPL memory server: tools in a stateful feature set whose state the host keeps, context
//! hooks that bring relevant memories into the model's context, and reminders pushed later.
//!
//! Feature sets:
//! - `memory.store` (`tools`, `rollback: true`): `remember`, `recall`, `forget`. Each call that
//!   changes memory returns a checkpoint: a JSON Patch against the parent when the host sent
//!   the state it keeps, else a full snapshot. `state/rollback` returns to any checkpoint this
//!   process made (others: `-32005`).
//! - `memory.context` (`observe`, `inject.afterUser`): `context/beforeInference` injects the
//!   memories that share a word with the user's message after it (the latest ones when the host
//!   withholds the message).
//! - `memory.persona` (`inject.system`): when the host grants system injection and
//!   `memory.context` is not enabled, the pinned memories go into the system prompt instead.
//! - `memory.reminders` (`pushEvents`): `remind` pushes a reminder after a delay.
//! - `memory.activity` (`inferenceLifecycle`): counts the completed inferences per conversation
//!   (`activity` lists them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::content::{McplContent, TextOrBlocks};
use mcpl_core::mcpl::errors;
use mcpl_core::mcpl::hooks::{
    BeforeInferenceParams, BeforeInferenceResult, ContextInjection, LifecyclePhase, Position,
};
use mcpl_core::mcpl::manifest::{
    BeforeInferenceCapability, Capability, ContextHooksCapability, FeatureSet, InjectCapability,
    Manifest,
};
use mcpl_core::mcpl::state::{PatchOperation, RollbackParams, RollbackResult, StateCheckpoint};
use mcpl_core::types::{CallToolResult, Tool, ToolSchema};
use mcpl_server::mcpl::{Mcpl, McplConnection, McplTool, PushEvent, WithState};
use mcpl_server::{Context, Server, ToolOutput};
use serde_json::{Map, Value, json};

use crate::mcpl_trigger::Trigger;

/// The stateful feature set of the memory tools.
pub const STORE: &str = "memory.store";
/// The feature set of the context hook (after the user message).
pub const CONTEXT: &str = "memory.context";
/// The feature set of the system-prompt injection.
pub const PERSONA: &str = "memory.persona";
/// The feature set of pushed reminders.
pub const REMINDERS: &str = "memory.reminders";
/// The feature set of inference activity.
pub const ACTIVITY: &str = "memory.activity";

/// The memory server's manifest.
pub fn memory_manifest() -> Manifest {
    let mut store =
        FeatureSet::new("Remember, recall and forget; the host keeps the state", ["tools"]);
    store.rollback = Some(true);
    // The host keeps the state and sends it back with each call (host-managed), so changes
    // travel as patches against it.
    store.extra.insert("hostState".into(), Value::Bool(true));
    let hooks = ContextHooksCapability::default().with_before_inference(Capability::Detailed(
        BeforeInferenceCapability::default().with_observe(true).with_inject(Capability::Detailed(
            InjectCapability::default()
                .with_system(true)
                .with_before_user(false)
                .with_after_user(true),
        )),
    ));
    Manifest::new()
        .with_push_events(true)
        .with_context_hooks(Capability::Detailed(hooks))
        .with_feature_set(STORE, store)
        .with_feature_set(
            CONTEXT,
            FeatureSet::new(
                "Relevant memories after the user's message",
                [paths::OBSERVE, paths::INJECT_AFTER_USER],
            ),
        )
        .with_feature_set(
            PERSONA,
            FeatureSet::new("Pinned memories in the system prompt", [paths::INJECT_SYSTEM]),
        )
        .with_feature_set(
            REMINDERS,
            FeatureSet::new("Reminders pushed later", [paths::PUSH_EVENTS]),
        )
        .with_inference_lifecycle(true)
        .with_feature_set(
            ACTIVITY,
            FeatureSet::new("Completed inferences per conversation", [paths::INFERENCE_LIFECYCLE]),
        )
}

/// A checkpoint: its parent and the memories at that point.
#[derive(Debug, Clone)]
struct Checkpoint {
    memories: Vec<String>,
}

/// The memories of this process: every checkpoint made (for rollback) and the current one.
#[derive(Debug, Default)]
struct Memory {
    /// Completed inferences per conversation (`inference/lifecycle`).
    activity: std::collections::BTreeMap<String, u64>,
    checkpoints: HashMap<String, Checkpoint>,
    current: Option<String>,
    next: u64,
}

impl Memory {
    fn current_memories(&self) -> Vec<String> {
        self.current
            .as_ref()
            .and_then(|c| self.checkpoints.get(c))
            .map(|c| c.memories.clone())
            .unwrap_or_default()
    }

    fn commit(&mut self, memories: Vec<String>) -> String {
        self.next += 1;
        let id = format!("mem-{}", self.next);
        self.checkpoints.insert(id.clone(), Checkpoint { memories });
        self.current = Some(id.clone());
        id
    }
}

type Shared = Arc<Mutex<Memory>>;

fn lock(memory: &Shared) -> MutexGuard<'_, Memory> {
    memory.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The memories a call works on: the state the host sent (host-managed, authoritative), else
/// the checkpoint it names, else this process's current one. Also the parent checkpoint: the
/// one the host names, else the current one.
fn base(ctx: &Context, memory: &Shared) -> (Vec<String>, Option<String>, bool) {
    let fields = ctx.mcpl_state();
    let from_host = fields
        .state
        .as_ref()
        .and_then(|s| s.get("memories"))
        .and_then(|m| serde_json::from_value::<Vec<String>>(m.clone()).ok());
    let m = lock(memory);
    match (from_host, &fields.checkpoint) {
        // A host that keeps the state may send it alone: it continues from the latest
        // checkpoint.
        (Some(memories), parent) => (memories, parent.clone().or_else(|| m.current.clone()), true),
        (None, Some(cp)) if m.checkpoints.contains_key(cp) => {
            (m.checkpoints[cp].memories.clone(), Some(cp.clone()), false)
        }
        _ => (m.current_memories(), m.current.clone(), false),
    }
}

fn text_arg(args: &Map<String, Value>, key: &str) -> Result<String, ErrorObject> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            ErrorObject::invalid_params(format_args!("{key} (a non-empty string) is required"))
        })
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect()
}

/// The memories sharing a word with `text`.
fn relevant(memories: &[String], text: &str) -> Vec<String> {
    let wanted = words(text);
    memories.iter().filter(|m| words(m).iter().any(|w| wanted.contains(w))).cloned().collect()
}

fn remember(
    ctx: &Context,
    memory: &Shared,
    args: &Map<String, Value>,
) -> Result<CallToolResult, ErrorObject> {
    let text = text_arg(args, "text")?;
    let (mut memories, parent, host_managed) = base(ctx, memory);
    memories.push(text.clone());
    let id = lock(memory).commit(memories.clone());
    let state = match parent {
        // The host holds the parent's state: send only the change.
        Some(parent) if host_managed => StateCheckpoint::patch(
            id,
            parent,
            vec![PatchOperation::Add { path: "/memories/-".into(), value: json!(text) }],
        ),
        parent => StateCheckpoint::snapshot(id, parent, json!({ "memories": memories })),
    };
    Ok(ToolOutput::text(format!("Remembered: {text}")).with_state(state))
}

fn recall(ctx: &Context, memory: &Shared, args: &Map<String, Value>) -> CallToolResult {
    let (memories, _, _) = base(ctx, memory);
    let found = match args.get("query").and_then(Value::as_str) {
        Some(query) => relevant(&memories, query),
        None => memories,
    };
    if found.is_empty() {
        return ToolOutput::text("Nothing remembered.");
    }
    ToolOutput::text(found.join("\n"))
}

fn forget(
    ctx: &Context,
    memory: &Shared,
    args: &Map<String, Value>,
) -> Result<CallToolResult, ErrorObject> {
    let text = text_arg(args, "text")?;
    let (memories, parent, _) = base(ctx, memory);
    let kept: Vec<String> = memories.iter().filter(|m| !m.contains(&text)).cloned().collect();
    let forgotten = memories.len() - kept.len();
    let id = lock(memory).commit(kept.clone());
    let state = StateCheckpoint::snapshot(id, parent, json!({ "memories": kept }));
    Ok(ToolOutput::text(format!("Forgot {forgotten} memories.")).with_state(state))
}

fn injection(position: Position, lines: &[String]) -> ContextInjection {
    ContextInjection::new(
        "memory",
        position,
        TextOrBlocks::Text(format!("Relevant memories:\n- {}", lines.join("\n- "))),
    )
}

fn before_inference(
    conn: &McplConnection,
    memory: &Shared,
    params: &BeforeInferenceParams,
) -> BeforeInferenceResult {
    let memories = lock(memory).current_memories();
    let mut result = BeforeInferenceResult::new(CONTEXT).with_context_injections(Vec::new());
    if conn.is_enabled(CONTEXT) {
        let picked = match &params.user_message {
            Some(message) => relevant(&memories, message),
            None => memories.iter().rev().take(3).rev().cloned().collect(),
        };
        if !picked.is_empty() {
            result.context_injections.push(injection(Position::AfterUser, &picked));
        }
    } else if conn.is_enabled(PERSONA) && !memories.is_empty() {
        result.feature_set = PERSONA.into();
        result.context_injections.push(injection(Position::System, &memories));
    }
    result
}

fn rollback(memory: &Shared, params: RollbackParams) -> Result<RollbackResult, ErrorObject> {
    let mut m = lock(memory);
    if !m.checkpoints.contains_key(&params.checkpoint) {
        return Err(errors::checkpoint_not_found(&params.checkpoint));
    }
    m.current = Some(params.checkpoint.clone());
    Ok(RollbackResult::new(params.checkpoint, true))
}

/// Schedules a reminder pushed through `conn` after `delay` (gated like any push).
fn remind(conn: McplConnection, text: String, delay: Duration) {
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let event = PushEvent::new(REMINDERS, vec![McplContent::text(format!("Reminder: {text}"))]);
        if let Err(e) = conn.push_event(event).await {
            tracing::info!(error = %e, "reminder not delivered");
        }
    });
}

fn string_schema(name: &str, description: &str, required: bool) -> ToolSchema {
    let schema = ToolSchema::object()
        .with_property(name, json!({"type": "string", "description": description}));
    if required { schema.with_required(name) } else { schema }
}

/// The memory server; with `conformance`, also the `mcpl_conformance_trigger` tool (`push`,
/// `change_manifest`).
pub fn memory_server(conformance: bool) -> Server {
    let memory: Shared = Arc::default();
    let (hook, back, seen, listed) =
        (memory.clone(), memory.clone(), memory.clone(), memory.clone());
    let mcpl = Mcpl::new(memory_manifest())
        .on_inference_lifecycle(move |conn, params| {
            if params.phase == LifecyclePhase::Completed && conn.is_enabled(ACTIVITY) {
                let conversation = params.conversation_id.unwrap_or_else(|| "(unknown)".into());
                *lock(&seen).activity.entry(conversation).or_default() += 1;
            }
            async {}
        })
        .on_before_inference(move |conn, params| {
            let result = before_inference(&conn, &hook, &params);
            async move { Ok(result) }
        })
        .on_rollback(move |_conn, params| {
            let result = rollback(&back, params);
            async move { result }
        });
    let (m1, m2, m3) = (memory.clone(), memory.clone(), memory);
    let tool = |name: &str, description: &str, schema: ToolSchema| {
        let mut tool = Tool::new(name, schema).in_feature_set(STORE);
        tool.description = Some(description.into());
        tool
    };
    let remind_schema = string_schema("text", "What to remind of", true)
        .with_property("delayMs", json!({"type": "integer", "minimum": 0, "maximum": 86_400_000}));
    let mut builder = Server::builder("mcpl-memory-server", env!("CARGO_PKG_VERSION"))
        .instructions("Remembers things across turns; relevant memories come into context.")
        .mcpl(mcpl)
        .tool(
            tool("remember", "Remembers a fact.", string_schema("text", "The fact", true)),
            move |ctx, args| {
                let result = remember(&ctx, &m1, &args);
                async move { result }
            },
        )
        .tool(
            tool(
                "recall",
                "Recalls memories, those matching a query if given.",
                string_schema("query", "Words to match", false),
            ),
            move |ctx, args| {
                let result = recall(&ctx, &m2, &args);
                async move { Ok(result) }
            },
        )
        .tool(
            tool(
                "forget",
                "Forgets the memories containing a text.",
                string_schema("text", "The text", true),
            ),
            move |ctx, args| {
                let result = forget(&ctx, &m3, &args);
                async move { result }
            },
        )
        .tool(
            // Not tagged: `_meta.featureSet` marks the tools of stateful sets.
            Tool::new("remind", remind_schema),
            |ctx, args| async move {
                let text = text_arg(&args, "text")?;
                let delay =
                    Duration::from_millis(args.get("delayMs").and_then(Value::as_u64).unwrap_or(0));
                let Some(conn) = ctx.mcpl() else {
                    return Ok(ToolOutput::error("reminders need an MCPL host"));
                };
                if !conn.is_enabled(REMINDERS) {
                    return Ok(ToolOutput::error("the host has not enabled memory.reminders"));
                }
                remind(conn, text, delay);
                Ok(ToolOutput::text("Reminder scheduled."))
            },
        );
    builder = builder.tool(Tool::new("activity", ToolSchema::object()), move |_ctx, _args| {
        let lines: Vec<String> =
            lock(&listed).activity.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        async move { Ok(ToolOutput::text(lines.join("\n"))) }
    });
    if conformance {
        builder = Trigger { push: true, ..Default::default() }.install(builder);
    }
    builder.build()
}
