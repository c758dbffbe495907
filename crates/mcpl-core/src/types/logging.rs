//! Logging: levels, `logging/setLevel` and `notifications/message`.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;

/// The severity of a log message (RFC 5424 levels), ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

/// Params of `logging/setLevel` (up to 2025-11-25; 2026-07-28 sends the level in each request's
/// `_meta` instead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct SetLevelRequestParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The least severe level the client wants to receive.
    pub level: LoggingLevel,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SetLevelRequestParams {
    /// Params setting `level`.
    pub fn new(level: LoggingLevel) -> Self {
        SetLevelRequestParams { meta: None, level, extra: Map::new() }
    }
}

/// Params of `notifications/message`: one log message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct LoggingMessageNotificationParams {
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The severity.
    pub level: LoggingLevel,
    /// The name of the logger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LoggingMessageNotificationParams {
    /// A log message.
    pub fn new(level: LoggingLevel, data: Value) -> Self {
        LoggingMessageNotificationParams {
            meta: None,
            level,
            logger: None,
            data,
            extra: Map::new(),
        }
    }
}
