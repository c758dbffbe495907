//! The one retry backoff of the SDK: exponential, from a first delay up to a ceiling, with
//! jitter so that clients that failed together do not all retry at the same moment.
//!
//! The Streamable HTTP transport reopens and resumes its streams with it (the first delay is
//! the server's `retry`, or 500 ms, at least
//! [`HttpTransport::min_retry`](crate::transport::HttpTransport::min_retry)), and `mcpl-host`
//! reconnects its servers and re-listens with it.
//!
//! Not `backon`: its jitter adds up to the whole delay again on top of it, so a configured
//! ceiling of 300 s could mean a wait of 600 s, and a floor such as `min_retry` would not be a
//! floor after jitter either; its builders also yield a fixed sequence, while the transport's
//! first delay changes whenever the server sends another `retry`. The rule here is a few
//! lines: attempt `n` waits a random time in the upper half of `initial * 2^n` (capped at the
//! ceiling), and never less than `initial`.

use std::time::Duration;

/// An exponential backoff with jitter between a first delay and a ceiling.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use mcpl_client::backoff::Backoff;
///
/// let backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(60));
/// let ceilings: Vec<u64> = (0..6).map(|n| backoff.ceiling(n).as_secs()).collect();
/// assert_eq!(ceilings, [5, 10, 20, 40, 60, 60]);
/// // The first retry waits exactly the first delay; later ones a random time in the upper
/// // half of their ceiling, never less than the first delay.
/// assert_eq!(backoff.delay(0), Duration::from_secs(5));
/// let third = backoff.delay(2);
/// assert!(third >= Duration::from_secs(10) && third <= Duration::from_secs(20));
/// assert_eq!(backoff.ceiling(u32::MAX), Duration::from_secs(60)); // no overflow
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
}

impl Backoff {
    /// A backoff from `initial` (the first delay) doubling up to `max` (a `max` below
    /// `initial` is taken as `initial`).
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff { initial, max: max.max(initial) }
    }

    /// The longest wait before retry `attempt` (0-based): `initial * 2^attempt`, at most the
    /// ceiling.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial.checked_mul(factor).unwrap_or(self.max).min(self.max)
    }

    /// The wait before retry `attempt` (0-based): a random time between half of
    /// [`ceiling`](Self::ceiling) and all of it, and never less than the first delay (so
    /// attempt 0 waits exactly the first delay).
    pub fn delay(&self, attempt: u32) -> Duration {
        let ceiling = self.ceiling(attempt);
        let half = ceiling / 2;
        let jittered = half + (ceiling - half).mul_f64(fastrand::f64());
        jittered.clamp(self.initial.min(ceiling), ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_stay_between_the_first_delay_and_their_ceiling() {
        let backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
        for attempt in [0, 1, 2, 5, 6, 7, 40, u32::MAX] {
            for _ in 0..100 {
                let delay = backoff.delay(attempt);
                assert!(delay >= Duration::from_millis(250), "{attempt}: {delay:?}");
                assert!(delay <= backoff.ceiling(attempt), "{attempt}: {delay:?}");
                assert!(delay >= backoff.ceiling(attempt) / 2, "{attempt}: {delay:?}");
            }
        }
        assert_eq!(backoff.ceiling(40), Duration::from_secs(30));
        // Jitter: not every delay of a later attempt is the same.
        let delays: std::collections::HashSet<Duration> =
            (0..50).map(|_| backoff.delay(4)).collect();
        assert!(delays.len() > 1);
        // A ceiling below the first delay is the first delay.
        let flat = Backoff::new(Duration::from_secs(5), Duration::from_secs(1));
        assert_eq!(flat.delay(3), Duration::from_secs(5));
    }
}
