//! State checkpoints: one tree per (server, feature set), attribution of results to trees,
//! injection into calls, rollback bookkeeping, retention and persistence.
//!
//! ```
//! use mcpl_host::checkpoint::{CheckpointManager, Injection, MemoryCheckpointStore, StateMode};
//! use serde_json::json;
//!
//! let manager = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
//! manager.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
//! // A tool tagged with notes.store returned a patch against the (empty) root.
//! let state = json!({"checkpoint": "c1", "parent": null,
//!                    "patch": [{"op": "add", "path": "/items", "value": ["milk"]}]});
//! manager.record_result("notes", Some("notes.store"), &state);
//! // The next call to that tool carries the materialized state.
//! assert_eq!(
//!     manager.injection("notes", Some("notes.store")),
//!     Injection::Current {
//!         feature_set: "notes.store".into(),
//!         checkpoint: "c1".into(),
//!         state: Some(json!({"items": ["milk"]})),
//!     },
//! );
//! ```

mod attribution;
mod store;
mod tree;
mod writer;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use mcpl_core::mcpl::state::{PatchOperation, StateBudget};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::writer::{Slot, Slots, Writer, lock};

pub use self::attribution::{Attribution, DropReason, attribute_injection, attribute_result};
#[allow(deprecated)]
pub use self::store::MemoryStore;
pub use self::store::{
    CheckpointStore, FORMAT_VERSION, FileStore, Loaded, MemoryCheckpointStore, StoreError,
    Unreadable,
};
pub use self::tree::{
    CheckpointNode, CheckpointTree, Incoming, MoveError, RecordError, Recorded, StateMode,
};

/// The key of one tree: (server id, feature set).
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode, TreeKey};
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// trees.register("db", "db.rows", StateMode::ServerManaged, true).unwrap();
/// // Keys sort by server, then feature set.
/// let keys: Vec<String> = trees.keys().iter().map(TreeKey::to_string).collect();
/// assert_eq!(keys, ["db:db.rows", "notes:notes.store"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TreeKey {
    /// The server id.
    pub server: String,
    /// The feature set.
    pub feature_set: String,
}

impl TreeKey {
    /// A key.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::TreeKey;
    ///
    /// let key = TreeKey::new("notes", "notes.store");
    /// assert_eq!((key.server.as_str(), key.feature_set.as_str()), ("notes", "notes.store"));
    /// assert_eq!(key.to_string(), "notes:notes.store");
    /// ```
    pub fn new(server: impl Into<String>, feature_set: impl Into<String>) -> Self {
        TreeKey { server: server.into(), feature_set: feature_set.into() }
    }
}

impl fmt::Display for TreeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.server, self.feature_set)
    }
}

/// A stored tree that could not be used as it was: unreadable (set aside, a fresh tree starts
/// when its server registers the set again) or degraded (its state cannot be rebuilt within the
/// budget; nothing is injected from it until a snapshot arrives). Either way only that
/// (server, feature set) is affected.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, FileStore};
///
/// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-issues-{}", std::process::id()));
/// let store = FileStore::new(&dir).unwrap();
/// // The tree file of (notes, notes.store), truncated.
/// std::fs::write(dir.join("tree-6e6f7465733a6e6f7465732e73746f7265.json"), "{\"version\": 1, ")
///     .unwrap();
/// let trees = CheckpointManager::open(store, 100).unwrap();
/// let issues = trees.load_issues();
/// assert_eq!(issues[0].key.as_ref().map(|k| k.server.as_str()), Some("notes"));
/// assert!(trees.keys().is_empty());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadIssue {
    /// The tree, when known.
    pub key: Option<TreeKey>,
    /// What is wrong, for an operator.
    pub reason: String,
}

/// What a `tools/call` should carry (siblings of `name` and `arguments` in its params): the
/// current checkpoint, and for a host-managed set the state at it, so a host-managed server
/// can answer with a patch against a parent it knows.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, Injection, MemoryCheckpointStore, StateMode};
/// use serde_json::json;
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
/// // No checkpoint yet: the call carries nothing.
/// assert_eq!(trees.injection("notes", Some("notes.store")), Injection::Nothing);
/// trees.record_result(
///     "notes",
///     Some("notes.store"),
///     &json!({"checkpoint": "c1", "data": {"n": 1}}),
/// );
/// let Injection::Current { checkpoint, state, .. } = trees.injection("notes", None) else {
///     panic!("expected the current checkpoint");
/// };
/// assert_eq!((checkpoint.as_str(), state), ("c1", Some(json!({"n": 1}))));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Injection {
    /// Nothing (no stateful set applies, or no checkpoint yet).
    Nothing,
    /// `params.checkpoint`, and `params.state` for a host-managed set.
    Current {
        /// The feature set.
        feature_set: String,
        /// The current checkpoint.
        checkpoint: String,
        /// The state at it (host-managed sets only).
        state: Option<Value>,
    },
}

impl Injection {
    /// Writes the injection into `tools/call` params.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
    /// // `tools/call` params; the checkpoint (and state) go beside `name` and `arguments`.
    /// let mut params = json!({"name": "add", "arguments": {"item": "milk"}});
    /// let object = params.as_object_mut().unwrap();
    /// trees.injection("notes", Some("notes.store")).apply_to(object);
    /// assert_eq!(params["checkpoint"], "c1");
    /// assert_eq!(params["state"], json!({"n": 1}));
    /// ```
    pub fn apply_to(&self, params: &mut serde_json::Map<String, Value>) {
        if let Injection::Current { checkpoint, state, .. } = self {
            params.insert("checkpoint".into(), Value::String(checkpoint.clone()));
            if let Some(state) = state {
                params.insert("state".into(), state.clone());
            }
        }
    }
}

/// What happened to a result's state.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{
///     CheckpointManager, MemoryCheckpointStore, RecordOutcome, Recorded, StateMode,
/// };
/// use serde_json::json;
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
/// let outcome = trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {}}));
/// assert_eq!(
///     outcome,
///     RecordOutcome::Recorded { feature_set: "notes.store".into(), recorded: Recorded::New }
/// );
/// // A result tagged with a set that keeps no state is dropped, with the reason.
/// let outcome = trees.record_result("notes", Some("notes.search"), &json!({"checkpoint": "c2"}));
/// assert!(
///     matches!(outcome, RecordOutcome::Dropped(ref why) if why.kind() == "tool_set_not_stateful")
/// );
/// assert!(matches!(
///     trees.record_result("notes", None, &json!("c3")),
///     RecordOutcome::Malformed(_)
/// ));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RecordOutcome {
    /// The result carried no `state`.
    NoState,
    /// Recorded on `feature_set`'s tree.
    Recorded {
        /// The feature set.
        feature_set: String,
        /// How.
        recorded: Recorded,
    },
    /// Not attributed (logged).
    Dropped(DropReason),
    /// Attributed, but the tree refused it (logged); nothing changed.
    Rejected {
        /// The feature set.
        feature_set: String,
        /// Why.
        error: RecordError,
    },
    /// `state` is not an object with a string `checkpoint`.
    Malformed(String),
}

/// Why a rollback cannot start.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{
///     CheckpointManager, MemoryCheckpointStore, MoveError, RollbackError, StateMode,
/// };
/// use serde_json::json;
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("db", "db.rows", StateMode::ServerManaged, false).unwrap();
/// trees.record_result("db", None, &json!({"checkpoint": "c1"}));
/// let err = trees.prepare_rollback("db", "db.rows", "c1").unwrap_err();
/// assert!(matches!(err, RollbackError::NotSupported(_))); // server-managed, no `rollback: true`
/// let err = trees.prepare_rollback("db", "db.rows", "c9").unwrap_err();
/// assert_eq!(err, RollbackError::Checkpoint(MoveError::Unknown("c9".into())));
/// assert!(matches!(
///     trees.prepare_rollback("db", "db.logs", "c1"),
///     Err(RollbackError::UnknownSet(_))
/// ));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RollbackError {
    /// No tree for (server, feature set).
    #[error("no stateful feature set {0}")]
    UnknownSet(TreeKey),
    /// The checkpoint is not in the tree, or was pruned.
    #[error(transparent)]
    Checkpoint(#[from] MoveError),
    /// The set declares no `rollback: true` and is server-managed: nothing can roll back.
    #[error("feature set {0} does not support rollback")]
    NotSupported(TreeKey),
}

/// The checkpoint trees of every server, persisted through a [`CheckpointStore`].
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
/// use serde_json::json;
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
/// // A call to a tool of notes.store; its result carried state.
/// trees.record_result(
///     "notes",
///     Some("notes.store"),
///     &json!({"checkpoint": "c1", "data": {"n": 1}}),
/// );
/// trees.record_result(
///     "notes",
///     Some("notes.store"),
///     &json!({"checkpoint": "c2", "parent": "c1",
/// "patch": [{"op": "replace", "path": "/n", "value": 2}]}),
/// );
/// // The user undoes the last step: the server must agree first (`rollback: true`).
/// assert_eq!(trees.prepare_rollback("notes", "notes.store", "c1"), Ok(true));
/// trees.commit_rollback("notes", "notes.store", "c1", None).unwrap();
/// let tree = trees.tree("notes", "notes.store").unwrap();
/// assert_eq!(tree.current_state(), Some(&json!({"n": 1})));
/// ```
#[derive(Debug, Clone)]
pub struct CheckpointManager {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    slots: Arc<Slots>,
    writer: Writer,
    retention: usize,
    budget: StateBudget,
    issues: Vec<LoadIssue>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl CheckpointManager {
    /// Loads every tree from `store` and rebuilds each current state; a tree whose state cannot
    /// be rebuilt is kept but degraded (nothing is injected from it) and a warning is logged.
    /// `retention` caps the nodes per tree.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, FileStore, StateMode};
    /// use serde_json::json;
    ///
    /// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-open-{}", std::process::id()));
    /// {
    ///     let trees = CheckpointManager::open(FileStore::new(&dir).unwrap(), 100).unwrap();
    ///     trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
    ///     trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
    /// }
    /// // A new process: the trees come back from the store, current state rebuilt.
    /// let trees = CheckpointManager::open(FileStore::new(&dir).unwrap(), 100).unwrap();
    /// let tree = trees.tree("notes", "notes.store").unwrap();
    /// assert_eq!(tree.current.as_deref(), Some("c1"));
    /// assert_eq!(tree.current_state(), Some(&json!({"n": 1})));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn open(store: impl CheckpointStore, retention: usize) -> Result<Self, StoreError> {
        CheckpointManager::open_with(store, retention, StateBudget::default())
    }

    /// Like [`CheckpointManager::open`], every state kept within `budget`: a stored tree whose
    /// state is over it is degraded (see [`CheckpointManager::load_issues`]), a result's
    /// snapshot or patch crossing it is rejected.
    ///
    /// Trees are saved by a writer thread after each change (several changes in a row cost one
    /// save), so no caller waits for the store; [`CheckpointManager::flush`] waits for it, and
    /// the last manager dropped flushes.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, RecordOutcome, StateMode};
    /// use serde_json::json;
    ///
    /// let budget = StateBudget::default().with_max_size(1024);
    /// let trees = CheckpointManager::open_with(MemoryCheckpointStore::new(), 100, budget).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
    /// let big = json!({"checkpoint": "c1", "data": {"text": "x".repeat(2000)}});
    /// let outcome = trees.record_result("notes", None, &big);
    /// assert!(
    ///     matches!(outcome, RecordOutcome::Rejected { ref error, .. } if error.kind() == "over_budget")
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// The store cannot be listed at all (a single unreadable tree is a [`LoadIssue`] instead).
    pub fn open_with(
        store: impl CheckpointStore,
        retention: usize,
        budget: StateBudget,
    ) -> Result<Self, StoreError> {
        let loaded = store.load()?;
        let mut issues: Vec<LoadIssue> = loaded
            .unreadable
            .into_iter()
            .map(|u| LoadIssue { key: u.key, reason: describe_error(&u.error) })
            .collect();
        let mut slots = BTreeMap::new();
        for (key, mut tree) in loaded.trees {
            tree.set_budget(budget);
            if let Err(e) = tree.materialize() {
                tracing::warn!(tree = ?key.to_string(), error = %e, "checkpoint tree degraded: its state cannot be rebuilt");
                issues.push(LoadIssue { key: Some(key.clone()), reason: describe_error(&e) });
            }
            slots.insert(key, Arc::new(Mutex::new(tree)));
        }
        let slots = Arc::new(Mutex::new(slots));
        let writer = Writer::start(slots.clone(), Arc::new(store));
        Ok(CheckpointManager {
            inner: Arc::new(Inner { slots, writer, retention, budget, issues }),
        })
    }

    /// What was wrong with the stored trees when the manager opened (a host raises an alert
    /// for each).
    pub fn load_issues(&self) -> &[LoadIssue] {
        &self.inner.issues
    }

    /// The budget every state keeps.
    pub fn budget(&self) -> &StateBudget {
        &self.inner.budget
    }

    /// Blocks until every change so far is in the store (the writer saves in the background).
    /// Call it off an async runtime's workers (`spawn_blocking`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, CheckpointStore, FileStore, StateMode};
    /// use serde_json::json;
    ///
    /// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-flush-{}", std::process::id()));
    /// let trees = CheckpointManager::open(FileStore::new(&dir).unwrap(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
    /// trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
    /// trees.flush();
    /// let stored = FileStore::new(&dir).unwrap().load().unwrap().trees;
    /// assert_eq!(stored.values().next().unwrap().current.as_deref(), Some("c1"));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn flush(&self) {
        self.inner.writer.flush();
    }

    fn slot(&self, key: &TreeKey) -> Option<Slot> {
        lock(&self.inner.slots).get(key).cloned()
    }

    /// Registers a stateful feature set. Idempotent: an existing tree (from memory or the store)
    /// is resumed, never reset; its flags are refreshed (a mode flip is logged).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
    /// // A reconnect registers the set again: the tree is resumed, not reset.
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// assert_eq!(trees.tree("notes", "notes.store").unwrap().current.as_deref(), Some("c1"));
    /// ```
    pub fn register(
        &self,
        server: &str,
        feature_set: &str,
        mode: StateMode,
        rollback: bool,
    ) -> Result<(), StoreError> {
        let key = TreeKey::new(server, feature_set);
        let slot = lock(&self.inner.slots)
            .entry(key.clone())
            .or_insert_with(|| {
                tracing::info!(tree = ?key.to_string(), ?mode, rollback, "state_registered");
                let tree = CheckpointTree::new(mode, rollback).with_budget(self.inner.budget);
                Arc::new(Mutex::new(tree))
            })
            .clone();
        {
            let mut tree = lock(&slot);
            if tree.mode != mode {
                tracing::warn!(tree = ?key.to_string(), from = ?tree.mode, to = ?mode, "feature set changed state mode");
                tree.mode = mode;
            }
            tree.rollback = rollback;
            if tree.current_state().is_none()
                && tree.current.is_some()
                && !tree.is_degraded()
                && let Err(e) = tree.materialize()
            {
                tracing::warn!(tree = ?key.to_string(), error = %e, "checkpoint tree degraded: its state cannot be rebuilt");
            }
        }
        self.inner.writer.dirty(&key);
        Ok(())
    }

    /// The stateful sets registered for `server` and their modes.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.register("notes", "notes.sync", StateMode::ServerManaged, true).unwrap();
    /// let sets = trees.stateful_sets("notes");
    /// assert_eq!(sets.get("notes.store"), Some(&StateMode::HostManaged));
    /// assert_eq!(sets.get("notes.sync"), Some(&StateMode::ServerManaged));
    /// assert!(trees.stateful_sets("web").is_empty());
    /// ```
    pub fn stateful_sets(&self, server: &str) -> BTreeMap<String, StateMode> {
        let slots: Vec<(String, Slot)> = lock(&self.inner.slots)
            .iter()
            .filter(|(k, _)| k.server == server)
            .map(|(k, t)| (k.feature_set.clone(), t.clone()))
            .collect();
        slots.into_iter().map(|(fs, t)| (fs, lock(&t).mode)).collect()
    }

    /// A copy of one tree.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
    /// let tree = trees.tree("notes", "notes.store").unwrap(); // a copy: safe to inspect
    /// assert_eq!(tree.nodes.len(), 1);
    /// assert!(trees.tree("notes", "notes.other").is_none());
    /// ```
    pub fn tree(&self, server: &str, feature_set: &str) -> Option<CheckpointTree> {
        self.slot(&TreeKey::new(server, feature_set)).map(|t| lock(&t).clone())
    }

    /// Every tree key.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode, TreeKey};
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("web", "web.session", StateMode::ServerManaged, true).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
    /// assert_eq!(trees.keys(), [
    ///     TreeKey::new("notes", "notes.store"),
    ///     TreeKey::new("web", "web.session"),
    /// ]);
    /// ```
    pub fn keys(&self) -> Vec<TreeKey> {
        lock(&self.inner.slots).keys().cloned().collect()
    }

    /// What a call to a tool of `server` tagged with `tool_set` (if any) should carry.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, Injection, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("x", "x.feed", StateMode::HostManaged, false).unwrap();
    /// trees.register("x", "x.post", StateMode::ServerManaged, true).unwrap();
    /// trees.record_result("x", Some("x.post"), &json!({"checkpoint": "p1"}));
    /// // A tool tagged x.post gets its checkpoint id, no state (the server keeps it).
    /// assert_eq!(trees.injection("x", Some("x.post")), Injection::Current {
    ///     feature_set: "x.post".into(),
    ///     checkpoint: "p1".into(),
    ///     state: None,
    /// });
    /// // An untagged tool on a server with two stateful sets gets nothing (no guessing).
    /// assert_eq!(trees.injection("x", None), Injection::Nothing);
    /// ```
    pub fn injection(&self, server: &str, tool_set: Option<&str>) -> Injection {
        let sets = self.stateful_sets(server);
        let fs = match attribute_injection(&sets, tool_set) {
            Attribution::To(fs) => fs,
            Attribution::Drop(DropReason::NoStatefulSet) => return Injection::Nothing,
            Attribution::Drop(reason) => {
                tracing::warn!(server, tool_set = ?tool_set, reason = reason.kind(), "no state injected");
                return Injection::Nothing;
            }
        };
        let Some(slot) = self.slot(&TreeKey::new(server, &fs)) else { return Injection::Nothing };
        let tree = lock(&slot);
        let Some(checkpoint) = tree.current.clone() else { return Injection::Nothing };
        let state = match tree.mode {
            StateMode::HostManaged => tree.current_state().cloned(),
            StateMode::ServerManaged => None,
        };
        Injection::Current { feature_set: fs, checkpoint, state }
    }

    /// Records a `tools/call` result's `state` (the raw `result.state` value) from a call to a
    /// tool of `server` tagged with `tool_set`, attributed by [`attribute_result`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, RecordOutcome, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// let outcome = trees.record_result("notes", Some("notes.store"), &json!({
    ///     "checkpoint": "c1",
    ///     "parent": null,
    ///     "patch": [{"op": "add", "path": "/items", "value": ["milk"]}]
    /// }));
    /// assert!(matches!(outcome, RecordOutcome::Recorded { .. }));
    /// // A patch that cannot apply is refused atomically: `current` stays at c1.
    /// let outcome = trees.record_result("notes", Some("notes.store"), &json!({
    ///     "checkpoint": "c2", "parent": "c1", "patch": [{"op": "remove", "path": "/nothing"}]
    /// }));
    /// assert!(matches!(outcome, RecordOutcome::Rejected { .. }));
    /// assert_eq!(trees.tree("notes", "notes.store").unwrap().current.as_deref(), Some("c1"));
    /// ```
    pub fn record_result(
        &self,
        server: &str,
        tool_set: Option<&str>,
        state: &Value,
    ) -> RecordOutcome {
        let parsed = match parse_state(state) {
            Ok(p) => p,
            Err(why) => {
                tracing::info!(server, reason = ?why, "malformed state in a tool result");
                return RecordOutcome::Malformed(why);
            }
        };
        let sets = self.stateful_sets(server);
        let has_payload = parsed.data.is_some() || parsed.patch.is_some();
        let fs = match attribute_result(&sets, parsed.feature_set.as_deref(), tool_set, has_payload)
        {
            Attribution::To(fs) => fs,
            Attribution::Drop(reason) => {
                tracing::warn!(
                    server,
                    tool_set = ?tool_set,
                    reason = reason.kind(),
                    "tool result state dropped"
                );
                return RecordOutcome::Dropped(reason);
            }
        };
        self.record(server, &fs, &parsed)
    }

    fn record(&self, server: &str, fs: &str, parsed: &ParsedState) -> RecordOutcome {
        let key = TreeKey::new(server, fs);
        let Some(slot) = self.slot(&key) else {
            return RecordOutcome::Dropped(DropReason::ExplicitNotStateful(fs.to_owned()));
        };
        let mut tree = lock(&slot);
        self.record_in(&key, &mut tree, parsed)
    }

    /// Records into one tree, its lock held (and no other).
    fn record_in(
        &self,
        key: &TreeKey,
        tree: &mut CheckpointTree,
        parsed: &ParsedState,
    ) -> RecordOutcome {
        let fs = key.feature_set.as_str();
        if tree.mode == StateMode::ServerManaged
            && (parsed.data.is_some() || parsed.patch.is_some())
        {
            tracing::warn!(tree = ?key.to_string(), "a server-managed set received state data; stored, never injected");
        }
        let incoming = Incoming {
            checkpoint: &parsed.checkpoint,
            parent: parsed.parent.as_deref(),
            data: parsed.data.as_ref(),
            patch: parsed.patch.as_deref(),
        };
        match tree.record(incoming, now_ms()) {
            Ok(recorded) => {
                if recorded == Recorded::Detached {
                    tracing::warn!(tree = ?key.to_string(), checkpoint = ?parsed.checkpoint, "checkpoint with an unknown parent recorded as detached");
                }
                let pruned = tree.prune(self.inner.retention);
                if !pruned.is_empty() {
                    tracing::debug!(tree = ?key.to_string(), pruned = pruned.len(), "checkpoints pruned");
                }
                self.inner.writer.dirty(key);
                RecordOutcome::Recorded { feature_set: fs.to_owned(), recorded }
            }
            Err(error) => {
                tracing::info!(tree = ?key.to_string(), error = %error, kind = error.kind(), cause = ?describe_error(&error), "checkpoint rejected");
                RecordOutcome::Rejected { feature_set: fs.to_owned(), error }
            }
        }
    }

    /// Checks that `checkpoint` can be rolled back to: the tree exists and holds it (not pruned),
    /// and the set supports rollback. Returns whether the server must be asked (`rollback: true`)
    /// or the host may roll back alone (a host-managed set without server rollback).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
    /// trees.register("db", "db.rows", StateMode::ServerManaged, true).unwrap();
    /// trees.record_result("notes", Some("notes.store"), &json!({"checkpoint": "n1", "data": {}}));
    /// trees.record_result("db", Some("db.rows"), &json!({"checkpoint": "d1"}));
    /// // `false`: the host may roll back alone; `true`: ask the server (`state/rollback`) first.
    /// assert_eq!(trees.prepare_rollback("notes", "notes.store", "n1"), Ok(false));
    /// assert_eq!(trees.prepare_rollback("db", "db.rows", "d1"), Ok(true));
    /// ```
    pub fn prepare_rollback(
        &self,
        server: &str,
        fs: &str,
        checkpoint: &str,
    ) -> Result<bool, RollbackError> {
        let key = TreeKey::new(server, fs);
        let slot = self.slot(&key).ok_or_else(|| RollbackError::UnknownSet(key.clone()))?;
        let tree = lock(&slot);
        match tree.nodes.get(checkpoint) {
            None => return Err(MoveError::Unknown(checkpoint.to_owned()).into()),
            Some(n) if n.pruned_by_server => {
                return Err(MoveError::Pruned(checkpoint.to_owned()).into());
            }
            Some(_) => {}
        }
        match (tree.rollback, tree.mode) {
            (true, _) => Ok(true),
            (false, StateMode::HostManaged) => Ok(false),
            (false, StateMode::ServerManaged) => Err(RollbackError::NotSupported(key)),
        }
    }

    /// Applies a rollback the server accepted (or a host-only one): moves `current`, adopting
    /// `data` if the server returned some for a host-managed set.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
    /// trees.record_result(
    ///     "notes",
    ///     None,
    ///     &json!({"checkpoint": "c2", "parent": "c1", "data": {"n": 2}}),
    /// );
    /// // The server accepted the rollback and returned its state at c1, which wins.
    /// trees
    ///     .commit_rollback(
    ///         "notes",
    ///         "notes.store",
    ///         "c1",
    ///         Some(json!({"n": 1, "note": "restored"})),
    ///     )
    ///     .unwrap();
    /// let tree = trees.tree("notes", "notes.store").unwrap();
    /// assert_eq!(tree.current.as_deref(), Some("c1"));
    /// assert_eq!(tree.current_state(), Some(&json!({"n": 1, "note": "restored"})));
    /// ```
    pub fn commit_rollback(
        &self,
        server: &str,
        fs: &str,
        checkpoint: &str,
        data: Option<Value>,
    ) -> Result<(), RollbackError> {
        let key = TreeKey::new(server, fs);
        let slot = self.slot(&key).ok_or_else(|| RollbackError::UnknownSet(key.clone()))?;
        let mut tree = lock(&slot);
        tree.move_to(checkpoint)?;
        if let Some(data) = data.filter(|_| tree.mode == StateMode::HostManaged) {
            if tree.current_state() != Some(&data) {
                tracing::warn!(tree = ?key.to_string(), checkpoint = ?checkpoint, "the server's rollback state differs from the reconstructed one; adopting it");
            }
            if let Err(e) = tree.adopt_state(checkpoint, data) {
                tracing::info!(tree = ?key.to_string(), error = %e, cause = ?describe_error(&e), "the server's rollback state was not adopted");
            }
        }
        drop(tree);
        self.inner.writer.dirty(&key);
        Ok(())
    }

    /// Records that the server no longer has `checkpoint` (`-32005`); `current` stays.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("db", "db.rows", StateMode::ServerManaged, true).unwrap();
    /// trees.record_result("db", None, &json!({"checkpoint": "d1"}));
    /// trees.record_result("db", None, &json!({"checkpoint": "d2", "parent": "d1"}));
    /// // The server answered a rollback to d1 with -32005: it no longer has it.
    /// trees.mark_pruned("db", "db.rows", "d1");
    /// assert_eq!(trees.prepare_rollback("db", "db.rows", "d1").unwrap_err().to_string(),
    ///            "checkpoint d1 was pruned by the server");
    /// assert_eq!(trees.tree("db", "db.rows").unwrap().current.as_deref(), Some("d2"));
    /// ```
    pub fn mark_pruned(&self, server: &str, fs: &str, checkpoint: &str) {
        let key = TreeKey::new(server, fs);
        if let Some(slot) = self.slot(&key) {
            lock(&slot).mark_pruned(checkpoint);
            self.inner.writer.dirty(&key);
        }
    }

    /// Serves a server's `state/update` request (`{featureSet, checkpoint, parent, data?,
    /// patch?}`): the set must be a registered stateful set, `data` and `patch` are exclusive,
    /// and a `parent` must be the current checkpoint (optimistic concurrency). Answers
    /// `{accepted, reason?}`; never triggers inference. (The caller checks first that the set is
    /// declared and enabled.)
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// let update = json!({"featureSet": "notes.store", "checkpoint": "c1", "data": {"n": 1}});
    /// assert_eq!(trees.state_update("notes", &update), json!({"accepted": true}));
    /// // A stale parent loses the race (optimistic concurrency).
    /// let stale = json!({"featureSet": "notes.store", "checkpoint": "c2", "parent": "c0",
    ///                    "data": {"n": 2}});
    /// let answer = trees.state_update("notes", &stale);
    /// assert_eq!(answer["accepted"], false);
    /// assert_eq!(answer["reason"], "parent c0 is not the current checkpoint c1");
    /// ```
    pub fn state_update(&self, server: &str, params: &Value) -> Value {
        let refuse = |reason: String| serde_json::json!({"accepted": false, "reason": reason});
        let Some(fs) = params.get("featureSet").and_then(Value::as_str) else {
            return refuse("featureSet is missing".into());
        };
        let parsed = match parse_state(params) {
            Ok(p) => p,
            Err(why) => return refuse(why),
        };
        let key = TreeKey::new(server, fs);
        let Some(slot) = self.slot(&key) else {
            return refuse(format!("{fs} is not a stateful feature set"));
        };
        let mut tree = lock(&slot);
        if let (Some(parent), Some(current)) = (&parsed.parent, &tree.current)
            && parent != current
        {
            return refuse(format!("parent {parent} is not the current checkpoint {current}"));
        }
        match self.record_in(&key, &mut tree, &parsed) {
            RecordOutcome::Recorded { .. } => serde_json::json!({"accepted": true}),
            RecordOutcome::Rejected { error, .. } => refuse(error.to_string()),
            other => refuse(format!("{other:?}")),
        }
    }

    /// Serves `state/get` (`{featureSet}`): a host-managed set's `{checkpoint, data}`; any
    /// other set is the JSON-RPC error `-32006` with `data: {featureSet}`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.register("notes", "notes.sync", StateMode::ServerManaged, true).unwrap();
    /// trees.record_result(
    ///     "notes",
    ///     Some("notes.store"),
    ///     &json!({"checkpoint": "c1", "data": {"n": 1}}),
    /// );
    /// assert_eq!(
    ///     trees.state_get("notes", "notes.store").unwrap(),
    ///     json!({"checkpoint": "c1", "data": {"n": 1}}),
    /// );
    /// // The host keeps no state for a server-managed set.
    /// let err = trees.state_get("notes", "notes.sync").unwrap_err();
    /// assert_eq!(err.code.0, -32006);
    /// ```
    pub fn state_get(
        &self,
        server: &str,
        fs: &str,
    ) -> Result<Value, mcpl_core::jsonrpc::ErrorObject> {
        let slot = self.slot(&TreeKey::new(server, fs));
        let tree = slot.as_ref().map(|s| lock(s));
        match tree.as_deref() {
            Some(tree) if tree.mode == StateMode::HostManaged => Ok(serde_json::json!({
                "checkpoint": tree.current,
                "data": tree.current_state(),
            })),
            _ => Err(mcpl_core::jsonrpc::ErrorObject::new(
                mcpl_core::jsonrpc::ErrorCode(-32006),
                "No host-managed state",
            )
            .with_data(serde_json::json!({"featureSet": fs}))),
        }
    }

    /// Deletes every tree of `server` (an explicit, permanent removal; a disconnect or restart
    /// keeps them).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, StateMode};
    /// use serde_json::json;
    ///
    /// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
    /// trees.register("notes", "notes.store", StateMode::HostManaged, true).unwrap();
    /// trees.register("web", "web.session", StateMode::ServerManaged, true).unwrap();
    /// // The operator removed the notes server for good.
    /// trees.remove_server("notes").unwrap();
    /// assert_eq!(trees.keys().len(), 1);
    /// assert!(trees.stateful_sets("notes").is_empty());
    /// ```
    pub fn remove_server(&self, server: &str) -> Result<(), StoreError> {
        let removed: Vec<TreeKey> = {
            let mut slots = lock(&self.inner.slots);
            let keys: Vec<TreeKey> = slots.keys().filter(|k| k.server == server).cloned().collect();
            for k in &keys {
                slots.remove(k);
            }
            keys
        };
        removed.iter().for_each(|k| self.inner.writer.dirty(k));
        Ok(())
    }
}

/// An error and its causes, for a log field, an alert or a summary.
pub(crate) fn describe_error(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

struct ParsedState {
    checkpoint: String,
    parent: Option<String>,
    data: Option<Value>,
    patch: Option<Vec<PatchOperation>>,
    feature_set: Option<String>,
}

fn parse_state(state: &Value) -> Result<ParsedState, String> {
    let obj = state.as_object().ok_or("state is not an object")?;
    let checkpoint =
        obj.get("checkpoint").and_then(Value::as_str).ok_or("state has no string checkpoint")?;
    let parent = match obj.get("parent") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.clone()),
        Some(_) => return Err("state parent is neither a string nor null".into()),
    };
    let patch = match obj.get("patch") {
        None => None,
        Some(p) => {
            Some(serde_json::from_value(p.clone()).map_err(|e| format!("state patch: {e}"))?)
        }
    };
    let feature_set = match obj.get("featureSet") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("state featureSet is not a string".into()),
    };
    Ok(ParsedState {
        checkpoint: checkpoint.to_owned(),
        parent,
        data: obj.get("data").cloned(),
        patch,
        feature_set,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn current(fs: &str, cp: &str, state: Option<Value>) -> Injection {
        Injection::Current { feature_set: fs.into(), checkpoint: cp.into(), state }
    }

    fn manager() -> CheckpointManager {
        let m = CheckpointManager::open(MemoryCheckpointStore::new(), 50).unwrap();
        m.register("s", "x.post", StateMode::ServerManaged, true).unwrap();
        m.register("s", "x.notifications", StateMode::HostManaged, false).unwrap();
        m.register("s", "x.dm", StateMode::ServerManaged, true).unwrap();
        m.register("s", "x.feed", StateMode::HostManaged, true).unwrap();
        m
    }

    #[test]
    fn several_stateful_sets_never_cross() {
        let m = manager();
        let feed = json!({"checkpoint": "f1", "parent": null, "data": {"cursor": 10}});
        // Tagged with x.feed: recorded there, not on x.post (the incident).
        assert!(
            matches!(m.record_result("s", Some("x.feed"), &feed), RecordOutcome::Recorded { ref feature_set, .. } if feature_set == "x.feed")
        );
        assert!(m.tree("s", "x.post").unwrap().nodes.is_empty());
        // Untagged with data: two host-managed candidates, dropped.
        let untagged = json!({"checkpoint": "u1", "parent": null, "data": {}});
        assert!(matches!(
            m.record_result("s", None, &untagged),
            RecordOutcome::Dropped(DropReason::Ambiguous(_))
        ));
        // An explicit featureSet overrides the tool's tag.
        let explicit = json!({"checkpoint": "p1", "parent": null, "featureSet": "x.post"});
        assert!(
            matches!(m.record_result("s", Some("x.feed"), &explicit), RecordOutcome::Recorded { ref feature_set, .. } if feature_set == "x.post")
        );
        // Injection follows the same rule.
        assert_eq!(
            m.injection("s", Some("x.feed")),
            current("x.feed", "f1", Some(json!({"cursor": 10})))
        );
        assert_eq!(m.injection("s", Some("x.post")), current("x.post", "p1", None));
        assert_eq!(m.injection("s", None), Injection::Nothing);
        assert_eq!(m.injection("s", Some("x.other")), Injection::Nothing);
    }

    #[test]
    fn rollback_bookkeeping() {
        let m = manager();
        m.record_result(
            "s",
            Some("x.feed"),
            &json!({"checkpoint": "a", "parent": null, "data": {"n": 1}}),
        );
        m.record_result("s", Some("x.feed"), &json!({"checkpoint": "b", "parent": "a", "patch": [{"op": "replace", "path": "/n", "value": 2}]}));
        assert!(m.prepare_rollback("s", "x.feed", "a").unwrap());
        assert!(matches!(
            m.prepare_rollback("s", "x.feed", "zz"),
            Err(RollbackError::Checkpoint(MoveError::Unknown(_)))
        ));
        assert!(m.prepare_rollback("s", "x.notifications", "zz").is_err());
        m.commit_rollback("s", "x.feed", "a", None).unwrap();
        assert_eq!(m.injection("s", Some("x.feed")), current("x.feed", "a", Some(json!({"n": 1}))));
        m.mark_pruned("s", "x.feed", "b");
        assert!(matches!(
            m.prepare_rollback("s", "x.feed", "b"),
            Err(RollbackError::Checkpoint(MoveError::Pruned(_)))
        ));
    }

    #[test]
    fn state_update_and_get() {
        let m = manager();
        let ok = m.state_update(
            "s",
            &json!({"featureSet": "x.feed", "checkpoint": "a", "parent": null, "data": {"n": 1}}),
        );
        assert_eq!(ok, json!({"accepted": true}));
        let stale = m.state_update(
            "s",
            &json!({"featureSet": "x.feed", "checkpoint": "b", "parent": "zz", "data": {}}),
        );
        assert_eq!(stale["accepted"], json!(false));
        let both = m.state_update("s", &json!({"featureSet": "x.feed", "checkpoint": "c", "parent": "a", "data": {}, "patch": []}));
        assert_eq!(both["accepted"], json!(false));
        let unknown =
            m.state_update("s", &json!({"featureSet": "nope", "checkpoint": "c", "parent": null}));
        assert_eq!(unknown["accepted"], json!(false));
        assert_eq!(
            m.state_get("s", "x.feed").unwrap(),
            json!({"checkpoint": "a", "data": {"n": 1}})
        );
        let e = m.state_get("s", "x.post").unwrap_err();
        assert_eq!((e.code.0, e.data), (-32006, Some(json!({"featureSet": "x.post"}))));
    }

    #[test]
    fn state_update_and_rollback_bodies_keep_the_budget() {
        let budget = StateBudget::default().with_max_depth(8);
        let m = CheckpointManager::open_with(MemoryCheckpointStore::new(), 50, budget).unwrap();
        m.register("s", "x.feed", StateMode::HostManaged, true).unwrap();
        let deep = (0..20).fold(json!(1), |v, _| json!([v]));
        let refused = m.state_update(
            "s",
            &json!({"featureSet": "x.feed", "checkpoint": "a", "parent": null, "data": deep}),
        );
        assert_eq!(refused["accepted"], json!(false), "{refused}");
        assert!(m.tree("s", "x.feed").unwrap().nodes.is_empty(), "nothing stored");
        let bomb: Vec<Value> = (0..1000)
            .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
            .collect();
        let refused = m.state_update(
            "s",
            &json!({"featureSet": "x.feed", "checkpoint": "b", "parent": null, "patch": bomb}),
        );
        assert_eq!(refused["accepted"], json!(false), "{refused}");
        // A rollback answer carrying an over-budget state is not adopted.
        let ok = m.state_update(
            "s",
            &json!({"featureSet": "x.feed", "checkpoint": "c", "parent": null, "data": {"n": 1}}),
        );
        assert_eq!(ok, json!({"accepted": true}));
        m.commit_rollback("s", "x.feed", "c", Some(deep)).unwrap();
        assert_eq!(m.tree("s", "x.feed").unwrap().current_state(), Some(&json!({"n": 1})));
    }

    #[test]
    fn registration_is_idempotent_and_restart_keeps_state() {
        let dir = std::env::temp_dir().join(format!("mcpl-host-mgr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let m = CheckpointManager::open(FileStore::new(&dir).unwrap(), 50).unwrap();
            m.register("s", "notes", StateMode::HostManaged, true).unwrap();
            m.record_result("s", None, &json!({"checkpoint": "c1", "parent": null, "patch": [{"op": "add", "path": "/a", "value": 1}]}));
            m.record_result("s", None, &json!({"checkpoint": "c2", "parent": "c1", "patch": [{"op": "add", "path": "/b", "value": 2}]}));
        }
        let m = CheckpointManager::open(FileStore::new(&dir).unwrap(), 50).unwrap();
        // Re-registration after the restart resumes the tree.
        m.register("s", "notes", StateMode::HostManaged, true).unwrap();
        assert_eq!(m.injection("s", None), current("notes", "c2", Some(json!({"a": 1, "b": 2}))));
        assert_eq!(m.tree("s", "notes").unwrap().nodes.len(), 2);
        m.remove_server("s").unwrap();
        m.flush();
        let m = CheckpointManager::open(FileStore::new(&dir).unwrap(), 50).unwrap();
        assert!(m.keys().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
