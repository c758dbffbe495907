//! The HTTP transport against scripted, misbehaving servers over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use mcpl_client::client::{DEFAULT_MAX_LIST_BYTES, DEFAULT_MAX_LIST_ITEMS};
use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use mcpl_core::error::{Error, ListLimit};
use serde_json::{Value, json};

/// What the scripted server does with one request (its method and JSON body).
type Script = Arc<dyn Fn(&Method, Option<&Value>) -> Response + Send + Sync>;

/// Serves `script` on a fresh loopback port; returns the endpoint URL and how many `GET`s
/// arrived.
async fn scripted(script: Script) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = gets.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let script = script.clone();
        let counted = counted.clone();
        async move {
            let method = request.method().clone();
            if method == Method::GET {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            let body = axum::body::to_bytes(request.into_body(), 1 << 20).await.unwrap();
            let message: Option<Value> = serde_json::from_slice(&body).ok();
            script(&method, message.as_ref())
        }
    });
    tokio::spawn(mcpl_server::http::serve(listener, app));
    (url, gets)
}

fn json_answer(id: &Value, result: Value) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-session-id", "s1")
        .body(Body::from(body))
        .unwrap()
}

/// A 2025 server: `initialize` gets a session, notifications `202`, `GET` what `stream`
/// returns, any other request an empty result.
fn session_server(stream: impl Fn() -> Response + Send + Sync + 'static) -> Script {
    answering(stream, |_| json!({}))
}

/// [`session_server`] whose requests other than `initialize` get the result `answer` makes
/// of them.
fn answering(
    stream: impl Fn() -> Response + Send + Sync + 'static,
    answer: impl Fn(&Value) -> Value + Send + Sync + 'static,
) -> Script {
    Arc::new(move |method, message| {
        if method == Method::GET {
            return stream();
        }
        if method == Method::DELETE {
            return StatusCode::OK.into_response();
        }
        let Some(message) = message else { return StatusCode::BAD_REQUEST.into_response() };
        let Some(id) = message.get("id") else { return StatusCode::ACCEPTED.into_response() };
        if message["method"] == "initialize" {
            return json_answer(
                id,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1"},
                }),
            );
        }
        json_answer(id, answer(message))
    })
}

fn sse(body: &'static str) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap()
}

fn pinned_2025() -> Client {
    pinned_2025_builder().build()
}

fn pinned_2025_builder() -> mcpl_client::ClientBuilder {
    Client::builder("hostile", "0.0.1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
}

#[tokio::test]
async fn an_sse_retry_of_zero_does_not_make_the_client_reconnect_in_a_loop() {
    // Every standalone stream says `retry: 0` and ends at once, empty.
    let (url, gets) = scripted(session_server(|| sse("retry: 0\n\n"))).await;
    let client = pinned_2025();
    client.connect(HttpTransport::new(&url)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let n = gets.load(Ordering::SeqCst);
    // The floor on the delay and the bounded attempts: a handful, not thousands.
    assert!((1..=6).contains(&n), "{n} GETs in 2 s");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_stream_that_primes_and_ends_with_retry_zero_is_reopened_at_a_bounded_rate() {
    // A priming event each time: the stream makes progress, so the client keeps reopening it,
    // but no faster than the floor allows.
    let (url, gets) = scripted(session_server(|| sse("retry: 0\nid: 1\ndata:\n\n"))).await;
    let client = pinned_2025();
    client.connect(HttpTransport::new(&url)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let n = gets.load(Ordering::SeqCst);
    assert!((2..=12).contains(&n), "{n} GETs in 2 s");
    client.close().await.unwrap();
}

/// A 2025 server whose `tools/list` pages come from `page(cursor)`; no standalone stream.
async fn listing(page: impl Fn(Option<&str>) -> Value + Send + Sync + 'static) -> String {
    let script = answering(
        || StatusCode::METHOD_NOT_ALLOWED.into_response(),
        move |message| match message["method"].as_str() {
            Some("tools/list") => page(message["params"]["cursor"].as_str()),
            _ => json!({}),
        },
    );
    scripted(script).await.0
}

fn tools(page: usize, n: usize, description: &str) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"name": format!("t{page}-{i}"), "description": description,
                   "inputSchema": {"type": "object"}})
        })
        .collect()
}

async fn list_tools_of(
    url: &str,
    client: Client,
) -> mcpl_core::Result<Vec<mcpl_core::types::Tool>> {
    client.connect(HttpTransport::new(url)).await.unwrap();
    let listed =
        tokio::time::timeout(Duration::from_secs(60), client.list_tools()).await.expect("bounded");
    client.close().await.unwrap();
    listed
}

#[tokio::test]
async fn a_listing_cut_at_the_page_cap_is_an_error_not_a_partial_list() {
    // A fresh cursor on every page: the listing never ends.
    let url = listing(|cursor| {
        let page = cursor.map_or(0, |c| c.parse::<usize>().unwrap() + 1);
        json!({"tools": tools(page, 1, ""), "nextCursor": page.to_string()})
    })
    .await;
    let listed = list_tools_of(&url, pinned_2025().with_max_pages(5)).await;
    assert_truncated(listed, ListLimit::Pages(5));
}

#[tokio::test]
async fn a_listing_that_repeats_a_cursor_is_an_error_not_a_partial_list() {
    let url = listing(|cursor| json!({"tools": tools(usize::from(cursor.is_some()), 1, ""), "nextCursor": "same"}))
        .await;
    let listed = list_tools_of(&url, pinned_2025()).await;
    assert_truncated(listed, ListLimit::RepeatedCursor);
}

#[tokio::test]
async fn one_page_over_the_item_cap_is_refused() {
    // 50,000 tools in one page of 2.6 MB.
    let url = listing(|_| json!({"tools": tools(0, 50_000, "")})).await;
    let listed = list_tools_of(&url, pinned_2025()).await;
    assert_truncated(listed, ListLimit::Items(DEFAULT_MAX_LIST_ITEMS));
    // A client that expects that many raises the cap.
    let listed = list_tools_of(&url, pinned_2025().with_max_list_items(50_000)).await;
    assert_eq!(listed.unwrap().len(), 50_000);
}

#[tokio::test]
async fn pages_over_the_byte_cap_are_refused() {
    // 20 pages of about 1 MB (500 tools of 2 KB each): 10,000 tools, 20 MB in all.
    let description = "d".repeat(2000);
    let url = listing(move |cursor| {
        let page = cursor.map_or(0, |c| c.parse::<usize>().unwrap());
        let mut result = json!({"tools": tools(page, 500, &description)});
        if page + 1 < 20 {
            result["nextCursor"] = json!((page + 1).to_string());
        }
        result
    })
    .await;
    let listed = list_tools_of(&url, pinned_2025()).await;
    assert_truncated(listed, ListLimit::Bytes(DEFAULT_MAX_LIST_BYTES));
    let listed = list_tools_of(&url, pinned_2025().with_max_list_bytes(32 << 20)).await;
    assert_eq!(listed.unwrap().len(), 10_000);
}

fn assert_truncated(listed: mcpl_core::Result<Vec<mcpl_core::types::Tool>>, expected: ListLimit) {
    match listed {
        Err(Error::ListTruncated { method, limit }) => {
            assert_eq!((method.as_str(), limit), ("tools/list", expected));
        }
        Err(other) => panic!("{other}"),
        Ok(tools) => panic!("a partial list of {} tools", tools.len()),
    }
}

/// A server of the 2025 era only, refusing what is not `initialize` (or carries no session)
/// the way `refuse` says.
async fn legacy_only(refuse: fn(&Value) -> Response) -> String {
    let inner = session_server(|| StatusCode::METHOD_NOT_ALLOWED.into_response());
    let script: Script = Arc::new(move |method, message| match message {
        Some(m)
            if *method == Method::POST && m["method"] != "initialize" && m.get("id").is_some() =>
        {
            refuse(m)
        }
        _ => inner(method, message),
    });
    scripted(script).await.0
}

fn error_body(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

#[tokio::test]
async fn a_client_pinned_to_2026_meets_a_legacy_only_server_with_unsupported_protocol_version() {
    let refusals: [fn(&Value) -> Response; 4] = [
        // The TypeScript SDK's stateful server: 400, -32000, no id.
        |_| {
            error_body(
                StatusCode::BAD_REQUEST,
                Value::Null,
                -32000,
                "Bad Request: Server not initialized",
            )
        },
        // A server that answers unknown methods.
        |m| error_body(StatusCode::OK, m["id"].clone(), -32601, "Method not found"),
        // A server that knows no such endpoint for it.
        |_| StatusCode::NOT_FOUND.into_response(),
        |_| StatusCode::METHOD_NOT_ALLOWED.into_response(),
    ];
    for (i, refuse) in refusals.into_iter().enumerate() {
        let url = legacy_only(refuse).await;
        let client = Client::new("pinned", "0.0.1")
            .with_negotiation(Negotiation::pinned(ProtocolVersion::V2026_07_28));
        let err = client.connect(HttpTransport::new(&url)).await.unwrap_err();
        assert_eq!(
            err.kind(),
            mcpl_core::ErrorKind::UnsupportedProtocolVersion,
            "refusal {i}: {err}"
        );
        match err {
            Error::UnsupportedProtocolVersion { requested, .. } => {
                assert_eq!(requested, "2026-07-28")
            }
            other => panic!("{other}"),
        }
        assert!(!client.is_connected());
        // The same server negotiated automatically: the 2025 era.
        let client = Client::new("auto", "0.0.1");
        let details = client.connect(HttpTransport::new(&url)).await.unwrap();
        assert_eq!(details.protocol_version, ProtocolVersion::V2025_11_25, "refusal {i}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_notification_flood_on_the_standalone_stream_is_held_back() {
    // 1,000 log messages of 64 KB (64 MB) on the standalone stream, produced only as fast as
    // the connection takes them, while the client's handler is stuck.
    const COUNT: usize = 1_000;
    let produced = Arc::new(AtomicUsize::new(0));
    let counter = produced.clone();
    let stream = move || {
        let counter = counter.clone();
        let data = "x".repeat(64 * 1024);
        let events = futures::stream::iter(0..COUNT).map(move |i| {
            counter.fetch_add(1, Ordering::SeqCst);
            let message = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "logger": i.to_string(), "data": data}});
            Ok::<_, std::convert::Infallible>(format!("data: {message}\n\n"))
        });
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(Body::from_stream(events))
            .unwrap()
    };
    let (url, _gets) = scripted(session_server(stream)).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let handled = Arc::new(AtomicUsize::new(0));
    let (g, h) = (gate.clone(), handled.clone());
    let client = pinned_2025_builder()
        .on_log_message(move |_message| {
            let (g, h) = (g.clone(), h.clone());
            async move {
                g.acquire().await.unwrap().forget();
                h.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build();
    client.connect(HttpTransport::new(&url)).await.unwrap();
    // Wait until the server stops producing (held back) or has produced everything.
    let mut through = 0;
    let mut still = 0;
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = produced.load(Ordering::SeqCst);
        still = if now == through { still + 1 } else { 0 };
        through = now;
        if through == COUNT || still == 4 {
            break;
        }
    }
    assert!(through < COUNT / 2, "{through} of {COUNT} notifications read while none was handled");
    // Released, the handler gets every one of them.
    gate.add_permits(COUNT);
    for _ in 0..1500 {
        if handled.load(Ordering::SeqCst) >= COUNT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(handled.load(Ordering::SeqCst) >= COUNT);
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_listen_stream_that_is_not_read_holds_a_bounded_backlog() {
    use mcpl_core::types::{ServerNotification, SubscriptionFilter};

    const COUNT: usize = 1_000;
    let meta = json!({"io.modelcontextprotocol/subscriptionId": "sub-1"});
    let script: Script = Arc::new(move |method, message| {
        let Some(message) = message.filter(|_| *method == Method::POST) else {
            return StatusCode::METHOD_NOT_ALLOWED.into_response();
        };
        let id = message["id"].clone();
        match message["method"].as_str() {
            Some("server/discover") => json_answer(
                &id,
                json!({"supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {"listChanged": true}},
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
            ),
            Some("subscriptions/listen") => {
                let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}});
                let change = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                    "params": {"_meta": meta}});
                let events = std::iter::once(ack)
                    .chain(std::iter::repeat_n(change, COUNT))
                    .map(|m| Ok::<_, std::convert::Infallible>(format!("data: {m}\n\n")));
                // The stream stays open: the subscription lives on.
                let body = futures::stream::iter(events).chain(futures::stream::pending());
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from_stream(body))
                    .unwrap()
            }
            _ => json_answer(&id, json!({})),
        }
    });
    let (url, _gets) = scripted(script).await;
    let changes = Arc::new(AtomicUsize::new(0));
    let counted = changes.clone();
    let client = Client::builder("listener", "0.0.1")
        .on_tools_list_changed(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .build();
    client.connect(HttpTransport::new(&url)).await.unwrap();
    let filter = SubscriptionFilter::default().with_tools_list_changed(true);
    let mut listen = client.listen(filter).await.unwrap();
    // Every notification reached the client (its handler saw them all), none was read from
    // the stream meanwhile.
    for _ in 0..1500 {
        if changes.load(Ordering::SeqCst) == COUNT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(changes.load(Ordering::SeqCst), COUNT);
    let mut backlog = 0;
    while let Ok(Some(notification)) =
        tokio::time::timeout(Duration::from_millis(200), listen.next()).await
    {
        if backlog == 0 {
            assert!(matches!(notification, ServerNotification::SubscriptionsAcknowledged(_)));
        }
        backlog += 1;
    }
    eprintln!("backlog {backlog}");
    assert!(backlog <= 256, "{backlog} notifications held for a stream nobody read");
    client.close().await.unwrap();
}
