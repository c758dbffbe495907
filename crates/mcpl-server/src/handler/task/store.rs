//! [`InMemoryTaskStore`]: the default task store, in this process's memory.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::DetailedTask;

use super::TaskStore;

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
            if let Some(entry) = t.get_mut(&task.task_id)
                && !entry.0.status.is_terminal()
            {
                entry.0 = task;
            }
        });
        Box::pin(std::future::ready(Ok(())))
    }

    fn get(&self, task_id: &str) -> BoxFuture<'_, Result<Option<DetailedTask>, ErrorObject>> {
        let task = self.with(|t| t.get(task_id).map(|(task, _)| task.clone()));
        Box::pin(std::future::ready(Ok(task)))
    }
}
