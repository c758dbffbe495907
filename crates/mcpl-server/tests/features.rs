//! The server's features over real bytes: typed tools and schema validation, run-time changes
//! with list_changed notifications, resources and templates, subscriptions, prompts,
//! completion, pagination and logging.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::time::Duration;

use mcpl_core::transport::lines::LineTransport;
use mcpl_core::types::{
    ContentBlock, EmbeddedResource, ImageContent, LoggingLevel, Prompt, PromptArgument,
    PromptMessage, Resource, ResourceLink, ResourceTemplate, Role, TextResourceContents, Tool,
    ToolSchema,
};
use mcpl_server::completion::matching;
use mcpl_server::prompt::PromptOutput;
use mcpl_server::resource::{ResourceOutput, not_found};
use mcpl_server::{Json, Server, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// A raw client: writes JSON lines, reads JSON lines, keeps notifications that arrive while it
/// waits for a response.
struct Raw {
    w: WriteHalf<DuplexStream>,
    r: BufReader<ReadHalf<DuplexStream>>,
    notifications: VecDeque<Value>,
    next_id: i64,
}

impl Raw {
    async fn send(&mut self, v: Value) {
        let mut line = serde_json::to_vec(&v).unwrap();
        line.push(b'\n');
        self.w.write_all(&line).await.unwrap();
    }

    async fn read(&mut self, wait: Duration) -> Option<Value> {
        let mut s = String::new();
        match tokio::time::timeout(wait, self.r.read_line(&mut s)).await {
            Ok(n) => {
                assert!(n.unwrap() > 0, "the server closed the stream");
                Some(serde_json::from_str(&s).unwrap())
            }
            Err(_) => None,
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        loop {
            let v = self.read(Duration::from_secs(5)).await.expect("no response in time");
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
            assert!(v.get("id").is_none(), "unexpected message {v}");
            self.notifications.push_back(v);
        }
    }

    /// The result of a request that must succeed.
    async fn ok(&mut self, method: &str, params: Value) -> Value {
        let v = self.request(method, params).await;
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }

    /// The error code of a request that must fail.
    async fn err(&mut self, method: &str, params: Value) -> Value {
        let v = self.request(method, params).await;
        assert!(v.get("result").is_none(), "{method} succeeded: {v}");
        v["error"].clone()
    }

    /// The next notification, waiting for it if needed.
    async fn notification(&mut self) -> Value {
        if let Some(n) = self.notifications.pop_front() {
            return n;
        }
        let v = self.read(Duration::from_secs(5)).await.expect("no notification in time");
        assert!(v.get("id").is_none(), "expected a notification, got {v}");
        v
    }

    /// Asserts nothing is pending: a ping round trip brings no notification along.
    async fn assert_quiet(&mut self) {
        self.ok("ping", json!({})).await;
        assert!(self.notifications.is_empty(), "unexpected {:?}", self.notifications);
    }

    async fn initialize(&mut self) -> Value {
        let v = self
            .ok(
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        v
    }
}

async fn connect(server: &Server) -> (mcpl_server::Session, Raw) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(theirs);
    let session = server.serve(LineTransport::new(r, w)).await.unwrap();
    let (r, w) = tokio::io::split(ours);
    let mut raw = Raw { w, r: BufReader::new(r), notifications: VecDeque::new(), next_id: 0 };
    raw.initialize().await;
    (session, raw)
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Tools

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
    /// An optional label.
    #[serde(default)]
    label: Option<String>,
}

#[tokio::test]
async fn typed_tools_get_a_generated_schema_and_validated_input() {
    let server = Server::builder("s", "1")
        .typed_tool("add", "Adds two integers.", |_ctx, args: AddArgs| async move {
            let sum = args.a + args.b;
            Ok(ToolOutput::text(format!("{}{sum}", args.label.unwrap_or_default())))
        })
        .try_build()
        .unwrap();
    let (_session, mut raw) = connect(&server).await;

    let list = raw.ok("tools/list", json!({})).await;
    let tool = &list["tools"][0];
    assert_eq!(tool["name"], "add");
    assert_eq!(tool["description"], "Adds two integers.");
    let schema = &tool["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["properties"]["a"]["description"], "The first term.");
    assert_eq!(schema["required"], json!(["a", "b"]));

    let r = raw.ok("tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 3}})).await;
    assert_eq!((text_of(&r), r.get("isError")), ("5", None));
    let r = raw
        .ok("tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 3, "label": "="}}))
        .await;
    assert_eq!(text_of(&r), "=5");

    // Bad input is a tool error result naming the problem, not a JSON-RPC error.
    let r = raw.ok("tools/call", json!({"name": "add", "arguments": {"a": "two", "b": 3}})).await;
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).contains("/a"), "{r}");
    let r = raw.ok("tools/call", json!({"name": "add"})).await;
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).contains("\"a\""), "{r}");
}

#[tokio::test]
async fn a_json_return_gives_the_output_schema_and_structured_content() {
    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Sum {
        /// The sum of the terms.
        total: i64,
    }
    let server = Server::builder("s", "1")
        .typed_tool("add", "Adds two integers.", |_ctx, args: AddArgs| async move {
            Ok(Json(Sum { total: args.a + args.b }))
        })
        .try_build()
        .unwrap();
    let (_session, mut raw) = connect(&server).await;

    let list = raw.ok("tools/list", json!({})).await;
    let output = &list["tools"][0]["outputSchema"];
    assert_eq!(output["type"], "object", "{list}");
    assert_eq!(output["properties"]["total"]["type"], "integer");
    assert_eq!(output["properties"]["total"]["description"], "The sum of the terms.");
    assert_eq!(output["required"], json!(["total"]));
    assert_eq!(list["tools"][0]["inputSchema"]["required"], json!(["a", "b"]));

    let r = raw.ok("tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 3}})).await;
    assert_eq!(r["structuredContent"], json!({"total": 5}));
    // The same JSON as text, for clients that do not read structured content.
    let text: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(text, json!({"total": 5}));
    assert_eq!(r.get("isError"), None);
}

#[tokio::test]
async fn a_json_return_of_a_non_object_is_not_registered() {
    let err = Server::builder("s", "1")
        .typed_tool("n", "", |_c, _a: AddArgs| async { Ok(Json(3_i32)) })
        .try_build()
        .unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(err.to_string().contains("not an object schema"), "{err}");
}

#[tokio::test]
async fn typed_prompts_list_their_arguments_and_refuse_bad_ones_precisely() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Tone {
        Kind,
        Blunt,
    }
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Review {
        /// The code to review.
        code: String,
        /// How to say it.
        tone: Option<Tone>,
    }
    let server = Server::builder("s", "1")
        .typed_prompt("review", "Reviews code.", |_ctx, r: Review| async move {
            let tone = match r.tone {
                Some(Tone::Blunt) => "bluntly",
                Some(Tone::Kind) | None => "kindly",
            };
            Ok(PromptOutput::user_text(format!("Review {tone}: {}", r.code)))
        })
        .try_build()
        .unwrap();
    let (_session, mut raw) = connect(&server).await;

    let list = raw.ok("prompts/list", json!({})).await;
    let prompt = &list["prompts"][0];
    assert_eq!(prompt["description"], "Reviews code.");
    assert_eq!(
        prompt["arguments"],
        json!([
            {"name": "code", "description": "The code to review.", "required": true},
            {"name": "tone", "description": "How to say it.", "required": false}
        ])
    );
    let got = raw
        .ok("prompts/get", json!({"name": "review", "arguments": {"code": "x()", "tone": "blunt"}}))
        .await;
    assert_eq!(got["messages"][0]["content"]["text"], "Review bluntly: x()");

    let missing = raw.err("prompts/get", json!({"name": "review", "arguments": {}})).await;
    assert_eq!(missing["code"], -32602);
    assert!(missing["message"].as_str().unwrap().contains("code"), "{missing}");
    let invalid = raw
        .err("prompts/get", json!({"name": "review", "arguments": {"code": "x", "tone": "rude"}}))
        .await;
    assert_eq!(invalid["code"], -32602);
    let message = invalid["message"].as_str().unwrap();
    assert!(message.contains("\"review\"") && message.contains("rude"), "{invalid}");
}

#[test]
fn typed_prompt_arguments_must_accept_strings() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Count {
        #[allow(dead_code)]
        n: u32,
    }
    let err = Server::builder("s", "1")
        .typed_prompt("count", "", |_c, _n: Count| async { Ok(PromptOutput::user_text("")) })
        .try_build()
        .unwrap_err();
    assert!(err.to_string().contains("\"n\" does not accept a string"), "{err}");
}

#[tokio::test]
async fn hand_written_input_schemas_are_enforced_too() {
    let schema = ToolSchema::object()
        .with_property("city", json!({"type": "string", "minLength": 1}))
        .with_required("city");
    let server = Server::builder("s", "1")
        .tool(Tool::new("weather", schema), |_ctx, args| async move {
            Ok(ToolOutput::text(format!("sunny in {}", args["city"].as_str().unwrap())))
        })
        .build();
    let (_session, mut raw) = connect(&server).await;
    let r = raw.ok("tools/call", json!({"name": "weather", "arguments": {"city": "Oslo"}})).await;
    assert_eq!(text_of(&r), "sunny in Oslo");
    let r = raw.ok("tools/call", json!({"name": "weather", "arguments": {"city": ""}})).await;
    assert_eq!(r["isError"], true);
    assert!(text_of(&r).contains("/city"), "{r}");
}

#[tokio::test]
async fn rich_2020_12_schemas_are_kept_and_enforced() {
    let schema: ToolSchema = serde_json::from_value(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addr", "type": "object",
            "properties": {"street": {"type": "string"}}, "required": ["street"]}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#addr"},
            "kind": {"enum": ["person", "company"]},
            "vat": {"type": "string"}
        },
        "allOf": [{"required": ["name"]}],
        "anyOf": [{"required": ["kind"]}, {"required": ["address"]}],
        "if": {"properties": {"kind": {"const": "company"}}, "required": ["kind"]},
        "then": {"required": ["vat"]},
        "else": {},
        "additionalProperties": false
    }))
    .unwrap();
    let expected = serde_json::to_value(&schema).unwrap();
    let server = Server::builder("s", "1")
        .tool(Tool::new("json_schema_2020_12_tool", schema), |_c, _a| async {
            Ok(ToolOutput::text("ok"))
        })
        .try_build()
        .unwrap();
    let (_session, mut raw) = connect(&server).await;
    let list = raw.ok("tools/list", json!({})).await;
    assert_eq!(list["tools"][0]["inputSchema"], expected);
    let call = |args: Value| json!({"name": "json_schema_2020_12_tool", "arguments": args});
    let ok = raw.ok("tools/call", call(json!({"name": "A", "kind": "person"}))).await;
    assert_eq!(ok.get("isError"), None, "{ok}");
    for bad in [
        json!({"name": "A", "kind": "company"}),
        json!({"name": "A", "address": {}}),
        json!({"name": "A", "kind": "person", "extra": 1}),
        json!({"kind": "person"}),
    ] {
        let r = raw.ok("tools/call", call(bad.clone())).await;
        assert_eq!(r["isError"], true, "{bad} was accepted");
    }
}

#[tokio::test]
async fn structured_content_is_checked_against_the_output_schema() {
    let mut tool = Tool::new("sum", ToolSchema::object().with_property("mode", json!({})));
    tool.output_schema = Some(
        ToolSchema::object()
            .with_property("total", json!({"type": "integer"}))
            .with_required("total"),
    );
    let server = Server::builder("s", "1")
        .tool(tool, |_ctx, args| async move {
            match args["mode"].as_str() {
                Some("good") => ToolOutput::structured(&json!({"total": 7})),
                Some("bad") => ToolOutput::structured(&json!({"total": "seven"})),
                Some("failed") => Ok(ToolOutput::error("tool errors need no structured content")),
                _ => Ok(ToolOutput::text("no structured content")),
            }
        })
        .build();
    let (_session, mut raw) = connect(&server).await;
    let list = raw.ok("tools/list", json!({})).await;
    assert_eq!(list["tools"][0]["outputSchema"]["properties"]["total"]["type"], "integer");

    let r = raw.ok("tools/call", json!({"name": "sum", "arguments": {"mode": "good"}})).await;
    assert_eq!(r["structuredContent"], json!({"total": 7}));
    // The same value as text, for clients that do not read structured content.
    let text: Value = serde_json::from_str(text_of(&r)).unwrap();
    assert_eq!(text, json!({"total": 7}));

    let e = raw.err("tools/call", json!({"name": "sum", "arguments": {"mode": "bad"}})).await;
    assert_eq!(e["code"], -32603);
    let e = raw.err("tools/call", json!({"name": "sum", "arguments": {"mode": "none"}})).await;
    assert_eq!(e["code"], -32603);
    let r = raw.ok("tools/call", json!({"name": "sum", "arguments": {"mode": "failed"}})).await;
    assert_eq!(r["isError"], true);
}

#[test]
fn invalid_tool_definitions_are_reported() {
    let err = Server::builder("s", "1")
        .tool(Tool::new("no-object", ToolSchema::default()), |_c, _a| async {
            Ok(ToolOutput::text(""))
        })
        .tool(
            Tool::new(
                "bad-schema",
                ToolSchema::object().with_property("x", json!({"type": "no-such-type"})),
            ),
            |_c, _a| async { Ok(ToolOutput::text("")) },
        )
        .typed_tool("not-an-object", "", |_c, _n: i32| async { Ok(ToolOutput::text("")) })
        .try_build()
        .unwrap_err();
    assert_eq!(err.problems.len(), 3, "{err}");
}

#[tokio::test]
async fn tools_changed_at_run_time_reach_live_sessions() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("first", ToolSchema::object()), |_c, _a| async {
            Ok(ToolOutput::text("1"))
        })
        .build();
    let (_a, mut raw) = connect(&server).await;
    let (_b, mut other) = connect(&server).await;
    let init_caps = server.capabilities();
    assert_eq!(init_caps.tools.unwrap().list_changed, Some(true));

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Echo {
        text: String,
    }
    server
        .tools_mut()
        .add_typed(
            "echo",
            "Echoes.",
            |_c, args: Echo| async move { Ok(ToolOutput::text(args.text)) },
        )
        .unwrap();
    for client in [&mut raw, &mut other] {
        let n = client.notification().await;
        assert_eq!(n["method"], "notifications/tools/list_changed");
    }
    let list = raw.ok("tools/list", json!({})).await;
    let names: Vec<_> = list["tools"].as_array().unwrap().iter().map(|t| &t["name"]).collect();
    assert_eq!(names, [&json!("first"), &json!("echo")]);
    let r = raw.ok("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).await;
    assert_eq!(text_of(&r), "hi");

    // A duplicate is refused and announces nothing.
    let dup = server
        .tools_mut()
        .add(Tool::new("echo", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) });
    assert!(dup.is_err());

    // Disable, enable, replace, remove: each announces once.
    assert!(server.tools_mut().disable("first"));
    assert_eq!(raw.notification().await["method"], "notifications/tools/list_changed");
    assert!(server.tools_mut().disable("first"), "disabling twice is no change");
    let list = raw.ok("tools/list", json!({})).await;
    assert_eq!(list["tools"].as_array().unwrap().len(), 1);
    let e = raw.err("tools/call", json!({"name": "first"})).await;
    assert_eq!(e["code"], -32602);
    assert!(server.tools_mut().enable("first"));
    assert_eq!(raw.notification().await["method"], "notifications/tools/list_changed");

    server
        .tools_mut()
        .replace(Tool::new("first", ToolSchema::object()), |_c, _a| async {
            Ok(ToolOutput::text("replaced"))
        })
        .unwrap();
    assert_eq!(raw.notification().await["method"], "notifications/tools/list_changed");
    let r = raw.ok("tools/call", json!({"name": "first"})).await;
    assert_eq!(text_of(&r), "replaced");

    assert!(server.tools_mut().remove("echo"));
    assert!(!server.tools_mut().remove("echo"));
    assert_eq!(raw.notification().await["method"], "notifications/tools/list_changed");
    let list = raw.ok("tools/list", json!({})).await;
    assert_eq!(list["tools"].as_array().unwrap().len(), 1);
    raw.assert_quiet().await;

    // The other session saw each change too.
    let mut seen = 0;
    while let Some(n) = other.notifications.pop_front() {
        assert_eq!(n["method"], "notifications/tools/list_changed");
        seen += 1;
    }
    while let Some(n) = other.read(Duration::from_millis(200)).await {
        assert_eq!(n["method"], "notifications/tools/list_changed");
        seen += 1;
    }
    assert_eq!(seen, 4);
}

#[tokio::test]
async fn a_handler_can_change_the_server_it_runs_in() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("add_prompt", ToolSchema::object()), |ctx, _a| async move {
            let server = ctx.server().unwrap();
            server
                .prompts_mut()
                .add(Prompt::new("fresh"), |_c, _a| async { Ok(PromptOutput::user_text("new")) })
                .unwrap();
            Ok(ToolOutput::text("ok"))
        })
        .prompt(Prompt::new("old"), |_c, _a| async { Ok(PromptOutput::user_text("old")) })
        .build();
    let (_session, mut raw) = connect(&server).await;
    raw.ok("tools/call", json!({"name": "add_prompt"})).await;
    assert_eq!(raw.notification().await["method"], "notifications/prompts/list_changed");
    let list = raw.ok("prompts/list", json!({})).await;
    assert_eq!(list["prompts"].as_array().unwrap().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Resources

fn resource_server() -> Server {
    let mut text = Resource::new("test://static-text", "static-text");
    text.mime_type = Some("text/plain".into());
    let mut binary = Resource::new("test://static-binary", "static-binary");
    binary.mime_type = Some("image/png".into());
    let mut template = ResourceTemplate::new("test://template/{id}/data", "template");
    template.mime_type = Some("application/json".into());
    Server::builder("s", "1")
        .resource(text, |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(
                req.uri,
                "This is the content of the static text resource.",
            )])
        })
        .resource(binary, |_ctx, req| async move {
            Ok(vec![ResourceOutput::bytes(req.uri, [0x89, b'P', b'N', b'G'])])
        })
        .resource(Resource::new("test://watched-resource", "watched"), |_ctx, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "watched")])
        })
        .resource_template(template, |_ctx, req| async move {
            let id = req.var("id").unwrap_or_default().to_owned();
            if id == "missing" {
                return Err(not_found(&req.uri));
            }
            let body =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            Ok(vec![ResourceOutput::text(req.uri, body.to_string())])
        })
        .resource_template(
            ResourceTemplate::new("file:///{+path}", "files"),
            |_ctx, req| async move {
                Ok(vec![ResourceOutput::text(req.uri.clone(), req.var("path").unwrap_or_default())])
            },
        )
        .resource_completer("test://template/{id}/data", "id", |_ctx, req| async move {
            Ok(matching(["123", "124", "200"], &req.value))
        })
        .try_build()
        .unwrap()
}

#[tokio::test]
async fn static_resources_and_templates_are_listed_and_read() {
    let server = resource_server();
    let (_session, mut raw) = connect(&server).await;
    let caps = server.capabilities().resources.unwrap();
    assert_eq!((caps.subscribe, caps.list_changed), (Some(true), Some(true)));

    let list = raw.ok("resources/list", json!({})).await;
    let uris: Vec<_> = list["resources"].as_array().unwrap().iter().map(|r| &r["uri"]).collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary", "test://watched-resource"]);
    assert_eq!(list["resources"][0]["mimeType"], "text/plain");
    let list = raw.ok("resources/templates/list", json!({})).await;
    assert_eq!(list["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data");

    let r = raw.ok("resources/read", json!({"uri": "test://static-text"})).await;
    assert_eq!(
        r["contents"],
        json!([{"uri": "test://static-text", "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}])
    );
    let r = raw.ok("resources/read", json!({"uri": "test://static-binary"})).await;
    assert_eq!(r["contents"][0]["blob"], "iVBORw==");
    assert_eq!(r["contents"][0]["mimeType"], "image/png");

    let r = raw.ok("resources/read", json!({"uri": "test://template/123/data"})).await;
    assert_eq!(r["contents"][0]["uri"], "test://template/123/data");
    assert_eq!(r["contents"][0]["mimeType"], "application/json");
    let body: Value = serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body, json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"}));

    let r = raw.ok("resources/read", json!({"uri": "file:///src/lib.rs"})).await;
    assert_eq!(r["contents"][0]["text"], "src/lib.rs");
}

#[tokio::test]
async fn unknown_resources_are_invalid_params_with_the_uri() {
    let server = resource_server();
    let (_session, mut raw) = connect(&server).await;
    let uri = "test://nonexistent-resource-for-conformance-testing";
    let e = raw.err("resources/read", json!({"uri": uri})).await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"], json!({"uri": uri}));
    // A template handler can say the same for a URI that matches but names nothing.
    let e = raw.err("resources/read", json!({"uri": "test://template/missing/data"})).await;
    assert_eq!(
        (e["code"].clone(), e["data"]["uri"].clone()),
        (json!(-32602), json!("test://template/missing/data"))
    );
}

#[tokio::test]
async fn resource_updates_go_only_to_subscribers() {
    let server = resource_server();
    let (_a, mut subscriber) = connect(&server).await;
    let (_b, mut bystander) = connect(&server).await;
    let watched = "test://watched-resource";

    let r = subscriber.ok("resources/subscribe", json!({"uri": watched})).await;
    assert_eq!(r, json!({}));
    server.notify_resource_updated(watched);
    server.notify_resource_updated("test://static-text");
    let n = subscriber.notification().await;
    assert_eq!(
        n,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": watched}})
    );
    subscriber.assert_quiet().await;
    bystander.assert_quiet().await;

    let r = subscriber.ok("resources/unsubscribe", json!({"uri": watched})).await;
    assert_eq!(r, json!({}));
    server.notify_resource_updated(watched);
    subscriber.assert_quiet().await;

    // Resource list changes go to everyone.
    server
        .resources_mut()
        .add(Resource::new("test://new", "new"), |_c, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "new")])
        })
        .unwrap();
    for client in [&mut subscriber, &mut bystander] {
        assert_eq!(client.notification().await["method"], "notifications/resources/list_changed");
    }
    assert!(server.resources_mut().remove_template("file:///{+path}"));
    assert_eq!(subscriber.notification().await["method"], "notifications/resources/list_changed");
    let e = subscriber.err("resources/read", json!({"uri": "file:///x"})).await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn a_session_subscribes_to_at_most_its_limit_of_resources() {
    let server = Server::builder("s", "1")
        .max_subscriptions(2)
        .resource(Resource::new("test://a", "a"), |_c, req| async move {
            Ok(vec![ResourceOutput::text(req.uri, "a")])
        })
        .build();
    let (_session, mut raw) = connect(&server).await;
    for uri in ["test://one", "test://two", "test://one"] {
        assert_eq!(raw.ok("resources/subscribe", json!({"uri": uri})).await, json!({}), "{uri}");
    }
    let e = raw.err("resources/subscribe", json!({"uri": "test://three"})).await;
    assert_eq!(
        (e["code"].clone(), e["data"].clone()),
        (json!(-32602), json!({"maxSubscriptions": 2}))
    );
    // The refused one is not watched; an unsubscribe makes room again.
    server.notify_resource_updated("test://three");
    raw.assert_quiet().await;
    raw.ok("resources/unsubscribe", json!({"uri": "test://two"})).await;
    raw.ok("resources/subscribe", json!({"uri": "test://three"})).await;
    server.notify_resource_updated("test://three");
    assert_eq!(raw.notification().await["params"]["uri"], "test://three");
}

// ---------------------------------------------------------------------------------------------
// Prompts and completion

fn prompt_server() -> Server {
    let mut with_args = Prompt::new("test_prompt_with_arguments");
    let mut arg1 = PromptArgument::new("arg1");
    arg1.required = Some(true);
    with_args.arguments = Some(vec![arg1, PromptArgument::new("arg2")]);
    let mut rich = Prompt::new("rich");
    rich.arguments = Some(vec![PromptArgument::new("resourceUri")]);
    Server::builder("s", "1")
        .prompt(Prompt::new("test_simple_prompt"), |_ctx, _args| async {
            Ok(PromptOutput::user_text("This is a simple prompt for testing."))
        })
        .prompt(with_args, |_ctx, args| async move {
            let arg2 = args.get("arg2").map_or("(none)", String::as_str);
            Ok(PromptOutput::user_text(format!(
                "Prompt with arguments: arg1='{}', arg2='{arg2}'",
                args["arg1"]
            )))
        })
        .prompt(rich, |_ctx, args| async move {
            let uri = args.get("resourceUri").cloned().unwrap_or_else(|| "test://x".into());
            let mut embedded = TextResourceContents::new(uri.clone(), "embedded text");
            embedded.mime_type = Some("text/plain".into());
            Ok(PromptOutput::messages(vec![
                PromptMessage::new(Role::User, EmbeddedResource::new(embedded)),
                PromptMessage::new(Role::User, ImageContent::new("iVBORw0KGgo=", "image/png")),
                PromptMessage::new(Role::Assistant, ResourceLink::new(uri, "linked")),
                PromptMessage::new(
                    Role::User,
                    ContentBlock::Audio(mcpl_core::types::AudioContent::new(
                        "UklGRg==",
                        "audio/wav",
                    )),
                ),
                PromptMessage::new(Role::User, ContentBlock::text("Describe these.")),
            ]))
        })
        .prompt_completer("test_prompt_with_arguments", "arg2", |_ctx, req| async move {
            // Suggestions depend on the already resolved arg1.
            let base = req.context.get("arg1").cloned().unwrap_or_default();
            Ok((0..150).map(|i| format!("{base}{}{i}", req.value)).collect())
        })
        .try_build()
        .unwrap()
}

#[tokio::test]
async fn prompts_are_listed_and_got_with_their_arguments() {
    let server = prompt_server();
    let (_session, mut raw) = connect(&server).await;
    assert_eq!(server.capabilities().prompts.unwrap().list_changed, Some(true));

    let list = raw.ok("prompts/list", json!({})).await;
    assert_eq!(list["prompts"][1]["arguments"][0], json!({"name": "arg1", "required": true}));

    let r = raw.ok("prompts/get", json!({"name": "test_simple_prompt"})).await;
    assert_eq!(
        r["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}])
    );
    let r = raw
        .ok(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}}),
        )
        .await;
    assert_eq!(
        r["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='world'"
    );

    let e = raw
        .err(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg2": "x"}}),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("arg1"), "{e}");
    let e = raw.err("prompts/get", json!({"name": "no_such_prompt"})).await;
    assert_eq!(e["code"], -32602);

    let r = raw
        .ok("prompts/get", json!({"name": "rich", "arguments": {"resourceUri": "test://doc"}}))
        .await;
    let types: Vec<_> =
        r["messages"].as_array().unwrap().iter().map(|m| m["content"]["type"].clone()).collect();
    assert_eq!(
        types,
        [json!("resource"), json!("image"), json!("resource_link"), json!("audio"), json!("text")]
    );
    assert_eq!(r["messages"][0]["content"]["resource"]["uri"], "test://doc");
    assert_eq!(r["messages"][2]["role"], "assistant");
}

#[tokio::test]
async fn completion_serves_prompt_arguments_and_template_variables() {
    let server = prompt_server();
    let (_session, mut raw) = connect(&server).await;
    assert!(server.capabilities().completions.is_some());

    let r = raw
        .ok(
            "completion/complete",
            json!({
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg2", "value": "w"},
                "context": {"arguments": {"arg1": "x"}}
            }),
        )
        .await;
    let c = &r["completion"];
    assert_eq!(c["values"].as_array().unwrap().len(), 100);
    assert_eq!(c["values"][0], "xw0");
    assert_eq!((c["total"].clone(), c["hasMore"].clone()), (json!(150), json!(true)));

    // An argument without a completer, or an unknown prompt: an empty answer.
    for reference in [
        json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"}),
        json!({"type": "ref/prompt", "name": "nope"}),
        json!({"type": "ref/resource", "uri": "x://{y}"}),
    ] {
        let r = raw
            .ok(
                "completion/complete",
                json!({"ref": reference, "argument": {"name": "arg1", "value": ""}}),
            )
            .await;
        assert_eq!(r["completion"]["values"], json!([]));
    }

    let server = resource_server();
    let (_session, mut raw) = connect(&server).await;
    let r = raw
        .ok(
            "completion/complete",
            json!({
                "ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
                "argument": {"name": "id", "value": "12"}
            }),
        )
        .await;
    assert_eq!(r["completion"]["values"], json!(["123", "124"]));
    assert_eq!(r["completion"]["hasMore"], false);
}

#[test]
fn completers_need_a_target() {
    let err = Server::builder("s", "1")
        .prompt(Prompt::new("p"), |_c, _a| async { Ok(PromptOutput::user_text("")) })
        .prompt_completer("p", "no_such_argument", |_c, _r| async { Ok(vec![]) })
        .resource_completer("x://{a}", "a", |_c, _r| async { Ok(vec![]) })
        .try_build()
        .unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
}

// ---------------------------------------------------------------------------------------------
// Pagination

#[tokio::test]
async fn lists_are_paginated_with_opaque_cursors() {
    let mut builder = Server::builder("s", "1").page_size(2);
    for i in 0..5 {
        builder = builder.tool(Tool::new(format!("t{i}"), ToolSchema::object()), |_c, _a| async {
            Ok(ToolOutput::text(""))
        });
        builder = builder.prompt(Prompt::new(format!("p{i}")), |_c, _a| async {
            Ok(PromptOutput::user_text(""))
        });
    }
    let server = builder.try_build().unwrap();
    let (_session, mut raw) = connect(&server).await;

    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    let mut pages = 0;
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let r = raw.ok("tools/list", params).await;
        pages += 1;
        names.extend(r["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()));
        match r.get("nextCursor") {
            Some(c) => cursor = Some(c.clone()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["t0", "t1", "t2", "t3", "t4"]);

    let first = raw.ok("prompts/list", json!({})).await;
    let next = first["nextCursor"].clone();
    let second = raw.ok("prompts/list", json!({"cursor": next})).await;
    assert_eq!(second["prompts"][0]["name"], "p2");

    // Garbage, a cursor of another list, a cursor from before a change: all -32602.
    let e = raw.err("tools/list", json!({"cursor": "not a cursor"})).await;
    assert_eq!(e["code"], -32602);
    let e = raw.err("tools/list", json!({"cursor": next})).await;
    assert_eq!(e["code"], -32602);
    let tools_cursor = raw.ok("tools/list", json!({})).await["nextCursor"].clone();
    server.tools_mut().remove("t0");
    raw.notification().await;
    let e = raw.err("tools/list", json!({"cursor": tools_cursor})).await;
    assert_eq!(e["code"], -32602);
}

// ---------------------------------------------------------------------------------------------
// Logging

#[tokio::test]
async fn log_messages_follow_the_level_the_client_set() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("chatty", ToolSchema::object()), |ctx, _a| async move {
            let mut sent = Vec::new();
            for level in [LoggingLevel::Debug, LoggingLevel::Info, LoggingLevel::Error] {
                sent.push(
                    ctx.log(level, Some("chatty"), json!(format!("{level:?}"))).await.unwrap(),
                );
            }
            Ok(ToolOutput::text(format!("{sent:?}")))
        })
        .build();
    let (_session, mut raw) = connect(&server).await;
    assert!(server.capabilities().logging.is_some());

    // No level set: nothing is sent.
    let r = raw.ok("tools/call", json!({"name": "chatty"})).await;
    assert_eq!(text_of(&r), "[false, false, false]");
    raw.assert_quiet().await;

    assert_eq!(raw.ok("logging/setLevel", json!({"level": "info"})).await, json!({}));
    let r = raw.ok("tools/call", json!({"name": "chatty"})).await;
    assert_eq!(text_of(&r), "[false, true, true]");
    let levels: Vec<_> = raw
        .notifications
        .drain(..)
        .map(|n| {
            assert_eq!(n["method"], "notifications/message");
            assert_eq!(n["params"]["logger"], "chatty");
            n["params"]["level"].clone()
        })
        .collect();
    assert_eq!(levels, [json!("info"), json!("error")]);

    raw.ok("logging/setLevel", json!({"level": "critical"})).await;
    let r = raw.ok("tools/call", json!({"name": "chatty"})).await;
    assert_eq!(text_of(&r), "[false, false, false]");
    raw.assert_quiet().await;
}

#[tokio::test]
async fn features_not_registered_are_unknown_methods() {
    let server = Server::builder("s", "1").build();
    let (_session, mut raw) = connect(&server).await;
    for method in ["tools/list", "resources/list", "prompts/list", "completion/complete"] {
        assert_eq!(raw.err(method, json!({})).await["code"], -32601, "{method}");
    }
    let caps = server.capabilities();
    assert!(caps.tools.is_none() && caps.resources.is_none() && caps.prompts.is_none());
    assert!(caps.completions.is_none());
}
