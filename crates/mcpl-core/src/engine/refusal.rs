//! [`Refusal`]: what the engine turns away of a peer's, as told to
//! [`Engine::on_refusal`](super::Engine::on_refusal).

use std::fmt;
use std::time::Duration;

/// Something of the peer's the engine turned away, handed to the hook of
/// [`Engine::on_refusal`](super::Engine::on_refusal) once per refusal (without a hook, the
/// engine logs it once at `debug`).
///
/// # Examples
///
/// ```
/// use mcpl_core::engine::Refusal;
///
/// let refusal = Refusal::InFlightLimit { limit: 256 };
/// assert_eq!(refusal.as_str(), "in_flight_limit");
/// assert_eq!(refusal.to_string(), "too many requests in flight (limit 256)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A request beyond the in-flight limit
    /// ([`EngineConfig::max_inflight_requests`](super::EngineConfig::max_inflight_requests)) was
    /// answered at once with `-32000`.
    InFlightLimit {
        /// The limit.
        limit: usize,
    },
    /// A write to the peer did not finish within the write timeout
    /// ([`EngineConfig::write_timeout`](super::EngineConfig::write_timeout)): the peer stopped
    /// reading, and its connection was closed.
    WriteTimeout {
        /// The timeout.
        timeout: Duration,
    },
    /// The peer sent more notifications related to one pending request (see
    /// [`RequestOptions::on_related_notification`](super::RequestOptions::on_related_notification))
    /// than may wait for the request's callback: the request failed with
    /// [`Error::ProtocolViolation`](crate::Error::ProtocolViolation).
    RelatedNotificationFlood {
        /// How many may wait.
        limit: usize,
    },
}

impl Refusal {
    /// A stable snake-case name, for logs and metrics: `in_flight_limit`, `write_timeout`,
    /// `related_notification_flood`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_core::engine::Refusal;
    ///
    /// let refusal = Refusal::WriteTimeout { timeout: Duration::from_secs(30) };
    /// assert_eq!(refusal.as_str(), "write_timeout");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Refusal::InFlightLimit { .. } => "in_flight_limit",
            Refusal::WriteTimeout { .. } => "write_timeout",
            Refusal::RelatedNotificationFlood { .. } => "related_notification_flood",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::InFlightLimit { limit } => {
                write!(f, "too many requests in flight (limit {limit})")
            }
            Refusal::WriteTimeout { timeout } => {
                write!(f, "the peer read nothing for {timeout:?} (write timeout)")
            }
            Refusal::RelatedNotificationFlood { limit } => write!(
                f,
                "the peer sent more than {limit} notifications related to one request before they were handled"
            ),
        }
    }
}
