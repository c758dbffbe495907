//! The engine over real bytes: the line transport on a duplex pipe.

use std::time::Duration;

use mcpl_core::engine::{Engine, RequestContext, RequestOptions};
use mcpl_core::transport::lines::LineTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

type Params = Option<Value>;

/// A server engine on one end of a byte pipe; the test speaks raw lines on the other.
async fn raw_server(
    max: usize,
) -> (Engine, impl AsyncWriteExt + Unpin, impl AsyncBufReadExt + Unpin) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(theirs);
    let server = Engine::new();
    server.on_request("echo", |_ctx: RequestContext, p: Params| async move {
        Ok(p.unwrap_or_default())
    });
    server.connect(LineTransport::new(r, w).max_message_size(max)).await.unwrap();
    let (r, w) = tokio::io::split(ours);
    (server, w, BufReader::new(r))
}

async fn line(reader: &mut (impl AsyncBufReadExt + Unpin)) -> Value {
    let mut s = String::new();
    tokio::time::timeout(Duration::from_secs(5), reader.read_line(&mut s)).await.unwrap().unwrap();
    serde_json::from_str(&s).unwrap()
}

#[tokio::test]
async fn bad_bytes_get_typed_errors_and_the_connection_survives() {
    let (_server, mut w, mut r) = raw_server(1024).await;
    w.write_all(b"{not json\n").await.unwrap();
    let v = line(&mut r).await;
    assert_eq!(v["error"]["code"], -32700);
    assert_eq!(v["id"], Value::Null);

    w.write_all(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}]\n").await.unwrap();
    let v = line(&mut r).await;
    assert_eq!(v["error"]["code"], -32600);
    assert!(v["error"]["message"].as_str().unwrap().contains("batch"));

    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":12}\n").await.unwrap();
    let v = line(&mut r).await;
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], 9);

    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(4096)
    );
    w.write_all(big.as_bytes()).await.unwrap();
    let v = line(&mut r).await;
    assert_eq!(v["error"]["code"], -32600);

    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"echo\",\"params\":{\"ok\":true}}\n")
        .await
        .unwrap();
    let v = line(&mut r).await;
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": 0, "result": {"ok": true}}));
}

#[tokio::test]
async fn two_engines_over_a_byte_pipe() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let server = Engine::new();
    server.on_request("echo", |_ctx: RequestContext, p: Params| async move {
        Ok(p.unwrap_or_default())
    });
    server.connect(LineTransport::new(br, bw)).await.unwrap();
    let client = Engine::new();
    let peer = client.connect(LineTransport::new(ar, aw)).await.unwrap();
    let r =
        peer.request("echo", Some(json!({"s": "ü\n\"x\""})), RequestOptions::new()).await.unwrap();
    assert_eq!(r, json!({"s": "ü\n\"x\""}));
    client.close().await.unwrap();
    // The server sees the pipe end and frees itself.
    while server.is_connected() {
        tokio::task::yield_now().await;
    }
}
