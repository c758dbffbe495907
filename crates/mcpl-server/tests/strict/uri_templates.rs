//! Resource templates are matched in one pass, and URIs over the server's cap are refused
//! before any match.

use std::net::SocketAddr;

use mcpl_core::types::ResourceTemplate;
use mcpl_server::Server;
use mcpl_server::http::HttpConfig;
use mcpl_server::resource::ResourceOutput;
use serde_json::{Value, json};

use crate::support::{Answer, open_session, post, request, serve_router};

fn server(max_uri_length: Option<usize>) -> Server {
    let mut builder = Server::builder("strict-templates", "1");
    if let Some(max) = max_uri_length {
        builder = builder.max_uri_length(max);
    }
    builder
        .resource_template(
            ResourceTemplate::new("file:///{+path}/{name}", "file"),
            |_ctx, req| async move {
                let text = format!(
                    "{} bytes of path, name {}",
                    req.var("path").map_or(0, str::len),
                    req.var("name").unwrap_or_default()
                );
                Ok(vec![ResourceOutput::text(&req.uri, text)])
            },
        )
        .resource_template(
            ResourceTemplate::new("x://{+a}{+b}{+c}{+d}z", "four"),
            |_ctx, req| async move {
                let a = req.var("a").map_or(0, str::len);
                Ok(vec![ResourceOutput::text(&req.uri, format!("{a} bytes of a"))])
            },
        )
        .build()
}

/// Reads `uri` in a 2025-11-25 session (whose requests carry no `Mcp-Name` header, so the
/// URI's length is bounded by the body limit only).
async fn read_in_session(addr: SocketAddr, session: &str, uri: &str) -> Answer {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}});
    post(addr, &body, &[("mcp-session-id", session)]).await
}

fn text(answer: &Answer) -> Value {
    answer.last()["result"]["contents"][0]["text"].clone()
}

#[tokio::test]
async fn a_uri_over_the_cap_is_refused_before_matching() {
    let addr = serve_router(server(None), HttpConfig::new()).await;
    let session = open_session(addr, &[]).await;
    // 640 KB: about 13 s of a core for the backtracking matcher in a release build.
    let long = format!("file:///{}", "a/".repeat(320 * 1024));
    let answer = read_in_session(addr, &session, &long).await;
    let error = &answer.last()["error"];
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(error["data"]["maxUriLength"], 8 * 1024);
    assert!(!error.to_string().contains("a/a/a/"), "the URI is not repeated back");

    // The stateless era gets the same refusal.
    let over = format!("file:///{}", "a/".repeat(8 * 1024));
    let read = request(json!("r"), "resources/read", json!({"uri": over}));
    let error = post(addr, &read, &[]).await.last()["error"].clone();
    assert_eq!(
        (error["code"].clone(), error["data"]["maxUriLength"].clone()),
        (json!(-32602), json!(8192))
    );

    // Within the cap, the template matches as it always did.
    let uri = format!("file:///{}x", "a/".repeat(4000));
    let answer = read_in_session(addr, &session, &uri).await;
    assert_eq!(text(&answer), json!("7999 bytes of path, name x"));
    let read = request(json!("r"), "resources/read", json!({"uri": uri}));
    assert_eq!(text(&post(addr, &read, &[]).await), json!("7999 bytes of path, name x"));
}

#[tokio::test]
async fn a_long_uri_within_a_raised_cap_is_matched_in_one_pass() {
    let addr = serve_router(server(Some(4 << 20)), HttpConfig::new()).await;
    let session = open_session(addr, &[]).await;
    // No match (the name after the last `/` is empty): the backtracking matcher tried every
    // split of the path, each decoded again (minutes at this length).
    let long = format!("file:///{}", "a/".repeat(128 * 1024));
    let answer = read_in_session(addr, &session, &long).await;
    let error = &answer.last()["error"];
    assert_eq!(error["code"], -32602, "not found: {error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("resource not found"), "{}", &message[..100]);
    let answer = read_in_session(addr, &session, &format!("{long}x")).await;
    let path = long.len() - "file:///".len() - 1;
    assert_eq!(text(&answer), json!(format!("{path} bytes of path, name x")));

    // Four reserved expressions: the backtracking matcher's work grew with the square of the
    // length (1.4 s at 4 KB in a release build, so minutes at 64 KB).
    let long = format!("x://{}", "y".repeat(64 * 1024));
    let error = read_in_session(addr, &session, &long).await.last()["error"].clone();
    assert_eq!(error["code"], -32602);
    let answer = read_in_session(addr, &session, &format!("{long}z")).await;
    assert_eq!(text(&answer), json!(format!("{} bytes of a", 64 * 1024)));
}
