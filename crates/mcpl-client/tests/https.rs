//! The Streamable HTTP transport over real TLS: a server on loopback with a certificate from a
//! private CA made here, reached with the default features (rustls).

#![cfg(feature = "rustls")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod tls_listener;

use std::sync::Arc;
use std::time::Duration;

use mcpl_client::Client;
use mcpl_client::transport::{HttpTransport, tls};
use mcpl_core::types::{ContentBlock, Tool, ToolSchema};
use mcpl_core::{ErrorKind, Transport};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tls_listener::TlsListener;

/// No test waits longer than this for the server.
const GUARD: Duration = Duration::from_secs(20);

/// A private CA and a certificate it issued for `localhost` and `127.0.0.1`.
struct Pki {
    ca: CertificateDer<'static>,
    leaf: CertificateDer<'static>,
    leaf_key: PrivateKeyDer<'static>,
}

impl Clone for Pki {
    fn clone(&self) -> Self {
        Pki { ca: self.ca.clone(), leaf: self.leaf.clone(), leaf_key: self.leaf_key.clone_key() }
    }
}

fn private_pki() -> Pki {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "mcpl test CA");
    ca_params.key_usages =
        vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, rcgen::KeyPair::generate().unwrap())
        .unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf_params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();
    Pki {
        ca: ca.der().clone(),
        leaf: leaf.der().clone(),
        leaf_key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    }
}

fn server() -> Server {
    Server::builder("https-test", "0.0.1")
        .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
            let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
            Ok(ToolOutput::text(text))
        })
        .build()
}

/// Serves `server()` over HTTPS on a loopback port; returns the port and the CA that issued
/// its certificate.
async fn serve_https() -> (u16, CertificateDer<'static>) {
    let pki = private_pki();
    let app = StreamableHttp::new(server(), HttpConfig::new()).into_router("/mcp");
    (serve_tls(pki.clone(), app).await, pki.ca)
}

/// Serves `app` over TLS with `pki`'s certificate on a loopback port; returns the port.
async fn serve_tls(pki: Pki, app: axum::Router) -> u16 {
    let (listener, port) = tls_listener(pki).await;
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// A TLS listener with `pki`'s certificate on a free loopback port, and the port.
async fn tls_listener(pki: Pki) -> (TlsListener, u16) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let server_tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![pki.leaf], pki.leaf_key)
        .unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    (TlsListener { tcp, acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server_tls)) }, port)
}

fn trusting(ca: CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).unwrap();
    Arc::new(tls::config_with_roots(roots).unwrap())
}

#[tokio::test]
async fn a_tool_call_over_https_with_a_private_ca() {
    let (port, ca) = serve_https().await;
    let url = format!("https://localhost:{port}/mcp");
    let client = Client::new("https", "1");
    let details = tokio::time::timeout(
        GUARD,
        client.connect(HttpTransport::new(&url).tls_config(trusting(ca))),
    )
    .await
    .expect("hang guard")
    .unwrap();
    assert_eq!(details.server_info.name, "https-test");
    let args = json!({"text": "over TLS"}).as_object().cloned().unwrap();
    let result =
        tokio::time::timeout(GUARD, client.call_tool("echo", args)).await.unwrap().unwrap();
    assert_eq!(result.content, [ContentBlock::text("over TLS")]);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_reqwest_client_of_the_callers_own_trusting_the_private_ca() {
    let (port, ca) = serve_https().await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    // The redirect rule of the transport, and the private CA as the only root.
    let http = reqwest::Client::builder()
        .redirect(mcpl_client::transport::redirect::policy())
        .tls_backend_preconfigured(Arc::unwrap_or_clone(trusting(ca)))
        .build()
        .unwrap();
    let client = Client::new("https", "1");
    tokio::time::timeout(GUARD, client.connect(HttpTransport::new(&url).http_client(http)))
        .await
        .expect("hang guard")
        .unwrap();
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

/// With the default features and settings HTTPS is spoken: the handshake happens, and the
/// certificate of a private CA is refused because the public roots do not include it. (Before
/// TLS was on by default, this failed before any handshake, with "connection closed".)
#[tokio::test]
async fn the_default_roots_refuse_a_private_ca() {
    let (port, _ca) = serve_https().await;
    let transport = HttpTransport::new(format!("https://localhost:{port}/mcp"));
    let client = Client::new("https", "1");
    let e = tokio::time::timeout(GUARD, client.connect(transport))
        .await
        .expect("hang guard")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    assert!(e.rpc_error().is_none());
    let chain = error_chain(&e);
    assert!(chain.to_ascii_lowercase().contains("certificate"), "{chain}");
}

/// A copy of the transport keeps its TLS settings.
#[tokio::test]
async fn a_cloned_transport_keeps_its_tls_settings() {
    let (port, ca) = serve_https().await;
    let url = format!("https://localhost:{port}/mcp");
    let transport = HttpTransport::new(&url).tls_config(trusting(ca));
    let copy = transport.clone();
    assert_eq!(copy.endpoint(), Some(url));
    drop(transport);
    let client = Client::new("https", "1");
    tokio::time::timeout(GUARD, client.connect(copy)).await.expect("hang guard").unwrap();
    client.close().await.unwrap();
}

/// OAuth over HTTPS: the protected resource metadata, the authorization server's metadata and
/// its token endpoint are all fetched over TLS (the client credentials grant, so no browser).
#[cfg(feature = "auth")]
mod oauth {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    use futures::future::BoxFuture;
    use mcpl_client::auth::{ClientCredentials, OAuth};
    use mcpl_server::http::auth::{
        AccessToken, BearerAuth, ProtectedResourceMetadata, TokenVerifier, VerifyError,
    };

    use super::*;

    #[derive(Debug)]
    struct OneToken;

    impl TokenVerifier for OneToken {
        fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
            Box::pin(async move {
                if token == "tok-over-tls" {
                    Ok(AccessToken::new(["mcp:tools"]))
                } else {
                    Err(VerifyError::Invalid("unknown token".into()))
                }
            })
        }
    }

    fn json_response(value: serde_json::Value) -> axum::response::Response {
        (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], value.to_string())
            .into_response()
    }

    #[tokio::test]
    async fn oauth_discovery_and_tokens_over_https() {
        let pki = private_pki();
        // The authorization server: listening first, since its metadata names its port.
        let (as_listener, as_port) = tls_listener(pki.clone()).await;
        let issuer = format!("https://localhost:{as_port}");
        let meta_issuer = issuer.clone();
        let auth_server = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(move || {
                    let base = meta_issuer.clone();
                    async move {
                        json_response(json!({
                            "issuer": base,
                            "authorization_endpoint": format!("{base}/authorize"),
                            "token_endpoint": format!("{base}/token"),
                            "response_types_supported": ["code"],
                            "code_challenge_methods_supported": ["S256"],
                            "grant_types_supported": ["client_credentials"],
                            "token_endpoint_auth_methods_supported": ["client_secret_post"],
                        }))
                    }
                }),
            )
            .route(
                "/token",
                post(|body: String| async move {
                    if body.contains("client_secret=s3cret") {
                        json_response(json!({
                            "access_token": "tok-over-tls", "token_type": "Bearer", "expires_in": 3600,
                        }))
                    } else {
                        (StatusCode::BAD_REQUEST, "{\"error\":\"invalid_client\"}").into_response()
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(as_listener, auth_server).await });

        // The protected MCP server, over TLS too.
        let (listener, port) = tls_listener(pki.clone()).await;
        let resource = format!("https://localhost:{port}/mcp");
        let mcp = StreamableHttp::new(server(), HttpConfig::new()).into_router("/mcp");
        let metadata = ProtectedResourceMetadata::new(resource.clone())
            .authorization_server(issuer.clone())
            .scopes_supported(["mcp:tools"]);
        let app = BearerAuth::new(OneToken, metadata).required_scopes(["mcp:tools"]).protect(mcp);
        tokio::spawn(async move { axum::serve(listener, app).await });

        let tls = trusting(pki.ca.clone());
        let http = reqwest::Client::builder()
            .redirect(mcpl_client::transport::redirect::policy())
            .tls_backend_preconfigured(Arc::unwrap_or_clone(tls.clone()))
            .build()
            .unwrap();
        let oauth = OAuth::client_credentials(
            Some(issuer),
            ClientCredentials::confidential("machine", "s3cret"),
        )
        .http_client(http);
        let transport = HttpTransport::new(&resource).tls_config(tls).auth(Arc::new(oauth));
        let client = Client::new("https-oauth", "1");
        tokio::time::timeout(GUARD, client.connect(transport)).await.expect("hang guard").unwrap();
        let args = json!({"text": "authorized"}).as_object().cloned().unwrap();
        let result =
            tokio::time::timeout(GUARD, client.call_tool("echo", args)).await.unwrap().unwrap();
        assert_eq!(result.content, [ContentBlock::text("authorized")]);
        client.close().await.unwrap();
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
