//! Shared pieces of the mcpl-rs examples.
//!
//! - `quickstart`: a client that starts [`weather_server`] as a real child process and talks to
//!   it over stdio. Run it with `cargo run -p mcpl-examples --bin quickstart`.
//! - `weather-server`: the same server on its own, for any MCP client.

use mcpl_core::types::{Tool, ToolAnnotations, ToolSchema};
use mcpl_server::{Server, ToolOutput};
use serde_json::json;

/// A small server with two tools: `forecast` and `convert_temperature`.
pub fn weather_server() -> Server {
    let forecast = Tool {
        description: Some("A (made-up) forecast for a city.".into()),
        annotations: Some(ToolAnnotations { read_only_hint: Some(true), ..Default::default() }),
        ..Tool::new(
            "forecast",
            ToolSchema::object()
                .with_property("city", json!({"type": "string", "description": "City name"}))
                .with_required("city"),
        )
    };
    let convert = Tool {
        description: Some("Converts degrees Celsius to Fahrenheit.".into()),
        ..Tool::new(
            "convert_temperature",
            ToolSchema::object()
                .with_property("celsius", json!({"type": "number"}))
                .with_required("celsius"),
        )
    };
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

/// The README's code blocks, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
