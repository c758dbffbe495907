//! The one glob of name filters: a host's tool allow/deny lists and its channel narrowing
//! (`discord:acme/*`).
//!
//! `*` matches any run of characters (also none), `?` exactly one character; everything else
//! matches itself, case-sensitively. There is no escape and no character class. Matching is the
//! maintained `wildmatch` crate's: it backtracks only to the last `*`, so a match costs at most
//! the product of the two lengths, however many `*`s a pattern has.
//!
//! Capability paths are matched by another, stricter rule, by segments:
//! [`pattern_matches`](super::capability::pattern_matches).

use wildmatch::WildMatch;

/// Whether `text` matches the glob `pattern`: `*` is any run of characters (also empty), `?`
/// one character.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::glob::glob_match;
///
/// assert!(glob_match("note_*", "note_add"));
/// assert!(glob_match("note_*", "note_")); // `*` may be empty
/// assert!(glob_match("get_?", "get_x"));
/// assert!(!glob_match("get_?", "get_xy"));
/// assert!(!glob_match("note_*", "notes_add"));
/// assert!(glob_match("discord:acme/*", "discord:acme/general"));
/// ```
pub fn glob_match(pattern: &str, text: &str) -> bool {
    WildMatch::new(pattern).matches(text)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;

    /// The textbook dynamic program, as the reference: `m[i][j]` is whether the first `i`
    /// pattern characters match the first `j` text characters.
    fn reference(pattern: &str, text: &str) -> bool {
        let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
        let mut m = vec![vec![false; t.len() + 1]; p.len() + 1];
        m[0][0] = true;
        for i in 1..=p.len() {
            for j in 0..=t.len() {
                m[i][j] = match p[i - 1] {
                    '*' => m[i - 1][j] || (j > 0 && m[i][j - 1]),
                    '?' => j > 0 && m[i - 1][j - 1],
                    c => j > 0 && t[j - 1] == c && m[i - 1][j - 1],
                };
            }
        }
        m[p.len()][t.len()]
    }

    #[test]
    fn the_globs_of_tool_filters_and_channels() {
        // Tool filters (mcpl-host).
        assert!(glob_match("*", ""));
        assert!(glob_match("read*", "read_file"));
        assert!(glob_match("*file", "read_file"));
        assert!(glob_match("r?ad", "read"));
        assert!(glob_match("a*b*c", "a--b--c"));
        assert!(!glob_match("a*b*c", "a--b--"));
        assert!(!glob_match("read", "read_file"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "x"));
        assert!(!glob_match("?", ""));
        assert!(glob_match("?", "é"), "`?` is one character, not one byte");
        // Channel narrowing (mcpl-client).
        assert!(glob_match("discord:acme/*", "discord:acme/general"));
        assert!(!glob_match("discord:acme/*", "discord:other/general"));
        assert!(glob_match("a*b*c", "aXbYc"));
        assert!(!glob_match("a*b*c", "aXc"));
        assert!(glob_match("ui", "ui"));
        assert!(!glob_match("ui", "uix"));
        assert!(!glob_match("ab*ba", "aba"));
        assert!(!glob_match("Note_*", "note_add"), "case-sensitive");
    }

    #[test]
    fn many_stars_are_not_exponential() {
        // A backtracking matcher that tries every split of the text among 40 `*`s never ends
        // here (about 300^40 tries); one that backtracks to the last `*` only takes at most
        // 81 x 300 steps. The timeout turns a hang into a failure; it measures nothing.
        let pattern = format!("{}b", "*a".repeat(40));
        let text = "a".repeat(300);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(glob_match(&pattern, &text));
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(false));
    }

    proptest! {
        #[test]
        fn matches_like_the_reference(
            pattern in "[ab*?]{0,12}",
            text in "[ab]{0,12}",
        ) {
            prop_assert_eq!(glob_match(&pattern, &text), reference(&pattern, &text));
        }

        #[test]
        fn hostile_patterns_finish(stars in 1usize..64, len in 0usize..400) {
            // Many `*`s that almost match, against a text they cannot match: bounded by the
            // product of the lengths (the test's own time bound is the harness's).
            let pattern = format!("{}c", "*a".repeat(stars));
            let text = "ab".repeat(len);
            prop_assert!(!glob_match(&pattern, &text));
        }
    }
}
