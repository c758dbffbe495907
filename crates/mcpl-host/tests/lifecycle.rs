#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Connect, reconnect, restart, disconnect and shutdown over real WebSocket connections, with a
//! gate in front of the server that refuses, stalls or passes handshakes.

mod support;

use std::time::Duration;

use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_host::config::{ConfigError, HostConfig};
use mcpl_host::prefix::{MeetingRule, PrefixConflict};
use mcpl_host::registry::{Phase, RegistryError};
use mcpl_host::{Host, HostError, HostEvent};
use mcpl_server::mcpl::{Mcpl, McplTool};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use support::{Gate, Mode, drain, next_event, notes, serve, server, text, within};

fn conflict(err: HostError) -> PrefixConflict {
    match err {
        HostError::Registry(RegistryError::PrefixConflict(c)) => c,
        other => panic!("expected a prefix conflict, got {other:?}"),
    }
}

fn names(host: &Host) -> Vec<String> {
    host.tools().into_iter().map(|t| t.name).collect()
}

fn connected(event: &HostEvent, id: &str) -> bool {
    matches!(event, HostEvent::Connected { server } if server == id)
}

/// An MCPL server declaring a host-managed feature set (so a connect registers a tree).
fn stateful() -> Server {
    let mut set = FeatureSet::new("notes", ["tools"]);
    set.extra.insert("hostState".into(), json!(true));
    Server::builder("stateful", "1.0.0")
        .mcpl(Mcpl::new(Manifest::new().with_feature_set("notes.store", set)))
        .tool(Tool::new("add", ToolSchema::object()).in_feature_set("notes.store"), |_, _| async {
            Ok(ToolOutput::text("added"))
        })
        .build()
}

#[tokio::test]
async fn meeting_prefixes_are_refused_at_every_entry_point_with_the_same_error() {
    let gate = Gate::new(serve(notes()).await, Mode::Pass).await;
    let url = gate.url.clone();
    let a = server("a", &url, json!({"toolPrefix": "a"}));
    let dash = server("b", &url, json!({"toolPrefix": "a-"}));
    let nested = server("c", &url, json!({"toolPrefix": "a--b"}));
    let file = |servers: Value| json!({"servers": servers}).to_string();

    // Config parse.
    let parsed = |other: &Value| {
        let both = file(json!([{"id": "a", "url": url, "toolPrefix": "a"}, other]));
        match HostConfig::from_json(&both).unwrap_err() {
            ConfigError::PrefixConflict(c) => c,
            other => panic!("expected a prefix conflict, got {other:?}"),
        }
    };
    let dash_conflict = parsed(&json!({"id": "b", "url": url, "toolPrefix": "a-"}));
    let PrefixConflict { server_a, prefix_a, server_b, prefix_b, rule, .. } = &dash_conflict;
    assert_eq!((server_a.as_str(), prefix_a.as_str()), ("b", "a-"));
    assert_eq!((server_b.as_str(), prefix_b.as_str()), ("a", "a"));
    assert_eq!(*rule, MeetingRule::FollowedByDash);
    let nested_conflict = parsed(&json!({"id": "c", "url": url, "toolPrefix": "a--b"}));
    assert_eq!(nested_conflict.rule, MeetingRule::FollowedBySeparator);

    // `Host::start` and the builder with a configuration assembled in code (in any order).
    for (other, expected) in [(&dash, &dash_conflict), (&nested, &nested_conflict)] {
        let config = HostConfig::default().with_servers(vec![other.clone(), a.clone()]);
        let err = Host::start(config.clone()).await.unwrap_err();
        assert_eq!(err.kind(), "prefix_conflict");
        assert_eq!(&conflict(err), expected);
        let err = Host::builder(config).start().await.unwrap_err();
        assert_eq!(&conflict(err), expected);
    }
    // Two parsed configurations merged, as the `Host::start` example does.
    let mut merged =
        HostConfig::from_json(&file(json!([{"id": "a", "url": url, "toolPrefix": "a"}]))).unwrap();
    merged.servers.extend(
        HostConfig::from_json(&file(json!([{"id": "b", "url": url, "toolPrefix": "a-"}])))
            .unwrap()
            .servers,
    );
    assert_eq!(conflict(Host::start(merged).await.unwrap_err()), dash_conflict);
    // Merged configurations with one id twice are refused too.
    let mut twice = HostConfig::default().with_servers(vec![a.clone()]);
    twice.servers.push(server("a", &url, json!({"toolPrefix": "zzz"})));
    let err = Host::start(twice).await.unwrap_err();
    assert!(
        matches!(err, HostError::Registry(RegistryError::Config(ConfigError::DuplicateId(ref id))) if id == "a")
    );
    assert_eq!(gate.stats().accepted, 0, "nothing was started for a refused configuration");

    // Runtime connect.
    let config = HostConfig::default().with_servers(vec![a.clone()]);
    let (host, _events) = Host::start(config).await.unwrap();
    assert_eq!(host.servers(), [("a".into(), "a".into(), Phase::Connected)]);
    assert_eq!(conflict(host.connect(dash.clone()).await.unwrap_err()), dash_conflict);
    assert_eq!(conflict(host.connect(nested.clone()).await.unwrap_err()), nested_conflict);
    // Restart into a meeting prefix.
    host.connect(server("c", &url, json!({"toolPrefix": "zed"}))).await.unwrap();
    let err = host.restart("c", Some(nested.clone())).await.unwrap_err();
    assert_eq!(conflict(err), nested_conflict);
    assert_eq!(
        host.servers(),
        [("a".into(), "a".into(), Phase::Connected), ("c".into(), "zed".into(), Phase::Connected)]
    );
    assert_eq!(names(&host), ["a--add", "zed--add"]);
    host.shutdown().await;
}

#[tokio::test]
async fn reserved_names_are_refused_like_meeting_prefixes() {
    let gate = Gate::new(serve(notes()).await, Mode::Pass).await;
    let taken = server("n", &gate.url, json!({"toolPrefix": "notes"}));
    let config = HostConfig::default().with_servers(vec![taken.clone()]);
    let err = Host::builder(config).reserved_prefixes(["notes"]).start().await.unwrap_err();
    assert_eq!(err.kind(), "reserved_prefix");
    let HostError::Registry(RegistryError::ReservedPrefix(reserved)) = err else { panic!() };
    assert_eq!((reserved.server.as_str(), reserved.prefix.as_str()), ("n", "notes"));
    assert_eq!(gate.stats().accepted, 0);

    // Compared by equality only: `notes-v2` is fine.
    let fine = server("n", &gate.url, json!({"toolPrefix": "notes-v2"}));
    let config = HostConfig::default().with_servers(vec![fine]);
    let (host, _events) = Host::builder(config).reserved_prefixes(["notes"]).start().await.unwrap();
    assert_eq!(names(&host), ["notes-v2--add"]);
    let err = host.connect(server("m", &gate.url, json!({"toolPrefix": "notes"}))).await;
    assert_eq!(err.unwrap_err().kind(), "reserved_prefix");
    let err = host.restart("n", Some(taken)).await.unwrap_err();
    assert_eq!(err.kind(), "reserved_prefix");
    assert_eq!(host.servers(), [("n".into(), "notes-v2".into(), Phase::Connected)]);
    let call = host.call_tool("notes-v2--add", json!({"item": "milk"})).await.unwrap();
    assert_eq!(text(&call.result), "added milk");
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_down_at_start_is_routed_once_a_reconnect_connects_it() {
    let gate = Gate::new(serve(notes()).await, Mode::Refuse).await;
    let notes = server("notes", &gate.url, json!({"reconnectIntervalMs": 20}));
    let config = HostConfig::default().with_servers(vec![notes]);
    let (host, mut events) = Host::start(config).await.unwrap();
    assert_eq!(host.servers()[0].2, Phase::Down);
    gate.set(Mode::Pass);
    next_event(&mut events, "the reconnect", |e| connected(e, "notes")).await;
    let call = host.call_tool("mcpl--notes--add", json!({"item": "milk"})).await.unwrap();
    assert_eq!(text(&call.result), "added milk");
    assert_eq!(host.servers(), [("notes".into(), "mcpl--notes".into(), Phase::Connected)]);
    host.shutdown().await;
}

#[tokio::test]
async fn a_disconnect_during_the_handshake_wins() {
    let gate = Gate::new(serve(stateful()).await, Mode::Hold).await;
    let (host, mut events) = Host::start(HostConfig::default()).await.unwrap();
    let config = server("s", &gate.url, json!({"reconnectIntervalMs": 20}));
    let connecting = tokio::spawn({
        let (host, config) = (host.clone(), config.clone());
        async move { host.connect(config).await }
    });
    gate.wait("the stalled handshake", |s| s.held == 1).await;
    host.disconnect("s").await.unwrap();
    let err = within("the cancelled connect", connecting).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), "cancelled");
    // The host closed the stalled connection; the server going on now changes nothing.
    gate.wait("the stalled connection closed", |s| s.abandoned == 1).await;
    gate.set(Mode::Pass);
    assert!(host.servers().is_empty());
    assert!(host.tools().is_empty());
    assert!(host.checkpoints().keys().is_empty(), "no checkpoint tree came back");
    assert_eq!(host.call_tool("mcpl--s--add", json!({})).await.unwrap_err().kind(), "unknown_tool");
    assert!(!drain(&mut events).iter().any(|e| connected(e, "s")));
    // The id and its prefix are free again.
    host.connect(config).await.unwrap();
    assert_eq!(names(&host), ["mcpl--s--add"]);
    assert_eq!(host.checkpoints().keys().len(), 1);
    host.shutdown().await;
}

#[tokio::test]
async fn a_disconnect_stops_a_background_reconnect_in_its_handshake() {
    let gate = Gate::new(serve(notes()).await, Mode::Refuse).await;
    let config = server("notes", &gate.url, json!({"reconnectIntervalMs": 20}));
    let (host, mut events) =
        Host::start(HostConfig::default().with_servers(vec![config])).await.unwrap();
    gate.set(Mode::Hold);
    gate.wait("a reconnect's stalled handshake", |s| s.held == 1).await;
    host.disconnect("notes").await.unwrap();
    gate.wait("the stalled connection closed", |s| s.abandoned == 1).await;
    gate.set(Mode::Pass);
    // Ten reconnect intervals: nothing more is attempted.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(gate.stats().held, 1);
    assert_eq!(gate.stats().passed, 0);
    assert!(host.servers().is_empty() && host.tools().is_empty());
    assert!(!drain(&mut events).iter().any(|e| connected(e, "notes")));
}

#[tokio::test]
async fn a_failed_restart_restores_the_previous_prefix_and_routing() {
    let upstream = serve(notes()).await;
    let gate = Gate::new(upstream, Mode::Pass).await;
    let down = Gate::new(upstream, Mode::Refuse).await;
    let alpha = server("a", &gate.url, json!({"toolPrefix": "alpha", "reconnectIntervalMs": 20}));
    let (host, mut events) =
        Host::start(HostConfig::default().with_servers(vec![alpha])).await.unwrap();
    assert_eq!(names(&host), ["alpha--add"]);
    drain(&mut events);

    let beta = server("a", &down.url, json!({"toolPrefix": "beta", "reconnect": false}));
    let err = host.restart("a", Some(beta)).await.unwrap_err();
    assert_eq!(err.kind(), "connect");
    assert_eq!(host.servers()[0].1, "alpha", "the previous prefix is back");
    // Another server cannot take the old prefix; the new one is free.
    let intruder = server("b", &gate.url, json!({"toolPrefix": "alpha"}));
    assert_eq!(host.connect(intruder).await.unwrap_err().kind(), "prefix_conflict");
    // The previous configuration reconnects by itself (its reconnect is on).
    next_event(&mut events, "the restored server's reconnect", |e| connected(e, "a")).await;
    let call = host.call_tool("alpha--add", json!({"item": "tea"})).await.unwrap();
    assert_eq!((call.server.as_str(), text(&call.result).as_str()), ("a", "added tea"));
    host.connect(server("b", &gate.url, json!({"toolPrefix": "beta"}))).await.unwrap();
    assert_eq!(names(&host), ["alpha--add", "beta--add"], "no name is offered twice");
    assert_eq!(host.call_tool("beta--add", json!({})).await.unwrap().server, "b");

    // A restart that works moves the routing to the new prefix at once.
    let gamma = server("a", &gate.url, json!({"toolPrefix": "gamma"}));
    host.restart("a", Some(gamma)).await.unwrap();
    assert_eq!(names(&host), ["gamma--add", "beta--add"]);
    assert_eq!(host.call_tool("alpha--add", json!({})).await.unwrap_err().kind(), "unknown_tool");
    assert_eq!(host.call_tool("gamma--add", json!({})).await.unwrap().server, "a");
    host.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_reconnects_and_cancels_connects() {
    let gate = Gate::new(serve(notes()).await, Mode::Refuse).await;
    let config = server("notes", &gate.url, json!({"reconnectIntervalMs": 20}));
    let (host, mut events) =
        Host::start(HostConfig::default().with_servers(vec![config])).await.unwrap();
    // A background reconnect is in its handshake when the host shuts down.
    gate.set(Mode::Hold);
    gate.wait("a reconnect's stalled handshake", |s| s.held == 1).await;
    let held = Gate::new(serve(notes()).await, Mode::Hold).await;
    let connecting = tokio::spawn({
        let host = host.clone();
        let config = server("other", &held.url, json!({}));
        async move { host.connect(config).await }
    });
    held.wait("a runtime connect's stalled handshake", |s| s.held == 1).await;
    within("shutdown", host.shutdown()).await;
    let err = within("the cancelled connect", connecting).await.unwrap().unwrap_err();
    assert_eq!(err.kind(), "cancelled");
    gate.wait("the reconnect's connection closed", |s| s.abandoned == 1).await;
    held.wait("the connect's connection closed", |s| s.abandoned == 1).await;
    gate.set(Mode::Pass);
    held.set(Mode::Pass);
    // Ten reconnect intervals: the server down at shutdown stays down.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!((gate.stats().held, gate.stats().passed), (1, 0));
    assert_eq!(host.servers(), [("notes".into(), "mcpl--notes".into(), Phase::Down)]);
    assert!(!drain(&mut events).iter().any(|e| matches!(e, HostEvent::Connected { .. })));
    let later = host.connect(server("late", &held.url, json!({}))).await.unwrap_err();
    assert_eq!(later.kind(), "shut_down");
}

/// A scripted MCPL server (a host-managed set, so a commit registers a tree) whose first
/// connection's `tools/list` waits for `release`; later connections list `two` at once. Each
/// `tools/list` that arrives and each connection that closes is signalled.
struct Stalling {
    url: String,
    listed: tokio::sync::mpsc::UnboundedReceiver<usize>,
    closed: tokio::sync::mpsc::UnboundedReceiver<usize>,
    release: std::sync::Arc<tokio::sync::Notify>,
}

async fn stalling() -> Stalling {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let manifest = json!({"version": "0.5", "featureSets": {
        "notes.store": {"description": "notes", "uses": ["tools"], "hostState": true}}});
    let (listed_tx, listed) = tokio::sync::mpsc::unbounded_channel();
    let (closed_tx, closed) = tokio::sync::mpsc::unbounded_channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let connections = Arc::new(AtomicUsize::new(0));
    let gate = release.clone();
    let url = support::scripted(move |engine| {
        let n = connections.fetch_add(1, Ordering::SeqCst) + 1;
        let manifest = manifest.clone();
        engine.on_request("initialize", move |_, _| {
            let answer = support::initialize_result(Some(manifest.clone()));
            async move { Ok(answer) }
        });
        engine.on_request("featureSets/update", |_, _| async { Ok(json!({"accepted": true})) });
        let (listed_tx, gate) = (listed_tx.clone(), gate.clone());
        engine.on_request("tools/list", move |_, _| {
            let _ = listed_tx.send(n);
            let gate = gate.clone();
            async move {
                if n == 1 {
                    gate.notified().await;
                }
                let name = if n == 1 { "one" } else { "two" };
                Ok(json!({"tools": [{"name": name, "inputSchema": {"type": "object"}}]}))
            }
        });
        let closed_tx = closed_tx.clone();
        engine.on_close(move |_| {
            let _ = closed_tx.send(n);
        });
    })
    .await;
    Stalling { url, listed, closed, release }
}

#[tokio::test]
async fn a_disconnect_right_after_the_handshake_wins() {
    let mut s = stalling().await;
    let (host, mut events) = Host::start(HostConfig::default()).await.unwrap();
    let connecting = tokio::spawn({
        let (host, config) = (host.clone(), server("s", &s.url, json!({"reconnect": false})));
        async move { host.connect(config).await }
    });
    // The handshake is over and committed: the tools are being listed.
    assert_eq!(within("the first listing", s.listed.recv()).await, Some(1));
    assert_eq!(host.servers(), [("s".into(), "mcpl--s".into(), Phase::Connected)]);
    assert_eq!(host.checkpoints().keys().len(), 1);
    drain(&mut events);

    host.disconnect("s").await.unwrap();
    // The connect that was listing ends (it had connected), and leaves nothing behind.
    within("the connect", connecting).await.unwrap().unwrap();
    assert_eq!(within("the close", s.closed.recv()).await, Some(1));
    s.release.notify_waiters();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(host.servers().is_empty());
    assert!(host.tools().is_empty());
    assert!(host.checkpoints().keys().is_empty(), "no checkpoint tree came back");
    let after = drain(&mut events);
    assert!(
        !after.iter().any(|e| matches!(e, HostEvent::Connected { .. } | HostEvent::Alert(_))
            || matches!(e, HostEvent::ToolsChanged { added, .. } if !added.is_empty())),
        "{after:?}"
    );
    assert_eq!(host.call_tool("mcpl--s--one", json!({})).await.unwrap_err().kind(), "unknown_tool");
    host.shutdown().await;
}

#[tokio::test]
async fn a_restart_right_after_the_handshake_wins() {
    let mut s = stalling().await;
    let (host, mut events) = Host::start(HostConfig::default()).await.unwrap();
    let connecting = tokio::spawn({
        let (host, config) = (host.clone(), server("s", &s.url, json!({"reconnect": false})));
        async move { host.connect(config).await }
    });
    assert_eq!(within("the first listing", s.listed.recv()).await, Some(1));
    // Restarted while the first connection still lists its tools: the old connection is
    // closed, the new one lists at once.
    within("the restart", host.restart("s", None)).await.unwrap();
    assert_eq!(within("the old connection closed", s.closed.recv()).await, Some(1));
    within("the first connect", connecting).await.unwrap().unwrap();
    s.release.notify_waiters();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(names(&host), ["mcpl--s--two"], "the old connection's listing never lands");
    assert_eq!(host.servers(), [("s".into(), "mcpl--s".into(), Phase::Connected)]);
    assert_eq!(host.checkpoints().keys().len(), 1, "the tree is kept across the restart");
    let events = drain(&mut events);
    assert!(!events.iter().any(|e| matches!(e, HostEvent::Alert(_))), "{events:?}");
    host.shutdown().await;
}

#[tokio::test]
async fn tools_are_typed_and_calls_take_any_serializable_arguments() {
    #[derive(serde::Serialize)]
    struct Add {
        item: &'static str,
    }
    let gate = Gate::new(serve(notes()).await, Mode::Pass).await;
    let config = HostConfig::default().with_servers(vec![server("notes", &gate.url, json!({}))]);
    let (host, _events) = Host::start(config).await.unwrap();
    let tools: Vec<Tool> = host.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "mcpl--notes--add", "the prefix rule names the listed tool");
    assert_eq!(tools[0].input_schema.schema_type, Some(json!("object")));
    let call = host.call_tool(&tools[0].name, Add { item: "tea" }).await.unwrap();
    assert_eq!(text(&call.result), "added tea");
    // Arguments that are not an object are refused before anything is sent.
    let err = host.call_tool("mcpl--notes--add", json!(["tea"])).await.unwrap_err();
    assert_eq!(err.kind(), "invalid_arguments");
    assert!(std::error::Error::source(&err).is_some());
    within("the shutdown", host.shutdown()).await;
}
