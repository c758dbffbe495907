//! One live connection: the writer and reader tasks, the in-flight tables, and [`Peer`].

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::{FutureExt, StreamExt};
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::driven::Queue;
use super::handler::{
    AfterAnswer, HandlerResult, NotificationContext, RequestContext, SharedRequestHandler,
};
use super::lazy_meta::{LazyMeta, MetaSlot};
use super::options::{ProgressUpdate, RequestOptions};
use super::room::{Held, Reservation, Room, weigh};
use super::{CloseReason, HandlerTable, Refusal, Shared, lock};
use crate::error::{Error, Result};
use crate::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response,
};
use crate::transport::{TransportReceiver, TransportSender};

/// The parts of a new connection its tasks take when they start.
pub(crate) struct Starter {
    outbound_rx: UnboundedReceiver<Outbound>,
}

impl Starter {
    /// Starts the writer, reader and notifier tasks of `conn` over a started transport.
    pub(crate) fn run<S, R>(self, conn: &Arc<Connection>, sender: S, receiver: R)
    where
        S: TransportSender,
        R: TransportReceiver,
    {
        let (notify_tx, notify_rx) = mpsc::channel(NOTIFICATION_QUEUE);
        let queue = NotifyQueue { tx: notify_tx, budget: conn.notification_budget() };
        let writer = tokio::spawn(write_loop(conn.clone(), sender, self.outbound_rx));
        let notifier = tokio::spawn(notify_loop(conn.clone(), notify_rx));
        let reader = tokio::spawn(read_loop(conn.clone(), receiver, queue));
        *lock(&conn.tasks) = Tasks {
            writer: Some(writer),
            reader: Some(reader.abort_handle()),
            notifier: Some(notifier.abort_handle()),
        };
    }
}

/// Runs a handler, turning a panic into a `-32603` answer instead of leaving the caller waiting.
async fn run_handler(
    handler: SharedRequestHandler,
    ctx: RequestContext,
    params: Option<Value>,
) -> HandlerResult {
    AssertUnwindSafe(handler.handle(ctx, params)).catch_unwind().await.unwrap_or_else(|_| {
        tracing::error!("request handler panicked");
        Err(ErrorObject::internal("the request handler panicked"))
    })
}

/// The message that answers request `id` with a handler's outcome.
fn answer(id: RequestId, outcome: HandlerResult) -> Message {
    match outcome {
        Ok(result) => Response::new(id, result).into(),
        Err(error) => ErrorResponse::new(Some(id), error).into(),
    }
}

/// The code of a request refused because too many are in flight on its connection (a server
/// error of JSON-RPC's implementation-defined range).
const SERVER_BUSY: crate::jsonrpc::ErrorCode = crate::jsonrpc::ErrorCode(-32000);

/// Method names the engine itself acts on.
pub(crate) const CANCELLED: &str = "notifications/cancelled";
pub(crate) const PROGRESS: &str = "notifications/progress";
const INITIALIZE: &str = "initialize";

/// How many notifications may wait for their handler before reading pauses (their size is
/// bounded too: [`EngineConfig::notification_queue_bytes`](super::EngineConfig::notification_queue_bytes)).
const NOTIFICATION_QUEUE: usize = 1024;

/// A notification on its way to its handler, holding its share of the byte budget.
type Queued = (Notification, OwnedSemaphorePermit);

/// Where the reader hands notifications to the notifier: a bounded channel, and a byte
/// budget each notification takes its size from until its handler has run.
struct NotifyQueue {
    tx: mpsc::Sender<Queued>,
    budget: (Arc<Semaphore>, u32),
}

impl NotifyQueue {
    /// Waits until `notification` fits in the budget, then queues it. `Err` if the notifier
    /// is gone.
    async fn send(&self, notification: Notification) -> std::result::Result<(), ()> {
        let (budget, total) = &self.budget;
        let size = notification.params.as_ref().map_or(0, crate::jsonrpc::encoded_len);
        let weight = u32::try_from(size).unwrap_or(u32::MAX).clamp(1, *total);
        if budget.available_permits() < weight as usize {
            tracing::trace!(size, "notification queue full; reading pauses");
        }
        let permit = budget.clone().acquire_many_owned(weight).await.map_err(drop)?;
        self.tx.send((notification, permit)).await.map_err(drop)
    }
}
/// How many progress updates may wait for a request's caller before more are dropped.
const PROGRESS_QUEUE: usize = 64;

struct PendingEntry {
    tx: oneshot::Sender<Result<Value>>,
    progress: Option<mpsc::Sender<ProgressUpdate>>,
    /// The method of the notifications related to this request, and where they go.
    related: Option<(String, mpsc::UnboundedSender<Value>)>,
}

#[derive(Default)]
struct Tasks {
    writer: Option<JoinHandle<Result<()>>>,
    reader: Option<AbortHandle>,
    notifier: Option<AbortHandle>,
}

/// Where a connection's outgoing messages go.
enum Outlet {
    /// To the writer task (connections started by `connect` or served inline).
    Channel(UnboundedSender<Outbound>),
    /// To a queue drained on demand (connections driven by their owner; see
    /// [`super::Driven`]).
    Queue(Queue),
}

pub(crate) struct Connection {
    pub(crate) generation: u64,
    outbound: Outlet,
    /// Data the owner of a driven connection attached to it (see [`Peer::data`]).
    data: Option<Box<dyn Any + Send + Sync>>,
    closed: CancellationToken,
    torn_down: AtomicBool,
    /// Whether the connection completed `connect` (only those report to the close callback).
    pub(crate) published: AtomicBool,
    pending: Mutex<HashMap<RequestId, PendingEntry>>,
    inflight: Mutex<HashMap<RequestId, CancellationToken>>,
    tasks: Mutex<Tasks>,
    next_id: Arc<AtomicI64>,
    request_timeout: Duration,
    close_timeout: Duration,
    max_inflight: usize,
    notification_queue_bytes: usize,
    /// Room in the outgoing queue (see [`super::EngineConfig::max_queued_messages`]).
    room: Room,
    write_timeout: Option<Duration>,
    handlers: Arc<HandlerTable>,
    shared: Weak<Shared>,
}

impl Connection {
    /// Creates a connection whose tasks are not running yet; [`Starter::run`] starts them.
    pub(crate) fn new(
        generation: u64,
        shared: &Arc<Shared>,
        data: Option<Box<dyn Any + Send + Sync>>,
    ) -> (Arc<Connection>, Starter) {
        // A futures channel: unlike Tokio's, it allocates nothing up front (a connection served
        // inline often sends nothing but its response).
        let (outbound, outbound_rx) = futures::channel::mpsc::unbounded();
        let conn = Connection::build(generation, shared, Outlet::Channel(outbound), data);
        (conn, Starter { outbound_rx })
    }

    /// Creates a connection without tasks whose outgoing messages go to `queue`.
    pub(crate) fn driven(
        generation: u64,
        shared: &Arc<Shared>,
        queue: Queue,
        data: Option<Box<dyn Any + Send + Sync>>,
    ) -> Arc<Connection> {
        Connection::build(generation, shared, Outlet::Queue(queue), data)
    }

    fn build(
        generation: u64,
        shared: &Arc<Shared>,
        outbound: Outlet,
        data: Option<Box<dyn Any + Send + Sync>>,
    ) -> Arc<Connection> {
        Arc::new(Connection {
            generation,
            outbound,
            data,
            closed: CancellationToken::new(),
            torn_down: AtomicBool::new(false),
            published: AtomicBool::new(false),
            pending: Mutex::new(HashMap::new()),
            inflight: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Tasks::default()),
            next_id: shared.next_id.clone(),
            request_timeout: shared.config.request_timeout,
            close_timeout: shared.config.close_timeout,
            max_inflight: shared.config.max_inflight_requests,
            notification_queue_bytes: shared.config.notification_queue_bytes,
            room: Room::new(shared.config.max_queued_messages, shared.config.max_queued_bytes),
            write_timeout: shared.config.write_timeout,
            handlers: shared.handlers.clone(),
            shared: Arc::downgrade(shared),
        })
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Queues `message` without waiting: in the `reserved` room, else in any room left, else
    /// past the bound (only for what cannot wait; see
    /// [`super::EngineConfig::max_queued_messages`]).
    fn send_now(
        self: &Arc<Self>,
        message: Message,
        related: Option<RequestId>,
        reserved: Option<Reservation<'_>>,
    ) -> Result<()> {
        if self.closed.is_cancelled() {
            return Err(Error::ConnectionClosed);
        }
        let reserved = reserved.or_else(|| self.room.try_reserve(weigh(&message)));
        // Given back by whoever takes the message off the queue (`taken`).
        let held = reserved.map(Reservation::hold).unwrap_or_default();
        let item = Outbound { message, related, held };
        match &self.outbound {
            Outlet::Channel(tx) => tx.unbounded_send(item).map_err(|_| Error::ConnectionClosed),
            Outlet::Queue(queue) => {
                queue.push(self, item);
                Ok(())
            }
        }
    }

    /// Queues `message` once the outgoing queue has room for it.
    async fn send(self: &Arc<Self>, message: Message, related: Option<RequestId>) -> Result<()> {
        let room = self.reserve(weigh(&message)).await.ok_or(Error::ConnectionClosed)?;
        self.send_now(message, related, Some(room))
    }

    /// Waits for room in the outgoing queue for a message of `size` bytes (see
    /// [`weigh`]): the room is the caller's until it is used (by
    /// [`send_now`](Self::send_now)) or dropped. `None` once the connection closed.
    async fn reserve(&self, size: usize) -> Option<Reservation<'_>> {
        self.room.reserve(size).await
    }

    /// How long one write may take (see [`super::EngineConfig::write_timeout`]).
    pub(crate) fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout
    }

    /// Called by whoever takes `item` off the outgoing queue: gives back the room it held.
    pub(crate) fn taken(&self, item: &Outbound) {
        self.room.give_back(item.held);
    }

    /// Hands a refusal to the engine's refusal hook, or logs it once if there is none.
    pub(crate) fn refused(&self, refusal: Refusal) {
        let told = self.shared.upgrade().is_some_and(|shared| shared.run_refusal_hook(&refusal));
        if !told {
            tracing::debug!(refusal = refusal.as_str(), generation = self.generation, "{refusal}");
        }
    }

    /// The data attached to a driven connection, if it is a `T`.
    pub(crate) fn data<T: Any>(&self) -> Option<&T> {
        self.data.as_deref().and_then(|d| (d as &dyn Any).downcast_ref())
    }

    /// Ends the connection: the close callback, then handlers cancelled and pending requests
    /// settled, then the transport closed. Runs once; later calls return `Ok(())` at once.
    pub(crate) async fn teardown(self: &Arc<Self>, reason: CloseReason) -> Result<()> {
        if self.torn_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        tracing::debug!(generation = self.generation, ?reason, "connection closing");
        // 1. The user's close callback, for connections that were fully established.
        if self.published.load(Ordering::SeqCst) {
            if let Some(shared) = self.shared.upgrade() {
                shared.run_close_callback(&reason);
            }
        }
        // 2. In-flight handlers are cancelled (their tokens are children of `closed`), and no
        //    further message can be queued on this connection.
        self.closed.cancel();
        self.room.close();
        lock(&self.inflight).clear();
        // 3. Pending requests settle with `ConnectionClosed`.
        let pending: Vec<PendingEntry> = lock(&self.pending).drain().map(|(_, e)| e).collect();
        for entry in pending {
            let _ = entry.tx.send(Err(Error::ConnectionClosed));
        }
        // 4. The transport closes; a close that never finishes is abandoned after a bound.
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        if let Some(reader) = tasks.reader {
            reader.abort();
        }
        if let Some(notifier) = tasks.notifier {
            notifier.abort();
        }
        let writer = match (&self.outbound, tasks.writer) {
            (_, Some(writer)) => Some(writer),
            (Outlet::Queue(queue), None) => queue.close(),
            (Outlet::Channel(_), None) => None,
        };
        let result = match writer {
            Some(writer) => {
                let abort = writer.abort_handle();
                match tokio::time::timeout(self.close_timeout, writer).await {
                    Ok(Ok(result)) => result,
                    Ok(Err(join)) => Err(Error::transport("transport writer task failed", join)),
                    Err(_) => {
                        abort.abort();
                        Err(Error::Transport {
                            context: format!(
                                "transport close did not finish within {:?}",
                                self.close_timeout
                            ),
                            source: None,
                        })
                    }
                }
            }
            None => Ok(()),
        };
        tracing::debug!(generation = self.generation, "connection closed");
        result
    }

    /// Called from the connection's own tasks when the transport ended or failed.
    pub(crate) fn lost(self: &Arc<Self>, reason: CloseReason) {
        if self.torn_down.load(Ordering::SeqCst) {
            return;
        }
        let conn = self.clone();
        tokio::spawn(async move {
            // Free the engine's slot first, but only if it still holds this connection.
            if let Some(shared) = conn.shared.upgrade() {
                shared.detach(conn.generation);
            }
            if let Err(e) = conn.teardown(reason).await {
                tracing::debug!(error = %e, "transport close after connection loss failed");
            }
        });
    }

    /// Starts the handler of `request`; returns the answer to send at once instead when it
    /// cannot run.
    fn dispatch_request(self: &Arc<Self>, request: Request) -> Option<Message> {
        let Request { id, method, params } = request;
        let Some(handler) = self.handlers.request_handler(&method) else {
            tracing::debug!(%method, "no handler for request");
            let error = ErrorObject::method_not_found(&method);
            return Some(ErrorResponse::new(Some(id), error).into());
        };
        let token = self.closed.child_token();
        {
            let mut inflight = lock(&self.inflight);
            if inflight.contains_key(&id) {
                drop(inflight);
                let error = ErrorObject::invalid_request(format_args!(
                    "request id {id} is already in flight"
                ));
                return Some(ErrorResponse::new(Some(id), error).into());
            }
            if inflight.len() >= self.max_inflight {
                // Refused at once, never queued: the peer may retry once answers come back.
                drop(inflight);
                self.refused(Refusal::InFlightLimit { limit: self.max_inflight });
                let error = ErrorObject::new(SERVER_BUSY, "too many requests in flight")
                    .with_data(serde_json::json!({ "maxInFlight": self.max_inflight }));
                return Some(ErrorResponse::new(Some(id), error).into());
            }
            inflight.insert(id.clone(), token.clone());
        }
        let mut ctx = self.request_context(&id, method, params.as_ref(), token.clone());
        let after = Arc::new(AfterAnswer::default());
        ctx.after_answer = Some(after.clone());
        let conn = self.clone();
        tokio::spawn(async move {
            let outcome = tokio::select! {
                biased;
                _ = token.cancelled() => None,
                outcome = run_handler(handler, ctx, params) => Some(outcome),
            };
            // A cancelled request gets no response at all (and is no longer in the table: the
            // cancel, or the close, took it out).
            let Some(outcome) = outcome.filter(|_| !token.is_cancelled()) else { return };
            let message = answer(id.clone(), outcome);
            // The request counts as in flight until its answer is queued: a peer that does not
            // read holds up its own requests, not the server's memory.
            let room = tokio::select! {
                biased;
                _ = token.cancelled() => None,
                room = conn.reserve(weigh(&message)) => room,
            };
            let Some(room) = room.filter(|_| !token.is_cancelled()) else { return };
            remove_shrinking(&mut lock(&conn.inflight), &id);
            if conn.send_now(message, Some(id), Some(room)).is_ok() {
                after.run();
            }
        });
        None
    }

    /// Serves `request` on the caller's task: no reader, writer or handler tasks. What the
    /// handler sends goes out through `sender` as it is sent; requests the handler makes of the
    /// peer fail at once with `-32601` (a single-request transport has no way back).
    pub(crate) async fn serve_inline<S: TransportSender>(
        self: &Arc<Self>,
        starter: Starter,
        request: Request,
        meta: Option<LazyMeta>,
        mut sender: S,
    ) -> Result<()> {
        let Request { id, method, mut params } = request;
        let Some(handler) = self.handlers.request_handler(&method) else {
            // However this ends, the connection is closed after.
            let _closed = self.closed.clone().drop_guard();
            let error = ErrorObject::method_not_found(&method);
            return sender
                .send_related(ErrorResponse::new(Some(id.clone()), error).into(), Some(id))
                .await;
        };
        // The one request owns `_meta`: it moves into the context instead of being copied.
        let meta = match (meta, &mut params) {
            (Some(meta), _) => MetaSlot::Lazy(meta),
            (None, Some(Value::Object(p))) => match p.remove("_meta") {
                Some(Value::Object(meta)) => MetaSlot::Tree(Arc::new(meta)),
                Some(other) => {
                    p.insert("_meta".to_owned(), other);
                    MetaSlot::Absent
                }
                None => MetaSlot::Absent,
            },
            (None, _) => MetaSlot::Absent,
        };
        let head = (id.clone(), method);
        let outcome = self
            .run_inline(starter, head, meta, &mut sender, |ctx| run_handler(handler, ctx, params))
            .await?;
        sender.send_related(answer(id.clone(), outcome), Some(id)).await
    }

    /// Runs `handler` as the handler of request `id` on the caller's task and returns what it
    /// returned; the caller answers. What the handler sends meanwhile goes out through
    /// `sender`; requests it makes of the peer fail at once with `-32601`. Once the handler
    /// is done, the connection is closed: nothing it left behind sends any more.
    pub(crate) async fn run_inline<S, F, Fut>(
        self: &Arc<Self>,
        starter: Starter,
        (id, method): (RequestId, String),
        meta: MetaSlot,
        sender: &mut S,
        handler: F,
    ) -> Result<Fut::Output>
    where
        S: TransportSender,
        F: FnOnce(RequestContext) -> Fut,
        Fut: Future,
    {
        let mut outbound = starter.outbound_rx;
        // However this ends (even by the future being dropped), the connection is closed after.
        let _closed = self.closed.clone().drop_guard();
        // The connection lives for this one request: its token is the request's token.
        let ctx = RequestContext {
            id: id.clone(),
            method,
            meta,
            peer: Peer { conn: self.clone(), related: Some(id), served: Some(self.closed.clone()) },
            cancel: self.closed.clone(),
            after_answer: None,
        };
        let handler = handler(ctx);
        tokio::pin!(handler);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(item) = outbound.next() => {
                    self.taken(&item);
                    self.forward_inline(sender, item.message, item.related).await?;
                }
                outcome = &mut handler => break outcome,
            }
        };
        while let Ok(item) = outbound.try_recv() {
            self.taken(&item);
            self.forward_inline(sender, item.message, item.related).await?;
        }
        // Nothing the handler left behind may send after its response.
        self.closed.cancel();
        let pending: Vec<PendingEntry> = lock(&self.pending).drain().map(|(_, e)| e).collect();
        for entry in pending {
            let _ = entry.tx.send(Err(Error::ConnectionClosed));
        }
        Ok(outcome)
    }

    async fn forward_inline<S: TransportSender>(
        &self,
        sender: &mut S,
        message: Message,
        related: Option<RequestId>,
    ) -> Result<()> {
        match message {
            Message::Request(r) => {
                let error = ErrorObject::method_not_found(&r.method).with_data(serde_json::json!({
                    "reason": "this transport serves one request and cannot carry requests to the peer"
                }));
                self.settle(&r.id, Err(Error::from_rpc(error)));
                Ok(())
            }
            other => sender.send_related(other, related).await,
        }
    }

    /// The context a handler of request `id` runs in, bound to this connection.
    fn request_context(
        self: &Arc<Self>,
        id: &RequestId,
        method: String,
        params: Option<&Value>,
        cancel: CancellationToken,
    ) -> RequestContext {
        RequestContext {
            id: id.clone(),
            method,
            meta: match params.and_then(|p| p.get("_meta")) {
                Some(Value::Object(m)) => MetaSlot::Tree(Arc::new(m.clone())),
                _ => MetaSlot::Absent,
            },
            peer: Peer {
                conn: self.clone(),
                related: Some(id.clone()),
                served: Some(cancel.clone()),
            },
            cancel,
            after_answer: None,
        }
    }

    fn settle(&self, id: &RequestId, result: Result<Value>) {
        match lock(&self.pending).remove(id) {
            Some(entry) => {
                let _ = entry.tx.send(result);
            }
            None => tracing::debug!(%id, "response to an unknown or settled request"),
        }
    }

    fn on_cancelled(&self, params: Option<&Value>) {
        let Some(id) = params
            .and_then(|p| p.get("requestId"))
            .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok())
        else {
            tracing::debug!("notifications/cancelled without a valid requestId");
            return;
        };
        if let Some(token) = remove_shrinking(&mut lock(&self.inflight), &id) {
            tracing::debug!(%id, "request cancelled by peer");
            token.cancel();
        }
    }

    /// Hands a notification naming a pending request (`params.requestId`) that asked for
    /// notifications of its method to that request; returns any other notification.
    fn route_related(&self, n: Notification) -> Option<Notification> {
        let Some(id) = n
            .params
            .as_ref()
            .and_then(|p| p.get("requestId"))
            .and_then(|t| serde_json::from_value::<RequestId>(t.clone()).ok())
        else {
            return Some(n);
        };
        let pending = lock(&self.pending);
        match pending.get(&id).and_then(|e| e.related.as_ref()) {
            Some((method, tx)) if *method == n.method => {
                let _ = tx.send(n.params.unwrap_or(Value::Null));
                None
            }
            _ => Some(n),
        }
    }

    fn on_progress(&self, params: Option<&Value>) {
        let Some(params) = params else { return };
        let Some(id) = params
            .get("progressToken")
            .and_then(|t| serde_json::from_value::<RequestId>(t.clone()).ok())
        else {
            return;
        };
        let Some(progress) = params.get("progress").and_then(Value::as_f64) else { return };
        let update = ProgressUpdate {
            progress,
            total: params.get("total").and_then(Value::as_f64),
            message: params.get("message").and_then(Value::as_str).map(str::to_owned),
        };
        let pending = lock(&self.pending);
        if let Some(tx) = pending.get(&id).and_then(|e| e.progress.as_ref()) {
            // Progress is advisory: when the caller lags far behind, updates are dropped.
            let _ = tx.try_send(update);
        }
    }
}

/// Removes `key`, and frees the table's memory once it is empty: an idle connection keeps
/// no capacity from its busy moments.
pub(crate) fn remove_shrinking<K, V>(map: &mut HashMap<K, V>, key: &K) -> Option<V>
where
    K: std::hash::Hash + Eq,
{
    let value = map.remove(key);
    if map.is_empty() && map.capacity() > 0 {
        *map = HashMap::new();
    }
    value
}

/// A message to write, with the incoming request it relates to.
pub(crate) struct Outbound {
    pub(crate) message: Message,
    pub(crate) related: Option<RequestId>,
    /// The room it holds in the queue (given back when it is taken off).
    held: Held,
}

/// Writes one message through `sender`, within `timeout` if there is one. A write that does
/// not finish in time is a peer that stopped reading: refused (logged once and told to the
/// hook of `conn`'s engine) and [`Error::WriteTimeout`].
pub(crate) async fn write_within(
    send: impl Future<Output = Result<()>>,
    timeout: Option<Duration>,
    conn: &Weak<Connection>,
) -> Result<()> {
    let Some(timeout) = timeout else { return send.await };
    match tokio::time::timeout(timeout, send).await {
        Ok(sent) => sent,
        Err(_) => {
            let refusal = Refusal::WriteTimeout { timeout };
            if let Some(conn) = conn.upgrade() {
                conn.refused(refusal);
            }
            Err(Error::WriteTimeout { timeout })
        }
    }
}

async fn write_loop<S: TransportSender>(
    conn: Arc<Connection>,
    mut sender: S,
    mut rx: UnboundedReceiver<Outbound>,
) -> Result<()> {
    let closed = conn.closed.clone();
    let timeout = conn.write_timeout;
    // Do not keep the connection alive from its own writer.
    let weak = Arc::downgrade(&conn);
    drop(conn);
    loop {
        tokio::select! {
            biased;
            item = rx.next() => {
                let Some(item) = item else { break };
                if let Some(conn) = weak.upgrade() {
                    conn.taken(&item);
                }
                let send = sender.send_related(item.message, item.related);
                if let Err(e) = write_within(send, timeout, &weak).await {
                    tracing::debug!(error = %e, "transport send failed");
                    if let Some(conn) = weak.upgrade() {
                        conn.lost(CloseReason::Failed(Arc::new(e)));
                    }
                    return sender.close().await;
                }
            }
            _ = closed.cancelled() => break,
        }
    }
    // Flush what was queued before the close (each write still bounded by the timeout: a
    // peer that stopped reading is not told twice), then close the transport.
    while let Ok(item) = rx.try_recv() {
        let send = sender.send_related(item.message, item.related);
        let flushed = match timeout {
            Some(timeout) => {
                tokio::time::timeout(timeout, send).await.unwrap_or(Err(Error::ConnectionClosed))
            }
            None => send.await,
        };
        if flushed.is_err() {
            break;
        }
    }
    sender.close().await
}

async fn read_loop<R: TransportReceiver>(
    conn: Arc<Connection>,
    mut receiver: R,
    notify: NotifyQueue,
) {
    loop {
        let message = match receiver.recv().await {
            Ok(Some(message)) => message,
            Ok(None) => {
                conn.lost(CloseReason::PeerClosed);
                return;
            }
            Err(Error::InvalidMessage(e)) => {
                tracing::debug!(error = %e, "invalid message from peer");
                if conn.send(e.to_response().into(), None).await.is_err() {
                    return;
                }
                continue;
            }
            Err(Error::MessageTooLarge { limit }) => {
                tracing::warn!(limit, "message from peer over the size limit; discarded");
                let error =
                    ErrorObject::invalid_request(format_args!("message exceeds {limit} bytes"));
                if conn.send(ErrorResponse::new(None, error).into(), None).await.is_err() {
                    return;
                }
                continue;
            }
            Err(e) => {
                tracing::debug!(error = %e, "transport receive failed");
                conn.lost(CloseReason::Failed(Arc::new(e)));
                return;
            }
        };
        if conn.is_closed() {
            return;
        }
        match conn.receive(message) {
            Received::Done => {}
            Received::Notification(notification) => {
                if notify.send(notification).await.is_err() {
                    return;
                }
            }
            // The reader waits for room for it: a peer that reads nothing stops being read.
            Received::Answer(answer) => {
                if conn.send(answer, None).await.is_err() {
                    return;
                }
            }
        }
    }
}

impl Connection {
    /// A fresh byte budget for the notifications waiting for their handlers, and its size.
    fn notification_budget(&self) -> (Arc<Semaphore>, u32) {
        let total = self.notification_queue_bytes.clamp(1, Semaphore::MAX_PERMITS);
        let total = u32::try_from(total).unwrap_or(u32::MAX);
        (Arc::new(Semaphore::new(total as usize)), total)
    }

    /// Acts on one incoming message: a request starts its handler (or gets an answer at
    /// once), a response settles its request, cancellation and progress are applied. Returns
    /// what is left for the caller to do.
    pub(crate) fn receive(self: &Arc<Self>, message: Message) -> Received {
        match message {
            Message::Request(request) => {
                return self.dispatch_request(request).map_or(Received::Done, Received::Answer);
            }
            Message::Response(Response { id, result }) => self.settle(&id, Ok(result)),
            Message::Error(ErrorResponse { id: Some(id), error }) => {
                self.settle(&id, Err(Error::from_rpc(error)))
            }
            Message::Error(ErrorResponse { id: None, error }) => {
                tracing::warn!(code = error.code.0, message = %error.message, "peer reported an error without an id");
            }
            Message::Notification(n) if n.method == CANCELLED => {
                self.on_cancelled(n.params.as_ref())
            }
            Message::Notification(n) if n.method == PROGRESS => self.on_progress(n.params.as_ref()),
            Message::Notification(n) => {
                return self.route_related(n).map_or(Received::Done, Received::Notification);
            }
        }
        Received::Done
    }

    /// Queues the answer [`receive`](Self::receive) gave, once there is room for it.
    pub(crate) async fn answer_now(self: &Arc<Self>, answer: Message) -> Result<()> {
        self.send(answer, None).await
    }
}

/// What is left to do with an incoming message once [`Connection::receive`] acted on it.
pub(crate) enum Received {
    /// Nothing.
    Done,
    /// Hand this notification to its handler, in order.
    Notification(Notification),
    /// Send this answer (the request could not run); wait for room for it.
    Answer(Message),
}

async fn notify_loop(conn: Arc<Connection>, mut rx: mpsc::Receiver<Queued>) {
    while let Some((notification, _budget)) = rx.recv().await {
        conn.notified(notification).await;
    }
}

impl Connection {
    /// Runs the handler of an incoming notification (other than cancellation and progress).
    pub(crate) async fn notified(self: &Arc<Self>, notification: Notification) {
        let Notification { method, params } = notification;
        match self.handlers.notification_handler(&method) {
            Some(handler) => {
                let ctx = NotificationContext {
                    method,
                    peer: Peer { conn: self.clone(), related: None, served: None },
                };
                handler.handle(ctx, params).await;
            }
            None => tracing::trace!(%method, "no handler for notification"),
        }
    }
}

/// A handle to the peer on one connection.
///
/// Cheap to clone. A `Peer` stays bound to the connection it came from: once that connection
/// closes, every send through it fails with `ConnectionClosed`, even if the engine has connected
/// again since. The handle a request handler gets ([`RequestContext::peer`]) is also bound to
/// that request: once the peer cancels it, every send through the handle (and its clones)
/// fails with `Cancelled` and nothing reaches the wire; [`Peer::unrelated`] gives a handle
/// for messages meant to outlive the request.
#[derive(Clone)]
pub struct Peer {
    pub(crate) conn: Arc<Connection>,
    /// The incoming request this peer handle was given for, if any: what it sends is related
    /// to that request (Streamable HTTP sends it on that request's stream).
    pub(crate) related: Option<RequestId>,
    /// The cancellation token of that request: once it fires, this handle sends nothing.
    pub(crate) served: Option<CancellationToken>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("generation", &self.conn.generation)
            .field("closed", &self.conn.is_closed())
            .finish()
    }
}

/// Settles an outgoing request when its future is dropped early: removes it from the pending
/// table and tells the peer with `notifications/cancelled`.
struct PendingGuard<'a> {
    conn: &'a Arc<Connection>,
    id: Option<RequestId>,
    method: &'a str,
}

impl PendingGuard<'_> {
    fn disarm(&mut self) {
        self.id = None;
    }

    fn cancel(&mut self, reason: &str) {
        let Some(id) = self.id.take() else { return };
        lock(&self.conn.pending).remove(&id);
        // The 2025 lifecycle forbids cancelling `initialize`.
        if self.method == INITIALIZE || self.conn.is_closed() {
            return;
        }
        let params = serde_json::json!({ "requestId": id, "reason": reason });
        // This cannot wait: it goes past the queue's bound if the queue is full.
        let _ = self.conn.send_now(Notification::new(CANCELLED, Some(params)).into(), None, None);
    }
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.cancel("The caller abandoned the request");
    }
}

impl Peer {
    /// Sends a request and waits for its response. The request goes out once the
    /// connection's outgoing queue has room for it (see
    /// [`EngineConfig::max_queued_messages`](super::EngineConfig::max_queued_messages)); that
    /// wait counts toward the timeout.
    ///
    /// # Errors
    ///
    /// - `ConnectionClosed` if the connection is closed or closes before the response.
    /// - `RequestTimeout` after the timeout (see [`RequestOptions`]); the peer is sent
    ///   `notifications/cancelled` (unless the request never left the queue's wait).
    /// - `Cancelled` when the options' cancellation token fires, or when this handle belongs
    ///   to a request handler whose request was cancelled (before the request is sent, or
    ///   while it waits: the peer is then sent `notifications/cancelled`).
    /// - The peer's JSON-RPC error, lifted to a typed variant where MCP defines one.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the request: the peer is sent `notifications/cancelled`
    /// (except for `initialize`, which MCP forbids cancelling).
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<Value> {
        let conn = &self.conn;
        self.check_open()?;
        let id = RequestId::Number(conn.next_id.fetch_add(1, Ordering::Relaxed));
        let RequestOptions {
            timeout,
            reset_timeout_on_progress,
            max_total_timeout,
            on_progress,
            cancel,
            meta,
            related,
        } = options;
        let start = Instant::now();
        let timeout = timeout.unwrap_or(conn.request_timeout);
        let hard_deadline = max_total_timeout.map(|m| start + m);
        let deadline_after = |now: Instant| {
            let soft = now + timeout;
            hard_deadline.map_or(soft, |hard| soft.min(hard))
        };
        let sleep = tokio::time::sleep_until(deadline_after(start));
        tokio::pin!(sleep);
        let cancel = cancel.unwrap_or_default();
        let served = self.served.clone().unwrap_or_default();
        let (progress_tx, mut progress_rx) = match on_progress {
            Some(_) => {
                let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let params = with_meta(params, meta, progress_tx.as_ref().map(|_| &id));
        let request: Message = Request::new(id.clone(), method, params).into();
        // Room in the outgoing queue first: the wait counts toward the request's timeout, and
        // a request that never went out needs no cancelling.
        let room = tokio::select! {
            biased;
            room = conn.reserve(weigh(&request)) => room.ok_or(Error::ConnectionClosed)?,
            _ = cancel.cancelled() => {
                return Err(Error::Cancelled { reason: Some("cancelled by the caller".into()) });
            }
            _ = served.cancelled() => {
                return Err(if conn.is_closed() { Error::ConnectionClosed } else { served_cancelled() });
            }
            _ = &mut sleep => {
                return Err(Error::RequestTimeout { method: method.to_owned(), elapsed: start.elapsed() });
            }
        };
        let (tx, mut rx) = oneshot::channel();
        let (related_tx, mut related_rx, on_related) = match related {
            Some((method, f)) => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some((method, tx)), Some(rx), Some(f))
            }
            None => (None, None, None),
        };
        lock(&conn.pending)
            .insert(id.clone(), PendingEntry { tx, progress: progress_tx, related: related_tx });
        let mut guard = PendingGuard { conn, id: Some(id.clone()), method };
        if let Err(e) = conn.send_now(request, self.related.clone(), Some(room)) {
            guard.disarm();
            return Err(e);
        }

        loop {
            tokio::select! {
                biased;
                result = &mut rx => {
                    guard.disarm();
                    // Progress sent before the response was routed before it: deliver it first.
                    if let (Some(f), Some(progress)) = (&on_progress, progress_rx.as_mut()) {
                        while let Ok(update) = progress.try_recv() {
                            f(update);
                        }
                    }
                    if let (Some(f), Some(related)) = (&on_related, related_rx.as_mut()) {
                        while let Ok(params) = related.try_recv() {
                            f(params);
                        }
                    }
                    return result.unwrap_or(Err(Error::ConnectionClosed));
                }
                Some(params) = recv_unbounded(&mut related_rx) => {
                    if let Some(f) = &on_related {
                        f(params);
                    }
                }
                _ = cancel.cancelled() => {
                    guard.cancel("The caller cancelled the request");
                    return Err(Error::Cancelled { reason: Some("cancelled by the caller".into()) });
                }
                _ = served.cancelled() => {
                    // The served request's token also fires when the connection closes.
                    guard.cancel("The request it was sent for was cancelled");
                    let closed = conn.is_closed();
                    return Err(if closed { Error::ConnectionClosed } else { served_cancelled() });
                }
                Some(update) = recv_opt(&mut progress_rx) => {
                    if let Some(f) = &on_progress {
                        f(update);
                    }
                    if reset_timeout_on_progress {
                        sleep.as_mut().reset(deadline_after(Instant::now()));
                    }
                }
                _ = &mut sleep => {
                    guard.cancel("Request timed out");
                    return Err(Error::RequestTimeout { method: method.to_owned(), elapsed: start.elapsed() });
                }
            }
        }
    }

    /// Sends a notification, once the connection's outgoing queue has room for it (see
    /// [`EngineConfig::max_queued_messages`](super::EngineConfig::max_queued_messages)): a
    /// peer that reads slowly slows its sender down.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection is closed; `Cancelled` (the notification dropped)
    /// if this handle belongs to a request handler whose request was cancelled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it resolves sends nothing; once it resolved,
    /// the notification is queued.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        self.check_open()?;
        let notification: Message = Notification::new(method, params).into();
        let room = self.conn.reserve(weigh(&notification)).await.ok_or(Error::ConnectionClosed)?;
        // The request this handle serves may have been cancelled while it waited.
        self.check_open()?;
        self.conn.send_now(notification, self.related.clone(), Some(room))
    }

    /// `ConnectionClosed` once the connection closed, `Cancelled` once the request this
    /// handle serves was cancelled.
    fn check_open(&self) -> Result<()> {
        if self.conn.is_closed() {
            return Err(Error::ConnectionClosed);
        }
        if self.served.as_ref().is_some_and(CancellationToken::is_cancelled) {
            tracing::debug!(request = ?self.related, "send from a cancelled request's handler dropped");
            return Err(served_cancelled());
        }
        Ok(())
    }

    /// The data the owner of this connection attached to it, if it is a `T` (see
    /// [`Engine::drive_with`](super::Engine::drive_with)).
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.conn.data()
    }

    /// The incoming request this handle relates what it sends to, if any.
    pub fn related_request(&self) -> Option<&RequestId> {
        self.related.as_ref()
    }

    /// A handle to the same connection whose sends relate to no request (on Streamable HTTP
    /// they go on the session's standalone stream rather than a request's stream): for
    /// messages that outlive the request being served.
    pub fn unrelated(&self) -> Peer {
        Peer { conn: self.conn.clone(), related: None, served: None }
    }

    /// Whether this peer's connection has closed.
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// Resolves when this peer's connection closes.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn closed(&self) {
        self.conn.closed.cancelled().await;
    }

    /// The number of requests sent through this connection that await a response.
    pub fn pending_requests(&self) -> usize {
        lock(&self.conn.pending).len()
    }

    /// The number of incoming requests whose handlers are running.
    pub fn inflight_requests(&self) -> usize {
        lock(&self.conn.inflight).len()
    }
}

/// The error of a send from the handler of a cancelled request.
fn served_cancelled() -> Error {
    Error::Cancelled { reason: Some("the request this handler serves was cancelled".into()) }
}

async fn recv_unbounded<T>(rx: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn recv_opt<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Merges `meta` and a progress token into `params._meta`. Params that are not an object (MCP
/// params always are) are left as they are.
fn with_meta(
    params: Option<Value>,
    meta: Option<Map<String, Value>>,
    progress_token: Option<&RequestId>,
) -> Option<Value> {
    if meta.is_none() && progress_token.is_none() {
        return params;
    }
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(object) = params.as_object_mut() {
        let slot = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        if let Some(target) = slot.as_object_mut() {
            if let Some(meta) = meta {
                target.extend(meta);
            }
            if let Some(token) = progress_token {
                target.insert(
                    "progressToken".into(),
                    serde_json::to_value(token).unwrap_or_default(),
                );
            }
        }
    }
    Some(params)
}
