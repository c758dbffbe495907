//! Servers on a loopback port (Streamable HTTP and WebSocket), and what their examples need
//! beside them: a webhook endpoint, a bearer token verifier.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::IntoResponse;
use mcpl_core::types::{ResourceTemplate, Tool, ToolSchema};
use mcpl_server::cache::{CacheHint, CachedResult};
use mcpl_server::http::auth::{AccessToken, TokenVerifier, VerifyError};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::resource::ResourceOutput;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};
use mcpl_server::{Server, ToolOutput};

/// What reached a server of [`serve_cached`], and a switch that makes it fail.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    methods: Arc<Mutex<Vec<String>>>,
    down: Arc<AtomicBool>,
}

impl Probe {
    /// How many requests of this 2026 method (`Mcp-Method` header) reached the server.
    pub fn count(&self, method: &str) -> usize {
        let methods = self.methods.lock().unwrap_or_else(PoisonError::into_inner);
        methods.iter().filter(|m| *m == method).count()
    }

    /// Makes the server answer every request with `503` (`true`) or serve again (`false`).
    pub fn fail(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn record(&self, method: &str) {
        self.methods.lock().unwrap_or_else(PoisonError::into_inner).push(method.to_owned());
    }
}

/// A notes server over Streamable HTTP whose results may be reused for 10 minutes:
/// `tools/list` (tool `search`) by anyone (public), reads of `notes://{id}` by their reader only
/// (private).
///
/// Returns the endpoint's URL and the server's [`Probe`].
pub async fn serve_cached() -> std::io::Result<(String, Probe)> {
    let ten_minutes = Duration::from_secs(600);
    let server = Server::builder("notes", "1.0.0")
        .tool(Tool::new("search", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("found"))
        })
        .resource_template(ResourceTemplate::new("notes://{id}", "note"), |_ctx, req| async move {
            let id = req.var("id").unwrap_or_default().to_owned();
            Ok(vec![ResourceOutput::text(req.uri, format!("note {id}"))])
        })
        .cache_hint(CachedResult::ToolsList, CacheHint::public(ten_minutes))
        .build();
    let probe = Probe::default();
    let seen = probe.clone();
    let app = StreamableHttp::new(server, HttpConfig::new().cache_ttl(ten_minutes))
        .into_router("/mcp")
        .layer(axum::middleware::from_fn(move |request: Request, next: Next| {
            let probe = seen.clone();
            async move {
                if let Some(method) =
                    request.headers().get("mcp-method").and_then(|v| v.to_str().ok())
                {
                    probe.record(method);
                }
                if probe.down.load(Ordering::SeqCst) {
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
                next.run(request).await
            }
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(mcpl_server::http::serve(listener, app));
    Ok((url, probe))
}

/// An echo server over WebSocket (`ws://127.0.0.1:<port>/ws`) that never pings: the tool `echo`
/// answers its `text` argument, `big` answers 64 KiB of text.
pub async fn serve_ws() -> std::io::Result<String> {
    let server = Server::builder("echo-server", "1.0.0")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
            Ok(ToolOutput::text(text))
        })
        .tool(Tool::new("big", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("x".repeat(64 * 1024)))
        })
        .build();
    let app = WebSocketEndpoint::new(server, WsConfig::new().idle_timeout(None)).into_router("/ws");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/ws", listener.local_addr()?);
    tokio::spawn(mcpl_server::ws::serve(listener, app));
    Ok(url)
}

/// Serves `server` over WebSocket on a loopback port (default [`WsConfig`]), in the
/// background.
///
/// Returns its URL, `ws://127.0.0.1:<port>/ws`.
pub async fn serve_on_ws(server: Server) -> std::io::Result<String> {
    let app = WebSocketEndpoint::new(server, WsConfig::new()).into_router("/ws");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("ws://{}/ws", listener.local_addr()?);
    tokio::spawn(mcpl_server::ws::serve(listener, app));
    Ok(url)
}

/// Serves `server` over Streamable HTTP on a loopback port (default [`HttpConfig`]: both eras),
/// in the background.
///
/// Returns its URL, `http://127.0.0.1:<port>/mcp`.
pub async fn serve_on_http(server: Server) -> std::io::Result<String> {
    let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(mcpl_server::http::serve(listener, app));
    Ok(url)
}

/// A stand-in for a webhook endpoint: accepts one HTTP request on `listener` (on a thread of
/// its own), answers `204 No Content`, and sends the request's body (`Content-Length` bytes) on
/// the returned receiver. Nothing is sent if the exchange fails.
pub fn accept_one_post(listener: std::net::TcpListener) -> std::sync::mpsc::Receiver<Vec<u8>> {
    use std::io::{BufRead, BufReader, Read, Write};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || -> std::io::Result<()> {
        let (mut conn, _) = listener.accept()?;
        let mut reader = BufReader::new(conn.try_clone()?);
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        conn.write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")?;
        // The example may have stopped waiting.
        let _ = tx.send(body);
        Ok(())
    });
    rx
}

/// A [`TokenVerifier`] that knows two bearer tokens, both of subject `ada`: `reader` (scope
/// `mcp:read`) and `writer` (`mcp:read mcp:write`). Any other token is invalid.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokens;

/// What [`TokenVerifier::verify`] returns.
type Verdict<'a> = Pin<Box<dyn Future<Output = Result<AccessToken, VerifyError>> + Send + 'a>>;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> Verdict<'a> {
        Box::pin(async move {
            match token {
                "reader" => Ok(AccessToken::new(["mcp:read"]).subject("ada")),
                "writer" => Ok(AccessToken::new(["mcp:read", "mcp:write"]).subject("ada")),
                _ => Err(VerifyError::Invalid("unknown token".into())),
            }
        })
    }
}
