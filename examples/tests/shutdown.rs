//! The example servers shut down gracefully on SIGTERM while a client is talking to them: the
//! process exits on its own, with success, in bounded time.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const BOUND: Duration = Duration::from_secs(20);

fn sigterm(child: &Child) {
    let pid = child.id().expect("the child is running");
    let status = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    assert!(status.unwrap().success());
}

async fn exits_successfully(mut child: Child) {
    let status = tokio::time::timeout(BOUND, child.wait())
        .await
        .expect("the server still ran after SIGTERM")
        .unwrap();
    assert!(status.success(), "the server did not shut down gracefully: {status:?}");
}

#[tokio::test]
async fn the_http_example_shuts_down_on_sigterm_with_a_session_open() {
    // A free port, taken back by the server.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_http-server"))
        .env("PORT", port.to_string())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(BOUND, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("listening on") {
                return;
            }
        }
        panic!("the server ended before listening");
    })
    .await
    .unwrap();
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<&str>| {
        let mut request = client
            .post(&url)
            .timeout(BOUND)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let response = post(init, None).await.unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    response.text().await.unwrap();
    let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(ready, Some(&session)).await.unwrap().status(), 202);
    // The session's standalone stream stays open, as a client holding a session does.
    let get = client
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    // Traffic while the signal arrives: every call is answered, or refused, never left hanging.
    let calls = (1..=20).map(|id| {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "forecast", "arguments": {"city": "Oslo"}}});
        let request = post(call, Some(&session));
        async move {
            match request.await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    assert!(status == 200 || status == 503, "{status}");
                    response.text().await.ok();
                }
                Err(e) => assert!(!e.is_timeout(), "a call hung: {e}"),
            }
        }
    });
    sigterm(&child);
    futures::future::join_all(calls).await;
    drop(get);
    exits_successfully(child).await;
}

#[tokio::test]
async fn the_stdio_example_shuts_down_on_sigterm_with_stdin_open() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weather-server"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let reply = tokio::time::timeout(BOUND, stdout.next_line()).await.unwrap().unwrap().unwrap();
    assert!(reply.contains("\"result\""), "{reply}");
    sigterm(&child);
    // stdin stays open: the signal alone ends the server.
    exits_successfully(child).await;
    drop(stdin);
}
