//! A panicking handler is answered with `-32603` on every path, and the panic is logged once.

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use mcpl_core::types::{GetPromptResult, Prompt, ResourceTemplate, Tool, ToolSchema};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::resource::ReadResult;
use mcpl_server::task::TaskOptions;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{
    Logs, WAIT, call, open_session, post, request, spawn_logged_server, spawn_server,
};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn server() -> Server {
    Server::builder("strict-panics", "1")
        .tool(Tool::new("boom", ToolSchema::object()), |_ctx, _args| async {
            if true {
                panic!("the tool blew up");
            }
            Ok(ToolOutput::text("unreachable"))
        })
        .tool(Tool::new("fine", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::text("fine"))
        })
        .task_tool(
            Tool::new("boom_task", ToolSchema::object()),
            TaskOptions::required(),
            |_c, _a| async {
                if true {
                    panic!("the task blew up");
                }
                Ok(ToolOutput::text("unreachable"))
            },
        )
        .resource_template(ResourceTemplate::new("boom://{x}", "boom"), |_ctx, _req| async {
            if true {
                panic!("the resource blew up");
            }
            ReadResult::Ok(Vec::new())
        })
        .prompt(Prompt::new("boom"), |_ctx, _args| async {
            if true {
                panic!("the prompt blew up");
            }
            Ok(GetPromptResult::default())
        })
        .build()
}

fn start() -> (SocketAddr, Logs) {
    let endpoint = StreamableHttp::new(server(), HttpConfig::new());
    spawn_logged_server(move |listener| endpoint.serve_at(listener, "/mcp"))
}

fn internal_error(message: &Value, id: Value) {
    assert_eq!(message["id"], id, "{message}");
    assert_eq!(message["error"]["code"], -32603, "{message}");
}

/// Waits until `logs` holds `count` lines with `needle` (logging is asynchronous to the
/// answer only by a few instructions; the wait is a guard).
async fn logged(logs: &Logs, needle: &str, count: usize) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let lines = logs.lines_with(needle);
        if lines.len() >= count || tokio::time::Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_stateless_request_whose_handler_panics_gets_32603_in_json_and_sse() {
    let (addr, logs) = start();
    // JSON: no progress token, no log level.
    let answer = post(addr, &call(json!("j"), "boom", json!({})), &[]).await;
    assert_eq!(answer.status, 200);
    internal_error(answer.last(), json!("j"));
    // SSE: a progress token asks for a stream.
    let mut body = call(json!("s"), "boom", json!({}));
    body["params"]["_meta"]["progressToken"] = json!("p");
    let answer = post(addr, &body, &[]).await;
    assert_eq!(answer.status, 200);
    internal_error(answer.last(), json!("s"));
    // Resources and prompts too.
    let read = request(json!("r"), "resources/read", json!({"uri": "boom://1"}));
    internal_error(post(addr, &read, &[]).await.last(), json!("r"));
    let prompt = request(json!("p"), "prompts/get", json!({"name": "boom"}));
    internal_error(post(addr, &prompt, &[]).await.last(), json!("p"));
    // The server is fine.
    let answer = post(addr, &call(json!(2), "fine", json!({})), &[]).await;
    assert_eq!(answer.last()["result"]["content"][0]["text"], "fine");
    // One ERROR line per panic, with what the handler panicked with.
    let lines = logged(&logs, "panicked", 4).await;
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert!(lines.iter().all(|l| l.contains("ERROR")), "{lines:#?}");
    assert!(lines[0].contains("the tool blew up"), "{lines:#?}");
}

#[tokio::test]
async fn a_session_request_whose_handler_panics_gets_32603() {
    let (addr, logs) = start();
    let session = open_session(addr, &[]).await;
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "boom"}});
    let answer = post(addr, &body, &[("mcp-session-id", &session)]).await;
    internal_error(answer.last(), json!(7));
    let body =
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "fine"}});
    let answer = post(addr, &body, &[("mcp-session-id", &session)]).await;
    assert_eq!(answer.last()["result"]["content"][0]["text"], "fine");
    let lines = logged(&logs, "panicked", 1).await;
    assert_eq!(lines.len(), 1, "{lines:#?}");
}

#[tokio::test]
async fn a_task_whose_handler_panics_fails_with_32603() {
    let (addr, logs) = start();
    let mut body = call(json!(1), "boom_task", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {TASKS: {}}});
    let answer = post(addr, &body, &[]).await;
    let task = answer.last()["result"].clone();
    assert_eq!(task["resultType"], "task", "{task}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    let deadline = tokio::time::Instant::now() + WAIT;
    let status = loop {
        let mut get = request(json!(2), "tasks/get", json!({"taskId": id}));
        get["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"extensions": {TASKS: {}}});
        let result = post(addr, &get, &[]).await.last()["result"].clone();
        if result["status"] != "working" || tokio::time::Instant::now() > deadline {
            break result;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(status["error"]["code"], -32603, "{status}");
    let lines = logged(&logs, "panicked", 1).await;
    assert_eq!(lines.len(), 1, "{lines:#?}");
}

#[tokio::test]
async fn a_stateless_request_over_websocket_whose_handler_panics_gets_32603() {
    let app = WebSocketEndpoint::new(server(), WsConfig::new()).into_router("/ws");
    let addr = spawn_server(move |listener| mcpl_server::ws::serve(listener, app));
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap();
    for (id, tool) in [(1, "boom"), (2, "fine")] {
        let body = call(json!(id), tool, json!({}));
        ws.send(Message::Text(body.to_string().into())).await.unwrap();
        let answer = loop {
            match tokio::time::timeout(WAIT, ws.next()).await.expect("an answer in time") {
                Some(Ok(Message::Text(text))) => {
                    break serde_json::from_str::<Value>(&text).unwrap();
                }
                Some(Ok(_)) => continue,
                other => panic!("the connection ended: {other:?}"),
            }
        };
        if tool == "boom" {
            internal_error(&answer, json!(id));
        } else {
            assert_eq!(answer["result"]["content"][0]["text"], "fine");
        }
    }
}
