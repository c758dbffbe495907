//! The timer behind a connection's request head timeout
//! ([`ConnectionConfig::header_read_timeout`](super::ConnectionConfig::header_read_timeout)).
//!
//! hyper asks its timer for a new sleep each time it starts waiting for a request head and
//! drops it once the head is in. With tokio's sleep as is, every request registers a timer
//! with the runtime's time driver and removes it again: two turns of the driver's one lock,
//! which the worker threads of a multi-threaded runtime share. [`HeadTimer`] keeps one tokio
//! sleep per connection instead and moves its deadline forward for the next head: a later
//! deadline on a registered timer is one atomic store, no lock. The sleep fires at most once
//! per timeout period while the connection is busy with something else (a long response);
//! that wakes the connection's task once and is otherwise ignored, since hyper polls a head
//! sleep only while it waits for a head.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::rt::{Sleep, Timer};

/// A tokio sleep, pinned where the time driver can find it.
type Pinned = Pin<Box<tokio::time::Sleep>>;

/// One connection's timer for hyper: it lends out the connection's one tokio sleep.
#[derive(Debug, Default)]
pub(super) struct HeadTimer {
    /// The sleep while no head is awaited (`None` while one is lent out or before the
    /// first head).
    spare: Arc<Mutex<Option<Pinned>>>,
}

impl HeadTimer {
    /// A timer with no sleep yet: the first head makes it.
    pub(super) fn new() -> Self {
        Self::default()
    }
}

impl Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        let now = tokio::time::Instant::now();
        // A duration past what the clock can hold is as good as forever.
        let deadline = now.checked_add(duration).unwrap_or_else(|| far_future(now));
        self.sleep_until(deadline.into_std())
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        let deadline = tokio::time::Instant::from_std(deadline);
        let spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner).take();
        let sleep = match spare {
            Some(mut sleep) => {
                sleep.as_mut().reset(deadline);
                sleep
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        Box::pin(HeadSleep { sleep: Some(sleep), home: Arc::clone(&self.spare) })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<HeadSleep>() {
            Some(head) => head.reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

/// About thirty years on, as tokio itself takes "never" (or `now`, on a clock that cannot
/// even hold that).
fn far_future(now: tokio::time::Instant) -> tokio::time::Instant {
    now.checked_add(Duration::from_secs(86_400 * 365 * 30)).unwrap_or(now)
}

/// The connection's sleep, lent to hyper for one head; given back when hyper drops it.
struct HeadSleep {
    /// Always `Some` until dropped.
    sleep: Option<Pinned>,
    home: Arc<Mutex<Option<Pinned>>>,
}

impl HeadSleep {
    fn reset(self: Pin<&mut Self>, deadline: Instant) {
        // `HeadSleep` is `Unpin`: the tokio sleep it lends is pinned in its own box.
        if let Some(sleep) = self.get_mut().sleep.as_mut() {
            sleep.as_mut().reset(tokio::time::Instant::from_std(deadline));
        }
    }
}

impl Future for HeadSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.sleep.as_mut() {
            Some(sleep) => sleep.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }
}

impl Sleep for HeadSleep {}

impl Drop for HeadSleep {
    fn drop(&mut self) {
        if let Some(sleep) = self.sleep.take() {
            *self.home.lock().unwrap_or_else(PoisonError::into_inner) = Some(sleep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deadline_of(timer: &HeadTimer) -> Option<tokio::time::Instant> {
        timer.spare.lock().unwrap().as_ref().map(|sleep| sleep.deadline())
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_sleep_fires_at_its_deadline() {
        let timer = HeadTimer::new();
        let start = tokio::time::Instant::now();
        timer.sleep(Duration::from_secs(10)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_head_reuses_the_sleep_with_a_later_deadline() {
        let timer = HeadTimer::new();
        let first = timer.sleep(Duration::from_secs(10));
        assert!(deadline_of(&timer).is_none(), "lent out while hyper holds it");
        drop(first);
        let given_back = deadline_of(&timer).unwrap();
        tokio::time::advance(Duration::from_secs(3)).await;
        let second = timer.sleep(Duration::from_secs(10));
        drop(second);
        let moved = deadline_of(&timer).unwrap();
        assert_eq!(moved - given_back, Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_sleep_reused_after_firing_waits_again() {
        let timer = HeadTimer::new();
        timer.sleep(Duration::from_secs(1)).await;
        // Fired and given back; the next head's sleep must wait its full time again.
        let start = tokio::time::Instant::now();
        timer.sleep(Duration::from_secs(5)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_sleep_that_fired_while_given_back_waits_again() {
        let timer = HeadTimer::new();
        let mut first = timer.sleep(Duration::from_secs(1));
        let waker = std::task::Waker::noop();
        assert!(first.as_mut().poll(&mut Context::from_waker(waker)).is_pending());
        drop(first);
        // A long response: the given-back sleep's deadline passes unobserved.
        tokio::time::sleep(Duration::from_secs(60)).await;
        let start = tokio::time::Instant::now();
        timer.sleep(Duration::from_secs(5)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn reset_moves_a_lent_sleep_and_an_earlier_deadline_holds() {
        let timer = HeadTimer::new();
        let start = tokio::time::Instant::now();
        let mut sleep = timer.sleep(Duration::from_secs(30));
        timer.reset(&mut sleep, (start + Duration::from_secs(2)).into_std());
        sleep.await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn two_sleeps_at_once_each_keep_their_own_deadline() {
        let timer = HeadTimer::new();
        let start = tokio::time::Instant::now();
        let long = timer.sleep(Duration::from_secs(20));
        let short = timer.sleep(Duration::from_secs(4));
        short.await;
        assert_eq!(start.elapsed(), Duration::from_secs(4));
        long.await;
        assert_eq!(start.elapsed(), Duration::from_secs(20));
    }

    #[test]
    fn a_duration_past_the_clock_is_forever() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        runtime.block_on(async {
            let timer = HeadTimer::new();
            let mut sleep = timer.sleep(Duration::MAX);
            assert!(
                sleep
                    .as_mut()
                    .poll(&mut Context::from_waker(std::task::Waker::noop()))
                    .is_pending()
            );
        });
    }
}
