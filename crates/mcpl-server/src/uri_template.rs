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
        let mut matcher = Matcher { parts: &self.parts, uri, failed: HashSet::new() };
        let mut vars = BTreeMap::new();
        matcher.at(0, 0, &mut vars).then_some(vars)
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

/// Percent-decodes `text`; `None` for malformed escapes or bytes that are not UTF-8.
fn decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
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
    fn adversarial_uris_finish() {
        let t = UriTemplate::parse("x://{+a}{+b}{+c}{+d}z").unwrap();
        let uri = format!("x://{}", "y".repeat(400));
        assert!(t.matches(&uri).is_none());
    }
}
