//! The weather example server over Streamable HTTP at `http://127.0.0.1:3000/mcp`
//! (set `PORT` to change the port).

use mcpl_server::http::{ConnectionConfig, HttpConfig, StreamableHttp};

// One thread serves every connection: the endpoint answers each request on its connection's
// task, and for requests as cheap as these a current-thread runtime serves the most (see the
// "Throughput" section of the `mcpl_server::http` docs).
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    mcpl_examples::init_logging();
    let port: u16 = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3000);
    // On SIGINT or SIGTERM: stop accepting, let requests finish, end streams and sessions.
    let connections = ConnectionConfig::new().shutdown_on(mcpl_examples::shutdown_signal());
    let endpoint = StreamableHttp::new(
        mcpl_examples::weather_server(),
        HttpConfig::new().connections(connections.clone()),
    );
    let app = endpoint.clone().into_router("/mcp");
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("weather-example listening on http://{}/mcp", listener.local_addr()?);
    mcpl_server::http::serve_with(listener, app, connections).await?;
    endpoint.close().await;
    Ok(())
}
