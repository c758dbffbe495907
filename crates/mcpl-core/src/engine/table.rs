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

/// A map that allocates nothing while empty and gives its memory back once emptied.
#[expect(
    clippy::box_collection,
    reason = "an empty table is one pointer (8 bytes), not an inline map (48)"
)]
pub(crate) struct Table<K, V>(Option<Box<HashMap<K, V, Hasher>>>);

impl<K: Hash + Eq, V> Table<K, V> {
    /// An empty table (no allocation).
    pub(crate) const fn new() -> Self {
        Table(None)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |map| map.len())
    }

    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.0.as_ref().is_some_and(|map| map.contains_key(key))
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.0.as_ref().and_then(|map| map.get(key))
    }

    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.0.get_or_insert_with(Box::default).insert(key, value)
    }

    /// Removes `key`; the table's memory goes once it is empty.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let map = self.0.as_mut()?;
        let value = map.remove(key);
        if map.is_empty() {
            self.0 = None;
        }
        value
    }

    /// Empties the table, handing out what it held.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = (K, V)> + use<K, V> {
        self.0.take().into_iter().flat_map(|map| map.into_iter())
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
}
