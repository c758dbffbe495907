//! The lifecycle invariants, one named test each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::engine::{CloseReason, Engine, EngineConfig, RequestContext, RequestOptions};
use mcpl_core::jsonrpc::{Message, Notification, Request, RequestId, Response};
use mcpl_core::transport::memory;
use mcpl_core::{Error, ErrorKind};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::{CloseBehavior, failing_start, scripted};

type Params = Option<Value>;

fn echo_server() -> Engine {
    let server = Engine::new();
    server.on_request("echo", |_ctx: RequestContext, p: Params| async move {
        Ok(p.unwrap_or(Value::Null))
    });
    server
}

/// Starts a fresh echo server on a new in-memory pair and returns the client's end.
async fn echo_peer_transport() -> (Engine, memory::MemoryTransport) {
    let server = echo_server();
    let (a, b) = memory::pair();
    server.connect(b).await.unwrap();
    (server, a)
}

#[tokio::test]
async fn i2_connect_while_connected_fails_fast_without_touching_anything() {
    let server = Engine::new();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    server.on_request("slow", move |_ctx: RequestContext, _p: Params| {
        let r = r.clone();
        async move {
            r.notified().await;
            Ok(json!("old connection answered"))
        }
    });
    let (a, b) = memory::pair();
    server.connect(b).await.unwrap();
    let client = Engine::new();
    let peer = client.connect(a).await.unwrap();
    let in_flight = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("slow", None, RequestOptions::new()).await }
    });
    while peer.pending_requests() == 0 {
        tokio::task::yield_now().await;
    }

    let (second, script) = scripted(CloseBehavior::Ok);
    let err = client.connect(second).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyConnected);
    assert!(!script.started.load(Ordering::SeqCst), "the new transport was never started");
    assert!(client.is_connected());
    assert!(!peer.is_closed());

    release.notify_one();
    assert_eq!(in_flight.await.unwrap().unwrap(), json!("old connection answered"));
}

#[tokio::test]
async fn i2_connect_while_connecting_fails_fast() {
    let client = Engine::new();
    let (first, _script) = scripted(CloseBehavior::Ok);
    let gate = Arc::new(Notify::new());
    let g = gate.clone();
    let c = client.clone();
    let connecting = tokio::spawn(async move {
        c.connect_with(first, |_peer| async move {
            g.notified().await;
            Ok(())
        })
        .await
    });
    tokio::task::yield_now().await;
    while !matches!(
        client.connect(scripted(CloseBehavior::Ok).0).await,
        Err(Error::AlreadyConnected)
    ) {
        tokio::task::yield_now().await;
    }
    gate.notify_one();
    connecting.await.unwrap().unwrap();
    assert!(client.is_connected());
}

#[tokio::test]
async fn i3_close_then_connect_on_the_same_instance() {
    let client = Engine::new();
    for round in 0..3 {
        let (_server, transport) = echo_peer_transport().await;
        let peer = client.connect(transport).await.unwrap();
        let r = peer.request("echo", Some(json!({ "round": round })), RequestOptions::new());
        assert_eq!(r.await.unwrap(), json!({ "round": round }));
        client.close().await.unwrap();
        assert!(!client.is_connected());
        assert!(peer.is_closed());
    }
}

#[tokio::test]
async fn i4_close_frees_the_instance_even_if_the_transport_never_signals_closure() {
    // The scripted receiver never ends and its close returns without any closure signal.
    let client = Engine::new();
    let (transport, script) = scripted(CloseBehavior::Ok);
    client.connect(transport).await.unwrap();
    client.close().await.unwrap();
    assert_eq!(script.closes.load(Ordering::SeqCst), 1);
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    let peer = client.connect(transport).await.unwrap();
    assert_eq!(
        peer.request("echo", Some(json!(1)), RequestOptions::new()).await.unwrap(),
        json!(1)
    );
    drop(script);
}

#[tokio::test(start_paused = true)]
async fn i4_close_frees_the_instance_even_if_the_transport_close_hangs() {
    let client = Engine::with_config(EngineConfig::new().close_timeout(Duration::from_millis(200)));
    let (transport, _script) = scripted(CloseBehavior::Hang);
    client.connect(transport).await.unwrap();
    let closing = tokio::spawn({
        let client = client.clone();
        async move { client.close().await }
    });
    tokio::task::yield_now().await;
    // Freed before the transport finished closing.
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    client.connect(transport).await.unwrap();
    let err = closing.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert!(client.is_connected(), "the abandoned close did not touch the new connection");
}

#[tokio::test]
async fn i5_close_frees_the_instance_even_if_the_transport_close_fails() {
    let client = Engine::new();
    let (transport, _script) = scripted(CloseBehavior::Fail);
    client.connect(transport).await.unwrap();
    let err = client.close().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "the close error is still reported");
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    let peer = client.connect(transport).await.unwrap();
    assert_eq!(
        peer.request("echo", Some(json!(2)), RequestOptions::new()).await.unwrap(),
        json!(2)
    );
}

#[tokio::test]
async fn i6_i7_late_events_from_a_replaced_transport_never_touch_the_new_connection() {
    let client = Engine::new();
    let closes = Arc::new(Mutex::new(Vec::<String>::new()));
    let c = closes.clone();
    client.on_close(move |reason| c.lock().unwrap().push(reason.to_string()));
    let notes = Arc::new(Mutex::new(0usize));
    let n = notes.clone();
    client.on_notification("note", move |_ctx, _p: Params| {
        let n = n.clone();
        async move { *n.lock().unwrap() += 1 }
    });

    let (old, old_script) = scripted(CloseBehavior::Ok);
    client.connect(old).await.unwrap();
    client.close().await.unwrap();
    assert_eq!(closes.lock().unwrap().len(), 1);

    // A new connection whose peer never answers, with one request pending as id N.
    let (new, mut new_script) = scripted(CloseBehavior::Ok);
    let peer = client.connect(new).await.unwrap();
    let pending = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("x", None, RequestOptions::new()).await }
    });
    let Message::Request(sent) = new_script.sent.recv().await.unwrap() else { panic!() };

    // The old transport now delivers a response with that id, a notification, an error and EOF.
    let _ =
        old_script.inject.send(Ok(Some(Response::new(sent.id.clone(), json!("misrouted")).into())));
    let _ = old_script.inject.send(Ok(Some(Notification::new("note", None).into())));
    let _ = old_script.inject.send(Err(Error::Io(std::io::Error::other("late failure"))));
    let _ = old_script.inject.send(Ok(None));
    tokio::time::sleep(Duration::from_millis(50)).await;

    assert!(client.is_connected());
    assert!(!peer.is_closed());
    assert_eq!(*notes.lock().unwrap(), 0, "no notification from the old transport");
    assert_eq!(closes.lock().unwrap().len(), 1, "no spurious close callback");
    assert!(!pending.is_finished(), "no misrouted response");

    // The real answer still arrives over the new transport.
    new_script.inject.send(Ok(Some(Response::new(sent.id, json!("right")).into()))).unwrap();
    assert_eq!(pending.await.unwrap().unwrap(), json!("right"));
}

#[tokio::test]
async fn i6_a_replaced_connection_losing_its_transport_does_not_close_the_new_one() {
    let client = Engine::new();
    let (old, old_script) = scripted(CloseBehavior::Ok);
    let old_peer = client.connect(old).await.unwrap();
    client.close().await.unwrap();
    let (_server, transport) = echo_peer_transport().await;
    let peer = client.connect(transport).await.unwrap();
    let _ = old_script.inject.send(Ok(None));
    tokio::task::yield_now().await;
    assert!(old_peer.is_closed());
    assert!(client.is_connected());
    assert_eq!(
        peer.request("echo", Some(json!(3)), RequestOptions::new()).await.unwrap(),
        json!(3)
    );
}

#[tokio::test]
async fn i8_a_connect_failing_at_start_leaves_the_instance_reconnectable() {
    let client = Engine::new();
    let (transport, script) = failing_start();
    let err = client.connect(transport).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert!(script.started.load(Ordering::SeqCst));
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    client.connect(transport).await.unwrap();
}

#[tokio::test]
async fn i8_a_connect_failing_in_setup_leaves_the_instance_reconnectable_and_detached() {
    let client = Engine::new();
    let handled = Arc::new(AtomicBool::new(false));
    let h = handled.clone();
    client.on_request("probe", move |_ctx: RequestContext, _p: Params| {
        h.store(true, Ordering::SeqCst);
        async { Ok(json!({})) }
    });
    // A setup step fails (standing in for a refused handshake or an unsupported version).
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let err = client
        .connect_with(transport, |_peer| async {
            Err::<(), _>(Error::UnsupportedProtocolVersion {
                requested: "x".into(),
                supported: vec![],
            })
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnsupportedProtocolVersion);
    assert!(!client.is_connected());
    assert_eq!(script.closes.load(Ordering::SeqCst), 1, "the failed transport was closed");

    // The failed transport's handlers are detached: a request sent on it is never served.
    let _ = script.inject.send(Ok(Some(Request::new(1, "probe", None).into())));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!handled.load(Ordering::SeqCst));
    assert!(script.sent.try_recv().is_err());

    let (_server, transport) = echo_peer_transport().await;
    let peer = client.connect(transport).await.unwrap();
    assert_eq!(
        peer.request("echo", Some(json!(4)), RequestOptions::new()).await.unwrap(),
        json!(4)
    );
}

#[tokio::test(start_paused = true)]
async fn i8_a_connect_whose_handshake_times_out_leaves_the_instance_reconnectable() {
    let client = Engine::new();
    let (transport, _script) = scripted(CloseBehavior::Ok);
    let err = client
        .connect_with(transport, |peer| async move {
            peer.request("initialize", None, RequestOptions::new().timeout(Duration::from_secs(1)))
                .await
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestTimeout);
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    client.connect(transport).await.unwrap();
}

#[tokio::test]
async fn i8_a_dropped_connect_future_leaves_the_instance_reconnectable() {
    let client = Engine::new();
    let (transport, _script) = scripted(CloseBehavior::Ok);
    let attempt =
        client.connect_with(transport, |_peer| std::future::pending::<mcpl_core::Result<()>>());
    assert!(tokio::time::timeout(Duration::from_millis(10), attempt).await.is_err());
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    client.connect(transport).await.unwrap();
}

#[tokio::test]
async fn i8_close_during_setup_aborts_the_connect() {
    let client = Engine::new();
    let (transport, _script) = scripted(CloseBehavior::Ok);
    let c = client.clone();
    let attempt = tokio::spawn(async move {
        c.connect_with(transport, |peer| async move {
            peer.request("initialize", None, RequestOptions::new()).await
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    client.close().await.unwrap();
    assert_eq!(attempt.await.unwrap().unwrap_err().kind(), ErrorKind::ConnectionClosed);
    assert!(!client.is_connected());
    let (_server, transport) = echo_peer_transport().await;
    client.connect(transport).await.unwrap();
}

#[tokio::test]
async fn i9_handlers_of_a_closed_connection_cannot_send_on_a_later_one() {
    let server = Engine::new();
    let captured = Arc::new(Mutex::new(None::<RequestContext>));
    let c = captured.clone();
    server.on_request("capture", move |ctx: RequestContext, _p: Params| {
        *c.lock().unwrap() = Some(ctx);
        async { Ok(json!("captured")) }
    });
    let (first, mut first_script) = scripted(CloseBehavior::Ok);
    server.connect(first).await.unwrap();
    first_script.inject.send(Ok(Some(Request::new(1, "capture", None).into()))).unwrap();
    assert!(matches!(first_script.sent.recv().await, Some(Message::Response(_))));
    server.close().await.unwrap();

    let (second, mut second_script) = scripted(CloseBehavior::Ok);
    server.connect(second).await.unwrap();
    let old_ctx = captured.lock().unwrap().take().unwrap();
    let err = old_ctx.peer().notify("notifications/message", None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed);
    let err = old_ctx.peer().request("ping", None, RequestOptions::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionClosed);
    assert!(old_ctx.is_cancelled());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(second_script.sent.try_recv().is_err(), "nothing reached the new connection");
}

#[tokio::test]
async fn i12_teardown_runs_the_close_callback_then_cancels_handlers_and_settles_requests() {
    let events = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let handler_cancelled = Arc::new(AtomicBool::new(false));

    // Our engine both runs a handler (for the peer's request) and awaits a pending request.
    let engine = Engine::new();
    let (e, hc) = (events.clone(), handler_cancelled.clone());
    engine.on_request("work", move |ctx: RequestContext, _p: Params| {
        let guard = RecordOnDrop(e.clone(), hc.clone());
        async move {
            // Runs until the engine cancels it, which drops this future (and the guard).
            std::future::pending::<()>().await;
            drop((guard, ctx));
            Ok(json!(null))
        }
    });
    let (e, hc) = (events.clone(), handler_cancelled.clone());
    engine.on_close(move |reason| {
        assert!(matches!(reason, CloseReason::Local));
        assert!(!hc.load(Ordering::SeqCst), "handlers are cancelled after the callback");
        e.lock().unwrap().push("close callback");
    });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let peer = engine.connect(transport).await.unwrap();
    script.inject.send(Ok(Some(Request::new(1, "work", None).into()))).unwrap();
    while peer.inflight_requests() == 0 {
        tokio::task::yield_now().await;
    }
    let e = events.clone();
    let pending = tokio::spawn({
        let peer = peer.clone();
        async move {
            let r = peer.request("slow", None, RequestOptions::new()).await;
            e.lock().unwrap().push("pending settled");
            r
        }
    });
    let Some(Message::Request(_)) = script.sent.recv().await else { panic!() };

    engine.close().await.unwrap();
    assert_eq!(pending.await.unwrap().unwrap_err().kind(), ErrorKind::ConnectionClosed);
    while !handler_cancelled.load(Ordering::SeqCst) {
        tokio::task::yield_now().await;
    }
    let events = events.lock().unwrap();
    assert_eq!(events[0], "close callback");
    assert!(events.contains(&"handler cancelled"));
    assert!(events.contains(&"pending settled"));
    // The cancelled handler's response was never sent.
    assert!(script.sent.try_recv().map(|m| m.id() != Some(&RequestId::Number(1))).unwrap_or(true));
}

struct RecordOnDrop(Arc<Mutex<Vec<&'static str>>>, Arc<AtomicBool>);

impl Drop for RecordOnDrop {
    fn drop(&mut self) {
        self.1.store(true, Ordering::SeqCst);
        self.0.lock().unwrap().push("handler cancelled");
    }
}

#[test]
fn public_types_are_send_and_sync() {
    fn ok<T: Send + Sync>() {}
    ok::<Engine>();
    ok::<mcpl_core::Peer>();
    ok::<RequestContext>();
    ok::<Error>();
    ok::<RequestOptions>();
}
