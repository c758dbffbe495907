//! The stateless (2026-07-28) era over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcpl_core::engine::Engine;
use mcpl_core::jsonrpc::Request;
use mcpl_core::types::{LoggingLevel, Tool, ToolSchema};
use mcpl_core::{ErrorKind, Transport};
use mcpl_server::http::stateless::StatelessTransport;
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};

fn server(cancelled: Arc<AtomicBool>) -> Server {
    let region = ToolSchema::object()
        .with_property("region", json!({"type": "string", "x-mcp-header": "Region"}))
        .with_property("n", json!({"type": "integer"}));
    Server::builder("stateless-test", "2.0.0")
        .tool(Tool::new("whoami", ToolSchema::object()), |ctx, _args| async move {
            let name = ctx.client_info().map(|i| i.name).unwrap_or_default();
            let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
            Ok(ToolOutput::text(format!("{name}@{version}")))
        })
        .tool(Tool::new("regional", region), |_ctx, args| async move {
            Ok(ToolOutput::text(format!("region={:?}", args.get("region"))))
        })
        .tool(Tool::new("chatty", ToolSchema::object()), |ctx, _args| async move {
            ctx.log(LoggingLevel::Info, Some("t"), json!("hello")).await.ok();
            ctx.progress(1.0, Some(2.0), None).await.ok();
            Ok(ToolOutput::text("chatted"))
        })
        .tool(Tool::new("flood", ToolSchema::object()), |ctx, _args| async move {
            for i in 0..FLOOD {
                ctx.progress(f64::from(i), None, None).await.ok();
            }
            Ok(ToolOutput::text("flooded"))
        })
        .tool(Tool::new("decorated", ToolSchema::object()), |ctx, _args| async move {
            ctx.progress(1.0, None, None).await.ok();
            let mut result = ToolOutput::structured_value(json!({"n": 3, "quote": "a \"b\""}));
            result.meta =
                Some(mcpl_core::types::Meta(json!({"trace": "t-1"}).as_object().cloned().unwrap()));
            Ok(result)
        })
        .tool(Tool::new("ask", ToolSchema::object()), |ctx, _args| async move {
            // Server-to-client requests do not exist in the stateless era.
            let r = ctx.peer().request("roots/list", None, Default::default()).await;
            Ok(ToolOutput::text(format!("{:?}", r.err().map(|e| e.kind()))))
        })
        .tool(Tool::new("forever", ToolSchema::object()), move |_ctx, _args| {
            let guard = SetOnDrop(cancelled.clone());
            async move {
                std::future::pending::<()>().await;
                drop(guard);
                Ok(ToolOutput::text("never"))
            }
        })
        .build()
}

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

async fn start() -> (SocketAddr, Server, Arc<AtomicBool>) {
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = server(cancelled.clone());
    let app = StreamableHttp::new(server.clone(), HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (addr, server, cancelled)
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "sl", "version": "1"}
    })
}

fn request(id: Value, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Posts with the headers a correct 2026 client sends (overridable).
async fn post(addr: SocketAddr, body: &Value, extra: &[(&str, &str)]) -> (u16, String, Vec<Value>) {
    let mut rb = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let mut set = std::collections::HashSet::new();
    for (k, v) in extra {
        set.insert(k.to_ascii_lowercase());
        rb = rb.header(*k, *v);
    }
    if !set.contains("mcp-protocol-version") {
        rb = rb.header("mcp-protocol-version", "2026-07-28");
    }
    if !set.contains("mcp-method") {
        rb = rb.header("mcp-method", body["method"].as_str().unwrap());
    }
    let name = body["params"]["name"].as_str().or(body["params"]["uri"].as_str());
    if let (false, Some(name)) = (set.contains("mcp-name"), name) {
        rb = rb.header("mcp-name", name);
    }
    let resp = rb.body(serde_json::to_vec(body).unwrap()).send().await.unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = resp.text().await.unwrap();
    let msgs = if ct.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| serde_json::from_str(d.trim()).unwrap())
            .collect()
    } else if text.is_empty() {
        vec![]
    } else {
        vec![serde_json::from_str(&text).unwrap()]
    };
    (status, ct, msgs)
}

#[tokio::test]
async fn discover_describes_the_server() {
    let (addr, _, _) = start().await;
    let (status, _, msgs) = post(addr, &request(json!(1), "server/discover", json!({})), &[]).await;
    assert_eq!(status, 200);
    let r = &msgs[0]["result"];
    assert_eq!(r["resultType"], "complete");
    assert!(r["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
    assert!(r["capabilities"]["tools"].is_object());
    assert_eq!(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "stateless-test");
    assert!(r["ttlMs"].is_u64());
    assert_eq!(r["cacheScope"], "public");
}

#[tokio::test]
async fn validation_happens_in_the_protocol_order() {
    let (addr, _, _) = start().await;
    // (a) missing required _meta keys -> -32602, even with the version header.
    let body = json!({"jsonrpc": "2.0", "id": "a", "method": "tools/list", "params": {}});
    let (status, _, msgs) = post(addr, &body, &[]).await;
    assert_eq!(
        (status, msgs[0]["error"]["code"].clone(), msgs[0]["id"].clone()),
        (400, json!(-32602), json!("a"))
    );
    // (b) header mismatches -> -32020.
    let body = request(json!(2), "tools/list", json!({}));
    let (status, _, msgs) = post(addr, &body, &[("mcp-method", "tools/call")]).await;
    assert_eq!((status, msgs[0]["error"]["code"].clone()), (400, json!(-32020)));
    let (status, _, msgs) = post(addr, &body, &[("mcp-method", "TOOLS/LIST")]).await;
    assert_eq!((status, msgs[0]["error"]["code"].clone()), (400, json!(-32020)));
    let (status, _, _) = post(addr, &body, &[("Mcp-Method", "tools/list")]).await;
    assert_eq!(status, 200, "header names are case-insensitive");
    let call = request(json!(3), "tools/call", json!({"name": "whoami"}));
    let (status, _, msgs) = post(addr, &call, &[("mcp-name", "other")]).await;
    assert_eq!((status, msgs[0]["error"]["code"].clone()), (400, json!(-32020)));
    let (status, _, _) = post(addr, &call, &[("mcp-name", "  whoami  ")]).await;
    assert_eq!(status, 200, "whitespace around header values is trimmed");
    // The version header must match _meta.
    let mut v999 = request(json!(4), "tools/list", json!({}));
    v999["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    let (status, _, msgs) = post(addr, &v999, &[]).await;
    assert_eq!((status, msgs[0]["error"]["code"].clone()), (400, json!(-32020)));
    // (c) both say an unknown version -> -32022 with the supported list.
    let (status, _, msgs) = post(addr, &v999, &[("mcp-protocol-version", "v999.0.0")]).await;
    assert_eq!((status, msgs[0]["error"]["code"].clone()), (400, json!(-32022)));
    assert_eq!(msgs[0]["error"]["data"]["requested"], "v999.0.0");
    assert!(
        msgs[0]["error"]["data"]["supported"].as_array().unwrap().contains(&json!("2026-07-28"))
    );
    // (d) methods of the stateful era are gone -> 404 / -32601.
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"] {
        let (status, _, msgs) = post(addr, &request(json!(5), method, json!({})), &[]).await;
        assert_eq!((status, msgs[0]["error"]["code"].clone()), (404, json!(-32601)), "{method}");
    }
}

#[tokio::test]
async fn results_carry_result_type_server_info_and_cache_hints() {
    let (addr, _, _) = start().await;
    let (status, ct, msgs) = post(addr, &request(json!(1), "tools/list", json!({})), &[]).await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("application/json"));
    let r = &msgs[0]["result"];
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["cacheScope"], "public");
    assert!(r["ttlMs"].is_u64());
    assert_eq!(r["tools"][0]["name"], "whoami");
    let (_, _, msgs) =
        post(addr, &request(json!(2), "tools/call", json!({"name": "whoami"})), &[]).await;
    let r = &msgs[0]["result"];
    assert_eq!(r["content"][0]["text"], "sl@2026-07-28", "the handler sees the per-request _meta");
    assert_eq!(r["resultType"], "complete");
    assert!(r.get("ttlMs").is_none(), "tools/call results are not cacheable");
}

#[tokio::test]
async fn a_tool_result_keeps_its_own_meta_beside_the_server_identity_in_both_response_forms() {
    let (addr, _, _) = start().await;
    let mut streamed = meta();
    streamed["progressToken"] = json!(9);
    for (id, m) in [(1, meta()), (2, streamed)] {
        let body = request(json!(id), "tools/call", json!({"name": "decorated", "_meta": m}));
        let (status, ct, msgs) = post(addr, &body, &[]).await;
        assert_eq!(status, 200);
        // The answer is the last message: alone as JSON, after the progress as SSE.
        let expected_form = if id == 1 { "application/json" } else { "text/event-stream" };
        assert!(ct.starts_with(expected_form), "{ct}");
        assert_eq!(msgs.len(), id as usize);
        let answer = msgs.last().unwrap();
        assert_eq!(answer["id"], json!(id));
        assert_eq!(
            answer["result"],
            json!({
                "resultType": "complete",
                "_meta": {
                    "trace": "t-1",
                    "io.modelcontextprotocol/serverInfo": {"name": "stateless-test", "version": "2.0.0"},
                },
                "content": [{"type": "text", "text": "{\"n\":3,\"quote\":\"a \\\"b\\\"\"}"}],
                "structuredContent": {"n": 3, "quote": "a \"b\""},
            })
        );
    }
}

#[tokio::test]
async fn logs_and_progress_only_when_asked_and_on_the_request_stream() {
    let (addr, _, _) = start().await;
    let (_, ct, msgs) =
        post(addr, &request(json!(1), "tools/call", json!({"name": "chatty"})), &[]).await;
    assert!(ct.starts_with("application/json"));
    assert_eq!(msgs.len(), 1);
    let mut m = meta();
    m["io.modelcontextprotocol/logLevel"] = json!("debug");
    m["progressToken"] = json!("tok");
    let (_, ct, msgs) =
        post(addr, &request(json!(2), "tools/call", json!({"name": "chatty", "_meta": m})), &[])
            .await;
    assert!(ct.starts_with("text/event-stream"));
    let methods: Vec<_> = msgs.iter().map(|m| m["method"].clone()).collect();
    assert_eq!(
        methods,
        [json!("notifications/message"), json!("notifications/progress"), Value::Null]
    );
    assert_eq!(msgs[2]["result"]["content"][0]["text"], "chatted");
}

/// How many progress notifications the `flood` tool sends: several times what may wait for a
/// slow reader of the response's stream.
const FLOOD: u32 = 500;

#[tokio::test]
async fn a_handler_sending_more_than_the_stream_holds_is_streamed_whole_and_in_order() {
    let (addr, _, _) = start().await;
    let mut m = meta();
    m["progressToken"] = json!("tok");
    let (_, ct, msgs) =
        post(addr, &request(json!(1), "tools/call", json!({"name": "flood", "_meta": m})), &[])
            .await;
    assert!(ct.starts_with("text/event-stream"));
    let progress: Vec<f64> = msgs[..msgs.len() - 1]
        .iter()
        .map(|m| {
            assert_eq!(m["method"], "notifications/progress");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, (0..FLOOD).map(f64::from).collect::<Vec<_>>());
    assert_eq!(msgs.last().unwrap()["result"]["content"][0]["text"], "flooded");
}

#[tokio::test]
async fn x_mcp_header_arguments_are_mirrored_and_checked() {
    let (addr, _, _) = start().await;
    let call = request(
        json!(1),
        "tools/call",
        json!({"name": "regional", "arguments": {"region": "eu-west"}}),
    );
    let (status, _, msgs) = post(addr, &call, &[("mcp-param-region", "eu-west")]).await;
    assert_eq!(status, 200, "{msgs:?}");
    let (status, _, _) =
        post(addr, &call, &[("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?=")]).await;
    assert_eq!(status, 200, "base64 form");
    for bad in ["us-east", "=?base64?ZXUtd2VzdA?=", "=?base64?ZX!!d2VzdA==?="] {
        let (status, _, msgs) = post(addr, &call, &[("mcp-param-region", bad)]).await;
        assert_eq!((status, msgs[0]["error"]["code"].clone()), (400, json!(-32020)), "{bad}");
    }
    let (status, _, _) = post(addr, &call, &[]).await;
    assert_eq!(status, 400, "missing header");
    let no_arg = request(json!(2), "tools/call", json!({"name": "regional", "arguments": {}}));
    let (status, _, _) = post(addr, &no_arg, &[]).await;
    assert_eq!(status, 200, "absent argument: no header expected");
}

#[tokio::test]
async fn server_to_client_requests_fail_fast_in_the_stateless_era() {
    let (addr, _, _) = start().await;
    let (_, _, msgs) =
        post(addr, &request(json!(1), "tools/call", json!({"name": "ask"})), &[]).await;
    assert_eq!(msgs[0]["result"]["content"][0]["text"], "Some(Rpc)");
}

#[tokio::test]
async fn same_id_from_two_clients_at_once_gets_two_results() {
    let (addr, _, _) = start().await;
    let a = request(json!(7), "tools/call", json!({"name": "whoami"}));
    let mut b = a.clone();
    b["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] = json!("other");
    let (ra, rb) = tokio::join!(post(addr, &a, &[]), post(addr, &b, &[]));
    assert_eq!(ra.2[0]["result"]["content"][0]["text"], "sl@2026-07-28");
    assert_eq!(rb.2[0]["result"]["content"][0]["text"], "other@2026-07-28");
}

#[tokio::test]
async fn get_and_delete_without_a_session_are_405() {
    let (addr, _, _) = start().await;
    let c = reqwest::Client::new();
    let r = c
        .get(format!("http://{addr}/mcp"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    let r = c.delete(format!("http://{addr}/mcp")).send().await.unwrap();
    assert_eq!(r.status(), 405);
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_handler() {
    let (addr, _, cancelled) = start().await;
    let body = request(json!(1), "tools/call", json!({"name": "forever"}));
    let call = tokio::spawn(async move { post(addr, &body, &[]).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    call.abort();
    let _ = call.await;
    for _ in 0..50 {
        if cancelled.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the handler was not cancelled");
}

#[tokio::test]
async fn subscriptions_listen_acknowledges_then_delivers_opted_in_changes() {
    let (addr, server, _) = start().await;
    let body = request(
        json!("sub-1"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut resp = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut text = String::new();
    let mut frames: Vec<Value> = Vec::new();
    let mut changed = false;
    while frames.len() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), resp.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
        frames = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| serde_json::from_str(d.trim()).unwrap())
            .collect();
        if frames.len() == 1 && !changed {
            changed = true;
            server.tools_mut().disable("whoami");
        }
    }
    assert_eq!(frames[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(frames[0]["params"]["notifications"], json!({"toolsListChanged": true}));
    assert_eq!(frames[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1");
    assert_eq!(frames[1]["method"], "notifications/tools/list_changed");
    assert_eq!(frames[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1");
}

#[tokio::test]
async fn a_stateless_transport_serves_exactly_once_even_when_shared() {
    let (transport, _output) = StatelessTransport::new(Request::new(1, "tools/list", None));
    let attempts: Vec<_> = (0..16)
        .map(|_| {
            let t = transport.clone();
            tokio::spawn(async move { Engine::new().connect(t).await.map(|_| ()) })
        })
        .collect();
    let mut ok = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(()) => ok += 1,
            Err(e) => assert_eq!(e.kind(), ErrorKind::StatelessTransportReuse),
        }
    }
    assert_eq!(ok, 1);
    // And a started one cannot be started again directly either.
    let (t, _o) = StatelessTransport::new(Request::new(2, "tools/list", None));
    let t2 = t.clone();
    assert!(t.start().await.is_ok());
    assert_eq!(t2.start().await.err().map(|e| e.kind()), Some(ErrorKind::StatelessTransportReuse));
}
