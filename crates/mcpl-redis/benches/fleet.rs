//! Stateful (2025-11-25 sessions) throughput of a fleet: two instances on one Redis, each
//! client alternating between them request by request, against one instance with the
//! in-memory stores. A benchmark, not a test: it prints requests per second of each, round by
//! round, and their ratio (the medians last); it asserts nothing but that every answer is a
//! tool result.
//!
//! ```sh
//! cargo bench -p mcpl-redis --bench fleet                          # 3 rounds of 8 s each
//! cargo bench -p mcpl-redis --bench fleet -- --rounds 5 --secs 10 --clients 32
//! ```
//!
//! The instances are this binary run again as servers (one `echo` tool, `StreamableHttp` with
//! default settings on a multi-threaded runtime), each a child process; Redis is a private
//! `redis-server` ([`mcpl_redis::RedisServer`]). The load is `--clients` (default 32) clients
//! on one `reqwest` client in this process, each with a session of its own (initialized at the
//! first instance), calling the tool back to back. Run it on a quiet machine: the load, the
//! instances and Redis share its cores. Figures: `docs/performance.md`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcpl_core::types::{Tool, ToolSchema};
use mcpl_redis::{Redis, RedisConfig, RedisEventStore, RedisServer, RedisSessionStore};
use mcpl_server::http::{HttpConfig, StreamableHttp};

/// Set in a child: serve with `memory` stores, or with Redis at this URL.
const SERVE_ENV: &str = "MCPL_FLEET_BENCH_SERVE";

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    if let Ok(stores) = std::env::var(SERVE_ENV) {
        runtime.block_on(serve(stores));
        return;
    }
    runtime.block_on(bench());
}

async fn serve(stores: String) {
    let server = mcpl_server::Server::builder("fleet-bench", "0")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(mcpl_server::ToolOutput::text(serde_json::Value::Object(args).to_string()))
        })
        .build();
    let endpoint = if stores == "memory" {
        StreamableHttp::new(server, HttpConfig::new())
    } else {
        let redis = Redis::open(RedisConfig::new(stores).prefix("fleet-bench")).unwrap();
        StreamableHttp::with_stores(
            server,
            HttpConfig::new(),
            RedisEventStore::new(redis.clone()),
            RedisSessionStore::new(redis),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("listening on http://{}/mcp", listener.local_addr().unwrap());
    endpoint.serve_at(listener, "/mcp").await.unwrap();
}

/// An instance: this binary as a server, killed when dropped.
struct Instance {
    child: Child,
    url: String,
}

impl Instance {
    fn start(stores: &str) -> Instance {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(SERVE_ENV, stores)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.trim().strip_prefix("listening on ").expect("its address").to_owned();
        Instance { child, url }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fleet-bench","version":"0"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}"#;

fn post(http: &reqwest::Client, url: &str, body: &'static str) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
}

/// A session initialized at `url`.
async fn session(http: &reqwest::Client, url: &str) -> String {
    let response = post(http, url, INIT).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    response.bytes().await.unwrap();
    let done = post(http, url, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202);
    id
}

/// Requests per second of `clients` sessions calling the tool for `secs`, each alternating
/// between `urls`.
async fn run(urls: &[String], clients: u64, secs: u64) -> f64 {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::try_from(clients).unwrap())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(session(&http, &urls[0]).await);
    }
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let mut workers = Vec::new();
    for (n, id) in sessions.into_iter().enumerate() {
        let (http, urls, done) = (http.clone(), urls.to_vec(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut at = n;
            while Instant::now() < deadline {
                at += 1;
                let response = post(&http, &urls[at % urls.len()], CALL)
                    .header("mcp-session-id", &id)
                    .header("mcp-protocol-version", "2025-11-25")
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let body = response.text().await.unwrap();
                assert!(
                    body.contains(r#""result""#) && !body.contains(r#""isError":true"#),
                    "{body}"
                );
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn bench() {
    let (rounds, secs, clients) = (arg("--rounds", 3), arg("--secs", 8), arg("--clients", 32));
    let redis = RedisServer::start().expect("redis-server on the PATH");
    let memory = Instance::start("memory");
    let a = Instance::start(&redis.url());
    let b = Instance::start(&redis.url());
    let single = [memory.url.clone()];
    let fleet = [a.url.clone(), b.url.clone()];
    println!("stateful tools/call, c={clients}, {secs} s a run, {rounds} rounds");
    let (mut ones, mut fleets, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=rounds {
        // Alternate which goes first, so that neither always runs on a warmer machine.
        let (one, two) = if round % 2 == 1 {
            let one = run(&single, clients, secs).await;
            (one, run(&fleet, clients, secs).await)
        } else {
            let two = run(&fleet, clients, secs).await;
            (run(&single, clients, secs).await, two)
        };
        println!(
            "round {round}: one instance in memory {one:.0} req/s, two on Redis {two:.0} req/s, ratio {:.3}",
            two / one
        );
        ones.push(one);
        fleets.push(two);
        ratios.push(two / one);
    }
    println!(
        "median: one instance in memory {:.0} req/s, two on Redis {:.0} req/s, ratio {:.3}",
        median(&mut ones),
        median(&mut fleets),
        median(&mut ratios)
    );
}
