//! Typed JSON-RPC envelopes: whole MCP messages as named types.
//!
//! [`RequestMessage<M>`] is `{"jsonrpc": "2.0", "id": …, "method": M::NAME, "params": …}` with
//! typed params; decoding rejects another `jsonrpc` or `method`. The type aliases at the end
//! carry the schema's names (`CallToolRequest`, `CancelledNotification`,
//! `CallToolResultResponse`, …).

use derive_setters::Setters;
use serde::de::{DeserializeOwned, Error as _};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::method::{
    CallTool, CancelTask, Cancelled, Complete, CreateMessage, Discover, Elicit,
    ElicitationComplete, GetPrompt, GetTask, GetTaskPayload, Initialize, Initialized, ListPrompts,
    ListResourceTemplates, ListResources, ListRoots, ListTasks, ListTools, LoggingMessage, Method,
    NotificationMethod, Ping, Progress, PromptListChanged, ReadResource, ResourceListChanged,
    ResourceUpdated, RootsListChanged, SetLevel, Subscribe, SubscriptionsAcknowledged,
    SubscriptionsListen, TaskStatusChanged, ToolListChanged, Unsubscribe,
};
use crate::jsonrpc::{ErrorObject, JSONRPC_VERSION, RequestId};

/// Decodes params that may be absent (absent reads as `{}`).
fn params_from<T: DeserializeOwned, E: serde::de::Error>(params: Option<Value>) -> Result<T, E> {
    serde_json::from_value(params.unwrap_or_else(|| Value::Object(Map::new())))
        .map_err(|e| E::custom(format!("invalid params: {e}")))
}

fn check_version<E: serde::de::Error>(jsonrpc: &str) -> Result<(), E> {
    if jsonrpc == JSONRPC_VERSION {
        Ok(())
    } else {
        Err(E::custom(format!("unsupported jsonrpc version {jsonrpc:?}")))
    }
}

fn check_method<E: serde::de::Error>(found: &str, expected: &str) -> Result<(), E> {
    if found == expected {
        Ok(())
    } else {
        Err(E::custom(format!("expected method {expected:?}, found {found:?}")))
    }
}

#[derive(Deserialize)]
struct RawRequest {
    jsonrpc: String,
    id: RequestId,
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

#[derive(Deserialize)]
struct RawNotification {
    jsonrpc: String,
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

#[derive(Deserialize)]
struct RawResponse {
    jsonrpc: String,
    id: RequestId,
    result: Value,
}

#[derive(Deserialize)]
struct RawError {
    jsonrpc: String,
    #[serde(default)]
    id: Option<RequestId>,
    error: ErrorObject,
}

/// A typed JSON-RPC request for method `M`.
#[derive(Debug, Clone, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RequestMessage<M: Method> {
    /// The request id.
    pub id: RequestId,
    /// The params (always written; absent params read as `{}`).
    pub params: M::Params,
}

impl<M: Method> RequestMessage<M> {
    /// Creates a request.
    pub fn new(id: impl Into<RequestId>, params: M::Params) -> Self {
        RequestMessage { id: id.into(), params }
    }

    /// The method name.
    pub fn method(&self) -> &'static str {
        M::NAME
    }
}

impl<M: Method> Serialize for RequestMessage<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("RequestMessage", 4)?;
        st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("method", M::NAME)?;
        st.serialize_field("params", &self.params)?;
        st.end()
    }
}

impl<'de, M: Method> Deserialize<'de> for RequestMessage<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawRequest::deserialize(d)?;
        check_version(&raw.jsonrpc)?;
        check_method(&raw.method, M::NAME)?;
        Ok(RequestMessage { id: raw.id, params: params_from(raw.params)? })
    }
}

/// A typed JSON-RPC notification for method `N`.
#[derive(Debug, Clone, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct NotificationMessage<N: NotificationMethod> {
    /// The params (always written; absent params read as `{}`).
    pub params: N::Params,
}

impl<N: NotificationMethod> NotificationMessage<N> {
    /// Creates a notification.
    pub fn new(params: N::Params) -> Self {
        NotificationMessage { params }
    }

    /// The method name.
    pub fn method(&self) -> &'static str {
        N::NAME
    }
}

impl<N: NotificationMethod> Serialize for NotificationMessage<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("NotificationMessage", 3)?;
        st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        st.serialize_field("method", N::NAME)?;
        st.serialize_field("params", &self.params)?;
        st.end()
    }
}

impl<'de, N: NotificationMethod> Deserialize<'de> for NotificationMessage<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawNotification::deserialize(d)?;
        check_version(&raw.jsonrpc)?;
        check_method(&raw.method, N::NAME)?;
        Ok(NotificationMessage { params: params_from(raw.params)? })
    }
}

/// A typed successful JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ResultResponse<R> {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result.
    pub result: R,
}

impl<R> ResultResponse<R> {
    /// Creates a response.
    pub fn new(id: impl Into<RequestId>, result: R) -> Self {
        ResultResponse { id: id.into(), result }
    }
}

impl<R: Serialize> Serialize for ResultResponse<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ResultResponse", 3)?;
        st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("result", &self.result)?;
        st.end()
    }
}

impl<'de, R: DeserializeOwned> Deserialize<'de> for ResultResponse<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawResponse::deserialize(d)?;
        check_version(&raw.jsonrpc)?;
        let result = serde_json::from_value(raw.result)
            .map_err(|e| D::Error::custom(format!("invalid result: {e}")))?;
        Ok(ResultResponse { id: raw.id, result })
    }
}

/// A JSON-RPC error response.
///
/// `id` is `None` when the request's id could not be read; the MCP schemas make `id` optional
/// (and do not allow `null`), so `None` is written by omitting `id`, and both an absent and a
/// `null` id read as `None`.
#[derive(Debug, Clone, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ErrorResponseMessage {
    /// The id of the request this answers.
    pub id: Option<RequestId>,
    /// The error.
    pub error: ErrorObject,
}

impl ErrorResponseMessage {
    /// Creates an error response.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        ErrorResponseMessage { id, error }
    }
}

impl Serialize for ErrorResponseMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = if self.id.is_some() { 3 } else { 2 };
        let mut st = s.serialize_struct("ErrorResponseMessage", len)?;
        st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        if let Some(id) = &self.id {
            st.serialize_field("id", id)?;
        }
        st.serialize_field("error", &self.error)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for ErrorResponseMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawError::deserialize(d)?;
        check_version(&raw.jsonrpc)?;
        Ok(ErrorResponseMessage { id: raw.id, error: raw.error })
    }
}

/// A request embedded in a 2026-07-28 `input_required` result: `{"method": M::NAME, "params":
/// …}`, without `jsonrpc` or `id`.
///
/// `params` stays absent when absent (`roots/list` needs none); any other member is kept in
/// `extra`.
#[derive(Debug, Clone, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InputRequestMessage<M: Method> {
    /// The params.
    pub params: Option<M::Params>,
    /// Members other than `method` and `params`, preserved.
    pub extra: Map<String, Value>,
}

impl<M: Method> InputRequestMessage<M> {
    /// Creates an input request.
    pub fn new(params: M::Params) -> Self {
        InputRequestMessage { params: Some(params), extra: Map::new() }
    }

    /// The method name.
    pub fn method(&self) -> &'static str {
        M::NAME
    }
}

impl<M: Method> Serialize for InputRequestMessage<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("method", M::NAME)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, M: Method> Deserialize<'de> for InputRequestMessage<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(d)?;
        match map.remove("method") {
            Some(Value::String(m)) => check_method(&m, M::NAME)?,
            _ => return Err(D::Error::missing_field("method")),
        }
        let params = match map.remove("params") {
            Some(p) => Some(
                serde_json::from_value(p)
                    .map_err(|e| D::Error::custom(format!("invalid params: {e}")))?,
            ),
            None => None,
        };
        Ok(InputRequestMessage { params, extra: map })
    }
}

/// `initialize` request (up to 2025-11-25).
pub type InitializeRequest = RequestMessage<Initialize>;
/// `ping` request (up to 2025-11-25).
pub type PingRequest = RequestMessage<Ping>;
/// `server/discover` request (2026-07-28).
pub type DiscoverRequest = RequestMessage<Discover>;
/// `tools/list` request.
pub type ListToolsRequest = RequestMessage<ListTools>;
/// `tools/call` request.
pub type CallToolRequest = RequestMessage<CallTool>;
/// `resources/list` request.
pub type ListResourcesRequest = RequestMessage<ListResources>;
/// `resources/templates/list` request.
pub type ListResourceTemplatesRequest = RequestMessage<ListResourceTemplates>;
/// `resources/read` request.
pub type ReadResourceRequest = RequestMessage<ReadResource>;
/// `resources/subscribe` request (up to 2025-11-25).
pub type SubscribeRequest = RequestMessage<Subscribe>;
/// `resources/unsubscribe` request (up to 2025-11-25).
pub type UnsubscribeRequest = RequestMessage<Unsubscribe>;
/// `prompts/list` request.
pub type ListPromptsRequest = RequestMessage<ListPrompts>;
/// `prompts/get` request.
pub type GetPromptRequest = RequestMessage<GetPrompt>;
/// `completion/complete` request.
pub type CompleteRequest = RequestMessage<Complete>;
/// `logging/setLevel` request (up to 2025-11-25).
pub type SetLevelRequest = RequestMessage<SetLevel>;
/// `sampling/createMessage` as a JSON-RPC request (up to 2025-11-25; see
/// [`SamplingInputRequest`] for 2026-07-28).
pub type CreateMessageRequest = RequestMessage<CreateMessage>;
/// `elicitation/create` as a JSON-RPC request (up to 2025-11-25; see [`ElicitInputRequest`]
/// for 2026-07-28).
pub type ElicitRequest = RequestMessage<Elicit>;
/// `roots/list` as a JSON-RPC request (up to 2025-11-25; see [`ListRootsInputRequest`] for
/// 2026-07-28).
pub type ListRootsRequest = RequestMessage<ListRoots>;
/// `subscriptions/listen` request (2026-07-28).
pub type SubscriptionsListenRequest = RequestMessage<SubscriptionsListen>;
/// `tasks/get` request (2025-11-25).
pub type GetTaskRequest = RequestMessage<GetTask>;
/// `tasks/result` request (2025-11-25).
pub type GetTaskPayloadRequest = RequestMessage<GetTaskPayload>;
/// `tasks/list` request (2025-11-25).
pub type ListTasksRequest = RequestMessage<ListTasks>;
/// `tasks/cancel` request (2025-11-25).
pub type CancelTaskRequest = RequestMessage<CancelTask>;

/// `sampling/createMessage` as a 2026-07-28 input request (the 2026 schema's
/// `CreateMessageRequest`).
pub type SamplingInputRequest = InputRequestMessage<CreateMessage>;
/// `elicitation/create` as a 2026-07-28 input request (the 2026 schema's `ElicitRequest`).
pub type ElicitInputRequest = InputRequestMessage<Elicit>;
/// `roots/list` as a 2026-07-28 input request (the 2026 schema's `ListRootsRequest`).
pub type ListRootsInputRequest = InputRequestMessage<ListRoots>;

/// `notifications/cancelled`.
pub type CancelledNotification = NotificationMessage<Cancelled>;
/// `notifications/initialized` (up to 2025-11-25).
pub type InitializedNotification = NotificationMessage<Initialized>;
/// `notifications/progress`.
pub type ProgressNotification = NotificationMessage<Progress>;
/// `notifications/roots/list_changed` (up to 2025-11-25).
pub type RootsListChangedNotification = NotificationMessage<RootsListChanged>;
/// `notifications/tasks/status` (2025-11-25).
pub type TaskStatusNotification = NotificationMessage<TaskStatusChanged>;
/// `notifications/resources/list_changed`.
pub type ResourceListChangedNotification = NotificationMessage<ResourceListChanged>;
/// `notifications/resources/updated`.
pub type ResourceUpdatedNotification = NotificationMessage<ResourceUpdated>;
/// `notifications/prompts/list_changed`.
pub type PromptListChangedNotification = NotificationMessage<PromptListChanged>;
/// `notifications/tools/list_changed`.
pub type ToolListChangedNotification = NotificationMessage<ToolListChanged>;
/// `notifications/message`.
pub type LoggingMessageNotification = NotificationMessage<LoggingMessage>;
/// `notifications/elicitation/complete` (2025-11-25).
pub type ElicitationCompleteNotification = NotificationMessage<ElicitationComplete>;
/// `notifications/subscriptions/acknowledged` (2026-07-28).
pub type SubscriptionsAcknowledgedNotification = NotificationMessage<SubscriptionsAcknowledged>;

/// The response to `initialize` (up to 2025-11-25).
pub type InitializeResultResponse = ResultResponse<<Initialize as Method>::Result>;
/// The response to `server/discover` (2026-07-28).
pub type DiscoverResultResponse = ResultResponse<<Discover as Method>::Result>;
/// The response to `tools/list`.
pub type ListToolsResultResponse = ResultResponse<<ListTools as Method>::Result>;
/// The response to `tools/call`: a result, an `input_required` result, or a task.
pub type CallToolResultResponse = ResultResponse<<CallTool as Method>::Result>;
/// The response to `resources/list`.
pub type ListResourcesResultResponse = ResultResponse<<ListResources as Method>::Result>;
/// The response to `resources/templates/list`.
pub type ListResourceTemplatesResultResponse =
    ResultResponse<<ListResourceTemplates as Method>::Result>;
/// The response to `resources/read`: a result or an `input_required` result.
pub type ReadResourceResultResponse = ResultResponse<<ReadResource as Method>::Result>;
/// The response to `prompts/list`.
pub type ListPromptsResultResponse = ResultResponse<<ListPrompts as Method>::Result>;
/// The response to `prompts/get`: a result or an `input_required` result.
pub type GetPromptResultResponse = ResultResponse<<GetPrompt as Method>::Result>;
/// The response to `completion/complete`.
pub type CompleteResultResponse = ResultResponse<<Complete as Method>::Result>;
/// The response to `subscriptions/listen` (2026-07-28).
pub type SubscriptionsListenResultResponse =
    ResultResponse<<SubscriptionsListen as Method>::Result>;

/// A `-32020` header-mismatch error response (2026-07-28).
pub type HeaderMismatchError = ErrorResponseMessage;
/// A `-32022` unsupported-protocol-version error response (2026-07-28); its data is
/// [`UnsupportedProtocolVersionData`](crate::types::UnsupportedProtocolVersionData).
pub type UnsupportedProtocolVersionError = ErrorResponseMessage;
/// A `-32021` missing-required-client-capability error response (2026-07-28); its data is
/// [`MissingRequiredClientCapabilityData`](crate::types::MissingRequiredClientCapabilityData).
pub type MissingRequiredClientCapabilityError = ErrorResponseMessage;
/// A `-32042` URL-elicitation-required error response (2025-11-25); its data is
/// [`UrlElicitationRequiredData`](crate::types::UrlElicitationRequiredData).
pub type URLElicitationRequiredError = ErrorResponseMessage;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn envelopes_check_method_and_version() {
        let v = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        let r: ListToolsRequest = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
        let wrong = json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/list"});
        assert!(serde_json::from_value::<ListToolsRequest>(wrong).is_err());
        let old = json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"});
        assert!(serde_json::from_value::<ListToolsRequest>(old).is_err());
        // Absent optional params read as {}.
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        assert!(serde_json::from_value::<PingRequest>(bare).is_ok());
        // Required params may not be absent.
        let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"});
        assert!(serde_json::from_value::<CallToolRequest>(bare).is_err());
    }

    #[test]
    fn error_response_without_id() {
        let v = json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}});
        let e: ErrorResponseMessage = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(e.id, None);
        assert_eq!(serde_json::to_value(&e).unwrap(), v);
        let null_id = json!({"jsonrpc": "2.0", "id": null, "error": {"code": 1, "message": "x"}});
        assert_eq!(serde_json::from_value::<ErrorResponseMessage>(null_id).unwrap().id, None);
    }
}
