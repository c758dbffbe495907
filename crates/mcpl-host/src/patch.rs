//! RFC 6902 JSON Patch over RFC 6901 pointers, applied atomically.
//!
//! All six operations. A patch is applied to a copy: any failing operation leaves the document
//! untouched and names the operation's index and pointer. `test` compares structurally, with
//! numbers compared by value (`1` equals `1.0`) and objects regardless of member order.
//!
//! ```
//! use mcpl_host::patch::apply;
//! use mcpl_core::mcpl::state::PatchOperation;
//! use serde_json::json;
//!
//! let doc = json!({"notes": ["a"], "count": 1});
//! let patch: Vec<PatchOperation> = serde_json::from_value(json!([
//!     {"op": "test", "path": "/count", "value": 1.0},
//!     {"op": "copy", "from": "/notes/0", "path": "/notes/-"},
//!     {"op": "move", "from": "/count", "path": "/total"},
//! ])).unwrap();
//! assert_eq!(apply(&doc, &patch).unwrap(), json!({"notes": ["a", "a"], "total": 1}));
//!
//! let bad: Vec<PatchOperation> =
//!     serde_json::from_value(json!([{"op": "move", "from": "/notes", "path": "/notes/0"}])).unwrap();
//! assert!(apply(&doc, &bad).is_err());
//! ```

use mcpl_core::mcpl::state::PatchOperation;
use serde_json::Value;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("patch operation {index} ({op} {path:?}): {reason}")]
pub struct PatchError {
    /// The index of the failing operation.
    pub index: usize,
    /// Its `op`.
    pub op: &'static str,
    /// The pointer it failed on.
    pub path: String,
    /// What went wrong.
    pub reason: PatchErrorReason,
}

/// What went wrong in one operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchErrorReason {
    /// The pointer is not a valid JSON Pointer (no leading `/`, or a bad `~` escape).
    #[error("invalid JSON Pointer")]
    InvalidPointer,
    /// The target (or `from`) does not exist.
    #[error("no value at the pointer")]
    NotFound,
    /// The parent of the target does not exist or is not a container.
    #[error("the parent does not exist or is not an object or array")]
    NoParent,
    /// An array index that is not `0`, digits without a leading zero, or an allowed `-`.
    #[error("invalid array index")]
    BadIndex,
    /// An array index past the end.
    #[error("array index out of range")]
    OutOfRange,
    /// `remove` of the whole document.
    #[error("cannot remove the whole document")]
    RemoveRoot,
    /// `move` of a value into its own child.
    #[error("cannot move a value into its own child")]
    MoveIntoChild,
    /// `test` found a different value.
    #[error("test failed: the values differ")]
    TestFailed,
}

impl PatchError {
    /// A stable name of the failure, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self.reason {
            PatchErrorReason::InvalidPointer => "invalid_pointer",
            PatchErrorReason::NotFound => "not_found",
            PatchErrorReason::NoParent => "no_parent",
            PatchErrorReason::BadIndex => "bad_index",
            PatchErrorReason::OutOfRange => "out_of_range",
            PatchErrorReason::RemoveRoot => "remove_root",
            PatchErrorReason::MoveIntoChild => "move_into_child",
            PatchErrorReason::TestFailed => "test_failed",
        }
    }
}

/// Applies `patch` to a copy of `doc` and returns the result; `doc` is never changed.
pub fn apply(doc: &Value, patch: &[PatchOperation]) -> Result<Value, PatchError> {
    let mut out = doc.clone();
    for (index, op) in patch.iter().enumerate() {
        let (name, path) = describe(op);
        apply_one(&mut out, op).map_err(|reason| PatchError {
            index,
            op: name,
            path: path.to_owned(),
            reason,
        })?;
    }
    Ok(out)
}

fn describe(op: &PatchOperation) -> (&'static str, &str) {
    match op {
        PatchOperation::Add { path, .. } => ("add", path),
        PatchOperation::Remove { path, .. } => ("remove", path),
        PatchOperation::Replace { path, .. } => ("replace", path),
        PatchOperation::Move { path, .. } => ("move", path),
        PatchOperation::Copy { path, .. } => ("copy", path),
        PatchOperation::Test { path, .. } => ("test", path),
    }
}

type Step = Result<(), PatchErrorReason>;

fn apply_one(doc: &mut Value, op: &PatchOperation) -> Step {
    match op {
        PatchOperation::Add { path, value, .. } => add(doc, &tokens(path)?, value.clone()),
        PatchOperation::Remove { path, .. } => remove(doc, &tokens(path)?).map(drop),
        PatchOperation::Replace { path, value, .. } => {
            let target = get_mut(doc, &tokens(path)?)?;
            *target = value.clone();
            Ok(())
        }
        PatchOperation::Move { from, path, .. } => {
            let (from_t, path_t) = (tokens(from)?, tokens(path)?);
            if from_t == path_t {
                return get(doc, &from_t).map(drop);
            }
            if path_t.len() > from_t.len() && path_t.starts_with(&from_t) {
                return Err(PatchErrorReason::MoveIntoChild);
            }
            let value = remove(doc, &from_t)?;
            add(doc, &path_t, value)
        }
        PatchOperation::Copy { from, path, .. } => {
            let value = get(doc, &tokens(from)?)?.clone();
            add(doc, &tokens(path)?, value)
        }
        PatchOperation::Test { path, value, .. } => {
            if json_equal(get(doc, &tokens(path)?)?, value) {
                Ok(())
            } else {
                Err(PatchErrorReason::TestFailed)
            }
        }
    }
}

/// Splits a JSON Pointer into unescaped tokens (`~1` to `/`, then `~0` to `~`).
fn tokens(pointer: &str) -> Result<Vec<String>, PatchErrorReason> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let rest = pointer.strip_prefix('/').ok_or(PatchErrorReason::InvalidPointer)?;
    rest.split('/')
        .map(|t| {
            let mut out = String::with_capacity(t.len());
            let mut chars = t.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => return Err(PatchErrorReason::InvalidPointer),
                }
            }
            Ok(out)
        })
        .collect()
}

/// An existing array index: `0`, or digits without a leading zero, below `len`.
fn index(token: &str, len: usize) -> Result<usize, PatchErrorReason> {
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    if !valid {
        return Err(PatchErrorReason::BadIndex);
    }
    let i: usize = token.parse().map_err(|_| PatchErrorReason::OutOfRange)?;
    if i < len { Ok(i) } else { Err(PatchErrorReason::OutOfRange) }
}

fn get<'a>(doc: &'a Value, tokens: &[String]) -> Result<&'a Value, PatchErrorReason> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get(t).ok_or(PatchErrorReason::NotFound)?,
            Value::Array(a) => &a[index(t, a.len()).map_err(not_found)?],
            _ => return Err(PatchErrorReason::NotFound),
        };
    }
    Ok(cur)
}

fn get_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, PatchErrorReason> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or(PatchErrorReason::NotFound)?,
            Value::Array(a) => {
                let i = index(t, a.len()).map_err(not_found)?;
                &mut a[i]
            }
            _ => return Err(PatchErrorReason::NotFound),
        };
    }
    Ok(cur)
}

/// An out-of-range index on a read is a missing value.
fn not_found(e: PatchErrorReason) -> PatchErrorReason {
    match e {
        PatchErrorReason::OutOfRange => PatchErrorReason::NotFound,
        other => other,
    }
}

fn parent<'a>(doc: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, PatchErrorReason> {
    let parent = &tokens[..tokens.len() - 1];
    match get_mut(doc, parent) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Ok(v),
        _ => Err(PatchErrorReason::NoParent),
    }
}

fn add(doc: &mut Value, tokens: &[String], value: Value) -> Step {
    let Some(last) = tokens.last() else {
        *doc = value;
        return Ok(());
    };
    match parent(doc, tokens)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let i = if last == "-" {
                a.len()
            } else {
                // Inserting at `len` appends.
                index(last, a.len() + 1)?
            };
            a.insert(i, value);
            Ok(())
        }
        _ => Err(PatchErrorReason::NoParent),
    }
}

fn remove(doc: &mut Value, tokens: &[String]) -> Result<Value, PatchErrorReason> {
    let Some(last) = tokens.last() else {
        return Err(PatchErrorReason::RemoveRoot);
    };
    match parent(doc, tokens).map_err(|_| PatchErrorReason::NotFound)? {
        Value::Object(m) => m.remove(last).ok_or(PatchErrorReason::NotFound),
        Value::Array(a) => {
            let i = index(last, a.len()).map_err(not_found)?;
            Ok(a.remove(i))
        }
        _ => Err(PatchErrorReason::NotFound),
    }
}

/// JSON equality: objects unordered, arrays ordered, numbers by value.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(i), Some(j), _, _) => i == j,
                (_, _, Some(i), Some(j)) => i == j,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ops(v: Value) -> Vec<PatchOperation> {
        serde_json::from_value(v).unwrap()
    }

    fn run(doc: Value, patch: Value) -> Result<Value, PatchErrorReason> {
        apply(&doc, &ops(patch)).map_err(|e| e.reason)
    }

    #[test]
    fn all_six_operations() {
        let doc = json!({"a": {"b": [1, 2]}, "c": "x"});
        let out = run(
            doc,
            json!([
                {"op": "add", "path": "/a/b/1", "value": 9},
                {"op": "remove", "path": "/c"},
                {"op": "replace", "path": "/a/b/0", "value": 0},
                {"op": "copy", "from": "/a/b", "path": "/d"},
                {"op": "move", "from": "/a/b/2", "path": "/a/last"},
                {"op": "test", "path": "/d", "value": [0, 9, 2]},
            ]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"b": [0, 9], "last": 2}, "d": [0, 9, 2]}));
    }

    #[test]
    fn pointers() {
        let doc = json!({"a/b": {"m~n": 1}, "": 2});
        assert_eq!(
            run(doc.clone(), json!([{"op": "test", "path": "/a~1b/m~0n", "value": 1}])),
            Ok(doc.clone())
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "test", "path": "/", "value": 2}])),
            Ok(doc.clone())
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "test", "path": "a", "value": 2}])),
            Err(PatchErrorReason::InvalidPointer)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "test", "path": "/~2", "value": 2}])),
            Err(PatchErrorReason::InvalidPointer)
        );
        // `~01` is `~1` literally, not `/`.
        let d = json!({"~1": 5});
        assert_eq!(run(d.clone(), json!([{"op": "test", "path": "/~01", "value": 5}])), Ok(d));
        // The whole document.
        assert_eq!(run(json!(1), json!([{"op": "replace", "path": "", "value": 2}])), Ok(json!(2)));
        assert_eq!(run(json!(1), json!([{"op": "add", "path": "", "value": 3}])), Ok(json!(3)));
        assert_eq!(
            run(json!(1), json!([{"op": "remove", "path": ""}])),
            Err(PatchErrorReason::RemoveRoot)
        );
    }

    #[test]
    fn array_indices() {
        let doc = json!([0, 1]);
        assert_eq!(
            run(doc.clone(), json!([{"op": "add", "path": "/2", "value": 2}])),
            Ok(json!([0, 1, 2]))
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "add", "path": "/-", "value": 2}])),
            Ok(json!([0, 1, 2]))
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "add", "path": "/3", "value": 2}])),
            Err(PatchErrorReason::OutOfRange)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "add", "path": "/01", "value": 2}])),
            Err(PatchErrorReason::BadIndex)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "remove", "path": "/-"}])),
            Err(PatchErrorReason::BadIndex)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "remove", "path": "/2"}])),
            Err(PatchErrorReason::NotFound)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "replace", "path": "/-", "value": 1}])),
            Err(PatchErrorReason::BadIndex)
        );
        assert_eq!(
            run(doc, json!([{"op": "copy", "from": "/0", "path": "/-"}])),
            Ok(json!([0, 1, 0]))
        );
    }

    #[test]
    fn missing_targets_are_errors() {
        let doc = json!({"a": 1});
        assert_eq!(
            run(doc.clone(), json!([{"op": "remove", "path": "/b"}])),
            Err(PatchErrorReason::NotFound)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "replace", "path": "/b", "value": 1}])),
            Err(PatchErrorReason::NotFound)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "add", "path": "/x/y", "value": 1}])),
            Err(PatchErrorReason::NoParent)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "add", "path": "/a/y", "value": 1}])),
            Err(PatchErrorReason::NoParent)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "move", "from": "/b", "path": "/c"}])),
            Err(PatchErrorReason::NotFound)
        );
        assert_eq!(
            run(doc, json!([{"op": "copy", "from": "/b", "path": "/c"}])),
            Err(PatchErrorReason::NotFound)
        );
    }

    #[test]
    fn move_rules() {
        let doc = json!({"a": {"b": 1}});
        assert_eq!(
            run(doc.clone(), json!([{"op": "move", "from": "/a", "path": "/a/c"}])),
            Err(PatchErrorReason::MoveIntoChild)
        );
        assert_eq!(
            run(doc.clone(), json!([{"op": "move", "from": "/a", "path": "/a"}])),
            Ok(doc.clone())
        );
        // `/ab` is not a child of `/a`.
        let d = json!({"a": 1});
        assert_eq!(
            run(d, json!([{"op": "move", "from": "/a", "path": "/ab"}])),
            Ok(json!({"ab": 1}))
        );
        assert_eq!(
            run(doc, json!([{"op": "move", "from": "/a/b", "path": "/b"}])),
            Ok(json!({"a": {}, "b": 1}))
        );
    }

    #[test]
    fn test_compares_by_value() {
        let doc = json!({"n": 1, "o": {"x": 1, "y": [1.0, 2]}});
        let same = json!([{"op": "test", "path": "/n", "value": 1.0},
                          {"op": "test", "path": "/o", "value": {"y": [1, 2.0], "x": 1.0}}]);
        assert_eq!(run(doc.clone(), same), Ok(doc.clone()));
        assert_eq!(
            run(doc.clone(), json!([{"op": "test", "path": "/n", "value": "1"}])),
            Err(PatchErrorReason::TestFailed)
        );
        assert_eq!(
            run(doc, json!([{"op": "test", "path": "/o/y", "value": [2, 1]}])),
            Err(PatchErrorReason::TestFailed)
        );
    }

    #[test]
    fn atomic() {
        let doc = json!({"a": 1});
        let err = apply(
            &doc,
            &ops(json!([{"op": "add", "path": "/b", "value": 2},
                                          {"op": "test", "path": "/a", "value": 2}])),
        )
        .unwrap_err();
        assert_eq!(
            (err.index, err.op, err.path.as_str(), err.kind()),
            (1, "test", "/a", "test_failed")
        );
        assert_eq!(doc, json!({"a": 1}));
    }
}
