//! The quickstart: a client starts the weather server as a child process (this same binary,
//! with `--serve`) and talks to it over stdio.

use mcpl_client::Client;
use mcpl_client::transport::ChildProcess;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    mcpl_examples::init_logging();
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        mcpl_server::stdio::serve(mcpl_examples::weather_server()).await?;
        return Ok(());
    }

    let me = std::env::current_exe()?;
    let client = Client::new("quickstart", env!("CARGO_PKG_VERSION"));
    let server = client.connect(ChildProcess::new(me).arg("--serve")).await?;
    println!(
        "connected to {} {} (protocol {})",
        server.server_info.name, server.server_info.version, server.protocol_version
    );
    if let Some(instructions) = &server.instructions {
        println!("instructions: {instructions}");
    }

    for tool in client.list_tools().await? {
        println!("tool {}: {}", tool.name, tool.description.unwrap_or_default());
    }

    let calls = [
        ("forecast", json!({"city": "Lisbon"})),
        ("convert_temperature", json!({"celsius": 21.5})),
        ("forecast", json!({})),
    ];
    for (name, args) in calls {
        let result = client.call_tool(name, args).await?;
        let text = result.text().unwrap_or_default();
        let marker = if result.is_error() { "error" } else { "ok" };
        println!("call {name} -> {marker}: {}", text.replace('\n', " "));
    }

    client.ping().await?;
    client.close().await?;
    println!("closed");
    Ok(())
}
