//! Tasks (2025-11-25): durable state machines a requestor can poll for the result of a
//! task-augmented request.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::result::{ResultType, impl_result_type};

/// The state of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The receiver needs input from the requestor.
    InputRequired,
    /// The request finished successfully.
    Completed,
    /// The request failed.
    Failed,
    /// The request was cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Whether the status is final (`completed`, `failed` or `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// A task's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// A human-readable description of the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When the task was created (ISO 8601).
    pub created_at: String,
    /// When the task last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long the task is kept after creation, in milliseconds; `null` means unlimited. Always
    /// written, as `null` when `None`.
    #[serde(default)]
    pub ttl: Option<u64>,
    /// The suggested polling interval, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
}

impl Task {
    /// Creates a task state.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
    ) -> Self {
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl: None,
            poll_interval: None,
        }
    }
}

/// Asks for a request to run as a task (the `task` member of task-augmented params).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long to keep the task after creation, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Ties a message to a task, under `io.modelcontextprotocol/related-task` in `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task's id.
    pub task_id: String,
}

/// The base of task-augmented request params (the schema's `TaskAugmentedRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskAugmentedRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Run the request as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params naming a task: `tasks/get`, `tasks/result`, `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The task's id.
    pub task_id: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskIdParams {
    /// Params naming `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        TaskIdParams { meta: None, task_id: task_id.into(), extra: Map::new() }
    }
}

/// Params of `tasks/get`.
pub type GetTaskRequestParams = TaskIdParams;
/// Params of `tasks/result`.
pub type GetTaskPayloadRequestParams = TaskIdParams;
/// Params of `tasks/cancel`.
pub type CancelTaskRequestParams = TaskIdParams;

/// The immediate answer to a task-augmented request: the task that will produce the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Not sent by the revision that has tasks; kept for uniformity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task.
    pub task: Task,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CreateTaskResult {
    /// A result announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult { meta: None, result_type: None, task, extra: Map::new() }
    }
}

/// A task's state as a result: the answer to `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Not sent by the revision that has tasks; kept for uniformity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The task's state, flattened into the result.
    #[serde(flatten)]
    pub task: Task,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskResult {
    /// A result holding `task`.
    pub fn new(task: Task) -> Self {
        TaskResult { meta: None, result_type: None, task, extra: Map::new() }
    }
}

/// The answer to `tasks/get`.
pub type GetTaskResult = TaskResult;
/// The answer to `tasks/cancel`.
pub type CancelTaskResult = TaskResult;

/// The answer to `tasks/result`: the result of the task's underlying request, whose members
/// are kept in `extra` (decode them with [`GetTaskPayloadResult::decode`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPayloadResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The payload's members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GetTaskPayloadResult {
    /// Decodes the payload (including `_meta`) as the underlying request's result type.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::to_value(self).and_then(serde_json::from_value)
    }
}

/// The answer to `tasks/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Not sent by the revision that has tasks; kept for uniformity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The tasks.
    pub tasks: Vec<Task>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `notifications/tasks/status`: a task's new state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The task's state, flattened into the params.
    #[serde(flatten)]
    pub task: Task,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskStatusNotificationParams {
    /// Params announcing `task`.
    pub fn new(task: Task) -> Self {
        TaskStatusNotificationParams { meta: None, task, extra: Map::new() }
    }
}

impl_result_type!(CreateTaskResult, TaskResult, ListTasksResult);
