//! The `tracing` spans and events of both sides (see `docs/observability.md`), captured by a
//! recording subscriber while a client calls a server over Streamable HTTP on a real socket, in
//! both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_client::transport::HttpTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{Resource, Tool, ToolSchema};
use mcpl_server::http::{HttpConfig, StreamableHttp};
use mcpl_server::resource::ResourceOutput;
use mcpl_server::{Server, ToolOutput};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

/// One span as the subscriber saw it: its name, its fields (as recorded, later records
/// included) and the name of its parent.
#[derive(Debug, Clone)]
struct SpanSeen {
    name: &'static str,
    fields: BTreeMap<String, String>,
    parent: Option<&'static str>,
}

/// One event: its level, its fields (`message` included), and the span it happened in.
#[derive(Debug, Clone)]
struct EventSeen {
    level: Level,
    fields: BTreeMap<String, String>,
    span: Option<&'static str>,
}

#[derive(Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    /// Where each live span's record is in `spans` (ids are reused once a span closes).
    live: HashMap<Id, usize>,
    events: Vec<EventSeen>,
}

/// A layer recording every span and event.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> tracing_subscriber::Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.name());
        let mut seen = self.0.lock().unwrap();
        let at = seen.spans.len();
        seen.spans.push(SpanSeen { name: attrs.metadata().name(), fields, parent });
        seen.live.insert(id.clone(), at);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        if let Some(&at) = seen.live.get(id) {
            values.record(&mut Fields(&mut seen.spans[at].fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx.event_span(event).map(|s| s.name());
        let level = *event.metadata().level();
        self.0.lock().unwrap().events.push(EventSeen { level, fields, span });
    }
}

impl Capture {
    /// The spans named `name` whose method is `method`.
    fn spans(&self, name: &str, method: &str) -> Vec<SpanSeen> {
        let seen = self.0.lock().unwrap();
        let method = Some(method);
        seen.spans
            .iter()
            .filter(|s| {
                s.name == name && s.fields.get("mcp.method.name").map(String::as_str) == method
            })
            .cloned()
            .collect()
    }

    /// The one span named `name` of method `method`.
    fn span(&self, name: &str, method: &str) -> SpanSeen {
        let mut spans = self.spans(name, method);
        assert_eq!(spans.len(), 1, "one {name} span of {method}: {spans:#?}");
        spans.remove(0)
    }

    /// The one span named `name` of the `tools/call` of tool `tool`.
    fn call(&self, name: &str, tool: &str) -> SpanSeen {
        let mut calls: Vec<SpanSeen> = self
            .spans(name, "tools/call")
            .into_iter()
            .filter(|s| s.fields.get("gen_ai.tool.name").map(String::as_str) == Some(tool))
            .collect();
        assert_eq!(calls.len(), 1, "one {name} span of a call of {tool}: {calls:#?}");
        calls.remove(0)
    }

    /// The events whose message is `message`.
    fn events(&self, message: &str) -> Vec<EventSeen> {
        let seen = self.0.lock().unwrap();
        let message = Some(message);
        seen.events
            .iter()
            .filter(|e| e.fields.get("message").map(String::as_str) == message)
            .cloned()
            .collect()
    }
}

fn server() -> Server {
    Server::builder("traced", "1.0.0")
        .tool(Tool::new("work", ToolSchema::object()), |ctx, _args| async move {
            ctx.progress(1.0, Some(1.0), None).await.ok();
            Ok(ToolOutput::text("done"))
        })
        .tool(Tool::new("fail", ToolSchema::object()), |_ctx, _args| async move {
            Ok(ToolOutput::error("it failed"))
        })
        .resource(Resource::new("mem:///notes", "notes"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "the notes")])
        })
        .build()
}

async fn start() -> SocketAddr {
    start_with(HttpConfig::new()).await
}

async fn start_with(config: HttpConfig) -> SocketAddr {
    let http = StreamableHttp::new(server(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::http::serve(listener, http.into_router("/mcp")));
    addr
}

/// Connects a client speaking `version`, then calls a tool that reports progress (a
/// notification each way of the wire sees), a tool whose result is an error, and reads a
/// resource; everything runs on this thread, where `capture` is the subscriber.
async fn exercise(capture: &Capture, version: ProtocolVersion) {
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let addr = start().await;
    let client = Client::new("observer", "1.0.0").with_negotiation(Negotiation::pinned(version));
    let transport = HttpTransport::new(format!("http://{addr}/mcp"));
    let work = async {
        client.connect(transport).await.unwrap();
        let progress = Arc::new(Mutex::new(Vec::new()));
        let seen = progress.clone();
        let options = RequestOptions::new().on_progress(move |u| seen.lock().unwrap().push(u));
        let result = client.call_tool_with("work", (), options).await.unwrap();
        assert_ne!(result.is_error, Some(true));
        assert_eq!(progress.lock().unwrap().len(), 1);
        assert_eq!(client.call_tool("fail", ()).await.unwrap().is_error, Some(true));
        client.read_resource("mem:///notes").await.unwrap();
        client.close().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), work).await.expect("the calls hang");
}

/// The checks both eras share: each request has a span on each side naming its method, id,
/// target, revision and era, and the server's sits under the HTTP request it came in.
fn check_request_spans(capture: &Capture, version: &str, era: &str) -> (SpanSeen, SpanSeen) {
    let sent = capture.call("mcp.client.request", "work");
    let served = capture.call("mcp.server.request", "work");
    for span in [&sent, &served] {
        assert_eq!(span.fields["mcp.protocol.version"], version, "{span:#?}");
        assert_eq!(span.fields["mcpl.era"], era, "{span:#?}");
        assert!(!span.fields.contains_key("error.type"), "{span:#?}");
    }
    // The client's id is the one the server saw.
    assert_eq!(sent.fields["jsonrpc.request.id"], served.fields["jsonrpc.request.id"]);
    assert_eq!(served.parent, Some("mcp.http"), "{served:#?}");

    // The failing tool: `tool_error` on both sides.
    for side in ["mcp.client.request", "mcp.server.request"] {
        let failed = capture.call(side, "fail");
        assert_eq!(failed.fields["error.type"], "tool_error", "{failed:#?}");
    }

    // resources/read names its resource on both sides.
    for side in ["mcp.client.request", "mcp.server.request"] {
        let read = capture.span(side, "resources/read");
        assert_eq!(read.fields["mcp.resource.uri"], "mem:///notes", "{read:#?}");
        assert_eq!(read.fields["mcp.protocol.version"], version, "{read:#?}");
        assert_eq!(read.fields["mcpl.era"], era, "{read:#?}");
    }

    // The HTTP request span names the peer.
    let http = capture.0.lock().unwrap().spans.iter().find(|s| s.name == "mcp.http").cloned();
    let http = http.expect("an mcp.http span");
    assert_eq!(http.fields["client.address"], "127.0.0.1", "{http:#?}");
    assert_eq!(http.fields["http.request.method"], "POST", "{http:#?}");

    // The progress notification: sent by the server within the call's span, received by the
    // client, both at DEBUG; its JSON only at TRACE.
    let progress = |message: &str| -> Vec<EventSeen> {
        capture
            .events(message)
            .into_iter()
            .filter(|e| {
                e.fields.get("mcp.method.name").map(String::as_str)
                    == Some("notifications/progress")
            })
            .collect()
    };
    let sent_progress = progress("notification sent");
    assert_eq!(sent_progress.len(), 1, "{sent_progress:#?}");
    assert_eq!(sent_progress[0].level, Level::DEBUG);
    assert_eq!(sent_progress[0].span, Some("mcp.server.request"));
    let received = progress("notification received");
    assert_eq!(received.len(), 1, "{received:#?}");
    assert_eq!(received[0].level, Level::DEBUG);
    let payloads = capture.events("message sent");
    assert!(
        payloads.iter().all(|e| e.level == Level::TRACE),
        "message payloads are TRACE events: {payloads:#?}"
    );
    assert!(
        payloads.iter().any(|e| e.fields["json"].contains("\"notifications/progress\"")),
        "the progress notification's JSON is traced: {payloads:#?}"
    );
    (sent, served)
}

#[tokio::test(flavor = "current_thread")]
async fn a_2025_session_over_http_is_traced_on_both_sides() {
    let capture = Capture::default();
    exercise(&capture, ProtocolVersion::V2025_11_25).await;
    let (sent, served) = check_request_spans(&capture, "2025-11-25", "stateful");
    // Both sides name the session, the same one.
    let session = served.fields.get("mcp.session.id").expect("the server names the session");
    assert!(!session.is_empty());
    assert_eq!(sent.fields.get("mcp.session.id"), Some(session), "{sent:#?}");
    // `initialize` is traced too, with the revision it negotiated.
    let init = capture.span("mcp.server.request", "initialize");
    assert_eq!(init.fields["mcp.protocol.version"], "2025-11-25", "{init:#?}");
    // The client's `notifications/initialized`, received by the server.
    let initialized: Vec<EventSeen> = capture
        .events("notification received")
        .into_iter()
        .filter(|e| {
            e.fields.get("mcp.method.name").map(String::as_str) == Some("notifications/initialized")
        })
        .collect();
    assert_eq!(initialized.len(), 1, "{initialized:#?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_2025_session_answered_with_json_names_each_tool_on_its_span() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let addr = start_with(HttpConfig::new().json_response(true)).await;
    let client = Client::new("observer", "1.0.0")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    let work = async {
        client.connect(HttpTransport::new(format!("http://{addr}/mcp"))).await.unwrap();
        // A plain call (a name and arguments, no `_meta`), whose params the endpoint reads
        // typed, and one with a progress token in `_meta`, read as a tree.
        assert_eq!(client.call_tool("fail", ()).await.unwrap().is_error, Some(true));
        let options = RequestOptions::new().on_progress(|_| {});
        client.call_tool_with("work", (), options).await.unwrap();
        client.close().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), work).await.expect("the calls hang");
    for tool in ["fail", "work"] {
        let served = capture.call("mcp.server.request", tool);
        assert_eq!(served.fields["mcp.protocol.version"], "2025-11-25", "{served:#?}");
        assert_eq!(served.fields["mcpl.era"], "stateful", "{served:#?}");
        assert!(served.fields.contains_key("mcp.session.id"), "{served:#?}");
        assert_eq!(served.parent, Some("mcp.http"), "{served:#?}");
    }
    let failed = capture.call("mcp.server.request", "fail");
    assert_eq!(failed.fields["error.type"], "tool_error", "{failed:#?}");
}

#[tokio::test(flavor = "current_thread")]
async fn stateless_requests_over_http_are_traced_on_both_sides() {
    let capture = Capture::default();
    exercise(&capture, ProtocolVersion::V2026_07_28).await;
    let (sent, served) = check_request_spans(&capture, "2026-07-28", "stateless");
    // No session in the stateless era.
    assert!(!served.fields.contains_key("mcp.session.id"), "{served:#?}");
    assert!(!sent.fields.contains_key("mcp.session.id"), "{sent:#?}");
}

#[tokio::test(flavor = "current_thread")]
async fn no_span_is_made_without_a_subscriber_that_wants_it() {
    // A subscriber that wants INFO and above only: the DEBUG request spans are never created
    // (nor their fields read).
    let capture = Capture::default();
    let filtered = tracing_subscriber::registry().with(tracing_subscriber::Layer::with_filter(
        capture.clone(),
        tracing_subscriber::filter::LevelFilter::INFO,
    ));
    let _guard = tracing::subscriber::set_default(filtered);
    let addr = start().await;
    let client = Client::new("observer", "1.0.0");
    let work = async {
        client.connect(HttpTransport::new(format!("http://{addr}/mcp"))).await.unwrap();
        client.call_tool("fail", ()).await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), work).await.expect("the call hangs");
    let seen = capture.0.lock().unwrap();
    assert!(seen.spans.is_empty(), "{:#?}", seen.spans);
    // Normal use logs nothing at INFO or above, on either side.
    assert!(seen.events.is_empty(), "{:#?}", seen.events);
}

#[tokio::test(flavor = "current_thread")]
async fn a_websocket_connection_is_the_parent_of_its_requests() {
    let capture = Capture::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let endpoint =
        mcpl_server::ws::WebSocketEndpoint::new(server(), mcpl_server::ws::WsConfig::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(mcpl_server::ws::serve(listener, endpoint.into_router("/ws")));
    let client = Client::new("observer", "1.0.0");
    let work = async {
        let transport = mcpl_client::transport::WebSocketTransport::new(format!("ws://{addr}/ws"));
        client.connect(transport).await.unwrap();
        client.read_resource("mem:///notes").await.unwrap();
        client.close().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), work).await.expect("the calls hang");
    let read = capture.span("mcp.server.request", "resources/read");
    assert_eq!(read.parent, Some("mcp.ws"), "{read:#?}");
    assert_eq!(read.fields["mcp.resource.uri"], "mem:///notes", "{read:#?}");
    // The client negotiated the newest revision: each request names it.
    assert_eq!(read.fields["mcpl.era"], "stateless", "{read:#?}");
    assert_eq!(read.fields["mcp.protocol.version"], "2026-07-28", "{read:#?}");
    let ws = capture.0.lock().unwrap().spans.iter().find(|s| s.name == "mcp.ws").cloned();
    let ws = ws.expect("an mcp.ws span");
    assert_eq!(ws.fields["client.address"], "127.0.0.1", "{ws:#?}");
    assert!(ws.fields["client.port"].parse::<u16>().is_ok(), "{ws:#?}");
}
