//! Requests, handlers, timeouts, progress and cancellation over an in-memory pair.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::engine::{Engine, ProgressUpdate, RequestContext, RequestOptions};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, Message, Notification, Request, RequestId};
use mcpl_core::transport::memory;
use mcpl_core::{ErrorKind, Peer};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::{CloseBehavior, scripted};

type Params = Option<Value>;

async fn connected(server: &Engine) -> (Engine, Peer) {
    let (a, b) = memory::pair();
    server.connect(b).await.unwrap();
    let client = Engine::new();
    let peer = client.connect(a).await.unwrap();
    (client, peer)
}

#[tokio::test]
async fn concurrent_requests_are_correlated_by_id() {
    let server = Engine::new();
    server.on_request("delay", |_ctx: RequestContext, p: Params| async move {
        let ms = p.as_ref().and_then(|p| p["ms"].as_u64()).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(json!({ "ms": ms }))
    });
    let (_client, peer) = connected(&server).await;
    let calls = (0..20u64).map(|i| {
        let peer = peer.clone();
        async move {
            let ms = (20 - i) * 3;
            let r = peer.request("delay", Some(json!({ "ms": ms })), RequestOptions::new()).await;
            (ms, r.unwrap())
        }
    });
    for (ms, result) in futures::future::join_all(calls).await {
        assert_eq!(result, json!({ "ms": ms }));
    }
}

#[tokio::test]
async fn incoming_requests_are_served_concurrently() {
    let server = Engine::new();
    let gate = Arc::new(tokio::sync::Barrier::new(3));
    let g = gate.clone();
    server.on_request("wait", move |_ctx: RequestContext, _p: Params| {
        let g = g.clone();
        async move {
            // Completes only when three handlers run at the same time.
            g.wait().await;
            Ok(json!("done"))
        }
    });
    let (_client, peer) = connected(&server).await;
    let opts = || RequestOptions::new().timeout(Duration::from_secs(5));
    let (a, b, c) = tokio::join!(
        peer.request("wait", None, opts()),
        peer.request("wait", None, opts()),
        peer.request("wait", None, opts()),
    );
    assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (json!("done"), json!("done"), json!("done")));
}

#[tokio::test]
async fn custom_methods_and_unknown_methods() {
    let server = Engine::new();
    server.on_request("mcpl/featureSets/update", |_ctx: RequestContext, p: Params| async move {
        Ok(json!({ "echo": p }))
    });
    let (_client, peer) = connected(&server).await;
    let ok = peer.request("mcpl/featureSets/update", Some(json!({"a": 1})), RequestOptions::new());
    assert_eq!(ok.await.unwrap(), json!({"echo": {"a": 1}}));
    let err = peer.request("no/such/method", None, RequestOptions::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Rpc);
    assert_eq!(err.rpc_error().unwrap().code, ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn fallback_handler_serves_unregistered_methods() {
    let server = Engine::new();
    server.on_any_request(|ctx: RequestContext, _p: Params| async move {
        Ok(json!({ "method": ctx.method() }))
    });
    let (_client, peer) = connected(&server).await;
    let r = peer.request("anything/at/all", None, RequestOptions::new()).await.unwrap();
    assert_eq!(r, json!({"method": "anything/at/all"}));
}

#[tokio::test]
async fn handler_errors_reach_the_caller_typed() {
    let server = Engine::new();
    server.on_request("fail", |_ctx: RequestContext, _p: Params| async move {
        Err::<Value, _>(
            ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "no")
                .with_data(json!({"requested": "x", "supported": ["2025-11-25"]})),
        )
    });
    let (_client, peer) = connected(&server).await;
    let err = peer.request("fail", None, RequestOptions::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnsupportedProtocolVersion);
}

/// Sets its flag when dropped: a cancelled handler's future is dropped at its next await.
pub(crate) struct SetOnDrop(pub(crate) Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn never_answers(server: &Engine, cancelled: Arc<AtomicBool>) {
    server.on_request("hang", move |_ctx: RequestContext, _p: Params| {
        let guard = SetOnDrop(cancelled.clone());
        async move {
            std::future::pending::<()>().await;
            drop(guard);
            Ok(json!("unreachable"))
        }
    });
}

#[tokio::test(start_paused = true)]
async fn timeout_fails_the_request_and_cancels_the_handler() {
    let server = Engine::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    never_answers(&server, cancelled.clone());
    let (_client, peer) = connected(&server).await;
    let err = peer
        .request("hang", None, RequestOptions::new().timeout(Duration::from_millis(50)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestTimeout);
    assert_eq!(peer.pending_requests(), 0);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(cancelled.load(Ordering::SeqCst), "the server's handler saw notifications/cancelled");
}

#[tokio::test(start_paused = true)]
async fn default_timeout_is_sixty_seconds() {
    let server = Engine::new();
    never_answers(&server, Arc::new(AtomicBool::new(false)));
    let (_client, peer) = connected(&server).await;
    let start = tokio::time::Instant::now();
    let err = peer.request("hang", None, RequestOptions::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestTimeout);
    assert_eq!(start.elapsed().as_secs(), 60);
}

fn slow_with_progress(server: &Engine) {
    server.on_request("slow", |ctx: RequestContext, _p: Params| async move {
        for i in 1..=10 {
            tokio::time::sleep(Duration::from_millis(30)).await;
            ctx.progress(i as f64, Some(10.0), Some(&format!("step {i}"))).await.unwrap();
        }
        Ok(json!("finished"))
    });
}

#[tokio::test(start_paused = true)]
async fn progress_is_routed_to_the_caller_and_resets_the_timeout() {
    let server = Engine::new();
    slow_with_progress(&server);
    let (_client, peer) = connected(&server).await;
    let seen = Arc::new(Mutex::new(Vec::<ProgressUpdate>::new()));
    let s = seen.clone();
    let opts = RequestOptions::new()
        .timeout(Duration::from_millis(50))
        .reset_timeout_on_progress(true)
        .on_progress(move |p| s.lock().unwrap().push(p));
    assert_eq!(peer.request("slow", None, opts).await.unwrap(), json!("finished"));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 10);
    assert_eq!(seen[0].message.as_deref(), Some("step 1"));
    assert!(seen.windows(2).all(|w| w[0].progress < w[1].progress));
    assert_eq!(seen[9].total, Some(10.0));
}

#[tokio::test(start_paused = true)]
async fn without_reset_progress_does_not_extend_the_timeout() {
    let server = Engine::new();
    slow_with_progress(&server);
    let (_client, peer) = connected(&server).await;
    let opts = RequestOptions::new().timeout(Duration::from_millis(50)).on_progress(|_| {});
    let err = peer.request("slow", None, opts).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestTimeout);
}

#[tokio::test(start_paused = true)]
async fn max_total_timeout_caps_progress_resets() {
    let server = Engine::new();
    slow_with_progress(&server);
    let (_client, peer) = connected(&server).await;
    let start = tokio::time::Instant::now();
    let opts = RequestOptions::new()
        .timeout(Duration::from_millis(50))
        .reset_timeout_on_progress(true)
        .max_total_timeout(Duration::from_millis(100))
        .on_progress(|_| {});
    let err = peer.request("slow", None, opts).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestTimeout);
    assert_eq!(start.elapsed(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_request_future_sends_cancelled() {
    let server = Engine::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    never_answers(&server, cancelled.clone());
    let (_client, peer) = connected(&server).await;
    let task = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("hang", None, RequestOptions::new()).await }
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(peer.pending_requests(), 1);
    task.abort();
    let _ = task.await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(peer.pending_requests(), 0);
    assert!(cancelled.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn cancellation_token_aborts_the_request() {
    let server = Engine::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    never_answers(&server, cancelled.clone());
    let (_client, peer) = connected(&server).await;
    let token = tokio_util_token();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        t.cancel();
    });
    let err = peer.request("hang", None, RequestOptions::new().cancel_on(token)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(cancelled.load(Ordering::SeqCst));
}

fn tokio_util_token() -> tokio_util::sync::CancellationToken {
    tokio_util::sync::CancellationToken::new()
}

#[tokio::test(start_paused = true)]
async fn incoming_cancel_stops_the_handler_and_no_response_is_sent() {
    let server = Engine::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    never_answers(&server, cancelled.clone());
    server.on_request("ping", |_ctx: RequestContext, _p: Params| async move { Ok(json!({})) });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let peer = server.connect(transport).await.unwrap();
    let send = |m: Message| script.inject.send(Ok(Some(m))).unwrap();
    send(Request::new(7, "hang", None).into());
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(peer.inflight_requests(), 1);
    send(Notification::new("notifications/cancelled", Some(json!({"requestId": 7}))).into());
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(cancelled.load(Ordering::SeqCst));
    assert_eq!(peer.inflight_requests(), 0);
    send(Request::new(8, "ping", None).into());
    // The only thing the server ever sends is the answer to the ping.
    let first = script.sent.recv().await.unwrap();
    assert_eq!(first.id(), Some(&RequestId::Number(8)));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(script.sent.try_recv().is_err());
}

#[tokio::test]
async fn duplicate_in_flight_id_is_refused() {
    let server = Engine::new();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    server.on_request("block", move |_ctx: RequestContext, _p: Params| {
        let r = r.clone();
        async move {
            r.notified().await;
            Ok(json!("released"))
        }
    });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    server.connect(transport).await.unwrap();
    script.inject.send(Ok(Some(Request::new("dup", "block", None).into()))).unwrap();
    script.inject.send(Ok(Some(Request::new("dup", "block", None).into()))).unwrap();
    let Message::Error(e) = script.sent.recv().await.unwrap() else { panic!("expected an error") };
    assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
    release.notify_one();
    let Message::Response(r) = script.sent.recv().await.unwrap() else {
        panic!("expected a result")
    };
    assert_eq!(r.result, json!("released"));
}

#[tokio::test]
async fn shutdown_settles_every_pending_request_with_connection_closed() {
    let server = Engine::new();
    never_answers(&server, Arc::new(AtomicBool::new(false)));
    let (client, peer) = connected(&server).await;
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("hang", None, RequestOptions::new()).await })
        })
        .collect();
    while peer.pending_requests() < 5 {
        tokio::task::yield_now().await;
    }
    client.close().await.unwrap();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap_err().kind(), ErrorKind::ConnectionClosed);
    }
}

#[tokio::test]
async fn peer_closing_settles_pending_and_frees_the_engine() {
    let server = Engine::new();
    never_answers(&server, Arc::new(AtomicBool::new(false)));
    let (client, peer) = connected(&server).await;
    let call = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request("hang", None, RequestOptions::new()).await }
    });
    while peer.pending_requests() < 1 {
        tokio::task::yield_now().await;
    }
    server.close().await.unwrap();
    assert_eq!(call.await.unwrap().unwrap_err().kind(), ErrorKind::ConnectionClosed);
    peer.closed().await;
    while client.is_connected() {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn notifications_are_delivered_in_order() {
    let server = Engine::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let (s, c) = (seen.clone(), count.clone());
    server.on_notification("note", move |_ctx, p: Params| {
        let (s, c) = (s.clone(), c.clone());
        async move {
            // Handlers that yield still see notifications one at a time.
            tokio::task::yield_now().await;
            s.lock().unwrap().push(p.unwrap()["n"].as_u64().unwrap());
            c.fetch_add(1, Ordering::SeqCst);
        }
    });
    let (_client, peer) = connected(&server).await;
    for n in 0..100 {
        peer.notify("note", Some(json!({ "n": n }))).await.unwrap();
    }
    while count.load(Ordering::SeqCst) < 100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(*seen.lock().unwrap(), (0..100).collect::<Vec<_>>());
}

#[tokio::test]
async fn messages_sent_while_serving_a_request_relate_to_it() {
    let server = Engine::new();
    server.on_request("work", |ctx: RequestContext, _p: Params| async move {
        ctx.peer().notify("notifications/message", None).await.unwrap();
        Ok(json!("done"))
    });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let peer = server.connect(transport).await.unwrap();
    script.inject.send(Ok(Some(Request::new("r1", "work", None).into()))).unwrap();
    let note = script.sent.recv().await.unwrap();
    assert_eq!(note.method(), Some("notifications/message"));
    assert_eq!(script.related.recv().await.unwrap(), Some(RequestId::from("r1")));
    let response = script.sent.recv().await.unwrap();
    assert_eq!(response.id(), Some(&RequestId::from("r1")));
    assert_eq!(script.related.recv().await.unwrap(), Some(RequestId::from("r1")));
    peer.notify("unrelated", None).await.unwrap();
    script.sent.recv().await.unwrap();
    assert_eq!(script.related.recv().await.unwrap(), None);
}

#[tokio::test]
async fn a_panicking_handler_answers_internal_error() {
    let server = Engine::new();
    server.on_request("boom", |_ctx: RequestContext, _p: Params| async move {
        if true {
            panic!("handler bug");
        }
        Ok(json!(null))
    });
    let (_client, peer) = connected(&server).await;
    let err = peer.request("boom", None, RequestOptions::new()).await.unwrap_err();
    assert_eq!(err.rpc_error().unwrap().code, ErrorCode::INTERNAL_ERROR);
    // The connection keeps serving.
    let err = peer.request("nothing", None, RequestOptions::new()).await.unwrap_err();
    assert_eq!(err.rpc_error().unwrap().code, ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn serve_request_runs_one_request_inline_without_a_connection() {
    let engine = Engine::new();
    engine.on_request("work", |ctx: RequestContext, _p: Params| async move {
        ctx.progress(1.0, None, None).await.unwrap();
        let asked = ctx.peer().request("roots/list", None, RequestOptions::new()).await;
        Ok(json!({ "asked": asked.unwrap_err().rpc_error().unwrap().code.0 }))
    });
    // Many at once: the engine's connection slot is not involved.
    let runs = (0..8).map(|i| {
        let engine = engine.clone();
        async move {
            let (transport, mut script) = scripted(CloseBehavior::Ok);
            let (sender, _receiver) = mcpl_core::Transport::start(transport).await.unwrap();
            let params = json!({"_meta": {"progressToken": i}});
            engine.serve_request(Request::new(i, "work", Some(params)), sender).await.unwrap();
            let progress = script.sent.recv().await.unwrap();
            assert_eq!(progress.method(), Some("notifications/progress"));
            let Message::Response(r) = script.sent.recv().await.unwrap() else { panic!() };
            assert_eq!(r.id, RequestId::Number(i));
            assert_eq!(r.result, json!({"asked": -32601}));
        }
    });
    futures::future::join_all(runs).await;
    assert!(!engine.is_connected());
}

#[tokio::test]
async fn dropping_serve_request_cancels_the_handler() {
    let engine = Engine::new();
    let cancelled = Arc::new(AtomicBool::new(false));
    never_answers(&engine, cancelled.clone());
    let (transport, _script) = scripted(CloseBehavior::Ok);
    let (sender, _receiver) = mcpl_core::Transport::start(transport).await.unwrap();
    let serving = engine.serve_request(Request::new(1, "hang", None), sender);
    assert!(tokio::time::timeout(Duration::from_millis(20), serving).await.is_err());
    assert!(cancelled.load(Ordering::SeqCst));
}

#[tokio::test]
async fn related_notifications_reach_their_request_in_order_before_it_resolves() {
    let server = Engine::new();
    server.on_request("stream", |ctx: RequestContext, _p: Params| async move {
        for i in 0..50 {
            let chunk = json!({ "requestId": ctx.id(), "index": i });
            ctx.peer().notify("chunk", Some(chunk)).await.unwrap();
        }
        // A notification naming another request goes to the handlers.
        let stray = json!({ "requestId": 999_999, "index": -1 });
        ctx.peer().notify("chunk", Some(stray)).await.unwrap();
        Ok(json!("done"))
    });
    let (client, peer) = connected(&server).await;
    let unrelated = Arc::new(Mutex::new(Vec::new()));
    let u = unrelated.clone();
    client.on_notification("chunk", move |_ctx, p: Params| {
        u.lock().unwrap().push(p.unwrap()["index"].clone());
        async {}
    });
    for _ in 0..10 {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let options = RequestOptions::new().on_related_notification("chunk", move |p| {
            g.lock().unwrap().push(p["index"].as_i64().unwrap());
        });
        assert_eq!(peer.request("stream", None, options).await.unwrap(), json!("done"));
        assert_eq!(*got.lock().unwrap(), (0..50).collect::<Vec<i64>>());
    }
    // Only the stray ones reached the handler.
    tokio::time::timeout(Duration::from_secs(10), async {
        while unrelated.lock().unwrap().len() < 10 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    assert!(unrelated.lock().unwrap().iter().all(|i| *i == json!(-1)));
}

#[tokio::test]
async fn after_answer_runs_once_the_response_is_queued() {
    use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
    let server = Engine::new();
    server.on_request("hello", |ctx: RequestContext, _p: Params| async move {
        let peer = ctx.peer().unrelated();
        assert!(ctx.after_answer(move || {
            tokio::spawn(async move { peer.notify("after", None).await });
        }));
        Ok(json!("answered"))
    });
    let (a, b) = memory::pair();
    server.connect(b).await.unwrap();
    let (mut tx, mut rx) = a.start().await.unwrap();
    for id in 1..=20 {
        let request = Request::new(RequestId::Number(id), "hello", None);
        tx.send(request.into()).await.unwrap();
        // The response first, then what after_answer sent.
        let first = rx.recv().await.unwrap().unwrap();
        assert!(
            matches!(first, Message::Response(ref r) if r.id == RequestId::Number(id)),
            "{first:?}"
        );
        let second = rx.recv().await.unwrap().unwrap();
        assert!(
            matches!(second, Message::Notification(ref n) if n.method == "after"),
            "{second:?}"
        );
    }
}

#[tokio::test]
async fn a_cancelled_requests_context_sends_nothing_more() {
    let server = Engine::new();
    let kept: Arc<Mutex<Option<RequestContext>>> = Arc::default();
    let started = Arc::new(Notify::new());
    let (k, s) = (kept.clone(), started.clone());
    server.on_request("hang", move |ctx: RequestContext, _p: Params| {
        // A clone of the context outlives the handler, as in a sub-task.
        *k.lock().unwrap() = Some(ctx.clone());
        s.notify_one();
        async move {
            ctx.cancelled().await;
            Ok(json!({}))
        }
    });
    server.on_request("ping", |_ctx: RequestContext, _p: Params| async move { Ok(json!({})) });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let peer = server.connect(transport).await.unwrap();
    let send = |m: Message| script.inject.send(Ok(Some(m))).unwrap();
    let meta = json!({"_meta": {"progressToken": "p-1"}});
    send(Request::new(7, "hang", Some(meta)).into());
    tokio::time::timeout(Duration::from_secs(10), started.notified()).await.unwrap();
    let ctx = kept.lock().unwrap().clone().unwrap();
    send(Notification::new("notifications/cancelled", Some(json!({"requestId": 7}))).into());
    tokio::time::timeout(Duration::from_secs(10), ctx.cancelled()).await.unwrap();

    // Notifications, progress and requests from the cancelled context fail with `Cancelled`.
    let e = ctx.peer().notify("notifications/message", Some(json!({}))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    let e = ctx.progress(0.5, None, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    let options = RequestOptions::new().timeout(Duration::from_secs(10));
    let e = ctx.peer().clone().request("sampling/createMessage", None, options).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert_eq!(peer.pending_requests(), 0);
    // Nothing of it reached the wire: the next message is the answer to a later ping.
    send(Request::new(8, "ping", None).into());
    let first = tokio::time::timeout(Duration::from_secs(10), script.sent.recv()).await.unwrap();
    assert_eq!(first.unwrap().id(), Some(&RequestId::Number(8)));
    // Messages meant to outlive the request still go out, unrelated to it.
    ctx.peer().unrelated().notify("notifications/message", None).await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), script.sent.recv()).await.unwrap();
    assert!(matches!(next, Some(Message::Notification(n)) if n.method == "notifications/message"));
}

#[tokio::test]
async fn a_request_sent_for_a_request_ends_when_that_request_is_cancelled() {
    let server = Engine::new();
    let (tx, mut outcome) = tokio::sync::mpsc::unbounded_channel();
    server.on_request("ask", move |ctx: RequestContext, _p: Params| {
        let tx = tx.clone();
        // A sub-task asks the peer something on the request's behalf.
        let peer = ctx.peer().clone();
        tokio::spawn(async move {
            let options = RequestOptions::new().timeout(Duration::from_secs(30));
            let _ = tx.send(peer.request("elicitation/create", None, options).await);
        });
        async move {
            ctx.cancelled().await;
            Ok(json!({}))
        }
    });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    server.connect(transport).await.unwrap();
    script.inject.send(Ok(Some(Request::new(3, "ask", None).into()))).unwrap();
    let wait = Duration::from_secs(10);
    let asked = tokio::time::timeout(wait, script.sent.recv()).await.unwrap().unwrap();
    let Message::Request(asked) = asked else { panic!("expected a request, got {asked:?}") };
    let cancel = Notification::new("notifications/cancelled", Some(json!({"requestId": 3})));
    script.inject.send(Ok(Some(cancel.into()))).unwrap();
    let e = tokio::time::timeout(wait, outcome.recv()).await.unwrap().unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    // The peer is told the request it was asked is cancelled.
    let told = tokio::time::timeout(wait, script.sent.recv()).await.unwrap().unwrap();
    let Message::Notification(told) = told else { panic!("expected a notification, got {told:?}") };
    assert_eq!(told.method, "notifications/cancelled");
    assert_eq!(told.params.unwrap()["requestId"], json!(asked.id));
}

/// A request the transport failed settles with the transport's typed error, not a JSON-RPC
/// error; other events reach the hook, with the connection going on.
#[tokio::test]
async fn transport_events_settle_requests_and_reach_the_hook() {
    use mcpl_core::transport::TransportEvent;
    use mcpl_core::types::InitializeResult;
    let client = Engine::new();
    let (renewed_tx, mut renewed) = tokio::sync::mpsc::unbounded_channel();
    client.on_transport_event(move |_peer, event| {
        if let TransportEvent::SessionRenewed(result) = event {
            renewed_tx.send(result.server_info.name.clone()).unwrap();
        }
    });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let peer = client.connect(transport).await.unwrap();
    let call = {
        let peer = peer.clone();
        tokio::spawn(async move { peer.request("tools/list", None, RequestOptions::new()).await })
    };
    let sent = tokio::time::timeout(Duration::from_secs(10), script.sent.recv()).await.unwrap();
    let id = sent.unwrap().id().cloned().unwrap();
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    let error = mcpl_core::Error::Connect { endpoint: "http://x".into(), source: refused.into() };
    script.events.send(TransportEvent::RequestFailed { id, error }).unwrap();
    let failed = tokio::time::timeout(Duration::from_secs(10), call).await.unwrap().unwrap();
    assert_eq!(failed.unwrap_err().kind(), ErrorKind::Connect);
    let result: InitializeResult = serde_json::from_value(json!({"protocolVersion": "2025-11-25",
        "capabilities": {}, "serverInfo": {"name": "renewed", "version": "2"}}))
    .unwrap();
    script.events.send(TransportEvent::SessionRenewed(Box::new(result))).unwrap();
    let name = tokio::time::timeout(Duration::from_secs(10), renewed.recv()).await.unwrap();
    assert_eq!(name.as_deref(), Some("renewed"));
    assert!(client.is_connected());
}

/// What a handler hands its sub-tasks: its context and its cancellation token.
type Handed = (RequestContext, mcpl_core::engine::CancellationToken);

/// A handler that hands its context and token out, then never answers.
fn hands_out(server: &Engine, handed: tokio::sync::mpsc::UnboundedSender<Handed>) {
    server.on_request("hand", move |ctx: RequestContext, _p: Params| {
        let _ = handed.send((ctx.clone(), ctx.cancellation_token()));
        std::future::pending::<Result<Value, ErrorObject>>()
    });
}

async fn observes_cancel((ctx, token): Handed) {
    tokio::time::timeout(Duration::from_secs(5), async {
        token.cancelled().await;
        ctx.cancelled().await;
    })
    .await
    .expect("the token and the context see the cancel");
    assert!(ctx.is_cancelled());
}

#[tokio::test]
async fn what_a_handler_hands_its_sub_tasks_sees_the_peers_cancel_and_the_close() {
    let server = Engine::new();
    let (handed_tx, mut handed) = tokio::sync::mpsc::unbounded_channel();
    hands_out(&server, handed_tx);
    let (transport, script) = scripted(CloseBehavior::Ok);
    server.connect(transport).await.unwrap();
    let send = |m: Message| script.inject.send(Ok(Some(m))).unwrap();
    // Cancelled by the peer: only that request.
    send(Request::new(1, "hand", None).into());
    send(Request::new(2, "hand", None).into());
    let (first, second) = (handed.recv().await.unwrap(), handed.recv().await.unwrap());
    assert!(!first.0.is_cancelled() && !first.1.is_cancelled());
    send(Notification::new("notifications/cancelled", Some(json!({"requestId": 1}))).into());
    observes_cancel(first).await;
    assert!(!second.0.is_cancelled() && !second.1.is_cancelled());
    // Cancelled as the connection closes: every request still in flight.
    server.close().await.unwrap();
    observes_cancel(second).await;
}

#[tokio::test]
async fn closed_resolves_for_waiters_from_before_and_after_the_close() {
    let server = Engine::new();
    let (client, peer) = connected(&server).await;
    let early = tokio::spawn({
        let peer = peer.clone();
        async move { peer.closed().await }
    });
    tokio::task::yield_now().await;
    assert!(!early.is_finished() && !peer.is_closed());
    client.close().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), early).await.unwrap().unwrap();
    assert!(peer.is_closed());
    // First asked only after the close (another connection): resolves at once.
    let (client, peer) = connected(&Engine::new()).await;
    client.close().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), peer.closed()).await.unwrap();
}
