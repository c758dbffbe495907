//! RFC 6902 JSON Patch, applied atomically and within a [`StateBudget`]: every operation
//! succeeds or the state is left exactly as it was.
//!
//! `test` compares by JSON value, not by representation: numbers by numeric value (`1` equals
//! `1.0`), objects regardless of member order. `move` of a location into its own child is
//! refused.
//!
//! The budget is kept while applying, operation by operation: the size of the state is tracked
//! from what each operation adds and removes, the depth from where it inserts and the depth of
//! what it inserts, so a patch costs time linear in its own length and in the values it copies,
//! never a walk of the whole document per operation.
//!
//! # Why not the `json-patch` crate
//!
//! This applier replaced a thin wrapper over `json_patch::patch`. The patch comes from a server
//! the host may not trust, and `json_patch` offers no budget: it applies each operation to the
//! whole document with no bound on depth, size or work (a 971-byte patch of root `copy`s doubles
//! the state per operation until memory runs out; a deep `add` chain overflows the stack when the
//! result is later dropped or serialized), and it can only be checked after the fact, by which
//! time the damage is done. Its `test` also compares numbers by representation (`1` is not
//! `1.0`). Keeping the budget per operation needs the size and depth bookkeeping to live beside
//! each operation, which is most of an applier; RFC 6902 itself is small (six operations over
//! RFC 6901 pointers), so we keep our own, held by unit tests of every operation and pointer
//! edge case and by property tests (failures leave the state unchanged; the budget holds).
//!
//! Re-checked against json-patch 5.0: still no limit of any kind, `test` still compares with
//! `==`. Wrapping it per operation (check the budget, then let it apply one operation) would not
//! shrink this module: the size an operation adds or removes, the depth where it inserts and the
//! work of shifting array elements must still be found here before it runs, by the same pointer
//! walk, and `test` would still be ours.

use serde_json::Value;

use super::PatchOperation;
use super::budget::{
    BudgetExceeded, ELEMENT_OVERHEAD, Measure, StateBudget, measure_within, member_overhead,
};

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
    /// The patch, a value it carries, or the state it makes crosses a limit of the budget.
    #[error(transparent)]
    OverBudget(#[from] BudgetExceeded),
}

impl PatchErrorKind {
    /// A stable snake-case code for logs and diagnostics (for [`PatchErrorKind::OverBudget`],
    /// the code of the limit crossed).
    pub fn code(self) -> &'static str {
        match self {
            PatchErrorKind::TestFailed => "test_failed",
            PatchErrorKind::InvalidPath => "invalid_path",
            PatchErrorKind::InvalidFrom => "invalid_from",
            PatchErrorKind::MoveIntoOwnChild => "move_into_own_child",
            PatchErrorKind::OverBudget(limit) => limit.code(),
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

/// Applies `patch` to `state` atomically within the default [`StateBudget`] (see
/// [`apply_patch_within`]): on success `state` holds the result; on failure it is unchanged
/// and the error names the failing operation.
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
    apply_patch_within(state, patch, &StateBudget::default())
}

/// Applies `patch` to `state` atomically within `budget`: on success `state` holds the result;
/// on failure it is unchanged and the error names the failing operation.
///
/// The number of operations is checked before anything else, and `state` itself must keep the
/// budget (an over-budget state is reported at operation 0). Each operation is then checked as
/// it applies: the values it carries and the place it inserts them (depth), the state it makes
/// (size), and what it copies or shifts (work).
///
/// ```
/// use mcpl_core::mcpl::state::{
///     BudgetExceeded, PatchErrorKind, PatchOperation, StateBudget, apply_patch_within,
/// };
/// use serde_json::json;
///
/// let budget = StateBudget::default().with_max_size(1000);
/// let mut state = json!({"text": "x".repeat(300)});
/// // Each `copy` of the root doubles the state: the third one crosses the size limit.
/// let doubling: Vec<PatchOperation> = (0..3)
///     .map(|i| PatchOperation::Copy { from: String::new(), path: format!("/c{i}") })
///     .collect();
/// let err = apply_patch_within(&mut state, &doubling, &budget).unwrap_err();
/// assert_eq!(err.index, 1);
/// assert_eq!(err.kind, PatchErrorKind::OverBudget(BudgetExceeded::Size(1000)));
/// assert_eq!(state, json!({"text": "x".repeat(300)})); // nothing applied
/// ```
///
/// # Errors
///
/// [`PatchError`] for the first operation that fails or crosses the budget.
pub fn apply_patch_within(
    state: &mut Value,
    patch: &[PatchOperation],
    budget: &StateBudget,
) -> Result<(), PatchError> {
    let size = start(state, patch, budget)?;
    *state = run(state.clone(), size, patch, budget)?;
    Ok(())
}

/// Like [`apply_patch_within`], consuming the state instead of copying it first: the patched
/// state, or the error (the partly patched state is dropped). For rebuilding a state from a
/// chain of patches, where the intermediate states are not kept.
///
/// ```
/// use mcpl_core::mcpl::state::{PatchOperation, StateBudget, patched_within};
/// use serde_json::json;
///
/// let add = PatchOperation::Add { path: "/n".into(), value: json!(1) };
/// let state = patched_within(json!({}), &[add], &StateBudget::default()).unwrap();
/// assert_eq!(state, json!({"n": 1}));
/// ```
///
/// # Errors
///
/// [`PatchError`] for the first operation that fails or crosses the budget.
pub fn patched_within(
    state: Value,
    patch: &[PatchOperation],
    budget: &StateBudget,
) -> Result<Value, PatchError> {
    let size = start(&state, patch, budget)?;
    run(state, size, patch, budget)
}

/// Checks the operation count and the starting state; returns the state's size.
fn start(
    state: &Value,
    patch: &[PatchOperation],
    budget: &StateBudget,
) -> Result<usize, PatchError> {
    let first = patch.first().map_or("none", PatchOperation::name);
    if patch.len() > budget.max_operations() {
        let index = budget.max_operations();
        let op = patch.get(index).map_or(first, PatchOperation::name);
        return Err(PatchError {
            index,
            op,
            kind: BudgetExceeded::Operations(budget.max_operations()).into(),
        });
    }
    if patch.is_empty() {
        return Ok(0);
    }
    budget.measure(state).map(|m| m.size).map_err(|e| PatchError {
        index: 0,
        op: first,
        kind: e.into(),
    })
}

fn run(
    mut doc: Value,
    size: usize,
    patch: &[PatchOperation],
    budget: &StateBudget,
) -> Result<Value, PatchError> {
    let mut books = Books { budget, size, work: 0 };
    for (index, op) in patch.iter().enumerate() {
        books.apply(&mut doc, op).map_err(|kind| PatchError { index, op: op.name(), kind })?;
    }
    // The running size is exact: the tests check it against a full walk.
    #[cfg(test)]
    if !patch.is_empty() {
        assert_eq!(
            Some(books.size),
            measure_within(&doc, usize::MAX, usize::MAX).ok().map(|m| m.size)
        );
    }
    Ok(doc)
}

/// The running totals of one patch application.
struct Books<'b> {
    budget: &'b StateBudget,
    /// The state's size now.
    size: usize,
    /// Work spent so far.
    work: usize,
}

impl Books<'_> {
    fn apply(&mut self, doc: &mut Value, op: &PatchOperation) -> Result<(), PatchErrorKind> {
        match op {
            PatchOperation::Add { path, value } => {
                let at = tokens(path).ok_or(PatchErrorKind::InvalidPath)?;
                let m = self.carried(value)?;
                self.put(
                    doc,
                    &at,
                    value.clone(),
                    m.size,
                    Some(m.depth),
                    PatchErrorKind::InvalidPath,
                )
            }
            PatchOperation::Remove { path } => {
                let at = tokens(path).ok_or(PatchErrorKind::InvalidPath)?;
                let (removed, overhead) = self.take(doc, &at, PatchErrorKind::InvalidPath)?;
                self.size = self.size.saturating_sub(size_of(&removed) + overhead);
                drop_flat(removed);
                Ok(())
            }
            PatchOperation::Replace { path, value } => {
                let at = tokens(path).ok_or(PatchErrorKind::InvalidPath)?;
                let m = self.carried(value)?;
                self.check_depth(at.len(), m.depth)?;
                let target = get_mut(doc, &at).ok_or(PatchErrorKind::InvalidPath)?;
                let size = if at.is_empty() {
                    m.size
                } else {
                    (self.size - size_of(target).min(self.size)).saturating_add(m.size)
                };
                self.check_size(size)?;
                self.size = size;
                drop_flat(std::mem::replace(target, value.clone()));
                Ok(())
            }
            PatchOperation::Move { from, path } => {
                let src = tokens(from).ok_or(PatchErrorKind::InvalidFrom)?;
                let dst = tokens(path).ok_or(PatchErrorKind::InvalidPath)?;
                if dst.len() > src.len() && dst[..src.len()] == src[..] {
                    return Err(PatchErrorKind::MoveIntoOwnChild);
                }
                let (value, overhead) = self.take(doc, &src, PatchErrorKind::InvalidFrom)?;
                self.size = self.size.saturating_sub(overhead);
                if dst.is_empty() || dst.len() > src.len() {
                    // Deeper (or the root): the moved value's depth (and, for the root, its
                    // size) must be known. Moving up or sideways cannot deepen the state.
                    let m = self.walk(&value)?;
                    let size = if dst.is_empty() { m.size } else { 0 };
                    self.put(doc, &dst, value, size, Some(m.depth), PatchErrorKind::InvalidPath)
                } else {
                    self.put(doc, &dst, value, 0, None, PatchErrorKind::InvalidPath)
                }
            }
            PatchOperation::Copy { from, path } => {
                let src = tokens(from).ok_or(PatchErrorKind::InvalidFrom)?;
                let dst = tokens(path).ok_or(PatchErrorKind::InvalidPath)?;
                let source = get(doc, &src).ok_or(PatchErrorKind::InvalidFrom)?;
                let m = self.walk(source)?;
                self.check_depth(dst.len(), m.depth)?;
                if !dst.is_empty() {
                    // Refuse before copying: the copy adds at least its own size.
                    self.check_size(self.size.saturating_add(m.size))
                        .or_else(|e| if replaces(doc, &dst) { Ok(()) } else { Err(e) })?;
                }
                let copy = source.clone();
                self.put(doc, &dst, copy, m.size, Some(m.depth), PatchErrorKind::InvalidPath)
            }
            PatchOperation::Test { path, value } => {
                let at = tokens(path).ok_or(PatchErrorKind::InvalidPath)?;
                // Carried values are stored with the patch: bound their depth like any other.
                measure_within(value, self.budget.max_depth(), usize::MAX)?;
                match get(doc, &at) {
                    Some(found) if json_equal(found, value) => Ok(()),
                    _ => Err(PatchErrorKind::TestFailed),
                }
            }
        }
    }

    /// Measures a value the patch carries: it must fit the depth and size limits on its own.
    fn carried(&self, value: &Value) -> Result<Measure, PatchErrorKind> {
        Ok(self.budget.measure(value)?)
    }

    /// Measures a value of the state, charging the walk as work.
    fn walk(&mut self, value: &Value) -> Result<Measure, PatchErrorKind> {
        let left = self.budget.max_work().saturating_sub(self.work);
        let m = measure_within(value, self.budget.max_depth(), left)
            .map_err(|_| BudgetExceeded::Work(self.budget.max_work()))?;
        self.charge(m.size)?;
        Ok(m)
    }

    fn charge(&mut self, units: usize) -> Result<(), PatchErrorKind> {
        self.work = self.work.saturating_add(units);
        if self.work > self.budget.max_work() {
            return Err(BudgetExceeded::Work(self.budget.max_work()).into());
        }
        Ok(())
    }

    fn check_depth(&self, above: usize, depth: usize) -> Result<(), PatchErrorKind> {
        if above.saturating_add(depth) > self.budget.max_depth() {
            return Err(BudgetExceeded::Depth(self.budget.max_depth()).into());
        }
        Ok(())
    }

    fn check_size(&self, size: usize) -> Result<(), PatchErrorKind> {
        if size > self.budget.max_size() {
            return Err(BudgetExceeded::Size(self.budget.max_size()).into());
        }
        Ok(())
    }

    /// Puts `value` at `at` (`add` semantics): `size` is what it adds to the state, `depth`
    /// its depth when that must be checked.
    fn put(
        &mut self,
        doc: &mut Value,
        at: &[String],
        value: Value,
        size: usize,
        depth: Option<usize>,
        invalid: PatchErrorKind,
    ) -> Result<(), PatchErrorKind> {
        if let Some(depth) = depth {
            self.check_depth(at.len(), depth)?;
        }
        let Some((last, parent)) = at.split_last() else {
            self.check_size(size)?;
            self.size = size;
            drop_flat(std::mem::replace(doc, value));
            return Ok(());
        };
        match get_mut(doc, parent).ok_or(invalid)? {
            Value::Object(members) => {
                let base = match members.get(last.as_str()) {
                    Some(old) => self.size - size_of(old).min(self.size),
                    None => self.size.saturating_add(member_overhead(last)),
                };
                let new = base.saturating_add(size);
                self.check_size(new)?;
                self.size = new;
                if let Some(old) = members.insert(last.clone(), value) {
                    drop_flat(old);
                }
                Ok(())
            }
            Value::Array(items) => {
                let idx = if last == "-" {
                    items.len()
                } else {
                    index(last).filter(|i| *i <= items.len()).ok_or(invalid)?
                };
                let new = self.size.saturating_add(size + ELEMENT_OVERHEAD);
                self.check_size(new)?;
                self.charge(items.len() - idx)?;
                self.size = new;
                items.insert(idx, value);
                Ok(())
            }
            _ => Err(invalid),
        }
    }

    /// Removes the value at `at`; returns it and the overhead its place took.
    fn take(
        &mut self,
        doc: &mut Value,
        at: &[String],
        invalid: PatchErrorKind,
    ) -> Result<(Value, usize), PatchErrorKind> {
        let (last, parent) = at.split_last().ok_or(invalid)?;
        match get_mut(doc, parent).ok_or(invalid)? {
            Value::Object(members) => {
                let value = members.remove(last.as_str()).ok_or(invalid)?;
                Ok((value, member_overhead(last)))
            }
            Value::Array(items) => {
                let idx = index(last).filter(|i| *i < items.len()).ok_or(invalid)?;
                self.charge(items.len() - idx - 1)?;
                Ok((items.remove(idx), ELEMENT_OVERHEAD))
            }
            _ => Err(invalid),
        }
    }
}

/// Whether `at` names an existing object member (which a `copy` there would replace).
fn replaces(doc: &Value, at: &[String]) -> bool {
    let Some((last, parent)) = at.split_last() else { return true };
    matches!(get(doc, parent), Some(Value::Object(m)) if m.contains_key(last.as_str()))
}

/// The size of a value already in the state (within the budget, so the walk is bounded).
fn size_of(value: &Value) -> usize {
    measure_within(value, usize::MAX, usize::MAX).map_or(0, |m| m.size)
}

/// Drops a value without recursing (a state is shallow, but dropping costs no stack at all).
fn drop_flat(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => stack.extend(members.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// The reference tokens of a JSON Pointer (RFC 6901), decoded; `None` if it is not one.
fn tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/')
        .map(|raw| {
            let mut token = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                match c {
                    '~' => match chars.next() {
                        Some('0') => token.push('~'),
                        Some('1') => token.push('/'),
                        _ => return None,
                    },
                    c => token.push(c),
                }
            }
            Some(token)
        })
        .collect()
}

/// An array index token: decimal digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

fn get<'a>(doc: &'a Value, at: &[String]) -> Option<&'a Value> {
    at.iter().try_fold(doc, |v, t| match v {
        Value::Object(m) => m.get(t.as_str()),
        Value::Array(a) => a.get(index(t)?),
        _ => None,
    })
}

fn get_mut<'a>(doc: &'a mut Value, at: &[String]) -> Option<&'a mut Value> {
    at.iter().try_fold(doc, |v, t| match v {
        Value::Object(m) => m.get_mut(t.as_str()),
        Value::Array(a) => a.get_mut(index(t)?),
        _ => None,
    })
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

    /// `{"a": X}` becomes `{"a": {"a": X}}`: three cheap operations per level.
    fn nest_once() -> [PatchOperation; 3] {
        [
            PatchOperation::Add { path: "/b".into(), value: json!({}) },
            PatchOperation::Move { from: "/a".into(), path: "/b/a".into() },
            PatchOperation::Move { from: "/b".into(), path: "/a".into() },
        ]
    }

    #[test]
    fn a_depth_bomb_is_refused_and_applies_nothing() {
        let mut state = json!({"a": 1});
        let bomb: Vec<PatchOperation> = (0..30_000).flat_map(|_| nest_once()).collect();
        let e = apply_patch(&mut state, &bomb).unwrap_err();
        assert_eq!(e.kind, PatchErrorKind::OverBudget(BudgetExceeded::Depth(64)), "{e}");
        assert_eq!(e.op, "move");
        assert_eq!(state, json!({"a": 1}));
        // Within the limit the same operations work.
        let fine: Vec<PatchOperation> = (0..10).flat_map(|_| nest_once()).collect();
        apply_patch(&mut state, &fine).unwrap();
        assert_eq!(StateBudget::default().measure(&state).unwrap().depth, 11);
    }

    #[test]
    fn copy_doubling_and_many_root_copies_are_refused() {
        let copies = |n: usize| -> Vec<PatchOperation> {
            (0..n)
                .map(|i| PatchOperation::Copy { from: String::new(), path: format!("/c{i}") })
                .collect()
        };
        for n in [100, 100_000] {
            let mut state = json!({"seed": "x".repeat(64)});
            let e = apply_patch(&mut state, &copies(n)).unwrap_err();
            assert_eq!(e.kind.code(), "too_large", "{e}");
            assert!(e.index < 20, "refused while the state was still small: {e}");
            assert_eq!(state, json!({"seed": "x".repeat(64)}));
        }
        // Over the operation limit: refused before anything is looked at.
        let budget = StateBudget::default().with_max_operations(1000);
        let mut state = json!({});
        let e = apply_patch_within(&mut state, &copies(100_000), &budget).unwrap_err();
        assert_eq!((e.index, e.kind.code()), (1000, "too_many_operations"));
    }

    #[test]
    fn copying_and_shifting_are_bounded_by_the_work_limit() {
        // Copy a large value and remove the copy, again and again: the state never grows,
        // but each copy costs its size.
        let big = json!({"big": "x".repeat(1 << 20)});
        let churn: Vec<PatchOperation> = (0..50_000)
            .flat_map(|_| {
                [
                    PatchOperation::Copy { from: "/big".into(), path: "/tmp".into() },
                    PatchOperation::Remove { path: "/tmp".into() },
                ]
            })
            .collect();
        let mut state = big.clone();
        let e = apply_patch(&mut state, &churn).unwrap_err();
        assert_eq!(e.kind.code(), "too_much_work", "{e}");
        assert!(e.index < 40, "{e}");
        assert_eq!(state, big);
        // Inserting at the front of a long array shifts every element each time.
        let long = json!({"a": vec![0; 500_000]});
        let front: Vec<PatchOperation> = (0..100_000)
            .map(|_| PatchOperation::Add { path: "/a/0".into(), value: json!(1) })
            .collect();
        let mut state = long.clone();
        let e = apply_patch(&mut state, &front).unwrap_err();
        assert_eq!(e.kind.code(), "too_much_work", "{e}");
        assert_eq!(state, long);
    }

    #[test]
    fn a_long_patch_of_cheap_operations_applies() {
        // 100,000 appends and as many moves sideways: linear, within every limit.
        let mut state = json!({"items": [], "x": {"v": 0}});
        let mut patch: Vec<PatchOperation> = (0..100_000)
            .map(|i| PatchOperation::Add { path: "/items/-".into(), value: json!(i) })
            .collect();
        for i in 0..20_000 {
            let (from, to) = if i % 2 == 0 { ("/x", "/y") } else { ("/y", "/x") };
            patch.push(PatchOperation::Move { from: from.into(), path: to.into() });
        }
        apply_patch(&mut state, &patch).unwrap();
        assert_eq!(state["items"].as_array().unwrap().len(), 100_000);
        assert_eq!(state["x"], json!({"v": 0}));
    }

    #[test]
    fn carried_values_are_bounded_too() {
        let deep = (0..100).fold(json!(1), |v, _| json!([v]));
        let mut state = json!({});
        for op in [
            PatchOperation::Add { path: "/d".into(), value: deep.clone() },
            PatchOperation::Replace { path: String::new(), value: deep.clone() },
            PatchOperation::Test { path: "/d".into(), value: deep.clone() },
        ] {
            let e = apply_patch(&mut state, &[op]).unwrap_err();
            assert_eq!(e.kind.code(), "too_deep");
        }
        // Inserting a value whose depth fits, at a place that makes the state too deep.
        let budget = StateBudget::default().with_max_depth(3);
        let mut state = json!({"a": {"b": {}}});
        let e = apply_patch_within(
            &mut state,
            &[PatchOperation::Add { path: "/a/b/c".into(), value: json!([]) }],
            &budget,
        )
        .unwrap_err();
        assert_eq!(e.kind.code(), "too_deep");
        // A starting state over the budget is refused at operation 0.
        let e = apply_patch_within(
            &mut json!({"a": {"b": {"c": {}}}}),
            &[PatchOperation::Remove { path: "/a".into() }],
            &budget,
        )
        .unwrap_err();
        assert_eq!((e.index, e.kind.code()), (0, "too_deep"));
        let kept = patched_within(json!({"k": 1}), &[], &budget).unwrap();
        assert_eq!(kept, json!({"k": 1}));
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
        fn a_patched_state_keeps_a_tight_budget(
            state in arb_value(),
            patch in prop::collection::vec(arb_op(), 0..8),
        ) {
            let budget = StateBudget::default()
                .with_max_depth(3)
                .with_max_size(120)
                .with_max_work(40);
            let mut s = state.clone();
            let started_within = budget.check(&state).is_ok();
            match apply_patch_within(&mut s, &patch, &budget) {
                Ok(()) if !patch.is_empty() => {
                    prop_assert!(started_within);
                    prop_assert!(budget.check(&s).is_ok(), "{} breaks the budget", s);
                    // The same patch without a budget gives the same result.
                    let mut t = state.clone();
                    prop_assert!(apply_patch(&mut t, &patch).is_ok());
                    prop_assert_eq!(t, s);
                }
                Ok(()) => prop_assert_eq!(&s, &state),
                Err(_) => prop_assert_eq!(&s, &state),
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
