//! [`Peer`]: the handle to the other side of one connection (requests, notifications,
//! the connection's facts).

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::super::lock;
use super::super::options::RequestOptions;
use super::super::room::weigh;
use crate::error::{Error, Result};
use crate::jsonrpc::{Message, Notification, RawJson, Request, RequestId};
use crate::trace::{self, TraceFacts};

use super::*;

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
    /// The cancellation of that request: once it fires, this handle sends nothing.
    pub(crate) served: Option<RequestCancel>,
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
pub(super) struct PendingGuard<'a> {
    conn: &'a Arc<Connection>,
    id: Option<RequestId>,
    method: &'a str,
}

impl PendingGuard<'_> {
    pub(super) fn disarm(&mut self) {
        self.id = None;
    }

    pub(super) fn cancel(&mut self, reason: &str) {
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
    /// [`EngineConfig::max_queued_messages`](crate::engine::EngineConfig::max_queued_messages)); that
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
        let result = self.request_raw(method, params, options).await?;
        result
            .decode()
            .map_err(|source| Error::Serialization { what: format!("{method} result"), source })
    }

    /// [`request`](Self::request), with the result left as the encoded JSON it arrived as (to
    /// be decoded straight into its type, see [`RawJson::decode`]).
    ///
    /// # Errors
    ///
    /// As [`request`](Self::request).
    ///
    /// # Cancel safety
    ///
    /// As [`request`](Self::request).
    pub async fn request_raw(
        &self,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<RawJson> {
        self.check_open()?;
        let id = RequestId::Number(self.conn.common.next_id.fetch_add(1, Ordering::Relaxed));
        let facts = || lock(&self.conn.trace_facts).clone();
        let span = trace::client_span(method, &id, params.as_ref(), facts);
        let outcome = self.send_request(id, method, params, options).instrument(span.clone()).await;
        trace::record_outcome(&span, method == "tools/call", &outcome);
        outcome
    }

    /// [`request`](Self::request) once its id is chosen, within its span.
    pub(super) async fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Option<Value>,
        options: RequestOptions,
    ) -> Result<RawJson> {
        let conn = &self.conn;
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
        let timeout = timeout.unwrap_or(conn.common.config.request_timeout);
        let hard_deadline = max_total_timeout.map(|m| start + m);
        let deadline_after = |now: Instant| {
            let soft = now + timeout;
            hard_deadline.map_or(soft, |hard| soft.min(hard))
        };
        let sleep = tokio::time::sleep_until(deadline_after(start));
        tokio::pin!(sleep);
        // No token is made for what cannot be cancelled (most requests).
        let served = self.served.as_ref();
        let (progress_tx, mut progress_rx) = match on_progress {
            Some(_) => {
                let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let params = with_meta(params, meta, progress_tx.as_ref().map(|_| &id));
        let request: Message = Request::new(id.clone(), method, params).into();
        // Sent on this task when nothing waits in the outgoing queue; else queued, in room
        // waited for first: the wait counts toward the request's timeout, and a request that
        // never went out needs no cancelling.
        let (mut sending, request) = match conn.send_here(request, self.related.clone()) {
            Ok(sending) => (sending, None),
            Err(request) => (Sending::done(), Some(request)),
        };
        let room = match &request {
            None => None,
            Some(request) => tokio::select! {
                biased;
                room = conn.reserve(weigh(request)) => Some(room.ok_or(Error::ConnectionClosed)?),
                _ = cancelled(cancel.as_ref()) => {
                    return Err(Error::Cancelled { reason: Some("cancelled by the caller".into()) });
                }
                () = request_cancelled(served) => {
                    return Err(if conn.is_closed() { Error::ConnectionClosed } else { served_cancelled() });
                }
                _ = &mut sleep => {
                    return Err(Error::RequestTimeout { method: method.to_owned(), elapsed: start.elapsed() });
                }
            },
        };
        let (tx, mut rx) = oneshot::channel();
        let (related_tx, mut related_rx, on_related) = match related {
            Some((method, f)) => {
                let (tx, rx) = mpsc::channel(super::RELATED_QUEUE);
                (Some((method, tx)), Some(rx), Some(f))
            }
            None => (None, None, None),
        };
        lock(&conn.pending)
            .insert(id.clone(), PendingEntry { tx, progress: progress_tx, related: related_tx });
        let mut guard = PendingGuard { conn, id: Some(id.clone()), method };
        // A close that emptied the table before this entry went in would never settle it:
        // it closed first (`teardown` cancels, then empties), so this sees it.
        if conn.is_closed() {
            guard.cancel("the connection closed");
            return Err(Error::ConnectionClosed);
        }
        if let Some(request) = request
            && let Err(e) = conn.send_now(request, self.related.clone(), room)
        {
            guard.disarm();
            return Err(e);
        }

        loop {
            let result = tokio::select! {
                biased;
                answer = &mut sending, if !sending.is_done() => match answer {
                    // The answer, read by the transport on this task, is taken here rather
                    // than sent through the pending table. The receiver is closed first: the
                    // entry leaving the table then does not wake this task again (which
                    // would hand it to another thread).
                    Some(answer) if answer.id() == Some(&id) => {
                        rx.close();
                        match conn.answer_for(&id, answer) {
                            Some(result) => result,
                            // Settled otherwise meanwhile, or the connection closed.
                            None => rx.try_recv().unwrap_or(Err(Error::ConnectionClosed)),
                        }
                    }
                    Some(other) => {
                        conn.answered(other);
                        continue;
                    }
                    None => continue,
                },
                result = &mut rx => result.unwrap_or(Err(Error::ConnectionClosed)),
                Some(params) = recv_opt(&mut related_rx) => {
                    if let Some(f) = &on_related {
                        f(params);
                    }
                    continue;
                }
                _ = cancelled(cancel.as_ref()) => {
                    guard.cancel("The caller cancelled the request");
                    return Err(Error::Cancelled { reason: Some("cancelled by the caller".into()) });
                }
                () = request_cancelled(served) => {
                    // The served request is also cancelled when the connection closes (if
                    // it is still in flight; else the close settles this request).
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
                    continue;
                }
                _ = &mut sleep => {
                    guard.cancel("Request timed out");
                    return Err(Error::RequestTimeout { method: method.to_owned(), elapsed: start.elapsed() });
                }
            };
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
            return result;
        }
    }

    /// Sends a notification, once the connection's outgoing queue has room for it (see
    /// [`EngineConfig::max_queued_messages`](crate::engine::EngineConfig::max_queued_messages)): a
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
    pub(super) fn check_open(&self) -> Result<()> {
        if self.conn.is_closed() {
            return Err(Error::ConnectionClosed);
        }
        if self.served.as_ref().is_some_and(RequestCancel::is_cancelled) {
            tracing::debug!(request = ?self.related, "send from a cancelled request's handler dropped");
            return Err(served_cancelled());
        }
        Ok(())
    }

    /// What the spans of this connection's requests record about it beyond each request
    /// (see [`crate::trace`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_core::{Engine, transport::memory};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
    /// # let (a, _b) = memory::pair();
    /// let peer = Engine::new().connect(a).await?;
    /// assert_eq!(peer.trace_facts().protocol_version, None);
    /// # Ok(()) }
    /// ```
    pub fn trace_facts(&self) -> TraceFacts {
        lock(&self.conn.trace_facts).clone()
    }

    /// Tells the spans of this connection's later requests, served and sent, what its owner
    /// knows about it: the protocol version once negotiated, the session id once given (see
    /// [`TraceFacts`]). Recorded on each span as it starts (read only when a subscriber wants
    /// the span).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::{Engine, ProtocolVersion, transport::memory};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
    /// # let (a, _b) = memory::pair();
    /// let peer = Engine::new().connect(a).await?;
    /// peer.update_trace_facts(|facts| {
    ///     facts.protocol_version = Some(ProtocolVersion::V2025_11_25);
    ///     facts.session_id = Some("1868a90c".into());
    /// });
    /// assert_eq!(peer.trace_facts().session_id.as_deref(), Some("1868a90c"));
    /// # Ok(()) }
    /// ```
    pub fn update_trace_facts(&self, update: impl FnOnce(&mut TraceFacts)) {
        update(&mut lock(&self.conn.trace_facts));
    }

    /// The data the owner of this connection attached to it, if it is a `T` (see
    /// [`embed::drive_with`](crate::engine::embed::drive_with)).
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.conn.data()
    }

    /// The data the owner of this connection attached to it, if it is a `T`, as a shared
    /// handle that outlives this `Peer` (the connection keeps its data in an `Arc`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::engine::{Engine, embed};
    /// use mcpl_core::transport::{Transport, memory};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
    /// # let (sender, _unused) = memory::pair().0.start().await?;
    /// let driven = embed::drive_with(&Engine::new(), sender, String::from("alice"));
    /// let data = driven.peer().shared_data::<String>().unwrap();
    /// assert_eq!(*data, "alice");
    /// assert!(driven.peer().shared_data::<u32>().is_none());
    /// # Ok(()) }
    /// ```
    pub fn shared_data<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.conn.shared_data()
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
        self.conn.closed_token().cancelled().await;
    }

    /// The number of requests sent through this connection that await a response.
    pub fn pending_requests(&self) -> usize {
        lock(&self.conn.pending).len()
    }

    /// Whether the request `id` sent through this connection awaits its response (a
    /// response with another id is not this connection's to settle).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::engine::Engine;
    /// use mcpl_core::jsonrpc::RequestId;
    /// use mcpl_core::transport::{Transport, memory};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
    /// let (ours, _theirs) = memory::pair();
    /// let (sender, _inbox) = ours.start().await?;
    /// let driven = Engine::new().drive(sender);
    /// assert!(!driven.peer().awaits_response(&RequestId::from(0)));
    /// # Ok(()) }
    /// ```
    pub fn awaits_response(&self, id: &RequestId) -> bool {
        lock(&self.conn.pending).contains_key(id)
    }

    /// The number of incoming requests whose handlers are running.
    pub fn inflight_requests(&self) -> usize {
        lock(&self.conn.inflight).len()
    }
}

/// The error of a send from the handler of a cancelled request.
pub(super) fn served_cancelled() -> Error {
    Error::Cancelled { reason: Some("the request this handler serves was cancelled".into()) }
}

/// Resolves when `token` is cancelled; never without one.
async fn cancelled(token: Option<&CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Resolves when the served request is cancelled; never without one.
async fn request_cancelled(served: Option<&RequestCancel>) {
    match served {
        Some(served) => served.cancelled().await,
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
pub(super) fn with_meta(
    params: Option<Value>,
    meta: Option<Map<String, Value>>,
    progress_token: Option<&RequestId>,
) -> Option<Value> {
    if meta.is_none() && progress_token.is_none() {
        return params;
    }
    let mut params = params.unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(object) = params.as_object_mut() {
        let mut meta = meta;
        if !matches!(object.get("_meta"), Some(Value::Object(_))) {
            // No `_meta` of the caller's: the given one moves in whole.
            object.insert("_meta".to_owned(), Value::Object(meta.take().unwrap_or_default()));
        }
        if let Some(Value::Object(target)) = object.get_mut("_meta") {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_and_a_progress_token_merge_into_params() {
        let meta = || json!({"a": 1, "b": 2}).as_object().cloned();
        let token = RequestId::from(7);
        for (params, expected) in [
            (None, json!({"_meta": {"a": 1, "b": 2, "progressToken": 7}})),
            (Some(json!({"x": 1})), json!({"x": 1, "_meta": {"a": 1, "b": 2, "progressToken": 7}})),
            // The caller's own `_meta` keeps its members; the given ones win.
            (
                Some(json!({"_meta": {"b": 0, "c": 3}})),
                json!({"_meta": {"a": 1, "b": 2, "c": 3, "progressToken": 7}}),
            ),
            // A `_meta` that is no object is replaced.
            (Some(json!({"_meta": 5})), json!({"_meta": {"a": 1, "b": 2, "progressToken": 7}})),
        ] {
            assert_eq!(with_meta(params, meta(), Some(&token)), Some(expected));
        }
        assert_eq!(
            with_meta(Some(json!({"x": 1})), meta(), None),
            Some(json!({"x": 1, "_meta": {"a": 1, "b": 2}}))
        );
        assert_eq!(
            with_meta(Some(json!({"x": 1})), None, Some(&token)),
            Some(json!({"x": 1, "_meta": {"progressToken": 7}}))
        );
        assert_eq!(with_meta(Some(json!({"x": 1})), None, None), Some(json!({"x": 1})));
        // Params that are no object are left as they are.
        assert_eq!(with_meta(Some(json!([1])), meta(), Some(&token)), Some(json!([1])));
    }
}
