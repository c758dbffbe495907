//! What a client sends is validated: the `notifications` of `subscriptions/listen`, the type of
//! progress tokens, the framing of a chunked body.

use std::net::SocketAddr;

use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::HttpConfig;
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{WAIT, call, open_session, post, raw, request, serve_direct, serve_router};

fn server() -> Server {
    Server::builder("strict-validation", "1")
        .tool(Tool::new("step", ToolSchema::object()), |ctx, _args| async move {
            ctx.progress(1.0, Some(1.0), None).await.ok();
            Ok(ToolOutput::text("stepped"))
        })
        .build()
}

/// The first message of a `subscriptions/listen` answer: its acknowledgement, or its error.
/// Reads only that far (the stream of a listen that was acknowledged stays open).
async fn listen_first(addr: SocketAddr, notifications: Option<Value>) -> Value {
    let mut params = json!({});
    if let Some(notifications) = notifications {
        params["notifications"] = notifications;
    }
    let body = request(json!("l"), "subscriptions/listen", params);
    let mut response = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .timeout(WAIT)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(WAIT, response.chunk()).await.unwrap().unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if !sse {
            continue;
        }
        if let Some(data) =
            text.lines().filter_map(|l| l.strip_prefix("data:")).find(|d| !d.trim().is_empty())
        {
            return serde_json::from_str(data.trim()).unwrap();
        }
    }
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn subscriptions_listen_refuses_notifications_that_are_not_a_filter() {
    let addr = serve_router(server(), HttpConfig::new()).await;
    for bad in [
        None,
        Some(json!("all")),
        Some(json!(42)),
        Some(json!(null)),
        Some(json!(["toolsListChanged"])),
        Some(json!({"toolsListChange": true})),
        Some(json!({"toolsListChanged": "yes"})),
        Some(json!({"resourceSubscriptions": "file:///a"})),
        Some(json!({"resourceSubscriptions": [1]})),
    ] {
        let answer = listen_first(addr, bad.clone()).await;
        assert_eq!(answer["id"], "l", "{bad:?}: {answer}");
        assert_eq!(answer["error"]["code"], -32602, "{bad:?}: {answer}");
    }
    for good in [json!({}), json!({"toolsListChanged": true, "resourceSubscriptions": ["a://b"]})] {
        let answer = listen_first(addr, Some(good.clone())).await;
        assert_eq!(
            answer["method"], "notifications/subscriptions/acknowledged",
            "{good}: {answer}"
        );
    }
}

#[tokio::test]
async fn wrong_typed_progress_tokens_are_refused_in_both_eras() {
    let addr = serve_router(server(), HttpConfig::new()).await;
    let session = open_session(addr, &[]).await;
    for (i, token) in
        [json!(1.5), json!(true), json!(null), json!({"t": 1}), json!([1])].into_iter().enumerate()
    {
        // 2026: the request's `_meta`.
        let mut body = call(json!(i), "step", json!({}));
        body["params"]["_meta"]["progressToken"] = token.clone();
        let answer = post(addr, &body, &[]).await;
        assert_eq!(answer.last()["error"]["code"], -32602, "{token}: {answer:?}");
        assert_eq!(answer.last()["id"], json!(i));
        // 2025: a session's request.
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "step", "_meta": {"progressToken": token}}});
        let answer = post(addr, &body, &[("mcp-session-id", &session)]).await;
        assert_eq!(answer.last()["error"]["code"], -32602, "{token}: {answer:?}");
    }
    // Strings and integers are tokens: progress is sent for them.
    for token in [json!("p-1"), json!(7), json!(-3)] {
        let mut body = call(json!("ok"), "step", json!({}));
        body["params"]["_meta"]["progressToken"] = token.clone();
        let answer = post(addr, &body, &[]).await;
        assert_eq!(answer.messages[0]["params"]["progressToken"], token, "{answer:?}");
        assert_eq!(answer.last()["result"]["content"][0]["text"], "stepped");
    }
}

#[tokio::test]
async fn a_malformed_chunked_body_gets_400_not_413() {
    for addr in [
        serve_router(server(), HttpConfig::new()).await,
        serve_direct(server(), HttpConfig::new()).await,
    ] {
        let head = "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
                    accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        for body in ["zz\r\n{}\r\n0\r\n\r\n", "2\r\n{}XX0\r\n\r\n", "-1\r\n{}\r\n0\r\n\r\n"] {
            let (status, _) = raw(addr, format!("{head}{body}").as_bytes()).await;
            assert_eq!(status, 400, "{body:?}");
        }
        // A well-formed chunked body is read.
        let discover = request(json!(1), "server/discover", json!({})).to_string();
        let body = format!("{:x}\r\n{discover}\r\n0\r\n\r\n", discover.len());
        let head = head.replace(
            "transfer-encoding",
            "mcp-protocol-version: 2026-07-28\r\nmcp-method: server/discover\r\ntransfer-encoding",
        );
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
        let mut reply = vec![0; 64];
        let n = tokio::time::timeout(WAIT, stream.read(&mut reply)).await.unwrap().unwrap();
        assert!(
            reply[..n].starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&reply[..n])
        );
    }
}
