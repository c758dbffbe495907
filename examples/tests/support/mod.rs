//! What the host tests share: the `mcpl-host` binary driven over its stdin and stdout, and
//! their scratch directories and configurations.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long any one answer, event or exit may take.
const GUARD: Duration = Duration::from_secs(120);
const HOST: &str = env!("CARGO_BIN_EXE_mcpl-host");

/// A running `mcpl-host --config FILE`, its events kept as they arrive.
pub(crate) struct HostProc {
    pub(crate) child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    pub(crate) events: Vec<Value>,
    next: u64,
}

impl HostProc {
    /// Starts the host with its log discarded, once it says it is ready.
    pub(crate) async fn start(config: &Path) -> HostProc {
        HostProc::start_with(config, Stdio::null(), &[]).await
    }

    /// Starts the host with its log (stderr) going to `log` and `env` set, once it is ready.
    pub(crate) async fn start_with(
        config: &Path,
        log: impl Into<Stdio>,
        env: &[(&str, &str)],
    ) -> HostProc {
        let mut cmd = Command::new(HOST);
        cmd.arg("--config")
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut host = HostProc { child, stdin, lines, events: Vec::new(), next: 0 };
        host.wait_event("ready").await;
        host
    }

    async fn line(&mut self) -> Value {
        let line =
            tokio::time::timeout(GUARD, self.lines.next_line()).await.expect("hang").unwrap();
        serde_json::from_str(&line.expect("the host ended")).unwrap()
    }

    /// Waits for the next event of type `kind`, keeping the ones before it.
    pub(crate) async fn wait_event(&mut self, kind: &str) -> Value {
        loop {
            let v = self.line().await;
            if let Some(e) = v.get("event") {
                self.events.push(e.clone());
                if e["type"] == kind {
                    return e.clone();
                }
            }
        }
    }

    /// Sends a request; `Ok(result)` or `Err(error)`.
    pub(crate) async fn ask(&mut self, mut req: Value) -> Result<Value, Value> {
        self.next += 1;
        req["id"] = json!(self.next);
        let mut text = req.to_string();
        text.push('\n');
        self.stdin.write_all(text.as_bytes()).await.unwrap();
        loop {
            let v = self.line().await;
            if let Some(e) = v.get("event") {
                self.events.push(e.clone());
                continue;
            }
            if v["id"] == json!(self.next) {
                return if v["ok"] == json!(true) {
                    Ok(v["result"].clone())
                } else {
                    Err(v["error"].clone())
                };
            }
        }
    }

    /// Calls a tool; panics on an error answer.
    pub(crate) async fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.ask(json!({"op": "call", "name": name, "arguments": arguments})).await.unwrap()
    }

    /// The checkpoint trees of `server`.
    pub(crate) async fn state(&mut self, server: &str) -> Value {
        self.ask(json!({"op": "state", "server": server})).await.unwrap()
    }

    /// Closes stdin and waits for a successful exit.
    pub(crate) async fn quit(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(GUARD, self.child.wait()).await.expect("hang").unwrap();
        assert!(status.success());
    }
}

/// A fresh scratch directory for test `name` of suite `suite`.
pub(crate) fn scratch_dir(suite: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{suite}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a host configuration of `servers` (state in `state/`, failures in `failures.log`).
pub(crate) fn write_config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("host.json");
    let config =
        json!({"servers": servers, "state": {"dir": "state"}, "failuresLog": "failures.log"});
    std::fs::write(&path, config.to_string()).unwrap();
    path
}
