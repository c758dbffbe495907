//! A plain MCP server that speaks one protocol era only (see `mcpl_examples::one_era`):
//!
//! ```text
//! mcp-era-server --era 2026                      # stdio, 2026-07-28 only
//! mcp-era-server --era 2025 --http 127.0.0.1:0   # Streamable HTTP, 2025 only; prints its URL
//! ```

use std::process::ExitCode;

use mcpl_core::Era;
use mcpl_examples::one_era::{OneEra, era_server, refuse_other_era};
use mcpl_server::http::{HttpConfig, StreamableHttp};

const USAGE: &str = "usage: mcp-era-server --era 2025|2026 [--http ADDR]";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    mcpl_examples::init_logging();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
    let era = match value("--era").map(String::as_str) {
        Some("2026") => Era::Stateless,
        Some("2025") => Era::Stateful,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let server = era_server(era);
    let served = match value("--http") {
        Some(addr) => {
            let app = StreamableHttp::new(server, HttpConfig::new())
                .into_router("/mcp")
                .layer(axum::middleware::from_fn_with_state(era, refuse_other_era));
            match tokio::net::TcpListener::bind(addr.as_str()).await {
                Ok(listener) => {
                    match listener.local_addr() {
                        Ok(local) => println!("http://{local}/mcp"),
                        Err(e) => eprintln!("{e}"),
                    }
                    mcpl_server::http::serve(listener, app).await.map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("cannot listen on {addr}: {e}")),
            }
        }
        None => match server.serve(OneEra::new(mcpl_core::transport::stdio::stdio(), era)).await {
            Ok(session) => {
                session.closed().await;
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        },
    };
    let code = match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("mcp-era-server: {e}");
            1
        }
    };
    // Unless stdin is a pipe, the runtime would wait for its stdin reader (a blocking thread)
    // until stdin closes.
    std::process::exit(code)
}
