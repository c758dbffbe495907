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
        let args = args.as_object().cloned().unwrap_or_default();
        let result = client.call_tool(name, args).await?;
        let text: Vec<String> = result
            .content
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .filter_map(|v| v.get("text").and_then(|t| t.as_str()).map(str::to_owned))
            .collect();
        let marker = if result.is_error == Some(true) { "error" } else { "ok" };
        println!("call {name} -> {marker}: {}", text.join(" "));
    }

    client.ping().await?;
    client.close().await?;
    println!("closed");
    Ok(())
}
