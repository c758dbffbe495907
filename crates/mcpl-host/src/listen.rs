//! Tool-list refreshes in the stateless (2026-07-28) era, which has no session to carry
//! `notifications/tools/list_changed`: one `subscriptions/listen` per connection, kept open.
//!
//! The notifications it carries reach the client's `on_tools_list_changed` handler (the host's
//! refresh), as on a 2025-era session. When the stream ends the server is asked whether it is
//! still there (`server/discover`): if not, the connection is closed, so the host's watch
//! marks the server down and reconnects; if it is, the stream is opened again after a backoff
//! and the tools listed once (changes may have been missed meanwhile). A server that ends the
//! stream before acknowledging it does not serve `subscriptions/listen`: its tools are listed
//! again only when asked ([`Host::refresh_tools`](crate::Host::refresh_tools)).

use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mcpl_client::Client;
use mcpl_core::types::SubscriptionFilter;

use crate::registry::Lease;

/// How long the liveness check after a stream ended may take.
const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// The first delay before a stream is opened again; it doubles per short-lived stream.
const RETRY_MIN: Duration = Duration::from_secs(1);
/// The longest delay before a stream is opened again.
const RETRY_MAX: Duration = Duration::from_secs(60);
/// A stream open this long resets the backoff.
const HEALTHY: Duration = Duration::from_secs(60);

/// The delay before opening a stream again after `failures` short-lived ones (the SDK's one
/// backoff, with jitter).
fn delay(failures: u32) -> Duration {
    mcpl_client::backoff::Backoff::new(RETRY_MIN, RETRY_MAX).delay(failures)
}

/// Keeps a `subscriptions/listen` for tool-list changes open on `client` until `lease` is
/// cancelled, the server turns out not to serve it, or the server is gone (then the
/// connection is closed). `refresh` lists the tools again after a stream was reopened.
pub(crate) async fn keep<F, Fut>(client: Client, lease: Lease, refresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let server = lease.id().to_owned();
    let mut failures = 0u32;
    let mut reopened = false;
    loop {
        let filter = SubscriptionFilter::default().with_tools_list_changed(true);
        let mut subscription = match client.listen(filter).await {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::debug!(%server, error = %e, "subscriptions/listen not opened");
                return;
            }
        };
        let opened = Instant::now();
        let mut acknowledged = false;
        loop {
            tokio::select! {
                biased;
                () = lease.cancelled() => return,
                next = subscription.next() => match next {
                    // The notifications themselves reach the client's handlers.
                    Some(_) => {
                        if !acknowledged && reopened {
                            refresh().await;
                        }
                        acknowledged = true;
                    }
                    None => break,
                },
            }
        }
        drop(subscription);
        let alive = matches!(tokio::time::timeout(PING_TIMEOUT, client.ping()).await, Ok(Ok(())));
        if lease.is_cancelled() {
            return;
        }
        if !alive {
            tracing::debug!(%server, "no answer after the listen stream ended; closing");
            let _ = client.close().await;
            return;
        }
        if !acknowledged {
            tracing::info!(
                %server,
                "the server does not serve subscriptions/listen: its tools are listed again \
                 only on request"
            );
            return;
        }
        failures = if opened.elapsed() >= HEALTHY { 0 } else { failures.saturating_add(1) };
        tracing::debug!(%server, failures, "listen stream ended; opening it again");
        tokio::select! {
            biased;
            () = lease.cancelled() => return,
            () = tokio::time::sleep(delay(failures)) => {}
        }
        reopened = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_a_minute() {
        let ceilings = [1, 2, 4, 8, 16, 32, 60, 60, 60];
        for (n, ceiling) in (0..9).zip(ceilings) {
            let ceiling = Duration::from_secs(ceiling);
            let delay = delay(n);
            assert!(delay <= ceiling && delay >= (ceiling / 2).max(RETRY_MIN), "{n}: {delay:?}");
        }
        assert!(delay(u32::MAX) <= RETRY_MAX);
    }
}
