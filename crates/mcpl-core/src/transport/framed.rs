//! Message-framed connections: one JSON-RPC message per message of the underlying connection,
//! as WebSocket text frames carry them.
//!
//! [`FramedTransport`] turns any stream of [`Inbound`] items and sink of [`Outbound`] items into
//! a [`Transport`], so that every message-oriented connection (the WebSocket server of
//! `mcpl-server`, the WebSocket client of `mcpl-client`, or another library's) shares one
//! implementation of what matters to the protocol:
//!
//! - **Framing.** Each text message is exactly one JSON-RPC message. Its text is decoded as a
//!   whole, never split on newlines, so a peer may pretty-print. A message that is not valid
//!   JSON-RPC is reported as [`Error::InvalidMessage`] (the engine answers it, as for the line
//!   transport) and reading goes on; a whitespace-only text message is skipped.
//! - **Other messages.** Binary messages, pings and pongs ([`Inbound::Other`]) carry no protocol
//!   message: they are ignored, but count as activity.
//! - **Size.** A text message over the limit (default [`DEFAULT_MAX_MESSAGE_SIZE`]) is
//!   [`Error::MessageTooLarge`] and reading goes on. A connection that could not even read an
//!   oversized message ([`Inbound::TooLarge`], a library that stopped at its own cap) reports
//!   `MessageTooLarge` once, then ends: it is closed with [`CloseCode::TooLarge`].
//! - **Keep-alive.** With [`ping_every`](FramedTransport::ping_every) the receiver sends
//!   [`Outbound::Ping`] at that period; with [`idle_timeout`](FramedTransport::idle_timeout) it
//!   ends the connection after that long without anything from the peer (closed with
//!   [`CloseCode::Idle`]).
//! - **Close.** A peer's close with a normal code ends the receiver cleanly (`Ok(None)`); any
//!   other close code, and any error of the stream, is a transport failure. Closing the sender
//!   sends [`Outbound::Close`] with the reason the connection ends for (set by the receiver,
//!   or by the owner through a [`CloseCodeHandle`], such as [`CloseCode::GoingAway`] at a
//!   server's shutdown), then closes the sink.
//!   Once the sink has failed (or a write to it was abandoned), it is never polled again: later
//!   sends fail with `ConnectionClosed` and the close has nothing left to do. Sinks need not
//!   survive being polled after an error (`SinkExt::sink_map_err` panics).
//!
//! # Examples
//!
//! Two framed transports wired through channels, standing for the two ends of a connection:
//!
//! ```
//! use futures::{SinkExt, StreamExt};
//! use mcpl_core::jsonrpc::Notification;
//! use mcpl_core::transport::framed::{FramedTransport, Inbound, Outbound};
//! use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
//! // The wire: what one end sends as text arrives at the other as text.
//! let (wire_tx, wire_rx) = futures::channel::mpsc::unbounded::<Outbound>();
//! let inbound = wire_rx.filter_map(|out| async move {
//!     match out {
//!         Outbound::Text(text) => Some(Ok(Inbound::Text(text))),
//!         Outbound::Ping => Some(Ok(Inbound::Other)),
//!         Outbound::Close(_) => Some(Ok(Inbound::Closed { code: Some(1000), reason: String::new() })),
//!     }
//! });
//! let (_unused_tx, unused_rx) = futures::channel::mpsc::unbounded::<mcpl_core::Result<Inbound>>();
//! let sending = FramedTransport::new(unused_rx, wire_tx.sink_map_err(|e| mcpl_core::Error::transport("send", e)));
//! let receiving = FramedTransport::new(inbound, futures::sink::drain().sink_map_err(|e| match e {}));
//!
//! let (mut tx, _) = sending.start().await?;
//! let (_, mut rx) = receiving.start().await?;
//! tx.send(Notification::new("hello", None).into()).await?;
//! assert_eq!(rx.recv().await?.unwrap().method(), Some("hello"));
//! tx.close().await?;
//! assert!(rx.recv().await?.is_none(), "a normal close ends the receiver cleanly");
//! # Ok(()) }
//! ```

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use futures::{Sink, SinkExt, Stream, StreamExt};
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::{DEFAULT_MAX_MESSAGE_SIZE, Transport, TransportReceiver, TransportSender, WriteNow};
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, RequestId};

/// One thing received on a message-oriented connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A text message: one JSON-RPC message.
    Text(String),
    /// A message that carries no protocol message (binary, ping, pong): ignored, but it shows
    /// the peer is alive.
    Other,
    /// A message over the connection's own size cap, which the connection could not read.
    /// The connection is unusable afterwards.
    TooLarge,
    /// The peer closed the connection.
    Closed {
        /// The close code, if the peer sent one (WebSocket: RFC 6455 §7.4).
        code: Option<u16>,
        /// The close reason, possibly empty.
        reason: String,
    },
}

/// One thing to write on a message-oriented connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    /// A text message carrying one JSON-RPC message.
    Text(String),
    /// A keep-alive probe (WebSocket: a ping frame), which the peer answers.
    Ping,
    /// The last thing written: the connection ends, for this reason.
    Close(CloseCode),
}

/// Why this side ends a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CloseCode {
    /// An orderly close (WebSocket `1000`).
    #[default]
    Normal,
    /// Nothing came from the peer for the idle timeout (WebSocket `1000`, reason
    /// `"idle timeout"`).
    Idle,
    /// The peer sent a message over the size limit (WebSocket `1009`).
    TooLarge,
    /// This side is going away, such as a server shutting down (WebSocket `1001`, reason
    /// `"going away"`): set with [`CloseCodeHandle::set`] before closing.
    GoingAway,
}

impl CloseCode {
    /// The WebSocket close code (RFC 6455 §7.4.1).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::transport::framed::CloseCode;
    /// assert_eq!(CloseCode::TooLarge.code(), 1009);
    /// ```
    pub fn code(self) -> u16 {
        match self {
            CloseCode::Normal | CloseCode::Idle => 1000,
            CloseCode::GoingAway => 1001,
            CloseCode::TooLarge => 1009,
        }
    }

    /// A short human-readable reason to send with the close.
    pub fn reason(self) -> &'static str {
        match self {
            CloseCode::Normal => "",
            CloseCode::Idle => "idle timeout",
            CloseCode::TooLarge => "message too big",
            CloseCode::GoingAway => "going away",
        }
    }
}

/// The code a [`FramedTransport`] is closed with when its sender closes, for whoever ends the
/// connection for a reason of its own: a server shutting down sets [`CloseCode::GoingAway`],
/// then closes. Clones share the code. Got from [`FramedTransport::close_code_handle`] before
/// the transport starts.
///
/// # Examples
///
/// ```
/// use futures::{SinkExt, StreamExt};
/// use mcpl_core::transport::framed::{CloseCode, FramedTransport, Inbound, Outbound};
/// use mcpl_core::transport::{Transport, TransportSender};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
/// let (wire, mut written) = futures::channel::mpsc::unbounded::<Outbound>();
/// let (_feed, inbound) = futures::channel::mpsc::unbounded::<mcpl_core::Result<Inbound>>();
/// let transport =
///     FramedTransport::new(inbound, wire.sink_map_err(|e| mcpl_core::Error::transport("send", e)));
/// let close = transport.close_code_handle();
/// let (sender, _receiver) = transport.start().await?;
/// close.set(CloseCode::GoingAway);
/// sender.close().await?;
/// assert_eq!(written.next().await, Some(Outbound::Close(CloseCode::GoingAway)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct CloseCodeHandle(Arc<Mutex<CloseCode>>);

impl CloseCodeHandle {
    /// Sets the code the connection is closed with (the last one set wins).
    pub fn set(&self, code: CloseCode) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = code;
    }

    /// The code the connection will be closed with.
    pub fn get(&self) -> CloseCode {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Close codes that end a connection cleanly: normal (1000), going away (1001), and none.
fn is_clean_close(code: Option<u16>) -> bool {
    matches!(code, None | Some(1000 | 1001 | 1005))
}

type BoxStream = Pin<Box<dyn Stream<Item = Result<Inbound>> + Send>>;
type BoxSink = Pin<Box<dyn Sink<Outbound, Error = Error> + Send>>;

/// A [`Transport`] over a stream of [`Inbound`] and a sink of [`Outbound`]: one JSON-RPC
/// message per text message. See the [module documentation](self).
#[must_use]
pub struct FramedTransport {
    stream: BoxStream,
    sink: BoxSink,
    max_message_size: usize,
    ping_every: Option<Duration>,
    idle_timeout: Option<Duration>,
    endpoint: Option<String>,
    close: CloseCodeHandle,
}

impl fmt::Debug for FramedTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramedTransport")
            .field("max_message_size", &self.max_message_size)
            .field("ping_every", &self.ping_every)
            .field("idle_timeout", &self.idle_timeout)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl FramedTransport {
    /// A transport reading `stream` and writing `sink`, with the default size limit and no
    /// keep-alive or idle timeout.
    pub fn new<St, Si>(stream: St, sink: Si) -> Self
    where
        St: Stream<Item = Result<Inbound>> + Send + 'static,
        Si: Sink<Outbound, Error = Error> + Send + 'static,
    {
        FramedTransport {
            stream: Box::pin(stream),
            sink: Box::pin(sink),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            ping_every: None,
            idle_timeout: None,
            endpoint: None,
            close: CloseCodeHandle::default(),
        }
    }

    /// The handle that sets the code this connection is closed with (see
    /// [`CloseCodeHandle`]).
    pub fn close_code_handle(&self) -> CloseCodeHandle {
        self.close.clone()
    }

    /// The largest text message accepted, in bytes. Default: 4 MiB. A limit of 0 is raised to
    /// 1.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes.max(1);
        self
    }

    /// Sends [`Outbound::Ping`] at this period while the connection is open. Default: never.
    /// A zero period means never.
    pub fn ping_every(mut self, period: Option<Duration>) -> Self {
        self.ping_every = period.filter(|p| !p.is_zero());
        self
    }

    /// Ends the connection after this long without anything from the peer. Default: never.
    /// A zero timeout means never.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout.filter(|t| !t.is_zero());
        self
    }

    /// The identity reported by [`Transport::endpoint`] (a URL). Default: none.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }
}

/// What the two halves share: the sink (the receiver writes pings on it) and the reason the
/// connection ends, which the sender's close puts on the wire.
struct Shared {
    sink: tokio::sync::Mutex<Writer>,
    close: CloseCodeHandle,
}

/// The sink, polled only while it is sound: after an error, a close, or a write that was
/// dropped before it finished, it is left alone.
struct Writer {
    sink: BoxSink,
    sound: bool,
}

impl Writer {
    /// Sends `item`; `ConnectionClosed` without touching the sink once it is not sound.
    async fn send(&mut self, item: Outbound) -> Result<()> {
        if !self.sound {
            return Err(Error::ConnectionClosed);
        }
        // Unsound until the write completes: a write dropped halfway leaves the sink unknown.
        self.sound = false;
        self.sink.send(item).await?;
        self.sound = true;
        Ok(())
    }

    /// Sends `code` (best effort: the peer may have closed first) and closes the sink. Nothing
    /// to do when the sink already failed: its failure was reported where it happened.
    async fn close(&mut self, code: CloseCode) -> Result<()> {
        if let Err(e) = self.send(Outbound::Close(code)).await {
            tracing::debug!(error = %e, "close message not sent");
        }
        if !self.sound {
            return Ok(());
        }
        self.sound = false;
        self.sink.close().await
    }
}

impl Shared {
    fn set_close(&self, code: CloseCode) {
        self.close.set(code);
    }

    fn close_code(&self) -> CloseCode {
        self.close.get()
    }
}

impl Transport for FramedTransport {
    type Sender = FramedSender;
    type Receiver = FramedReceiver;

    async fn start(self) -> Result<(FramedSender, FramedReceiver)> {
        let shared = Arc::new(Shared {
            sink: tokio::sync::Mutex::new(Writer { sink: self.sink, sound: true }),
            close: self.close,
        });
        let ping = self.ping_every.map(|period| {
            let mut interval = tokio::time::interval_at(Instant::now() + period, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        });
        Ok((
            FramedSender { shared: shared.clone(), closed: false, rest: None },
            FramedReceiver {
                stream: self.stream,
                shared,
                max: self.max_message_size,
                ping,
                idle: self.idle_timeout,
                last_heard: Instant::now(),
                broken: false,
            },
        ))
    }

    fn endpoint(&self) -> Option<String> {
        self.endpoint.clone()
    }
}

/// The sending half of a [`FramedTransport`].
pub struct FramedSender {
    shared: Arc<Shared>,
    closed: bool,
    /// What [`TransportSender::write_now`] left: a flush, or the error that stopped it.
    rest: Option<std::result::Result<(), Error>>,
}

impl fmt::Debug for FramedSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramedSender").field("closed", &self.closed).finish_non_exhaustive()
    }
}

impl TransportSender for FramedSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        self.finish().await?;
        let text = serde_json::to_string(&message)
            .map_err(|source| Error::Serialization { what: "outgoing message".into(), source })?;
        self.shared.sink.lock().await.send(Outbound::Text(text)).await
    }

    /// Hands the message to the sink and flushes it, if the sink is free (not sending a
    /// keep-alive) and ready without waiting: polled with a waker that does nothing (whoever
    /// sends next polls with its own).
    fn write_now(&mut self, message: &Message, _related: Option<&RequestId>) -> WriteNow {
        if self.rest.is_some() {
            return WriteNow::NotWritten;
        }
        let Ok(mut writer) = self.shared.sink.try_lock() else { return WriteNow::NotWritten };
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if !writer.sound || !matches!(writer.sink.poll_ready_unpin(&mut cx), Poll::Ready(Ok(()))) {
            // Not ready, or failed: the regular send waits for it, or reports it.
            return WriteNow::NotWritten;
        }
        let Ok(text) = serde_json::to_string(message) else { return WriteNow::NotWritten };
        // The message is in the sink once it takes it: only a flush may be left.
        let flushed = match writer.sink.start_send_unpin(Outbound::Text(text)) {
            Ok(()) => writer.sink.poll_flush_unpin(&mut cx),
            Err(e) => Poll::Ready(Err(e)),
        };
        match flushed {
            Poll::Ready(Ok(())) => return WriteNow::Written,
            Poll::Ready(Err(e)) => {
                writer.sound = false;
                self.rest = Some(Err(e));
            }
            Poll::Pending => self.rest = Some(Ok(())),
        }
        WriteNow::Started
    }

    async fn finish(&mut self) -> Result<()> {
        match self.rest.take() {
            None => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok(())) => {
                let mut writer = self.shared.sink.lock().await;
                if !writer.sound {
                    return Err(Error::ConnectionClosed);
                }
                // As a send: unsound until the flush completes.
                writer.sound = false;
                writer.sink.flush().await?;
                writer.sound = true;
                Ok(())
            }
        }
    }

    async fn close(mut self) -> Result<()> {
        self.closed = true;
        let code = self.shared.close_code();
        self.shared.sink.lock().await.close(code).await
    }
}

/// The receiving half of a [`FramedTransport`]; also sends its keep-alive pings.
pub struct FramedReceiver {
    stream: BoxStream,
    shared: Arc<Shared>,
    max: usize,
    ping: Option<Interval>,
    idle: Option<Duration>,
    last_heard: Instant,
    broken: bool,
}

impl fmt::Debug for FramedReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramedReceiver")
            .field("max", &self.max)
            .field("idle", &self.idle)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

/// What one wait of the receiver produced.
enum Event {
    Item(Option<Result<Inbound>>),
    Ping,
    Idle,
}

impl FramedReceiver {
    async fn next_event(&mut self) -> Event {
        let idle_at = self.idle.map(|idle| self.last_heard + idle);
        let ping = async {
            match self.ping.as_mut() {
                Some(interval) => {
                    interval.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        let idle = async {
            match idle_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            item = self.stream.next() => Event::Item(item),
            () = ping => Event::Ping,
            () = idle => Event::Idle,
        }
    }
}

impl FramedReceiver {
    /// Records the idle close and builds the error that ends the connection.
    fn idle_error(&self) -> Error {
        let idle = self.idle.unwrap_or_default();
        tracing::debug!(?idle, "nothing from the peer for the idle timeout; closing");
        self.shared.set_close(CloseCode::Idle);
        Error::Transport {
            context: format!("nothing from the peer for {idle:?} (idle timeout)"),
            source: None,
        }
    }
}

impl TransportReceiver for FramedReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        if self.broken {
            return Err(Error::Transport {
                context: "connection unusable after an oversized message".into(),
                source: None,
            });
        }
        loop {
            let item = match self.next_event().await {
                Event::Item(item) => item,
                Event::Ping => {
                    tracing::trace!("keep-alive ping");
                    let ping = async { self.shared.sink.lock().await.send(Outbound::Ping).await };
                    // A peer that stopped reading must not hold the receiver past the idle
                    // timeout: the ping write is bounded by it.
                    match self.idle {
                        Some(idle) => match tokio::time::timeout(idle, ping).await {
                            Ok(sent) => sent?,
                            Err(_) => return Err(self.idle_error()),
                        },
                        None => ping.await?,
                    }
                    continue;
                }
                Event::Idle => return Err(self.idle_error()),
            };
            self.last_heard = Instant::now();
            match item {
                None => return Ok(None),
                Some(Err(e)) => return Err(e),
                Some(Ok(Inbound::Other)) => continue,
                Some(Ok(Inbound::Closed { code, reason })) => {
                    if is_clean_close(code) {
                        return Ok(None);
                    }
                    let code = code.unwrap_or_default();
                    return Err(Error::Transport {
                        context: format!("peer closed the connection with code {code} {reason:?}"),
                        source: None,
                    });
                }
                Some(Ok(Inbound::TooLarge)) => {
                    self.broken = true;
                    self.shared.set_close(CloseCode::TooLarge);
                    return Err(Error::MessageTooLarge { limit: self.max });
                }
                Some(Ok(Inbound::Text(text))) => {
                    if text.len() > self.max {
                        return Err(Error::MessageTooLarge { limit: self.max });
                    }
                    if text.bytes().all(|b| b.is_ascii_whitespace()) {
                        continue;
                    }
                    return Message::decode_str(&text)
                        .map(Some)
                        .map_err(|e| Error::InvalidMessage(Box::new(e)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::task::{Context, Poll};

    use futures::channel::mpsc;

    use super::*;
    use crate::ErrorKind;
    use crate::jsonrpc::Notification;

    struct Ends {
        to_receiver: mpsc::UnboundedSender<Result<Inbound>>,
        written: mpsc::UnboundedReceiver<Outbound>,
    }

    fn transport() -> (FramedTransport, Ends) {
        let (to_receiver, inbound) = mpsc::unbounded();
        let (out, written) = mpsc::unbounded();
        let sink = out.sink_map_err(|e| Error::transport("sink", e));
        (FramedTransport::new(inbound, sink), Ends { to_receiver, written })
    }

    fn text(s: &str) -> Result<Inbound> {
        Ok(Inbound::Text(s.to_owned()))
    }

    #[tokio::test]
    async fn pretty_printed_messages_are_one_message_and_binary_is_ignored() {
        let (t, ends) = transport();
        let (_tx, mut rx) = t.start().await.unwrap();
        let pretty = "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"a\"\n}\n";
        ends.to_receiver.unbounded_send(Ok(Inbound::Other)).unwrap();
        ends.to_receiver.unbounded_send(text(pretty)).unwrap();
        ends.to_receiver.unbounded_send(text("  \n ")).unwrap();
        ends.to_receiver.unbounded_send(text(r#"{"jsonrpc":"2.0","method":"b"}"#)).unwrap();
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("a"));
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("b"));
        drop(ends.to_receiver);
        assert!(rx.recv().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn two_messages_in_one_frame_are_invalid_not_split() {
        let (t, ends) = transport();
        let (_tx, mut rx) = t.start().await.unwrap();
        let two = "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}";
        ends.to_receiver.unbounded_send(text(two)).unwrap();
        ends.to_receiver.unbounded_send(text("{oops")).unwrap();
        ends.to_receiver.unbounded_send(text(r#"{"jsonrpc":"2.0","method":"c"}"#)).unwrap();
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::InvalidMessage);
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::InvalidMessage);
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("c"));
    }

    #[tokio::test]
    async fn oversized_text_is_per_message_but_a_capped_connection_ends() {
        let (t, mut ends) = transport();
        let msg = r#"{"jsonrpc":"2.0","method":"m"}"#;
        let (tx, mut rx) = t.max_message_size(msg.len()).start().await.unwrap();
        ends.to_receiver.unbounded_send(text(&format!("{msg} "))).unwrap();
        ends.to_receiver.unbounded_send(text(msg)).unwrap();
        ends.to_receiver.unbounded_send(Ok(Inbound::TooLarge)).unwrap();
        ends.to_receiver.unbounded_send(text(msg)).unwrap();
        let e = rx.recv().await.unwrap_err();
        assert!(matches!(e, Error::MessageTooLarge { limit } if limit == msg.len()));
        assert_eq!(rx.recv().await.unwrap().unwrap().method(), Some("m"));
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::MessageTooLarge);
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::Transport);
        tx.close().await.unwrap();
        assert_eq!(ends.written.next().await, Some(Outbound::Close(CloseCode::TooLarge)));
    }

    #[tokio::test]
    async fn close_codes() {
        for (code, clean) in
            [(None, true), (Some(1000), true), (Some(1001), true), (Some(1011), false)]
        {
            let (t, ends) = transport();
            let (_tx, mut rx) = t.start().await.unwrap();
            ends.to_receiver
                .unbounded_send(Ok(Inbound::Closed { code, reason: "r".into() }))
                .unwrap();
            let r = rx.recv().await;
            assert_eq!(matches!(r, Ok(None)), clean, "{code:?}");
            if !clean {
                assert_eq!(r.unwrap_err().kind(), ErrorKind::Transport);
            }
        }
    }

    #[tokio::test]
    async fn sender_writes_text_then_close() {
        let (t, mut ends) = transport();
        let (mut tx, _rx) = t.start().await.unwrap();
        tx.send(Notification::new("x", None).into()).await.unwrap();
        tx.close().await.unwrap();
        assert_eq!(
            ends.written.next().await,
            Some(Outbound::Text(r#"{"jsonrpc":"2.0","method":"x"}"#.into()))
        );
        assert_eq!(ends.written.next().await, Some(Outbound::Close(CloseCode::Normal)));
        assert_eq!(ends.written.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn pings_while_waiting_and_idle_ends_the_connection() {
        let (t, mut ends) = transport();
        let t =
            t.ping_every(Some(Duration::from_secs(30))).idle_timeout(Some(Duration::from_secs(60)));
        let (tx, mut rx) = t.start().await.unwrap();
        // Something from the peer at 50 s keeps the connection alive past 60 s.
        let feeder = ends.to_receiver.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(50)).await;
            feeder.unbounded_send(Ok(Inbound::Other)).unwrap();
        });
        let started = Instant::now();
        let e = rx.recv().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Transport);
        assert_eq!(started.elapsed(), Duration::from_secs(110));
        // Pings at 30, 60, 90 s.
        for _ in 0..3 {
            assert_eq!(ends.written.next().await, Some(Outbound::Ping));
        }
        tx.close().await.unwrap();
        assert_eq!(ends.written.next().await, Some(Outbound::Close(CloseCode::Idle)));
        drop(ends.to_receiver);
    }

    #[tokio::test(start_paused = true)]
    async fn a_ping_stuck_on_a_peer_that_does_not_read_is_bounded_by_the_idle_timeout() {
        let (_to_receiver, inbound) = mpsc::unbounded::<Result<Inbound>>();
        // A sink that never accepts anything, like a socket whose peer stopped reading.
        let stuck =
            futures::sink::unfold((), |(), _item: Outbound| std::future::pending::<Result<()>>());
        let t = FramedTransport::new(inbound, stuck)
            .ping_every(Some(Duration::from_secs(10)))
            .idle_timeout(Some(Duration::from_secs(60)));
        let (_tx, mut rx) = t.start().await.unwrap();
        let started = Instant::now();
        assert_eq!(rx.recv().await.unwrap_err().kind(), ErrorKind::Transport);
        assert_eq!(started.elapsed(), Duration::from_secs(70));
    }

    /// A sink whose peer is gone: every operation fails. Wrapped in `sink_map_err`, which
    /// panics when polled after its first error.
    fn gone() -> impl Sink<Outbound, Error = Error> {
        struct Gone;
        impl Sink<Outbound> for Gone {
            type Error = std::io::Error;
            fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()))
            }
            fn start_send(self: Pin<&mut Self>, _: Outbound) -> io::Result<()> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()))
            }
            fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()))
            }
        }
        Gone.sink_map_err(|e| Error::transport("sink", e))
    }

    #[tokio::test]
    async fn a_failed_sink_is_never_polled_again() {
        let (_to_receiver, inbound) = mpsc::unbounded::<Result<Inbound>>();
        let (mut tx, _rx) = FramedTransport::new(inbound, gone()).start().await.unwrap();
        let message = || Message::Notification(Notification::new("n", None));
        assert_eq!(tx.send(message()).await.unwrap_err().kind(), ErrorKind::Transport);
        assert_eq!(tx.send(message()).await.unwrap_err().kind(), ErrorKind::ConnectionClosed);
        tx.close().await.unwrap();
    }

    #[tokio::test]
    async fn closing_towards_a_peer_that_is_gone_does_not_poll_the_failed_sink() {
        let (_to_receiver, inbound) = mpsc::unbounded::<Result<Inbound>>();
        let (tx, _rx) = FramedTransport::new(inbound, gone()).start().await.unwrap();
        tx.close().await.unwrap();
    }

    #[test]
    fn close_code_numbers() {
        assert_eq!(CloseCode::Normal.code(), 1000);
        assert_eq!(CloseCode::Idle.code(), 1000);
        assert_eq!(CloseCode::Idle.reason(), "idle timeout");
        assert_eq!(CloseCode::TooLarge.code(), 1009);
        assert_eq!(CloseCode::GoingAway.code(), 1001);
        assert_eq!(CloseCode::GoingAway.reason(), "going away");
    }

    fn is_text(item: Option<Outbound>, method: &str) -> bool {
        matches!(item, Some(Outbound::Text(t)) if t.contains(&format!("\"method\":\"{method}\"")))
    }

    #[tokio::test]
    async fn write_now_hands_a_ready_sink_the_message() {
        let (t, mut ends) = transport();
        let (mut tx, _rx) = t.start().await.unwrap();
        let note: Message = Notification::new("now", None).into();
        assert_eq!(tx.write_now(&note, None), WriteNow::Written);
        assert!(is_text(ends.written.next().await, "now"));
    }

    #[tokio::test]
    async fn write_now_leaves_a_sink_that_is_not_ready_to_finish_and_the_regular_send() {
        // A channel with room for one message, flushed once it is taken: the first message is
        // in the sink but not flushed, the second waits for the first to be taken.
        let (_to_receiver, inbound) = mpsc::unbounded::<Result<Inbound>>();
        let (out, mut written) = mpsc::channel::<Outbound>(0);
        let sink = out.sink_map_err(|e| Error::transport("sink", e));
        let (mut tx, _rx) = FramedTransport::new(inbound, sink).start().await.unwrap();
        let (first, second): (Message, Message) =
            (Notification::new("first", None).into(), Notification::new("second", None).into());
        assert_eq!(tx.write_now(&first, None), WriteNow::Started);
        assert_eq!(tx.write_now(&second, None), WriteNow::NotWritten);
        let reader = tokio::spawn(async move {
            (is_text(written.next().await, "first"), is_text(written.next().await, "second"))
        });
        tx.finish().await.unwrap();
        tx.send(second).await.unwrap();
        assert_eq!(reader.await.unwrap(), (true, true));
    }
}
