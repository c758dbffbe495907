//! Method routing: one place that maps each MCP method to the feature that serves it.
//!
//! Both eras route through here; era-specific steps (the stateful handshake, the stateless
//! `_meta` checks) happen before.

use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    CallToolRequestParams, EmptyResult, ListToolsResult, SetLevelRequestParams, names,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::builder::Server;
use crate::context::{Context, lock};

/// Decodes params, reading absent params as `{}`; failures are `-32602`.
pub(crate) fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    serde_json::from_value(params.unwrap_or_else(|| Value::Object(Default::default())))
        .map_err(ErrorObject::invalid_params)
}

/// Encodes a result; a failure is `-32603`.
pub(crate) fn encode<T: Serialize>(value: T) -> HandlerResult {
    serde_json::to_value(value).map_err(ErrorObject::internal)
}

/// Serves one request of an initialized client.
pub(crate) async fn dispatch(
    server: &Server,
    ctx: Context,
    method: &str,
    params: Option<Value>,
) -> HandlerResult {
    match method {
        names::PING => encode(EmptyResult::default()),
        names::TOOLS_LIST if server.has_tools() => {
            let tools = server.tools().cloned().collect();
            encode(ListToolsResult { tools, ..ListToolsResult::default() })
        }
        names::TOOLS_CALL if server.has_tools() => {
            let params: CallToolRequestParams = decode(params)?;
            let Some(entry) = server.tool(&params.name) else {
                return Err(ErrorObject::invalid_params(format_args!(
                    "unknown tool {:?}",
                    params.name
                )));
            };
            let handler = entry.handler.clone();
            encode(handler.call(ctx, params.arguments.unwrap_or_default()).await?)
        }
        names::LOGGING_SET_LEVEL => {
            let params: SetLevelRequestParams = decode(params)?;
            lock(&ctx.client).log_level = Some(params.level);
            encode(EmptyResult::default())
        }
        _ => Err(ErrorObject::method_not_found(method)),
    }
}
