#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! One `mcpl_host::Host` with servers of both eras at once, all real child processes: a server
//! that speaks only 2026-07-28 over stdio and over Streamable HTTP (`mcp-era-server --era
//! 2026`), one that speaks only the 2025 era over stdio (`--era 2025`), and the MCPL memory
//! server. Each is negotiated in its own era; plain servers are namespaced and routed like MCPL
//! ones; tool-list changes arrive over `subscriptions/listen` (2026) and the session (2025).
//! With the reference "everything" server installed (`MCPL_EVERYTHING_SERVER`, as in
//! `crates/mcpl-host/tests/everything.rs`), it joins them over stdio and Streamable HTTP.

use std::process::Stdio;
use std::time::Duration;

use mcpl_core::ProtocolVersion;
use mcpl_host::checkpoint::RecordOutcome;
use mcpl_host::config::HostConfig;
use mcpl_host::registry::Phase;
use mcpl_host::{Host, HostEvent, ToolCall};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

const GUARD: Duration = Duration::from_secs(60);
const ERA_SERVER: &str = env!("CARGO_BIN_EXE_mcp-era-server");
const MEMORY: &str = env!("CARGO_BIN_EXE_mcpl-memory-server");

/// `mcp-era-server --era <era> --http 127.0.0.1:0`, and the URL it prints.
async fn http_server(era: &str) -> (Child, String) {
    let mut child = Command::new(ERA_SERVER)
        .args(["--era", era, "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(GUARD, lines.next_line()).await.expect("hang").unwrap();
    (child, url.expect("the server printed its URL"))
}

fn text(call: &ToolCall) -> String {
    call.result.text().unwrap_or_else(|| panic!("not text: {:?}", call.result))
}

fn names(host: &Host) -> Vec<String> {
    host.tools().iter().map(|t| t.name.clone()).collect()
}

async fn next_event(
    events: &mut mpsc::Receiver<HostEvent>,
    what: &str,
    pred: impl Fn(&HostEvent) -> bool,
) -> HostEvent {
    tokio::time::timeout(GUARD, async {
        loop {
            let event = events.recv().await.expect("the host's event stream ended");
            if pred(&event) {
                return event;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("hang: {what}"))
}

fn added(server: &str, name: &str) -> impl Fn(&HostEvent) -> bool {
    let (server, name) = (server.to_owned(), name.to_owned());
    move |event| {
        matches!(event, HostEvent::ToolsChanged { server: s, added, .. }
            if *s == server && added.contains(&name))
    }
}

#[tokio::test]
async fn one_host_speaks_both_eras_at_once() {
    let (mut web_child, web_url) = http_server("2026").await;
    let config = json!({"servers": {
        "new": {"command": ERA_SERVER, "args": ["--era", "2026"]},
        "web": {"url": web_url, "reconnect": false},
        "old": {"command": ERA_SERVER, "args": ["--era", "2025"]},
        "mem": {"command": MEMORY}
    }});
    let config = HostConfig::from_json(&config.to_string()).unwrap();
    let (host, mut events) =
        tokio::time::timeout(GUARD, Host::start(config)).await.expect("hang").unwrap();
    let phases: Vec<(String, Phase)> =
        host.servers().into_iter().map(|(id, _, phase)| (id, phase)).collect();
    let up = |id: &str| (id.to_owned(), Phase::Connected);
    assert_eq!(phases, [up("mem"), up("new"), up("old"), up("web")]);

    // Each in its own era; MCPL only where the server speaks it.
    let version = |id: &str| host.server(id).map(|details| details.protocol_version);
    assert_eq!(version("new"), Some(ProtocolVersion::V2026_07_28));
    assert_eq!(version("web"), Some(ProtocolVersion::V2026_07_28));
    assert_eq!(version("old"), Some(ProtocolVersion::V2025_11_25));
    assert_eq!(version("mem"), Some(ProtocolVersion::V2025_11_25));
    assert!(host.mcpl("mem").unwrap().is_ready());
    for plain in ["new", "web", "old"] {
        assert_eq!(host.mcpl(plain).unwrap().status(), None, "{plain}");
    }

    // Namespaced and routed alike.
    let tools = names(&host);
    for name in ["mcpl--new--echo", "mcpl--web--echo", "mcpl--old--echo", "mcpl--mem--remember"] {
        assert!(tools.contains(&name.to_owned()), "{name} in {tools:?}");
    }
    for (id, era) in [("new", "2026-07-28"), ("web", "2026-07-28"), ("old", "2025-11-25")] {
        let call = host.call_tool(&format!("mcpl--{id}--era"), json!({})).await.unwrap();
        assert_eq!((call.server.as_str(), text(&call).as_str()), (id, era));
        let call = host.call_tool(&format!("mcpl--{id}--echo"), json!({"text": id})).await.unwrap();
        assert_eq!(text(&call), id);
        assert_eq!(call.state, RecordOutcome::NoState);
    }
    let call =
        host.call_tool("mcpl--mem--remember", json!({"text": "the cat is Tom"})).await.unwrap();
    assert!(matches!(call.state, RecordOutcome::Recorded { .. }), "{:?}", call.state);

    // Tool-list changes: over `subscriptions/listen` (2026 HTTP) and the session (2025).
    let call = host.call_tool("mcpl--web--grow", json!({})).await.unwrap();
    assert_eq!(text(&call), "grown-1");
    next_event(&mut events, "web's new tool", added("web", "mcpl--web--grown-1")).await;
    let call = host.call_tool("mcpl--old--grow", json!({})).await.unwrap();
    assert_eq!(text(&call), "grown-1");
    next_event(&mut events, "old's new tool", added("old", "mcpl--old--grown-1")).await;
    // This server serves no `subscriptions/listen` on stdio: an explicit refresh finds it.
    host.call_tool("mcpl--new--grow", json!({})).await.unwrap();
    host.refresh_tools("new").await;
    assert!(names(&host).contains(&"mcpl--new--grown-1".to_owned()));
    let call = host.call_tool("mcpl--web--grown-1", json!({})).await.unwrap();
    assert_eq!(text(&call), "grown");

    // The 2026 HTTP server goes away: its listen stream ends, it does not answer, the host
    // marks it down (2026 HTTP has no connection to watch).
    web_child.kill().await.unwrap();
    next_event(
        &mut events,
        "web's drop",
        |e| matches!(e, HostEvent::Disconnected { server } if server == "web"),
    )
    .await;
    let phase = host.servers().into_iter().find(|(id, _, _)| id == "web").map(|(_, _, p)| p);
    assert_eq!(phase, Some(Phase::Down));
    let err = host.call_tool("mcpl--web--echo", json!({"text": "x"})).await.unwrap_err();
    assert_eq!(err.kind(), "not_connected");
    host.shutdown().await;
}

#[tokio::test]
async fn a_pinned_era_is_spoken_or_the_connect_fails() {
    let (_web, url) = http_server("2026").await;
    let config = json!({"servers": {
        "pinned": {"url": url, "protocol": "stateless"},
        "wrong": {"command": ERA_SERVER, "args": ["--era", "2026"], "protocol": "stateful",
                  "reconnect": false}
    }});
    let config = HostConfig::from_json(&config.to_string()).unwrap();
    let (host, _events) =
        tokio::time::timeout(GUARD, Host::start(config)).await.expect("hang").unwrap();
    let ids: Vec<String> = host.servers().into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ids, ["pinned"], "a 2026-only server pinned to the 2025 era does not connect");
    let call = host.call_tool("mcpl--pinned--era", json!({})).await.unwrap();
    assert_eq!(text(&call), "2026-07-28");
    host.shutdown().await;
}

/// `(node, entry script)` of the reference "everything" server, if installed: as in
/// `crates/mcpl-host/tests/everything.rs`, `MCPL_EVERYTHING_SERVER` names its `dist/index.js`
/// and `MCPL_EVERYTHING_NODE` its Node (`.ci/run` sets both); without them the test says so.
fn everything_installed() -> Option<(String, String)> {
    let entry = std::env::var("MCPL_EVERYTHING_SERVER").ok().filter(|e| !e.is_empty())?;
    assert!(std::path::Path::new(&entry).is_file(), "MCPL_EVERYTHING_SERVER={entry} is not a file");
    let node = std::env::var("MCPL_EVERYTHING_NODE").ok().filter(|n| !n.is_empty());
    Some((node.unwrap_or_else(|| "node".to_owned()), entry))
}

/// The everything server's Streamable HTTP transport on a free loopback port, once it listens.
async fn everything_http(node: &str, entry: &str) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
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
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, format!("http://127.0.0.1:{port}/mcp"))
}

#[tokio::test]
async fn the_everything_server_beside_a_2026_only_and_an_mcpl_server() {
    let Some((node, entry)) = everything_installed() else {
        eprintln!("skipped (set MCPL_EVERYTHING_SERVER to the installed server's dist/index.js)");
        return;
    };
    let (_everything_http, everything_url) = everything_http(&node, &entry).await;
    let (_new_http, new_url) = http_server("2026").await;
    let config = json!({"servers": {
        "ev": {"command": node, "args": [entry, "stdio"]},
        "evweb": {"url": everything_url},
        "new": {"command": ERA_SERVER, "args": ["--era", "2026"]},
        "newweb": {"url": new_url},
        "mem": {"command": MEMORY}
    }});
    let config = HostConfig::from_json(&config.to_string()).unwrap();
    let (host, mut events) =
        tokio::time::timeout(GUARD, Host::start(config)).await.expect("hang").unwrap();
    let phases: Vec<(String, Phase)> =
        host.servers().into_iter().map(|(id, _, phase)| (id, phase)).collect();
    let up = |id: &str| (id.to_owned(), Phase::Connected);
    assert_eq!(phases, [up("ev"), up("evweb"), up("mem"), up("new"), up("newweb")]);
    for plain in ["ev", "evweb", "new", "newweb"] {
        assert_eq!(host.mcpl(plain).unwrap().status(), None, "{plain} is a server without MCPL");
    }
    assert!(host.mcpl("mem").unwrap().is_ready());
    let version = |id: &str| host.server(id).map(|details| details.protocol_version);
    assert_eq!(version("new"), Some(ProtocolVersion::V2026_07_28));
    assert_eq!(version("newweb"), Some(ProtocolVersion::V2026_07_28));

    // Every server's calls are routed to it, side by side.
    for id in ["ev", "evweb"] {
        let name = format!("mcpl--{id}--echo");
        let call = host.call_tool(&name, json!({"message": id})).await.unwrap();
        assert_eq!((call.server.as_str(), text(&call)), (id, format!("Echo: {id}")));
    }
    for id in ["new", "newweb"] {
        let call = host.call_tool(&format!("mcpl--{id}--era"), json!({})).await.unwrap();
        assert_eq!((call.server.as_str(), text(&call).as_str()), (id, "2026-07-28"));
    }
    let call =
        host.call_tool("mcpl--mem--remember", json!({"text": "the cat is Tom"})).await.unwrap();
    assert!(matches!(call.state, RecordOutcome::Recorded { .. }), "{:?}", call.state);

    // Refreshes in each era: the 2026 server's over `subscriptions/listen`.
    host.call_tool("mcpl--newweb--grow", json!({})).await.unwrap();
    next_event(&mut events, "newweb's new tool", added("newweb", "mcpl--newweb--grown-1")).await;
    let tools = names(&host);
    assert!(!tools.contains(&"mcpl--new--grown-1".to_owned()), "only newweb grew: {tools:?}");
    host.shutdown().await;
}
