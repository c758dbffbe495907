//! The tasks extension (SEP-2663) over real HTTP, in the stateless (2026-07-28) era.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema,
};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::input::ToolReply;
use mcpl_server::task::TaskOptions;
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn ask(ctx: &mcpl_server::Context, key: &str, field: &str) -> ToolReply {
    let form = ElicitationSchema::default()
        .with_property(field, StringSchema::default())
        .with_required(field);
    ctx.input_required().elicit(key, ElicitRequestFormParams::new(format!("{field}?"), form)).into()
}

fn server(dropped: Arc<AtomicBool>) -> Server {
    let ms = ToolSchema::object().with_property("ms", json!({"type": "integer"}));
    Server::builder("tasks-test", "1.0.0")
        .tool(Tool::new("greet", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::text("Hello!"))
        })
        .task_tool(Tool::new("slow", ms), TaskOptions::optional(), move |_ctx, args| {
            let guard = SetOnDrop(dropped.clone());
            async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                std::mem::forget(guard);
                Ok(ToolOutput::text(format!("slept {ms}")))
            }
        })
        .task_tool(
            Tool::new("fails", ToolSchema::object()),
            TaskOptions::required(),
            |_c, _a| async { Ok(ToolOutput::error("the job failed")) },
        )
        .task_tool(
            Tool::new("protocol_error", ToolSchema::object()),
            TaskOptions::optional(),
            |_c, _a| async {
                Err::<mcpl_core::types::CallToolResult, _>(ErrorObject::internal("kaboom"))
            },
        )
        .task_tool(
            Tool::new("confirm", ToolSchema::object()),
            TaskOptions::optional(),
            |ctx, _a| async move {
                Ok::<_, ErrorObject>(match ctx.elicited("confirm").and_then(|c| c.get("ok")) {
                    Some(v) => ToolOutput::text(format!("confirmed {v:?}")).into(),
                    None => ask(&ctx, "confirm", "ok"),
                })
            },
        )
        .task_tool(
            Tool::new("two_inputs", ToolSchema::object()),
            TaskOptions::optional(),
            |ctx, _a| async move {
                let (a, b) = (ctx.elicited("a"), ctx.elicited("b"));
                if let (Some(a), Some(b)) = (a, b) {
                    return Ok(
                        ToolOutput::text(format!("{:?} {:?}", a.get("x"), b.get("x"))).into()
                    );
                }
                let form = || {
                    let schema =
                        ElicitationSchema::default().with_property("x", StringSchema::default());
                    ElicitRequestFormParams::new("x?", schema)
                };
                Ok::<ToolReply, ErrorObject>(
                    ctx.input_required().elicit("a", form()).elicit("b", form()).into(),
                )
            },
        )
        .task_tool(
            Tool::new("gather_then_task", ToolSchema::object()),
            TaskOptions::required().start_on_request(),
            |ctx, _a| async move {
                let Some(name) = ctx.elicited("user_name").and_then(|c| c.get("name")).cloned()
                else {
                    return Ok(ask(&ctx, "user_name", "name"));
                };
                let id = ctx.start_task().await?;
                assert!(id.is_some() && ctx.task_id() == id);
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(ToolOutput::text(format!("Hello, {name:?}")).into())
            },
        )
        .task_tool(
            Tool::new("introspect", ToolSchema::object()),
            TaskOptions::optional().start_on_request(),
            |ctx, _a| async move {
                let started = ctx.start_task().await?;
                Ok(ToolOutput::text(format!(
                    "task_mode={} supports_tasks={} started={started:?}",
                    ctx.is_task_mode(),
                    ctx.supports_tasks()
                )))
            },
        )
        .task_poll_interval(Duration::from_millis(100))
        .build()
}

async fn start() -> (SocketAddr, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let app = StreamableHttp::new(server(dropped.clone()), HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (addr, dropped)
}

fn body(method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn with_ext() -> Value {
    json!({"elicitation": {}, "extensions": {EXT: {}}})
}

/// Posts a 2026 request with the routing headers; returns the status and the JSON body.
async fn post(addr: SocketAddr, body: &Value) -> (u16, Value) {
    let p = &body["params"];
    let name = p["name"].as_str().or(p["taskId"].as_str());
    let mut rb = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", body["method"].as_str().unwrap());
    if let Some(name) = name {
        rb = rb.header("mcp-name", name);
    }
    let resp = rb.body(serde_json::to_vec(body).unwrap()).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, serde_json::from_str(&resp.text().await.unwrap()).unwrap())
}

async fn call(addr: SocketAddr, tool: &str, args: Value, caps: Value) -> (u16, Value) {
    post(addr, &body("tools/call", json!({"name": tool, "arguments": args}), caps)).await
}

async fn get(addr: SocketAddr, task_id: &str) -> Value {
    let (status, reply) =
        post(addr, &body("tasks/get", json!({"taskId": task_id}), with_ext())).await;
    assert_eq!(status, 200, "{reply}");
    let task = reply["result"].clone();
    assert_eq!(task["resultType"], "complete");
    assert_eq!(task["taskId"], task_id);
    task
}

async fn wait_for(addr: SocketAddr, task_id: &str, status: &str) -> Value {
    for _ in 0..100 {
        let task = get(addr, task_id).await;
        if task["status"] == status {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {task_id} never reached {status}");
}

/// Creates a task by calling `tool`; checks the flat CreateTaskResult.
async fn create(addr: SocketAddr, tool: &str, args: Value) -> String {
    let (status, reply) = call(addr, tool, args, with_ext()).await;
    assert_eq!(status, 200, "{reply}");
    let r = &reply["result"];
    assert_eq!(r["resultType"], "task", "{r}");
    for absent in
        ["result", "error", "inputRequests", "task", "requestState", "ttl", "pollInterval"]
    {
        assert!(r.get(absent).is_none(), "{absent} in {r}");
    }
    assert!(r["ttlMs"].as_u64().unwrap() > 0);
    assert_eq!(r["pollIntervalMs"], 100);
    assert!(r["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(r["lastUpdatedAt"].is_string());
    r["taskId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_extension_is_advertised_under_extensions() {
    let (addr, _) = start().await;
    let (_, reply) = post(addr, &body("server/discover", json!({}), json!({}))).await;
    let caps = &reply["result"]["capabilities"];
    assert_eq!(caps["extensions"][EXT], json!({}));
    assert!(caps.get("tasks").is_none());
    let (_, reply) = post(addr, &body("tools/list", json!({}), json!({}))).await;
    let tools = reply["result"]["tools"].as_array().unwrap();
    let support = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow"), "optional");
    assert_eq!(support("fails"), "required");
    assert_eq!(support("greet"), Value::Null);
}

#[tokio::test]
async fn a_task_runs_to_completion_with_its_result_inlined() {
    let (addr, _) = start().await;
    let id = create(addr, "slow", json!({"ms": 300})).await;
    // Visible at once, still working.
    let task = get(addr, &id).await;
    assert_eq!(task["status"], "working");
    assert!(task.get("result").is_none());
    let done = wait_for(addr, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 300");
    assert!(done["result"]["_meta"].get("io.modelcontextprotocol/related-task").is_none());
    assert!(done.get("error").is_none() && done.get("requestState").is_none());
    // Still readable after it ended.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get(addr, &id).await["status"], "completed");
}

#[tokio::test]
async fn tool_errors_complete_and_protocol_errors_fail() {
    let (addr, _) = start().await;
    let id = create(addr, "fails", json!({})).await;
    let done = wait_for(addr, &id, "completed").await;
    assert_eq!(done["result"]["isError"], true);
    assert!(done.get("error").is_none());

    let id = create(addr, "protocol_error", json!({})).await;
    let failed = wait_for(addr, &id, "failed").await;
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed["error"]["message"].as_str().unwrap().contains("kaboom"));
    assert!(failed.get("result").is_none());
}

#[tokio::test]
async fn cancelling_a_task_stops_its_handler() {
    let (addr, dropped) = start().await;
    let id = create(addr, "slow", json!({"ms": 60_000})).await;
    let cancel = body("tasks/cancel", json!({"taskId": id}), with_ext());
    let (status, ack) = post(addr, &cancel).await;
    assert_eq!(status, 200);
    let mut ack = ack["result"].clone();
    ack.as_object_mut().unwrap().remove("_meta");
    assert_eq!(ack, json!({"resultType": "complete"}));
    assert_eq!(get(addr, &id).await["status"], "cancelled");
    for _ in 0..50 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(dropped.load(Ordering::SeqCst), "the handler was not dropped");
    // Idempotent on terminal tasks, cancelled or completed.
    assert_eq!(post(addr, &cancel).await.1["result"]["resultType"], "complete");
    let id = create(addr, "slow", json!({"ms": 0})).await;
    wait_for(addr, &id, "completed").await;
    let (status, ack) = post(addr, &body("tasks/cancel", json!({"taskId": id}), with_ext())).await;
    assert_eq!((status, &ack["result"]["resultType"]), (200, &json!("complete")));
    assert_eq!(get(addr, &id).await["status"], "completed");
}

#[tokio::test]
async fn capability_and_id_errors() {
    let (addr, _) = start().await;
    // Without the extension: -32021 on every tasks method, before the id is looked up.
    for (method, params) in [
        ("tasks/get", json!({"taskId": "nope"})),
        ("tasks/update", json!({"taskId": "nope", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "nope"})),
    ] {
        let (status, reply) = post(addr, &body(method, params, json!({}))).await;
        assert_eq!((status, &reply["error"]["code"]), (400, &json!(-32021)), "{method}");
    }
    // A task-required tool without the extension.
    let (status, reply) = call(addr, "fails", json!({}), json!({})).await;
    assert_eq!(status, 400);
    assert_eq!(reply["error"]["code"], -32021);
    assert_eq!(reply["error"]["data"], json!({"requiredCapabilities": {"extensions": {EXT: {}}}}));
    // A task-optional tool without the extension runs synchronously.
    let (_, reply) = call(addr, "slow", json!({"ms": 0}), json!({})).await;
    assert_eq!(reply["result"]["resultType"], "complete");
    assert_eq!(reply["result"]["content"][0]["text"], "slept 0");
    // A sync tool with the extension stays sync, legacy `task` param or not.
    let legacy = body("tools/call", json!({"name": "greet", "task": {"ttl": 1000}}), with_ext());
    assert_eq!(post(addr, &legacy).await.1["result"]["content"][0]["text"], "Hello!");
    // Unknown ids.
    for (method, params) in [
        ("tasks/get", json!({"taskId": "nope"})),
        ("tasks/update", json!({"taskId": "nope", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "nope"})),
    ] {
        let (_, reply) = post(addr, &body(method, params, with_ext())).await;
        assert_eq!(reply["error"]["code"], -32602, "{method}");
    }
    // Removed methods.
    for (method, params) in [("tasks/result", json!({"taskId": "nope"})), ("tasks/list", json!({}))]
    {
        let (status, reply) = post(addr, &body(method, params, with_ext())).await;
        assert_eq!((status, &reply["error"]["code"]), (404, &json!(-32601)), "{method}");
    }
}

fn accept(x: Value) -> Value {
    json!({"action": "accept", "content": x})
}

#[tokio::test]
async fn input_required_inside_a_task_is_answered_with_tasks_update() {
    let (addr, _) = start().await;
    let id = create(addr, "confirm", json!({})).await;
    let parked = wait_for(addr, &id, "input_required").await;
    assert_eq!(parked["inputRequests"]["confirm"]["method"], "elicitation/create");
    // Unknown keys are ignored, and acknowledged.
    let update = |responses: Value| {
        body("tasks/update", json!({"taskId": id, "inputResponses": responses}), with_ext())
    };
    let (status, ack) = post(addr, &update(json!({"unknown-key": {"ignored": true}}))).await;
    assert_eq!((status, &ack["result"]["resultType"]), (200, &json!("complete")));
    assert!(ack["result"].get("taskId").is_none());
    assert_eq!(get(addr, &id).await["status"], "input_required");
    post(addr, &update(json!({"confirm": accept(json!({"ok": "yes"}))}))).await;
    let done = wait_for(addr, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed String(\"yes\")");

    // Partial answers: the task waits for the rest.
    let id = create(addr, "two_inputs", json!({})).await;
    let parked = wait_for(addr, &id, "input_required").await;
    assert_eq!(parked["inputRequests"].as_object().unwrap().len(), 2);
    let update = |responses: Value| {
        body("tasks/update", json!({"taskId": id, "inputResponses": responses}), with_ext())
    };
    post(addr, &update(json!({"a": accept(json!({"x": "1"}))}))).await;
    let still = get(addr, &id).await;
    assert_eq!(still["status"], "input_required");
    let keys: Vec<_> = still["inputRequests"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["b"]);
    post(addr, &update(json!({"b": accept(json!({"x": "2"}))}))).await;
    let done = wait_for(addr, &id, "completed").await;
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("\"2\""));
}

#[tokio::test]
async fn input_gathered_synchronously_then_a_task() {
    let (addr, _) = start().await;
    let (_, round1) = call(addr, "gather_then_task", json!({}), with_ext()).await;
    let r1 = &round1["result"];
    assert_eq!(r1["resultType"], "input_required");
    assert!(r1.get("taskId").is_none());
    assert!(r1["inputRequests"]["user_name"].is_object());
    let retry = json!({
        "name": "gather_then_task",
        "arguments": {},
        "inputResponses": {"user_name": accept(json!({"name": "Alice"}))},
    });
    let (_, round2) = post(addr, &body("tools/call", retry, with_ext())).await;
    let r2 = &round2["result"];
    assert_eq!(r2["resultType"], "task", "{r2}");
    assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
    let id = r2["taskId"].as_str().unwrap();
    let done = wait_for(addr, id, "completed").await;
    assert!(done["result"]["content"][0]["text"].as_str().unwrap().contains("Alice"));
}

/// A 2025-11-25 session over Streamable HTTP (`initialize`, then `Mcp-Session-Id`).
struct Session2025 {
    client: reqwest::Client,
    url: String,
    id: Option<String>,
}

impl Session2025 {
    /// Initializes a session whose client declares `caps`; returns it and the `initialize` result.
    async fn open(addr: SocketAddr, caps: Value) -> (Self, Value) {
        let mut session = Session2025 {
            client: reqwest::Client::new(),
            url: format!("http://{addr}/mcp"),
            id: None,
        };
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": caps,
            "clientInfo": {"name": "legacy", "version": "1"},
        });
        let (status, reply, headers) = session
            .send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}))
            .await;
        assert_eq!(status, 200, "{reply}");
        session.id = Some(headers.get("mcp-session-id").unwrap().to_str().unwrap().to_owned());
        let (status, _, _) =
            session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(status, 202);
        (session, reply["result"].clone())
    }

    async fn send(&self, message: &Value) -> (u16, Value, reqwest::header::HeaderMap) {
        let mut rb = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = &self.id {
            rb = rb.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
        }
        let resp = rb.body(serde_json::to_vec(message).unwrap()).send().await.unwrap();
        let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
        let text = resp.text().await.unwrap();
        // A JSON body, or an SSE stream whose last message answers the request.
        let reply = serde_json::from_str(&text).unwrap_or_else(|_| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .rfind(|m| m.get("id").is_some())
                .unwrap_or(Value::Null)
        });
        (status, reply, headers)
    }

    async fn request(&self, id: i64, method: &str, params: Value) -> Value {
        let (status, reply, _) = self
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(reply["id"], id, "{status}: {reply}");
        reply
    }
}

#[tokio::test]
async fn a_2025_session_runs_task_tools_synchronously_even_when_the_extension_is_declared() {
    let (addr, _) = start().await;
    // SEP-2663: the extension is not defined under 2025-11-25; declaring it in `initialize`
    // capabilities must not enable tasks.
    let (session, init) = Session2025::open(addr, with_ext()).await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert!(init["capabilities"]["tools"].is_object());
    assert!(init["capabilities"].get("extensions").is_none(), "{init}");
    assert!(init["capabilities"].get("tasks").is_none(), "{init}");

    // Task-optional: the ordinary result, no task.
    let reply =
        session.request(1, "tools/call", json!({"name": "slow", "arguments": {"ms": 50}})).await;
    let result = &reply["result"];
    assert_eq!(result["content"][0]["text"], "slept 50", "{reply}");
    assert!(result.get("taskId").is_none() && result.get("resultType").is_none(), "{result}");
    // Task-required: also synchronous (there is no task to run it as).
    let reply = session.request(2, "tools/call", json!({"name": "fails", "arguments": {}})).await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "the job failed");
    // A JSON-RPC error from a task-capable tool is the request's error.
    let reply = session.request(3, "tools/call", json!({"name": "protocol_error"})).await;
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    // What the handler sees: not a task, and `start_task` does nothing.
    let reply = session.request(4, "tools/call", json!({"name": "introspect"})).await;
    assert_eq!(
        reply["result"]["content"][0]["text"], "task_mode=false supports_tasks=false started=None",
        "{reply}"
    );

    // The tasks methods do not exist in this era.
    for (i, (method, params)) in [
        ("tasks/get", json!({"taskId": "nope"})),
        ("tasks/update", json!({"taskId": "nope", "inputResponses": {}})),
        ("tasks/cancel", json!({"taskId": "nope"})),
        ("tasks/result", json!({"taskId": "nope"})),
    ]
    .into_iter()
    .enumerate()
    {
        let reply = session.request(10 + i as i64, method, params).await;
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
    }

    // The same handler is a task for a 2026 request that declares the extension.
    let id = create(addr, "introspect", json!({})).await;
    let done = wait_for(addr, &id, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert_eq!(text, format!("task_mode=true supports_tasks=true started=Some({id:?})"));
}
