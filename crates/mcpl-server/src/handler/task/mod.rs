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

use std::fmt;
use std::time::Duration;

use mcpl_core::Era;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{DetailedTask, TASKS_EXTENSION};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use mcpl_core::types::TaskSupport;

mod store;

use crate::context::Context;

pub use self::store::InMemoryTaskStore;

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
#[non_exhaustive]
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

    /// Hands `signal` for task `task_id` to the instances of a fleet sharing this store: the
    /// one running the task's handler acts on it (see [`signals`](Self::signals)). Called for
    /// a `tasks/update` or `tasks/cancel` of a task whose handler does not run here. The
    /// default, for a store of one process, drops it.
    fn signal<'a>(
        &'a self,
        task_id: &'a str,
        signal: &'a TaskSignal,
    ) -> BoxFuture<'a, Result<(), ErrorObject>> {
        let _ = (task_id, signal);
        Box::pin(std::future::ready(Ok(())))
    }

    /// The signals other instances send (see [`signal`](Self::signal)), as `(task id,
    /// signal)`: called once, when this server starts its first task; each signal for a task
    /// whose handler runs here is acted on (the others are ignored). The default: none.
    fn signals(&self) -> Option<futures::stream::BoxStream<'static, (String, TaskSignal)>> {
        None
    }
}

/// What an instance of a fleet asks of a task whose handler runs at another (see
/// [`TaskStore::signal`]).
///
/// # Examples
///
/// ```
/// use mcpl_server::task::TaskSignal;
///
/// let mut answers = serde_json::Map::new();
/// answers.insert("who".into(), serde_json::json!({"action": "accept", "content": {"name": "Ada"}}));
/// let update = TaskSignal::Update(answers);
/// assert_ne!(update, TaskSignal::Cancel);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskSignal {
    /// `tasks/cancel`: stop the handler (the task is already recorded `cancelled`).
    Cancel,
    /// `tasks/update`: answers to the task's outstanding input requests, by key.
    Update(Map<String, Value>),
}

/// The serving side of one task-mode `tools/call`, as its handler's [`Context`] sees it
/// (the server's task table implements it: `crate::task_serving`).
///
/// [`Context`]: crate::Context
pub(crate) trait TaskSide: Send + Sync + fmt::Debug {
    /// Cancelled when the task is cancelled, expires or the server stops.
    fn cancellation(&self) -> &CancellationToken;
    /// The task's id, once it started.
    fn task_id(&self) -> Option<String>;
    /// Creates the task (once) and answers the request with its `CreateTaskResult`.
    fn start(&self) -> BoxFuture<'_, Result<String, ErrorObject>>;
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
