//! `mcpl_server::stdio::serve` in a real child process (this test binary, re-run with
//! `MCPL_STDIO_TEST_CHILD=1`), driven over its stdin and stdout as a 2025-11-25 client.
//!
//! Checks that the tasks extension stays out of the stateful era (SEP-2663 defines it for
//! 2026-07-28 only): a task-capable tool answers synchronously even when the client declared
//! the extension in `initialize`, and `tasks/*` are unknown methods.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::task::TaskOptions;
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const CHILD: &str = "MCPL_STDIO_TEST_CHILD";

fn server() -> Server {
    let ms = ToolSchema::object().with_property("ms", json!({"type": "integer"}));
    Server::builder("stdio-tasks", "1.0.0")
        .task_tool(Tool::new("slow", ms), TaskOptions::optional(), |ctx, args| async move {
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let started = ctx.start_task().await?;
            Ok(ToolOutput::text(format!(
                "slept {ms} task_mode={} supports_tasks={} started={started:?}",
                ctx.is_task_mode(),
                ctx.supports_tasks()
            )))
        })
        .task_tool(
            Tool::new("required", ToolSchema::object()),
            TaskOptions::required(),
            |_c, _a| async { Ok(ToolOutput::text("done")) },
        )
        .build()
}

struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line);
            let n = tokio::time::timeout(Duration::from_secs(30), read).await.unwrap().unwrap();
            assert!(n > 0, "the server closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

async fn parent() {
    let child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut child = child;
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut peer = Peer { child, stdin, stdout };

    let init = peer
        .request(
            0,
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
                "clientInfo": {"name": "stdio-test", "version": "1"},
            }),
        )
        .await;
    let caps = &init["result"]["capabilities"];
    assert!(caps["tools"].is_object(), "{init}");
    assert!(caps.get("extensions").is_none(), "{init}");
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let reply =
        peer.request(1, "tools/call", json!({"name": "slow", "arguments": {"ms": 20}})).await;
    let result = &reply["result"];
    assert_eq!(
        result["content"][0]["text"], "slept 20 task_mode=false supports_tasks=false started=None",
        "{reply}"
    );
    assert!(result.get("taskId").is_none() && result.get("resultType").is_none(), "{reply}");
    let reply = peer.request(2, "tools/call", json!({"name": "required"})).await;
    assert_eq!(reply["result"]["content"][0]["text"], "done", "{reply}");
    for (id, method) in [(3, "tasks/get"), (4, "tasks/update"), (5, "tasks/cancel")] {
        let params = json!({"taskId": "nope", "inputResponses": {}});
        let reply = peer.request(id, method, params).await;
        assert_eq!(reply["error"]["code"], -32601, "{method}: {reply}");
    }

    // Closing stdin ends the server.
    drop(peer.stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), peer.child.wait()).await.unwrap();
    assert!(status.unwrap().success());
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    if std::env::var_os(CHILD).is_some() {
        runtime.block_on(mcpl_server::stdio::serve(server())).unwrap();
        return;
    }
    // `cargo test` passes libtest flags; a filter that excludes this file's one test skips it.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter.is_some_and(|f| !"stdio_task_tools_are_synchronous_in_the_2025_era".contains(&f)) {
        return;
    }
    runtime.block_on(parent());
    println!("test stdio_task_tools_are_synchronous_in_the_2025_era ... ok");
}
