#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! A restart closes the old connection before the new one is up. When the new one fails, the
//! host puts the server back exactly as it was: the memory server as a child process, connected
//! under its previous configuration and prefix, its tools offered (not stale), calls routed, its
//! checkpoint trees untouched, and no scheduled reconnect needed (its `reconnect` is off).

use std::time::Duration;

use mcpl_host::checkpoint::RecordOutcome;
use mcpl_host::config::{HostConfig, ServerConfig};
use mcpl_host::host::state_view;
use mcpl_host::registry::Phase;
use mcpl_host::{Host, HostEvent};
use serde_json::{Value, json};

const GUARD: Duration = Duration::from_secs(60);
const MEMORY: &str = env!("CARGO_BIN_EXE_mcpl-memory-server");

fn server(member: Value) -> ServerConfig {
    let text = json!({"servers": {"mem": member}}).to_string();
    HostConfig::from_json(&text).unwrap().servers.remove(0)
}

fn names(host: &Host) -> Vec<String> {
    host.tools().into_iter().map(|t| t.name).collect()
}

#[tokio::test]
async fn a_failed_restart_puts_the_server_back_connected_as_it_was() {
    let config = HostConfig::default()
        .with_servers(vec![server(json!({"command": MEMORY, "reconnect": false}))]);
    let (host, mut events) =
        tokio::time::timeout(GUARD, Host::start(config)).await.unwrap().unwrap();
    let call =
        host.call_tool("mcpl--mem--remember", json!({"text": "the cat is called Tom"})).await;
    assert!(matches!(call.unwrap().state, RecordOutcome::Recorded { .. }));
    let tools = names(&host);
    let state = state_view(&host, "mem");
    assert!(!state.is_empty(), "a checkpoint tree was recorded");
    while events.try_recv().is_ok() {}

    // The new configuration's process exits at once (an unknown flag): its handshake fails.
    let broken = server(json!({"command": MEMORY, "args": ["--no-such-flag"], "toolPrefix": "m2",
        "reconnect": false}));
    let err = tokio::time::timeout(GUARD, host.restart("mem", Some(broken))).await.unwrap();
    assert_eq!(err.unwrap_err().kind(), "connect");

    // Back as it was, at once: connected, same prefix and tools, same trees.
    assert_eq!(host.servers(), [("mem".into(), "mcpl--mem".into(), Phase::Connected)]);
    assert_eq!(names(&host), tools);
    assert_eq!(state_view(&host, "mem"), state, "the checkpoint trees are untouched");
    let call = host.call_tool("mcpl--mem--recall", json!({})).await.unwrap();
    assert_eq!((call.server.as_str(), call.result.is_error), ("mem", None));
    // The memory server keeps no state of its own: what it recalls is the host's tree.
    let recalled = call.result.text().unwrap_or_default();
    assert!(recalled.contains("the cat is called Tom"), "{recalled}");
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    assert!(
        seen.iter().any(|e| matches!(e, HostEvent::Connected { server } if server == "mem")),
        "{seen:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_restart_whose_previous_configuration_fails_too_leaves_it_down_then_reconnecting() {
    // The previous configuration starts the memory server only while `mark` does not exist.
    let mark = std::env::temp_dir().join(format!("mcpl-host-restart-{}", std::process::id()));
    let _ = std::fs::remove_file(&mark);
    let script = format!("test -e '{}' && exit 1; exec '{MEMORY}'", mark.display());
    let member = json!({"command": "/bin/sh", "args": ["-c", script], "reconnectIntervalMs": 50});
    let config = HostConfig::default().with_servers(vec![server(member)]);
    let (host, mut events) =
        tokio::time::timeout(GUARD, Host::start(config)).await.unwrap().unwrap();
    let tools = names(&host);
    std::fs::write(&mark, b"").unwrap();

    let broken = server(json!({"command": MEMORY, "args": ["--no-such-flag"], "toolPrefix": "m2",
        "reconnect": false}));
    let err = tokio::time::timeout(GUARD, host.restart("mem", Some(broken))).await.unwrap();
    assert_eq!(err.unwrap_err().kind(), "connect");
    // Its previous configuration is back, but could not connect: down, tools still offered.
    let (_, prefix, phase) = host.servers().remove(0);
    assert_eq!(prefix, "mcpl--mem");
    assert_ne!(phase, Phase::Connected);
    assert_eq!(names(&host), tools);
    while events.try_recv().is_ok() {}

    // Its reconnects (on in the previous configuration) bring it back once it can start.
    std::fs::remove_file(&mark).unwrap();
    let back = tokio::time::timeout(GUARD, async {
        loop {
            match events.recv().await {
                Some(HostEvent::Connected { server }) if server == "mem" => return,
                Some(_) => {}
                None => panic!("the host ended"),
            }
        }
    });
    back.await.expect("the previous configuration reconnected");
    assert_eq!(host.servers(), [("mem".into(), "mcpl--mem".into(), Phase::Connected)]);
    let call = host.call_tool("mcpl--mem--recall", json!({})).await.unwrap();
    assert_eq!(call.server, "mem");
    host.shutdown().await;
}
