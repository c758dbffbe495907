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
        Instance::start_with(redis, name, prefix, &[])
    }

    fn start_with(redis: &RedisServer, name: &str, prefix: &str, env: &[(&str, &str)]) -> Instance {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fleet-server"))
            .envs(env.iter().copied())
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

/// The standalone `GET` stream of 2025 session `session` at `url`, resumed after
/// `last_event_id` when given.
async fn get_stream(url: &str, session: &str, last_event_id: Option<&str>) -> reqwest::Response {
    let mut request = http()
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(last) = last_event_id {
        request = request.header("last-event-id", last);
    }
    request.send().await.unwrap()
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
    let resumed = get_stream(&b.url, &session, Some(&seen)).await;
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
    let stolen = get_stream(&b.url, &other, Some(&seen)).await;
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
    // Events: A's answer reaches the client, but cannot be stored, so no stream resumes.
    let resumed = get_stream(&a.url, &held, Some("1-0")).await;
    assert_eq!(resumed.status(), 404);
    // Tasks: a typed JSON-RPC error, at once, at either instance.
    for at in [&a, &b] {
        let (_, refused) =
            stateless(&at.url, "tools/call", json!({"name": "job", "arguments": {"ms": 10}})).await;
        assert_eq!(refused["error"]["code"], -32603, "{refused}");
        assert_eq!(refused["error"]["message"], "Internal error: the task store is unavailable");
    }
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
    for (at, name) in [(&b, "B"), (&a, "A")] {
        loop {
            let response = post(&at.url, None, &init).send().await.unwrap();
            if response.status() == 200 {
                break;
            }
            assert!(Instant::now() < deadline, "{name} did not recover: {}", response.status());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let fresh = initialize(&a.url).await;
    assert_eq!(call_tool(&b.url, &fresh, 3, "whoami").await.1["result"]["content"][0]["text"], "B");
    // The session recorded before the crash is gone with Redis's data: A ends its copy too.
    assert_eq!(call_tool(&a.url, &held, 4, "whoami").await.0, 404);
    // Tasks work again across instances.
    let (_, created) =
        stateless(&a.url, "tools/call", json!({"name": "job", "arguments": {"ms": 10}})).await;
    let id = created["result"]["taskId"].as_str().expect("a task again").to_owned();
    assert!(task_status(&b.url, &id).await["status"].is_string());
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
    let mut standalone = get_stream(&b.url, &session, None).await;
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

/// POSTs `body` in `session` at `url`, asserting `status`.
async fn post_status(url: &str, session: &str, body: Value, status: u16) -> reqwest::Response {
    let response = post(url, Some(session), &body).send().await.unwrap();
    assert_eq!(response.status(), status, "{body}");
    response
}

fn count(events: &[(String, Value)], method: &str) -> usize {
    events.iter().filter(|(_, m)| m["method"] == method).count()
}

#[tokio::test]
async fn server_traffic_made_at_one_instance_reaches_the_standalone_stream_at_the_other() {
    let (_redis, a, b) = fleet("to-client");
    // A 2025 session begun at A whose standalone GET stream is at B.
    let session = initialize(&a.url).await;
    let mut standalone = get_stream(&b.url, &session, None).await;
    assert_eq!(standalone.status(), 200);
    // The client subscribes to the note at A: only A's copy of the session knows.
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
        "params": {"uri": "note://1"}});
    let subscribed = reply(post_status(&a.url, &session, subscribe, 200).await).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");

    // A resource update made at A (again until seen: B subscribes to the relay as it starts).
    let mut text = String::new();
    let mut id = 10;
    read_until(
        &mut standalone,
        &mut text,
        |e| has(e, "notifications/resources/updated"),
        async || {
            id += 1;
            let (status, _) = call_tool_with(&a.url, &session, id, "update_note", json!({})).await;
            assert_eq!(status, 200);
        },
    )
    .await;

    // A list change at A, then a log message A sends outside any request: both reach B's
    // stream, the list change once (from B, told by the change relay; not again from A).
    assert_eq!(call_tool_with(&a.url, &session, 20, "add_tool", json!({})).await.0, 200);
    let (status, later) =
        call_tool_with(&a.url, &session, 21, "log_later", json!({"ms": 300})).await;
    assert_eq!((status, &later["result"]["content"][0]["text"]), (200, &json!("later")));
    let seen =
        read_until(&mut standalone, &mut text, |e| has(e, "notifications/message"), async || {})
            .await;
    let log = seen.iter().find(|(_, m)| m["method"] == "notifications/message").unwrap();
    assert_eq!(log.1["params"]["data"], "logged by A");
    assert_eq!(count(&seen, "notifications/tools/list_changed"), 1, "{seen:?}");

    // A request A sends the client while serving a call at A: the client answers at B, and
    // the answer reaches the handler at A.
    let ask = json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
        "params": {"name": "ask_client", "arguments": {}}});
    let mut call = post_status(&a.url, &session, ask, 200).await;
    let mut call_text = String::new();
    let asked =
        read_until(&mut call, &mut call_text, |e| has(e, "elicitation/create"), async || {}).await;
    let request = &asked.iter().find(|(_, m)| m["method"] == "elicitation/create").unwrap().1;
    let answer = json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    post_status(&b.url, &session, answer, 202).await;
    let done = read_until(
        &mut call,
        &mut call_text,
        |e| e.iter().any(|(_, m)| m["id"] == 30),
        async || {},
    )
    .await;
    let result = &done.iter().find(|(_, m)| m["id"] == 30).unwrap().1;
    assert_eq!(result["result"]["content"][0]["text"], "A was told Ada", "{result}");

    // A request A sends outside any request goes to the standalone stream at B; answered at
    // B, it reaches A.
    let ask = json!({"jsonrpc": "2.0", "id": 31, "method": "tools/call",
        "params": {"name": "ask_client", "arguments": {"unrelated": true}}});
    let mut call = post_status(&a.url, &session, ask, 200).await;
    let seen =
        read_until(&mut standalone, &mut text, |e| has(e, "elicitation/create"), async || {}).await;
    let request = &seen.iter().find(|(_, m)| m["method"] == "elicitation/create").unwrap().1;
    let answer = json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"name": "Grace"}}});
    post_status(&b.url, &session, answer, 202).await;
    let mut call_text = String::new();
    let done = read_until(
        &mut call,
        &mut call_text,
        |e| e.iter().any(|(_, m)| m["id"] == 31),
        async || {},
    )
    .await;
    let result = &done.iter().find(|(_, m)| m["id"] == 31).unwrap().1;
    assert_eq!(result["result"]["content"][0]["text"], "A was told Grace", "{result}");
}

/// A client's answer to a request another session's handler awaits, posted at the other
/// instance, is relayed tagged with the session that posted it and dropped there: it never
/// reaches the other session's handler, which gets its own client's answer; an answer to an id
/// nobody asked changes nothing either.
#[tokio::test]
async fn a_forged_answer_relayed_to_the_other_instance_reaches_no_handler() {
    let (_redis, a, b) = fleet("forged");
    let (victim, mallory) = (initialize(&a.url).await, initialize(&a.url).await);
    // The victim's handler at A asks its client; the request's id is pending at A.
    let ask = json!({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
        "params": {"name": "ask_client", "arguments": {}}});
    let mut call = post_status(&a.url, &victim, ask, 200).await;
    let mut call_text = String::new();
    let asked =
        read_until(&mut call, &mut call_text, |e| has(e, "elicitation/create"), async || {}).await;
    let request = &asked.iter().find(|(_, m)| m["method"] == "elicitation/create").unwrap().1;
    // Mallory answers it from her own session, at B (which awaits nothing: it relays), and
    // answers an id nobody asked.
    for id in [request["id"].clone(), json!("nobody-asked")] {
        let forged = json!({"jsonrpc": "2.0", "id": id,
            "result": {"action": "accept", "content": {"name": "Mallory"}}});
        post_status(&b.url, &mallory, forged, 202).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The victim's own answer, at B, is the one its handler gets.
    let answer = json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    post_status(&b.url, &victim, answer, 202).await;
    let done = read_until(
        &mut call,
        &mut call_text,
        |e| e.iter().any(|(_, m)| m["id"] == 40),
        async || {},
    )
    .await;
    let result = &done.iter().find(|(_, m)| m["id"] == 40).unwrap().1;
    assert_eq!(result["result"]["content"][0]["text"], "A was told Ada", "{result}");
    // Both sessions go on serving, at either instance.
    for (url, session) in [(&a.url, &mallory), (&b.url, &mallory), (&b.url, &victim)] {
        let (status, reply) = call_tool(url, session, 41, "add_tool").await;
        assert_eq!(status, 200, "{reply}");
    }
}

async fn call_tool_with(
    url: &str,
    session: &str,
    id: u64,
    tool: &str,
    args: Value,
) -> (u16, Value) {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    let response = post(url, Some(session), &call).send().await.unwrap();
    (response.status().as_u16(), reply(response).await)
}

/// The first round of `two_rounds` at `url`: its sealed `requestState`.
async fn first_round(url: &str) -> String {
    let caps = json!({"elicitation": {"form": {}}});
    let call = json!({"name": "two_rounds", "arguments": {}});
    let (status, asked) = stateless_with(url, "tools/call", call, caps).await;
    assert_eq!(status, 200, "{asked}");
    asked["result"]["requestState"].as_str().expect("a sealed state").to_owned()
}

/// The second round of `two_rounds` at `url`, carrying `state`: the reply.
async fn second_round(url: &str, state: &str) -> Value {
    let caps = json!({"elicitation": {"form": {}}});
    let retry = json!({"name": "two_rounds", "arguments": {},
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state});
    stateless_with(url, "tools/call", retry, caps).await.1
}

#[tokio::test]
async fn the_fleets_state_key_rotates_and_the_retired_key_opens_for_one_ttl_more() {
    let (redis, a, b) = fleet("rotation");
    let sealed_before = first_round(&a.url).await;
    let keys =
        mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new(redis.url()).prefix("rotation"))
            .unwrap();
    mcpl_redis::rotate_state_key(&keys).await.unwrap();
    let rotated = Instant::now();
    // B restarts (a rolling restart) and reads the rotated ring; A runs on with the old one.
    drop(b);
    let ttl = Duration::from_secs(5);
    let b = Instance::start_with(&redis, "B", "rotation", &[("STATE_TTL_MS", "5000")]);
    // What A sealed with the retired key opens at B; what B seals with the new key opens at A,
    // which knew it as the upcoming key.
    let opened = second_round(&b.url, &sealed_before).await;
    assert_eq!(opened["result"]["content"][0]["text"], "asked by A, answered at B", "{opened}");
    assert!(rotated.elapsed() < ttl, "B took too long to start for this test");
    let sealed_after = first_round(&b.url).await;
    let opened = second_round(&a.url, &sealed_after).await;
    assert_eq!(opened["result"]["content"][0]["text"], "asked by B, answered at A", "{opened}");
    // One time to live after the rotation, B no longer opens the retired key, which A (not
    // restarted) still seals with; A itself still does.
    tokio::time::sleep((ttl + Duration::from_millis(300)).saturating_sub(rotated.elapsed())).await;
    let sealed_late = first_round(&a.url).await;
    let refused = second_round(&b.url, &sealed_late).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let opened = second_round(&a.url, &sealed_late).await;
    assert_eq!(opened["result"]["content"][0]["text"], "asked by A, answered at A", "{opened}");
    // Restarted, A seals with the new key again: B opens it.
    drop(a);
    let a = Instance::start(&redis, "A", "rotation");
    let opened = second_round(&b.url, &first_round(&a.url).await).await;
    assert_eq!(opened["result"]["content"][0]["text"], "asked by A, answered at B", "{opened}");
}

#[tokio::test]
async fn a_task_at_one_instance_takes_its_input_and_is_stopped_from_the_other() {
    let (_redis, a, b) = fleet("task-signals");
    // A task at A asks for input; the answer (`tasks/update`) goes to B.
    let (status, created) = stateless_with(
        &a.url,
        "tools/call",
        json!({"name": "greet_job", "arguments": {}}),
        json!({
            "elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let asked = loop {
        let task = task_status(&b.url, &id).await;
        if task["status"] == "input_required" || Instant::now() > deadline {
            break task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(asked["status"], "input_required", "{asked}");
    assert!(asked["inputRequests"]["who"].is_object(), "{asked}");
    let update = json!({"taskId": id,
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}});
    let (status, acknowledged) = stateless(&b.url, "tasks/update", update).await;
    assert_eq!(status, 200, "{acknowledged}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let done = loop {
        let task = task_status(&b.url, &id).await;
        if task["status"] == "completed" || Instant::now() > deadline {
            break task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "A greets Ada", "{done}");

    // A long task at A, cancelled at B: its handler at A stops (long before it would finish).
    let running = async || {
        let (status, reply) =
            stateless(&a.url, "tools/call", json!({"name": "running_jobs", "arguments": {}})).await;
        assert_eq!(status, 200, "{reply}");
        reply["result"]["content"][0]["text"].as_str().unwrap().to_owned()
    };
    let (_, created) =
        stateless(&a.url, "tools/call", json!({"name": "job", "arguments": {"ms": 20000}})).await;
    let id = created["result"]["taskId"].as_str().expect("a task").to_owned();
    assert_eq!(running().await, "1");
    let (status, _) = stateless(&b.url, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    while running().await != "0" {
        assert!(Instant::now() < deadline, "the handler at A still runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(task_status(&a.url, &id).await["status"], "cancelled");
}
