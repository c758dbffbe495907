//! A task is gone once its time to live has elapsed, on every path: `tasks/get`,
//! `tasks/update` and `tasks/cancel` answer "not found", a parked handler is not called again,
//! a running one is stopped, and a store that keeps expired tasks does not bring them back.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{
    DetailedTask, ElicitRequestFormParams, ElicitationSchema, StringSchema, Tool, ToolSchema,
};
use mcpl_server::http::HttpConfig;
use mcpl_server::input::ToolReply;
use mcpl_server::task::{TaskOptions, TaskStore};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};

use crate::support::{WAIT, call, post, request, serve_router};

const TTL: Duration = Duration::from_millis(300);

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A store that never forgets a task, expired or not.
#[derive(Default)]
struct Forever(Mutex<HashMap<String, DetailedTask>>);

impl TaskStore for Forever {
    fn create(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
        self.0.lock().unwrap().insert(task.task_id.clone(), task);
        Box::pin(async { Ok(()) })
    }
    fn update(&self, task: DetailedTask) -> BoxFuture<'_, Result<(), ErrorObject>> {
        self.0.lock().unwrap().insert(task.task_id.clone(), task);
        Box::pin(async { Ok(()) })
    }
    fn get(&self, task_id: &str) -> BoxFuture<'_, Result<Option<DetailedTask>, ErrorObject>> {
        let task = self.0.lock().unwrap().get(task_id).cloned();
        Box::pin(async { Ok(task) })
    }
}

struct Probes {
    answered: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
}

fn server(store: Option<Forever>) -> (Server, Probes) {
    let probes = Probes { answered: Arc::default(), dropped: Arc::new(AtomicBool::new(false)) };
    let (answered, dropped) = (probes.answered.clone(), probes.dropped.clone());
    let mut builder = Server::builder("strict-tasks", "1").task_ttl(Some(TTL));
    if let Some(store) = store {
        builder = builder.task_store(store);
    }
    let server = builder
        .task_tool(
            Tool::new("confirm", ToolSchema::object()),
            TaskOptions::required(),
            move |ctx, _a| {
                let answered = answered.clone();
                async move {
                    if ctx.elicited("confirm").is_some() {
                        answered.fetch_add(1, Ordering::SeqCst);
                        return Ok::<ToolReply, ErrorObject>(ToolOutput::text("confirmed").into());
                    }
                    let form =
                        ElicitationSchema::default().with_property("ok", StringSchema::default());
                    let ask = ElicitRequestFormParams::new("ok?", form);
                    Ok(ctx.input_required().elicit("confirm", ask).into())
                }
            },
        )
        .task_tool(
            Tool::new("sleepy", ToolSchema::object()),
            TaskOptions::required(),
            move |_c, _a| {
                let guard = SetOnDrop(dropped.clone());
                async move {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    std::mem::forget(guard);
                    Ok(ToolOutput::text("woke"))
                }
            },
        )
        .task_tool(
            Tool::new("quick", ToolSchema::object()),
            TaskOptions::required(),
            |_c, _a| async { Ok(ToolOutput::text("done")) },
        )
        .build();
    (server, probes)
}

fn with_tasks(mut body: Value) -> Value {
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    body
}

async fn create(addr: SocketAddr, tool: &str) -> String {
    let answer = post(addr, &with_tasks(call(json!(1), tool, json!({}))), &[]).await;
    let result = &answer.last()["result"];
    assert_eq!(result["resultType"], "task", "{result}");
    result["taskId"].as_str().unwrap().to_owned()
}

async fn tasks(addr: SocketAddr, method: &str, params: Value) -> Value {
    post(addr, &with_tasks(request(json!(2), method, params)), &[]).await.last().clone()
}

async fn status(addr: SocketAddr, id: &str) -> Value {
    tasks(addr, "tasks/get", json!({"taskId": id})).await
}

/// Waits until the task reaches `wanted` (a guard against hangs, not a timing assertion).
async fn wait_for(addr: SocketAddr, id: &str, wanted: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let reply = status(addr, id).await;
        if reply["result"]["status"] == wanted {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{reply}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn not_found(reply: &Value) {
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[tokio::test]
async fn an_expired_parked_task_is_gone_and_its_handler_not_called_again() {
    let (server, probes) = server(None);
    let addr = serve_router(server, HttpConfig::new()).await;
    let id = create(addr, "confirm").await;
    wait_for(addr, &id, "input_required").await;
    tokio::time::sleep(TTL * 2).await;
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": "yes"}}});
    not_found(&tasks(addr, "tasks/update", json!({"taskId": id, "inputResponses": answer})).await);
    not_found(&status(addr, &id).await);
    not_found(&tasks(addr, "tasks/cancel", json!({"taskId": id})).await);
    // Had the update been taken, the handler would have answered by now.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(probes.answered.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_running_task_is_stopped_when_it_expires() {
    let (server, probes) = server(None);
    let addr = serve_router(server, HttpConfig::new()).await;
    let id = create(addr, "sleepy").await;
    assert_eq!(status(addr, &id).await["result"]["status"], "working");
    let deadline = tokio::time::Instant::now() + WAIT;
    while !probes.dropped.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "the handler still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    not_found(&status(addr, &id).await);
}

#[tokio::test]
async fn a_store_that_keeps_expired_tasks_does_not_bring_them_back() {
    let (server, probes) = server(Some(Forever::default()));
    let addr = serve_router(server, HttpConfig::new()).await;
    let done = create(addr, "quick").await;
    wait_for(addr, &done, "completed").await;
    let parked = create(addr, "confirm").await;
    wait_for(addr, &parked, "input_required").await;
    tokio::time::sleep(TTL * 2).await;
    not_found(&status(addr, &done).await);
    not_found(&status(addr, &parked).await);
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": "yes"}}});
    not_found(
        &tasks(addr, "tasks/update", json!({"taskId": parked, "inputResponses": answer})).await,
    );
    not_found(&tasks(addr, "tasks/cancel", json!({"taskId": done})).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(probes.answered.load(Ordering::SeqCst), 0);
}
