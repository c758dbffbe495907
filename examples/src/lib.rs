//! Shared pieces of the mcpl-rs examples.
//!
//! - `quickstart`: a client that starts [`weather_server`] as a real child process and talks to
//!   it over stdio. Run it with `cargo run -p mcpl-examples --bin quickstart`.
//! - `weather-server`: the same server on its own, for any MCP client.
//! - `mcpl-memory-server` ([`mcpl_memory`]) and `mcpl-channel-server` ([`mcpl_channels`]):
//!   MCPL 0.5 servers over stdio, or over WebSocket with `--ws ADDR` ([`mcpl_cli`]);
//!   `--conformance` adds the `mcpl_conformance_trigger` tool ([`mcpl_trigger`]).
//! - `mcp-era-server` ([`one_era`]): a plain MCP server that speaks one protocol era only
//!   (2026-07-28 or 2025), over stdio or Streamable HTTP, as servers built on other SDKs do.
//! - `oauth`: a client reaching the weather server behind OAuth bearer-token protection, with
//!   a minimal authorization server, in one process (`--bin oauth`).

pub mod mcpl_channels;
pub mod mcpl_cli;
pub mod mcpl_memory;
pub mod mcpl_trigger;
pub mod one_era;

use mcpl_core::types::{Tool, ToolAnnotations, ToolSchema};
use mcpl_server::{Server, ToolOutput};
use serde_json::json;

/// A small server with two tools: `forecast` and `convert_temperature`.
pub fn weather_server() -> Server {
    let forecast = Tool::new(
        "forecast",
        ToolSchema::object()
            .with_property("city", json!({"type": "string", "description": "City name"}))
            .with_required("city"),
    )
    .with_description("A (made-up) forecast for a city.")
    .with_annotations(ToolAnnotations::default().with_read_only_hint(true));
    let convert = Tool::new(
        "convert_temperature",
        ToolSchema::object()
            .with_property("celsius", json!({"type": "number"}))
            .with_required("celsius"),
    )
    .with_description("Converts degrees Celsius to Fahrenheit.");
    Server::builder("weather-example", env!("CARGO_PKG_VERSION"))
        .instructions("Ask for a forecast by city; convert temperatures when asked.")
        .tool(forecast, |_ctx, args| async move {
            let Some(city) = args.get("city").and_then(|c| c.as_str()) else {
                return Ok(ToolOutput::error("`city` (a string) is required"));
            };
            // Deterministic "weather" from the city name, so the example's output is stable.
            let degrees = city.bytes().map(u32::from).sum::<u32>() % 35;
            Ok(ToolOutput::text(format!("{city}: {degrees} °C and clear skies")))
        })
        .tool(convert, |_ctx, args| async move {
            match args.get("celsius").and_then(|c| c.as_f64()) {
                Some(c) => Ok(ToolOutput::text(format!("{c} °C = {} °F", c * 9.0 / 5.0 + 32.0))),
                None => Ok(ToolOutput::error("`celsius` (a number) is required")),
            }
        })
        .build()
}

/// Sends logs to stderr (stdout is the protocol channel of a stdio server).
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
}

/// A token cancelled on the first SIGINT (Ctrl-C) or SIGTERM: what the example servers shut
/// down gracefully on.
pub fn shutdown_signal() -> mcpl_core::engine::CancellationToken {
    let token = mcpl_core::engine::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        signal_received().await;
        tracing::info!("shutting down");
        cancel.cancel();
    });
    token
}

#[cfg(unix)]
async fn signal_received() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

#[cfg(not(unix))]
async fn signal_received() {
    let _ = tokio::signal::ctrl_c().await;
}

/// The README's code blocks, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The migration guide's code blocks, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../MIGRATION.md")]
struct MigrationDoctests;

/// A server whose tools need input from the client, for both eras: `greet` asks the user for
/// their name (form elicitation, with a default), `ask_model` asks the client's model
/// (sampling), `workspace` asks for the client's roots, `visit` sends the user to a URL
/// (URL-mode elicitation), `two_steps` asks twice and carries a
/// sealed `requestState` between the rounds, `never_satisfied` asks forever, and `regional`
/// mirrors its `region` argument into an `Mcp-Param-Region` header (2026 HTTP).
///
/// Run it on stdio with `cargo run -p mcpl-examples --bin input-server`.
pub fn input_server() -> Server {
    use mcpl_core::types::{
        CreateMessageRequestParams, ElicitRequestFormParams, ElicitRequestURLParams,
        ElicitationSchema, Role, SamplingMessage, SamplingMessageContentBlock, StringSchema,
        TextContent,
    };

    use mcpl_core::jsonrpc::ErrorObject;
    use mcpl_server::input::{InputRequired, ToolReply};

    fn done(output: mcpl_core::types::CallToolResult) -> Result<ToolReply, ErrorObject> {
        Ok(output.into())
    }

    fn ask(input: InputRequired) -> Result<ToolReply, ErrorObject> {
        Ok(input.into())
    }

    fn name_form(message: &str) -> ElicitRequestFormParams {
        let name = StringSchema::default().with_default("World");
        let form = ElicitationSchema::default().with_property("name", name);
        ElicitRequestFormParams::new(message, form)
    }

    let regional = Tool::new(
        "regional",
        ToolSchema::object()
            .with_property("region", json!({"type": "string", "x-mcp-header": "Region"}))
            .with_required("region"),
    );
    Server::builder("input-example", env!("CARGO_PKG_VERSION"))
        .tool(Tool::new("greet", ToolSchema::object()), |ctx, _args| async move {
            if let Some(name) = ctx.elicited("who").and_then(|c| c.get("name")) {
                let name = serde_json::to_value(name).unwrap_or_default();
                let name = name.as_str().unwrap_or("?").to_owned();
                return done(ToolOutput::text(format!("Hello, {name}!")));
            }
            ask(ctx.input_required().elicit("who", name_form("What is your name?")))
        })
        .tool(Tool::new("ask_model", ToolSchema::object()), |ctx, _args| async move {
            if let Some(answer) = ctx.sampling_response("q") {
                let text = serde_json::to_value(&answer.content).unwrap_or_default();
                let text = text["text"].as_str().unwrap_or("?").to_owned();
                return done(ToolOutput::text(format!("{} said: {text}", answer.model)));
            }
            let question =
                SamplingMessageContentBlock::Text(TextContent::new("Capital of France?"));
            let question = CreateMessageRequestParams::new(
                vec![SamplingMessage::new(Role::User, question)],
                50,
            );
            ask(ctx.input_required().sample("q", question))
        })
        .tool(Tool::new("workspace", ToolSchema::object()), |ctx, _args| async move {
            if let Some(roots) = ctx.roots_response("roots") {
                let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
                return done(ToolOutput::text(uris.join(",")));
            }
            ask(ctx.input_required().list_roots("roots"))
        })
        .tool(Tool::new("two_steps", ToolSchema::object()), |ctx, _args| async move {
            let step = ctx.request_state().and_then(|s| s["step"].as_u64()).unwrap_or(0);
            let answered = ctx.elicited("who").is_some();
            match (step, answered) {
                (0, _) => ask(ctx
                    .input_required()
                    .elicit("who", name_form("Step one"))
                    .state(json!({"step": 1}))),
                (1, true) => ask(ctx
                    .input_required()
                    .elicit("who", name_form("Step two"))
                    .state(json!({"step": 2}))),
                (2, true) => done(ToolOutput::text("two steps done")),
                _ => done(ToolOutput::error("out of order")),
            }
        })
        .tool(Tool::new("visit", ToolSchema::object()), |ctx, _args| async move {
            if let Some(answer) = ctx.elicitation_response("login") {
                let action = serde_json::to_value(answer.action).unwrap_or_default();
                return done(ToolOutput::text(format!("visit {}", action.as_str().unwrap_or("?"))));
            }
            let url = ElicitRequestURLParams::new("Please log in", "https://example.com/login");
            ask(ctx.input_required().elicit("login", url))
        })
        .tool(Tool::new("never_satisfied", ToolSchema::object()), |ctx, _args| async move {
            ask(ctx.input_required().elicit("who", name_form("Again?")))
        })
        .tool(regional, |_ctx, args| async move {
            let region = args.get("region").and_then(|r| r.as_str()).unwrap_or_default();
            Ok(ToolOutput::text(format!("region {region}")))
        })
        .build()
}
