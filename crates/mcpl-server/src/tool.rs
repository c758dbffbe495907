//! Tool handlers and what they return.

use std::future::Future;
use std::sync::Arc;

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value};

use crate::context::Context;

/// The arguments of a tool call.
pub type Arguments = Map<String, Value>;

/// What a tool handler returns: a result, or a protocol error.
///
/// A failure of the tool itself (bad input, a failed operation) is a *result* with
/// `isError: true` (see [`ToolOutput::error`]), which the model gets to see; a protocol error
/// (`Err`) is for requests that cannot be served at all.
pub type ToolResult = Result<CallToolResult, ErrorObject>;

/// Builders for common tool results.
#[derive(Debug, Clone, Copy)]
pub struct ToolOutput;

impl ToolOutput {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    /// A tool error result (`isError: true`) with one text block.
    pub fn error(message: impl Into<String>) -> CallToolResult {
        CallToolResult::error(message)
    }
}

/// Serves the calls of one tool.
///
/// Implemented for every `Fn(Context, Arguments) -> impl Future<Output = ToolResult>`.
#[diagnostic::on_unimplemented(
    note = "tool handlers are async fns taking (Context, Arguments) and returning ToolResult"
)]
pub trait ToolHandler: Send + Sync + 'static {
    /// Serves one call.
    fn call(&self, ctx: Context, args: Arguments) -> BoxFuture<'static, ToolResult>;
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call(&self, ctx: Context, args: Arguments) -> BoxFuture<'static, ToolResult> {
        Box::pin(self(ctx, args))
    }
}

/// A registered tool: its definition and its handler.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    pub(crate) handler: Arc<dyn ToolHandler>,
}

/// Checks a tool name against the MCP naming rules (2025-11-25): 1 to 128 characters, each an
/// ASCII letter, digit, `_`, `-` or `.`.
pub fn validate_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 128 {
        return Err(format!("tool name must be 1 to 128 characters, got {}", name.len()));
    }
    match name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))) {
        Some(c) => Err(format!("tool name {name:?} contains {c:?}; allowed: A-Z a-z 0-9 _ - .")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        assert!(validate_tool_name("get_weather").is_ok());
        assert!(validate_tool_name("admin.tools-list_2").is_ok());
        assert!(validate_tool_name("").is_err());
        assert!(validate_tool_name("has space").is_err());
        assert!(validate_tool_name("slash/no").is_err());
        assert!(validate_tool_name(&"x".repeat(129)).is_err());
        assert!(validate_tool_name(&"x".repeat(128)).is_ok());
    }
}
