//! Handlers asking the client for input: input-required results over 2026 stateless HTTP, and
//! the very same handlers bridged to real server-to-client requests in a 2025 session.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::engine::{Engine, RequestContext, RequestOptions};
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::transport::lines::LineTransport;
use mcpl_core::types::{
    CreateMessageRequestParams, ElicitRequestFormParams, ElicitValue, ElicitationSchema, Prompt,
    Resource, Role, SamplingContent, SamplingMessage, SamplingMessageContentBlock, StringSchema,
    TextContent, Tool, ToolSchema,
};
use mcpl_core::{ErrorKind, Peer};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::input::{PromptReply, ReadReply, ToolReply};
use mcpl_server::prompt::{PromptArguments, PromptOutput};
use mcpl_server::resource::{ReadRequest, ResourceOutput};
use mcpl_server::tool::Arguments;
use mcpl_server::{Context, Server, ToolOutput};
use serde_json::{Value, json};

// ---- The handlers, written once for both eras. ----

fn form(message: &str, field: &str) -> ElicitRequestFormParams {
    let schema = ElicitationSchema::default()
        .with_property(field, StringSchema::default())
        .with_required(field);
    ElicitRequestFormParams::new(message, schema)
}

fn text(v: &ElicitValue) -> String {
    match v {
        ElicitValue::String(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// Asks for a name, then greets.
async fn greet(ctx: Context, _args: Arguments) -> Result<ToolReply, ErrorObject> {
    match ctx.elicited("user_name").and_then(|c| c.get("name")) {
        Some(name) => Ok(ToolOutput::text(format!("Hello, {}!", text(name))).into()),
        None => Ok(ctx.input_required().elicit("user_name", form("Your name?", "name")).into()),
    }
}

/// Three rounds: a name, then a colour, with a state that changes every round.
async fn survey(ctx: Context, _args: Arguments) -> Result<ToolReply, ErrorObject> {
    let step = ctx.request_state().and_then(|s| s["step"].as_u64()).unwrap_or(0);
    match step {
        0 => Ok(ctx
            .input_required()
            .elicit("name", form("Your name?", "name"))
            .state(json!({"step": 1}))
            .into()),
        1 => {
            let Some(name) = ctx.elicited("name").and_then(|c| c.get("name")).map(text) else {
                return Err(ErrorObject::invalid_params("the name is missing"));
            };
            Ok(ctx
                .input_required()
                .elicit("color", form("Favourite colour?", "color"))
                .state(json!({"step": 2, "name": name}))
                .into())
        }
        _ => {
            let state = ctx.request_state().cloned().unwrap_or_default();
            let name = state["name"].as_str().unwrap_or("?").to_owned();
            let color = ctx.elicited("color").and_then(|c| c.get("color")).map(text);
            let color = color.unwrap_or_else(|| "?".into());
            Ok(ToolOutput::text(format!("{name} likes {color}")).into())
        }
    }
}

fn question() -> CreateMessageRequestParams {
    let message = SamplingMessage::new(
        Role::User,
        SamplingMessageContentBlock::Text(TextContent::new("Capital of France?")),
    );
    CreateMessageRequestParams::new(vec![message], 50)
}

fn sampled_text(content: &SamplingContent) -> String {
    serde_json::to_value(content).unwrap().to_string()
}

/// Elicits when it can, samples otherwise: degrades by capability.
async fn adaptive(ctx: Context, _args: Arguments) -> Result<ToolReply, ErrorObject> {
    if let Some(answer) = ctx.sampling_response("capital_question") {
        return Ok(ToolOutput::text(format!("sampled {}", sampled_text(&answer.content))).into());
    }
    if let Some(c) = ctx.elicited("user_name") {
        return Ok(ToolOutput::text(format!("elicited {:?}", c.get("name"))).into());
    }
    if ctx.supports_elicitation(false) {
        Ok(ctx.input_required().elicit("user_name", form("Your name?", "name")).into())
    } else {
        Ok(ctx.input_required().sample("capital_question", question()).into())
    }
}

/// Asks all three kinds at once, then reports what it got.
async fn everything(ctx: Context, _args: Arguments) -> Result<ToolReply, ErrorObject> {
    let (Some(elicit), Some(sample), Some(roots)) = (
        ctx.elicited("user_name"),
        ctx.sampling_response("capital_question"),
        ctx.roots_response("client_roots"),
    ) else {
        return Ok(ctx
            .input_required()
            .elicit("user_name", form("Your name?", "name"))
            .sample("capital_question", question())
            .list_roots("client_roots")
            .state(json!({"asked": true}))
            .into());
    };
    if ctx.request_state() != Some(&json!({"asked": true})) {
        return Err(ErrorObject::internal("the state did not come back"));
    }
    let roots: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(ToolOutput::text(format!(
        "name={} model={} said={} roots={}",
        elicit.get("name").map(text).unwrap_or_default(),
        sample.model,
        sampled_text(&sample.content),
        roots.join(",")
    ))
    .into())
}

/// Never stops asking.
async fn insatiable(ctx: Context, _args: Arguments) -> Result<ToolReply, ErrorObject> {
    let n = ctx.request_state().and_then(Value::as_u64).unwrap_or(0);
    Ok(ctx.input_required().elicit("again", form("Again?", "x")).state(json!(n + 1)).into())
}

async fn context_prompt(ctx: Context, _args: PromptArguments) -> Result<PromptReply, ErrorObject> {
    match ctx.elicited("user_context").and_then(|c| c.get("context")) {
        Some(context) => Ok(PromptOutput::user_text(format!("Context: {}", text(context))).into()),
        None => {
            Ok(ctx.input_required().elicit("user_context", form("What context?", "context")).into())
        }
    }
}

async fn vault(ctx: Context, req: ReadRequest) -> Result<ReadReply, ErrorObject> {
    match ctx.elicited("password").and_then(|c| c.get("password")) {
        Some(p) if text(p) == "open sesame" => {
            Ok(vec![ResourceOutput::text(req.uri, "gold")].into())
        }
        _ => Ok(ctx.input_required().elicit("password", form("Password?", "password")).into()),
    }
}

fn server(state_ttl: Option<Duration>) -> Server {
    let mut builder = Server::builder("mrtr-test", "1.0.0")
        .tool(Tool::new("greet", ToolSchema::object()), greet)
        .tool(Tool::new("survey", ToolSchema::object()), survey)
        .tool(Tool::new("adaptive", ToolSchema::object()), adaptive)
        .tool(Tool::new("everything", ToolSchema::object()), everything)
        .tool(Tool::new("insatiable", ToolSchema::object()), insatiable)
        // An existing handler, unchanged.
        .tool(Tool::new("plain", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::text("plain"))
        })
        .prompt(Prompt::new("context_prompt"), context_prompt)
        .resource(Resource::new("test://vault", "vault"), vault);
    if let Some(ttl) = state_ttl {
        builder = builder.request_state_ttl(ttl);
    }
    builder.try_build().unwrap()
}

// ---- 2026-07-28: stateless HTTP. ----

async fn start(state_ttl: Option<Duration>) -> SocketAddr {
    let app = StreamableHttp::new(server(state_ttl), HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, app));
    addr
}

const ALL_CAPS: &str = r#"{"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}"#;

/// Posts one 2026 request (with the headers a correct client sends) and returns the JSON-RPC
/// message answering it.
async fn post(addr: SocketAddr, method: &str, mut params: Value, caps: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": serde_json::from_str::<Value>(caps).unwrap(),
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr", "version": "1"}
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut rb = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
        rb = rb.header("mcp-name", name);
    }
    let resp = rb.body(serde_json::to_vec(&body).unwrap()).send().await.unwrap();
    let text = resp.text().await.unwrap();
    let data = text.lines().rev().find_map(|l| l.strip_prefix("data:"));
    serde_json::from_str(data.unwrap_or(&text).trim()).unwrap()
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

#[tokio::test]
async fn a_round_trip_then_complete() {
    let addr = start(None).await;
    let r1 = post(addr, "tools/call", json!({"name": "greet", "arguments": {}}), ALL_CAPS).await;
    let result = &r1["result"];
    assert_eq!(result["resultType"], "input_required", "{r1}");
    assert_eq!(result["inputRequests"]["user_name"]["method"], "elicitation/create");
    assert_eq!(result["inputRequests"]["user_name"]["params"]["message"], "Your name?");
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());

    let params = json!({"name": "greet", "arguments": {},
        "inputResponses": {"user_name": accept(json!({"name": "Alice"})),
                           "unknown_extra_key": accept(json!({"foo": "bar"}))}});
    let r2 = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r2["result"]["resultType"], "complete", "{r2}");
    assert_eq!(r2["result"]["content"][0]["text"], "Hello, Alice!");

    // A missing answer asks again; an invalid one is refused.
    let params = json!({"name": "greet", "inputResponses": {"wrong_key": accept(json!({}))}});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["result"]["resultType"], "input_required");
    let params = json!({"name": "greet", "inputResponses": {"user_name": 12345}});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let params = json!({"name": "greet", "inputResponses": null});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // List methods never answer input_required; plain handlers still work.
    let r = post(addr, "tools/list", json!({}), ALL_CAPS).await;
    assert_eq!(r["result"]["resultType"], "complete");
    let r = post(addr, "tools/call", json!({"name": "plain"}), ALL_CAPS).await;
    assert_eq!(r["result"]["content"][0]["text"], "plain");
}

#[tokio::test]
async fn multi_round_with_an_evolving_state() {
    let addr = start(None).await;
    let r1 = post(addr, "tools/call", json!({"name": "survey"}), ALL_CAPS).await;
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(r1["result"]["inputRequests"]["name"].is_object());

    let params = json!({"name": "survey", "requestState": s1,
        "inputResponses": {"name": accept(json!({"name": "Alice"}))}});
    let r2 = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r2["result"]["resultType"], "input_required", "{r2}");
    let s2 = r2["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(s1, s2);
    assert!(r2["result"]["inputRequests"]["color"].is_object());

    let params = json!({"name": "survey", "requestState": s2,
        "inputResponses": {"color": accept(json!({"color": "blue"}))}});
    let r3 = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r3["result"]["resultType"], "complete", "{r3}");
    assert_eq!(r3["result"]["content"][0]["text"], "Alice likes blue");
}

#[tokio::test]
async fn tampered_or_misbound_state_is_an_error() {
    let addr = start(None).await;
    let r1 = post(addr, "tools/call", json!({"name": "survey"}), ALL_CAPS).await;
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"name": accept(json!({"name": "Alice"}))});

    let params = json!({"name": "survey", "requestState": format!("{s1}-TAMPERED"),
        "inputResponses": answers});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["message"], "invalid requestState");
    assert!(r.get("result").is_none());

    // The state of one tool is no good for another.
    let params = json!({"name": "insatiable", "requestState": s1, "inputResponses": answers});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // Nor is a state forged without the key.
    let params = json!({"name": "survey", "requestState": "eyJ2IjoxfQ.AAAA"});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
}

#[tokio::test]
async fn expired_state_is_an_error() {
    let addr = start(Some(Duration::from_millis(1))).await;
    let r1 = post(addr, "tools/call", json!({"name": "survey"}), ALL_CAPS).await;
    let s1 = r1["result"]["requestState"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let params = json!({"name": "survey", "requestState": s1,
        "inputResponses": {"name": accept(json!({"name": "Alice"}))}});
    let r = post(addr, "tools/call", params, ALL_CAPS).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["data"]["reason"], "requestState has expired");
}

#[tokio::test]
async fn requests_are_gated_by_the_declared_capabilities() {
    let addr = start(None).await;
    let r = post(addr, "tools/call", json!({"name": "adaptive"}), r#"{"sampling": {}}"#).await;
    let requests = r["result"]["inputRequests"].as_object().unwrap();
    assert!(requests.values().all(|q| q["method"] != "elicitation/create"), "{r}");
    assert_eq!(requests["capital_question"]["method"], "sampling/createMessage");
    let params = json!({"name": "adaptive", "inputResponses": {"capital_question":
        {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}}});
    let r = post(addr, "tools/call", params, r#"{"sampling": {}}"#).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");

    // Everything asked of a client that can do none of it: -32021, naming what is missing.
    let r = post(addr, "tools/call", json!({"name": "everything"}), "{}").await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    let required = &r["error"]["data"]["requiredCapabilities"];
    assert!(required["sampling"].is_object() && required["elicitation"].is_object());

    // Only what was declared is asked for.
    let r = post(addr, "tools/call", json!({"name": "everything"}), r#"{"roots": {}}"#).await;
    let requests = r["result"]["inputRequests"].as_object().unwrap();
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["client_roots"]);
}

#[tokio::test]
async fn prompts_can_require_input() {
    let addr = start(None).await;
    let r1 = post(addr, "prompts/get", json!({"name": "context_prompt"}), ALL_CAPS).await;
    assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
    assert_eq!(r1["result"]["inputRequests"]["user_context"]["method"], "elicitation/create");
    let params = json!({"name": "context_prompt",
        "inputResponses": {"user_context": accept(json!({"context": "test context"}))}});
    let r2 = post(addr, "prompts/get", params, ALL_CAPS).await;
    assert_eq!(r2["result"]["resultType"], "complete", "{r2}");
    assert_eq!(r2["result"]["messages"][0]["content"]["text"], "Context: test context");
}

#[tokio::test]
async fn resource_reads_can_require_input_and_retries_are_not_cached() {
    let addr = start(None).await;
    let r1 = post(addr, "resources/read", json!({"uri": "test://vault"}), ALL_CAPS).await;
    assert_eq!(r1["result"]["resultType"], "input_required", "{r1}");
    assert!(r1["result"].get("ttlMs").is_none());
    let params = json!({"uri": "test://vault",
        "inputResponses": {"password": accept(json!({"password": "open sesame"}))}});
    let r2 = post(addr, "resources/read", params, ALL_CAPS).await;
    assert_eq!(r2["result"]["contents"][0]["text"], "gold", "{r2}");
    assert_eq!(
        (&r2["result"]["ttlMs"], &r2["result"]["cacheScope"]),
        (&json!(0), &json!("private"))
    );
}

// ---- Up to 2025-11-25: the same handlers over real server-to-client requests. ----

#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

/// A 2025 client on an in-memory line transport that answers elicitation, sampling and roots
/// requests, initialized by hand with `capabilities`.
async fn client_2025(
    server: &Server,
    capabilities: Value,
    seen: Arc<Seen>,
) -> (mcpl_server::Session, Engine, Peer) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(theirs);
    let session = server.serve(LineTransport::new(r, w)).await.unwrap();
    let engine = Engine::new();
    let s = seen.clone();
    engine.on_request("elicitation/create", move |_ctx: RequestContext, params: Option<Value>| {
        let s = s.clone();
        async move {
            let params = params.unwrap_or_default();
            s.0.lock().unwrap().push(format!("elicit:{}", params["message"]));
            let field = params["requestedSchema"]["required"][0].as_str().unwrap_or("x").to_owned();
            let value = if field == "color" { "blue" } else { "Alice" };
            Ok(json!({"action": "accept", "content": {field: value}}))
        }
    });
    let s = seen.clone();
    engine.on_request("sampling/createMessage", move |_ctx: RequestContext, _params| {
        let s = s.clone();
        async move {
            s.0.lock().unwrap().push("sample".into());
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
                "model": "test-model"}))
        }
    });
    let s = seen.clone();
    engine.on_request("roots/list", move |_ctx: RequestContext, _params| {
        let s = s.clone();
        async move {
            s.0.lock().unwrap().push("roots".into());
            Ok(json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}))
        }
    });
    let (r, w) = tokio::io::split(ours);
    let peer = engine.connect(LineTransport::new(r, w)).await.unwrap();
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "bridge-test", "version": "0"}
    });
    peer.request("initialize", Some(init), RequestOptions::new()).await.unwrap();
    peer.notify("notifications/initialized", None).await.unwrap();
    (session, engine, peer)
}

async fn call(peer: &Peer, tool: &str) -> mcpl_core::Result<Value> {
    let params = json!({"name": tool, "arguments": {}});
    let options = RequestOptions::new().timeout(Duration::from_secs(10));
    peer.request("tools/call", Some(params), options).await
}

#[tokio::test]
async fn a_2025_session_bridges_input_to_real_requests() {
    let server = server(None);
    let seen = Arc::new(Seen::default());
    let caps = serde_json::from_str(ALL_CAPS).unwrap();
    let (_session, _engine, peer) = client_2025(&server, caps, seen.clone()).await;

    let r = call(&peer, "greet").await.unwrap();
    assert_eq!(r["content"][0]["text"], "Hello, Alice!", "{r}");
    assert!(r.get("resultType").is_none(), "2025 results carry no resultType: {r}");

    let r = call(&peer, "survey").await.unwrap();
    assert_eq!(r["content"][0]["text"], "Alice likes blue", "{r}");

    let r = call(&peer, "everything").await.unwrap();
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("name=Alice model=test-model said="), "{text}");
    assert!(text.contains("Paris") && text.ends_with("roots=file:///test/root"), "{text}");

    let r = peer
        .request("prompts/get", Some(json!({"name": "context_prompt"})), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(r["messages"][0]["content"]["text"], "Context: Alice", "{r}");

    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "elicit:\"Your name?\"",
            "elicit:\"Your name?\"",
            "elicit:\"Favourite colour?\"",
            "sample",
            "roots",
            "elicit:\"Your name?\"",
            "elicit:\"What context?\""
        ]
    );
}

#[tokio::test]
async fn a_2025_session_respects_capabilities_and_bounds_the_rounds() {
    let server = server(None);
    let seen = Arc::new(Seen::default());
    let (_session, _engine, peer) =
        client_2025(&server, json!({"sampling": {}}), seen.clone()).await;

    // Degrades to sampling: the client never declared elicitation.
    let r = call(&peer, "adaptive").await.unwrap();
    assert!(r["content"][0]["text"].as_str().unwrap().starts_with("sampled"), "{r}");
    assert_eq!(*seen.0.lock().unwrap(), ["sample"]);

    // Asking only for what the client cannot do: -32021.
    let e = call(&peer, "greet").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::MissingRequiredClientCapability, "{e:?}");

    let seen = Arc::new(Seen::default());
    let caps = serde_json::from_str(ALL_CAPS).unwrap();
    let (_session, _engine, peer) = client_2025(&server, caps, seen.clone()).await;
    let e = call(&peer, "insatiable").await.unwrap_err();
    assert_eq!(e.to_error_object().code.0, -32603, "{e:?}");
    assert_eq!(seen.0.lock().unwrap().len(), mcpl_server::input::MAX_INPUT_ROUNDS);
}

#[tokio::test]
async fn a_client_error_becomes_the_request_error() {
    let server = server(None);
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(theirs);
    let session = server.serve(LineTransport::new(r, w)).await.unwrap();
    let engine = Engine::new();
    engine.on_request("elicitation/create", |_ctx: RequestContext, _params| async {
        Err::<serde_json::Value, _>(ErrorObject::invalid_request("the user walked away"))
    });
    let (r, w) = tokio::io::split(ours);
    let peer = engine.connect(LineTransport::new(r, w)).await.unwrap();
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "c", "version": "0"}});
    peer.request("initialize", Some(init), RequestOptions::new()).await.unwrap();
    peer.notify("notifications/initialized", None).await.unwrap();
    let e = call(&peer, "greet").await.unwrap_err();
    let e = e.to_error_object();
    assert_eq!((e.code.0, e.message.as_str()), (-32600, "Invalid request: the user walked away"));
    drop(session);
}
