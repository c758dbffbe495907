//! Handlers for incoming requests and notifications, and the context they run in.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::Peer;
use super::connection::RequestCancel;
use crate::error::Result;
use crate::jsonrpc::{ErrorObject, RawJson, RequestId};

/// A boxed, `Send` future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a request handler answers: a result (as encoded JSON) or a JSON-RPC error.
///
/// A handler written as a function may return any result type that converts into
/// [`RawJson`] (a [`Value`] does), see [`IntoResult`].
pub type HandlerResult = std::result::Result<RawJson, ErrorObject>;

/// A result a request handler written as a function may answer with: [`RawJson`], or a
/// [`Value`] (encoded as it is answered).
pub trait IntoResult: Send {
    /// The result as encoded JSON.
    fn into_result(self) -> RawJson;
}

impl IntoResult for RawJson {
    fn into_result(self) -> RawJson {
        self
    }
}

impl IntoResult for Value {
    fn into_result(self) -> RawJson {
        RawJson::from(&self)
    }
}

/// Handles one incoming request method.
///
/// Implemented for every `Fn(RequestContext, Option<Value>) -> impl Future<Output =
/// Result<R, ErrorObject>>` where `R` is a [`Value`] or a [`RawJson`] (see [`IntoResult`]), so
/// a closure or an `async fn` is a handler.
#[diagnostic::on_unimplemented(
    note = "request handlers are async fns taking (RequestContext, Option<serde_json::Value>) and \
            returning Result<serde_json::Value, ErrorObject> (or Result<RawJson, ErrorObject>)"
)]
pub trait RequestHandler: Send + Sync + 'static {
    /// Serves one request.
    fn handle(
        &self,
        ctx: RequestContext,
        params: Option<Value>,
    ) -> BoxFuture<'static, HandlerResult>;
}

impl<F, Fut, R> RequestHandler for F
where
    F: Fn(RequestContext, Option<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<R, ErrorObject>> + Send + 'static,
    R: IntoResult,
{
    fn handle(
        &self,
        ctx: RequestContext,
        params: Option<Value>,
    ) -> BoxFuture<'static, HandlerResult> {
        // A combinator, not an `async` block: a block would hold the handler's future twice
        // (as what it captured and again as what it awaits), doubling the box.
        Box::pin(futures::FutureExt::map(self(ctx, params), |answer| {
            answer.map(IntoResult::into_result)
        }))
    }
}

/// Handles one incoming notification method.
///
/// Notifications of one connection are delivered one at a time, in the order they arrived.
#[diagnostic::on_unimplemented(
    note = "notification handlers are async fns taking (NotificationContext, Option<serde_json::Value>)"
)]
pub trait NotificationHandler: Send + Sync + 'static {
    /// Handles one notification.
    fn handle(&self, ctx: NotificationContext, params: Option<Value>) -> BoxFuture<'static, ()>;
}

impl<F, Fut> NotificationHandler for F
where
    F: Fn(NotificationContext, Option<Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn handle(&self, ctx: NotificationContext, params: Option<Value>) -> BoxFuture<'static, ()> {
        Box::pin(self(ctx, params))
    }
}

pub(crate) type SharedRequestHandler = Arc<dyn RequestHandler>;
pub(crate) type SharedNotificationHandler = Arc<dyn NotificationHandler>;

/// The context of one incoming request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    /// Shared, so that cloning a context (handlers hand theirs to sub-tasks) copies no JSON.
    pub(crate) meta: super::lazy_meta::MetaSlot,
    pub(crate) peer: Peer,
    pub(crate) cancel: RequestCancel,
    /// Whether the engine runs what [`after_answer`](Self::after_answer) registers (kept in
    /// `cancel`) once the response is queued; not where it cannot tell when that is (a
    /// request served on its own, see [`embed::serve_request`](super::embed::serve_request)).
    pub(crate) answers_after: bool,
}

/// Callbacks that run once a request's response was queued for sending.
#[derive(Default)]
pub(crate) struct AfterAnswer(std::sync::Mutex<Vec<Box<dyn FnOnce() + Send>>>);

impl AfterAnswer {
    /// Adds `f` to what runs.
    pub(crate) fn push(&self, f: Box<dyn FnOnce() + Send>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(f);
    }

    /// Runs (and drops) every callback registered so far.
    pub(crate) fn run(&self) {
        let callbacks =
            std::mem::take(&mut *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for f in callbacks {
            f();
        }
    }
}

impl std::fmt::Debug for AfterAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterAnswer")
    }
}

impl RequestContext {
    /// Runs `f` once this request's response has been queued for sending, so that whatever `f`
    /// sends reaches the peer after the response. `f` does not run if the request is cancelled
    /// (it then gets no response). Returns `false`, dropping `f`, where the engine serves the
    /// request on its own and cannot order later messages after it
    /// ([`embed::serve_request`](super::embed::serve_request)).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::Engine;
    ///
    /// let engine = Engine::new();
    /// engine.on_request("subscribe", |ctx, _params| async move {
    ///     let peer = ctx.peer().clone();
    ///     ctx.after_answer(move || {
    ///         // Sent after the response to `subscribe`.
    ///         tokio::spawn(async move { peer.notify("welcome", None).await });
    ///     });
    ///     Ok(serde_json::json!({}))
    /// });
    /// ```
    pub fn after_answer(&self, f: impl FnOnce() + Send + 'static) -> bool {
        self.answers_after && self.cancel.after_answer(Box::new(f))
    }

    /// The request id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request's `_meta` object, if it had one.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.meta.get()
    }

    /// The progress token the caller asked progress notifications for, if any.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta
            .get()
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
    }

    /// The peer that sent the request; use it to send requests and notifications back on the
    /// same connection. After that connection closed, sends fail with `ConnectionClosed`; once
    /// the request is cancelled, sends through this handle and its clones fail with
    /// `Cancelled` (see [`Peer::unrelated`] for messages that outlive the request).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Whether the request was cancelled (by the peer, or because the connection closed).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled() || self.peer.conn.is_closed()
    }

    /// Resolves when the request is cancelled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn cancelled(&self) {
        let closed = self.peer.conn.closed_token();
        tokio::select! {
            () = self.cancel.cancelled() => {}
            () = closed.cancelled() => {}
        }
    }

    /// The token cancelled with this request, to hand to sub-tasks.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.token(&self.peer.conn.closed_token())
    }

    /// Sends `notifications/progress` for this request, if the caller asked for progress.
    ///
    /// Returns `Ok(false)` without sending anything when the request carried no progress token.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed; `Cancelled` (nothing sent) once the
    /// request was cancelled.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<bool> {
        let Some(token) = self.progress_token().cloned() else {
            return Ok(false);
        };
        let mut params = Map::new();
        params.insert("progressToken".into(), token);
        params.insert("progress".into(), progress.into());
        if let Some(total) = total {
            params.insert("total".into(), total.into());
        }
        if let Some(message) = message {
            params.insert("message".into(), message.into());
        }
        self.peer.notify("notifications/progress", Some(Value::Object(params))).await?;
        Ok(true)
    }
}

/// The context of one incoming notification.
#[derive(Debug, Clone)]
pub struct NotificationContext {
    pub(crate) method: String,
    pub(crate) peer: Peer,
}

impl NotificationContext {
    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The peer that sent the notification.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }
}
