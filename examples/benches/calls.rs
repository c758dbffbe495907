//! Calls per second and CPU per call of the client, over Streamable HTTP and stdio, each next to
//! the raw baseline it is measured against (issue 20 of the tracker; figures and method in
//! `docs/performance.md`).
//!
//! ```sh
//! cargo bench -p mcpl-examples --bench calls                 # every workload: 3 rounds of 2 s
//! cargo bench -p mcpl-examples --bench calls -- http stdio   # some of them
//! BENCH_ROUNDS=5 BENCH_SECS=4 cargo bench -p mcpl-examples --bench calls -- stdio
//! # a fixed number of calls of one variant at one concurrency, for instruction counts
//! # (run it under `valgrind --tool=callgrind` at two counts and take the difference):
//! BENCH_CALLS=2000 BENCH_ONLY=ours BENCH_CONC=32 target/release/deps/calls-HASH http
//! ```
//!
//! Workloads:
//! - `http`: 2026-07-28 stateless `tools/call` over HTTP at c=1 and c=32 against a limit server
//!   (a bare hyper server in a child process that answers every call with precomputed bytes, the
//!   request's id spliced in, so the server costs next to nothing). Clients: ours
//!   (`Client` over `HttpTransport`) and a raw `reqwest` POST loop sending the same bytes.
//! - `stdio`: sequential `tools/call` over a child's stdin/stdout: the four pairs of
//!   {our client, a raw line writer} x {our stdio server, a raw line echo}, so that the client's
//!   and the server's shares can be told apart; and the same line writer and echo written on
//!   tokio (current-thread runtimes, the pipes read and written through the runtime's IO
//!   driver as our transports do), alone and with our server: what any async pair pays over
//!   the raw blocking one; and both echoes with each line read and answered through
//!   `serde_json::Value`: the least any JSON-RPC server pays. `BENCH_WRAP` runs the children it spawns under a wrapper (say
//!   `valgrind --tool=dhat`, with `BENCH_CALLS` and `BENCH_ONLY`), to profile a server.
//!
//! `BENCH_ECHO_WORK_US=N` makes the baselines' peers (the line echoes and the limit server) spin
//! for N microseconds before each answer: how much a peer's work per message costs a c=1 round
//! trip on the machine at hand (on a virtual machine whose idle CPUs halt, far more than N).
//!
//! Each line reports calls per second and, for the bench process itself (the client; servers run
//! in child processes), CPU microseconds per call, read from `/proc/self/stat`. The bench checks
//! every answer (the id matches, the text is there), so no variant measures an error path.
//!
//! The variants run in rounds (`BENCH_ROUNDS`, default 3; `BENCH_SECS` each, default 2), their
//! order rotated from one round to the next and every child started afresh, and a summary gives
//! each variant's median and the ratios that matter, taken within each round and then their
//! median: on this kind of machine two runs of one build differ by up to a third at c=1 (where
//! the two processes of a pair land decides much of a call's latency), and only ratios within a
//! round cancel that out.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{BufRead, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcpl_client::Client;
use mcpl_client::transport::{ChildProcess, HttpTransport};
use mcpl_core::ProtocolVersion;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::{Server, ToolOutput};

#[path = "support/limit.rs"]
mod limit;

use limit::{TEXT, answer};

const ROLE: &str = "MCPL_BENCH_ROLE";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("limit") => return limit_server(),
        Ok("echo") => return line_echo(),
        Ok("tokio-echo") => return tokio_line_echo(false),
        Ok("tokio-serde-echo") => return tokio_line_echo(true),
        Ok("serde-echo") => return serde_line_echo(),
        Ok("stdio-server") => return stdio_server(),
        _ => {}
    }
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let number = |name: &str, default: u64| {
        std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default).max(1)
    };
    let run = Duration::from_secs(number("BENCH_SECS", 2));
    let rounds = number("BENCH_ROUNDS", 3) as usize;
    let all = wanted.is_empty();
    let mut results = Results::default();
    for round in 0..rounds {
        println!("round {}", round + 1);
        if all || wanted.iter().any(|w| w == "http") {
            http(run, round, &mut results);
        }
        if all || wanted.iter().any(|w| w == "stdio") {
            stdio(run, round, &mut results);
        }
    }
    results.summary(&[
        (HTTP_OURS, HTTP_RAW, "ours / raw reqwest"),
        (STDIO_PAIR, STDIO_RAW_PAIR, "our pair / raw pair"),
        (STDIO_CLIENT, STDIO_RAW_PAIR, "our client (against the echo) / raw"),
        (STDIO_SERVER, STDIO_RAW_PAIR, "our server (raw lines to it) / the echo"),
        (STDIO_TOKIO_PAIR, STDIO_RAW_PAIR, "tokio pair / raw pair"),
        (STDIO_PAIR, STDIO_TOKIO_PAIR, "our pair / tokio pair"),
        (STDIO_TOKIO_SERVER, STDIO_TOKIO_PAIR, "our server (tokio lines to it) / tokio echo"),
        (STDIO_SERDE_PAIR, STDIO_RAW_PAIR, "serde_json echo / raw echo (raw lines to both)"),
        (STDIO_SERVER, STDIO_SERDE_PAIR, "our server / serde_json echo (raw lines to both)"),
        (STDIO_TOKIO_SERDE, STDIO_TOKIO_PAIR, "tokio serde_json echo / tokio echo"),
        (STDIO_TOKIO_SERVER, STDIO_TOKIO_SERDE, "our server / tokio serde_json echo (tokio lines)"),
        // The least a JSON-RPC pair on tokio does (each side reads the other's lines into a
        // `serde_json::Value`) against the raw pair: the floor for the stdio goal.
        (STDIO_TOKIO_SERDE, STDIO_RAW_PAIR, "tokio JSON pair / raw pair"),
        (STDIO_PAIR, STDIO_TOKIO_SERDE, "our pair / tokio JSON pair"),
    ]);
}

const HTTP_OURS: &str = "ours (Client, HttpTransport)";
const HTTP_RAW: &str = "raw reqwest POST";
const STDIO_PAIR: &str = "ours -> our stdio server";
const STDIO_CLIENT: &str = "ours -> raw line echo";
const STDIO_SERVER: &str = "raw lines -> our stdio server";
const STDIO_RAW_PAIR: &str = "raw lines -> raw line echo";
const STDIO_TOKIO_PAIR: &str = "tokio lines -> tokio line echo";
const STDIO_TOKIO_SERVER: &str = "tokio lines -> our stdio server";
const STDIO_SERDE_PAIR: &str = "raw lines -> serde_json line echo";
const STDIO_TOKIO_SERDE: &str = "tokio lines -> tokio serde_json echo";

/// One run of one variant: the calls it made, its wall time and this process's CPU time.
#[derive(Clone, Copy)]
struct Figure {
    calls: u64,
    wall: Duration,
    cpu: Duration,
}

impl Figure {
    fn per_sec(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64()
    }

    fn cpu_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }
}

/// Every run's figure, with its workload, variant and round.
#[derive(Default)]
struct Results(Vec<(String, String, usize, Figure)>);

impl Results {
    /// Prints one run's line and keeps its figure.
    fn add(&mut self, workload: &str, variant: &str, round: usize, figure: Figure) {
        println!(
            "{workload:<16} {variant:<32} {:>10.0} calls/s {:>8.1} us CPU/call ({} calls)",
            figure.per_sec(),
            figure.cpu_us(),
            figure.calls
        );
        self.0.push((workload.to_owned(), variant.to_owned(), round, figure));
    }

    fn find(&self, workload: &str, variant: &str, round: usize) -> Option<Figure> {
        self.0.iter().find(|(w, v, r, _)| w == workload && v == variant && *r == round).map(|e| e.3)
    }

    /// Each variant's medians, then each ratio (`numerator`'s calls/s over `denominator`'s,
    /// taken within every round that ran both, then the median) for every workload with both.
    fn summary(&self, ratios: &[(&str, &str, &str)]) {
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for (w, v, _, _) in &self.0 {
            if !keys.contains(&(w.as_str(), v.as_str())) {
                keys.push((w, v));
            }
        }
        println!("medians over {} round(s)", self.0.iter().map(|e| e.2 + 1).max().unwrap_or(0));
        for &(workload, variant) in &keys {
            let runs = self.0.iter().filter(|(w, v, _, _)| w == workload && v == variant);
            let rates = median(runs.clone().map(|e| e.3.per_sec()).collect());
            let cpu = median(runs.map(|e| e.3.cpu_us()).collect());
            println!("{workload:<16} {variant:<32} {rates:>10.0} calls/s {cpu:>8.1} us CPU/call");
        }
        let mut workloads: Vec<&str> = keys.iter().map(|k| k.0).collect();
        workloads.dedup();
        for workload in workloads {
            for &(numerator, denominator, label) in ratios {
                let within: Vec<f64> = (0..=self.0.iter().map(|e| e.2).max().unwrap_or(0))
                    .filter_map(|round| {
                        let n = self.find(workload, numerator, round)?;
                        let d = self.find(workload, denominator, round)?;
                        Some(n.per_sec() / d.per_sec())
                    })
                    .collect();
                if within.is_empty() {
                    continue;
                }
                let (low, high) =
                    within.iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
                let mid = median(within);
                println!("{workload:<16} {label:<40} {mid:.2}x ({low:.2}-{high:.2})");
            }
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// CPU time of this process so far (user + system), from `/proc/self/stat` (clock ticks of
/// 10 ms: runs last seconds, so the resolution is enough).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After the command name: state is field 0, utime field 11, stime field 12.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// `BENCH_CALLS`: a fixed number of calls per variant instead of a run of `BENCH_SECS`.
fn fixed_calls() -> Option<u64> {
    std::env::var("BENCH_CALLS").ok().and_then(|s| s.parse().ok())
}

/// Whether a variant is run: `BENCH_ONLY` is a part of its name (all of them without it).
fn selected(variant: &str) -> bool {
    std::env::var("BENCH_ONLY").map_or(true, |only| variant.contains(only.as_str()))
}

/// The concurrencies of the HTTP workload: `BENCH_CONC` (comma-separated), or 1 and 32.
fn concurrencies() -> Vec<usize> {
    std::env::var("BENCH_CONC")
        .ok()
        .map(|s| s.split(',').filter_map(|c| c.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 32])
}

/// Runs `concurrency` loops of `one` for `run` (or for `BENCH_CALLS` calls); `None` when the
/// variant is not selected.
async fn drive<F, Fut>(concurrency: usize, variant: &str, run: Duration, one: F) -> Option<Figure>
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    if !selected(variant) {
        return None;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let next_id = Arc::new(AtomicU64::new(1_000));
    let limit = fixed_calls();
    let (cpu0, t0) = (cpu_time(), Instant::now());
    let mut loops = Vec::new();
    for _ in 0..concurrency {
        let (stop, calls, next_id, one) =
            (stop.clone(), calls.clone(), next_id.clone(), one.clone());
        loops.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                if limit.is_some_and(|n| id >= 1_000 + n) {
                    break;
                }
                one(id).await;
                calls.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    if limit.is_none() {
        tokio::time::sleep(run).await;
        stop.store(true, Ordering::Relaxed);
    }
    for l in loops {
        l.await.unwrap();
    }
    let calls = calls.load(Ordering::Relaxed);
    Some(Figure { calls, wall: t0.elapsed(), cpu: cpu_time() - cpu0 })
}

fn spawn_role(role: &str) -> std::process::Child {
    role_command(role).spawn().unwrap()
}

/// This bench run as `role`, its stdin and stdout piped; under `BENCH_WRAP` if set (to
/// profile the child: `BENCH_WRAP="valgrind --tool=dhat"`).
fn role_command(role: &str) -> std::process::Command {
    let exe = std::env::current_exe().unwrap();
    let mut command = match std::env::var("BENCH_WRAP") {
        Ok(wrap) => {
            let mut parts = wrap.split_whitespace();
            let mut command = std::process::Command::new(parts.next().unwrap());
            command.args(parts).arg(exe);
            command
        }
        Err(_) => std::process::Command::new(exe),
    };
    command.env(ROLE, role).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    command
}

/// `items` in turn, starting from the `round`th: each round runs its variants in another order.
fn rotated<T: Copy>(items: &[T], round: usize) -> Vec<T> {
    (0..items.len()).map(|i| items[(i + round) % items.len()]).collect()
}

// ---- HTTP ----

fn http(run: Duration, round: usize, results: &mut Results) {
    let mut limit = spawn_role("limit");
    let mut port = String::new();
    std::io::BufReader::new(limit.stdout.take().unwrap()).read_line(&mut port).unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", port.trim());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        for concurrency in concurrencies() {
            let workload = format!("http c={concurrency}");
            for variant in rotated(&[HTTP_OURS, HTTP_RAW], round) {
                let figure = if variant == HTTP_OURS {
                    ours_http(&url, concurrency, run).await
                } else {
                    raw_http(&url, concurrency, run).await
                };
                if let Some(figure) = figure {
                    results.add(&workload, variant, round, figure);
                }
            }
        }
    });
    limit.kill().ok();
    limit.wait().ok();
}

async fn ours_http(url: &str, concurrency: usize, run: Duration) -> Option<Figure> {
    let client =
        Client::new("bench", "1.0.0").with_protocol_version(ProtocolVersion::V2026_07_28).unwrap();
    client.connect(HttpTransport::new(url)).await.unwrap();
    let client = Arc::new(client);
    drive(concurrency, HTTP_OURS, run, move |_| {
        let client = client.clone();
        async move {
            let result = client.call_tool("test_simple_text", ()).await.unwrap();
            assert_eq!(result.text().as_deref(), Some(TEXT));
        }
    })
    .await
}

async fn raw_http(url: &str, concurrency: usize, run: Duration) -> Option<Figure> {
    let http = reqwest::Client::new();
    let url = url.to_owned();
    drive(concurrency, HTTP_RAW, run, move |id| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"test_simple_text","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1.0.0"}}}}}}}}"#
            );
            let answer = http
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "test_simple_text")
                .body(body)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(answer["id"], id);
            assert_eq!(answer["result"]["content"][0]["text"], TEXT);
        }
    })
    .await
}

fn limit_server() {
    limit::serve(tokio::runtime::Runtime::new().unwrap());
}

// ---- stdio ----

fn stdio(run: Duration, round: usize, results: &mut Results) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let variants = [
        STDIO_PAIR,
        STDIO_SERVER,
        STDIO_CLIENT,
        STDIO_RAW_PAIR,
        STDIO_TOKIO_PAIR,
        STDIO_TOKIO_SERVER,
        STDIO_SERDE_PAIR,
        STDIO_TOKIO_SERDE,
    ];
    for variant in rotated(&variants, round) {
        let server = if variant.ends_with("serde_json line echo") {
            "serde-echo"
        } else if variant.ends_with("echo") {
            "echo"
        } else {
            "stdio-server"
        };
        let figure = if variant.starts_with("ours") {
            rt.block_on(ours_stdio(server, variant, run))
        } else if variant.starts_with("tokio") {
            let server = if variant.ends_with("serde_json echo") {
                "tokio-serde-echo"
            } else if variant.ends_with("echo") {
                "tokio-echo"
            } else {
                "stdio-server"
            };
            rt.block_on(tokio_stdio_client(server, variant, run))
        } else {
            raw_stdio_client(server, variant, run)
        };
        if let Some(figure) = figure {
            results.add("stdio c=1", variant, round, figure);
        }
    }
}

/// Our `Client` over `ChildProcess`, in a 2025 session, one call at a time.
async fn ours_stdio(role: &str, variant: &str, run: Duration) -> Option<Figure> {
    if !selected(variant) {
        return None;
    }
    let client =
        Client::new("bench", "1.0.0").with_protocol_version(ProtocolVersion::V2025_11_25).unwrap();
    let exe = std::env::current_exe().unwrap();
    let child = ChildProcess::new(exe.to_string_lossy().into_owned()).env(ROLE, role);
    client.connect(child).await.unwrap();
    let client = Arc::new(client);
    let figure = drive(1, variant, run, {
        let client = client.clone();
        move |_| {
            let client = client.clone();
            async move {
                let result = client.call_tool("test_simple_text", ()).await.unwrap();
                assert_eq!(result.text().as_deref(), Some(TEXT));
            }
        }
    })
    .await;
    client.close().await.ok();
    figure
}

/// Writes one request line, reads one answer line, in a loop (c=1), after a 2025 handshake.
fn raw_stdio_client(role: &str, variant: &str, run: Duration) -> Option<Figure> {
    if !selected(variant) {
        return None;
    }
    let mut child = spawn_role(role);
    let mut input = child.stdin.take().unwrap();
    let mut output = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}"#;
    writeln!(input, "{init}").unwrap();
    output.read_line(&mut line).unwrap();
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    let (cpu0, t0) = (cpu_time(), Instant::now());
    let mut calls = 0u64;
    let limit = fixed_calls();
    while limit.map_or(t0.elapsed() < run, |n| calls < n) {
        calls += 1;
        writeln!(
            input,
            r#"{{"jsonrpc":"2.0","id":{calls},"method":"tools/call","params":{{"name":"test_simple_text","arguments":{{}}}}}}"#
        )
        .unwrap();
        input.flush().unwrap();
        line.clear();
        output.read_line(&mut line).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], calls, "{line}");
        assert_eq!(answer["result"]["content"][0]["text"], TEXT);
    }
    let figure = Figure { calls, wall: t0.elapsed(), cpu: cpu_time() - cpu0 };
    drop(input);
    // Stdin closed, the child ends (a server under a profiler writes its profile first).
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().ok();
    child.wait().ok();
    Some(figure)
}

/// The raw client's loop on tokio: a child's pipes read and written through the runtime, after
/// a 2025 handshake (which the echo answers like any line).
async fn tokio_stdio_client(role: &str, variant: &str, run: Duration) -> Option<Figure> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    if !selected(variant) {
        return None;
    }
    let mut child =
        tokio::process::Command::from(role_command(role)).kill_on_drop(true).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}"#;
    input.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    output.read_line(&mut line).await.unwrap();
    input
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let (cpu0, t0) = (cpu_time(), Instant::now());
    let mut calls = 0u64;
    let limit = fixed_calls();
    while limit.map_or(t0.elapsed() < run, |n| calls < n) {
        calls += 1;
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{calls},\"method\":\"tools/call\",\"params\":{{\"name\":\"test_simple_text\",\"arguments\":{{}}}}}}\n"
        );
        input.write_all(request.as_bytes()).await.unwrap();
        line.clear();
        output.read_line(&mut line).await.unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], calls, "{line}");
        assert_eq!(answer["result"]["content"][0]["text"], TEXT);
    }
    let figure = Figure { calls, wall: t0.elapsed(), cpu: cpu_time() - cpu0 };
    drop(input);
    // Stdin closed, the child ends (a server under a profiler writes its profile first).
    if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_err() {
        child.kill().await.ok();
    }
    Some(figure)
}

/// The raw echo on tokio: stdin and stdout as our stdio transport opens them (pipes through
/// the runtime's IO driver), one line in, one answer out; `with_serde`, each answered as the
/// serde_json echo does.
fn tokio_line_echo(with_serde: bool) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut input = tokio::io::BufReader::new(mcpl_core::transport::stdio::StdinReader::new());
        let mut out = mcpl_core::transport::stdio::StdoutWriter::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let answer = if with_serde {
                serde_answer(&line)
            } else {
                answer(&line).map(|mut answer| {
                    answer.push(b'\n');
                    answer
                })
            };
            if let Some(answer) = answer {
                out.write_all(&answer).await.unwrap();
                out.flush().await.unwrap();
            }
        }
    });
}

fn line_echo() {
    blocking_echo(|line| {
        answer(line).map(|mut answer| {
            answer.push(b'\n');
            answer
        })
    });
}

/// Reads request lines from stdin until it closes and writes what `respond` makes of each
/// (its newline included) to stdout, flushed: the blocking echoes' loop.
fn blocking_echo(respond: impl Fn(&[u8]) -> Option<Vec<u8>>) {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = Vec::new();
    let mut input = stdin.lock();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Some(answer) = respond(&line) {
            out.write_all(&answer).unwrap();
            out.flush().unwrap();
        }
    }
}

/// The least a JSON-RPC server does with a line: the raw echo's blocking loop, but each
/// request read into a `serde_json::Value` (its method and id looked up, its params checked
/// for the tool's name) and the answer built as a `Value` and written with `serde_json`: what
/// any JSON-RPC implementation pays before it does anything of its own.
fn serde_line_echo() {
    blocking_echo(serde_answer);
}

/// The serde_json echo's answer to a request line (`None` for anything else), its newline
/// included.
fn serde_answer(line: &[u8]) -> Option<Vec<u8>> {
    use serde_json::{Value, json};
    let request = serde_json::from_slice::<Value>(line).ok()?;
    let id = request.get("id")?;
    let result = match request["method"].as_str() {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "serde-echo", "version": "1.0.0"},
        }),
        _ if request["params"]["name"] == "test_simple_text" => json!({
            "content": [{"type": "text", "text": TEXT}],
            "isError": false,
        }),
        _ => return None,
    };
    let mut answer =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).ok()?;
    answer.push(b'\n');
    Some(answer)
}

fn stdio_server() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let server = Server::builder("bench", "1.0.0")
            .tool(Tool::new("test_simple_text", ToolSchema::object()), |_ctx, _args| async {
                Ok(ToolOutput::text(TEXT))
            })
            .build();
        mcpl_server::stdio::serve(server).await.ok();
    });
}
