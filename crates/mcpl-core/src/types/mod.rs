//! The MCP message types of both eras, as one set of Rust types.
//!
//! The types model every definition of the 2025-11-25 schema (the last revision of the stateful
//! era) and of the 2026-07-28 schema (the stateless era), plus the fields older revisions had.
//! A member that only one revision has is an `Option` whose documentation names the revision;
//! unknown members are kept (in `extra` maps, [`Meta`] and the capability objects) so messages
//! from newer peers survive a round trip.
//!
//! - Basics: [`Meta`], [`ProgressToken`], [`ResultType`], [`Outcome`], the params bases.
//! - Features: tools, resources, prompts, completion, logging, sampling, elicitation, roots,
//!   subscriptions, tasks.
//! - Methods: a marker type per method implementing [`Method`] or [`NotificationMethod`], the
//!   method [`names`], and the enums [`ClientRequest`], [`ServerRequest`],
//!   [`ClientNotification`], [`ServerNotification`], [`ClientResult`], [`ServerResult`].
//! - Envelopes: [`RequestMessage`], [`NotificationMessage`], [`ResultResponse`],
//!   [`ErrorResponseMessage`], [`InputRequestMessage`], and aliases with the schemas' names
//!   such as [`CallToolRequest`].

mod capabilities;
mod completion;
mod content;
mod elicitation;
mod envelope;
mod errors;
mod lifecycle;
mod logging;
mod meta;
mod method;
pub(crate) use self::method::{notification_methods, request_methods};
mod notifications;
mod params;
mod prompts;
mod resources;
mod result;
mod roots;
mod sampling;
pub(crate) mod serde_util;
mod skills;
mod subscriptions;
mod tasks;
mod tools;

pub use self::capabilities::{
    ClientCapabilities, ClientTaskRequests, ClientTasksCapability, ElicitationCapability,
    ElicitationTaskRequests, Implementation, PromptsCapability, ResourcesCapability,
    RootsCapability, SamplingCapability, SamplingTaskRequests, ServerCapabilities,
    ServerTaskRequests, ServerTasksCapability, ToolTaskRequests, ToolsCapability,
};
pub use self::completion::{
    CompleteRequestParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionReference, PromptReference, ResourceTemplateReference,
};
pub use self::content::{
    Annotations, AudioContent, ContentBlock, EmbeddedResource, Icon, IconTheme, ImageContent,
    ResourceLink, Role, SamplingMessageContentBlock, TextContent, ToolResultContent,
    ToolUseContent,
};
pub use self::elicitation::{
    BooleanSchema, ElicitAction, ElicitRequestFormParams, ElicitRequestParams,
    ElicitRequestURLParams, ElicitResult, ElicitValue, ElicitationSchema, EnumOption, EnumSchema,
    FormMode, LegacyTitledEnumSchema, MultiSelectEnumSchema, NumberSchema, NumberType,
    PrimitiveSchemaDefinition, SingleSelectEnumSchema, StringFormat, StringSchema, TitledEnumItems,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, UntitledEnumItems,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
};
pub use self::envelope::{
    CallToolRequest, CallToolResultResponse, CancelTaskRequest, CancelledNotification,
    CompleteRequest, CompleteResultResponse, CreateMessageRequest, DiscoverRequest,
    DiscoverResultResponse, ElicitInputRequest, ElicitRequest, ElicitationCompleteNotification,
    ErrorResponseMessage, GetPromptRequest, GetPromptResultResponse, GetTaskPayloadRequest,
    GetTaskRequest, HeaderMismatchError, InitializeRequest, InitializeResultResponse,
    InitializedNotification, InputRequestMessage, ListPromptsRequest, ListPromptsResultResponse,
    ListResourceTemplatesRequest, ListResourceTemplatesResultResponse, ListResourcesRequest,
    ListResourcesResultResponse, ListRootsInputRequest, ListRootsRequest, ListTasksRequest,
    ListToolsRequest, ListToolsResultResponse, LoggingMessageNotification,
    MissingRequiredClientCapabilityError, NotificationMessage, PingRequest, ProgressNotification,
    PromptListChangedNotification, ReadResourceRequest, ReadResourceResultResponse, RequestMessage,
    ResourceListChangedNotification, ResourceUpdatedNotification, ResultResponse,
    RootsListChangedNotification, SamplingInputRequest, SetLevelRequest, SubscribeRequest,
    SubscriptionsAcknowledgedNotification, SubscriptionsListenRequest,
    SubscriptionsListenResultResponse, TaskStatusNotification, ToolListChangedNotification,
    URLElicitationRequiredError, UnsubscribeRequest, UnsupportedProtocolVersionError,
};
pub use self::errors::{
    ErrorDataError, McpErrorData, MissingRequiredClientCapabilityData,
    UnsupportedProtocolVersionData, UrlElicitationRequiredData, header_mismatch,
};
pub use self::lifecycle::{
    DiscoverRequestParams, DiscoverResult, InitializeRequestParams, InitializeResult,
    PingRequestParams,
};
pub use self::logging::{LoggingLevel, LoggingMessageNotificationParams, SetLevelRequestParams};
pub use self::meta::{Meta, ProgressToken, meta_keys};
pub use self::method::{
    CallTool, CancelTask, Cancelled, ClientNotification, ClientRequest, ClientResult, Complete,
    CreateMessage, Discover, Elicit, ElicitationComplete, GetPrompt, GetSkill, GetTask,
    GetTaskPayload, Initialize, Initialized, ListPrompts, ListResourceTemplates, ListResources,
    ListRoots, ListSkills, ListTasks, ListTools, LoggingMessage, Method, NotificationMethod, Ping,
    Progress, PromptListChanged, ReadDirectory, ReadResource, ResourceListChanged, ResourceUpdated,
    RootsListChanged, ServerNotification, ServerRequest, ServerResult, SetLevel, Subscribe,
    SubscriptionsAcknowledged, SubscriptionsListen, TaskStatusChanged, ToolListChanged,
    Unsubscribe, names,
};
pub use self::notifications::{
    CancelledNotificationParams, ElicitationCompleteNotificationParams,
    InitializedNotificationParams, ProgressNotificationParams, PromptListChangedNotificationParams,
    ResourceListChangedNotificationParams, ResourceUpdatedNotificationParams,
    RootsListChangedNotificationParams, ToolListChangedNotificationParams,
};
pub use self::params::{
    Cursor, JsonObject, NotificationParams, PaginatedRequestParams, RequestParams,
};
pub use self::prompts::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, Prompt, PromptArgument,
    PromptMessage,
};
pub use self::resources::{
    BlobResourceContents, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents,
    ResourceRequestParams, ResourceTemplate, SubscribeRequestParams, TextResourceContents,
    UnsubscribeRequestParams,
};
pub use self::result::{
    CacheScope, CacheableResult, EmptyResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponse, InputResponseRequestParams, InputResponses, Outcome, PaginatedResult,
    ResultType,
};
pub use self::roots::{ListRootsRequestParams, ListRootsResult, Root};
pub use self::sampling::{
    CreateMessageRequestParams, CreateMessageResult, IncludeContext, ModelHint, ModelPreferences,
    SamplingContent, SamplingMessage, ToolChoice, ToolChoiceMode,
};
pub use self::skills::{
    ContentDigest, ContentDigestError, DIRECTORY_MIME_TYPE, FrontmatterError, FrontmatterErrorKind,
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, MAX_DESCRIPTION_CHARS,
    MAX_FRONTMATTER_BYTES, MAX_SKILL_BYTES, MAX_SKILL_FILES, ReadDirectoryRequestParams,
    ReadDirectoryResult, SKILL_MANIFEST, SKILL_MANIFEST_MIME_TYPE, SKILL_SCHEME, SKILLS_EXTENSION,
    Skill, SkillFrontmatter, SkillResource, SkillResources, SkillVerificationError,
    SkillVerificationErrorKind, SkillsSettings, is_valid_skill_name, skill_name_of,
};
pub use self::subscriptions::{
    SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams, SubscriptionsListenResult,
};
pub use self::tasks::{
    CancelTaskRequestParams, CancelTaskResult, CreateTaskResult, DetailedTask,
    GetTaskPayloadRequestParams, GetTaskPayloadResult, GetTaskRequestParams, GetTaskResult,
    ListTasksResult, RelatedTaskMetadata, TASKS_EXTENSION, Task, TaskAugmentedRequestParams,
    TaskIdParams, TaskMetadata, TaskResult, TaskStatus, TaskStatusNotificationParams,
    UpdateTaskRequestParams,
};
pub use self::tools::{
    CallToolRequestParams, CallToolResult, ListToolsResult, TaskSupport, Tool, ToolAnnotations,
    ToolExecution, ToolSchema,
};
