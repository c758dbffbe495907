//! `mcpl_server::stdio::serve` in a real child process (this test binary, re-run with
//! `MCPL_STDIO_TEST_CHILD=1`), driven over its stdin and stdout as a 2025-11-25 client.
//!
//! Checks that the tasks extension stays out of the stateful era (SEP-2663 defines it for
//! 2026-07-28 only): a task-capable tool answers synchronously even when the client declared
//! the extension in `initialize`, and `tasks/*` are unknown methods. And that a client that
//! stops reading the server's stdout is cut after the write timeout (`MCPL_STDIO_TEST_CHILD=
//! slow-reader`): the server exits instead of buffering answers. And that a stateless
//! (2026-07-28) client gets `subscriptions/listen` over stdio as it does over HTTP
//! (`MCPL_STDIO_TEST_CHILD=stateless`): the acknowledgement, then the list changes and resource
//! updates it opted into, each tagged with its subscription, until it cancels.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use mcpl_core::types::{Resource, Tool, ToolSchema};
use mcpl_server::resource::ResourceOutput;
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

/// This test binary again as a child in `role`, its stdin and stdout piped.
fn spawn_child(role: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env(CHILD, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn parent() {
    let mut child = spawn_child("1");
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

/// The server of the slow-reader child: answers as large as the calls, a short write timeout.
fn echo_server() -> Server {
    Server::builder("stdio-echo", "1.0.0")
        .write_timeout(Some(Duration::from_millis(300)))
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(Value::Object(args).to_string()))
        })
        .build()
}

/// A client that writes calls to the server's stdin and never reads its stdout: the server's
/// writes stall on the full pipe, and after the write timeout it gives up and exits.
async fn slow_reader() {
    let mut child = spawn_child("slow-reader");
    let mut stdin = child.stdin.take().unwrap();
    // Held open and never read.
    let _stdout = child.stdout.take().unwrap();
    let pad = "x".repeat(64 * 1024);
    let writing = async move {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "slow-reader", "version": "1"}}});
        let mut lines = vec![init];
        lines.extend((1..=2000).map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"pad": pad}}})
        }));
        for line in lines {
            let mut line = serde_json::to_vec(&line).unwrap();
            line.push(b'\n');
            // Fails once the server is gone.
            if stdin.write_all(&line).await.is_err() {
                return;
            }
        }
        panic!("the server read 128 MB of calls whose answers nobody read");
    };
    let exited = async {
        let status = child.wait().await.unwrap();
        assert!(status.success(), "{status}");
    };
    tokio::time::timeout(Duration::from_secs(30), async { tokio::join!(writing, exited) })
        .await
        .expect("the server kept serving a client that reads nothing");
}

/// The server of the stateless child: a tool that changes the tool list and updates a resource.
fn changing_server() -> Server {
    Server::builder("stdio-listen", "1.0.0")
        .resource(Resource::new("test://watched", "watched"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "w")])
        })
        .tool(Tool::new("change", ToolSchema::object()), |ctx, _args| async move {
            let server = ctx.server().expect("a server");
            let n = server.tools().len();
            let tool = Tool::new(format!("added-{n}"), ToolSchema::object());
            server
                .tools_mut()
                .add(tool, |_c, _a| async { Ok(ToolOutput::text("added")) })
                .map_err(mcpl_core::jsonrpc::ErrorObject::internal)?;
            server.notify_resource_updated("test://watched");
            server.notify_resource_updated("test://unwatched");
            Ok(ToolOutput::text("changed"))
        })
        .build()
}

/// The `_meta` of every stateless request.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-listen", "version": "1"},
    })
}

impl Peer {
    /// Sends a stateless request and reads up to its answer; the notifications read meanwhile
    /// go to `seen`.
    async fn stateless(
        &mut self,
        id: i64,
        method: &str,
        params: Value,
        seen: &mut Vec<Value>,
    ) -> Value {
        let mut params = params;
        params["_meta"] = stateless_meta();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let message = self.next().await;
            if message["id"] == id {
                return message;
            }
            seen.push(message);
        }
    }

    async fn next(&mut self) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line);
        let n = tokio::time::timeout(Duration::from_secs(30), read).await.unwrap().unwrap();
        assert!(n > 0, "the server closed stdout");
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until a message with `method` arrives, keeping the others in `seen`.
    async fn until(&mut self, method: &str, seen: &mut Vec<Value>) -> Value {
        loop {
            let message = self.next().await;
            if message["method"] == method {
                return message;
            }
            assert!(message.get("error").is_none(), "waiting for {method}: {message}");
            seen.push(message);
        }
    }
}

async fn stateless_listen() {
    let mut child = spawn_child("stateless");
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut peer = Peer { child, stdin, stdout };
    let mut seen = Vec::new();

    // No `initialize`: every request describes its client.
    let discover = peer.stateless(1, "server/discover", json!({}), &mut seen).await;
    assert!(discover["result"]["capabilities"]["tools"]["listChanged"] == true, "{discover}");

    let mut listen = json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen",
        "params": {"notifications": {
            "toolsListChanged": true, "resourceSubscriptions": ["test://watched"]}}});
    listen["params"]["_meta"] = stateless_meta();
    peer.send(listen).await;
    let ack = peer.until("notifications/subscriptions/acknowledged", &mut seen).await;
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub", "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://watched"]}),
        "{ack}"
    );

    let reply = peer.stateless(2, "tools/call", json!({"name": "change"}), &mut seen).await;
    assert_eq!(reply["result"]["content"][0]["text"], "changed", "{reply}");
    let changed = match seen.iter().find(|m| m["method"] == "notifications/tools/list_changed") {
        Some(m) => m.clone(),
        None => peer.until("notifications/tools/list_changed", &mut seen).await,
    };
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub");
    let updated = match seen.iter().find(|m| m["method"] == "notifications/resources/updated") {
        Some(m) => m.clone(),
        None => peer.until("notifications/resources/updated", &mut seen).await,
    };
    assert_eq!(updated["params"]["uri"], "test://watched", "{updated}");
    assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub");

    // Cancelled, the subscription says nothing more (and gets no response).
    peer.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "sub"}}))
        .await;
    let mut after = Vec::new();
    let reply = peer.stateless(3, "tools/call", json!({"name": "change"}), &mut after).await;
    assert_eq!(reply["result"]["content"][0]["text"], "changed", "{reply}");
    let reply = peer.stateless(4, "tools/list", json!({}), &mut after).await;
    assert!(reply["result"]["tools"].is_array(), "{reply}");
    // Whatever the first change still sent before the cancel arrived is the only traffic.
    let late: Vec<_> =
        after.iter().filter(|m| m["method"] == "notifications/tools/list_changed").collect();
    assert!(late.len() <= 1, "{after:?}");
    assert!(after.iter().all(|m| m.get("id") != Some(&json!("sub"))), "{after:?}");

    drop(peer.stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), peer.child.wait()).await.unwrap();
    assert!(status.unwrap().success());
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    match std::env::var(CHILD).as_deref() {
        Ok("slow-reader") => {
            runtime.block_on(mcpl_server::stdio::serve(echo_server())).unwrap();
            // Stdin is still open: the blocking thread reading it would hold the runtime.
            std::process::exit(0)
        }
        Ok("stateless") => {
            runtime.block_on(mcpl_server::stdio::serve(changing_server())).unwrap();
            return;
        }
        Ok(_) => {
            runtime.block_on(mcpl_server::stdio::serve(server())).unwrap();
            return;
        }
        Err(_) => {}
    }
    // `cargo test` passes libtest flags; a filter that excludes a test skips it.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
    if wanted("stdio_task_tools_are_synchronous_in_the_2025_era") {
        runtime.block_on(parent());
        println!("test stdio_task_tools_are_synchronous_in_the_2025_era ... ok");
    }
    if wanted("stdio_client_that_reads_nothing_is_cut_after_the_write_timeout") {
        runtime.block_on(slow_reader());
        println!("test stdio_client_that_reads_nothing_is_cut_after_the_write_timeout ... ok");
    }
    if wanted("stdio_stateless_client_gets_listen_acknowledgements_and_list_changes") {
        runtime.block_on(stateless_listen());
        println!(
            "test stdio_stateless_client_gets_listen_acknowledgements_and_list_changes ... ok"
        );
    }
}
