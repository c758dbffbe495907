//! [`Table`]: a connection's table of requests (in flight, or pending an answer), which costs
//! one pointer while empty, as most connections' tables are most of the time (an idle HTTP
//! session keeps its connection for minutes; a stateless request's connection serves one
//! request and never uses its table of pending ones).

use std::collections::HashMap;
use std::hash::Hash;

/// Keyed per table with a random seed (`foldhash`), so keys a peer picks (request ids) cannot
/// be aimed at one bucket; several times cheaper than std's SipHash for short keys. A table
/// holds at most what the engine's in-flight and pending limits let in.
type Hasher = foldhash::fast::RandomState;

/// A map that allocates nothing while empty, one box while it holds one entry (as a
/// connection's tables mostly do while in use: one request at a time), and gives its memory
/// back once emptied.
pub(crate) struct Table<K, V>(Option<Box<Entries<K, V>>>);

/// What a table holds once it holds anything.
enum Entries<K, V> {
    /// One entry: no hashing, no map.
    One(K, V),
    /// Two or more (or fewer, after removals, until emptied).
    Many(HashMap<K, V, Hasher>),
}

impl<K: Hash + Eq, V> Table<K, V> {
    /// An empty table (no allocation).
    pub(crate) const fn new() -> Self {
        Table(None)
    }

    pub(crate) fn len(&self) -> usize {
        match self.0.as_deref() {
            None => 0,
            Some(Entries::One(..)) => 1,
            Some(Entries::Many(map)) => map.len(),
        }
    }

    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        match self.0.as_deref()? {
            Entries::One(k, v) => (k == key).then_some(v),
            Entries::Many(map) => map.get(key),
        }
    }

    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let Some(entries) = self.0.as_deref_mut() else {
            self.0 = Some(Box::new(Entries::One(key, value)));
            return None;
        };
        let first = match entries {
            Entries::Many(map) => return map.insert(key, value),
            Entries::One(k, v) if *k == key => return Some(std::mem::replace(v, value)),
            // A second entry: a map takes the box the first one was in.
            Entries::One(..) => {
                let map = HashMap::with_capacity_and_hasher(2, Hasher::default());
                std::mem::replace(entries, Entries::Many(map))
            }
        };
        if let (Entries::One(k, v), Entries::Many(map)) = (first, entries) {
            map.insert(k, v);
            map.insert(key, value);
        }
        None
    }

    /// Removes `key`; the table's memory goes once it is empty.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        match self.0.as_deref_mut()? {
            Entries::One(k, _) if k != key => None,
            Entries::One(..) => match self.0.take().map(|entries| *entries) {
                Some(Entries::One(_, v)) => Some(v),
                _ => None,
            },
            Entries::Many(map) => {
                let value = map.remove(key);
                if map.is_empty() {
                    self.0 = None;
                }
                value
            }
        }
    }

    /// Empties the table, handing out what it held.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = (K, V)> + use<K, V> {
        let (one, many) = match self.0.take().map(|entries| *entries) {
            None => (None, None),
            Some(Entries::One(k, v)) => (Some((k, v)), None),
            Some(Entries::Many(map)) => (None, Some(map)),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

impl<K: Hash + Eq, V> Default for Table<K, V> {
    fn default() -> Self {
        Table::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_nothing_while_empty_and_lets_go_when_emptied() {
        let mut table = Table::new();
        assert!(table.0.is_none());
        assert_eq!(table.insert(1, "a"), None);
        assert_eq!(table.insert(2, "b"), None);
        assert_eq!((table.len(), table.get(&1), table.contains_key(&2)), (2, Some(&"a"), true));
        assert_eq!(table.remove(&1), Some("a"));
        assert!(table.0.is_some());
        assert_eq!(table.remove(&3), None);
        assert_eq!(table.remove(&2), Some("b"));
        assert!(table.0.is_none(), "the memory went with the last entry");
        table.insert(4, "d");
        assert_eq!(table.take().collect::<Vec<_>>(), [(4, "d")]);
        assert_eq!(table.len(), 0);
        assert!(table.0.is_none());
    }

    #[test]
    fn one_entry_and_many_behave_alike() {
        let mut table = Table::new();
        // One entry: replaced in place, missed keys miss, taken out whole.
        assert_eq!(table.insert(1, "a"), None);
        assert!(matches!(table.0.as_deref(), Some(Entries::One(..))));
        assert_eq!(table.insert(1, "b"), Some("a"));
        assert_eq!((table.len(), table.get(&1), table.get(&2)), (1, Some(&"b"), None));
        assert_eq!(table.remove(&2), None);
        assert_eq!(table.remove(&1), Some("b"));
        assert!(table.0.is_none());
        // A second entry turns it into a map, which keeps both.
        table.insert(1, "a");
        table.insert(2, "b");
        assert!(matches!(table.0.as_deref(), Some(Entries::Many(..))));
        assert_eq!((table.len(), table.get(&1), table.get(&2)), (2, Some(&"a"), Some(&"b")));
        assert_eq!(table.insert(2, "c"), Some("b"));
        let mut all: Vec<_> = table.take().collect();
        all.sort();
        assert_eq!(all, [(1, "a"), (2, "c")]);
        assert!(table.0.is_none());
        // Many, emptied one by one, lets go of its memory at the last.
        for i in 0..10 {
            table.insert(i, "x");
        }
        for i in 0..10 {
            assert_eq!(table.remove(&i), Some("x"));
            assert_eq!(table.len(), 9 - i as usize);
        }
        assert!(table.0.is_none());
    }
}
