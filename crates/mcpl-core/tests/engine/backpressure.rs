//! The write side against a peer that stops reading, over a real TCP socket on loopback: the
//! outgoing queue is bounded (senders wait, the connection stops reading), a write that makes
//! no progress ends the connection after the write timeout, and refusals reach the hook.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpl_core::ErrorKind;
use mcpl_core::engine::{CloseReason, Engine, EngineConfig, Refusal, RequestContext};
use mcpl_core::transport::lines::LineTransport;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

/// The longest any single step may take.
const BOUND: Duration = Duration::from_secs(20);

/// The socket buffers of both ends, small so that a peer that stops reading shows at once
/// (Linux lets loopback buffers grow to tens of megabytes otherwise).
const SOCKET_BUFFER: u32 = 64 * 1024;

/// A server engine with `config` on one end of a TCP connection; the other end is returned.
async fn over_tcp(config: EngineConfig, setup: impl FnOnce(&Engine)) -> (Engine, TcpStream) {
    let socket = TcpSocket::new_v4().unwrap();
    // Accepted sockets inherit the listener's buffer sizes.
    socket.set_recv_buffer_size(SOCKET_BUFFER).unwrap();
    socket.set_send_buffer_size(SOCKET_BUFFER).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(16).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = TcpSocket::new_v4().unwrap();
    client.set_recv_buffer_size(SOCKET_BUFFER).unwrap();
    client.set_send_buffer_size(SOCKET_BUFFER).unwrap();
    let (client, accepted) = tokio::join!(client.connect(addr), listener.accept());
    let (stream, _) = accepted.unwrap();
    let engine = Engine::with_config(config);
    engine.on_request("echo", |_ctx: RequestContext, p: Option<Value>| async move {
        Ok(p.unwrap_or_default())
    });
    setup(&engine);
    let (read, write) = stream.into_split();
    engine.connect(LineTransport::new(read, write)).await.unwrap();
    (engine, client.unwrap())
}

/// Writes `line` to `tcp` over and over without reading anything, until a write makes no
/// progress for a second (the server stopped reading) or `cap` bytes went out. Returns how
/// many bytes went out, and whether the writes stalled.
async fn write_until_stalled(tcp: &mut TcpStream, pad: usize, cap: usize) -> (usize, bool) {
    let mut sent = 0;
    for id in 1.. {
        if sent >= cap {
            break;
        }
        let line = padded_echo(id, pad);
        match tokio::time::timeout(Duration::from_secs(1), tcp.write_all(&line)).await {
            Ok(Ok(())) => sent += line.len(),
            Ok(Err(_)) => return (sent, false),
            Err(_) => return (sent, true),
        }
    }
    (sent, false)
}

/// An `echo` request `id`, padded with `pad` bytes (which the answer repeats).
fn padded_echo(id: u64, pad: usize) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "method": "echo",
        "params": {"pad": "x".repeat(pad)}})
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

#[tokio::test]
async fn a_peer_that_does_not_read_is_not_read_either() {
    let (_engine, mut tcp) = over_tcp(EngineConfig::new(), |_| {}).await;
    // Each request is answered with as much as it sent: with the in-flight limit and the
    // queue bound (256 each) about 8 MB of answers can be owed before the server stops
    // reading; without a bound it reads all 64 MB.
    let cap = 64 * 1024 * 1024;
    let (sent, stalled) =
        tokio::time::timeout(BOUND * 3, write_until_stalled(&mut tcp, 16 * 1024, cap))
            .await
            .expect("writing did not finish");
    assert!(stalled, "the server read {sent} bytes of requests whose answers nobody read");
}

#[tokio::test]
async fn a_handler_sending_to_a_peer_that_does_not_read_waits() {
    static SENT: AtomicUsize = AtomicUsize::new(0);
    let total = 50_000;
    let (_engine, mut tcp) = over_tcp(EngineConfig::new(), |engine| {
        engine.on_request("flood", move |ctx: RequestContext, _p: Option<Value>| async move {
            let pad = "x".repeat(4096);
            for _ in 0..total {
                if ctx
                    .peer()
                    .notify("notifications/message", Some(json!({"data": pad})))
                    .await
                    .is_err()
                {
                    break;
                }
                SENT.fetch_add(1, Ordering::SeqCst);
            }
            Ok(json!({}))
        });
    })
    .await;
    tcp.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"flood\"}\n").await.unwrap();
    // Give the handler time to run far ahead if nothing holds it back (200 MB of
    // notifications take well under that here when queued in memory).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = SENT.load(Ordering::SeqCst);
    assert!(sent > 0, "the handler never ran");
    assert!(sent < total / 2, "{sent} notifications went into the queue of a peer that reads none");
    drop(tcp);
}

#[tokio::test]
async fn large_messages_wait_within_the_byte_budget() {
    static SENT: AtomicUsize = AtomicUsize::new(0);
    let total = 200;
    let config = EngineConfig::new().max_queued_bytes(4 * 1024 * 1024);
    let (_engine, mut tcp) = over_tcp(config, |engine| {
        engine.on_request("flood", move |ctx: RequestContext, _p: Option<Value>| async move {
            // 1 MiB each: 200 of them fit the message bound (256) but not the byte budget.
            let pad = "x".repeat(1024 * 1024);
            for _ in 0..total {
                if ctx
                    .peer()
                    .notify("notifications/message", Some(json!({"data": pad})))
                    .await
                    .is_err()
                {
                    break;
                }
                SENT.fetch_add(1, Ordering::SeqCst);
            }
            Ok(json!({}))
        });
    })
    .await;
    tcp.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"flood\"}\n").await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = SENT.load(Ordering::SeqCst);
    assert!(sent > 0, "the handler never ran");
    // The budget (4), the one being written, and what the socket buffers hold.
    assert!(sent <= 8, "{sent} MiB went into the queue of a peer that reads none");
    drop(tcp);
}

#[tokio::test]
async fn a_write_that_makes_no_progress_ends_the_connection_and_is_refused_once() {
    let refusals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = refusals.clone();
    let config = EngineConfig::new().write_timeout(Some(Duration::from_millis(300)));
    let reasons = Arc::new(std::sync::Mutex::new(Vec::new()));
    let closed = reasons.clone();
    let (engine, mut tcp) = over_tcp(config, |engine| {
        engine.on_refusal(move |refusal: &Refusal| seen.lock().unwrap().push(*refusal));
        engine.on_close(move |reason: &CloseReason| closed.lock().unwrap().push(reason.clone()));
    })
    .await;
    let peer = engine.peer().unwrap();
    let writing = async {
        // The peer writes but never reads; the server stops reading, then gives up on it.
        let _ = write_until_stalled(&mut tcp, 16 * 1024, usize::MAX).await;
    };
    tokio::time::timeout(BOUND, async { tokio::join!(writing, peer.closed()) })
        .await
        .expect("the connection of a peer that reads nothing stayed open");
    let refusals = refusals.lock().unwrap().clone();
    // The write timeout is told once. A peer that floods fast enough may also fill the
    // in-flight table while the write waits (a loaded machine lets it): that is refused too.
    let timeouts = refusals.iter().filter(|r| matches!(r, Refusal::WriteTimeout { .. })).count();
    assert_eq!(timeouts, 1, "write timeout refused once: {refusals:?}");
    assert!(
        refusals.iter().all(|r| matches!(
            r,
            Refusal::WriteTimeout { timeout } if *timeout == Duration::from_millis(300)
        ) || matches!(r, Refusal::InFlightLimit { limit: 256 })),
        "{refusals:?}"
    );
    assert!(!engine.is_connected());
    let reasons = reasons.lock().unwrap().clone();
    match reasons.as_slice() {
        [CloseReason::Failed(e)] => assert_eq!(e.kind(), ErrorKind::WriteTimeout, "{e}"),
        other => panic!("closed for {other:?}"),
    }
}

#[tokio::test]
async fn requests_over_the_in_flight_limit_reach_the_refusal_hook() {
    let refusals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = refusals.clone();
    let config = EngineConfig::new().max_inflight_requests(2);
    let (_engine, mut tcp) = over_tcp(config, |engine| {
        engine.on_refusal(move |refusal: &Refusal| seen.lock().unwrap().push(*refusal));
        engine.on_request("wait", |_ctx: RequestContext, _p: Option<Value>| async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            Ok(json!({}))
        });
    })
    .await;
    for id in 1..=5 {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"wait\"}}\n");
        tcp.write_all(line.as_bytes()).await.unwrap();
    }
    tokio::time::timeout(BOUND, async {
        while refusals.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the refusals did not reach the hook");
    assert!(
        refusals.lock().unwrap().iter().all(|r| *r == Refusal::InFlightLimit { limit: 2 }),
        "{refusals:?}"
    );
}
