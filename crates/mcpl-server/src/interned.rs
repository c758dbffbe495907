//! Values many sessions share, kept once. A 2025 session records its client's `clientInfo` and
//! capabilities for as long as it lives, and every session of one client program sends the
//! same: an endpoint with ten thousand idle sessions from one kind of client keeps one copy,
//! not ten thousand (the capabilities alone are 304 bytes).
//!
//! The tables are bounded ([`CAPACITY`] distinct values each): a value past it, or one that does
//! not serialize, is kept by its session alone, so a peer sending a new value with every
//! session makes the table neither grow nor slow down. A value no session holds any more is
//! dropped from its table when room is needed.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use mcpl_core::types::{ClientCapabilities, Implementation};
use serde::Serialize;

/// The most distinct values one table keeps.
pub(crate) const CAPACITY: usize = 64;

/// Values by their JSON text (two values are equal when their JSON is).
struct Table<T> {
    values: Mutex<HashMap<String, Weak<T>>>,
}

impl<T: Serialize> Table<T> {
    fn new() -> Self {
        Table { values: Mutex::new(HashMap::new()) }
    }

    /// The shared copy of `value`: one already kept, else `value`, kept if there is room.
    fn intern(&self, value: T) -> Arc<T> {
        let Ok(key) = serde_json::to_string(&value) else { return Arc::new(value) };
        let mut values = self.values.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(shared) = values.get(&key).and_then(Weak::upgrade) {
            return shared;
        }
        if values.len() >= CAPACITY {
            values.retain(|_, kept| kept.strong_count() > 0);
        }
        let value = Arc::new(value);
        if values.len() < CAPACITY {
            values.insert(key, Arc::downgrade(&value));
        }
        value
    }
}

static CLIENT_INFO: LazyLock<Table<Implementation>> = LazyLock::new(Table::new);
static CLIENT_CAPABILITIES: LazyLock<Table<ClientCapabilities>> = LazyLock::new(Table::new);

/// The shared copy of a client's `clientInfo`.
pub(crate) fn client_info(info: Implementation) -> Arc<Implementation> {
    CLIENT_INFO.intern(info)
}

/// The shared copy of a client's capabilities.
pub(crate) fn client_capabilities(capabilities: ClientCapabilities) -> Capabilities {
    Capabilities::kept(capabilities, |c| CLIENT_CAPABILITIES.intern(c))
}

/// The capabilities of a client that declared none (`{}`), what most clients send: one value,
/// only ever read.
static EMPTY_CAPABILITIES: LazyLock<ClientCapabilities> =
    LazyLock::new(ClientCapabilities::default);

/// A client's capabilities as the server keeps them: none declared as a static value (not a
/// reference count, which every request of every session would bump), others shared.
#[derive(Debug, Clone)]
pub(crate) enum Capabilities {
    /// `{}`.
    Empty,
    /// Anything else.
    Shared(Arc<ClientCapabilities>),
}

impl Capabilities {
    /// `capabilities`, kept by their holder alone (a stateless-era request's, read for that
    /// request only: not interned).
    pub(crate) fn own(capabilities: ClientCapabilities) -> Self {
        Capabilities::kept(capabilities, Arc::new)
    }

    /// `{}` as [`Capabilities::Empty`], anything else shared as `share` makes it.
    fn kept(
        capabilities: ClientCapabilities,
        share: impl FnOnce(ClientCapabilities) -> Arc<ClientCapabilities>,
    ) -> Self {
        match capabilities == *EMPTY_CAPABILITIES {
            true => Capabilities::Empty,
            false => Capabilities::Shared(share(capabilities)),
        }
    }
}

impl std::ops::Deref for Capabilities {
    type Target = ClientCapabilities;

    fn deref(&self) -> &ClientCapabilities {
        match self {
            Capabilities::Empty => &EMPTY_CAPABILITIES,
            Capabilities::Shared(capabilities) => capabilities,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_copy_and_distinct_ones_do_not() {
        let table = Table::new();
        let a = table.intern(Implementation::new("editor", "1"));
        let b = table.intern(Implementation::new("editor", "1"));
        let c = table.intern(Implementation::new("editor", "2"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*c, Implementation::new("editor", "2"));
    }

    #[test]
    fn empty_capabilities_are_kept_without_a_count_and_others_shared() {
        let empty = client_capabilities(ClientCapabilities::default());
        assert!(matches!(empty, Capabilities::Empty));
        assert_eq!(*empty, ClientCapabilities::default());
        assert!(matches!(Capabilities::own(ClientCapabilities::default()), Capabilities::Empty));
        let roots: ClientCapabilities = serde_json::from_str(r#"{"roots":{}}"#).unwrap();
        let (a, b) = (client_capabilities(roots.clone()), client_capabilities(roots.clone()));
        match (&a, &b) {
            (Capabilities::Shared(a), Capabilities::Shared(b)) => assert!(Arc::ptr_eq(a, b)),
            _ => panic!("shared: {a:?} {b:?}"),
        }
        let own = Capabilities::own(roots.clone());
        assert!(matches!(own, Capabilities::Shared(_)) && *own == roots);
    }

    #[test]
    fn the_table_stays_bounded_and_forgets_values_no_session_holds() {
        let table = Table::new();
        let kept: Vec<_> = (0..CAPACITY)
            .map(|i| table.intern(Implementation::new(format!("c{i}"), "1")))
            .collect();
        // Full: a new value is its own copy, not kept.
        let extra = table.intern(Implementation::new("extra", "1"));
        let again = table.intern(Implementation::new("extra", "1"));
        assert!(!Arc::ptr_eq(&extra, &again));
        assert_eq!(table.values.lock().unwrap().len(), CAPACITY);
        // Once the values are dropped, their places are taken again.
        drop(kept);
        let fresh = table.intern(Implementation::new("fresh", "1"));
        assert!(Arc::ptr_eq(&fresh, &table.intern(Implementation::new("fresh", "1"))));
        assert!(table.values.lock().unwrap().len() <= CAPACITY);
    }
}
