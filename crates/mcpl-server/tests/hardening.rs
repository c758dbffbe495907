//! The HTTP and WebSocket entry points under hostile networks, over real sockets on loopback:
//! slow and half-sent requests, floods, caps, cancels and shutdown. Every wait is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use mcpl_core::engine::BoxFuture;
use mcpl_core::jsonrpc::Message;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::event_store::{EventPosition, EventStore, InMemoryEventStore};
use mcpl_server::http::{
    ConnectionConfig, ConnectionThreads, HttpConfig, RefusalKind, StreamableHttp,
};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any single step of these tests may take.
const BOUND: Duration = Duration::from_secs(10);

/// The `tag`s of the `sleep` calls whose handler started.
static ENTERED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Waits until the `sleep` call tagged `tag` is running.
async fn entered(tag: &str) {
    eventually(tag, || ENTERED.lock().unwrap().iter().any(|t| t == tag)).await;
}

/// Set once the handler of a `forever` task is dropped.
static FOREVER_DROPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

struct SetOnDrop;
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        FOREVER_DROPPED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn server() -> Server {
    Server::builder("hardening", "0.0.1")
        .task_tool(
            Tool::new("forever", ToolSchema::object()),
            mcpl_server::task::TaskOptions::optional(),
            |_ctx, _args| async move {
                let _guard = SetOnDrop;
                tokio::time::sleep(Duration::from_secs(600)).await;
                Ok(ToolOutput::text("never"))
            },
        )
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(Value::Object(args).to_string()))
        })
        .tool(Tool::new("slow_echo", ToolSchema::object()), |_ctx, args| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(ToolOutput::text(Value::Object(args).to_string()))
        })
        .tool(Tool::new("thread", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text(std::thread::current().name().unwrap_or("").to_owned()))
        })
        .tool(Tool::new("sleep", ToolSchema::object()), |_ctx, args| async move {
            if let Some(tag) = args.get("tag").and_then(Value::as_str) {
                ENTERED.lock().unwrap().push(tag.to_owned());
            }
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(100);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(ToolOutput::text("slept"))
        })
        .build()
}

async fn start(config: HttpConfig) -> (SocketAddr, StreamableHttp) {
    let endpoint = StreamableHttp::new(server(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    (addr, endpoint)
}

/// A stateless-era `tools/call` of `echo`, as a body.
fn echo_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"x": 1},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

/// The head of a POST to `/mcp` of the 2026 era, with `extra` header lines.
fn post_head(extra: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: echo\r\n{extra}\r\n"
    )
}

/// Reads from `stream` until it closes (or `BOUND` passes, which fails the test).
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(BOUND, stream.read_to_end(&mut out))
        .await
        .expect("the server did not close the connection in time")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads until `needle` shows up in what was read.
async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(BOUND, async {
        while !String::from_utf8_lossy(&out).contains(needle) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before {needle:?}: {}", String::from_utf8_lossy(&out));
            out.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {needle:?} in time: {}", String::from_utf8_lossy(&out)));
    String::from_utf8_lossy(&out).into_owned()
}

// Item 1: bodies are read into one bounded buffer.

#[tokio::test]
async fn a_body_announcing_more_than_the_limit_is_refused_before_it_is_sent() {
    let (addr, endpoint) = start(HttpConfig::new().max_body(1000)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    // 2000 bytes announced, none sent: the answer must not wait for them.
    tcp.write_all(post_head("content-length: 2000\r\n").as_bytes()).await.unwrap();
    let answer = read_until(&mut tcp, "\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(endpoint.refusals().count(RefusalKind::BodyTooLarge), 1);
}

#[tokio::test]
async fn a_body_dribbled_one_byte_at_a_time_is_read_whole() {
    let (addr, _endpoint) = start(HttpConfig::new()).await;
    let body = echo_body();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    tcp.write_all(post_head(&format!("content-length: {}\r\n", body.len())).as_bytes())
        .await
        .unwrap();
    for byte in body.as_bytes() {
        tcp.write_all(std::slice::from_ref(byte)).await.unwrap();
        tokio::task::yield_now().await;
    }
    let answer = read_until(&mut tcp, "\"result\"").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_refused_as_it_arrives() {
    let (addr, endpoint) = start(HttpConfig::new().max_body(1000)).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(post_head("transfer-encoding: chunked\r\n").as_bytes()).await.unwrap();
    // Small chunks, more than the limit in all, and no end: refused once over the limit.
    for _ in 0..120 {
        if tcp.write_all(b"a\r\n0123456789\r\n").await.is_err() {
            break;
        }
    }
    let answer = read_until(&mut tcp, "\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(endpoint.refusals().count(RefusalKind::BodyTooLarge), 1);
}

// Item 2: timeouts, the connection cap.

// The headers every request reads are found in one pass over the head: what a peer repeats
// or piles up is refused or read as before, and the pass is bounded by the parser's count.

/// Sends a POST of `echo_body()` with `extra` header lines on a new connection; its status
/// line and whatever else came with it.
async fn post_with(addr: SocketAddr, extra: &str) -> String {
    let body = echo_body();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = post_head(&format!("{extra}content-length: {}\r\n", body.len()));
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(body.as_bytes()).await.unwrap();
    read_until(&mut tcp, "\r\n\r\n").await
}

#[tokio::test]
async fn a_repeated_host_or_origin_is_refused_and_counted_once() {
    let (addr, endpoint) = start(HttpConfig::new()).await;
    let answer = post_with(addr, "host: localhost\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let answer = post_with(addr, "origin: http://localhost\r\norigin: http://localhost\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert_eq!(endpoint.refusals().count(RefusalKind::BadRequest), 1);
    assert_eq!(endpoint.refusals().count(RefusalKind::Forbidden), 1);
    assert_eq!(endpoint.refusals().total(), 2, "{:?}", endpoint.refusals());
}

#[tokio::test]
async fn piled_up_headers_are_read_to_the_parsers_bound_and_refused_past_it() {
    let (addr, endpoint) = start(HttpConfig::new()).await;
    // Within the parser's 100 headers: the first of each repeated header is the one read (a
    // later `Mcp-Method` or `MCP-Protocol-Version` changes nothing), the rest is ignored.
    let mut extra = String::from("mcp-method: ping\r\nmcp-protocol-version: 1999-01-01\r\n");
    for i in 0..80 {
        extra.push_str(&format!("x-junk-{i}: {}\r\n", "v".repeat(64)));
    }
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let body = echo_body();
    let head = post_head(&format!("{extra}content-length: {}\r\n", body.len()));
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(body.as_bytes()).await.unwrap();
    let answer = read_until(&mut tcp, "\"result\"").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Past it: refused by the parser before the endpoint reads anything.
    let mut extra = String::new();
    for i in 0..150 {
        extra.push_str(&format!("x-junk-{i}: v\r\n"));
    }
    let answer = post_with(addr, &extra).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert_eq!(endpoint.refusals().total(), 0, "{:?}", endpoint.refusals());
}

fn quick() -> ConnectionConfig {
    ConnectionConfig::new()
        .header_read_timeout(Some(Duration::from_millis(300)))
        .body_timeout(Some(Duration::from_millis(300)))
}

#[tokio::test]
async fn a_half_sent_head_is_closed_after_the_header_timeout() {
    let (addr, endpoint) = start(HttpConfig::new().connections(quick())).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nhost: local").await.unwrap();
    let answer = read_to_close(&mut tcp).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    // Counted once the connection task noticed.
    tokio::time::timeout(BOUND, async {
        while endpoint.refusals().count(RefusalKind::HeaderTimeout) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
}

/// Waits until one half-sent head was counted, after whatever closed before: then exactly
/// one must be (the idle connections closed before were not refusals).
async fn only_a_half_sent_head_counts(addr: SocketAddr, endpoint: &StreamableHttp) {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nhost: local").await.unwrap();
    read_to_close(&mut tcp).await;
    tokio::time::timeout(BOUND, async {
        while endpoint.refusals().count(RefusalKind::HeaderTimeout) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(endpoint.refusals().count(RefusalKind::HeaderTimeout), 1);
    assert_eq!(endpoint.refusals().total(), 1, "{:?}", endpoint.refusals());
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed() {
    let (addr, endpoint) = start(HttpConfig::new().connections(quick())).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    assert_eq!(read_to_close(&mut tcp).await, "");
    // Opened ahead of need (as browsers do), not an attack: closed, not counted.
    only_a_half_sent_head_counts(addr, &endpoint).await;
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed() {
    let (addr, endpoint) = start(HttpConfig::new().connections(quick())).await;
    let body = echo_body();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let request = format!("{}{body}", post_head(&format!("content-length: {}\r\n", body.len())));
    tcp.write_all(request.as_bytes()).await.unwrap();
    let answer = read_to_close(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Closed by the keep-alive timeout: not a refusal.
    only_a_half_sent_head_counts(addr, &endpoint).await;
}

#[tokio::test]
async fn on_threads_of_its_own_a_half_sent_head_is_still_closed_after_the_header_timeout() {
    let two = ConnectionThreads::Own(std::num::NonZeroUsize::new(2).unwrap());
    let (addr, endpoint) = start(HttpConfig::new().connections(quick().threads(two))).await;
    // The idle connection (closed, not counted) and the half-sent head land on both threads.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(read_to_close(&mut idle).await, "");
    only_a_half_sent_head_counts(addr, &endpoint).await;
}

// A client that stops reading is cut after the write timeout.

/// A listener, and a client socket for it, whose buffers are small: a client that stops
/// reading shows at once (Linux lets loopback buffers grow to megabytes otherwise).
fn small_buffers() -> (tokio::net::TcpListener, tokio::net::TcpSocket) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_send_buffer_size(32 * 1024).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(16).unwrap();
    let client = tokio::net::TcpSocket::new_v4().unwrap();
    client.set_recv_buffer_size(32 * 1024).unwrap();
    (listener, client)
}

#[tokio::test]
async fn an_http_client_that_reads_nothing_is_cut_after_the_write_timeout() {
    let connections = ConnectionConfig::new().write_timeout(Some(Duration::from_millis(300)));
    let endpoint = StreamableHttp::new(server(), HttpConfig::new().connections(connections));
    let (listener, client) = small_buffers();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    // A 3 MB answer, far more than both sockets hold, that the client never reads.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"pad": "x".repeat(3 * 1024 * 1024)},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut tcp = client.connect(addr).await.unwrap();
    let head = post_head(&format!("content-length: {}\r\n", body.len()));
    tcp.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    tokio::time::timeout(BOUND, async {
        while endpoint.refusals().count(RefusalKind::WriteTimeout) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("a client that reads nothing kept its connection");
    // The connection is gone: what the sockets held, then the end.
    let got = read_to_close(&mut tcp).await;
    assert!(got.len() < 3 * 1024 * 1024, "the whole answer went out: {} bytes", got.len());
    assert_eq!(endpoint.refusals().count(RefusalKind::WriteTimeout), 1);
}

#[tokio::test]
async fn a_session_client_that_reads_nothing_is_cut_and_the_session_serves_on() {
    let connections = ConnectionConfig::new().write_timeout(Some(Duration::from_millis(300)));
    let endpoint = StreamableHttp::new(server(), HttpConfig::new().connections(connections));
    let (listener, client) = small_buffers();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    let mut session = Session::new(addr);
    session.initialize().await;
    let id = session.id.clone().unwrap();
    // A 3 MB answer on the request's SSE stream (given at once, so written as one frame), and
    // a client that never reads it.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"pad": "x".repeat(3 * 1024 * 1024)}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {id}\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    let mut tcp = client.connect(addr).await.unwrap();
    tcp.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    eventually("the write timeout", || endpoint.refusals().count(RefusalKind::WriteTimeout) > 0)
        .await;
    // The session's sender is not held by the request whose client stalled: the next one
    // is answered.
    let answer = session.call(2, "echo", json!({"after": "stall"})).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(answer.text().await.unwrap().contains("stall"));
    assert_eq!(endpoint.refusals().count(RefusalKind::WriteTimeout), 1);
}

#[tokio::test]
async fn a_websocket_client_that_reads_nothing_is_cut_after_the_write_timeout() {
    use futures::SinkExt;
    use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    use tokio_tungstenite::tungstenite::Message as Ws;

    let server = Server::builder("slow-reader", "0")
        .write_timeout(Some(Duration::from_millis(300)))
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(Value::Object(args).to_string()))
        })
        .build();
    let endpoint = WebSocketEndpoint::new(server, WsConfig::new());
    let (listener, client) = small_buffers();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.clone().into_router("/ws")));
    let tcp = client.connect(addr).await.unwrap();
    let (mut ws, _) =
        tokio_tungstenite::client_async(format!("ws://{addr}/ws"), tcp).await.unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    ws.send(Ws::text(init.to_string())).await.unwrap();
    // Calls whose answers (64 KB each) nobody reads: the server's writes stall.
    let pad = "x".repeat(64 * 1024);
    let sending = async {
        for id in 1..=200 {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"pad": pad}}});
            if ws.send(Ws::text(call.to_string())).await.is_err() {
                break;
            }
        }
    };
    let cut = async {
        while endpoint.refusals().count(RefusalKind::WriteTimeout) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(BOUND, async { tokio::join!(sending, cut) })
        .await
        .expect("a client that reads nothing kept its connection");
    tokio::time::timeout(BOUND, async {
        while endpoint.connection_count() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the connection stayed open");
    assert_eq!(endpoint.refusals().count(RefusalKind::WriteTimeout), 1);
}

#[tokio::test]
async fn a_half_sent_body_gets_408_after_the_body_timeout() {
    let (addr, endpoint) = start(HttpConfig::new().connections(quick())).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(post_head("content-length: 100\r\n").as_bytes()).await.unwrap();
    tcp.write_all(b"{\"jsonrpc\":").await.unwrap();
    let answer = read_to_close(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(endpoint.refusals().count(RefusalKind::BodyTimeout), 1);
}

#[tokio::test]
async fn connections_over_the_cap_get_503_and_the_cap_frees_up() {
    let connections = ConnectionConfig::new().max_connections(2);
    let (addr, endpoint) = start(HttpConfig::new().connections(connections)).await;
    let first = TcpStream::connect(addr).await.unwrap();
    let _second = TcpStream::connect(addr).await.unwrap();
    // Give the accept loop time to take both (it serves in accept order).
    tokio::time::timeout(BOUND, async {
        loop {
            let mut third = TcpStream::connect(addr).await.unwrap();
            let answer = read_to_close(&mut third).await;
            if answer.starts_with("HTTP/1.1 503") {
                assert!(answer.to_ascii_lowercase().contains("retry-after: 1"), "{answer}");
                break;
            }
        }
    })
    .await
    .unwrap();
    assert!(endpoint.refusals().count(RefusalKind::ConnectionLimit) >= 1);
    drop(first);
    // A slot frees once the server notices the close; then a request is served.
    let body = echo_body();
    let request = format!("{}{body}", post_head(&format!("content-length: {}\r\n", body.len())));
    tokio::time::timeout(BOUND, async {
        loop {
            let mut next = TcpStream::connect(addr).await.unwrap();
            next.write_all(request.as_bytes()).await.ok();
            let mut head = [0u8; 12];
            if next.read_exact(&mut head).await.is_ok() && &head == b"HTTP/1.1 200" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
}

// A 2025 session over reqwest.

struct Session {
    client: reqwest::Client,
    url: String,
    id: Option<String>,
}

impl Session {
    fn new(addr: SocketAddr) -> Self {
        Session { client: reqwest::Client::new(), url: format!("http://{addr}/mcp"), id: None }
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .post(&self.url)
            .timeout(BOUND)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(id) = &self.id {
            request = request.header("mcp-session-id", id);
        }
        request
    }

    /// `initialize` alone (no `notifications/initialized`): the status, and the session id.
    async fn open(&mut self) -> reqwest::Response {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}});
        let response = self.post(&init).send().await.unwrap();
        if let Some(id) = response.headers().get("mcp-session-id") {
            self.id = Some(id.to_str().unwrap().to_owned());
        }
        response
    }

    /// The whole handshake.
    async fn initialize(&mut self) {
        let response = self.open().await;
        assert_eq!(response.status(), 200);
        response.text().await.unwrap();
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(&ready).send().await.unwrap().status(), 202);
    }

    fn call(&self, id: u64, tool: &str, arguments: Value) -> reqwest::RequestBuilder {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}))
    }
}

/// Waits until `done` holds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(BOUND, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not in time: {what}"));
}

// Item 3: the session cap.

#[tokio::test]
async fn an_initialize_flood_neither_overshoots_the_cap_nor_locks_out_a_real_client() {
    let (addr, endpoint) = start(HttpConfig::new().max_sessions(20)).await;
    let flood = (0..60).map(|_| async move {
        let mut session = Session::new(addr);
        let response = session.open().await;
        let status = response.status();
        response.text().await.unwrap();
        status
    });
    // At once: handshakes under way hold their slots (the rest get 503), none beyond the cap.
    let statuses = futures::future::join_all(flood).await;
    assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
    assert!(statuses.iter().filter(|s| **s == 200).count() >= 20, "{statuses:?}");
    assert!(endpoint.session_count() <= 20, "cap overshot: {}", endpoint.session_count());
    // One after another: each takes the place of an idle one.
    for _ in 0..30 {
        let mut session = Session::new(addr);
        assert_eq!(session.open().await.status(), 200);
    }
    assert!(endpoint.session_count() <= 20, "cap overshot: {}", endpoint.session_count());
    // A real client still gets in, and works.
    let mut client = Session::new(addr);
    client.initialize().await;
    let response = client.call(1, "echo", json!({"a": 1})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("\"result\""));
    assert!(endpoint.session_count() <= 20);
}

#[tokio::test]
async fn with_every_session_busy_initialize_gets_503_with_retry_after_and_its_id() {
    let (addr, endpoint) = start(HttpConfig::new().max_sessions(1)).await;
    let mut busy = Session::new(addr);
    busy.initialize().await;
    let call = tokio::spawn(busy.call(1, "sleep", json!({"ms": 1500, "tag": "busy"})).send());
    entered("busy").await;
    let init = json!({"jsonrpc": "2.0", "id": "init-7", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let refused = Session::new(addr).post(&init).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["id"], "init-7", "{body}");
    assert_eq!(endpoint.refusals().count(RefusalKind::SessionLimit), 1);
    let answered = call.await.unwrap().unwrap();
    assert!(answered.text().await.unwrap().contains("slept"));
}

#[tokio::test]
async fn sessions_that_never_finish_the_handshake_are_closed_soon() {
    let config = HttpConfig::new().handshake_timeout(Duration::from_secs(1));
    let (addr, endpoint) = start(config).await;
    let mut left = Session::new(addr);
    left.open().await.text().await.unwrap();
    let mut kept = Session::new(addr);
    kept.initialize().await;
    eventually("the half-open session is closed", || endpoint.session_count() == 1).await;
    let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
    assert_eq!(kept.post(&ping).send().await.unwrap().status(), 200);
    let gone = left.post(&ping).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    let body: Value = serde_json::from_str(&gone.text().await.unwrap()).unwrap();
    assert_eq!(body["id"], 5, "the 404 names the request: {body}");
}

// Item 5: the idle reaper spares live work.

#[tokio::test]
async fn a_call_longer_than_the_idle_timeout_is_answered() {
    let config = HttpConfig::new().session_idle_timeout(Duration::from_millis(600));
    let (addr, endpoint) = start(config).await;
    let mut session = Session::new(addr);
    session.initialize().await;
    let response = session.call(1, "sleep", json!({"ms": 2000})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("slept"));
    // And once idle, the session does go.
    eventually("the idle session is closed", || endpoint.session_count() == 0).await;
}

#[tokio::test]
async fn a_session_holding_only_its_get_stream_is_not_reaped() {
    let config = HttpConfig::new().session_idle_timeout(Duration::from_millis(600));
    let (addr, endpoint) = start(config).await;
    let mut session = Session::new(addr);
    session.initialize().await;
    let get = session
        .client
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session.id.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(endpoint.session_count(), 1, "the session was reaped under its open stream");
    drop(get);
    eventually("the session is closed once idle", || endpoint.session_count() == 0).await;
}

// Item 6: a cancelled request's stream ends.

#[tokio::test]
async fn a_cancelled_request_ends_its_stream() {
    let (addr, _endpoint) = start(HttpConfig::new()).await;
    let mut session = Session::new(addr);
    session.initialize().await;
    let mut stream = session
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 60_000}}}))
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    // The priming event: the call is under way.
    let first = tokio::time::timeout(BOUND, stream.chunk()).await.unwrap().unwrap();
    assert!(first.is_some());
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "user gave up"}});
    assert_eq!(session.post(&cancel).send().await.unwrap().status(), 202);
    let rest = tokio::time::timeout(BOUND, async {
        let mut rest = Vec::new();
        while let Some(chunk) = stream.chunk().await.unwrap() {
            rest.extend_from_slice(&chunk);
        }
        rest
    })
    .await
    .expect("the cancelled request's stream stayed open");
    assert!(!String::from_utf8_lossy(&rest).contains("slept"));
}

// Item 8: graceful shutdown.

#[tokio::test]
async fn serve_at_shuts_down_gracefully_under_traffic() {
    shuts_down_gracefully_under_traffic(ConnectionThreads::Caller, "serve_at").await;
}

#[tokio::test]
async fn serve_at_on_threads_of_its_own_shuts_down_gracefully_under_traffic() {
    let two = ConnectionThreads::Own(std::num::NonZeroUsize::new(2).unwrap());
    shuts_down_gracefully_under_traffic(two, "serve_at_threads").await;
}

async fn shuts_down_gracefully_under_traffic(threads: ConnectionThreads, tag: &str) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let connections = ConnectionConfig::new()
        .shutdown_on(shutdown.clone())
        .shutdown_grace(Duration::from_secs(5))
        .threads(threads);
    let endpoint = StreamableHttp::new(server(), HttpConfig::new().connections(connections));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    let mut session = Session::new(addr);
    session.initialize().await;
    // The standalone stream, and a call under way.
    let mut get = session
        .client
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session.id.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 200);
    let call = tokio::spawn(session.call(1, "sleep", json!({"ms": 1500, "tag": tag})).send());
    entered(tag).await;
    shutdown.cancel();
    // While the call drains, a client can still reach the server on a new connection (for
    // what in-flight work needs of it): new work gets 503, a notification is taken.
    let mut fresh = Session::new(addr);
    fresh.client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    fresh.id = session.id.clone();
    let late = fresh.post(&json!({"jsonrpc": "2.0", "id": "late", "method": "ping"}));
    let late = late.send().await.expect("refused a connection while draining");
    assert_eq!(late.status(), 503);
    assert_eq!(late.headers()["retry-after"], "1");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"});
    assert_eq!(fresh.post(&note).send().await.unwrap().status(), 202);
    // The GET stream ends at once, advising a retry.
    let rest = tokio::time::timeout(BOUND, async {
        let mut rest = Vec::new();
        while let Ok(Some(chunk)) = get.chunk().await {
            rest.extend_from_slice(&chunk);
        }
        String::from_utf8_lossy(&rest).into_owned()
    })
    .await
    .expect("the GET stream stayed open at shutdown");
    assert!(rest.contains("retry: "), "{rest}");
    // The call in flight is answered.
    let answered = call.await.unwrap().unwrap();
    assert!(answered.text().await.unwrap().contains("slept"));
    // Serving returns, every session closed; nothing is accepted any more.
    tokio::time::timeout(BOUND, serving).await.expect("serve_at did not return").unwrap().unwrap();
    assert_eq!(endpoint.session_count(), 0);
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
}

#[tokio::test]
async fn connections_on_threads_of_their_own_serve_both_eras_there() {
    let two = ConnectionThreads::Own(std::num::NonZeroUsize::new(2).unwrap());
    let config = HttpConfig::new().connections(ConnectionConfig::new().threads(two));
    let endpoint = StreamableHttp::new(server(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    // A connection per request: they go to the two threads in turn.
    let mut session = Session::new(addr);
    session.client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    session.initialize().await;
    let mut threads = std::collections::BTreeSet::new();
    for id in 1..=4 {
        let answer = session.call(id, "thread", json!({})).send().await.unwrap();
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        let name = text.split("mcpl-http-").nth(1).and_then(|rest| rest.get(..1));
        threads
            .insert(name.unwrap_or_else(|| panic!("not on a listener thread: {text}")).to_owned());
    }
    assert_eq!(threads.len(), 2, "{threads:?}");
    // The stateless era, on the same threads.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "thread", "arguments": {}, "_meta": meta}});
    let stateless = Session::new(addr)
        .post(&call)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "thread")
        .send()
        .await
        .unwrap();
    assert_eq!(stateless.status(), 200);
    assert!(stateless.text().await.unwrap().contains("mcpl-http-"));
}

#[tokio::test]
async fn a_websocket_endpoint_shuts_down_gracefully_under_traffic() {
    use futures::{SinkExt, StreamExt};
    use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    use tokio_tungstenite::tungstenite::Message as Ws;

    let shutdown = tokio_util::sync::CancellationToken::new();
    let connections = ConnectionConfig::new().shutdown_on(shutdown.clone());
    let endpoint =
        WebSocketEndpoint::new(server(), WsConfig::new().connections(connections.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(mcpl_server::ws::serve_with(
        listener,
        endpoint.clone().into_router("/ws"),
        connections,
    ));
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    ws.send(Ws::text(init.to_string())).await.unwrap();
    ws.send(Ws::text(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()))
        .await
        .unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 500, "tag": "ws"}}});
    ws.send(Ws::text(call.to_string())).await.unwrap();
    entered("ws").await;
    shutdown.cancel();
    // Serving returns only once the upgraded connection was drained and closed.
    let watch = endpoint.clone();
    let serving = tokio::spawn(async move {
        tokio::time::timeout(BOUND, serving)
            .await
            .expect("serve_with did not return")
            .unwrap()
            .unwrap();
        watch.connection_count()
    });
    let (mut answered, mut close) = (false, None);
    let ended = tokio::time::timeout(BOUND, async {
        while let Some(Ok(frame)) = ws.next().await {
            match frame {
                Ws::Text(text) => {
                    let reply: Value = serde_json::from_str(&text).unwrap();
                    answered |= reply["id"] == 1 && reply["result"].is_object();
                }
                Ws::Close(frame) => {
                    close = frame.map(|f| (u16::from(f.code), f.reason.to_string()))
                }
                _ => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the connection stayed open at shutdown");
    assert!(answered, "the call in flight was not answered");
    // Going away (1001), not a normal close: the client may reconnect.
    assert_eq!(close, Some((1001, "going away".to_owned())));
    assert_eq!(serving.await.unwrap(), 0, "serve_with returned with the connection open");
}

#[tokio::test]
async fn stateless_streams_end_with_a_retry_hint_at_shutdown() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let connections = ConnectionConfig::new()
        .shutdown_on(shutdown.clone())
        .shutdown_grace(Duration::from_secs(5));
    let endpoint = StreamableHttp::new(server(), HttpConfig::new().connections(connections));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    let stateless = |method: &str, name: Option<&str>, body: Value| {
        let mut request = reqwest::Client::new()
            .post(format!("http://{addr}/mcp"))
            .timeout(BOUND)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request.body(body.to_string()).send()
    };
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    // A listen stream, and a call under way on a stream of its own (it asked for progress).
    let listen = stateless(
        "subscriptions/listen",
        None,
        json!({"jsonrpc": "2.0", "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}}),
    );
    let mut listen = listen.await.unwrap();
    assert_eq!(listen.status(), 200);
    let mut call_meta = meta.clone();
    call_meta["progressToken"] = json!("p");
    let call = tokio::spawn(stateless(
        "tools/call",
        Some("sleep"),
        json!({"jsonrpc": "2.0",
        "id": 2, "method": "tools/call", "params": {"name": "sleep",
        "arguments": {"ms": 700, "tag": "stateless-sse"}, "_meta": call_meta}}),
    ));
    entered("stateless-sse").await;
    shutdown.cancel();
    // The listen stream ends at once, advising a retry.
    let rest = tokio::time::timeout(BOUND, async {
        let mut rest = Vec::new();
        while let Ok(Some(chunk)) = listen.chunk().await {
            rest.extend_from_slice(&chunk);
        }
        String::from_utf8_lossy(&rest).into_owned()
    })
    .await
    .expect("the listen stream stayed open at shutdown");
    assert!(rest.contains("retry: 1000"), "{rest}");
    // The call in flight is answered on its stream.
    let call = call.await.unwrap().unwrap();
    assert_eq!(call.headers()["content-type"], "text/event-stream");
    assert!(call.text().await.unwrap().contains("slept"));
    tokio::time::timeout(BOUND, serving).await.expect("serve_at did not return").unwrap().unwrap();
}

#[tokio::test]
async fn shutdown_stops_running_task_handlers() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let connections = ConnectionConfig::new()
        .shutdown_on(shutdown.clone())
        .shutdown_grace(Duration::from_millis(200));
    let endpoint = StreamableHttp::new(server(), HttpConfig::new().connections(connections));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(endpoint.serve_at(listener, "/mcp"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "forever", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities":
                      {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}});
    let reply = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .timeout(BOUND)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "forever")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(reply.contains("\"resultType\":\"task\""), "{reply}");
    assert!(!FOREVER_DROPPED.load(std::sync::atomic::Ordering::SeqCst));
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving).await.expect("serve_at did not return").unwrap().unwrap();
    eventually("the task handler is dropped", || {
        FOREVER_DROPPED.load(std::sync::atomic::Ordering::SeqCst)
    })
    .await;
}

// Item 9: refusals are counted with their peer, and handed to a hook.

#[tokio::test]
async fn refusals_reach_the_hook_with_the_peer_address() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let refusals = mcpl_server::http::Refusals::new().on_refusal(move |r| {
        sink.lock().unwrap().push((r.kind, r.peer));
    });
    let config = HttpConfig::new()
        .max_body(100)
        .connections(ConnectionConfig::new().refusals(refusals.clone()));
    let (addr, _endpoint) = start(config).await;
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let local = tcp.local_addr().unwrap();
    tcp.write_all(post_head("content-length: 5000\r\n").as_bytes()).await.unwrap();
    read_until(&mut tcp, "\r\n\r\n").await;
    let mut rebound = TcpStream::connect(addr).await.unwrap();
    rebound
        .write_all(b"POST /mcp HTTP/1.1\r\nhost: attacker.example\r\ncontent-length: 0\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until(&mut rebound, "\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], (RefusalKind::BodyTooLarge, Some(local)));
    assert_eq!(seen[1].0, RefusalKind::Forbidden);
    assert_eq!(refusals.total(), 2);
}

// Item 12: requests in flight per connection are bounded.

#[tokio::test]
async fn a_request_flood_on_one_websocket_is_refused_beyond_the_in_flight_limit() {
    use futures::{SinkExt, StreamExt};
    use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
    use tokio_tungstenite::tungstenite::Message as Ws;

    let endpoint = WebSocketEndpoint::new(server(), WsConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.clone().into_router("/ws")));
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    ws.send(Ws::text(init.to_string())).await.unwrap();
    ws.send(Ws::text(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()))
        .await
        .unwrap();
    let limit = mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS as u64;
    let flood = limit + 100;
    for id in 1..=flood {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "sleep", "arguments": {"ms": 1000}}});
        ws.send(Ws::text(call.to_string())).await.unwrap();
    }
    let (mut results, mut busy) = (0, 0);
    tokio::time::timeout(BOUND, async {
        while results + busy < flood {
            let Some(Ok(Ws::Text(text))) = ws.next().await else { continue };
            let reply: Value = serde_json::from_str(&text).unwrap();
            if reply["id"] == 0 {
                continue;
            }
            if reply["result"].is_object() {
                results += 1;
            } else {
                assert_eq!(reply["error"]["code"], -32000, "{reply}");
                assert_eq!(reply["error"]["data"]["maxInFlight"], limit);
                busy += 1;
            }
        }
    })
    .await
    .expect("not every request was answered");
    assert!(busy >= 100, "{busy} refused");
    assert!(results <= limit + 1, "{results} served");
    // Each one counted with the endpoint's other refusals.
    assert_eq!(endpoint.refusals().count(RefusalKind::InFlightLimit), busy);
}

// Item 13: what abandoned streams leave in the event store is bounded.

/// An in-memory event store the test keeps a handle on.
struct Shared(std::sync::Arc<InMemoryEventStore>);

impl EventStore for Shared {
    fn append<'a>(&'a self, s: &'a str, at: EventPosition, m: &'a Message) -> BoxFuture<'a, ()> {
        self.0.append(s, at, m)
    }
    fn replay_after<'a>(
        &'a self,
        s: &'a str,
        after: EventPosition,
    ) -> BoxFuture<'a, Option<Vec<(EventPosition, Message)>>> {
        self.0.replay_after(s, after)
    }
    fn remove_session<'a>(&'a self, s: &'a str) -> BoxFuture<'a, ()> {
        self.0.remove_session(s)
    }
    fn discard_stream<'a>(&'a self, s: &'a str, stream: u64) -> BoxFuture<'a, ()> {
        self.0.discard_stream(s, stream)
    }
}

/// A `tools/call` of session `session_id` as its POST goes on the wire.
fn raw_call(session_id: &str, id: u64, tool: &str, arguments: &Value) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-session-id: {session_id}\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The endpoint served with an event store the test reads, and a session opened on it.
async fn with_a_shared_store() -> (std::sync::Arc<InMemoryEventStore>, SocketAddr, Session) {
    let store = std::sync::Arc::new(InMemoryEventStore::default());
    let endpoint =
        StreamableHttp::with_event_store(server(), HttpConfig::new(), Shared(store.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(endpoint.serve_at(listener, "/mcp"));
    let mut session = Session::new(addr);
    session.initialize().await;
    (store, addr, session)
}

#[tokio::test]
async fn abandoned_response_streams_are_bounded_in_the_event_store() {
    let (store, addr, session) = with_a_shared_store().await;
    let pad = "x".repeat(16 * 1024);
    // 400 answers of 16 KB (6.4 MB), each abandoned: the client hangs up once the call is
    // under way, before its answer.
    let session_id = session.id.clone().unwrap();
    for batch in 0..8 {
        let abandon = (1..=50).map(|i| {
            let request = raw_call(&session_id, batch * 50 + i, "slow_echo", &json!({"pad": pad}));
            async move {
                let mut tcp = TcpStream::connect(addr).await.unwrap();
                tcp.write_all(&request).await.unwrap();
                // The priming event: the call is under way.
                read_until(&mut tcp, "data: \n\n").await;
            }
        });
        futures::future::join_all(abandon).await;
    }
    // Once the calls answered, into streams nobody reads.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The session's events stay within its limit, and the newest are kept.
    let kept = store.stored_bytes();
    assert!(kept > 1024 * 1024, "the answers were not kept: {kept}");
    assert!(
        kept <= mcpl_server::http::event_store::DEFAULT_BYTES_PER_SESSION,
        "{kept} bytes kept for abandoned streams"
    );
    let ping = json!({"jsonrpc": "2.0", "id": "p", "method": "ping"});
    assert_eq!(session.post(&ping).send().await.unwrap().status(), 200);
}

// A request answered at once goes out in one piece, and nothing of it stays stored.

#[tokio::test]
async fn a_request_answered_at_once_is_one_frame_and_leaves_nothing_stored() {
    let (store, addr, session) = with_a_shared_store().await;
    let session_id = session.id.clone().unwrap();
    // One kept-alive connection, so that each answer's framing is read as written.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    for id in 1..=3 {
        tcp.write_all(&raw_call(&session_id, id, "echo", &json!({"n": id}))).await.unwrap();
        let text = read_until(&mut tcp, "\r\n0\r\n\r\n").await;
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let head = head.to_ascii_lowercase();
        assert!(head.contains("content-type: text/event-stream"), "{head}");
        assert!(head.contains("transfer-encoding: chunked"), "{head}");
        // One chunk (the primer and the answer), then the end of the body.
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        assert_eq!(&rest[size..], "\r\n0\r\n\r\n", "more than one chunk: {body:?}");
        let events: Vec<&str> = rest[..size].split_terminator("\n\n").collect();
        assert_eq!(events.len(), 2, "{body:?}");
        let (primer, answer) = (events[0], events[1]);
        assert!(primer.starts_with("id: ") && primer.contains("\nretry: "), "{primer:?}");
        assert!(primer.ends_with("\ndata: "), "the primer's data is empty: {primer:?}");
        let (answer_id, data) = answer.split_once("\ndata: ").unwrap();
        assert!(answer_id.starts_with("id: "), "{answer:?}");
        let answer: Value = serde_json::from_str(data).unwrap();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["content"][0]["text"], json!({"n": id}).to_string());
    }
    // Each stream's events were forgotten once its answer was handed to the connection.
    assert_eq!(store.stored_bytes(), 0);
}

#[tokio::test]
async fn a_2025_session_over_its_in_flight_limit_gets_errors_not_a_queue() {
    let server = Server::builder("limited", "0")
        .max_inflight_requests(4)
        .tool(Tool::new("sleep", ToolSchema::object()), |_ctx, _args| async move {
            tokio::time::sleep(Duration::from_millis(800)).await;
            Ok(ToolOutput::text("slept"))
        })
        .build();
    let endpoint = StreamableHttp::new(server, HttpConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(endpoint.clone().serve_at(listener, "/mcp"));
    let mut session = Session::new(addr);
    session.initialize().await;
    let calls = (1..=10).map(|id| {
        let request = session.call(id, "sleep", json!({})).send();
        async move { request.await.unwrap().text().await.unwrap() }
    });
    let answers = futures::future::join_all(calls).await;
    let busy = answers.iter().filter(|a| a.contains("-32000")).count();
    let served = answers.iter().filter(|a| a.contains("slept")).count();
    assert_eq!(busy + served, 10, "{answers:?}");
    assert!(busy >= 6 && served <= 4, "{busy} refused, {served} served");
    assert_eq!(endpoint.refusals().count(RefusalKind::InFlightLimit), busy as u64);
}

#[tokio::test]
async fn a_shut_down_endpoint_refuses_new_requests_and_streams() {
    // The endpoint shuts down while the listener it is mounted on keeps serving.
    let shutdown = tokio_util::sync::CancellationToken::new();
    let connections = ConnectionConfig::new().shutdown_on(shutdown.clone());
    let endpoint = StreamableHttp::new(server(), HttpConfig::new().connections(connections));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, endpoint.clone().into_router("/mcp")));
    let mut session = Session::new(addr);
    session.initialize().await;
    shutdown.cancel();
    let ping = json!({"jsonrpc": "2.0", "id": "late", "method": "ping"});
    let refused = session.post(&ping).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["id"], "late");
    let get = session
        .client
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session.id.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 503);
    assert!(endpoint.refusals().count(RefusalKind::ShuttingDown) >= 2);
}
