//! One live connection: the writer and reader tasks, the in-flight tables, and [`Peer`].

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::driven::NotRun;
use super::handler::{HandlerResult, NotificationContext, RequestContext, SharedRequestHandler};
use super::lazy_meta::MetaSlot;
use super::options::ProgressUpdate;
use super::outgoing::{Queue, Sending};
use super::room::{Held, Reservation, Room, weigh};
use super::table::Table;
use super::{CloseReason, Common, Refusal, Shared, lock};
use crate::error::{Error, Result};
use crate::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, RawJson, Request, RequestId, Response,
};
use crate::trace::{self, Direction, TraceFacts};
use crate::transport::{TransportEvent, TransportReceiver};

mod caller;
mod cancel;
mod inline;
mod io;
mod outbox;
mod peer;

use self::cancel::CancelFlag;
pub(crate) use self::cancel::RequestCancel;
use self::io::read_loop;
pub(crate) use self::io::{Outbound, write_within};
use self::outbox::Outbox;
pub use self::peer::Peer;

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
/// The generation of every connection serving one request inline: the engine's slot counts
/// its connections from 1, so it never holds one of these.
pub(crate) const INLINE_GENERATION: u64 = 0;

/// How many progress updates may wait for a request's caller before more are dropped.
const PROGRESS_QUEUE: usize = 64;

/// How many notifications related to a pending request (see
/// [`RequestOptions::on_related_notification`](super::RequestOptions::on_related_notification))
/// may wait for the request's callback. They carry content (streamed chunks), so none is
/// dropped: a peer that sends more than this before the callback takes them fails the request
/// instead of growing the queue.
const RELATED_QUEUE: usize = 1024;

struct PendingEntry {
    tx: oneshot::Sender<Result<RawJson>>,
    progress: Option<mpsc::Sender<ProgressUpdate>>,
    /// The method of the notifications related to this request, and where they go.
    related: Option<(String, mpsc::Sender<Value>)>,
}

/// The reader and notifier tasks of a connection started by `connect` (it has no writer task:
/// see [`super::outgoing`]).
struct Tasks {
    reader: AbortHandle,
    notifier: AbortHandle,
}

/// Where a connection's outgoing messages go.
enum Outlet {
    /// To the outgoing queue (connections started by `connect`, and those driven by their
    /// owner: see [`super::Driven`]).
    Queue(Queue),
    /// To the caller of a request served inline, which forwards them as its handler runs.
    /// Boxed: inline it would make every connection's outlet 72 bytes, not 16 (an idle 2025
    /// session keeps its connection; see docs/performance.md).
    Inline(Box<Outbox>),
}

pub(crate) struct Connection {
    pub(crate) generation: u64,
    outbound: Outlet,
    /// Data the owner of a driven connection attached to it (see [`Peer::data`]).
    data: Option<Arc<dyn Any + Send + Sync>>,
    /// Set once the connection closed (see [`Self::close_now`]): read on every send. Its token
    /// is made when first asked for (most connections, such as a stateless request's, never
    /// need it).
    closed: CancelFlag,
    torn_down: AtomicBool,
    /// Whether the connection completed `connect` (only those report to the close callback).
    pub(crate) published: AtomicBool,
    pending: Mutex<Table<RequestId, PendingEntry>>,
    inflight: Mutex<Table<RequestId, RequestCancel>>,
    /// Its own tasks, for connections that have them (boxed: a driven connection has none).
    tasks: Mutex<Option<Box<Tasks>>>,
    /// The engine's handlers, request id counter and settings (timeouts, limits).
    common: Arc<Common>,
    /// Room in the outgoing queue (see [`super::EngineConfig::max_queued_messages`]), made
    /// when first needed: a connection whose messages all went out at once never needs it.
    room: std::sync::OnceLock<Box<Room>>,
    shared: Weak<Shared>,
    /// What the spans of this connection's requests say about it (see
    /// [`Peer::update_trace_facts`]).
    trace_facts: Mutex<TraceFacts>,
}

impl Connection {
    /// Creates the connection of a request served inline: what its handler sends waits in
    /// its [`Outbox`], for the caller to forward. Such a connection never holds the engine's
    /// slot: its generation is [`INLINE_GENERATION`] (no count shared by every request).
    pub(crate) fn inline(
        shared: &Arc<Shared>,
        data: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Arc<Connection> {
        let outlet = Outlet::Inline(Box::default());
        Connection::build(INLINE_GENERATION, shared, outlet, data)
    }

    /// What a connection served inline holds for its caller to forward; `None` for others.
    fn outbox(&self) -> Option<&Outbox> {
        match &self.outbound {
            Outlet::Inline(outbox) => Some(outbox),
            Outlet::Queue(_) => None,
        }
    }

    /// Creates a connection whose outgoing messages go to `queue`, without tasks (a
    /// connection started by `connect` then starts reading: [`start_reading`](Self::start_reading)).
    pub(crate) fn queued(
        generation: u64,
        shared: &Arc<Shared>,
        queue: Queue,
        data: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Arc<Connection> {
        Connection::build(generation, shared, Outlet::Queue(queue), data)
    }

    fn build(
        generation: u64,
        shared: &Arc<Shared>,
        outbound: Outlet,
        data: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Arc<Connection> {
        Arc::new(Connection {
            generation,
            outbound,
            data,
            closed: CancelFlag::default(),
            torn_down: AtomicBool::new(false),
            published: AtomicBool::new(false),
            pending: Mutex::new(Table::new()),
            inflight: Mutex::new(Table::new()),
            tasks: Mutex::new(None),
            common: shared.common.clone(),
            room: std::sync::OnceLock::new(),
            shared: Arc::downgrade(shared),
            trace_facts: Mutex::new(TraceFacts::default()),
        })
    }

    /// Starts the reader and notifier tasks of a connection started by `connect`.
    pub(crate) fn start_reading<R: TransportReceiver>(self: &Arc<Self>, receiver: R) {
        let (notify_tx, notify_rx) = mpsc::channel(NOTIFICATION_QUEUE);
        let queue = NotifyQueue { tx: notify_tx, budget: self.notification_budget() };
        // The tasks run in the span the connection was made in (a server's `mcp.ws`, say): the
        // spans of the requests they serve are its children.
        let notifier = tokio::spawn(notify_loop(self.clone(), notify_rx).in_current_span());
        let reader = tokio::spawn(read_loop(self.clone(), receiver, queue).in_current_span());
        *lock(&self.tasks) = Some(Box::new(Tasks {
            reader: reader.abort_handle(),
            notifier: notifier.abort_handle(),
        }));
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Marks the connection closed: nothing more is sent on it, and whoever waits on
    /// [`Peer::closed`] (or a token made from it) is woken.
    fn close_now(&self) {
        self.closed.cancel();
    }

    /// The connection's own token, cancelled once it closed (made when first asked for).
    pub(crate) fn closed_token(&self) -> CancellationToken {
        self.closed.token(CancellationToken::new)
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
        if self.is_closed() {
            return Err(Error::ConnectionClosed);
        }
        trace::message(Direction::Out, &message);
        let reserved = reserved.or_else(|| self.room().try_reserve(weigh(&message)));
        // Given back by whoever takes the message off the queue (`taken`).
        let held = reserved.map(Reservation::hold).unwrap_or_default();
        let item = Outbound { message, related, held };
        match &self.outbound {
            Outlet::Inline(outbox) => {
                outbox.push(item);
                Ok(())
            }
            Outlet::Queue(queue) => {
                queue.push(self, item);
                Ok(())
            }
        }
    }

    /// `message` sent on the caller's task, if nothing waits in the outgoing queue (the
    /// returned future sends it as it is polled, and goes on by itself if dropped); else
    /// `message` back, to be queued. Never from the reader task (see [`super::outgoing`]).
    fn send_here(
        self: &Arc<Self>,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<Sending, Message> {
        let Outlet::Queue(queue) = &self.outbound else { return Err(message) };
        if self.is_closed() {
            return Err(message);
        }
        let (message, related) = if queue.sends_apart() && matches!(message, Message::Request(_)) {
            // Traced once it is known to go this way (else the way it goes traces it).
            let traced = tracing::enabled!(tracing::Level::TRACE).then(|| message.clone());
            match queue.send_apart_now(self, message, related) {
                Ok(sending) => {
                    if let Some(message) = traced {
                        trace::message(Direction::Out, &message);
                    }
                    return Ok(sending);
                }
                Err(back) => back,
            }
        } else {
            (message, related)
        };
        let Some(sender) = queue.take_idle() else { return Err(message) };
        trace::message(Direction::Out, &message);
        Ok(queue.sending(self, sender, Outbound { message, related, held: Held::default() }))
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
        self.room().reserve(size).await
    }

    /// The outgoing queue's room, made on first use.
    fn room(&self) -> &Room {
        let config = &self.common.config;
        self.room.get_or_init(|| {
            Box::new(Room::new(config.max_queued_messages, config.max_queued_bytes))
        })
    }

    /// How long one write may take (see [`super::EngineConfig::write_timeout`]).
    pub(crate) fn write_timeout(&self) -> Option<Duration> {
        self.common.config.write_timeout
    }

    /// Called by whoever takes `item` off the outgoing queue: gives back the room it held.
    pub(crate) fn taken(&self, item: &Outbound) {
        if let Some(room) = self.room.get() {
            room.give_back(item.held);
        }
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

    pub(crate) fn shared_data<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.data.clone().and_then(|d| d.downcast().ok())
    }

    /// Ends the connection: the close callback, then handlers cancelled and pending requests
    /// settled, then the transport closed. Runs once; later calls return `Ok(())` at once.
    pub(crate) async fn teardown(self: &Arc<Self>, reason: CloseReason) -> Result<()> {
        if self.torn_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        tracing::debug!(generation = self.generation, ?reason, "connection closing");
        // 1. The user's close callback, for connections that were fully established.
        if self.published.load(Ordering::SeqCst)
            && let Some(shared) = self.shared.upgrade()
        {
            shared.run_close_callback(&reason);
        }
        // 2. In-flight handlers are cancelled (below; the tokens made for them are children of
        //    `closed`), and no further message can be queued on this connection.
        self.close_now();
        // A room made after this is never used: nothing is queued on a closed connection.
        if let Some(room) = self.room.get() {
            room.close();
        }
        // A request that starts after this sees the connection closed (`start_request`).
        let inflight: Vec<RequestCancel> = lock(&self.inflight).take().map(|(_, c)| c).collect();
        for cancel in inflight {
            cancel.cancel();
        }
        // 3. Pending requests settle with `ConnectionClosed`.
        let pending: Vec<PendingEntry> = lock(&self.pending).take().map(|(_, e)| e).collect();
        for entry in pending {
            let _ = entry.tx.send(Err(Error::ConnectionClosed));
        }
        // 4. The transport closes; a close that never finishes is abandoned after a bound.
        if let Some(tasks) = lock(&self.tasks).take() {
            tasks.reader.abort();
            tasks.notifier.abort();
        }
        let result = match &self.outbound {
            Outlet::Queue(queue) => match queue.close(self.write_timeout()) {
                Some(closing) => closing.within(self.common.config.close_timeout).await,
                None => Ok(()),
            },
            Outlet::Inline(_) => Ok(()),
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

    /// Admits `request`: the future that runs its handler and answers it, in the request's
    /// span, or the answer to send at once when it cannot run. The answer goes out on the task
    /// that runs the future when nothing waits in the outgoing queue before it (else it is
    /// queued behind).
    pub(crate) fn admit_request(
        self: &Arc<Self>,
        request: Request,
    ) -> std::result::Result<impl Future<Output = ()> + Send + use<>, Message> {
        let Request { id, method, params } = request;
        let span = self.server_span(&method, &id, params.as_ref());
        let admitted = span.in_scope(|| self.start_request(id, method, params, &span));
        match admitted {
            Ok(serve) => Ok(serve.instrument(span)),
            Err(refusal) => {
                if let Message::Error(refusal) = &refusal {
                    trace::record_error(&span, &refusal.error);
                }
                Err(refusal)
            }
        }
    }

    /// The span request `id` is served in, with what this connection knows about itself.
    fn server_span(&self, method: &str, id: &RequestId, params: Option<&Value>) -> tracing::Span {
        trace::server_span(method, id, params, || lock(&self.trace_facts).clone())
    }

    /// [`admit_request`](Self::admit_request) within the request's `span`.
    fn start_request(
        self: &Arc<Self>,
        id: RequestId,
        method: String,
        params: Option<Value>,
        span: &tracing::Span,
    ) -> std::result::Result<impl Future<Output = ()> + Send + use<>, Message> {
        let Some(handler) = self.common.handlers.request_handler(&method) else {
            tracing::debug!(%method, "no handler for request");
            let error = ErrorObject::method_not_found(&method);
            return Err(ErrorResponse::new(Some(id), error).into());
        };
        let tool_call = method == "tools/call";
        let cancel = self.admit(&id).map_err(TurnedAway::into_answer)?;
        let mut ctx = self.request_context(&id, method, params.as_ref(), cancel.clone());
        ctx.answers_after = true;
        let conn = self.clone();
        let request_span = span.clone();
        Ok(async move {
            let outcome = tokio::select! {
                biased;
                () = std::future::poll_fn(|cx| cancel.poll_cancelled(cx)) => None,
                outcome = run_handler(handler, ctx, params) => Some(outcome),
            };
            // A cancelled request gets no response at all (and is no longer in the table: the
            // cancel, or the close, took it out).
            let Some(outcome) = outcome.filter(|_| !cancel.is_cancelled()) else {
                tracing::debug!("request cancelled; no answer");
                return;
            };
            trace::record_answer(&request_span, tool_call, &outcome);
            let message = answer(id.clone(), outcome);
            let message = match conn.send_here(message, Some(id.clone())) {
                Ok(sending) => {
                    // Nothing waits in the queue: the answer goes out on this task, never
                    // waiting there, so it takes no room in it.
                    lock(&conn.inflight).remove(&id);
                    sending.await;
                    cancel.answered();
                    return;
                }
                Err(message) => message,
            };
            // The request counts as in flight until its answer is queued: a peer that does not
            // read holds up its own requests, not the server's memory.
            let room = tokio::select! {
                biased;
                () = std::future::poll_fn(|cx| cancel.poll_cancelled(cx)) => None,
                room = conn.reserve(weigh(&message)) => room,
            };
            let Some(room) = room.filter(|_| !cancel.is_cancelled()) else { return };
            lock(&conn.inflight).remove(&id);
            if conn.send_now(message, Some(id), Some(room)).is_ok() {
                cancel.answered();
            }
        })
    }

    /// Counts incoming request `id` as in flight: its cancel, or why it cannot run (its id is
    /// in flight already, or too many are). A request admitted as the connection closes is
    /// cancelled at once.
    pub(crate) fn admit(&self, id: &RequestId) -> std::result::Result<RequestCancel, TurnedAway> {
        let cancel = RequestCancel::new();
        {
            let mut inflight = lock(&self.inflight);
            if inflight.contains_key(id) {
                drop(inflight);
                let error = ErrorObject::invalid_request(format_args!(
                    "request id {id} is already in flight"
                ));
                return Err(TurnedAway::Duplicate(
                    ErrorResponse::new(Some(id.clone()), error).into(),
                ));
            }
            let limit = self.common.config.max_inflight_requests;
            if inflight.len() >= limit {
                // Refused at once, never queued: the peer may retry once answers come back.
                drop(inflight);
                self.refused(Refusal::InFlightLimit { limit });
                let error = ErrorObject::new(SERVER_BUSY, "too many requests in flight")
                    .with_data(serde_json::json!({ "maxInFlight": limit }));
                return Err(TurnedAway::Busy(ErrorResponse::new(Some(id.clone()), error).into()));
            }
            inflight.insert(id.clone(), cancel.clone());
        }
        // Started as the connection closed, after its requests were cancelled: cancelled too.
        if self.is_closed() {
            cancel.cancel();
        }
        Ok(cancel)
    }

    /// The context a handler of request `id` runs in, bound to this connection.
    fn request_context(
        self: &Arc<Self>,
        id: &RequestId,
        method: String,
        params: Option<&Value>,
        cancel: RequestCancel,
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
            answers_after: false,
        }
    }

    fn settle(&self, id: &RequestId, result: Result<RawJson>) {
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
        if let Some(cancel) = lock(&self.inflight).remove(&id) {
            tracing::debug!(%id, "request cancelled by peer");
            cancel.cancel();
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
        let mut pending = lock(&self.pending);
        let Some((method, tx)) = pending.get(&id).and_then(|e| e.related.as_ref()) else {
            return Some(n);
        };
        if *method != n.method {
            return Some(n);
        }
        let full = matches!(
            tx.try_send(n.params.unwrap_or(Value::Null)),
            Err(mpsc::error::TrySendError::Full(_))
        );
        let flooded = if full { pending.remove(&id) } else { None };
        drop(pending);
        if let Some(entry) = flooded {
            // Told once: the request leaves the table, and what follows goes to the handlers.
            self.refused(Refusal::RelatedNotificationFlood { limit: RELATED_QUEUE });
            let detail = format!(
                "the peer sent more than {RELATED_QUEUE} {} notifications for request {id} \
                 before they were handled",
                n.method
            );
            let _ = entry.tx.send(Err(Error::ProtocolViolation { detail, source: None }));
        }
        None
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

impl Connection {
    /// A fresh byte budget for the notifications waiting for their handlers, and its size.
    fn notification_budget(&self) -> (Arc<Semaphore>, u32) {
        let total = self.common.config.notification_queue_bytes.clamp(1, Semaphore::MAX_PERMITS);
        let total = u32::try_from(total).unwrap_or(u32::MAX);
        (Arc::new(Semaphore::new(total as usize)), total)
    }

    /// Acts on one incoming message: a request starts its handler (or gets an answer at
    /// once), a response settles its request, cancellation and progress are applied. Returns
    /// what is left for the caller to do.
    pub(crate) fn receive(self: &Arc<Self>, message: Message) -> Received {
        trace::message(Direction::In, &message);
        match message {
            Message::Request(request) => {
                return match self.admit_request(request) {
                    Ok(serve) => Received::Request(Box::pin(serve)),
                    Err(refusal) => Received::Answer(refusal),
                };
            }
            Message::Response(Response { id, result }) => self.settle(&id, Ok(result)),
            Message::Error(ErrorResponse { id: Some(id), error }) => {
                self.settle(&id, Err(Error::from_rpc(error)))
            }
            Message::Error(ErrorResponse { id: None, error }) => {
                tracing::debug!(code = error.code.0, message = %error.message, "peer reported an error without an id");
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

    /// Settles a request with `answer`, which its transport read on the task that sent the
    /// request rather than through the receiver (see [`crate::transport::SendApart`]).
    /// Anything that is not an answer is dropped.
    pub(crate) fn answered(&self, answer: Message) {
        if let Some((id, result)) = self.take_answer(answer) {
            self.settle(&id, result);
        }
    }

    /// The result `answer` brings request `id`, taken out of the pending table, if it answers
    /// that request and the request still waits; an answer to another request is settled
    /// (see [`answered`](Self::answered)).
    pub(crate) fn answer_for(&self, id: &RequestId, answer: Message) -> Option<Result<RawJson>> {
        let (answered, result) = self.take_answer(answer)?;
        if answered != *id {
            self.settle(&answered, result);
            return None;
        }
        lock(&self.pending).remove(id).map(|_| result)
    }

    /// The request `answer` answers and its result, traced as received; `None` once the
    /// connection closed (its requests are settled as closed) or if `answer` is no answer.
    fn take_answer(&self, answer: Message) -> Option<(RequestId, Result<RawJson>)> {
        if self.is_closed() {
            return None;
        }
        trace::message(Direction::In, &answer);
        match answer {
            Message::Response(Response { id, result }) => Some((id, Ok(result))),
            Message::Error(ErrorResponse { id: Some(id), error }) => {
                Some((id, Err(Error::from_rpc(error))))
            }
            _ => {
                tracing::debug!("a message sent apart ended with something else than an answer");
                None
            }
        }
    }

    /// Acts on an event of the transport: a request that failed in the transport settles
    /// with its error; anything else goes to the hook of [`Engine::on_transport_event`].
    ///
    /// [`Engine::on_transport_event`]: super::Engine::on_transport_event
    pub(crate) fn transport_event(self: &Arc<Self>, event: TransportEvent) {
        match event {
            TransportEvent::RequestFailed { id, error } => {
                tracing::debug!(%id, error = %error, "request failed in the transport");
                self.settle(&id, Err(error));
            }
            event => {
                let peer = Peer { conn: self.clone(), related: None, served: None };
                let told = self.shared.upgrade().is_some_and(|s| s.run_event_hook(&peer, event));
                if !told {
                    tracing::debug!("transport event with no hook");
                }
            }
        }
    }

    /// Queues the answer [`receive`](Self::receive) gave, once there is room for it.
    pub(crate) async fn answer_now(self: &Arc<Self>, answer: Message) -> Result<()> {
        self.send(answer, None).await
    }
}

/// Runs a request's future on the caller's task until it first waits, then in a task of its
/// own (the reader goes on reading meanwhile: a cancellation, or the next request). A handler
/// that answers at once, the usual case, costs no task.
pub(crate) fn serve_first_here(mut serve: crate::engine::BoxFuture<'static, ()>) {
    if serve.as_mut().now_or_never().is_none() {
        tokio::spawn(serve);
    }
}

/// Why [`Connection::admit`] turned a request away, with the answer to send in its place.
pub(crate) enum TurnedAway {
    /// A request with the same id is in flight (`-32600`).
    Duplicate(Message),
    /// Too many requests are in flight (`-32000`).
    Busy(Message),
}

impl TurnedAway {
    /// The answer to send in the request's place.
    fn answer(&self) -> &Message {
        match self {
            TurnedAway::Duplicate(answer) | TurnedAway::Busy(answer) => answer,
        }
    }

    fn into_answer(self) -> Message {
        match self {
            TurnedAway::Duplicate(answer) | TurnedAway::Busy(answer) => answer,
        }
    }
}

impl From<TurnedAway> for NotRun {
    fn from(turned: TurnedAway) -> NotRun {
        match turned {
            TurnedAway::Duplicate(answer) => NotRun::Duplicate(answer),
            TurnedAway::Busy(answer) => NotRun::Busy(answer),
        }
    }
}

/// What is left to do with an incoming message once [`Connection::receive`] acted on it.
pub(crate) enum Received {
    /// Nothing.
    Done,
    /// Serve this request: the future runs its handler and sends its answer. The caller
    /// polls it once where it is (most handlers finish at once: no task is spawned for them)
    /// and spawns what is left (see [`serve_first_here`]).
    Request(crate::engine::BoxFuture<'static, ()>),
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
        match self.common.handlers.notification_handler(&method) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outlet_is_two_words_whatever_its_kind() {
        // Every connection holds one, an idle 2025 session's too (kept under 1 KiB in all; see
        // docs/performance.md): what only inline requests need stays behind a pointer.
        assert!(std::mem::size_of::<Outlet>() <= 16, "{}", std::mem::size_of::<Outlet>());
    }
}
