//! The server over real bytes: the handshake, the lifecycle guard and tools.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use mcpl_core::transport::lines::LineTransport;
use mcpl_core::types::{Tool, ToolSchema};
use mcpl_server::{Server, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

struct Raw {
    w: WriteHalf<DuplexStream>,
    r: BufReader<ReadHalf<DuplexStream>>,
}

impl Raw {
    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.w.write_all(&line).await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let mut s = String::new();
        tokio::time::timeout(Duration::from_secs(5), self.r.read_line(&mut s))
            .await
            .unwrap()
            .unwrap();
        serde_json::from_str(&s).unwrap()
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let v = self.recv().await;
        assert_eq!(v["id"], id);
        v
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let v = self
            .call(
                0,
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        v
    }
}

fn server() -> Server {
    Server::builder("test-server", "1.2.3")
        .instructions("be nice")
        .tool(Tool::new("zeta", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::text("z"))
        })
        .tool(Tool::new("alpha", ToolSchema::object()), |_ctx, args| async move {
            Ok(ToolOutput::text(format!("args={}", Value::Object(args))))
        })
        .tool(Tool::new("broken", ToolSchema::object()), |_ctx, _args| async {
            Ok(ToolOutput::error("it broke"))
        })
        .try_build()
        .unwrap()
}

async fn serve() -> (mcpl_server::Session, Raw) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(theirs);
    let session = server().serve(LineTransport::new(r, w)).await.unwrap();
    let (r, w) = tokio::io::split(ours);
    (session, Raw { w, r: BufReader::new(r) })
}

#[tokio::test]
async fn requests_before_initialize_are_refused_but_ping_works() {
    let (_session, mut raw) = serve().await;
    let v = raw.call(1, "tools/list", json!({})).await;
    assert_eq!(v["error"]["code"], -32600);
    let v = raw.call(2, "ping", json!({})).await;
    assert_eq!(v["result"], json!({}));
}

#[tokio::test]
async fn initialize_negotiates_the_version() {
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let (session, mut raw) = serve().await;
        let v = raw.initialize(asked).await;
        assert_eq!(v["result"]["protocolVersion"], answered, "asked {asked}");
        assert_eq!(v["result"]["serverInfo"], json!({"name": "test-server", "version": "1.2.3"}));
        assert_eq!(v["result"]["instructions"], "be nice");
        assert!(v["result"]["capabilities"]["tools"].is_object());
        assert_eq!(session.protocol_version().unwrap().as_str(), answered);
        assert_eq!(session.client_info().unwrap().name, "raw");
    }
}

#[tokio::test]
async fn a_second_initialize_is_refused() {
    let (_session, mut raw) = serve().await;
    raw.initialize("2025-11-25").await;
    let v = raw
        .call(5, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}))
        .await;
    assert_eq!(v["error"]["code"], -32600);
}

#[tokio::test]
async fn initialize_with_bad_params_is_invalid_params() {
    let (_session, mut raw) = serve().await;
    let v = raw.call(0, "initialize", json!({"protocolVersion": 7})).await;
    assert_eq!(v["error"]["code"], -32602);
}

#[tokio::test]
async fn tools_are_listed_in_registration_order_and_called() {
    let (session, mut raw) = serve().await;
    raw.initialize("2025-11-25").await;
    let v = raw.call(1, "tools/list", json!({})).await;
    let names: Vec<_> =
        v["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("zeta"), json!("alpha"), json!("broken")]);

    let v = raw.call(2, "tools/call", json!({"name": "alpha", "arguments": {"k": 1}})).await;
    assert_eq!(v["result"]["content"][0]["text"], "args={\"k\":1}");
    let v = raw.call(3, "tools/call", json!({"name": "broken"})).await;
    assert_eq!(v["result"]["isError"], true);
    let v = raw.call(4, "tools/call", json!({"name": "nope"})).await;
    assert_eq!(v["error"]["code"], -32602);
    let v = raw.call(5, "resources/list", json!({})).await;
    assert_eq!(v["error"]["code"], -32601);
    assert!(session.is_ready());
}

#[test]
fn invalid_definitions_are_reported() {
    let err = Server::builder("s", "1")
        .tool(Tool::new("bad name", ToolSchema::object()), |_c, _a| async {
            Ok(ToolOutput::text(""))
        })
        .tool(Tool::new("dup", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
        .tool(Tool::new("dup", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
        .try_build()
        .unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
}

fn stateless_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    })
}

#[tokio::test]
async fn the_stateless_era_over_a_connection_needs_no_initialize() {
    let (_session, mut raw) = serve().await;
    let meta = stateless_meta("2026-07-28");
    let discover = raw.call(1, "server/discover", json!({"_meta": meta})).await;
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server");
    assert_eq!(result["instructions"], "be nice");
    let listed = raw.call(2, "tools/list", json!({"_meta": meta})).await;
    assert_eq!(listed["result"]["tools"][0]["name"], "zeta");
    assert_eq!(listed["result"]["cacheScope"], "public");
    let called = raw.call(3, "tools/call", json!({"name": "alpha", "_meta": meta})).await;
    assert_eq!(called["result"]["content"][0]["text"], "args={}");
    assert_eq!(called["result"]["resultType"], "complete");

    // The checks, in protocol order.
    let unknown = raw.call(4, "tools/list", json!({"_meta": stateless_meta("2099-01-01")})).await;
    assert_eq!(unknown["error"]["code"], -32022);
    assert!(
        unknown["error"]["data"]["supported"].as_array().unwrap().contains(&json!("2026-07-28"))
    );
    let partial = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let missing = raw.call(5, "tools/list", partial).await;
    assert_eq!(missing["error"]["code"], -32602);
    let removed = raw.call(6, "ping", json!({"_meta": meta})).await;
    assert_eq!(removed["error"]["code"], -32601);
    // Without `_meta`, a request before `initialize` is still refused.
    let refused = raw.call(7, "tools/list", json!({})).await;
    assert_eq!(refused["error"]["code"], -32600);
}
