//! Cache hints (`ttlMs`, `cacheScope`) of list and discover results, on the wire: set per
//! result in the 2026-07-28 era, the endpoint's default otherwise, absent in the 2025 era.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use mcpl_core::types::{Prompt, Resource, ResourceTemplate, Tool, ToolSchema};
use mcpl_server::cache::{CacheHint, CachedResult};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::prompt::PromptOutput;
use mcpl_server::resource::ResourceOutput;
use mcpl_server::{Server, ServerBuilder, ToolOutput};
use serde_json::{Value, json};

fn features() -> ServerBuilder {
    Server::builder("cache-test", "1.0.0")
        .tool(Tool::new("t", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("t")) })
        .resource(Resource::new("mem://r", "r"), |_c, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "r")])
        })
        .resource_template(ResourceTemplate::new("mem://{x}/t", "t"), |_c, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "t")])
        })
        .prompt(Prompt::new("p"), |_c, _a| async { Ok(PromptOutput::user_text("p")) })
}

async fn start(server: Server, config: HttpConfig) -> SocketAddr {
    let app = StreamableHttp::new(server, config).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));
    addr
}

/// The JSON-RPC message a POST answered with: a JSON body, or the last message of an SSE
/// stream that carries an id.
async fn reply(resp: reqwest::Response) -> Value {
    let text = resp.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .rfind(|m| m.get("id").is_some())
            .unwrap_or(Value::Null)
    })
}

/// A 2026-07-28 request's result.
async fn stateless(addr: SocketAddr, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut rb = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = body["params"]["uri"].as_str().or(body["params"]["name"].as_str()) {
        rb = rb.header("mcp-name", name);
    }
    let message = reply(rb.body(body.to_string()).send().await.unwrap()).await;
    assert!(message["result"].is_object(), "{method}: {message}");
    message["result"].clone()
}

fn hint_of(result: &Value) -> (Value, Value) {
    (result["ttlMs"].clone(), result["cacheScope"].clone())
}

#[tokio::test]
async fn hints_set_per_result_reach_the_wire_and_the_rest_use_the_default() {
    let server = features()
        .cache_hint(CachedResult::ToolsList, CacheHint::public(Duration::from_secs(300)))
        .cache_hint(CachedResult::ResourcesList, CacheHint::private(Duration::from_millis(1500)))
        .cache_hint(CachedResult::ResourceTemplatesList, CacheHint::no_reuse())
        .cache_hint(CachedResult::Discover, CacheHint::public(Duration::from_secs(60)))
        .build();
    let addr = start(server, HttpConfig::new().cache_ttl(Duration::from_secs(7))).await;

    let tools = stateless(addr, "tools/list", json!({})).await;
    assert_eq!(hint_of(&tools), (json!(300_000), json!("public")), "{tools}");
    assert_eq!(tools["tools"][0]["name"], "t");
    let resources = stateless(addr, "resources/list", json!({})).await;
    assert_eq!(hint_of(&resources), (json!(1500), json!("private")), "{resources}");
    let templates = stateless(addr, "resources/templates/list", json!({})).await;
    assert_eq!(hint_of(&templates), (json!(0), json!("private")), "{templates}");
    let discover = stateless(addr, "server/discover", json!({})).await;
    assert_eq!(hint_of(&discover), (json!(60_000), json!("public")), "{discover}");
    // No hint for prompts/list: the endpoint's default, public.
    let prompts = stateless(addr, "prompts/list", json!({})).await;
    assert_eq!(hint_of(&prompts), (json!(7000), json!("public")), "{prompts}");
    // Reads keep their own default: private, the endpoint's time to live.
    let read = stateless(addr, "resources/read", json!({"uri": "mem://r"})).await;
    assert_eq!(hint_of(&read), (json!(7000), json!("private")), "{read}");
    // Results that are not cacheable carry no hint.
    let call = stateless(addr, "tools/call", json!({"name": "t"})).await;
    assert!(call.get("ttlMs").is_none() && call.get("cacheScope").is_none(), "{call}");
}

#[tokio::test]
async fn without_hints_every_list_uses_the_endpoint_default() {
    let addr = start(features().build(), HttpConfig::new()).await;
    for method in ["tools/list", "resources/list", "resources/templates/list", "prompts/list"] {
        let result = stateless(addr, method, json!({})).await;
        assert_eq!(hint_of(&result), (json!(0), json!("public")), "{method}: {result}");
    }
}

#[tokio::test]
async fn results_of_2025_sessions_carry_no_cache_members() {
    let server = features()
        .cache_hint(CachedResult::ToolsList, CacheHint::public(Duration::from_secs(300)))
        .cache_hint(CachedResult::ResourcesList, CacheHint::private(Duration::from_secs(1)))
        .cache_hint(CachedResult::ResourceTemplatesList, CacheHint::public(Duration::from_secs(1)))
        .cache_hint(CachedResult::PromptsList, CacheHint::public(Duration::from_secs(1)))
        .build();
    let addr = start(server, HttpConfig::new().cache_ttl(Duration::from_secs(7))).await;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/mcp");
    let post = |body: Value, session: Option<String>| {
        let mut rb = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            rb = rb.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
        }
        rb.body(body.to_string()).send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"},
    }});
    let resp = post(init, None).await.unwrap();
    let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let init = reply(resp).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(note, Some(session.clone())).await.unwrap().status(), 202);
    for (id, method, params) in [
        (1, "tools/list", json!({})),
        (2, "resources/list", json!({})),
        (3, "resources/templates/list", json!({})),
        (4, "prompts/list", json!({})),
        (5, "resources/read", json!({"uri": "mem://r"})),
    ] {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let message = reply(post(body, Some(session.clone())).await.unwrap()).await;
        let result = message["result"].as_object().unwrap_or_else(|| panic!("{message}"));
        for absent in ["ttlMs", "cacheScope", "resultType"] {
            assert!(!result.contains_key(absent), "{method}: {absent} in {message}");
        }
    }
}
