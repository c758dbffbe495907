//! Typed calls for what a server offers besides tools: resources, resource templates,
//! prompts, completion and the logging level.
//!
//! List calls follow `nextCursor` to the last page. A listing that a cap stops first (pages:
//! [`Client::with_max_pages`], default 100; items: [`Client::with_max_list_items`], default
//! 10,000; bytes of JSON: [`Client::with_max_list_bytes`], default 16 MiB) or whose server
//! repeats a cursor (it would loop) fails with `ListTruncated`: a partial list is never
//! returned as the whole. `resources/read` and
//! `prompts/get` fulfil 2026 input-required results like `tools/call` does (see
//! [`crate::input`]).

use std::collections::{BTreeMap, HashSet};

use mcpl_core::engine::RequestOptions;
use mcpl_core::error::ListLimit;
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
    /// Sends the list request `M` page by page and collects the items `page` extracts from
    /// each result, within the page, item and byte caps.
    pub(crate) async fn list_pages<M, T>(
        &self,
        page: impl Fn(M::Result) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>>
    where
        M: Method<Params = PaginatedRequestParams>,
    {
        let truncated = |limit| {
            tracing::debug!(method = M::NAME, %limit, "listing stopped before its last page");
            Error::ListTruncated { method: M::NAME.to_owned(), limit }
        };
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut bytes = 0usize;
        for _ in 0..self.max_pages {
            let params = {
                let mut params = PaginatedRequestParams::default();
                params.cursor = cursor.clone();
                params
            };
            let result = self.send_json_ref::<M>(&params, self.options()).await?;
            // The byte cap is checked before the page is decoded (a page is as large as its
            // message, which the transport bounds); the item cap once its items are counted.
            bytes = bytes.saturating_add(result.len());
            if bytes > self.max_list_bytes {
                return Err(truncated(ListLimit::Bytes(self.max_list_bytes)));
            }
            let result: M::Result = result.decode().map_err(|source| Error::Serialization {
                what: format!("{} result", M::NAME),
                source,
            })?;
            let (mut more, next) = page(result);
            if items.len().saturating_add(more.len()) > self.max_list_items {
                return Err(truncated(ListLimit::Items(self.max_list_items)));
            }
            items.append(&mut more);
            match next {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                Some(_) => return Err(truncated(ListLimit::RepeatedCursor)),
                None => return Ok(items),
            }
        }
        Err(truncated(ListLimit::Pages(self.max_pages)))
    }

    /// Lists every resource (`resources/list`), following pagination.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`, a timeout, or the server's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    /// let resources = client.list_resources().await?;
    /// assert_eq!(resources[0].uri, "file:///README.md");
    /// assert_eq!(resources[0].name, "README");
    /// # Ok(()) }
    /// ```
    pub async fn list_resources(&self) -> Result<Vec<Resource>> {
        self.list_pages::<ListResources, _>(|p| (p.resources, p.next_cursor)).await
    }

    /// Lists every resource template (`resources/templates/list`), following pagination.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    /// let templates = client.list_resource_templates().await?;
    /// assert_eq!(templates[0].uri_template, "users://{id}/profile");
    /// # Ok(()) }
    /// ```
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>> {
        self.list_pages::<ListResourceTemplates, _>(|p| (p.resource_templates, p.next_cursor)).await
    }

    /// Lists every prompt (`prompts/list`), following pagination.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    /// let prompts = client.list_prompts().await?;
    /// assert_eq!(prompts[0].name, "greet");
    /// let arguments = prompts[0].arguments.as_deref().unwrap_or_default();
    /// assert_eq!(arguments[0].name, "language");
    /// # Ok(()) }
    /// ```
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.list_pages::<ListPrompts, _>(|p| (p.prompts, p.next_cursor)).await
    }

    /// Reads a resource (`resources/read`), fulfilling input-required results.
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources), plus `InputRequired` (see
    /// [`InputRequiredMode`](crate::InputRequiredMode)).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::ResourceContents;
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    ///
    /// let result = client.read_resource("file:///README.md").await?;
    /// let ResourceContents::Text(readme) = &result.contents[0] else { panic!("not text") };
    /// assert_eq!(readme.text, "# Hello");
    ///
    /// // URIs a template matches are read too.
    /// let result = client.read_resource("users://42/profile").await?;
    /// let ResourceContents::Text(profile) = &result.contents[0] else { panic!("not text") };
    /// assert_eq!(profile.text, "user 42");
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult> {
        let params = ReadResourceRequestParams::new(uri);
        let outcome =
            self.send_fulfilling::<ReadResource, _>(&params, RequestOptions::new()).await?;
        complete(outcome, "resources/read")
    }

    /// Gets a prompt (`prompts/get`) with its arguments, fulfilling input-required results.
    ///
    /// # Errors
    ///
    /// As [`read_resource`](Self::read_resource).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{ContentBlock, Role};
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    ///
    /// let arguments = BTreeMap::from([("language".to_owned(), "french".to_owned())]);
    /// let prompt = client.get_prompt("greet", arguments).await?;
    /// assert_eq!(prompt.messages[0].role, Role::User);
    /// assert_eq!(prompt.messages[0].content, ContentBlock::text("Say hello in french."));
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult> {
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        let outcome = self.send_fulfilling::<GetPrompt, _>(&params, RequestOptions::new()).await?;
        complete(outcome, "prompts/get")
    }

    /// Subscribes to updates of a resource (`resources/subscribe`, 2025 era; in the 2026 era
    /// use [`listen`](Self::listen) with `resource_subscriptions`). Updates reach
    /// [`on_resource_updated`](Self::on_resource_updated).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// # use mcpl_core::types::Resource;
    /// # use mcpl_server::Server;
    /// # use mcpl_server::resource::ResourceOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(Resource::new("file:///log.txt", "log"), |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "...")])
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::builder("app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_resource_updated(move |uri| {
    ///         let tx = tx.clone();
    ///         async move { tx.send(uri).ok(); }
    ///     })
    ///     .build();
    /// client.connect(transport).await?;
    /// client.subscribe_resource("file:///log.txt").await?;
    ///
    /// // The server announces a change; the subscriber hears of it.
    /// server.notify_resource_updated("file:///log.txt");
    /// assert_eq!(updates.recv().await.as_deref(), Some("file:///log.txt"));
    /// # Ok(()) }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// client.connect(transport).await?;
    /// client.subscribe_resource("file:///README.md").await?;
    /// // ... updates arrive at `on_resource_updated` ...
    /// client.unsubscribe_resource("file:///README.md").await?;
    /// # Ok(()) }
    /// ```
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
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{CompleteRequestParams, CompletionArgument, PromptReference};
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    ///
    /// // The user has typed "e" for the `language` argument of the `greet` prompt.
    /// let typed = CompletionArgument::new("language", "e");
    /// let params = CompleteRequestParams::new(PromptReference::new("greet"), typed);
    /// let result = client.complete(params).await?;
    /// assert_eq!(result.completion.values, ["english", "esperanto"]);
    /// # Ok(()) }
    /// ```
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult> {
        self.send::<mcpl_core::types::Complete>(params, self.options()).await
    }

    /// Sets the level of the log messages the server sends (`logging/setLevel`, 2025 era;
    /// in the 2026 era the level travels in each request's `_meta`).
    ///
    /// # Errors
    ///
    /// As [`list_resources`](Self::list_resources).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::LoggingLevel;
    /// # use mcpl_test_kit::library;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = library().await?;
    /// let client = Client::builder("app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_log_message(|message| async move { println!("[{:?}] {}", message.level, message.data) })
    ///     .build();
    /// client.connect(transport).await?;
    /// // Only warnings and worse from now on.
    /// client.set_log_level(LoggingLevel::Warning).await?;
    /// # Ok(()) }
    /// ```
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
