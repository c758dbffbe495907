//! `mcpl-client` against `mcpl-server` over stdio (a real child process), in both eras, and
//! era negotiation over stdio.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mcpl_client::transport::ChildProcess;
use mcpl_client::{Client, Negotiation};
use mcpl_core::ProtocolVersion;
use mcpl_core::types::CallToolResult;
use serde_json::{Map, Value, json};

fn weather() -> ChildProcess {
    ChildProcess::new(env!("CARGO_BIN_EXE_weather-server"))
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

async fn forecast_and_convert(client: &Client) {
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["forecast", "convert_temperature"]);
    let args = |v: Value| v.as_object().cloned().unwrap_or_else(Map::new);
    let result = client.call_tool("forecast", args(json!({"city": "Oslo"}))).await.unwrap();
    assert!(text(&result).starts_with("Oslo: "), "{result:?}");
    let result = client.call_tool("convert_temperature", args(json!({"celsius": 100}))).await;
    assert_eq!(text(&result.unwrap()), "100 °C = 212 °F");
    // Invalid input is a tool error result, not a protocol error.
    let result = client.call_tool("forecast", Map::new()).await.unwrap();
    assert_eq!(result.is_error, Some(true));
}

#[tokio::test]
async fn the_2025_era_over_stdio() {
    let client = Client::new("stdio-test", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    let details = client.connect(weather()).await.unwrap();
    assert!(!details.is_stateless());
    assert_eq!(client.server().unwrap().protocol_version, ProtocolVersion::V2025_11_25);
    forecast_and_convert(&client).await;
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_2026_era_over_stdio() {
    let client = Client::new("stdio-test", "1")
        .with_negotiation(Negotiation::pinned(ProtocolVersion::V2026_07_28));
    let details = client.connect(weather()).await.unwrap();
    assert!(details.is_stateless());
    forecast_and_convert(&client).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn auto_negotiation_over_stdio_picks_the_stateless_era() {
    let client = Client::new("stdio-test", "1");
    let details = client.connect(weather()).await.unwrap();
    assert!(details.is_stateless(), "{details:?}");
    assert_eq!(
        details.instructions.as_deref(),
        Some("Ask for a forecast by city; convert temperatures when asked.")
    );
    forecast_and_convert(&client).await;
    client.close().await.unwrap();
}
