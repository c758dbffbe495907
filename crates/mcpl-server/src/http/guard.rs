//! Request checks as pure functions: Host and Origin (DNS-rebinding protection), and the
//! `Accept`, `Content-Type` and `MCP-Protocol-Version` headers.

use axum::http::{HeaderMap, StatusCode, header};

/// Which `Host` and `Origin` headers an endpoint accepts: the DNS-rebinding protection shared
/// by the Streamable HTTP and WebSocket endpoints.
#[derive(Debug, Clone)]
pub(crate) struct HostPolicy {
    /// Host names (without port) allowed in `Host`; `None`: any.
    pub(crate) allowed_hosts: Option<Vec<String>>,
    /// Origins allowed besides those on an allowed host.
    pub(crate) allowed_origins: Vec<String>,
}

impl Default for HostPolicy {
    fn default() -> Self {
        HostPolicy {
            allowed_hosts: Some(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()]),
            allowed_origins: Vec::new(),
        }
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

/// The host part of a `Host` header value or of an origin's authority: `[::1]` keeps its
/// brackets, a port is dropped.
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |end| &authority[..=end]);
    }
    authority.split(':').next().unwrap_or(authority)
}

fn host_allowed(config: &HostPolicy, host: &str) -> bool {
    match &config.allowed_hosts {
        None => true,
        Some(hosts) => hosts.iter().any(|h| h.eq_ignore_ascii_case(host)),
    }
}

/// Checks `Host` and `Origin`.
pub(crate) fn check_host_and_origin(
    config: &HostPolicy,
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    if config.allowed_hosts.is_some() {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(host_of);
        match host {
            Some(host) if host_allowed(config, host) => {}
            Some(host) => {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    format!("host {host:?} is not allowed"),
                ));
            }
            None => return Err(Refusal::new(StatusCode::BAD_REQUEST, "missing Host header")),
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !origin_allowed(config, origin) {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                format!("origin {origin:?} is not allowed"),
            ));
        }
    }
    Ok(())
}

fn origin_allowed(config: &HostPolicy, origin: &str) -> bool {
    if config.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
        return true;
    }
    let Some((scheme, authority)) = origin.split_once("://") else { return false };
    if !matches!(scheme, "http" | "https") || authority.contains('/') {
        return false;
    }
    // An origin on an allowed host is same-site; with any host allowed, only listed origins
    // and localhost ones pass.
    let host = host_of(authority);
    match &config.allowed_hosts {
        Some(_) => host_allowed(config, host),
        None => matches!(host, "localhost" | "127.0.0.1" | "[::1]"),
    }
}

fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',').any(|part| {
            let media = part.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case(mime) || media == "*/*"
        })
    })
}

/// A POST must accept both JSON and SSE.
pub(crate) fn check_post_accept(headers: &HeaderMap) -> Result<(), Refusal> {
    if accepts(headers, "application/json") && accepts(headers, "text/event-stream") {
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
    if accepts(headers, "text/event-stream") {
        Ok(())
    } else {
        Err(Refusal::new(StatusCode::NOT_ACCEPTABLE, "Accept must list text/event-stream"))
    }
}

/// A POST body must be JSON.
pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), Refusal> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"))
        .unwrap_or(false);
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
        ];
        for (host, ok) in table {
            let r = check_host_and_origin(&c.hosts, &headers(&[("host", host)]));
            assert_eq!(r.is_ok(), ok, "{host}");
            if !ok {
                assert_eq!(r.unwrap_err().status, StatusCode::FORBIDDEN);
            }
        }
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
        ];
        for (origin, ok) in table {
            let h = headers(&[("host", "localhost:3000"), ("origin", origin)]);
            assert_eq!(check_host_and_origin(&c.hosts, &h).is_ok(), ok, "{origin}");
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
    }
}
