//! How long to wait before a stream is reopened or resumed: the server's `retry`, within
//! bounds, through the SDK's one [`Backoff`].

use std::time::Duration;

use crate::backoff::Backoff;

/// How long to wait before resuming a stream when the server did not say.
pub(super) const DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// The shortest wait before reopening or resuming a stream, whatever `retry` the server
/// asks for, unless configured
/// ([`HttpTransport::min_retry`](super::HttpTransport::min_retry)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::transport::http::DEFAULT_MIN_RETRY;
///
/// // A server's `retry: 0` does not make the client reconnect in a loop.
/// assert_eq!(DEFAULT_MIN_RETRY, Duration::from_millis(250));
/// ```
pub const DEFAULT_MIN_RETRY: Duration = Duration::from_millis(250);
/// The longest `retry` honoured, and the longest backoff.
pub(super) const MAX_RETRY: Duration = Duration::from_secs(30);

/// The wait before reopening a stream: the server's `retry` (or 500 ms) but at least `floor`,
/// doubled for each failed attempt in a row (with jitter), at most 30 s (see [`Backoff`]).
pub(super) fn backoff(retry: Option<Duration>, floor: Duration, failures: u32) -> Duration {
    let base = retry.unwrap_or(DEFAULT_RETRY).max(floor).min(MAX_RETRY);
    Backoff::new(base, MAX_RETRY).delay(failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_delay_has_a_floor_and_a_ceiling() {
        let floor = DEFAULT_MIN_RETRY;
        assert_eq!(backoff(Some(Duration::ZERO), floor, 0), floor);
        let second = backoff(Some(Duration::ZERO), floor, 2);
        assert!(second >= floor * 2 && second <= floor * 4, "{second:?}");
        assert_eq!(backoff(None, floor, 0), DEFAULT_RETRY);
        assert_eq!(backoff(Some(Duration::from_secs(3600)), floor, 0), MAX_RETRY);
        let late = backoff(Some(Duration::from_secs(1)), floor, 40);
        assert!(late >= MAX_RETRY / 2 && late <= MAX_RETRY, "{late:?}");
    }
}
