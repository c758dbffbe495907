//! [`UriTemplate`]: RFC 6570 URI templates, matched against concrete URIs.
//!
//! Supported expressions: `{var}` (simple), `{+var}` (reserved), `{#var}` (fragment),
//! `{.var}` (label), `{/var}` (path segment), `{?a,b}` (query) and `{&a,b}` (query
//! continuation). Simple, reserved and fragment expressions may list several variables
//! (`{x,y}`); the value modifiers `:n` and `*` are not supported.
//!
//! Matching reads a URI back into variable values. It is lenient where RFC 6570 expansion is
//! strict: a simple, label or path value may contain any character except `/`, `?` and `#`
//! (not only unreserved ones), and a reserved or fragment value any character at all. Values
//! are percent-decoded. A simple value must not be empty. No value runs into a query (`?`) or
//! fragment (`#`) that a later expression of the template reads.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

mod backtrack;
mod linear;

/// A parsed URI template.
///
/// ```
/// use mcpl_server::uri_template::UriTemplate;
///
/// let template = UriTemplate::parse("file:///{+path}{?rev}").unwrap();
/// let vars = template.matches("file:///src/main.rs?rev=3").unwrap();
/// assert_eq!(vars["path"], "src/main.rs");
/// assert_eq!(vars["rev"], "3");
/// assert!(UriTemplate::parse("users://{id}").unwrap().matches("users://a/b").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr { op: Op, vars: Vec<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    Query,
    QueryCont,
}

impl Op {
    /// The character an expansion starts with, if any.
    fn prefix(self) -> Option<char> {
        match self {
            Op::Simple | Op::Reserved => None,
            Op::Fragment => Some('#'),
            Op::Label => Some('.'),
            Op::Path => Some('/'),
            Op::Query => Some('?'),
            Op::QueryCont => Some('&'),
        }
    }

    /// Whether `c` may appear in a matched value.
    fn allows(self, c: char) -> bool {
        match self {
            Op::Reserved | Op::Fragment => true,
            Op::Simple | Op::Label | Op::Path => !matches!(c, '/' | '?' | '#'),
            Op::Query | Op::QueryCont => c != '#',
        }
    }
}

/// Why a URI template could not be parsed.
///
/// # Examples
///
/// ```
/// use mcpl_server::uri_template::UriTemplate;
///
/// let err = UriTemplate::parse("users://{id").unwrap_err();
/// assert_eq!(err.template, "users://{id");
/// assert!(err.to_string().starts_with("invalid URI template"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {problem}")]
#[non_exhaustive]
pub struct UriTemplateError {
    /// The template.
    pub template: String,
    /// What is wrong with it.
    pub problem: String,
}

impl UriTemplate {
    /// Parses a template.
    ///
    /// # Errors
    ///
    /// A [`UriTemplateError`] for an unclosed or empty expression, an invalid variable name,
    /// an unsupported operator or modifier, or a variable used twice.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::uri_template::UriTemplate;
    ///
    /// assert!(UriTemplate::parse("weather://{city}/{day}").is_ok());
    /// assert!(UriTemplate::parse("weather://{city}/{city}").is_err(), "a variable used twice");
    /// ```
    pub fn parse(template: &str) -> Result<Self, UriTemplateError> {
        let fail = |problem: String| UriTemplateError { template: template.to_owned(), problem };
        let mut parts = Vec::new();
        let mut seen = HashSet::new();
        let mut rest = template;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                if rest.contains('}') {
                    return Err(fail("`}` without `{`".to_owned()));
                }
                parts.push(Part::Literal(rest.to_owned()));
                break;
            };
            if open > 0 {
                if rest[..open].contains('}') {
                    return Err(fail("`}` without `{`".to_owned()));
                }
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}').map(|c| c + open) else {
                return Err(fail("an expression is not closed".to_owned()));
            };
            let body = &rest[open + 1..close];
            let (op, names) = match body.chars().next() {
                Some('+') => (Op::Reserved, &body[1..]),
                Some('#') => (Op::Fragment, &body[1..]),
                Some('.') => (Op::Label, &body[1..]),
                Some('/') => (Op::Path, &body[1..]),
                Some('?') => (Op::Query, &body[1..]),
                Some('&') => (Op::QueryCont, &body[1..]),
                Some(c @ ('=' | ',' | '!' | '@' | '|' | ';')) => {
                    return Err(fail(format!("the operator {c:?} is not supported")));
                }
                _ => (Op::Simple, body),
            };
            let mut vars = Vec::new();
            for name in names.split(',') {
                if name.ends_with('*') || name.contains(':') {
                    return Err(fail(format!("the modifier in {name:?} is not supported")));
                }
                let valid = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%'));
                if !valid {
                    return Err(fail(format!("invalid variable name {name:?}")));
                }
                if !seen.insert(name.to_owned()) {
                    return Err(fail(format!("the variable {name:?} appears twice")));
                }
                vars.push(name.to_owned());
            }
            if vars.len() > 1 && matches!(op, Op::Label | Op::Path) {
                return Err(fail("label and path expressions take one variable".to_owned()));
            }
            parts.push(Part::Expr { op, vars });
            rest = &rest[close + 1..];
        }
        Ok(UriTemplate { source: template.to_owned(), parts })
    }

    /// The template as written.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = mcpl_server::uri_template::UriTemplate::parse("a://{x}").unwrap();
    /// assert_eq!(t.as_str(), "a://{x}");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The names of the template's variables, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let t = mcpl_server::uri_template::UriTemplate::parse("repo://{owner}/{name}{?ref}").unwrap();
    /// assert_eq!(t.variables().collect::<Vec<_>>(), ["owner", "name", "ref"]);
    /// ```
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts
            .iter()
            .flat_map(|p| match p {
                Part::Literal(_) => &[][..],
                Part::Expr { vars, .. } => &vars[..],
            })
            .map(String::as_str)
    }

    /// Whether the template has no expressions (it names exactly one URI).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::uri_template::UriTemplate;
    ///
    /// assert!(UriTemplate::parse("file:///etc/hosts").unwrap().is_literal());
    /// assert!(!UriTemplate::parse("file:///{path}").unwrap().is_literal());
    /// ```
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// Matches a concrete URI, returning the (percent-decoded) value of each variable it
    /// defines, or `None` if the URI is not one of the template's.
    ///
    /// Where a URI could be read in several ways, each expression takes the longest value it
    /// can, left to right. Matching takes time linear in the URI's length (times a factor
    /// bounded by the template's size), whatever the URI: it backtracks within a budget
    /// proportional to the URI's length (the fast way for most URIs), and past that budget
    /// reads the URI once with a matcher that tries every way at once. Servers still cap the
    /// length of the URIs they match (see
    /// [`ServerBuilder::max_uri_length`](crate::ServerBuilder::max_uri_length)).
    ///
    /// # Examples
    ///
    /// ```
    /// let t = mcpl_server::uri_template::UriTemplate::parse("users://{id}/posts/{post}").unwrap();
    /// let vars = t.matches("users://7/posts/hello%20world").unwrap();
    /// assert_eq!(vars["id"], "7");
    /// assert_eq!(vars["post"], "hello world");
    /// assert!(t.matches("users://7").is_none());
    /// ```
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match backtrack::matches(&self.parts, uri, true) {
            backtrack::Backtracked::Match(vars) => Some(vars),
            backtrack::Backtracked::NoMatch => None,
            backtrack::Backtracked::OverBudget => self.matches_linearly(uri),
        }
    }

    /// What the linear matcher makes of `uri` (see [`linear`]).
    fn matches_linearly(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let spans = linear::spans(&self.parts, uri)?;
        let exprs = self.parts.iter().filter_map(|p| match p {
            Part::Expr { op, vars } => Some((*op, vars)),
            Part::Literal(_) => None,
        });
        let mut vars = BTreeMap::new();
        for ((op, names), text) in exprs.zip(spans) {
            if let Some(text) = text {
                vars.extend(read_values(op, names, text)?);
            }
        }
        Some(vars)
    }

    /// What backtracking with no budget makes of `uri`: the semantics both matchers keep.
    #[cfg(test)]
    fn matches_by_backtracking(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match backtrack::matches(&self.parts, uri, false) {
            backtrack::Backtracked::Match(vars) => Some(vars),
            _ => None,
        }
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for UriTemplate {
    type Err = UriTemplateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        UriTemplate::parse(s)
    }
}

/// Reads the values of one expression from its matched text (prefix excluded).
fn read_values(op: Op, names: &[String], text: &str) -> Option<Vec<(String, String)>> {
    match op {
        Op::Query | Op::QueryCont => {
            let mut out = Vec::new();
            if text.is_empty() {
                return Some(out);
            }
            for pair in text.split('&') {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                let key = decode(key)?;
                if !names.contains(&key) {
                    return None;
                }
                out.push((key, decode(value)?));
            }
            Some(out)
        }
        _ if names.len() == 1 => Some(vec![(names[0].clone(), decode(text)?)]),
        _ => {
            let values: Vec<&str> = text.split(',').collect();
            if values.len() > names.len() {
                return None;
            }
            names.iter().zip(values).map(|(n, v)| Some((n.clone(), decode(v)?))).collect()
        }
    }
}

/// Percent-decodes `text`; `None` for malformed escapes (`%` and two hex digits) or bytes that
/// are not UTF-8.
fn decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn m(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
        UriTemplate::parse(template).unwrap().matches(uri)
    }

    #[test]
    fn simple_variables_match_one_segment() {
        let vars = m("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(vars["id"], "123");
        assert!(m("test://template/{id}/data", "test://template//data").is_none());
        assert!(m("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(m("test://template/{id}/data", "test://template/1/datax").is_none());
        assert_eq!(m("users://{email}", "users://a%40b.c").unwrap()["email"], "a@b.c");
        let vars = m("x://{a}-{b}", "x://one-two-three").unwrap();
        assert_eq!((vars["a"].as_str(), vars["b"].as_str()), ("one-two", "three"));
        assert_eq!(m("x://{a,b}", "x://1,2").unwrap()["b"], "2");
    }

    #[test]
    fn reserved_variables_span_slashes() {
        let vars = m("file:///{+path}/meta", "file:///a/b/c/meta").unwrap();
        assert_eq!(vars["path"], "a/b/c");
        assert!(m("file:///{+path}", "file:///").is_some());
        assert!(m("file:///{+path}/meta", "file:///a/b").is_none());
    }

    #[test]
    fn operators() {
        assert_eq!(m("x://doc{#frag}", "x://doc#s1").unwrap()["frag"], "s1");
        assert!(m("x://doc{#frag}", "x://doc").unwrap().is_empty());
        assert_eq!(m("x://api{/v}/items", "x://api/v2/items").unwrap()["v"], "v2");
        assert_eq!(m("x://f{.ext}", "x://f.json").unwrap()["ext"], "json");
        let vars = m("x://s{?q,lang}", "x://s?q=rust%20mcp&lang=en").unwrap();
        assert_eq!((vars["q"].as_str(), vars["lang"].as_str()), ("rust mcp", "en"));
        assert!(m("x://s{?q,lang}", "x://s").unwrap().is_empty());
        assert!(m("x://s{?q}", "x://s?other=1").is_none());
        assert_eq!(m("x://s?a=1{&b}", "x://s?a=1&b=2").unwrap()["b"], "2");
    }

    #[test]
    fn bad_templates_are_refused() {
        for bad in ["x://{", "x://}", "x://{}", "x://{a*}", "x://{a:3}", "x://{;a}", "x://{a}/{a}"]
        {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        let t = UriTemplate::parse("x://{a}/{+b}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["a", "b"]);
        assert!(!t.is_literal());
    }

    #[test]
    fn past_its_budget_backtracking_hands_over_to_the_linear_matcher() {
        use super::backtrack::{Backtracked, matches};
        let t = UriTemplate::parse("x://{+a}{+b}{+c}{+d}z").unwrap();
        let uri = format!("x://{}", "y".repeat(4000));
        assert!(matches!(matches(&t.parts, &uri, true), Backtracked::OverBudget));
        assert!(t.matches(&uri).is_none());
        let found = format!("{uri}z");
        assert!(matches!(matches(&t.parts, &found, true), Backtracked::Match(_)), "at once");
        assert_eq!(t.matches(&found).unwrap()["a"].len(), 4000);
        // A match found at the first try is well within the budget.
        let t = UriTemplate::parse("file:///{+path}/{name}").unwrap();
        let uri = format!("file:///{}x", "a/".repeat(4000));
        assert!(matches!(matches(&t.parts, &uri, true), Backtracked::Match(_)));
    }

    #[test]
    fn adversarial_uris_finish() {
        let t = UriTemplate::parse("x://{+a}{+b}{+c}{+d}z").unwrap();
        let uri = format!("x://{}", "y".repeat(400));
        assert!(t.matches(&uri).is_none());
        // Quadratic (or worse) for the backtracking matcher; one pass here.
        let uri = format!("x://{}", "y".repeat(1 << 17));
        assert!(t.matches(&uri).is_none());
        let t = UriTemplate::parse("file:///{+path}/{name}").unwrap();
        let uri = format!("file:///{}x", "a/".repeat(1 << 16));
        assert_eq!(t.matches(&uri).unwrap()["name"], "x");
        assert!(t.matches(&format!("file:///{}", "a/".repeat(1 << 16))).is_none());
    }

    #[test]
    fn values_decode_strictly() {
        assert_eq!(m("x://{a}", "x://%C3%A9").unwrap()["a"], "\u{e9}");
        assert!(m("x://{a}", "x://%C3").is_none(), "not UTF-8");
        assert!(m("x://{a}", "x://%+1").is_none(), "a sign is not a hex digit");
        assert!(m("x://{a}", "x://%4").is_none());
        assert!(m("x://{a}", "x://%zz").is_none());
        // The longest value that decodes: `a` stops short of the malformed escape.
        assert!(m("x://{a}{+b}", "x://ab%zz").is_none());
        assert_eq!(m("x://{a}{+b}", "x://ab%41").unwrap()["a"], "abA");
        // Query keys are decoded before they are compared.
        assert_eq!(m("x://s{?q}", "x://s?%71=1").unwrap()["q"], "1");
        assert!(m("x://s{?q}", "x://s?q=1&").is_none());
    }

    mod same_as_backtracking {
        use proptest::prelude::*;

        use super::super::UriTemplate;

        const LITERALS: &[&str] =
            &["a", "/", "x/", "?", "#", "&", "=", ",", ".", "%", "\u{e9}", "ab", "-"];
        const OPERATORS: &[&str] = &["", "+", "#", ".", "/", "?", "&"];
        const NAMES: &[&str] = &["a", "b", "c", "ab", "x.y"];
        const PIECES: &[&str] = &[
            "a", "b", "c", "ab", "x.y", "/", "?", "#", "&", "=", ",", ".", "-", "%", "%4", "%41",
            "%61", "%C3%A9", "%C3", "%A9", "%zz", "%2C", "%26", "\u{e9}", "1", "x/",
        ];

        #[derive(Debug, Clone)]
        enum Piece {
            Literal(String),
            Expr(&'static str, Vec<&'static str>),
        }

        fn piece() -> impl Strategy<Value = Piece> {
            prop_oneof![
                prop::collection::vec(prop::sample::select(LITERALS), 1..3)
                    .prop_map(|l| Piece::Literal(l.concat())),
                (
                    prop::sample::select(OPERATORS),
                    prop::sample::subsequence(NAMES, 1..3).prop_shuffle()
                )
                    .prop_map(|(op, names)| Piece::Expr(op, names)),
            ]
        }

        fn text() -> impl Strategy<Value = String> {
            prop::collection::vec(prop::sample::select(PIECES), 0..5).prop_map(|p| p.concat())
        }

        /// A template, and a URI shaped like it: each literal kept or replaced, each expression
        /// given some text, its prefix written or not.
        fn template_and_uri() -> impl Strategy<Value = (UriTemplate, String)> {
            prop::collection::vec((piece(), any::<bool>(), any::<bool>(), text()), 0..5)
                .prop_filter_map("the template parses", |pieces| {
                    let mut template = String::new();
                    let mut uri = String::new();
                    for (piece, keep, prefix, text) in pieces {
                        match piece {
                            Piece::Literal(literal) => {
                                template.push_str(&literal);
                                uri.push_str(if keep { &literal } else { &text });
                            }
                            Piece::Expr(op, names) => {
                                template.push_str(&format!("{{{op}{}}}", names.join(",")));
                                if prefix && op != "+" {
                                    uri.push_str(op);
                                }
                                uri.push_str(&text);
                            }
                        }
                    }
                    Some((UriTemplate::parse(&template).ok()?, uri))
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn on_uris_shaped_like_the_template((template, uri) in template_and_uri()) {
                let expected = template.matches_by_backtracking(&uri);
                prop_assert_eq!(&template.matches_linearly(&uri), &expected);
                prop_assert_eq!(&template.matches(&uri), &expected);
            }

            #[test]
            fn on_any_uri((template, _) in template_and_uri(), uri in text()) {
                let expected = template.matches_by_backtracking(&uri);
                prop_assert_eq!(&template.matches_linearly(&uri), &expected);
                prop_assert_eq!(&template.matches(&uri), &expected);
            }
        }
    }
}
