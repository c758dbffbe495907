//! Tasks: durable state machines a requestor can poll for the result of a task-augmented
//! request.
//!
//! Two generations live here: the experimental tasks of 2025-11-25 ([`Task`],
//! [`CreateTaskResult`], `tasks/result`, `tasks/list`), and the tasks extension
//! (`io.modelcontextprotocol/tasks`, SEP-2663) of the 2026 revisions ([`DetailedTask`],
//! [`UpdateTaskRequestParams`]), where task creation is server-directed, the result is
//! inlined in `tasks/get`, and `tasks/result` and `tasks/list` are gone.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::result::{InputRequests, ResultType, impl_result_type};
use crate::jsonrpc::ErrorObject;

/// The identifier of the tasks extension (SEP-2663), the key under `capabilities.extensions`
/// on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TaskMetadata {
    /// How long to keep the task after creation, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Ties a message to a task, under `io.modelcontextprotocol/related-task` in `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RelatedTaskMetadata {
    /// The task's id.
    pub task_id: String,
}

impl RelatedTaskMetadata {
    /// A `RelatedTaskMetadata` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(task_id: impl Into<String>) -> Self {
        Self { task_id: task_id.into() }
    }
}

/// The base of task-augmented request params (the schema's `TaskAugmentedRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
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

/// A task of the tasks extension (SEP-2663), with the payload of its status: the outstanding
/// `inputRequests` while `input_required`, the original request's `result` once `completed`
/// (tool errors with `isError: true` included), the JSON-RPC `error` once `failed`.
///
/// The answer to `tasks/get` is this object plus `resultType: "complete"`; the
/// `CreateTaskResult` of the extension is the same object without payload, plus
/// `resultType: "task"` (see [`DetailedTask::without_payload`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct DetailedTask {
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
    /// How long the task is kept after creation, in milliseconds; `null` means unlimited.
    /// Always written, as `null` when `None`.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// The suggested polling interval, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// The outstanding input requests (`input_required` only), by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// The result of the original request (`completed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Map<String, Value>>,
    /// The JSON-RPC error the original request ended with (`failed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

impl DetailedTask {
    /// A task with no payload.
    pub fn new(
        task_id: impl Into<String>,
        status: TaskStatus,
        created_at: impl Into<String>,
        last_updated_at: impl Into<String>,
    ) -> Self {
        DetailedTask {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: created_at.into(),
            last_updated_at: last_updated_at.into(),
            ttl_ms: None,
            poll_interval_ms: None,
            input_requests: None,
            result: None,
            error: None,
        }
    }

    /// The task without `inputRequests`, `result` and `error`: the shape of a
    /// `CreateTaskResult`.
    #[must_use]
    pub fn without_payload(mut self) -> Self {
        self.input_requests = None;
        self.result = None;
        self.error = None;
        self
    }
}

/// Params of `tasks/update` (SEP-2663): answers to some of a task's outstanding input
/// requests.
///
/// `input_responses` stays raw JSON: answers to keys that are not outstanding are ignored,
/// whatever their shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UpdateTaskRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The task's id.
    pub task_id: String,
    /// The answers, by input request key.
    pub input_responses: Map<String, Value>,
    /// The opaque state of the last task-bearing message, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UpdateTaskRequestParams {
    /// An `UpdateTaskRequestParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(task_id: impl Into<String>, input_responses: Map<String, Value>) -> Self {
        Self {
            meta: None,
            task_id: task_id.into(),
            input_responses,
            request_state: None,
            extra: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn detailed_task_wire_shape() {
        let mut task = DetailedTask::new("t1", TaskStatus::Completed, "2026-01-01T00:00:00Z", "x");
        task.poll_interval_ms = Some(500);
        task.result = Some(json!({"content": [], "isError": true}).as_object().unwrap().clone());
        let wire = serde_json::to_value(&task).unwrap();
        assert_eq!(
            wire,
            json!({"taskId": "t1", "status": "completed", "createdAt": "2026-01-01T00:00:00Z",
                   "lastUpdatedAt": "x", "ttlMs": null, "pollIntervalMs": 500,
                   "result": {"content": [], "isError": true}})
        );
        assert_eq!(serde_json::from_value::<DetailedTask>(wire).unwrap(), task);
        let bare = serde_json::to_value(task.without_payload()).unwrap();
        assert!(bare.get("result").is_none() && bare["ttlMs"].is_null());

        let update: UpdateTaskRequestParams = serde_json::from_value(
            json!({"taskId": "t1", "inputResponses": {"k": {"ignored": true}}}),
        )
        .unwrap();
        assert_eq!(update.input_responses["k"], json!({"ignored": true}));
    }
}
