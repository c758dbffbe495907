//! A client of `ws-server`: connects over WebSocket (the URL is the first argument, default
//! `ws://127.0.0.1:3000/ws`; `mcpl://` URIs work too), lists the tools and asks for a forecast.

use mcpl_client::Client;
use mcpl_client::transport::WebSocketTransport;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    mcpl_examples::init_logging();
    let url = std::env::args().nth(1).unwrap_or_else(|| "ws://127.0.0.1:3000/ws".to_owned());
    let client = Client::new("ws-client", env!("CARGO_PKG_VERSION"));
    let server = client.connect(WebSocketTransport::new(url)).await?;
    println!(
        "connected to {} {} (protocol {})",
        server.server_info.name, server.server_info.version, server.protocol_version
    );
    for tool in client.list_tools().await? {
        println!("tool {}", tool.name);
    }
    let result = client.call_tool("forecast", json!({"city": "Lisbon"})).await?;
    println!("{}", serde_json::to_string(&result.content)?);
    client.close().await?;
    Ok(())
}
