//! A map kept as a vector of pairs, for the per-session tables of a 2025 HTTP session.
//!
//! A session's stream tables hold one entry per client request whose answer is still to come
//! and one for the standalone stream; between requests they are empty. A peer bounds them
//! only through what the endpoint lets it hold: requests the engine admitted (its in-flight
//! limit, 256 by default) and requests still being read or refused (one per HTTP/1
//! connection, at most the endpoint's connection limit, 1,024 by default). At that worst case a
//! lookup walks about 1,300 entries; the flood on one session in `tests/hardening.rs`
//! (`a_2025_session_over_its_in_flight_limit_gets_errors_not_a_queue`) goes through these
//! tables. An empty `HashMap` is 48 bytes of every idle session and an empty `Vec` 24; this
//! is one word (a [`ThinVec`] keeps its length and capacity with its entries), looks up a
//! handful of entries faster than hashing them, and gives its memory back when it empties.

use thin_vec::ThinVec;

/// A map of few entries, searched in order (see the [module documentation](self)).
#[derive(Debug)]
pub(crate) struct SmallMap<K, V> {
    entries: ThinVec<(K, V)>,
}

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap { entries: ThinVec::new() }
    }
}

impl<K: PartialEq, V> SmallMap<K, V> {
    fn position(&self, key: &K) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.position(key).is_some()
    }

    /// Inserts `value` under `key`, replacing (and returning) the value it had.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// Removes `key`; the memory is given back once the map is empty.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let i = self.position(key)?;
        let (_, value) = self.entries.swap_remove(i);
        if self.entries.is_empty() {
            self.entries = ThinVec::new();
        }
        Some(value)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.entries = ThinVec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_map() {
        let mut map = SmallMap::default();
        assert_eq!(map.insert(1, "a"), None);
        assert_eq!(map.insert(2, "b"), None);
        assert_eq!(map.insert(1, "c"), Some("a"));
        assert_eq!(map.get(&1), Some(&"c"));
        assert!(map.contains_key(&2));
        *map.get_mut(&2).unwrap() = "d";
        assert_eq!(map.values().copied().collect::<Vec<_>>(), ["c", "d"]);
        assert_eq!(map.remove(&1), Some("c"));
        assert_eq!(map.remove(&1), None);
        assert_eq!(map.get(&2), Some(&"d"));
        map.clear();
        assert!(map.is_empty());
    }

    #[test]
    fn an_emptied_map_keeps_no_memory() {
        let mut map = SmallMap::default();
        for i in 0..100 {
            map.insert(i, i);
        }
        for i in 0..100 {
            map.remove(&i);
        }
        assert!(map.is_empty());
        assert_eq!(map.entries.capacity(), 0);
    }

    #[test]
    fn an_empty_map_is_one_word() {
        assert_eq!(size_of::<SmallMap<u64, u64>>(), size_of::<usize>());
    }
}
