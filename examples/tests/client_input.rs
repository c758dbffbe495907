//! The client's handlers for what a server asks (sampling, elicitation, roots) against
//! `mcpl-server`, over a real child process (stdio) and real HTTP sockets, in both eras: in
//! 2025 the server sends real requests; in 2026 it answers input-required results and the
//! client retries through the same handlers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use mcpl_client::transport::{ChildProcess, HttpTransport};
use mcpl_client::{Client, InputRequiredMode, Negotiation};
use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{
    CallToolRequestParams, CallToolResult, CreateMessageResult, ElicitAction, ElicitResult,
    ElicitValue, Role, Root, SamplingMessageContentBlock, TextContent, Tool, ToolSchema,
};
use mcpl_core::{Error, ErrorKind, ProtocolVersion};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Map, json};

/// A client with all three handlers: the form "What is your name?" gets "Ann"; any other form
/// is accepted empty (the SDK fills in the schema's defaults); sampling answers "Paris".
fn client(version: ProtocolVersion) -> Client {
    Client::builder("input-test", "1")
        .with_negotiation(Negotiation::pinned(version))
        .on_elicitation(|form| async move {
            let mut result = ElicitResult::new(ElicitAction::Accept);
            if form.message == "What is your name?" {
                let content = BTreeMap::from([("name".into(), ElicitValue::String("Ann".into()))]);
                result.content = Some(content);
            }
            Ok(result)
        })
        .on_sampling(|_params| async move {
            let text = SamplingMessageContentBlock::Text(TextContent::new("Paris"));
            Ok(CreateMessageResult::new(Role::Assistant, text, "test-model"))
        })
        .on_roots(|| async move { Ok(vec![Root::new("file:///work/a"), Root::new("file:///b")]) })
        .on_url_elicitation(|params| async move {
            assert_eq!(params.url, "https://example.com/login");
            Ok(ElicitResult::new(ElicitAction::Accept))
        })
        .build()
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

async fn start(server: Server) -> SocketAddr {
    let http = StreamableHttp::new(server, HttpConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, http.into_router("/mcp")));
    addr
}

fn http(addr: SocketAddr) -> HttpTransport {
    HttpTransport::new(format!("http://{addr}/mcp"))
}

fn child() -> ChildProcess {
    ChildProcess::new(env!("CARGO_BIN_EXE_input-server"))
}

/// Every input kind, and a two-round exchange with state, through the handlers.
async fn every_input_kind(client: &Client) {
    let call = |name: &'static str| client.call_tool(name, Map::new());
    assert_eq!(text(&call("greet").await.unwrap()), "Hello, Ann!");
    assert_eq!(text(&call("ask_model").await.unwrap()), "test-model said: Paris");
    assert_eq!(text(&call("workspace").await.unwrap()), "file:///work/a,file:///b");
    assert_eq!(text(&call("two_steps").await.unwrap()), "two steps done");
    assert_eq!(text(&call("visit").await.unwrap()), "visit accept");
}

#[tokio::test]
async fn stdio_child_2025_server_requests_reach_the_handlers() {
    let client = client(ProtocolVersion::V2025_11_25);
    client.connect(child()).await.unwrap();
    every_input_kind(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn stdio_child_2026_input_required_results_are_fulfilled_and_retried() {
    let client = client(ProtocolVersion::V2026_07_28);
    let details = client.connect(child()).await.unwrap();
    assert!(details.is_stateless(), "the stateless era over stdio: {details:?}");
    every_input_kind(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn http_2025_session_server_requests_reach_the_handlers() {
    let addr = start(mcpl_examples::input_server()).await;
    let client = client(ProtocolVersion::V2025_11_25);
    client.connect(http(addr)).await.unwrap();
    every_input_kind(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn http_2026_input_required_results_are_fulfilled_and_retried() {
    let addr = start(mcpl_examples::input_server()).await;
    let client = client(ProtocolVersion::V2026_07_28);
    let details = client.connect(http(addr)).await.unwrap();
    assert!(details.is_stateless());
    every_input_kind(&client).await;
}

#[tokio::test]
async fn capabilities_follow_the_registered_handlers() {
    let caps = serde_json::to_value(client(ProtocolVersion::V2025_11_25).capabilities()).unwrap();
    let expected = json!({"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}});
    assert_eq!(caps, expected);
    // Without handlers the client declares nothing, so the server cannot ask: -32021 in
    // both eras.
    let addr = start(mcpl_examples::input_server()).await;
    for (version, transport) in [
        (ProtocolVersion::V2026_07_28, None),
        (ProtocolVersion::V2025_11_25, None),
        (ProtocolVersion::V2025_11_25, Some(child())),
    ] {
        let bare = Client::new("bare", "1").with_negotiation(Negotiation::pinned(version));
        match transport {
            Some(child) => bare.connect(child).await.unwrap(),
            None => bare.connect(http(addr)).await.unwrap(),
        };
        let err = bare.call_tool("greet", Map::new()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredClientCapability, "{version}: {err:?}");
        bare.close().await.unwrap();
    }
}

#[tokio::test]
async fn the_round_cap_hands_back_the_last_input_required_result() {
    let addr = start(mcpl_examples::input_server()).await;
    let client = client(ProtocolVersion::V2026_07_28)
        .with_input_required(InputRequiredMode::Auto { max_rounds: 3 });
    client.connect(http(addr)).await.unwrap();
    match client.call_tool("never_satisfied", Map::new()).await.unwrap_err() {
        Error::InputRequired { rounds, result } => {
            assert_eq!(rounds, 3);
            assert!(result.input_requests.unwrap().contains_key("who"));
        }
        other => panic!("{other:?}"),
    }
    // Below the cap the same client still finishes multi-round calls.
    assert_eq!(text(&client.call_tool("two_steps", Map::new()).await.unwrap()), "two steps done");
}

#[tokio::test]
async fn manual_mode_hands_the_result_to_the_caller_who_retries() {
    let addr = start(mcpl_examples::input_server()).await;
    let client =
        client(ProtocolVersion::V2026_07_28).with_input_required(InputRequiredMode::Manual);
    client.connect(http(addr)).await.unwrap();
    let mut params = CallToolRequestParams::new("two_steps");
    for round in 0..2 {
        let err = client.call_tool_params(params.clone(), RequestOptions::new()).await;
        let Err(Error::InputRequired { rounds: 0, result }) = err else {
            panic!("round {round}: {err:?}")
        };
        // The state is opaque: echoed exactly as it came.
        let state = result.request_state.clone();
        assert!(state.is_some());
        params.input_responses = Some(client.fulfil_input(&result).await.unwrap());
        params.request_state = state;
    }
    let done = client.call_tool_params(params, RequestOptions::new()).await.unwrap();
    assert_eq!(text(&done), "two steps done");
}

#[tokio::test]
async fn mcp_param_headers_are_mirrored_and_base64_encoded() {
    let addr = start(mcpl_examples::input_server()).await;
    let client = client(ProtocolVersion::V2026_07_28);
    client.connect(http(addr)).await.unwrap();
    client.list_tools().await.unwrap();
    // The server checks Mcp-Param-Region against the body (decoding the Base64 form).
    for region in ["eu-west", "Zürich", " padded ", "tab\there"] {
        let args = json!({"region": region}).as_object().unwrap().clone();
        let result = client.call_tool("regional", args).await.unwrap();
        assert_eq!(text(&result), format!("region {region}"));
    }
}

#[tokio::test]
async fn a_header_mismatch_refreshes_the_tool_list_and_retries_once() {
    let plain = Tool::new("route", ToolSchema::object());
    let server = Server::builder("changing", "1")
        .tool(plain, |_ctx, _args| async move { Ok(ToolOutput::text("old")) })
        .build();
    let addr = start(server.clone()).await;
    let client = client(ProtocolVersion::V2026_07_28);
    client.connect(http(addr)).await.unwrap();
    client.list_tools().await.unwrap();
    // The server now annotates `zone`: the client's cached schema has no annotation, so the
    // first call lacks Mcp-Param-Zone and the server answers -32020.
    let annotated = Tool::new(
        "route",
        ToolSchema::object()
            .with_property("zone", json!({"type": "string", "x-mcp-header": "Zone"})),
    );
    server
        .tools_mut()
        .replace(annotated, |_ctx, args| async move {
            Ok(ToolOutput::text(format!("new {}", args["zone"])))
        })
        .unwrap();
    let args = json!({"zone": "z1"}).as_object().unwrap().clone();
    let result = client.call_tool("route", args).await.unwrap();
    assert_eq!(text(&result), r#"new "z1""#);
}
