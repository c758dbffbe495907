#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The host with the reference "everything" server (`@modelcontextprotocol/server-everything`
//! from npm, a plain MCP server on the TypeScript SDK) as a child process, over stdio and over
//! Streamable HTTP: connected as a server without MCPL, every tool offered (the ones it
//! registers only for clients that declare sampling, elicitation and roots included), calls
//! routed, and its sampling, elicitation and roots requests answered by the embedder.
//!
//! It runs when `MCPL_EVERYTHING_SERVER` names the installed server's entry script
//! (`.../node_modules/@modelcontextprotocol/server-everything/dist/index.js`), with the Node
//! binary `MCPL_EVERYTHING_NODE` (default `node`); without it the tests say so and pass. With
//! it, anything the server does wrong fails them. `.ci/run` installs the server and sets both.

use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use mcpl_core::types::{
    ContentBlock, CreateMessageResult, ElicitAction, ElicitResult, Role, Root,
    SamplingMessageContentBlock, TextContent,
};
use mcpl_host::config::HostConfig;
use mcpl_host::registry::Phase;
use mcpl_host::{Host, HostEvent, ToolCall};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

const GUARD: Duration = Duration::from_secs(60);

/// The tools the server offers every client, and the ones it offers only a client that
/// declares sampling, elicitation and roots.
const ALWAYS: [&str; 4] = ["echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"];
const CONDITIONAL: [&str; 3] =
    ["trigger-sampling-request", "trigger-elicitation-request", "get-roots-list"];

/// `(node, entry script)`, if the server is installed.
fn installed() -> Option<(String, String)> {
    let entry = std::env::var("MCPL_EVERYTHING_SERVER").ok().filter(|e| !e.is_empty())?;
    assert!(std::path::Path::new(&entry).is_file(), "MCPL_EVERYTHING_SERVER={entry} is not a file");
    let node = std::env::var("MCPL_EVERYTHING_NODE").ok().filter(|n| !n.is_empty());
    Some((node.unwrap_or_else(|| "node".to_owned()), entry))
}

fn skip(test: &str) {
    eprintln!(
        "{test}: skipped (set MCPL_EVERYTHING_SERVER to the installed server's dist/index.js)"
    );
}

/// A host with the embedder's handlers for sampling, elicitation and roots.
async fn host(server: Value) -> (Host, mpsc::Receiver<HostEvent>) {
    let config =
        HostConfig::from_json(&json!({"servers": {"everything": server}}).to_string()).unwrap();
    let builder = Host::builder(config)
        .on_sampling(|server, params| async move {
            let reply = format!("{server} read {} message(s)", params.messages.len());
            let reply = SamplingMessageContentBlock::Text(TextContent::new(reply));
            Ok(CreateMessageResult::new(Role::Assistant, reply, "example-model"))
        })
        .on_elicitation(|_server, _form| async { Ok(ElicitResult::new(ElicitAction::Decline)) })
        .on_roots(
            |server| async move { Ok(vec![Root::new(format!("file:///workspaces/{server}"))]) },
        );
    tokio::time::timeout(GUARD, builder.start()).await.expect("hang").unwrap()
}

fn names(host: &Host) -> Vec<String> {
    host.tools().into_iter().map(|t| t.name).collect()
}

fn text(call: &ToolCall) -> String {
    call.result.text().unwrap_or_default()
}

/// Waits until every tool of `wanted` is offered (the conditional ones are registered after
/// `notifications/initialized` and announced with `notifications/tools/list_changed`).
async fn offered(host: &Host, wanted: &[&str]) {
    let all = async {
        loop {
            let tools = names(host);
            if wanted.iter().all(|w| tools.contains(&format!("mcpl--everything--{w}"))) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    if tokio::time::timeout(GUARD, all).await.is_err() {
        panic!("not every tool of {wanted:?} is offered: {:?}", names(host));
    }
}

/// What every transport must show.
async fn exercise(host: &Host) {
    let phases: Vec<(String, Phase)> =
        host.servers().into_iter().map(|(id, _, phase)| (id, phase)).collect();
    assert_eq!(phases, [("everything".to_owned(), Phase::Connected)]);
    let details = host.server("everything").expect("connected");
    assert!(!details.is_stateless(), "{:?}", details.protocol_version);
    assert_eq!(host.mcpl("everything").unwrap().status(), None, "a plain MCP server");
    let wanted: Vec<&str> = ALWAYS.iter().chain(&CONDITIONAL).copied().collect();
    offered(host, &wanted).await;

    let call = host.call_tool("mcpl--everything--echo", json!({"message": "hi"})).await.unwrap();
    assert_eq!((call.server.as_str(), call.tool.as_str()), ("everything", "echo"));
    assert_eq!(text(&call), "Echo: hi");
    let call = host.call_tool("mcpl--everything--get-sum", json!({"a": 2, "b": 3})).await.unwrap();
    assert!(text(&call).contains('5'), "{}", text(&call));
    let call = host.call_tool("mcpl--everything--get-tiny-image", json!({})).await.unwrap();
    assert!(matches!(call.result.content[1], ContentBlock::Image(_)), "{:?}", call.result);

    // The server's own requests reach the embedder's handlers.
    let call = host
        .call_tool("mcpl--everything--trigger-sampling-request", json!({"prompt": "a haiku"}))
        .await
        .unwrap();
    assert!(text(&call).contains("everything read 1 message(s)"), "{}", text(&call));
    let call =
        host.call_tool("mcpl--everything--trigger-elicitation-request", json!({})).await.unwrap();
    assert!(text(&call).contains("declined"), "{}", text(&call));
    let call = host.call_tool("mcpl--everything--get-roots-list", json!({})).await.unwrap();
    assert!(text(&call).contains("file:///workspaces/everything"), "{}", text(&call));

    // A tool error is a result, not a failed call.
    let call = host.call_tool("mcpl--everything--get-sum", json!({"a": "x"})).await;
    match call {
        Ok(call) => assert_eq!(call.result.is_error, Some(true), "{:?}", call.result),
        Err(e) => assert_eq!(e.kind(), "call", "{e}"),
    }
}

#[tokio::test]
async fn the_everything_server_over_stdio() {
    let Some((node, entry)) = installed() else { return skip("stdio") };
    let (host, _events) = host(json!({"command": node, "args": [entry, "stdio"]})).await;
    exercise(&host).await;
    host.shutdown().await;
}

/// A loopback port nothing listens on right now (the server takes `PORT`, not a socket).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the server's Streamable HTTP transport and waits until it listens.
async fn http_server(node: &str, entry: &str) -> (Child, String) {
    let port = free_port();
    let mut child = Command::new(node)
        .args([entry, "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let listening = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("the everything server ended before listening");
    };
    tokio::time::timeout(GUARD, listening).await.expect("the everything server did not listen");
    // Keep reading its log so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test]
async fn the_everything_server_over_streamable_http() {
    let Some((node, entry)) = installed() else { return skip("streamable HTTP") };
    let (_server, url) = http_server(&node, &entry).await;
    let (host, _events) = host(json!({"url": url})).await;
    exercise(&host).await;
    host.shutdown().await;
}
