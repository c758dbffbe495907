//! Behind bearer auth, what a request creates is bound to its principal (the token's subject,
//! or its client without one): 2025 sessions, tasks and sealed `requestState`. Another
//! principal finds none of them; handlers see the verified token.

use std::net::SocketAddr;

use futures::future::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema,
};
use mcpl_server::http::auth::{
    AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError,
};
use mcpl_server::http::event_store::InMemoryEventStore;
use mcpl_server::http::session_store::InMemorySessionStore;
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::input::ToolReply;
use mcpl_server::task::TaskOptions;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use mcpl_server::{Context, Server, ToolOutput};
use serde_json::{Value, json};

use crate::support::{Answer, call, initialize, open_session, post, request, serve_app};

struct Tokens;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
        Box::pin(async move {
            match token {
                "alice" => Ok(AccessToken::new(["mcp"]).subject("alice").client_id("app")),
                "alice-admin" => {
                    Ok(AccessToken::new(["mcp", "admin"]).subject("alice").client_id("app"))
                }
                "bob" => Ok(AccessToken::new(["mcp"]).subject("bob").client_id("app")),
                "svc" => Ok(AccessToken::new(["mcp"]).client_id("alice")),
                _ => Err(VerifyError::Invalid("unknown".into())),
            }
        })
    }
}

fn whoami(ctx: &Context) -> String {
    match ctx.access_token() {
        Some(t) => format!(
            "{}/{}/{}",
            t.subject.as_deref().unwrap_or("-"),
            t.client_id.as_deref().unwrap_or("-"),
            t.scopes.join("+")
        ),
        None => "anonymous".to_owned(),
    }
}

fn server() -> Server {
    Server::builder("strict-principals", "1")
        .tool(Tool::new("whoami", ToolSchema::object()), |ctx, _args| async move {
            Ok(ToolOutput::text(whoami(&ctx)))
        })
        .tool(Tool::new("wizard", ToolSchema::object()), |ctx, _args| async move {
            if let Some(state) = ctx.request_state() {
                let name = ctx.elicited("name").and_then(|c| c.get("name")).cloned();
                return Ok::<ToolReply, ErrorObject>(
                    ToolOutput::text(format!("{} {:?}", state["step"], name)).into(),
                );
            }
            let form = ElicitationSchema::default().with_property("name", StringSchema::default());
            let ask = ElicitRequestFormParams::new("name?", form);
            Ok(ctx.input_required().elicit("name", ask).state(json!({"step": 2})).into())
        })
        .task_tool(
            Tool::new("job", ToolSchema::object()),
            TaskOptions::required(),
            |ctx, _a| async move {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
                Ok(ToolOutput::text(whoami(&ctx)))
            },
        )
        .build()
}

fn protected(endpoint: StreamableHttp) -> axum::Router {
    let metadata = ProtectedResourceMetadata::new("http://localhost/mcp")
        .authorization_server("https://as.example.com");
    BearerAuth::new(Tokens, metadata).protect(endpoint.into_router("/mcp"))
}

async fn start() -> SocketAddr {
    serve_app(protected(StreamableHttp::new(server(), HttpConfig::new()))).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A request in session `session` with `token`.
async fn in_session(addr: SocketAddr, session: &str, token: &str, body: &Value) -> Answer {
    let auth = bearer(token);
    post(addr, body, &[("mcp-session-id", session), ("authorization", &auth)]).await
}

fn tool_call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool}})
}

fn text(answer: &Answer) -> Value {
    answer.last()["result"]["content"][0]["text"].clone()
}

#[tokio::test]
async fn a_session_is_unknown_to_another_principal() {
    let addr = start().await;
    let alice = bearer("alice");
    let session = open_session(addr, &[("authorization", &alice)]).await;
    // Alice's requests, with any of her tokens, are served in her session, and her handler
    // sees the token of each request.
    assert_eq!(
        text(&in_session(addr, &session, "alice", &tool_call(1, "whoami")).await),
        "alice/app/mcp"
    );
    let admin = in_session(addr, &session, "alice-admin", &tool_call(2, "whoami")).await;
    assert_eq!(text(&admin), "alice/app/mcp+admin");
    // Bob's (and a client named like her) get 404, as for a session that does not exist.
    for other in ["bob", "svc"] {
        let answer = in_session(addr, &session, other, &tool_call(3, "whoami")).await;
        assert_eq!(answer.status, 404, "{other}: {answer:?}");
        let auth = bearer(other);
        let client = reqwest::Client::new();
        let get = client
            .get(format!("http://{addr}/mcp"))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("authorization", &auth)
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 404, "{other}: GET");
        let delete = client
            .delete(format!("http://{addr}/mcp"))
            .header("mcp-session-id", &session)
            .header("authorization", &auth)
            .send()
            .await
            .unwrap();
        assert_eq!(delete.status(), 404, "{other}: DELETE");
    }
    // The session lives on for Alice.
    assert_eq!(
        text(&in_session(addr, &session, "alice", &tool_call(4, "whoami")).await),
        "alice/app/mcp"
    );
}

#[tokio::test]
async fn a_recorded_session_is_continued_only_by_its_principal() {
    let store = std::sync::Arc::new(InMemorySessionStore::new());
    let endpoint = |store| {
        StreamableHttp::with_stores(
            server(),
            HttpConfig::new(),
            InMemoryEventStore::default(),
            store,
        )
    };
    let first = serve_app(protected(endpoint(store.clone()))).await;
    let second = serve_app(protected(endpoint(store))).await;
    let alice = bearer("alice");
    let session = open_session(first, &[("authorization", &alice)]).await;
    assert_eq!(in_session(second, &session, "bob", &tool_call(1, "whoami")).await.status, 404);
    assert_eq!(
        text(&in_session(second, &session, "alice", &tool_call(2, "whoami")).await),
        "alice/app/mcp"
    );
}

/// A stateless request with `token`.
async fn stateless(addr: SocketAddr, token: &str, body: &Value) -> Value {
    let auth = bearer(token);
    post(addr, body, &[("authorization", &auth)]).await.last().clone()
}

fn with_caps(mut body: Value) -> Value {
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    body
}

#[tokio::test]
async fn a_stateless_handler_sees_the_verified_token() {
    let addr = start().await;
    let reply = stateless(addr, "svc", &call(json!(1), "whoami", json!({}))).await;
    assert_eq!(reply["result"]["content"][0]["text"], "-/alice/mcp");
}

#[tokio::test]
async fn a_task_is_unknown_to_another_principal() {
    let addr = start().await;
    let created = stateless(addr, "alice", &with_caps(call(json!(1), "job", json!({})))).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = with_caps(request(json!(2), "tasks/get", json!({"taskId": id})));
    assert_eq!(stateless(addr, "alice-admin", &get).await["result"]["status"], "working");
    let update =
        with_caps(request(json!(3), "tasks/update", json!({"taskId": id, "inputResponses": {}})));
    let cancel = with_caps(request(json!(4), "tasks/cancel", json!({"taskId": id})));
    for other in ["bob", "svc"] {
        for body in [&get, &update, &cancel] {
            let reply = stateless(addr, other, body).await;
            assert_eq!(reply["error"]["code"], -32602, "{other}: {reply}");
            let message = reply["error"]["message"].as_str().unwrap();
            assert!(message.contains("Task not found"), "{other}: {reply}");
        }
    }
    // Bob's cancel did not reach it.
    assert_eq!(stateless(addr, "alice", &get).await["result"]["status"], "working");
    assert!(stateless(addr, "alice", &cancel).await["result"].is_object());
    assert_eq!(stateless(addr, "alice", &get).await["result"]["status"], "cancelled");
}

#[tokio::test]
async fn a_request_state_does_not_open_for_another_principal() {
    let addr = start().await;
    let first = stateless(addr, "alice", &with_caps(call(json!(1), "wizard", json!({})))).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = |id: u64| {
        let mut body = with_caps(call(json!(id), "wizard", json!({})));
        body["params"]["requestState"] = json!(state);
        body["params"]["inputResponses"] =
            json!({"name": {"action": "accept", "content": {"name": "Alice"}}});
        body
    };
    for other in ["bob", "svc"] {
        let reply = stateless(addr, other, &retry(2)).await;
        assert_eq!(reply["error"]["code"], -32602, "{other}: {reply}");
        assert_eq!(reply["error"]["message"], "invalid requestState", "{other}: {reply}");
    }
    let reply = stateless(addr, "alice-admin", &retry(3)).await;
    assert_eq!(reply["result"]["content"][0]["text"], "2 Some(String(\"Alice\"))", "{reply}");
}

#[tokio::test]
async fn an_unprotected_endpoint_binds_nothing() {
    let addr =
        serve_app(StreamableHttp::new(server(), HttpConfig::new()).into_router("/mcp")).await;
    let session = open_session(addr, &[]).await;
    let answer = post(addr, &tool_call(1, "whoami"), &[("mcp-session-id", &session)]).await;
    assert_eq!(text(&answer), "anonymous");
    let created = post(addr, &with_caps(call(json!(1), "job", json!({}))), &[]).await;
    let id = created.last()["result"]["taskId"].as_str().unwrap().to_owned();
    let get = with_caps(request(json!(2), "tasks/get", json!({"taskId": id})));
    assert_eq!(post(addr, &get, &[]).await.last()["result"]["status"], "working");
}

#[tokio::test]
async fn a_websocket_connection_upgraded_with_a_token_shows_it_to_handlers() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let metadata = ProtectedResourceMetadata::new("http://localhost/ws");
    let app = BearerAuth::new(Tokens, metadata)
        .protect(WebSocketEndpoint::new(server(), WsConfig::new()).into_router("/ws"));
    let addr = serve_app(app).await;
    let mut upgrade = format!("ws://{addr}/ws").into_client_request().unwrap();
    upgrade.headers_mut().insert("authorization", bearer("bob").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(upgrade).await.unwrap();
    let mut init = initialize();
    init["id"] = json!(0);
    for message in [
        init,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        tool_call(1, "whoami"),
    ] {
        ws.send(Message::Text(message.to_string().into())).await.unwrap();
    }
    let answer = loop {
        let frame = tokio::time::timeout(crate::support::WAIT, ws.next()).await.unwrap();
        let Some(Ok(Message::Text(text))) = frame else { continue };
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["id"] == 1 {
            break message;
        }
    };
    assert_eq!(answer["result"]["content"][0]["text"], "bob/app/mcp");
}
