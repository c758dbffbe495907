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
//!     println!("{}", tool.name);
//! }
//! let call = host.call_tool("mcpl--memory--remember", json!({"key": "k", "value": "v"})).await?;
//! println!("{:?}", call.result.content);
//! while let Some(event) = events.recv().await {
//!     println!("{event:?}");
//! }
//! # Ok(()) }
//! ```

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use mcpl_client::Client;
use mcpl_client::handlers::HandlerResult;
use mcpl_client::mcpl::{DEFAULT_PUSH_DEDUPE, Diagnostic, InferenceCall, McplHost};
use mcpl_core::engine::BoxFuture;
use mcpl_core::error::ErrorChain;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::log_safe::LogSafe;
use mcpl_core::mcpl::hooks::ContextInjection;
use mcpl_core::mcpl::inference::InferenceResult;
use mcpl_core::mcpl::push::PushEventParams;
use mcpl_core::types::{CallToolResult, Root};
use tokio::sync::mpsc;

#[cfg(feature = "http")]
use crate::alerts::WebhookSink;
use crate::alerts::{Alerts, FailuresLog, OpsAlert, SystemClock, kinds};
use crate::checkpoint::{CheckpointManager, FileStore, MemoryCheckpointStore, RecordOutcome};
use crate::config::{ConfigError, HostConfig, ServerTransport};
use crate::dedupe::SeenEvents;
use crate::error::ConnectError;
pub use crate::error::HostError;
use crate::registry::{Registry, RegistryError};
use crate::tools::ToolIndex;

mod builder;
mod calls;
mod events;
mod lifecycle;

use self::builder::Handlers;
pub use self::builder::HostBuilder;
pub use self::calls::{describe, state_view};
pub(crate) use self::events::DEFAULT_EVENT_CAPACITY;
use self::events::EventSender;

/// How long a handshake (initialize and the initial policy) may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a `tools/list` refresh may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);
/// Consecutive failed reconnects before `mcpl-down` is raised.
const DOWN_AFTER: u32 = 5;
/// The webhook throttle window.
#[cfg(feature = "http")]
const WEBHOOK_WINDOW: Duration = Duration::from_secs(15 * 60);

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
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
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
#[non_exhaustive]
pub enum HostEvent {
    /// A server pushed an event (admitted, and deduplicated per server and `eventId` across
    /// reconnects).
    Push {
        /// The server.
        server: String,
        /// The event.
        event: PushEventParams,
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
    /// Events that did not fit in the queue, the application reading too slowly, and were
    /// dropped in this one's place: `count` of them. Each reported state the host can be asked
    /// for again ([`Host::servers`], [`Host::tools`]); push events are never among them (a push
    /// that does not fit is declined, and its server may send it again). The queue holds
    /// [`HostBuilder::event_capacity`] events.
    Missed {
        /// How many.
        count: u64,
    },
}

impl HostEvent {
    /// The server the event is about, if it is about one.
    fn server(&self) -> Option<&str> {
        match self {
            HostEvent::Push { server, .. }
            | HostEvent::ToolsChanged { server, .. }
            | HostEvent::Connected { server }
            | HostEvent::Disconnected { server }
            | HostEvent::Diagnostic { server, .. } => Some(server),
            HostEvent::Alert(_) | HostEvent::Missed { .. } => None,
        }
    }
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
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
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
#[non_exhaustive]
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
    Handshake { source: ConnectError, reconnect: bool },
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
#[non_exhaustive]
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
    events: EventSender,
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
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
///
/// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
/// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
/// let config = HostConfig::from_json(&text)?;
/// let (host, _events) = Host::start(config).await?;
/// assert_eq!(host.servers(), [("notes".into(), "mcpl--notes".into(), Phase::Connected)]);
/// // The model sees namespaced tools; a call by that name is routed back to the server.
/// assert_eq!(host.tools()[0].name, "mcpl--notes--add");
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

/// Why a configured server cannot be reached: its transport is a feature left out of this
/// build.
fn missing_transport(transport: &ServerTransport) -> ConnectError {
    let feature = match transport {
        ServerTransport::Stdio { .. } => "child",
        ServerTransport::Url { url, .. }
            if url.starts_with("http://") || url.starts_with("https://") =>
        {
            "http"
        }
        ServerTransport::Url { .. } => "ws",
    };
    ConnectError::MissingFeature { feature }
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
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
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
    pub async fn start(config: HostConfig) -> Result<(Host, mpsc::Receiver<HostEvent>), HostError> {
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
            event_capacity: DEFAULT_EVENT_CAPACITY,
        }
    }

    async fn start_with(
        builder: HostBuilder,
    ) -> Result<(Host, mpsc::Receiver<HostEvent>), HostError> {
        let HostBuilder { config, handlers, reserved, clock, push_dedupe, event_capacity } =
            builder;
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
            None => CheckpointManager::open_with(MemoryCheckpointStore::new(), retention, budget)?,
        };
        let clock = clock.unwrap_or_else(|| Arc::new(SystemClock));
        let mut alerts = Alerts::new();
        if let Some(path) = &config.failures_log {
            alerts = alerts.with_sink(Arc::new(FailuresLog::new(path).with_clock(clock.clone())));
        }
        #[cfg(feature = "http")]
        if let Some(url) = &config.ops_webhook {
            alerts = alerts.with_throttled(Arc::new(WebhookSink::new(url)), WEBHOOK_WINDOW, clock);
        }
        #[cfg(not(feature = "http"))]
        if config.ops_webhook.is_some() {
            tracing::warn!(
                "opsWebhook ignored: posting alerts needs the `http` feature of mcpl-host"
            );
        }
        let (events, rx) = EventSender::channel(event_capacity);
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
                    tracing::warn!(server = %id, error = %LogSafe(&ErrorChain(&e).to_string()), "server did not connect at startup");
                }
            }
        });
        futures::future::join_all(connects).await;
        Ok((host, rx))
    }

    fn emit(&self, event: HostEvent) {
        self.inner.events.send(event);
    }

    fn alert(&self, alert: OpsAlert) {
        self.inner.alerts.raise(&alert);
        self.emit(HostEvent::Alert(alert));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpl_core::types::{Tool, ToolSchema};
    use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    use mcpl_server::{Server, ToolOutput};

    use serde_json::{Value, json};

    use super::*;
    use crate::config::ServerConfig;

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
