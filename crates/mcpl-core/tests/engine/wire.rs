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

/// An engine that answers `echo` with its params.
fn echo_server() -> Engine {
    let server = Engine::new();
    server.on_request("echo", |_ctx: RequestContext, p: Params| async move {
        Ok(p.unwrap_or_default())
    });
    server
}

/// An echo server and a client engine over a byte pipe: the server, the client, and the
/// client's peer.
async fn echo_pair() -> (Engine, Engine, mcpl_core::engine::Peer) {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let server = echo_server();
    server.connect(LineTransport::new(br, bw)).await.unwrap();
    let client = Engine::new();
    let peer = client.connect(LineTransport::new(ar, aw)).await.unwrap();
    (server, client, peer)
}

#[tokio::test]
async fn two_engines_over_a_byte_pipe() {
    let (server, client, peer) = echo_pair().await;
    let r =
        peer.request("echo", Some(json!({"s": "ü\n\"x\""})), RequestOptions::new()).await.unwrap();
    assert_eq!(r, json!({"s": "ü\n\"x\""}));
    client.close().await.unwrap();
    // The server sees the pipe end and frees itself.
    while server.is_connected() {
        tokio::task::yield_now().await;
    }
}

/// A peer floods notifications of `size` bytes while the handler is stuck: how many lines
/// of `count` it got through within 500 ms, then (the handler released) how many were
/// handled in the end.
async fn flood_a_stuck_handler(engine: Engine, size: usize, count: usize) -> (usize, usize) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(theirs);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let handled = Arc::new(AtomicUsize::new(0));
    let (g, h) = (gate.clone(), handled.clone());
    engine.on_notification("notifications/message", move |_ctx, _p: Params| {
        let (g, h) = (g.clone(), h.clone());
        async move {
            g.acquire().await.unwrap().forget();
            h.fetch_add(1, Ordering::SeqCst);
        }
    });
    engine.connect(LineTransport::new(r, w)).await.unwrap();
    let (_their_r, mut their_w) = tokio::io::split(ours);
    let written = Arc::new(AtomicUsize::new(0));
    let counter = written.clone();
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"{}\"}}}}\n",
        "x".repeat(size)
    );
    let flood = tokio::spawn(async move {
        for _ in 0..count {
            their_w.write_all(line.as_bytes()).await.unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
        }
        their_w
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let through = written.load(Ordering::SeqCst);
    gate.add_permits(count);
    let _their_w = tokio::time::timeout(Duration::from_secs(30), flood).await.unwrap().unwrap();
    for _ in 0..1500 {
        if handled.load(Ordering::SeqCst) == count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (through, handled.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_notification_flood_waits_for_the_handlers_within_a_byte_budget() {
    // 200 notifications of 256 KB (51 MB) against the default 8 MiB budget: the peer is held
    // back after about 32 of them (plus what the pipe holds), and none is lost.
    let (through, handled) = flood_a_stuck_handler(Engine::new(), 256 * 1024, 200).await;
    assert!(through < 40, "{through} notifications of 256 KB taken in while the handler was stuck");
    assert_eq!(handled, 200);
}

#[tokio::test]
async fn the_notification_budget_is_configurable() {
    use mcpl_core::engine::EngineConfig;

    // A 64 KiB budget: 16 KB notifications are held back after about four.
    let engine = Engine::with_config(EngineConfig::new().notification_queue_bytes(64 * 1024));
    let (through, handled) = flood_a_stuck_handler(engine, 16 * 1024, 100).await;
    assert!(through < 16, "{through} notifications of 16 KB taken in while the handler was stuck");
    assert_eq!(handled, 100);
}

/// A client engine on one end of a pipe of `buffer` bytes; the test reads raw lines on the
/// other end (and holds its write half, so the pipe stays open).
async fn raw_peer_of_a_client(
    buffer: usize,
) -> (Engine, mcpl_core::engine::Peer, impl AsyncBufReadExt + Unpin, impl AsyncWriteExt + Unpin) {
    let (ours, theirs) = tokio::io::duplex(buffer);
    let (r, w) = tokio::io::split(theirs);
    let client = Engine::new();
    let peer = client.connect(LineTransport::new(r, w)).await.unwrap();
    let (r, w) = tokio::io::split(ours);
    (client, peer, BufReader::new(r), w)
}

#[tokio::test]
async fn a_request_dropped_halfway_through_its_write_still_goes_out_whole() {
    // A request is written on its caller's task; the pipe holds 64 bytes and nobody reads it
    // yet, so the write is halfway through when the caller gives up.
    let (_client, peer, mut theirs, _w) = raw_peer_of_a_client(64).await;
    let pad = "x".repeat(10_000);
    let call = peer.request("echo", Some(json!({"pad": pad})), RequestOptions::new());
    assert!(tokio::time::timeout(Duration::from_millis(100), call).await.is_err());
    // The whole request arrives, then the cancel of the abandoned request: the stream is
    // whole lines of JSON.
    let request = line(&mut theirs).await;
    assert_eq!(request["method"], "echo");
    assert_eq!(request["params"]["pad"].as_str().map(str::len), Some(10_000));
    let cancel = line(&mut theirs).await;
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
}

#[tokio::test]
async fn closing_waits_for_a_write_in_progress_and_then_closes_the_pipe() {
    let (client, peer, mut theirs, _w) = raw_peer_of_a_client(64).await;
    let pad = "y".repeat(10_000);
    let call = peer.request("echo", Some(json!({"pad": pad})), RequestOptions::new());
    // Dropped halfway, its write goes on in a task of its own.
    assert!(tokio::time::timeout(Duration::from_millis(100), call).await.is_err());
    let reader = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut all = String::new();
        let mut chunk = String::new();
        while tokio::time::timeout(Duration::from_secs(5), theirs.read_line(&mut chunk))
            .await
            .unwrap()
            .unwrap()
            > 0
        {
            all.push_str(&chunk);
            chunk.clear();
        }
        all
    });
    let start = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(10), client.close()).await.unwrap().unwrap();
    // The close waited for the write, which could not end before the reader started.
    assert!(start.elapsed() >= Duration::from_millis(150), "closed after {:?}", start.elapsed());
    // The pipe reached its end (the reader saw it) with every line whole.
    let all = tokio::time::timeout(Duration::from_secs(10), reader).await.unwrap().unwrap();
    let lines: Vec<Value> = all.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["params"]["pad"].as_str().map(str::len), Some(10_000));
    assert!(all.ends_with('\n'));
}

#[tokio::test]
async fn messages_written_whole_and_in_parts_arrive_whole_and_once() {
    // A 256-byte pipe, read as the test goes: small requests go out whole on their callers'
    // tasks, large ones a part at a time, all of them racing for the one stream.
    let (_client, peer, mut theirs, _w) = raw_peer_of_a_client(256).await;
    let size = |i: u64| if i.is_multiple_of(3) { 5_000 } else { 10 };
    let calls: Vec<_> = (0..40u64)
        .map(|i| {
            let (peer, pad) = (peer.clone(), "z".repeat(size(i)));
            tokio::spawn(async move {
                let _ = peer
                    .request("echo", Some(json!({"i": i, "pad": pad})), RequestOptions::new())
                    .await;
            })
        })
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let request =
            tokio::time::timeout(Duration::from_secs(10), line(&mut theirs)).await.unwrap();
        assert_eq!(request["method"], "echo");
        let i = request["params"]["i"].as_u64().unwrap();
        assert_eq!(request["params"]["pad"].as_str().map(str::len), Some(size(i)));
        assert!(seen.insert(i), "request {i} arrived twice");
    }
    for call in calls {
        call.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_comes_at_once_is_never_missed() {
    // The peer answers the moment it reads a request, and the answer is read on another
    // worker: a request must be in the pending table before it is written.
    let (_server, client, peer) = echo_pair().await;
    let options = RequestOptions::new().timeout(Duration::from_secs(5));
    for i in 0..3_000 {
        let r = peer.request("echo", Some(json!({"i": i})), options.clone()).await.unwrap();
        assert_eq!(r["i"], i);
    }
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_answered_can_be_used_again_at_once() {
    // A raw peer reuses one id, sending the next request the moment it reads the answer: an
    // answered request must have left the in-flight table before the answer is written.
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (r, w) = tokio::io::split(theirs);
    let server = echo_server();
    server.connect(LineTransport::new(r, w)).await.unwrap();
    let (r, mut w) = tokio::io::split(ours);
    let mut r = BufReader::new(r);
    for i in 0..2_000 {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"i": i}});
        w.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(5), line(&mut r)).await.unwrap();
        assert_eq!(answer["result"]["i"], i, "{answer}");
    }
}
