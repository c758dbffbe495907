//! The host: many MCPL servers at once, each over its own connection, their tools under
//! namespaced names, one dispatch path for every tool call, state recorded per
//! (server, feature set), reconnects with backoff.
//!
//! ```no_run
//! use mcpl_host::Host;
//! use mcpl_host::config::HostConfig;
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = HostConfig::load("host.json".as_ref())?;
//! let (host, mut events) = Host::start(config).await?;
//! for tool in host.tools() {
//!     println!("{}", tool["name"]);
//! }
//! let call = host.call_tool("mcpl--memory--remember", json!({"key": "k", "value": "v"})).await?;
//! println!("{:?}", call.result.content);
//! while let Some(event) = events.recv().await {
//!     println!("{event:?}");
//! }
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use mcpl_client::handlers::HandlerResult;
use mcpl_client::mcpl::{
    DEFAULT_PUSH_DEDUPE, Diagnostic, InferenceCall, McplError, McplHost, McplStatus, PushEvent,
    PushOutcome, StateCall,
};
use mcpl_client::transport::{ChildProcess, HttpTransport, WebSocketTransport};
use mcpl_client::{Client, Negotiation, ServerDetails};
use mcpl_core::Era;
use mcpl_core::engine::{BoxFuture, RequestOptions};
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::log_safe::LogSafe;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::hooks::{
    BeforeInferenceParams, ContextInjection, LifecycleParams, ModelInfo, Position,
};
use mcpl_core::mcpl::inference::InferenceResult;
use mcpl_core::mcpl::policy::PolicyReceipt;
use mcpl_core::types::{
    CallToolRequestParams, CallToolResult, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult, Root,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::alerts::{Alerts, Clock, FailuresLog, OpsAlert, SystemClock, WebhookSink, kinds};
use crate::checkpoint::{
    CheckpointManager, FileStore, MemoryStore, RecordOutcome, RollbackError, StateMode, StoreError,
};
use crate::config::{ConfigError, HostConfig, ServerConfig, Transport};
use crate::dedupe::SeenEvents;
use crate::registry::{Lease, Phase, Registry, RegistryError, Reservation};
use crate::tools::{Listing, ToolIndex, listing};
use crate::unavailable::{self, DisabledFeatureSet};

/// How long a handshake (initialize and the initial policy) may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a `tools/list` refresh may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// Consecutive failed reconnects before `mcpl-down` is raised.
const DOWN_AFTER: u32 = 5;
/// The webhook throttle window.
const WEBHOOK_WINDOW: Duration = Duration::from_secs(15 * 60);

/// A host failure.
///
/// # Examples
///
/// ```
/// use mcpl_host::{Host, HostError};
/// use mcpl_host::config::HostConfig;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// match host.call_tool("mcpl--weather--forecast", json!({"city": "Oslo"})).await {
///     Err(HostError::UnknownTool(name)) => assert_eq!(name, "mcpl--weather--forecast"),
///     other => panic!("expected an unknown tool, got {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The registry refused (busy id, meeting prefixes, bad configuration).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The checkpoint store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Connecting to a server failed.
    #[error("server {server:?}: {detail}")]
    Connect {
        /// The server.
        server: String,
        /// What failed.
        detail: String,
    },
    /// No server offers a tool of this name.
    #[error("no server offers the tool {0:?}")]
    UnknownTool(String),
    /// The server is not connected.
    #[error("server {0:?} is not connected")]
    NotConnected(String),
    /// The tool is filtered out by the server's allow/deny lists.
    #[error("tool {0:?} is not allowed")]
    ToolNotAllowed(String),
    /// A connect was cancelled by a disconnect or a shutdown while its handshake ran; its
    /// connection was closed and it changed nothing.
    #[error("connecting server {0:?} was cancelled")]
    Cancelled(String),
    /// The call failed at the protocol level.
    #[error("server {server:?}: {source}")]
    Call {
        /// The server.
        server: String,
        /// The error.
        source: mcpl_core::Error,
    },
    /// A rollback could not start or the server refused it.
    #[error("rollback: {0}")]
    Rollback(String),
}

impl HostError {
    /// A stable name of the failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let missing = |id: &str, prefix: &str| {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "toolPrefix": "{prefix}",
    /// #         "command": "/nonexistent/mcpl-doc-server", "reconnectIntervalMs": 3600000}}]}}"#);
    /// #     HostConfig::from_json(&text).map(|mut c| c.servers.remove(0))
    /// # };
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// // The handshake fails, but with reconnect on the server stays registered under "tasks".
    /// let err = host.connect(missing("a", "tasks")?).await.unwrap_err();
    /// assert_eq!(err.kind(), "connect");
    /// // A second server whose prefix meets "tasks" is refused before anything is sent.
    /// let err = host.connect(missing("b", "tasks-")?).await.unwrap_err();
    /// assert_eq!(err.kind(), "prefix_conflict");
    /// # Ok(()) }
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            HostError::Registry(e) => e.kind(),
            HostError::Store(e) => e.kind(),
            HostError::Connect { .. } => "connect",
            HostError::Cancelled(_) => "cancelled",
            HostError::UnknownTool(_) => "unknown_tool",
            HostError::NotConnected(_) => "not_connected",
            HostError::ToolNotAllowed(_) => "tool_not_allowed",
            HostError::Call { .. } => "call",
            HostError::Rollback(_) => "rollback",
        }
    }
}

/// Something the embedder should know about.
///
/// # Examples
///
/// ```
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::{Host, HostEvent};
/// use serde_json::json;
///
/// fn log_line(event: &HostEvent) -> String {
///     match event {
///         HostEvent::Connected { server } => format!("{server} is up"),
///         HostEvent::Disconnected { server } => format!("{server} went away"),
///         HostEvent::ToolsChanged { server, added, removed } => {
///             format!("{server}: +{} -{} tools", added.len(), removed.len())
///         }
///         HostEvent::Alert(alert) => format!("alert {}: {}", alert.kind, alert.message),
///         other => format!("{other:?}"),
///     }
/// }
/// # use mcpl_core::types::{Tool, ToolSchema};
/// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
/// # use mcpl_server::{Server, ToolOutput};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let item = serde_json::json!({"type": "string"});
/// # let server = Server::builder("notes", "1.0.0")
/// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
/// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
/// #         let text = format!("added {item}");
/// #         async move { Ok(ToolOutput::text(text)) }
/// #     })
/// #     .build();
/// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let url = format!("ws://{}/ws", listener.local_addr()?);
/// # tokio::spawn(mcpl_server::ws::serve(listener, app));
///
/// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
/// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
/// let config = HostConfig::from_json(&text)?;
/// let (host, mut events) = Host::start(config).await?;
/// let mut log = Vec::new();
/// while let Ok(event) = events.try_recv() {
///     log.push(log_line(&event));
/// }
/// assert_eq!(log, ["notes is up", "notes: +1 -0 tools"]);
/// # host.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub enum HostEvent {
    /// A server pushed an event (admitted, and deduplicated per server and `eventId` across
    /// reconnects).
    Push {
        /// The server.
        server: String,
        /// The event.
        event: PushEvent,
    },
    /// A server's offered tools changed.
    ToolsChanged {
        /// The server.
        server: String,
        /// Namespaced names that appeared.
        added: Vec<String>,
        /// Namespaced names that disappeared.
        removed: Vec<String>,
    },
    /// A server connected (or reconnected).
    Connected {
        /// The server.
        server: String,
    },
    /// A server's connection ended.
    Disconnected {
        /// The server.
        server: String,
    },
    /// An MCPL diagnostic of one connection.
    Diagnostic {
        /// The server.
        server: String,
        /// The diagnostic.
        diagnostic: Diagnostic,
    },
    /// An ops alert was raised.
    Alert(OpsAlert),
}

/// The outcome of a tool call.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::RecordOutcome;
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::{Host, ToolCall};
/// use serde_json::json;
///
/// /// The text an agent hands back to the model.
/// fn text_of(call: &ToolCall) -> String {
///     call.result.text().unwrap_or_default()
/// }
/// # use mcpl_core::types::{Tool, ToolSchema};
/// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
/// # use mcpl_server::{Server, ToolOutput};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let item = serde_json::json!({"type": "string"});
/// # let server = Server::builder("notes", "1.0.0")
/// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
/// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
/// #         let text = format!("added {item}");
/// #         async move { Ok(ToolOutput::text(text)) }
/// #     })
/// #     .build();
/// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let url = format!("ws://{}/ws", listener.local_addr()?);
/// # tokio::spawn(mcpl_server::ws::serve(listener, app));
///
/// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
/// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
/// let config = HostConfig::from_json(&text)?;
/// let (host, _events) = Host::start(config).await?;
/// let call = host.call_tool("mcpl--notes--add", json!({"item": "milk"})).await?;
/// assert_eq!((call.server.as_str(), call.tool.as_str()), ("notes", "add"));
/// assert_eq!(text_of(&call), "added milk");
/// assert!(!call.result.is_error());
/// assert_eq!(call.state, RecordOutcome::NoState); // the notes server keeps no checkpoints
/// # host.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The server that served it.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// The server's result, without its MCPL `state` member (which the host records: see
    /// [`state`](Self::state)). A tool that failed is `Ok` with `is_error: Some(true)`.
    pub result: CallToolResult,
    /// What happened to the result's state.
    pub state: RecordOutcome,
}

#[derive(Clone)]
struct Link {
    client: Client,
    mcpl: McplHost,
    /// The registry generation of the connect that opened it.
    generation: u64,
}

/// Why a connect did not finish.
enum Failed {
    /// A disconnect, restart or shutdown cancelled it.
    Cancelled,
    /// The handshake failed; `reconnect` if the configuration the server stays registered
    /// with asks for reconnects.
    Handshake { detail: String, reconnect: bool },
}

type InferenceHandler = Arc<
    dyn Fn(String, InferenceCall) -> BoxFuture<'static, Result<InferenceResult, ErrorObject>>
        + Send
        + Sync,
>;
type ServerHandler<P, R> =
    Arc<dyn Fn(String, P) -> BoxFuture<'static, HandlerResult<R>> + Send + Sync>;
type RootsHandler =
    Arc<dyn Fn(String) -> BoxFuture<'static, HandlerResult<Vec<Root>>> + Send + Sync>;

/// The embedder's handlers, each called with the id of the server that asked.
#[derive(Clone, Default)]
struct Handlers {
    inference: Option<InferenceHandler>,
    model: Option<ModelInfo>,
    sampling: Option<ServerHandler<CreateMessageRequestParams, CreateMessageResult>>,
    elicitation: Option<ServerHandler<ElicitRequestFormParams, ElicitResult>>,
    url_elicitation: Option<ServerHandler<ElicitRequestURLParams, ElicitResult>>,
    roots: Option<RootsHandler>,
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
/// let model = ModelInfo {
///     id: "example-model".into(),
///     vendor: "example".into(),
///     context_window: 200_000,
///     capabilities: vec!["tools".into()],
///     extra: Default::default(),
/// };
/// let (host, _events) = Host::builder(HostConfig::default()).model_info(model).start().await?;
/// assert!(host.servers().is_empty());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HostBuilder {
    config: HostConfig,
    handlers: Handlers,
    reserved: Vec<String>,
    clock: Option<Arc<dyn Clock>>,
    push_dedupe: usize,
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
    ///     Ok::<_, ErrorObject>(InferenceResult {
    ///         content: format!("{server} asked for {last}"),
    ///         model: "example-model".into(),
    ///         finish_reason: FinishReason::EndTurn,
    ///         usage: Usage { input_tokens: 0, output_tokens: 0 },
    ///         extra: Default::default(),
    ///     })
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
    /// let model = ModelInfo {
    ///     id: "example-model".into(),
    ///     vendor: "example".into(),
    ///     context_window: 128_000,
    ///     capabilities: vec!["vision".into(), "tools".into()],
    ///     extra: Default::default(),
    /// };
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
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
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
    /// #         let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::Text(ask));
    /// #         let params = CreateMessageRequestParams::new(vec![message], 20);
    /// #         Ok::<ToolReply, _>(ctx.input_required().sample("ask", params).into())
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A writer server whose `title` tool asks the host's model for a title listens at `url`.
    /// let config = HostConfig::from_json(&json!({"servers": {"writer": {"url": url}}}).to_string())?;
    /// let builder = Host::builder(config).on_sampling(|server, params| async move {
    ///     // Run the embedder's model on `params.messages` here.
    ///     let reply = TextContent::new(format!("{server}: {} message(s) seen", params.messages.len()));
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
    pub async fn start(self) -> Result<(Host, mpsc::UnboundedReceiver<HostEvent>), HostError> {
        Host::start_with(self).await
    }
}

/// The injections of one `context/beforeInference` fan-out, grouped by position; within a
/// group, by server id.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::hooks::BeforeInferenceParams;
/// use mcpl_host::Host;
/// use mcpl_host::config::HostConfig;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// let params: BeforeInferenceParams = serde_json::from_value(json!({
///     "inferenceId": "inf-1",
///     "conversationId": "conv-1",
///     "turnIndex": 0,
///     "userMessage": "What is on my list?",
///     "model": {"id": "example-model", "vendor": "example", "contextWindow": 128000}
/// }))?;
/// let injections = host.before_inference(params).await;
/// // Build the prompt: system injections first, then the turn.
/// let system: Vec<String> =
///     injections.system.iter().map(|(server, i)| format!("[{server}] {:?}", i.content)).collect();
/// assert!(system.is_empty() && injections.failed.is_empty()); // no server connected
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Injections {
    /// `system` injections (only from servers granted `inject.system`).
    pub system: Vec<(String, ContextInjection)>,
    /// `beforeUser` injections.
    pub before_user: Vec<(String, ContextInjection)>,
    /// `afterUser` injections.
    pub after_user: Vec<(String, ContextInjection)>,
    /// Servers that contributed nothing because their hook failed or timed out (fail-open).
    pub failed: Vec<(String, String)>,
}

struct Inner {
    handlers: Handlers,
    registry: Mutex<Registry<Link>>,
    tools: RwLock<ToolIndex>,
    checkpoints: CheckpointManager,
    alerts: Alerts,
    events: mpsc::UnboundedSender<HostEvent>,
    refreshing: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Orders each server's commits and removals (a disconnect during a connect wins).
    lifecycle: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The push events already delivered, per server, across reconnects.
    pushes: Mutex<SeenEvents>,
    /// Servers whose last `tools/list` failed (an `mcpl-tools-stale` is open).
    stale: Mutex<BTreeSet<String>>,
}

/// The namespaced names `server` offers.
fn names_in(tools: &ToolIndex, server: &str) -> Vec<String> {
    tools
        .listing(server)
        .map(|l| l.tools.iter().map(|t| t.namespaced.clone()).collect())
        .unwrap_or_default()
}

/// The agent host. Cheap to clone.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::ContentBlock;
/// use mcpl_host::Host;
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::registry::Phase;
/// use serde_json::json;
/// # use mcpl_core::types::{Tool, ToolSchema};
/// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
/// # use mcpl_server::{Server, ToolOutput};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let item = serde_json::json!({"type": "string"});
/// # let server = Server::builder("notes", "1.0.0")
/// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
/// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
/// #         let text = format!("added {item}");
/// #         async move { Ok(ToolOutput::text(text)) }
/// #     })
/// #     .build();
/// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
/// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// # let url = format!("ws://{}/ws", listener.local_addr()?);
/// # tokio::spawn(mcpl_server::ws::serve(listener, app));
///
/// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
/// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
/// let config = HostConfig::from_json(&text)?;
/// let (host, _events) = Host::start(config).await?;
/// assert_eq!(host.servers(), [("notes".into(), "mcpl--notes".into(), Phase::Connected)]);
/// // The model sees namespaced tools; a call by that name is routed back to the server.
/// assert_eq!(host.tools()[0]["name"], "mcpl--notes--add");
/// let call = host.call_tool("mcpl--notes--add", json!({"item": "milk"})).await?;
/// assert_eq!(call.result.content, [ContentBlock::text("added milk")]);
/// host.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("servers", &self.servers()).finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Host {
    /// Checks the whole configuration, however it was assembled (parsed, built in code, or
    /// merged from several files), then opens the checkpoint store and connects every
    /// configured server concurrently. A server that fails to connect is logged (and retried
    /// in the background when its reconnect policy says so); the others go on. Returns the
    /// host and its event stream.
    ///
    /// # Errors
    ///
    /// [`HostError::Registry`] before anything starts: two prefixes that meet (the same
    /// [`PrefixConflict`](crate::prefix::PrefixConflict) as [`HostConfig::from_json`] reports),
    /// a prefix equal to a reserved name, an id configured twice, an invalid server. Else the
    /// checkpoint store cannot be opened.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// # let mut config = config;
    /// # config.servers.extend(HostConfig::from_json(r#"{"servers": [{"id": "gone",
    /// #     "command": "/nonexistent/mcpl-doc-server", "reconnect": false}]}"#)?.servers);
    /// // Servers connect concurrently; one that fails ("gone", whose command does not exist)
    /// // does not stop the others.
    /// let (host, _events) = Host::start(config).await?;
    /// let ids: Vec<String> = host.servers().into_iter().map(|(id, _, _)| id).collect();
    /// assert_eq!(ids, ["notes"]);
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn start(
        config: HostConfig,
    ) -> Result<(Host, mpsc::UnboundedReceiver<HostEvent>), HostError> {
        Host::builder(config).start().await
    }

    /// A builder, to set the host's own handlers before servers connect.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::builder(HostConfig::default()).start().await?;
    /// assert!(host.tools().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn builder(config: HostConfig) -> HostBuilder {
        HostBuilder {
            config,
            handlers: Handlers::default(),
            reserved: Vec::new(),
            clock: None,
            push_dedupe: DEFAULT_PUSH_DEDUPE,
        }
    }

    async fn start_with(
        builder: HostBuilder,
    ) -> Result<(Host, mpsc::UnboundedReceiver<HostEvent>), HostError> {
        let HostBuilder { config, handlers, reserved, clock, push_dedupe } = builder;
        // The whole configuration is checked before anything starts, in id order and through
        // the registry's one rule (the same refusals as a runtime connect).
        let mut servers = config.servers;
        servers.sort_by(|a, b| a.id.cmp(&b.id));
        let mut registry = Registry::with_reserved(reserved);
        let mut reservations = Vec::with_capacity(servers.len());
        for server in &servers {
            match registry.reserve(server.clone()) {
                Ok(reservation) => reservations.push(reservation),
                Err(RegistryError::Busy(id, _)) => {
                    return Err(RegistryError::Config(ConfigError::DuplicateId(id)).into());
                }
                Err(e) => return Err(e.into()),
            }
        }
        let (retention, budget) = (config.state.retention, config.state.budget);
        let checkpoints = match &config.state.dir {
            Some(dir) => CheckpointManager::open_with(FileStore::new(dir)?, retention, budget)?,
            None => CheckpointManager::open_with(MemoryStore::new(), retention, budget)?,
        };
        let clock = clock.unwrap_or_else(|| Arc::new(SystemClock));
        let mut alerts = Alerts::new();
        if let Some(path) = &config.failures_log {
            alerts = alerts.with_sink(Arc::new(FailuresLog::new(path).with_clock(clock.clone())));
        }
        if let Some(url) = &config.ops_webhook {
            alerts = alerts.with_throttled(Arc::new(WebhookSink::new(url)), WEBHOOK_WINDOW, clock);
        }
        let (events, rx) = mpsc::unbounded_channel();
        let host = Host {
            inner: Arc::new(Inner {
                handlers,
                registry: Mutex::new(registry),
                tools: RwLock::new(ToolIndex::default()),
                checkpoints,
                alerts,
                events,
                refreshing: Mutex::new(HashMap::new()),
                lifecycle: Mutex::new(HashMap::new()),
                pushes: Mutex::new(SeenEvents::new(push_dedupe)),
                stale: Mutex::new(BTreeSet::new()),
            }),
        };
        // A stored tree that is unreadable or over the budget affects only its own
        // (server, feature set): the host starts, and the operator hears of it.
        for issue in host.inner.checkpoints.load_issues() {
            let subject = issue.key.as_ref().map_or("checkpoint-store", |k| k.server.as_str());
            let mut alert = OpsAlert::new(
                kinds::STATE_DEGRADED,
                subject,
                format!("stored checkpoint state set aside: {}", issue.reason),
            );
            if let Some(key) = &issue.key {
                alert = alert.with("featureSet", key.feature_set.clone());
            }
            host.alert(alert);
        }
        let connects = reservations.into_iter().zip(servers).map(|(reservation, server)| {
            let host = host.clone();
            async move {
                let id = server.id.clone();
                if let Err(e) = host.drive(reservation, server).await {
                    tracing::warn!(server = %id, error = %LogSafe(&e.to_string()), "server did not connect at startup");
                }
            }
        });
        futures::future::join_all(connects).await;
        Ok((host, rx))
    }

    fn emit(&self, event: HostEvent) {
        let _ = self.inner.events.send(event);
    }

    fn alert(&self, alert: OpsAlert) {
        self.inner.alerts.raise(&alert);
        self.emit(HostEvent::Alert(alert));
    }

    /// Connects a server at run time. Every check runs first: an id that is connecting or
    /// registered, or a prefix meeting another server's (or equal to a reserved name), is
    /// refused at once and nothing changes. A failed handshake releases the id (or, with
    /// reconnect on, keeps the server registered and retries in the background). A
    /// [`Host::disconnect`] or [`Host::shutdown`] during the handshake wins: the connect is
    /// cancelled, its connection closed, and it returns [`HostError::Cancelled`].
    ///
    /// # Errors
    ///
    /// [`HostError::Registry`] for a refusal, [`HostError::Connect`] for a failed handshake,
    /// [`HostError::Cancelled`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::{Host, HostError};
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::registry::Phase;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let missing = |id: &str, prefix: &str| {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "toolPrefix": "{prefix}",
    /// #         "command": "/nonexistent/mcpl-doc-server", "reconnectIntervalMs": 3600000}}]}}"#);
    /// #     HostConfig::from_json(&text).map(|mut c| c.servers.remove(0))
    /// # };
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// let err = host.connect(missing("notes", "notes")?).await.unwrap_err();
    /// assert!(matches!(err, HostError::Connect { ref server, .. } if server == "notes"));
    /// // Reconnect is on: the server stays registered, down, and retries in the background.
    /// assert_eq!(host.servers(), [("notes".into(), "notes".into(), Phase::Down)]);
    /// // A second connect of the id is refused at once.
    /// let again = host.connect(missing("notes", "other")?).await.unwrap_err();
    /// assert_eq!(again.kind(), "busy");
    /// # Ok(()) }
    /// ```
    pub async fn connect(&self, config: ServerConfig) -> Result<(), HostError> {
        let reservation = lock(&self.inner.registry).reserve(config.clone())?;
        self.drive(reservation, config).await
    }

    /// Restarts a server, optionally with a new configuration: validated against every other
    /// server first (a refused restart leaves the server running), then the old connection is
    /// closed and a new one opened. Checkpoint trees are kept. A restart whose handshake fails
    /// puts the server back as it was: its previous configuration and prefix (held for it
    /// while the handshake ran) and, if it was connected and the restart changed its
    /// configuration, a connection under the previous one again at once (one attempt, whatever
    /// its `reconnect`), before the error returns. If that fails too, or the configuration was
    /// kept (it just failed), its tools stay offered, marked stale, and reconnects follow when
    /// the configuration enables them.
    ///
    /// # Errors
    ///
    /// As [`Host::connect`]; [`RegistryError::Unknown`] for an unknown id.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let missing = |id: &str, prefix: &str| {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "toolPrefix": "{prefix}",
    /// #         "command": "/nonexistent/mcpl-doc-server", "reconnectIntervalMs": 3600000}}]}}"#);
    /// #     HostConfig::from_json(&text).map(|mut c| c.servers.remove(0))
    /// # };
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// # let _ = host.connect(missing("a", "alpha")?).await;
    /// # let _ = host.connect(missing("b", "beta")?).await;
    /// // Servers "a" (prefix "alpha") and "b" (prefix "beta") are registered.
    /// // A restart under a prefix that meets b's is refused; a leaves unchanged.
    /// let err = host.restart("a", Some(missing("a", "beta--x")?)).await.unwrap_err();
    /// assert_eq!(err.kind(), "prefix_conflict");
    /// assert_eq!(host.servers()[0].1, "alpha");
    /// // A restart under a new prefix whose handshake fails puts "alpha" back.
    /// let err = host.restart("a", Some(missing("a", "gamma")?)).await.unwrap_err();
    /// assert_eq!(err.kind(), "connect");
    /// assert_eq!(host.servers()[0].1, "alpha");
    /// let err = host.restart("nobody", None).await.unwrap_err();
    /// assert_eq!(err.kind(), "unknown_server");
    /// # Ok(()) }
    /// ```
    pub async fn restart(&self, id: &str, config: Option<ServerConfig>) -> Result<(), HostError> {
        let (reservation, old, previous) = {
            let mut registry = lock(&self.inner.registry);
            let previous = registry.config(id).cloned();
            let (reservation, old) = registry.reserve_again(id, config)?;
            (reservation, old, previous)
        };
        let was_connected = old.is_some();
        if let Some(old) = old {
            let _ = old.client.close().await;
        }
        self.inner.tools.write().unwrap_or_else(PoisonError::into_inner).mark_stale(id);
        let config = lock(&self.inner.registry).config(id).cloned();
        let Some(config) = config else { return Err(HostError::Cancelled(id.to_owned())) };
        let lease = reservation.lease().clone();
        match self.establish(reservation, &config).await {
            Ok(()) => Ok(()),
            Err(Failed::Cancelled) => Err(HostError::Cancelled(id.to_owned())),
            Err(Failed::Handshake { detail, reconnect }) => {
                // The registry holds the previous configuration again. It was connected, and
                // the connection that failed was a different one: connect it again at once.
                // (The same configuration just failed: its reconnects, if any, follow.)
                let mut reconnect = reconnect;
                if was_connected && previous.as_ref() != Some(&config) {
                    reconnect = match self.reconnect_now(&lease).await {
                        Ok(()) | Err(Failed::Cancelled) => false,
                        Err(Failed::Handshake { reconnect, .. }) => reconnect,
                    };
                }
                if reconnect {
                    self.spawn_reconnect(lease, 1);
                }
                Err(HostError::Connect { server: id.to_owned(), detail })
            }
        }
    }

    /// Removes a server permanently: cancels its connect or reconnects, closes it, forgets its
    /// tools and deletes its checkpoint trees. Unknown ids are a no-op.
    ///
    /// # Errors
    ///
    /// The checkpoint store failed to delete the trees.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::{Host, HostEvent};
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, mut events) = Host::start(config).await?;
    /// # while events.try_recv().is_ok() {}
    /// host.disconnect("notes").await?;
    /// // The server, its tools and its checkpoint trees are gone; the model is told.
    /// assert!(host.servers().is_empty() && host.tools().is_empty());
    /// let Ok(HostEvent::ToolsChanged { removed, .. }) = events.try_recv() else { unreachable!() };
    /// assert_eq!(removed, ["mcpl--notes--add"]);
    /// host.disconnect("notes").await?; // unknown ids are a no-op
    /// # Ok(()) }
    /// ```
    pub async fn disconnect(&self, id: &str) -> Result<(), HostError> {
        let gate = self.lifecycle_gate(id);
        let _one_at_a_time = gate.lock().await;
        let (removed, before) = {
            let mut registry = lock(&self.inner.registry);
            let removed = registry.remove(id);
            let mut tools = self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
            let before = names_in(&tools, id);
            tools.remove(id);
            (removed, before)
        };
        if let Some((_, Some(link))) = &removed {
            let _ = link.client.close().await;
        }
        if !before.is_empty() {
            self.emit(HostEvent::ToolsChanged {
                server: id.to_owned(),
                added: Vec::new(),
                removed: before,
            });
        }
        let removed_trees = self.inner.checkpoints.remove_server(id);
        // Last, still under the gate: a commit waiting on it finds the server gone.
        self.forget(id);
        removed_trees?;
        Ok(())
    }

    /// Forgets what the host keeps per server id (the lifecycle and refresh gates, the push
    /// dedupe, the stale mark) once the id is gone from the registry, so these do not grow with
    /// ids that are gone. An id registered again meanwhile keeps them.
    fn forget(&self, id: &str) {
        let gone = |host: &Host| lock(&host.inner.registry).phase(id).is_none();
        // Each map's lock is held across the check, as where entries are made.
        for gates in [&self.inner.lifecycle, &self.inner.refreshing] {
            let mut gates = lock(gates);
            if gone(self) {
                gates.remove(id);
            }
        }
        let mut pushes = lock(&self.inner.pushes);
        if gone(self) {
            pushes.forget(id);
            lock(&self.inner.stale).remove(id);
        }
    }

    /// The one connect path of first connects, restarts and [`Host::start`]: establishes the
    /// reservation, and on a failed handshake starts the reconnects the server's (restored)
    /// configuration asks for.
    async fn drive(&self, reservation: Reservation, config: ServerConfig) -> Result<(), HostError> {
        let lease = reservation.lease().clone();
        let id = config.id.clone();
        match self.establish(reservation, &config).await {
            Ok(()) => Ok(()),
            Err(Failed::Cancelled) => Err(HostError::Cancelled(id)),
            Err(Failed::Handshake { detail, reconnect }) => {
                if reconnect {
                    self.spawn_reconnect(lease, 1);
                }
                Err(HostError::Connect { server: id, detail })
            }
        }
    }

    /// Runs one handshake for `reservation` (racing its cancellation) and commits it, or gives
    /// the reservation back. Used by every connect: first connects, restarts, reconnects.
    async fn establish(
        &self,
        reservation: Reservation,
        config: &ServerConfig,
    ) -> Result<(), Failed> {
        let link = self.link(config, reservation.lease().generation());
        let cancelled = reservation.lease().cancelled();
        let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.handshake(&link, config));
        let outcome = tokio::select! {
            biased;
            () = cancelled => None,
            outcome = handshake => Some(match outcome {
                Ok(outcome) => outcome,
                Err(_) => Err("the handshake timed out".to_owned()),
            }),
        };
        match outcome {
            Some(Ok(())) => self.commit(reservation, config, link).await,
            outcome => {
                // Whatever the transport got to (a child process, a socket) is closed.
                let _ = link.client.close().await;
                let cancelled = reservation.lease().is_cancelled();
                // A cancelled first connect leaves nothing; a restart or reconnect puts the
                // previous configuration back.
                let keep = config.reconnect.enabled && !cancelled;
                let kept = lock(&self.inner.registry).release(reservation, keep);
                if kept.is_none() {
                    self.forget(&config.id);
                }
                match outcome {
                    Some(Err(detail)) if !cancelled => {
                        let reconnect = kept.is_some_and(|c| c.reconnect.enabled);
                        Err(Failed::Handshake { detail, reconnect })
                    }
                    _ => Err(Failed::Cancelled),
                }
            }
        }
    }

    /// A finished handshake: the registry entry, the prefix routing and the checkpoint trees
    /// change together, unless the connect was cancelled meanwhile (then the connection is
    /// closed and nothing changes). Then the tools are listed and the connection watched.
    async fn commit(
        &self,
        reservation: Reservation,
        config: &ServerConfig,
        link: Link,
    ) -> Result<(), Failed> {
        let id = config.id.clone();
        let prefix = config.prefix();
        let gate = self.lifecycle_gate(&id);
        let one_at_a_time = gate.lock().await;
        let committed = {
            let mut registry = lock(&self.inner.registry);
            match registry.complete(reservation, link.clone()) {
                Ok(lease) => {
                    let mut tools =
                        self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
                    // Under a new prefix the old names go at once (the listing follows).
                    let renamed = tools.prefix(&id).is_some_and(|p| p != prefix);
                    let gone = if renamed { names_in(&tools, &id) } else { Vec::new() };
                    if renamed {
                        tools.replace(&id, Listing::default());
                    }
                    tools.set_prefix(&id, &prefix);
                    Ok((lease, gone))
                }
                Err(link) => Err(link),
            }
        };
        let (lease, gone) = match committed {
            Ok(committed) => committed,
            Err(link) => {
                drop(one_at_a_time);
                let _ = link.client.close().await;
                self.forget(&id);
                return Err(Failed::Cancelled);
            }
        };
        if !gone.is_empty() {
            self.emit(HostEvent::ToolsChanged {
                server: id.clone(),
                added: Vec::new(),
                removed: gone,
            });
        }
        self.register_feature_sets(&id, &link);
        // Announced under the gate: a removal waiting on it comes after, never before.
        self.emit(HostEvent::Connected { server: id.clone() });
        drop(one_at_a_time);
        if link.mcpl.status() == Some(McplStatus::Refused) {
            self.policy_refused(&id, link.mcpl.receipt().as_ref());
        }
        for disabled in unavailable::disabled_feature_sets(config, &link.mcpl) {
            tracing::info!(server = %id, feature_set = %disabled.feature_set, "{disabled}");
        }
        self.refresh_tools(&id).await;
        self.listen(lease.clone(), link.clone());
        self.watch(lease, link);
        Ok(())
    }

    /// In the stateless era, keeps a `subscriptions/listen` open for the server's tool-list
    /// changes (the 2025 era carries them on the session), if it declares any.
    fn listen(&self, lease: Lease, link: Link) {
        let declares = link.client.server().is_some_and(|details| {
            details.is_stateless()
                && details.capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true))
        });
        if !declares {
            return;
        }
        let host = self.clone();
        tokio::spawn(async move {
            let id = lease.id().to_owned();
            crate::listen::keep(link.client, lease, || host.refresh_tools(&id)).await;
        });
    }

    /// Builds one connection: the MCPL host side and the client wired to this host.
    fn link(&self, config: &ServerConfig, generation: u64) -> Link {
        let id = config.id.clone();
        let weak = Arc::downgrade(&self.inner);
        let handlers = &self.inner.handlers;
        let push_server = id.clone();
        let push_host = weak.clone();
        let diag_server = id.clone();
        let diag_events = self.inner.events.clone();
        let state_server = id.clone();
        let receipt_server = id.clone();
        let receipt_host = weak.clone();
        let mcpl = McplHost::new(config.policy())
            .on_push_event(move |event| {
                // Deduplicated per (server, eventId) across reconnects too: a server that
                // retries an event on its next connection is answered, not delivered twice.
                if let Some(inner) = push_host.upgrade()
                    && lock(&inner.pushes).first_time(&push_server, &event.event_id)
                {
                    let _ =
                        inner.events.send(HostEvent::Push { server: push_server.clone(), event });
                }
                async { PushOutcome::accepted(None) }
            })
            .on_state(move |call| {
                let checkpoints = weak.upgrade().map(|inner| inner.checkpoints.clone());
                let server = state_server.clone();
                async move {
                    let Some(checkpoints) = checkpoints else {
                        return Err(ErrorObject::internal("the host is gone"));
                    };
                    // Applying a patch within the budget can take milliseconds: off the runtime.
                    tokio::task::spawn_blocking(move || state_call(&checkpoints, &server, call))
                        .await
                        .unwrap_or_else(|_| Err(ErrorObject::internal("the state update failed")))
                }
            })
            .on_diagnostic(move |d| {
                let _ = diag_events.send(HostEvent::Diagnostic {
                    server: diag_server.clone(),
                    diagnostic: d.clone(),
                });
            })
            .on_change_receipt(move |receipt| {
                if let (Some(inner), Some(refused @ PolicyReceipt::Refused(_))) =
                    (receipt_host.upgrade(), &receipt.policy_receipt)
                {
                    (Host { inner }).policy_refused(&receipt_server, Some(refused));
                }
            });
        let mcpl = match &handlers.inference {
            Some(handler) => {
                let handler = handler.clone();
                let server = id.clone();
                mcpl.on_inference(move |call| handler(server.clone(), call))
            }
            None => mcpl,
        };
        let mcpl = match &handlers.model {
            Some(model) => {
                let model = model.clone();
                mcpl.on_model_info(move || {
                    let model = model.clone();
                    async move { Ok(model) }
                })
            }
            None => mcpl,
        };
        let refresh = self.clone();
        let refresh_id = id.clone();
        let client =
            Client::new("mcpl-host", env!("CARGO_PKG_VERSION")).with_negotiation(config.protocol);
        // MCPL needs the stateful era: pinned to a stateless revision, the server is plain MCP.
        let stateless =
            matches!(config.protocol, Negotiation::Pinned(v) if v.era() == Era::Stateless);
        let client = if stateless { client } else { client.with_mcpl(mcpl.clone()) };
        let mut client = client.on_tools_list_changed(move || {
            let host = refresh.clone();
            let id = refresh_id.clone();
            async move {
                tokio::spawn(async move { host.refresh_tools(&id).await });
            }
        });
        if let Some(handler) = &handlers.sampling {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_sampling(move |params| handler(server.clone(), params));
        }
        if let Some(handler) = &handlers.elicitation {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_elicitation(move |form| handler(server.clone(), form));
        }
        if let Some(handler) = &handlers.url_elicitation {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_url_elicitation(move |request| handler(server.clone(), request));
        }
        if let Some(handler) = &handlers.roots {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_roots(move || handler(server.clone()));
        }
        Link { client, mcpl, generation }
    }

    /// Opens `link`'s transport from the configuration and runs the handshake.
    async fn handshake(&self, link: &Link, config: &ServerConfig) -> Result<(), String> {
        let client = &link.client;
        let connected = match &config.transport {
            Transport::Stdio { command, args, env, cwd, inherit_env } => {
                let mut child = ChildProcess::new(command).args(args);
                if *inherit_env {
                    child = child.inherit_env();
                }
                for (k, v) in env {
                    child = child.env(k, v);
                }
                if let Some(cwd) = cwd {
                    child = child.current_dir(cwd);
                }
                client.connect(child).await
            }
            Transport::Url { url, headers }
                if url.starts_with("http://") || url.starts_with("https://") =>
            {
                let mut http = HttpTransport::new(url.clone());
                for (k, v) in headers {
                    http = http.header(k, v).map_err(|e| e.to_string())?;
                }
                client.connect(http).await
            }
            Transport::Url { url, headers } => {
                let mut ws = WebSocketTransport::new(url.clone());
                for (k, v) in headers {
                    ws = ws.header(k.clone(), v.clone());
                }
                client.connect(ws).await
            }
        };
        connected.map(drop).map_err(|e| e.to_string())
    }

    /// Registers the stateful feature sets the server declares (idempotent: existing trees
    /// are resumed).
    fn register_feature_sets(&self, id: &str, link: &Link) {
        if let Some(Ok(sets)) = link.mcpl.manifest().and_then(|m| m.feature_sets()) {
            for (name, set) in &sets.0 {
                let host_state = set.extra.get("hostState") == Some(&Value::Bool(true));
                let rollback = set.rollback == Some(true);
                if !(host_state || rollback) {
                    continue;
                }
                let mode =
                    if host_state { StateMode::HostManaged } else { StateMode::ServerManaged };
                if let Err(e) = self.inner.checkpoints.register(id, name, mode, rollback) {
                    tracing::error!(server = id, feature_set = ?name, error = %e, "checkpoint tree not registered");
                }
            }
        }
    }

    /// Raises `mcpl-policy-refused`: the server answered the host's policy `accepted: false`.
    /// The message names the capabilities it said it needs and what would supply them.
    fn policy_refused(&self, id: &str, receipt: Option<&PolicyReceipt>) {
        let mut message = format!("server {id} refused the host policy");
        if let Some(PolicyReceipt::Refused(refused)) = receipt {
            if let Some(reason) = &refused.reason {
                message.push_str(&format!(" ({reason})"));
            }
            let (link, config) = {
                let registry = lock(&self.inner.registry);
                (registry.connection(id).cloned(), registry.config(id).cloned())
            };
            if let (Some(link), Some(config), Some(missing)) =
                (link, config, refused.missing_capabilities.as_deref().filter(|m| !m.is_empty()))
            {
                let missing = unavailable::missing_capabilities(&config, &link.mcpl, missing);
                let needs: Vec<String> = missing.iter().map(ToString::to_string).collect();
                message.push_str(&format!(": it needs {}", needs.join("; and ")));
            }
        }
        let mut alert = OpsAlert::new(kinds::POLICY_REFUSED, id, message);
        if let Some(PolicyReceipt::Refused(refused)) = receipt {
            alert = alert.with("fallback", refused.fallback.as_str());
            if let Some(reason) = &refused.reason {
                alert = alert.with("reason", reason.as_str());
            }
            if let Some(missing) = &refused.missing_capabilities {
                alert = alert.with("missingCapabilities", missing.clone());
            }
        }
        self.alert(alert);
    }

    /// Watches a committed connection: when its transport closes (and it is still the
    /// server's current connection), the server is marked down and reconnects start.
    fn watch(&self, lease: Lease, link: Link) {
        let host = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = lease.cancelled() => return,
                () = link.client.closed() => {}
            }
            let id = lease.id().to_owned();
            let reconnect = {
                let mut registry = lock(&host.inner.registry);
                if !registry.lost(&lease) {
                    return; // removed, restarted or shut down meanwhile
                }
                host.inner.tools.write().unwrap_or_else(PoisonError::into_inner).mark_stale(&id);
                registry.config(&id).is_some_and(|c| c.reconnect.enabled)
            };
            tracing::warn!(server = %id, "server connection ended");
            host.emit(HostEvent::Disconnected { server: id });
            if reconnect {
                host.spawn_reconnect(lease, 0);
            }
        });
    }

    /// Reconnects in the background with backoff, through the one connect path, until
    /// connected or until the work is cancelled (a disconnect, a restart, a shutdown).
    fn spawn_reconnect(&self, lease: Lease, first_attempt: u32) {
        let host = self.clone();
        tokio::spawn(async move {
            let id = lease.id().to_owned();
            let mut attempt = first_attempt;
            let mut alerted = false;
            loop {
                let Some(policy) = lock(&host.inner.registry).config(&id).map(|c| c.reconnect)
                else {
                    return;
                };
                tokio::select! {
                    biased;
                    () = lease.cancelled() => return,
                    () = tokio::time::sleep(policy.delay(attempt)) => {}
                }
                match host.reconnect_now(&lease).await {
                    Ok(()) => {
                        if alerted {
                            host.alert(OpsAlert::new(
                                kinds::SERVER_UP,
                                &id,
                                format!("server {id} is back"),
                            ));
                        }
                        return;
                    }
                    Err(Failed::Cancelled) => return,
                    Err(Failed::Handshake { .. }) => {
                        attempt = attempt.saturating_add(1);
                        if attempt == DOWN_AFTER {
                            alerted = true;
                            host.alert(
                                OpsAlert::new(
                                    kinds::SERVER_DOWN,
                                    &id,
                                    format!("server {id} failed to reconnect {DOWN_AFTER} times"),
                                )
                                .with("attempts", attempt),
                            );
                        }
                    }
                }
            }
        });
    }

    /// One reconnect of a server that is down, under the configuration it is registered with,
    /// if `lease` is still its work (else `Failed::Cancelled`).
    async fn reconnect_now(&self, lease: &Lease) -> Result<(), Failed> {
        let (reservation, config) = {
            let mut registry = lock(&self.inner.registry);
            let config = registry.config(lease.id()).cloned();
            match (config, registry.retry(lease)) {
                (Some(config), Some(reservation)) => (reservation, config),
                _ => return Err(Failed::Cancelled),
            }
        };
        self.establish(reservation, &config).await
    }

    /// The gate that orders a server's commits and removals (forgotten with the server, see
    /// [`Host::forget`]).
    fn lifecycle_gate(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.inner.lifecycle).entry(id.to_owned()).or_default().clone()
    }

    /// Lists a server's tools again (one refresh at a time per server). A failure keeps the
    /// previous list, marked stale, and raises an alert; repeated tool names raise an alert
    /// on every refresh that finds them.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_server::ToolOutput;
    /// use serde_json::json;
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::Server;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server.clone(), WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// // The server gains a tool while connected (`server` is the running mcpl_server::Server).
    /// server.tools_mut().add(Tool::new("clear", ToolSchema::object()), |_ctx, _args| async {
    ///     Ok(ToolOutput::text("cleared"))
    /// })?;
    /// // The host refreshes on `notifications/tools/list_changed` by itself; an explicit refresh
    /// // (an operator's request) waits for the new list.
    /// host.refresh_tools("notes").await;
    /// let tools = host.tools();
    /// let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    /// assert_eq!(names, ["mcpl--notes--add", "mcpl--notes--clear"]);
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn refresh_tools(&self, id: &str) {
        let gate = {
            let mut gates = lock(&self.inner.refreshing);
            // No gate for an id the host does not have (it would outlive it).
            if lock(&self.inner.registry).phase(id).is_none() {
                return;
            }
            gates.entry(id.to_owned()).or_default().clone()
        };
        let _one_at_a_time = gate.lock().await;
        let (link, config) = {
            let registry = lock(&self.inner.registry);
            (registry.connection(id).cloned(), registry.config(id).cloned())
        };
        let (Some(link), Some(config)) = (link, config) else { return };
        let listed = tokio::time::timeout(LIST_TIMEOUT, link.client.list_tools()).await;
        // What the listing changes is written only while `link` is still the server's
        // connection (a disconnect or restart meanwhile wins).
        let current = |registry: &Registry<Link>| {
            registry.connection(id).is_some_and(|l| l.generation == link.generation)
        };
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => "tools/list timed out".to_owned(),
                };
                {
                    let registry = lock(&self.inner.registry);
                    if !current(&registry) {
                        return;
                    }
                    self.inner.tools.write().unwrap_or_else(PoisonError::into_inner).mark_stale(id);
                    // Under the registry's lock: a removal cannot come between and leave it.
                    lock(&self.inner.stale).insert(id.to_owned());
                }
                self.alert(OpsAlert::new(
                    kinds::TOOLS_STALE,
                    id,
                    format!("tools/list of {id} failed: {why}"),
                ));
                return;
            }
        };
        let values: Vec<Value> =
            tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
        let listing = listing(&config.prefix(), values, &config.tools);
        let repeats = listing.repeats.clone();
        let after: BTreeSet<String> = listing.tools.iter().map(|t| t.namespaced.clone()).collect();
        let before: BTreeSet<String> = {
            let registry = lock(&self.inner.registry);
            if !current(&registry) {
                return;
            }
            let mut tools = self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
            let before = names_in(&tools, id).into_iter().collect();
            tools.replace(id, listing);
            before
        };
        if lock(&self.inner.stale).remove(id) {
            self.alert(OpsAlert::new(
                kinds::TOOLS_FRESH,
                id,
                format!("tools/list of {id} works again"),
            ));
        }
        if !repeats.is_empty() {
            self.alert(
                OpsAlert::new(
                    kinds::DUPLICATE_TOOLS,
                    id,
                    format!("server {id} lists tools more than once: {}", repeats.join(", ")),
                )
                .with("tools", repeats),
            );
        }
        let added: Vec<String> = after.difference(&before).cloned().collect();
        let removed: Vec<String> = before.difference(&after).cloned().collect();
        if !added.is_empty() || !removed.is_empty() {
            self.emit(HostEvent::ToolsChanged { server: id.to_owned(), added, removed });
        }
    }

    /// Every offered tool definition (namespaced), by server then listing order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// // Hand the namespaced definitions to the model.
    /// let tools = host.tools();
    /// let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    /// assert_eq!(names, ["mcpl--notes--add"]);
    /// assert_eq!(tools[0]["inputSchema"]["properties"]["item"]["type"], "string");
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn tools(&self) -> Vec<Value> {
        let tools = self.inner.tools.read().unwrap_or_else(PoisonError::into_inner);
        tools.tools().map(|(_, t)| t.definition.clone()).collect()
    }

    /// Every server: id, prefix and phase.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::registry::Phase;
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// for (id, prefix, phase) in host.servers() {
    ///     assert_eq!((id.as_str(), prefix.as_str()), ("notes", "mcpl--notes"));
    ///     assert_eq!(phase, Phase::Connected);
    /// }
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn servers(&self) -> Vec<(String, String, Phase)> {
        let registry = lock(&self.inner.registry);
        let ids: Vec<String> = registry.ids().map(str::to_owned).collect();
        ids.into_iter()
            .filter_map(|id| {
                let prefix = registry.prefix(&id)?.to_owned();
                let phase = registry.phase(&id)?;
                Some((id, prefix, phase))
            })
            .collect()
    }

    /// What a connected server said about itself: the negotiated protocol revision (and so
    /// the era), its capabilities, identity and instructions. `None` while it is not connected.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object()), |_, _| async { Ok(ToolOutput::text("added")) })
    /// #     .build();
    /// # let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("http://{}/mcp", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::http::serve(listener, app));
    ///
    /// // A notes server serves both eras over Streamable HTTP at `url`.
    /// let config = HostConfig::from_json(&json!({"servers": {
    ///     "auto": {"url": url},
    ///     "pinned": {"url": url, "protocol": "stateless"}
    /// }}).to_string())?;
    /// let (host, _events) = Host::start(config).await?;
    /// // Negotiation tries the 2025 era first (where MCPL lives); a pin decides.
    /// let era = |id: &str| host.server(id).map(|details| details.protocol_version);
    /// assert_eq!(era("auto"), Some(ProtocolVersion::V2025_11_25));
    /// assert_eq!(era("pinned"), Some(ProtocolVersion::V2026_07_28));
    /// assert!(host.server("web").is_none());
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn server(&self, id: &str) -> Option<ServerDetails> {
        let client = lock(&self.inner.registry).connection(id).map(|l| l.client.clone());
        client.and_then(|c| c.server())
    }

    /// The feature sets a connected MCPL server declares that its grant and policy leave
    /// disabled, each with why and what would enable it: which capability is missing, and
    /// whether the host offers it only with a `HostBuilder` handler, the server's `grant.allow`
    /// must name it, or its `grant.deny` names it. Empty for plain MCP servers and servers not
    /// connected. The host also logs each (at INFO) when the server connects.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::unavailable::Remedy;
    /// use serde_json::json;
    /// # use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// # use mcpl_server::mcpl::Mcpl;
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::Server;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let manifest = Manifest::new()
    /// #     .with_model_info(true)
    /// #     .with_feature_set("chat.model", FeatureSet::new("Model-aware replies", ["modelInfo"]));
    /// # let server = Server::builder("chat", "1.0.0").mcpl(Mcpl::new(manifest)).build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A chat server at `url` declares `chat.model`, which uses `modelInfo`.
    /// let config = HostConfig::from_json(&json!({"servers": {"chat": {"url": url,
    ///     "grant": {"allow": ["tools"]}}}}).to_string())?;
    /// // No HostBuilder::model_info, and the grant does not allow it.
    /// let (host, _events) = Host::start(config).await?;
    /// let disabled = host.disabled_feature_sets("chat");
    /// assert_eq!(disabled[0].feature_set, "chat.model");
    /// assert_eq!(disabled[0].missing[0].capability, "modelInfo");
    /// assert_eq!(disabled[0].missing[0].remedies, [Remedy::Handler("model_info"), Remedy::Allow]);
    /// assert!(disabled[0].to_string().contains("HostBuilder::model_info"));
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn disabled_feature_sets(&self, id: &str) -> Vec<DisabledFeatureSet> {
        let (link, config) = {
            let registry = lock(&self.inner.registry);
            (registry.connection(id).cloned(), registry.config(id).cloned())
        };
        match (link, config) {
            (Some(link), Some(config)) => unavailable::disabled_feature_sets(&config, &link.mcpl),
            _ => Vec::new(),
        }
    }

    /// The checkpoint manager (trees, injection, rollback bookkeeping).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::checkpoint::{StateMode, TreeKey};
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// // The host registers a tree for every stateful feature set a server declares.
    /// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, true)?;
    /// assert_eq!(host.checkpoints().keys(), [TreeKey::new("notes", "notes.store")]);
    /// # Ok(()) }
    /// ```
    pub fn checkpoints(&self) -> &CheckpointManager {
        &self.inner.checkpoints
    }

    /// The MCPL host side of a connected server.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// // Every connected server has an MCPL host side (status, grant, manifest, diagnostics).
    /// let mcpl = host.mcpl("notes").expect("connected");
    /// // This server speaks plain MCP, so MCPL is not in force on its connection.
    /// assert!(!mcpl.is_ready());
    /// assert!(host.mcpl("web").is_none());
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn mcpl(&self, id: &str) -> Option<McplHost> {
        lock(&self.inner.registry).connection(id).map(|l| l.mcpl.clone())
    }

    /// Calls a tool by its namespaced name: the one dispatch path for every caller. Routes to
    /// the server that listed it (else the longest prefix), applies the server's allow/deny
    /// list again, injects the feature set's checkpoint (and state, for host-managed sets),
    /// and records the result's state on the tree the attribution rule picks.
    ///
    /// # Errors
    ///
    /// [`HostError::UnknownTool`], [`HostError::NotConnected`], [`HostError::ToolNotAllowed`]
    /// (nothing is sent), or [`HostError::Call`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ContentBlock;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    /// # use mcpl_server::{Server, ToolOutput};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let item = serde_json::json!({"type": "string"});
    /// # let server = Server::builder("notes", "1.0.0")
    /// #     .tool(Tool::new("add", ToolSchema::object().with_property("item", item)), |_, args| {
    /// #         let item = args.get("item").and_then(|v| v.as_str()).unwrap_or_default();
    /// #         let text = format!("added {item}");
    /// #         async move { Ok(ToolOutput::text(text)) }
    /// #     })
    /// #     .build();
    /// # let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// # let url = format!("ws://{}/ws", listener.local_addr()?);
    /// # tokio::spawn(mcpl_server::ws::serve(listener, app));
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// let call = host.call_tool("mcpl--notes--add", json!({"item": "milk"})).await?;
    /// assert_eq!(call.result.content, [ContentBlock::text("added milk")]);
    /// // No server lists this name and no prefix covers it: nothing is sent.
    /// let err = host.call_tool("mcpl--web--search", json!({})).await.unwrap_err();
    /// assert_eq!(err.kind(), "unknown_tool");
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolCall, HostError> {
        let route = self
            .inner
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .resolve(name)
            .ok_or_else(|| HostError::UnknownTool(name.to_owned()))?;
        let (link, config) = {
            let registry = lock(&self.inner.registry);
            (registry.connection(&route.server).cloned(), registry.config(&route.server).cloned())
        };
        let link = link.ok_or_else(|| HostError::NotConnected(route.server.clone()))?;
        if !config.is_some_and(|c| c.tools.permits(&route.tool)) {
            return Err(HostError::ToolNotAllowed(name.to_owned()));
        }
        let arguments = match arguments {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                let mut m = Map::new();
                m.insert("value".into(), other);
                m
            }
        };
        let mut params = CallToolRequestParams::new(route.tool.clone()).with_arguments(arguments);
        let injection =
            self.inner.checkpoints.injection(&route.server, route.feature_set.as_deref());
        injection.apply_to(&mut params.extra);
        let mut result = link
            .client
            .call_tool_params(params, RequestOptions::new())
            .await
            .map_err(|source| HostError::Call { server: route.server.clone(), source })?;
        let state = match result.extra.remove("state") {
            Some(state) => {
                // Applying a patch within the budget can take milliseconds: off the runtime.
                let (checkpoints, server) = (self.inner.checkpoints.clone(), route.server.clone());
                let set = route.feature_set.clone();
                tokio::task::spawn_blocking(move || {
                    checkpoints.record_result(&server, set.as_deref(), &state)
                })
                .await
                .unwrap_or_else(|_| RecordOutcome::Malformed("recording the state failed".into()))
            }
            None => RecordOutcome::NoState,
        };
        Ok(ToolCall { server: route.server, tool: route.tool, result, state })
    }

    /// Rolls a feature set back to `checkpoint`: it must exist locally (else nothing is sent);
    /// for a set declaring `rollback: true` the server is asked first and the host moves its
    /// pointer only on `success: true` (a `-32005` marks the checkpoint pruned); a host-managed
    /// set without server rollback rolls back on the host alone.
    ///
    /// # Errors
    ///
    /// [`HostError::Rollback`] with the reason.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::checkpoint::StateMode;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// let trees = host.checkpoints();
    /// // A host-managed set without server rollback: the host rolls back alone.
    /// trees.register("notes", "notes.store", StateMode::HostManaged, false)?;
    /// trees.record_result("notes", Some("notes.store"), &json!(
    ///     {"checkpoint": "c1", "parent": null, "data": {"items": ["milk"]}}));
    /// trees.record_result("notes", Some("notes.store"), &json!(
    ///     {"checkpoint": "c2", "parent": "c1", "data": {"items": ["milk", "eggs"]}}));
    /// host.rollback("notes", "notes.store", "c1").await?;
    /// let tree = trees.tree("notes", "notes.store").unwrap();
    /// assert_eq!(tree.current.as_deref(), Some("c1"));
    /// assert_eq!(tree.current_state(), Some(&json!({"items": ["milk"]})));
    /// // An unknown checkpoint is refused before anything is sent.
    /// let err = host.rollback("notes", "notes.store", "c9").await.unwrap_err();
    /// assert_eq!(err.kind(), "rollback");
    /// # Ok(()) }
    /// ```
    pub async fn rollback(
        &self,
        server: &str,
        feature_set: &str,
        checkpoint: &str,
    ) -> Result<(), HostError> {
        let checkpoints = &self.inner.checkpoints;
        let ask_server = checkpoints
            .prepare_rollback(server, feature_set, checkpoint)
            .map_err(|e: RollbackError| HostError::Rollback(e.to_string()))?;
        if !ask_server {
            return checkpoints
                .commit_rollback(server, feature_set, checkpoint, None)
                .map_err(|e| HostError::Rollback(e.to_string()));
        }
        let mcpl = self.mcpl(server).ok_or_else(|| HostError::NotConnected(server.to_owned()))?;
        match mcpl.rollback(feature_set, checkpoint).await {
            Ok(result) if result.success => {
                let data = result.extra.get("data").cloned();
                checkpoints
                    .commit_rollback(server, feature_set, checkpoint, data)
                    .map_err(|e| HostError::Rollback(e.to_string()))
            }
            Ok(result) => Err(HostError::Rollback(format!(
                "the server could not roll back: {}",
                result.reason.unwrap_or_else(|| "no reason given".into())
            ))),
            Err(McplError::Protocol(e)) if e.rpc_error().is_some_and(|o| o.code.0 == -32005) => {
                checkpoints.mark_pruned(server, feature_set, checkpoint);
                Err(HostError::Rollback(format!(
                    "the server no longer has checkpoint {checkpoint}"
                )))
            }
            Err(e) => Err(HostError::Rollback(e.to_string())),
        }
    }

    /// Fans `context/beforeInference` out to every connected server whose grant allows a hook,
    /// in parallel, each bounded by its connection's hook timeout (5 s by default) and
    /// fail-open. Each injection was authorized by its position against the grant current when
    /// its response arrived. The result is grouped by position, servers in id order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::hooks::BeforeInferenceParams;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// let params: BeforeInferenceParams = serde_json::from_value(json!({
    ///     "inferenceId": "inf-7",
    ///     "conversationId": "conv-1",
    ///     "turnIndex": 3,
    ///     "userMessage": null,
    ///     "model": {"id": "example-model", "vendor": "example", "contextWindow": 128000}
    /// }))?;
    /// let injections = host.before_inference(params).await;
    /// for (server, why) in &injections.failed {
    ///     eprintln!("{server} contributed nothing: {why}"); // fail-open
    /// }
    /// assert!(injections.before_user.is_empty() && injections.after_user.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn before_inference(&self, params: BeforeInferenceParams) -> Injections {
        let links: Vec<(String, McplHost)> = {
            let registry = lock(&self.inner.registry);
            let ids: Vec<String> = registry.ids().map(str::to_owned).collect();
            ids.into_iter()
                .filter_map(|id| registry.connection(&id).map(|l| (id, l.mcpl.clone())))
                .filter(|(_, m)| m.grant().is_some_and(|g| g.any_before_inference()))
                .collect()
        };
        let calls = links.into_iter().map(|(id, mcpl)| {
            let params = params.clone();
            async move { (id, mcpl.before_inference(params).await) }
        });
        let mut out = Injections::default();
        for (server, outcome) in futures::future::join_all(calls).await {
            match outcome {
                Ok(outcome) => {
                    if let Some(why) = outcome.failure {
                        out.failed.push((server.clone(), why));
                    }
                    for injection in outcome.injections {
                        let group = match injection.position {
                            Position::System => &mut out.system,
                            Position::BeforeUser => &mut out.before_user,
                            Position::AfterUser => &mut out.after_user,
                        };
                        group.push((server.clone(), injection));
                    }
                }
                Err(e) => out.failed.push((server, e.to_string())),
            }
        }
        out
    }

    /// Sends `inference/lifecycle` to every connected server granted `inferenceLifecycle`
    /// (each connection enforces one terminal phase per `started`). Returns the servers that
    /// refused it locally, with why.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::hooks::LifecycleParams;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// for phase in ["started", "completed"] {
    ///     let params: LifecycleParams = serde_json::from_value(
    ///         json!({"inferenceId": "inf-7", "phase": phase, "conversationId": "conv-1"}),
    ///     )?;
    ///     // Servers that refused it locally (e.g. a second terminal phase), with why.
    ///     let refused = host.lifecycle(params).await;
    ///     assert!(refused.is_empty());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lifecycle(&self, params: LifecycleParams) -> Vec<(String, String)> {
        let links: Vec<(String, McplHost)> = {
            let registry = lock(&self.inner.registry);
            let ids: Vec<String> = registry.ids().map(str::to_owned).collect();
            ids.into_iter()
                .filter_map(|id| registry.connection(&id).map(|l| (id, l.mcpl.clone())))
                .filter(|(_, m)| {
                    m.grant().is_some_and(|g| g.is_granted(paths::INFERENCE_LIFECYCLE))
                })
                .collect()
        };
        let mut refused = Vec::new();
        for (id, mcpl) in links {
            if let Err(e) = mcpl.lifecycle(params.clone()).await {
                refused.push((id, e.to_string()));
            }
        }
        refused
    }

    /// Closes every connection and stops every connect and reconnect: a handshake in flight
    /// is cancelled and its connection closed, background reconnects end, and later connects
    /// and restarts are refused ([`RegistryError::ShutDown`]). Checkpoint trees stay in the
    /// store.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::checkpoint::StateMode;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, false)?;
    /// host.shutdown().await;
    /// // Trees outlive the connections (and, with `state.dir`, the process).
    /// assert_eq!(host.checkpoints().keys().len(), 1);
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) {
        let links = {
            let mut registry = lock(&self.inner.registry);
            let links = registry.shutdown();
            let mut tools = self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
            for id in registry.ids() {
                tools.mark_stale(id);
            }
            links
        };
        for link in links {
            let _ = link.client.close().await;
        }
        // Every change saved before returning; the writer's file I/O stays off this runtime.
        let checkpoints = self.inner.checkpoints.clone();
        let _ = tokio::task::spawn_blocking(move || checkpoints.flush()).await;
    }
}

/// Serves `state/update` and `state/get` from the checkpoint trees.
fn state_call(
    checkpoints: &CheckpointManager,
    server: &str,
    call: StateCall,
) -> Result<Value, ErrorObject> {
    match call {
        StateCall::Update { params, .. } => Ok(checkpoints.state_update(server, &params)),
        StateCall::Get { feature_set } => checkpoints.state_get(server, &feature_set),
    }
}

/// A summary of a record outcome, for logs and the JSON-lines interface.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, MemoryStore, RecordOutcome, StateMode};
/// use mcpl_host::host::describe;
/// use serde_json::json;
///
/// assert_eq!(describe(&RecordOutcome::NoState), json!({"outcome": "none"}));
///
/// let trees = CheckpointManager::open(MemoryStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// let outcome =
///     trees.record_result("notes", Some("notes.store"), &json!({"checkpoint": "c1", "data": {}}));
/// assert_eq!(
///     describe(&outcome),
///     json!({"outcome": "recorded", "featureSet": "notes.store", "how": "new"}),
/// );
/// ```
pub fn describe(outcome: &RecordOutcome) -> Value {
    match outcome {
        RecordOutcome::NoState => json!({"outcome": "none"}),
        RecordOutcome::Recorded { feature_set, recorded } => {
            json!({"outcome": "recorded", "featureSet": feature_set, "how": format!("{recorded:?}").to_lowercase()})
        }
        RecordOutcome::Dropped(reason) => json!({"outcome": "dropped", "reason": reason.kind()}),
        RecordOutcome::Rejected { feature_set, error } => {
            json!({"outcome": "rejected", "featureSet": feature_set, "reason": error.kind(), "detail": crate::checkpoint::describe_error(error)})
        }
        RecordOutcome::Malformed(why) => json!({"outcome": "malformed", "detail": why}),
    }
}

/// The trees of one server, for display: feature set to `{mode, rollback, current, state,
/// degraded, checkpoints}`.
///
/// # Examples
///
/// ```
/// use mcpl_host::Host;
/// use mcpl_host::checkpoint::StateMode;
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::host::state_view;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, false)?;
/// host.checkpoints().record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
/// let view = state_view(&host, "notes");
/// assert_eq!(view["notes.store"]["current"], "c1");
/// assert_eq!(view["notes.store"]["state"], json!({"n": 1}));
/// # Ok(()) }
/// ```
pub fn state_view(host: &Host, server: &str) -> BTreeMap<String, Value> {
    let manager = host.checkpoints();
    manager
        .keys()
        .into_iter()
        .filter(|k| k.server == server)
        .filter_map(|k| {
            let tree = manager.tree(&k.server, &k.feature_set)?;
            let view = json!({
                "mode": tree.mode,
                "rollback": tree.rollback,
                "current": tree.current,
                "state": tree.current_state(),
                "degraded": tree.is_degraded(),
                "checkpoints": tree.nodes.iter().map(|(id, n)| json!({"id": id, "parent": n.parent, "children": n.children})).collect::<Vec<_>>(),
            });
            Some((k.feature_set, view))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpl_core::types::{Tool, ToolSchema};
    use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    use mcpl_server::{Server, ToolOutput};

    use super::*;

    fn server(id: &str, member: Value) -> ServerConfig {
        let text = json!({"servers": {id: member}}).to_string();
        HostConfig::from_json(&text).unwrap().servers.remove(0)
    }

    fn gates(host: &Host) -> (usize, usize) {
        (lock(&host.inner.lifecycle).len(), lock(&host.inner.refreshing).len())
    }

    #[tokio::test]
    async fn the_per_server_gates_forget_ids_that_are_gone() {
        let notes = Server::builder("notes", "1.0.0")
            .tool(Tool::new("add", ToolSchema::object()), |_, _| async {
                Ok(ToolOutput::text("added"))
            })
            .build();
        let app = WebSocketEndpoint::new(notes, WsConfig::new()).into_router("/ws");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/ws", listener.local_addr().unwrap());
        tokio::spawn(mcpl_server::ws::serve(listener, app));

        let (host, _events) = Host::start(HostConfig::default()).await.unwrap();
        for n in 0..10 {
            let id = format!("s{n}");
            host.connect(server(&id, json!({"url": url}))).await.unwrap();
            host.refresh_tools(&id).await;
            assert_eq!(gates(&host), (1, 1), "the live server has its gates");
            host.disconnect(&id).await.unwrap();
            // Ids the host does not have leave nothing behind either.
            let ghost = format!("ghost{n}");
            host.refresh_tools(&ghost).await;
            host.disconnect(&ghost).await.unwrap();
            // Nor does a first connect that failed for good.
            let missing = json!({"command": "/nonexistent/mcpl-host-test", "reconnect": false});
            host.connect(server(&format!("gone{n}"), missing)).await.unwrap_err();
        }
        assert_eq!(gates(&host), (0, 0));
        host.shutdown().await;
    }
}
