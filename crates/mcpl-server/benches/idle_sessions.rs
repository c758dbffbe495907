//! Heap bytes and blocks an idle 2025 session keeps on the server: `N` sessions (default 2000,
//! `IDLE_SESSIONS`) are initialized through the endpoint as a tower `Service` (no sockets, so
//! nothing of a client or a connection is counted), their responses read and dropped; then the
//! live heap is compared with the one before. Prints, asserts nothing.
//!
//! ```sh
//! cargo bench -p mcpl-server --bench idle_sessions
//! IDLE_SESSIONS=500 IDLE_PROFILE=1 cargo bench -p mcpl-server --bench idle_sessions  # + dhat-heap.json
//! ```
//!
//! With `IDLE_PROFILE=1` the heap profile (`dhat-heap.json`, for DHAT's viewer) is written at
//! exit while the sessions are still alive: its "at t-end" figures are what the sessions hold,
//! by allocation site.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::Duration;

use axum::body::Body;
use http_body_util::BodyExt as _;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use tower::ServiceExt as _;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{
    "protocolVersion":"2025-11-25","capabilities":{},
    "clientInfo":{"name":"bench-client","version":"1.0.0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn post(body: &'static str, session: Option<&str>) -> axum::http::Request<Body> {
    let mut request = axum::http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request.body(Body::from(body)).expect("a valid request")
}

async fn open(endpoint: &StreamableHttp) {
    let response = endpoint.clone().oneshot(post(INITIALIZE, None)).await.expect("infallible");
    assert_eq!(response.status(), 200, "initialize");
    let id = response.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
    response.into_body().collect().await.expect("the body");
    let response =
        endpoint.clone().oneshot(post(INITIALIZED, Some(&id))).await.expect("infallible");
    assert_eq!(response.status(), 202, "initialized");
    response.into_body().collect().await.expect("the body");
}

fn main() {
    let n: usize = std::env::var("IDLE_SESSIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let profile = std::env::var_os("IDLE_PROFILE").is_some();
    let _profiler = if profile {
        dhat::Profiler::new_heap()
    } else {
        dhat::Profiler::builder().testing().build()
    };
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let server = Server::builder("idle", "1.0.0")
            .tool(Tool::new("echo", ToolSchema::object()), |_ctx, _args| async {
                Ok(ToolOutput::text("echo"))
            })
            .build();
        let endpoint = StreamableHttp::new(server, HttpConfig::new().max_sessions(n + 16));
        // A first session warms what is made once (the shared engine, lazy tables).
        open(&endpoint).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before = dhat::HeapStats::get();
        for _ in 0..n {
            open(&endpoint).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = dhat::HeapStats::get();
        let bytes = after.curr_bytes.saturating_sub(before.curr_bytes);
        let blocks = after.curr_blocks.saturating_sub(before.curr_blocks);
        println!(
            "idle 2025 sessions: {n}; per session: {} bytes in {:.1} blocks (live heap, requested sizes)",
            bytes / n,
            blocks as f64 / n as f64
        );
        if profile {
            // Keep the sessions alive while the profile is written.
            std::mem::forget(endpoint);
        }
    });
}
