//! What every stateless-era result carries: `resultType`, the server's identity in `_meta`,
//! and caching hints on cacheable results.
//!
//! Transports that write results themselves (Streamable HTTP) write `resultType` and the
//! server's identity as they serialize, by the same rule as [`decorate`]: what the handler set
//! stays.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use mcpl_core::types::{meta_keys, names};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::admission::supported_versions;
use crate::cache::{CacheHint, CachedResult};
use crate::server::Server;

/// The methods whose results carry caching hints.
const CACHEABLE: [&str; 8] = [
    names::TOOLS_LIST,
    names::PROMPTS_LIST,
    names::RESOURCES_LIST,
    names::RESOURCES_TEMPLATES_LIST,
    names::RESOURCES_READ,
    names::SERVER_DISCOVER,
    names::SKILLS_LIST,
    names::SKILLS_GET,
];

/// `method`, if its results carry caching hints.
pub(crate) fn cacheable(method: &str) -> Option<&'static str> {
    CACHEABLE.into_iter().find(|m| *m == method)
}

/// The caching hint of `method`'s results, if they carry one: the hint registered for it
/// (see [`crate::cache`]), else `default_ttl` (private for `resources/read`, public otherwise).
pub(crate) fn hint(server: &Server, method: &str, default_ttl: Duration) -> Option<CacheHint> {
    cacheable(method)?;
    let hint = CachedResult::for_method(method).and_then(|r| server.cache_hint(r));
    Some(hint.unwrap_or_else(|| match method {
        names::RESOURCES_READ => CacheHint::private(default_ttl),
        _ => CacheHint::public(default_ttl),
    }))
}

/// Sets the caching hints of a cacheable result that has none: the hint registered for it
/// (see [`crate::cache`]), else `default_ttl` (private for `resources/read`, public otherwise).
pub(crate) fn cache_hints(
    server: &Server,
    method: &str,
    default_ttl: Duration,
    result: &mut Map<String, Value>,
) {
    let complete = result.get("resultType").is_none_or(|t| t == "complete");
    let Some(hint) = hint(server, method, default_ttl).filter(|_| complete) else { return };
    result.entry("ttlMs").or_insert_with(|| json!(hint.ttl_ms()));
    result.entry("cacheScope").or_insert_with(|| json!(hint.scope()));
}

/// Decorates the result of `method` in place: caching hints where they belong (`default_ttl`
/// where none is registered), `resultType` (`complete` unless the handler set one), and the
/// server's identity in `_meta` (unless the handler set one).
pub(crate) fn decorate(server: &Server, method: &str, default_ttl: Duration, result: &mut Value) {
    let Value::Object(result) = result else { return };
    cache_hints(server, method, default_ttl, result);
    result.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = result.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(meta_keys::SERVER_INFO)
            .or_insert_with(|| serde_json::to_value(server.info()).unwrap_or_default());
    }
}

/// The `server/discover` result, decorated.
pub(crate) fn discover(server: &Server, default_ttl: Duration) -> Value {
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(supported_versions()));
    result.insert(
        "capabilities".into(),
        serde_json::to_value(server.capabilities()).unwrap_or_else(|_| json!({})),
    );
    if let Some(instructions) = server.instructions() {
        result.insert("instructions".into(), json!(instructions));
    }
    let mut result = Value::Object(result);
    decorate(server, names::SERVER_DISCOVER, default_ttl, &mut result);
    result
}

/// Writes the object `result` (its JSON text) with what every stateless-era result carries,
/// by the rule of [`decorate`] (what the handler set stays): `resultType` (`complete`),
/// `_meta` with the server's identity (`server_info`, JSON already) and, on a complete result,
/// `hint`'s `ttlMs` and `cacheScope`. The result's members are copied as they are, not read
/// into a tree (only a `_meta` object is).
///
/// # Errors
///
/// `serde_json`'s error when `result` is not an object.
pub(crate) fn write_decorated(
    out: &mut Vec<u8>,
    result: &str,
    server_info: &str,
    hint: Option<CacheHint>,
) -> serde_json::Result<()> {
    let Members(members) = serde_json::from_str(result)?;
    let member = |name: &str| members.iter().find(|(key, _)| key.0 == name).map(|(_, v)| v.get());
    let complete = member("resultType").is_none_or(|t| t == r#""complete""#);
    let mut first = true;
    let mut comma =
        |out: &mut Vec<u8>| out.push(if std::mem::take(&mut first) { b'{' } else { b',' });
    if member("resultType").is_none() {
        comma(out);
        out.extend_from_slice(br#""resultType":"complete""#);
    }
    if member("_meta").is_none() {
        comma(out);
        out.extend_from_slice(br#""_meta":"#);
        write_meta(out, &Map::new(), server_info)?;
    }
    if let Some(hint) = hint.filter(|_| complete) {
        if member("ttlMs").is_none() {
            comma(out);
            out.extend_from_slice(br#""ttlMs":"#);
            serde_json::to_writer(&mut *out, &hint.ttl_ms())?;
        }
        if member("cacheScope").is_none() {
            comma(out);
            out.extend_from_slice(br#""cacheScope":"#);
            serde_json::to_writer(&mut *out, &hint.scope())?;
        }
    }
    for (key, value) in &members {
        comma(out);
        serde_json::to_writer(&mut *out, &key.0)?;
        out.push(b':');
        let meta =
            (key.0 == "_meta").then(|| serde_json::from_str::<Map<String, Value>>(value.get()));
        match meta {
            Some(Ok(meta)) => write_meta(out, &meta, server_info)?,
            // Anything else (a `_meta` that is no object too) is copied as it is.
            _ => out.extend_from_slice(value.get().as_bytes()),
        }
    }
    if first {
        out.push(b'{');
    }
    out.push(b'}');
    Ok(())
}

/// Writes a list's page (see [`crate::router::Reply::Page`]: an object none of whose members
/// decoration adds) as [`write_decorated`] would, without reading its members: the
/// decorations first, then the page's members as they are.
///
/// # Errors
///
/// `serde_json`'s error when `page` is not an object.
pub(crate) fn write_page(
    out: &mut Vec<u8>,
    page: &str,
    server_info: &str,
    hint: Option<CacheHint>,
) -> serde_json::Result<()> {
    let Some(members) = page.strip_prefix('{') else {
        return write_decorated(out, page, server_info, hint);
    };
    out.extend_from_slice(br#"{"resultType":"complete","_meta":"#);
    write_meta(out, &Map::new(), server_info)?;
    if let Some(hint) = hint {
        out.extend_from_slice(br#","ttlMs":"#);
        serde_json::to_writer(&mut *out, &hint.ttl_ms())?;
        out.extend_from_slice(br#","cacheScope":"#);
        serde_json::to_writer(&mut *out, &hint.scope())?;
    }
    if !members.trim_start().starts_with('}') {
        out.push(b',');
    }
    out.extend_from_slice(members.as_bytes());
    Ok(())
}

/// Writes a result's `_meta` object: its members, then the server's identity
/// (`server_info`, JSON already) unless the handler set one.
pub(crate) fn write_meta(
    out: &mut Vec<u8>,
    meta: &Map<String, Value>,
    server_info: &str,
) -> serde_json::Result<()> {
    out.push(b'{');
    for (i, (key, value)) in meta.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, key)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, value)?;
    }
    if !meta.contains_key(meta_keys::SERVER_INFO) {
        if !meta.is_empty() {
            out.push(b',');
        }
        // A key of plain characters, written as it is (no escaping to look for).
        out.push(b'"');
        out.extend_from_slice(meta_keys::SERVER_INFO.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(server_info.as_bytes());
    }
    out.push(b'}');
    Ok(())
}

/// An object's members in their order, each value kept as its text.
struct Members<'a>(Vec<(Key<'a>, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// A member's name, borrowed from the text unless it holds an escape.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_info_key_needs_no_escaping() {
        // `write_meta` writes it as it is.
        let escaped = serde_json::to_string(meta_keys::SERVER_INFO).unwrap();
        assert_eq!(escaped, format!("\"{}\"", meta_keys::SERVER_INFO));
        let mut out = Vec::new();
        write_meta(&mut out, &Map::new(), r#"{"name":"s"}"#).unwrap();
        let written: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(written[meta_keys::SERVER_INFO]["name"], "s");
    }

    #[test]
    fn what_the_handler_set_stays() {
        let server = Server::builder("s", "1").build();
        let mut result = json!({"resultType": "input_required", "_meta": {"k": 1}});
        decorate(&server, names::TOOLS_CALL, Duration::ZERO, &mut result);
        assert_eq!(
            result,
            json!({"resultType": "input_required",
                "_meta": {"k": 1, meta_keys::SERVER_INFO: {"name": "s", "version": "1"}}})
        );
        let mut listed = json!({"tools": []});
        decorate(&server, names::TOOLS_LIST, Duration::from_secs(2), &mut listed);
        assert_eq!(listed["ttlMs"], 2000);
        assert_eq!(listed["cacheScope"], "public");
        assert_eq!(listed["resultType"], "complete");
    }

    #[test]
    fn decorating_the_text_adds_what_decorating_the_tree_adds() {
        let server = Server::builder("s", "1").build();
        let info = serde_json::to_string(&server.info()).unwrap();
        let results = [
            json!({"tools": []}),
            json!({}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"tools": [], "ttlMs": 5, "_meta": {"k": [1, {"a": null}]}}),
            json!({"contents": [], "cacheScope": "public", "_meta": null}),
            json!({"text": "a \"quoted\" \u{e9} name", "resultType": "complete"}),
        ];
        for method in [names::TOOLS_LIST, names::RESOURCES_READ, names::TOOLS_CALL] {
            for result in &results {
                let mut tree = result.clone();
                decorate(&server, method, Duration::from_secs(3), &mut tree);
                let hint = hint(&server, method, Duration::from_secs(3));
                let mut text = Vec::new();
                write_decorated(&mut text, &result.to_string(), &info, hint).unwrap();
                let decorated: Value = serde_json::from_slice(&text).unwrap();
                assert_eq!(decorated, tree, "{method} {result}");
            }
        }
        let mut out = Vec::new();
        assert!(write_decorated(&mut out, "[1]", &info, None).is_err());
    }

    #[test]
    fn a_page_is_written_as_decorating_its_members_would() {
        let server = Server::builder("s", "1").build();
        let info = serde_json::to_string(&server.info()).unwrap();
        for page in [r#"{"tools":[{"name":"a"}],"nextCursor":"c"}"#, r#"{"prompts":[]}"#, "{}"] {
            for hint in [None, hint(&server, names::TOOLS_LIST, Duration::from_secs(2))] {
                let (mut fast, mut read) = (Vec::new(), Vec::new());
                write_page(&mut fast, page, &info, hint).unwrap();
                write_decorated(&mut read, page, &info, hint).unwrap();
                let fast: Value = serde_json::from_slice(&fast).unwrap();
                assert_eq!(fast, serde_json::from_slice::<Value>(&read).unwrap(), "{page}");
            }
        }
    }
}
