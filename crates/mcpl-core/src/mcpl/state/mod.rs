//! State management (spec §8): the state fields MCPL adds to `tools/call`, checkpoints, JSON
//! Patch operations and `state/rollback`.
//!
//! - [`apply_patch`]: RFC 6902 JSON Patch, atomic, with value-based `test`, within a
//!   [`StateBudget`] (depth, size, operations, work) kept while applying.
//! - [`StateTracker`]: the host's per-connection record of checkpoints and materialized state.

mod budget;
mod patch;
mod tracker;

pub use self::budget::{BudgetExceeded, StateBudget, state_size};
pub use self::patch::{
    PatchError, PatchErrorKind, apply_patch, apply_patch_within, json_equal, patched_within,
};
pub use self::tracker::{Checkpoint, DEFAULT_HISTORY, StateError, StateTracker};

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The state a `tools/call` result carries (`result.state`).
///
/// `data` is a full snapshot, `patch` an RFC 6902 patch against the **parent's** state, neither
/// an opaque (server-managed) checkpoint. If both are present, prefer `data` (and log a defect).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct StateCheckpoint {
    /// The checkpoint id.
    pub checkpoint: String,
    /// The parent checkpoint (`null` for a root).
    pub parent: Option<String>,
    /// A full state snapshot (host-managed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// A patch to the parent's state (host-managed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Vec<PatchOperation>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StateCheckpoint {
    /// A `StateCheckpoint` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(checkpoint: impl Into<String>) -> Self {
        Self {
            checkpoint: checkpoint.into(),
            parent: None,
            data: None,
            patch: None,
            extra: Default::default(),
        }
    }
}

/// How a checkpoint carries its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateForm {
    /// A full snapshot (`data`; also chosen when `data` and `patch` are both present).
    Snapshot,
    /// A patch against the parent (`patch`).
    Patch,
    /// Neither: the state stays in the server.
    Opaque,
}

impl StateCheckpoint {
    /// A host-managed checkpoint carrying the full state.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::{StateCheckpoint, StateForm};
    ///
    /// let cp = StateCheckpoint::snapshot("cp-1", None, serde_json::json!({"n": 1}));
    /// assert_eq!(cp.form(), StateForm::Snapshot);
    /// ```
    pub fn snapshot(checkpoint: impl Into<String>, parent: Option<String>, data: Value) -> Self {
        StateCheckpoint {
            checkpoint: checkpoint.into(),
            parent,
            data: Some(data),
            patch: None,
            extra: Map::new(),
        }
    }

    /// A host-managed checkpoint carrying a patch against the parent's state.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::{PatchOperation, StateCheckpoint, StateForm};
    ///
    /// let op = PatchOperation::Add { path: "/n".into(), value: serde_json::json!(2) };
    /// let cp = StateCheckpoint::patch("cp-2", "cp-1", vec![op]);
    /// assert_eq!(cp.form(), StateForm::Patch);
    /// assert_eq!(cp.parent.as_deref(), Some("cp-1"));
    /// ```
    pub fn patch(
        checkpoint: impl Into<String>,
        parent: impl Into<String>,
        patch: Vec<PatchOperation>,
    ) -> Self {
        StateCheckpoint {
            checkpoint: checkpoint.into(),
            parent: Some(parent.into()),
            data: None,
            patch: Some(patch),
            extra: Map::new(),
        }
    }

    /// A server-managed (opaque) checkpoint: the state stays in the server.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::{StateCheckpoint, StateForm};
    ///
    /// assert_eq!(StateCheckpoint::opaque("cp-9", None).form(), StateForm::Opaque);
    /// ```
    pub fn opaque(checkpoint: impl Into<String>, parent: Option<String>) -> Self {
        StateCheckpoint {
            checkpoint: checkpoint.into(),
            parent,
            data: None,
            patch: None,
            extra: Map::new(),
        }
    }

    /// How this checkpoint carries its state.
    pub fn form(&self) -> StateForm {
        match (&self.data, &self.patch) {
            (Some(_), _) => StateForm::Snapshot,
            (None, Some(_)) => StateForm::Patch,
            (None, None) => StateForm::Opaque,
        }
    }
}

/// One RFC 6902 JSON Patch operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOperation {
    /// Adds `value` at `path`.
    Add {
        /// A JSON Pointer.
        path: String,
        /// The value.
        value: Value,
    },
    /// Removes the value at `path`.
    Remove {
        /// A JSON Pointer.
        path: String,
    },
    /// Replaces the value at `path`.
    Replace {
        /// A JSON Pointer.
        path: String,
        /// The value.
        value: Value,
    },
    /// Moves the value at `from` to `path`.
    Move {
        /// The source pointer.
        from: String,
        /// The target pointer.
        path: String,
    },
    /// Copies the value at `from` to `path`.
    Copy {
        /// The source pointer.
        from: String,
        /// The target pointer.
        path: String,
    },
    /// Fails the patch unless the value at `path` equals `value`.
    Test {
        /// A JSON Pointer.
        path: String,
        /// The expected value.
        value: Value,
    },
}

/// The state fields a host adds to `tools/call` params: the full state if host-managed, or
/// only a checkpoint reference. Read them from, or merge them into, the params' extra members.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct StateRequestFields {
    /// The full state object (host-managed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// The checkpoint the call continues from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
}

impl StateRequestFields {
    /// Reads the fields from a `tools/call` params object (unknown members ignored; a
    /// wrong-typed member reads as absent).
    pub fn from_params(params: &Map<String, Value>) -> Self {
        StateRequestFields {
            state: params.get("state").cloned(),
            checkpoint: params.get("checkpoint").and_then(Value::as_str).map(str::to_owned),
        }
    }
}

/// `state/rollback` params (host to server).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RollbackParams {
    /// The feature set (must declare `rollback: true`).
    pub feature_set: String,
    /// The checkpoint to roll back to.
    pub checkpoint: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RollbackParams {
    /// A `RollbackParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(feature_set: impl Into<String>, checkpoint: impl Into<String>) -> Self {
        Self {
            feature_set: feature_set.into(),
            checkpoint: checkpoint.into(),
            extra: Default::default(),
        }
    }
}

/// `state/rollback` result. Best effort: `success: false` with a `reason` when effects cannot
/// be undone; an unknown or pruned checkpoint is error `-32005` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RollbackResult {
    /// The checkpoint now current.
    pub checkpoint: String,
    /// Whether the rollback fully succeeded.
    pub success: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RollbackResult {
    /// A `RollbackResult` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(checkpoint: impl Into<String>, success: bool) -> Self {
        Self { checkpoint: checkpoint.into(), success, reason: None, extra: Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checkpoints() {
        for (v, form) in [
            (json!({"checkpoint": "a", "parent": null}), StateForm::Opaque),
            (json!({"checkpoint": "b", "parent": "a", "data": {"n": 1}}), StateForm::Snapshot),
            (
                json!({"checkpoint": "c", "parent": "b", "patch": [
                    {"op": "add", "path": "/x", "value": 1}, {"op": "remove", "path": "/y"},
                    {"op": "replace", "path": "/n", "value": 2}, {"op": "move", "from": "/a", "path": "/b"},
                    {"op": "copy", "from": "/b", "path": "/c"}, {"op": "test", "path": "/n", "value": 2}
                ]}),
                StateForm::Patch,
            ),
            (
                json!({"checkpoint": "d", "parent": "c", "data": {}, "patch": []}),
                StateForm::Snapshot,
            ),
        ] {
            let c: StateCheckpoint = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(c.form(), form);
            assert_eq!(serde_json::to_value(&c).unwrap(), v);
        }
        assert!(
            serde_json::from_value::<PatchOperation>(json!({"op": "frob", "path": "/"})).is_err()
        );
        assert!(
            serde_json::from_value::<PatchOperation>(json!({"op": "move", "path": "/"})).is_err()
        );
    }

    #[test]
    fn request_fields_and_rollback() {
        let params =
            json!({"name": "t", "checkpoint": "abc", "state": {"k": 1}, "scope": "legacy"});
        let f = StateRequestFields::from_params(params.as_object().unwrap());
        assert_eq!(f.checkpoint.as_deref(), Some("abc"));
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            json!({"state": {"k": 1}, "checkpoint": "abc"})
        );
        let p = json!({"featureSet": "editor", "checkpoint": "abc"});
        let r: RollbackParams = serde_json::from_value(p.clone()).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), p);
        let res = json!({"checkpoint": "abc", "success": false, "reason": "email already sent"});
        let r: RollbackResult = serde_json::from_value(res.clone()).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), res);
        assert!(serde_json::from_value::<RollbackResult>(json!({"checkpoint": "a"})).is_err());
    }
}
