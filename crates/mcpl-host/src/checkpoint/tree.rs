//! One checkpoint tree: the lineage of one (server, feature set), its current pointer, and the
//! state at it.

use std::collections::{BTreeMap, BTreeSet};

use mcpl_core::mcpl::state::{
    BudgetExceeded, PatchError, PatchOperation, StateBudget, patched_within, state_size,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who keeps a feature set's state.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, Injection, MemoryCheckpointStore, StateMode};
/// use serde_json::json;
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// trees.register("db", "db.rows", StateMode::ServerManaged, true).unwrap();
/// trees.record_result("notes", None, &json!({"checkpoint": "n1", "data": {"items": []}}));
/// trees.record_result("db", None, &json!({"checkpoint": "d1"}));
/// // Host-managed: the state travels with the call. Server-managed: only the checkpoint id.
/// assert!(matches!(trees.injection("notes", None), Injection::Current { state: Some(_), .. }));
/// assert!(matches!(trees.injection("db", None), Injection::Current { state: None, .. }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateMode {
    /// The host stores the state and sends it back on each `tools/call` (`params.state`).
    HostManaged,
    /// The server keeps the state; the host tracks checkpoint ids (`params.checkpoint`).
    ServerManaged,
}

/// A checkpoint in a tree.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
/// use serde_json::json;
///
/// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
/// let data = json!({"n": 1});
/// let root = Incoming { checkpoint: "c1", parent: None, data: Some(&data), patch: None };
/// tree.record(root, 1_700_000_000_000).unwrap();
/// tree.record(
///     Incoming { checkpoint: "c2", parent: Some("c1"), data: None, patch: None },
///     1_700_000_000_500,
/// )
/// .unwrap();
/// let node = &tree.nodes["c1"];
/// assert_eq!(node.parent, None);
/// assert_eq!(node.children, ["c2"]);
/// assert_eq!(node.data, Some(json!({"n": 1})));
/// assert_eq!((node.at, node.seq), (1_700_000_000_000, 0));
/// assert!(!node.detached && !node.pruned_by_server);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CheckpointNode {
    /// The parent checkpoint (`None` for a root).
    pub parent: Option<String>,
    /// The children, in the order they were recorded.
    #[serde(default)]
    pub children: Vec<String>,
    /// A full snapshot of the state at this checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// A patch against the parent's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Vec<PatchOperation>>,
    /// When it was recorded (milliseconds since the Unix epoch).
    pub at: u64,
    /// Recording order within the tree (older first); retention prunes the oldest.
    pub seq: u64,
    /// Its parent was unknown when it was recorded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detached: bool,
    /// The server said it no longer has this checkpoint (`-32005`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pruned_by_server: bool,
}

/// A checkpoint as a result (or `state/update`) delivers it.
///
/// # Examples
///
/// ```
/// # use mcpl_core::mcpl::state::PatchOperation;
/// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
/// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
/// use serde_json::json;
///
/// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
/// // A patch against the empty root state.
/// let patch = ops(json!([{"op": "add", "path": "/items", "value": ["milk"]}]));
/// let incoming = Incoming { checkpoint: "c1", parent: None, data: None, patch: Some(&patch) };
/// tree.record(incoming, 0).unwrap();
/// assert_eq!(tree.current_state(), Some(&json!({"items": ["milk"]})));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Incoming<'a> {
    /// The checkpoint id.
    pub checkpoint: &'a str,
    /// Its parent.
    pub parent: Option<&'a str>,
    /// A full snapshot.
    pub data: Option<&'a Value>,
    /// A patch against the parent's state.
    pub patch: Option<&'a [PatchOperation]>,
}

/// What recording did.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointTree, Incoming, Recorded, StateMode};
///
/// let mut tree = CheckpointTree::new(StateMode::ServerManaged, true);
/// let cp = |id, parent| Incoming { checkpoint: id, parent, data: None, patch: None };
/// assert_eq!(tree.record(cp("c1", None), 0), Ok(Recorded::New));
/// assert_eq!(tree.record(cp("c1", None), 1), Ok(Recorded::Repeated)); // idempotent
/// assert_eq!(tree.record(cp("c9", Some("c8")), 2), Ok(Recorded::Detached)); // unknown parent
/// assert!(tree.nodes["c9"].detached);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    /// A new node; `current` moved to it.
    New,
    /// The same id with the same parent was already there; `current` moved to it.
    Repeated,
    /// A new node whose parent is unknown (and not `null`): recorded, marked detached.
    Detached,
}

/// Why a checkpoint was not recorded. Nothing changed.
///
/// # Examples
///
/// ```
/// # use mcpl_core::mcpl::state::PatchOperation;
/// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
/// use mcpl_host::checkpoint::{CheckpointTree, Incoming, RecordError, StateMode};
/// use serde_json::json;
///
/// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
/// let data = json!({"n": 1});
/// tree.record(Incoming { checkpoint: "c1", parent: None, data: Some(&data), patch: None }, 0)
///     .unwrap();
/// // Removing a member that is not there: the patch fails and nothing changes.
/// let patch = ops(json!([{"op": "remove", "path": "/missing"}]));
/// let err = tree
///     .record(
///         Incoming { checkpoint: "c2", parent: Some("c1"), data: None, patch: Some(&patch) },
///         1,
///     )
///     .unwrap_err();
/// assert!(matches!(err, RecordError::Patch { ref checkpoint, .. } if checkpoint == "c2"));
/// assert_eq!(tree.current.as_deref(), Some("c1"));
/// assert!(!tree.nodes.contains_key("c2"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Both `data` and `patch`.
    #[error("checkpoint {0} carries both data and patch")]
    BothDataAndPatch(String),
    /// The id exists under a different parent.
    #[error("checkpoint {checkpoint} already exists under parent {existing:?}, not {claimed:?}")]
    ParentMismatch {
        /// The checkpoint.
        checkpoint: String,
        /// Its recorded parent.
        existing: Option<String>,
        /// The parent claimed now.
        claimed: Option<String>,
    },
    /// A patch against a parent whose state is unknown.
    #[error(
        "checkpoint {checkpoint}: the state of parent {parent} is unknown, so its patch cannot apply"
    )]
    UnknownParentState {
        /// The checkpoint.
        checkpoint: String,
        /// The parent.
        parent: String,
    },
    /// The patch failed; nothing was recorded.
    #[error("checkpoint {checkpoint}: the patch was not applied")]
    Patch {
        /// The checkpoint.
        checkpoint: String,
        /// The failure.
        source: PatchError,
    },
    /// A snapshot (`data`) over the tree's [`StateBudget`]; nothing was recorded.
    #[error("checkpoint {checkpoint}: the snapshot is over the state budget")]
    OverBudget {
        /// The checkpoint.
        checkpoint: String,
        /// The limit crossed.
        source: BudgetExceeded,
    },
}

impl RecordError {
    /// A stable name of the failure.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_core::mcpl::state::PatchOperation;
    /// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
    /// let (data, patch) = (json!({}), ops(json!([])));
    /// let both =
    ///     Incoming { checkpoint: "c1", parent: None, data: Some(&data), patch: Some(&patch) };
    /// assert_eq!(tree.record(both, 0).unwrap_err().kind(), "both_data_and_patch");
    /// let orphan =
    ///     Incoming { checkpoint: "c2", parent: Some("gone"), data: None, patch: Some(&patch) };
    /// assert_eq!(tree.record(orphan, 0).unwrap_err().kind(), "unknown_parent_state");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            RecordError::BothDataAndPatch(_) => "both_data_and_patch",
            RecordError::ParentMismatch { .. } => "parent_mismatch",
            RecordError::UnknownParentState { .. } => "unknown_parent_state",
            RecordError::Patch { .. } => "patch_failed",
            RecordError::OverBudget { .. } => "over_budget",
        }
    }
}

/// The checkpoint tree of one (server, feature set).
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
/// use serde_json::json;
///
/// let mut tree = CheckpointTree::new(StateMode::HostManaged, true);
/// let (v1, v2) = (json!({"draft": "a"}), json!({"draft": "ab"}));
/// tree.record(Incoming { checkpoint: "c1", parent: None, data: Some(&v1), patch: None }, 0)
///     .unwrap();
/// tree.record(Incoming { checkpoint: "c2", parent: Some("c1"), data: Some(&v2), patch: None }, 1)
///     .unwrap();
/// // Go back to c1 and branch from it.
/// tree.move_to("c1").unwrap();
/// let v3 = json!({"draft": "ax"});
/// tree.record(Incoming { checkpoint: "c3", parent: Some("c1"), data: Some(&v3), patch: None }, 2)
///     .unwrap();
/// assert_eq!(tree.nodes["c1"].children, ["c2", "c3"]);
/// assert_eq!(tree.current_state(), Some(&v3));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointTree {
    /// Who keeps the state.
    pub mode: StateMode,
    /// Whether the feature set declares `rollback: true`.
    pub rollback: bool,
    /// The current checkpoint.
    pub current: Option<String>,
    /// The nodes by id.
    pub nodes: BTreeMap<String, CheckpointNode>,
    /// The next `seq`.
    #[serde(default)]
    next_seq: u64,
    /// The state at `current` (host-managed), materialized; not persisted, rebuilt on load.
    #[serde(skip)]
    current_state: Option<Value>,
    /// Reconstruction failed: no state is injected until a snapshot arrives.
    #[serde(skip)]
    degraded: bool,
    /// The limits every state of the tree keeps; not persisted (the host's configuration).
    #[serde(skip)]
    budget: StateBudget,
    /// The stored size of each node's snapshot or patch, as far as computed.
    #[serde(skip)]
    weights: BTreeMap<String, usize>,
}

impl CheckpointTree {
    /// An empty tree.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointTree, StateMode};
    ///
    /// let tree = CheckpointTree::new(StateMode::ServerManaged, true);
    /// assert!(tree.current.is_none() && tree.nodes.is_empty());
    /// assert!(tree.rollback);
    /// ```
    pub fn new(mode: StateMode, rollback: bool) -> Self {
        CheckpointTree {
            mode,
            rollback,
            current: None,
            nodes: BTreeMap::new(),
            next_seq: 0,
            current_state: None,
            degraded: false,
            budget: StateBudget::default(),
            weights: BTreeMap::new(),
        }
    }

    /// Keeps every state of the tree within `budget` (default: [`StateBudget::default`]): a
    /// snapshot over it or a patch crossing it is refused, and a stored state over it cannot be
    /// rebuilt (the tree is degraded instead).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, false)
    ///     .with_budget(StateBudget::default().with_max_depth(2));
    /// let deep = json!({"a": {"b": [1]}});
    /// let err = tree
    ///     .record(Incoming { checkpoint: "c1", parent: None, data: Some(&deep), patch: None }, 0)
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), "over_budget");
    /// assert!(tree.nodes.is_empty());
    /// ```
    #[must_use]
    pub fn with_budget(mut self, budget: StateBudget) -> Self {
        self.budget = budget;
        self
    }

    pub(crate) fn set_budget(&mut self, budget: StateBudget) {
        self.budget = budget;
    }

    /// The state at `id` when it is the materialized current one (no rebuild needed).
    fn current_state_of(&self, id: &str) -> Option<Option<Value>> {
        let usable = !self.degraded && self.current.as_deref() == Some(id);
        usable.then(|| self.current_state.clone())
    }

    /// The state at `current` (host-managed trees; `None` before any state).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
    /// assert_eq!(tree.current_state(), None); // before any state
    /// let data = json!({"items": ["milk"]});
    /// tree.record(Incoming { checkpoint: "c1", parent: None, data: Some(&data), patch: None }, 0)
    ///     .unwrap();
    /// assert_eq!(tree.current_state(), Some(&data));
    /// ```
    pub fn current_state(&self) -> Option<&Value> {
        if self.degraded { None } else { self.current_state.as_ref() }
    }

    /// Whether reconstructing the current state failed (see [`CheckpointTree::materialize`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::CheckpointTree;
    /// use serde_json::json;
    ///
    /// // A tree loaded from a store whose current checkpoint patches a parent that is gone.
    /// let mut tree: CheckpointTree = serde_json::from_value(json!({
    ///     "mode": "host-managed", "rollback": false, "current": "c2",
    ///     "nodes": {"c2": {"parent": "c1", "patch": [{"op": "add", "path": "/n", "value": 2}],
    ///                      "at": 0, "seq": 1}}
    /// })).unwrap();
    /// assert!(tree.materialize().is_err());
    /// assert!(tree.is_degraded());
    /// assert_eq!(tree.current_state(), None); // nothing is injected from a degraded tree
    /// ```
    pub fn is_degraded(&self) -> bool {
        self.degraded
    }

    /// Rebuilds the current state from the nodes (after loading). On failure the tree is marked
    /// degraded and the error returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointTree, RecordError};
    /// use serde_json::json;
    ///
    /// // Trees are stored without their materialized state; loading rebuilds it.
    /// let stored = json!({
    ///     "mode": "host-managed", "rollback": false, "current": "c2",
    ///     "nodes": {
    ///         "c1": {"parent": null, "children": ["c2"], "data": {"n": 1}, "at": 0, "seq": 0},
    ///         "c2": {"parent": "c1", "patch": [{"op": "replace", "path": "/n", "value": 2}],
    ///                "at": 0, "seq": 1}
    ///     }
    /// });
    /// let mut tree: CheckpointTree = serde_json::from_value(stored).unwrap();
    /// assert_eq!(tree.current_state(), None);
    /// tree.materialize().unwrap();
    /// assert_eq!(tree.current_state(), Some(&json!({"n": 2})));
    ///
    /// // A tree loaded from a store whose current checkpoint patches a parent that is gone.
    /// let mut broken: CheckpointTree = serde_json::from_value(json!({
    ///     "mode": "host-managed", "rollback": false, "current": "c2",
    ///     "nodes": {"c2": {"parent": "c1", "patch": [{"op": "add", "path": "/n", "value": 2}],
    ///                      "at": 0, "seq": 1}}
    /// })).unwrap();
    /// assert!(matches!(broken.materialize(), Err(RecordError::UnknownParentState { .. })));
    /// ```
    pub fn materialize(&mut self) -> Result<(), RecordError> {
        let Some(current) = self.current.clone() else {
            self.current_state = None;
            self.degraded = false;
            return Ok(());
        };
        match self.state_at(&current) {
            Ok(state) => {
                self.current_state = state;
                self.degraded = false;
                Ok(())
            }
            Err(e) => {
                self.current_state = None;
                self.degraded = true;
                Err(e)
            }
        }
    }

    /// The state at checkpoint `id`: from the nearest ancestor with a snapshot, patches applied
    /// forward (a root patch applies to `{}`; opaque checkpoints leave the state as it was).
    /// `Ok(None)` when no ancestor carries any state.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_core::mcpl::state::PatchOperation;
    /// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
    /// let base = json!({"items": []});
    /// tree.record(Incoming { checkpoint: "c1", parent: None, data: Some(&base), patch: None }, 0)
    ///     .unwrap();
    /// let add = ops(json!([{"op": "add", "path": "/items/-", "value": "milk"}]));
    /// tree.record(
    ///     Incoming { checkpoint: "c2", parent: Some("c1"), data: None, patch: Some(&add) },
    ///     1,
    /// )
    /// .unwrap();
    /// // An opaque checkpoint keeps its parent's state.
    /// tree.record(Incoming { checkpoint: "c3", parent: Some("c2"), data: None, patch: None }, 2)
    ///     .unwrap();
    /// assert_eq!(tree.state_at("c1").unwrap(), Some(json!({"items": []})));
    /// assert_eq!(tree.state_at("c3").unwrap(), Some(json!({"items": ["milk"]})));
    /// ```
    pub fn state_at(&self, id: &str) -> Result<Option<Value>, RecordError> {
        let mut chain = Vec::new();
        let mut cursor = Some(id.to_owned());
        let mut seen = BTreeSet::new();
        let mut base: Option<Value> = None;
        while let Some(at) = cursor {
            if !seen.insert(at.clone()) {
                break; // a cycle cannot be built by `record`, but never loop on a corrupt file
            }
            let Some(node) = self.nodes.get(&at) else {
                // An unknown ancestor: only fine if nothing below needs its state.
                if chain.iter().any(|n: &&CheckpointNode| n.patch.is_some()) {
                    return Err(RecordError::UnknownParentState {
                        checkpoint: id.to_owned(),
                        parent: at,
                    });
                }
                break;
            };
            if let Some(data) = &node.data {
                self.budget
                    .check(data)
                    .map_err(|source| RecordError::OverBudget { checkpoint: at.clone(), source })?;
                base = Some(data.clone());
                break;
            }
            chain.push(node);
            cursor = node.parent.clone();
        }
        let mut state = base;
        for node in chain.into_iter().rev() {
            if let Some(patch) = &node.patch {
                let doc = state.take().unwrap_or_else(|| Value::Object(Map::new()));
                let doc = patched_within(doc, patch, &self.budget)
                    .map_err(|source| RecordError::Patch { checkpoint: id.to_owned(), source })?;
                state = Some(doc);
            }
        }
        Ok(state)
    }

    /// Records a checkpoint and moves `current` to it, atomically: on error nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_core::mcpl::state::PatchOperation;
    /// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, Recorded, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
    /// let patch = ops(json!([{"op": "add", "path": "/n", "value": 1}]));
    /// let first = Incoming { checkpoint: "c1", parent: None, data: None, patch: Some(&patch) };
    /// assert_eq!(tree.record(first.clone(), 0), Ok(Recorded::New));
    /// // The same result delivered twice (a retried call) does not fork the tree.
    /// assert_eq!(tree.record(first, 5), Ok(Recorded::Repeated));
    /// assert_eq!(tree.nodes.len(), 1);
    /// // The same id under another parent is refused.
    /// let other = Incoming { checkpoint: "c1", parent: Some("x"), data: None, patch: None };
    /// assert_eq!(tree.record(other, 6).unwrap_err().kind(), "parent_mismatch");
    /// ```
    pub fn record(&mut self, cp: Incoming<'_>, now_ms: u64) -> Result<Recorded, RecordError> {
        let id = cp.checkpoint.to_owned();
        if cp.data.is_some() && cp.patch.is_some() {
            return Err(RecordError::BothDataAndPatch(id));
        }
        let parent = cp.parent.map(str::to_owned);
        if let Some(existing) = self.nodes.get(&id) {
            if existing.parent != parent {
                return Err(RecordError::ParentMismatch {
                    checkpoint: id,
                    existing: existing.parent.clone(),
                    claimed: parent,
                });
            }
            let state = self.state_at(&id)?;
            self.current = Some(id);
            self.current_state = state;
            self.degraded = false;
            return Ok(Recorded::Repeated);
        }
        let known_parent = parent.as_ref().is_none_or(|p| self.nodes.contains_key(p));
        // The parent's state: the materialized current one when the parent is current (the
        // usual case), else rebuilt from the nearest snapshot.
        let parent_state = |p: &str| match self.current_state_of(p) {
            Some(state) => Ok(state),
            None => self.state_at(p),
        };
        let state = match (cp.data, cp.patch) {
            (Some(data), _) => {
                self.budget
                    .check(data)
                    .map_err(|source| RecordError::OverBudget { checkpoint: id.clone(), source })?;
                Some(data.clone())
            }
            (None, Some(patch)) => {
                let base = match &parent {
                    None => Value::Object(Map::new()),
                    Some(p) if known_parent => {
                        parent_state(p)?.unwrap_or_else(|| Value::Object(Map::new()))
                    }
                    Some(p) => {
                        return Err(RecordError::UnknownParentState {
                            checkpoint: id,
                            parent: p.clone(),
                        });
                    }
                };
                let doc = patched_within(base, patch, &self.budget)
                    .map_err(|source| RecordError::Patch { checkpoint: id.clone(), source })?;
                Some(doc)
            }
            // Opaque: lineage only; the state is the parent's.
            (None, None) => match &parent {
                Some(p) if known_parent => parent_state(p)?,
                _ => None,
            },
        };
        let node = CheckpointNode {
            parent: parent.clone(),
            children: Vec::new(),
            data: cp.data.cloned(),
            patch: cp.patch.map(<[PatchOperation]>::to_vec),
            at: now_ms,
            seq: self.next_seq,
            detached: !known_parent,
            pruned_by_server: false,
        };
        self.next_seq += 1;
        if let Some(p) = &parent
            && let Some(pn) = self.nodes.get_mut(p)
        {
            pn.children.push(id.clone());
        }
        self.nodes.insert(id.clone(), node);
        self.current = Some(id);
        self.current_state = state;
        self.degraded = false;
        Ok(if known_parent { Recorded::New } else { Recorded::Detached })
    }

    /// Moves `current` to `id` and rebuilds the state there. The node must exist and not be
    /// pruned; on error nothing changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, MoveError, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, true);
    /// let (a, b) = (json!({"v": "a"}), json!({"v": "b"}));
    /// tree.record(Incoming { checkpoint: "c1", parent: None, data: Some(&a), patch: None }, 0)
    ///     .unwrap();
    /// tree.record(
    ///     Incoming { checkpoint: "c2", parent: Some("c1"), data: Some(&b), patch: None },
    ///     1,
    /// )
    /// .unwrap();
    /// tree.move_to("c1").unwrap();
    /// assert_eq!(tree.current_state(), Some(&a));
    /// assert_eq!(tree.move_to("c7"), Err(MoveError::Unknown("c7".into())));
    /// assert_eq!(tree.current.as_deref(), Some("c1")); // unchanged
    /// ```
    pub fn move_to(&mut self, id: &str) -> Result<(), MoveError> {
        match self.nodes.get(id) {
            None => return Err(MoveError::Unknown(id.to_owned())),
            Some(n) if n.pruned_by_server => return Err(MoveError::Pruned(id.to_owned())),
            Some(_) => {}
        }
        let state = self.state_at(id).map_err(MoveError::State)?;
        self.current = Some(id.to_owned());
        self.current_state = state;
        self.degraded = false;
        Ok(())
    }

    /// Adopts `data` as the state at `id` (a rollback result carrying data).
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_core::mcpl::state::PatchOperation;
    /// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, true);
    /// let patch = ops(json!([{"op": "add", "path": "/n", "value": 1}]));
    /// tree.record(
    ///     Incoming { checkpoint: "c1", parent: None, data: None, patch: Some(&patch) },
    ///     0,
    /// )
    /// .unwrap();
    /// // The server's rollback answer carried the authoritative state at c1.
    /// tree.adopt_state("c1", json!({"n": 1, "extra": true})).unwrap();
    /// assert_eq!(tree.current_state(), Some(&json!({"n": 1, "extra": true})));
    /// assert!(tree.nodes["c1"].patch.is_none()); // now a snapshot
    /// ```
    ///
    /// # Errors
    ///
    /// [`RecordError::OverBudget`] when `data` is over the tree's budget; nothing changes.
    pub fn adopt_state(&mut self, id: &str, data: Value) -> Result<(), RecordError> {
        self.budget
            .check(&data)
            .map_err(|source| RecordError::OverBudget { checkpoint: id.to_owned(), source })?;
        if let Some(n) = self.nodes.get_mut(id) {
            n.data = Some(data.clone());
            n.patch = None;
            self.weights.remove(id);
        }
        if self.current.as_deref() == Some(id) {
            self.current_state = Some(data);
            self.degraded = false;
        }
        Ok(())
    }

    /// Marks `id` as gone on the server's side (a rollback to it answered `-32005`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, MoveError, StateMode};
    ///
    /// let mut tree = CheckpointTree::new(StateMode::ServerManaged, true);
    /// tree.record(Incoming { checkpoint: "c1", parent: None, data: None, patch: None }, 0)
    ///     .unwrap();
    /// tree.record(Incoming { checkpoint: "c2", parent: Some("c1"), data: None, patch: None }, 1)
    ///     .unwrap();
    /// // A rollback to c1 answered -32005: the server no longer has it.
    /// tree.mark_pruned("c1");
    /// assert_eq!(tree.move_to("c1"), Err(MoveError::Pruned("c1".into())));
    /// assert_eq!(tree.current.as_deref(), Some("c2"));
    /// ```
    pub fn mark_pruned(&mut self, id: &str) {
        if let Some(n) = self.nodes.get_mut(id) {
            n.pruned_by_server = true;
        }
    }

    /// Keeps at most `cap` nodes, and at most sixteen times the budget's state size in stored
    /// snapshots and patches: prunes the oldest nodes that are neither `current` nor one of its
    /// ancestors back to the nearest snapshot (when that chain alone is over either limit,
    /// `current` gets a snapshot of its own first). Children of a pruned node keep their state:
    /// a child that carried a patch gets its materialized snapshot first. Returns the pruned ids.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_core::mcpl::state::PatchOperation;
    /// # fn ops(v: serde_json::Value) -> Vec<PatchOperation> { serde_json::from_value(v).unwrap() }
    /// use mcpl_host::checkpoint::{CheckpointTree, Incoming, StateMode};
    /// use serde_json::json;
    ///
    /// let mut tree = CheckpointTree::new(StateMode::HostManaged, false);
    /// let root = json!({"n": 0});
    /// tree.record(Incoming { checkpoint: "c0", parent: None, data: Some(&root), patch: None }, 0)
    ///     .unwrap();
    /// for i in 1..=3 {
    ///     let patch = ops(json!([{"op": "replace", "path": "/n", "value": i}]));
    ///     let (id, parent) = (format!("c{i}"), format!("c{}", i - 1));
    ///     let cp = Incoming {
    ///         checkpoint: &id,
    ///         parent: Some(&parent),
    ///         data: None,
    ///         patch: Some(&patch),
    ///     };
    ///     tree.record(cp, i).unwrap();
    /// }
    /// tree.move_to("c1").unwrap();
    /// // Keep two nodes: c1 (current) and its snapshot ancestor c0 are protected.
    /// assert_eq!(tree.prune(2), ["c2", "c3"]);
    /// assert_eq!(tree.nodes.keys().collect::<Vec<_>>(), ["c0", "c1"]);
    /// assert_eq!(tree.current_state(), Some(&json!({"n": 1})));
    /// ```
    pub fn prune(&mut self, cap: usize) -> Vec<String> {
        let cap = cap.max(1);
        let max_bytes = self.max_bytes();
        let mut protected = self.protected();
        let over = |tree: &mut Self, protected: &BTreeSet<String>| {
            (tree.nodes.len() > cap && protected.len() > cap)
                || tree.bytes_of(protected.iter()) > max_bytes
        };
        if over(self, &protected) {
            // The current checkpoint's chain of patches alone is over the cap: give it a
            // snapshot of its own, so its ancestors can go.
            if let (Some(id), Some(state)) = (self.current.clone(), self.current_state()) {
                let state = state.clone();
                if let Some(node) = self.nodes.get_mut(&id) {
                    node.data = Some(state);
                    node.patch = None;
                }
                self.weights.remove(&id);
                protected = self.protected();
            }
        }
        let mut candidates: Vec<(u64, String)> = self
            .nodes
            .iter()
            .filter(|(id, _)| !protected.contains(*id))
            .map(|(id, n)| (n.seq, id.clone()))
            .collect();
        candidates.sort();
        let mut pruned = Vec::new();
        for (_, id) in candidates {
            if self.nodes.len() <= cap && self.bytes() <= max_bytes {
                break;
            }
            let children = self.nodes.get(&id).map(|n| n.children.clone()).unwrap_or_default();
            // Children that depend on this node's state get a snapshot of their own first.
            let mut snapshots = Vec::new();
            for child in &children {
                let needs = self.nodes.get(child).is_some_and(|c| c.data.is_none());
                if needs {
                    match self.state_at(child) {
                        Ok(Some(state)) => snapshots.push((child.clone(), state)),
                        Ok(None) => {}
                        Err(_) => {
                            snapshots.clear();
                            break;
                        }
                    }
                }
            }
            for (child, state) in snapshots {
                if let Some(c) = self.nodes.get_mut(&child) {
                    c.data = Some(state);
                    c.patch = None;
                }
                self.weights.remove(&child);
            }
            let parent = self.nodes.get(&id).and_then(|n| n.parent.clone());
            if let Some(p) = parent.and_then(|p| self.nodes.get_mut(&p)) {
                p.children.retain(|c| *c != id);
            }
            self.nodes.remove(&id);
            self.weights.remove(&id);
            pruned.push(id);
        }
        pruned
    }

    /// The stored snapshots and patches a tree may hold: sixteen states of the budget's size.
    fn max_bytes(&self) -> usize {
        self.budget.max_size().saturating_mul(16)
    }

    /// The stored size of every node.
    fn bytes(&mut self) -> usize {
        let ids: Vec<String> = self.nodes.keys().cloned().collect();
        self.bytes_of(ids.iter())
    }

    fn bytes_of<'a>(&mut self, ids: impl Iterator<Item = &'a String>) -> usize {
        let mut total = 0usize;
        for id in ids {
            let weight = match self.weights.get(id) {
                Some(w) => *w,
                None => {
                    // The ids count too (a node's own, its parent's, and its entry among
                    // its parent's children): a server chooses them.
                    let w = self.nodes.get(id).map_or(0, |n| {
                        let parent = n.parent.as_ref().map_or(0, String::len);
                        node_bytes(n).saturating_add(2 * id.len() + parent)
                    });
                    self.weights.insert(id.clone(), w);
                    w
                }
            };
            total = total.saturating_add(weight);
        }
        total
    }

    /// The current checkpoint and the ancestors its state is rebuilt from: back to the nearest
    /// snapshot, or none when the chain carries no state at all (opaque checkpoints).
    fn protected(&self) -> BTreeSet<String> {
        let mut protected = BTreeSet::new();
        let mut carries_state = false;
        let mut cursor = self.current.clone();
        while let Some(at) = cursor {
            let Some(node) = self.nodes.get(&at) else { break };
            if !protected.insert(at.clone()) {
                break;
            }
            carries_state |= node.data.is_some() || node.patch.is_some();
            if node.data.is_some() {
                break;
            }
            cursor = node.parent.clone();
        }
        if !carries_state {
            protected.retain(|id| self.current.as_deref() == Some(id.as_str()));
        }
        protected
    }
}

/// The stored size of a node's snapshot or patch (its state's serialized length, about).
fn node_bytes(node: &CheckpointNode) -> usize {
    let size = |v: &Value| -> usize { state_size(v) };
    let data = node.data.as_ref().map_or(0, size);
    let patch: usize = node
        .patch
        .iter()
        .flatten()
        .map(|op| {
            let (paths, value) = match op {
                PatchOperation::Add { path, value }
                | PatchOperation::Replace { path, value }
                | PatchOperation::Test { path, value } => (path.len(), Some(value)),
                PatchOperation::Remove { path } => (path.len(), None),
                PatchOperation::Move { from, path } | PatchOperation::Copy { from, path } => {
                    (from.len() + path.len(), None)
                }
            };
            paths + 32 + value.map_or(0, size)
        })
        .sum();
    data.saturating_add(patch)
}

/// Why `current` could not move.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointTree, MoveError};
/// use serde_json::json;
///
/// // A tree loaded from a store whose current checkpoint patches a parent that is gone.
/// let mut tree: CheckpointTree = serde_json::from_value(json!({
///     "mode": "host-managed", "rollback": false, "current": "c2",
///     "nodes": {"c2": {"parent": "c1", "patch": [{"op": "add", "path": "/n", "value": 2}],
///                      "at": 0, "seq": 1}}
/// })).unwrap();
/// // The node exists but its state cannot be rebuilt: the move is refused.
/// assert!(matches!(tree.move_to("c2"), Err(MoveError::State(_))));
/// assert_eq!(tree.move_to("c1"), Err(MoveError::Unknown("c1".into())));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MoveError {
    /// No such checkpoint in the tree.
    #[error("unknown checkpoint {0}")]
    Unknown(String),
    /// The server no longer has it.
    #[error("checkpoint {0} was pruned by the server")]
    Pruned(String),
    /// Its state cannot be rebuilt.
    #[error(transparent)]
    State(RecordError),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ops(v: Value) -> Vec<PatchOperation> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn errors_name_their_cause_once() {
        use std::error::Error as _;
        let source = BudgetExceeded::Depth(4);
        let cause = source.to_string();
        let error = RecordError::OverBudget { checkpoint: "c1".into(), source };
        assert!(!error.to_string().contains(&cause), "{error}");
        assert_eq!(error.source().unwrap().to_string(), cause);
        let moved = MoveError::State(error.clone());
        assert_eq!(moved.to_string(), error.to_string());
        assert_eq!(moved.source().unwrap().to_string(), cause);
    }

    fn data<'a>(id: &'a str, parent: Option<&'a str>, d: &'a Value) -> Incoming<'a> {
        Incoming { checkpoint: id, parent, data: Some(d), patch: None }
    }

    fn patch<'a>(id: &'a str, parent: Option<&'a str>, p: &'a [PatchOperation]) -> Incoming<'a> {
        Incoming { checkpoint: id, parent, data: None, patch: Some(p) }
    }

    #[test]
    fn patches_apply_to_the_parents_state_and_branch() {
        let mut t = CheckpointTree::new(StateMode::HostManaged, true);
        let d = json!({"items": ["a"]});
        t.record(data("c1", None, &d), 1).unwrap();
        let p2 = ops(json!([{"op": "add", "path": "/items/-", "value": "b"}]));
        t.record(patch("c2", Some("c1"), &p2), 2).unwrap();
        assert_eq!(t.current_state(), Some(&json!({"items": ["a", "b"]})));
        // Roll back to c1, then a new patch against c1 makes a sibling branch.
        t.move_to("c1").unwrap();
        let p3 = ops(json!([{"op": "copy", "from": "/items/0", "path": "/first"}]));
        t.record(patch("c3", Some("c1"), &p3), 3).unwrap();
        assert_eq!(t.current_state(), Some(&json!({"items": ["a"], "first": "a"})));
        assert_eq!(t.nodes["c1"].children, ["c2", "c3"]);
        // A patch against c2 while current is c3 uses c2's state, not the current one.
        let p4 = ops(json!([{"op": "move", "from": "/items/1", "path": "/second"}]));
        t.record(patch("c4", Some("c2"), &p4), 4).unwrap();
        assert_eq!(t.current_state(), Some(&json!({"items": ["a"], "second": "b"})));
    }

    #[test]
    fn a_failing_patch_records_nothing() {
        let mut t = CheckpointTree::new(StateMode::HostManaged, true);
        let d = json!({"n": 1});
        t.record(data("c1", None, &d), 1).unwrap();
        let bad = ops(
            json!([{"op": "add", "path": "/m", "value": 2}, {"op": "test", "path": "/n", "value": 2}]),
        );
        let before = t.clone();
        assert_eq!(t.record(patch("c2", Some("c1"), &bad), 2).unwrap_err().kind(), "patch_failed");
        assert_eq!(t, before);
        assert_eq!(t.current.as_deref(), Some("c1"));
    }

    #[test]
    fn repeats_mismatches_unknown_parents() {
        let mut t = CheckpointTree::new(StateMode::HostManaged, false);
        let d = json!(1);
        t.record(data("c1", None, &d), 1).unwrap();
        t.record(data("c2", Some("c1"), &d), 2).unwrap();
        assert_eq!(t.record(data("c2", Some("c1"), &d), 3).unwrap(), Recorded::Repeated);
        assert_eq!(t.nodes["c1"].children, ["c2"], "no duplicate child");
        assert_eq!(t.record(data("c2", None, &d), 3).unwrap_err().kind(), "parent_mismatch");
        assert_eq!(t.record(data("c9", Some("nope"), &d), 4).unwrap(), Recorded::Detached);
        assert!(t.nodes["c9"].detached);
        let p = ops(json!([]));
        assert_eq!(
            t.record(patch("c10", Some("nope"), &p), 5).unwrap_err().kind(),
            "unknown_parent_state"
        );
        let both = Incoming { checkpoint: "c11", parent: None, data: Some(&d), patch: Some(&p) };
        assert_eq!(t.record(both, 6).unwrap_err().kind(), "both_data_and_patch");
    }

    #[test]
    fn a_root_patch_applies_to_an_empty_object_and_opaque_keeps_state() {
        let mut t = CheckpointTree::new(StateMode::HostManaged, false);
        let p = ops(json!([{"op": "add", "path": "/a", "value": 1}]));
        t.record(patch("c1", None, &p), 1).unwrap();
        t.record(Incoming { checkpoint: "c2", parent: Some("c1"), data: None, patch: None }, 2)
            .unwrap();
        assert_eq!(t.current_state(), Some(&json!({"a": 1})));
    }

    #[test]
    fn reload_rebuilds_the_state() {
        let mut t = CheckpointTree::new(StateMode::HostManaged, true);
        let d = json!({"a": [1]});
        t.record(data("c1", None, &d), 1).unwrap();
        let p = ops(json!([{"op": "add", "path": "/a/-", "value": 2}]));
        t.record(patch("c2", Some("c1"), &p), 2).unwrap();
        let text = serde_json::to_string(&t).unwrap();
        let mut loaded: CheckpointTree = serde_json::from_str(&text).unwrap();
        assert_eq!(loaded.current_state(), None);
        loaded.materialize().unwrap();
        assert_eq!(loaded.current_state(), Some(&json!({"a": [1, 2]})));
        // A corrupt tree degrades instead of injecting a wrong state.
        loaded.nodes.remove("c1");
        assert!(loaded.materialize().is_err());
        assert!(loaded.is_degraded());
        assert_eq!(loaded.current_state(), None);
    }

    #[test]
    fn pruning_keeps_current_and_what_it_needs() {
        let mut t = CheckpointTree::new(StateMode::HostManaged, true);
        let d = json!({"n": 0});
        t.record(data("c0", None, &d), 0).unwrap();
        let mut parent = "c0".to_owned();
        for i in 1..6 {
            let p = ops(json!([{"op": "replace", "path": "/n", "value": i}]));
            let id = format!("c{i}");
            t.record(patch(&id, Some(&parent), &p), i).unwrap();
            parent = id;
        }
        // Branch: back to c2 and a sibling.
        t.move_to("c2").unwrap();
        let p = ops(json!([{"op": "add", "path": "/b", "value": true}]));
        t.record(patch("b1", Some("c2"), &p), 9).unwrap();
        let pruned = t.prune(3);
        assert!(!pruned.is_empty());
        assert!(
            t.nodes.len() <= 3
                || t.nodes.keys().all(|k| ["b1", "c2", "c1", "c0"].contains(&k.as_str()))
        );
        assert_eq!(t.current.as_deref(), Some("b1"));
        t.materialize().unwrap();
        assert_eq!(t.current_state(), Some(&json!({"n": 2, "b": true})));
        // Surviving nodes elsewhere still rebuild (they got snapshots).
        for id in t.nodes.keys().cloned().collect::<Vec<_>>() {
            t.state_at(&id).unwrap();
        }
    }

    #[test]
    fn a_chain_of_patches_alone_cannot_escape_retention() {
        // Every checkpoint is a patch on the one before: all are ancestors of `current`.
        let mut t = CheckpointTree::new(StateMode::HostManaged, false);
        let mut parent: Option<String> = None;
        for i in 0..50 {
            let p = ops(json!([{"op": "add", "path": format!("/k{i}"), "value": i}]));
            let id = format!("c{i}");
            t.record(patch(&id, parent.as_deref(), &p), i).unwrap();
            t.prune(10);
            assert!(t.nodes.len() <= 10, "{} nodes after {i}", t.nodes.len());
            parent = Some(id);
        }
        t.materialize().unwrap();
        assert_eq!(t.current_state().unwrap().as_object().unwrap().len(), 50);
    }

    #[test]
    fn a_tree_holds_at_most_sixteen_states_worth_of_snapshots_and_patches() {
        let budget = StateBudget::default().with_max_size(1000);
        let mut t = CheckpointTree::new(StateMode::HostManaged, false).with_budget(budget);
        let mut parent: Option<String> = None;
        for i in 0..200 {
            let d = json!({"text": "x".repeat(900), "i": i});
            let id = format!("c{i}");
            t.record(data(&id, parent.as_deref(), &d), i).unwrap();
            // Patches count too.
            let p = ops(json!([{"op": "replace", "path": "/text", "value": "y".repeat(900)}]));
            let pid = format!("p{i}");
            t.record(patch(&pid, Some(&id), &p), i).unwrap();
            t.prune(1000);
            assert!(t.bytes() <= 16 * 1000, "{} bytes after {i}", t.bytes());
            parent = Some(pid);
        }
        assert!(t.nodes.len() < 40, "{} nodes", t.nodes.len());
        t.materialize().unwrap();
        assert_eq!(t.current_state().unwrap()["i"], 199);
    }

    #[test]
    fn long_checkpoint_ids_count_against_the_size_cap() {
        let budget = StateBudget::default().with_max_size(1000);
        let mut t = CheckpointTree::new(StateMode::ServerManaged, false).with_budget(budget);
        let mut parent: Option<String> = None;
        for i in 0..100 {
            let id = format!("{i}-{}", "x".repeat(2000));
            t.record(
                Incoming { checkpoint: &id, parent: parent.as_deref(), data: None, patch: None },
                i,
            )
            .unwrap();
            t.prune(1000);
            parent = Some(id);
        }
        assert!(t.nodes.len() <= 4, "{} nodes of 2 KB ids", t.nodes.len());
    }

    #[test]
    fn move_errors() {
        let mut t = CheckpointTree::new(StateMode::ServerManaged, true);
        t.record(Incoming { checkpoint: "a", parent: None, data: None, patch: None }, 1).unwrap();
        assert!(matches!(t.move_to("zz"), Err(MoveError::Unknown(_))));
        t.mark_pruned("a");
        assert!(matches!(t.move_to("a"), Err(MoveError::Pruned(_))));
    }
}
