//! Requests a transport sends apart (`TransportSender::send_apart`) whose send ends with the
//! answer: settled where they were sent, with no receiver involved.

use std::time::Duration;

use mcpl_core::ErrorKind;
use mcpl_core::engine::{Engine, RequestOptions};
use mcpl_core::jsonrpc::{ErrorCode, Response};
use mcpl_core::jsonrpc::{ErrorObject, ErrorResponse, Message, Notification, Request, RequestId};
use mcpl_core::transport::{SendApart, TransportSender};
use serde_json::json;

/// A sender that sends every request apart; the send ends with what `answer` makes of it.
struct ApartSender {
    answer: fn(&Request) -> Option<Message>,
}

impl TransportSender for ApartSender {
    async fn send(&mut self, _message: Message) -> mcpl_core::Result<()> {
        Ok(())
    }

    fn send_apart(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        let Message::Request(request) = &message else { return Err((message, related)) };
        let answer = (self.answer)(request);
        Ok(Box::pin(async move {
            // The answer comes later, as an HTTP response would.
            tokio::time::sleep(Duration::from_millis(5)).await;
            answer
        }))
    }

    async fn close(self) -> mcpl_core::Result<()> {
        Ok(())
    }
}

fn short() -> RequestOptions {
    RequestOptions::new().timeout(Duration::from_millis(200))
}

#[tokio::test]
async fn the_answer_a_send_ends_with_settles_its_request() {
    let engine = Engine::new();
    let driven = engine.drive(ApartSender {
        answer: |r| Some(Response::new(r.id.clone(), json!({"echo": r.params})).into()),
    });
    let peer = driven.peer();
    let answer = peer.request("tools/call", Some(json!({"name": "a"})), short()).await.unwrap();
    assert_eq!(answer, json!({"echo": {"name": "a"}}));
    assert_eq!(peer.pending_requests(), 0);
}

#[tokio::test]
async fn an_error_answer_is_the_peers_typed_error() {
    let engine = Engine::new();
    let driven = engine.drive(ApartSender {
        answer: |r| {
            let error = ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "no such method");
            Some(ErrorResponse::new(Some(r.id.clone()), error).into())
        },
    });
    let peer = driven.peer();
    let err = peer.request("nope", None, short()).await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(ErrorCode::METHOD_NOT_FOUND));
    assert_eq!(peer.pending_requests(), 0);
}

#[tokio::test]
async fn what_answers_nothing_or_another_request_settles_nothing() {
    let answers: [fn(&Request) -> Option<Message>; 4] = [
        |_| None,
        |_| Some(Notification::new("notifications/message", None).into()),
        |_| Some(ErrorResponse::new(None, ErrorObject::new(ErrorCode(-32000), "who")).into()),
        |_| Some(Response::new(RequestId::from(987_654), json!({})).into()),
    ];
    for answer in answers {
        let engine = Engine::new();
        let driven = engine.drive(ApartSender { answer });
        let peer = driven.peer();
        let err = peer.request("tools/call", None, short()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RequestTimeout);
        assert_eq!(peer.pending_requests(), 0);
    }
}

#[tokio::test]
async fn a_request_dropped_before_its_answer_leaves_nothing_behind() {
    let engine = Engine::new();
    let driven = engine
        .drive(ApartSender { answer: |r| Some(Response::new(r.id.clone(), json!({})).into()) });
    let peer = driven.peer();
    let call = peer.request("tools/call", None, short());
    // Dropped after its first poll: the send goes on in a task of its own and its answer
    // finds no request to settle.
    assert!(tokio::time::timeout(Duration::from_millis(1), call).await.is_err());
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(peer.pending_requests(), 0);
    // The connection still serves requests.
    assert_eq!(peer.request("tools/call", None, short()).await.unwrap(), json!({}));
}

#[tokio::test]
async fn an_answer_naming_another_waiting_request_settles_that_one() {
    let engine = Engine::new();
    let driven = engine.drive(ApartSender {
        // `b`'s send ends with the answer to `a` (the first request: id 0).
        answer: |r| (r.method == "b").then(|| Response::new(RequestId::from(0), json!("a")).into()),
    });
    let peer = driven.peer();
    let a = {
        let peer = peer.clone();
        tokio::spawn(async move {
            let options = RequestOptions::new().timeout(Duration::from_secs(10));
            peer.request("a", None, options).await
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let b = peer.request("b", None, short()).await.unwrap_err();
    assert_eq!(b.kind(), ErrorKind::RequestTimeout);
    assert_eq!(a.await.unwrap().unwrap(), json!("a"));
    assert_eq!(peer.pending_requests(), 0);
}
