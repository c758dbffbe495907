//! The 2026-07-28 notification stream: `subscriptions/listen` and its acknowledgement.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::result::{ResultType, impl_result_type};

/// Which notifications a `subscriptions/listen` stream carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// The URIs whose `notifications/resources/updated` to receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SubscriptionsListenRequestParams {
    /// Request metadata (required).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The notifications wanted.
    pub notifications: SubscriptionFilter,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer ending a `subscriptions/listen` stream. Its `_meta` carries the stream's
/// `io.modelcontextprotocol/subscriptionId` (see [`Meta::subscription_id`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SubscriptionsListenResult {
    /// Result metadata (required: holds the subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl_result_type!(SubscriptionsListenResult);

/// Params of `notifications/subscriptions/acknowledged`: the notifications the server agreed
/// to send on the stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// Notification metadata (carries the subscription id).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The notifications the stream will carry.
    pub notifications: SubscriptionFilter,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
