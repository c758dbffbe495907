//! Admission of a stateless-era request: the checks of its `_meta` and method, in the order the
//! protocol fixes, before anything is served.

use std::borrow::Cow;

use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::{ClientCapabilities, LoggingLevel, meta_keys, names};
use mcpl_core::{Era, ProtocolVersion};
use serde::Deserialize as _;
use serde_json::{Map, Value, json};

use crate::context::ClientState;
use crate::interned::Capabilities;

/// Methods of the stateful era that the stateless era removed.
const REMOVED: [&str; 5] = [
    names::INITIALIZE,
    names::PING,
    names::LOGGING_SET_LEVEL,
    names::RESOURCES_SUBSCRIBE,
    names::RESOURCES_UNSUBSCRIBE,
];

/// What admission reads of a request's `_meta`, wherever it was decoded (a JSON tree, or in
/// place from an HTTP body).
#[derive(Debug)]
pub(crate) struct MetaFacts {
    /// `_meta`'s protocol version, if it is a string (borrowed when it is one of the versions
    /// this SDK knows, as it nearly always is: no copy per request).
    pub(crate) version: Option<Cow<'static, str>>,
    /// `Some` if the client capabilities are an object; inside, their typed form if it reads.
    /// (Kept as the server keeps them, not whole: these facts move from the reader to
    /// admission, and the capabilities themselves are 304 bytes.)
    pub(crate) capabilities: Option<Option<Capabilities>>,
    /// The requested log level; `Err` if one was sent that is not a level.
    pub(crate) log_level: Result<Option<LoggingLevel>, serde_json::Error>,
    /// Whether `_meta` carries a progress token: `None` if not, `Some(false)` if one of the
    /// wrong type (a token is a string or an integer).
    pub(crate) progress: Option<bool>,
}

impl MetaFacts {
    /// `version` as [`MetaFacts::version`] keeps it.
    pub(crate) fn version(version: &str) -> Cow<'static, str> {
        match ProtocolVersion::parse(version) {
            Some(known) => Cow::Borrowed(known.as_str()),
            None => Cow::Owned(version.to_owned()),
        }
    }

    /// The facts of a `_meta` decoded as a tree (or of none).
    pub(crate) fn of_tree(meta: Option<&Map<String, Value>>) -> MetaFacts {
        let get = |key: &str| meta.and_then(|m| m.get(key));
        MetaFacts {
            version: get(meta_keys::PROTOCOL_VERSION)
                .and_then(Value::as_str)
                .map(MetaFacts::version),
            capabilities: get(meta_keys::CLIENT_CAPABILITIES)
                .filter(|c| c.is_object())
                .map(|c| ClientCapabilities::deserialize(c).ok().map(Capabilities::own)),
            log_level: get(meta_keys::LOG_LEVEL).map(LoggingLevel::deserialize).transpose(),
            progress: get(meta_keys::PROGRESS_TOKEN).map(crate::router::is_progress_token),
        }
    }
}

/// A request that passed admission.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The client as the request describes it (version, capabilities, log level); its identity
    /// stays in `_meta`, read from there when a handler asks
    /// ([`Context::client_info`](crate::Context::client_info)).
    pub(crate) client: ClientState,
    /// Whether the client asked for what a handler sends as it goes (it sent a progress token
    /// or a log level): on Streamable HTTP, whether the answer is a stream. (A connection
    /// carries what the handler sends either way.)
    #[cfg(feature = "http")]
    pub(crate) streaming: bool,
}

/// Admits a request of `method` whose `_meta` says `facts`, checking in protocol order: the
/// required `_meta` keys (`-32602`), then the transport's own checks (`transport`, given the
/// version `_meta` names: Streamable HTTP's headers against the body, `-32020`), the protocol
/// version (`-32022`), the method (`-32601` for one the era removed), the log level and the
/// progress token (`-32602`).
///
/// # Errors
///
/// The first check that fails, as the JSON-RPC error that answers the request.
pub(crate) fn admit(
    facts: MetaFacts,
    method: &str,
    transport: impl FnOnce(&str) -> Result<(), ErrorObject>,
) -> Result<Admitted, ErrorObject> {
    let MetaFacts { version, capabilities, log_level, progress } = facts;
    let (Some(version), Some(capabilities)) = (version, capabilities) else {
        return Err(ErrorObject::invalid_params(format_args!(
            "_meta must carry {} and {}",
            meta_keys::PROTOCOL_VERSION,
            meta_keys::CLIENT_CAPABILITIES
        )));
    };
    transport(&version)?;
    let Some(parsed) = ProtocolVersion::parse(&version).filter(|v| v.era() == Era::Stateless)
    else {
        return Err(unsupported_version(&version));
    };
    if REMOVED.contains(&method) {
        return Err(ErrorObject::method_not_found(method));
    }
    let log_level = log_level.map_err(ErrorObject::invalid_params)?;
    if progress == Some(false) {
        return Err(crate::router::invalid_progress_token());
    }
    Ok(Admitted {
        #[cfg(feature = "http")]
        streaming: progress.is_some() || log_level.is_some(),
        client: ClientState {
            version: Some(parsed),
            client_capabilities: capabilities,
            log_level,
            ..ClientState::default()
        },
    })
}

/// The versions this server speaks, newest first.
pub(crate) fn supported_versions() -> Vec<String> {
    ProtocolVersion::ALL.iter().rev().map(|v| v.to_string()).collect()
}

/// The `-32022` refusal of a version this server does not speak in the stateless era.
fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
        .with_data(json!({ "supported": supported_versions(), "requested": requested }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn facts(meta: Value) -> MetaFacts {
        MetaFacts::of_tree(meta.as_object())
    }

    fn code(meta: Value, method: &str) -> ErrorCode {
        admit(facts(meta), method, |_| Ok(())).unwrap_err().code
    }

    #[test]
    fn checks_run_in_protocol_order() {
        let caps = meta_keys::CLIENT_CAPABILITIES;
        let version = meta_keys::PROTOCOL_VERSION;
        // Missing keys before the transport's checks, which come before the version.
        let refused = admit(facts(json!({ version: "2026-07-28" })), "tools/list", |_| {
            Err(ErrorObject::new(ErrorCode::HEADER_MISMATCH, "h"))
        });
        assert_eq!(refused.unwrap_err().code, ErrorCode::INVALID_PARAMS);
        let refused = admit(facts(json!({ version: "2025-11-25", caps: {} })), "ping", |_| {
            Err(ErrorObject::new(ErrorCode::HEADER_MISMATCH, "h"))
        });
        assert_eq!(refused.unwrap_err().code, ErrorCode::HEADER_MISMATCH);
        // A stateful revision, then a removed method, then the log level.
        let meta = json!({ version: "2025-11-25", caps: {}, meta_keys::LOG_LEVEL: "loud" });
        assert_eq!(code(meta, "ping"), ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
        let meta = json!({ version: "2026-07-28", caps: {}, meta_keys::LOG_LEVEL: "loud" });
        assert_eq!(code(meta.clone(), "ping"), ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(code(meta, "tools/list"), ErrorCode::INVALID_PARAMS);
        let meta = json!({ version: "2026-07-28", caps: {}, meta_keys::PROGRESS_TOKEN: 1.5 });
        assert_eq!(code(meta, "tools/list"), ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn an_admitted_request_describes_its_client() {
        let meta = json!({
            meta_keys::PROTOCOL_VERSION: "2026-07-28",
            meta_keys::CLIENT_CAPABILITIES: {"roots": {}},
            meta_keys::LOG_LEVEL: "info",
        });
        let admitted = admit(facts(meta), "tools/list", |v| {
            assert_eq!(v, "2026-07-28");
            Ok(())
        })
        .unwrap();
        #[cfg(feature = "http")]
        assert!(admitted.streaming);
        assert_eq!(admitted.client.version, Some(ProtocolVersion::V2026_07_28));
        assert_eq!(admitted.client.log_level, Some(LoggingLevel::Info));
        assert!(admitted.client.client_capabilities.unwrap().roots.is_some());
        let meta = json!({
            meta_keys::PROTOCOL_VERSION: "2026-07-28",
            meta_keys::CLIENT_CAPABILITIES: {},
        });
        let _admitted = admit(facts(meta), "tools/list", |_| Ok(())).unwrap();
        #[cfg(feature = "http")]
        assert!(!_admitted.streaming);
    }
}
