//! [`Context`]: what a server handler knows about the request it serves.

use std::any::Any;
use std::fmt;
use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex, PoisonError};

use std::collections::BTreeMap;

use mcpl_core::engine::RequestContext;
use mcpl_core::jsonrpc::{ErrorObject, RequestId};
use mcpl_core::types::{
    ClientCapabilities, CreateMessageResult, ElicitAction, ElicitResult, ElicitValue,
    Implementation, InputResponse, InputResponses, ListRootsResult, LoggingLevel, LoggingMessage,
    LoggingMessageNotificationParams,
};
use mcpl_core::{Era, Peer, ProtocolVersion, Result};
use serde_json::Value;

use crate::input::{InputRequired, InputSlot, InputState, supports_elicitation, supports_sampling};
use crate::mcpl::McplConnection;
use crate::principal::{AccessToken, Principal};
use crate::request_state::{RequestStateError, StateSealer};
use crate::task::TaskSide;
use mcpl_core::mcpl::state::StateRequestFields;

/// What the server knows about the client on one connection (stateful era) or from one
/// request's `_meta` (stateless era).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientState {
    pub(crate) version: Option<ProtocolVersion>,
    /// The client's `clientInfo` (2025 era: from `initialize`), shared by the sessions of
    /// clients that sent the same (see [`crate::interned`]).
    pub(crate) client_info: Option<Arc<Implementation>>,
    /// The client's capabilities, shared like `client_info`.
    pub(crate) client_capabilities: Option<crate::interned::Capabilities>,
    /// The minimum level of log messages the client asked for; `None`: no log messages.
    pub(crate) log_level: Option<LoggingLevel>,
    /// The resource URIs this client subscribed to (`resources/subscribe`).
    pub(crate) subscriptions: crate::resource::Subscriptions,
    /// Ends the HTTP response stream of a request, on transports that have such streams.
    pub(crate) stream_closer: Option<StreamCloser>,
    /// The connection's MCPL side, when the server serves MCPL and the host advertised it.
    pub(crate) mcpl: Option<McplConnection>,
    /// The verified token of the connection (a WebSocket upgraded with one), if any.
    pub(crate) access_token: Option<Arc<AccessToken>>,
    /// The verified tokens of requests handed to the connection and not yet served (a 2025
    /// HTTP session: each request carries its own), by request id.
    /// One word while empty (as every idle session keeps it), not a `Vec`'s three.
    pub(crate) request_tokens: thin_vec::ThinVec<(RequestId, Arc<AccessToken>)>,
}

impl ClientState {
    /// The verified token request `id` carried (taken: it is served once), else the
    /// connection's.
    pub(crate) fn take_access_token(&mut self, id: &RequestId) -> Option<Arc<AccessToken>> {
        match self.forget_request_token(id) {
            Some(token) => Some(token),
            None => self.access_token.clone(),
        }
    }

    /// Records the verified token request `id` carried.
    #[cfg(feature = "http")]
    pub(crate) fn add_request_token(&mut self, id: RequestId, token: Arc<AccessToken>) {
        self.request_tokens.push((id, token));
    }

    /// Removes (and returns) the token request `id` carried; the table gives its memory back
    /// once empty.
    pub(crate) fn forget_request_token(&mut self, id: &RequestId) -> Option<Arc<AccessToken>> {
        let at = self.request_tokens.iter().position(|(i, _)| i == id)?;
        let (_, token) = self.request_tokens.swap_remove(at);
        if self.request_tokens.is_empty() {
            self.request_tokens = thin_vec::ThinVec::new();
        }
        Some(token)
    }
}

/// What closes the response streams of requests: implemented by the serving side's stream
/// table (a 2025 HTTP session's).
pub(crate) trait CloseStream: Send + Sync {
    /// Closes the response stream of request `id`; `false` if it has none.
    fn close_stream(&self, id: &mcpl_core::jsonrpc::RequestId) -> bool;
}

/// The stream table of the connection, held weakly (it is the table itself, not a copy: an
/// idle session keeps no allocation for it).
#[derive(Clone)]
pub(crate) struct StreamCloser(pub(crate) std::sync::Weak<dyn CloseStream>);

impl std::fmt::Debug for StreamCloser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamCloser")
    }
}

/// A handshake's phases ([`ClientCell::phase`]): no `initialize` yet.
pub(crate) const NEW: u8 = 0;
/// `initialize` answered.
pub(crate) const INITIALIZED: u8 = 1;
/// `notifications/initialized` received.
pub(crate) const READY: u8 = 2;

/// What the server knows about the client on one connection (or from one stateless
/// request), and how far a stateful-era connection's handshake went: one allocation for both,
/// which the connection, its sender and its handlers' contexts share (an idle 2025 session
/// keeps it).
#[derive(Debug, Default)]
pub(crate) struct ClientCell {
    /// The handshake's phase ([`NEW`], [`INITIALIZED`], [`READY`]); a stateless request's
    /// stays [`NEW`].
    pub(crate) phase: AtomicU8,
    client: Mutex<ClientState>,
}

impl ClientCell {
    /// A cell holding `client`, its handshake not started.
    pub(crate) fn new(client: ClientState) -> SharedClientState {
        Arc::new(ClientCell { phase: AtomicU8::new(NEW), client: Mutex::new(client) })
    }
}

pub(crate) type SharedClientState = Arc<ClientCell>;

pub(crate) fn lock(s: &ClientCell) -> std::sync::MutexGuard<'_, ClientState> {
    s.client.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The context of one request served by a server handler.
///
/// Gives the negotiated protocol version and era, the client's identity and capabilities,
/// progress and log notifications for this request, cancellation, and the [`Peer`] for asking
/// the client things.
///
/// Handlers of `tools/call`, `prompts/get` and `resources/read` also read here the client's
/// answers to the input they asked for (see [`crate::input`]): [`Context::input_responses`],
/// [`Context::elicited`], [`Context::sampling_response`], [`Context::roots_response`] and the
/// verified [`Context::request_state`].
///
/// # Examples
///
/// A tool that greets the client by the name it reported, called over an in-memory transport:
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_core::{Engine, Era, transport::memory};
/// use mcpl_server::{Context, Server, ToolOutput};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = Server::builder("s", "1")
///     .tool(Tool::new("whoami", ToolSchema::object()), |ctx: Context, _args| async move {
///         assert_eq!(ctx.era(), Era::Stateful);
///         let name = ctx.client_info().map(|info| info.name).unwrap_or_default();
///         Ok(ToolOutput::text(format!("you are {name}")))
///     })
///     .build();
/// let (client_side, server_side) = memory::pair();
/// let _session = server.serve(server_side).await?;
/// let client = Engine::new().connect(client_side).await?;
/// let init = json!({
///     "protocolVersion": "2025-11-25",
///     "capabilities": {},
///     "clientInfo": {"name": "doc-client", "version": "1"},
/// });
/// client.request("initialize", Some(init), Default::default()).await?;
/// client.notify("notifications/initialized", None).await?;
/// let call = json!({"name": "whoami", "arguments": {}});
/// let result = client.request("tools/call", Some(call), Default::default()).await?;
/// assert_eq!(result["content"][0]["text"], "you are doc-client");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) request: RequestContext,
    pub(crate) client: SharedClientState,
    /// The server serving the request (see [`ServerSide`]): set once by the endpoint or the
    /// engine (else the router makes it per request).
    pub(crate) server: Option<Arc<dyn ServerSide>>,
    /// The answers and state the request was given, and what a state is bound to.
    pub(crate) input: InputSlot,
    /// The task side of a task-mode `tools/call` (see [`crate::task`]).
    pub(crate) task: Option<Arc<dyn TaskSide>>,
    /// The MCPL state fields of a `tools/call`.
    /// `None`: the call carries none.
    pub(crate) mcpl_state: Option<Arc<StateRequestFields>>,
    /// The verified access token of the request, if it carried one.
    pub(crate) access_token: Option<Arc<AccessToken>>,
}

/// The server that serves a request, as the handler layer sees it: the handle itself is
/// [`Context::server`], which `crate::server` defines beside [`Server`](crate::Server) and
/// recovers with [`as_any`](Self::as_any), so that this layer does not import the serving one.
pub(crate) trait ServerSide: Send + Sync + fmt::Debug {
    /// The server's `requestState` sealer.
    fn state_sealer(&self) -> &StateSealer;
    /// The server's handle, for [`Context::server`] to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// The MCPL state fields of a call that carries none, and the input state of a request that
/// was not asked again: one value each, read (never reference-counted: a count shared by
/// every request would bounce between the cores serving them).
static NO_STATE_FIELDS: std::sync::LazyLock<StateRequestFields> =
    std::sync::LazyLock::new(StateRequestFields::default);
static NO_INPUT: std::sync::LazyLock<InputState> = std::sync::LazyLock::new(InputState::default);

impl Context {
    pub(crate) fn new(request: RequestContext, client: SharedClientState) -> Self {
        Context {
            request,
            client,
            server: None,
            input: InputSlot::None,
            task: None,
            mcpl_state: None,
            access_token: None,
        }
    }

    /// The context of a request served for `server` that carried `token` (verified): made
    /// whole, not through builder calls that would each move it.
    pub(crate) fn served(
        request: RequestContext,
        client: SharedClientState,
        token: Option<Arc<AccessToken>>,
        server: Arc<dyn ServerSide>,
    ) -> Self {
        Context { server: Some(server), access_token: token, ..Context::new(request, client) }
    }

    /// The answers and state this request was given (none, unless it was asked again).
    fn input(&self) -> &InputState {
        self.input.given().unwrap_or(&NO_INPUT)
    }

    /// This context, for a request that carried `token` (verified).
    pub(crate) fn with_access_token(mut self, token: Option<Arc<AccessToken>>) -> Self {
        self.access_token = token;
        self
    }

    /// The verified access token the request carried: set when the endpoint is protected by
    /// [`BearerAuth`](crate::http::auth::BearerAuth) (for a WebSocket connection, the token
    /// its upgrade carried); `None` otherwise.
    ///
    /// What the request creates (a 2025-era session, a task, a sealed `requestState`) is
    /// bound to the token's [`principal`](AccessToken::principal): the server checks that
    /// itself. A handler reads the token for finer decisions, such as scopes per tool.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("delete_all", ToolSchema::object()), |ctx, _args| async move {
    ///         let admin = ctx.access_token().is_some_and(|t| t.scopes.iter().any(|s| s == "admin"));
    ///         if !admin {
    ///             return Ok(ToolOutput::error("the admin scope is needed"));
    ///         }
    ///         Ok(ToolOutput::text("deleted"))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn access_token(&self) -> Option<&AccessToken> {
        self.access_token.as_deref()
    }

    /// Who the request acts for (see [`AccessToken::principal`]); `None`: anonymous.
    pub(crate) fn principal(&self) -> Option<Principal> {
        self.access_token.as_ref().and_then(|t| t.principal())
    }

    /// The connection's MCPL side: the host's policy and the gated server-to-host sends
    /// (see [`crate::mcpl`]). `None` unless the server serves MCPL and the host advertised it
    /// in `initialize`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("model", ToolSchema::object()), |ctx, _args| async move {
    ///         let Some(mcpl) = ctx.mcpl() else { return Ok(ToolOutput::error("no MCPL host")) };
    ///         match mcpl.model_info().await {
    ///             Ok(model) => Ok(ToolOutput::text(model.id)),
    ///             Err(e) => Ok(ToolOutput::error(e.to_string())),
    ///         }
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn mcpl(&self) -> Option<McplConnection> {
        lock(&self.client).mcpl.clone()
    }

    /// The MCPL state fields the host sent with this `tools/call`: the full `state` of a
    /// host-managed feature set, or the `checkpoint` it continues from. Both absent elsewhere.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::state::StateCheckpoint;
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::mcpl::WithState;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("count", ToolSchema::object()), |ctx, _args| async move {
    ///         let n = ctx.mcpl_state().state.as_ref().and_then(|s| s["n"].as_u64()).unwrap_or(0);
    ///         let parent = ctx.mcpl_state().checkpoint.clone();
    ///         let state = StateCheckpoint::snapshot(format!("n{}", n + 1), parent, json!({"n": n + 1}));
    ///         Ok(ToolOutput::text((n + 1).to_string()).with_state(state))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn mcpl_state(&self) -> &StateRequestFields {
        self.mcpl_state.as_deref().unwrap_or(&NO_STATE_FIELDS)
    }

    /// The engine-level context: id, method, `_meta`, cancellation.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("id", ToolSchema::object()), |ctx, _args| async move {
    ///         Ok(ToolOutput::text(format!("request {} of {}", ctx.request().id(), ctx.request().method())))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn request(&self) -> &RequestContext {
        &self.request
    }

    /// The protocol version in use (known once the client initialized).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("version", ToolSchema::object()), |ctx, _args| async move {
    ///         let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
    ///         Ok(ToolOutput::text(version))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        lock(&self.client).version
    }

    /// The era of the protocol version in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use mcpl_core::Era;
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("era", ToolSchema::object()), |ctx, _args| async move {
    ///         Ok(ToolOutput::text(match ctx.era() {
    ///             Era::Stateful => "2025: a session",
    ///             Era::Stateless => "2026: one request",
    ///         }))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn era(&self) -> Era {
        self.protocol_version().map_or(Era::Stateful, ProtocolVersion::era)
    }

    /// The client's identity, as it reported it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("hello", ToolSchema::object()), |ctx, _args| async move {
    ///         let client = ctx.client_info().map(|i| i.name).unwrap_or_else(|| "stranger".into());
    ///         Ok(ToolOutput::text(format!("Hello, {client}")))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn client_info(&self) -> Option<Implementation> {
        if let Some(info) = lock(&self.client).client_info.as_deref().cloned() {
            return Some(info);
        }
        // A stateless-era client names itself in each request's `_meta`: read when asked.
        if self.era() != Era::Stateless {
            return None;
        }
        let info = self.request.meta()?.get(mcpl_core::types::meta_keys::CLIENT_INFO)?;
        serde::Deserialize::deserialize(info).ok()
    }

    /// The client's capabilities.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("caps", ToolSchema::object()), |ctx, _args| async move {
    ///         let roots = ctx.client_capabilities().is_some_and(|c| c.roots.is_some());
    ///         Ok(ToolOutput::text(format!("roots: {roots}")))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        lock(&self.client).client_capabilities.as_deref().cloned()
    }

    /// The client, for requests and notifications on this connection.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     // A raw request to the client (2025 era; use `input_required` to work in both eras).
    ///     .tool(Tool::new("roots", ToolSchema::object()), |ctx, _args| async move {
    ///         let roots = ctx.peer().request("roots/list", None, Default::default()).await;
    ///         Ok(ToolOutput::text(format!("{:?}", roots.ok())))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn peer(&self) -> &Peer {
        self.request.peer()
    }

    /// Ends this request's HTTP response stream now, while the handler keeps running.
    ///
    /// On Streamable HTTP in the 2025 era, the client then reconnects with `Last-Event-ID` and
    /// receives the rest of the stream, including the result, on the resumed connection (SSE
    /// polling). Returns `false`, doing nothing, on transports without response streams (stdio,
    /// stateless requests).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("long", ToolSchema::object()), |ctx, _args| async move {
    ///         // Free the HTTP connection; the client resumes the stream for the result.
    ///         ctx.close_stream();
    ///         tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    ///         Ok(ToolOutput::text("finished"))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn close_stream(&self) -> bool {
        let closer = lock(&self.client).stream_closer.clone();
        closer.and_then(|c| c.0.upgrade()).is_some_and(|c| c.close_stream(self.request.id()))
    }

    /// Whether the request was cancelled; in a task-mode call (see [`crate::task`]), whether
    /// the task was cancelled (`tasks/cancel`), or the request went away before it started.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("count", ToolSchema::object()), |ctx, _args| async move {
    ///         let mut n = 0u64;
    ///         while n < 1_000_000 && !ctx.is_cancelled() {
    ///             n += 1;
    ///         }
    ///         Ok(ToolOutput::text(n.to_string()))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn is_cancelled(&self) -> bool {
        match &self.task {
            Some(slot) => slot.cancellation().is_cancelled(),
            None => self.request.is_cancelled(),
        }
    }

    /// Resolves when the request is cancelled (or the task, as [`is_cancelled`](Self::is_cancelled)
    /// tells).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("wait", ToolSchema::object()), |ctx, _args| async move {
    ///         tokio::select! {
    ///             () = ctx.cancelled() => Ok(ToolOutput::error("cancelled")),
    ///             () = tokio::time::sleep(std::time::Duration::from_secs(60)) => Ok(ToolOutput::text("done")),
    ///         }
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub async fn cancelled(&self) {
        match &self.task {
            Some(slot) => slot.cancellation().cancelled().await,
            None => self.request.cancelled().await,
        }
    }

    /// Whether the client declared the tasks extension (`io.modelcontextprotocol/tasks`) for
    /// this request. Always `false` in the stateful (2025) era, where the extension is not
    /// defined (see [`crate::task`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("t", ToolSchema::object()), |ctx, _args| async move {
    ///         Ok(ToolOutput::text(format!("tasks: {}", ctx.supports_tasks())))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn supports_tasks(&self) -> bool {
        crate::task::client_declares(self)
    }

    /// Whether this call may become a task: a `tools/call` of a task-capable tool whose request
    /// declared the tasks extension (see [`crate::task`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use mcpl_server::task::TaskOptions;
    ///
    /// let server = Server::builder("s", "1")
    ///     .task_tool(Tool::new("job", ToolSchema::object()), TaskOptions::optional(), |ctx, _args| async move {
    ///         // Task mode: a 2026 request that declared the extension.
    ///         Ok(ToolOutput::text(format!("task mode: {}, task: {:?}", ctx.is_task_mode(), ctx.task_id())))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn is_task_mode(&self) -> bool {
        self.task.is_some()
    }

    /// The id of the task this call runs as, once it started.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use mcpl_server::task::TaskOptions;
    ///
    /// let server = Server::builder("s", "1")
    ///     .task_tool(Tool::new("job", ToolSchema::object()), TaskOptions::required(), |ctx, _args| async move {
    ///         tracing::info!(task = ?ctx.task_id(), "working");
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn task_id(&self) -> Option<String> {
        self.task.as_ref().and_then(|slot| slot.task_id())
    }

    /// Turns this call into a task, now: the task is stored, the client gets its
    /// `CreateTaskResult`, and the handler keeps running; its result, error or input-required
    /// replies now go to the task. Returns the task id, or `None` (doing nothing) when the call
    /// is not in task mode ([`is_task_mode`](Self::is_task_mode)). Calling it again returns
    /// the same id.
    ///
    /// Tools registered with [`TaskStart::OnRequest`](crate::task::TaskStart::OnRequest)
    /// call it when they decide to go asynchronous (for example after gathering input);
    /// the others are tasks before their handler runs.
    ///
    /// # Errors
    ///
    /// The task store's error when the task cannot be stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::task::TaskOptions;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .task_tool(
    ///         Tool::new("report", ToolSchema::object()),
    ///         TaskOptions::optional().start_on_request(),
    ///         |ctx, _args| async move {
    ///             // First gather the input synchronously...
    ///             let Some(topic) = ctx.elicited("topic").and_then(|f| f.get("topic")).cloned() else {
    ///                 let form = ElicitationSchema::default().with_property("topic", StringSchema::default());
    ///                 let ask = ElicitRequestFormParams::new("Which topic?", form);
    ///                 return Ok(ctx.input_required().elicit("topic", ask).into());
    ///             };
    ///             // ...then go asynchronous (`None` when the call is not in task mode).
    ///             let _task_id = ctx.start_task().await?;
    ///             tokio::time::sleep(std::time::Duration::from_secs(10)).await;
    ///             Ok::<ToolReply, _>(ToolOutput::text(format!("report on {topic:?}")).into())
    ///         },
    ///     )
    ///     .build();
    /// # drop(server);
    /// ```
    pub async fn start_task(&self) -> std::result::Result<Option<String>, ErrorObject> {
        match &self.task {
            Some(slot) => slot.start().await.map(Some),
            None => Ok(None),
        }
    }

    /// Reports progress, if the client asked for it (see [`RequestContext::progress`]).
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("steps", ToolSchema::object()), |ctx, _args| async move {
    ///         for step in 1..=3 {
    ///             // Sent only if the request carried a progress token.
    ///             ctx.progress(f64::from(step), Some(3.0), Some("working")).await.ok();
    ///         }
    ///         Ok(ToolOutput::text("3 steps"))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<bool> {
        self.request.progress(progress, total, message).await
    }

    /// Sends a log message to the client, if it asked for messages of this level.
    ///
    /// Returns `Ok(false)` when the message was filtered out: the client set no level (2026
    /// requests without `logLevel` get no messages) or a higher one.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{LoggingLevel, Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("noisy", ToolSchema::object()), |ctx, _args| async move {
    ///         let sent = ctx.log(LoggingLevel::Info, Some("noisy"), json!({"step": 1})).await.unwrap_or(false);
    ///         Ok(ToolOutput::text(format!("logged: {sent}")))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: Value,
    ) -> Result<bool> {
        let wanted = lock(&self.client).log_level;
        if wanted.is_none_or(|min| level < min) {
            return Ok(false);
        }
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        self.peer().send_notification::<LoggingMessage>(params).await?;
        Ok(true)
    }

    /// Whether the client can answer an elicitation: form mode, or URL mode when `url`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("ask", ToolSchema::object()), |ctx, _args| async move {
    ///         if !ctx.supports_elicitation(false) {
    ///             return Ok(ToolOutput::error("this tool needs a client that can show forms"));
    ///         }
    ///         Ok(ToolOutput::text("ok"))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn supports_elicitation(&self, url: bool) -> bool {
        supports_elicitation(lock(&self.client).client_capabilities.as_deref(), url)
    }

    /// Whether the client can answer sampling requests (with tools when `tools`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("summarize", ToolSchema::object()), |ctx, _args| async move {
    ///         Ok(ToolOutput::text(format!("sampling: {}", ctx.supports_sampling(false))))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn supports_sampling(&self, tools: bool) -> bool {
        supports_sampling(lock(&self.client).client_capabilities.as_deref(), tools)
    }

    /// Whether the client can list its roots.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("roots", ToolSchema::object()), |ctx, _args| async move {
    ///         Ok(ToolOutput::text(format!("roots: {}", ctx.supports_roots())))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn supports_roots(&self) -> bool {
        lock(&self.client).client_capabilities.as_deref().is_some_and(|c| c.roots.is_some())
    }

    /// Starts an input-required reply (see [`crate::input`]), checked against the client's
    /// capabilities and able to seal state for this request.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("greet", ToolSchema::object()), |ctx, _args| async move {
    ///         // Second round: the client's answer is here.
    ///         if let Some(name) = ctx.elicited("name").and_then(|f| f.get("name")) {
    ///             return Ok(ToolOutput::text(format!("Hello, {name:?}")).into());
    ///         }
    ///         // First round: ask. In 2025 a real elicitation request; in 2026 an
    ///         // input-required result the client answers by calling again.
    ///         let form = ElicitationSchema::default()
    ///             .with_property("name", StringSchema::default())
    ///             .with_required("name");
    ///         Ok::<ToolReply, _>(
    ///             ctx.input_required().elicit("name", ElicitRequestFormParams::new("Your name?", form)).into(),
    ///         )
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn input_required(&self) -> InputRequired {
        let sealing = self.state_sealer().zip(self.input.binding(self));
        let sealing = sealing.map(|(sealer, bind)| (sealer.clone(), bind.into_owned()));
        InputRequired::new(self.client_capabilities(), sealing)
    }

    /// The client's answers to the input requests of the previous round, by key (empty on a
    /// first call).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("t", ToolSchema::object()), |ctx, _args| async move {
    ///         let keys: Vec<_> = ctx.input_responses().keys().cloned().collect();
    ///         Ok(ToolOutput::text(format!("answered: {keys:?}")))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn input_responses(&self) -> &InputResponses {
        &self.input().responses
    }

    /// The client's answer to the input request `key`.
    ///
    /// # Examples
    ///
    /// A tool that asks for the client's roots, run in a 2025-era session (where the server
    /// sends `roots/list` itself and calls the handler again with the answer):
    ///
    /// ```
    /// use mcpl_core::jsonrpc::ErrorObject;
    /// use mcpl_core::types::{InputResponse, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("workspace", ToolSchema::object()), |ctx, _args| async move {
    ///         match ctx.input_response("roots") {
    ///             Some(InputResponse::ListRoots(r)) => {
    ///                 Ok(ToolOutput::text(format!("{} roots", r.roots.len())).into())
    ///             }
    ///             Some(other) => Err(ErrorObject::invalid_params(format!("unexpected {other:?}"))),
    ///             None => Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into()),
    ///         }
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("roots/list", |_ctx, _params| async {
    ///     Ok(json!({"roots": [{"uri": "file:///src/api"}, {"uri": "file:///src/web"}]}))
    /// });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "workspace", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "2 roots");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn input_response(&self, key: &str) -> Option<&InputResponse> {
        self.input().responses.get(key)
    }

    /// The client's answer to the elicitation `key`, whatever the user did.
    ///
    /// # Examples
    ///
    /// A confirmation the user declines (see [`elicited`](Self::elicited) for the fields of an
    /// accepted form):
    ///
    /// ```
    /// use mcpl_core::types::{ElicitAction, ElicitRequestFormParams, ElicitationSchema, Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("delete_branch", ToolSchema::object()), |ctx, _args| async move {
    ///         match ctx.elicitation_response("confirm") {
    ///             Some(answer) if answer.action == ElicitAction::Accept => {
    ///                 Ok(ToolOutput::text("deleted").into())
    ///             }
    ///             Some(answer) => Ok(ToolOutput::text(format!("kept it: {:?}", answer.action)).into()),
    ///             None => {
    ///                 let form = ElicitationSchema::default(); // no fields: a yes or a no
    ///                 let ask = ElicitRequestFormParams::new("Delete branch `main`?", form);
    ///                 Ok::<ToolReply, _>(ctx.input_required().elicit("confirm", ask).into())
    ///             }
    ///         }
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("elicitation/create", |_ctx, _params| async {
    ///     Ok(json!({"action": "decline"}))
    /// });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "delete_branch", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "kept it: Decline");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn elicitation_response(&self, key: &str) -> Option<&ElicitResult> {
        match self.input_response(key)? {
            InputResponse::Elicit(r) => Some(r),
            _ => None,
        }
    }

    /// The submitted fields of the elicitation `key`, if the user accepted it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("t", ToolSchema::object()), |ctx, _args| async move {
    ///         // `None` on a first call, or when the user declined or cancelled the form.
    ///         let email = ctx.elicited("contact").and_then(|fields| fields.get("email")).cloned();
    ///         Ok(ToolOutput::text(format!("{email:?}")))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn elicited(&self, key: &str) -> Option<&BTreeMap<String, ElicitValue>> {
        self.elicitation_response(key)
            .filter(|r| r.action == ElicitAction::Accept)
            .and_then(|r| r.content.as_ref())
    }

    /// The client's answer to the sampling request `key`.
    ///
    /// # Examples
    ///
    /// A tool that asks the client's model a question:
    ///
    /// ```
    /// use mcpl_core::types::{
    ///     CreateMessageRequestParams, Role, SamplingContent, SamplingMessage, SamplingMessageContentBlock,
    ///     TextContent, Tool, ToolSchema,
    /// };
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("capital", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(answer) = ctx.sampling_response("ask") {
    ///             let said = match &answer.content {
    ///                 SamplingContent::Single(SamplingMessageContentBlock::Text(t)) => t.text.clone(),
    ///                 _ => "something else".to_owned(),
    ///             };
    ///             return Ok(ToolOutput::text(format!("{} says {said}", answer.model)).into());
    ///         }
    ///         let question = TextContent::new("Capital of France? One word.");
    ///         let message = SamplingMessage::new(Role::User, SamplingMessageContentBlock::Text(question));
    ///         let params = CreateMessageRequestParams::new(vec![message], 20);
    ///         Ok::<ToolReply, _>(ctx.input_required().sample("ask", params).into())
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("sampling/createMessage", |_ctx, _params| async {
    ///     Ok(json!({"role": "assistant", "model": "some-llm", "content": {"type": "text", "text": "Paris"}}))
    /// });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "capital", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "some-llm says Paris");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn sampling_response(&self, key: &str) -> Option<&CreateMessageResult> {
        match self.input_response(key)? {
            InputResponse::CreateMessage(r) => Some(r),
            _ => None,
        }
    }

    /// The client's answer to the roots request `key`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("project_dirs", ToolSchema::object()), |ctx, _args| async move {
    ///         let Some(roots) = ctx.roots_response("roots") else {
    ///             return Ok::<ToolReply, _>(ctx.input_required().list_roots("roots").into());
    ///         };
    ///         let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    ///         Ok(ToolOutput::text(uris.join(", ")).into())
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport, answering the server's requests:
    /// let client = mcpl_core::Engine::new();
    /// client.on_request("roots/list", |_ctx, _params| async {
    ///     Ok(json!({"roots": [{"uri": "file:///src/api", "name": "api"}, {"uri": "file:///src/web"}]}))
    /// });
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "project_dirs", "arguments": {}});
    /// let result = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(result["content"][0]["text"], "file:///src/api, file:///src/web");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn roots_response(&self, key: &str) -> Option<&ListRootsResult> {
        match self.input_response(key)? {
            InputResponse::ListRoots(r) => Some(r),
            _ => None,
        }
    }

    /// The state the handler set on its previous input-required reply
    /// ([`InputRequired::state`]), verified: it was sealed by this server for this very
    /// method and tool, prompt or resource, and has not expired. `None` on a first call.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::input::ToolReply;
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("wizard", ToolSchema::object()), |ctx, _args| async move {
    ///         // The state set last round comes back verified (sealed by this server).
    ///         let step = ctx.request_state().and_then(|s| s["step"].as_u64()).unwrap_or(0);
    ///         if step >= 2 {
    ///             return Ok(ToolOutput::text("finished").into());
    ///         }
    ///         Ok::<ToolReply, _>(ctx.input_required().list_roots(format!("roots-{step}")).state(json!({"step": step + 1})).into())
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn request_state(&self) -> Option<&Value> {
        self.input().state.as_ref()
    }

    /// The server's sealer of request states ([`crate::request_state`]).
    ///
    /// # Examples
    ///
    /// A token one tool hands out and only another tool accepts:
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::request_state::{Binding, RequestStateError};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let finish = || Binding::new("tools/call", "finish_export");
    /// let token_schema = ToolSchema::object().with_property("token", json!({"type": "string"}));
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("start_export", ToolSchema::object()), move |ctx, _args| async move {
    ///         let Some(sealer) = ctx.state_sealer() else { return Ok(ToolOutput::error("no server")) };
    ///         Ok(ToolOutput::text(sealer.seal(&json!({"job": 7}), &finish())))
    ///     })
    ///     .tool(
    ///         Tool::new("finish_export", token_schema),
    ///         move |ctx, args| async move {
    ///             let token = args.get("token").and_then(|t| t.as_str()).unwrap_or_default();
    ///             let Some(sealer) = ctx.state_sealer() else { return Ok(ToolOutput::error("no server")) };
    ///             let job = sealer.open(token, &finish()).map_err(RequestStateError::to_error_object)?;
    ///             Ok(ToolOutput::text(format!("finished job {}", job["job"])))
    ///         },
    ///     )
    ///     .build();
    /// // A 2025-era client, over an in-memory transport:
    /// let client = mcpl_core::Engine::new();
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = json!({"name": "start_export", "arguments": {}});
    /// let started = peer.request("tools/call", Some(call), Default::default()).await?;
    /// let token = started["content"][0]["text"].clone();
    /// let call = json!({"name": "finish_export", "arguments": {"token": token}});
    /// let finished = peer.request("tools/call", Some(call), Default::default()).await?;
    /// assert_eq!(finished["content"][0]["text"], "finished job 7");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn state_sealer(&self) -> Option<&StateSealer> {
        self.server.as_deref().map(ServerSide::state_sealer)
    }

    /// Seals `payload` for this request's method and tool, prompt or resource, as
    /// [`InputRequired::state`] does.
    ///
    /// # Errors
    ///
    /// `-32603` outside `tools/call`, `prompts/get` and `resources/read` handlers.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("t", ToolSchema::object()), |ctx, _args| async move {
    ///         // A token only this server can open, bound to this tool.
    ///         let token = ctx.seal_state(&json!({"cursor": 42}))?;
    ///         let back = ctx.open_state(&token)?;
    ///         Ok(ToolOutput::text(back["cursor"].to_string()))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn seal_state(&self, payload: &Value) -> std::result::Result<String, ErrorObject> {
        match (self.state_sealer(), self.input.binding(self)) {
            (Some(sealer), Some(bind)) => Ok(sealer.seal(payload, &bind)),
            _ => Err(ErrorObject::internal("no request to bind a state to")),
        }
    }

    /// Opens a token sealed by [`seal_state`](Self::seal_state) for this request's method and
    /// tool, prompt or resource.
    ///
    /// # Errors
    ///
    /// `-32602` ("invalid requestState") for a malformed, altered, expired or mis-bound
    /// token; `-32603` outside `tools/call`, `prompts/get` and `resources/read` handlers.
    ///
    /// # Examples
    ///
    /// A paged tool whose cursor is a sealed token: a forged cursor is refused.
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let schema = ToolSchema::object().with_property("cursor", json!({"type": "string"}));
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("list_orders", schema), |ctx, args| async move {
    ///         let offset = match args.get("cursor").and_then(|c| c.as_str()) {
    ///             Some(cursor) => ctx.open_state(cursor)?["offset"].as_u64().unwrap_or(0),
    ///             None => 0,
    ///         };
    ///         let next = ctx.seal_state(&json!({"offset": offset + 10}))?;
    ///         Ok(ToolOutput::structured_value(json!({"orders": [offset, offset + 10], "next": next})))
    ///     })
    ///     .build();
    /// // A 2025-era client, over an in-memory transport:
    /// let client = mcpl_core::Engine::new();
    /// let (client_side, server_side) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(server_side).await?;
    /// let peer = client.connect(client_side).await?;
    /// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
    ///     "clientInfo": {"name": "doc-client", "version": "1"}});
    /// peer.request("initialize", Some(init), Default::default()).await?;
    /// peer.notify("notifications/initialized", None).await?;
    /// let call = |arguments: serde_json::Value| {
    ///     let params = json!({"name": "list_orders", "arguments": arguments});
    ///     peer.request("tools/call", Some(params), Default::default())
    /// };
    /// let first = call(json!({})).await?;
    /// let second = call(json!({"cursor": first["structuredContent"]["next"]})).await?;
    /// assert_eq!(second["structuredContent"]["orders"], json!([10, 20]));
    ///
    /// let forged = call(json!({"cursor": "eyJvZmZzZXQiOjEwMDB9.AAAA"})).await;
    /// assert_eq!(forged.unwrap_err().rpc_error().map(|e| e.code.0), Some(-32602));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn open_state(&self, token: &str) -> std::result::Result<Value, ErrorObject> {
        match (self.state_sealer(), self.input.binding(self)) {
            (Some(sealer), Some(bind)) => {
                sealer.open(token, &bind).map_err(RequestStateError::to_error_object)
            }
            _ => Err(ErrorObject::internal("no request to bind a state to")),
        }
    }
}
