//! The stateless (2026-07-28) era on connection transports such as stdio: no `initialize`;
//! every request describes its client in `_meta` and is served on its own.
//!
//! Streamable HTTP has its own path (`http::stateless`, with header checks and a single-use
//! transport per POST); what both share lives here: reading the client from `_meta`, the
//! checks in protocol order, and what every result carries (`resultType`, the server's
//! identity in `_meta`, caching hints on cacheable results).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::engine::{HandlerResult, RequestContext};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::{LoggingLevel, meta_keys, names};
use mcpl_core::{Era, ProtocolVersion};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::builder::Server;
use crate::cache::{CacheHint, CachedResult};
use crate::context::{ClientState, Context};
use crate::http::auth::AccessToken;

/// Methods of the stateful era that the stateless era removed.
pub(crate) const REMOVED: [&str; 5] = [
    names::INITIALIZE,
    names::PING,
    names::LOGGING_SET_LEVEL,
    names::RESOURCES_SUBSCRIBE,
    names::RESOURCES_UNSUBSCRIBE,
];

/// The versions this server speaks, newest first.
pub(crate) fn supported_versions() -> Vec<String> {
    ProtocolVersion::ALL.iter().rev().map(|v| v.to_string()).collect()
}

/// Whether a request's `_meta` names a protocol version: it belongs to the stateless era.
pub(crate) fn is_stateless_request(meta: Option<&Map<String, Value>>) -> bool {
    meta.is_some_and(|m| m.contains_key(meta_keys::PROTOCOL_VERSION))
}

/// What a stateless request's `_meta` says about the client (read in place, nothing cloned
/// but the parts kept). The client's identity is left in `_meta`: [`Context::client_info`]
/// reads it from there when asked.
pub(crate) fn client_state(meta: Option<&Map<String, Value>>) -> ClientState {
    fn field<T: serde::de::DeserializeOwned>(
        meta: Option<&Map<String, Value>>,
        key: &str,
    ) -> Option<T> {
        meta.and_then(|m| m.get(key)).and_then(|v| T::deserialize(v).ok())
    }
    ClientState {
        version: meta
            .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .and_then(ProtocolVersion::parse),
        client_capabilities: field(meta, meta_keys::CLIENT_CAPABILITIES),
        log_level: field(meta, meta_keys::LOG_LEVEL),
        ..ClientState::default()
    }
}

/// The `-32022` refusal of a version this server does not speak in the stateless era.
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .with_data(json!({ "supported": supported_versions(), "requested": requested }))
}

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

/// The `server/discover` result, without the era's decorations.
pub(crate) fn discover_result(server: &Server) -> Map<String, Value> {
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(supported_versions()));
    result.insert(
        "capabilities".into(),
        serde_json::to_value(server.capabilities()).unwrap_or_else(|_| json!({})),
    );
    if let Some(instructions) = server.instructions() {
        result.insert("instructions".into(), json!(instructions));
    }
    result
}

/// Serves one stateless-era request that arrived on a connection (stdio, say): the `_meta`
/// checks in protocol order, then the method, then the result's decorations.
pub(crate) async fn serve(
    server: &Server,
    ctx: RequestContext,
    params: Option<Value>,
    token: Option<Arc<AccessToken>>,
) -> HandlerResult {
    let meta = ctx.meta();
    let version = meta.and_then(|m| m.get(meta_keys::PROTOCOL_VERSION)).and_then(Value::as_str);
    let capabilities =
        meta.and_then(|m| m.get(meta_keys::CLIENT_CAPABILITIES)).filter(|c| c.is_object());
    let (Some(version), Some(_)) = (version, capabilities) else {
        return Err(ErrorObject::invalid_params(format_args!(
            "_meta must carry {} and {}",
            meta_keys::PROTOCOL_VERSION,
            meta_keys::CLIENT_CAPABILITIES
        )));
    };
    if ProtocolVersion::parse(version).is_none_or(|v| v.era() != Era::Stateless) {
        return Err(unsupported_version(version));
    }
    let method = ctx.method().to_owned();
    if REMOVED.contains(&method.as_str()) {
        return Err(ErrorObject::method_not_found(&method));
    }
    if let Some(level) = meta.and_then(|m| m.get(meta_keys::LOG_LEVEL)) {
        LoggingLevel::deserialize(level).map_err(ErrorObject::invalid_params)?;
    }
    let mut result = if method == names::SERVER_DISCOVER {
        Value::Object(discover_result(server))
    } else {
        let client = Arc::new(Mutex::new(client_state(meta)));
        let ctx = Context::new(ctx, client).with_access_token(token);
        crate::router::dispatch(server, ctx, &method, params).await?
    };
    if let Value::Object(result) = &mut result {
        result.entry("resultType").or_insert_with(|| json!("complete"));
        let meta = result.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry(meta_keys::SERVER_INFO)
                .or_insert_with(|| serde_json::to_value(server.info()).unwrap_or_default());
        }
        cache_hints(server, &method, Duration::ZERO, result);
    }
    Ok(result)
}
