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
pub type PromptArguments = BTreeMap<String, String>;

/// What a prompt handler returns: the prompt's messages, or a protocol error.
///
/// A handler that may ask the client for input returns `Result<PromptReply, ErrorObject>`
/// instead (see [`crate::input`]).
pub type PromptResult = Result<GetPromptResult, ErrorObject>;

/// Serves the `prompts/get` requests of one prompt.
///
/// Implemented for every `Fn(Context, PromptArguments) -> impl Future<Output = Result<R,
/// ErrorObject>>` where `R` converts into a [`PromptReply`] (a [`GetPromptResult`], or a
/// [`PromptReply`] for handlers that may ask for input). The server checks that every
/// required argument is present before calling it.
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
