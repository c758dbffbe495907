//! Typed calls for what a server offers besides tools: resources, resource templates,
//! prompts, completion and the logging level.
//!
//! List calls follow `nextCursor` until the last page, a cursor seen before (a server that
//! loops), or the page cap ([`Client::with_max_pages`], default 100). `resources/read` and
//! `prompts/get` fulfil 2026 input-required results like `tools/call` does (see
//! [`crate::input`]).

use std::collections::{BTreeMap, HashSet};

use mcpl_core::types::{
    CompleteRequestParams, CompleteResult, GetPrompt, GetPromptRequestParams, GetPromptResult,
    ListPrompts, ListResourceTemplates, ListResources, LoggingLevel, Method, Outcome,
    PaginatedRequestParams, Prompt, ReadResource, ReadResourceRequestParams, ReadResourceResult,
    Resource, ResourceTemplate, SetLevel, SetLevelRequestParams, Subscribe, SubscribeRequestParams,
    Unsubscribe, UnsubscribeRequestParams,
};
use mcpl_core::{Error, Result};

use crate::Client;

impl Client {
    /// Sends the list request `M` page by page and collects the items `page` extracts.
    pub(crate) async fn list_pages<M, T>(
        &self,
        page: impl Fn(M::Result) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>>
    where
        M: Method<Params = PaginatedRequestParams>,
    {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.max_pages {
            let params = PaginatedRequestParams { cursor: cursor.clone(), ..Default::default() };
            let (mut more, next) = page(self.send::<M>(params, self.options()).await?);
            items.append(&mut more);
            match next {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(next) => {
                    tracing::warn!(method = M::NAME, cursor = %next, "repeated cursor; stopping");
                    break;
                }
                None => break,
            }
        }
        Ok(items)
    }

    /// Lists every resource (`resources/list`), following pagination.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`, a timeout, or the server's error.
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.list_pages::<ListResources, _>(|p| (p.resources, p.next_cursor)).await
    }

    /// Lists every resource template (`resources/templates/list`), following pagination.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.list_pages::<ListResourceTemplates, _>(|p| (p.resource_templates, p.next_cursor)).await
    }

    /// Lists every prompt (`prompts/list`), following pagination.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.list_pages::<ListPrompts, _>(|p| (p.prompts, p.next_cursor)).await
    }

    /// Reads a resource (`resources/read`), fulfilling input-required results.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources), plus `InputRequired` (see
    /// [`InputRequiredMode`](crate::InputRequiredMode)).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        let params = ReadResourceRequestParams::new(uri);
        let outcome = self.send_fulfilling::<ReadResource, _>(params, self.options()).await?;
        complete(outcome, "resources/read")
    }

    /// Gets a prompt (`prompts/get`) with its arguments, fulfilling input-required results.
    ///
    /// # Errors
    ///
    /// As [`read_resource`](Self::read_resource).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult> {
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        let outcome = self.send_fulfilling::<GetPrompt, _>(params, self.options()).await?;
        complete(outcome, "prompts/get")
    }

    /// Subscribes to updates of a resource (`resources/subscribe`, 2025 era; in the 2026 era
    /// use [`listen`](Self::listen) with `resource_subscriptions`). Updates reach
    /// [`on_resource_updated`](Self::on_resource_updated).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn subscribe_resource(&self, uri: &str) -> Result<()> {
        let params = SubscribeRequestParams::new(uri);
        self.send::<Subscribe>(params, self.options()).await?;
        Ok(())
    }

    /// Ends a subscription made with [`subscribe_resource`](Self::subscribe_resource)
    /// (`resources/unsubscribe`).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<()> {
        let params = UnsubscribeRequestParams::new(uri);
        self.send::<Unsubscribe>(params, self.options()).await?;
        Ok(())
    }

    /// Asks for completions of a prompt or resource-template argument
    /// (`completion/complete`).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult> {
        self.send::<mcpl_core::types::Complete>(params, self.options()).await
    }

    /// Sets the level of the log messages the server sends (`logging/setLevel`, 2025 era;
    /// in the 2026 era the level travels in each request's `_meta`).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<()> {
        let params = SetLevelRequestParams::new(level);
        self.send::<SetLevel>(params, self.options()).await?;
        Ok(())
    }
}

/// The finished result of an outcome, or an error for a task this release does not follow.
fn complete<R>(outcome: Outcome<R>, method: &str) -> Result<R> {
    match outcome {
        Outcome::Complete(result) => Ok(result),
        _ => Err(Error::Transport {
            context: format!(
                "the server answered {method} with a result this release does not handle"
            ),
            source: None,
        }),
    }
}
