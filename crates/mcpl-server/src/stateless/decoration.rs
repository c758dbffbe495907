//! What every stateless-era result carries: `resultType`, the server's identity in `_meta`,
//! and caching hints on cacheable results.
//!
//! Transports that write results themselves (Streamable HTTP) write `resultType` and the
//! server's identity as they serialize, by the same rule as [`decorate`]: what the handler set
//! stays.

use std::time::Duration;

use mcpl_core::types::{meta_keys, names};
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

/// Sets the caching hints of a cacheable result that has none: the hint registered for it
/// (see [`crate::cache`]), else `default_ttl` (private for `resources/read`, public otherwise).
pub(crate) fn cache_hints(
    server: &Server,
    method: &str,
    default_ttl: Duration,
    result: &mut Map<String, Value>,
) {
    let cacheable = cacheable(method).is_some();
    let complete = result.get("resultType").is_none_or(|t| t == "complete");
    if !(cacheable && complete) {
        return;
    }
    let hint = CachedResult::for_method(method).and_then(|r| server.cache_hint(r));
    let hint = hint.unwrap_or_else(|| match method {
        names::RESOURCES_READ => CacheHint::private(default_ttl),
        _ => CacheHint::public(default_ttl),
    });
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
