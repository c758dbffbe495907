//! [`RedisTaskStore`]: the state of tasks (2026 era) where every instance of a fleet sees it.

use futures::StreamExt;
use futures::stream::BoxStream;
use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{DetailedTask, TaskStatus};
use mcpl_server::task::{TaskSignal, TaskStore};
use redis::Script;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Redis, codec};

/// Replaces a stored task unless it is gone or already terminal; its expiry stays.
const UPDATE: &str = r"
local s = redis.call('HGET', KEYS[1], 'status')
if not s then return 0 end
if s == 'completed' or s == 'failed' or s == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'task', ARGV[2])
return 1
";

/// The longest task id looked up; a longer one is unknown without asking Redis.
const MAX_ID_LEN: usize = 128;

/// A [`TaskStore`] on Redis, shared by every instance of a fleet: a task created at one
/// instance is polled (`tasks/get`), updated (`tasks/update`) and cancelled at any other. Each
/// task expires with its `ttlMs`. A terminal state is final: once cancelled (at any instance) a
/// task is not completed by its handler running elsewhere. An update or cancel made at an
/// instance where the handler does not run is signalled to the fleet (Redis pub/sub): the
/// instance running it hands the answers to it, or stops it. While Redis is down, task calls
/// fail with an internal error and signals are lost.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> Result<(), mcpl_redis::Error> {
/// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
/// let server = mcpl_server::Server::builder("s", "1")
///     .task_store(mcpl_redis::RedisTaskStore::new(redis))
///     .build();
/// assert!(server.serves_tasks());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RedisTaskStore {
    redis: Redis,
    update: std::sync::Arc<Script>,
}

impl RedisTaskStore {
    /// The tasks of the fleet on `redis`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), mcpl_redis::Error> {
    /// let redis = mcpl_redis::Redis::open(mcpl_redis::RedisConfig::new("redis://127.0.0.1:6379"))?;
    /// let tasks = mcpl_redis::RedisTaskStore::new(redis);
    /// # drop(tasks);
    /// # Ok(()) }
    /// ```
    pub fn new(redis: Redis) -> Self {
        RedisTaskStore { redis, update: std::sync::Arc::new(Script::new(UPDATE)) }
    }

    fn key(&self, id: &str) -> String {
        self.redis.key(&["task", id])
    }

    /// Stores a new task (see [`TaskStore::create`]).
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_create(&self, task: &DetailedTask) -> Result<(), Error> {
        let key = self.key(&task.task_id);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .del(&key)
            .ignore()
            .hset_multiple(
                &key,
                &[("status", status_name(task.status)), ("task", &codec::encode(task)?)],
            )
            .ignore();
        if let Some(ttl) = task.ttl_ms {
            pipe.pexpire(&key, i64::try_from(ttl.max(1)).unwrap_or(i64::MAX)).ignore();
        }
        let () = pipe.query_async(&mut self.redis.connection()).await?;
        Ok(())
    }

    /// Replaces a stored task that is not terminal (see [`TaskStore::update`]); `false` when
    /// it was not replaced.
    ///
    /// # Errors
    ///
    /// Redis's failure.
    pub async fn try_update(&self, task: &DetailedTask) -> Result<bool, Error> {
        let replaced: i64 = self
            .update
            .key(self.key(&task.task_id))
            .arg(status_name(task.status))
            .arg(codec::encode(task)?)
            .invoke_async(&mut self.redis.connection())
            .await?;
        Ok(replaced == 1)
    }

    /// The task `id` (see [`TaskStore::get`]).
    ///
    /// # Errors
    ///
    /// Redis's failure, or [`ErrorKind::Format`](crate::ErrorKind::Format) for an unreadable task.
    pub async fn try_get(&self, id: &str) -> Result<Option<DetailedTask>, Error> {
        if id.is_empty() || id.len() > MAX_ID_LEN {
            return Ok(None);
        }
        let text: Option<String> = redis::cmd("HGET")
            .arg(self.key(id))
            .arg("task")
            .query_async(&mut self.redis.connection())
            .await?;
        text.map(|t| codec::decode(&t)).transpose()
    }
}

/// The largest task signal read (answers to input requests included): 1 MiB of JSON.
const MAX_SIGNAL: usize = 1 << 20;

/// A task signal as published.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Signal {
    task_id: String,
    #[serde(flatten)]
    signal: WireSignal,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "signal", rename_all = "camelCase")]
enum WireSignal {
    Cancel,
    Update { input_responses: Map<String, Value> },
}

impl RedisTaskStore {
    fn signal_channel(&self) -> String {
        self.redis.key(&["task-signals"])
    }

    /// Publishes `signal` for task `task_id` to the fleet (see [`TaskStore::signal`]).
    ///
    /// # Errors
    ///
    /// Redis's failure, or [`ErrorKind::Full`](crate::ErrorKind::Full) for answers larger
    /// than 1 MiB of JSON.
    pub async fn try_signal(&self, task_id: &str, signal: &TaskSignal) -> Result<(), Error> {
        let signal = match signal {
            TaskSignal::Update(answers) => WireSignal::Update { input_responses: answers.clone() },
            _ => WireSignal::Cancel,
        };
        let message = codec::encode(&Signal { task_id: task_id.to_owned(), signal })?;
        if message.len() > MAX_SIGNAL {
            return Err(Error::new(crate::ErrorKind::Full, "the task signal is larger than 1 MiB"));
        }
        let _receivers: i64 = redis::cmd("PUBLISH")
            .arg(self.signal_channel())
            .arg(message)
            .query_async(&mut self.redis.connection())
            .await?;
        Ok(())
    }
}

fn status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
        Box::pin(async move {
            let created = self.try_create(&task).await;
            Ok(self.redis.noted("storing a new task", created)?)
        })
    }

    fn update(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
        Box::pin(async move {
            let updated = self.try_update(&task).await;
            if !self.redis.noted("updating a task", updated)? {
                tracing::debug!(task = %task.task_id, "task gone or already terminal; not replaced");
            }
            Ok(())
        })
    }

    fn get(&self, task_id: &str) -> BoxFuture<'_, Result<Option<DetailedTask>, ErrorObject>> {
        let task_id = task_id.to_owned();
        Box::pin(async move {
            let task = self.try_get(&task_id).await;
            Ok(self.redis.noted("reading a task", task)?)
        })
    }

    fn signal<'a>(
        &'a self,
        task_id: &'a str,
        signal: &'a TaskSignal,
    ) -> BoxFuture<'a, Result<(), ErrorObject>> {
        Box::pin(async move {
            let sent = self.try_signal(task_id, signal).await;
            Ok(self.redis.noted("signalling a task to the fleet", sent)?)
        })
    }

    fn signals(&self) -> Option<BoxStream<'static, (String, TaskSignal)>> {
        let signals = crate::pubsub::subscribe::<Signal>(
            &self.redis,
            self.signal_channel(),
            MAX_SIGNAL,
            "the fleet's task signals",
        );
        Some(Box::pin(signals.map(|s| {
            let signal = match s.signal {
                WireSignal::Cancel => TaskSignal::Cancel,
                WireSignal::Update { input_responses } => TaskSignal::Update(input_responses),
            };
            (s.task_id, signal)
        })))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn status_names_are_the_wire_names() {
        for status in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status_name(status));
        }
    }
}
