//! A scripted MCPL server over stdio for exercising agent hosts: several stateful feature sets
//! (host-managed and server-managed), untagged tools, a tool listed twice, results carrying
//! `data`, `patch` (including `move` and `copy`) or opaque checkpoints, and `state/rollback`.
//!
//! It is written on the bare protocol engine (not the server builder) so it can do what a
//! well-behaved server would not, like listing a tool twice.
//!
//! ```text
//! cargo run -p mcpl-examples --bin mcpl-state-fixture
//! ```
//!
//! Feature sets: `notes.host` (host-managed, rollback), `notes.mirror` (host-managed),
//! `ledger.server` (server-managed, rollback), `ledger.audit` (server-managed, rollback).
//! Tools:
//! - `note_add {text}` (notes.host): a patch appending to `/notes`.
//! - `note_pin {index}` (notes.host): a patch `copy`ing a note to `/pinned/-`.
//! - `note_rename {from, to}` (notes.host): a patch `move`ing `/notes/<from>` to `/named/<to>`.
//! - `note_break` (notes.host): a patch whose `test` fails (the host must reject it atomically).
//! - `mirror_set {value}` (untagged, explicit `featureSet: notes.mirror` on the result).
//! - `ledger_post {amount}` (ledger.server): an opaque checkpoint; the server keeps the ledger.
//! - `ledger_balance` (ledger.server): the balance at the current checkpoint (no state change).
//! - `peek` (untagged): a result with `data` and no feature set (ambiguous on this server).
//! - `dup` listed twice: first tagged `ledger.audit`, then `notes.host`.
//! - `whoami`: the server's instance tag (`--tag`), to tell restarted processes apart.
//! - `exit`: answers, then ends the process (to test reconnects).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcpl_core::Engine;
use mcpl_core::engine::RequestContext;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use serde_json::{Value, json};

#[derive(Default)]
struct Ledger {
    /// checkpoint -> (parent, balance)
    nodes: BTreeMap<String, (Option<String>, i64)>,
    current: Option<String>,
    next: u64,
}

fn manifest() -> Value {
    json!({
        "version": "0.5",
        "pushEvents": true,
        "featureSets": {
            "notes.host": {"description": "Notes kept by the host", "uses": ["tools"], "rollback": true, "hostState": true},
            "notes.mirror": {"description": "A mirror kept by the host", "uses": ["tools"], "hostState": true},
            "ledger.server": {"description": "A ledger kept by the server", "uses": ["tools"], "rollback": true},
            "ledger.audit": {"description": "Audit marks kept by the server", "uses": ["tools"], "rollback": true},
            "events": {"description": "Pushes", "uses": ["pushEvents"]}
        }
    })
}

fn tool(name: &str, set: Option<&str>, props: Value, required: &[&str]) -> Value {
    let mut t = json!({
        "name": name,
        "inputSchema": {"type": "object", "properties": props, "required": required},
    });
    if let Some(s) = set {
        t["_meta"] = json!({"featureSet": s});
    }
    t
}

fn tools() -> Value {
    json!([
        tool("note_add", Some("notes.host"), json!({"text": {"type": "string"}}), &["text"]),
        tool("note_pin", Some("notes.host"), json!({"index": {"type": "integer"}}), &["index"]),
        tool(
            "note_rename",
            Some("notes.host"),
            json!({"from": {"type": "integer"}, "to": {"type": "string"}}),
            &["from", "to"]
        ),
        tool("note_break", Some("notes.host"), json!({}), &[]),
        tool("mirror_set", None, json!({"value": {}}), &["value"]),
        tool(
            "ledger_post",
            Some("ledger.server"),
            json!({"amount": {"type": "integer"}}),
            &["amount"]
        ),
        tool("ledger_balance", Some("ledger.server"), json!({}), &[]),
        tool("peek", None, json!({}), &[]),
        tool("dup", Some("ledger.audit"), json!({}), &[]),
        tool("dup", Some("notes.host"), json!({}), &[]),
        tool("whoami", None, json!({}), &[]),
        tool("exit", None, json!({}), &[]),
    ])
}

fn text(s: impl Into<String>) -> Value {
    json!([{"type": "text", "text": s.into()}])
}

struct Fixture {
    tag: String,
    ledger: Mutex<Ledger>,
    audit: Mutex<u64>,
    checkpoints: Mutex<u64>,
}

impl Fixture {
    fn checkpoint(&self, prefix: &str) -> String {
        let mut n = self.checkpoints.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        format!("{prefix}-{}-{n}", self.tag)
    }

    fn call(&self, params: &Value) -> Result<Value, ErrorObject> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        let state = params.get("state").cloned();
        let parent_cp = params.get("checkpoint").and_then(Value::as_str).map(str::to_owned);
        let notes_len = state
            .as_ref()
            .and_then(|s| s.get("notes"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        // A host sends its current checkpoint (and, for a host-managed set, the state there).
        let host_parent = parent_cp.clone().map_or(Value::Null, Value::String);
        let result = match name {
            "note_add" => {
                let text_arg = args.get("text").and_then(Value::as_str).unwrap_or_default();
                let cp = self.checkpoint("n");
                let mut patch = vec![];
                if state.is_none() {
                    patch.push(json!({"op": "add", "path": "/notes", "value": []}));
                    patch.push(json!({"op": "add", "path": "/pinned", "value": []}));
                    patch.push(json!({"op": "add", "path": "/named", "value": {}}));
                }
                patch.push(json!({"op": "add", "path": "/notes/-", "value": text_arg}));
                json!({"content": text(format!("added note {notes_len}")),
                       "state": {"checkpoint": cp, "parent": host_parent, "patch": patch}})
            }
            "note_pin" => {
                let i = args.get("index").and_then(Value::as_u64).unwrap_or(0);
                let cp = self.checkpoint("n");
                json!({"content": text(format!("pinned {i}")),
                       "state": {"checkpoint": cp, "parent": host_parent, "patch": [
                           {"op": "copy", "from": format!("/notes/{i}"), "path": "/pinned/-"}]}})
            }
            "note_rename" => {
                let from = args.get("from").and_then(Value::as_u64).unwrap_or(0);
                let to = args
                    .get("to")
                    .and_then(Value::as_str)
                    .unwrap_or("x")
                    .replace('~', "~0")
                    .replace('/', "~1");
                let cp = self.checkpoint("n");
                json!({"content": text("moved"),
                       "state": {"checkpoint": cp, "parent": host_parent, "patch": [
                           {"op": "move", "from": format!("/notes/{from}"), "path": format!("/named/{to}")}]}})
            }
            "note_break" => {
                let cp = self.checkpoint("n");
                json!({"content": text("this patch fails its test"),
                       "state": {"checkpoint": cp, "parent": host_parent, "patch": [
                           {"op": "add", "path": "/broken", "value": true},
                           {"op": "test", "path": "/notes", "value": "not the notes"}]}})
            }
            "mirror_set" => {
                let cp = self.checkpoint("m");
                json!({"content": text("mirrored"),
                       "state": {"featureSet": "notes.mirror", "checkpoint": cp, "parent": null,
                                 "data": {"value": args.get("value").cloned().unwrap_or(Value::Null)}}})
            }
            "ledger_post" => {
                let amount = args.get("amount").and_then(Value::as_i64).unwrap_or(0);
                let mut l = self.ledger.lock().unwrap_or_else(|p| p.into_inner());
                // The host tells us which checkpoint it is at; trust it if we know it.
                let base =
                    parent_cp.filter(|c| l.nodes.contains_key(c)).or_else(|| l.current.clone());
                let balance =
                    base.as_ref().and_then(|c| l.nodes.get(c)).map_or(0, |n| n.1) + amount;
                l.next += 1;
                let cp = format!("l-{}-{}", self.tag, l.next);
                l.nodes.insert(cp.clone(), (base.clone(), balance));
                l.current = Some(cp.clone());
                json!({"content": text(format!("balance {balance}")),
                       "state": {"checkpoint": cp, "parent": base}})
            }
            "ledger_balance" => {
                let l = self.ledger.lock().unwrap_or_else(|p| p.into_inner());
                let at = parent_cp.or_else(|| l.current.clone());
                let balance = at.as_ref().and_then(|c| l.nodes.get(c)).map_or(0, |n| n.1);
                json!({"content": text(format!("balance {balance}")), "structuredContent": {"balance": balance, "at": at}})
            }
            "peek" => {
                let cp = self.checkpoint("p");
                json!({"content": text("peeked"), "state": {"checkpoint": cp, "parent": null, "data": {"peeked": true}}})
            }
            "dup" => {
                let mut n = self.audit.lock().unwrap_or_else(|p| p.into_inner());
                *n += 1;
                json!({"content": text("audited"), "state": {"checkpoint": format!("a-{}-{n}", self.tag), "parent": null}})
            }
            "whoami" => {
                json!({"content": text(self.tag.clone()), "structuredContent": {"tag": self.tag}})
            }
            "exit" => {
                // Answer, then end the process as a crash would.
                tokio::spawn(async {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    std::process::exit(0);
                });
                json!({"content": text("exiting")})
            }
            other => {
                return Ok(
                    json!({"content": text(format!("unknown tool {other}")), "isError": true}),
                );
            }
        };
        Ok(result)
    }

    fn rollback(&self, params: &Value) -> Result<Value, ErrorObject> {
        let fs = params.get("featureSet").and_then(Value::as_str).unwrap_or_default();
        let cp = params.get("checkpoint").and_then(Value::as_str).unwrap_or_default();
        match fs {
            "ledger.server" => {
                let mut l = self.ledger.lock().unwrap_or_else(|p| p.into_inner());
                if !l.nodes.contains_key(cp) {
                    return Err(ErrorObject::new(ErrorCode(-32005), "Checkpoint not found")
                        .with_data(json!({"checkpoint": cp})));
                }
                l.current = Some(cp.to_owned());
                Ok(json!({"checkpoint": cp, "success": true}))
            }
            // Host-managed notes: nothing to undo on this side.
            "notes.host" => Ok(json!({"checkpoint": cp, "success": true})),
            "ledger.audit" => Ok(
                json!({"checkpoint": cp, "success": false, "reason": "audit marks cannot be undone"}),
            ),
            _ => Err(ErrorObject::invalid_params(format!(
                "feature set {fs} does not support rollback"
            ))),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut tag = std::process::id().to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--tag"
            && let Some(t) = args.next()
        {
            tag = t;
        }
    }
    let fixture = Arc::new(Fixture {
        tag,
        ledger: Mutex::new(Ledger::default()),
        audit: Mutex::new(0),
        checkpoints: Mutex::new(0),
    });
    let engine = Engine::new();
    engine.on_request("initialize", |_ctx: RequestContext, _params| async move {
        Ok(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "experimental": {"mcpl": manifest()}},
            "serverInfo": {"name": "mcpl-state-fixture", "version": env!("CARGO_PKG_VERSION")},
        }))
    });
    engine.on_notification("notifications/initialized", |_ctx, _params| async {});
    engine.on_notification("featureSets/update", |_ctx, _params| async {});
    engine.on_request("ping", |_ctx: RequestContext, _params| async { Ok(json!({})) });
    engine.on_request("featureSets/update", |_ctx: RequestContext, _params| async move {
        Ok(json!({"accepted": true}))
    });
    engine
        .on_request("mcpl/manifest", |_ctx: RequestContext, _params| async move { Ok(manifest()) });
    engine.on_request("tools/list", |_ctx: RequestContext, _params| async move {
        Ok(json!({"tools": tools()}))
    });
    let f = fixture.clone();
    engine.on_request("tools/call", move |_ctx: RequestContext, params: Option<Value>| {
        let f = f.clone();
        async move { f.call(&params.unwrap_or(Value::Null)) }
    });
    let f = fixture.clone();
    engine.on_request("state/rollback", move |_ctx: RequestContext, params: Option<Value>| {
        let f = f.clone();
        async move { f.rollback(&params.unwrap_or(Value::Null)) }
    });
    let peer = engine.connect(mcpl_core::transport::stdio::stdio()).await?;
    peer.closed().await;
    Ok(())
}
