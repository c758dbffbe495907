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
    meeting_rule(a, b).is_some()
}

/// Which clause of the rule makes two prefixes meet.
///
/// # Examples
///
/// ```
/// use mcpl_host::prefix::{MeetingRule, meeting_rule};
///
/// // Why each pair cannot be configured together.
/// assert_eq!(meeting_rule("notes", "notes"), Some(MeetingRule::Equal));
/// assert_eq!(meeting_rule("notes-", "notes"), Some(MeetingRule::FollowedByDash));
/// assert_eq!(meeting_rule("notes", "notes--v2"), Some(MeetingRule::FollowedBySeparator));
/// assert_eq!(meeting_rule("notes", "notes-v2"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MeetingRule {
    /// The prefixes are equal.
    Equal,
    /// One is the other followed by `-`.
    FollowedByDash,
    /// One begins with the other followed by `--`.
    FollowedBySeparator,
}

impl MeetingRule {
    /// A stable name.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::prefix::MeetingRule;
    ///
    /// assert_eq!(MeetingRule::Equal.as_str(), "equal");
    /// assert_eq!(MeetingRule::FollowedBySeparator.to_string(), "followed by '--'");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            MeetingRule::Equal => "equal",
            MeetingRule::FollowedByDash => "followed by '-'",
            MeetingRule::FollowedBySeparator => "followed by '--'",
        }
    }
}

impl std::fmt::Display for MeetingRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The clause under which `a` and `b` meet, or `None` if they cannot produce the same name.
///
/// ```
/// use mcpl_host::prefix::{MeetingRule, meeting_rule};
///
/// assert_eq!(meeting_rule("a", "a-"), Some(MeetingRule::FollowedByDash));
/// assert_eq!(meeting_rule("a--b", "a"), Some(MeetingRule::FollowedBySeparator));
/// assert_eq!(meeting_rule("a", "ab"), None);
/// ```
pub fn meeting_rule(a: &str, b: &str) -> Option<MeetingRule> {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    match long.strip_prefix(short)? {
        "" => Some(MeetingRule::Equal),
        "-" => Some(MeetingRule::FollowedByDash),
        rest if rest.starts_with("--") => Some(MeetingRule::FollowedBySeparator),
        _ => None,
    }
}

/// Two configured servers whose prefixes meet.
///
/// # Examples
///
/// ```
/// use mcpl_host::prefix::{MeetingRule, check_prefix};
///
/// let err = check_prefix("b", "foo-", [("a", "foo")]).unwrap_err();
/// assert_eq!((err.server_a.as_str(), err.prefix_a.as_str()), ("b", "foo-"));
/// assert_eq!((err.server_b.as_str(), err.prefix_b.as_str()), ("a", "foo"));
/// assert_eq!(err.rule, MeetingRule::FollowedByDash);
/// // The message names both servers, both prefixes and the clause.
/// let message = err.to_string();
/// assert!(message.starts_with(r#"servers "b" (prefix "foo-") and "a" (prefix "foo")"#));
/// assert!(message.ends_with("the prefixes meet (followed by '-')"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "servers {server_a:?} (prefix {prefix_a:?}) and {server_b:?} (prefix {prefix_b:?}) can produce the same tool name: the prefixes meet ({rule})"
)]
#[non_exhaustive]
pub struct PrefixConflict {
    /// One server.
    pub server_a: String,
    /// Its prefix.
    pub prefix_a: String,
    /// The other server.
    pub server_b: String,
    /// Its prefix.
    pub prefix_b: String,
    /// The clause of the rule.
    pub rule: MeetingRule,
}

/// Checks `(server, prefix)` against each of `others`; the first conflict.
///
/// # Examples
///
/// ```
/// use mcpl_host::prefix::check_prefix;
///
/// let configured = [("notes", "mcpl--notes"), ("web", "web")];
/// assert!(check_prefix("files", "mcpl--files", configured).is_ok());
/// // A server is never checked against itself (a restart keeps its prefix).
/// assert!(check_prefix("web", "web", configured).is_ok());
/// let err = check_prefix("notes2", "mcpl--notes--v2", configured).unwrap_err();
/// assert_eq!(err.server_b, "notes");
/// ```
pub fn check_prefix<'a>(
    server: &str,
    prefix: &str,
    others: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), PrefixConflict> {
    for (other, other_prefix) in others {
        if other == server {
            continue;
        }
        if let Some(rule) = meeting_rule(prefix, other_prefix) {
            return Err(PrefixConflict {
                server_a: server.to_owned(),
                prefix_a: prefix.to_owned(),
                server_b: other.to_owned(),
                prefix_b: other_prefix.to_owned(),
                rule,
            });
        }
    }
    Ok(())
}

/// A server prefix equal to a name the host reserved for a module of its own (the embedder's
/// tool namespaces, such as `notes`). Reserved names are compared by equality only.
///
/// # Examples
///
/// ```
/// use mcpl_host::prefix::check_reserved;
///
/// let reserved = ["notes", "shell"];
/// assert!(check_reserved("files", "mcpl--files", reserved).is_ok());
/// assert!(check_reserved("n", "notes-v2", reserved).is_ok()); // equality only
/// let err = check_reserved("n", "notes", reserved).unwrap_err();
/// assert_eq!((err.server.as_str(), err.prefix.as_str()), ("n", "notes"));
/// assert_eq!(err.to_string(), r#"server "n": the prefix "notes" is reserved by the host"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server {server:?}: the prefix {prefix:?} is reserved by the host")]
#[non_exhaustive]
pub struct ReservedPrefix {
    /// The server.
    pub server: String,
    /// Its prefix, equal to a reserved name.
    pub prefix: String,
}

/// Checks `(server, prefix)` against the host's reserved names (equality only).
///
/// # Examples
///
/// ```
/// use mcpl_host::prefix::check_reserved;
///
/// assert!(check_reserved("notes", "mcpl--notes", ["notes"]).is_ok());
/// assert!(check_reserved("notes", "notes", ["notes"]).is_err());
/// ```
pub fn check_reserved<'a>(
    server: &str,
    prefix: &str,
    reserved: impl IntoIterator<Item = &'a str>,
) -> Result<(), ReservedPrefix> {
    if reserved.into_iter().any(|name| name == prefix) {
        return Err(ReservedPrefix { server: server.to_owned(), prefix: prefix.to_owned() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
    fn brief_table_and_conflict_message() {
        let table = [
            ("a", "a", Some(MeetingRule::Equal)),
            ("a", "a-", Some(MeetingRule::FollowedByDash)),
            ("a-", "a--", Some(MeetingRule::FollowedByDash)),
            ("a", "a--", Some(MeetingRule::FollowedBySeparator)),
            ("a", "a--b", Some(MeetingRule::FollowedBySeparator)),
            ("foo", "foo--bar", Some(MeetingRule::FollowedBySeparator)),
            ("mcpl--a", "mcpl--a--b", Some(MeetingRule::FollowedBySeparator)),
            ("mcpl--a", "mcpl--a-", Some(MeetingRule::FollowedByDash)),
            ("a-", "a---", Some(MeetingRule::FollowedBySeparator)),
            ("a", "ab", None),
            ("a", "a-b", None),
            ("a-", "a-b", None),
            ("a-", "a--b", None),
            ("b", "a--b", None),
            ("a", "A", None),
            ("mcpl--a", "mcpl--ab", None),
        ];
        for (a, b, rule) in table {
            assert_eq!(meeting_rule(a, b), rule, "{a} {b}");
            assert_eq!(meeting_rule(b, a), rule, "{b} {a}");
        }
        let e = check_prefix("x", "foo", [("y", "foo--bar"), ("x", "foo")]).unwrap_err();
        let text = e.to_string();
        for part in ["\"x\"", "\"foo\"", "\"y\"", "\"foo--bar\"", "followed by '--'"] {
            assert!(text.contains(part), "{text} lacks {part}");
        }
        assert!(check_prefix("x", "foo", [("y", "foo-bar"), ("z", "foobar")]).is_ok());
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
