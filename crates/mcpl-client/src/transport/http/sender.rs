//! The sending half: one `POST` per message, the session's lifecycle (`initialize`, the
//! standalone stream after `notifications/initialized`, `DELETE` on close).

use std::sync::Arc;

use futures::FutureExt as _;
use mcpl_core::jsonrpc::{ErrorResponse, Message, RequestId};
use mcpl_core::transport::{ApartSender, SendApart, TransportSender};
use mcpl_core::types::names;
use mcpl_core::{Error, Result};
use reqwest::StatusCode;
use tokio_util::future::FutureExt as _;

use super::SESSION_ID;
use super::shared::{
    Outgoing, PROTOCOL_VERSION_HEADER, SESSION_ID_HEADER, Shared, insert, insert_owned, lock,
    session_expired,
};

/// The sending half of an [`HttpTransport`](super::HttpTransport): one `POST` per message.
///
/// # Examples
///
/// ```
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
/// use mcpl_core::types::{ClientCapabilities, Meta};
/// use mcpl_core::ProtocolVersion;
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
/// // Each message the sender sends is one POST; its answer reaches the receiver.
/// let meta = Meta::for_request(ProtocolVersion::V2026_07_28, &ClientCapabilities::default());
/// let discover = Request::new(1, "server/discover", Some(json!({"_meta": meta})));
/// tx.send(Message::Request(discover)).await?;
/// let Some(Message::Response(response)) = rx.recv().await? else { panic!("no response") };
/// assert!(response.result.to_value()["supportedVersions"].is_array());
/// tx.close().await?;
/// # Ok(()) }
/// ```
pub struct HttpSender {
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSender")
            .field("url", &crate::transport::redacted_url(self.shared.url.as_str()))
            .field("session", &lock(&self.shared.session).is_some())
            .finish()
    }
}

impl HttpSender {
    /// The POST of a request and the handling of its answer, as a future of its own (it ends
    /// when the transport closes); the message back when it is not such a request:
    /// notifications and responses (which wait for their `202`, to stay in order) and a
    /// 2025 `initialize` (whose session id must be known before anything else is sent).
    fn request_post(&self, message: Message) -> std::result::Result<SendApart, Message> {
        let out = Outgoing::of(&message);
        let with_session = out.stateless_version.is_none();
        let (Some(id), Some(method)) = (out.id, out.method) else {
            return Err(message);
        };
        if method == names::INITIALIZE && with_session {
            return Err(message);
        }
        let id = id.clone();
        let mut headers = self.shared.post_headers(&out);
        if method == names::TOOLS_LIST {
            lock(&self.shared.tools_list_ids).insert(id.clone());
        }
        let mut refused = None;
        if method == names::TOOLS_CALL && !with_session {
            match self.shared.param_headers(&message) {
                Ok(params) => {
                    for (name, value) in params {
                        insert_owned(&mut headers, &name, &value);
                    }
                }
                // Clients must not call a tool whose annotations are invalid.
                Err((tool, detail)) => refused = Some(Error::InvalidToolHeaders { tool, detail }),
            }
        }
        let body = if refused.is_none() { message.encode() } else { Vec::new() };
        let stale = lock(&self.shared.session).clone().filter(|_| with_session);
        let sent_session = stale.is_some();
        // Kept only for the one resend a session the server forgot needs.
        let resend = stale.map(|stale| (stale, body.clone()));
        let shared = self.shared.clone();
        let post = async move {
            // Stopped before its first poll: nothing goes out (a stop while it runs drops it:
            // see below).
            if shared.stop.is_cancelled() {
                return None;
            }
            // The futures of the exchange and of its rarer turns are large: boxed, they take
            // room (and are copied) only when they run, and this one stays small.
            if let Some(error) = refused {
                Box::pin(shared.fail(&id, error)).await;
                return None;
            }
            let response = match Box::pin(shared.post(headers, body)).await {
                Ok(r) if r.status() == StatusCode::NOT_FOUND && resend.is_some() => {
                    // The session expired: renew it and send the request once more.
                    let (stale, body) = resend?;
                    if !Box::pin(shared.renew(&stale)).await {
                        Box::pin(shared.end(session_expired())).await;
                        return None;
                    }
                    let headers = shared.post_headers(&Outgoing::SESSION);
                    Box::pin(shared.post(headers, body)).await
                }
                other => other,
            };
            match response {
                Ok(response) => Box::pin(shared.answer(id, false, sent_session, response)).await,
                Err(e) => {
                    Box::pin(shared.fail_post(&id, e)).await;
                    None
                }
            }
        };
        // Dropped when the transport stops. Not a `select!` in an async block: that would
        // hold `post` twice (captured, then moved into the select), doubling the box made for
        // every request.
        let stop = self.shared.stop.clone();
        Ok(Box::pin(post.with_cancellation_token_owned(stop).map(Option::flatten)))
    }
}

impl TransportSender for HttpSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        if let Message::Error(ErrorResponse { id: None, .. }) = &message {
            // An error about an unreadable server message: nothing on the server can use it.
            tracing::debug!("not posting an id-less error response");
            return Ok(());
        }
        let message = match self.request_post(message) {
            Ok(post) => {
                // Run apart from the engine's task: an answer read on its own is delivered
                // like any other message.
                let shared = self.shared.clone();
                self.shared.spawn(async move {
                    if let Some(answer) = post.await {
                        shared.deliver(answer).await;
                    }
                });
                return Ok(());
            }
            Err(message) => message,
        };
        let out = Outgoing::of(&message);
        let with_session = out.stateless_version.is_none();
        let headers = self.shared.post_headers(&out);
        let body = message.encode();
        let stale = lock(&self.shared.session).clone().filter(|_| with_session);
        let sent_session = stale.is_some();
        let Some(id) = out.id.cloned() else {
            // Notifications and responses: wait for the `202` so they stay in order.
            let mut response =
                self.shared.post(headers, body.clone()).await.map_err(|e| self.shared.failed(e))?;
            if let (StatusCode::NOT_FOUND, Some(stale)) = (response.status(), &stale) {
                if !self.shared.renew(stale).await {
                    return Err(session_expired());
                }
                let headers = self.shared.post_headers(&out);
                response =
                    self.shared.post(headers, body).await.map_err(|e| self.shared.failed(e))?;
            }
            let status = response.status();
            if status == StatusCode::NOT_FOUND && sent_session {
                return Err(session_expired());
            }
            if !status.is_success() {
                tracing::info!(%status, method = ?out.method, "the server refused a message");
            }
            if out.method == Some(names::NOTIFICATIONS_INITIALIZED) && status.is_success() {
                Shared::open_standalone(&self.shared).await;
            }
            return Ok(());
        };
        // A 2025 `initialize`: the session id must be known before anything else is sent.
        *lock(&self.shared.hello) = Some(body.clone());
        let response = match self.shared.post(headers, body).await {
            Ok(response) => response,
            Err(e) => {
                // Failed with its cause, so that the client learns why (a refused
                // redirect, a TLS failure, a refused connection).
                self.shared.fail_post(&id, e).await;
                return Ok(());
            }
        };
        if let Some(session) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok()) {
            *lock(&self.shared.session) = Some(session.to_owned());
            self.shared.handle.set(session, None);
        }
        let shared = self.shared.clone();
        self.shared.spawn(async move {
            if let Some(answer) = shared.clone().answer(id, true, false, response).await {
                shared.deliver(answer).await;
            }
        });
        Ok(())
    }

    /// Requests are sent apart (their POSTs run side by side); other messages are not.
    fn send_apart(
        &mut self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        self.request_post(message).map_err(|message| (message, related))
    }

    /// Requests' `POST`s start from every caller's task at once: what they do in order (the
    /// session's headers, the `tools/list` bookkeeping) is under the shared state's locks.
    fn apart_sender(&self) -> Option<Arc<dyn ApartSender>> {
        Some(Arc::new(Posts(HttpSender { shared: self.shared.clone() })))
    }

    /// Stops every stream and, in the 2025 era, ends the session with `DELETE` (unless the
    /// [`SessionHandle`](mcpl_core::transport::SessionHandle) asks to keep it for a later
    /// resume).
    async fn close(self) -> Result<()> {
        self.shared.stop.cancel();
        for task in lock(&self.shared.tasks).drain(..) {
            task.abort();
        }
        let session = lock(&self.shared.session).take();
        if self.shared.handle.keeps_on_close() {
            tracing::debug!(kept = session.is_some(), "closing without ending the session");
            return Ok(());
        }
        if let Some(session) = session {
            let mut headers = self.shared.base_headers();
            self.shared.authorize(&mut headers, "DELETE");
            insert(&mut headers, &SESSION_ID_HEADER, &session);
            if let Some(v) = lock(&self.shared.version).clone() {
                insert(&mut headers, &PROTOCOL_VERSION_HEADER, &v);
            }
            match self.shared.request(reqwest::Method::DELETE).headers(headers).send().await {
                Ok(r)
                    if r.status().is_success() || r.status() == StatusCode::METHOD_NOT_ALLOWED => {}
                Ok(r) => tracing::debug!(status = %r.status(), "DELETE of the session refused"),
                Err(e) => tracing::debug!(error = %e, "DELETE of the session failed"),
            }
        }
        Ok(())
    }
}

/// Starts requests' `POST`s with no turn at the sender (see [`ApartSender`]).
struct Posts(HttpSender);

impl ApartSender for Posts {
    fn send_apart(
        &self,
        message: Message,
        related: Option<RequestId>,
    ) -> std::result::Result<SendApart, (Message, Option<RequestId>)> {
        self.0.request_post(message).map_err(|message| (message, related))
    }
}
