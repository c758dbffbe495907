//! The request headers the endpoint reads on every request, found in one pass over the
//! request's header map instead of one hashed lookup each (a lookup of a custom name such as
//! `Mcp-Method` hashes the whole name; the pass compares names the map already holds).

use axum::http::{HeaderMap, HeaderValue};

use super::stateless::{MCP_METHOD, MCP_NAME};
use super::{PROTOCOL_VERSION, SESSION_ID};

/// A header that may be sent more than once: its first value, and whether there were more.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Values<'a> {
    /// The first value, as `HeaderMap::get` would give it.
    pub(crate) first: Option<&'a HeaderValue>,
    /// Whether the header was sent more than once.
    pub(crate) more: bool,
}

impl<'a> Values<'a> {
    fn see(&mut self, value: &'a HeaderValue) {
        match self.first {
            None => self.first = Some(value),
            Some(_) => self.more = true,
        }
    }

    /// The one value sent, if the header was sent exactly once.
    pub(crate) fn only(&self) -> Option<&'a HeaderValue> {
        self.first.filter(|_| !self.more)
    }
}

/// What one pass over a request's headers found: each header the endpoint reads on every
/// request, first value first (as `HeaderMap::get` gives it), and the map itself for the rest.
#[derive(Debug)]
pub(crate) struct Head<'a> {
    /// The whole map, for what is read only on some requests (`Mcp-Param-*`, `Last-Event-ID`).
    pub(crate) map: &'a HeaderMap,
    pub(crate) host: Values<'a>,
    pub(crate) origin: Values<'a>,
    pub(crate) accept: Values<'a>,
    pub(crate) content_type: Option<&'a HeaderValue>,
    /// `MCP-Protocol-Version` as text (read once: every POST checks it twice), if sent and
    /// readable.
    protocol_version: Option<&'a str>,
    pub(crate) session_id: Option<&'a HeaderValue>,
    pub(crate) method: Option<&'a HeaderValue>,
    pub(crate) name: Option<&'a HeaderValue>,
}

impl<'a> Head<'a> {
    /// Reads `map` in one pass. A map holds at most the header count hyper's parser allows
    /// (100 by default), so the pass is bounded as any lookup is.
    pub(crate) fn read(map: &'a HeaderMap) -> Self {
        let mut version = None;
        let mut head = Head {
            map,
            host: Values::default(),
            origin: Values::default(),
            accept: Values::default(),
            content_type: None,
            protocol_version: None,
            session_id: None,
            method: None,
            name: None,
        };
        for (name, value) in map {
            let first = |slot: &mut Option<&'a HeaderValue>| {
                slot.get_or_insert(value);
            };
            // Names in a map are lower case: a string match is exact.
            match name.as_str() {
                "host" => head.host.see(value),
                "origin" => head.origin.see(value),
                "accept" => head.accept.see(value),
                "content-type" => first(&mut head.content_type),
                PROTOCOL_VERSION => first(&mut version),
                SESSION_ID => first(&mut head.session_id),
                MCP_METHOD => first(&mut head.method),
                MCP_NAME => first(&mut head.name),
                _ => {}
            }
        }
        head.protocol_version = text(version);
        head
    }

    /// `MCP-Protocol-Version` as text, if sent and readable.
    pub(crate) fn protocol_version(&self) -> Option<&'a str> {
        self.protocol_version
    }
}

/// A header value as text, if it is visible ASCII (as `HeaderValue::to_str` reads it).
pub(crate) fn text(value: Option<&HeaderValue>) -> Option<&str> {
    value.and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use axum::http::HeaderName;

    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_pass_finds_what_lookups_find() {
        let headers = map(&[
            ("host", "localhost"),
            ("accept", "application/json"),
            ("x-other", "1"),
            ("mcp-protocol-version", "2026-07-28"),
            ("accept", "text/event-stream"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
            ("mcp-session-id", "abc"),
            ("content-type", "application/json"),
            ("content-type", "text/plain"),
            ("mcp-method", "ping"),
        ]);
        let head = Head::read(&headers);
        let get = |name: &str| headers.get(name);
        assert_eq!(head.host.first, get("host"));
        assert!(!head.host.more);
        assert_eq!(head.host.only(), get("host"));
        assert_eq!(head.accept.first, get("accept"));
        assert!(head.accept.more);
        assert_eq!(head.accept.only(), None);
        assert_eq!(head.origin.first, None);
        assert_eq!(head.content_type, get("content-type"));
        assert_eq!(head.protocol_version(), Some("2026-07-28"));
        assert_eq!(head.session_id, get("mcp-session-id"));
        // The first of a repeated header, as `get` gives it.
        assert_eq!(head.method.unwrap(), "tools/call");
        assert_eq!(head.method, get("mcp-method"));
        assert_eq!(head.name, get("mcp-name"));
    }

    #[test]
    fn nothing_sent_is_nothing_found() {
        let headers = HeaderMap::new();
        let head = Head::read(&headers);
        assert!(head.host.first.is_none() && head.accept.first.is_none());
        assert!(head.protocol_version().is_none() && head.method.is_none());
    }

    #[test]
    fn an_unreadable_value_is_no_text() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-protocol-version", HeaderValue::from_bytes(b"2026\xff").unwrap());
        assert_eq!(Head::read(&headers).protocol_version(), None);
    }
}
