//! [`Context`]: what a server handler knows about the request it serves.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use std::collections::BTreeMap;

use mcpl_core::engine::RequestContext;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    ClientCapabilities, CreateMessageResult, ElicitAction, ElicitResult, ElicitValue,
    Implementation, InputResponse, InputResponses, ListRootsResult, LoggingLevel, LoggingMessage,
    LoggingMessageNotificationParams,
};
use mcpl_core::{Era, Peer, ProtocolVersion, Result};
use serde_json::Value;

use crate::builder::Server;
use crate::input::{InputRequired, InputState, supports_elicitation, supports_sampling};
use crate::state::{StateError, StateSealer};
use crate::task::TaskSlot;

/// What the server knows about the client on one connection (stateful era) or from one
/// request's `_meta` (stateless era).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientState {
    pub(crate) version: Option<ProtocolVersion>,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) client_capabilities: Option<ClientCapabilities>,
    /// The minimum level of log messages the client asked for; `None`: no log messages.
    pub(crate) log_level: Option<LoggingLevel>,
    /// The resource URIs this client subscribed to (`resources/subscribe`).
    pub(crate) subscriptions: HashSet<String>,
    /// Ends the HTTP response stream of a request, on transports that have such streams.
    pub(crate) stream_closer: Option<StreamCloser>,
}

/// Closes the response stream of the request with the given id; `false` if it has none.
#[derive(Clone)]
pub(crate) struct StreamCloser(
    pub(crate) Arc<dyn Fn(&mcpl_core::jsonrpc::RequestId) -> bool + Send + Sync>,
);

impl std::fmt::Debug for StreamCloser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamCloser")
    }
}

pub(crate) type SharedClientState = Arc<Mutex<ClientState>>;

pub(crate) fn lock(s: &SharedClientState) -> std::sync::MutexGuard<'_, ClientState> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
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
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) request: RequestContext,
    pub(crate) client: SharedClientState,
    pub(crate) server: Option<Server>,
    pub(crate) input: Arc<InputState>,
    /// The task side of a task-mode `tools/call` (see [`crate::task`]).
    pub(crate) task: Option<Arc<TaskSlot>>,
}

impl Context {
    pub(crate) fn new(request: RequestContext, client: SharedClientState) -> Self {
        Context { request, client, server: None, input: Arc::default(), task: None }
    }

    /// The server serving this request, to change its features at run time (see
    /// [`Server::tools_mut`]) or to announce resource updates.
    ///
    /// Set for every handler a [`Server`] calls; `None` only for a context built outside one.
    pub fn server(&self) -> Option<&Server> {
        self.server.as_ref()
    }

    /// The engine-level context: id, method, `_meta`, cancellation.
    pub fn request(&self) -> &RequestContext {
        &self.request
    }

    /// The protocol version in use (known once the client initialized).
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        lock(&self.client).version
    }

    /// The era of the protocol version in use.
    pub fn era(&self) -> Era {
        self.protocol_version().map_or(Era::Stateful, ProtocolVersion::era)
    }

    /// The client's identity, as it reported it.
    pub fn client_info(&self) -> Option<Implementation> {
        lock(&self.client).client_info.clone()
    }

    /// The client's capabilities.
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        lock(&self.client).client_capabilities.clone()
    }

    /// The client, for requests and notifications on this connection.
    pub fn peer(&self) -> &Peer {
        self.request.peer()
    }

    /// Ends this request's HTTP response stream now, while the handler keeps running.
    ///
    /// On Streamable HTTP in the 2025 era, the client then reconnects with `Last-Event-ID` and
    /// receives the rest of the stream, including the result, on the resumed connection (SSE
    /// polling). Returns `false`, doing nothing, on transports without response streams (stdio,
    /// stateless requests).
    pub fn close_stream(&self) -> bool {
        let closer = lock(&self.client).stream_closer.clone();
        closer.is_some_and(|c| (c.0)(self.request.id()))
    }

    /// Whether the request was cancelled; in a task-mode call (see [`crate::task`]), whether
    /// the task was cancelled (`tasks/cancel`), or the request went away before it started.
    pub fn is_cancelled(&self) -> bool {
        match &self.task {
            Some(slot) => slot.cancel.is_cancelled(),
            None => self.request.is_cancelled(),
        }
    }

    /// Resolves when the request is cancelled (or the task, as [`is_cancelled`](Self::is_cancelled)
    /// tells).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn cancelled(&self) {
        match &self.task {
            Some(slot) => slot.cancel.cancelled().await,
            None => self.request.cancelled().await,
        }
    }

    /// Whether the client declared the tasks extension (`io.modelcontextprotocol/tasks`) for
    /// this request. Always `false` in the stateful (2025) era, where the extension is not
    /// defined (see [`crate::task`]).
    pub fn supports_tasks(&self) -> bool {
        crate::task::client_declares(self)
    }

    /// Whether this call may become a task: a `tools/call` of a task-capable tool whose request
    /// declared the tasks extension (see [`crate::task`]).
    pub fn is_task_mode(&self) -> bool {
        self.task.is_some()
    }

    /// The id of the task this call runs as, once it started.
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
    pub fn supports_elicitation(&self, url: bool) -> bool {
        supports_elicitation(lock(&self.client).client_capabilities.as_ref(), url)
    }

    /// Whether the client can answer sampling requests (with tools when `tools`).
    pub fn supports_sampling(&self, tools: bool) -> bool {
        supports_sampling(lock(&self.client).client_capabilities.as_ref(), tools)
    }

    /// Whether the client can list its roots.
    pub fn supports_roots(&self) -> bool {
        lock(&self.client).client_capabilities.as_ref().is_some_and(|c| c.roots.is_some())
    }

    /// Starts an input-required reply (see [`crate::input`]), checked against the client's
    /// capabilities and able to seal state for this request.
    pub fn input_required(&self) -> InputRequired {
        let sealing = self.server.as_ref().zip(self.input.binding.as_ref());
        let sealing = sealing.map(|(server, bind)| (server.state_sealer().clone(), bind.clone()));
        InputRequired::new(self.client_capabilities(), sealing)
    }

    /// The client's answers to the input requests of the previous round, by key (empty on a
    /// first call).
    pub fn input_responses(&self) -> &InputResponses {
        &self.input.responses
    }

    /// The client's answer to the input request `key`.
    pub fn input_response(&self, key: &str) -> Option<&InputResponse> {
        self.input.responses.get(key)
    }

    /// The client's answer to the elicitation `key`, whatever the user did.
    pub fn elicitation_response(&self, key: &str) -> Option<&ElicitResult> {
        match self.input_response(key)? {
            InputResponse::Elicit(r) => Some(r),
            _ => None,
        }
    }

    /// The submitted fields of the elicitation `key`, if the user accepted it.
    pub fn elicited(&self, key: &str) -> Option<&BTreeMap<String, ElicitValue>> {
        self.elicitation_response(key)
            .filter(|r| r.action == ElicitAction::Accept)
            .and_then(|r| r.content.as_ref())
    }

    /// The client's answer to the sampling request `key`.
    pub fn sampling_response(&self, key: &str) -> Option<&CreateMessageResult> {
        match self.input_response(key)? {
            InputResponse::CreateMessage(r) => Some(r),
            _ => None,
        }
    }

    /// The client's answer to the roots request `key`.
    pub fn roots_response(&self, key: &str) -> Option<&ListRootsResult> {
        match self.input_response(key)? {
            InputResponse::ListRoots(r) => Some(r),
            _ => None,
        }
    }

    /// The state the handler set on its previous input-required reply
    /// ([`InputRequired::state`]), verified: it was sealed by this server for this very
    /// method and tool, prompt or resource, and has not expired. `None` on a first call.
    pub fn request_state(&self) -> Option<&Value> {
        self.input.state.as_ref()
    }

    /// The server's sealer of request states ([`crate::state`]).
    pub fn state_sealer(&self) -> Option<&StateSealer> {
        self.server.as_ref().map(Server::state_sealer)
    }

    /// Seals `payload` for this request's method and tool, prompt or resource, as
    /// [`InputRequired::state`] does.
    ///
    /// # Errors
    ///
    /// `-32603` outside `tools/call`, `prompts/get` and `resources/read` handlers.
    pub fn seal_state(&self, payload: &Value) -> std::result::Result<String, ErrorObject> {
        match (self.state_sealer(), self.input.binding.as_ref()) {
            (Some(sealer), Some(bind)) => Ok(sealer.seal(payload, bind)),
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
    pub fn open_state(&self, token: &str) -> std::result::Result<Value, ErrorObject> {
        match (self.state_sealer(), self.input.binding.as_ref()) {
            (Some(sealer), Some(bind)) => {
                sealer.open(token, bind).map_err(StateError::to_error_object)
            }
            _ => Err(ErrorObject::internal("no request to bind a state to")),
        }
    }
}
