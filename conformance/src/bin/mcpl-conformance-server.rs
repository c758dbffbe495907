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
use mcpl_server::http::{ConnectionConfig, ConnectionThreads, HttpConfig, StreamableHttp};

const DEFAULT_PORT: u16 = 3000;

/// `MCPL_RUNTIME`: `current-thread` (the default) or `multi-thread` (tokio's default runtime,
/// as `#[tokio::main]` builds it; `TOKIO_WORKER_THREADS` sets its worker count).
const RUNTIME: &str = "MCPL_RUNTIME";
/// `MCPL_JSON_RESPONSE=1`: answer 2025-session requests with one JSON body, not an SSE stream.
const JSON_RESPONSE: &str = "MCPL_JSON_RESPONSE";
/// `MCPL_CONNECTION_THREADS`: `per-core`, or a count: serve connections on threads of the
/// listener's own (see `ConnectionConfig::threads`); unset, on the runtime's.
const CONNECTION_THREADS: &str = "MCPL_CONNECTION_THREADS";

// By default one thread serves everything: every request of a connection is read, handled and
// answered on the thread that accepted it, with no wake-ups across worker threads. On the
// 2-core benchmark machine, sharing its cores with the load generator, this served stateless
// `tools/call` at c=32 about 50% faster than the default multi-threaded runtime before the
// engine's cross-thread work was cut; see docs/performance.md. A server whose handlers do
// real work would use the multi-threaded runtime: `mcpl-server` works on either, and
// `MCPL_RUNTIME=multi-thread` runs this fixture on it.
fn main() -> ExitCode {
    let runtime = match std::env::var(RUNTIME).as_deref() {
        Err(_) | Ok("current-thread") => {
            tokio::runtime::Builder::new_current_thread().enable_all().build()
        }
        Ok("multi-thread") => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
        Ok(other) => {
            eprintln!(
                "mcpl-conformance-server: {RUNTIME} must be current-thread or multi-thread, not {other:?}"
            );
            return ExitCode::from(2);
        }
    };
    match runtime {
        Ok(runtime) => runtime.block_on(serve()),
        Err(e) => {
            eprintln!("mcpl-conformance-server: cannot start the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> ExitCode {
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
    let threads = match std::env::var(CONNECTION_THREADS).as_deref() {
        Err(_) => ConnectionThreads::Caller,
        Ok("per-core") => ConnectionThreads::PerCore,
        Ok(n) => match n.parse::<std::num::NonZeroUsize>() {
            Ok(n) => ConnectionThreads::Own(n),
            Err(e) => {
                eprintln!("mcpl-conformance-server: bad {CONNECTION_THREADS} {n:?}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let connections = ConnectionConfig::new().shutdown_on(shutdown_signal()).threads(threads);
    let json = std::env::var(JSON_RESPONSE).is_ok_and(|v| v == "1");
    let config = HttpConfig::new().connections(connections).json_response(json);
    let endpoint = StreamableHttp::new(server, config);
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
