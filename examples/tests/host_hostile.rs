#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The `mcpl-host` binary against a hostile child-process server (`mcpl-hostile-fixture`)
//! beside an honest one (`mcpl-state-fixture`): state-patch bombs, a snapshot deeper than the
//! budget, a host restart on the same store, stored trees that are unreadable or over the
//! budget. The host and its other servers keep working throughout.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{HostProc, write_config};

const HOSTILE: &str = env!("CARGO_BIN_EXE_mcpl-hostile-fixture");
const HONEST: &str = env!("CARGO_BIN_EXE_mcpl-state-fixture");

fn dir(name: &str) -> PathBuf {
    support::scratch_dir("mcpl-host-hostile", name)
}

/// Starts the host with its log at info level in `log`, and `env` set.
async fn start(config: &Path, log: &Path, env: &[(&str, &str)]) -> HostProc {
    let mut all = vec![("RUST_LOG", "info")];
    all.extend_from_slice(env);
    HostProc::start_with(config, std::fs::File::create(log).unwrap(), &all).await
}

fn servers() -> Value {
    json!({"evil": {"command": HOSTILE}, "notes": {"command": HONEST}})
}

/// The honest server still works: a note is added and shows in its state.
async fn honest_server_works(host: &mut HostProc, text: &str) {
    let r = host.call("mcpl--notes--note_add", json!({"text": text})).await;
    assert_eq!(r["state"]["outcome"], "recorded", "{r}");
    let notes = host.state("notes").await["notes.host"]["state"]["notes"].clone();
    assert!(notes.as_array().unwrap().contains(&json!(text)), "{notes}");
}

#[tokio::test]
async fn state_bombs_are_refused_and_a_restart_on_the_same_store_is_clean() {
    let d = dir("bombs");
    let config = write_config(&d, servers());
    let log = d.join("host.log");
    let mut host = start(&config, &log, &[]).await;
    honest_server_works(&mut host, "milk").await;
    let r = host.call("mcpl--evil--honest", json!({"text": "first"})).await;
    assert_eq!(r["state"]["outcome"], "recorded", "{r}");
    let before = host.state("evil").await;

    for (tool, code) in [
        ("depth_bomb", "deeper than 64 levels"),
        ("double_bomb", "larger than 4194304 bytes"),
        ("root_copies", "larger than 4194304 bytes"),
        ("deep_data", "deeper than 64 levels"),
    ] {
        let r = host.call(&format!("mcpl--evil--{tool}"), json!({})).await;
        assert_eq!(r["state"]["outcome"], "rejected", "{tool}: {r}");
        assert!(r["state"]["detail"].as_str().unwrap().contains(code), "{tool}: {r}");
        // Nothing applied, nothing stored: the evil server's own tree is as it was.
        assert_eq!(host.state("evil").await, before, "{tool}");
        honest_server_works(&mut host, tool).await;
    }
    // The hostile server's set keeps working for honest patches.
    let r = host.call("mcpl--evil--honest", json!({"text": "second"})).await;
    assert_eq!(r["state"]["outcome"], "recorded", "{r}");
    let evil = host.state("evil").await;
    assert_eq!(evil["evil.state"]["state"]["notes"], json!(["first", "second"]));
    let notes = host.state("notes").await;
    host.quit().await;

    // Every stored file stays readable, private, and no temporary is left behind.
    for entry in std::fs::read_dir(d.join("state")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("tree-") && name.ends_with(".json"), "{name}");
        let _: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }

    // A new host on the same store: everything as last committed, no alert, and both servers
    // go on from there.
    let mut host = start(&config, &log, &[]).await;
    assert_eq!(host.state("evil").await, evil);
    assert_eq!(host.state("notes").await, notes);
    honest_server_works(&mut host, "after restart").await;
    let r = host.call("mcpl--evil--depth_bomb", json!({})).await;
    assert_eq!(r["state"]["outcome"], "rejected", "{r}");
    host.quit().await;
    let failures = std::fs::read_to_string(d.join("failures.log")).unwrap_or_default();
    assert!(!failures.contains("mcpl-state-degraded"), "{failures}");
}

/// A tree file as the store writes it.
fn tree_file(server: &str, feature_set: &str, data: Value) -> (String, Value) {
    let hex: String =
        format!("{server}:{feature_set}").bytes().map(|b| format!("{b:02x}")).collect();
    let file = json!({"version": 1, "server": server, "featureSet": feature_set, "tree": {
        "mode": "host-managed", "rollback": true, "current": "c1",
        "nodes": {"c1": {"parent": null, "data": data, "at": 0, "seq": 0}}, "nextSeq": 1}});
    (format!("tree-{hex}.json"), file)
}

#[tokio::test]
async fn a_stored_tree_over_the_budget_or_unreadable_degrades_only_its_own_set() {
    let d = dir("stored");
    let config = write_config(&d, servers());
    let store = d.join("state");
    std::fs::create_dir_all(&store).unwrap();
    // The evil server's tree holds a state 100 levels deep (readable, over the budget).
    let deep = (0..100).fold(json!(1), |v, _| json!([v]));
    let (name, file) = tree_file("evil", "evil.state", deep);
    std::fs::write(store.join(name), file.to_string()).unwrap();
    // Another server's tree file is truncated.
    let (name, _) = tree_file("gone", "gone.state", json!({}));
    std::fs::write(store.join(&name), b"{\"version\": 1, \"tree\": ").unwrap();

    let log = d.join("host.log");
    let mut host = start(&config, &log, &[]).await;
    honest_server_works(&mut host, "milk").await;
    let evil = host.state("evil").await;
    assert_eq!(evil["evil.state"]["degraded"], true, "{evil}");
    assert_eq!(evil["evil.state"]["state"], Value::Null);
    // A snapshot-free patch cannot apply to a degraded state; the set stays usable otherwise.
    let r = host.call("mcpl--evil--honest", json!({"text": "x"})).await;
    assert_eq!(r["state"]["outcome"], "rejected", "{r}");
    host.quit().await;

    let failures = std::fs::read_to_string(d.join("failures.log")).unwrap();
    let alerts: Vec<Value> = failures.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let degraded: Vec<&Value> =
        alerts.iter().filter(|a| a["kind"] == "mcpl-state-degraded").collect();
    assert_eq!(degraded.len(), 2, "{failures}");
    assert!(degraded.iter().any(|a| a["subject"] == "evil" && a["featureSet"] == "evil.state"));
    assert!(degraded.iter().any(|a| a["subject"] == "gone"));
    assert!(store.join(format!("{name}.unreadable")).exists(), "the unreadable file is kept aside");
}

#[tokio::test]
async fn secrets_stay_with_the_host_and_logs_cannot_be_forged() {
    let d = dir("secrets");
    // The ops webhook: a loopback port nobody listens on, so posts fail and are logged.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = d.join("host.json");
    let servers = json!({
        "evil": {"command": HOSTILE, "env": {"MCPL_SERVER_TOKEN": "tok-config-secret"}},
        "trusted": {"command": HOSTILE, "inheritEnv": true},
        "notes": {"command": HONEST}
    });
    let text = json!({"servers": servers, "state": {"dir": "state"}, "failuresLog": "failures.log",
        "opsWebhook": format!("http://127.0.0.1:{port}/hook?token=wh-url-secret")});
    std::fs::write(&config, text.to_string()).unwrap();
    let log = d.join("host.log");
    let env = [("OPENAI_API_KEY", "sk-host-secret"), ("AWS_SECRET_ACCESS_KEY", "aws-host-secret")];
    let mut host = start(&config, &log, &env).await;

    // A server gets a minimal environment plus what its configuration names...
    let r = host.call("mcpl--evil--env", json!({})).await;
    let names: Vec<&str> = r["result"]["structuredContent"]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(names.contains(&"MCPL_SERVER_TOKEN") && names.contains(&"PATH"), "{names:?}");
    for leaked in ["OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "RUST_LOG", "CARGO"] {
        assert!(!names.contains(&leaked), "{leaked} reached the server: {names:?}");
    }
    // ...and the host's whole environment only when its configuration opts in.
    let r = host.call("mcpl--trusted--env", json!({})).await;
    assert!(r["result"]["structuredContent"]["names"].to_string().contains("OPENAI_API_KEY"));
    honest_server_works(&mut host, "milk").await;
    // Let the webhook posts (for the duplicate listings) fail and be logged.
    tokio::time::sleep(Duration::from_millis(500)).await;
    host.quit().await;

    let logged = std::fs::read_to_string(&log).unwrap();
    for secret in ["sk-host-secret", "aws-host-secret", "tok-config-secret", "wh-url-secret"] {
        assert!(!logged.contains(secret), "{secret} in the host's log:\n{logged}");
    }
    assert!(logged.contains("ops webhook"), "the failed posts are logged:\n{logged}");
    // The tool name with a newline is in the duplicate-listing alert, escaped on one line.
    assert!(logged.contains(r"x\u{a}ERROR mcpl_host: forged log line"), "{logged}");
    for line in logged.lines() {
        assert!(!line.starts_with("ERROR mcpl_host: forged"), "a forged line: {line}");
    }
}

#[tokio::test]
async fn a_stderr_flood_without_newlines_stays_bounded() {
    let d = dir("flood");
    let config = write_config(&d, servers());
    let log = d.join("host.log");
    let mut host = start(&config, &log, &[]).await;
    // 64 MiB in one stderr line, three times.
    for _ in 0..3 {
        let r = host.call("mcpl--evil--flood", json!({})).await;
        assert_eq!(r["result"]["content"][0]["text"], "flooded");
    }
    honest_server_works(&mut host, "after the flood").await;
    #[cfg(target_os = "linux")]
    {
        let pid = host.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let peak_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        assert!(peak_kib < 64 * 1024, "the host peaked at {peak_kib} KiB");
    }
    host.quit().await;
    let logged = std::fs::read_to_string(&log).unwrap();
    let longest = logged.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 16 * 1024, "a log line of {longest} bytes");
    assert!(logged.contains("truncated_bytes"), "the cut is recorded");
}
