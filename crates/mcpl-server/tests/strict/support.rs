//! What the tests share: servers on ephemeral loopback ports, raw and typed HTTP requests.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use mcpl_server::Server;
use mcpl_server::http::{HttpConfig, StreamableHttp};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long any one exchange may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// Runs `serve` on a loopback listener, on a thread and runtime of its own: a server stuck on
/// a core then cannot stop the test's clock (its timeouts still fire). The thread ends with
/// the test process.
pub fn spawn_server<F, Fut>(serve: F) -> SocketAddr
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: std::future::Future,
{
    spawn_logged_server(serve).0
}

/// [`spawn_server`], with what the server logs (at `debug` and above) kept in [`Logs`].
pub fn spawn_logged_server<F, Fut>(serve: F) -> (SocketAddr, Logs)
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: std::future::Future,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let logs = Logs::default();
    let writer = logs.clone();
    std::thread::spawn(move || {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let _logging = tracing::subscriber::set_default(subscriber);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            serve(tokio::net::TcpListener::from_std(listener).unwrap()).await;
        });
    });
    (addr, logs)
}

/// What a server logged, one line per event.
#[derive(Clone, Default)]
pub struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    /// The lines logged so far that contain `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serves `server` through the router (`http::serve`) at `/mcp`.
pub async fn serve_router(server: Server, config: HttpConfig) -> SocketAddr {
    let app = StreamableHttp::new(server, config).into_router("/mcp");
    serve_app(app).await
}

/// Serves an axum app.
pub async fn serve_app(app: axum::Router) -> SocketAddr {
    spawn_server(move |listener| mcpl_server::http::serve(listener, app))
}

/// Serves `server` straight on hyper (`StreamableHttp::serve_at`) at `/mcp`.
pub async fn serve_direct(server: Server, config: HttpConfig) -> SocketAddr {
    let endpoint = StreamableHttp::new(server, config);
    spawn_server(move |listener| endpoint.serve_at(listener, "/mcp"))
}

/// A raw HTTP exchange: writes `request` as it is and reads until the server closes the
/// connection. Gives the status (0 if there was no status line) and the body.
pub async fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        // Until the server closes (a reset after the answer is fine: what was read is the
        // answer), or the answer is complete by its length, or the head of a `101` is in (the
        // connection then stays open).
        while let Ok(n @ 1..) = stream.read(&mut chunk).await {
            out.extend_from_slice(&chunk[..n]);
            if complete(&out) {
                break;
            }
        }
        out
    };
    let out = tokio::time::timeout(WAIT, exchange).await.expect("the server answered in time");
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// Whether `out` holds a whole answer: the head of a `101`, or a head with a
/// `content-length` and that many bytes of body.
fn complete(out: &[u8]) -> bool {
    let text = String::from_utf8_lossy(out);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
    if head.starts_with("HTTP/1.1 101") {
        return true;
    }
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
    });
    length.is_some_and(|length| body.len() >= length)
}

/// A raw POST of `body` to `/mcp` with the given header lines (each without CRLF), closing
/// the connection after.
pub fn raw_post(headers: &[&str], body: &str) -> Vec<u8> {
    let mut request = String::from("POST /mcp HTTP/1.1\r\n");
    for line in headers {
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str("content-type: application/json\r\n");
    request.push_str("accept: application/json, text/event-stream\r\n");
    request.push_str("connection: close\r\n");
    request.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    request.into_bytes()
}

/// The `_meta` of a stateless-era request.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "strict", "version": "1"}
    })
}

/// A stateless-era request (`_meta` added unless `params` has one).
pub fn request(id: Value, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A `tools/call` in the stateless era.
pub fn call(id: Value, tool: &str, arguments: Value) -> Value {
    request(id, "tools/call", json!({"name": tool, "arguments": arguments}))
}

/// The JSON-RPC messages of a response body, JSON or SSE.
pub fn messages(content_type: &str, text: &str) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    } else if text.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(text).unwrap()]
    }
}

/// An answer: status, the `Mcp-Session-Id` header if any, and the JSON-RPC messages.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub session: Option<String>,
    pub messages: Vec<Value>,
}

impl Answer {
    /// The last message (the response, on a request stream).
    pub fn last(&self) -> &Value {
        self.messages.last().expect("a message")
    }
}

/// Posts `body` with the headers a correct client of its era sends, plus `extra` (a stateless
/// request gets the 2026 headers unless `extra` sets them).
pub async fn post(addr: SocketAddr, body: &Value, extra: &[(&str, &str)]) -> Answer {
    let stateless =
        body["params"]["_meta"].get("io.modelcontextprotocol/protocolVersion").is_some();
    let mut rb = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .timeout(WAIT)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    let set: std::collections::HashSet<String> =
        extra.iter().map(|(k, _)| k.to_ascii_lowercase()).collect();
    for (k, v) in extra {
        rb = rb.header(*k, *v);
    }
    if stateless {
        if !set.contains("mcp-protocol-version") {
            rb = rb.header("mcp-protocol-version", "2026-07-28");
        }
        if !set.contains("mcp-method") {
            rb = rb.header("mcp-method", body["method"].as_str().unwrap());
        }
        let p = &body["params"];
        let name = p["name"].as_str().or(p["uri"].as_str()).or(p["taskId"].as_str());
        if let (false, Some(name)) = (set.contains("mcp-name"), name) {
            rb = rb.header("mcp-name", name);
        }
    }
    let resp = rb.body(serde_json::to_vec(body).unwrap()).send().await.unwrap();
    let status = resp.status().as_u16();
    let header = |name: &str| resp.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    let content_type = header("content-type").unwrap_or_default();
    let session = header("mcp-session-id");
    let text = resp.text().await.unwrap();
    Answer { status, session, messages: messages(&content_type, &text) }
}

/// The `initialize` request of a 2025-11-25 client.
pub fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "strict", "version": "1"}
        }
    })
}

/// Opens a 2025-11-25 session (`extra` headers on every request); gives its id.
pub async fn open_session(addr: SocketAddr, extra: &[(&str, &str)]) -> String {
    let answer = post(addr, &initialize(), extra).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let session = answer.session.expect("a session id");
    let mut headers = extra.to_vec();
    headers.push(("mcp-session-id", &session));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(addr, &initialized, &headers).await.status, 202);
    session
}
