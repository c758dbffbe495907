//! A request of a connection served on its caller's task, the caller answering (see
//! [`Driven::run_request`](crate::engine::Driven::run_request)).

use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument as _;

use super::super::driven::{NotRun, Running};
use super::super::handler::RequestContext;
use super::super::lazy_meta::MetaSlot;
use super::{Connection, Peer, lock};
use crate::jsonrpc::Request;
use crate::trace;

impl Connection {
    /// Admits `request` and runs `handler` for it on the task that polls the returned future,
    /// which gives what the handler returned (`None`: the request was cancelled); the caller
    /// answers. Its `_meta` moves into the context; the handler gets the params without it.
    pub(crate) fn run_for_caller<F, Fut>(
        self: &Arc<Self>,
        request: Request,
        handler: F,
    ) -> std::result::Result<Running<Fut::Output>, NotRun>
    where
        F: FnOnce(RequestContext, Option<Value>) -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        if self.is_closed() {
            return Err(NotRun::Closed);
        }
        let Request { id, method, mut params } = request;
        let span = self.server_span(&method, &id, params.as_ref());
        let cancel = self.admit(&id).map_err(|turned| {
            if let crate::jsonrpc::Message::Error(e) = turned.answer() {
                trace::record_error(&span, &e.error);
            }
            NotRun::from(turned)
        })?;
        let meta = MetaSlot::take_from(&mut params);
        let ctx = RequestContext {
            id: id.clone(),
            method,
            meta,
            peer: Peer {
                conn: self.clone(),
                related: Some(id.clone()),
                served: Some(cancel.clone()),
            },
            cancel: cancel.clone(),
            answers_after: true,
        };
        let conn = self.clone();
        // The handler's future is made inside the box, where it stays: only what it is made
        // of moves in.
        let run = async move {
            let handler = handler(ctx, params);
            let outcome = tokio::select! {
                biased;
                () = std::future::poll_fn(|cx| cancel.poll_cancelled(cx)) => None,
                outcome = handler => Some(outcome),
            };
            // A cancelled request is no longer in the table: the cancel, or the close, took it
            // out (and its id may be in use again).
            let outcome = outcome.filter(|_| !cancel.is_cancelled());
            if outcome.is_some() {
                lock(&conn.inflight).remove(&id);
                cancel.answered();
            } else {
                tracing::debug!("request cancelled; no answer");
            }
            outcome
        };
        Ok(Running::new(Box::pin(run.instrument(span))))
    }
}
