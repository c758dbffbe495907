//! Prompt handlers and what they return.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt as _;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{ContentBlock, GetPromptResult, Prompt, PromptMessage, Role};

use crate::context::Context;
use crate::input::PromptReply;

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
        GetPromptResult { messages, ..GetPromptResult::default() }
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
    pub(crate) handler: Arc<dyn PromptHandler>,
}

impl PromptEntry {
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
