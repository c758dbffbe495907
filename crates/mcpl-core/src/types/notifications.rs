//! Params of the notifications: cancellation, progress, list changes, resource updates,
//! elicitation completion.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::{Meta, ProgressToken};
use super::params::NotificationParams;
use super::serde_util::{num, opt_num};
use crate::jsonrpc::RequestId;

/// Params of `notifications/cancelled`: a sender gives up on a request it made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CancelledNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The id of the request to cancel (required in 2026-07-28; optional in 2025-11-25, where
    /// task cancellation uses `tasks/cancel` instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logging or display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CancelledNotificationParams {
    /// Cancels the request `request_id`.
    pub fn new(request_id: impl Into<RequestId>) -> Self {
        CancelledNotificationParams { request_id: Some(request_id.into()), ..Default::default() }
    }
}

/// Params of `notifications/progress`: how far a long-running request has come.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ProgressNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The token the request carried in its `_meta`.
    pub progress_token: ProgressToken,
    /// The progress so far; it increases with every notification.
    #[serde(with = "num")]
    pub progress: f64,
    /// The total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub total: Option<f64>,
    /// A human-readable description of the progress (2025-03-26 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProgressNotificationParams {
    /// Progress for `progress_token`.
    pub fn new(progress_token: impl Into<ProgressToken>, progress: f64) -> Self {
        ProgressNotificationParams {
            meta: None,
            progress_token: progress_token.into(),
            progress,
            total: None,
            message: None,
            extra: Map::new(),
        }
    }
}

/// Params of `notifications/resources/updated`: a subscribed resource changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ResourceUpdatedNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The URI of the resource that changed (possibly a sub-resource of the subscribed one).
    pub uri: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceUpdatedNotificationParams {
    /// An update of `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceUpdatedNotificationParams { meta: None, uri: uri.into(), extra: Map::new() }
    }
}

/// Params of `notifications/elicitation/complete` (2025-11-25): a URL-mode elicitation finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ElicitationCompleteNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The `elicitationId` of the finished elicitation.
    pub elicitation_id: String,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitationCompleteNotificationParams {
    /// Completion of `elicitation_id`.
    pub fn new(elicitation_id: impl Into<String>) -> Self {
        ElicitationCompleteNotificationParams {
            meta: None,
            elicitation_id: elicitation_id.into(),
            extra: Map::new(),
        }
    }
}

/// Params of `notifications/initialized` (up to 2025-11-25).
pub type InitializedNotificationParams = NotificationParams;

/// Params of `notifications/roots/list_changed` (up to 2025-11-25).
pub type RootsListChangedNotificationParams = NotificationParams;

/// Params of `notifications/tools/list_changed`.
pub type ToolListChangedNotificationParams = NotificationParams;

/// Params of `notifications/prompts/list_changed`.
pub type PromptListChangedNotificationParams = NotificationParams;

/// Params of `notifications/resources/list_changed`.
pub type ResourceListChangedNotificationParams = NotificationParams;
