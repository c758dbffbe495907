//! Serving connections: [`ConnectionConfig`] (the caps, timeouts and shutdown signal of a
//! listener) and the one accept loop behind [`serve`](super::serve),
//! [`serve_with`](super::serve_with) and
//! [`StreamableHttp::serve_at`](super::StreamableHttp::serve_at).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::head_timer::HeadTimer;
use super::refusal::{RefusalKind, Refusals};
use super::self_wake::AbsorbSelfWake;
use super::shutdown::Shutdown;
use super::threads::{ConnectionThreads, Workers};

/// The default connection cap: 1024 open HTTP connections per listener.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::http::DEFAULT_MAX_CONNECTIONS, 1024);
/// ```
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// What a connection over the cap is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// How long connections stay up past the shutdown grace period, for streams ended at its end
/// to write their last frame (a `retry` hint).
const FLUSH_MARGIN: Duration = Duration::from_millis(500);

/// How long accepting must go without failing for a new failure to be logged as a new burst.
const ACCEPT_QUIET: Duration = Duration::from_secs(5);

/// The first and the longest pause after the listener failed to accept.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(1));

/// How connections are accepted, timed, capped and ended: the settings of a listener served
/// by [`serve_with`](super::serve_with) or
/// [`StreamableHttp::serve_at`](super::StreamableHttp::serve_at) (through
/// [`HttpConfig::connections`](super::HttpConfig::connections)), also read by the endpoints
/// themselves (the body deadline, the shutdown signal, where refusals are counted).
///
/// The defaults suit a server on the open internet: at most
/// [`DEFAULT_MAX_CONNECTIONS`] connections, 10 s to send a request's head (which is also how
/// long an idle kept-alive connection stays open), 30 s to send its body, 30 s for a write
/// to the client to make progress, and 10 s for in-flight requests to finish once shutdown
/// starts. Clones share the shutdown signal and
/// the refusal counts.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_server::http::ConnectionConfig;
/// use tokio_util::sync::CancellationToken;
///
/// let shutdown = CancellationToken::new();
/// let connections = ConnectionConfig::new()
///     .max_connections(256)
///     .header_read_timeout(Some(Duration::from_secs(5)))
///     .body_timeout(Some(Duration::from_secs(20)))
///     .shutdown_on(shutdown.clone())
///     .shutdown_grace(Duration::from_secs(5));
/// # drop(connections);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ConnectionConfig {
    pub(crate) max_connections: usize,
    pub(crate) header_read_timeout: Option<Duration>,
    pub(crate) body_timeout: Option<Duration>,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) keep_alive: bool,
    pub(crate) shutdown: Shutdown,
    pub(crate) shutdown_grace: Duration,
    pub(crate) refusals: Refusals,
    /// Connections handed off to an upgrade (WebSocket) and still served: shutdown waits for
    /// them too.
    pub(crate) upgraded: Arc<AtomicUsize>,
    pub(crate) threads: ConnectionThreads,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Some(Duration::from_secs(10)),
            body_timeout: Some(Duration::from_secs(30)),
            write_timeout: Some(Duration::from_secs(30)),
            keep_alive: true,
            shutdown: Shutdown::default(),
            shutdown_grace: Duration::from_secs(10),
            refusals: Refusals::new(),
            upgraded: Arc::default(),
            threads: ConnectionThreads::Caller,
        }
    }
}

impl ConnectionConfig {
    /// The default settings.
    ///
    /// # Examples
    ///
    /// ```
    /// let connections = mcpl_server::http::ConnectionConfig::new();
    /// # drop(connections);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The most open connections; one accepted beyond it is answered `503` with
    /// `Retry-After: 1` and closed at once (never queued). Keep it below the process's file
    /// descriptor limit. A connection upgraded to WebSocket leaves this count (the WebSocket
    /// endpoint caps its own with [`WsConfig::max_connections`](crate::ws::WsConfig::max_connections)).
    /// Default: [`DEFAULT_MAX_CONNECTIONS`].
    ///
    /// # Examples
    ///
    /// ```
    /// let connections = mcpl_server::http::ConnectionConfig::new().max_connections(10_000);
    /// # drop(connections);
    /// ```
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// How long a client may take to send a request's head (request line and headers) once
    /// the server waits for one; then the connection is closed. The wait starts when the
    /// connection opens and again after each response, so this is also how long an idle
    /// kept-alive connection stays open. Only a connection that sent part of a head is a
    /// refusal ([`RefusalKind::HeaderTimeout`]); one that sent nothing more is just idle, and
    /// closed without a count (logged at `trace`). `None`: forever (not for a public server).
    /// Default: 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let connections =
    ///     mcpl_server::http::ConnectionConfig::new().header_read_timeout(Some(Duration::from_secs(30)));
    /// # drop(connections);
    /// ```
    pub fn header_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a client may take to send a request's body, from the end of its head; a
    /// body still incomplete then is answered `408` and its connection closed. `None`:
    /// forever (not for a public server). Default: 30 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let connections =
    ///     mcpl_server::http::ConnectionConfig::new().body_timeout(Some(Duration::from_secs(60)));
    /// # drop(connections);
    /// ```
    pub fn body_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long a write to a client may go without making progress (its socket's buffers
    /// full: the client reads nothing); then the connection is closed, and the refusal
    /// logged once and counted ([`RefusalKind::WriteTimeout`]). This bounds how long a
    /// client that stops reading holds a connection, an SSE stream or a WebSocket. `None`:
    /// forever (not for a public server). Default: 30 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let connections =
    ///     mcpl_server::http::ConnectionConfig::new().write_timeout(Some(Duration::from_secs(60)));
    /// # drop(connections);
    /// ```
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Whether connections are kept open between requests (HTTP/1.1 keep-alive). Default:
    /// `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// let connections = mcpl_server::http::ConnectionConfig::new().keep_alive(false);
    /// # drop(connections);
    /// ```
    pub fn keep_alive(mut self, keep: bool) -> Self {
        self.keep_alive = keep;
        self
    }

    /// Shuts down gracefully once `token` is cancelled: idle connections close, endpoints
    /// refuse new requests with `503` (and `Retry-After`), end their SSE streams with a
    /// `retry` hint (a stream carrying a call's response once the call answered or the grace
    /// period passed), close WebSocket connections with `1001` (going away) once their
    /// in-flight requests finished, and let in-flight requests finish within
    /// [`shutdown_grace`](Self::shutdown_grace); then they close their sessions and stop the
    /// server's running task handlers, and serving returns. Meanwhile the listener stays open:
    /// a connection opened then carries one request, for what in-flight work needs of a
    /// client (a 2025 client's answer to a server request, a cancellation). Default: a token
    /// nobody cancels.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let shutdown = CancellationToken::new();
    /// let connections = mcpl_server::http::ConnectionConfig::new().shutdown_on(shutdown.clone());
    /// // Later, on SIGTERM: shutdown.cancel();
    /// # drop(connections);
    /// ```
    pub fn shutdown_on(mut self, token: CancellationToken) -> Self {
        self.shutdown = Shutdown::new(token);
        self
    }

    /// How long in-flight requests may take to finish once shutdown starts; then their
    /// connections are dropped (half a second later, for their streams' last frame).
    /// Default: 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let connections =
    ///     mcpl_server::http::ConnectionConfig::new().shutdown_grace(std::time::Duration::from_secs(30));
    /// # drop(connections);
    /// ```
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Where refusals are counted (and handed to a hook; see [`Refusals`]). Default: counts
    /// of this configuration's own.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::{ConnectionConfig, Refusals};
    ///
    /// let refusals = Refusals::new();
    /// let connections = ConnectionConfig::new().refusals(refusals.clone());
    /// assert_eq!(refusals.total(), 0);
    /// # drop(connections);
    /// ```
    pub fn refusals(mut self, refusals: Refusals) -> Self {
        self.refusals = refusals;
        self
    }

    /// Where connections are served: as tasks of the runtime the listener is served on (the
    /// default, [`ConnectionThreads::Caller`]), or on threads of the listener's own, each a
    /// current-thread runtime that owns the connections handed to it in turn, so that a
    /// connection's requests never cross threads (on the multi-threaded runtime they move
    /// between its workers). Handlers then run on those threads: a `tokio::spawn` in a
    /// handler spawns there, and `tokio::task::block_in_place` is not available (use
    /// `spawn_blocking`). The threads start with the listener and stop once it is done; see
    /// docs/performance.md for what each choice serves.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::{ConnectionConfig, ConnectionThreads};
    ///
    /// let connections = ConnectionConfig::new().threads(ConnectionThreads::PerCore);
    /// # drop(connections);
    /// ```
    pub fn threads(mut self, threads: ConnectionThreads) -> Self {
        self.threads = threads;
        self
    }

    /// The refusals counted so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let connections = mcpl_server::http::ConnectionConfig::new();
    /// assert_eq!(connections.refusal_counts().total(), 0);
    /// ```
    pub fn refusal_counts(&self) -> &Refusals {
        &self.refusals
    }
}

/// Counts one open connection while alive.
pub(crate) struct ConnectionSlot(Arc<AtomicUsize>);

impl ConnectionSlot {
    /// A slot if fewer than `max` are taken.
    pub(crate) fn take(counter: &Arc<AtomicUsize>, max: usize) -> Option<ConnectionSlot> {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| ConnectionSlot(counter.clone()))
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An accepted socket, registered with the runtime that serves it when its task starts.
enum Socket {
    /// Accepted on this runtime, served here.
    Registered(TcpStream),
    /// Handed to another runtime (see [`ConnectionThreads`]).
    Unregistered(std::net::TcpStream),
}

impl Socket {
    fn register(self) -> std::io::Result<TcpStream> {
        match self {
            Socket::Registered(stream) => Ok(stream),
            Socket::Unregistered(stream) => TcpStream::from_std(stream),
        }
    }
}

/// What a served connection's socket saw, read once the connection ended.
#[derive(Debug, Default)]
struct Seen {
    /// Bytes came in since the last response went out: a request head was under way.
    reading: AtomicBool,
    /// A write made no progress for the write timeout.
    write_stalled: AtomicBool,
}

/// A connection's socket, watched (see [`Seen`]): a write that makes no progress for the
/// write timeout fails with [`std::io::ErrorKind::TimedOut`].
struct Watched {
    io: TcpStream,
    seen: Arc<Seen>,
    write_timeout: Option<Duration>,
    /// Since when a write waits, as the deadline it has (only while one waits).
    stall: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Watched {
    /// After a write returned `Pending`: whether it has waited for the write timeout.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(timeout) = self.write_timeout else { return false };
        let stall = self.stall.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stall.as_mut().poll(cx).is_ready() {
            self.seen.write_stalled.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Acts on the outcome of a write (or flush): a response going out (`wrote` bytes) ends
    /// the head that was being read.
    fn wrote<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<std::io::Result<T>>,
        wrote: impl FnOnce(&T) -> bool,
    ) -> Poll<std::io::Result<T>> {
        match poll {
            Poll::Ready(done) => {
                self.stall = None;
                if done.as_ref().is_ok_and(wrote) {
                    self.seen.reading.store(false, Ordering::Relaxed);
                }
                Poll::Ready(done)
            }
            Poll::Pending if self.stalled(cx) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client read nothing for the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.seen.reading.store(true, Ordering::Relaxed);
        }
        poll
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(cx, poll, |n| *n > 0)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(cx, poll, |n| *n > 0)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        self.wrote(cx, poll, |()| false)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The peer address of a request served by the accept loop (axum's `ConnectInfo`, so a router
/// can extract it too).
pub(crate) fn peer_of<B>(request: &hyper::Request<B>) -> Option<SocketAddr> {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}

/// A service that tags each request with its connection's peer address.
#[derive(Clone)]
pub(crate) struct WithPeer<S> {
    pub(crate) inner: S,
    pub(crate) peer: SocketAddr,
}

impl<S> hyper::service::Service<hyper::Request<Incoming>> for WithPeer<S>
where
    S: hyper::service::Service<hyper::Request<Incoming>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        self.inner.call(request)
    }
}

/// Whether an accept error concerns the one connection (the listener itself is fine).
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// Accepts connections on `listener` and serves each with `service_for(peer)` (HTTP/1.1, upgrades
/// allowed, `TCP_NODELAY` set) under `config`, until `config`'s shutdown signal; then drains:
/// open connections finish their requests within the grace period (idle ones close at once),
/// while the listener stays open for what in-flight work needs of its clients (a 2025
/// client's answer to the server's request, a cancellation, on a connection of its own):
/// such a connection carries one request (the endpoints refuse new work with `503`). Once
/// every connection ended (or the grace period and [`FLUSH_MARGIN`] passed: the rest are
/// dropped), the listener is closed and this returns.
pub(crate) async fn serve_connections<F, S, B>(
    listener: TcpListener,
    config: ConnectionConfig,
    service_for: F,
) -> std::io::Result<()>
where
    F: Fn(SocketAddr) -> S,
    S: hyper::service::Service<
            hyper::Request<Incoming>,
            Response = hyper::Response<B>,
            Error = Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let shutdown = config.shutdown.clone();
    let open = Arc::new(AtomicUsize::new(0));
    let mut connections = JoinSet::new();
    // Connections on threads of their own, if so configured: stopped once this returns.
    let workers = Workers::start(config.threads)?;
    // Accept failures in a row, and when the last was: a burst is logged when it starts (not
    // again for failures within `ACCEPT_QUIET` of the last) and when accepting works again.
    let mut failures = 0u32;
    let mut last_failure: Option<tokio::time::Instant> = None;
    let mut warned = false;
    // Once shutdown started: until when the open connections may finish.
    let mut draining: Option<tokio::time::Instant> = None;
    let mut drained = true;
    loop {
        let deadline = draining.unwrap_or_else(tokio::time::Instant::now);
        let accepted = tokio::select! {
            biased;
            () = shutdown.fired(), if draining.is_none() => {
                draining = Some(tokio::time::Instant::now() + config.shutdown_grace + FLUSH_MARGIN);
                if connections.is_empty() {
                    break;
                }
                continue;
            }
            () = tokio::time::sleep_until(deadline), if draining.is_some() => {
                drained = false;
                break;
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {
                if draining.is_some() && connections.is_empty() {
                    break;
                }
                continue;
            }
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_connection_error(&e) => {
                tracing::debug!(error = %e, "a connection failed before it was accepted");
                continue;
            }
            Err(e) => {
                // Such as running out of file descriptors: wait for some to close, longer
                // each time, and say so once per burst.
                let quiet = last_failure.is_none_or(|at| at.elapsed() > ACCEPT_QUIET);
                if failures == 0 && quiet {
                    tracing::warn!(error = %e, "accepting connections failed; backing off");
                    warned = true;
                }
                last_failure = Some(tokio::time::Instant::now());
                config.refusals.record(RefusalKind::AcceptFailed, None, &e.to_string());
                failures = failures.saturating_add(1);
                let pause = ACCEPT_BACKOFF.0.saturating_mul(1 << failures.min(8).saturating_sub(1));
                // At most a second; shutdown is seen at the top of the loop.
                tokio::time::sleep(pause.min(ACCEPT_BACKOFF.1)).await;
                continue;
            }
        };
        if failures > 0 {
            if std::mem::take(&mut warned) {
                tracing::info!(failures, "accepting connections again");
            }
            failures = 0;
        }
        let Some(slot) = ConnectionSlot::take(&open, config.max_connections) else {
            config.refusals.record(
                RefusalKind::ConnectionLimit,
                Some(peer),
                "connection cap reached",
            );
            // Best effort: a socket just accepted has room for this much.
            let _ = stream.try_write(BUSY);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let service = service_for(peer);
        let (config, shutdown) = (config.clone(), shutdown.clone());
        // To another thread's runtime, the socket goes without this one's registration.
        let (socket, runtime) = match &workers {
            None => (Socket::Registered(stream), None),
            Some(workers) => match stream.into_std() {
                Ok(stream) => (Socket::Unregistered(stream), Some(workers.next())),
                Err(e) => {
                    tracing::debug!(error = %e, %peer, "could not hand a connection over");
                    continue;
                }
            },
        };
        let connection = async move {
            let stream = match socket.register() {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::debug!(error = %e, %peer, "could not take a connection over");
                    return;
                }
            };
            // Opened while draining: one request (an answer in-flight work waits for), then
            // closed.
            let draining = shutdown.is_fired();
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(HeadTimer::new())
                .header_read_timeout(config.header_read_timeout)
                .keep_alive(config.keep_alive && !draining);
            let seen = Arc::new(Seen::default());
            let write_timeout = config.write_timeout;
            let io = Watched { io: stream, seen: seen.clone(), write_timeout, stall: None };
            let conn = http.serve_connection(TokioIo::new(io), service).with_upgrades();
            let mut conn = AbsorbSelfWake::new(Box::pin(conn));
            let ended = tokio::select! {
                biased;
                ended = &mut conn => ended,
                () = shutdown.fired(), if !draining => {
                    // Idle connections close now; busy ones after their response.
                    conn.get_mut().as_mut().graceful_shutdown();
                    conn.await
                }
            };
            match ended {
                Ok(()) => {}
                Err(_) if seen.write_stalled.load(Ordering::Relaxed) => config.refusals.record(
                    RefusalKind::WriteTimeout,
                    Some(peer),
                    "the client read nothing for the write timeout",
                ),
                // Part of a head came, not all of it: a refusal. Nothing at all: an idle
                // connection (kept alive, or opened ahead of need) closed on time.
                Err(e) if e.is_timeout() && seen.reading.load(Ordering::Relaxed) => {
                    config.refusals.record(
                        RefusalKind::HeaderTimeout,
                        Some(peer),
                        "no complete request head in time",
                    );
                }
                Err(e) if e.is_timeout() => tracing::trace!(%peer, "idle connection closed"),
                Err(e) => tracing::debug!(error = %e, %peer, "connection ended with an error"),
            }
            drop(slot);
        };
        match runtime {
            Some(runtime) => connections.spawn_on(connection, runtime),
            None => connections.spawn(connection),
        };
    }
    drop(listener);
    // Connections upgraded to WebSocket left the set above: their endpoint drains them on
    // the same signal, within the same deadline.
    if let Some(deadline) = draining {
        while config.upgraded.load(Ordering::SeqCst) > 0 && drained {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => drained = false,
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }
    if !drained {
        tracing::debug!(
            open = connections.len(),
            "connections still busy after the grace period; dropped"
        );
    }
    connections.shutdown().await;
    Ok(())
}
