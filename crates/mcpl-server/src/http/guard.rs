//! Request checks as pure functions: Host and Origin (DNS-rebinding protection), and the
//! `Accept`, `Content-Type` and `MCP-Protocol-Version` headers.

use axum::http::{HeaderMap, StatusCode, header};

use super::head::Head;

/// Which `Host` and `Origin` headers an endpoint accepts: the DNS-rebinding protection shared
/// by the Streamable HTTP and WebSocket endpoints.
#[derive(Debug, Clone)]
pub(crate) struct OriginRules {
    /// Host names (without port) allowed in `Host`; `None`: any.
    allowed_hosts: Option<Vec<String>>,
    /// Which of `allowed_hosts` are hosts as written (those [`listed_as_written`] may match),
    /// found once when the list is set.
    whole: Vec<bool>,
    /// Origins allowed besides those on an allowed host.
    pub(crate) allowed_origins: Vec<String>,
}

impl Default for OriginRules {
    fn default() -> Self {
        let mut rules =
            OriginRules { allowed_hosts: None, whole: Vec::new(), allowed_origins: Vec::new() };
        rules.allow_hosts(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]);
        rules
    }
}

impl OriginRules {
    /// Allows `Host` headers on these hosts only.
    pub(crate) fn allow_hosts(&mut self, hosts: Vec<String>) {
        self.whole = hosts.iter().map(|h| authority_host(h) == Some(h.as_str())).collect();
        self.allowed_hosts = Some(hosts);
    }

    /// Allows any `Host` header.
    pub(crate) fn allow_any_host(&mut self) {
        self.allowed_hosts = None;
        self.whole.clear();
    }
}

/// Why a request was refused before it reached the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Refusal { status, message: message.into() }
    }
}

/// The host of an authority (RFC 3986 section 3.2, without userinfo), parsed strictly: an IP
/// literal (a valid IPv6 address in brackets, which it keeps) or a registered name (or IPv4
/// address) of unreserved, sub-delimiter and percent-encoded characters, then optionally `:`
/// and a port of 1 to 5 digits up to 65535. Anything else is `None`.
fn authority_host(authority: &str) -> Option<&str> {
    let (host, port) = if let Some(literal) = authority.strip_prefix('[') {
        let end = literal.find(']')?;
        literal[..end].parse::<std::net::Ipv6Addr>().ok()?;
        let (host, rest) = authority.split_at(end + 2);
        match rest {
            "" => (host, None),
            rest => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        // A reg-name holds no `:`, so the first one starts the port (found by byte: the
        // check runs on every request).
        let (host, port) = match authority.bytes().position(|b| b == b':') {
            Some(at) => (&authority[..at], Some(&authority[at + 1..])),
            None => (authority, None),
        };
        if !is_reg_name(host) {
            return None;
        }
        (host, port)
    };
    if port.is_some_and(|digits| !is_port(digits.as_bytes())) {
        return None;
    }
    Some(host)
}

/// Whether `digits` is a port: 1 to 5 ASCII digits, at most 65535.
fn is_port(digits: &[u8]) -> bool {
    (1..=5).contains(&digits.len())
        && digits.iter().all(u8::is_ascii_digit)
        && digits.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')) <= u32::from(u16::MAX)
}

/// Whether `host` (a `Host` header's bytes) is an allowed entry as it is written, up to ASCII
/// case, with or without a port: what a client sends on every request, found without parsing.
/// Only a valid entry (one [`authority_host`] keeps whole: `OriginRules::whole`) matches, so
/// that what this accepts the full check accepts too; anything else takes the full check.
fn listed_as_written(config: &OriginRules, host: &[u8]) -> bool {
    let Some(hosts) = &config.allowed_hosts else { return false };
    hosts.iter().zip(&config.whole).any(|(allowed, &whole)| {
        let Some((name, rest)) = host.split_at_checked(allowed.len()) else { return false };
        whole
            && name.eq_ignore_ascii_case(allowed.as_bytes())
            && (rest.is_empty() || rest.strip_prefix(b":").is_some_and(is_port))
    })
}

/// Whether `host` is a non-empty `reg-name` (RFC 3986): unreserved characters, sub-delimiters
/// and percent-encoded octets (an IPv4 address is one too).
fn is_reg_name(host: &str) -> bool {
    let bytes = host.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
            }
            b if REG_NAME[usize::from(b)] => i += 1,
            _ => return false,
        }
    }
    !bytes.is_empty()
}

/// The bytes a `reg-name` holds as they are: unreserved characters and sub-delimiters (a
/// table: the check runs on every request's `Host`).
const REG_NAME: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let others = b"-._~!$&'()*+,;=";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

/// Whether `host` (of a parsed authority) is `allowed` (an entry of the allow-list): the same
/// name ignoring ASCII case, or the same IPv6 address however it is written.
fn same_host(allowed: &str, host: &str) -> bool {
    if allowed.eq_ignore_ascii_case(host) {
        return true;
    }
    // Only two bracketed literals can name the same address written two ways.
    if !(allowed.starts_with('[') && host.starts_with('[')) {
        return false;
    }
    let ipv6 = |h: &str| {
        h.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .and_then(|h| h.parse::<std::net::Ipv6Addr>().ok())
    };
    match (ipv6(allowed), ipv6(host)) {
        (Some(a), Some(b)) => a == b,
        _ => allowed.eq_ignore_ascii_case(host),
    }
}

fn host_allowed(config: &OriginRules, host: &str) -> bool {
    match &config.allowed_hosts {
        None => true,
        Some(hosts) => hosts.iter().any(|h| same_host(h, host)),
    }
}

/// Checks `Host` and `Origin`.
///
/// `Host`: exactly one, and it must parse as an authority (`400` otherwise, RFC 9112 section
/// 3.2), on an allowed host (`403`). A request without one is refused (`400`) unless any host
/// is allowed. `Origin`: when present, exactly one that parses as an origin
/// (`scheme://host[:port]`, `http` or `https`) and is allowed; anything else is `403`, as the
/// MCP transport requires for an invalid `Origin`.
pub(crate) fn check_host_and_origin(config: &OriginRules, head: &Head<'_>) -> Result<(), Refusal> {
    match (head.host.first, head.host.more) {
        (Some(_), true) => {
            return Err(Refusal::new(StatusCode::BAD_REQUEST, "more than one Host header"));
        }
        (Some(value), false) if listed_as_written(config, value.as_bytes()) => {}
        (Some(value), false) => {
            let Some(host) = value.to_str().ok().and_then(authority_host) else {
                return Err(Refusal::new(StatusCode::BAD_REQUEST, "malformed Host header"));
            };
            if !host_allowed(config, host) {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    format!("host {host:?} is not allowed"),
                ));
            }
        }
        (None, _) if config.allowed_hosts.is_some() => {
            return Err(Refusal::new(StatusCode::BAD_REQUEST, "missing Host header"));
        }
        (None, _) => {}
    }
    match (head.origin.first, head.origin.more) {
        (Some(_), true) => Err(Refusal::new(StatusCode::FORBIDDEN, "more than one Origin header")),
        (Some(origin), false) => {
            let origin = origin.to_str().unwrap_or_default();
            if origin_allowed(config, origin) {
                Ok(())
            } else {
                Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    format!("origin {origin:?} is not allowed"),
                ))
            }
        }
        (None, _) => Ok(()),
    }
}

/// Whether `origin` parses (`http` or `https`, `://`, an authority and nothing more) and is
/// listed, or is on an allowed host.
fn origin_allowed(config: &OriginRules, origin: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else { return false };
    if !matches!(scheme, "http" | "https") {
        return false;
    }
    let Some(host) = authority_host(authority) else { return false };
    if config.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
        return true;
    }
    // An origin on an allowed host is same-site; with any host allowed, only listed origins
    // and localhost ones pass.
    match &config.allowed_hosts {
        Some(_) => host_allowed(config, host),
        None => ["localhost", "127.0.0.1", "[::1]"].iter().any(|h| same_host(h, host)),
    }
}

/// Which of the `wanted` media types the `Accept` headers list (`*/*` lists them all), found
/// in one pass over the headers.
fn accepted<const N: usize>(headers: &HeaderMap, wanted: [&str; N]) -> [bool; N] {
    let mut found = [false; N];
    for value in headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()) {
        for part in value.as_bytes().split(|&b| b == b',') {
            let media = part.split(|&b| b == b';').next().unwrap_or_default().trim_ascii();
            if media == b"*/*" {
                return [true; N];
            }
            for (found, wanted) in found.iter_mut().zip(wanted) {
                *found |= media.eq_ignore_ascii_case(wanted.as_bytes());
            }
        }
    }
    found
}

/// The `Accept` value MCP clients send on a POST, checked as one string before the general
/// parse (most requests carry exactly it).
const POST_ACCEPT: &[u8] = b"application/json, text/event-stream";

/// A POST must accept both JSON and SSE.
pub(crate) fn check_post_accept(head: &Head<'_>) -> Result<(), Refusal> {
    if head.accept.only().is_some_and(|only| only.as_bytes() == POST_ACCEPT) {
        return Ok(());
    }
    if accepted(head.map, ["application/json", "text/event-stream"]) == [true, true] {
        Ok(())
    } else {
        Err(Refusal::new(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must list both application/json and text/event-stream",
        ))
    }
}

/// A GET must accept SSE.
pub(crate) fn check_get_accept(headers: &HeaderMap) -> Result<(), Refusal> {
    if accepted(headers, ["text/event-stream"]) == [true] {
        Ok(())
    } else {
        Err(Refusal::new(StatusCode::NOT_ACCEPTABLE, "Accept must list text/event-stream"))
    }
}

/// A POST body must be JSON.
pub(crate) fn check_content_type(head: &Head<'_>) -> Result<(), Refusal> {
    let ok = head.content_type.is_some_and(|v| {
        // What clients send, compared whole before the general parse.
        v.as_bytes() == b"application/json" || {
            let media = v.as_bytes().split(|&b| b == b';').next().unwrap_or_default();
            media.trim_ascii().eq_ignore_ascii_case(b"application/json")
        }
    });
    if ok {
        Ok(())
    } else {
        Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        ))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::http::HttpConfig;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    // The checks as the endpoint makes them: on one pass over the map.
    fn check_host_and_origin(rules: &OriginRules, map: &HeaderMap) -> Result<(), Refusal> {
        super::check_host_and_origin(rules, &Head::read(map))
    }

    fn check_post_accept(map: &HeaderMap) -> Result<(), Refusal> {
        super::check_post_accept(&Head::read(map))
    }

    fn check_content_type(map: &HeaderMap) -> Result<(), Refusal> {
        super::check_content_type(&Head::read(map))
    }

    #[test]
    fn hosts() {
        let c = HttpConfig::new();
        let table = [
            ("localhost:3000", true),
            ("localhost", true),
            ("127.0.0.1:8080", true),
            ("[::1]:3000", true),
            ("LOCALHOST:1", true),
            ("evil.com", false),
            ("localhost.evil.com:3000", false),
            ("127.0.0.2", false),
            ("[0:0::1]:3000", true),
        ];
        for (host, ok) in table {
            let r = check_host_and_origin(&c.hosts, &headers(&[("host", host)]));
            assert_eq!(r.is_ok(), ok, "{host}");
            if !ok {
                assert_eq!(r.unwrap_err().status, StatusCode::FORBIDDEN);
            }
        }
        for malformed in
            ["[::1]evil.com", "localhost:1@evil.com", "localhost:", "[::1]:", ":80", "a b"]
        {
            let r = check_host_and_origin(&c.hosts, &headers(&[("host", malformed)]));
            assert_eq!(r.unwrap_err().status, StatusCode::BAD_REQUEST, "{malformed}");
        }
        let twice = headers(&[("host", "localhost"), ("host", "localhost")]);
        assert_eq!(
            check_host_and_origin(&c.hosts, &twice).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            check_host_and_origin(&c.hosts, &HeaderMap::new()).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        assert!(
            check_host_and_origin(
                &HttpConfig::new().allow_any_host().hosts,
                &headers(&[("host", "x.com")])
            )
            .is_ok()
        );
    }

    #[test]
    fn origins() {
        let c = HttpConfig::new().allowed_origins(["https://app.example.com"]);
        let table = [
            ("http://localhost:3000", true),
            ("https://127.0.0.1", true),
            ("http://[::1]:9", true),
            ("https://app.example.com", true),
            ("https://evil.com", false),
            ("http://localhost.evil.com", false),
            ("null", false),
            ("file://localhost", false),
            ("http://localhost:1@evil.com", false),
            ("http://[::1]evil.com", false),
            ("http://localhost/", false),
            ("https://app.example.com/", false),
        ];
        for (origin, ok) in table {
            let h = headers(&[("host", "localhost:3000"), ("origin", origin)]);
            assert_eq!(check_host_and_origin(&c.hosts, &h).is_ok(), ok, "{origin}");
        }
    }

    #[test]
    fn authorities() {
        let table = [
            ("localhost", Some("localhost")),
            ("localhost:3000", Some("localhost")),
            ("127.0.0.1:65535", Some("127.0.0.1")),
            ("[::1]", Some("[::1]")),
            ("[2001:db8::7]:443", Some("[2001:db8::7]")),
            ("xn--bcher-kva.example:1", Some("xn--bcher-kva.example")),
            ("a%2Eb", Some("a%2Eb")),
            ("localhost:65536", None),
            ("localhost:000001", None),
            ("localhost:+80", None),
            ("[::1]evil.com", None),
            ("[::1]:80:80", None),
            ("[fe80::1%25eth0]", None),
            ("[v1.x]", None),
            ("user@host", None),
            ("a%2", None),
            ("a%zz", None),
            ("", None),
            ("h\u{e9}te", None),
        ];
        for (authority, host) in table {
            assert_eq!(authority_host(authority), host, "{authority:?}");
        }
    }

    #[test]
    fn ports() {
        for (digits, ok) in [
            ("1", true),
            ("0", true),
            ("00080", true),
            ("65535", true),
            ("65536", false),
            ("99999", false),
            ("000001", false),
            ("", false),
            ("+80", false),
            ("8 0", false),
        ] {
            assert_eq!(is_port(digits.as_bytes()), ok, "{digits:?}");
        }
    }

    #[test]
    fn the_usual_hosts_are_matched_as_written() {
        let rules = HttpConfig::new().hosts;
        for host in ["127.0.0.1:18555", "localhost", "LOCALHOST:1", "[::1]:3000", "[::1]"] {
            assert!(listed_as_written(&rules, host.as_bytes()), "{host:?}");
        }
        // These take the full check (which accepts the first and refuses the others).
        for host in ["[0:0::1]:3000", "localhost:", "localhost:65536", "localhost.evil.com", "x"] {
            assert!(!listed_as_written(&rules, host.as_bytes()), "{host:?}");
        }
        assert!(!listed_as_written(&HttpConfig::new().allow_any_host().hosts, b"localhost"));
    }

    /// The full check alone, without the written-as-listed shortcut.
    fn parsed_and_allowed(rules: &OriginRules, host: &[u8]) -> bool {
        std::str::from_utf8(host)
            .ok()
            .filter(|h| HeaderValue::from_str(h).is_ok_and(|v| v.to_str().is_ok()))
            .and_then(authority_host)
            .is_some_and(|h| host_allowed(rules, h))
    }

    #[test]
    fn an_entry_that_is_no_host_is_never_matched_as_written() {
        for entry in ["a b", "localhost:80", "", "[::1", "h\u{e9}te", "[::1]x"] {
            let rules = HttpConfig::new().allowed_hosts([entry]).hosts;
            for host in [entry.to_owned(), format!("{entry}:80"), ":80".to_owned()] {
                assert!(!listed_as_written(&rules, host.as_bytes()), "{entry:?} {host:?}");
                assert!(!parsed_and_allowed(&rules, host.as_bytes()), "{entry:?} {host:?}");
            }
        }
    }

    proptest::proptest! {
        /// What the shortcut accepts, the full check accepts: any `Host` against any entries.
        #[test]
        fn a_host_matched_as_written_passes_the_full_check(
            entries in proptest::collection::vec("[a-zA-Z0-9.:\\[\\]%-]{0,8}", 0..4),
            host in "[a-zA-Z0-9.:\\[\\]% -]{0,14}",
        ) {
            let rules = HttpConfig::new().allowed_hosts(entries.iter().cloned()).hosts;
            // Half of the hosts are built on an entry, so that the shortcut is taken often.
            for host in [host.clone(), format!("{}{host}", entries.first().map_or("", |e| e))] {
                if listed_as_written(&rules, host.as_bytes()) {
                    proptest::prop_assert!(parsed_and_allowed(&rules, host.as_bytes()), "{host:?}");
                }
            }
        }
    }

    #[test]
    fn a_reg_name_holds_exactly_the_unreserved_and_sub_delimiter_bytes() {
        // RFC 3986: unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"; sub-delims.
        let listed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&b);
        for b in 0..=255u8 {
            assert_eq!(REG_NAME[usize::from(b)], listed(b), "byte {b:#04x}");
        }
    }

    #[test]
    fn accept_and_content_type() {
        assert!(
            check_post_accept(&headers(&[("accept", "application/json, text/event-stream")]))
                .is_ok()
        );
        assert!(
            check_post_accept(&headers(&[
                ("accept", "application/json"),
                ("accept", "text/event-stream;q=0.9")
            ]))
            .is_ok()
        );
        assert!(check_post_accept(&headers(&[("accept", "*/*")])).is_ok());
        assert_eq!(
            check_post_accept(&headers(&[("accept", "application/json")])).unwrap_err().status,
            StatusCode::NOT_ACCEPTABLE
        );
        assert!(check_post_accept(&HeaderMap::new()).is_err());
        assert!(check_get_accept(&headers(&[("accept", "text/event-stream")])).is_ok());
        assert!(check_get_accept(&headers(&[("accept", "application/json")])).is_err());
        assert!(
            check_content_type(&headers(&[("content-type", "application/json; charset=utf-8")]))
                .is_ok()
        );
        assert_eq!(
            check_content_type(&headers(&[("content-type", "text/plain")])).unwrap_err().status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert!(check_content_type(&HeaderMap::new()).is_err());
        for json in ["application/json", "Application/JSON", " application/json ;q=1"] {
            assert!(check_content_type(&headers(&[("content-type", json)])).is_ok(), "{json}");
        }
        for other in ["application/jsonx", "application/json-seq", "text/json", ""] {
            assert!(check_content_type(&headers(&[("content-type", other)])).is_err(), "{other}");
        }
    }
}
