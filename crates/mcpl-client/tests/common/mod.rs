//! A `mcpl-server` behind real sockets, with a probe that counts (and can refuse) every HTTP
//! request it receives.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcpl_client::transport::HttpTransport;
use mcpl_server::Server;
use mcpl_server::http::{HttpConfig, StreamableHttp};

/// What reached the server: `"POST tools/list"` (2026, from `Mcp-Method`), `"POST"` (2025),
/// `"GET"`, `"DELETE"`.
#[derive(Clone, Default)]
pub(crate) struct Probe {
    seen: Arc<Mutex<Vec<String>>>,
    failing: Arc<AtomicBool>,
}

impl Probe {
    pub(crate) fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// How many requests of this 2026 method arrived.
    pub(crate) fn count_of(&self, method: &str) -> usize {
        let wanted = format!("POST {method}");
        self.seen.lock().unwrap().iter().filter(|s| **s == wanted).count()
    }

    /// Makes the server answer every request with `503` (or serve again).
    pub(crate) fn fail(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

async fn probe(State(probe): State<Probe>, request: Request, next: Next) -> Response {
    let mut line = request.method().to_string();
    if let Some(method) = request.headers().get("mcp-method").and_then(|v| v.to_str().ok()) {
        line = format!("{line} {method}");
    }
    probe.seen.lock().unwrap().push(line);
    if probe.failing.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    next.run(request).await
}

pub(crate) struct Running {
    pub(crate) addr: SocketAddr,
    pub(crate) http: StreamableHttp,
    pub(crate) probe: Probe,
    pub(crate) server: Server,
}

impl Running {
    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub(crate) fn transport(&self) -> HttpTransport {
        HttpTransport::new(self.url())
    }
}

pub(crate) async fn start(server: Server, config: HttpConfig) -> Running {
    let http = StreamableHttp::new(server.clone(), config.retry(Duration::from_millis(50)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let probe = Probe::default();
    let router = http
        .clone()
        .into_router("/mcp")
        .layer(axum::middleware::from_fn_with_state(probe.clone(), self::probe));
    tokio::spawn(mcpl_server::http::serve(listener, router));
    Running { addr, http, probe, server }
}

/// Waits (bounded, as a hang guard) until `done` holds.
pub(crate) async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}
