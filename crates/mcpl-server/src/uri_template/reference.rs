//! The backtracking matcher templates were matched with before the linear one (see
//! `matcher`): the reference the property tests hold the linear matcher to.

use std::collections::{BTreeMap, HashSet};

use super::{Op, Part, UriTemplate, read_values};

impl UriTemplate {
    /// What the backtracking matcher makes of `uri`.
    pub(super) fn matches_by_backtracking(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut matcher = Matcher { parts: &self.parts, uri, failed: HashSet::new() };
        let mut vars = BTreeMap::new();
        matcher.at(0, 0, &mut vars).then_some(vars)
    }
}

/// Backtracking matcher; `failed` remembers (part, position) states known not to match, so
/// each state is tried once.
struct Matcher<'a> {
    parts: &'a [Part],
    uri: &'a str,
    failed: HashSet<(usize, usize)>,
}

impl Matcher<'_> {
    fn at(&mut self, part: usize, pos: usize, vars: &mut BTreeMap<String, String>) -> bool {
        let Some(current) = self.parts.get(part) else {
            return pos == self.uri.len();
        };
        if self.failed.contains(&(part, pos)) {
            return false;
        }
        let ok = match current {
            Part::Literal(lit) => {
                self.uri[pos..].starts_with(lit.as_str())
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
        let min_end = if op == Op::Simple { start + 1 } else { start };
        // Try the longest value first, then shorter ones.
        let mut end = limit;
        loop {
            if end >= min_end
                && self.uri.is_char_boundary(end)
                && self.next_can_start(part, end)
                && !self.failed.contains(&(part + 1, end))
            {
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
