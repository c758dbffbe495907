//! The host's per-connection record of tool state (spec §8): per feature set, the latest
//! checkpoint and, when the server ships state (host-managed), its materialized value.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;

use super::budget::{BudgetExceeded, StateBudget};
use super::patch::{PatchError, apply_patch_within};
use super::{StateCheckpoint, StateForm, StateRequestFields};

/// How many checkpoints per feature set a [`StateTracker`] keeps by default (the parents a
/// later patch may refer to, and rollback targets).
pub const DEFAULT_HISTORY: usize = 64;

/// Why a checkpoint's state could not be materialized. The checkpoint is still recorded, as
/// opaque (server-managed), so the next call continues from it by reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The patch names a parent whose state this tracker does not hold.
    #[error("checkpoint {checkpoint:?}: parent {parent:?} has no known state to patch")]
    UnknownParent {
        /// The new checkpoint.
        checkpoint: String,
        /// Its parent.
        parent: Option<String>,
    },
    /// The checkpoint id is already recorded under a different parent; nothing was recorded.
    #[error("checkpoint {checkpoint:?} is already recorded under another parent")]
    ConflictingParent {
        /// The checkpoint.
        checkpoint: String,
    },
    /// The patch failed against the parent's state (atomically: nothing was applied).
    #[error("checkpoint {checkpoint:?}: the patch was not applied")]
    Patch {
        /// The new checkpoint.
        checkpoint: String,
        /// The failure.
        #[source]
        source: PatchError,
    },
    /// The snapshot (`data`) crosses the tracker's [`StateBudget`]; it was not kept.
    #[error("checkpoint {checkpoint:?}: the snapshot is over the state budget")]
    OverBudget {
        /// The new checkpoint.
        checkpoint: String,
        /// The limit crossed.
        #[source]
        source: BudgetExceeded,
    },
}

impl StateError {
    /// A stable code: `unknown_parent`, `conflicting_parent`, `patch_failed` or
    /// `over_budget`.
    pub fn kind(&self) -> &'static str {
        match self {
            StateError::UnknownParent { .. } => "unknown_parent",
            StateError::ConflictingParent { .. } => "conflicting_parent",
            StateError::Patch { .. } => "patch_failed",
            StateError::OverBudget { .. } => "over_budget",
        }
    }
}

/// One recorded checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The checkpoint id.
    pub id: String,
    /// Its parent.
    pub parent: Option<String>,
    /// The materialized state if host-managed; `None` if the state stays in the server.
    pub state: Option<Value>,
}

/// Per feature set: the latest checkpoint and a bounded history of materialized states.
///
/// ```
/// use mcpl_core::mcpl::state::{StateCheckpoint, StateTracker};
/// use serde_json::json;
///
/// let mut tracker = StateTracker::new();
/// let first: StateCheckpoint = serde_json::from_value(json!(
///     {"checkpoint": "a", "parent": null, "data": {"n": 1}})).unwrap();
/// tracker.record("editor", &first).unwrap();
/// let next: StateCheckpoint = serde_json::from_value(json!({"checkpoint": "b", "parent": "a",
///     "patch": [{"op": "replace", "path": "/n", "value": 2}]})).unwrap();
/// tracker.record("editor", &next).unwrap();
/// // The next tools/call carries the full state (host-managed).
/// assert_eq!(tracker.request_fields("editor").state, Some(json!({"n": 2})));
/// ```
#[derive(Debug, Clone)]
pub struct StateTracker {
    sets: BTreeMap<String, VecDeque<Checkpoint>>,
    history: usize,
    budget: StateBudget,
}

impl Default for StateTracker {
    fn default() -> Self {
        StateTracker::new()
    }
}

impl StateTracker {
    /// A tracker keeping [`DEFAULT_HISTORY`] checkpoints per feature set.
    pub fn new() -> StateTracker {
        StateTracker::with_history(DEFAULT_HISTORY)
    }

    /// A tracker keeping at most `history` (at least 1) checkpoints per feature set.
    pub fn with_history(history: usize) -> StateTracker {
        StateTracker {
            sets: BTreeMap::new(),
            history: history.max(1),
            budget: StateBudget::default(),
        }
    }

    /// Keeps every materialized state within `budget` (default: [`StateBudget::default`]): a
    /// snapshot over it, or a patch crossing it, is not kept and the checkpoint is recorded as
    /// opaque.
    ///
    /// ```
    /// use mcpl_core::mcpl::state::{StateBudget, StateCheckpoint, StateTracker};
    /// use serde_json::json;
    ///
    /// let mut tracker = StateTracker::new().with_budget(StateBudget::default().with_max_size(64));
    /// let big = StateCheckpoint::snapshot("a", None, json!({"text": "x".repeat(100)}));
    /// assert_eq!(tracker.record("notes", &big).unwrap_err().kind(), "over_budget");
    /// // The checkpoint is kept by reference only.
    /// assert_eq!(tracker.request_fields("notes").checkpoint.as_deref(), Some("a"));
    /// assert_eq!(tracker.request_fields("notes").state, None);
    /// ```
    #[must_use]
    pub fn with_budget(mut self, budget: StateBudget) -> StateTracker {
        self.budget = budget;
        self
    }

    /// The budget every materialized state keeps.
    pub fn budget(&self) -> &StateBudget {
        &self.budget
    }

    /// Records the `state` of a `tools/call` result for `feature_set` and makes it the latest.
    ///
    /// A snapshot (`data`) is stored as is (when `patch` is present too, `data` wins and a
    /// defect is logged); a patch is applied atomically to the parent's state (to `{}` when
    /// `parent` is null); neither is an opaque checkpoint. Recording a kept id again with the
    /// same parent only makes it the latest.
    ///
    /// # Errors
    ///
    /// [`StateError`] when a patch cannot be applied (the checkpoint is then recorded as
    /// opaque), or when the id is already kept under a different parent (nothing recorded).
    pub fn record(
        &mut self,
        feature_set: &str,
        checkpoint: &StateCheckpoint,
    ) -> Result<(), StateError> {
        let history = self.sets.entry(feature_set.to_owned()).or_default();
        if let Some(at) = history.iter().position(|c| c.id == checkpoint.checkpoint) {
            if history[at].parent != checkpoint.parent {
                let e = StateError::ConflictingParent { checkpoint: checkpoint.checkpoint.clone() };
                tracing::warn!(feature_set, error = %e, "checkpoint not recorded");
                return Err(e);
            }
            if let Some(c) = history.remove(at) {
                history.push_back(c);
            }
            return Ok(());
        }
        let mut outcome = Ok(());
        let state = match checkpoint.form() {
            StateForm::Snapshot => {
                if checkpoint.patch.is_some() {
                    tracing::warn!(
                        feature_set,
                        checkpoint = %checkpoint.checkpoint,
                        "state carries both data and patch; using data"
                    );
                }
                match checkpoint.data.as_ref().map(|d| self.budget.check(d)) {
                    Some(Err(source)) => {
                        outcome = Err(StateError::OverBudget {
                            checkpoint: checkpoint.checkpoint.clone(),
                            source,
                        });
                        None
                    }
                    _ => checkpoint.data.clone(),
                }
            }
            StateForm::Opaque => None,
            StateForm::Patch => {
                let parent = match checkpoint.parent.as_deref() {
                    None => Some(Value::Object(serde_json::Map::new())),
                    Some(p) => {
                        history.iter().rev().find(|c| c.id == p).and_then(|c| c.state.clone())
                    }
                };
                match (parent, &checkpoint.patch) {
                    (Some(mut value), Some(patch)) => {
                        match apply_patch_within(&mut value, patch, &self.budget) {
                            Ok(()) => Some(value),
                            Err(source) => {
                                outcome = Err(StateError::Patch {
                                    checkpoint: checkpoint.checkpoint.clone(),
                                    source,
                                });
                                None
                            }
                        }
                    }
                    _ => {
                        outcome = Err(StateError::UnknownParent {
                            checkpoint: checkpoint.checkpoint.clone(),
                            parent: checkpoint.parent.clone(),
                        });
                        None
                    }
                }
            }
        };
        if let Err(e) = &outcome {
            tracing::info!(
                feature_set = ?feature_set,
                error = %e,
                cause = ?std::error::Error::source(e).map(ToString::to_string),
                "state kept as an opaque checkpoint"
            );
        }
        history.push_back(Checkpoint {
            id: checkpoint.checkpoint.clone(),
            parent: checkpoint.parent.clone(),
            state,
        });
        while history.len() > self.history {
            history.pop_front();
        }
        outcome
    }

    /// The latest checkpoint of `feature_set`.
    pub fn latest(&self, feature_set: &str) -> Option<&Checkpoint> {
        self.sets.get(feature_set).and_then(VecDeque::back)
    }

    /// A recorded checkpoint of `feature_set`, if still kept.
    pub fn checkpoint(&self, feature_set: &str, id: &str) -> Option<&Checkpoint> {
        self.sets.get(feature_set).and_then(|h| h.iter().find(|c| c.id == id))
    }

    /// Makes the kept checkpoint `id` the latest again (after a successful `state/rollback`).
    /// The next call then branches from it. Returns `false` if it is not kept.
    pub fn roll_back(&mut self, feature_set: &str, id: &str) -> bool {
        let Some(history) = self.sets.get_mut(feature_set) else { return false };
        let Some(at) = history.iter().position(|c| c.id == id) else { return false };
        if let Some(c) = history.remove(at) {
            history.push_back(c);
        }
        true
    }

    /// The state fields of the next `tools/call` for `feature_set`: the full `state` if
    /// host-managed, else the `checkpoint` reference; empty if nothing is recorded.
    pub fn request_fields(&self, feature_set: &str) -> StateRequestFields {
        match self.latest(feature_set) {
            Some(Checkpoint { state: Some(state), .. }) => {
                StateRequestFields { state: Some(state.clone()), checkpoint: None }
            }
            Some(c) => StateRequestFields { state: None, checkpoint: Some(c.id.clone()) },
            None => StateRequestFields::default(),
        }
    }

    /// Forgets everything recorded for `feature_set`.
    pub fn forget(&mut self, feature_set: &str) {
        self.sets.remove(feature_set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cp(v: Value) -> StateCheckpoint {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn errors_name_their_cause_once() {
        use std::error::Error as _;
        let source = BudgetExceeded::Size(10);
        let cause = source.to_string();
        let error = StateError::OverBudget { checkpoint: "c1".into(), source };
        assert!(!error.to_string().contains(&cause), "{error}");
        assert_eq!(error.source().unwrap().to_string(), cause);
    }

    #[test]
    fn snapshots_patches_and_opaque_checkpoints() {
        let mut t = StateTracker::with_history(3);
        assert_eq!(t.request_fields("s"), StateRequestFields::default());
        t.record("s", &cp(json!({"checkpoint": "a", "parent": null, "data": {"n": 1}}))).unwrap();
        t.record(
            "s",
            &cp(json!({"checkpoint": "b", "parent": "a",
                "patch": [{"op": "add", "path": "/m", "value": 2}]})),
        )
        .unwrap();
        assert_eq!(t.latest("s").unwrap().state, Some(json!({"n": 1, "m": 2})));
        // A failing patch: nothing applied, the checkpoint becomes opaque.
        let e = t
            .record(
                "s",
                &cp(json!({"checkpoint": "c", "parent": "b",
                    "patch": [{"op": "remove", "path": "/m"}, {"op": "test", "path": "/n", "value": 5}]})),
            )
            .unwrap_err();
        assert_eq!(e.kind(), "patch_failed");
        assert_eq!(t.request_fields("s").checkpoint.as_deref(), Some("c"));
        assert_eq!(t.checkpoint("s", "b").unwrap().state, Some(json!({"n": 1, "m": 2})));
        // Unknown parent (an opaque one has no state to patch).
        let e =
            t.record("s", &cp(json!({"checkpoint": "d", "parent": "c", "patch": []}))).unwrap_err();
        assert_eq!(e.kind(), "unknown_parent");
        // History is bounded: "a" fell out.
        assert!(t.checkpoint("s", "a").is_none());
        // Rollback to a kept checkpoint, then a sibling branch.
        assert!(t.roll_back("s", "b"));
        assert_eq!(t.request_fields("s").state, Some(json!({"n": 1, "m": 2})));
        t.record(
            "s",
            &cp(json!({"checkpoint": "x", "parent": "b",
                "patch": [{"op": "replace", "path": "/n", "value": 3}]})),
        )
        .unwrap();
        assert_eq!(t.latest("s").unwrap().state, Some(json!({"n": 3, "m": 2})));
        assert!(!t.roll_back("s", "zz"));
        // Recording a kept id again: same parent only moves the latest; another parent is refused.
        t.record("s", &cp(json!({"checkpoint": "b", "parent": "a", "data": {"other": 1}})))
            .unwrap();
        assert_eq!(t.latest("s").unwrap().state, Some(json!({"n": 1, "m": 2})));
        let e = t.record("s", &cp(json!({"checkpoint": "b", "parent": "x"}))).unwrap_err();
        assert_eq!(e.kind(), "conflicting_parent");
        // A patch on a null parent applies to an empty object.
        t.record(
            "new",
            &cp(json!({"checkpoint": "r", "parent": null,
            "patch": [{"op": "add", "path": "/k", "value": 1}]})),
        )
        .unwrap();
        assert_eq!(t.latest("new").unwrap().state, Some(json!({"k": 1})));
        // Server-managed sets send the checkpoint only; sets are independent.
        t.record("other", &cp(json!({"checkpoint": "o1", "parent": null}))).unwrap();
        assert_eq!(
            serde_json::to_value(t.request_fields("other")).unwrap(),
            json!({"checkpoint": "o1"})
        );
        t.forget("other");
        assert!(t.latest("other").is_none());
    }

    #[test]
    fn states_keep_the_budget() {
        let mut t = StateTracker::new().with_budget(StateBudget::default().with_max_depth(4));
        t.record("s", &cp(json!({"checkpoint": "a", "parent": null, "data": {"n": {"m": 1}}})))
            .unwrap();
        // A patch nesting past the limit: refused, the checkpoint kept as opaque.
        let deep = cp(json!({"checkpoint": "b", "parent": "a",
            "patch": [{"op": "add", "path": "/n/m", "value": [[[1]]]}]}));
        let e = t.record("s", &deep).unwrap_err();
        assert_eq!(e.kind(), "patch_failed");
        assert!(t.checkpoint("s", "b").unwrap().state.is_none());
        let e = t
            .record("s", &cp(json!({"checkpoint": "c", "parent": "a", "data": [[[[[1]]]]]})))
            .unwrap_err();
        assert_eq!(e.kind(), "over_budget");
        assert_eq!(t.budget().max_depth(), 4);
    }
}
