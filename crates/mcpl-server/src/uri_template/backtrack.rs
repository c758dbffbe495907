//! The first matcher tried: backtracking, each expression's longest value first, left to
//! right, remembering the (part, position) states that failed. Fast where a URI matches at the
//! first try or fails early, as most do; but what it tries can grow with the square of the
//! URI's length, so it works within a budget proportional to that length, and gives up when
//! the budget is spent (the linear matcher then decides, see `linear`).

use std::collections::{BTreeMap, HashSet};

use super::{Op, Part, read_values};

/// The budget of work (bytes looked at or copied, plus [`ATTEMPT`] per value or literal tried)
/// per byte of the URI, and on top of it.
const BUDGET_PER_BYTE: usize = 8;
const BUDGET_BASE: usize = 4096;

/// What one try of a value or a literal costs besides the bytes it looks at (allocations).
const ATTEMPT: usize = 32;

/// How backtracking went.
#[derive(Debug)]
pub(super) enum Backtracked {
    Match(BTreeMap<String, String>),
    NoMatch,
    /// The budget was spent before an answer.
    OverBudget,
}

/// Matches `uri` against `parts` within the budget for its length (or with no budget at all).
pub(super) fn matches(parts: &[Part], uri: &str, bounded: bool) -> Backtracked {
    let budget = if bounded {
        uri.len().saturating_mul(BUDGET_PER_BYTE).saturating_add(BUDGET_BASE)
    } else {
        usize::MAX
    };
    let mut matcher = Matcher { parts, uri, failed: HashSet::new(), budget, over_budget: false };
    let mut vars = BTreeMap::new();
    let matched = matcher.at(0, 0, &mut vars);
    match (matched, matcher.over_budget) {
        (true, _) => Backtracked::Match(vars),
        (false, false) => Backtracked::NoMatch,
        (false, true) => Backtracked::OverBudget,
    }
}

/// Backtracking matcher; `failed` remembers (part, position) states known not to match, so
/// each state is tried once.
struct Matcher<'a> {
    parts: &'a [Part],
    uri: &'a str,
    failed: HashSet<(usize, usize)>,
    budget: usize,
    over_budget: bool,
}

impl Matcher<'_> {
    /// Takes `work` from the budget; `false` once it is spent (every call after fails too).
    fn spend(&mut self, work: usize) -> bool {
        match self.budget.checked_sub(work) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => {
                self.budget = 0;
                self.over_budget = true;
                false
            }
        }
    }

    fn at(&mut self, part: usize, pos: usize, vars: &mut BTreeMap<String, String>) -> bool {
        let Some(current) = self.parts.get(part) else {
            return pos == self.uri.len();
        };
        if self.over_budget || self.failed.contains(&(part, pos)) {
            return false;
        }
        let ok = match current {
            Part::Literal(lit) => {
                self.spend(ATTEMPT + lit.len())
                    && self.uri[pos..].starts_with(lit.as_str())
                    && self.at(part + 1, pos + lit.len(), vars)
            }
            Part::Expr { op, vars: names } => self.expr(part, pos, *op, names, vars),
        };
        if !ok {
            self.failed.insert((part, pos));
        }
        ok
    }

    fn expr(
        &mut self,
        part: usize,
        pos: usize,
        op: Op,
        names: &[String],
        vars: &mut BTreeMap<String, String>,
    ) -> bool {
        let rest = &self.uri[pos..];
        let start = match op.prefix() {
            Some(prefix) if rest.starts_with(prefix) => pos + prefix.len_utf8(),
            // Undefined variables expand to nothing, prefix included.
            Some(_) => return self.at(part + 1, pos, vars),
            None => pos,
        };
        // A value never runs into the query or fragment a later expression reads.
        let later = |ops: &[Op]| {
            self.parts[part + 1..]
                .iter()
                .any(|p| matches!(p, Part::Expr { op, .. } if ops.contains(op)))
        };
        let (stop_query, stop_fragment) =
            (later(&[Op::Query, Op::QueryCont]), later(&[Op::Fragment]));
        let limit = self.uri[start..]
            .char_indices()
            .find(|&(_, c)| {
                !op.allows(c) || (stop_query && c == '?') || (stop_fragment && c == '#')
            })
            .map_or(self.uri.len(), |(i, _)| start + i);
        if !self.spend(ATTEMPT + (limit - start)) {
            return false;
        }
        let min_end = if op == Op::Simple { start + 1 } else { start };
        // Try the longest value first, then shorter ones.
        let mut end = limit;
        loop {
            if end >= min_end
                && self.uri.is_char_boundary(end)
                && self.next_can_start(part, end)
                && !self.failed.contains(&(part + 1, end))
            {
                // The value is decoded, and the values so far copied for the attempt.
                let copied: usize = vars.values().map(String::len).sum();
                if !self.spend(ATTEMPT + (end - start) + copied) {
                    return false;
                }
                if let Some(values) = read_values(op, names, &self.uri[start..end]) {
                    let mut attempt = vars.clone();
                    attempt.extend(values);
                    if self.at(part + 1, end, &mut attempt) {
                        *vars = attempt;
                        return true;
                    }
                }
            }
            if end <= min_end {
                break;
            }
            end -= 1;
        }
        false
    }

    /// A cheap filter: whether the part after `part` could start at `pos`.
    fn next_can_start(&self, part: usize, pos: usize) -> bool {
        match self.parts.get(part + 1) {
            None => pos == self.uri.len(),
            Some(Part::Literal(lit)) => self.uri[pos..].starts_with(lit.as_str()),
            Some(Part::Expr { .. }) => true,
        }
    }
}
