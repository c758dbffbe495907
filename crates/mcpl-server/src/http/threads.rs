//! Connection threads: where a listener's connections are served ([`ConnectionThreads`]).
//!
//! By default every connection is a task of the runtime the accept loop runs on. On tokio's
//! multi-threaded runtime its workers steal tasks from one another, and a connection woken by
//! the I/O driver runs on whichever worker polled it: each request's state crosses cores, and
//! memory allocated on one thread is freed on another. With threads of its own, the listener
//! hands each accepted connection to one of several threads that each run a current-thread
//! runtime: a connection, its requests and its handlers stay on one thread for its life, and
//! the threads share nothing on the request path but what the server itself shares (its
//! handlers, its session table).

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

/// Where a listener's connections are served: see [`ConnectionConfig::threads`].
///
/// [`ConnectionConfig::threads`]: super::ConnectionConfig::threads
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ConnectionThreads {
    /// As tasks of the runtime the listener is served on (the default).
    #[default]
    Caller,
    /// On this many threads of the listener's own, each running a current-thread runtime
    /// that owns the connections handed to it (in turn, as they are accepted).
    Own(NonZeroUsize),
    /// On one thread of the listener's own per available core (as [`Own`](Self::Own), with
    /// [`std::thread::available_parallelism`]; one if that is unknown).
    PerCore,
}

impl ConnectionThreads {
    /// How many threads of its own a listener starts: `None` for [`Caller`](Self::Caller).
    fn count(self) -> Option<usize> {
        match self {
            ConnectionThreads::Caller => None,
            ConnectionThreads::Own(n) => Some(n.get()),
            ConnectionThreads::PerCore => {
                Some(std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
            }
        }
    }
}

/// The threads of a listener's own, while it is served; stopped when dropped (their
/// runtimes drop what still runs on them).
pub(crate) struct Workers {
    runtimes: Vec<Handle>,
    next: AtomicUsize,
    stop: CancellationToken,
}

impl Workers {
    /// Starts the threads `threads` asks for; `None` for [`ConnectionThreads::Caller`].
    ///
    /// # Errors
    ///
    /// A runtime or a thread that could not be started (the ones started stop again).
    pub(crate) fn start(threads: ConnectionThreads) -> std::io::Result<Option<Workers>> {
        let Some(count) = threads.count() else { return Ok(None) };
        let mut workers = Workers {
            runtimes: Vec::new(),
            next: AtomicUsize::new(0),
            stop: CancellationToken::new(),
        };
        for n in 0..count {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let handle = runtime.handle().clone();
            let stop = workers.stop.clone();
            // The runtime is dropped on its own thread, outside any async context.
            std::thread::Builder::new()
                .name(format!("mcpl-http-{n}"))
                .spawn(move || runtime.block_on(stop.cancelled()))?;
            workers.runtimes.push(handle);
        }
        tracing::debug!(threads = count, "serving connections on threads of their own");
        Ok(Some(workers))
    }

    /// The runtime the next connection goes to (each in turn).
    pub(crate) fn next(&self) -> &Handle {
        let n = self.next.fetch_add(1, Ordering::Relaxed) % self.runtimes.len();
        &self.runtimes[n]
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_starts_nothing_and_own_starts_that_many() {
        assert!(Workers::start(ConnectionThreads::Caller).unwrap().is_none());
        let two = ConnectionThreads::Own(NonZeroUsize::new(2).unwrap());
        let workers = Workers::start(two).unwrap().unwrap();
        assert_eq!(workers.runtimes.len(), 2);
        // In turn.
        let first = workers.next().id();
        assert_ne!(workers.next().id(), first);
        assert_eq!(workers.next().id(), first);
        assert!(ConnectionThreads::PerCore.count().is_some_and(|n| n >= 1));
    }

    #[test]
    fn the_threads_stop_when_dropped() {
        let one = ConnectionThreads::Own(NonZeroUsize::new(1).unwrap());
        let workers = Workers::start(one).unwrap().unwrap();
        let handle = workers.next().clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        handle.spawn(async move {
            let _tx = tx;
            std::future::pending::<()>().await;
        });
        drop(workers);
        // The task is dropped with its runtime: its sender goes, and the channel closes.
        let ended = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(ended, Err(std::sync::mpsc::RecvTimeoutError::Disconnected));
    }
}
