//! Redirects, over real sockets: the HTTP transport and the OAuth client follow same-origin
//! redirects only (a few at most); a redirect to another origin is refused before anything is
//! sent there, so bodies, session ids and custom headers never move to another host.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcpl_client::transport::HttpTransport;
use mcpl_client::transport::redirect::{MAX_REDIRECTS, RedirectRefused};
use mcpl_client::{Client, Negotiation};
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_core::{ErrorKind, ProtocolVersion};
use mcpl_server::http::HttpConfig;
use mcpl_server::{Server, ToolOutput};

fn echo_server() -> Server {
    Server::builder("elsewhere", "0.0.1")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("echo"))
        })
        .build()
}

/// Every request a server received: method, path and the `x-api-key` header.
type Seen = Arc<Mutex<Vec<(String, String, Option<String>)>>>;

/// A server at its own origin that answers every request with `status` to `location`
/// (`{self}` stands for its own origin), recording what it got.
async fn redirector(status: StatusCode, location: String) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let location = location.replace("{self}", &origin);
    let seen = Seen::default();
    let log = seen.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let location = location.clone();
        let log = log.clone();
        async move {
            let key = request.headers().get("x-api-key").and_then(|v| v.to_str().ok());
            log.lock().unwrap().push((
                request.method().to_string(),
                request.uri().path().to_owned(),
                key.map(str::to_owned),
            ));
            (status, [(header::LOCATION, location)]).into_response()
        }
    });
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (origin, seen)
}

async fn connect(client: &Client, url: &str) -> mcpl_core::Result<()> {
    let transport = HttpTransport::new(url).header("x-api-key", "s3cret").unwrap();
    tokio::time::timeout(Duration::from_secs(20), client.connect(transport))
        .await
        .expect("connect is bounded")
        .map(drop)
}

fn pinned() -> Client {
    Client::new("redirects", "0.0.1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_nothing_reaches_it() {
    for status in [
        StatusCode::MOVED_PERMANENTLY,
        StatusCode::FOUND,
        StatusCode::SEE_OTHER,
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
    ] {
        let elsewhere = common::start(echo_server(), HttpConfig::new()).await;
        let (origin, seen) = redirector(status, elsewhere.url()).await;
        for client in [pinned(), Client::new("redirects", "0.0.1")] {
            let err = connect(&client, &format!("{origin}/mcp")).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Transport, "{status}: {err}");
            match RedirectRefused::find(&err) {
                Some(RedirectRefused::CrossOrigin { from, to }) => {
                    assert_eq!(from, &origin);
                    assert_eq!(to, &format!("http://{}", elsewhere.addr));
                }
                other => panic!("{status}: {other:?} in {err}"),
            }
            assert!(!client.is_connected());
        }
        assert!(!seen.lock().unwrap().is_empty(), "{status}: the first server was asked");
        assert_eq!(elsewhere.probe.count(), 0, "{status}: nothing reached the other origin");
    }
}

#[tokio::test]
async fn a_same_origin_redirect_is_followed() {
    // A server that redirects `/old` to `/mcp` on itself.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let http = mcpl_server::http::StreamableHttp::new(echo_server(), HttpConfig::new());
    let router = http
        .into_router("/mcp")
        .route("/old", axum::routing::any(|| async { redirect_to("/mcp") }));
    tokio::spawn(mcpl_server::http::serve(listener, router));
    for client in [pinned(), Client::new("redirects", "0.0.1")] {
        connect(&client, &format!("http://{addr}/old")).await.unwrap();
        let result = client.call_tool("echo", ()).await.unwrap();
        assert_eq!(result.content.len(), 1);
        client.close().await.unwrap();
    }
}

fn redirect_to(path: &str) -> Response {
    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, path.to_owned())]).into_response()
}

#[tokio::test]
async fn a_redirect_loop_on_the_same_origin_stops_after_a_few_hops() {
    let (origin, seen) = redirector(StatusCode::TEMPORARY_REDIRECT, "{self}/mcp".into()).await;
    let err = connect(&pinned(), &format!("{origin}/mcp")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    assert_eq!(
        RedirectRefused::find(&err),
        Some(&RedirectRefused::TooMany { limit: MAX_REDIRECTS })
    );
    // The request and MAX_REDIRECTS redirects followed.
    assert_eq!(seen.lock().unwrap().len(), MAX_REDIRECTS + 1);
}

/// An MCP server that refuses every request (401) naming its own `/prm` as the resource
/// metadata, which redirects to `target`.
#[cfg(feature = "auth")]
async fn protected_redirecting_metadata(target: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let challenge = format!(r#"Bearer resource_metadata="{origin}/prm""#);
    let app = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || {
                let challenge = challenge.clone();
                async move {
                    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)])
                        .into_response()
                }
            }),
        )
        .route(
            "/prm",
            axum::routing::get(move || {
                let target = target.clone();
                async move { (StatusCode::FOUND, [(header::LOCATION, target)]).into_response() }
            }),
        );
    tokio::spawn(mcpl_server::http::serve(listener, app));
    format!("{origin}/mcp")
}

#[cfg(feature = "auth")]
async fn refusal_kind(
    oauth: &mcpl_client::auth::OAuth,
    url: &str,
    challenge: &str,
) -> &'static str {
    oauth.handle_refusal(url, 401, Some(challenge), None).await.unwrap_err().kind()
}

#[cfg(feature = "auth")]
#[derive(Debug)]
struct NoUser;

#[cfg(feature = "auth")]
impl mcpl_client::auth::Authorizer for NoUser {
    fn authorize<'a>(
        &'a self,
        _url: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<String, mcpl_client::auth::AuthError>> {
        Box::pin(async { Err(mcpl_client::auth::AuthError::Interaction("no user here".into())) })
    }
}

#[cfg(feature = "auth")]
#[tokio::test]
async fn the_oauth_client_does_not_follow_a_redirect_to_another_origin() {
    let (elsewhere, seen) = redirector(StatusCode::NOT_FOUND, String::new()).await;
    let url = protected_redirecting_metadata(format!("{elsewhere}/prm")).await;
    let oauth = Arc::new(mcpl_client::auth::OAuth::new(NoUser, "http://127.0.0.1:1/callback"));

    // Through the transport: the connection is refused, and nothing reached the other origin.
    let client = pinned();
    let transport = HttpTransport::new(&url).auth(oauth.clone());
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.connect(transport)).await;
    assert!(outcome.expect("bounded").is_err());
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());

    // By hand.
    let challenge = format!(r#"Bearer resource_metadata="{}/prm""#, url.trim_end_matches("/mcp"));
    let refusal = oauth.handle_refusal(&url, 401, Some(&challenge), None).await;
    match refusal {
        Err(mcpl_client::auth::AuthError::Redirect { url: asked, source }) => {
            assert!(asked.ends_with("/prm"), "{asked}");
            assert_eq!(source.kind(), "cross_origin");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(refusal_kind(&oauth, &url, &challenge).await, "redirect");
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock().unwrap());
}
