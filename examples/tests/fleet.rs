//! Two real `fleet-server` processes on one real `redis-server` (each test starts its own, on
//! free loopback ports), and a client that alternates between them: session continuity,
//! resumption at the other instance, tasks across instances, DELETE everywhere, and Redis
//! killed mid-traffic then restarted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcpl_redis::RedisServer;
use serde_json::{Value, json};

/// One `fleet-server` process, killed when dropped.
struct Instance {
    child: Child,
    url: String,
}

impl Instance {
    fn start(redis: &RedisServer, name: &str, prefix: &str) -> Instance {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fleet-server"))
            .env("REDIS_URL", redis.url())
            .env("REDIS_PREFIX", prefix)
            .env("PORT", "0")
            .env("INSTANCE", name)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).expect("the instance started");
        let url = line.trim().strip_prefix("listening on ").expect("its address").to_owned();
        Instance { child, url }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fleet: Redis and two instances, A and B.
fn fleet(test: &str) -> (RedisServer, Instance, Instance) {
    let redis = RedisServer::start().unwrap();
    let a = Instance::start(&redis, "A", test);
    let b = Instance::start(&redis, "B", test);
    (redis, a, b)
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap()
}

fn post(url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request =
            request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    request
}

/// The SSE events of `text`: (id, data as JSON) for those with data.
fn events(text: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let (mut id, mut data) = (String::new(), String::new());
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            out.push((id, serde_json::from_str(&data).unwrap()));
        }
    }
    out
}

/// The JSON-RPC reply in a response body (JSON, or the last message of an SSE stream).
async fn reply(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    serde_json::from_str(&text)
        .unwrap_or_else(|_| events(&text).pop().map(|(_, v)| v).unwrap_or(Value::Null))
}

/// A 2025 session initialized at `url`: its id.
async fn initialize(url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "fleet-test", "version": "1"}}});
    let response = post(url, None, &init).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = post(url, Some(&session), &initialized).send().await.unwrap();
    assert_eq!(done.status(), 202);
    session
}

async fn call_tool(url: &str, session: &str, id: u64, tool: &str) -> (u16, Value) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}});
    let response = post(url, Some(session), &call).send().await.unwrap();
    (response.status().as_u16(), reply(response).await)
}

#[tokio::test]
async fn a_session_continues_at_the_other_instance_and_delete_ends_it_everywhere() {
    let (_redis, a, b) = fleet("continuity");
    let session = initialize(&a.url).await;
    // The client alternates: each instance serves the session, B never saw `initialize`.
    for (n, (at, name)) in [(&b, "B"), (&a, "A"), (&b, "B")].into_iter().enumerate() {
        let (status, reply) = call_tool(&at.url, &session, n as u64 + 1, "whoami").await;
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], name);
    }
    // DELETE at B: ended at both, though A holds it live.
    let deleted = http()
        .delete(&b.url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    for at in [&a, &b] {
        let (status, _) = call_tool(&at.url, &session, 9, "whoami").await;
        assert_eq!(status, 404, "{}", at.url);
    }
}

#[tokio::test]
async fn a_stream_cut_at_one_instance_resumes_at_the_other_with_exactly_the_missed_events() {
    let (_redis, a, b) = fleet("resumption");
    let session = initialize(&a.url).await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "ticks", "arguments": {"count": 4, "delay_ms": 150},
        "_meta": {"progressToken": "p"}}});
    let response = post(&a.url, Some(&session), &call).send().await.unwrap();
    assert_eq!(response.status(), 200);
    // Read until the first progress event, then drop the connection.
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let seen = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        let so_far = events(&text);
        if let Some((id, _)) = so_far.iter().find(|(_, m)| m["method"] == "notifications/progress")
        {
            break id.clone();
        }
    };
    drop(body);
    // Let the tool finish at A.
    tokio::time::sleep(Duration::from_millis(900)).await;
    // Then the client calls a tool at B, on streams of B's own: they never mix with (or
    // discard) the stream A left.
    let other_call = json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "ticks", "arguments": {"count": 2}, "_meta": {"progressToken": "q"}}});
    let at_b = post(&b.url, Some(&session), &other_call).send().await.unwrap();
    assert_eq!(events(&at_b.text().await.unwrap()).len(), 3);
    // Resume at B, which never saw the stream.
    let resumed = http()
        .get(&b.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &seen)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let replayed = events(&resumed.text().await.unwrap());
    let (stream, first) = seen.split_once('-').unwrap();
    let first: u64 = first.parse().unwrap();
    let ids: Vec<String> = replayed.iter().map(|(id, _)| id.clone()).collect();
    let expected: Vec<String> = (first + 1..=first + 4).map(|s| format!("{stream}-{s}")).collect();
    assert_eq!(ids, expected, "exactly the missed events, in order");
    let progress: Vec<&Value> =
        replayed[..3].iter().map(|(_, m)| &m["params"]["progress"]).collect();
    assert_eq!(progress, [&json!(2.0), &json!(3.0), &json!(4.0)]);
    assert_eq!(replayed[3].1["result"]["content"][0]["text"], "4 ticks");

    // Another session cannot replay this one's stream.
    let other = initialize(&b.url).await;
    let stolen = http()
        .get(&b.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &other)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", &seen)
        .send()
        .await
        .unwrap();
    assert_eq!(stolen.status(), 404);
}

/// A 2026 request at `url` declaring the tasks extension.
async fn stateless(url: &str, method: &str, params: Value) -> (u16, Value) {
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    stateless_with(url, method, params, caps).await
}

/// A 2026 request at `url` declaring `capabilities`.
async fn stateless_with(
    url: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params["name"].as_str().or(params["taskId"].as_str()).map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = post(url, None, &body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), reply(response).await)
}

async fn task_status(url: &str, id: &str) -> Value {
    let (status, reply) = stateless(url, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(status, 200, "{reply}");
    reply["result"].clone()
}

#[tokio::test]
async fn a_task_created_at_one_instance_is_polled_and_cancelled_at_the_other() {
    let (_redis, a, b) = fleet("tasks");
    let (status, created) =
        stateless(&a.url, "tools/call", json!({"name": "job", "arguments": {"ms": 300}})).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(task_status(&b.url, &id).await["status"], "working");
    let deadline = Instant::now() + Duration::from_secs(10);
    let done = loop {
        let task = task_status(&b.url, &id).await;
        if task["status"] == "completed" || Instant::now() > deadline {
            break task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done by A");

    // Cancelled at B while its handler runs at A: cancelled for good, at both.
    let (_, created) =
        stateless(&a.url, "tools/call", json!({"name": "job", "arguments": {"ms": 400}})).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let (status, _) = stateless(&b.url, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(status, 200);
    assert_eq!(task_status(&a.url, &id).await["status"], "cancelled");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(task_status(&a.url, &id).await["status"], "cancelled", "not completed after all");
    // An unknown task is unknown at every instance.
    let (_, unknown) = stateless(&b.url, "tasks/get", json!({"taskId": "nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602);
}

#[tokio::test]
async fn redis_killed_mid_traffic_refuses_new_sessions_then_recovers() {
    let (mut redis, a, b) = fleet("fault");
    let held = initialize(&a.url).await;
    redis.kill().unwrap();

    // New sessions: refused with 503 and Retry-After (within the Redis timeouts).
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "fleet-test", "version": "1"}}});
    let refused = post(&b.url, None, &init).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    // The session A holds live is still served there; B cannot load it: 503, not 404.
    assert_eq!(call_tool(&a.url, &held, 1, "whoami").await.0, 200);
    let (status, _) = call_tool(&b.url, &held, 2, "whoami").await;
    assert_eq!(status, 503);
    // A stateless call that needs no store is served as ever.
    let (status, discover) = stateless(&b.url, "server/discover", json!({})).await;
    assert_eq!(status, 200, "{discover}");
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "fleet-example"
    );

    // Redis back (empty): sessions are made again, at either instance, with no restart.
    redis.restart().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let response = post(&b.url, None, &init).send().await.unwrap();
        if response.status() == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "B did not recover: {}", response.status());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fresh = initialize(&a.url).await;
    assert_eq!(call_tool(&b.url, &fresh, 3, "whoami").await.1["result"]["content"][0]["text"], "B");
    // The session recorded before the crash is gone with Redis's data: A ends its copy too.
    assert_eq!(call_tool(&a.url, &held, 4, "whoami").await.0, 404);
    // The relay of changes resubscribed by itself: a change at A reaches a stream at B.
    let mut listening = listen_at(&b.url).await;
    let mut text = String::new();
    read_until(
        &mut listening,
        &mut text,
        |e| has(e, "notifications/resources/updated"),
        async || {
            let update = json!({"name": "update_note", "arguments": {"uri": "note://1"}});
            assert_eq!(stateless(&a.url, "tools/call", update).await.0, 200);
        },
    )
    .await;
}

/// A `subscriptions/listen` stream at `url` for tool list changes and `note://1`.
async fn listen_at(url: &str) -> reqwest::Response {
    let listen = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["note://1"]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let listening = post(url, None, &listen)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .send()
        .await
        .unwrap();
    assert_eq!(listening.status(), 200);
    listening
}

/// Reads SSE events from `response` into `text` until `done` holds for the messages so far.
async fn read_until(
    response: &mut reqwest::Response,
    text: &mut String,
    done: impl Fn(&[(String, Value)]) -> bool,
    mut between: impl AsyncFnMut(),
) -> Vec<(String, Value)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let so_far = events(text);
        if done(&so_far) {
            return so_far;
        }
        assert!(Instant::now() < deadline, "not seen in time: {so_far:?}");
        between().await;
        if let Ok(chunk) = tokio::time::timeout(Duration::from_millis(300), response.chunk()).await
        {
            text.push_str(std::str::from_utf8(&chunk.unwrap().unwrap()).unwrap());
        }
    }
}

fn has(events: &[(String, Value)], method: &str) -> bool {
    events.iter().any(|(_, m)| m["method"] == method)
}

#[tokio::test]
async fn a_change_made_at_one_instance_reaches_the_streams_open_at_the_other() {
    let (_redis, a, b) = fleet("changes");
    // 2026: a `subscriptions/listen` stream open at B.
    let mut listening = listen_at(&b.url).await;
    // 2025: a session begun at A whose standalone GET stream is at B.
    let session = initialize(&a.url).await;
    let mut standalone = http()
        .get(&b.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(standalone.status(), 200);

    // The change is made at A (again until seen: B's relay subscribes as it starts).
    let mut text = String::new();
    let seen = read_until(
        &mut listening,
        &mut text,
        |e| has(e, "notifications/resources/updated"),
        async || {
            let update = json!({"name": "update_note", "arguments": {"uri": "note://1"}});
            assert_eq!(stateless(&a.url, "tools/call", update).await.0, 200);
        },
    )
    .await;
    assert_eq!(seen[0].1["method"], "notifications/subscriptions/acknowledged");
    let updated = seen.iter().find(|(_, m)| m["method"] == "notifications/resources/updated");
    assert_eq!(updated.unwrap().1["params"]["uri"], "note://1");

    // A list change at A: told to both streams at B.
    assert_eq!(
        stateless(&a.url, "tools/call", json!({"name": "add_tool", "arguments": {}})).await.0,
        200
    );
    read_until(
        &mut listening,
        &mut text,
        |e| has(e, "notifications/tools/list_changed"),
        async || {},
    )
    .await;
    let mut text = String::new();
    read_until(
        &mut standalone,
        &mut text,
        |e| has(e, "notifications/tools/list_changed"),
        async || {},
    )
    .await;
}

#[tokio::test]
async fn a_request_state_sealed_at_one_instance_opens_at_the_other() {
    let (_redis, a, b) = fleet("sealing");
    let caps = json!({"elicitation": {"form": {}}});
    let mut first = json!({"name": "two_rounds", "arguments": {}});
    let (status, asked) = stateless_with(&a.url, "tools/call", first.take(), caps.clone()).await;
    assert_eq!(status, 200, "{asked}");
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let state = result["requestState"].as_str().expect("a sealed state").to_owned();
    // The answer goes to B, which never saw the first round.
    let retry = json!({"name": "two_rounds", "arguments": {},
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state});
    let (status, answered) = stateless_with(&b.url, "tools/call", retry, caps).await;
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["result"]["content"][0]["text"], "asked by A, answered at B", "{answered}");
}
