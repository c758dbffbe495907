//! The benches' limit server: a bare hyper server that answers every MCP request with
//! precomputed bytes (the request's id spliced in), so it costs next to nothing; what a bench
//! measures against it is the client, or the ceiling for any Rust HTTP server on the machine.
//! It answers `initialize` with a session id and notifications with `202`, so both eras run
//! against it. Shared by the `calls` and `serve` benches (`#[path]`).

use std::future::Future;
use std::io::Write;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// The text the benches' tool answers with, on every server.
pub(crate) const TEXT: &str = "This is a simple text response for testing.";
const DISCOVER: &str = r#""result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"limit","version":"1.0.0"}}}}"#;
const INITIALIZE: &str = r#""result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"limit","version":"1.0.0"}}}"#;
const CALL: &str = r#""result":{"resultType":"complete","content":[{"type":"text","text":"This is a simple text response for testing."}],"isError":false}}"#;

/// The byte range of the value of the first top-level-looking `"key":` (a number or a string).
pub(crate) fn find_value<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let pos = body.windows(key.len()).position(|w| w == key)?;
    let mut i = pos + key.len();
    while i < body.len() && matches!(body[i], b' ' | b':') {
        i += 1;
    }
    let start = i;
    if body.get(i) == Some(&b'"') {
        i += 1;
        while i < body.len() && body[i] != b'"' {
            i += 1;
        }
        return body.get(start..=i);
    }
    while i < body.len() && !matches!(body[i], b',' | b'}' | b' ' | b'\n') {
        i += 1;
    }
    Some(&body[start..i])
}

/// The precomputed answer to a request line or body, `None` for a notification; after
/// `BENCH_ECHO_WORK_US` microseconds of busy work when that is set (to see what the work a peer
/// does per message costs a round trip).
pub(crate) fn answer(request: &[u8]) -> Option<Vec<u8>> {
    let id = find_value(request, b"\"id\"")?;
    busy_work();
    let method = find_value(request, b"\"method\"").unwrap_or(b"");
    let result = match method {
        b"\"server/discover\"" => DISCOVER,
        b"\"initialize\"" => INITIALIZE,
        _ => CALL,
    };
    let mut out = Vec::with_capacity(32 + id.len() + result.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    out.push(b',');
    out.extend_from_slice(result.as_bytes());
    Some(out)
}

/// Spins for `BENCH_ECHO_WORK_US` microseconds (read once; none by default): work that costs a
/// peer CPU time and nothing else, no allocation, no syscall, no sleep.
fn busy_work() {
    static WORK: OnceLock<Duration> = OnceLock::new();
    let work = *WORK.get_or_init(|| {
        let micros = std::env::var("BENCH_ECHO_WORK_US").ok().and_then(|s| s.parse().ok());
        Duration::from_micros(micros.unwrap_or(0))
    });
    if !work.is_zero() {
        let start = Instant::now();
        while start.elapsed() < work {
            std::hint::spin_loop();
        }
    }
}

/// Serves on a loopback port it prints on stdout, on `runtime`, until killed.
pub(crate) fn serve(runtime: tokio::runtime::Runtime) {
    serve_with(runtime, respond);
}

/// The limit server's answer to one request.
async fn respond(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = req.into_body().collect().await?.to_bytes();
    let initialize = find_value(&body, b"\"method\"") == Some(b"\"initialize\"");
    let response = match answer(&body) {
        Some(bytes) => {
            let mut response = Response::builder().header("content-type", "application/json");
            if initialize {
                response = response.header("mcp-session-id", "limit");
            }
            response.body(Full::new(Bytes::from(bytes)))
        }
        None => Response::builder().status(StatusCode::ACCEPTED).body(Full::new(Bytes::new())),
    };
    Ok(response.unwrap())
}

/// Serves `handle` on a loopback port it prints on stdout, on `runtime`, until killed: one
/// task per connection, `TCP_NODELAY` set (the benches' servers other than ours).
pub(crate) fn serve_with<F, Fut>(runtime: tokio::runtime::Runtime, handle: F)
where
    F: Fn(Request<Incoming>) -> Fut + Copy + Send + 'static,
    Fut: Future<Output = Result<Response<Full<Bytes>>, hyper::Error>> + Send + 'static,
{
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap().port());
        std::io::stdout().flush().unwrap();
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            stream.set_nodelay(true).ok();
            tokio::spawn(async move {
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), hyper::service::service_fn(handle))
                    .await
                    .ok();
            });
        }
    });
}
