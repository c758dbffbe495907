//! Tool handlers and what they return.

use std::future::Future;
#[cfg(feature = "schema")]
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt as _;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
#[cfg(feature = "schema")]
use mcpl_core::types::ToolSchema;
use mcpl_core::types::{CallToolResult, ContentBlock, TaskSupport, Tool};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::Serialize;
#[cfg(feature = "schema")]
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::context::Context;
use crate::handler::registration::RegistrationError;
use crate::input::{Reply, ToolReply};
use crate::schema::{CompiledSchema, SchemaError};
#[cfg(feature = "schema")]
use crate::schema::{input_schema_for, output_schema_for};
use crate::task::TaskOptions;

/// The arguments of a tool call.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::tool::Arguments;
/// use mcpl_server::{Server, ToolOutput};
///
/// let server = Server::builder("s", "1")
///     .tool(Tool::new("add", ToolSchema::object()), |_ctx, args: Arguments| async move {
///         let term = |name: &str| args.get(name).and_then(|v| v.as_i64()).unwrap_or(0);
///         Ok(ToolOutput::text((term("a") + term("b")).to_string()))
///     })
///     .build();
/// # drop(server);
/// ```
pub type Arguments = Map<String, Value>;

/// What a tool handler returns: a result, or a protocol error.
///
/// A failure of the tool itself (bad input, a failed operation) is a *result* with
/// `isError: true` (see [`ToolOutput::error`]), which the model gets to see; a protocol error
/// (`Err`) is for requests that cannot be served at all.
///
/// A handler that may ask the client for input returns `Result<ToolReply, ErrorObject>`
/// instead (see [`crate::input`]); every `CallToolResult` converts into a [`ToolReply`].
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::ErrorObject;
/// use mcpl_server::tool::{Arguments, ToolResult};
/// use mcpl_server::{Context, ToolOutput};
///
/// async fn divide(_ctx: Context, args: Arguments) -> ToolResult {
///     let (Some(a), Some(b)) = (args["a"].as_f64(), args["b"].as_f64()) else {
///         return Err(ErrorObject::invalid_params("a and b must be numbers"));
///     };
///     if b == 0.0 {
///         // The model sees this and can try again.
///         return Ok(ToolOutput::error("cannot divide by zero"));
///     }
///     Ok(ToolOutput::text((a / b).to_string()))
/// }
/// # let _ = mcpl_server::Server::builder("s", "1")
/// #     .tool(mcpl_core::types::Tool::new("divide", mcpl_core::types::ToolSchema::object()), divide);
/// ```
pub type ToolResult = Result<CallToolResult, ErrorObject>;

/// Builders for common tool results.
///
/// # Examples
///
/// ```
/// use mcpl_server::ToolOutput;
///
/// assert_eq!(ToolOutput::text("ok").is_error, None);
/// assert_eq!(ToolOutput::error("the disk is full").is_error, Some(true));
/// let result = ToolOutput::structured_value(serde_json::json!({"celsius": 21}));
/// assert_eq!(result.structured_content.unwrap()["celsius"], 21);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ToolOutput;

impl ToolOutput {
    /// A successful result with one text block.
    ///
    /// # Examples
    ///
    /// ```
    /// let result = mcpl_server::ToolOutput::text("42");
    /// assert_eq!(serde_json::to_value(&result).unwrap()["content"][0]["text"], "42");
    /// ```
    pub fn text(text: impl Into<String>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    /// A tool error result (`isError: true`) with one text block.
    ///
    /// # Examples
    ///
    /// ```
    /// let result = mcpl_server::ToolOutput::error("no such city");
    /// assert_eq!(result.is_error, Some(true));
    /// ```
    pub fn error(message: impl Into<String>) -> CallToolResult {
        CallToolResult::error(message)
    }

    /// A successful result carrying `value` as structured content, and the same value as a
    /// JSON text block for clients that do not read structured content.
    ///
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Sum {
    ///     total: i64,
    /// }
    ///
    /// let result = mcpl_server::ToolOutput::structured(&Sum { total: 5 }).unwrap();
    /// assert_eq!(result.structured_content, Some(serde_json::json!({"total": 5})));
    /// ```
    ///
    /// # Errors
    ///
    /// `-32603` if `value` does not serialize to JSON.
    pub fn structured<T: Serialize + ?Sized>(value: &T) -> ToolResult {
        let value = serde_json::to_value(value).map_err(ErrorObject::internal)?;
        Ok(Self::structured_value(value))
    }

    /// A successful result carrying `value` as structured content, and as a JSON text block.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    ///
    /// let result = mcpl_server::ToolOutput::structured_value(json!({"ok": true}));
    /// assert_eq!(result.structured_content, Some(json!({"ok": true})));
    /// assert_eq!(serde_json::to_value(&result.content[0]).unwrap()["text"], r#"{"ok":true}"#);
    /// ```
    pub fn structured_value(value: Value) -> CallToolResult {
        CallToolResult::default()
            .with_content(vec![ContentBlock::text(value.to_string())])
            .with_structured_content(value)
    }
}

/// What a typed tool handler returns (see
/// [`ServerBuilder::typed_tool`](crate::ServerBuilder::typed_tool)): anything that converts
/// into a [`ToolReply`] (a [`CallToolResult`], a [`ToolReply`]), or a [`Json<T>`], whose type
/// also gives the tool its `outputSchema`.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::CallToolResult;
/// use mcpl_server::tool::{IntoToolReply, Json};
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum {
///     total: i64,
/// }
///
/// // A plain result declares no output schema; a `Json<T>` declares `T`'s.
/// assert!(<CallToolResult as IntoToolReply>::output_schema().is_none());
/// let schema = <Json<Sum> as IntoToolReply>::output_schema().unwrap().unwrap();
/// assert!(schema.properties.unwrap().contains_key("total"));
/// ```
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
#[diagnostic::on_unimplemented(
    note = "typed tool handlers return a CallToolResult (ToolResult), a ToolReply, or Json<T> \
            for a T: Serialize + JsonSchema"
)]
pub trait IntoToolReply: Send + 'static {
    /// The `outputSchema` this return type gives the tool, if any.
    fn output_schema() -> Option<Result<ToolSchema, SchemaError>> {
        None
    }

    /// The reply.
    ///
    /// # Errors
    ///
    /// `-32603` if the value cannot be serialized.
    fn into_reply(self) -> Result<ToolReply, ErrorObject>;
}

#[cfg(feature = "schema")]
impl<R: Into<ToolReply> + Send + 'static> IntoToolReply for R {
    fn into_reply(self) -> Result<ToolReply, ErrorObject> {
        Ok(self.into())
    }
}

/// A typed tool's structured result: `T` serialized as the result's `structuredContent`, with
/// the same JSON as a text block for clients that do not read structured content (as the
/// specification asks), and `T`'s JSON Schema as the tool's `outputSchema`, generated when the
/// tool is registered.
///
/// Return it from a [`typed_tool`](crate::ServerBuilder::typed_tool) handler: the tool is
/// listed with the output schema and every call's structured content is checked against it
/// (with the `validation` feature). `T`'s schema must be an object schema (structured content
/// is an object); otherwise the tool is not registered ([`RegistrationError::InvalidSchema`]).
///
/// # Examples
///
/// ```
/// use mcpl_server::tool::Json;
/// use mcpl_server::Server;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add {
///     a: i64,
///     b: i64,
/// }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum {
///     /// The sum of the terms.
///     total: i64,
/// }
///
/// let server = Server::builder("calc", "1.0.0")
///     .typed_tool("add", "Adds two integers.", |_ctx, Add { a, b }| async move {
///         Ok(Json(Sum { total: a + b }))
///     })
///     .try_build()?;
/// let listed = &server.tools()[0];
/// let output = listed.output_schema.as_ref().unwrap();
/// assert!(output.properties.as_ref().unwrap().contains_key("total"));
/// # Ok::<(), mcpl_server::BuildError>(())
/// ```
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

#[cfg(feature = "schema")]
impl<T: Serialize + JsonSchema + Send + 'static> IntoToolReply for Json<T> {
    fn output_schema() -> Option<Result<ToolSchema, SchemaError>> {
        Some(output_schema_for::<T>())
    }

    fn into_reply(self) -> Result<ToolReply, ErrorObject> {
        ToolOutput::structured(&self.0).map(Reply::Complete)
    }
}

/// Serves the calls of one tool.
///
/// Implemented for every `Fn(Context, Arguments) -> impl Future<Output = Result<R,
/// ErrorObject>>` where `R` converts into a [`ToolReply`]: a [`CallToolResult`] (so
/// [`ToolResult`] handlers), or a [`ToolReply`] for handlers that may ask for input.
///
/// # Examples
///
/// Any async closure or function of the right shape is a handler:
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::tool::{Arguments, ToolHandler, ToolResult};
/// use mcpl_server::{Context, Server, ToolOutput};
///
/// async fn now(_ctx: Context, _args: Arguments) -> ToolResult {
///     Ok(ToolOutput::text("12:00"))
/// }
///
/// fn assert_handler(_: &impl ToolHandler) {}
/// assert_handler(&now);
/// let server = Server::builder("clock", "1").tool(Tool::new("now", ToolSchema::object()), now).build();
/// # drop(server);
/// ```
#[diagnostic::on_unimplemented(
    note = "tool handlers are async fns taking (Context, Arguments) and returning ToolResult \
            or Result<ToolReply, ErrorObject>"
)]
pub trait ToolHandler: Send + Sync + 'static {
    /// Serves one call.
    fn call(
        &self,
        ctx: Context,
        args: Arguments,
    ) -> BoxFuture<'static, Result<ToolReply, ErrorObject>>;
}

impl<F, Fut, R> ToolHandler for F
where
    F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    R: Into<ToolReply> + 'static,
{
    fn call(
        &self,
        ctx: Context,
        args: Arguments,
    ) -> BoxFuture<'static, Result<ToolReply, ErrorObject>> {
        Box::pin(self(ctx, args).map(|r| r.map(Into::into)))
    }
}

/// A registered tool: its definition, whether it is enabled, and what serves its calls.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) tool: Tool,
    /// The definition as a `tools/list` page carries it, encoded once at registration.
    pub(crate) listed: RawJson,
    pub(crate) enabled: bool,
    pub(crate) runner: Arc<ToolRunner>,
    /// How the tool takes part in the tasks extension.
    pub(crate) task: TaskOptions,
}

/// What serves a tool's calls: its handler and its compiled schemas.
pub(crate) struct ToolRunner {
    name: String,
    handler: Arc<dyn ToolHandler>,
    input: CompiledSchema,
    output: Option<CompiledSchema>,
}

impl ToolEntry {
    /// Checks the tool's name and compiles its schemas.
    pub(crate) fn new(
        tool: Tool,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<Self, RegistrationError> {
        validate_tool_name(&tool.name).map_err(RegistrationError::InvalidName)?;
        let schema_error = |e: SchemaError| RegistrationError::InvalidSchema {
            tool: tool.name.clone(),
            problem: e.to_string(),
        };
        if tool.input_schema.schema_type != Some(Value::String("object".to_owned())) {
            return Err(schema_error(SchemaError::NotAnObject("the input".to_owned())));
        }
        let input = CompiledSchema::compile(&tool.input_schema).map_err(schema_error)?;
        let output = tool.output_schema.as_ref().map(CompiledSchema::compile).transpose();
        let output = output.map_err(schema_error)?;
        let listed = RawJson::encode(&tool).map_err(|e| RegistrationError::InvalidSchema {
            tool: tool.name.clone(),
            problem: format!("the definition does not serialize: {e}"),
        })?;
        let runner = ToolRunner { name: tool.name.clone(), handler, input, output };
        let support = tool.execution.as_ref().and_then(|e| e.task_support);
        let task = TaskOptions {
            support: support.unwrap_or(TaskSupport::Forbidden),
            ..TaskOptions::default()
        };
        Ok(ToolEntry { tool, listed, enabled: true, runner: Arc::new(runner), task })
    }
}

impl ToolRunner {
    /// Serves one call: checks the arguments, runs the handler, checks its structured output.
    ///
    /// Not an `async fn`: the handler's future is made here, so the returned one holds it
    /// and not the context too.
    // Inlined: see `router::dispatch_reply`.
    #[inline(always)]
    pub(crate) fn call(
        self: Arc<Self>,
        ctx: Context,
        args: Arguments,
    ) -> impl Future<Output = Result<ToolReply, ErrorObject>> + Send + 'static {
        let value = Value::Object(args);
        let started = match (self.input.check(&value), value) {
            (Err(problem), _) => Err(Reply::Complete(CallToolResult::error(format!(
                "invalid arguments for tool {:?}: {problem}",
                self.name
            )))),
            (Ok(()), Value::Object(args)) => Ok(self.handler.call(ctx, args)),
            (Ok(()), _) => Ok(Box::pin(std::future::ready(Err(ErrorObject::internal(
                "arguments are not an object",
            )))) as BoxFuture<'static, _>),
        };
        async move {
            let result = match started {
                Err(refused) => return Ok(refused),
                Ok(handler) => match handler.await? {
                    Reply::Complete(result) => result,
                    input_required => return Ok(input_required),
                },
            };
            self.check_output(&result)?;
            Ok(Reply::Complete(result))
        }
    }

    /// Checks a result's structured content against the output schema, if the tool has one
    /// (an error result is not checked).
    fn check_output(&self, result: &CallToolResult) -> Result<(), ErrorObject> {
        let (Some(output), false) = (&self.output, result.is_error == Some(true)) else {
            return Ok(());
        };
        let Some(structured) = &result.structured_content else {
            return Err(ErrorObject::internal(format_args!(
                "tool {:?} has an output schema but returned no structured content",
                self.name
            )));
        };
        output.check(structured).map_err(|problem| {
            ErrorObject::internal(format_args!(
                "tool {:?} returned structured content that does not match its output \
                 schema: {problem}",
                self.name
            ))
        })
    }
}

/// A tool definition whose input schema is generated from `Args`, and its output schema from
/// what the handler returns (`R`), if that declares one.
#[cfg(feature = "schema")]
pub(crate) fn typed_tool<Args: JsonSchema, R: IntoToolReply>(
    name: impl Into<String>,
    description: impl Into<String>,
) -> Result<Tool, RegistrationError> {
    let name = name.into();
    let mut tool = Tool::new(name.clone(), ToolSchema::object());
    tool.description = Some(description.into());
    with_schema_of::<Args, R>(tool)
}

/// `tool` with its input schema generated from `Args`, and, unless it has one, its output
/// schema from `R`.
#[cfg(feature = "schema")]
pub(crate) fn with_schema_of<Args: JsonSchema, R: IntoToolReply>(
    mut tool: Tool,
) -> Result<Tool, RegistrationError> {
    let invalid = |tool: &Tool, e: SchemaError| RegistrationError::InvalidSchema {
        tool: tool.name.clone(),
        problem: e.to_string(),
    };
    tool.input_schema = input_schema_for::<Args>().map_err(|e| invalid(&tool, e))?;
    if tool.output_schema.is_none() {
        tool.output_schema = R::output_schema().transpose().map_err(|e| invalid(&tool, e))?;
    }
    Ok(tool)
}

/// Adapts a handler taking typed arguments to [`ToolHandler`].
#[cfg(feature = "schema")]
pub(crate) struct Typed<Args, F> {
    handler: F,
    _args: PhantomData<fn() -> Args>,
}

#[cfg(feature = "schema")]
impl<Args, F> Typed<Args, F> {
    pub(crate) fn new(handler: F) -> Self {
        Typed { handler, _args: PhantomData }
    }
}

#[cfg(feature = "schema")]
impl<Args, F, Fut, R> ToolHandler for Typed<Args, F>
where
    Args: DeserializeOwned + 'static,
    F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    R: IntoToolReply,
{
    fn call(
        &self,
        ctx: Context,
        args: Arguments,
    ) -> BoxFuture<'static, Result<ToolReply, ErrorObject>> {
        match serde_json::from_value::<Args>(Value::Object(args)) {
            Ok(args) => {
                Box::pin((self.handler)(ctx, args).map(|r| r.and_then(IntoToolReply::into_reply)))
            }
            Err(e) => {
                let result = CallToolResult::error(format!("invalid arguments: {e}"));
                Box::pin(std::future::ready(Ok(Reply::Complete(result))))
            }
        }
    }
}

/// Checks a tool name against the MCP naming rules (2025-11-25): 1 to 128 characters, each an
/// ASCII letter, digit, `_`, `-` or `.`.
///
/// # Examples
///
/// ```
/// use mcpl_server::tool::validate_tool_name;
///
/// assert!(validate_tool_name("files.read_v2").is_ok());
/// assert!(validate_tool_name("read file").is_err());
/// ```
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
