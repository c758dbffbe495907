//! The table of a server's tasks: the store, the settings, and the handlers running in this
//! process.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{DetailedTask, InputRequests, InputResponse, InputResponses, TaskStatus};
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::task::{
    DEFAULT_POLL_INTERVAL, DEFAULT_TASK_TTL, InMemoryTaskStore, TaskSignal, TaskStore,
};

/// A server's tasks: the store, the settings, and the handlers running in this process.
pub(crate) struct Tasks {
    pub(crate) store: Arc<dyn TaskStore>,
    /// Whether a store was set explicitly (serve the extension even without task tools).
    pub(crate) explicit: bool,
    pub(crate) ttl: Option<Duration>,
    pub(crate) poll_interval: Duration,
    pub(super) live: Mutex<HashMap<String, Arc<LiveTask>>>,
    /// Listens to the store's signals (see [`TaskStore::signals`]) from the first task on.
    listening: std::sync::Once,
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
            listening: std::sync::Once::new(),
        }
    }

    /// Acts on the signals other instances send for the tasks running here, once (see
    /// [`TaskStore::signals`]), until the server is dropped.
    pub(crate) fn listen(self: &Arc<Self>) {
        self.listening.call_once(|| {
            let Some(mut signals) = self.store.signals() else { return };
            let tasks = Arc::downgrade(self);
            tokio::spawn(async move {
                use futures::StreamExt;
                while let Some((task_id, signal)) = signals.next().await {
                    let Some(tasks) = tasks.upgrade() else { return };
                    let Some(live) = tasks.live(&task_id) else { continue };
                    tracing::debug!(task = %task_id, ?signal, "a signal from another instance");
                    let acted = match signal {
                        TaskSignal::Cancel => tasks.cancel_live(&task_id, &live).await,
                        TaskSignal::Update(answers) => tasks.update_live(&live, answers).await,
                    };
                    if let Err(e) = acted {
                        tracing::warn!(task = %task_id, error = %e.message, "acting on a task signal failed");
                    }
                }
            });
        });
    }

    /// Hands `answers` to the task running here (see `tasks/update`).
    pub(super) async fn update_live(
        &self,
        live: &LiveTask,
        answers: Map<String, Value>,
    ) -> Result<(), ErrorObject> {
        let mut state = live.state.lock().await;
        let mut changed = false;
        for (key, value) in answers {
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
            self.store.update(state.record.clone()).await?;
        }
        Ok(())
    }

    /// Stops the task running here and records it `cancelled` (see `tasks/cancel`).
    pub(super) async fn cancel_live(
        &self,
        task_id: &str,
        live: &LiveTask,
    ) -> Result<(), ErrorObject> {
        let mut state = live.state.lock().await;
        live.cancel.cancel();
        let recorded = if state.record.status.is_terminal() {
            Ok(())
        } else {
            state.record.status = TaskStatus::Cancelled;
            state.record.status_message = Some("Cancelled at the client's request".into());
            state.record.input_requests = None;
            state.outstanding.clear();
            state.waiter = None;
            state.touch();
            self.store.update(state.record.clone()).await
        };
        self.forget(task_id);
        recorded
    }

    /// The task `task_id` running here, unless it expired (an expired one is stopped and
    /// forgotten now, if its timer has not done it yet).
    pub(super) fn live(&self, task_id: &str) -> Option<Arc<LiveTask>> {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let task = live.get(task_id)?.clone();
        if task.is_expired() {
            live.remove(task_id);
            task.cancel.cancel();
            return None;
        }
        Some(task)
    }

    pub(super) fn forget(&self, task_id: &str) {
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
    pub(super) async fn lookup(&self, task_id: &str) -> Result<DetailedTask, ErrorObject> {
        match self.store.get(task_id).await? {
            Some(task) if !record_expired(&task, SystemTime::now()) => Ok(task),
            _ => Err(task_not_found(task_id)),
        }
    }
}

/// `-32602`, the tasks extension's answer for a task id it does not know.
pub(super) fn task_not_found(task_id: &str) -> ErrorObject {
    ErrorObject::invalid_params(format_args!(
        "Failed to retrieve task: Task not found: {task_id:?}"
    ))
}

/// Whether a stored task's time to live, counted from its `createdAt`, has elapsed at `now`. A
/// task without a time to live, or whose `createdAt` does not read, never expires here.
pub(super) fn record_expired(task: &DetailedTask, now: SystemTime) -> bool {
    let Some(ttl) = task.ttl_ms else { return false };
    crate::ids::parse_iso8601(&task.created_at)
        .and_then(|created| created.checked_add(Duration::from_millis(ttl)))
        .is_some_and(|expires| expires <= now)
}

/// A task whose handler runs in this process.
pub(super) struct LiveTask {
    pub(super) cancel: CancellationToken,
    /// When its time to live elapses: it is then stopped and forgotten.
    pub(super) expires: Option<Instant>,
    pub(super) state: tokio::sync::Mutex<LiveState>,
}

impl LiveTask {
    pub(super) fn is_expired(&self) -> bool {
        self.expires.is_some_and(|at| at <= Instant::now())
    }
}

pub(super) struct LiveState {
    pub(super) record: DetailedTask,
    /// The input requests not answered yet.
    pub(super) outstanding: InputRequests,
    /// The answers collected for the current round.
    pub(super) answers: InputResponses,
    /// Wakes the handler once every outstanding request is answered.
    pub(super) waiter: Option<oneshot::Sender<InputResponses>>,
}

impl LiveState {
    pub(super) fn touch(&mut self) {
        self.record.last_updated_at = crate::ids::iso8601(SystemTime::now());
    }
}
