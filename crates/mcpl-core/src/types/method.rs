//! Methods as types: one zero-sized marker per request and notification method of every
//! revision, the method names, and typed enums of the requests, notifications and results each
//! side sends.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::completion::{CompleteRequestParams, CompleteResult};
use super::elicitation::{ElicitRequestParams, ElicitResult};
use super::lifecycle::{
    DiscoverRequestParams, DiscoverResult, InitializeRequestParams, InitializeResult,
    PingRequestParams,
};
use super::logging::{LoggingMessageNotificationParams, SetLevelRequestParams};
use super::notifications::{
    CancelledNotificationParams, ElicitationCompleteNotificationParams,
    InitializedNotificationParams, ProgressNotificationParams, PromptListChangedNotificationParams,
    ResourceListChangedNotificationParams, ResourceUpdatedNotificationParams,
    RootsListChangedNotificationParams, ToolListChangedNotificationParams,
};
use super::params::PaginatedRequestParams;
use super::prompts::{GetPromptRequestParams, GetPromptResult, ListPromptsResult};
use super::resources::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult, SubscribeRequestParams, UnsubscribeRequestParams,
};
use super::result::{EmptyResult, Outcome};
use super::roots::{ListRootsRequestParams, ListRootsResult};
use super::sampling::{CreateMessageRequestParams, CreateMessageResult};
use super::serde_util::decode_params;
use super::skills::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, ReadDirectoryRequestParams,
    ReadDirectoryResult,
};
use super::subscriptions::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
};
use super::tasks::{
    CancelTaskRequestParams, CancelTaskResult, GetTaskPayloadRequestParams, GetTaskPayloadResult,
    GetTaskRequestParams, GetTaskResult, ListTasksResult, TaskStatusNotificationParams,
};
use super::tools::{CallToolRequestParams, CallToolResult, ListToolsResult};
use crate::jsonrpc::{ErrorObject, Notification, Request, RequestId};

/// A request method: its name, the type of its params and the type of its result.
///
/// Requests whose params are optional on the wire have a params type that implements
/// `Default`, and decoding absent params reads them as `{}`.
pub trait Method {
    /// The method name on the wire.
    const NAME: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned + Send + 'static;
    /// The result.
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// A notification method: its name and the type of its params.
pub trait NotificationMethod {
    /// The method name on the wire.
    const NAME: &'static str;
    /// The params.
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

/// Every method name of every revision, in one place.
pub mod names {
    /// `initialize` (up to 2025-11-25).
    pub const INITIALIZE: &str = "initialize";
    /// `ping` (up to 2025-11-25).
    pub const PING: &str = "ping";
    /// `server/discover` (2026-07-28).
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// `tools/list`.
    pub const TOOLS_LIST: &str = "tools/list";
    /// `tools/call`.
    pub const TOOLS_CALL: &str = "tools/call";
    /// `resources/list`.
    pub const RESOURCES_LIST: &str = "resources/list";
    /// `resources/templates/list`.
    pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
    /// `resources/read`.
    pub const RESOURCES_READ: &str = "resources/read";
    /// `resources/subscribe` (up to 2025-11-25).
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// `resources/unsubscribe` (up to 2025-11-25).
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// `prompts/list`.
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// `prompts/get`.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// `completion/complete`.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// `logging/setLevel` (up to 2025-11-25).
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// `sampling/createMessage`.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// `elicitation/create`.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    /// `roots/list`.
    pub const ROOTS_LIST: &str = "roots/list";
    /// `subscriptions/listen` (2026-07-28).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// `tasks/get` (2025-11-25; also the tasks extension).
    pub const TASKS_GET: &str = "tasks/get";
    /// `tasks/result` (2025-11-25).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// `tasks/list` (2025-11-25).
    pub const TASKS_LIST: &str = "tasks/list";
    /// `tasks/cancel` (2025-11-25; also the tasks extension).
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// `tasks/update` (the tasks extension, SEP-2663).
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// `skills/list` (the skills extension, SEP-2640).
    pub const SKILLS_LIST: &str = "skills/list";
    /// `skills/get` (the skills extension, SEP-2640).
    pub const SKILLS_GET: &str = "skills/get";
    /// `resources/directory/read` (the skills extension, SEP-2640).
    pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";

    /// `notifications/cancelled`.
    pub const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
    /// `notifications/initialized` (up to 2025-11-25).
    pub const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
    /// `notifications/progress`.
    pub const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
    /// `notifications/roots/list_changed` (up to 2025-11-25).
    pub const NOTIFICATIONS_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
    /// `notifications/tasks/status` (2025-11-25).
    pub const NOTIFICATIONS_TASKS_STATUS: &str = "notifications/tasks/status";
    /// `notifications/resources/list_changed`.
    pub const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// `notifications/resources/updated`.
    pub const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";
    /// `notifications/prompts/list_changed`.
    pub const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// `notifications/tools/list_changed`.
    pub const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// `notifications/message`.
    pub const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
    /// `notifications/elicitation/complete` (2025-11-25).
    pub const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    pub const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
        "notifications/subscriptions/acknowledged";
}

/// Declares one marker type per request method: `Marker = NAME_CONST, Params => Result;`.
macro_rules! request_methods {
    ($($(#[$doc:meta])* $marker:ident = $name:ident, $params:ty => $result:ty;)+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $marker;

        impl Method for $marker {
            const NAME: &'static str = names::$name;
            type Params = $params;
            type Result = $result;
        }
    )+};
}

/// Declares one marker type per notification method: `Marker = NAME_CONST, Params;`.
macro_rules! notification_methods {
    ($($(#[$doc:meta])* $marker:ident = $name:ident, $params:ty;)+) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $marker;

        impl NotificationMethod for $marker {
            const NAME: &'static str = names::$name;
            type Params = $params;
        }
    )+};
}

// Shared with the MCPL method markers (`crate::mcpl::methods`); `names`, `Method` and
// `NotificationMethod` resolve where the macros are invoked.
pub(crate) use {notification_methods, request_methods};

request_methods! {
    /// `initialize`: the 2025 handshake (up to 2025-11-25).
    Initialize = INITIALIZE, InitializeRequestParams => InitializeResult;
    /// `ping`: a liveness check, sent by either side (up to 2025-11-25).
    Ping = PING, PingRequestParams => EmptyResult;
    /// `server/discover`: what the server supports (2026-07-28).
    Discover = SERVER_DISCOVER, DiscoverRequestParams => DiscoverResult;
    /// `tools/list`.
    ListTools = TOOLS_LIST, PaginatedRequestParams => ListToolsResult;
    /// `tools/call`; may answer `input_required` (2026-07-28) or a task (2025-11-25).
    CallTool = TOOLS_CALL, CallToolRequestParams => Outcome<CallToolResult>;
    /// `resources/list`.
    ListResources = RESOURCES_LIST, PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list`.
    ListResourceTemplates = RESOURCES_TEMPLATES_LIST, PaginatedRequestParams
        => ListResourceTemplatesResult;
    /// `resources/read`; may answer `input_required` (2026-07-28).
    ReadResource = RESOURCES_READ, ReadResourceRequestParams => Outcome<ReadResourceResult>;
    /// `resources/subscribe` (up to 2025-11-25).
    Subscribe = RESOURCES_SUBSCRIBE, SubscribeRequestParams => EmptyResult;
    /// `resources/unsubscribe` (up to 2025-11-25).
    Unsubscribe = RESOURCES_UNSUBSCRIBE, UnsubscribeRequestParams => EmptyResult;
    /// `prompts/list`.
    ListPrompts = PROMPTS_LIST, PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get`; may answer `input_required` (2026-07-28).
    GetPrompt = PROMPTS_GET, GetPromptRequestParams => Outcome<GetPromptResult>;
    /// `completion/complete`.
    Complete = COMPLETION_COMPLETE, CompleteRequestParams => CompleteResult;
    /// `logging/setLevel` (up to 2025-11-25).
    SetLevel = LOGGING_SET_LEVEL, SetLevelRequestParams => EmptyResult;
    /// `sampling/createMessage`: a server-to-client request up to 2025-11-25 (may answer a
    /// task), an input request in 2026-07-28.
    CreateMessage = SAMPLING_CREATE_MESSAGE, CreateMessageRequestParams
        => Outcome<CreateMessageResult>;
    /// `elicitation/create`: a server-to-client request up to 2025-11-25 (may answer a task),
    /// an input request in 2026-07-28.
    Elicit = ELICITATION_CREATE, ElicitRequestParams => Outcome<ElicitResult>;
    /// `roots/list`: a server-to-client request up to 2025-11-25, an input request in
    /// 2026-07-28.
    ListRoots = ROOTS_LIST, ListRootsRequestParams => ListRootsResult;
    /// `subscriptions/listen`: opens the notification stream (2026-07-28).
    SubscriptionsListen = SUBSCRIPTIONS_LISTEN, SubscriptionsListenRequestParams
        => SubscriptionsListenResult;
    /// `tasks/get` (2025-11-25; also the tasks extension).
    GetTask = TASKS_GET, GetTaskRequestParams => GetTaskResult;
    /// `tasks/result` (2025-11-25).
    GetTaskPayload = TASKS_RESULT, GetTaskPayloadRequestParams => GetTaskPayloadResult;
    /// `tasks/list` (2025-11-25).
    ListTasks = TASKS_LIST, PaginatedRequestParams => ListTasksResult;
    /// `tasks/cancel` (2025-11-25).
    CancelTask = TASKS_CANCEL, CancelTaskRequestParams => CancelTaskResult;
    /// `skills/list`: the skills a server publishes (the skills extension, SEP-2640).
    ListSkills = SKILLS_LIST, PaginatedRequestParams => ListSkillsResult;
    /// `skills/get`: one skill's entry, by the URI of its `SKILL.md` (SEP-2640).
    GetSkill = SKILLS_GET, GetSkillRequestParams => GetSkillResult;
    /// `resources/directory/read`: the children of a directory resource (SEP-2640).
    ReadDirectory = RESOURCES_DIRECTORY_READ, ReadDirectoryRequestParams => ReadDirectoryResult;
}

notification_methods! {
    /// `notifications/cancelled`.
    Cancelled = NOTIFICATIONS_CANCELLED, CancelledNotificationParams;
    /// `notifications/initialized` (up to 2025-11-25).
    Initialized = NOTIFICATIONS_INITIALIZED, InitializedNotificationParams;
    /// `notifications/progress`.
    Progress = NOTIFICATIONS_PROGRESS, ProgressNotificationParams;
    /// `notifications/roots/list_changed` (up to 2025-11-25).
    RootsListChanged = NOTIFICATIONS_ROOTS_LIST_CHANGED, RootsListChangedNotificationParams;
    /// `notifications/tasks/status` (2025-11-25).
    TaskStatusChanged = NOTIFICATIONS_TASKS_STATUS, TaskStatusNotificationParams;
    /// `notifications/resources/list_changed`.
    ResourceListChanged = NOTIFICATIONS_RESOURCES_LIST_CHANGED,
        ResourceListChangedNotificationParams;
    /// `notifications/resources/updated`.
    ResourceUpdated = NOTIFICATIONS_RESOURCES_UPDATED, ResourceUpdatedNotificationParams;
    /// `notifications/prompts/list_changed`.
    PromptListChanged = NOTIFICATIONS_PROMPTS_LIST_CHANGED, PromptListChangedNotificationParams;
    /// `notifications/tools/list_changed`.
    ToolListChanged = NOTIFICATIONS_TOOLS_LIST_CHANGED, ToolListChangedNotificationParams;
    /// `notifications/message`: a log message.
    LoggingMessage = NOTIFICATIONS_MESSAGE, LoggingMessageNotificationParams;
    /// `notifications/elicitation/complete` (2025-11-25).
    ElicitationComplete = NOTIFICATIONS_ELICITATION_COMPLETE,
        ElicitationCompleteNotificationParams;
    /// `notifications/subscriptions/acknowledged` (2026-07-28).
    SubscriptionsAcknowledged = NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
        SubscriptionsAcknowledgedNotificationParams;
}

/// Defines an enum with one variant per method, holding that method's params or result.
macro_rules! method_enum {
    (
        $(#[$doc:meta])* $name:ident: $trait_:ident :: $assoc:ident, $bad:path, $what:literal {
            $($variant:ident($marker:ty),)+
        }
    ) => {
        $(#[$doc])*
        // `initialize` params (with the full client capabilities) dwarf the others; a message
        // enum is built once per message, so boxing every variant would cost more than it saves.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $(
                #[doc = concat!("`", stringify!($marker), "`: see [`", stringify!($marker), "`].")]
                $variant(<$marker as $trait_>::$assoc),
            )+
        }

        impl $name {
            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $($name::$variant(_) => <$marker as $trait_>::NAME,)+
                }
            }

            #[doc = concat!("Decodes the ", $what, " of `method`: an unknown method is a `-32601` ")]
            #[doc = "error; a value that does not decode is a `-32602` error (`-32603` for results)."]
            pub fn from_parts(method: &str, value: Option<Value>) -> Result<Self, ErrorObject> {
                $(
                    if method == <$marker as $trait_>::NAME {
                        return decode_params::<<$marker as $trait_>::$assoc>(value)
                            .map($name::$variant)
                            .map_err($bad);
                    }
                )+
                Err(ErrorObject::method_not_found(method))
            }

            #[doc = concat!("The ", $what, " as JSON.")]
            pub fn to_value(&self) -> Result<Value, serde_json::Error> {
                match self {
                    $($name::$variant(inner) => serde_json::to_value(inner),)+
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $($name::$variant(inner) => inner.serialize(s),)+
                }
            }
        }
    };
}

fn keep(e: ErrorObject) -> ErrorObject {
    e
}

fn as_internal(e: ErrorObject) -> ErrorObject {
    ErrorObject::internal(format!("undecodable result: {}", e.message))
}

method_enum! {
    /// A request a client sends to a server, in either era. Serializes as its params.
    ClientRequest: Method::Params, keep, "params" {
        Initialize(Initialize),
        Ping(Ping),
        Discover(Discover),
        ListTools(ListTools),
        CallTool(CallTool),
        ListResources(ListResources),
        ListResourceTemplates(ListResourceTemplates),
        ReadResource(ReadResource),
        Subscribe(Subscribe),
        Unsubscribe(Unsubscribe),
        ListPrompts(ListPrompts),
        GetPrompt(GetPrompt),
        Complete(Complete),
        SetLevel(SetLevel),
        SubscriptionsListen(SubscriptionsListen),
        GetTask(GetTask),
        GetTaskPayload(GetTaskPayload),
        ListTasks(ListTasks),
        CancelTask(CancelTask),
    }
}

method_enum! {
    /// A request a server sends to a client (up to 2025-11-25; in 2026-07-28 sampling, roots
    /// and elicitation are input requests instead). Serializes as its params.
    ServerRequest: Method::Params, keep, "params" {
        Ping(Ping),
        CreateMessage(CreateMessage),
        Elicit(Elicit),
        ListRoots(ListRoots),
        GetTask(GetTask),
        GetTaskPayload(GetTaskPayload),
        ListTasks(ListTasks),
        CancelTask(CancelTask),
    }
}

method_enum! {
    /// A notification a client sends to a server. Serializes as its params.
    ClientNotification: NotificationMethod::Params, keep, "params" {
        Cancelled(Cancelled),
        Initialized(Initialized),
        Progress(Progress),
        RootsListChanged(RootsListChanged),
        TaskStatusChanged(TaskStatusChanged),
    }
}

method_enum! {
    /// A notification a server sends to a client. Serializes as its params.
    ServerNotification: NotificationMethod::Params, keep, "params" {
        Cancelled(Cancelled),
        Progress(Progress),
        ResourceListChanged(ResourceListChanged),
        ResourceUpdated(ResourceUpdated),
        PromptListChanged(PromptListChanged),
        ToolListChanged(ToolListChanged),
        LoggingMessage(LoggingMessage),
        ElicitationComplete(ElicitationComplete),
        SubscriptionsAcknowledged(SubscriptionsAcknowledged),
        TaskStatusChanged(TaskStatusChanged),
    }
}

method_enum! {
    /// A client's result for a [`ServerRequest`], keyed by the request's method. Serializes as
    /// the result.
    ClientResult: Method::Result, as_internal, "result" {
        Ping(Ping),
        CreateMessage(CreateMessage),
        Elicit(Elicit),
        ListRoots(ListRoots),
        GetTask(GetTask),
        GetTaskPayload(GetTaskPayload),
        ListTasks(ListTasks),
        CancelTask(CancelTask),
    }
}

method_enum! {
    /// A server's result for a [`ClientRequest`], keyed by the request's method. Serializes as
    /// the result.
    ServerResult: Method::Result, as_internal, "result" {
        Initialize(Initialize),
        Ping(Ping),
        Discover(Discover),
        ListTools(ListTools),
        CallTool(CallTool),
        ListResources(ListResources),
        ListResourceTemplates(ListResourceTemplates),
        ReadResource(ReadResource),
        Subscribe(Subscribe),
        Unsubscribe(Unsubscribe),
        ListPrompts(ListPrompts),
        GetPrompt(GetPrompt),
        Complete(Complete),
        SetLevel(SetLevel),
        SubscriptionsListen(SubscriptionsListen),
        GetTask(GetTask),
        GetTaskPayload(GetTaskPayload),
        ListTasks(ListTasks),
        CancelTask(CancelTask),
    }
}

impl ClientRequest {
    /// Turns the request into an untyped JSON-RPC request with the given id.
    pub fn into_request(self, id: impl Into<RequestId>) -> Result<Request, serde_json::Error> {
        Ok(Request::new(id, self.method(), Some(self.to_value()?)))
    }
}

impl ServerRequest {
    /// Turns the request into an untyped JSON-RPC request with the given id.
    pub fn into_request(self, id: impl Into<RequestId>) -> Result<Request, serde_json::Error> {
        Ok(Request::new(id, self.method(), Some(self.to_value()?)))
    }
}

impl ClientNotification {
    /// Turns the notification into an untyped JSON-RPC notification.
    pub fn into_notification(self) -> Result<Notification, serde_json::Error> {
        Ok(Notification::new(self.method(), Some(self.to_value()?)))
    }
}

impl ServerNotification {
    /// Turns the notification into an untyped JSON-RPC notification.
    pub fn into_notification(self) -> Result<Notification, serde_json::Error> {
        Ok(Notification::new(self.method(), Some(self.to_value()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorCode;
    use serde_json::json;

    #[test]
    fn from_parts_decodes_known_methods() {
        let r = ClientRequest::from_parts("tools/call", Some(json!({"name": "echo"}))).unwrap();
        assert_eq!(r.method(), "tools/call");
        assert!(matches!(&r, ClientRequest::CallTool(p) if p.name == "echo"));
        // Optional params may be absent.
        let r = ClientRequest::from_parts("tools/list", None).unwrap();
        assert!(matches!(r, ClientRequest::ListTools(_)));
        let r = ClientRequest::from_parts("ping", Some(json!({}))).unwrap();
        assert_eq!(r.to_value().unwrap(), json!({}));
    }

    #[test]
    fn from_parts_errors() {
        let e = ClientRequest::from_parts("tools/frobnicate", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        let e = ClientRequest::from_parts("tools/call", Some(json!({"name": 5}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = ClientRequest::from_parts("tools/call", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        // A server-to-client method is not a client request.
        let e = ClientRequest::from_parts("sampling/createMessage", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        let e =
            ServerNotification::from_parts("notifications/message", Some(json!({}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = ServerResult::from_parts("tools/list", Some(json!({"tools": 1}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
    }

    #[test]
    fn results_decode_by_method() {
        let r = ServerResult::from_parts(
            "tools/call",
            Some(json!({"resultType": "input_required", "requestState": "s"})),
        )
        .unwrap();
        assert!(matches!(r, ServerResult::CallTool(Outcome::InputRequired(_))));
        let r = ClientResult::from_parts("roots/list", Some(json!({"roots": []}))).unwrap();
        assert_eq!(r.method(), "roots/list");
    }

    #[test]
    fn into_untyped_messages() {
        let n = ServerNotification::ToolListChanged(Default::default());
        let n = n.into_notification().unwrap();
        assert_eq!(n.method, "notifications/tools/list_changed");
        let r = ClientRequest::Ping(Default::default()).into_request(0).unwrap();
        assert_eq!(r.id, RequestId::Number(0));
    }
}
