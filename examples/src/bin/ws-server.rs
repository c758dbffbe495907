//! The weather example server over WebSocket at `ws://127.0.0.1:3000/ws` (set `PORT` to change
//! the port). Every connection is its own session; connect with
//! `mcpl_client::transport::WebSocketTransport::new("ws://127.0.0.1:3000/ws")`, or run
//! `ws-client`.

use mcpl_server::ws::{WebSocketEndpoint, WsConfig};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    mcpl_examples::init_logging();
    let port: u16 = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3000);
    // On SIGINT or SIGTERM: stop accepting and close every connection once its requests end.
    let connections =
        mcpl_server::http::ConnectionConfig::new().shutdown_on(mcpl_examples::shutdown_signal());
    let config = WsConfig::new().connections(connections.clone());
    let app = WebSocketEndpoint::new(mcpl_examples::weather_server(), config).into_router("/ws");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("weather-example listening on ws://{}/ws", listener.local_addr()?);
    mcpl_server::ws::serve_with(listener, app, connections).await
}
