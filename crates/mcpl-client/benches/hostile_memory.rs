//! Peak memory of a client facing a hostile server: a notification flood and oversized
//! listings. Each scenario runs in a fresh client process (so its peak RSS, `VmHWM`, is its
//! own), which spawns the hostile server as another process.
//!
//! ```sh
//! cargo bench -p mcpl-client --bench hostile_memory              # every scenario
//! cargo bench -p mcpl-client --bench hostile_memory -- list-page  # one
//! ```
//!
//! Scenarios:
//! - `notify-stdio`: a server on stdio sends 1,000 `notifications/message` of 200 KB each
//!   (200 MB) as fast as it can; the client's log handler takes 1 ms per message.
//! - `notify-http`: the same flood on the standalone SSE stream of a 2025 HTTP session.
//! - `list-page`: `tools/list` answered with one page of 50,000 tools (2.6 MB).
//! - `list-pages`: `tools/list` answered with 20 pages of 75,000 tools each (3.9 MB a page).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcpl_client::transport::{ChildProcess, HttpTransport};
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use serde_json::{Value, json};

const SCENARIOS: [&str; 4] = ["notify-stdio", "notify-http", "list-page", "list-pages"];
const FLOOD_COUNT: usize = 1_000;
const FLOOD_SIZE: usize = 200 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    match args.first().map(String::as_str) {
        Some("serve-stdio") => serve_stdio(&args[1]),
        Some("serve-http") => serve_http(&args[1]),
        Some("client") => client(&args[1]),
        _ => {
            let wanted: Vec<&str> = if args.is_empty() {
                SCENARIOS.to_vec()
            } else {
                args.iter().map(String::as_str).collect()
            };
            for scenario in wanted {
                let out = std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["client", scenario])
                    .output()
                    .unwrap();
                print!("{}", String::from_utf8_lossy(&out.stdout));
                if !out.status.success() {
                    eprint!("{}", String::from_utf8_lossy(&out.stderr));
                    panic!("scenario {scenario} failed");
                }
            }
        }
    }
}

/// Peak resident set size of this process, in MB.
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

fn pinned() -> Client {
    pinned_builder().build()
}

fn pinned_builder() -> mcpl_client::ClientBuilder {
    Client::builder("hostile-memory", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
}

fn client(scenario: &str) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let before = peak_mb();
        let started = Instant::now();
        let exe = std::env::current_exe().unwrap();
        let outcome = match scenario {
            "notify-stdio" | "notify-http" => {
                let handled = Arc::new(AtomicUsize::new(0));
                let seen = handled.clone();
                let client = pinned_builder()
                    .on_log_message(move |_params| {
                        seen.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(1))
                    })
                    .build();
                let _server;
                if scenario == "notify-stdio" {
                    client
                        .connect(ChildProcess::new(&exe).args(["serve-stdio", scenario]))
                        .await
                        .unwrap();
                } else {
                    let mut child = std::process::Command::new(&exe)
                        .args(["serve-http", scenario])
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .unwrap();
                    let mut line = String::new();
                    std::io::BufReader::new(child.stdout.take().unwrap())
                        .read_line(&mut line)
                        .unwrap();
                    _server = KillOnDrop(child);
                    client.connect(HttpTransport::new(line.trim())).await.unwrap();
                }
                let deadline = Instant::now() + Duration::from_secs(120);
                while handled.load(Ordering::SeqCst) < FLOOD_COUNT
                    && client.is_connected()
                    && Instant::now() < deadline
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // Whatever was queued drains within the handler's pace.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let n = handled.load(Ordering::SeqCst);
                let _ = client.close().await;
                format!("{n} of {FLOOD_COUNT} notifications handled")
            }
            "list-page" | "list-pages" => {
                let client = pinned();
                client
                    .connect(ChildProcess::new(&exe).args(["serve-stdio", scenario]))
                    .await
                    .unwrap();
                let outcome = match client.list_tools().await {
                    Ok(tools) => format!("{} tools listed", tools.len()),
                    Err(e) => format!("refused: {e}"),
                };
                let _ = client.close().await;
                outcome
            }
            other => panic!("unknown scenario {other}"),
        };
        println!(
            "{scenario:<13} peak RSS {:>7.1} MB (at start {:>5.1} MB) in {:>5.1} s: {outcome}",
            peak_mb(),
            before,
            started.elapsed().as_secs_f64()
        );
    });
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn initialize_result() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "logging": {}},
        "serverInfo": {"name": "hostile", "version": "1"},
    })
}

/// One `notifications/message` line of about [`FLOOD_SIZE`] bytes.
fn flood_message(i: usize) -> String {
    let data = "x".repeat(FLOOD_SIZE);
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","logger":"flood-{i}","data":"{data}"}}}}"#
    )
}

/// The `tools/list` page after `cursor`.
fn tools_page(scenario: &str, cursor: Option<&str>) -> Value {
    let (pages, per_page) = if scenario == "list-page" { (1, 50_000) } else { (20, 75_000) };
    let page: usize = cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    let tools: Vec<Value> = (0..per_page)
        .map(|i| json!({"name": format!("t{page:02}-{i:05}"), "inputSchema": {"type": "object"}}))
        .collect();
    let mut result = json!({ "tools": tools });
    if page + 1 < pages {
        result["nextCursor"] = json!((page + 1).to_string());
    }
    result
}

fn serve_stdio(scenario: &str) {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let method = message["method"].as_str().unwrap_or_default();
        let id = message.get("id").cloned();
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let reply = match method {
            "initialize" => Some(answer(initialize_result())),
            "notifications/initialized" if scenario == "notify-stdio" => {
                for i in 0..FLOOD_COUNT {
                    if writeln!(out, "{}", flood_message(i)).is_err() {
                        return;
                    }
                }
                let _ = out.flush();
                None
            }
            "tools/list" => {
                Some(answer(tools_page(scenario, message["params"]["cursor"].as_str())))
            }
            _ if id.is_some() => Some(answer(json!({}))),
            _ => None,
        };
        if let Some(reply) = reply {
            let _ = writeln!(out, "{reply}");
            let _ = out.flush();
        }
    }
}

fn serve_http(_scenario: &str) {
    use axum::body::Body;
    use axum::http::{StatusCode, header};
    use axum::response::Response;
    use axum::routing::post;

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let app = axum::Router::new().route(
            "/mcp",
            post(|body: String| async move {
                let message: Value = serde_json::from_str(&body).unwrap_or_default();
                let Some(id) = message.get("id").cloned() else {
                    return Response::builder()
                        .status(StatusCode::ACCEPTED)
                        .body(Body::empty())
                        .unwrap();
                };
                let result = match message["method"].as_str() {
                    Some("initialize") => initialize_result(),
                    _ => json!({}),
                };
                Response::builder()
                    .header(header::CONTENT_TYPE, "application/json")
                    .header("mcp-session-id", "s1")
                    .body(Body::from(
                        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
                    ))
                    .unwrap()
            })
            .get(|| async {
                let events = futures::stream::iter(0..FLOOD_COUNT).map(|i| {
                    Ok::<_, std::convert::Infallible>(format!("data: {}\n\n", flood_message(i)))
                });
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from_stream(events))
                    .unwrap()
            })
            .delete(|| async { StatusCode::OK }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("http://{}/mcp", listener.local_addr().unwrap());
        axum::serve(listener, app).await.unwrap();
    });
}

use futures::StreamExt;
