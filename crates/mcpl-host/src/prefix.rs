//! The prefix-meeting rule.
//!
//! A tool reaches the model as `<prefix>--<tool>`. Two prefixes *meet* when some tool of one
//! and some tool of the other produce the same namespaced name. With tool names that may
//! contain `-`, that happens exactly when:
//!
//! - the prefixes are equal; or
//! - one is the other followed by `-` (`a---x` is `a` with tool `-x` and `a-` with tool `x`); or
//! - one begins with the other followed by `--` (`a--b--x` is `a` with tool `b--x` and `a--b`
//!   with tool `x`).
//!
//! Anything else cannot collide: `foo` beside `foo-bar` or `foobar` is fine.

/// Whether prefixes `a` and `b` can produce the same namespaced tool name.
///
/// # Examples
///
/// ```
/// use mcpl_host::prefixes_meet;
///
/// assert!(prefixes_meet("srv", "srv"));
/// assert!(prefixes_meet("srv", "srv-"));
/// assert!(prefixes_meet("srv--a", "srv"));
/// assert!(!prefixes_meet("srv", "srv-a"));
/// assert!(!prefixes_meet("srv", "srvx"));
/// ```
pub fn prefixes_meet(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    match long.strip_prefix(short) {
        None => false,
        Some("") | Some("-") => true,
        Some(rest) => rest.starts_with("--"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every non-empty string over `alphabet` of length 1..=max.
    fn strings(alphabet: &[char], max: usize) -> Vec<String> {
        let mut out = Vec::new();
        let mut layer = vec![String::new()];
        for _ in 0..max {
            let mut next = Vec::new();
            for s in &layer {
                for c in alphabet {
                    let mut t = s.clone();
                    t.push(*c);
                    next.push(t);
                }
            }
            out.extend(next.iter().cloned());
            layer = next;
        }
        out
    }

    /// Searches for a collision directly: tool names t1, t2 with `a--t1 == b--t2`.
    fn collide(a: &str, b: &str, tools: &[String]) -> bool {
        let names_a: std::collections::HashSet<String> =
            tools.iter().map(|t| format!("{a}--{t}")).collect();
        tools.iter().any(|t| names_a.contains(&format!("{b}--{t}")))
    }

    #[test]
    fn matches_a_brute_force_search_over_all_short_prefixes() {
        let alphabet = ['a', '-'];
        let prefixes = strings(&alphabet, 4);
        // Tool names long enough to absorb any difference between two 4-character prefixes
        // plus the separator.
        let tools = strings(&alphabet, 7);
        let mut meeting = 0;
        for a in &prefixes {
            for b in &prefixes {
                let expected = collide(a, b, &tools);
                assert_eq!(prefixes_meet(a, b), expected, "prefixes {a:?} and {b:?}");
                meeting += usize::from(expected);
            }
        }
        assert!(meeting > prefixes.len(), "the search found the non-trivial meetings too");
    }

    #[test]
    fn named_cases() {
        assert!(!prefixes_meet("foo", "foo-bar"));
        assert!(!prefixes_meet("foo", "foobar"));
        assert!(prefixes_meet("foo", "foo-"));
        assert!(prefixes_meet("foo--bar", "foo"));
        assert!(prefixes_meet("mcpl--a", "mcpl--a"));
        assert!(!prefixes_meet("mcpl--a", "mcpl--b"));
        assert!(prefixes_meet("mcpl--a", "mcpl--a--b"));
    }
}
