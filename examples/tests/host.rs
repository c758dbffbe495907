#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The `mcpl-host` binary against real child-process MCPL servers (`mcpl-state-fixture`):
//! prefixes, duplicate listings, attribution across several stateful feature sets, patches
//! with move and copy, rollback, server restart and a host restart on the same store.

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::{HostProc, write_config};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcpl-state-fixture");

fn dir(name: &str) -> PathBuf {
    support::scratch_dir("mcpl-host-test", name)
}

fn fixture(extra: Value) -> Value {
    let mut s = json!({"command": FIXTURE});
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    s
}

#[tokio::test]
async fn meeting_prefixes_are_refused_before_anything_starts() {
    let d = dir("prefixes");
    let config = write_config(
        &d,
        json!({"a": fixture(json!({"toolPrefix": "foo"})), "b": fixture(json!({"toolPrefix": "foo--bar"}))}),
    );
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcpl-host"))
        .arg("--config")
        .arg(&config)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for part in ["\"a\"", "\"b\"", "\"foo\"", "\"foo--bar\"", "followed by '--'"] {
        assert!(err.contains(part), "{err} lacks {part}");
    }
    assert!(!d.join("state").exists(), "nothing was written");
    // `foo` beside `foo-bar` and `foobar` is fine.
    let config = write_config(
        &d,
        json!({"a": fixture(json!({"toolPrefix": "foo"})), "b": fixture(json!({"toolPrefix": "foo-bar"})),
               "c": fixture(json!({"toolPrefix": "foobar"}))}),
    );
    let mut host = HostProc::start(&config).await;
    let tools = host.ask(json!({"op": "tools"})).await.unwrap();
    let names: Vec<&str> =
        tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for n in ["foo--whoami", "foo-bar--whoami", "foobar--whoami"] {
        assert!(names.contains(&n), "{names:?}");
    }
    // Runtime connects are checked the same way, against connected servers.
    let e = host
        .ask(json!({"op": "connect", "server": fixture(json!({"id": "d", "toolPrefix": "foo-"}))}))
        .await
        .unwrap_err();
    assert_eq!(e["kind"], "prefix_conflict");
    let e = host
        .ask(json!({"op": "connect", "server": fixture(json!({"id": "a"}))}))
        .await
        .unwrap_err();
    assert_eq!(e["kind"], "busy");
    host.quit().await;
}

#[tokio::test]
async fn attribution_patches_and_duplicate_listings() {
    let d = dir("attribution");
    let config = write_config(&d, json!({"notes": fixture(json!({}))}));
    let mut host = HostProc::start(&config).await;
    // `dup` is listed twice: offered once, with its first listing's feature set; an alert.
    let tools = host.ask(json!({"op": "tools"})).await.unwrap();
    let dups = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "mcpl--notes--dup")
        .count();
    assert_eq!(dups, 1);
    let log = std::fs::read_to_string(d.join("failures.log")).unwrap();
    assert!(log.contains("mcpl-duplicate-tools") && log.contains("dup"), "{log}");
    let r = host.call("mcpl--notes--dup", json!({})).await;
    assert_eq!(
        r["state"],
        json!({"outcome": "recorded", "featureSet": "ledger.audit", "how": "new"})
    );

    // Patches with add, copy and move, each against its parent's state.
    host.call("mcpl--notes--note_add", json!({"text": "milk"})).await;
    host.call("mcpl--notes--note_add", json!({"text": "eggs"})).await;
    host.call("mcpl--notes--note_pin", json!({"index": 1})).await;
    host.call("mcpl--notes--note_rename", json!({"from": 0, "to": "first"})).await;
    let s = host.state("notes").await;
    let expected = json!({"notes": ["eggs"], "pinned": ["eggs"], "named": {"first": "milk"}});
    assert_eq!(s["notes.host"]["state"], expected);
    let current = s["notes.host"]["current"].clone();
    // A failing patch changes nothing and the current checkpoint does not move.
    let r = host.call("mcpl--notes--note_break", json!({})).await;
    assert_eq!(r["state"]["outcome"], "rejected");
    let s = host.state("notes").await;
    assert_eq!(
        (s["notes.host"]["state"].clone(), s["notes.host"]["current"].clone()),
        (expected, current)
    );

    // Untagged with two host-managed sets: dropped, never recorded elsewhere.
    let r = host.call("mcpl--notes--peek", json!({})).await;
    assert_eq!(r["state"], json!({"outcome": "dropped", "reason": "ambiguous"}));
    // An explicit featureSet on the result wins.
    let r = host.call("mcpl--notes--mirror_set", json!({"value": 42})).await;
    assert_eq!(r["state"]["featureSet"], "notes.mirror");
    let s = host.state("notes").await;
    assert_eq!(s["notes.mirror"]["state"], json!({"value": 42}));
    assert_eq!(s["notes.host"]["checkpoints"].as_array().unwrap().len(), 4);
    assert!(s["ledger.server"]["checkpoints"].as_array().unwrap().is_empty());
    host.quit().await;
}

#[tokio::test]
async fn rollback_moves_the_host_only_after_the_server_accepts() {
    let d = dir("rollback");
    let config = write_config(&d, json!({"books": fixture(json!({}))}));
    let mut host = HostProc::start(&config).await;
    host.call("mcpl--books--ledger_post", json!({"amount": 5})).await;
    let first = host.state("books").await["ledger.server"]["current"].as_str().unwrap().to_owned();
    host.call("mcpl--books--ledger_post", json!({"amount": 7})).await;
    let bal = host.call("mcpl--books--ledger_balance", json!({})).await;
    assert_eq!(bal["result"]["structuredContent"]["balance"], 12);
    let s = host.ask(json!({"op": "rollback", "server": "books", "featureSet": "ledger.server", "checkpoint": first})).await.unwrap();
    assert_eq!(s["ledger.server"]["current"], json!(first));
    // The next call carries the rolled-back checkpoint: the server computes from there, and a
    // new checkpoint branches off it.
    let bal = host.call("mcpl--books--ledger_balance", json!({})).await;
    assert_eq!(bal["result"]["structuredContent"]["balance"], 5);
    host.call("mcpl--books--ledger_post", json!({"amount": 1})).await;
    let s = host.state("books").await;
    let nodes = s["ledger.server"]["checkpoints"].as_array().unwrap();
    let root = nodes.iter().find(|n| n["id"] == json!(first)).unwrap();
    assert_eq!(root["children"].as_array().unwrap().len(), 2, "a sibling branch under the first");
    // Unknown checkpoints are refused locally; a server refusal leaves the pointer alone.
    let e = host.ask(json!({"op": "rollback", "server": "books", "featureSet": "ledger.server", "checkpoint": "nope"})).await.unwrap_err();
    assert_eq!(e["kind"], "rollback");
    host.call("mcpl--books--dup", json!({})).await;
    let audit = host.state("books").await["ledger.audit"]["current"].clone();
    host.call("mcpl--books--dup", json!({})).await;
    let now = host.state("books").await["ledger.audit"]["current"].clone();
    let e = host.ask(json!({"op": "rollback", "server": "books", "featureSet": "ledger.audit", "checkpoint": audit})).await.unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("cannot be undone"), "{e}");
    assert_eq!(host.state("books").await["ledger.audit"]["current"], now);
    host.quit().await;
}

#[tokio::test]
async fn state_survives_a_server_restart_and_a_host_restart_on_the_same_store() {
    let d = dir("restart");
    let config = write_config(&d, json!({"notes": fixture(json!({}))}));
    let mut host = HostProc::start(&config).await;
    host.call("mcpl--notes--note_add", json!({"text": "milk"})).await;
    host.call("mcpl--notes--note_add", json!({"text": "eggs"})).await;
    let before_tag =
        host.call("mcpl--notes--whoami", json!({})).await["result"]["structuredContent"]["tag"]
            .clone();
    // A server restart is a new process; the trees stay.
    host.ask(json!({"op": "restart", "server": "notes"})).await.unwrap();
    let after_tag =
        host.call("mcpl--notes--whoami", json!({})).await["result"]["structuredContent"]["tag"]
            .clone();
    assert_ne!(before_tag, after_tag, "a new server process");
    let s = host.state("notes").await;
    assert_eq!(s["notes.host"]["state"]["notes"], json!(["milk", "eggs"]));
    let before = s;
    host.quit().await;

    // A new host on the same store: trees and state exactly as last committed, and the next
    // patch applies to the restored state.
    let mut host = HostProc::start(&config).await;
    assert_eq!(host.state("notes").await, before);
    host.call("mcpl--notes--note_add", json!({"text": "tea"})).await;
    let s = host.state("notes").await;
    assert_eq!(s["notes.host"]["state"]["notes"], json!(["milk", "eggs", "tea"]));
    // An explicit disconnect deletes the trees.
    host.ask(json!({"op": "disconnect", "server": "notes"})).await.unwrap();
    assert_eq!(host.state("notes").await, json!({}));
    host.quit().await;
    let host = HostProc::start(&write_config(&d, json!({}))).await;
    host.quit().await;
    let files = std::fs::read_dir(d.join("state")).unwrap().count();
    assert_eq!(files, 0, "the removed server's trees are gone from the store");
}

#[tokio::test]
async fn a_crashed_server_is_respawned_and_keeps_its_state() {
    let d = dir("reconnect");
    let config = write_config(&d, json!({"notes": fixture(json!({"reconnectIntervalMs": 100}))}));
    let mut host = HostProc::start(&config).await;
    host.call("mcpl--notes--note_add", json!({"text": "milk"})).await;
    let before =
        host.call("mcpl--notes--whoami", json!({})).await["result"]["structuredContent"]["tag"]
            .clone();
    host.call("mcpl--notes--exit", json!({})).await;
    host.wait_event("disconnected").await;
    host.wait_event("connected").await;
    let after =
        host.call("mcpl--notes--whoami", json!({})).await["result"]["structuredContent"]["tag"]
            .clone();
    assert_ne!(before, after, "a fresh child process");
    // The transport close kept the tree; the next patch applies to it.
    host.call("mcpl--notes--note_add", json!({"text": "eggs"})).await;
    let s = host.state("notes").await;
    assert_eq!(s["notes.host"]["state"]["notes"], json!(["milk", "eggs"]));
    host.quit().await;
}

#[tokio::test]
async fn hooks_fan_out_to_the_servers_that_have_them() {
    let d = dir("hooks");
    let memory = env!("CARGO_BIN_EXE_mcpl-memory-server");
    // Hooks are opt-in per server: `plain` (the same server, default grant) gets no call.
    let hooks =
        json!(["contextHooks.beforeInference.observe", "contextHooks.beforeInference.inject.*"]);
    let config = write_config(
        &d,
        json!({"memory": {"command": memory, "grant": {"allow": hooks}},
               "plain": {"command": memory}, "notes": fixture(json!({}))}),
    );
    let mut host = HostProc::start(&config).await;
    host.call("mcpl--memory--remember", json!({"text": "the cat is called Tom"})).await;
    host.call("mcpl--plain--remember", json!({"text": "the cat is called Tom"})).await;
    let params = json!({"inferenceId": "i1", "conversationId": "c1", "turnIndex": 0,
        "userMessage": "what is the cat called?",
        "model": {"id": "m", "vendor": "v", "contextWindow": 8192, "capabilities": []}});
    let out = host.ask(json!({"op": "beforeInference", "params": params})).await.unwrap();
    let after = out["afterUser"].as_array().unwrap();
    assert_eq!(after.len(), 1, "{out}");
    assert_eq!(after[0]["server"], "memory");
    assert!(after[0]["injection"].to_string().contains("Tom"), "{out}");
    assert!(out["system"].as_array().unwrap().is_empty(), "inject.system is denied by default");
    assert!(out["failed"].as_array().unwrap().is_empty(), "{out}");
    host.quit().await;
}

#[tokio::test]
async fn the_memory_server_runs_clean_in_normal_use() {
    let d = dir("clean");
    let memory = env!("CARGO_BIN_EXE_mcpl-memory-server");
    let config = write_config(&d, json!({"memory": {"command": memory}}));
    let log_path = d.join("host.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut host = HostProc::start_with(&config, log, &[]).await;
    host.call("mcpl--memory--remember", json!({"text": "milk"})).await;
    host.call("mcpl--memory--remember", json!({"text": "eggs"})).await;
    let recalled = host.call("mcpl--memory--recall", json!({})).await;
    assert!(recalled.to_string().contains("milk"), "{recalled}");
    host.call("mcpl--memory--forget", json!({"text": "milk"})).await;
    let state = host.state("memory").await;
    assert_eq!(state["memory.store"]["mode"], "host-managed", "{state}");
    assert_eq!(state["memory.store"]["state"], json!({"memories": ["eggs"]}), "{state}");
    host.quit().await;
    // Normal use logs no warning or error (the log is the host's and, through it, the server's).
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains("WARN") && !log.contains("ERROR"), "{log}");
}
