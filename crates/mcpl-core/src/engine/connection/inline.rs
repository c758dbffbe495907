//! Serving one request on the caller's task, with no connection of its own (the
//! embedding entry points of [`crate::engine::embed`]).

use std::sync::Arc;
use std::task::Poll;

use tracing::Instrument as _;

use super::super::handler::RequestContext;
use super::super::lazy_meta::{LazyMeta, MetaSlot};
use super::super::lock;
use crate::error::{Error, Result};
use crate::jsonrpc::{ErrorObject, ErrorResponse, Message, Request, RequestId};
use crate::trace::{self, Direction};
use crate::transport::TransportSender;

use super::*;

impl Connection {
    /// Serves `request` on the caller's task: no reader, writer or handler tasks. What the
    /// handler sends goes out through `sender` as it is sent; requests the handler makes of the
    /// peer fail at once with `-32601` (a single-request transport has no way back).
    pub(crate) async fn serve_inline<S: TransportSender>(
        self: &Arc<Self>,
        request: Request,
        meta: Option<LazyMeta>,
        mut sender: S,
    ) -> Result<()> {
        let Request { id, method, mut params } = request;
        let span = self.server_span(&method, &id, params.as_ref());
        let Some(handler) = self.common.handlers.request_handler(&method) else {
            // However this ends, the connection is closed after.
            let _closed = CloseOnDrop(self.as_ref());
            let error = ErrorObject::method_not_found(&method);
            trace::record_error(&span, &error);
            let answer: Message = ErrorResponse::new(Some(id.clone()), error).into();
            trace::message(Direction::Out, &answer);
            return sender.send_related(answer, Some(id)).await;
        };
        let tool_call = method == "tools/call";
        // The one request owns `_meta`: it moves into the context instead of being copied.
        let meta = match meta {
            Some(meta) => MetaSlot::Lazy(meta),
            None => MetaSlot::take_from(&mut params),
        };
        let head = (id.clone(), method);
        let outcome = self
            .clone()
            .run_inline_in(span.clone(), head, meta, &mut sender, |ctx| {
                run_handler(handler, ctx, params)
            })
            .await?;
        trace::record_answer(&span, tool_call, &outcome);
        let answer = answer(id.clone(), outcome);
        trace::message(Direction::Out, &answer);
        sender.send_related(answer, Some(id)).await
    }

    /// Runs `handler` as the handler of request `id` on the caller's task and returns what it
    /// returned; the caller answers. What the handler sends meanwhile goes out through
    /// `sender`; requests it makes of the peer fail at once with `-32601`. Once the handler
    /// is done, the connection is closed: nothing it left behind sends any more. Inlined: see
    /// [`Engine::run_request`](crate::engine::Engine::run_request).
    #[inline(always)]
    pub(crate) fn run_inline<'a, S, F, Fut>(
        self: Arc<Self>,
        (id, method): (RequestId, String),
        meta: MetaSlot,
        sender: &'a mut S,
        handler: F,
    ) -> impl Future<Output = Result<Fut::Output>> + 'a
    where
        S: TransportSender,
        F: FnOnce(RequestContext) -> Fut + 'a,
        Fut: Future + 'a,
    {
        // The params are the caller's: it records what they name (`trace::record_target`).
        let span = self.server_span(&method, &id, None);
        self.run_inline_in(span, (id, method), meta, sender, handler)
    }

    /// [`run_inline`](Self::run_inline), the handler running in `span`.
    pub(super) async fn run_inline_in<S, F, Fut>(
        self: Arc<Self>,
        span: tracing::Span,
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
        // However this ends (even by the future being dropped), the connection is closed after.
        let _closed = CloseOnDrop(self.as_ref());
        // The connection lives for this one request: its close is the request's cancel.
        let cancel = RequestCancel::with_connection();
        let ctx = RequestContext {
            id: id.clone(),
            method,
            meta,
            peer: Peer { conn: self.clone(), related: Some(id), served: Some(cancel.clone()) },
            cancel,
            answers_after: false,
        };
        let handler = span.in_scope(|| handler(ctx)).instrument(span);
        tokio::pin!(handler);
        // What the handler sent first, in order, then its outcome. Forwarding is boxed: most
        // requests send nothing but their answer, and inline its future would weigh on theirs.
        let outcome = loop {
            let next = std::future::poll_fn(|cx| match self.poll_outbox(cx) {
                Poll::Ready(item) => Poll::Ready(Err(item)),
                Poll::Pending => handler.as_mut().poll(cx).map(Ok),
            });
            match next.await {
                Ok(outcome) => break outcome,
                Err(item) => {
                    self.taken(&item);
                    Box::pin(self.forward_inline(sender, item.message, item.related)).await?;
                }
            }
        };
        while let Some(item) = self.outbox().and_then(Outbox::try_pop) {
            self.taken(&item);
            Box::pin(self.forward_inline(sender, item.message, item.related)).await?;
        }
        // Nothing the handler left behind may send after its response.
        self.close_now();
        let pending: Vec<PendingEntry> = lock(&self.pending).take().map(|(_, e)| e).collect();
        for entry in pending {
            let _ = entry.tx.send(Err(Error::ConnectionClosed));
        }
        Ok(outcome)
    }

    /// The next message the handler sent, once there is one (never, for a connection that
    /// is not served inline: it has no outbox).
    fn poll_outbox(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Outbound> {
        match self.outbox() {
            Some(outbox) => outbox.poll_pop(cx),
            None => std::task::Poll::Pending,
        }
    }

    pub(super) async fn forward_inline<S: TransportSender>(
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
}

/// Marks a connection closed when dropped (as a [`tokio_util::sync::DropGuard`] cancels its
/// token).
struct CloseOnDrop<'a>(&'a Connection);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.close_now();
    }
}
