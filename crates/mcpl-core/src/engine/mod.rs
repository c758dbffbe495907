//! The protocol engine: request correlation, concurrent handlers, cancellation, progress,
//! timeouts, and a connection lifecycle that cannot be misused.
//!
//! An [`Engine`] is one protocol endpoint (client, server or host side alike). It holds the
//! handlers for incoming requests and notifications, and at most one live connection at a time:
//!
//! - [`Engine::connect`] starts a transport (consuming it) and fails fast with `AlreadyConnected`
//!   while another connection is live or connecting, before the new transport is touched.
//! - [`Engine::close`] frees the engine at once, whatever the transport does: then the close
//!   callback runs, in-flight handlers are cancelled, pending requests settle with
//!   `ConnectionClosed`, and the transport is closed (bounded by a timeout).
//! - Each connection has its own tables and tasks; events from a replaced transport can never
//!   reach a later connection, and a [`Peer`] handle stays bound to the connection it came from.
//!
//! # Examples
//!
//! ```
//! use mcpl_core::engine::{Engine, RequestOptions};
//! use mcpl_core::transport::memory;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
//! let server = Engine::new();
//! server.on_request("echo", |_ctx, params| async move { Ok(params.unwrap_or_default()) });
//! let client = Engine::new();
//!
//! let (a, b) = memory::pair();
//! server.connect(b).await?;
//! let peer = client.connect(a).await?;
//! let answer = peer.request("echo", Some(json!({"x": 1})), RequestOptions::new()).await?;
//! assert_eq!(answer, json!({"x": 1}));
//! client.close().await?;
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::transport::{Transport, TransportEvent, TransportSender};

mod connection;
mod driven;
pub mod embed;
mod handler;
mod lazy_meta;
mod options;
mod outgoing;
mod refusal;
mod room;
mod table;
mod typed;

use self::connection::Connection;
pub use self::connection::Peer;
#[doc(hidden)]
pub use self::driven::{Driven, NotRun, Running};
pub use self::handler::{
    BoxFuture, HandlerResult, IntoResult, NotificationContext, NotificationHandler, RequestContext,
    RequestHandler,
};
use self::handler::{SharedNotificationHandler, SharedRequestHandler};
#[doc(hidden)]
pub use self::lazy_meta::LazyMeta;
pub use self::options::{DEFAULT_REQUEST_TIMEOUT, ProgressUpdate, RequestOptions};
use self::outgoing::Queue;
pub use self::refusal::Refusal;
pub use tokio_util::sync::CancellationToken;

/// The default bound on the peer's requests in flight on one connection: 256.
pub const DEFAULT_MAX_INFLIGHT_REQUESTS: usize = 256;

/// The default bound on the messages of one connection waiting to be written to the peer: 256.
pub const DEFAULT_MAX_QUEUED_MESSAGES: usize = 256;

/// The default bound on the bytes of one connection waiting to be written to the peer: 8 MiB
/// (see [`EngineConfig::max_queued_bytes`]).
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 8 * 1024 * 1024;

/// The default bound on how long closing a transport may take: 5 seconds.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The default bound on the notifications of one connection that wait for their handlers,
/// as the JSON size of their params: 8 MiB (see [`EngineConfig::notification_queue_bytes`]).
pub const DEFAULT_NOTIFICATION_QUEUE_BYTES: usize = 8 * 1024 * 1024;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Engine settings.
#[derive(Debug, Clone)]
#[must_use]
pub struct EngineConfig {
    request_timeout: Duration,
    close_timeout: Duration,
    max_inflight_requests: usize,
    notification_queue_bytes: usize,
    max_queued_messages: usize,
    max_queued_bytes: usize,
    write_timeout: Option<Duration>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            max_inflight_requests: DEFAULT_MAX_INFLIGHT_REQUESTS,
            notification_queue_bytes: DEFAULT_NOTIFICATION_QUEUE_BYTES,
            max_queued_messages: DEFAULT_MAX_QUEUED_MESSAGES,
            max_queued_bytes: DEFAULT_MAX_QUEUED_BYTES,
            write_timeout: None,
        }
    }
}

impl EngineConfig {
    /// The default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// The timeout of outgoing requests that do not set their own. Default: 60 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long closing a transport may take before it is abandoned. Default: 5 s.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// The most requests from the peer whose handlers run at once on one connection; one
    /// more is answered at once with error `-32000` ("too many requests in flight", the limit
    /// in `data.maxInFlight`), never queued. Default: [`DEFAULT_MAX_INFLIGHT_REQUESTS`].
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_core::engine::EngineConfig::new().max_inflight_requests(32);
    /// # drop(config);
    /// ```
    pub fn max_inflight_requests(mut self, max: usize) -> Self {
        self.max_inflight_requests = max;
        self
    }

    /// How much may wait for the notification handlers of one connection, as the JSON size
    /// of the notifications' params, before the engine stops reading from the transport
    /// (backpressure: a peer that floods notifications is slowed down to the pace of the
    /// handlers, and memory stays bounded). A notification larger than the whole budget
    /// waits alone. At most 1,024 notifications wait whatever their size. Default:
    /// [`DEFAULT_NOTIFICATION_QUEUE_BYTES`] (8 MiB).
    pub fn notification_queue_bytes(mut self, bytes: usize) -> Self {
        self.notification_queue_bytes = bytes.max(1);
        self
    }

    /// The most outgoing messages of one connection that wait for the transport to take
    /// them (with [`max_queued_bytes`](Self::max_queued_bytes), the bound on the outgoing
    /// queue). At the bound, senders wait for room (backpressure): a handler's response (its
    /// request still counts as in flight meanwhile, so the in-flight limit then refuses
    /// more), [`Peer::notify`], [`Peer::request`] (the wait counts toward its timeout), and
    /// the connection's reader when it has an answer of its own to send (a refusal over the
    /// in-flight limit, an unknown method, a parse error), so it reads nothing more. A peer
    /// that sends but never reads thus stops being read, instead of piling up answers in
    /// memory; with a [`write_timeout`](Self::write_timeout) it is then cut. The one message
    /// that cannot wait, the `notifications/cancelled` of an outgoing request whose caller
    /// gave up, goes past the bound (at most one per request in flight). Default:
    /// [`DEFAULT_MAX_QUEUED_MESSAGES`]; 0 is taken as 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_core::engine::EngineConfig::new().max_queued_messages(64);
    /// # drop(config);
    /// ```
    pub fn max_queued_messages(mut self, max: usize) -> Self {
        self.max_queued_messages = max.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self
    }

    /// The most bytes of one connection's outgoing messages that wait for the transport to
    /// take them, as the JSON size of their payloads (see
    /// [`max_queued_messages`](Self::max_queued_messages) for what waits at the bound). A
    /// message larger than the whole budget waits for the queue to empty, then goes alone.
    /// Default: [`DEFAULT_MAX_QUEUED_BYTES`] (8 MiB); 0 is taken as 1.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = mcpl_core::engine::EngineConfig::new().max_queued_bytes(1024 * 1024);
    /// # drop(config);
    /// ```
    pub fn max_queued_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_bytes = bytes.max(1);
        self
    }

    /// How long one write to the transport may take. A write still unfinished then means
    /// the peer stopped reading (its buffers and ours are full): the connection is closed
    /// (its close reason is [`CloseReason::Failed`] with [`Error::WriteTimeout`]), and the
    /// refusal, [`Refusal::WriteTimeout`], is handed to the hook of [`Engine::on_refusal`]
    /// (or logged once at `debug`). `None`: a write may wait forever (the queue bound still
    /// holds the memory). Connections served inline and driven connections whose sender
    /// never blocks are not concerned. Default: `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let config = mcpl_core::engine::EngineConfig::new().write_timeout(Some(Duration::from_secs(30)));
    /// # drop(config);
    /// ```
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }
}

/// Why a connection ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CloseReason {
    /// [`Engine::close`] was called.
    Local,
    /// The peer closed the transport.
    PeerClosed,
    /// The transport failed.
    Failed(Arc<Error>),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::Local => f.write_str("closed locally"),
            CloseReason::PeerClosed => f.write_str("closed by the peer"),
            CloseReason::Failed(e) => write!(f, "transport failed: {e}"),
        }
    }
}

type CloseCallback = Arc<dyn Fn(&CloseReason) + Send + Sync>;
type RefusalHook = Arc<dyn Fn(&Refusal) + Send + Sync>;
type EventHook = Arc<dyn Fn(&Peer, TransportEvent) + Send + Sync>;

#[derive(Default)]
pub(crate) struct HandlerTable {
    requests: RwLock<HashMap<String, SharedRequestHandler>>,
    notifications: RwLock<HashMap<String, SharedNotificationHandler>>,
    request_fallback: RwLock<Option<SharedRequestHandler>>,
    notification_fallback: RwLock<Option<SharedNotificationHandler>>,
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

impl HandlerTable {
    pub(crate) fn request_handler(&self, method: &str) -> Option<SharedRequestHandler> {
        read(&self.requests).get(method).cloned().or_else(|| read(&self.request_fallback).clone())
    }

    pub(crate) fn notification_handler(&self, method: &str) -> Option<SharedNotificationHandler> {
        read(&self.notifications)
            .get(method)
            .cloned()
            .or_else(|| read(&self.notification_fallback).clone())
    }
}

enum State {
    Idle,
    Connecting(Arc<Connection>),
    /// A transport is starting; it has no connection yet.
    Starting(u64),
    Connected(Arc<Connection>),
}

impl State {
    fn generation(&self) -> Option<u64> {
        match self {
            State::Idle => None,
            State::Starting(g) => Some(*g),
            State::Connecting(c) | State::Connected(c) => Some(c.generation),
        }
    }
}

/// What an engine's connections share with it, behind one pointer.
pub(crate) struct Common {
    pub(crate) handlers: HandlerTable,
    pub(crate) next_id: AtomicI64,
    pub(crate) config: EngineConfig,
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// The handlers, the request id counter and the settings, shared with every connection
    /// (one pointer each).
    pub(crate) common: Arc<Common>,
    next_generation: AtomicU64,
    on_close: RwLock<Option<CloseCallback>>,
    on_refusal: RwLock<Option<RefusalHook>>,
    on_transport_event: RwLock<Option<EventHook>>,
}

impl Shared {
    /// Frees the slot if it still holds `generation`; returns the connection it held.
    pub(crate) fn detach(&self, generation: u64) -> Option<Arc<Connection>> {
        let mut state = lock(&self.state);
        if state.generation() != Some(generation) {
            return None;
        }
        match std::mem::replace(&mut *state, State::Idle) {
            State::Connecting(c) | State::Connected(c) => Some(c),
            State::Starting(_) | State::Idle => None,
        }
    }

    pub(crate) fn run_close_callback(&self, reason: &CloseReason) {
        let callback = read(&self.on_close).clone();
        if let Some(callback) = callback {
            callback(reason);
        }
    }

    /// Runs the refusal hook; `false` if there is none.
    pub(crate) fn run_refusal_hook(&self, refusal: &Refusal) -> bool {
        let hook = read(&self.on_refusal).clone();
        hook.map(|hook| hook(refusal)).is_some()
    }

    /// Runs the transport event hook; `false` if there is none.
    pub(crate) fn run_event_hook(&self, peer: &Peer, event: TransportEvent) -> bool {
        let hook = read(&self.on_transport_event).clone();
        hook.map(|hook| hook(peer, event)).is_some()
    }
}

/// One protocol endpoint: handlers plus at most one live connection.
///
/// Cheap to clone; clones share handlers and the connection slot. See the
/// [module documentation](self) for the lifecycle rules.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("connected", &self.is_connected())
            .field("config", &self.shared.common.config)
            .finish()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine {
    /// Creates an engine with default settings.
    pub fn new() -> Engine {
        Engine::with_config(EngineConfig::default())
    }

    /// Creates an engine with `config`.
    pub fn with_config(config: EngineConfig) -> Engine {
        Engine {
            shared: Arc::new(Shared {
                state: Mutex::new(State::Idle),
                common: Arc::new(Common {
                    handlers: HandlerTable::default(),
                    next_id: AtomicI64::new(0),
                    config,
                }),
                next_generation: AtomicU64::new(1),
                on_close: RwLock::new(None),
                on_refusal: RwLock::new(None),
                on_transport_event: RwLock::new(None),
            }),
        }
    }

    /// Registers the handler for incoming requests of `method`, replacing any previous one.
    ///
    /// Handlers run concurrently, each in its own task. Any method name works, including custom
    /// ones such as MCPL's. A handler answers with a [`Value`] or with encoded JSON
    /// ([`RawJson`](crate::jsonrpc::RawJson), see [`IntoResult`]).
    pub fn on_request<F, Fut, R>(&self, method: impl Into<String>, handler: F) -> &Self
    where
        F: Fn(RequestContext, Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, crate::jsonrpc::ErrorObject>> + Send + 'static,
        R: IntoResult,
    {
        write(&self.shared.common.handlers.requests).insert(method.into(), Arc::new(handler));
        self
    }

    /// Registers the handler for requests whose method has no handler of its own.
    ///
    /// Without one, such requests are answered with `-32601` (method not found).
    pub fn on_any_request<F, Fut, R>(&self, handler: F) -> &Self
    where
        F: Fn(RequestContext, Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<R, crate::jsonrpc::ErrorObject>> + Send + 'static,
        R: IntoResult,
    {
        *write(&self.shared.common.handlers.request_fallback) = Some(Arc::new(handler));
        self
    }

    /// Registers the handler for incoming notifications of `method`.
    ///
    /// `notifications/cancelled` and `notifications/progress` are handled by the engine itself.
    pub fn on_notification<F, Fut>(&self, method: impl Into<String>, handler: F) -> &Self
    where
        F: Fn(NotificationContext, Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        write(&self.shared.common.handlers.notifications).insert(method.into(), Arc::new(handler));
        self
    }

    /// Registers the handler for notifications whose method has no handler of its own.
    pub fn on_any_notification<F, Fut>(&self, handler: F) -> &Self
    where
        F: Fn(NotificationContext, Option<Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        *write(&self.shared.common.handlers.notification_fallback) = Some(Arc::new(handler));
        self
    }

    /// Sets the callback that runs first when an established connection ends, before in-flight
    /// handlers are cancelled and pending requests settle.
    pub fn on_close(&self, callback: impl Fn(&CloseReason) + Send + Sync + 'static) -> &Self {
        *write(&self.shared.on_close) = Some(Arc::new(callback));
        self
    }

    /// Sets the hook told of every [`Refusal`] on this engine's connections (requests over the
    /// in-flight limit, peers that stopped reading): where a server logs and counts them.
    /// Without a hook, each is logged once at `debug`; with one, the hook does the logging.
    /// It runs on the connection's tasks: keep it cheap.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use mcpl_core::engine::{Engine, Refusal};
    ///
    /// let refused = Arc::new(AtomicU64::new(0));
    /// let counter = refused.clone();
    /// let engine = Engine::new();
    /// engine.on_refusal(move |refusal: &Refusal| {
    ///     tracing::info!(refusal = refusal.as_str(), "refused");
    ///     counter.fetch_add(1, Ordering::Relaxed);
    /// });
    /// # drop(engine);
    /// ```
    pub fn on_refusal(&self, hook: impl Fn(&Refusal) + Send + Sync + 'static) -> &Self {
        *write(&self.shared.on_refusal) = Some(Arc::new(hook));
        self
    }

    /// Sets the hook told of the [`TransportEvent`]s of this engine's connections that the
    /// engine does not act on itself (it settles [`TransportEvent::RequestFailed`] with the
    /// error): a [`TransportEvent::SessionRenewed`], say. Events come from the transport,
    /// never from the peer. The hook runs on the connection's reader, before the messages
    /// that follow the event are read: keep it cheap (spawn what takes time). Replaces any
    /// previous hook.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::Engine;
    /// use mcpl_core::transport::TransportEvent;
    ///
    /// let engine = Engine::new();
    /// engine.on_transport_event(|_peer, event| {
    ///     if let TransportEvent::SessionRenewed(result) = event {
    ///         tracing::info!(server = %result.server_info.name, "new session");
    ///     }
    /// });
    /// # drop(engine);
    /// ```
    pub fn on_transport_event(
        &self,
        hook: impl Fn(&Peer, TransportEvent) + Send + Sync + 'static,
    ) -> &Self {
        *write(&self.shared.on_transport_event) = Some(Arc::new(hook));
        self
    }

    /// Whether a connection is established.
    pub fn is_connected(&self) -> bool {
        matches!(*lock(&self.shared.state), State::Connected(_))
    }

    /// The peer of the established connection, if any.
    pub fn peer(&self) -> Option<Peer> {
        match &*lock(&self.shared.state) {
            State::Connected(conn) => {
                Some(Peer { conn: conn.clone(), related: None, served: None })
            }
            _ => None,
        }
    }

    /// Starts `transport` and makes it this engine's connection.
    ///
    /// # Errors
    ///
    /// - `AlreadyConnected` if a connection is established or connecting; the transport is
    ///   dropped without being started and the live connection is untouched.
    /// - Whatever the transport's `start` returned; the engine stays unconnected.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the engine unconnected and closes the transport if it started.
    pub async fn connect<T: Transport>(&self, transport: T) -> Result<Peer> {
        let (peer, _) = self
            .connect_inner(transport, None::<fn(Peer) -> std::future::Ready<Result<()>>>)
            .await?;
        Ok(peer)
    }

    /// Like [`connect`](Self::connect), but runs `setup` (e.g. a handshake) over the started
    /// connection before publishing it.
    ///
    /// While `setup` runs, the engine counts as connecting: another `connect` fails with
    /// `AlreadyConnected`, [`peer`](Self::peer) is `None`, and [`close`](Self::close) aborts the
    /// attempt. If `setup` fails, the new connection is torn down (its transport closed, its
    /// handlers detached) and the engine is left unconnected and reconnectable.
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect), plus `setup`'s error, or `ConnectionClosed` if the
    /// connection ended (or [`close`](Self::close) was called) during `setup`.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future tears the attempt down and leaves the engine unconnected.
    pub async fn connect_with<T, F, Fut, O>(&self, transport: T, setup: F) -> Result<(Peer, O)>
    where
        T: Transport,
        F: FnOnce(Peer) -> Fut,
        Fut: Future<Output = Result<O>>,
    {
        let (peer, output) = self.connect_inner(transport, Some(setup)).await?;
        match output {
            Some(output) => Ok((peer, output)),
            // Unreachable: with a setup step, its output is always present.
            None => Err(Error::ConnectionClosed),
        }
    }

    /// Connects; without `setup` the connection is established as soon as the transport has
    /// started (before its tasks run, so even a peer that closes at once finds it established).
    async fn connect_inner<T, F, Fut, O>(
        &self,
        transport: T,
        setup: Option<F>,
    ) -> Result<(Peer, Option<O>)>
    where
        T: Transport,
        F: FnOnce(Peer) -> Fut,
        Fut: Future<Output = Result<O>>,
    {
        // Reserve the slot before touching the transport.
        let generation = {
            let mut state = lock(&self.shared.state);
            if !matches!(*state, State::Idle) {
                return Err(Error::AlreadyConnected);
            }
            let generation = self.shared.next_generation.fetch_add(1, Ordering::Relaxed);
            *state = State::Starting(generation);
            generation
        };
        let mut attempt = Attempt { shared: &self.shared, generation, done: false };

        let (sender, receiver) = transport.start().await?;
        let conn = Connection::queued(generation, &self.shared, Queue::new(sender), None);
        let still_ours = {
            let mut state = lock(&self.shared.state);
            let ours = state.generation() == Some(generation);
            if ours {
                if setup.is_some() {
                    *state = State::Connecting(conn.clone());
                } else {
                    conn.published.store(true, Ordering::SeqCst);
                    *state = State::Connected(conn.clone());
                }
            }
            ours
        };
        // Reading starts only once the slot holds the connection.
        conn.start_reading(receiver);
        if !still_ours {
            // `close` ran while the transport was starting.
            attempt.done = true;
            let _ = conn.teardown(CloseReason::Local).await;
            return Err(Error::ConnectionClosed);
        }
        let peer = Peer { conn: conn.clone(), related: None, served: None };
        let Some(setup) = setup else {
            attempt.done = true;
            return Ok((peer, None));
        };
        let output = match setup(peer.clone()).await {
            Ok(output) => output,
            Err(e) => {
                attempt.done = true;
                self.shared.detach(generation);
                let _ = conn.teardown(CloseReason::Local).await;
                return Err(e);
            }
        };
        let published = {
            let mut state = lock(&self.shared.state);
            let ours = state.generation() == Some(generation) && !conn.is_closed();
            if ours {
                conn.published.store(true, Ordering::SeqCst);
                *state = State::Connected(conn.clone());
            }
            ours
        };
        if !published {
            attempt.done = true;
            let _ = conn.teardown(CloseReason::Local).await;
            return Err(Error::ConnectionClosed);
        }
        attempt.done = true;
        Ok((peer, Some(output)))
    }

    /// Embedding entry point: see
    /// [`embed::serve_request`](crate::engine::embed::serve_request).
    #[doc(hidden)]
    pub async fn serve_request<S: TransportSender>(
        &self,
        request: crate::jsonrpc::Request,
        sender: S,
    ) -> Result<()> {
        self.serve_request_with(request, None, None, sender).await
    }

    /// Embedding entry point: see
    /// [`embed::serve_request_with`](crate::engine::embed::serve_request_with).
    #[doc(hidden)]
    pub async fn serve_request_with<S: TransportSender>(
        &self,
        request: crate::jsonrpc::Request,
        meta: Option<LazyMeta>,
        data: Option<Box<dyn std::any::Any + Send + Sync>>,
        sender: S,
    ) -> Result<()> {
        let conn = Connection::inline(&self.shared, data.map(Arc::from));
        conn.serve_inline(request, meta, sender).await
    }

    /// Embedding entry point: see
    /// [`embed::run_request`](crate::engine::embed::run_request).
    #[doc(hidden)]
    ///
    /// Not an `async fn`: the returned future is the connection's own (one future, not one
    /// per layer, each holding the arguments again). Inlined, with the layers below it, so
    /// that the caller's future holds it as it is built instead of a copy (about 1.1 KB).
    #[inline(always)]
    pub fn run_request<'a, S, F, Fut>(
        &self,
        id: crate::jsonrpc::RequestId,
        method: impl Into<String>,
        meta: Option<LazyMeta>,
        data: Option<Box<dyn std::any::Any + Send + Sync>>,
        sender: &'a mut S,
        handler: F,
    ) -> impl Future<Output = Result<Fut::Output>> + 'a
    where
        S: TransportSender,
        F: FnOnce(RequestContext) -> Fut + 'a,
        Fut: Future + 'a,
    {
        let conn = Connection::inline(&self.shared, data.map(Arc::from));
        let meta = meta.map_or(lazy_meta::MetaSlot::Absent, lazy_meta::MetaSlot::Lazy);
        conn.run_inline((id, method.into()), meta, sender, handler)
    }

    /// Numbers the requests this engine sends from `first` on (they count up from 0
    /// otherwise). Instances of a fleet that pass a client's answers to each other start at
    /// distinct random points, so an answer names the request of one instance only.
    ///
    /// # Examples
    ///
    /// ```
    /// let engine = mcpl_core::engine::Engine::new();
    /// engine.number_requests_from(1 << 40);
    /// ```
    pub fn number_requests_from(&self, first: i64) {
        self.shared.common.next_id.store(first, Ordering::Relaxed);
    }

    /// Embedding entry point: see
    /// [`embed::drive`](crate::engine::embed::drive).
    #[doc(hidden)]
    pub fn drive<S: TransportSender>(&self, sender: S) -> Driven {
        let generation = self.shared.next_generation.fetch_add(1, Ordering::Relaxed);
        Driven::new(generation, &self.shared, sender, None)
    }

    /// Like [`drive`](Self::drive), with `data` attached to the connection: handlers read it
    /// with [`Peer::data`] (through [`RequestContext::peer`] or [`NotificationContext::peer`]).
    #[doc(hidden)]
    pub fn drive_with<S, D>(&self, sender: S, data: D) -> Driven
    where
        S: TransportSender,
        D: std::any::Any + Send + Sync,
    {
        self.drive_with_shared(sender, Arc::new(data))
    }

    /// Like [`drive_with`](Self::drive_with), with `data` already shared.
    #[doc(hidden)]
    pub fn drive_with_shared<S, D>(&self, sender: S, data: Arc<D>) -> Driven
    where
        S: TransportSender,
        D: std::any::Any + Send + Sync,
    {
        let generation = self.shared.next_generation.fetch_add(1, Ordering::Relaxed);
        Driven::new(generation, &self.shared, sender, Some(data))
    }

    /// Closes the current connection, if any.
    ///
    /// The engine is free for a new [`connect`](Self::connect) as soon as this is called, even if
    /// the transport's close hangs or fails. Then, in order: the close callback runs, in-flight
    /// handlers are cancelled, pending requests settle with `ConnectionClosed`, and the transport
    /// is closed (abandoned after the close timeout).
    ///
    /// # Errors
    ///
    /// The transport's close error, reported after the engine was freed.
    ///
    /// # Cancel safety
    ///
    /// The engine is freed before the first await point; dropping the future skips only the wait
    /// for the transport to close.
    pub async fn close(&self) -> Result<()> {
        let taken = {
            let mut state = lock(&self.shared.state);
            match std::mem::replace(&mut *state, State::Idle) {
                State::Connected(c) | State::Connecting(c) => Some(c),
                State::Starting(_) | State::Idle => None,
            }
        };
        match taken {
            Some(conn) => conn.teardown(CloseReason::Local).await,
            None => Ok(()),
        }
    }

    /// Sends a request on the current connection and waits for the response.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if there is no connection; otherwise as [`Peer::request`].
    ///
    /// # Cancel safety
    ///
    /// As [`Peer::request`]: dropping the future cancels the request.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value> {
        let peer = self.peer().ok_or(Error::ConnectionClosed)?;
        peer.request(method, params, options).await
    }

    /// Sends a notification on the current connection.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if there is no connection.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        let peer = self.peer().ok_or(Error::ConnectionClosed)?;
        peer.notify(method, params).await
    }
}

/// Frees the slot if a connect attempt ends early (an error or a dropped future).
struct Attempt<'a> {
    shared: &'a Shared,
    generation: u64,
    done: bool,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(conn) = self.shared.detach(self.generation) {
            // The future was dropped mid-setup: close the half-made connection in the background.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = conn.teardown(CloseReason::Local).await;
                });
            }
        } else {
            let mut state = lock(&self.shared.state);
            if matches!(*state, State::Starting(g) if g == self.generation) {
                *state = State::Idle;
            }
        }
    }
}
