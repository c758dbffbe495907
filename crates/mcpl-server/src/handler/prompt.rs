//! Prompt handlers and what they return.

use std::collections::BTreeMap;
use std::future::Future;
#[cfg(feature = "schema")]
use std::marker::PhantomData;
use std::sync::Arc;

use futures::FutureExt as _;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::{ErrorObject, RawJson};
#[cfg(feature = "schema")]
use mcpl_core::types::PromptArgument;
use mcpl_core::types::{ContentBlock, GetPromptResult, Prompt, PromptMessage, Role};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
#[cfg(feature = "schema")]
use serde::de::DeserializeOwned;
#[cfg(feature = "schema")]
use serde_json::{Map, Value};

use crate::context::Context;
#[cfg(feature = "schema")]
use crate::handler::registration::RegistrationError;
use crate::input::PromptReply;
#[cfg(feature = "schema")]
use crate::schema::{SchemaError, input_schema_for};

/// The arguments of a `prompts/get`, by name.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::Prompt;
/// use mcpl_server::Server;
/// use mcpl_server::prompt::{PromptArguments, PromptOutput};
///
/// let server = Server::builder("s", "1")
///     .prompt(Prompt::new("translate"), |_ctx, args: PromptArguments| async move {
///         let lang = args.get("language").map_or("French", String::as_str);
///         Ok(PromptOutput::user_text(format!("Translate to {lang}.")))
///     })
///     .build();
/// # drop(server);
/// ```
pub type PromptArguments = BTreeMap<String, String>;

/// What a prompt handler returns: the prompt's messages, or a protocol error.
///
/// A handler that may ask the client for input returns `Result<PromptReply, ErrorObject>`
/// instead (see [`crate::input`]).
///
/// # Examples
///
/// ```
/// use mcpl_server::Context;
/// use mcpl_server::prompt::{PromptArguments, PromptOutput, PromptResult};
///
/// async fn summarize(_ctx: Context, args: PromptArguments) -> PromptResult {
///     let text = args.get("text").cloned().unwrap_or_default();
///     Ok(PromptOutput::user_text(format!("Summarize:\n{text}")))
/// }
/// # let _ = mcpl_server::Server::builder("s", "1").prompt(mcpl_core::types::Prompt::new("summarize"), summarize);
/// ```
pub type PromptResult = Result<GetPromptResult, ErrorObject>;

/// Serves the `prompts/get` requests of one prompt.
///
/// Implemented for every `Fn(Context, PromptArguments) -> impl Future<Output = Result<R,
/// ErrorObject>>` where `R` converts into a [`PromptReply`] (a [`GetPromptResult`], or a
/// [`PromptReply`] for handlers that may ask for input). The server checks that every
/// required argument is present before calling it.
///
/// # Examples
///
/// ```
/// use mcpl_server::Context;
/// use mcpl_server::prompt::{PromptArguments, PromptHandler, PromptOutput, PromptResult};
///
/// async fn hello(_ctx: Context, _args: PromptArguments) -> PromptResult {
///     Ok(PromptOutput::user_text("Say hello."))
/// }
/// fn assert_handler(_: &impl PromptHandler) {}
/// assert_handler(&hello);
/// ```
#[diagnostic::on_unimplemented(
    note = "prompt handlers are async fns taking (Context, PromptArguments) and returning \
            PromptResult or Result<PromptReply, ErrorObject>"
)]
pub trait PromptHandler: Send + Sync + 'static {
    /// Serves one request.
    fn get(
        &self,
        ctx: Context,
        args: PromptArguments,
    ) -> BoxFuture<'static, Result<PromptReply, ErrorObject>>;
}

impl<F, Fut, R> PromptHandler for F
where
    F: Fn(Context, PromptArguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    R: Into<PromptReply> + 'static,
{
    fn get(
        &self,
        ctx: Context,
        args: PromptArguments,
    ) -> BoxFuture<'static, Result<PromptReply, ErrorObject>> {
        Box::pin(self(ctx, args).map(|r| r.map(Into::into)))
    }
}

/// Builders for prompt results.
///
/// # Examples
///
/// ```
/// use mcpl_server::prompt::PromptOutput;
///
/// let result = PromptOutput::user_text("Review this diff.");
/// assert_eq!(result.messages.len(), 1);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PromptOutput;

impl PromptOutput {
    /// A result with the given messages.
    ///
    /// ```
    /// use mcpl_core::types::{ContentBlock, ImageContent, PromptMessage, Role};
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let result = PromptOutput::messages(vec![
    ///     PromptMessage::new(Role::User, ImageContent::new("iVBORw0KGgo=", "image/png")),
    ///     PromptMessage::new(Role::User, ContentBlock::text("What is in this image?")),
    /// ]);
    /// assert_eq!(result.messages.len(), 2);
    /// ```
    pub fn messages(messages: Vec<PromptMessage>) -> GetPromptResult {
        GetPromptResult::default().with_messages(messages)
    }

    /// A result with one user message holding `text`.
    ///
    /// # Examples
    ///
    /// ```
    /// let result = mcpl_server::prompt::PromptOutput::user_text("Hi");
    /// let wire = serde_json::to_value(&result).unwrap();
    /// assert_eq!(wire["messages"][0]["role"], "user");
    /// assert_eq!(wire["messages"][0]["content"]["text"], "Hi");
    /// ```
    pub fn user_text(text: impl Into<String>) -> GetPromptResult {
        Self::messages(vec![PromptMessage::new(Role::User, ContentBlock::text(text))])
    }
}

/// A registered prompt.
#[derive(Clone)]
pub(crate) struct PromptEntry {
    pub(crate) prompt: Prompt,
    /// The definition as a `prompts/list` page carries it, encoded once at registration.
    pub(crate) listed: RawJson,
    pub(crate) handler: Arc<dyn PromptHandler>,
}

impl PromptEntry {
    /// A prompt served by `handler`.
    pub(crate) fn new(prompt: Prompt, handler: Arc<dyn PromptHandler>) -> Self {
        PromptEntry { listed: crate::pagination::listed(&prompt), prompt, handler }
    }

    /// The required arguments missing from `args`.
    pub(crate) fn missing<'a>(&'a self, args: &PromptArguments) -> Vec<&'a str> {
        self.prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect()
    }
}

/// A prompt definition whose arguments are listed from `Args`'s schema: one argument per
/// property, with its description and title, required unless optional.
#[cfg(feature = "schema")]
pub(crate) fn typed_prompt<Args: JsonSchema>(
    name: impl Into<String>,
    description: impl Into<String>,
) -> Result<Prompt, RegistrationError> {
    let name = name.into();
    let invalid =
        |source| RegistrationError::InvalidPromptArguments { prompt: name.clone(), source };
    let schema = input_schema_for::<Args>().map_err(invalid)?;
    let required = schema.required.unwrap_or_default();
    let mut arguments = Vec::new();
    for (property, spec) in schema.properties.unwrap_or_default() {
        if !accepts_strings(&spec) {
            return Err(invalid(SchemaError::NotAString(property)));
        }
        let text = |key: &str| spec.get(key).and_then(Value::as_str).map(str::to_owned);
        let mut argument = PromptArgument::new(property.clone());
        argument.title = text("title");
        argument.description = text("description");
        argument.required = Some(required.contains(&property));
        arguments.push(argument);
    }
    let mut prompt = Prompt::new(name.clone());
    prompt.description = Some(description.into());
    prompt.arguments = Some(arguments);
    Ok(prompt)
}

/// Whether a property's schema may accept a string (prompt arguments are strings): its `type`
/// is absent (a reference, an enum), `"string"`, or a list holding `"string"`.
#[cfg(feature = "schema")]
fn accepts_strings(spec: &Value) -> bool {
    match spec.get("type") {
        None => true,
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
        Some(_) => false,
    }
}

/// Adapts a handler taking typed prompt arguments to [`PromptHandler`].
#[cfg(feature = "schema")]
pub(crate) struct TypedPrompt<Args, F> {
    name: Arc<str>,
    handler: F,
    _args: PhantomData<fn() -> Args>,
}

#[cfg(feature = "schema")]
impl<Args, F> TypedPrompt<Args, F> {
    pub(crate) fn new(name: &str, handler: F) -> Self {
        TypedPrompt { name: name.into(), handler, _args: PhantomData }
    }
}

#[cfg(feature = "schema")]
impl<Args, F, Fut, R> PromptHandler for TypedPrompt<Args, F>
where
    Args: DeserializeOwned + 'static,
    F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    R: Into<PromptReply> + 'static,
{
    fn get(
        &self,
        ctx: Context,
        args: PromptArguments,
    ) -> BoxFuture<'static, Result<PromptReply, ErrorObject>> {
        let object: Map<String, Value> =
            args.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        match serde_json::from_value::<Args>(Value::Object(object)) {
            Ok(args) => Box::pin((self.handler)(ctx, args).map(|r| r.map(Into::into))),
            Err(e) => {
                let error = ErrorObject::invalid_params(format_args!(
                    "invalid arguments for prompt {:?}: {e}",
                    self.name
                ));
                Box::pin(std::future::ready(Err(error)))
            }
        }
    }
}

#[cfg(all(test, feature = "schema"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Review {
        /// The code to review.
        code: String,
        /// The language, if not obvious.
        language: Option<String>,
    }

    #[test]
    fn arguments_are_listed_from_the_schema() {
        let prompt = typed_prompt::<Review>("review", "Reviews code.").unwrap();
        let args = prompt.arguments.unwrap();
        let names: Vec<_> = args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["code", "language"]);
        assert_eq!(args[0].required, Some(true));
        assert_eq!(args[0].description.as_deref(), Some("The code to review."));
        assert_eq!(args[1].required, Some(false));
    }

    #[test]
    fn non_string_arguments_are_refused() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Count {
            n: u32,
        }
        let err = typed_prompt::<Count>("count", "").unwrap_err();
        assert!(matches!(
            err,
            RegistrationError::InvalidPromptArguments { source: SchemaError::NotAString(ref p), .. }
                if p == "n"
        ));
    }
}
