//! The MCPL server conformance suite (`mcpl_conformance::mcpl_server`) against the two MCPL
//! example servers, as real child processes: over stdio (a fresh process per group of checks)
//! and over WebSocket (`--ws 127.0.0.1:0`, a fresh connection per group).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use mcpl_conformance::mcpl_server::{Options, Report, Target, Verdict, run};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// Hang guard only.
const GUARD: Duration = Duration::from_secs(300);

const MEMORY: &str = env!("CARGO_BIN_EXE_mcpl-memory-server");
const CHANNEL: &str = env!("CARGO_BIN_EXE_mcpl-channel-server");

/// Groups of checks in which either server passes every check (none skipped).
const COMMON: &[&str] = &["negotiation/", "policy/", "push/", "manifest/"];
/// The memory server's own: context hooks and state with rollback.
const MEMORY_ONLY: &[&str] = &["hooks/", "state/"];
/// The channel server's own: inference, model info and channels.
const CHANNEL_ONLY: &[&str] = &["inference/", "model/", "channels/"];

async fn suite(target: Target) -> Report {
    tokio::time::timeout(GUARD, run(&target, &Options::default())).await.expect("hang guard")
}

fn describe(report: &Report) -> String {
    let lines: Vec<String> = report.checks.iter().map(ToString::to_string).collect();
    format!("{}\n{}", lines.join("\n"), report.summary())
}

/// No failure, at least `min` passes, and every check of the `groups` passed.
fn assert_report(report: &Report, min: usize, groups: &[&[&str]]) {
    let text = describe(report);
    assert!(report.passed_all(), "the suite failed:\n{text}");
    assert!(report.passed() >= min, "fewer than {min} checks passed:\n{text}");
    for group in groups.iter().flat_map(|groups| groups.iter()) {
        let checks: Vec<_> = report.checks.iter().filter(|c| c.name.starts_with(group)).collect();
        assert!(!checks.is_empty(), "no check of {group} ran:\n{text}");
        for check in checks {
            assert_eq!(check.verdict, Verdict::Pass, "{} did not pass:\n{text}", check.name);
        }
    }
}

/// The command line of `bin` with the trigger tool, quoted for `sh -c`.
fn command(bin: &str) -> Target {
    assert!(!bin.contains('\''), "the binary path {bin} cannot be single-quoted");
    Target::Command(format!("'{bin}' --conformance"))
}

/// A server serving WebSocket, and what it wrote on stderr.
struct WsServer {
    child: Child,
    url: String,
    stderr: tokio::task::JoinHandle<String>,
}

impl WsServer {
    /// Stops the server (it must still be running) and checks that it never panicked, not even
    /// in a connection's task.
    async fn stop(mut self) {
        assert!(self.child.try_wait().unwrap().is_none(), "the server exited");
        self.child.kill().await.unwrap();
        let stderr = tokio::time::timeout(GUARD, self.stderr).await.expect("hang guard").unwrap();
        assert!(!stderr.contains("panicked"), "the server panicked:\n{stderr}");
    }
}

/// `bin` serving WebSocket on an ephemeral port; its URL, from the line it prints on stdout.
async fn serve_ws(bin: &str) -> WsServer {
    let mut child = Command::new(bin)
        .args(["--ws", "127.0.0.1:0", "--conformance"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(GUARD, lines.next_line()).await.expect("hang guard");
    let url = line.unwrap().expect("the server exited before it printed its URL");
    assert!(url.starts_with("ws://127.0.0.1:") && url.ends_with("/mcpl"), "{url}");
    WsServer { child, url, stderr }
}

#[tokio::test]
async fn the_memory_server_passes_the_suite_over_stdio() {
    let report = suite(command(MEMORY)).await;
    assert_report(&report, 31, &[COMMON, MEMORY_ONLY]);
}

#[tokio::test]
async fn the_channel_server_passes_the_suite_over_stdio() {
    let report = suite(command(CHANNEL)).await;
    assert_report(&report, 35, &[COMMON, CHANNEL_ONLY]);
}

#[tokio::test]
async fn the_memory_server_passes_the_suite_over_websocket() {
    let server = serve_ws(MEMORY).await;
    let report = suite(Target::Url(server.url.clone())).await;
    assert_report(&report, 31, &[COMMON, MEMORY_ONLY]);
    // Every group used its own connection; the server is still up after all of them.
    server.stop().await;
}

#[tokio::test]
async fn the_channel_server_passes_the_suite_over_websocket() {
    let server = serve_ws(CHANNEL).await;
    let report = suite(Target::Url(server.url.clone())).await;
    assert_report(&report, 35, &[COMMON, CHANNEL_ONLY]);
    server.stop().await;
}

#[tokio::test]
async fn a_bad_command_line_is_refused_with_usage() {
    for args in [&["--ws"][..], &["--bogus"][..], &["--ws", "--conformance"][..]] {
        let out = Command::new(MEMORY).args(args).stdin(Stdio::null()).output().await.unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"), "{args:?}");
    }
    let out = Command::new(CHANNEL)
        .args(["--ws", "127.0.0.1:99999"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("websocket on 127.0.0.1:99999"));
    assert!(out.stdout.is_empty(), "no URL when nothing listens");
}
