//! DPoP and the machine grants end to end over real sockets: `mcpl-client` with a DPoP key
//! against a `mcpl-server` behind `BearerAuth` (which checks the proofs), and a small
//! authorization server that binds its tokens to the proof's key, asks for a nonce first, and
//! takes the JWT bearer grant (a workload's token, or an ID-JAG from the identity provider it
//! also plays).

#![cfg(feature = "auth")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::future::BoxFuture;
use mcpl_client::Client;
use mcpl_client::auth::{Assertion, ClientCredentials, ClientKey, IdentityProvider, OAuth};
use mcpl_client::transport::HttpTransport;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::http::auth::{
    AccessToken, BearerAuth, DpopConfig, ProtectedResourceMetadata, TokenVerifier, VerifyError,
};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const AS_NONCE: &str = "as-nonce-1";

#[derive(Default)]
struct AsState {
    base: String,
    /// Token requests: the form and the DPoP proof's claims, if any.
    requests: Vec<(HashMap<String, String>, Option<Value>)>,
    /// Issued tokens and the key thumbprint each is bound to.
    issued: HashMap<String, Option<String>>,
    /// Token exchange requests at the identity provider.
    idp_requests: Vec<HashMap<String, String>>,
}

type Shared = Arc<Mutex<AsState>>;

fn pairs(body: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{body}")).unwrap().query_pairs().into_owned().collect()
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn part(jwt: &str, i: usize) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(jwt.split('.').nth(i).unwrap()).unwrap())
        .unwrap()
}

/// The RFC 7638 thumbprint of the proof's key (the test trusts the proof: the resource server
/// under test checks it).
fn jkt(proof: &str) -> String {
    let jwk = &part(proof, 0)["jwk"];
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

async fn as_metadata(State(s): State<Shared>) -> Response {
    let base = s.lock().unwrap().base.clone();
    json_response(
        StatusCode::OK,
        &json!({
            "issuer": base,
            "token_endpoint": format!("{base}/token"),
            "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "none"],
            "dpop_signing_alg_values_supported": ["ES256"],
        }),
    )
}

async fn token(State(s): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let form = pairs(&body);
    let proof = headers.get("dpop").map(|v| v.to_str().unwrap().to_owned());
    let mut s = s.lock().unwrap();
    s.requests.push((form.clone(), proof.as_deref().map(|p| part(p, 1))));
    let grant_ok = match form["grant_type"].as_str() {
        "client_credentials" => form.get("client_secret").map(String::as_str) == Some("secret"),
        "urn:ietf:params:oauth:grant-type:jwt-bearer" => match form.get("assertion") {
            Some(jag) if jag.starts_with("jag:") => {
                form.get("client_secret").map(String::as_str) == Some("secret")
            }
            assertion => assertion.map(String::as_str) == Some("workload-jwt"),
        },
        _ => false,
    };
    if !grant_ok {
        return json_response(StatusCode::BAD_REQUEST, &json!({"error": "invalid_grant"}));
    }
    let token = format!("tok-{}", s.issued.len());
    let Some(proof) = proof else {
        s.issued.insert(token.clone(), None);
        return json_response(
            StatusCode::OK,
            &json!({"access_token": token, "token_type": "Bearer"}),
        );
    };
    if part(&proof, 1)["nonce"] != AS_NONCE {
        let body = json!({"error": "use_dpop_nonce"});
        let mut response = json_response(StatusCode::BAD_REQUEST, &body);
        response.headers_mut().insert("dpop-nonce", AS_NONCE.parse().unwrap());
        return response;
    }
    s.issued.insert(token.clone(), Some(jkt(&proof)));
    json_response(StatusCode::OK, &json!({"access_token": token, "token_type": "DPoP"}))
}

/// The enterprise's identity provider: exchanges Ada's ID token for an ID-JAG naming the
/// resource.
async fn idp_token(State(s): State<Shared>, body: String) -> Response {
    let form = pairs(&body);
    let mut s = s.lock().unwrap();
    s.idp_requests.push(form.clone());
    let ok = form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
        && form.get("subject_token").map(String::as_str) == Some("id-token-of-ada")
        && form["subject_token_type"] == "urn:ietf:params:oauth:token-type:id_token"
        && form["requested_token_type"] == "urn:ietf:params:oauth:token-type:id-jag"
        && form["audience"] == s.base;
    if !ok {
        return json_response(StatusCode::BAD_REQUEST, &json!({"error": "invalid_grant"}));
    }
    json_response(
        StatusCode::OK,
        &json!({
            "access_token": format!("jag:{}", form["resource"]),
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
        }),
    )
}

struct Verifier(Shared);

impl TokenVerifier for Verifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<AccessToken, VerifyError>> {
        Box::pin(async move {
            match self.0.lock().unwrap().issued.get(token) {
                Some(jkt) => {
                    let access = AccessToken::new(["mcp:tools"]).client_id("svc");
                    Ok(match jkt {
                        Some(jkt) => access.dpop_jkt(jkt),
                        None => access,
                    })
                }
                None => Err(VerifyError::Invalid("unknown".into())),
            }
        })
    }
}

/// The authorization server and the protected MCP server: the state and the MCP URL.
async fn start(dpop: DpopConfig) -> (Shared, String) {
    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let as_base = format!("http://{}", as_listener.local_addr().unwrap());
    let state: Shared =
        Arc::new(Mutex::new(AsState { base: as_base.clone(), ..AsState::default() }));
    let auth_server = Router::new()
        .route("/.well-known/oauth-authorization-server", get(as_metadata))
        .route("/token", post(token))
        .route("/idp/token", post(idp_token))
        .with_state(state.clone());
    tokio::spawn(mcpl_server::http::serve(as_listener, auth_server));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::builder("protected", "0.0.1")
        .tool(Tool::new("hello", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::text("hi"))
        })
        .build();
    let mcp = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    let metadata =
        ProtectedResourceMetadata::new(format!("{base}/mcp")).authorization_server(as_base);
    let app = BearerAuth::new(Verifier(state.clone()), metadata).dpop(dpop).protect(mcp);
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (state, format!("{base}/mcp"))
}

fn machine() -> OAuth {
    OAuth::client_credentials(None, ClientCredentials::confidential("svc", "secret"))
}

#[tokio::test]
async fn dpop_bound_tokens_work_end_to_end_with_the_authorization_servers_nonce() {
    let (state, url) = start(DpopConfig::new()).await;
    let key = ClientKey::generate().unwrap();
    let oauth = Arc::new(machine().dpop(key.clone()));
    let client = Client::new("dpop-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(oauth.clone())).await.unwrap();
    // Every request carries a fresh proof: the server refuses replays, so these would fail.
    for _ in 0..3 {
        client.call_tool("hello", ()).await.unwrap();
    }
    client.close().await.unwrap();
    let s = state.lock().unwrap();
    // The first token request was asked for a nonce and sent again with it.
    let nonces: Vec<Value> =
        s.requests.iter().map(|(_, proof)| proof.as_ref().unwrap()["nonce"].clone()).collect();
    assert_eq!(nonces, [Value::Null, json!(AS_NONCE)]);
    let (_, proof) = &s.requests[1];
    let proof = proof.as_ref().unwrap();
    assert_eq!(proof["htm"], "POST");
    assert_eq!(proof["htu"], format!("{}/token", s.base));
    // The token is bound to the client's key.
    let bound: Vec<&Option<String>> = s.issued.values().collect();
    assert_eq!(bound, [&Some(key.thumbprint())]);
}

#[tokio::test]
async fn the_resource_server_refuses_what_dpop_forbids() {
    let (state, url) = start(DpopConfig::new()).await;
    let oauth = Arc::new(machine().dpop(ClientKey::generate().unwrap()));
    let client = Client::new("dpop-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(oauth.clone())).await.unwrap();
    let token = state.lock().unwrap().issued.keys().next().unwrap().clone();
    let post = |authorization: String, proof: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", authorization)
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        if let Some(proof) = proof {
            request = request.header("dpop", proof);
        }
        request.send()
    };
    // The bound token as a bearer token.
    let refused = post(format!("Bearer {token}"), None).await.unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with(r#"DPoP error="invalid_token""#), "{challenge}");
    // With the DPoP scheme but no proof; with a proof signed by another key.
    let refused = post(format!("DPoP {token}"), None).await.unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with(r#"DPoP error="invalid_dpop_proof""#), "{challenge}");
    // A thief with the token but not the key: a well-formed proof signed by its own key.
    let thief = p256::ecdsa::SigningKey::from_bytes(&[5u8; 32].into()).unwrap();
    let point = thief.verifying_key().to_encoded_point(false);
    let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": {
        "kty": "EC", "crv": "P-256",
        "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
        "y": URL_SAFE_NO_PAD.encode(point.y().unwrap()),
    }});
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let claims = json!({
        "jti": "thief-1", "htm": "POST", "htu": url, "iat": now.as_secs(),
        "ath": URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
    });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature: p256::ecdsa::Signature =
        p256::ecdsa::signature::Signer::sign(&thief, input.as_bytes());
    let proof = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()));
    let refused = post(format!("DPoP {token}"), Some(proof)).await.unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with(r#"DPoP error="invalid_token""#), "{challenge}");
    assert!(challenge.contains("bound to another key"), "{challenge}");
    // The owner still gets through.
    client.call_tool("hello", ()).await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_resource_requiring_dpop_refuses_bearer_tokens_and_the_client_says_why() {
    let (state, url) = start(DpopConfig::new().required(true)).await;
    // Without a DPoP key the client stops before asking for a token.
    let client = Client::new("dpop-test", "0.0.1");
    assert!(client.connect(HttpTransport::new(&url).auth(Arc::new(machine()))).await.is_err());
    assert!(state.lock().unwrap().requests.is_empty(), "no token requested");
    // The challenge names the DPoP scheme, and the metadata says so.
    let refused = reqwest::Client::new().post(&url).body("{}").send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.starts_with("DPoP resource_metadata=") && challenge.contains(r#"algs="ES256""#),
        "{challenge}"
    );
    let well_known = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let metadata = reqwest::get(well_known).await.unwrap().text().await.unwrap();
    let metadata: Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["dpop_bound_access_tokens_required"], true);
    assert_eq!(metadata["dpop_signing_alg_values_supported"], json!(["ES256"]));
    // With a key, it works.
    let oauth = Arc::new(machine().dpop(ClientKey::generate().unwrap()));
    let client = Client::new("dpop-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(oauth)).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_workload_presents_its_identity_token_with_the_jwt_bearer_grant() {
    let (state, url) = start(DpopConfig::new()).await;
    let oauth = OAuth::jwt_bearer(
        None,
        ClientCredentials::public("workload"),
        Assertion::new("workload-jwt"),
    );
    let client = Client::new("wif-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
    let s = state.lock().unwrap();
    let (form, proof) = &s.requests[0];
    assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
    assert_eq!(form["assertion"], "workload-jwt");
    assert_eq!(form["resource"], url);
    assert!(proof.is_none(), "no DPoP key, no proof");
}

#[tokio::test]
async fn a_refused_jwt_bearer_grant_is_final() {
    let (state, url) = start(DpopConfig::new()).await;
    let oauth = OAuth::jwt_bearer(
        None,
        ClientCredentials::public("workload"),
        Assertion::new("an-expired-jwt"),
    );
    let client = Client::new("wif-test", "0.0.1");
    assert!(client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await.is_err());
    // Refused once: not retried, no other grant tried.
    let grants: Vec<String> =
        state.lock().unwrap().requests.iter().map(|(f, _)| f["grant_type"].clone()).collect();
    assert_eq!(grants, ["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_the_id_token_for_an_id_jag() {
    let (state, url) = start(DpopConfig::new()).await;
    let base = state.lock().unwrap().base.clone();
    let idp = IdentityProvider::new(
        base.clone(),
        ClientCredentials::public("idp-client"),
        Assertion::new("id-token-of-ada"),
    )
    .token_endpoint(format!("{base}/idp/token"));
    let oauth = OAuth::enterprise(None, ClientCredentials::confidential("svc", "secret"), idp);
    let client = Client::new("enterprise-test", "0.0.1");
    client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await.unwrap();
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    client.close().await.unwrap();
    let s = state.lock().unwrap();
    let exchange = &s.idp_requests[0];
    assert_eq!(exchange["resource"], url);
    assert_eq!(exchange["client_id"], "idp-client");
    let (form, _) = &s.requests[0];
    assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
    assert_eq!(form["assertion"], format!("jag:{url}"));
    assert_eq!(form["client_id"], "svc");
}

#[tokio::test]
async fn a_refused_id_token_is_not_exchanged_again() {
    let (state, url) = start(DpopConfig::new()).await;
    let base = state.lock().unwrap().base.clone();
    let idp = IdentityProvider::new(
        base.clone(),
        ClientCredentials::public("idp-client"),
        Assertion::new("id-token-of-mallory"),
    )
    .token_endpoint(format!("{base}/idp/token"));
    let oauth = OAuth::enterprise(None, ClientCredentials::confidential("svc", "secret"), idp);
    let client = Client::new("enterprise-test", "0.0.1");
    let err = client.connect(HttpTransport::new(&url).auth(Arc::new(oauth))).await;
    assert!(err.is_err());
    let s = state.lock().unwrap();
    assert_eq!(s.idp_requests.len(), 1, "refused once, not sent again");
    assert!(s.requests.is_empty(), "no token request without an ID-JAG");
}
