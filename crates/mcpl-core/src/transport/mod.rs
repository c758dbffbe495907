//! Transports: how messages travel between two peers.
//!
//! A [`Transport`] is consumed when it starts and splits into a [`TransportSender`] and a
//! [`TransportReceiver`], which the engine drives from its own tasks. Because `start` takes the
//! transport by value, one transport can never be started twice or shared by two connections.
//!
//! Provided here:
//! - [`lines::LineTransport`]: newline-delimited JSON over any `AsyncRead` + `AsyncWrite`, with a
//!   bounded line length.
//! - [`stdio::stdio`]: the line transport over this process's stdin and stdout.
//! - [`memory::pair`]: two in-memory transports wired to each other, for tests and embedding.
//! - [`framed::FramedTransport`]: one JSON-RPC message per message of a message-oriented
//!   connection (WebSocket text frames), over any stream and sink; the WebSocket transports of
//!   `mcpl-server` and `mcpl-client` are built on it.

use std::future::Future;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::jsonrpc::{Message, RequestId};
use crate::types::InitializeResult;

pub mod framed;
pub mod lines;
pub mod memory;
mod session;
pub mod stdio;

pub use self::session::SessionHandle;

/// The default largest message a transport accepts: 4 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// A message channel to a peer, not yet started.
///
/// # Examples
///
/// ```
/// use mcpl_core::transport::{memory, Transport, TransportReceiver, TransportSender};
/// use mcpl_core::jsonrpc::{Message, Notification};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
/// let (a, b) = memory::pair();
/// let (mut a_tx, _a_rx) = a.start().await?;
/// let (_b_tx, mut b_rx) = b.start().await?;
/// a_tx.send(Notification::new("ping", None).into()).await?;
/// assert_eq!(b_rx.recv().await?.and_then(|m| m.method().map(str::to_owned)).as_deref(), Some("ping"));
/// # Ok(()) }
/// ```
///
/// A transport cannot be started twice: `start` consumes it.
///
/// ```compile_fail
/// use mcpl_core::transport::{memory, Transport};
/// # async fn f() {
/// let (a, _b) = memory::pair();
/// let first = a.start().await;
/// let second = a.start().await; // error[E0382]: use of moved value: `a`
/// # }
/// ```
#[diagnostic::on_unimplemented(
    note = "a transport is started once with `start(self)` and splits into a sender and a receiver"
)]
pub trait Transport: Send + 'static {
    /// The sending half.
    type Sender: TransportSender;
    /// The receiving half.
    type Receiver: TransportReceiver;

    /// Starts the transport (spawning processes, opening streams) and splits it.
    ///
    /// # Errors
    ///
    /// Whatever prevented the transport from starting.
    fn start(self) -> impl Future<Output = Result<(Self::Sender, Self::Receiver)>> + Send;

    /// Where this transport leads, as a stable identity (a URL, a command line), derived from
    /// how the transport was configured and never from what the peer says about itself. Used
    /// to key per-server state such as response caches. Default: `None` (no meaningful
    /// endpoint, as for in-memory pipes).
    fn endpoint(&self) -> Option<String> {
        None
    }

    /// The handle to the server-side session this transport holds or continues, for transports
    /// that have one. Default: `None`.
    fn session(&self) -> Option<SessionHandle> {
        None
    }
}

/// The sending half of a started transport.
pub trait TransportSender: Send + 'static {
    /// Writes one message.
    ///
    /// # Errors
    ///
    /// A transport error; the engine treats it as the end of the connection.
    fn send(&mut self, message: Message) -> impl Future<Output = Result<()>> + Send;

    /// Writes one message that relates to the incoming request `related` (a response to it, or
    /// a notification or request sent while serving it).
    ///
    /// The engine always sends through this method. Transports that multiplex streams (such as
    /// Streamable HTTP, which delivers such messages on the request's own stream) override it;
    /// the default ignores `related` and calls [`send`](Self::send).
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send).
    fn send_related(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = related;
        self.send(message)
    }

    /// For transports that carry each message on its own (one HTTP request per message): the
    /// send of `message` as a future that does not borrow the sender, for the engine to run
    /// on the sending task while other messages are sent. What must happen in order (a
    /// session's bookkeeping) happens in this call; the future carries the rest and reports
    /// its own failures (as [`TransportEvent::RequestFailed`] for a request). It is not under
    /// the engine's write timeout: it may wait for the peer's answer.
    ///
    /// The future may end with the request's answer (a response or an error response naming
    /// the request) when the transport read it on its own, with nothing else from the peer
    /// to keep in order with it (an HTTP body holding that one message): the engine then
    /// settles the request on the task that runs the future, with no hop through the
    /// receiver. Everything else the peer sends goes through the receiver. Anything the
    /// future ends with that is not an answer is dropped.
    ///
    /// The default, for transports that write to one stream, gives the message back: it is
    /// then sent with [`send_related`](Self::send_related), one message at a time.
    fn send_apart(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        Err((message, related))
    }

    /// A handle that starts sends apart from any task with no turn at the sender, for
    /// transports whose [`send_apart`](Self::send_apart) needs nothing of the sender but what
    /// its clones share (see [`ApartSender`]). The engine asks once, when the connection starts.
    ///
    /// The default, `None`: a send apart takes the sender for as long as
    /// [`send_apart`](Self::send_apart) runs, so that callers sending at once wait in turn
    /// (queued, then drained by a task of the engine's).
    fn apart_sender(&self) -> Option<Arc<dyn ApartSender>> {
        None
    }

    /// For transports that write to one stream: writes `message` on this call, if the stream
    /// takes it without waiting, so that the engine sends it without a future of its own (the
    /// common case of a message sent when nothing else is being sent). The engine calls it
    /// where it would first poll [`send_related`](Self::send_related), with nothing else being
    /// sent and anything it [`Started`](WriteNow::Started) finished.
    ///
    /// [`Written`](WriteNow::Written): all of it was written (and flushed).
    /// [`Started`](WriteNow::Started): part of it was; the engine awaits
    /// [`finish`](Self::finish) (under its write timeout) before it sends anything else, so
    /// that the stream never carries half a message. [`NotWritten`](WriteNow::NotWritten):
    /// none of it was (the stream is full, failed, or the transport has no such path); the
    /// engine sends it with [`send_related`](Self::send_related), which reports any failure.
    ///
    /// The default writes nothing.
    fn write_now(&mut self, message: &Message, related: Option<&RequestId>) -> WriteNow {
        let _ = (message, related);
        WriteNow::NotWritten
    }

    /// Finishes the message [`write_now`](Self::write_now) started; the default has nothing to
    /// finish.
    ///
    /// # Errors
    ///
    /// As [`send`](Self::send): the engine treats it as the end of the connection.
    fn finish(&mut self) -> impl Future<Output = Result<()>> + Send {
        std::future::ready(Ok(()))
    }

    /// Flushes and closes the sending side, consuming it.
    ///
    /// # Errors
    ///
    /// A failure to close; the connection is closed regardless.
    fn close(self) -> impl Future<Output = Result<()>> + Send;
}

/// What [`TransportSender::write_now`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteNow {
    /// All of it was written and flushed: the message is out.
    Written,
    /// Part of it was written; the rest goes out with [`TransportSender::finish`].
    Started,
    /// None of it was written: it is to be sent with [`TransportSender::send_related`].
    NotWritten,
}

/// Starts sends apart ([`TransportSender::send_apart`]) without the sender, from any number of
/// tasks at once: each caller's request then goes out on its own task as soon as it is made,
/// where otherwise callers that meet at the sender are queued behind each other and their
/// requests sent by a task of the engine's.
///
/// The engine uses it only when nothing waits to be sent before the message (nothing queued,
/// no write under way), so a message sent in order (a notification waiting for its `202`)
/// still goes out before what follows it. What [`send_apart`](TransportSender::send_apart)
/// does in order (a session's bookkeeping) must hold when calls run side by side.
pub trait ApartSender: Send + Sync {
    /// As [`TransportSender::send_apart`]: the send's future, or the message back when it is
    /// not one that goes apart.
    ///
    /// # Errors
    ///
    /// The message (and `related`) back, when it is to be sent in order instead.
    fn send_apart(
        &self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)>;
}

/// The rest of a message's send, apart from its sender, ending with the request's answer when
/// the transport read it on its own: see [`TransportSender::send_apart`].
pub type SendApart = std::pin::Pin<Box<dyn Future<Output = Option<Message>> + Send + 'static>>;

/// What a transport tells its connection about itself, apart from the peer's messages.
///
/// Only transport code makes these: nothing the peer sends decodes into one, so a peer cannot
/// forge them (a server sending a notification named like one is just a notification).
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportEvent {
    /// Our request `id` failed in the transport, not at the peer: it could not be sent, or
    /// its answer could not be read (a refused connection, a TLS failure, an HTTP error
    /// status, an oversized or unreadable response). The engine settles the request with
    /// `error`; the event itself does not end the connection.
    RequestFailed {
        /// The request.
        id: RequestId,
        /// What happened.
        error: Error,
    },
    /// The transport replaced the session the server forgot with a new one, by sending the
    /// `initialize` request again (Streamable HTTP in the 2025 era): the new session's
    /// `initialize` result, whose capabilities, identity and instructions now hold.
    SessionRenewed(Box<InitializeResult>),
}

/// What a [`TransportReceiver`] hands its connection: a message from the peer or an event of
/// the transport itself.
#[derive(Debug)]
#[non_exhaustive]
pub enum Incoming {
    /// A message from the peer.
    Message(Message),
    /// An event of the transport (see [`TransportEvent`]).
    Event(TransportEvent),
}

/// The receiving half of a started transport.
pub trait TransportReceiver: Send + 'static {
    /// Reads the next message.
    ///
    /// Returns `Ok(None)` when the peer closed the transport cleanly.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidMessage`](crate::ErrorKind::InvalidMessage) and
    /// [`ErrorKind::MessageTooLarge`](crate::ErrorKind::MessageTooLarge) concern one message
    /// only: the engine answers them and keeps reading. Any other error ends the connection.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Message>>> + Send;

    /// Reads the next message or [`TransportEvent`]: the engine reads through this method.
    /// Transports with events of their own override it; the default hands over the messages
    /// of [`recv`](Self::recv). A receiver that wraps another should forward this method too,
    /// or the inner transport's events are lost to the engine.
    ///
    /// # Errors
    ///
    /// As [`recv`](Self::recv).
    fn recv_incoming(&mut self) -> impl Future<Output = Result<Option<Incoming>>> + Send {
        async { Ok(self.recv().await?.map(Incoming::Message)) }
    }
}
