//! `mcpl://` URIs (MCPL RFC-004): where an MCPL server lives, resolved to a `wss://` URL.
//!
//! `mcpl://host[:port]/path?query` names a WebSocket endpoint over TLS: port 443 unless given,
//! never plain `ws://`, no `mcpls://` variant, and `localhost` is not special. Resolution is
//! exact and conservative:
//!
//! 1. **String-level rejections, before any parsing**: a fragment (`#`), userinfo (`@` in the
//!    authority), an empty authority (`mcpl:///x`, which a lenient parser would read as host
//!    `x`), a `.` or `..` path segment (also spelled with `%2e`), and a bad port (empty, not
//!    decimal, 0, or over 65535).
//! 2. **Resolution**: the scheme is swapped to `wss:` and the result parsed by a WHATWG URL
//!    parser (the `url` crate), which lowercases the host, applies IDNA, drops `:443` and turns
//!    an empty path into `/`. The query and existing percent-encoding are kept verbatim
//!    (`%7Euser` stays distinct from `~user`; `?b=2&a=1` keeps its order and duplicates).
//! 3. **Canonical form**: the resolved URL with its scheme set back to `mcpl:`.
//!
//! A [`McplUri`] keeps the three apart: [`configured`](McplUri::configured) (what the user
//! wrote), [`canonical`](McplUri::canonical) (the identity to key state by) and
//! [`resolved`](McplUri::resolved) (what is dialled). A URI grants nothing: only the
//! `initialize` exchange shows that the server speaks MCPL.
//!
//! # Examples
//!
//! ```
//! use mcpl_client::transport::McplUri;
//!
//! let uri: McplUri = "mcpl://EIDOVERSE.Animalabs.AI:443/x".parse()?;
//! assert_eq!(uri.configured(), "mcpl://EIDOVERSE.Animalabs.AI:443/x");
//! assert_eq!(uri.canonical(), "mcpl://eidoverse.animalabs.ai/x");
//! assert_eq!(uri.resolved().as_str(), "wss://eidoverse.animalabs.ai/x");
//!
//! assert!("mcpl://user@example.com/x".parse::<McplUri>().is_err());
//! # Ok::<(), mcpl_client::transport::McplUriError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use url::Url;

/// The scheme of MCPL URIs.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::McplUri;
/// use mcpl_client::transport::mcpl_uri::SCHEME;
///
/// let uri: McplUri = "mcpl://example.com/agent".parse()?;
/// assert_eq!(uri.canonical().split_once("://").map(|(scheme, _)| scheme), Some(SCHEME));
/// # Ok::<(), mcpl_client::transport::McplUriError>(())
/// ```
pub const SCHEME: &str = "mcpl";

/// A resolved `mcpl://` URI. See the [module documentation](self).
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
///
/// use mcpl_client::transport::{McplUri, WebSocketTransport};
///
/// // Spellings of one server share one identity.
/// let a: McplUri = "MCPL://Example.com:443/agent".parse()?;
/// let b: McplUri = "mcpl://example.com/agent".parse()?;
/// assert_eq!(a.canonical(), b.canonical());
/// assert_eq!(a.to_string(), "mcpl://example.com/agent");
///
/// let mut last_seen: HashMap<String, u64> = HashMap::new();
/// last_seen.insert(a.canonical().to_owned(), 1);
/// assert_eq!(last_seen.get(b.canonical()), Some(&1));
///
/// // Dial it.
/// let transport = WebSocketTransport::mcpl(&b);
/// # drop(transport);
/// # Ok::<(), mcpl_client::transport::McplUriError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct McplUri {
    configured: String,
    canonical: String,
    resolved: Url,
}

/// Why a string is not an acceptable `mcpl://` URI.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::{McplUri, McplUriError};
///
/// assert_eq!(McplUri::parse("wss://example.com/x"), Err(McplUriError::NotMcpl));
/// assert_eq!(McplUri::parse("mcpl://example.com/x#top"), Err(McplUriError::Fragment));
/// assert_eq!(McplUri::parse("mcpl://me:pw@example.com/x"), Err(McplUriError::Userinfo));
/// assert_eq!(McplUri::parse("mcpl://example.com/a/../b"), Err(McplUriError::DotSegment));
/// assert_eq!(McplUri::parse("mcpl://example.com:0/x"), Err(McplUriError::BadPort("0".into())));
/// // The message says which rule was broken.
/// let err = McplUri::parse("mcpl://example.com:99999/x").unwrap_err();
/// assert_eq!(err.to_string(), r#"invalid port "99999" in mcpl:// URI"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McplUriError {
    /// The string does not start with `mcpl://`.
    #[error("not an mcpl:// URI")]
    NotMcpl,
    /// The URI has a fragment (`#`).
    #[error("an mcpl:// URI must not have a fragment")]
    Fragment,
    /// The URI has userinfo (`user@` or `user:password@`).
    #[error("an mcpl:// URI must not carry userinfo")]
    Userinfo,
    /// The authority (host) is empty.
    #[error("an mcpl:// URI must name a host")]
    EmptyAuthority,
    /// A path segment is `.` or `..` (possibly percent-encoded).
    #[error("an mcpl:// URI must not have `.` or `..` path segments")]
    DotSegment,
    /// The port is empty, not decimal, 0, or over 65535.
    #[error("invalid port {0:?} in mcpl:// URI")]
    BadPort(String),
    /// The URL parser rejected the resolved `wss://` URL.
    #[error("invalid mcpl:// URI: {0}")]
    Invalid(String),
}

/// What kind of [`McplUriError`] happened, stable across releases.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::{McplUri, McplUriErrorKind};
///
/// // Match on the stable kind, not on the error's details.
/// match McplUri::parse("mcpl://example.com:http/x") {
///     Err(e) if e.kind() == McplUriErrorKind::BadPort => {}
///     other => panic!("expected a bad port, got {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McplUriErrorKind {
    /// See [`McplUriError::NotMcpl`].
    NotMcpl,
    /// See [`McplUriError::Fragment`].
    Fragment,
    /// See [`McplUriError::Userinfo`].
    Userinfo,
    /// See [`McplUriError::EmptyAuthority`].
    EmptyAuthority,
    /// See [`McplUriError::DotSegment`].
    DotSegment,
    /// See [`McplUriError::BadPort`].
    BadPort,
    /// See [`McplUriError::Invalid`].
    Invalid,
}

impl McplUriError {
    /// The stable kind of this error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::{McplUri, McplUriErrorKind};
    ///
    /// let kind = |uri: &str| McplUri::parse(uri).unwrap_err().kind();
    /// assert_eq!(kind("https://example.com/"), McplUriErrorKind::NotMcpl);
    /// assert_eq!(kind("mcpl:///x"), McplUriErrorKind::EmptyAuthority);
    /// assert_eq!(kind("mcpl://example.com/%2E%2E/x"), McplUriErrorKind::DotSegment);
    /// assert_eq!(kind("mcpl://example.com:65536/"), McplUriErrorKind::BadPort);
    /// ```
    pub fn kind(&self) -> McplUriErrorKind {
        match self {
            McplUriError::NotMcpl => McplUriErrorKind::NotMcpl,
            McplUriError::Fragment => McplUriErrorKind::Fragment,
            McplUriError::Userinfo => McplUriErrorKind::Userinfo,
            McplUriError::EmptyAuthority => McplUriErrorKind::EmptyAuthority,
            McplUriError::DotSegment => McplUriErrorKind::DotSegment,
            McplUriError::BadPort(_) => McplUriErrorKind::BadPort,
            McplUriError::Invalid(_) => McplUriErrorKind::Invalid,
        }
    }
}

/// Whether `s` starts with `mcpl://`, the scheme compared without case. Returns the rest.
fn strip_scheme(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    rest.strip_prefix("//")
}

/// `/` and, as a WHATWG parser reads it for `wss:`, `\` end the authority and separate
/// segments.
fn is_path_separator(c: char) -> bool {
    c == '/' || c == '\\'
}

/// Whether a path segment means `.` or `..`, with `%2e` read as a dot.
fn is_dot_segment(segment: &str) -> bool {
    let lower = segment.to_ascii_lowercase();
    let dots = lower.replace("%2e", ".");
    dots == "." || dots == ".."
}

/// Checks the port of an authority (`host[:port]`, the host maybe a bracketed IPv6 address).
fn check_port(authority: &str) -> Result<(), McplUriError> {
    let after_host = match authority.strip_prefix('[') {
        Some(rest) => match rest.find(']') {
            Some(end) => &rest[end + 1..],
            None => return Err(McplUriError::Invalid("unterminated IPv6 address".into())),
        },
        None => authority.find(':').map_or("", |i| &authority[i..]),
    };
    if after_host.is_empty() {
        return Ok(());
    }
    let Some(port) = after_host.strip_prefix(':') else {
        return Err(McplUriError::Invalid(format!("unexpected {after_host:?} after the host")));
    };
    let valid = !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
    if valid { Ok(()) } else { Err(McplUriError::BadPort(port.to_owned())) }
}

impl McplUri {
    /// Resolves `uri`. See the [module documentation](self) for the rules.
    ///
    /// # Errors
    ///
    /// [`McplUriError`] says which rule the string broke.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::{McplUri, McplUriErrorKind};
    ///
    /// let uri = McplUri::parse("mcpl://example.com")?;
    /// assert_eq!(uri.resolved().as_str(), "wss://example.com/");
    /// assert_eq!(McplUri::parse("mcpl:///x").unwrap_err().kind(), McplUriErrorKind::EmptyAuthority);
    /// # Ok::<(), mcpl_client::transport::McplUriError>(())
    /// ```
    pub fn parse(uri: &str) -> Result<McplUri, McplUriError> {
        let rest = strip_scheme(uri).ok_or(McplUriError::NotMcpl)?;
        if uri.contains('#') {
            return Err(McplUriError::Fragment);
        }
        // Userinfo is looked for up to the first `/` or `?`, past a `\`: `mcpl://a\@b/` is
        // refused rather than read as host `a` by one reader and host `b` by another.
        let loose_end = rest.find(['/', '?']).unwrap_or(rest.len());
        if rest[..loose_end].contains('@') {
            return Err(McplUriError::Userinfo);
        }
        let authority_end = rest.find(|c| is_path_separator(c) || c == '?').unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        if authority.is_empty() {
            return Err(McplUriError::EmptyAuthority);
        }
        let path = tail.split('?').next().unwrap_or_default();
        if path.split(is_path_separator).any(is_dot_segment) {
            return Err(McplUriError::DotSegment);
        }
        check_port(authority)?;
        if authority.starts_with(':') {
            return Err(McplUriError::EmptyAuthority);
        }
        let resolved = Url::parse(&format!("wss://{rest}"))
            .map_err(|e| McplUriError::Invalid(e.to_string()))?;
        if resolved.host_str().is_none_or(str::is_empty) {
            return Err(McplUriError::EmptyAuthority);
        }
        let Some(after_scheme) = resolved.as_str().strip_prefix("wss:") else {
            return Err(McplUriError::Invalid("the resolved URL is not wss:".into()));
        };
        let canonical = format!("{SCHEME}:{after_scheme}");
        Ok(McplUri { configured: uri.to_owned(), canonical, resolved })
    }

    /// The URI as configured, unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::McplUri;
    ///
    /// let uri: McplUri = "MCPL://Example.COM:443".parse()?;
    /// // As the user wrote it: for messages and settings screens.
    /// assert_eq!(uri.configured(), "MCPL://Example.COM:443");
    /// assert_eq!(uri.canonical(), "mcpl://example.com/");
    /// # Ok::<(), mcpl_client::transport::McplUriError>(())
    /// ```
    pub fn configured(&self) -> &str {
        &self.configured
    }

    /// The canonical `mcpl://` form: the identity of the server (to key caches and state by).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::McplUri;
    ///
    /// // Host lowercased, `:443` dropped, an empty path made `/`; the query kept verbatim.
    /// let uri: McplUri = "mcpl://Agents.Example.com:443?b=2&a=1".parse()?;
    /// assert_eq!(uri.canonical(), "mcpl://agents.example.com/?b=2&a=1");
    /// // Percent-encoding is kept as written: these are two servers.
    /// let tilde: McplUri = "mcpl://example.com/~user".parse()?;
    /// let encoded: McplUri = "mcpl://example.com/%7Euser".parse()?;
    /// assert_ne!(tilde.canonical(), encoded.canonical());
    /// # Ok::<(), mcpl_client::transport::McplUriError>(())
    /// ```
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// The `wss://` URL the transport dials.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::transport::McplUri;
    ///
    /// let uri: McplUri = "mcpl://example.com:8443/agent".parse()?;
    /// let url = uri.resolved();
    /// assert_eq!(url.scheme(), "wss");
    /// assert_eq!(url.host_str(), Some("example.com"));
    /// assert_eq!(url.port_or_known_default(), Some(8443));
    /// assert_eq!(url.path(), "/agent");
    /// # Ok::<(), mcpl_client::transport::McplUriError>(())
    /// ```
    pub fn resolved(&self) -> &Url {
        &self.resolved
    }
}

impl FromStr for McplUri {
    type Err = McplUriError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        McplUri::parse(s)
    }
}

/// Shows the canonical form.
impl fmt::Display for McplUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn resolves(input: &str, resolved: &str, canonical: &str) {
        let uri = McplUri::parse(input).unwrap_or_else(|e| panic!("{input} was rejected: {e}"));
        assert_eq!(uri.configured(), input);
        assert_eq!(uri.resolved().as_str(), resolved, "{input}");
        assert_eq!(uri.canonical(), canonical, "{input}");
        assert_eq!(uri.to_string(), canonical);
        // The canonical form is a fixed point.
        let again = McplUri::parse(canonical).unwrap();
        assert_eq!(again.canonical(), canonical);
        assert_eq!(again.resolved(), uri.resolved());
    }

    #[test]
    fn examples_of_the_brief_resolve() {
        resolves(
            "mcpl://EIDOVERSE.Animalabs.AI:443/x",
            "wss://eidoverse.animalabs.ai/x",
            "mcpl://eidoverse.animalabs.ai/x",
        );
        resolves(
            "mcpl://ünicode.example/x",
            "wss://xn--nicode-2ya.example/x",
            "mcpl://xn--nicode-2ya.example/x",
        );
        resolves("mcpl://example.com", "wss://example.com/", "mcpl://example.com/");
    }

    #[test]
    fn query_and_percent_encoding_are_kept_verbatim() {
        resolves("mcpl://h.example/%7Euser", "wss://h.example/%7Euser", "mcpl://h.example/%7Euser");
        resolves("mcpl://h.example/~user", "wss://h.example/~user", "mcpl://h.example/~user");
        assert_ne!(
            McplUri::parse("mcpl://h.example/%7Euser").unwrap(),
            McplUri::parse("mcpl://h.example/~user").unwrap()
        );
        resolves(
            "mcpl://h.example/x?b=2&a=1&a=1",
            "wss://h.example/x?b=2&a=1&a=1",
            "mcpl://h.example/x?b=2&a=1&a=1",
        );
        resolves("mcpl://h.example?q=1", "wss://h.example/?q=1", "mcpl://h.example/?q=1");
    }

    #[test]
    fn ports_hosts_and_scheme_case() {
        resolves("mcpl://h.example:8443/x", "wss://h.example:8443/x", "mcpl://h.example:8443/x");
        resolves("MCPL://h.example/x", "wss://h.example/x", "mcpl://h.example/x");
        // localhost is not special: still wss, still 443.
        resolves("mcpl://localhost/x", "wss://localhost/x", "mcpl://localhost/x");
        resolves("mcpl://127.0.0.1:9000/", "wss://127.0.0.1:9000/", "mcpl://127.0.0.1:9000/");
        resolves("mcpl://[::1]:9000/x", "wss://[::1]:9000/x", "mcpl://[::1]:9000/x");
        resolves("mcpl://[::1]/x", "wss://[::1]/x", "mcpl://[::1]/x");
    }

    #[test]
    fn rejections() {
        use McplUriErrorKind as K;
        let table = [
            ("wss://h.example/x", K::NotMcpl),
            ("ws://h.example/x", K::NotMcpl),
            ("mcpls://h.example/x", K::NotMcpl),
            ("mcpl:h.example/x", K::NotMcpl),
            ("h.example/x", K::NotMcpl),
            ("mcpl://h.example/x#frag", K::Fragment),
            ("mcpl://h.example/x#", K::Fragment),
            ("mcpl://user@h.example/x", K::Userinfo),
            ("mcpl://user:pw@h.example/x", K::Userinfo),
            ("mcpl://@h.example/x", K::Userinfo),
            ("mcpl://a\\@h.example/x", K::Userinfo),
            ("mcpl:///x", K::EmptyAuthority),
            ("mcpl://", K::EmptyAuthority),
            ("mcpl://?q", K::EmptyAuthority),
            ("mcpl://:443/x", K::EmptyAuthority),
            ("mcpl://h.example/a/../b", K::DotSegment),
            ("mcpl://h.example/./b", K::DotSegment),
            ("mcpl://h.example/..", K::DotSegment),
            ("mcpl://h.example/a/.", K::DotSegment),
            ("mcpl://h.example/a/%2e%2e/b", K::DotSegment),
            ("mcpl://h.example/a/%2E/b", K::DotSegment),
            ("mcpl://h.example/a/.%2E/b", K::DotSegment),
            ("mcpl://h.example/a\\..\\b", K::DotSegment),
            ("mcpl://h.example:/x", K::BadPort),
            ("mcpl://h.example:0/x", K::BadPort),
            ("mcpl://h.example:65536/x", K::BadPort),
            ("mcpl://h.example:99999999999/x", K::BadPort),
            ("mcpl://h.example:abc/x", K::BadPort),
            ("mcpl://h.example:-1/x", K::BadPort),
            ("mcpl://h.example:44 3/x", K::BadPort),
            ("mcpl://[::1]:x/", K::BadPort),
            ("mcpl://h ost.example/x", K::Invalid),
            ("mcpl://[::1/x", K::Invalid),
        ];
        for (input, kind) in table {
            let got = McplUri::parse(input).map(|u| u.canonical().to_owned());
            assert_eq!(got.as_ref().map_err(McplUriError::kind), Err(kind), "{input}: {got:?}");
        }
        // Dots that are not whole segments are fine.
        resolves(
            "mcpl://h.example/a.b/..c/.d",
            "wss://h.example/a.b/..c/.d",
            "mcpl://h.example/a.b/..c/.d",
        );
        // A dot segment in the query is not a path segment.
        resolves(
            "mcpl://h.example/x?p=../y",
            "wss://h.example/x?p=../y",
            "mcpl://h.example/x?p=../y",
        );
    }
}
