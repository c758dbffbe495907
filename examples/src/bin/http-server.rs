//! The weather example server over Streamable HTTP at `http://127.0.0.1:3000/mcp`
//! (set `PORT` to change the port).
//!
//! Logs go to stderr, filtered by `RUST_LOG` (default: warnings only). To see every request
//! the server serves, with its method, id, tool, revision, era, session and the client's
//! address, a line as each one ends (and one as each HTTP request ends):
//!
//! ```sh
//! RUST_LOG=warn,mcpl_core::trace=debug,mcpl_server::trace=debug cargo run -p mcpl-examples --bin http-server
//! ```
//!
//! `RUST_LOG=mcpl_core::trace=trace` adds every message's JSON. The spans, their fields and the
//! events are listed in `docs/observability.md`.

use mcpl_server::http::{ConnectionConfig, HttpConfig, StreamableHttp};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

// One thread serves every connection: the endpoint answers each request on its connection's
// task, and for requests as cheap as these a current-thread runtime serves the most (see the
// "Throughput" section of the `mcpl_server::http` docs).
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    // `RUST_LOG` picks what is logged; a line is written as each span closes (with how long it
    // took), inside the spans it ran in.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .init();
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
