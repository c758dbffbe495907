//! A scriptable transport for lifecycle tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use mcpl_core::jsonrpc::{Message, RequestId};
use mcpl_core::transport::{
    Incoming, Transport, TransportEvent, TransportReceiver, TransportSender,
};
use mcpl_core::{Error, Result};
use tokio::sync::mpsc;

/// How the scripted transport's `close` behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CloseBehavior {
    /// Close succeeds.
    Ok,
    /// Close fails with an I/O error.
    Fail,
    /// Close never completes.
    Hang,
}

/// What the test keeps of a scripted transport.
pub struct Script {
    /// Messages the engine sent.
    pub sent: mpsc::UnboundedReceiver<Message>,
    /// The request each sent message related to, in order.
    pub related: mpsc::UnboundedReceiver<Option<RequestId>>,
    /// Feed messages (or an end/err) to the engine.
    pub inject: mpsc::UnboundedSender<Result<Option<Message>>>,
    /// Feed transport events to the engine (read before injected messages).
    pub events: mpsc::UnboundedSender<TransportEvent>,
    /// Set once `start` ran.
    pub started: Arc<AtomicBool>,
    /// How many times `close` ran.
    pub closes: Arc<AtomicUsize>,
}

pub struct ScriptedTransport {
    sent: mpsc::UnboundedSender<Message>,
    related: mpsc::UnboundedSender<Option<RequestId>>,
    inject: mpsc::UnboundedReceiver<Result<Option<Message>>>,
    events: mpsc::UnboundedReceiver<TransportEvent>,
    started: Arc<AtomicBool>,
    closes: Arc<AtomicUsize>,
    close: CloseBehavior,
    fail_start: bool,
}

pub fn scripted(close: CloseBehavior) -> (ScriptedTransport, Script) {
    let (sent_tx, sent_rx) = mpsc::unbounded_channel();
    let (related_tx, related_rx) = mpsc::unbounded_channel();
    let (inject_tx, inject_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let started = Arc::new(AtomicBool::new(false));
    let closes = Arc::new(AtomicUsize::new(0));
    (
        ScriptedTransport {
            sent: sent_tx,
            related: related_tx,
            inject: inject_rx,
            events: events_rx,
            started: started.clone(),
            closes: closes.clone(),
            close,
            fail_start: false,
        },
        Script {
            sent: sent_rx,
            related: related_rx,
            inject: inject_tx,
            events: events_tx,
            started,
            closes,
        },
    )
}

pub fn failing_start() -> (ScriptedTransport, Script) {
    let (mut t, s) = scripted(CloseBehavior::Ok);
    t.fail_start = true;
    (t, s)
}

pub struct ScriptedSender {
    sent: mpsc::UnboundedSender<Message>,
    related: mpsc::UnboundedSender<Option<RequestId>>,
    closes: Arc<AtomicUsize>,
    close: CloseBehavior,
}

pub struct ScriptedReceiver {
    inject: mpsc::UnboundedReceiver<Result<Option<Message>>>,
    events: mpsc::UnboundedReceiver<TransportEvent>,
}

impl Transport for ScriptedTransport {
    type Sender = ScriptedSender;
    type Receiver = ScriptedReceiver;

    async fn start(self) -> Result<(ScriptedSender, ScriptedReceiver)> {
        self.started.store(true, Ordering::SeqCst);
        if self.fail_start {
            return Err(Error::Io(std::io::Error::other("start failed")));
        }
        Ok((
            ScriptedSender {
                sent: self.sent,
                related: self.related,
                closes: self.closes,
                close: self.close,
            },
            ScriptedReceiver { inject: self.inject, events: self.events },
        ))
    }
}

impl TransportSender for ScriptedSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.sent.send(message).map_err(|_| Error::ConnectionClosed)
    }

    async fn send_related(&mut self, message: Message, related: Option<RequestId>) -> Result<()> {
        let _ = self.related.send(related);
        self.send(message).await
    }

    async fn close(self) -> Result<()> {
        self.closes.fetch_add(1, Ordering::SeqCst);
        match self.close {
            CloseBehavior::Ok => Ok(()),
            CloseBehavior::Fail => Err(Error::Io(std::io::Error::other("close failed"))),
            CloseBehavior::Hang => std::future::pending().await,
        }
    }
}

impl TransportReceiver for ScriptedReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        match self.inject.recv().await {
            Some(item) => item,
            // The test dropped its end: keep the transport open forever, like a transport that
            // never signals closure.
            None => std::future::pending().await,
        }
    }

    async fn recv_incoming(&mut self) -> Result<Option<Incoming>> {
        let message = tokio::select! {
            biased;
            Some(event) = self.events.recv() => return Ok(Some(Incoming::Event(event))),
            message = self.inject.recv() => message,
        };
        match message {
            Some(item) => Ok(item?.map(Incoming::Message)),
            None => std::future::pending().await,
        }
    }
}
