//! The receiving half: the server's messages from every response and stream, and the
//! transport's own events.

use mcpl_core::Result;
use mcpl_core::jsonrpc::Message;
use mcpl_core::transport::{Incoming, TransportEvent, TransportReceiver};
use tokio::sync::mpsc;

/// The receiving half of an [`HttpTransport`](super::HttpTransport): every message from every
/// response and stream.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
/// use serde_json::json;
/// # type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap)>>>;
/// # /// An echo server over Streamable HTTP on a local port; `Seen` records each request's
/// # /// method and headers.
/// # async fn serve_recording() -> std::io::Result<(String, Seen)> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let seen = Seen::default();
/// #     let log = seen.clone();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp").layer(
/// #         axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
/// #             log.lock().unwrap().push((request.method().to_string(), request.headers().clone()));
/// #             next.run(request)
/// #         }),
/// #     );
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let url = format!("http://{}/mcp", listener.local_addr()?);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok((url, seen))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (url, _seen) = serve_recording().await?;
/// let (mut tx, mut rx) = HttpTransport::new(url).start().await?;
/// // A 2025-era handshake, by hand.
/// let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
///     "clientInfo": {"name": "raw", "version": "1"}});
/// tx.send(Message::Request(Request::new(0, "initialize", Some(init)))).await?;
/// let Some(Message::Response(response)) = rx.recv().await? else { panic!("no response") };
/// assert_eq!(response.result.to_value()["serverInfo"]["name"], "echo-server");
/// tx.close().await?;
/// # Ok(()) }
/// ```
///
/// The engine reads it with [`recv_incoming`](TransportReceiver::recv_incoming), which also
/// hands over the transport's [`TransportEvent`]s. Read with [`recv`](TransportReceiver::recv),
/// a request that failed in the transport is that request's error (the receiver goes on), and
/// a renewed session is not told.
#[derive(Debug)]
pub struct HttpReceiver {
    pub(super) inbox: mpsc::Receiver<Result<Incoming>>,
}

impl TransportReceiver for HttpReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        loop {
            match self.recv_incoming().await? {
                Some(Incoming::Message(message)) => return Ok(Some(message)),
                Some(Incoming::Event(TransportEvent::RequestFailed { error, .. })) => {
                    return Err(error);
                }
                Some(_) => continue,
                None => return Ok(None),
            }
        }
    }

    async fn recv_incoming(&mut self) -> Result<Option<Incoming>> {
        match self.inbox.recv().await {
            Some(Ok(incoming)) => Ok(Some(incoming)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }
}
