//! The endpoint as a [`tower_service::Service`] of HTTP requests, framework-neutral: mount it
//! in an axum router with [`Router::nest_service`](axum::Router::nest_service) or
//! [`route_service`](axum::Router::route_service), wrap it in any tower layer, or serve it with
//! hyper directly. [`StreamableHttp::into_router`] and [`StreamableHttp::serve_at`] are
//! conveniences over it.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::BoxError;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::Request;
use axum::response::Response;
use futures::future::BoxFuture;

use super::StreamableHttp;

/// Serves every request it is given, whatever its path (a router in front picks the path; see
/// [`StreamableHttp::serve_at`] for one that does): the endpoint's guards, then the era's
/// pipeline. It is always ready, and never fails: every refusal is an HTTP response.
///
/// The request's peer address, when an `axum::extract::ConnectInfo<SocketAddr>` extension
/// carries it (as [`serve`](super::serve), [`serve_with`](super::serve_with) and axum's
/// `into_make_service_with_connect_info` attach it), goes into the logs and counts of
/// refusals; an access token verified by a layer in front (an
/// [`AccessToken`](crate::principal::AccessToken) extension, see
/// [`auth::BearerAuth`](super::auth::BearerAuth)) binds what the request creates to its
/// principal.
///
/// # Examples
///
/// Nested under `/mcp` in an application, behind a tower layer (here CORS from `tower-http`):
///
/// ```
/// use mcpl_server::Server;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
/// use tower_http::cors::CorsLayer;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let endpoint = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
/// let mcp = tower::ServiceBuilder::new().layer(CorsLayer::permissive()).service(endpoint);
/// let app = axum::Router::new()
///     .route("/health", axum::routing::get(|| async { "ok" }))
///     .nest_service("/mcp", mcp);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// tokio::spawn(mcpl_server::http::serve(listener, app));
///
/// let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
///     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
/// let reply = reqwest::Client::new()
///     .post(format!("http://{addr}/mcp"))
///     .header("content-type", "application/json")
///     .header("accept", "application/json, text/event-stream")
///     .header("mcp-protocol-version", "2026-07-28")
///     .header("mcp-method", "server/discover")
///     .header("origin", "http://localhost")
///     .body(body)
///     .send()
///     .await?;
/// // The layer ran: the answer carries its CORS header.
/// assert!(reply.headers().contains_key("access-control-allow-origin"));
/// let reply: serde_json::Value = serde_json::from_str(&reply.text().await?)?;
/// assert_eq!(reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "demo");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// Served with hyper directly, one connection:
///
/// ```
/// use hyper_util::rt::TokioIo;
/// use hyper_util::service::TowerToHyperService;
/// use mcpl_server::Server;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let endpoint = StreamableHttp::new(Server::builder("demo", "1.0.0").build(), HttpConfig::new());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// tokio::spawn(async move {
///     let (stream, _) = listener.accept().await?;
///     let service = TowerToHyperService::new(endpoint);
///     hyper::server::conn::http1::Builder::new()
///         .serve_connection(TokioIo::new(stream), service)
///         .await
///         .map_err(std::io::Error::other)
/// });
/// // A GET without a session: the stateless era has no streams to get.
/// let reply = reqwest::get(format!("http://{addr}/any/path")).await?;
/// assert_eq!(reply.status(), 405);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
impl<B> tower_service::Service<Request<B>> for StreamableHttp
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let http = self.clone();
        let request = request.map(Body::new);
        Box::pin(async move {
            let peer = super::serving::peer_of(&request);
            Ok(super::serve_request(&http, request, peer).await)
        })
    }
}
