//! Streamable HTTP over real sockets: sessions, SSE, resumption, guards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};

fn server() -> Server {
    Server::builder("http-test", "0.0.1")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(Value::Object(args).to_string()))
        })
        .tool(Tool::new("slow", ToolSchema::object()), |ctx, _args| async move {
            for i in 1..=3 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ctx.progress(f64::from(i), Some(3.0), None).await.ok();
            }
            Ok(ToolOutput::text("slow done"))
        })
        .tool(Tool::new("quick", ToolSchema::object()), |ctx, _args| async move {
            ctx.progress(1.0, Some(1.0), None).await.ok();
            Ok(ToolOutput::text("quick done"))
        })
        .tool(Tool::new("polled", ToolSchema::object()), |ctx, _args| async move {
            ctx.progress(1.0, None, None).await.ok();
            // End the response stream mid-call; the client resumes to get the result.
            assert!(ctx.close_stream());
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok(ToolOutput::text("polled done"))
        })
        .build()
}

async fn start(config: HttpConfig) -> SocketAddr {
    start_with(server(), config).await
}

async fn start_with(server: Server, config: HttpConfig) -> SocketAddr {
    let app = StreamableHttp::new(server, config).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));
    addr
}

struct Http {
    client: reqwest::Client,
    url: String,
    session: Option<String>,
}

/// The parsed events of an SSE body: (id, data).
fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut id = None;
        let mut data = Vec::new();
        let mut any = false;
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_owned());
                any = true;
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                any = true;
            }
        }
        if any {
            out.push((id, data.join("\n")));
        }
    }
    out
}

impl Http {
    fn new(addr: SocketAddr) -> Self {
        Http { client: reqwest::Client::new(), url: format!("http://{addr}/mcp"), session: None }
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut rb = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(s) = &self.session {
            rb = rb.header("mcp-session-id", s);
        }
        rb
    }

    /// Posts a request and returns the JSON-RPC messages of its SSE (or JSON) answer.
    async fn call(&self, body: Value) -> (reqwest::StatusCode, Vec<Value>) {
        let resp = self.post(&body).send().await.unwrap();
        let status = resp.status();
        let ct = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let text = resp.text().await.unwrap();
        if ct.starts_with("text/event-stream") {
            let msgs = parse_sse(&text)
                .into_iter()
                .filter(|(_, d)| !d.is_empty())
                .map(|(_, d)| serde_json::from_str(&d).unwrap())
                .collect();
            (status, msgs)
        } else if text.is_empty() {
            (status, vec![])
        } else {
            (status, vec![serde_json::from_str(&text).unwrap()])
        }
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let resp = self
            .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let session = resp.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
        assert_eq!(session.len(), 32, "128-bit hex session id");
        assert!(session.bytes().all(|b| b.is_ascii_hexdigit()));
        self.session = Some(session);
        let json = resp.headers()["content-type"] == "application/json";
        let text = resp.text().await.unwrap();
        let result: Value = if json {
            serde_json::from_str(&text).unwrap()
        } else {
            serde_json::from_str(&parse_sse(&text).last().unwrap().1).unwrap()
        };
        let (status, _) =
            self.call(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(status, 202);
        result
    }
}

#[tokio::test]
async fn a_session_from_initialize_to_delete() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    let init = http.initialize("2025-11-25").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");

    let (status, msgs) =
        http.call(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(status, 200);
    assert_eq!(msgs.last().unwrap()["result"]["tools"].as_array().unwrap().len(), 4);

    let (_, msgs) = http
        .call(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": 1}}}))
        .await;
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "{\"a\":1}");

    let resp = http
        .client
        .delete(&http.url)
        .header("mcp-session-id", http.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let (status, msgs) = http.call(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})).await;
    assert_eq!(status, 404);
    assert!(msgs[0]["error"].is_object());
}

#[tokio::test]
async fn the_endpoint_served_alone_serves_both_eras_and_only_its_path() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let endpoint = StreamableHttp::new(server(), HttpConfig::new());
    tokio::spawn(endpoint.serve_at(listener, "/mcp"));

    // A 2025 session: progress on the request's SSE stream, then DELETE ends it.
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let slow = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}}});
    let (status, msgs) = http.call(slow).await;
    assert_eq!(status, 200);
    assert_eq!(msgs.len(), 4, "three progress notifications, then the result: {msgs:?}");
    assert_eq!(msgs[0]["method"], "notifications/progress");
    assert_eq!(msgs[3]["result"]["content"][0]["text"], "slow done");
    let session = http.session.clone().unwrap();
    let resp =
        http.client.delete(&http.url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(resp.status(), 204);

    // A stateless request on the same endpoint.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"b": 2}, "_meta": meta}});
    let resp = Http::new(addr)
        .post(&call)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let answer: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "{\"b\":2}");
    assert_eq!(answer["result"]["resultType"], "complete");

    // The guards run as behind a router; other paths are not served.
    let resp = http.post(&call).header("host", "evil.example").send().await.unwrap();
    assert_eq!(resp.status(), 403);
    let resp = http.client.post(format!("http://{addr}/other")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
}

#[tokio::test]
async fn progress_rides_on_the_request_stream_with_event_ids() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let resp = http
        .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "slow", "_meta": {"progressToken": "p"}}}))
        .send()
        .await
        .unwrap();
    let text = resp.text().await.unwrap();
    let events = parse_sse(&text);
    // Priming event (id, empty data), three progress notifications, the response.
    assert_eq!(events.len(), 5, "{text}");
    assert!(events[0].1.is_empty() && events[0].0.is_some());
    assert!(text.contains("retry:"), "{text}");
    for (id, data) in &events[1..4] {
        assert!(id.is_some());
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["method"], "notifications/progress");
        assert_eq!(v["params"]["progressToken"], "p");
    }
    let last: Value = serde_json::from_str(&events[4].1).unwrap();
    assert_eq!(last["id"], 5);
}

#[tokio::test]
async fn what_a_handler_sends_before_answering_at_once_comes_first_in_order() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    for id in 1..=3 {
        let resp = http
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "quick", "_meta": {"progressToken": id}}}))
            .send()
            .await
            .unwrap();
        let text = resp.text().await.unwrap();
        let events = parse_sse(&text);
        // The primer, the progress notification, the answer: ids rising on one stream.
        assert_eq!(events.len(), 3, "{text}");
        assert!(events[0].1.is_empty(), "{text}");
        let ids: Vec<(String, u64)> = events
            .iter()
            .map(|(id, _)| {
                let (stream, seq) = id.as_deref().unwrap().split_once('-').unwrap();
                (stream.to_owned(), seq.parse().unwrap())
            })
            .collect();
        assert!(ids.windows(2).all(|w| w[0].0 == w[1].0 && w[0].1 < w[1].1), "{ids:?}");
        let progress: Value = serde_json::from_str(&events[1].1).unwrap();
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(progress["params"]["progressToken"], id);
        let answer: Value = serde_json::from_str(&events[2].1).unwrap();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["content"][0]["text"], "quick done");
    }
}

#[tokio::test]
async fn a_dropped_stream_resumes_with_last_event_id() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let mut resp = http
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "slow", "_meta": {"progressToken": 1}}}))
        .send()
        .await
        .unwrap();
    // Read until the first progress event, then drop the connection.
    let mut text = String::new();
    while parse_sse(&text).iter().filter(|(_, d)| !d.is_empty()).count() < 1 {
        let chunk = resp.chunk().await.unwrap().unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    drop(resp);
    let last_id = parse_sse(&text).iter().rev().find_map(|(id, _)| id.clone()).unwrap();

    let resumed = http
        .client
        .get(&http.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", http.session.clone().unwrap())
        .header("last-event-id", &last_id)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let text = resumed.text().await.unwrap();
    let msgs: Vec<Value> =
        parse_sse(&text).into_iter().map(|(_, d)| serde_json::from_str(&d).unwrap()).collect();
    assert_eq!(
        msgs.iter().filter(|m| m["method"] == "notifications/progress").count(),
        2,
        "{text}"
    );
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "slow done");
}

#[tokio::test]
async fn sessions_are_required_and_checked() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    let (status, _) = http.call(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!(status, 400, "no session id");
    http.session = Some("0".repeat(32));
    let (status, _) = http.call(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!(status, 404, "unknown session id");
    http.session = None;
    http.initialize("2025-06-18").await;
    let resp = http
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400, "unsupported protocol version header");
    let resp = http
        .post(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn malformed_requests_get_clear_statuses_and_the_server_keeps_serving() {
    let addr = start(HttpConfig::new().max_body(1024)).await;
    let http = Http::new(addr);
    let c = &http.client;
    let base = || c.post(&http.url).header("accept", "application/json, text/event-stream");

    let r = base().header("content-type", "application/json").body("{nope").send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        serde_json::from_str::<Value>(&r.text().await.unwrap()).unwrap()["error"]["code"],
        -32700
    );

    let r = base().header("content-type", "application/json").body("[]").send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        serde_json::from_str::<Value>(&r.text().await.unwrap()).unwrap()["error"]["code"],
        -32600
    );

    let r = base().header("content-type", "text/plain").body("{}").send().await.unwrap();
    assert_eq!(r.status(), 415);

    let r = c
        .post(&http.url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 406);

    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(2000)
    );
    let r = base().header("content-type", "application/json").body(big).send().await.unwrap();
    assert_eq!(r.status(), 413);

    let r = c.put(&http.url).send().await.unwrap();
    assert_eq!(r.status(), 405);

    let r = base()
        .header("content-type", "application/json")
        .header("host", "evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = base()
        .header("content-type", "application/json")
        .header("origin", "https://evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let (status, _) = http.call(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn json_response_mode_answers_with_one_body() {
    let addr = start(HttpConfig::new().json_response(true)).await;
    let mut http = Http::new(addr);
    let resp = http
        .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    http.session = Some(resp.headers()["mcp-session-id"].to_str().unwrap().to_owned());
    let (status, msgs) =
        http.call(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(status, 200);
    assert!(msgs[0]["result"]["tools"].is_array());
}

/// JSON mode, where an initialized session's request runs on its POST and is answered there:
/// the session's rules still hold (one request per id in flight, a client's cancel, a client
/// that stops waiting is no cancel).
#[tokio::test]
async fn json_mode_requests_keep_the_sessions_rules() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let finished = Arc::new(AtomicUsize::new(0));
    let f = finished.clone();
    let server = Server::builder("http-test", "0.0.1")
        .tool(Tool::new("wait", ToolSchema::object()), move |ctx, args| {
            let f = f.clone();
            async move {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(300);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = ctx.cancelled() => return Ok(ToolOutput::text("cancelled")),
                }
                f.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(format!("waited {ms}")))
            }
        })
        .build();
    let addr = start_with(server, HttpConfig::new().json_response(true)).await;
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let call = |id: u64, ms: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "wait", "arguments": {"ms": ms}}})
    };

    // Answered on its POST, naming the session, a tool's result as it would be sent.
    let resp = http.post(&call(1, 1)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["mcp-session-id"], http.session.as_deref().unwrap());
    assert_eq!(resp.headers()["content-type"], "application/json");
    let answer: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "waited 1"}]}})
    );
    // An unknown tool's error, and a method's error, on the same path.
    let (status, msgs) =
        http.call(json!({"jsonrpc": "2.0", "id": 2, "method": "nope/nothing"})).await;
    assert_eq!((status.as_u16(), msgs[0]["error"]["code"].as_i64()), (200, Some(-32601)));

    // One request per id in flight.
    let first = tokio::spawn(http.post(&call(3, 300)).send());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, msgs) = http.call(call(3, 1)).await;
    assert_eq!(status, 409);
    assert_eq!(msgs[0]["error"]["code"], -32600);
    let answer = first.await.unwrap().unwrap().bytes().await.unwrap();
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "waited 300");
    // Its id is free once answered.
    let (status, _) = http.call(call(3, 1)).await;
    assert_eq!(status, 200);

    // The client's cancel ends the request, with no result.
    let before = finished.load(Ordering::SeqCst);
    let cancelled = tokio::spawn(http.post(&call(4, 5_000)).send());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (status, _) = http
        .call(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}))
        .await;
    assert_eq!(status, 202);
    let resp =
        tokio::time::timeout(Duration::from_secs(2), cancelled).await.unwrap().unwrap().unwrap();
    assert_eq!(resp.status(), 404);
    assert!(resp.text().await.unwrap().contains("-32001"));

    // A client that stops waiting does not cancel: the tool finishes.
    let gone = tokio::spawn(http.post(&call(5, 300)).send());
    tokio::time::sleep(Duration::from_millis(100)).await;
    gone.abort();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while finished.load(Ordering::SeqCst) == before {
        assert!(tokio::time::Instant::now() < deadline, "the abandoned call finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_standalone_stream_is_single_and_session_bound() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let get = || {
        http.client
            .get(&http.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", http.session.clone().unwrap())
            .send()
    };
    let first = get().await.unwrap();
    assert_eq!(first.status(), 200);
    let second = get().await.unwrap();
    assert_eq!(second.status(), 409);
    drop(first);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let third = get().await.unwrap();
    assert_eq!(third.status(), 200, "a dropped standalone stream can be reopened");
}

#[tokio::test]
async fn a_session_recorded_in_a_shared_store_continues_on_another_endpoint() {
    use mcpl_server::http::event_store::InMemoryEventStore;
    use mcpl_server::http::session_store::InMemorySessionStore;
    use std::sync::Arc;

    let store = Arc::new(InMemorySessionStore::new());
    let mut addrs = Vec::new();
    for _ in 0..3 {
        let http = StreamableHttp::with_stores(
            server(),
            HttpConfig::new(),
            InMemoryEventStore::default(),
            store.clone(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.push(listener.local_addr().unwrap());
        tokio::spawn(mcpl_server::http::serve(listener, http.into_router("/mcp")));
    }
    // Initialize on the first endpoint ("process").
    let mut a = Http::new(addrs[0]);
    a.initialize("2025-06-18").await;
    // The second endpoint has never seen the session, yet serves it.
    let mut b = Http::new(addrs[1]);
    b.session = a.session.clone();
    let (status, msgs) = b
        .call(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 2}}}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "{\"x\":2}");
    // Ending it on the second endpoint removes the record: a third endpoint no longer knows it.
    let resp = b
        .client
        .delete(&b.url)
        .header("mcp-session-id", b.session.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);
    let mut c = Http::new(addrs[2]);
    c.session = a.session.clone();
    let (status, _) = c.call(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_handler_can_end_its_stream_and_the_client_polls_for_the_result() {
    let addr = start(HttpConfig::new()).await;
    let mut http = Http::new(addr);
    http.initialize("2025-11-25").await;
    let resp = http
        .post(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "polled", "_meta": {"progressToken": "p"}}}))
        .send()
        .await
        .unwrap();
    // The body ends early: the priming event and the progress, but no result.
    let text = resp.text().await.unwrap();
    let events = parse_sse(&text);
    assert!(events.iter().all(|(_, d)| !d.contains("polled done")), "{text}");
    let last = events.iter().rev().find_map(|(id, _)| id.clone()).unwrap();
    let resumed = http
        .client
        .get(&http.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", http.session.clone().unwrap())
        .header("last-event-id", &last)
        .send()
        .await
        .unwrap();
    let text = resumed.text().await.unwrap();
    assert!(text.contains("polled done"), "{text}");
}

#[tokio::test]
async fn every_session_hears_list_changes_and_an_idle_session_runs_no_task() {
    let server = server();
    let app = StreamableHttp::new(server.clone(), HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));

    let metrics = tokio::runtime::Handle::current().metrics();
    // Two sessions, each with its standalone stream open.
    let mut streams = Vec::new();
    for _ in 0..2 {
        let mut http = Http::new(addr);
        http.initialize("2025-11-25").await;
        let stream = http
            .client
            .get(&http.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", http.session.clone().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        streams.push(stream);
    }
    // Many more idle sessions (each client dropped, so its connection ends too) add no task
    // that outlives their requests.
    let settle = || async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        metrics.num_alive_tasks()
    };
    let before = settle().await;
    for _ in 0..20 {
        let mut http = Http::new(addr);
        http.initialize("2025-11-25").await;
    }
    let mut after = settle().await;
    for _ in 0..20 {
        if after <= before {
            break;
        }
        after = settle().await;
    }
    assert!(after <= before, "tasks before: {before}, after 20 idle sessions: {after}");

    server.tools_mut().remove("echo");
    for mut stream in streams {
        let found = tokio::time::timeout(Duration::from_secs(10), async {
            let mut text = String::new();
            while let Some(chunk) = stream.chunk().await.unwrap() {
                text.push_str(&String::from_utf8_lossy(&chunk));
                if text.contains("notifications/tools/list_changed") {
                    return true;
                }
            }
            false
        })
        .await
        .expect("the notification in time");
        assert!(found);
    }
}
