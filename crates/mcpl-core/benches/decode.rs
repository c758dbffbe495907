//! Decode path of an incoming `tools/call` request, against a plain `serde_json` parse.
//!
//! For three payload sizes, on the same bytes:
//!
//! - `baseline_value`: `serde_json::from_slice::<Value>`, the cheapest way to read the message
//!   into owned JSON at all;
//! - `ours_decode_dispatch`: [`Message::decode`] plus the work the engine does before it spawns
//!   a handler: the method lookup in a `RwLock<HashMap<String, Arc<dyn …>>>` handler table
//!   (a mirror of the engine's private one, built once outside the timed loop) and the
//!   extraction of `params._meta`;
//! - `decode_only`: [`Message::decode`] alone, to split the above;
//! - `typed_envelope`: the bytes straight into [`CallToolRequest`];
//! - `decode_then_typed_params`: [`Message::decode`], then its params into
//!   [`CallToolRequestParams`] with `serde_json::from_value`, as a typed handler does.
//!
//! Run with `cargo bench -p mcpl-core --bench decode`; see `docs/performance.md`.

// `criterion_group!` defines an undocumented `pub fn`.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, PoisonError, RwLock};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcpl_core::jsonrpc::Message;
use mcpl_core::types::{CallToolRequest, CallToolRequestParams};
use serde_json::{Map, Value, json};

/// A stand-in for the engine's `Arc<dyn RequestHandler>`.
type Handler = Arc<dyn Fn(Option<Value>) -> usize + Send + Sync>;

/// A mirror of the engine's handler table: a map behind a `RwLock`, plus a fallback slot.
struct Table {
    requests: RwLock<HashMap<String, Handler>>,
    fallback: RwLock<Option<Handler>>,
}

impl Table {
    /// Registers what a server with every capability registers.
    fn server() -> Table {
        let methods = [
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
            "prompts/list",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
            "tasks/get",
            "tasks/result",
            "tasks/list",
            "tasks/cancel",
        ];
        let mut requests = HashMap::new();
        for (i, m) in methods.iter().enumerate() {
            let h: Handler = Arc::new(move |p: Option<Value>| i + usize::from(p.is_some()));
            requests.insert((*m).to_owned(), h);
        }
        Table { requests: RwLock::new(requests), fallback: RwLock::new(None) }
    }

    /// As `HandlerTable::request_handler`.
    fn request_handler(&self, method: &str) -> Option<Handler> {
        self.requests
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(method)
            .cloned()
            .or_else(|| self.fallback.read().unwrap_or_else(PoisonError::into_inner).clone())
    }
}

/// What the engine has in hand when it spawns the handler.
type Dispatched = (Message, Option<Handler>, Option<Map<String, Value>>);

/// `Message::decode`, then what `Connection::dispatch_request` does before spawning.
fn decode_and_dispatch(table: &Table, bytes: &[u8]) -> Option<Dispatched> {
    let msg = Message::decode(bytes).ok()?;
    let Message::Request(req) = &msg else { return None };
    let handler = table.request_handler(&req.method);
    let meta = req.params.as_ref().and_then(|p| p.get("_meta")).and_then(Value::as_object).cloned();
    Some((msg, handler, meta))
}

/// `Message::decode`, then the params into the typed struct, as a typed handler reads them.
fn decode_then_typed(bytes: &[u8]) -> Option<CallToolRequestParams> {
    let Ok(Message::Request(req)) = Message::decode(bytes) else { return None };
    serde_json::from_value(req.params.unwrap_or_else(|| Value::Object(Map::new()))).ok()
}

/// ~150 B: a small call with a progress token.
fn small() -> Vec<u8> {
    let v = json!({
        "jsonrpc": "2.0",
        "id": 17,
        "method": "tools/call",
        "params": {
            "_meta": {"progressToken": "tok-17"},
            "name": "get_weather",
            "arguments": {"location": "Paris, FR", "units": "metric", "days": 3}
        }
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

/// ~2 KB: nested arguments, as a search or database tool takes.
fn medium() -> Vec<u8> {
    let filters: Vec<Value> = (0..14)
        .map(|i| {
            json!({
                "field": format!("attributes.level{i}.value"),
                "op": if i % 2 == 0 { "eq" } else { "in" },
                "value": if i % 2 == 0 { json!(i * 10) } else { json!(["alpha", "beta", i]) },
                "negate": i % 3 == 0
            })
        })
        .collect();
    let v = json!({
        "jsonrpc": "2.0",
        "id": "req-5f0c2a9e-41b7-4d3a-9a7e-0b6f1c2d3e4f",
        "method": "tools/call",
        "params": {
            "_meta": {
                "progressToken": 4242,
                "io.modelcontextprotocol/protocolVersion": "2025-11-25",
                "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.4.2"}
            },
            "name": "search_records",
            "arguments": {
                "query": "status:open AND owner:\"team-platform\" AND created:>2025-01-01",
                "collection": "incidents",
                "filters": filters,
                "fields": ["id", "title", "status", "owner", "created", "updated", "severity", "tags"],
                "sort": [{"field": "created", "order": "desc"}, {"field": "severity", "order": "asc"}],
                "page": {"size": 50, "cursor": "eyJvZmZzZXQiOjEwMCwic2VlZCI6MTIzNDU2Nzg5fQ=="},
                "options": {
                    "includeArchived": false,
                    "highlight": {"pre": "<em>", "post": "</em>", "fields": ["title", "body"]},
                    "timeoutMs": 2500,
                    "score": {"boost": 1.25, "decay": 0.875, "mode": "multiply"}
                }
            }
        }
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

/// ~64 KB: a file write: a long string with escapes, and an array of edits.
fn large() -> Vec<u8> {
    let mut content = String::new();
    let mut line = 0;
    while content.len() < 52 * 1024 {
        content.push_str(&format!(
            "    let value_{line} = compute(\"input-{line}\", {line}) * 2; // \u{e9}t\u{e9}\t\"ok\"\n"
        ));
        line += 1;
    }
    let edits: Vec<Value> = (0..150)
        .map(|i| json!({"line": i * 7, "col": i % 40, "len": 12, "text": format!("x{i}")}))
        .collect();
    let v = json!({
        "jsonrpc": "2.0",
        "id": 90210,
        "method": "tools/call",
        "params": {
            "_meta": {"progressToken": "write-90210"},
            "name": "write_file",
            "arguments": {
                "path": "/workspace/src/generated/module.rs",
                "content": content,
                "edits": edits,
                "createDirs": true
            }
        }
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let table = Table::server();
    for (name, bytes) in [("small", small()), ("medium", medium()), ("large", large())] {
        // Every variant must succeed on the payload, or the comparison is meaningless.
        assert!(serde_json::from_slice::<Value>(&bytes).is_ok(), "{name}");
        assert!(
            matches!(decode_and_dispatch(&table, &bytes), Some((_, Some(_), Some(_)))),
            "{name}"
        );
        assert!(serde_json::from_slice::<CallToolRequest>(&bytes).is_ok(), "{name}");
        assert!(decode_then_typed(&bytes).is_some(), "{name}");

        eprintln!("payload {name}: {} bytes", bytes.len());
        let mut g = c.benchmark_group(format!("tools_call/{name}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function("baseline_value", |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(&bytes)).ok())
        });
        g.bench_function("ours_decode_dispatch", |b| {
            b.iter(|| decode_and_dispatch(&table, black_box(&bytes)))
        });
        g.bench_function("decode_only", |b| b.iter(|| Message::decode(black_box(&bytes)).ok()));
        g.bench_function("typed_envelope", |b| {
            b.iter(|| serde_json::from_slice::<CallToolRequest>(black_box(&bytes)).ok())
        });
        g.bench_function("decode_then_typed_params", |b| {
            b.iter(|| decode_then_typed(black_box(&bytes)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
