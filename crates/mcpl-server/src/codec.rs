//! Params and results to and from JSON, with the JSON-RPC errors a failure answers: one home
//! for the two conversions every feature's serving code makes.

use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes params, reading absent params as `{}`; failures are `-32602`.
pub(crate) fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    serde_json::from_value(params.unwrap_or_else(|| Value::Object(Default::default())))
        .map_err(ErrorObject::invalid_params)
}

/// Encodes a result (straight to JSON text); a failure is `-32603`.
pub(crate) fn encode<T: Serialize>(value: T) -> HandlerResult {
    RawJson::encode(&value).map_err(ErrorObject::internal)
}
