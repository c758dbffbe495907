//! Push-event dedupe per server that outlives connections: a bounded set of recent event ids
//! per server id, oldest forgotten first.

use std::collections::{HashMap, HashSet, VecDeque};

/// The event ids already delivered, per server.
#[derive(Debug)]
pub(crate) struct SeenEvents {
    servers: HashMap<String, Recent>,
    cap: usize,
}

#[derive(Debug, Default)]
struct Recent {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl SeenEvents {
    /// Remembers at most `cap` (at least 1) ids per server.
    pub(crate) fn new(cap: usize) -> Self {
        SeenEvents { servers: HashMap::new(), cap: cap.max(1) }
    }

    /// Whether `event_id` was recorded for `server` (and not forgotten since).
    pub(crate) fn contains(&self, server: &str, event_id: &str) -> bool {
        self.servers.get(server).is_some_and(|recent| recent.ids.contains(event_id))
    }

    /// Records `event_id` for `server`: `true` the first time, `false` for a repeat.
    #[cfg(test)]
    pub(crate) fn first_time(&mut self, server: &str, event_id: &str) -> bool {
        if self.contains(server, event_id) {
            return false;
        }
        self.record(server, event_id.to_owned());
        true
    }

    /// Records `event_id` for `server` (not recorded yet), forgetting the oldest past the cap.
    pub(crate) fn record(&mut self, server: &str, event_id: String) {
        let recent = self.servers.entry(server.to_owned()).or_default();
        recent.ids.insert(event_id.clone());
        recent.order.push_back(event_id);
        while recent.order.len() > self.cap {
            if let Some(old) = recent.order.pop_front() {
                recent.ids.remove(&old);
            }
        }
    }

    /// Forgets `server` (removed for good).
    pub(crate) fn forget(&mut self, server: &str) {
        self.servers.remove(server);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_server_bounded_and_forgettable() {
        let mut seen = SeenEvents::new(2);
        assert!(seen.first_time("a", "e1"));
        assert!(!seen.first_time("a", "e1"));
        assert!(seen.first_time("b", "e1"), "another server's id is its own");
        assert!(seen.first_time("a", "e2"));
        assert!(seen.first_time("a", "e3"));
        assert!(seen.first_time("a", "e1"), "the oldest was forgotten beyond the bound");
        assert!(!seen.first_time("a", "e3"));
        seen.forget("b");
        assert!(seen.first_time("b", "e1"));
        assert_eq!(SeenEvents::new(0).cap, 1);
    }
}
