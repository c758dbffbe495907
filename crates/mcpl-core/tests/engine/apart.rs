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

/// What a [`SideSender`] saw, in order.
type Log = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A sender whose requests start apart through its [`mcpl_core::transport::ApartSender`]
/// handle (answered at once); through the sender itself it only writes, each write held until
/// `release` lets it through.
struct SideSender {
    log: Log,
    release: std::sync::Arc<tokio::sync::Semaphore>,
}

struct Side(Log);

impl mcpl_core::transport::ApartSender for Side {
    fn send_apart(
        &self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        let Message::Request(request) = &message else { return Err((message, related)) };
        self.0.lock().unwrap().push(format!("apart {}", request.method));
        let answer = Response::new(request.id.clone(), json!({})).into();
        Ok(Box::pin(async move { Some(answer) }))
    }
}

impl TransportSender for SideSender {
    async fn send(&mut self, message: Message) -> mcpl_core::Result<()> {
        self.release.acquire().await.unwrap().forget();
        let name = match &message {
            Message::Request(r) => r.method.clone(),
            Message::Notification(n) => n.method.clone(),
            _ => "answer".into(),
        };
        self.log.lock().unwrap().push(format!("written {name}"));
        Ok(())
    }

    fn send_apart(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        if let Message::Request(request) = &message {
            self.log.lock().unwrap().push(format!("apart with the sender {}", request.method));
        }
        Err((message, related))
    }

    fn apart_sender(&self) -> Option<std::sync::Arc<dyn mcpl_core::transport::ApartSender>> {
        Some(std::sync::Arc::new(Side(self.log.clone())))
    }

    async fn close(self) -> mcpl_core::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_start_apart_from_every_caller_at_once_through_the_handle() {
    let log = Log::default();
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let engine = Engine::new();
    let driven = engine.drive(SideSender { log: log.clone(), release });
    let peer = driven.peer();
    let calls: Vec<_> = (0..64)
        .map(|i| {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request(&format!("m{i}"), None, short()).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), json!({}));
    }
    // Not one of them waited for the sender, nor went out through it.
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 64, "{log:?}");
    assert!(log.iter().all(|entry| entry.starts_with("apart m")), "{log:?}");
    assert_eq!(peer.pending_requests(), 0);
}

#[tokio::test]
async fn a_request_after_a_write_under_way_keeps_its_place_behind_it() {
    let log = Log::default();
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let engine = Engine::new();
    let driven = engine.drive(SideSender { log: log.clone(), release: release.clone() });
    let peer = driven.peer();
    // The notification is queued, and its write holds the sender until released.
    peer.notify("notifications/first", None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let request = {
        let peer = peer.clone();
        tokio::spawn(async move { peer.request("second", None, short()).await })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(log.lock().unwrap().is_empty(), "nothing overtook the write: {:?}", log.lock());
    release.add_permits(3);
    // Queued behind the write, the request is written in turn (this sender answers nothing
    // written: it times out, and its cancellation is written after it).
    let err = request.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RequestTimeout);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let written =
        ["written notifications/first", "written second", "written notifications/cancelled"];
    assert_eq!(*log.lock().unwrap(), written);
    // With nothing under way, the next request starts apart at once.
    assert_eq!(peer.request("third", None, short()).await.unwrap(), json!({}));
    assert_eq!(log.lock().unwrap().last().map(String::as_str), Some("apart third"));
}
