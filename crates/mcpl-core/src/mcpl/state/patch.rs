//! RFC 6902 JSON Patch, applied atomically: every operation succeeds or the state is left
//! exactly as it was.
//!
//! `test` compares by JSON value, not by representation: numbers by numeric value (`1` equals
//! `1.0`), objects regardless of member order. `move` of a location into its own child is
//! refused. The other operations are those of the `json-patch` crate.

use serde_json::Value;

use super::PatchOperation;

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("patch operation {index} ({op}) failed: {kind}")]
pub struct PatchError {
    /// The index of the failing operation in the patch.
    pub index: usize,
    /// The failing operation's name (`add`, `remove`, ...).
    pub op: &'static str,
    /// What went wrong.
    pub kind: PatchErrorKind,
}

impl PatchError {
    /// The stable kind of the failure.
    pub fn kind(&self) -> PatchErrorKind {
        self.kind
    }
}

/// The stable kinds of patch failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatchErrorKind {
    /// A `test` found a different value (or none) at its path.
    #[error("test failed")]
    TestFailed,
    /// `path` is not a valid pointer, or points where the operation cannot act.
    #[error("invalid path")]
    InvalidPath,
    /// `from` is not a valid pointer, or points at nothing.
    #[error("invalid from")]
    InvalidFrom,
    /// A `move` whose `path` lies inside its `from`.
    #[error("cannot move a value into its own child")]
    MoveIntoOwnChild,
}

impl PatchErrorKind {
    /// A stable snake-case code for logs and diagnostics.
    pub fn code(self) -> &'static str {
        match self {
            PatchErrorKind::TestFailed => "test_failed",
            PatchErrorKind::InvalidPath => "invalid_path",
            PatchErrorKind::InvalidFrom => "invalid_from",
            PatchErrorKind::MoveIntoOwnChild => "move_into_own_child",
        }
    }
}

impl PatchOperation {
    /// The operation's name as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            PatchOperation::Add { .. } => "add",
            PatchOperation::Remove { .. } => "remove",
            PatchOperation::Replace { .. } => "replace",
            PatchOperation::Move { .. } => "move",
            PatchOperation::Copy { .. } => "copy",
            PatchOperation::Test { .. } => "test",
        }
    }
}

/// Applies `patch` to `state` atomically: on success `state` holds the result; on failure it
/// is unchanged and the error names the failing operation.
///
/// ```
/// use mcpl_core::mcpl::state::{PatchOperation, apply_patch};
/// use serde_json::json;
///
/// let mut state = json!({"count": 1, "items": ["a"]});
/// let patch: Vec<PatchOperation> = serde_json::from_value(json!([
///     {"op": "test", "path": "/count", "value": 1.0},
///     {"op": "replace", "path": "/count", "value": 2},
///     {"op": "add", "path": "/items/-", "value": "b"}
/// ])).unwrap();
/// apply_patch(&mut state, &patch).unwrap();
/// assert_eq!(state, json!({"count": 2, "items": ["a", "b"]}));
///
/// // A failing operation changes nothing, not even the operations before it.
/// let bad: Vec<PatchOperation> = serde_json::from_value(json!([
///     {"op": "add", "path": "/x", "value": 1},
///     {"op": "remove", "path": "/missing"}
/// ])).unwrap();
/// assert!(apply_patch(&mut state, &bad).is_err());
/// assert_eq!(state, json!({"count": 2, "items": ["a", "b"]}));
/// ```
///
/// # Errors
///
/// [`PatchError`] for the first operation that fails.
pub fn apply_patch(state: &mut Value, patch: &[PatchOperation]) -> Result<(), PatchError> {
    let mut work = state.clone();
    for (index, op) in patch.iter().enumerate() {
        apply_one(&mut work, op).map_err(|kind| PatchError { index, op: op.name(), kind })?;
    }
    *state = work;
    Ok(())
}

fn apply_one(doc: &mut Value, op: &PatchOperation) -> Result<(), PatchErrorKind> {
    match op {
        PatchOperation::Test { path, value } => match doc.pointer(path) {
            Some(found) if json_equal(found, value) => Ok(()),
            Some(_) => Err(PatchErrorKind::TestFailed),
            None if is_pointer(path) => Err(PatchErrorKind::TestFailed),
            None => Err(PatchErrorKind::InvalidPath),
        },
        PatchOperation::Move { from, path } if path.starts_with(&format!("{from}/")) => {
            Err(PatchErrorKind::MoveIntoOwnChild)
        }
        other => {
            let wire = serde_json::to_value(other).map_err(|_| PatchErrorKind::InvalidPath)?;
            let op: json_patch::PatchOperation =
                serde_json::from_value(wire).map_err(|_| PatchErrorKind::InvalidPath)?;
            json_patch::patch_unsafe(doc, std::slice::from_ref(&op)).map_err(|e| match e.kind {
                json_patch::PatchErrorKind::InvalidFromPointer => PatchErrorKind::InvalidFrom,
                json_patch::PatchErrorKind::CannotMoveInsideItself => {
                    PatchErrorKind::MoveIntoOwnChild
                }
                json_patch::PatchErrorKind::TestFailed => PatchErrorKind::TestFailed,
                _ => PatchErrorKind::InvalidPath,
            })
        }
    }
}

/// Whether `path` is syntactically a JSON Pointer (empty, or starting with `/`, with `~`
/// only in `~0` / `~1`).
fn is_pointer(path: &str) -> bool {
    (path.is_empty() || path.starts_with('/')) && {
        let mut chars = path.chars();
        let mut ok = true;
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                ok = false;
                break;
            }
        }
        ok
    }
}

/// JSON equality as RFC 6902 `test` defines it: numbers by numeric value (`1` equals `1.0`),
/// objects by their members regardless of order, arrays element by element.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => match (x.as_f64(), y.as_f64()) {
                    (Some(x), Some(y)) => x == y,
                    _ => false,
                },
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn ops(v: Value) -> Vec<PatchOperation> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn all_six_operations() {
        let mut s = json!({"a": 1, "b": {"c": [1, 2]}});
        apply_patch(
            &mut s,
            &ops(json!([
                {"op": "add", "path": "/d", "value": true},
                {"op": "remove", "path": "/a"},
                {"op": "replace", "path": "/b/c/0", "value": 9},
                {"op": "copy", "from": "/b/c", "path": "/e"},
                {"op": "move", "from": "/d", "path": "/b/d"},
                {"op": "test", "path": "/e", "value": [9, 2.0]}
            ])),
        )
        .unwrap();
        assert_eq!(s, json!({"b": {"c": [9, 2], "d": true}, "e": [9, 2]}));
    }

    #[test]
    fn test_compares_values_not_representations() {
        assert!(json_equal(&json!(1), &json!(1.0)));
        assert!(json_equal(&json!({"a": 1, "b": [0.5]}), &json!({"b": [0.5], "a": 1.0})));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!json_equal(&json!(1), &json!("1")));
        assert!(!json_equal(&json!(u64::MAX), &json!(-1)));
        let mut s = json!({"n": 1.0, "o": {"x": 1, "y": 2}});
        let patch = ops(json!([
            {"op": "test", "path": "/n", "value": 1},
            {"op": "test", "path": "/o", "value": {"y": 2.0, "x": 1}}
        ]));
        apply_patch(&mut s, &patch).unwrap();
        let e = apply_patch(&mut s, &ops(json!([{"op": "test", "path": "/n", "value": 2}])))
            .unwrap_err();
        assert_eq!((e.index, e.kind().code()), (0, "test_failed"));
    }

    #[test]
    fn failures_change_nothing() {
        let original = json!({"a": {"b": 1}, "l": [1]});
        for (patch, kind) in [
            (
                json!([{"op": "add", "path": "/x", "value": 1}, {"op": "remove", "path": "/nope"}]),
                PatchErrorKind::InvalidPath,
            ),
            (
                json!([{"op": "move", "from": "/a", "path": "/a/b/c"}]),
                PatchErrorKind::MoveIntoOwnChild,
            ),
            (json!([{"op": "copy", "from": "/zz", "path": "/y"}]), PatchErrorKind::InvalidFrom),
            (json!([{"op": "add", "path": "no-slash", "value": 1}]), PatchErrorKind::InvalidPath),
            (json!([{"op": "add", "path": "/l/5", "value": 1}]), PatchErrorKind::InvalidPath),
            (
                json!([{"op": "replace", "path": "/a/b", "value": 2}, {"op": "test", "path": "/a/b", "value": 1}]),
                PatchErrorKind::TestFailed,
            ),
            (
                json!([{"op": "test", "path": "/missing", "value": null}]),
                PatchErrorKind::TestFailed,
            ),
        ] {
            let mut s = original.clone();
            let e = apply_patch(&mut s, &ops(patch)).unwrap_err();
            assert_eq!(e.kind(), kind, "{e}");
            assert_eq!(s, original);
        }
        // Moving a value onto itself or a sibling with a common prefix is fine.
        let mut s = json!({"a": 1, "ab": 2});
        apply_patch(&mut s, &ops(json!([{"op": "move", "from": "/a", "path": "/abc"}]))).unwrap();
        assert_eq!(s, json!({"ab": 2, "abc": 1}));
    }

    #[test]
    fn pointer_edge_cases() {
        let original = json!({"a": [1, 2], "o": {"k": 1}, "~/": 0});
        for (patch, expected) in [
            (json!([{"op": "remove", "path": ""}]), None),
            (json!([{"op": "add", "path": "/a/01", "value": 9}]), None),
            (json!([{"op": "add", "path": "/a/3", "value": 9}]), None),
            (json!([{"op": "remove", "path": "/a/-"}]), None),
            (json!([{"op": "replace", "path": "/missing", "value": 1}]), None),
            (json!([{"op": "remove", "path": "/o/missing"}]), None),
            (json!([{"op": "add", "path": "/x/y", "value": 1}]), None),
            (json!([{"op": "test", "path": "/a/-", "value": 1}]), None),
            (
                json!([{"op": "add", "path": "/a/-", "value": 3}]),
                Some(json!({"a": [1, 2, 3], "o": {"k": 1}, "~/": 0})),
            ),
            (
                json!([{"op": "add", "path": "/a/2", "value": 3}]),
                Some(json!({"a": [1, 2, 3], "o": {"k": 1}, "~/": 0})),
            ),
            (json!([{"op": "move", "from": "/o", "path": "/o"}]), Some(original.clone())),
            (
                json!([{"op": "replace", "path": "/~0~1", "value": 5}]),
                Some(json!({"a": [1, 2], "o": {"k": 1}, "~/": 5})),
            ),
            (json!([{"op": "replace", "path": "", "value": [1]}]), Some(json!([1]))),
        ] {
            let mut s = original.clone();
            let outcome = apply_patch(&mut s, &ops(patch.clone()));
            match expected {
                None => {
                    assert!(outcome.is_err(), "{patch} should fail");
                    assert_eq!(s, original);
                }
                Some(e) => {
                    outcome.unwrap_or_else(|err| panic!("{patch}: {err}"));
                    assert_eq!(s, e, "{patch}");
                }
            }
        }
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            (-1e6f64..1e6).prop_map(|f| json!(f)),
            "[a-c~/]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c~/0-9-]{0,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_pointer() -> impl Strategy<Value = String> {
        prop::collection::vec("[a-c0-9~/-]{0,2}", 0..3)
            .prop_map(|segments| segments.iter().map(|s| format!("/{s}")).collect::<String>())
    }

    fn arb_op() -> impl Strategy<Value = PatchOperation> {
        prop_oneof![
            (arb_pointer(), arb_value())
                .prop_map(|(path, value)| PatchOperation::Add { path, value }),
            arb_pointer().prop_map(|path| PatchOperation::Remove { path }),
            (arb_pointer(), arb_value())
                .prop_map(|(path, value)| PatchOperation::Replace { path, value }),
            (arb_pointer(), arb_pointer())
                .prop_map(|(from, path)| PatchOperation::Move { from, path }),
            (arb_pointer(), arb_pointer())
                .prop_map(|(from, path)| PatchOperation::Copy { from, path }),
            (arb_pointer(), arb_value())
                .prop_map(|(path, value)| PatchOperation::Test { path, value }),
        ]
    }

    proptest! {
        #[test]
        fn never_panics_and_failures_leave_the_input_unchanged(
            state in arb_value(),
            patch in prop::collection::vec(arb_op(), 0..6),
        ) {
            let mut s = state.clone();
            match apply_patch(&mut s, &patch) {
                Ok(()) => {
                    // Replaying the prefix up to each op one by one gives the same result.
                    let mut t = state.clone();
                    for op in &patch {
                        prop_assert!(apply_patch(&mut t, std::slice::from_ref(op)).is_ok());
                    }
                    prop_assert_eq!(t, s);
                }
                Err(e) => {
                    prop_assert_eq!(&s, &state);
                    prop_assert!(e.index < patch.len());
                }
            }
        }

        #[test]
        fn a_value_tests_equal_to_itself(state in arb_value()) {
            let mut s = state.clone();
            let patch = [PatchOperation::Test { path: String::new(), value: state.clone() }];
            prop_assert!(apply_patch(&mut s, &patch).is_ok());
            prop_assert_eq!(s, state);
        }
    }
}
