//! [`Refusals`]: what the HTTP and WebSocket entry points turn away (a timeout, a cap, an
//! oversized body, a bad header, a request over the in-flight limit, a client that stopped
//! reading), each logged once and counted.
//!
//! Every refusal is one `tracing` event at `debug` (target `mcpl_server::refusal`) with the
//! fields `refusal` (the [`RefusalKind`] as a stable snake-case name), `peer` (the client's
//! address, when known) and `detail`; none is logged at `ERROR`, since hostile traffic is
//! normal on an open network. Each is also counted in the [`Refusals`] shared by the entry
//! points that were given it (through [`ConnectionConfig::refusals`]), and handed to its hook,
//! if any, for a metrics system.
//!
//! [`ConnectionConfig::refusals`]: crate::http::ConnectionConfig::refusals

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a connection or request was refused.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::RefusalKind;
///
/// assert_eq!(RefusalKind::HeaderTimeout.as_str(), "header_timeout");
/// assert!(RefusalKind::ALL.contains(&RefusalKind::SessionLimit));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefusalKind {
    /// A request's head (or the next request on a kept-alive connection) did not arrive in
    /// time: the connection was closed.
    HeaderTimeout,
    /// A request's body did not arrive in time: `408`.
    BodyTimeout,
    /// The connection cap was reached: `503` and the connection closed.
    ConnectionLimit,
    /// The session cap was reached with no session to evict: `503`.
    SessionLimit,
    /// A request body over the limit: `413`.
    BodyTooLarge,
    /// A WebSocket message over the limit: the connection closed with `1009`.
    MessageTooLarge,
    /// `Host` or `Origin` not allowed: `403`.
    Forbidden,
    /// A malformed request or header: `400` (or `406`, `415`).
    BadRequest,
    /// Missing or invalid credentials: `401`.
    Unauthorized,
    /// The server is shutting down: `503`.
    ShuttingDown,
    /// Accepting connections failed (such as when file descriptors ran out): accepting is
    /// retried with a growing delay.
    AcceptFailed,
    /// The session store failed (unreachable, or too slow) when a new session was to be
    /// recorded: `503` with `Retry-After`.
    StoreUnavailable,
    /// A request over the in-flight limit of its connection or session
    /// ([`ServerBuilder::max_inflight_requests`](crate::ServerBuilder::max_inflight_requests)):
    /// answered at once with `-32000`.
    InFlightLimit,
    /// A client read nothing for the write timeout (its connection's buffers full): the
    /// connection was closed.
    WriteTimeout,
}

impl RefusalKind {
    /// Every kind, in declaration order.
    pub const ALL: [RefusalKind; 14] = [
        RefusalKind::HeaderTimeout,
        RefusalKind::BodyTimeout,
        RefusalKind::ConnectionLimit,
        RefusalKind::SessionLimit,
        RefusalKind::BodyTooLarge,
        RefusalKind::MessageTooLarge,
        RefusalKind::Forbidden,
        RefusalKind::BadRequest,
        RefusalKind::Unauthorized,
        RefusalKind::ShuttingDown,
        RefusalKind::AcceptFailed,
        RefusalKind::StoreUnavailable,
        RefusalKind::InFlightLimit,
        RefusalKind::WriteTimeout,
    ];

    /// The stable snake-case name logged in the `refusal` field.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_server::http::RefusalKind::BodyTooLarge.as_str(), "body_too_large");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalKind::HeaderTimeout => "header_timeout",
            RefusalKind::BodyTimeout => "body_timeout",
            RefusalKind::ConnectionLimit => "connection_limit",
            RefusalKind::SessionLimit => "session_limit",
            RefusalKind::BodyTooLarge => "body_too_large",
            RefusalKind::MessageTooLarge => "message_too_large",
            RefusalKind::Forbidden => "forbidden",
            RefusalKind::BadRequest => "bad_request",
            RefusalKind::Unauthorized => "unauthorized",
            RefusalKind::ShuttingDown => "shutting_down",
            RefusalKind::AcceptFailed => "accept_failed",
            RefusalKind::StoreUnavailable => "store_unavailable",
            RefusalKind::InFlightLimit => "in_flight_limit",
            RefusalKind::WriteTimeout => "write_timeout",
        }
    }

    fn index(self) -> usize {
        // `ALL` is in declaration order.
        self as usize
    }
}

impl fmt::Display for RefusalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One refusal, as handed to the hook of [`Refusals::on_refusal`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RefusalEvent<'a> {
    /// Why.
    pub kind: RefusalKind,
    /// The client's address, when known.
    pub peer: Option<SocketAddr>,
    /// What exactly, for people (not stable).
    pub detail: &'a str,
}

type Hook = Arc<dyn Fn(&RefusalEvent<'_>) + Send + Sync>;

struct Inner {
    counts: [AtomicU64; RefusalKind::ALL.len()],
    hook: Option<Hook>,
}

/// Counts of refusals by kind, shared by every entry point given the same value (clones
/// share the counts), with an optional hook for a metrics system.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::{ConnectionConfig, RefusalKind, Refusals};
///
/// let refusals = Refusals::new().on_refusal(|refusal| {
///     // e.g. metrics::counter!("mcp_refusals", "kind" => refusal.kind.as_str()).increment(1)
///     let _ = refusal.kind;
/// });
/// let connections = ConnectionConfig::new().refusals(refusals.clone());
/// assert_eq!(refusals.count(RefusalKind::ConnectionLimit), 0);
/// assert_eq!(refusals.total(), 0);
/// # drop(connections);
/// ```
#[derive(Clone)]
pub struct Refusals {
    inner: Arc<Inner>,
}

impl Default for Refusals {
    fn default() -> Self {
        Refusals { inner: Arc::new(Inner { counts: Default::default(), hook: None }) }
    }
}

impl fmt::Debug for Refusals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for kind in RefusalKind::ALL {
            let n = self.count(kind);
            if n > 0 {
                map.entry(&kind.as_str(), &n);
            }
        }
        map.finish()
    }
}

impl Refusals {
    /// Counts starting at zero, with no hook.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_server::http::Refusals::new().total(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `hook` with every refusal counted from now on, after it is logged. The hook runs
    /// on the serving task: keep it cheap. Clones made before this call keep the old hook.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// let seen = Arc::new(AtomicU64::new(0));
    /// let counter = seen.clone();
    /// let refusals = mcpl_server::http::Refusals::new()
    ///     .on_refusal(move |_| { counter.fetch_add(1, Ordering::Relaxed); });
    /// # drop(refusals);
    /// ```
    #[must_use]
    pub fn on_refusal(self, hook: impl Fn(&RefusalEvent<'_>) + Send + Sync + 'static) -> Self {
        let counts =
            std::array::from_fn(|i| AtomicU64::new(self.inner.counts[i].load(Ordering::Relaxed)));
        Refusals { inner: Arc::new(Inner { counts, hook: Some(Arc::new(hook)) }) }
    }

    /// How many refusals of `kind` were counted.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::{RefusalKind, Refusals};
    ///
    /// assert_eq!(Refusals::new().count(RefusalKind::BodyTooLarge), 0);
    /// ```
    pub fn count(&self, kind: RefusalKind) -> u64 {
        self.inner.counts[kind.index()].load(Ordering::Relaxed)
    }

    /// How many refusals were counted, of every kind.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_server::http::Refusals::new().total(), 0);
    /// ```
    pub fn total(&self) -> u64 {
        self.inner.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Counts the refusals of `engine`'s connections (requests over the in-flight limit,
    /// clients that stopped reading) here, as from `peer`: logged once here (the engine does
    /// not log what it hands to a hook).
    pub(crate) fn count_engine(&self, engine: &mcpl_core::Engine, peer: Option<SocketAddr>) {
        let refusals = self.clone();
        engine.on_refusal(move |refusal: &mcpl_core::engine::Refusal| {
            use mcpl_core::engine::Refusal;
            let kind = match refusal {
                Refusal::InFlightLimit { .. } => RefusalKind::InFlightLimit,
                Refusal::WriteTimeout { .. } => RefusalKind::WriteTimeout,
                // Not one this endpoint counts: logged as the engine would without a hook.
                other => {
                    tracing::debug!(refusal = other.as_str(), ?peer, "{other}");
                    return;
                }
            };
            refusals.record(kind, peer, &refusal.to_string());
        });
    }

    /// Logs (once, at `debug`), counts, and hands to the hook one refusal.
    pub(crate) fn record(&self, kind: RefusalKind, peer: Option<SocketAddr>, detail: &str) {
        tracing::debug!(
            target: "mcpl_server::refusal",
            refusal = kind.as_str(),
            peer = peer.map(tracing::field::display),
            detail,
            "refused"
        );
        self.inner.counts[kind.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(hook) = &self.inner.hook {
            hook(&RefusalEvent { kind, peer, detail });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_counter_and_name() {
        let seen = Arc::new(AtomicU64::new(0));
        let counter = seen.clone();
        let refusals = Refusals::new().on_refusal(move |r| {
            assert_eq!(r.detail, "x");
            counter.fetch_add(1, Ordering::Relaxed);
        });
        for (i, kind) in RefusalKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), i);
            refusals.record(kind, None, "x");
        }
        refusals.clone().record(RefusalKind::Forbidden, Some(([127, 0, 0, 1], 9).into()), "x");
        assert_eq!(refusals.count(RefusalKind::Forbidden), 2);
        assert_eq!(refusals.count(RefusalKind::HeaderTimeout), 1);
        assert_eq!(refusals.total(), RefusalKind::ALL.len() as u64 + 1);
        assert_eq!(seen.load(Ordering::Relaxed), refusals.total());
        let names: std::collections::HashSet<_> =
            RefusalKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), RefusalKind::ALL.len());
    }
}
