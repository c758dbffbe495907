//! [`ServerBuilder`] collects a server's identity and features; [`Server`] is the result.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcpl_core::types::{Implementation, Prompt, Resource, ResourceTemplate, Tool, ToolExecution};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
#[cfg(feature = "schema")]
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use mcpl_core::jsonrpc::ErrorObject;

use crate::cache::{CacheHint, CacheHints, CachedResult};
use crate::completion::{CompletionRequest, CompletionResult};
use crate::context::Context;
use crate::events::EVENT_BUFFER;
use crate::features::{Features, Registry};
use crate::input::{PromptReply, ReadReply, ToolReply};
use crate::mcpl::{Mcpl, McplHub};
use crate::prompt::{PromptArguments, PromptEntry};
#[cfg(feature = "schema")]
use crate::prompt::{TypedPrompt, typed_prompt};
use crate::request_state::StateSealer;
use crate::resource::{ReadRequest, ResourceEntry, TemplateEntry};
use crate::server::ServerInner;
use crate::task::{TaskOptions, TaskStore};
use crate::task_serving::table::Tasks;
use crate::tool::{Arguments, ToolEntry};
#[cfg(feature = "schema")]
use crate::tool::{IntoToolReply, Typed, typed_tool, with_schema_of};
use mcpl_core::error::ErrorChain;

pub use crate::handler::registration::RegistrationError;

/// The built server (its home is [`crate::server`]).
#[doc(no_inline)]
pub use crate::server::Server;

/// The default bound on one write to a stdio or WebSocket client: 30 seconds (see
/// [`ServerBuilder::write_timeout`]).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::DEFAULT_WRITE_TIMEOUT, std::time::Duration::from_secs(30));
/// ```
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Builds a [`Server`].
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
///
/// let server = Server::builder("weather", "2.1.0")
///     .title("Weather")
///     .instructions("Ask for a city's forecast.")
///     .page_size(20)
///     .tool(Tool::new("forecast", ToolSchema::object()), |_ctx, _args| async {
///         Ok(ToolOutput::text("sunny"))
///     })
///     .try_build()
///     .expect("a valid definition");
/// assert_eq!(server.tools().len(), 1);
/// ```
#[must_use]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    page_size: Option<usize>,
    max_uri_length: usize,
    max_subscriptions: usize,
    cache_hints: CacheHints,
    sealer: Option<StateSealer>,
    state_ttl: Option<Duration>,
    task_store: Option<Arc<dyn TaskStore>>,
    task_ttl: Option<Option<Duration>>,
    task_poll_interval: Option<Duration>,
    max_inflight_requests: usize,
    max_queued: (usize, usize),
    write_timeout: Option<Duration>,
    registry: Registry,
    mcpl: Option<Arc<McplHub>>,
    errors: Vec<RegistrationError>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .field("tools", &self.registry.tools.items.len())
            .field("resources", &self.registry.resources.items.len())
            .field("resource_templates", &self.registry.templates.items.len())
            .field("prompts", &self.registry.prompts.items.len())
            .field("errors", &self.errors)
            .finish()
    }
}

/// Why a [`ServerBuilder`] could not build.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
///
/// let tool = || Tool::new("twice", ToolSchema::object());
/// let err = Server::builder("s", "1")
///     .tool(tool(), |_c, _a| async { Ok(ToolOutput::text("1")) })
///     .tool(tool(), |_c, _a| async { Ok(ToolOutput::text("2")) })
///     .try_build()
///     .unwrap_err();
/// assert_eq!(err.problems.len(), 1);
/// assert!(err.to_string().contains("defined twice"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid server definition: {}", problems.iter().map(|p| ErrorChain(p).to_string()).collect::<Vec<_>>().join("; "))]
#[non_exhaustive]
pub struct BuildError {
    /// Every problem found.
    pub problems: Vec<RegistrationError>,
}

/// [`Server::builder`] lives beside the builder it starts, so that the server does not import
/// its builder.
impl Server {
    /// Starts building a server that calls itself `name`, version `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("my-server", "0.1.0").title("My Server").build();
    /// assert_eq!(server.info().name, "my-server");
    /// assert_eq!(server.info().title.as_deref(), Some("My Server"));
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }
}

impl ServerBuilder {
    /// A builder of a server that calls itself `name`, version `version`, with the defaults
    /// (see [`Server::builder`]).
    pub(crate) fn new(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            page_size: None,
            max_uri_length: crate::resource::DEFAULT_MAX_URI_LENGTH,
            max_subscriptions: crate::resource::DEFAULT_MAX_SUBSCRIPTIONS,
            cache_hints: CacheHints::default(),
            sealer: None,
            state_ttl: None,
            task_store: None,
            task_ttl: None,
            task_poll_interval: None,
            max_inflight_requests: mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS,
            max_queued: (
                mcpl_core::engine::DEFAULT_MAX_QUEUED_MESSAGES,
                mcpl_core::engine::DEFAULT_MAX_QUEUED_BYTES,
            ),
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            registry: Registry::default(),
            mcpl: None,
            errors: Vec::new(),
        }
    }

    /// Sets the instructions sent to clients in the `initialize` result.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").instructions("Be brief.").build();
    /// assert_eq!(server.instructions(), Some("Be brief."));
    /// ```
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Sets the server's human-readable title (`serverInfo.title`), for clients to show
    /// instead of its name.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("gh-issues", "2.1.0").title("GitHub Issues").build();
    /// assert_eq!(server.info().name, "gh-issues");
    /// assert_eq!(server.info().title.as_deref(), Some("GitHub Issues"));
    /// ```
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Splits `tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`
    /// into pages of `size` items (at least 1), linked by opaque cursors. By default every
    /// list is one page.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").page_size(0).build();
    /// assert_eq!(server.page_size(), Some(1), "at least one item per page");
    /// ```
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = Some(size.max(1));
        self
    }

    /// Sets the longest resource URI a client may read or subscribe to, in bytes; a longer one
    /// is refused (`-32602`) before it is looked up or matched against any template. Default
    /// [`DEFAULT_MAX_URI_LENGTH`](crate::resource::DEFAULT_MAX_URI_LENGTH), 8 KiB.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_uri_length(2048).build();
    /// assert_eq!(server.max_uri_length(), 2048);
    /// ```
    pub fn max_uri_length(mut self, bytes: usize) -> Self {
        self.max_uri_length = bytes;
        self
    }

    /// Sets the most resources one session (a stdio or WebSocket connection, a 2025 HTTP
    /// session) subscribes to with `resources/subscribe`; one more is refused (`-32602`,
    /// `data.maxSubscriptions`) until it unsubscribes from one. Default
    /// [`DEFAULT_MAX_SUBSCRIPTIONS`](crate::resource::DEFAULT_MAX_SUBSCRIPTIONS), 1,024.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_subscriptions(16).build();
    /// assert_eq!(server.max_subscriptions(), 16);
    /// ```
    pub fn max_subscriptions(mut self, subscriptions: usize) -> Self {
        self.max_subscriptions = subscriptions;
        self
    }

    /// Sets how long clients may reuse `result`, and who may (the `ttlMs` and `cacheScope` of
    /// 2026-07-28 results; see [`crate::cache`]). Without it, the endpoint's default applies
    /// ([`HttpConfig::cache_ttl`](crate::http::HttpConfig::cache_ttl), scope `public`).
    /// 2025-era results never carry these members.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::Server;
    /// use mcpl_server::cache::{CacheHint, CachedResult};
    ///
    /// let server = Server::builder("s", "1")
    ///     .cache_hint(CachedResult::PromptsList, CacheHint::public(Duration::from_secs(3600)))
    ///     .cache_hint(CachedResult::Discover, CacheHint::public(Duration::from_secs(60)))
    ///     .build();
    /// assert_eq!(server.cache_hint(CachedResult::Discover).unwrap().ttl_ms(), 60_000);
    /// ```
    pub fn cache_hint(mut self, result: CachedResult, hint: CacheHint) -> Self {
        self.cache_hints.set(result, hint);
        self
    }

    /// Sets the sealer of the `requestState` of input-required results (see
    /// [`crate::request_state`]). By default each server draws a random key when it is built
    /// ([`StateSealer::random`]; should that fail, it is a build problem,
    /// [`RegistrationError::NoRandomness`]); instances of one deployment behind a shared
    /// endpoint must share a key.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::request_state::StateSealer;
    ///
    /// // Every instance behind one endpoint seals with the same key.
    /// let key = [7u8; 32]; // in practice: from your secret store
    /// let server = Server::builder("s", "1").state_sealer(StateSealer::new(&key)).build();
    /// # drop(server);
    /// ```
    pub fn state_sealer(mut self, sealer: StateSealer) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Sets how long a sealed `requestState` stays valid (default
    /// [`DEFAULT_STATE_TTL`](crate::request_state::DEFAULT_STATE_TTL), 10 minutes); overrides the
    /// time to live of a sealer set with [`state_sealer`](Self::state_sealer).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = mcpl_server::Server::builder("s", "1")
    ///     .request_state_ttl(Duration::from_secs(120))
    ///     .build();
    /// assert_eq!(server.state_sealer().ttl(), Duration::from_secs(120));
    /// ```
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = Some(ttl);
        self
    }

    /// Sets where tasks live (see [`crate::task`]); by default an
    /// [`InMemoryTaskStore`](crate::task::InMemoryTaskStore) private to this server. Setting a
    /// store also serves the tasks extension when no tool is task-capable.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::task::InMemoryTaskStore;
    ///
    /// let server = Server::builder("s", "1").task_store(InMemoryTaskStore::new()).build();
    /// assert!(server.serves_tasks());
    /// ```
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Sets how long tasks are kept after their creation (`ttlMs`); `None`: forever. Default
    /// [`DEFAULT_TASK_TTL`](crate::task::DEFAULT_TASK_TTL), one hour.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = mcpl_server::Server::builder("s", "1")
    ///     .task_ttl(Some(Duration::from_secs(24 * 3600)))
    ///     .task_poll_interval(Duration::from_millis(500))
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.task_ttl = Some(ttl);
        self
    }

    /// Sets the polling interval suggested to clients (`pollIntervalMs`). Default
    /// [`DEFAULT_POLL_INTERVAL`](crate::task::DEFAULT_POLL_INTERVAL), one second.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = mcpl_server::Server::builder("s", "1")
    ///     .task_poll_interval(Duration::from_secs(5))
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_poll_interval = Some(interval);
        self
    }

    /// The most requests of one client connection (a stdio or WebSocket connection, or a
    /// 2025 HTTP session) whose handlers run at once; one more is answered at once with
    /// `-32000` ("too many requests in flight"), never queued. Default:
    /// [`DEFAULT_MAX_INFLIGHT_REQUESTS`](mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS)
    /// (256).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_inflight_requests(32).build();
    /// # drop(server);
    /// ```
    pub fn max_inflight_requests(mut self, max: usize) -> Self {
        self.max_inflight_requests = max;
        self
    }

    /// The bound on what waits to be written to one client connection (a stdio or WebSocket
    /// connection, or a 2025 HTTP session): at most `messages` messages and `bytes` bytes (the
    /// JSON size of their payloads). At the bound, handlers' answers and the server's
    /// notifications and requests wait, and the connection reads no more requests than the
    /// in-flight limit lets run: a client that stops reading costs at most this much memory
    /// (see [`EngineConfig::max_queued_messages`](mcpl_core::engine::EngineConfig::max_queued_messages)).
    /// Default: 256 messages, 8 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_queued(64, 1024 * 1024).build();
    /// # drop(server);
    /// ```
    pub fn max_queued(mut self, messages: usize, bytes: usize) -> Self {
        self.max_queued = (messages, bytes);
        self
    }

    /// How long one write to a stdio or WebSocket client may take before the client is taken
    /// to have stopped reading: its connection is closed, and the refusal is logged once and
    /// counted ([`RefusalKind::WriteTimeout`](crate::http::RefusalKind::WriteTimeout) for a
    /// WebSocket endpoint). HTTP connections have their own,
    /// [`ConnectionConfig::write_timeout`](crate::http::ConnectionConfig::write_timeout).
    /// `None`: a write may wait forever (the queue bound of [`max_queued`](Self::max_queued)
    /// still holds the memory). Default: [`DEFAULT_WRITE_TIMEOUT`] (30 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server =
    ///     mcpl_server::Server::builder("s", "1").write_timeout(Some(Duration::from_secs(60))).build();
    /// # drop(server);
    /// ```
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    fn record(mut self, result: Result<(), RegistrationError>) -> Self {
        if let Err(e) = result {
            self.errors.push(e);
        }
        self
    }

    /// Adds a tool. Tools are listed in the order they were added.
    ///
    /// Every call's arguments are checked against the tool's input schema first: arguments
    /// that do not match get a tool error result (`isError: true`) naming the problem, and the
    /// handler is not called. When the tool has an output schema, the handler's structured
    /// content is checked against it; a mismatch is the server's bug and answers `-32603`.
    ///
    /// An invalid or duplicate name, or an invalid schema, is reported by
    /// [`try_build`](Self::try_build).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let schema = ToolSchema::object()
    ///     .with_property("city", json!({"type": "string"}))
    ///     .with_required("city");
    /// let mut tool = Tool::new("forecast", schema);
    /// tool.description = Some("Today's weather in a city.".into());
    /// let server = Server::builder("weather", "1.0.0")
    ///     .tool(tool, |_ctx, args| async move {
    ///         let city = args["city"].as_str().unwrap_or_default();
    ///         Ok(ToolOutput::text(format!("Sunny in {city}")))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// assert_eq!(server.tools()[0].name, "forecast");
    /// ```
    pub fn tool<F, Fut, R>(self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        self.tool_entry(ToolEntry::new(tool, Arc::new(handler)))
    }

    /// Adds a tool whose arguments deserialize into `Args`; its input schema is generated from
    /// `Args` (JSON Schema 2020-12).
    ///
    /// ```
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     /// The first term.
    ///     a: i64,
    ///     /// The second term.
    ///     b: i64,
    /// }
    ///
    /// let server = Server::builder("calc", "1.0.0")
    ///     .typed_tool("add", "Adds two integers.", |_ctx, args: Add| async move {
    ///         Ok(ToolOutput::text((args.a + args.b).to_string()))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// assert_eq!(server.tools()[0].input_schema.required.as_deref(), Some(&["a".to_owned(), "b".to_owned()][..]));
    /// ```
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
    pub fn typed_tool<Args, F, Fut, R>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        Args: DeserializeOwned + JsonSchema + 'static,
        F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: IntoToolReply,
    {
        let entry = typed_tool::<Args, R>(name, description)
            .and_then(|tool| ToolEntry::new(tool, Arc::new(Typed::new(handler))));
        self.tool_entry(entry)
    }

    /// Adds a tool whose arguments deserialize into `Args`, from a full definition (title,
    /// annotations, output schema...) whose input schema is replaced by the one of `Args`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolAnnotations, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Query {
    ///     /// What to look for.
    ///     text: String,
    /// }
    ///
    /// let mut tool = Tool::new("search", ToolSchema::object());
    /// tool.title = Some("Search".into());
    /// let mut annotations = ToolAnnotations::default();
    /// annotations.read_only_hint = Some(true);
    /// tool.annotations = Some(annotations);
    /// let server = Server::builder("s", "1")
    ///     .typed_tool_with(tool, |_ctx, q: Query| async move { Ok(ToolOutput::text(q.text)) })
    ///     .try_build()
    ///     .unwrap();
    /// let listed = &server.tools()[0];
    /// assert_eq!(listed.title.as_deref(), Some("Search"));
    /// assert!(listed.input_schema.properties.as_ref().is_some_and(|p| p.contains_key("text")));
    /// ```
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
    pub fn typed_tool_with<Args, F, Fut, R>(self, tool: Tool, handler: F) -> Self
    where
        Args: DeserializeOwned + JsonSchema + 'static,
        F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: IntoToolReply,
    {
        let entry = with_schema_of::<Args, R>(tool)
            .and_then(|tool| ToolEntry::new(tool, Arc::new(Typed::new(handler))));
        self.tool_entry(entry)
    }

    /// Adds a tool that may run as a task (see [`crate::task`]): `options` says whether calls
    /// may or must be tasks and when the task starts; the definition's `execution.taskSupport`
    /// is set to match.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::task::TaskOptions;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("jobs", "1.0.0")
    ///     .task_tool(Tool::new("crunch", ToolSchema::object()), TaskOptions::optional(), |_ctx, _args| async {
    ///         tokio::time::sleep(Duration::from_secs(5)).await;
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// assert!(server.serves_tasks());
    /// ```
    pub fn task_tool<F, Fut, R>(self, mut tool: Tool, options: TaskOptions, handler: F) -> Self
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        tool.execution.get_or_insert_with(ToolExecution::default).task_support =
            Some(options.support);
        let entry = ToolEntry::new(tool, Arc::new(handler)).map(|mut e| {
            e.task = options;
            e
        });
        self.tool_entry(entry)
    }

    /// Serves MCPL 0.5 (see [`crate::mcpl`]): `mcpl` holds the manifest, whose `revision` is
    /// computed here, and the handlers of the host-to-server methods.
    /// [`try_build`](Self::try_build) reports a manifest that has no revision (an identifier
    /// breaking the charset rule), and each feature set the server cannot serve (a declaration
    /// that does not parse, or whose `uses` is not a non-empty list of capability paths).
    /// [`build`](Self::build) then serves no MCPL for the former, and leaves such sets out of
    /// the served manifest for the latter (the other sets work).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(Manifest::new().with_model_info(true))).build();
    /// let manifest = server.mcpl_manifest().unwrap();
    /// assert_eq!(manifest.revision(), Some(manifest.compute_revision().unwrap()));
    /// ```
    pub fn mcpl(mut self, mcpl: Mcpl) -> Self {
        match McplHub::new(mcpl) {
            Ok((hub, problems)) => {
                for problem in problems {
                    self.errors.push(RegistrationError::InvalidMcplManifest(
                        ErrorChain(&problem).to_string(),
                    ));
                }
                self.mcpl = Some(Arc::new(hub));
            }
            Err(e) => {
                self.errors.push(RegistrationError::InvalidMcplManifest(ErrorChain(&e).to_string()))
            }
        }
        self
    }

    fn tool_entry(mut self, entry: Result<ToolEntry, RegistrationError>) -> Self {
        let result = entry.and_then(|entry| self.registry.add_tool(entry));
        self.record(result)
    }

    /// Adds a static resource, read by `handler`. Resources are listed in the order they were
    /// added.
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let mut readme = Resource::new("file:///README.md", "README");
    /// readme.mime_type = Some("text/markdown".into());
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(readme, |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "# Hello")])
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn resource<F, Fut, R>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let result = self.registry.add_resource(ResourceEntry::new(resource, Arc::new(handler)));
        self.record(result)
    }

    /// Adds a resource template (RFC 6570, see [`crate::uri_template`]); reads of URIs it
    /// matches go to `handler` with the template's variables. Static resources are matched
    /// first, then templates in the order they were added.
    ///
    /// ```
    /// use mcpl_core::types::ResourceTemplate;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("users", "1.0.0")
    ///     .resource_template(ResourceTemplate::new("users://{id}/profile", "profile"), |_ctx, req| async move {
    ///         let id = req.var("id").unwrap_or_default().to_owned();
    ///         Ok(vec![ResourceOutput::text(req.uri, format!("user {id}"))])
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn resource_template<F, Fut, R>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let result = TemplateEntry::new(template, Arc::new(handler))
            .and_then(|entry| self.registry.add_template(entry));
        self.record(result)
    }

    /// Serves a skill (see [`crate::skills`]): its files become resources, and the server
    /// declares the skills extension. Skills are listed in the order they were added; a skill
    /// URI already served, or a file URI served with other contents, is reported by
    /// [`try_build`](Self::try_build).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let manifest = "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\nSee references/FORMS.md\n";
    /// let skill = SkillBundle::new("pdf-processing", manifest)?.file("references/FORMS.md", "# Forms")?;
    /// let server = Server::builder("docs", "1.0.0").skill(skill).try_build().unwrap();
    /// let uris: Vec<_> = server.resources().into_iter().map(|r| r.uri).collect();
    /// assert!(uris.is_empty(), "static resources only; skill files are listed by resources/list");
    /// assert_eq!(server.skills().len(), 1);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn skill(mut self, skill: crate::skills::SkillBundle) -> Self {
        let result = crate::skills::register(&mut self.registry, skill);
        self.record(result)
    }

    /// Serves each of `skills`, as [`skill`](Self::skill) does (the skills
    /// [`load_dir`](crate::skills::load_dir) found, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let skill = |name: &str| SkillBundle::new(name, format!("---\nname: {name}\ndescription: d\n---\n"));
    /// let server = Server::builder("s", "1").skills([skill("a")?, skill("b")?]).build();
    /// assert_eq!(server.skills().len(), 2);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn skills(self, skills: impl IntoIterator<Item = crate::skills::SkillBundle>) -> Self {
        skills.into_iter().fold(self, Self::skill)
    }

    /// Adds a prompt. Prompts are listed in the order they were added; a `prompts/get` that
    /// lacks a required argument is refused (`-32602`) before `handler` runs.
    ///
    /// ```
    /// use mcpl_core::types::{Prompt, PromptArgument};
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let mut prompt = Prompt::new("review");
    /// let mut code = PromptArgument::new("code");
    /// code.required = Some(true);
    /// prompt.arguments = Some(vec![code]);
    /// let server = Server::builder("reviewer", "1.0.0")
    ///     .prompt(prompt, |_ctx, args| async move {
    ///         Ok(PromptOutput::user_text(format!("Review this:\n{}", args["code"])))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn prompt<F, Fut, R>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(Context, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<PromptReply> + 'static,
    {
        let result = self.registry.add_prompt(PromptEntry::new(prompt, Arc::new(handler)));
        self.record(result)
    }

    /// Adds a prompt whose arguments deserialize into `Args`: the listed arguments come from
    /// `Args`'s schema (one per field, with its doc comment as the description, required
    /// unless it is an `Option`). A `prompts/get` missing a required argument, or with one
    /// that does not deserialize, is refused (`-32602`, naming the argument) before `handler`
    /// runs. Prompt arguments are strings, so every field must accept one (a `String`, an
    /// `Option<String>`, a unit enum).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Review {
    ///     /// The code to review.
    ///     code: String,
    ///     /// What to look at first.
    ///     focus: Option<String>,
    /// }
    ///
    /// let server = Server::builder("reviewer", "1.0.0")
    ///     .typed_prompt("review", "Reviews code.", |_ctx, r: Review| async move {
    ///         let focus = r.focus.unwrap_or_else(|| "correctness".into());
    ///         Ok(PromptOutput::user_text(format!("Review this for {focus}:\n{}", r.code)))
    ///     })
    ///     .try_build()?;
    /// let arguments = server.prompts()[0].arguments.clone().unwrap();
    /// assert_eq!(arguments[0].name, "code");
    /// assert_eq!(arguments[0].required, Some(true));
    /// assert_eq!(arguments[0].description.as_deref(), Some("The code to review."));
    /// assert_eq!(arguments[1].required, Some(false));
    /// # Ok::<(), mcpl_server::BuildError>(())
    /// ```
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
    pub fn typed_prompt<Args, F, Fut, R>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        Args: DeserializeOwned + JsonSchema + 'static,
        F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<PromptReply> + 'static,
    {
        let entry = typed_prompt::<Args>(name, description).map(|prompt| {
            let handler = Arc::new(TypedPrompt::new(&prompt.name, handler));
            PromptEntry::new(prompt, handler)
        });
        self.prompt_entry(entry)
    }

    #[cfg(feature = "schema")]
    fn prompt_entry(mut self, entry: Result<PromptEntry, RegistrationError>) -> Self {
        let result = entry.and_then(|entry| self.registry.add_prompt(entry));
        self.record(result)
    }

    /// Sets the completer of a prompt's argument (`completion/complete` with `ref/prompt`).
    ///
    /// [`try_build`](Self::try_build) reports a completer whose prompt or argument does not
    /// exist.
    ///
    /// ```
    /// use mcpl_core::types::{Prompt, PromptArgument};
    /// use mcpl_server::Server;
    /// use mcpl_server::completion::matching;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let mut prompt = Prompt::new("greet");
    /// prompt.arguments = Some(vec![PromptArgument::new("language")]);
    /// let server = Server::builder("s", "1")
    ///     .prompt(prompt, |_ctx, _args| async { Ok(PromptOutput::user_text("hi")) })
    ///     .prompt_completer("greet", "language", |_ctx, req| async move {
    ///         Ok(matching(["english", "esperanto", "french"], &req.value))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// # drop(server);
    /// ```
    pub fn prompt_completer<F, Fut>(mut self, prompt: &str, argument: &str, completer: F) -> Self
    where
        F: Fn(Context, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionResult> + Send + 'static,
    {
        let key = (prompt.to_owned(), argument.to_owned());
        self.registry.prompt_completers.insert(key, Arc::new(completer));
        self
    }

    /// Sets the completer of a resource template's variable (`completion/complete` with
    /// `ref/resource`, whose `uri` is the template).
    ///
    /// [`try_build`](Self::try_build) reports a completer whose template or variable does not
    /// exist.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ResourceTemplate;
    /// use mcpl_server::Server;
    /// use mcpl_server::completion::matching;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource_template(ResourceTemplate::new("repo://{name}/readme", "readme"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "...")])
    ///     })
    ///     .resource_completer("repo://{name}/readme", "name", |_ctx, req| async move {
    ///         Ok(matching(["mcpl-rs", "mcpl-host"], &req.value))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// # drop(server);
    /// ```
    pub fn resource_completer<F, Fut>(
        mut self,
        uri_template: &str,
        variable: &str,
        completer: F,
    ) -> Self
    where
        F: Fn(Context, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionResult> + Send + 'static,
    {
        let key = (uri_template.to_owned(), variable.to_owned());
        self.registry.template_completers.insert(key, Arc::new(completer));
        self
    }

    fn check_completers(&mut self) {
        let r = &self.registry;
        for (prompt, argument) in r.prompt_completers.keys() {
            let exists = r
                .prompts
                .get(prompt)
                .is_some_and(|p| p.prompt.arguments.iter().flatten().any(|a| &a.name == argument));
            if !exists {
                self.errors.push(RegistrationError::UnknownCompletionTarget {
                    target: format!("prompt {prompt:?} argument {argument:?}"),
                    what: "prompt argument",
                });
            }
        }
        for (template, variable) in r.template_completers.keys() {
            let exists = r
                .templates
                .get(template)
                .is_some_and(|t| t.parsed.variables().any(|v| v == variable));
            if !exists {
                self.errors.push(RegistrationError::UnknownCompletionTarget {
                    target: format!("template {template:?} variable {variable:?}"),
                    what: "template variable",
                });
            }
        }
    }

    /// Builds the server, checking the definition.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] listing every invalid or duplicate name, invalid schema or template,
    /// and completer without a target.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    ///
    /// // A completer for a prompt that does not exist.
    /// let err = Server::builder("s", "1")
    ///     .prompt_completer("missing", "arg", |_c, _r| async { Ok(vec![]) })
    ///     .try_build()
    ///     .unwrap_err();
    /// assert_eq!(err.problems.len(), 1);
    /// ```
    pub fn try_build(mut self) -> Result<Server, BuildError> {
        self.check_completers();
        self.draw_sealer();
        if !self.errors.is_empty() {
            return Err(BuildError { problems: self.errors });
        }
        Ok(self.build_unchecked())
    }

    /// Builds the server. Problems [`try_build`](Self::try_build) would report are logged as
    /// warnings instead, and the features they concern are left out (a duplicate serves the
    /// first definition).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// // The invalid tool is left out (and a warning logged); the rest is served.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("ok", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("ok")) })
    ///     .tool(Tool::new("not ok", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
    ///     .build();
    /// assert_eq!(server.tools().len(), 1);
    /// ```
    pub fn build(mut self) -> Server {
        self.check_completers();
        self.draw_sealer();
        for problem in &self.errors {
            tracing::warn!(problem = %ErrorChain(problem), "server definition problem");
        }
        self.build_unchecked()
    }

    /// Draws the default (random) sealing key unless one was set; without randomness that is
    /// a build problem, and a server built anyway has a sealer that opens nothing.
    fn draw_sealer(&mut self) {
        if self.sealer.is_none() {
            match StateSealer::random() {
                Ok(sealer) => self.sealer = Some(sealer),
                Err(e) => self.errors.push(RegistrationError::NoRandomness(e)),
            }
        }
    }

    fn build_unchecked(self) -> Server {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let mut sealer = self.sealer.unwrap_or_else(StateSealer::unusable);
        if let Some(ttl) = self.state_ttl {
            sealer = sealer.with_ttl(ttl);
        }
        Server {
            inner: Arc::new(ServerInner {
                info_json: serde_json::to_string(&self.info).unwrap_or_default(),
                info: self.info,
                instructions: self.instructions,
                page_size: self.page_size,
                max_uri_length: self.max_uri_length,
                max_subscriptions: self.max_subscriptions,
                cache_hints: self.cache_hints,
                sealer,
                tasks: Arc::new(Tasks::new(
                    self.task_store,
                    self.task_ttl,
                    self.task_poll_interval,
                )),
                max_inflight_requests: self.max_inflight_requests,
                max_queued: self.max_queued,
                write_timeout: self.write_timeout,
                features: Features::new(self.registry, events),
                mcpl: self.mcpl,
            }),
        }
    }
}
