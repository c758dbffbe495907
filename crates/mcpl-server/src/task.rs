//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): `tools/call` answered with
//! a task the client polls, in the stateless (2026-07-28) era.
//!
//! # Eras
//!
//! The extension is defined for the 2026-07-28 revision only. SEP-2663 says that under earlier
//! protocol versions a server must not return a `CreateTaskResult`, and must not read the
//! extension declared in `initialize` capabilities as enabling tasks (the 2025-11-25
//! experimental tasks feature is a different, wire-incompatible protocol that this SDK does not
//! implement). So on a 2025-era session (stdio, or a Streamable HTTP session):
//!
//! - every tool answers synchronously, whatever its [`TaskSupport`] and whatever the client
//!   declared in `initialize` ([`Context::is_task_mode`] is `false`,
//!   [`Context::start_task`] returns `Ok(None)`, [`Context::supports_tasks`] is `false`);
//! - `tasks/get`, `tasks/update` and `tasks/cancel` are unknown methods (`-32601`);
//! - the `initialize` result does not advertise the extension (the 2025-11-25
//!   `ServerCapabilities` has no `extensions` member).
//!
//! A task-capable handler therefore needs no era check: the same code is a task for a 2026
//! client that declared the extension and an ordinary (long) call for a 2025 one.
//!
//! # Task mode
//!
//! A tool opts in with [`TaskOptions`] ([`ServerBuilder::task_tool`](crate::ServerBuilder::task_tool),
//! or `execution.taskSupport` on its definition):
//!
//! - [`TaskSupport::Forbidden`] (the default): the tool always answers synchronously.
//! - [`TaskSupport::Optional`]: when the request declares the extension in its client
//!   capabilities, the call runs as a task; otherwise synchronously.
//! - [`TaskSupport::Required`]: the call runs as a task; a request that does not declare the
//!   extension is refused with `-32021` (`data.requiredCapabilities.extensions`).
//!
//! A task-mode call answers at once with the flat `CreateTaskResult` (`resultType: "task"`,
//! `taskId`, `status`, `createdAt`, `lastUpdatedAt`, `ttlMs`, `pollIntervalMs`) once the task
//! is in the [`TaskStore`], while the handler keeps running. [`TaskStart::OnRequest`] tools
//! instead run synchronously until the handler calls [`Context::start_task`]: until then an
//! input-required reply goes to the client as an ordinary input-required result, so a tool can
//! gather input round by round and only then turn into a task.
//!
//! Inside a task, the handler is the same as anywhere else: an input-required reply parks the
//! task in `input_required` with its requests (surfaced by `tasks/get`); `tasks/update`
//! delivers answers, and once every outstanding request is answered the handler is called again
//! with them ([`Context::elicited`] and friends), as in the stateful era. A result ends the
//! task `completed` (tool errors with `isError: true` included); a JSON-RPC error ends it
//! `failed`. `tasks/cancel` drops the handler's future and ends the task `cancelled`.
//!
//! The server serves `tasks/get`, `tasks/update` and `tasks/cancel` and advertises
//! `capabilities.extensions["io.modelcontextprotocol/tasks"]` once a task-capable tool was
//! registered or a store was set ([`ServerBuilder::task_store`](crate::ServerBuilder::task_store)).
//! Each of them first checks that the request declares the extension (`-32021`), then the task
//! id (`-32602` when unknown). `tasks/result` and `tasks/list` do not exist (`-32601`).
//!
//! Task state lives in a [`TaskStore`] ([`InMemoryTaskStore`] by default); the running handlers
//! and their outstanding input requests live in this process.
//!
//! A task lives for its time to live (`ttlMs`, counted from its creation; see
//! [`ServerBuilder::task_ttl`](crate::ServerBuilder::task_ttl)). Once it has elapsed the task is
//! gone on every path: `tasks/get`, `tasks/update` and `tasks/cancel` answer "not found"
//! (`-32602`) even from a store that still holds it (its `createdAt` tells), and a handler still
//! running or waiting for input is dropped.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use mcpl_core::Era;
use mcpl_core::engine::{BoxFuture, HandlerResult};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::{
    CallToolResult, DetailedTask, InputRequests, InputResponse, InputResponses, ServerCapabilities,
    TASKS_EXTENSION, TaskIdParams, TaskStatus, UpdateTaskRequestParams, names,
};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub use mcpl_core::types::TaskSupport;

use crate::builder::Server;
use crate::context::Context;
use crate::http::auth::Principal;
use crate::input::{InputState, Reply};
use crate::router::{decode, encode};
use crate::state::{Binding, StateSealer};
use crate::tool::{Arguments, ToolRunner};

/// How long a task is kept after its creation unless configured otherwise: one hour.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::task::DEFAULT_TASK_TTL.as_secs(), 3600);
/// ```
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);

/// The polling interval suggested to clients unless configured otherwise: one second.
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::task::DEFAULT_POLL_INTERVAL.as_millis(), 1000);
/// ```
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// When a task-mode call becomes a task.
///
/// # Examples
///
/// ```
/// use mcpl_server::task::{TaskOptions, TaskStart};
///
/// assert_eq!(TaskOptions::optional().start, TaskStart::Immediately);
/// assert_eq!(TaskOptions::optional().start_on_request().start, TaskStart::OnRequest);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TaskStart {
    /// Before the handler runs: the client gets the `CreateTaskResult` at once.
    #[default]
    Immediately,
    /// When the handler calls [`Context::start_task`]; until then the call is synchronous (its
    /// result, error or input-required reply answers the request).
    OnRequest,
}

/// How a tool takes part in the tasks extension.
///
/// # Examples
///
/// ```
/// use mcpl_server::task::{TaskOptions, TaskSupport};
///
/// let options = TaskOptions::required();
/// assert_eq!(options.support, TaskSupport::Required);
/// assert!(options.is_task_capable());
/// assert!(!TaskOptions::default().is_task_capable());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskOptions {
    /// Whether calls may, must or must not run as tasks.
    pub support: TaskSupport,
    /// When a task-mode call becomes a task.
    pub start: TaskStart,
}

impl TaskOptions {
    /// Never a task.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!mcpl_server::task::TaskOptions::forbidden().is_task_capable());
    /// ```
    pub fn forbidden() -> Self {
        TaskOptions { support: TaskSupport::Forbidden, start: TaskStart::Immediately }
    }

    /// A task when the request declares the extension, synchronous otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::task::{TaskOptions, TaskSupport};
    ///
    /// assert_eq!(TaskOptions::optional().support, TaskSupport::Optional);
    /// ```
    pub fn optional() -> Self {
        TaskOptions { support: TaskSupport::Optional, start: TaskStart::Immediately }
    }

    /// Always a task; requests without the extension are refused (`-32021`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::task::{TaskOptions, TaskSupport};
    ///
    /// assert_eq!(TaskOptions::required().support, TaskSupport::Required);
    /// ```
    pub fn required() -> Self {
        TaskOptions { support: TaskSupport::Required, start: TaskStart::Immediately }
    }

    /// The task starts when the handler calls [`Context::start_task`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::task::{TaskOptions, TaskStart};
    ///
    /// assert_eq!(TaskOptions::required().start_on_request().start, TaskStart::OnRequest);
    /// ```
    #[must_use]
    pub fn start_on_request(mut self) -> Self {
        self.start = TaskStart::OnRequest;
        self
    }

    /// Whether calls may run as tasks.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::task::TaskOptions;
    ///
    /// assert!(TaskOptions::optional().is_task_capable());
    /// ```
    pub fn is_task_capable(&self) -> bool {
        self.support != TaskSupport::Forbidden
    }
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self::forbidden()
    }
}

/// Where the state of tasks lives, so that it can live outside this process.
///
/// Every method sees the whole [`DetailedTask`] (status and payload). `create` must make the
/// task visible to `get` before it resolves (the `CreateTaskResult` is sent after it).
///
/// # Examples
///
/// A store that logs every change and keeps the tasks in an [`InMemoryTaskStore`]
/// (a real one would write to a shared database):
///
/// ```
/// use mcpl_core::engine::BoxFuture;
/// use mcpl_core::jsonrpc::ErrorObject;
/// use mcpl_core::types::DetailedTask;
/// use mcpl_server::Server;
/// use mcpl_server::task::{InMemoryTaskStore, TaskStore};
///
/// #[derive(Default)]
/// struct Logged(InMemoryTaskStore);
///
/// impl TaskStore for Logged {
///     fn create(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
///         tracing::info!(task = %task.task_id, "created");
///         self.0.create(task)
///     }
///     fn update(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
///         tracing::info!(task = %task.task_id, status = ?task.status, "updated");
///         self.0.update(task)
///     }
///     fn get(&self, task_id: &str) -> BoxFuture<'_, Result<Option<DetailedTask>, ErrorObject>> {
///         self.0.get(task_id)
///     }
/// }
///
/// let server = Server::builder("s", "1").task_store(Logged::default()).build();
/// assert!(server.serves_tasks());
/// ```
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task.
    fn create(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>>;
    /// Replaces the state of a stored task, unless that state is terminal: a terminal state
    /// is final, so a task cancelled at one instance of a fleet is not then completed by its
    /// handler running at another.
    fn update(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>>;
    /// The task `task_id`; `None` when unknown or expired.
    fn get(&self, task_id: &str) -> BoxFuture<'_, Result<Option<DetailedTask>, ErrorObject>>;
}

/// Keeps tasks in memory until their time to live (`ttlMs`, counted from creation) elapses.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{DetailedTask, TaskStatus};
/// use mcpl_server::task::{InMemoryTaskStore, TaskStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = InMemoryTaskStore::new();
/// let now = "2026-07-28T00:00:00.000Z".to_owned();
/// store.create(DetailedTask::new("t1", TaskStatus::Working, now.clone(), now)).await?;
/// assert_eq!(store.get("t1").await?.unwrap().status, TaskStatus::Working);
/// assert!(store.get("t2").await?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InMemoryTaskStore {
    tasks: Mutex<HashMap<String, (DetailedTask, Option<Instant>)>>,
}

impl InMemoryTaskStore {
    /// An empty store.
    ///
    /// # Examples
    ///
    /// A task is forgotten once its time to live has elapsed:
    ///
    /// ```
    /// use mcpl_core::types::{DetailedTask, TaskStatus};
    /// use mcpl_server::Server;
    /// use mcpl_server::task::{InMemoryTaskStore, TaskStore};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = InMemoryTaskStore::new();
    /// let at = "2026-07-28T00:00:00.000Z".to_owned();
    /// let mut report = DetailedTask::new("report", TaskStatus::Working, at.clone(), at.clone());
    /// report.ttl_ms = Some(3_600_000);
    /// let mut probe = DetailedTask::new("probe", TaskStatus::Working, at.clone(), at);
    /// probe.ttl_ms = Some(0);
    /// store.create(report).await?;
    /// store.create(probe).await?;
    /// assert!(store.get("report").await?.is_some());
    /// assert!(store.get("probe").await?.is_none(), "its time to live has elapsed");
    ///
    /// // What a server uses unless told otherwise; setting it also enables the extension.
    /// let server = Server::builder("s", "1").task_store(InMemoryTaskStore::new()).build();
    /// assert!(server.serves_tasks());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut HashMap<String, (DetailedTask, Option<Instant>)>) -> R,
    ) -> R {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        tasks.retain(|_, (_, expires)| expires.is_none_or(|e| e > now));
        f(&mut tasks)
    }
}

impl TaskStore for InMemoryTaskStore {
    fn create(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
        let expires = task.ttl_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
        self.with(|t| t.insert(task.task_id.clone(), (task, expires)));
        Box::pin(std::future::ready(Ok(())))
    }

    fn update(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
        self.with(|t| {
            if let Some(entry) = t.get_mut(&task.task_id) {
                if !entry.0.status.is_terminal() {
                    entry.0 = task;
                }
            }
        });
        Box::pin(std::future::ready(Ok(())))
    }

    fn get(&self, task_id: &str) -> BoxFuture<'_, Result<Option<DetailedTask>, ErrorObject>> {
        let task = self.with(|t| t.get(task_id).map(|(task, _)| task.clone()));
        Box::pin(std::future::ready(Ok(task)))
    }
}

/// A server's tasks: the store, the settings, and the handlers running in this process.
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    /// Whether a store was set explicitly (serve the extension even without task tools).
    pub(crate) explicit: bool,
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll_interval: Duration,
    live: Mutex<HashMap<String, Arc<LiveTask>>>,
}

impl fmt::Debug for Tasks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tasks")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    pub(crate) fn new(
        store: Option<Arc<dyn TaskStore>>,
        ttl: Option<Option<Duration>>,
        poll_interval: Option<Duration>,
    ) -> Self {
        Tasks {
            explicit: store.is_some(),
            store: store.unwrap_or_else(|| Arc::new(InMemoryTaskStore::new())),
            ttl: ttl.unwrap_or(Some(DEFAULT_TASK_TTL)),
            poll_interval: poll_interval.unwrap_or(DEFAULT_POLL_INTERVAL),
            live: Mutex::default(),
        }
    }

    /// The task `task_id` running here, unless it expired (an expired one is stopped and
    /// forgotten now, if its timer has not done it yet).
    fn live(&self, task_id: &str) -> Option<Arc<LiveTask>> {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let task = live.get(task_id)?.clone();
        if task.is_expired() {
            live.remove(task_id);
            task.cancel.cancel();
            return None;
        }
        Some(task)
    }

    fn forget(&self, task_id: &str) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(task_id);
    }

    /// Stops every task handler running in this process (the server shuts down): each
    /// unfinished task is recorded `cancelled`.
    pub(crate) async fn shutdown(&self) {
        let live: Vec<Arc<LiveTask>> = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, t)| t)
            .collect();
        for task in live {
            let mut state = task.state.lock().await;
            task.cancel.cancel();
            if !state.record.status.is_terminal() {
                state.record.status = TaskStatus::Cancelled;
                state.record.status_message = Some("The server shut down".into());
                state.record.input_requests = None;
                state.outstanding.clear();
                state.waiter = None;
                state.touch();
                if let Err(e) = self.store.update(state.record.clone()).await {
                    tracing::debug!(error = ?e, "recording a task cancelled at shutdown failed");
                }
            }
        }
    }

    /// The task `task_id` from the store, unless it is unknown or its time to live elapsed
    /// (whether or not the store still has it).
    async fn lookup(&self, task_id: &str) -> Result<DetailedTask, ErrorObject> {
        match self.store.get(task_id).await? {
            Some(task) if !record_expired(&task, SystemTime::now()) => Ok(task),
            _ => Err(task_not_found(task_id)),
        }
    }
}

/// `-32602`, the tasks extension's answer for a task id it does not know.
fn task_not_found(task_id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format_args!(
        "Failed to retrieve task: Task not found: {task_id:?}"
    ))
}

/// Whether a stored task's time to live, counted from its `createdAt`, has elapsed at `now`. A
/// task without a time to live, or whose `createdAt` does not read, never expires here.
fn record_expired(task: &DetailedTask, now: SystemTime) -> bool {
    let Some(ttl) = task.ttl_ms else { return false };
    crate::ids::parse_iso8601(&task.created_at)
        .and_then(|created| created.checked_add(Duration::from_millis(ttl)))
        .is_some_and(|expires| expires <= now)
}

/// A task whose handler runs in this process.
struct LiveTask {
    cancel: CancellationToken,
    /// When its time to live elapses: it is then stopped and forgotten.
    expires: Option<Instant>,
    state: tokio::sync::Mutex<LiveState>,
}

impl LiveTask {
    fn is_expired(&self) -> bool {
        self.expires.is_some_and(|at| at <= Instant::now())
    }
}

struct LiveState {
    record: DetailedTask,
    /// The input requests not answered yet.
    outstanding: InputRequests,
    /// The answers collected for the current round.
    answers: InputResponses,
    /// Wakes the handler once every outstanding request is answered.
    waiter: Option<oneshot::Sender<InputResponses>>,
}

impl LiveState {
    fn touch(&mut self) {
        self.record.last_updated_at = crate::ids::iso8601(SystemTime::now());
    }
}

/// The task side of one task-mode `tools/call`, shared with its handler's [`Context`].
pub(crate) struct TaskSlot {
    server: Server,
    /// Who made the call: the task's id is bound to it.
    principal: Option<Principal>,
    pub(crate) cancel: CancellationToken,
    inner: Mutex<SlotInner>,
    /// Signalled when the task starts (see [`TaskSlot::expiry`]).
    started: tokio::sync::Notify,
}

#[derive(Default)]
struct SlotInner {
    /// The task, once started.
    task: Option<(String, Arc<LiveTask>)>,
    /// Answers the request: with the CreateTaskResult, or with the synchronous outcome.
    reply: Option<oneshot::Sender<HandlerResult>>,
}

impl fmt::Debug for TaskSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskSlot").field("task_id", &self.task_id()).finish_non_exhaustive()
    }
}

impl TaskSlot {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn task_id(&self) -> Option<String> {
        self.lock().task.as_ref().map(|(id, _)| id.clone())
    }

    fn live(&self) -> Option<Arc<LiveTask>> {
        self.lock().task.as_ref().map(|(_, live)| live.clone())
    }

    /// Creates the task (once) and answers the request with its `CreateTaskResult`.
    pub(crate) async fn start(&self) -> Result<String, ErrorObject> {
        if let Some(id) = self.task_id() {
            return Ok(id);
        }
        let tasks = &self.server.inner.tasks;
        let now = crate::ids::iso8601(SystemTime::now());
        let id = new_task_id(self.server.state_sealer(), self.principal.as_ref())?;
        let mut record = DetailedTask::new(id, TaskStatus::Working, now.clone(), now);
        record.ttl_ms = tasks.ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1));
        record.poll_interval_ms =
            Some(u64::try_from(tasks.poll_interval.as_millis()).unwrap_or(u64::MAX).max(1));
        let expires = tasks.ttl.and_then(|ttl| Instant::now().checked_add(ttl));
        tasks.store.create(record.clone()).await?;
        let id = record.task_id.clone();
        let live = Arc::new(LiveTask {
            cancel: self.cancel.clone(),
            expires,
            state: tokio::sync::Mutex::new(LiveState {
                record: record.clone(),
                outstanding: InputRequests::new(),
                answers: InputResponses::new(),
                waiter: None,
            }),
        });
        tasks.live.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), live.clone());
        let reply = {
            let mut inner = self.lock();
            inner.task = Some((id.clone(), live));
            inner.reply.take()
        };
        if let Some(reply) = reply {
            let _ = reply.send(create_task_result(record));
        }
        self.started.notify_one();
        Ok(id)
    }

    /// Resolves when the task's time to live has elapsed (never before it started, nor for a
    /// task kept forever).
    async fn expiry(&self) {
        loop {
            if let Some(live) = self.live() {
                match live.expires {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
                return;
            }
            self.started.notified().await;
        }
    }

    /// Stops an expired task: its handler is gone, and it is forgotten here (the store forgets
    /// it by its own time to live, or [`Tasks::lookup`] stops reading it).
    fn expire(&self) {
        self.cancel.cancel();
        if let Some(id) = self.task_id() {
            tracing::debug!(task = %id, "task expired");
            self.server.inner.tasks.forget(&id);
        }
    }

    /// Answers the request synchronously (the task never started).
    fn answer(&self, result: HandlerResult) {
        if let Some(reply) = self.lock().reply.take() {
            let _ = reply.send(result);
        }
    }

    /// Ends the call: the request's answer if the task never started, its terminal state
    /// otherwise.
    async fn finish(&self, outcome: Result<CallToolResult, ErrorObject>) {
        let Some(live) = self.live() else {
            self.answer(outcome.and_then(encode));
            return;
        };
        let mut state = live.state.lock().await;
        if live.cancel.is_cancelled() || live.is_expired() || state.record.status.is_terminal() {
            return;
        }
        state.outstanding.clear();
        state.record.input_requests = None;
        match outcome.and_then(encode) {
            Ok(Value::Object(result)) => {
                state.record.status = TaskStatus::Completed;
                state.record.result = Some(result);
            }
            Ok(_) => {
                state.record.status = TaskStatus::Failed;
                state.record.error = Some(ErrorObject::internal("the result is not an object"));
            }
            Err(e) => {
                state.record.status = TaskStatus::Failed;
                state.record.status_message = Some(e.message.clone());
                state.record.error = Some(e);
            }
        }
        state.touch();
        let tasks = &self.server.inner.tasks;
        if let Err(e) = tasks.store.update(state.record.clone()).await {
            tracing::warn!(task = %state.record.task_id, error = %e.message, "task store update failed");
        }
        tasks.forget(&state.record.task_id);
    }

    /// Parks the task in `input_required` with `requests` until every one is answered;
    /// `None` when the task was cancelled meanwhile.
    async fn ask(&self, requests: InputRequests) -> Option<InputResponses> {
        if requests.is_empty() {
            return Some(InputResponses::new());
        }
        let live = self.live()?;
        let (tx, rx) = oneshot::channel();
        {
            let mut state = live.state.lock().await;
            if live.cancel.is_cancelled() {
                return None;
            }
            state.record.status = TaskStatus::InputRequired;
            state.record.input_requests = Some(requests.clone());
            state.outstanding = requests;
            state.answers.clear();
            state.waiter = Some(tx);
            state.touch();
            if let Err(e) = self.server.inner.tasks.store.update(state.record.clone()).await {
                tracing::warn!(error = %e.message, "task store update failed");
            }
        }
        rx.await.ok()
    }
}

fn create_task_result(task: DetailedTask) -> HandlerResult {
    let mut value = encode(task.without_payload())?;
    if let Value::Object(map) = &mut value {
        map.insert("resultType".into(), json!("task"));
    }
    Ok(value)
}

/// Whether the request declared the tasks extension; never in the stateful era, where the
/// extension is not defined (see the [module docs](self)).
pub(crate) fn client_declares(ctx: &Context) -> bool {
    ctx.era() == Era::Stateless
        && ctx
            .client_capabilities()
            .and_then(|c| c.extensions)
            .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// Leaves the tasks extension out of `capabilities` (for the stateful era's `initialize`).
pub(crate) fn unadvertise(capabilities: &mut ServerCapabilities) {
    if let Some(extensions) = &mut capabilities.extensions {
        extensions.remove(TASKS_EXTENSION);
        if extensions.is_empty() {
            capabilities.extensions = None;
        }
    }
}

/// `-32021`: the request must declare the tasks extension.
pub(crate) fn missing_extension() -> ErrorObject {
    ErrorObject::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
    )
    .with_data(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// Serves a task-mode `tools/call` (see the [module docs](self)).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn call(
    server: &Server,
    mut ctx: Context,
    runner: Arc<ToolRunner>,
    binding: Binding,
    args: Arguments,
    responses: Option<InputResponses>,
    request_state: Option<String>,
    start: TaskStart,
) -> HandlerResult {
    let sealer = server.state_sealer().clone();
    let mut input = InputState::open(Some(&sealer), binding.clone(), responses, request_state)?;
    let (reply_tx, reply_rx) = oneshot::channel();
    let slot = Arc::new(TaskSlot {
        server: server.clone(),
        principal: ctx.principal(),
        cancel: CancellationToken::new(),
        inner: Mutex::new(SlotInner { task: None, reply: Some(reply_tx) }),
        started: tokio::sync::Notify::new(),
    });
    ctx.task = Some(slot.clone());
    // A request that goes away before its task started takes the handler with it.
    let guard = slot.cancel.clone().drop_guard();
    if start == TaskStart::Immediately {
        slot.start().await?;
    }
    let driver = {
        let slot = slot.clone();
        async move {
            loop {
                let mut round = ctx.clone();
                round.input = Arc::new(input);
                let run = runner.call(round, args.clone());
                let required = match crate::router::unwinding(names::TOOLS_CALL, run).await {
                    Ok(Reply::Complete(result)) => return slot.finish(Ok(result)).await,
                    Err(e) => return slot.finish(Err(e)).await,
                    Ok(Reply::InputRequired(required)) => match required.into_result() {
                        Ok(required) => required,
                        Err(e) => return slot.finish(Err(e)).await,
                    },
                };
                if slot.task_id().is_none() {
                    // Not a task yet: an ordinary input-required result.
                    return slot.answer(encode(required));
                }
                let Some(answers) = slot.ask(required.input_requests.unwrap_or_default()).await
                else {
                    return;
                };
                input = match InputState::open(
                    Some(&sealer),
                    binding.clone(),
                    Some(answers),
                    required.request_state,
                ) {
                    Ok(input) => input,
                    Err(e) => return slot.finish(Err(e)).await,
                };
            }
        }
    };
    let (cancel, expiring) = (slot.cancel.clone(), slot.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = driver => {}
            // The handler is dropped with the task when its time to live elapses.
            () = expiring.expiry() => expiring.expire(),
        }
    });
    let answer = reply_rx
        .await
        .unwrap_or_else(|_| Err(ErrorObject::internal("the tool call ended without an answer")));
    if slot.task_id().is_some() {
        guard.disarm();
    }
    answer
}

/// `tasks/get`.
pub(crate) async fn get(server: &Server, ctx: &Context, params: Option<Value>) -> HandlerResult {
    if !client_declares(ctx) {
        return Err(missing_extension());
    }
    let params: TaskIdParams = decode(params)?;
    check_owner(server, ctx, &params.task_id)?;
    encode(server.inner.tasks.lookup(&params.task_id).await?)
}

/// `tasks/update`: answers to outstanding input requests; others are ignored.
pub(crate) async fn update(server: &Server, ctx: &Context, params: Option<Value>) -> HandlerResult {
    if !client_declares(ctx) {
        return Err(missing_extension());
    }
    let params: UpdateTaskRequestParams = decode(params)?;
    check_owner(server, ctx, &params.task_id)?;
    let tasks = &server.inner.tasks;
    let Some(live) = tasks.live(&params.task_id) else {
        // Known but not running here (finished, or held by another instance): acknowledged.
        tasks.lookup(&params.task_id).await?;
        return encode(Map::new());
    };
    let mut state = live.state.lock().await;
    let mut changed = false;
    for (key, value) in params.input_responses {
        if !state.outstanding.contains_key(&key) {
            continue;
        }
        let Ok(answer) = serde_json::from_value::<InputResponse>(value) else { continue };
        state.outstanding.remove(&key);
        state.answers.insert(key, answer);
        changed = true;
    }
    if changed {
        if state.outstanding.is_empty() {
            state.record.status = TaskStatus::Working;
            state.record.input_requests = None;
            let answers = std::mem::take(&mut state.answers);
            if let Some(waiter) = state.waiter.take() {
                let _ = waiter.send(answers);
            }
        } else {
            state.record.input_requests = Some(state.outstanding.clone());
        }
        state.touch();
        tasks.store.update(state.record.clone()).await?;
    }
    encode(Map::new())
}

/// `tasks/cancel`: stops the handler; acknowledged for terminal tasks too.
pub(crate) async fn cancel(server: &Server, ctx: &Context, params: Option<Value>) -> HandlerResult {
    if !client_declares(ctx) {
        return Err(missing_extension());
    }
    let params: TaskIdParams = decode(params)?;
    check_owner(server, ctx, &params.task_id)?;
    let tasks = &server.inner.tasks;
    let Some(live) = tasks.live(&params.task_id) else {
        // Not running here: finished, or running at another instance sharing the store. The
        // latter is recorded cancelled at once (a store shared by a fleet keeps it so).
        let mut task = tasks.lookup(&params.task_id).await?;
        if !task.status.is_terminal() {
            task.status = TaskStatus::Cancelled;
            task.status_message = Some("Cancelled at the client's request".into());
            task.input_requests = None;
            task.last_updated_at = crate::ids::iso8601(SystemTime::now());
            tasks.store.update(task).await?;
        }
        return encode(Map::new());
    };
    let mut state = live.state.lock().await;
    live.cancel.cancel();
    if !state.record.status.is_terminal() {
        state.record.status = TaskStatus::Cancelled;
        state.record.status_message = Some("Cancelled at the client's request".into());
        state.record.input_requests = None;
        state.outstanding.clear();
        state.waiter = None;
        state.touch();
        tasks.store.update(state.record.clone()).await?;
    }
    tasks.forget(&params.task_id);
    encode(Map::new())
}

/// A fresh task id bound to `principal`: 128 random bits (unguessable), then a tag of them
/// and the principal under the server's key, all hex. A task id says whose it is without the
/// store recording it, and instances sharing the key ([`ServerBuilder::state_sealer`]) agree.
/// An internal error when the OS random source fails (never a guessable id).
///
/// [`ServerBuilder::state_sealer`]: crate::ServerBuilder::state_sealer
fn new_task_id(sealer: &StateSealer, principal: Option<&Principal>) -> Result<String, ErrorObject> {
    let random = crate::ids::random_hex().map_err(|e| {
        tracing::error!(error = %e, "no OS randomness for a task id; task not created");
        ErrorObject::internal("the server cannot create a task id")
    })?;
    let tag = task_tag(sealer, &random, principal);
    Ok(random + &tag)
}

/// What the tag of task id `random` (its first half) made for `principal` covers.
const TASK_TAG: &str = "mcpl-server task id";

/// The tag of task id `random` (its first half) made for `principal`.
fn task_tag(sealer: &StateSealer, random: &str, principal: Option<&Principal>) -> String {
    let key = principal.map(Principal::key);
    let parts: [&[u8]; 2] = [random.as_bytes(), key.as_deref().unwrap_or("\0anonymous").as_bytes()];
    hex_tag(&sealer.tag(TASK_TAG, &parts))
}

fn hex_tag(tag: &[u8; 32]) -> String {
    tag[..TAG_BYTES].iter().map(|b| format!("{b:02x}")).collect()
}

/// How many bytes of the tag a task id carries.
const TAG_BYTES: usize = 16;

/// Whether `task_id` is one made for `principal` (the tag compared in constant time).
fn made_for(sealer: &StateSealer, task_id: &str, principal: Option<&Principal>) -> bool {
    if task_id.len() != 64 || !task_id.is_char_boundary(32) {
        return false;
    }
    let (random, tag) = task_id.split_at(32);
    // Under every key that opens (a task created before a key rotation stays its owner's).
    let key = principal.map(Principal::key);
    let parts: [&[u8]; 2] = [random.as_bytes(), key.as_deref().unwrap_or("\0anonymous").as_bytes()];
    sealer.opening_tags(TASK_TAG, &parts).iter().any(|expected| {
        let expected = hex_tag(expected);
        let differences = expected.bytes().zip(tag.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b));
        differences == 0
    })
}

/// A task id made for another principal (or not by this server) is unknown: "not found",
/// exactly as for an id that never existed.
fn check_owner(server: &Server, ctx: &Context, task_id: &str) -> Result<(), ErrorObject> {
    if made_for(server.state_sealer(), task_id, ctx.principal().as_ref()) {
        Ok(())
    } else {
        Err(task_not_found(task_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_unguessable_hex_bound_to_their_principal() {
        let sealer = StateSealer::random();
        let ada = Principal::Subject("ada".into());
        let id = |p| new_task_id(&sealer, p).unwrap();
        let (a, b) = (id(Some(&ada)), id(Some(&ada)));
        assert_eq!(a.len(), 64);
        assert_ne!(a[..32], b[..32]);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(made_for(&sealer, &a, Some(&ada)));
        assert!(!made_for(&sealer, &a, Some(&Principal::Subject("bob".into()))));
        assert!(!made_for(&sealer, &a, Some(&Principal::Client("ada".into()))));
        assert!(!made_for(&sealer, &a, None));
        assert!(!made_for(&StateSealer::random(), &a, Some(&ada)), "another key");
        let anonymous = id(None);
        assert!(made_for(&sealer, &anonymous, None));
        assert!(!made_for(&sealer, &anonymous, Some(&ada)));
        for bad in ["", "nope", &a[..63], &format!("{}0", &a[..63])] {
            assert!(!made_for(&sealer, bad, Some(&ada)) || bad == a, "{bad}");
        }
    }

    #[test]
    fn task_ids_survive_a_key_rotation() {
        let ada = Principal::Subject("ada".into());
        let before = StateSealer::new(b"old key");
        let id = new_task_id(&before, Some(&ada)).unwrap();
        let after = StateSealer::builder(b"new key")
            .previous_key(b"old key", std::time::SystemTime::now())
            .build()
            .unwrap();
        assert!(made_for(&after, &id, Some(&ada)), "made under the previous key");
        assert!(!made_for(&after, &id, Some(&Principal::Subject("bob".into()))));
        let fresh = new_task_id(&after, Some(&ada)).unwrap();
        assert!(made_for(&after, &fresh, Some(&ada)));
        assert!(!made_for(&before, &fresh, Some(&ada)), "made under the new key");
    }
}
