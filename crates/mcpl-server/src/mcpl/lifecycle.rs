//! The consumer side of `inference/lifecycle`: one terminal phase per inference reaches the
//! application (terminals deduplicated by `inferenceId` in a bounded set), a missing terminal
//! is tolerated, and an inference reported `started` stops counting as in flight after a
//! safety timeout.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use mcpl_core::mcpl::hooks::LifecyclePhase;

/// How many inferences per connection are remembered by default: in flight, and ended.
pub(crate) const DEFAULT_REMEMBERED: usize = 4096;
/// How long an inference reported `started` counts as in flight without a terminal phase, by
/// default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest `inferenceId` accepted, in bytes: the ids are remembered, so a peer must not
/// make each entry arbitrarily large. Host-made ids (UUIDs and the like) are far shorter.
pub(crate) const MAX_INFERENCE_ID: usize = 512;

/// The bounds of the bookkeeping.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) remembered: usize,
    pub(crate) timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { remembered: DEFAULT_REMEMBERED, timeout: DEFAULT_TIMEOUT }
    }
}

/// What to do with one `inference/lifecycle` notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Hand it to the application.
    Deliver,
    /// Drop it: why, for the log.
    Drop(&'static str),
}

/// One connection's inferences: those in flight (with when they started) and those ended,
/// each bounded (the oldest forgotten first).
#[derive(Debug)]
pub(crate) struct Inferences {
    limits: Limits,
    /// The inferences in flight, each with the number of its `started` entry.
    in_flight: HashMap<String, u64>,
    /// `started` in arrival order (number, when); entries no longer in flight are skipped and
    /// pruned lazily.
    started: VecDeque<(String, u64, Instant)>,
    next: u64,
    ended: HashSet<String>,
    ended_order: VecDeque<String>,
}

impl Inferences {
    pub(crate) fn new(limits: Limits) -> Self {
        Inferences {
            limits,
            in_flight: HashMap::new(),
            started: VecDeque::new(),
            next: 0,
            ended: HashSet::new(),
            ended_order: VecDeque::new(),
        }
    }

    /// Judges one phase of `inference_id` arriving at `now`, and records it.
    pub(crate) fn observe(
        &mut self,
        inference_id: &str,
        phase: LifecyclePhase,
        now: Instant,
    ) -> Verdict {
        self.expire(now);
        if inference_id.len() > MAX_INFERENCE_ID {
            return Verdict::Drop("an inferenceId longer than 512 bytes");
        }
        if self.ended.contains(inference_id) {
            return Verdict::Drop(if phase.is_terminal() {
                "a second terminal phase"
            } else {
                "started after its terminal phase"
            });
        }
        if !phase.is_terminal() {
            if self.in_flight.contains_key(inference_id) {
                return Verdict::Drop("started twice");
            }
            self.next += 1;
            self.in_flight.insert(inference_id.to_owned(), self.next);
            self.started.push_back((inference_id.to_owned(), self.next, now));
            while self.in_flight.len() > self.limits.remembered.max(1) {
                self.forget_oldest_start();
            }
            self.prune_starts();
            return Verdict::Deliver;
        }
        if self.in_flight.remove(inference_id).is_none() {
            tracing::debug!(inference_id, "inference/lifecycle: a terminal phase without started");
        }
        self.ended.insert(inference_id.to_owned());
        self.ended_order.push_back(inference_id.to_owned());
        while self.ended_order.len() > self.limits.remembered.max(1) {
            if let Some(old) = self.ended_order.pop_front() {
                self.ended.remove(&old);
            }
        }
        self.prune_starts();
        Verdict::Deliver
    }

    /// The inferences in flight at `now`, oldest first.
    pub(crate) fn in_flight(&mut self, now: Instant) -> Vec<String> {
        self.expire(now);
        self.started
            .iter()
            .filter(|(id, n, _)| self.in_flight.get(id) == Some(n))
            .map(|(id, _, _)| id.clone())
            .collect()
    }

    /// Stops waiting for the terminal phase of inferences started more than the timeout ago.
    fn expire(&mut self, now: Instant) {
        while let Some((id, n, at)) = self.started.front() {
            let current = self.in_flight.get(id) == Some(n);
            if current && now.saturating_duration_since(*at) < self.limits.timeout {
                break;
            }
            if current {
                tracing::debug!(
                    inference_id = %id,
                    timeout = ?self.limits.timeout,
                    "inference/lifecycle: no terminal phase within the safety timeout; no longer in flight"
                );
                self.in_flight.remove(id);
            }
            self.started.pop_front();
        }
    }

    fn forget_oldest_start(&mut self) {
        while let Some((id, n, _)) = self.started.pop_front() {
            if self.in_flight.get(&id) == Some(&n) {
                self.in_flight.remove(&id);
                return;
            }
        }
    }

    /// Keeps the start order at most twice the in-flight set: entries of ended inferences go.
    fn prune_starts(&mut self) {
        if self.started.len() > 2 * self.in_flight.len() + 16 {
            let in_flight = &self.in_flight;
            self.started.retain(|(id, n, _)| in_flight.get(id) == Some(n));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const STARTED: LifecyclePhase = LifecyclePhase::Started;
    const COMPLETED: LifecyclePhase = LifecyclePhase::Completed;

    #[test]
    fn one_terminal_per_inference_and_starts_once() {
        let mut l = Inferences::new(Limits::default());
        let now = Instant::now();
        assert_eq!(l.observe("a", STARTED, now), Verdict::Deliver);
        assert!(matches!(l.observe("a", STARTED, now), Verdict::Drop(_)));
        assert_eq!(l.in_flight(now), ["a"]);
        assert_eq!(l.observe("a", COMPLETED, now), Verdict::Deliver);
        assert!(matches!(l.observe("a", LifecyclePhase::Aborted, now), Verdict::Drop(_)));
        assert!(matches!(l.observe("a", STARTED, now), Verdict::Drop(_)));
        assert!(l.in_flight(now).is_empty());
        // Tolerated: a terminal without started, once.
        assert_eq!(l.observe("b", LifecyclePhase::Failed, now), Verdict::Deliver);
        assert!(matches!(l.observe("b", LifecyclePhase::Failed, now), Verdict::Drop(_)));
        // An id too long to remember is refused.
        let long = "x".repeat(MAX_INFERENCE_ID + 1);
        assert!(matches!(l.observe(&long, STARTED, now), Verdict::Drop(_)));
        assert!(l.in_flight(now).is_empty());
        assert_eq!(l.observe(&long[1..], STARTED, now), Verdict::Deliver);
    }

    #[test]
    fn in_flight_inferences_expire_and_everything_is_bounded() {
        let limits = Limits { remembered: 3, timeout: Duration::from_secs(10) };
        let mut l = Inferences::new(limits);
        let t0 = Instant::now();
        l.observe("a", STARTED, t0);
        l.observe("b", STARTED, t0 + Duration::from_secs(5));
        assert_eq!(l.in_flight(t0 + Duration::from_secs(9)), ["a", "b"]);
        assert_eq!(l.in_flight(t0 + Duration::from_secs(11)), ["b"]);
        // A late terminal is still delivered, once.
        assert_eq!(l.observe("a", COMPLETED, t0 + Duration::from_secs(12)), Verdict::Deliver);
        assert!(matches!(
            l.observe("a", COMPLETED, t0 + Duration::from_secs(12)),
            Verdict::Drop(_)
        ));
        // At most `remembered` in flight, and as many ended.
        let t1 = t0 + Duration::from_secs(13);
        for id in ["c", "d", "e", "f"] {
            l.observe(id, STARTED, t1);
        }
        assert_eq!(l.in_flight(t1), ["d", "e", "f"]);
        for i in 0..100 {
            let id = format!("x{i}");
            l.observe(&id, STARTED, t1);
            l.observe(&id, COMPLETED, t1);
        }
        assert!(l.ended.len() <= 3 && l.ended_order.len() <= 3);
        assert!(l.in_flight.len() <= 3);
        assert!(l.started.len() <= 2 * 3 + 16 + 1, "{}", l.started.len());
    }
}
