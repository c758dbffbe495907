//! `mcpl-conformance-server`: the "everything server" the official MCP conformance suite tests,
//! built with `mcpl-server`.
//!
//! Serves Streamable HTTP at `http://127.0.0.1:$PORT/mcp` (`PORT` defaults to 3000), both the
//! stateful 2025 era (sessions) and the stateless 2026-07-28 era on the same endpoint. What it
//! exposes (tools, resources, templates, prompts, completion, logging) is defined in
//! `conformance/src/fixture/`; see `conformance/README.md` for how to run the suite against it.

#[path = "../fixture/mod.rs"]
mod fixture;

use std::process::ExitCode;

use mcpl_core::engine::CancellationToken;
use mcpl_server::http::{ConnectionConfig, HttpConfig, StreamableHttp};

const DEFAULT_PORT: u16 = 3000;

// One thread serves everything: every request of a connection is read, handled and answered on
// the thread that accepted it, with no wake-ups across worker threads. On the 2-core benchmark
// machine, sharing its cores with the load generator, this serves stateless `tools/call` at
// c=32 about 50% faster (about 0.9x of the benchmark's limit server, against 0.6x), and
// stateful sessions about 20% faster, than the default multi-threaded runtime; see
// docs/performance.md (fourth and fifth passes). A server whose handlers do
// real work would use the multi-threaded runtime: `mcpl-server` works on either.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // Logs to stderr (`RUST_LOG` to choose; refusals are at debug under
    // `mcpl_server::refusal`).
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let port = match std::env::var("PORT") {
        Ok(p) => match p.parse::<u16>() {
            Ok(port) => port,
            Err(e) => {
                eprintln!("mcpl-conformance-server: bad PORT {p:?}: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => DEFAULT_PORT,
    };
    let server = match fixture::server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mcpl-conformance-server: invalid fixture: {e}");
            return ExitCode::FAILURE;
        }
    };
    // SIGINT or SIGTERM: stop accepting, let requests finish, end streams and sessions.
    let connections = ConnectionConfig::new().shutdown_on(shutdown_signal());
    let endpoint = StreamableHttp::new(server, HttpConfig::new().connections(connections));
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mcpl-conformance-server: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("mcpl-conformance-server: listening on http://127.0.0.1:{port}/mcp");
    // The endpoint alone, straight on hyper: no router in between (see `serve_at`).
    match endpoint.serve_at(listener, "/mcp").await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpl-conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A token cancelled on the first SIGINT or SIGTERM.
fn shutdown_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                },
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("mcpl-conformance-server: shutting down");
        cancel.cancel();
    });
    token
}
