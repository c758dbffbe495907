//! The budget a state value and a patch must keep: how deep, how large, how many operations
//! and how much copying. A peer controls both the state it ships and the patches it sends, so
//! every limit is enforced while a patch is applied, never by walking the whole result after it.

use serde_json::Value;

use crate::transport::DEFAULT_MAX_MESSAGE_SIZE;

/// Limits on a state value and on a patch applied to it.
///
/// - **depth**: containers (objects and arrays) on the deepest path of the state, and of any
///   value a patch carries. The default, 64, stays well under the 128 levels `serde_json` will
///   parse, so a state can always be sent back inside a message and stored and read again.
/// - **size**: the state's compact serialized length in bytes, counted without escapes. The
///   default is the message size limit: a larger state could not be sent back with a call.
/// - **operations**: operations in one patch (default: a thirty-second of the message limit,
///   about as many as the smallest operations fit in one message).
/// - **work**: bytes copied by `copy` and walked by a `move` to a deeper place, plus array
///   elements shifted by inserts and removals, over the whole patch (default: four times the
///   size limit). This keeps a patch linear in its own length: repeating "copy a large value,
///   remove it" cannot cost more than the budget.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::state::{BudgetExceeded, StateBudget};
/// use serde_json::json;
///
/// let budget = StateBudget::default();
/// assert_eq!(budget.max_depth(), 64);
/// assert_eq!(budget.max_size(), 4 * 1024 * 1024);
///
/// let tight = StateBudget::for_message_size(1024).with_max_depth(3);
/// assert!(tight.check(&json!({"a": [{"b": 1}]})).is_ok());
/// assert_eq!(tight.check(&json!({"a": [{"b": [1]}]})), Err(BudgetExceeded::Depth(3)));
/// assert_eq!(tight.check(&json!("x".repeat(2000))), Err(BudgetExceeded::Size(1024)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateBudget {
    max_depth: usize,
    max_size: usize,
    max_operations: usize,
    max_work: usize,
}

impl Default for StateBudget {
    fn default() -> Self {
        StateBudget::for_message_size(DEFAULT_MAX_MESSAGE_SIZE)
    }
}

impl StateBudget {
    /// The default depth limit.
    pub const DEFAULT_MAX_DEPTH: usize = 64;

    /// The defaults for connections whose messages are at most `bytes` long.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    ///
    /// let budget = StateBudget::for_message_size(1024 * 1024);
    /// assert_eq!(budget.max_size(), 1024 * 1024);
    /// assert_eq!(budget.max_operations(), 32 * 1024);
    /// assert_eq!(budget.max_work(), 4 * 1024 * 1024);
    /// ```
    pub fn for_message_size(bytes: usize) -> Self {
        let bytes = bytes.max(1);
        StateBudget {
            max_depth: Self::DEFAULT_MAX_DEPTH,
            max_size: bytes,
            max_operations: (bytes / 32).max(1),
            max_work: bytes.saturating_mul(4),
        }
    }

    /// Sets the depth limit (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    ///
    /// assert_eq!(StateBudget::default().with_max_depth(16).max_depth(), 16);
    /// ```
    #[must_use]
    pub fn with_max_depth(mut self, levels: usize) -> Self {
        self.max_depth = levels.max(1);
        self
    }

    /// Sets the size limit in bytes (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    ///
    /// assert_eq!(StateBudget::default().with_max_size(65_536).max_size(), 65_536);
    /// ```
    #[must_use]
    pub fn with_max_size(mut self, bytes: usize) -> Self {
        self.max_size = bytes.max(1);
        self
    }

    /// Sets the limit on operations per patch (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    ///
    /// assert_eq!(StateBudget::default().with_max_operations(100).max_operations(), 100);
    /// ```
    #[must_use]
    pub fn with_max_operations(mut self, operations: usize) -> Self {
        self.max_operations = operations.max(1);
        self
    }

    /// Sets the work limit per patch (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    ///
    /// assert_eq!(StateBudget::default().with_max_work(1 << 20).max_work(), 1 << 20);
    /// ```
    #[must_use]
    pub fn with_max_work(mut self, units: usize) -> Self {
        self.max_work = units.max(1);
        self
    }

    /// The depth limit.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The size limit in bytes.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    /// The limit on operations per patch.
    pub fn max_operations(&self) -> usize {
        self.max_operations
    }

    /// The work limit per patch.
    pub fn max_work(&self) -> usize {
        self.max_work
    }

    /// Checks that `value` keeps the depth and size limits. The walk stops at the first limit
    /// crossed (it never visits more than the size limit allows) and uses no recursion.
    ///
    /// # Errors
    ///
    /// [`BudgetExceeded::Depth`] or [`BudgetExceeded::Size`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::{BudgetExceeded, StateBudget};
    /// use serde_json::{Value, json};
    ///
    /// let budget = StateBudget::default();
    /// assert!(budget.check(&json!({"notes": ["milk", "eggs"]})).is_ok());
    /// // A value nested 100 levels deep.
    /// let deep = (0..100).fold(json!(1), |v, _| Value::Array(vec![v]));
    /// assert_eq!(budget.check(&deep), Err(BudgetExceeded::Depth(64)));
    /// ```
    pub fn check(&self, value: &Value) -> Result<(), BudgetExceeded> {
        self.measure(value).map(|_| ())
    }

    /// The size and depth of `value`, or the limit it crosses first.
    pub(crate) fn measure(&self, value: &Value) -> Result<Measure, BudgetExceeded> {
        measure_within(value, self.max_depth, self.max_size)
    }
}

/// The size a [`StateBudget`] counts for `value`: its compact serialized length in bytes,
/// without escapes. Walks the value without recursion.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::state::state_size;
/// use serde_json::json;
///
/// let v = json!({"notes": ["milk", "eggs"]});
/// let compact = serde_json::to_string(&v).unwrap().len();
/// assert!(state_size(&v) >= compact && state_size(&v) <= compact + 2);
/// ```
pub fn state_size(value: &Value) -> usize {
    measure_within(value, usize::MAX, usize::MAX).map_or(usize::MAX, |m| m.size)
}

/// Which limit of a [`StateBudget`] was crossed, with the limit.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::state::BudgetExceeded;
///
/// let e = BudgetExceeded::Depth(64);
/// assert_eq!(e.code(), "too_deep");
/// assert_eq!(e.to_string(), "deeper than 64 levels");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetExceeded {
    /// Nested deeper than this many levels.
    #[error("deeper than {0} levels")]
    Depth(usize),
    /// Larger than this many bytes.
    #[error("larger than {0} bytes")]
    Size(usize),
    /// A patch of more than this many operations.
    #[error("more than {0} operations")]
    Operations(usize),
    /// A patch that copies, walks or shifts more than this much.
    #[error("more than {0} units of copying and shifting")]
    Work(usize),
}

impl BudgetExceeded {
    /// A stable snake-case code for logs and diagnostics.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::BudgetExceeded;
    ///
    /// assert_eq!(BudgetExceeded::Size(10).code(), "too_large");
    /// assert_eq!(BudgetExceeded::Operations(10).code(), "too_many_operations");
    /// assert_eq!(BudgetExceeded::Work(10).code(), "too_much_work");
    /// ```
    pub fn code(self) -> &'static str {
        match self {
            BudgetExceeded::Depth(_) => "too_deep",
            BudgetExceeded::Size(_) => "too_large",
            BudgetExceeded::Operations(_) => "too_many_operations",
            BudgetExceeded::Work(_) => "too_much_work",
        }
    }
}

/// A value's compact serialized length (without escapes) and nesting depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measure {
    pub(crate) size: usize,
    pub(crate) depth: usize,
}

/// The bytes a scalar takes, or a container's brackets.
fn own_size(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => digits(u),
            (None, Some(i)) => digits(i.unsigned_abs()) + 1,
            // The longest shortest-round-trip form of an f64.
            _ => 24,
        },
        Value::String(s) => s.len() + 2,
        Value::Array(_) | Value::Object(_) => 2,
    }
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// What an object member adds besides its value: the quoted key, the colon and a comma.
pub(crate) fn member_overhead(key: &str) -> usize {
    key.len() + 4
}

/// What an array element adds besides its value: a comma.
pub(crate) const ELEMENT_OVERHEAD: usize = 1;

/// Walks `value` without recursion, stopping once it is deeper than `max_depth` or larger than
/// `max_size`.
pub(crate) fn measure_within(
    value: &Value,
    max_depth: usize,
    max_size: usize,
) -> Result<Measure, BudgetExceeded> {
    let mut size = 0usize;
    let mut depth = 0usize;
    // (value, the containers enclosing it)
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, above)) = stack.pop() {
        size = size.saturating_add(own_size(v));
        match v {
            Value::Array(items) => {
                let level = above + 1;
                depth = depth.max(level);
                size = size.saturating_add(items.len().saturating_mul(ELEMENT_OVERHEAD));
                if level > max_depth {
                    return Err(BudgetExceeded::Depth(max_depth));
                }
                stack.extend(items.iter().map(|item| (item, level)));
            }
            Value::Object(members) => {
                let level = above + 1;
                depth = depth.max(level);
                if level > max_depth {
                    return Err(BudgetExceeded::Depth(max_depth));
                }
                for (k, item) in members {
                    size = size.saturating_add(member_overhead(k));
                    stack.push((item, level));
                }
            }
            _ => {}
        }
        if size > max_size {
            return Err(BudgetExceeded::Size(max_size));
        }
    }
    Ok(Measure { size, depth })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn size_is_the_compact_serialized_length_without_escapes() {
        for v in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-12345),
            json!(u64::MAX),
            json!("héllo"),
            json!([]),
            json!({}),
            json!([1, [2, 3], {"a": null}]),
            json!({"key": {"nested": [true, false, "x"]}, "k2": -1}),
        ] {
            let m = measure_within(&v, 100, usize::MAX).unwrap();
            let compact = serde_json::to_string(&v).unwrap().len();
            // One trailing comma per container with members is counted too.
            assert!(m.size >= compact && m.size <= compact + 8, "{v}: {} vs {compact}", m.size);
        }
        let f = measure_within(&json!(0.1), 10, usize::MAX).unwrap();
        assert!(f.size >= "0.1".len());
    }

    #[test]
    fn depth_counts_containers() {
        let budget = StateBudget::default();
        assert_eq!(budget.measure(&json!(1)).unwrap().depth, 0);
        assert_eq!(budget.measure(&json!([])).unwrap().depth, 1);
        assert_eq!(budget.measure(&json!({"a": [{"b": 1}]})).unwrap().depth, 3);
        let deep = (0..64).fold(json!(1), |v, _| json!([v]));
        assert!(budget.check(&deep).is_ok());
        assert_eq!(budget.check(&json!([deep])), Err(BudgetExceeded::Depth(64)));
    }

    #[test]
    fn a_very_deep_value_is_refused_without_recursion() {
        // Built by hand (serde would refuse to parse it); dropped iteratively below.
        let mut v = json!(1);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(StateBudget::default().check(&v), Err(BudgetExceeded::Depth(64)));
        // Unwind without a recursive drop.
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn setters_keep_limits_positive() {
        let b = StateBudget::for_message_size(0)
            .with_max_depth(0)
            .with_max_size(0)
            .with_max_operations(0)
            .with_max_work(0);
        assert_eq!((b.max_depth(), b.max_size(), b.max_operations(), b.max_work()), (1, 1, 1, 1));
    }
}
