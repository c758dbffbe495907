//! The server's side of the tasks extension (the types a server author and a handler use are
//! in [`crate::task`]): the table of the tasks whose handlers run in this process, a task-mode
//! `tools/call`, and `tasks/get`, `tasks/update` and `tasks/cancel`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use mcpl_core::engine::{BoxFuture, HandlerResult};
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
use mcpl_core::types::{
    CallToolResult, DetailedTask, InputRequests, InputResponses, ServerCapabilities,
    TASKS_EXTENSION, TaskIdParams, TaskStatus, UpdateTaskRequestParams, names,
};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::codec::{decode, encode};
use crate::context::Context;
use crate::input::{InputState, Reply};
use crate::principal::Principal;
use crate::request_state::Binding;
use crate::server::Server;
use crate::task::{TaskSide, TaskSignal, TaskStart, client_declares};
use crate::tool::{Arguments, ToolRunner};

mod owner;
pub(crate) mod table;

use self::owner::{check_owner, new_task_id};
use self::table::{LiveState, LiveTask, task_not_found};

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

impl TaskSide for TaskSlot {
    fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    fn task_id(&self) -> Option<String> {
        TaskSlot::task_id(self)
    }

    fn start(&self) -> BoxFuture<'_, Result<String, ErrorObject>> {
        Box::pin(TaskSlot::start(self))
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
        tasks.listen();
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
        match outcome.and_then(|result| serde_json::to_value(result).map_err(ErrorObject::internal))
        {
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
    let mut value = serde_json::to_value(task.without_payload()).map_err(ErrorObject::internal)?;
    if let Value::Object(map) = &mut value {
        map.insert("resultType".into(), json!("task"));
    }
    Ok(value.into())
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

/// Serves a task-mode `tools/call` (see [`crate::task`]).
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
                round.input = crate::input::InputSlot::Given(Arc::new(input));
                let run = runner.clone().call(round, args.clone());
                let required = match crate::unwinding::unwinding(names::TOOLS_CALL, run).await {
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
        // Known but not running here (finished, or held by another instance sharing the
        // store, which the signal reaches): acknowledged.
        let task = tasks.lookup(&params.task_id).await?;
        if !task.status.is_terminal() {
            let signal = TaskSignal::Update(params.input_responses);
            tasks.store.signal(&params.task_id, &signal).await?;
        }
        return encode(Map::new());
    };
    tasks.update_live(&live, params.input_responses).await?;
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
            // The instance running the handler stops it.
            tasks.store.signal(&params.task_id, &TaskSignal::Cancel).await?;
        }
        return encode(Map::new());
    };
    tasks.cancel_live(&params.task_id, &live).await?;
    encode(Map::new())
}

#[cfg(test)]
mod tests {
    use super::owner::made_for;
    use super::*;
    use crate::request_state::StateSealer;

    #[test]
    fn task_ids_are_unguessable_hex_bound_to_their_principal() {
        let sealer = StateSealer::random().unwrap();
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
        assert!(!made_for(&StateSealer::random().unwrap(), &a, Some(&ada)), "another key");
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
