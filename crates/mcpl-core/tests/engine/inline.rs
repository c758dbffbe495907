//! Requests served on the caller's task (`Engine::run_request`): the stateless-HTTP shape.

use std::time::Duration;

use mcpl_core::engine::Engine;
use mcpl_core::engine::embed::LazyMeta;
use mcpl_core::jsonrpc::{Message, RequestId};
use mcpl_core::transport::Transport;
use mcpl_core::{Error, ErrorKind};
use serde_json::json;

use crate::support::{CloseBehavior, scripted};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn the_handler_sends_as_it_goes_and_its_output_comes_back_unanswered() {
    let engine = Engine::new();
    // Registered handlers are not consulted.
    engine.on_any_request(|_ctx, _params| async { Ok(json!("from the table")) });
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let (mut sender, _receiver) = transport.start().await.unwrap();
    let meta = LazyMeta::new(|| json!({"progressToken": 5}).as_object().cloned());
    let id = RequestId::from("r1");
    let out = engine
        .run_request(id.clone(), "work", Some(meta), Some(Box::new(3_u8)), &mut sender, |ctx| {
            async move {
                assert_eq!(ctx.method(), "work");
                assert_eq!(ctx.peer().data::<u8>(), Some(&3));
                assert!(ctx.progress(1.0, Some(2.0), None).await.unwrap());
                // A single-request transport has no way back to the peer.
                let asked =
                    ctx.peer().request("roots/list", None, Default::default()).await.unwrap_err();
                let Error::Rpc(e) = asked else { panic!("expected an RPC error, got {asked:?}") };
                assert_eq!(e.code.0, -32601);
                ctx.peer().notify("notifications/message", Some(json!({"data": "x"}))).await?;
                Ok::<_, Error>("typed output")
            }
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out, "typed output");
    // The progress notification, then the log message, each related to the request; no
    // response: the caller answers.
    let Some(Message::Notification(first)) = script.sent.recv().await else { panic!() };
    assert_eq!(first.method, "notifications/progress");
    assert_eq!(first.params.as_ref().unwrap()["progressToken"], json!(5));
    let Some(Message::Notification(second)) = script.sent.recv().await else { panic!() };
    assert_eq!(second.method, "notifications/message");
    assert_eq!(script.related.recv().await.unwrap(), Some(id.clone()));
    assert_eq!(script.related.recv().await.unwrap(), Some(id));
    assert!(script.sent.try_recv().is_err());
    assert!(!engine.is_connected());
}

#[tokio::test]
async fn dropping_the_run_cancels_the_request() {
    let engine = Engine::new();
    let (transport, _script) = scripted(CloseBehavior::Ok);
    let (mut sender, _receiver) = transport.start().await.unwrap();
    let (token_tx, token_rx) = tokio::sync::oneshot::channel();
    let run = engine.run_request(RequestId::from(1), "slow", None, None, &mut sender, |ctx| {
        let _ = token_tx.send(ctx.cancellation_token());
        std::future::pending::<()>()
    });
    // Poll the run once, so that the handler starts, then drop it.
    let polled = tokio::time::timeout(Duration::from_millis(20), run).await;
    assert!(polled.is_err());
    let token = token_rx.await.unwrap();
    tokio::time::timeout(WAIT, token.cancelled()).await.expect("the request was cancelled");
}

#[tokio::test]
async fn once_the_handler_is_done_what_it_left_behind_sends_nothing() {
    let engine = Engine::new();
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let (mut sender, _receiver) = transport.start().await.unwrap();
    let peer = engine
        .run_request(RequestId::from(2), "m", None, None, &mut sender, |ctx| async move {
            ctx.peer().clone()
        })
        .await
        .unwrap();
    let late = peer.notify("notifications/message", None).await.unwrap_err();
    assert_eq!(late.kind(), ErrorKind::ConnectionClosed);
    assert!(script.sent.try_recv().is_err());
}

#[tokio::test]
async fn what_a_sub_task_sends_while_the_handler_waits_is_forwarded_at_once() {
    let engine = Engine::new();
    let (transport, mut script) = scripted(CloseBehavior::Ok);
    let (mut sender, _receiver) = transport.start().await.unwrap();
    let (seen_tx, seen_rx) = tokio::sync::oneshot::channel::<()>();
    let run = engine.run_request(RequestId::from(3), "m", None, None, &mut sender, |ctx| {
        async move {
            // A task of the handler's sends while the handler waits: the caller, parked on the
            // handler, is woken to forward it, and only then does the handler go on.
            let peer = ctx.peer().clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                peer.notify("notifications/message", Some(json!({"data": "late"}))).await
            });
            seen_rx.await.map(|()| "done")
        }
    });
    let watch = async {
        let Some(Message::Notification(n)) = script.sent.recv().await else { panic!("a note") };
        assert_eq!(n.params.unwrap()["data"], json!("late"));
        seen_tx.send(()).unwrap();
    };
    let (out, ()) = tokio::time::timeout(WAIT, async { tokio::join!(run, watch) }).await.unwrap();
    assert_eq!(out.unwrap().unwrap(), "done");
    assert!(script.sent.try_recv().is_err());
}
