//! Requests per second and server CPU per request of our Streamable HTTP server next to the
//! limit server, on each runtime and threading a user can pick, and the memory of an idle
//! 2025 session (issue 20 of the tracker; figures and method in `docs/performance.md`).
//!
//! ```sh
//! cargo bench -p mcpl-examples --bench serve                    # everything, 5 s a run
//! cargo bench -p mcpl-examples --bench serve -- stateless       # one workload
//! BENCH_SECS=6 BENCH_ROUNDS=3 BENCH_ONLY=mt cargo bench -p mcpl-examples --bench serve
//! ```
//!
//! Workloads (`c` connections, `BENCH_CONC`, default 32, each with one request in flight):
//! - `stateless`: 2026-07-28 `tools/call`, one POST each, with the era's headers and `_meta`.
//! - `stateful-json`, `stateful-sse`: a 2025-11-25 session per connection (`initialize`,
//!   `notifications/initialized`), then `tools/call` in it, answered with one JSON body or
//!   with an SSE stream (the limit server answers JSON in both).
//! - `sessions`: 2,000 idle sessions (`BENCH_SESSIONS`) opened on one server; the growth of
//!   its resident memory per session.
//!
//! Servers, each a child process of this bench (so its CPU is its own, read from
//! `/proc/PID/stat`), started afresh for every run and run in turn within a round: the
//! limit server (`support/limit.rs`, bare hyper, precomputed answers) on the multi-threaded
//! runtime; for stateless calls the floor server (`support/floor.rs`: the same stack with
//! the headers checked, the body parsed into typed values and the answer serialized, as a
//! hand-written endpoint would) on either runtime (`floor`, `floor-ct`); and ours (one tool answering the limit server's text) on the current-thread
//! runtime (`ct`), the multi-threaded one (`mt`, as `#[tokio::main]` builds it), that with one
//! worker (`mt-w1`), and the multi-threaded one serving connections on threads of the
//! listener's own (`own-1`, `own-2`, `own-N` per core: `ConnectionConfig::threads`). Every
//! answer is checked (status, id, text), so no run measures an error path; the load
//! generator runs on one thread of this process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "support/floor.rs"]
mod floor;
#[path = "support/limit.rs"]
mod limit;

use std::cell::Cell;
use std::io::BufRead;
use std::num::NonZeroUsize;
use std::process::{Child, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use limit::TEXT;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::{ConnectionConfig, ConnectionThreads, HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};

const ROLE: &str = "MCPL_BENCH_ROLE";
/// In a server's child: `ct`, `mt`, or `mt` with `TOKIO_WORKER_THREADS`.
const RUNTIME: &str = "MCPL_BENCH_RUNTIME";
/// In our server's child: `1` for JSON answers in sessions.
const JSON: &str = "MCPL_BENCH_JSON";
/// In our server's child: how many threads of the listener's own (unset: none).
const THREADS: &str = "MCPL_BENCH_THREADS";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("limit") => return limit::serve(runtime()),
        Ok("floor") => return floor::serve(runtime()),
        Ok("ours") => return ours(),
        _ => {}
    }
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let wants = |w: &str| wanted.is_empty() || wanted.iter().any(|x| x == w);
    let secs = env_number("BENCH_SECS", 5);
    let rounds = env_number("BENCH_ROUNDS", 1);
    let concurrency = env_number("BENCH_CONC", 32) as usize;
    let run = Duration::from_secs(secs);
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    println!("{cores} cores; {rounds} round(s) of {secs} s; c={concurrency}");
    for workload in [Workload::Stateless, Workload::StatefulJson, Workload::StatefulSse] {
        if !wants(workload.name()) {
            continue;
        }
        for round in 1..=rounds {
            let mut limit_rate = None;
            for variant in variants(cores) {
                // The floor server serves stateless calls only.
                let floor = variant.name.starts_with("floor");
                if !selected(&variant.name) || (floor && workload != Workload::Stateless) {
                    continue;
                }
                let server = variant.start(workload == Workload::StatefulJson);
                let (requests, wall, cpu) = load(&server, workload, concurrency, run);
                let rate = requests as f64 / wall.as_secs_f64();
                let cpu_us = cpu.as_secs_f64() * 1e6 / requests.max(1) as f64;
                if variant.name == "limit" {
                    limit_rate = Some(rate);
                }
                let ratio = limit_rate.map_or(String::new(), |l| format!("{:.2}x limit", rate / l));
                println!(
                    "{:<14} round {round} {:<8} {rate:>9.0} req/s {cpu_us:>6.1} us CPU/req  {ratio}",
                    workload.name(),
                    variant.name
                );
            }
        }
    }
    if wants("sessions") {
        let sessions = env_number("BENCH_SESSIONS", 2_000) as usize;
        for variant in variants(cores).into_iter().filter(|v| v.name == "limit" || v.name == "ct") {
            let server = variant.start(false);
            let bytes = idle_sessions(&server, sessions);
            println!("sessions       {:<8} {bytes:>9.0} bytes per idle session", variant.name);
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Whether a variant runs: `BENCH_ONLY` is a part of its name (all of them without it; the
/// limit and floor servers always, for the ratios).
fn selected(variant: &str) -> bool {
    matches!(variant, "limit" | "floor" | "floor-ct")
        || std::env::var("BENCH_ONLY").map_or(true, |only| variant.contains(only.as_str()))
}

// ---- the servers ----

/// The runtime `MCPL_BENCH_RUNTIME` names.
fn runtime() -> tokio::runtime::Runtime {
    match std::env::var(RUNTIME).as_deref() {
        Ok("ct") => tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
        _ => tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap(),
    }
}

/// Our server: one tool, the limit server's text, served at `/mcp`.
fn ours() {
    let server = Server::builder("bench", "1.0.0")
        .tool(Tool::new("test_simple_text", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::text(TEXT))
        })
        .build();
    let threads = match std::env::var(THREADS).ok().and_then(|n| n.parse().ok()) {
        Some(n) => ConnectionThreads::Own(n),
        None => ConnectionThreads::Caller,
    };
    let json = std::env::var(JSON).is_ok_and(|v| v == "1");
    let config =
        HttpConfig::new().json_response(json).connections(ConnectionConfig::new().threads(threads));
    runtime().block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap().port());
        StreamableHttp::new(server, config).serve_at(listener, "/mcp").await.unwrap();
    });
}

struct Variant {
    name: String,
    env: Vec<(&'static str, String)>,
}

fn variants(cores: usize) -> Vec<Variant> {
    let v = |name: &str, env: &[(&'static str, &str)]| Variant {
        name: name.to_owned(),
        env: env.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
    };
    let mut all = vec![
        v("limit", &[(ROLE, "limit"), (RUNTIME, "mt")]),
        v("floor", &[(ROLE, "floor"), (RUNTIME, "mt")]),
        v("floor-ct", &[(ROLE, "floor"), (RUNTIME, "ct")]),
        v("ct", &[(ROLE, "ours"), (RUNTIME, "ct")]),
        v("mt", &[(ROLE, "ours"), (RUNTIME, "mt")]),
        v("mt-w1", &[(ROLE, "ours"), (RUNTIME, "mt"), ("TOKIO_WORKER_THREADS", "1")]),
        v("own-1", &[(ROLE, "ours"), (RUNTIME, "mt"), (THREADS, "1")]),
        v("own-2", &[(ROLE, "ours"), (RUNTIME, "mt"), (THREADS, "2")]),
    ];
    if cores > 2 {
        let n = cores.to_string();
        all.push(Variant {
            name: format!("own-{cores}"),
            env: vec![(ROLE, "ours".to_owned()), (RUNTIME, "mt".to_owned()), (THREADS, n)],
        });
    }
    all
}

/// A server in a child process, killed when dropped.
struct Running {
    child: Child,
    port: u16,
}

impl Variant {
    fn start(&self, json: bool) -> Running {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        if json {
            command.env(JSON, "1");
        }
        let mut child = command.spawn().unwrap();
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
        Running { child, port: port.trim().parse().unwrap() }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The CPU time of process `pid` so far (user + system), from `/proc/PID/stat`.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After the command name: utime is field 11, stime field 12, in ticks of 10 ms.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// The resident memory of process `pid`, in bytes.
fn rss_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    kb.unwrap_or(0) * 1024
}

// ---- the load ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    Stateless,
    StatefulJson,
    StatefulSse,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Stateless => "stateless",
            Workload::StatefulJson => "stateful-json",
            Workload::StatefulSse => "stateful-sse",
        }
    }
}

/// One keep-alive connection to the server under test, and its session if it has one.
struct Connection {
    send: SendRequest<Full<Bytes>>,
    port: u16,
    session: Option<String>,
}

impl Connection {
    async fn open(port: u16) -> Connection {
        let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (send, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::task::spawn_local(conn);
        Connection { send, port, session: None }
    }

    /// POSTs `body`; the status, the session id it names, and the body.
    async fn post(&mut self, body: String, stateless: bool) -> (u16, Option<String>, Bytes) {
        let mut request = hyper::Request::post("/mcp")
            .header("host", format!("127.0.0.1:{}", self.port))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if stateless {
            request = request
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "test_simple_text");
        } else if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let request = request.body(Full::new(Bytes::from(body))).unwrap();
        self.send.ready().await.unwrap();
        let response = self.send.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, session, body)
    }

    /// The 2025 handshake: this connection's session.
    async fn initialize(&mut self) {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}"#;
        let (status, session, _) = self.post(init.to_owned(), false).await;
        assert_eq!(status, 200, "initialize");
        self.session = Some(session.expect("a session id"));
        let ready = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let (status, _, _) = self.post(ready.to_owned(), false).await;
        assert_eq!(status, 202, "notifications/initialized");
    }

    /// One `tools/call`, checked.
    async fn call(&mut self, id: u64, stateless: bool) {
        let meta = if stateless {
            r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#
        } else {
            ""
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"test_simple_text","arguments":{{}}{meta}}}}}"#
        );
        let (status, _, answer) = self.post(body, stateless).await;
        let text = std::str::from_utf8(&answer).unwrap();
        assert_eq!(status, 200, "{text}");
        assert!(text.contains(&format!("\"id\":{id},")) && text.contains(TEXT), "{text}");
    }
}

/// Runs `concurrency` connections of `workload` against `server` for `run` (after a warm-up
/// second): the requests answered, the time taken, and the server's CPU time meanwhile.
fn load(
    server: &Running,
    workload: Workload,
    concurrency: usize,
    run: Duration,
) -> (u64, Duration, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let port = server.port;
    let pid = server.child.id();
    local.block_on(&rt, async move {
        let stateless = workload == Workload::Stateless;
        let mut connections = Vec::new();
        for _ in 0..concurrency {
            let mut connection = Connection::open(port).await;
            if !stateless {
                connection.initialize().await;
            }
            connections.push(connection);
        }
        let counting = Rc::new(Cell::new(false));
        let stop = Rc::new(Cell::new(false));
        let answered = Rc::new(Cell::new(0u64));
        let next_id = Rc::new(Cell::new(1u64));
        let mut loops = Vec::new();
        for mut connection in connections {
            let (counting, stop, answered, next_id) =
                (counting.clone(), stop.clone(), answered.clone(), next_id.clone());
            loops.push(tokio::task::spawn_local(async move {
                while !stop.get() {
                    let id = next_id.get();
                    next_id.set(id + 1);
                    connection.call(id, stateless).await;
                    if counting.get() {
                        answered.set(answered.get() + 1);
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        counting.set(true);
        let (cpu0, t0) = (cpu_of(pid), Instant::now());
        tokio::time::sleep(run).await;
        let (cpu, wall, requests) = (cpu_of(pid) - cpu0, t0.elapsed(), answered.get());
        stop.set(true);
        for l in loops {
            l.await.unwrap();
        }
        (requests, wall, cpu)
    })
}

/// Opens `n` idle sessions on `server` (eight at a time); its resident memory growth per
/// session.
fn idle_sessions(server: &Running, n: usize) -> f64 {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let (port, pid) = (server.port, server.child.id());
    local.block_on(&rt, async move {
        // One session first, so what every server allocates once is not counted.
        let mut first = Connection::open(port).await;
        first.initialize().await;
        let before = rss_of(pid);
        let mut workers = Vec::new();
        for w in 0..8 {
            workers.push(tokio::task::spawn_local(async move {
                let mut connection = Connection::open(port).await;
                for _ in (w..n).step_by(8) {
                    connection.session = None;
                    connection.initialize().await;
                }
            }));
        }
        for w in workers {
            w.await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        (rss_of(pid).saturating_sub(before)) as f64 / n as f64
    })
}
