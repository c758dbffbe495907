//! The connection's I/O: [`Outbound`] (what it has to write, bounded), one write under the
//! write timeout, and the reader loop (the writing itself is [`super::super::outgoing`]'s).

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::super::room::Held;
use super::super::{CloseReason, Refusal};
use crate::error::{Error, Result};
use crate::jsonrpc::{ErrorObject, ErrorResponse, Message, RequestId};
use crate::transport::{Incoming, TransportReceiver};

use super::*;

/// A message to write, with the incoming request it relates to.
pub(crate) struct Outbound {
    pub(crate) message: Message,
    pub(crate) related: Option<RequestId>,
    /// The room it holds in the queue (given back when it is taken off).
    pub(crate) held: Held,
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
    // Most writes finish on their first poll: those need no timer (making and dropping one
    // for every message cost about 250 instructions).
    let mut send = std::pin::pin!(send);
    if let Some(sent) = send.as_mut().now_or_never() {
        return sent;
    }
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

pub(super) async fn read_loop<R: TransportReceiver>(
    conn: Arc<Connection>,
    mut receiver: R,
    notify: NotifyQueue,
) {
    loop {
        let message = match receiver.recv_incoming().await {
            Ok(Some(Incoming::Message(message))) => message,
            Ok(Some(Incoming::Event(event))) => {
                conn.transport_event(event);
                continue;
            }
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
                // The peer's fault, not ours: answered, and logged below WARN.
                tracing::debug!(limit, "message from peer over the size limit; discarded");
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
            Received::Request(serve) => super::serve_first_here(serve),
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
