//! [`HostBuilder`]: the handlers and options of a [`Host`], then `start`.

use std::sync::Arc;

use mcpl_client::handlers::HandlerResult;
use mcpl_client::mcpl::InferenceCall;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::hooks::ModelInfo;
use mcpl_core::mcpl::inference::InferenceResult;
use mcpl_core::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams,
    ElicitRequestURLParams, ElicitResult, Root,
};
use tokio::sync::mpsc;

use crate::alerts::Clock;
use crate::config::HostConfig;
pub(super) use crate::error::HostError;

use super::*;

/// The embedder's handlers, each called with the id of the server that asked.
#[derive(Clone, Default)]
pub(super) struct Handlers {
    pub(super) inference: Option<InferenceHandler>,
    pub(super) model: Option<ModelInfo>,
    pub(super) sampling: Option<ServerHandler<CreateMessageRequestParams, CreateMessageResult>>,
    pub(super) elicitation: Option<ServerHandler<ElicitRequestFormParams, ElicitResult>>,
    pub(super) url_elicitation: Option<ServerHandler<ElicitRequestURLParams, ElicitResult>>,
    pub(super) roots: Option<RootsHandler>,
}

/// Builds a [`Host`]: the configuration plus the host's own handlers.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::hooks::ModelInfo;
/// use mcpl_host::Host;
/// use mcpl_host::config::HostConfig;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ModelInfo::new("example-model", "example", 200_000)
///     .with_capabilities(vec!["tools".into()]);
/// let (host, _events) = Host::builder(HostConfig::default()).model_info(model).start().await?;
/// assert!(host.servers().is_empty());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HostBuilder {
    pub(super) config: HostConfig,
    pub(super) handlers: Handlers,
    pub(super) reserved: Vec<String>,
    pub(super) clock: Option<Arc<dyn Clock>>,
    pub(super) push_dedupe: usize,
    pub(super) event_capacity: usize,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let h = &self.handlers;
        f.debug_struct("HostBuilder")
            .field("config", &self.config)
            .field("inference", &h.inference.is_some())
            .field("model", &h.model)
            .field("sampling", &h.sampling.is_some())
            .field("elicitation", &h.elicitation.is_some())
            .field("url_elicitation", &h.url_elicitation.is_some())
            .field("roots", &h.roots.is_some())
            .field("reserved", &self.reserved)
            .field("clock", &self.clock)
            .field("push_dedupe", &self.push_dedupe)
            .field("event_capacity", &self.event_capacity)
            .finish()
    }
}

impl HostBuilder {
    /// Answers servers' `inference/request`s (and advertises `inferenceRequest` to them): the
    /// handler gets the server id and the call (with a chunk sender when streaming).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::ErrorObject;
    /// use mcpl_core::mcpl::hooks::Usage;
    /// use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let builder = Host::builder(HostConfig::default()).on_inference(|server, call| async move {
    ///     // Run the host's own model here; this one echoes the last message's role.
    ///     let last = call.params.messages.last().map(|m| m.role.clone()).unwrap_or_default();
    ///     Ok::<_, ErrorObject>(InferenceResult::new(
    ///         format!("{server} asked for {last}"),
    ///         "example-model",
    ///         FinishReason::EndTurn,
    ///         Usage::new(0, 0),
    ///     ))
    /// });
    /// let (host, _events) = builder.start().await?;
    /// assert!(host.tools().is_empty());
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_inference<F, Fut>(mut self, handler: F) -> HostBuilder
    where
        F: Fn(String, InferenceCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<InferenceResult, ErrorObject>> + Send + 'static,
    {
        self.handlers.inference =
            Some(Arc::new(move |server, call| Box::pin(handler(server, call))));
        self
    }

    /// The budget every checkpoint state keeps (overrides `state.maxDepth` and the other
    /// budget members of the configuration).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateBudget;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let budget = StateBudget::for_message_size(1024 * 1024).with_max_depth(16);
    /// let (host, _events) = Host::builder(HostConfig::default()).state_budget(budget).start().await?;
    /// assert_eq!(host.checkpoints().budget().max_depth(), 16);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn state_budget(mut self, budget: mcpl_core::mcpl::state::StateBudget) -> HostBuilder {
        self.config.state.budget = budget;
        self
    }

    /// Answers servers' `model/info` with `model` (and advertises `modelInfo` to them).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::hooks::ModelInfo;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let model = ModelInfo::new("example-model", "example", 128_000)
    ///     .with_capabilities(vec!["vision".into(), "tools".into()]);
    /// let builder = Host::builder(HostConfig::default()).model_info(model);
    /// let (host, _events) = builder.start().await?;
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn model_info(mut self, model: ModelInfo) -> HostBuilder {
        self.handlers.model = Some(model);
        self
    }

    /// Answers servers' `sampling/createMessage` (and declares `sampling` to them): the
    /// handler gets the server id and the request, and runs the embedder's model. Plain MCP
    /// servers whose tools sample (such as the reference "everything" server) need it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{
    ///     ContentBlock, CreateMessageRequestParams, CreateMessageResult, Role, SamplingContent,
    ///     SamplingMessage, SamplingMessageContentBlock, TextContent, Tool, ToolSchema,
    /// };
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # use mcpl_server::input::ToolReply;
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = Server::builder("writer", "1.0.0")
    /// #     .tool(Tool::new("title", ToolSchema::object()), |ctx, _args| async move {
    /// #         if let Some(answer) = ctx.sampling_response("ask") {
    /// #             let SamplingContent::Single(SamplingMessageContentBlock::Text(t)) = &answer.content
    /// #             else { return Ok(ToolOutput::error("not text").into()) };
    /// #             return Ok(ToolOutput::text(t.text.clone()).into());
    /// #         }
    /// #         let ask = TextContent::new("A title for my essay?");
    /// #         let message = SamplingMessage::new(
    ///     Role::User,
    ///     SamplingMessageContentBlock::Text(ask),
    /// );
    /// #         let params = CreateMessageRequestParams::new(vec![message], 20);
    /// #         Ok::<ToolReply, _>(ctx.input_required().sample("ask", params).into())
    /// #     })
    /// #     .build();
    /// # let url = mcpl_test_kit::http::serve_on_ws(server).await?;
    ///
    /// // A writer server whose `title` tool asks the host's model for a title listens at `url`.
    /// let config = HostConfig::from_json(&json!({"servers": {"writer": {"url": url}}}).to_string())?;
    /// let builder = Host::builder(config).on_sampling(|server, params| async move {
    ///     // Run the embedder's model on `params.messages` here.
    ///     let reply = TextContent::new(
    ///         format!("{server}: {} message(s) seen", params.messages.len()),
    ///     );
    ///     let reply = SamplingMessageContentBlock::Text(reply);
    ///     Ok(CreateMessageResult::new(Role::Assistant, reply, "example-model"))
    /// });
    /// let (host, _events) = builder.start().await?;
    /// let call = host.call_tool("mcpl--writer--title", json!({})).await?;
    /// assert_eq!(call.result.content, [ContentBlock::text("writer: 1 message(s) seen")]);
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> HostBuilder
    where
        F: Fn(String, CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<CreateMessageResult>> + Send + 'static,
    {
        self.handlers.sampling = Some(Arc::new(move |server, p| Box::pin(handler(server, p))));
        self
    }

    /// Answers servers' form-mode `elicitation/create` (and declares `elicitation.form`): the
    /// handler gets the server id and the form to show the user.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{ElicitAction, ElicitResult};
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let builder = Host::builder(HostConfig::default()).on_elicitation(|server, form| async move {
    ///     // Show `form.message` and `form.requested_schema` to the user, naming `server`.
    ///     eprintln!("{server} asks: {}", form.message);
    ///     Ok(ElicitResult::new(ElicitAction::Decline))
    /// });
    /// let (host, _events) = builder.start().await?;
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> HostBuilder
    where
        F: Fn(String, ElicitRequestFormParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.handlers.elicitation = Some(Arc::new(move |server, p| Box::pin(handler(server, p))));
        self
    }

    /// Answers servers' URL-mode `elicitation/create` (and declares `elicitation.url`): the
    /// handler gets the server id and the URL to send the user to, once they agree.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{ElicitAction, ElicitResult};
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let builder = Host::builder(HostConfig::default()).on_url_elicitation(|server, request| async move {
    ///     eprintln!("{server} wants the user at {}", request.url);
    ///     Ok(ElicitResult::new(ElicitAction::Cancel))
    /// });
    /// let (host, _events) = builder.start().await?;
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_url_elicitation<F, Fut>(mut self, handler: F) -> HostBuilder
    where
        F: Fn(String, ElicitRequestURLParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.handlers.url_elicitation =
            Some(Arc::new(move |server, p| Box::pin(handler(server, p))));
        self
    }

    /// Answers servers' `roots/list` (and declares `roots`): the handler gets the server id
    /// and returns the roots that server may see.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Root;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let builder = Host::builder(HostConfig::default()).on_roots(|server| async move {
    ///     // Each server sees its own workspace.
    ///     Ok(vec![Root::new(format!("file:///workspaces/{server}"))])
    /// });
    /// let (host, _events) = builder.start().await?;
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn on_roots<F, Fut>(mut self, handler: F) -> HostBuilder
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Vec<Root>>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move |server| Box::pin(handler(server))));
        self
    }

    /// Reserves names for the embedder's own modules (tool namespaces such as `notes`, whose
    /// tools reach the model as `notes--<tool>`): a server whose prefix equals one is refused
    /// at start, connect and restart, like prefixes that meet ([`RegistryError::ReservedPrefix`]).
    /// Names are compared by equality only.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HostConfig::from_json(
    ///     r#"{"servers": {"n": {"command": "mcpl-notes", "toolPrefix": "notes"}}}"#,
    /// )?;
    /// let err = Host::builder(config).reserved_prefixes(["notes"]).start().await.unwrap_err();
    /// assert_eq!(err.kind(), "reserved_prefix"); // refused before anything started
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn reserved_prefixes<I, S>(mut self, names: I) -> HostBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.reserved.extend(names.into_iter().map(Into::into));
        self
    }

    /// The clock of the alert pipeline (the webhook's throttle window, the failures log's
    /// timestamps); the system clock by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_host::Host;
    /// use mcpl_host::alerts::ManualClock;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Tests move the 15-minute webhook window by hand.
    /// let clock = Arc::new(ManualClock::default());
    /// let (host, _events) = Host::builder(HostConfig::default()).clock(clock.clone()).start().await?;
    /// clock.advance(std::time::Duration::from_secs(15 * 60));
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> HostBuilder {
        self.clock = Some(clock);
        self
    }

    /// How many push event ids the host remembers per server (default 1024, at least 1): a
    /// repeated `eventId`, on the same connection or after a reconnect, is answered but not
    /// delivered again.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::builder(HostConfig::default()).push_dedupe(4096).start().await?;
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn push_dedupe(mut self, entries: usize) -> HostBuilder {
        self.push_dedupe = entries.max(1);
        self
    }

    /// How many [`HostEvent`]s wait for the application to read them (default 1024, at
    /// least 2). Past that, a push event is declined (its server may send it again) and any
    /// other event is dropped and counted, the count read as one [`HostEvent::Missed`] in
    /// their place: a server that floods the host costs it no more than this.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, events) = Host::builder(HostConfig::default()).event_capacity(64).start().await?;
    /// assert_eq!(events.max_capacity(), 64);
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn event_capacity(mut self, events: usize) -> HostBuilder {
        self.event_capacity = events.max(2);
        self
    }

    /// Checks the whole configuration, opens the checkpoint store, then connects every
    /// configured server concurrently (see [`Host::start`]).
    ///
    /// # Errors
    ///
    /// As [`Host::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = HostConfig::from_json(r#"{"state": {"retention": 50}}"#)?;
    /// let (host, _events) = Host::builder(config).start().await?;
    /// assert!(host.servers().is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn start(self) -> Result<(Host, mpsc::Receiver<HostEvent>), HostError> {
        Host::start_with(self).await
    }
}
