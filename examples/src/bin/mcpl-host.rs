//! `mcpl-host --config host.json`: an agent host running the configured MCP and MCPL servers
//! (either protocol era), driven by JSON lines on stdin; answers and events are JSON lines on
//! stdout.
//!
//! Requests (`id` is echoed; any JSON value):
//!
//! ```text
//! {"id": 1, "op": "servers"}
//! {"id": 2, "op": "tools"}
//! {"id": 3, "op": "call", "name": "mcpl--notes--note_add", "arguments": {"text": "milk"}}
//! {"id": 4, "op": "state", "server": "notes"}
//! {"id": 5, "op": "rollback", "server": "notes", "featureSet": "ledger.server", "checkpoint": "l-1"}
//! {"id": 6, "op": "restart", "server": "notes", "config": {"command": "...", "toolPrefix": "n"}}
//! {"id": 7, "op": "disconnect", "server": "notes"}
//! {"id": 8, "op": "connect", "server": {"id": "more", "command": "mcpl-memory-server"}}
//! {"id": 9, "op": "beforeInference", "params": {"inferenceId": "i1", "conversationId": "c",
//!           "turnIndex": 0, "userMessage": "hi", "model": {"id": "m", "vendor": "v",
//!           "contextWindow": 8192, "capabilities": []}}}
//! {"id": 10, "op": "lifecycle", "params": {"inferenceId": "i1", "conversationId": "c",
//!            "turnIndex": 0, "phase": "started"}}
//! ```
//!
//! Answers: `{"id": 1, "ok": true, "result": ...}` or `{"id": 1, "ok": false, "error": {"kind":
//! ..., "message": ...}}`. Events: `{"event": {"type": "push" | "toolsChanged" | ..., ...}}`.
//! A configuration whose tool prefixes meet is refused before anything starts (exit 2).

use std::process::ExitCode;

use mcpl_core::error::ErrorChain;
use mcpl_core::log_safe::LogSafe;
use mcpl_host::config::{HostConfig, ServerConfig};
use mcpl_host::host::{describe, state_view};
use mcpl_host::{Host, HostError, HostEvent};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Writes each log record as one line: a control character inside a record (a newline in a
/// server's text that would start a forged line) is escaped, whatever logged it; the record's
/// own final newline stays.
struct OneLine<W>(W);

impl<W: std::io::Write> std::io::Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let (body, end) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (buf, false),
        };
        let mut line = LogSafe(&String::from_utf8_lossy(body)).to_string();
        if end {
            line.push('\n');
        }
        self.0.write_all(line.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn event_json(event: &HostEvent) -> Value {
    match event {
        HostEvent::Push { server, event } => {
            json!({"type": "push", "server": server, "event": event})
        }
        HostEvent::ToolsChanged { server, added, removed } => {
            json!({"type": "toolsChanged", "server": server, "added": added, "removed": removed})
        }
        HostEvent::Connected { server } => json!({"type": "connected", "server": server}),
        HostEvent::Disconnected { server } => json!({"type": "disconnected", "server": server}),
        HostEvent::Diagnostic { server, diagnostic } => {
            json!({"type": "diagnostic", "server": server, "kind": diagnostic.kind(),
                   "detail": format!("{diagnostic:?}")})
        }
        HostEvent::Alert(alert) => json!({"type": "alert", "alert": alert}),
        HostEvent::Missed { count } => json!({"type": "missed", "count": count}),
        other => json!({"type": "other", "detail": format!("{other:?}")}),
    }
}

fn failure(kind: &str, message: impl ToString) -> Value {
    json!({"kind": kind, "message": message.to_string()})
}

fn host_error(e: &HostError) -> Value {
    // The message says everything: the error and its causes.
    failure(e.kind(), ErrorChain(e))
}

fn str_arg<'a>(req: &'a Value, key: &str) -> Result<&'a str, Value> {
    req.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| failure("bad_request", format!("`{key}` is required")))
}

async fn serve(host: &Host, req: &Value) -> Result<Value, Value> {
    match req.get("op").and_then(Value::as_str).unwrap_or_default() {
        "servers" => Ok(Value::Array(
            host.servers()
                .into_iter()
                .map(|(id, prefix, phase)| {
                    let mut entry = json!({"id": id, "prefix": prefix, "phase": format!("{phase:?}").to_lowercase()});
                    // While connected: the negotiated revision, and whether MCPL is in force.
                    if let Some(details) = host.server(&id) {
                        entry["protocolVersion"] = json!(details.protocol_version);
                        entry["mcpl"] = json!(host.mcpl(&id).is_some_and(|m| m.is_ready()));
                    }
                    // Feature sets left disabled, with what is missing and how to grant it.
                    let disabled: Vec<Value> = host
                        .disabled_feature_sets(&id)
                        .iter()
                        .map(|d| json!({"featureSet": d.feature_set, "reason": d.reason.as_str(),
                            "missingCapabilities": d.missing.iter().map(|m| &m.capability).collect::<Vec<_>>(),
                            "message": d.to_string()}))
                        .collect();
                    if !disabled.is_empty() {
                        entry["disabledFeatureSets"] = json!(disabled);
                    }
                    entry
                })
                .collect(),
        )),
        "tools" => Ok(json!({"tools": host.tools()})),
        "call" => {
            let name = str_arg(req, "name")?;
            let arguments = req.get("arguments").cloned().unwrap_or(Value::Null);
            let call = host.call_tool(name, arguments).await.map_err(|e| host_error(&e))?;
            Ok(json!({"server": call.server, "tool": call.tool, "result": call.result, "state": describe(&call.state)}))
        }
        "state" => Ok(json!(state_view(host, str_arg(req, "server")?))),
        "rollback" => {
            let (server, fs, cp) = (str_arg(req, "server")?, str_arg(req, "featureSet")?, str_arg(req, "checkpoint")?);
            host.rollback(server, fs, cp).await.map_err(|e| host_error(&e))?;
            Ok(json!(state_view(host, server)))
        }
        "restart" => {
            let id = str_arg(req, "server")?;
            // An optional new configuration for the server (its `id` is the server's).
            let config = match req.get("config") {
                None => None,
                Some(c) => {
                    let mut c = c.clone();
                    c["id"] = json!(id);
                    let parsed = HostConfig::from_json(&json!({"servers": [c]}).to_string())
                        .map_err(|e| failure(e.kind(), ErrorChain(&e)))?;
                    parsed.servers.into_iter().next()
                }
            };
            host.restart(id, config).await.map_err(|e| host_error(&e))?;
            Ok(json!({"restarted": true}))
        }
        "disconnect" => {
            host.disconnect(str_arg(req, "server")?).await.map_err(|e| host_error(&e))?;
            Ok(json!({"disconnected": true}))
        }
        "connect" => {
            let server = req.get("server").cloned().unwrap_or(Value::Null);
            let config = HostConfig::from_json(&json!({"servers": [server]}).to_string())
                .map_err(|e| failure(e.kind(), ErrorChain(&e)))?;
            let server: ServerConfig =
                config.servers.into_iter().next().ok_or_else(|| failure("bad_request", "no server"))?;
            host.connect(server).await.map_err(|e| host_error(&e))?;
            Ok(json!({"connected": true}))
        }
        "beforeInference" => {
            let params = serde_json::from_value(req.get("params").cloned().unwrap_or(Value::Null))
                .map_err(|e| failure("bad_request", e))?;
            let out = host.before_inference(params).await;
            let group = |v: &[(String, mcpl_core::mcpl::hooks::ContextInjection)]| {
                v.iter().map(|(s, i)| json!({"server": s, "injection": i})).collect::<Vec<_>>()
            };
            Ok(json!({"system": group(&out.system), "beforeUser": group(&out.before_user),
                      "afterUser": group(&out.after_user), "failed": out.failed}))
        }
        "lifecycle" => {
            let params = serde_json::from_value(req.get("params").cloned().unwrap_or(Value::Null))
                .map_err(|e| failure("bad_request", e))?;
            let refused = host.lifecycle(params).await;
            Ok(json!({"refused": refused}))
        }
        other => Err(failure("unknown_op", format!("unknown op {other:?}"))),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(|| OneLine(std::io::stderr()))
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let mut args = std::env::args().skip(1);
    let mut path = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" => path = args.next(),
            "-h" | "--help" => {
                println!("usage: mcpl-host --config host.json   (JSON lines on stdin/stdout)");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unexpected argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(path) = path else {
        eprintln!("usage: mcpl-host --config host.json");
        return ExitCode::from(2);
    };
    let config = match HostConfig::load(path.as_ref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}", ErrorChain(&e));
            return ExitCode::from(2);
        }
    };
    let (host, mut events) = match Host::start(config).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: {}", ErrorChain(&e));
            return ExitCode::from(1);
        }
    };
    let (out, mut lines) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = lines.recv().await {
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let event_out = out.clone();
    let forwarder = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let _ = event_out.send(json!({"event": event_json(&event)}).to_string());
        }
    });
    let _ =
        out.send(json!({"event": {"type": "ready", "servers": host.servers().len()}}).to_string());
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = stdin.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(e) => json!({"id": null, "ok": false, "error": failure("invalid_json", e)}),
            Ok(req) => {
                let id = req.get("id").cloned().unwrap_or(Value::Null);
                match serve(&host, &req).await {
                    Ok(result) => json!({"id": id, "ok": true, "result": result}),
                    Err(error) => json!({"id": id, "ok": false, "error": error}),
                }
            }
        };
        let _ = out.send(answer.to_string());
    }
    host.shutdown().await;
    forwarder.abort();
    drop(out);
    let _ = writer.await;
    ExitCode::SUCCESS
}
