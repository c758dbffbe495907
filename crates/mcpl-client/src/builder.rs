//! [`ClientBuilder`]: a client's identity, options and handlers, set once before the
//! [`Client`] exists.
//!
//! A [`Client`] is a handle: its clones share one connection, so everything that reaches the
//! connection (the handlers for server requests and notifications, the MCPL host, the
//! response cache and its invalidation) is fixed when the client is built. Configuring a
//! clone of the builder never changes a client already built. The per-call options
//! ([`Client::with_max_pages`], [`Client::with_cache_mode`], ...) stay on the handle: they
//! change only the handle they are called on.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use mcpl_core::engine::Engine;
use mcpl_core::transport::TransportEvent;
use mcpl_core::types::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestFormParams,
    ElicitRequestURLParams, ElicitResult, EmptyResult, Implementation,
    LoggingMessageNotificationParams, Ping, Root,
};
use mcpl_core::{ProtocolVersion, Result, Transport};

use crate::cache::{CacheMode, ResponseCache};
use crate::client::{
    Client, DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS, DEFAULT_MAX_PAGES, Negotiation,
};
use crate::handlers::{HandlerResult, Handlers};
use crate::input::InputRequiredMode;
use crate::link::Link;
use crate::mcpl::McplHost;
use crate::negotiation::refresh;
use crate::notify::{Callbacks, DEFAULT_SUBSCRIPTION_CAPACITY, Notify, callback};

/// Configures a [`Client`]: its name and version, how it negotiates, its limits, its
/// handlers for what servers ask and tell it, the MCPL host side and the response cache.
/// [`build`](Self::build) makes the client once; [`connect`](Self::connect) builds it and
/// connects.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_core::types::Root;
///
/// let builder = Client::builder("my-app", "1.0.0");
/// let plain = builder.clone().build();
/// let with_roots = builder
///     .on_roots(|| async { Ok(vec![Root::new("file:///home/me/project")]) })
///     .build();
/// // Each client has the handlers it was built with, and declares them.
/// assert!(with_roots.capabilities().roots.is_some());
/// assert!(plain.capabilities().roots.is_none());
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` or `connect`"]
pub struct ClientBuilder {
    pub(crate) info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) negotiation: Negotiation,
    pub(crate) handlers: Handlers,
    pub(crate) input_mode: InputRequiredMode,
    pub(crate) max_pages: usize,
    pub(crate) max_list_items: usize,
    pub(crate) max_list_bytes: usize,
    pub(crate) strict: bool,
    pub(crate) cache: Option<ResponseCache>,
    pub(crate) notify: Callbacks,
    pub(crate) subscription_capacity: usize,
    pub(crate) mcpl: Option<McplHost>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("negotiation", &self.negotiation)
            .field("handlers", &self.handlers)
            .field("mcpl", &self.mcpl.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// A builder for a client that calls itself `name`, version `version`, with the default
    /// options and no handlers. Same as [`Client::builder`].
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            info: Implementation::new(name, version),
            capabilities: ClientCapabilities::default(),
            negotiation: Negotiation::Auto,
            handlers: Handlers::default(),
            input_mode: InputRequiredMode::default(),
            max_pages: DEFAULT_MAX_PAGES,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            strict: false,
            cache: None,
            notify: Callbacks::default(),
            subscription_capacity: DEFAULT_SUBSCRIPTION_CAPACITY,
            mcpl: None,
        }
    }

    /// Builds the client, unconnected. Its handlers, MCPL host and cache are fixed from here
    /// on; [`Client::connect`] connects it.
    ///
    /// # Examples
    ///
    /// ```
    /// let client = mcpl_client::Client::builder("app", "1.0.0").build();
    /// assert!(!client.is_connected());
    /// ```
    pub fn build(self) -> Client {
        let engine = Engine::new();
        // Both sides of an MCP connection answer `ping` with an empty result.
        engine.on::<Ping, _, _>(|_ctx, _params| async { Ok(EmptyResult::default()) });
        self.handlers.install(&engine);
        let link = Arc::new(Mutex::new(Link::default()));
        let notify = Notify::new(
            Arc::clone(&link),
            self.notify,
            self.subscription_capacity,
            self.cache.clone(),
        );
        notify.install(&engine);
        let server = Arc::new(Mutex::new(None));
        if let Some(host) = &self.mcpl {
            host.install(&engine);
        }
        // A renewed session (told by the transport, never by the server) brings the server's
        // details anew; its MCPL state starts over from the new `initialize` result, with a
        // new initial policy.
        let renewed = Arc::clone(&server);
        let weak = self.mcpl.as_ref().map(McplHost::weak);
        engine.on_transport_event(move |peer, event| {
            let TransportEvent::SessionRenewed(result) = event else { return };
            refresh(&renewed, *result);
            let Some(weak) = &weak else { return };
            let details = renewed.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if let (Some(host), Some(details)) = (McplHost::from_weak(weak), details) {
                let peer = peer.clone();
                tokio::spawn(async move { host.attach(peer, &details).await });
            }
        });
        Client {
            engine,
            info: self.info,
            capabilities: self.capabilities,
            negotiation: self.negotiation,
            server,
            handlers: self.handlers,
            input_mode: self.input_mode,
            max_pages: self.max_pages,
            max_list_items: self.max_list_items,
            max_list_bytes: self.max_list_bytes,
            notify,
            strict: self.strict,
            cache: self.cache,
            cache_mode: CacheMode::Use,
            link,
            mcpl: self.mcpl,
            request_meta: Arc::default(),
        }
    }

    /// Builds the client and connects it over `transport` (see [`Client::connect`]).
    ///
    /// # Errors
    ///
    /// As [`Client::connect`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    /// let client = Client::builder("app", "1.0.0").connect(transport).await?;
    /// assert_eq!(client.server().expect("connected").server_info.name, "echo-server");
    /// # Ok(()) }
    /// ```
    pub async fn connect<T: Transport>(self, transport: T) -> Result<Client> {
        let client = self.build();
        client.connect(transport).await?;
        Ok(client)
    }

    /// Refuses, locally, requests the server did not advertise (see
    /// [`Client::with_strict_capabilities`]).
    pub fn with_strict_capabilities(mut self, strict: bool) -> ClientBuilder {
        self.strict = strict;
        self
    }

    /// Pins the protocol version (see [`Client::with_protocol_version`]).
    pub fn with_protocol_version(self, version: ProtocolVersion) -> ClientBuilder {
        self.with_negotiation(Negotiation::Pinned(version))
    }

    /// How the protocol revision is chosen (see [`Client::with_negotiation`]).
    pub fn with_negotiation(mut self, negotiation: Negotiation) -> ClientBuilder {
        self.negotiation = negotiation;
        self
    }

    /// The most pages a list call follows (see [`Client::with_max_pages`]).
    pub fn with_max_pages(mut self, pages: usize) -> ClientBuilder {
        self.max_pages = pages.max(1);
        self
    }

    /// The most items a list call collects (see [`Client::with_max_list_items`]).
    pub fn with_max_list_items(mut self, items: usize) -> ClientBuilder {
        self.max_list_items = items;
        self
    }

    /// The most bytes of JSON a list call accepts (see [`Client::with_max_list_bytes`]).
    pub fn with_max_list_bytes(mut self, bytes: usize) -> ClientBuilder {
        self.max_list_bytes = bytes;
        self
    }

    /// How input-required results are answered (see [`Client::with_input_required`]).
    pub fn with_input_required(mut self, mode: InputRequiredMode) -> ClientBuilder {
        self.input_mode = mode;
        self
    }

    /// Answers `sampling/createMessage` with `handler` and declares the `sampling` capability.
    ///
    /// The handler runs for 2025-era requests from the server and for sampling requests in
    /// 2026-era input-required results. An `Err` goes back to the server as the JSON-RPC error
    /// (2025), or fails the call that needed the input (2026).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{
    ///     ContentBlock, CreateMessageRequestParams, CreateMessageResult, Role, SamplingContent,
    ///     SamplingMessage, SamplingMessageContentBlock, TextContent, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that asks the client's model a question.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("capital", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(answer) = ctx.sampling_response("ask") {
    ///             let SamplingContent::Single(SamplingMessageContentBlock::Text(said)) = &answer.content
    ///             else {
    ///                 return Ok(ToolOutput::error("not text").into());
    ///             };
    ///             return Ok(ToolOutput::text(format!("{} says {}", answer.model, said.text)).into());
    ///         }
    ///         let question = TextContent::new("Capital of France? One word.");
    ///         let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::Text(question));
    ///         let params = CreateMessageRequestParams::new(vec![message], 20);
    ///         Ok::<ToolReply, _>(ctx.input_required().sample("ask", params).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// // The client's "model": here a canned answer.
    /// let client = Client::builder("my-app", "1.0.0").on_sampling(|params| async move {
    ///     assert_eq!(params.max_tokens, 20);
    ///     let reply = SamplingMessageContentBlock::Text(TextContent::new("Paris"));
    ///     Ok(CreateMessageResult::new(Role::Assistant, reply, "some-llm"))
    /// }).build();
    /// client.connect(transport).await?;
    /// let result = client.call_tool("capital", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("some-llm says Paris")]);
    /// # Ok(()) }
    /// ```
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<CreateMessageResult>> + Send + 'static,
    {
        self.handlers.sampling = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers form-mode `elicitation/create` with `handler` and declares `elicitation.form`.
    ///
    /// When the handler accepts, fields it left out of `content` are filled from the schema's
    /// `default` values.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeMap;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{
    ///     ContentBlock, ElicitAction, ElicitRequestFormParams, ElicitResult, ElicitValue,
    ///     ElicitationSchema, StringSchema, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that asks the user for their name.
    /// let server = Server::builder("greeter", "1.0.0")
    ///     .tool(Tool::new("greet", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(ElicitValue::String(name)) = ctx.elicited("who").and_then(|c| c.get("name")) {
    ///             return Ok(ToolOutput::text(format!("Hello, {name}!")).into());
    ///         }
    ///         let form = ElicitationSchema::default()
    ///             .with_property("name", StringSchema::default())
    ///             .with_required("name");
    ///         let ask = ElicitRequestFormParams::new("What is your name?", form);
    ///         Ok::<ToolReply, _>(ctx.input_required().elicit("who", ask).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// // The client shows the form to its user; here the user types "Ada".
    /// let client = Client::builder("my-app", "1.0.0").on_elicitation(|form| async move {
    ///     assert_eq!(form.message, "What is your name?");
    ///     let mut result = ElicitResult::new(ElicitAction::Accept);
    ///     result.content = Some(BTreeMap::from([("name".to_owned(), ElicitValue::String("Ada".into()))]));
    ///     Ok(result)
    /// }).build();
    /// client.connect(transport).await?;
    /// let result = client.call_tool("greet", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("Hello, Ada!")]);
    /// # Ok(()) }
    /// ```
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn(ElicitRequestFormParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.handlers.form = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers URL-mode `elicitation/create` (send the user to a URL) with `handler` and
    /// declares `elicitation.url`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{
    ///     ContentBlock, ElicitAction, ElicitRequestURLParams, ElicitResult, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that sends the user to a sign-in page before it goes on.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("connect_account", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(answer) = ctx.elicitation_response("sign_in") {
    ///             return Ok(ToolOutput::text(format!("sign-in: {:?}", answer.action)).into());
    ///         }
    ///         let ask = ElicitRequestURLParams::new("Sign in to continue", "https://example.com/sign-in");
    ///         Ok::<ToolReply, _>(ctx.input_required().elicit("sign_in", ask).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::builder("my-app", "1.0.0").on_url_elicitation(|request| async move {
    ///     // A real client opens `request.url` in a browser once the user agrees.
    ///     assert_eq!(request.url, "https://example.com/sign-in");
    ///     Ok(ElicitResult::new(ElicitAction::Accept))
    /// }).build();
    /// assert!(client.capabilities().elicitation.and_then(|e| e.url).is_some());
    /// client.connect(transport).await?;
    /// let result = client.call_tool("connect_account", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("sign-in: Accept")]);
    /// # Ok(()) }
    /// ```
    pub fn on_url_elicitation<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn(ElicitRequestURLParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<ElicitResult>> + Send + 'static,
    {
        self.handlers.url = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers `roots/list` with the roots `handler` returns and declares `roots`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::{ContentBlock, Root, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that works on the directories the client shares.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("project_dirs", ToolSchema::object()), |ctx, _args| async move {
    ///         let Some(roots) = ctx.roots_response("roots") else {
    ///             return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
    ///         };
    ///         let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    ///         Ok(ToolOutput::text(uris.join(", ")).into())
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::builder("my-app", "1.0.0").on_roots(|| async {
    ///     Ok(vec![Root::new("file:///src/api"), Root::new("file:///src/web")])
    /// }).build();
    /// client.connect(transport).await?;
    /// let result = client.call_tool("project_dirs", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("file:///src/api, file:///src/web")]);
    /// # Ok(()) }
    /// ```
    pub fn on_roots<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HandlerResult<Vec<Root>>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move || Box::pin(handler())));
        self
    }

    /// Calls `handler` on `notifications/tools/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("tools", "1.0.0")
    ///     .tool(Tool::new("first", ToolSchema::object()), |_ctx, _args| async {
    ///         Ok(ToolOutput::text("first"))
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_tools_list_changed(move || {
    ///         let tx = tx.clone();
    ///         async move { tx.send(()).ok(); }
    ///     })
    ///     .build();
    /// client.connect(transport).await?;
    /// assert_eq!(client.list_tools().await?.len(), 1);
    ///
    /// server.tools_mut().add(Tool::new("second", ToolSchema::object()), |_ctx, _args| async {
    ///     Ok(ToolOutput::text("second"))
    /// })?;
    /// changed.recv().await;
    /// // Time to list again.
    /// assert_eq!(client.list_tools().await?.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn on_tools_list_changed<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notify.tools = Some(callback(move |()| handler()));
        self
    }

    /// Calls `handler` on `notifications/prompts/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("prompts", "1.0.0")
    ///     .prompt(Prompt::new("first"), |_ctx, _args| async { Ok(PromptOutput::user_text("1")) })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_prompts_list_changed(move || {
    ///         let tx = tx.clone();
    ///         async move { tx.send(()).ok(); }
    ///     })
    ///     .build();
    /// client.connect(transport).await?;
    ///
    /// server.prompts_mut().add(Prompt::new("second"), |_ctx, _args| async {
    ///     Ok(PromptOutput::user_text("2"))
    /// })?;
    /// changed.recv().await;
    /// assert_eq!(client.list_prompts().await?.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn on_prompts_list_changed<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notify.prompts = Some(callback(move |()| handler()));
        self
    }

    /// Calls `handler` on `notifications/resources/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(Resource::new("file:///a.txt", "a"), |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "a")])
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_resources_list_changed(move || {
    ///         let tx = tx.clone();
    ///         async move { tx.send(()).ok(); }
    ///     })
    ///     .build();
    /// client.connect(transport).await?;
    ///
    /// assert!(server.resources_mut().remove("file:///a.txt"));
    /// changed.recv().await;
    /// assert!(client.list_resources().await?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn on_resources_list_changed<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notify.resources = Some(callback(move |()| handler()));
        self
    }

    /// Calls `handler` with the URI of each `notifications/resources/updated`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(Resource::new("file:///status.json", "status"), |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "{}")])
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut updated) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_resource_updated(move |uri| {
    ///         let tx = tx.clone();
    ///         async move { tx.send(uri).ok(); }
    ///     })
    ///     .build();
    /// client.connect(transport).await?;
    /// client.subscribe_resource("file:///status.json").await?;
    ///
    /// server.notify_resource_updated("file:///status.json");
    /// let uri = updated.recv().await.unwrap_or_default();
    /// // Read it again for the new contents.
    /// let fresh = client.read_resource(&uri).await?;
    /// assert_eq!(fresh.contents[0].uri(), "file:///status.json");
    /// # Ok(()) }
    /// ```
    pub fn on_resource_updated<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notify.updated = Some(callback(handler));
        self
    }

    /// Calls `handler` with each log message (`notifications/message`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::{LoggingLevel, Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("noisy", ToolSchema::object()), |ctx, _args| async move {
    ///         ctx.log(LoggingLevel::Warning, Some("noisy"), json!({"disk": "almost full"})).await.ok();
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut logs) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_log_message(move |message| {
    ///         let tx = tx.clone();
    ///         async move { tx.send(message).ok(); }
    ///     })
    ///     .build();
    /// client.connect(transport).await?;
    /// client.set_log_level(LoggingLevel::Info).await?;
    /// client.call_tool("noisy", ()).await?;
    ///
    /// let message = logs.recv().await.expect("a log message");
    /// assert_eq!(message.level, LoggingLevel::Warning);
    /// assert_eq!(message.logger.as_deref(), Some("noisy"));
    /// assert_eq!(message.data["disk"], "almost full");
    /// # Ok(()) }
    /// ```
    pub fn on_log_message<F, Fut>(mut self, handler: F) -> ClientBuilder
    where
        F: Fn(LoggingMessageNotificationParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notify.log = Some(callback(handler));
        self
    }

    /// How many notifications each [`Subscription`](crate::Subscription) holds for its reader before newer ones
    /// are dropped (see [`Subscription::dropped`](crate::Subscription::dropped)). Default: [`DEFAULT_SUBSCRIPTION_CAPACITY`]
    /// (256).
    ///
    /// ```
    /// let client = mcpl_client::Client::builder("app", "1").with_subscription_capacity(4096).build();
    /// # drop(client);
    /// ```
    pub fn with_subscription_capacity(mut self, capacity: usize) -> ClientBuilder {
        self.subscription_capacity = capacity.max(1);
        self
    }

    /// Speaks MCPL on every connection with `host`'s policy and handlers (see
    /// [`crate::mcpl`]). MCPL lives in the `initialize` (2025) era, so
    /// [`Negotiation::Auto`] tries `initialize` first; a server that does not speak that era
    /// (it answers `initialize` with an error) is reached with `server/discover` in the
    /// stateless era instead, as plain MCP (the host's `status()` stays `None`). Pinning a
    /// stateless revision makes [`connect`](Self::connect) fail. The host advertisement joins
    /// the client capabilities (`experimental.mcpl`) of the `initialize` era only.
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    ///
    /// let client = Client::builder("host", "1").with_mcpl(McplHost::new(HostPolicy::default())).build();
    /// let experimental = client.capabilities().experimental.unwrap();
    /// assert_eq!(experimental["mcpl"]["version"], "0.5");
    /// ```
    pub fn with_mcpl(mut self, host: impl Into<McplHost>) -> ClientBuilder {
        self.mcpl = Some(host.into());
        self
    }

    /// Caches cacheable results in `cache` (see the [module documentation](self)). The
    /// invalidating notifications keep it current from then on, alongside any notification
    /// handlers (see [`crate::notify`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::cache::ResponseCache;
    /// use mcpl_client::transport::HttpTransport;
    /// # use mcpl_test_kit::http::serve_cached;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (url, server) = serve_cached().await?;
    /// let client = Client::builder("my-app", "1.0.0").with_cache(ResponseCache::in_memory().principal("alice")).build();
    /// client.connect(HttpTransport::new(url)).await?;
    /// let first = client.list_tools().await?;
    /// let again = client.list_tools().await?;
    /// assert_eq!(first, again);
    /// assert_eq!(server.count("tools/list"), 1);
    /// // Calls are never cached.
    /// client.call_tool("search", ()).await?;
    /// client.call_tool("search", ()).await?;
    /// assert_eq!(server.count("tools/call"), 2);
    /// # Ok(()) }
    /// ```
    pub fn with_cache(mut self, cache: ResponseCache) -> ClientBuilder {
        self.cache = Some(cache);
        self
    }
}

impl Client {
    /// Creates a client that calls itself `name`, version `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    ///
    /// let client = Client::new("my-app", "1.0.0");
    /// assert!(!client.is_connected());
    /// assert!(client.server().is_none());
    /// ```
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Client {
        ClientBuilder::new(name, version).build()
    }

    /// A builder for a client that calls itself `name`, version `version`: set its options
    /// and handlers, then [`build`](ClientBuilder::build) or
    /// [`connect`](ClientBuilder::connect).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    ///
    /// let client = Client::builder("my-app", "1.0.0")
    ///     .on_log_message(|message| async move { println!("{:?}", message.data) })
    ///     .build();
    /// assert!(!client.is_connected());
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(name, version)
    }

    /// A builder with this client's configuration and none of its connection.
    pub(crate) fn to_builder(&self) -> ClientBuilder {
        let (notify, subscription_capacity) = self.notify.config();
        ClientBuilder {
            info: self.info.clone(),
            capabilities: self.capabilities.clone(),
            negotiation: self.negotiation,
            handlers: self.handlers.clone(),
            input_mode: self.input_mode,
            max_pages: self.max_pages,
            max_list_items: self.max_list_items,
            max_list_bytes: self.max_list_bytes,
            strict: self.strict,
            cache: self.cache.clone(),
            notify,
            subscription_capacity,
            mcpl: self.mcpl.clone(),
        }
    }
}
