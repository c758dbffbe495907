//! The endpoint's table of live sessions: finding a session a request names (here, or
//! restored from the session store), reserving a slot at the cap (evicting an idle session),
//! reaping idle and half-open sessions, and forwarding the server's changes to every session.

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use mcpl_core::jsonrpc::{ErrorCode, RequestId};
use mcpl_core::types::{InitializeRequestParams, names};

use crate::http::listed::Listed;
use crate::http::session::HttpSession;
use crate::http::session_store::{self, SessionRecord};
use crate::http::{Inner, Reject, StreamableHttp};
use crate::principal::Principal;

impl StreamableHttp {
    fn session(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.inner
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .map(|s| s.0.clone())
    }

    pub(super) fn remove_session(&self, id: &str) -> Option<Arc<HttpSession>> {
        let mut sessions =
            self.inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.take(id).map(|s| s.0)
    }

    /// Takes a session slot for a handshake, atomically: at the cap, the idle session that
    /// never finished its handshake, else the least recently used idle one, is evicted (and
    /// returned, to be closed). `None`: the cap is reached and every session is busy.
    pub(super) fn reserve_session(&self) -> Option<(SessionSlot<'_>, Option<Arc<HttpSession>>)> {
        use std::sync::atomic::Ordering;
        let inner = &*self.inner;
        let mut sessions =
            inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let taken = sessions.len() + inner.reserved.load(Ordering::SeqCst);
        let evicted = if taken < inner.config.max_sessions {
            None
        } else {
            let victim = sessions
                .iter()
                .map(|s| &s.0)
                .filter(|s| !s.is_busy())
                .min_by_key(|s| (s.is_ready(), s.idle_since(inner.epoch)))
                .map(|s| s.id.clone())?;
            sessions.take(&*victim).map(|s| s.0)
        };
        inner.reserved.fetch_add(1, Ordering::SeqCst);
        Some((SessionSlot(inner), evicted))
    }

    /// Closes a session this endpoint let go of (idle, or evicted at the cap), already out
    /// of its table. With a store that expires sessions itself (a fleet's), only this copy
    /// ends: the client may carry on at another instance. Otherwise the session ends.
    pub(super) async fn drop_local(&self, session: &HttpSession) {
        match &self.inner.store {
            Some(store) if store.expires_idle() => session.detach().await,
            Some(store) => {
                if let Err(e) = store.remove(&session.id).await {
                    tracing::warn!(session = %session.id, error = %e, "session store remove failed");
                }
                session.close().await;
            }
            None => session.close().await,
        }
    }

    pub(super) fn start_reaper(&self) {
        let weak = Arc::downgrade(&self.inner);
        let config = &self.inner.config;
        let period = (config.session_idle_timeout.min(config.handshake_timeout) / 4)
            .max(Duration::from_millis(100));
        self.inner.reaper.call_once(|| {
            let changes = self.inner.server.subscribe_changes();
            tokio::spawn(forward_changes(weak.clone(), changes));
            if let Some(relayed) = self.inner.events.relayed() {
                tokio::spawn(deliver_relayed(weak.clone(), relayed));
            }
            tokio::spawn(close_at_shutdown(
                weak.clone(),
                self.inner.config.connections.shutdown.fired(),
            ));
            tokio::spawn(reap(weak, period));
        });
    }
}

/// Closes every session once `shutdown` fires (see [`StreamableHttp::close`]).
async fn close_at_shutdown(inner: Weak<Inner>, shutdown: crate::http::shutdown::Fired) {
    shutdown.await;
    if let Some(inner) = inner.upgrade() {
        StreamableHttp { inner }.close().await;
    }
}

/// A session slot reserved for a handshake under way; freed when dropped (by then the
/// session is in the table, or failed).
pub(super) struct SessionSlot<'a>(&'a Inner);

impl Drop for SessionSlot<'_> {
    fn drop(&mut self) {
        self.0.reserved.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Tells every live session about the server's changes, until the endpoint is dropped: one
/// task for all sessions, so an idle session costs no task of its own.
async fn forward_changes(
    inner: Weak<Inner>,
    mut changes: tokio::sync::broadcast::Receiver<crate::events::ServerEvent>,
) {
    use crate::events::ServerEvent;
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let batch = match changes.recv().await {
            Ok(event) => vec![event],
            Err(RecvError::Closed) => return,
            Err(RecvError::Lagged(missed)) => {
                // Resource updates are lost; the lists may have changed, so say so.
                tracing::warn!(missed, "sessions fell behind on server events");
                vec![
                    ServerEvent::ToolsListChanged,
                    ServerEvent::ResourcesListChanged,
                    ServerEvent::PromptsListChanged,
                ]
            }
        };
        let Some(inner) = inner.upgrade() else { return };
        let sessions: Vec<Arc<HttpSession>> = inner
            .sessions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|s| s.0.clone())
            .collect();
        // In a fleet, a list change reaches a session through the instance where its
        // standalone stream is connected (the change relay tells every instance), not once
        // per instance holding the session; a resource update, through the instance where the
        // client subscribed.
        let relays = inner.events.relays();
        drop(inner);
        for event in &batch {
            let told = |s: &&Arc<HttpSession>| {
                s.wants(event)
                    && (!relays
                        || matches!(event, ServerEvent::ResourceUpdated { .. })
                        || s.standalone_connected())
            };
            for session in sessions.iter().filter(told) {
                // Queued without waiting: a session whose connection closed is skipped.
                let _ = session.peer().notify(event.method(), event.params()).await;
            }
        }
    }
}

/// Delivers what other instances of the fleet relay to the sessions held here (see
/// [`EventStore::relays`](crate::http::event_store::EventStore::relays)), until the endpoint
/// is dropped.
async fn deliver_relayed(
    inner: Weak<Inner>,
    mut relayed: futures::stream::BoxStream<'static, crate::http::event_store::Relayed>,
) {
    use crate::http::event_store::Relayed;
    use futures::StreamExt;
    while let Some(relayed) = relayed.next().await {
        let Some(inner) = inner.upgrade() else { return };
        let http = StreamableHttp { inner };
        let Some(session) = http.session(relayed.session()) else { continue };
        drop(http);
        match relayed {
            Relayed::ToClient { message, .. } => {
                session.send_relayed(message).await;
            }
            Relayed::ToServer { message, .. } => {
                if super::response_id(&message).is_some_and(|id| session.awaits_response(id)) {
                    let _ = session.deliver(message).await;
                }
            }
        }
    }
}

/// Closes sessions idle for longer than the configured timeout, until the endpoint is dropped.
async fn reap(inner: Weak<Inner>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        let (idle, handshake) = (inner.config.session_idle_timeout, inner.config.handshake_timeout);
        let expired: Vec<Arc<HttpSession>> = {
            let mut sessions =
                inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            let ids: Vec<Arc<str>> = sessions
                .iter()
                .map(|s| &s.0)
                .filter(|s| {
                    if s.is_busy() {
                        // In-flight requests and open streams are activity.
                        s.touch(inner.epoch);
                        false
                    } else if !s.is_ready() {
                        s.created(inner.epoch).elapsed() > handshake
                    } else {
                        s.idle_since(inner.epoch).elapsed() > idle
                    }
                })
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.take(&**id).map(|s| s.0)).collect()
        };
        for session in expired {
            tracing::debug!(session = %session.id, "closing idle session");
            let http = StreamableHttp { inner: inner.clone() };
            http.drop_local(&session).await;
        }
    }
}

/// A random first stream number for a restored session: below 2^52, so its streams' numbers
/// stay exact as JSON numbers too, and far from those of any other copy of the session.
pub(in crate::http) fn random_stream_base() -> Result<u64, getrandom::Error> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)?;
    Ok((u64::from_le_bytes(bytes) >> 12).max(1 << 32))
}

pub(super) fn new_session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Finds the session a request names in its `Mcp-Session-Id` (`sent`): `400` without the
/// header, `404` for one that is neither live here nor recorded in the session store, or that
/// another principal created (the request acts for `principal`): to the request, the session
/// does not exist.
pub(super) async fn find_session(
    http: &StreamableHttp,
    sent: Option<&HeaderValue>,
    principal: Option<&Principal>,
) -> Result<Arc<HttpSession>, Reject> {
    let Some(id) = sent.and_then(|v| v.to_str().ok()) else {
        return Err(Reject::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "missing Mcp-Session-Id header",
        ));
    };
    let not_found = || Reject::new(StatusCode::NOT_FOUND, ErrorCode(-32001), "session not found");
    let another = || {
        tracing::debug!(session = %id, "a request for a session another principal created");
        not_found()
    };
    if let Some(session) = http.session(id) {
        if session.principal() != principal {
            return Err(another());
        }
        session.touch(http.inner.epoch);
        if let Some(store) = &http.inner.store {
            match store.touch(id).await {
                Ok(true) => {}
                Ok(false) => {
                    // Ended elsewhere (deleted at another endpoint, or expired): here too.
                    tracing::debug!(session = %id, "session no longer recorded; closing it");
                    if http.remove_session(id).is_some() {
                        // Boxed, as restoring below: rare paths that would otherwise weigh on
                        // every request's future.
                        Box::pin(session.close()).await;
                    }
                    return Err(Reject::new(
                        StatusCode::NOT_FOUND,
                        ErrorCode(-32001),
                        "session not found",
                    ));
                }
                // The live copy keeps serving while the store is away.
                Err(e) => tracing::warn!(session = %id, error = %e, "session store touch failed"),
            }
        }
        return Ok(session);
    }
    let recorded = match &http.inner.store {
        Some(store) => store.load(id).await.map_err(|e| store_unavailable(&e))?,
        None => None,
    };
    match recorded {
        Some(record) if record.principal.as_ref() != principal => Err(another()),
        Some(record) => Box::pin(restore(http, record)).await,
        None => Err(not_found()),
    }
}

/// `503` with `Retry-After` for a request that needs the session store while it fails.
pub(super) fn store_unavailable(error: &session_store::StoreError) -> Reject {
    tracing::warn!(error = %error, "session store failed");
    let message = match error.kind() {
        session_store::StoreErrorKind::Full => "too many sessions",
        _ => "the session store is unavailable",
    };
    Reject::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::INTERNAL_ERROR, message)
}

/// Brings a recorded session back to life by replaying its handshake server-side.
async fn restore(http: &StreamableHttp, record: SessionRecord) -> Result<Arc<HttpSession>, Reject> {
    let failed = |what: &str| {
        Reject::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            format!("could not restore the session: {what}"),
        )
    };
    // Streams numbered from a random point: never the ids another endpoint gave this
    // session's streams, whose events a shared event store may hold.
    let first_stream = random_stream_base().map_err(|e| failed(&e.to_string()))?;
    let session = Arc::new(HttpSession::start(
        Arc::from(record.id.as_str()),
        record.principal.clone(),
        (&http.inner.session_engine, http.inner.epoch),
        http.inner.events.clone(),
        first_stream,
    ));
    let params = InitializeRequestParams::new(
        record.protocol_version.clone(),
        record.client_capabilities.clone(),
        record.client_info.clone(),
    );
    let params = serde_json::to_value(params).map_err(|e| failed(&e.to_string()))?;
    let id = RequestId::from("mcpl-session-restore");
    let rx = session.open_json_request(&id).map_err(|_| failed("stream"))?;
    session
        .deliver(mcpl_core::jsonrpc::Request::new(id, names::INITIALIZE, Some(params)).into())
        .await
        .map_err(|_| failed("engine"))?;
    match rx.await {
        Ok(event) if event.answers && !event.error => {}
        _ => {
            session.close().await;
            return Err(failed("the handshake was refused"));
        }
    }
    let initialized = mcpl_core::jsonrpc::Notification::new(names::NOTIFICATIONS_INITIALIZED, None);
    session.deliver(initialized.into()).await.map_err(|_| failed("engine"))?;
    // Another request may have restored the same session meanwhile: keep the first.
    let live = {
        let mut sessions =
            http.inner.sessions.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        match sessions.get(&*session.id) {
            Some(live) => live.0.clone(),
            None => {
                sessions.insert(Listed(session.clone()));
                session.clone()
            }
        }
    };
    if !Arc::ptr_eq(&live, &session) {
        session.close().await;
    }
    tracing::debug!(session = %record.id, "restored session from the session store");
    http.start_reaper();
    Ok(live)
}
