//! [`Error`]: what can go wrong talking to Redis, with a stable [`ErrorKind`].

use mcpl_server::http::session_store::{StoreError, StoreErrorKind};

/// What kind of failure an [`Error`] is.
///
/// # Examples
///
/// ```
/// use mcpl_redis::{Error, ErrorKind};
///
/// let error = Error::format("a value of format version 9");
/// assert_eq!(error.kind(), ErrorKind::Format);
/// assert_eq!(ErrorKind::Unavailable.as_str(), "unavailable");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Redis cannot be reached (refused, dropped, or reconnecting).
    Unavailable,
    /// Redis did not answer in time (the response or connection timeout).
    Timeout,
    /// Redis answered with an error, or the client was misconfigured (a bad URL).
    Command,
    /// A stored value could not be read: corrupt, or written in an unknown format version.
    Format,
    /// A bound was reached: the fleet-wide session cap.
    Full,
}

impl ErrorKind {
    /// The stable snake-case name.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_redis::ErrorKind::Timeout.as_str(), "timeout");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Command => "command",
            ErrorKind::Format => "format",
            ErrorKind::Full => "full",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ErrorKind::Unavailable => "redis is unavailable",
            ErrorKind::Timeout => "redis did not answer in time",
            ErrorKind::Command => "a redis command failed",
            ErrorKind::Format => "a stored value could not be read",
            ErrorKind::Full => "the store is full",
        })
    }
}

/// A failure of a Redis-backed store: its [`kind`](Self::kind), and the cause in
/// [`source`](std::error::Error::source) (a [`redis::RedisError`], a JSON error, or a
/// description).
///
/// # Examples
///
/// ```
/// use std::error::Error as _;
/// use mcpl_redis::{Error, ErrorKind};
///
/// let error = Error::format("unknown format version 9");
/// assert_eq!(error.to_string(), "a stored value could not be read");
/// assert_eq!(error.source().unwrap().to_string(), "unknown format version 9");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct Error {
    kind: ErrorKind,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl Error {
    pub(crate) fn new(
        kind: ErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error { kind, source: source.into() }
    }

    /// A stored value that could not be read.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_redis::Error::format("bad").kind(), mcpl_redis::ErrorKind::Format);
    /// ```
    pub fn format(what: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::new(ErrorKind::Format, what)
    }

    /// What kind of failure it is.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mcpl_redis::Error::format("bad").kind().as_str(), "format");
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

impl From<redis::RedisError> for Error {
    fn from(error: redis::RedisError) -> Self {
        let kind = if error.is_timeout() {
            ErrorKind::Timeout
        } else if error.is_io_error()
            || error.is_connection_dropped()
            || error.is_connection_refusal()
            || error.is_unrecoverable_error()
        {
            ErrorKind::Unavailable
        } else {
            ErrorKind::Command
        };
        Error::new(kind, error)
    }
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Self {
        Error::new(ErrorKind::Format, error)
    }
}

impl From<Error> for StoreError {
    fn from(error: Error) -> Self {
        let kind = match error.kind {
            ErrorKind::Full => StoreErrorKind::Full,
            ErrorKind::Format => StoreErrorKind::Corrupt,
            ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Command => {
                StoreErrorKind::Unavailable
            }
        };
        StoreError::new(kind, error)
    }
}

impl From<Error> for mcpl_core::Error {
    fn from(error: Error) -> Self {
        mcpl_core::Error::transport("redis store", error)
    }
}

/// The JSON-RPC error a task call gets (`-32603`, "the task store is unavailable"); the
/// failure itself is logged where it happened.
impl From<Error> for mcpl_core::jsonrpc::ErrorObject {
    fn from(error: Error) -> Self {
        let _ = error;
        mcpl_core::jsonrpc::ErrorObject::internal("the task store is unavailable")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_onto_the_session_store_kinds() {
        let full: StoreError = Error::new(ErrorKind::Full, "cap").into();
        assert_eq!(full.kind(), StoreErrorKind::Full);
        let corrupt: StoreError = Error::format("v9").into();
        assert_eq!(corrupt.kind(), StoreErrorKind::Corrupt);
        let refused =
            redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let down: StoreError = Error::from(refused).into();
        assert_eq!(down.kind(), StoreErrorKind::Unavailable);
    }
}
