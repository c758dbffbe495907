//! Connections driven by their owner (`Engine::drive`): the HTTP-session shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpl_core::engine::{Engine, RequestOptions};
use mcpl_core::jsonrpc::{Message, Notification, Request, RequestId, Response};
use mcpl_core::transport::Transport;
use mcpl_core::{ErrorKind, Result};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::{CloseBehavior, Script, scripted};

const WAIT: Duration = Duration::from_secs(10);

async fn driven_sender() -> (crate::support::ScriptedSender, Script) {
    let (transport, script) = scripted(CloseBehavior::Ok);
    let (sender, _receiver) = transport.start().await.unwrap();
    (sender, script)
}

async fn next(script: &mut Script) -> Message {
    tokio::time::timeout(WAIT, script.sent.recv()).await.expect("a message in time").unwrap()
}

fn request(id: i64, method: &str, params: Option<Value>) -> Message {
    Request::new(RequestId::from(id), method, params).into()
}

#[tokio::test]
async fn serves_requests_with_the_engines_handlers_and_attached_data() {
    let engine = Engine::new();
    engine.on_request("whoami", |ctx, params| async move {
        let name = ctx.peer().data::<String>().cloned();
        Ok(json!({ "name": name, "params": params }))
    });
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive_with(sender, "alice".to_owned());
    assert_eq!(driven.data::<String>().map(String::as_str), Some("alice"));
    assert!(driven.data::<u32>().is_none());
    driven.deliver(request(7, "whoami", Some(json!({"x": 1})))).await.unwrap();
    let Message::Response(r) = next(&mut script).await else { panic!("expected a response") };
    assert_eq!(r.id, RequestId::from(7));
    assert_eq!(r.result, json!({ "name": "alice", "params": {"x": 1} }));
    // The response relates to the request it answers.
    assert_eq!(script.related.recv().await.unwrap(), Some(RequestId::from(7)));
    // The engine's own slot is untouched.
    assert!(!engine.is_connected());
}

#[tokio::test]
async fn unknown_methods_get_method_not_found() {
    let engine = Engine::new();
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    driven.deliver(request(1, "nope", None)).await.unwrap();
    let Message::Error(e) = next(&mut script).await else { panic!("expected an error") };
    assert_eq!(e.error.code.0, -32601);
}

#[tokio::test]
async fn requests_to_the_peer_are_settled_by_delivered_responses() {
    let engine = Engine::new();
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    let peer = driven.peer();
    let call = tokio::spawn(async move {
        peer.request("sampling/createMessage", Some(json!({})), RequestOptions::new()).await
    });
    let Message::Request(sent) = next(&mut script).await else { panic!("expected a request") };
    driven.deliver(Response::new(sent.id.clone(), json!({"ok": true})).into()).await.unwrap();
    let answer = tokio::time::timeout(WAIT, call).await.unwrap().unwrap().unwrap();
    assert_eq!(answer, json!({"ok": true}));
}

#[tokio::test]
async fn a_delivered_cancellation_cancels_the_handler_without_a_response() {
    let engine = Engine::new();
    let started = Arc::new(Notify::new());
    let cancelled = Arc::new(Notify::new());
    let (s, c) = (started.clone(), cancelled.clone());
    engine.on_request("slow", move |ctx, _| {
        let (s, c) = (s.clone(), c.clone());
        async move {
            s.notify_one();
            ctx.cancelled().await;
            c.notify_one();
            Ok(json!({}))
        }
    });
    engine.on_request("fast", |_, _| async { Ok(json!("fast")) });
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    driven.deliver(request(1, "slow", None)).await.unwrap();
    tokio::time::timeout(WAIT, started.notified()).await.unwrap();
    let cancel = Notification::new("notifications/cancelled", Some(json!({"requestId": 1})));
    driven.deliver(cancel.into()).await.unwrap();
    // The handler future is dropped: it never reaches its `notify_one`; the next message out
    // is the answer to a later request, not a response to the cancelled one.
    driven.deliver(request(2, "fast", None)).await.unwrap();
    let Message::Response(r) = next(&mut script).await else { panic!("expected a response") };
    assert_eq!(r.id, RequestId::from(2));
    assert!(tokio::time::timeout(Duration::from_millis(50), cancelled.notified()).await.is_err());
}

#[tokio::test]
async fn notifications_are_handled_in_delivery_order_before_deliver_returns() {
    let engine = Engine::new();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    engine.on_notification("tick", move |_ctx, params| {
        let s = s.clone();
        async move {
            tokio::task::yield_now().await;
            s.lock().unwrap().push(params.unwrap_or_default());
        }
    });
    let (sender, _script) = driven_sender().await;
    let driven = engine.drive(sender);
    for n in 0..20 {
        driven.deliver(Notification::new("tick", Some(json!(n))).into()).await.unwrap();
        assert_eq!(seen.lock().unwrap().len(), n + 1);
    }
    let expected: Vec<Value> = (0..20).map(|n| json!(n)).collect();
    assert_eq!(*seen.lock().unwrap(), expected);
}

#[tokio::test]
async fn outgoing_messages_keep_their_order() {
    let engine = Engine::new();
    engine.on_request("burst", |ctx, _| async move {
        for n in 0..100 {
            ctx.peer().notify("n", Some(json!(n))).await.unwrap();
        }
        Ok(json!("done"))
    });
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    driven.deliver(request(1, "burst", None)).await.unwrap();
    for n in 0..100 {
        let Message::Notification(note) = next(&mut script).await else { panic!("expected n") };
        assert_eq!(note.params, Some(json!(n)));
    }
    assert!(matches!(next(&mut script).await, Message::Response(_)));
}

#[tokio::test]
async fn close_settles_pending_requests_cancels_handlers_and_closes_the_sender() {
    let engine = Engine::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    struct OnDrop(Arc<AtomicUsize>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let d = dropped.clone();
    engine.on_request("forever", move |_ctx, _| {
        let guard = OnDrop(d.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(json!({}))
        }
    });
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    driven.deliver(request(1, "forever", None)).await.unwrap();
    let peer = driven.peer();
    let call = tokio::spawn(async move { peer.request("x", None, RequestOptions::new()).await });
    assert!(matches!(next(&mut script).await, Message::Request(_)));
    driven.close().await.unwrap();
    let settled: Result<Value> = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(settled.unwrap_err().kind(), ErrorKind::ConnectionClosed);
    tokio::time::timeout(WAIT, async {
        while dropped.load(Ordering::SeqCst) == 0 || script.closes.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the handler is dropped and the sender closed");
    assert!(driven.is_closed());
    let refused = driven.deliver(request(2, "forever", None)).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionClosed);
    assert_eq!(
        driven.peer().notify("n", None).await.unwrap_err().kind(),
        ErrorKind::ConnectionClosed
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_idle_driven_connection_runs_no_task() {
    let engine = Engine::new();
    engine.on_request("ping", |_, _| async { Ok(json!({})) });
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    driven.deliver(request(1, "ping", None)).await.unwrap();
    assert!(matches!(next(&mut script).await, Message::Response(_)));
    tokio::time::timeout(WAIT, async {
        while metrics.num_alive_tasks() > before {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("no task outlives the request");
    assert!(!driven.is_closed());
}

fn served(id: i64, method: &str) -> Request {
    Request::new(RequestId::from(id), method, None)
}

#[tokio::test]
async fn serve_answers_on_the_callers_task_before_it_returns() {
    let engine = Engine::new();
    let ran_on = Arc::new(std::sync::Mutex::new(None));
    let r = ran_on.clone();
    engine.on_request("add", move |ctx, _| {
        let r = r.clone();
        async move {
            *r.lock().unwrap() = tokio::task::try_id();
            let _ = ctx.peer().notify("adding", None).await;
            Ok(json!(5))
        }
    });
    let (sender, mut script) = driven_sender().await;
    let driven = Arc::new(engine.drive(sender));
    let d = driven.clone();
    let caller = tokio::spawn(async move {
        d.serve(served(1, "add")).unwrap().await;
        tokio::task::id()
    });
    let caller = tokio::time::timeout(WAIT, caller).await.unwrap().unwrap();
    // The handler ran on the caller's task, and the answer was out when `serve` was done,
    // after what the handler sent.
    assert_eq!(*ran_on.lock().unwrap(), Some(caller));
    let Ok(Message::Notification(n)) = script.sent.try_recv() else { panic!("the notification") };
    assert_eq!(n.method, "adding");
    let Ok(Message::Response(r)) = script.sent.try_recv() else { panic!("the answer, sent") };
    assert_eq!((r.id, r.result.to_value()), (RequestId::from(1), json!(5)));
    driven.serve(served(2, "add")).unwrap().await;
    assert!(matches!(next(&mut script).await, Message::Notification(_)));
    assert!(matches!(next(&mut script).await, Message::Response(_)));
}

#[tokio::test]
async fn a_served_request_whose_caller_stops_waiting_is_answered_anyway() {
    let engine = Engine::new();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    engine.on_request("wait", move |_ctx, _| {
        let r = r.clone();
        async move {
            r.notified().await;
            Ok(json!("late"))
        }
    });
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    let serving = driven.serve(served(1, "wait")).unwrap();
    // Polled once (the handler waits), then dropped, as when an HTTP client goes away.
    assert!(tokio::time::timeout(Duration::from_millis(20), serving).await.is_err());
    release.notify_one();
    let Message::Response(r) = next(&mut script).await else { panic!("expected the answer") };
    assert_eq!(r.result, json!("late"));
    assert_eq!(driven.peer().inflight_requests(), 0);
}

#[tokio::test]
async fn serve_refuses_what_cannot_run_and_a_closed_connection() {
    let engine = Engine::new();
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    driven.serve(served(1, "nope")).unwrap().await;
    let Message::Error(e) = next(&mut script).await else { panic!("expected an error") };
    assert_eq!(e.error.code.0, -32601);
    driven.close().await.unwrap();
    assert_eq!(driven.serve(served(2, "nope")).unwrap_err().kind(), ErrorKind::ConnectionClosed);
}

#[tokio::test]
async fn a_served_request_is_cancelled_by_the_peer_like_a_delivered_one() {
    let engine = Engine::new();
    engine.on_request("forever", |ctx, _| async move {
        ctx.cancelled().await;
        Ok(json!("never sent"))
    });
    engine.on_request("fast", |_, _| async { Ok(json!("fast")) });
    let (sender, mut script) = driven_sender().await;
    let driven = Arc::new(engine.drive(sender));
    let serving = tokio::spawn(driven.serve(served(1, "forever")).unwrap());
    while driven.peer().inflight_requests() == 0 {
        tokio::task::yield_now().await;
    }
    let cancel = Notification::new("notifications/cancelled", Some(json!({"requestId": 1})));
    driven.deliver(cancel.into()).await.unwrap();
    tokio::time::timeout(WAIT, serving).await.unwrap().unwrap();
    driven.serve(served(2, "fast")).unwrap().await;
    let Message::Response(r) = next(&mut script).await else { panic!("expected a response") };
    assert_eq!(r.id, RequestId::from(2));
}

#[tokio::test]
async fn run_request_gives_the_handler_output_to_its_caller_on_its_task() {
    let engine = Engine::new();
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive_with(sender, "alice".to_owned());
    let params = json!({"x": 1, "_meta": {"progressToken": "p"}});
    let running = driven
        .run_request(Request::new(RequestId::from(3), "anything", Some(params)), |ctx, params| {
            let seen = (
                ctx.id().clone(),
                ctx.method().to_owned(),
                ctx.progress_token().cloned(),
                ctx.peer().data::<String>().cloned(),
                params,
            );
            async move {
                let _ = ctx.peer().notify("working", None).await;
                (seen, tokio::task::try_id())
            }
        })
        .unwrap();
    assert_eq!(driven.peer().inflight_requests(), 1);
    let caller = tokio::spawn(async move { (running.await, tokio::task::id()) });
    let (output, caller) = tokio::time::timeout(WAIT, caller).await.unwrap().unwrap();
    let ((id, method, token, data, params), ran_on) = output.unwrap();
    assert_eq!((id, method.as_str()), (RequestId::from(3), "anything"));
    assert_eq!(token, Some(json!("p")));
    assert_eq!(data.as_deref(), Some("alice"));
    // `_meta` moved into the context; the params come without it.
    assert_eq!(params, Some(json!({"x": 1})));
    assert_eq!(ran_on, Some(caller));
    assert_eq!(driven.peer().inflight_requests(), 0);
    // What the handler sent went out, related to its request; the caller answers, not the
    // engine: nothing else was sent.
    let Message::Notification(n) = next(&mut script).await else { panic!("the notification") };
    assert_eq!(n.method, "working");
    assert_eq!(script.related.recv().await.unwrap(), Some(RequestId::from(3)));
    assert!(script.sent.try_recv().is_err());
}

#[tokio::test]
async fn run_request_refuses_a_duplicate_id_over_the_limit_and_once_closed() {
    use mcpl_core::engine::{EngineConfig, NotRun};
    let engine = Engine::with_config(EngineConfig::new().max_inflight_requests(2));
    let (sender, _script) = driven_sender().await;
    let driven = engine.drive(sender);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let wait = |gate: Arc<tokio::sync::Semaphore>| {
        move |_ctx, _params| async move {
            let _permit = gate.acquire().await;
        }
    };
    let first = driven.run_request(served(1, "wait"), wait(gate.clone())).unwrap();
    let Err(NotRun::Duplicate(Message::Error(e))) =
        driven.run_request(served(1, "wait"), wait(gate.clone()))
    else {
        panic!("a duplicate id is refused")
    };
    assert_eq!((e.id, e.error.code.0), (Some(RequestId::from(1)), -32600));
    let second = driven.run_request(served(2, "wait"), wait(gate.clone())).unwrap();
    let Err(NotRun::Busy(Message::Error(e))) =
        driven.run_request(served(3, "wait"), wait(gate.clone()))
    else {
        panic!("a third request is over the limit")
    };
    assert_eq!((e.id, e.error.code.0), (Some(RequestId::from(3)), -32000));
    let both = tokio::spawn(async move { (first.await, second.await) });
    gate.add_permits(2);
    assert_eq!(tokio::time::timeout(WAIT, both).await.unwrap().unwrap(), (Some(()), Some(())));
    assert_eq!(driven.peer().inflight_requests(), 0);
    driven.close().await.unwrap();
    assert!(matches!(
        driven.run_request(served(4, "wait"), wait(gate.clone())),
        Err(NotRun::Closed)
    ));
}

#[tokio::test]
async fn a_request_run_for_its_caller_is_cancelled_by_the_peer_or_the_close() {
    let engine = Engine::new();
    let (sender, _script) = driven_sender().await;
    let driven = engine.drive(sender);
    let forever = |ctx: mcpl_core::engine::RequestContext, _| async move {
        ctx.cancelled().await;
        "never given"
    };
    let running = tokio::spawn(driven.run_request(served(1, "forever"), forever).unwrap());
    let cancel = Notification::new("notifications/cancelled", Some(json!({"requestId": 1})));
    driven.deliver(cancel.into()).await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, running).await.unwrap().unwrap(), None);
    // Its id is free again.
    let running = tokio::spawn(driven.run_request(served(1, "forever"), forever).unwrap());
    driven.close().await.unwrap();
    assert_eq!(tokio::time::timeout(WAIT, running).await.unwrap().unwrap(), None);
}

#[tokio::test]
async fn a_request_run_for_a_caller_that_stops_waiting_goes_on() {
    let engine = Engine::new();
    let (sender, _script) = driven_sender().await;
    let driven = engine.drive(sender);
    let (release, done) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (r, d) = (release.clone(), done.clone());
    let running = driven
        .run_request(served(1, "wait"), move |ctx, _| async move {
            assert!(ctx.after_answer(move || d.notify_one()));
            r.notified().await;
        })
        .unwrap();
    // Polled once (the handler waits), then dropped, as when an HTTP client goes away.
    assert!(tokio::time::timeout(Duration::from_millis(20), running).await.is_err());
    assert_eq!(driven.peer().inflight_requests(), 1, "not cancelled");
    release.notify_one();
    tokio::time::timeout(WAIT, done.notified()).await.expect("the handler finished");
    assert_eq!(driven.peer().inflight_requests(), 0);
}

#[tokio::test]
async fn a_peer_flooding_a_pending_request_with_related_notifications_fails_it() {
    let engine = Engine::new();
    let refusals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = refusals.clone();
    engine.on_refusal(move |refusal: &mcpl_core::engine::Refusal| r.lock().unwrap().push(*refusal));
    let (sender, mut script) = driven_sender().await;
    let driven = engine.drive(sender);
    let peer = driven.peer();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let call = tokio::spawn(async move {
        let options = RequestOptions::new().on_related_notification("chunk", move |_| {
            s.fetch_add(1, Ordering::SeqCst);
        });
        peer.request("stream", None, options).await
    });
    let Message::Request(sent) = next(&mut script).await else { panic!("expected a request") };
    // Delivered with no turn for the caller's task in between (this test's runtime has one
    // thread): far more than the request's queue of them holds.
    for i in 0..5_000 {
        let chunk = Notification::new("chunk", Some(json!({"requestId": sent.id, "i": i})));
        driven.deliver(chunk.into()).await.unwrap();
    }
    driven.deliver(Response::new(sent.id.clone(), json!("done")).into()).await.unwrap();
    let error = tokio::time::timeout(WAIT, call).await.unwrap().unwrap().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolViolation, "{error}");
    assert!(error.to_string().contains("chunk"), "{error}");
    assert!(seen.load(Ordering::SeqCst) <= 1_024, "at most a queue's worth handed over");
    // Told once, however many more came.
    let flood = mcpl_core::engine::Refusal::RelatedNotificationFlood { limit: 1_024 };
    assert_eq!(*refusals.lock().unwrap(), [flood]);
}
