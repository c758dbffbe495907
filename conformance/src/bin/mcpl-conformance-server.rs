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

use mcpl_server::http::{HttpConfig, StreamableHttp};

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
    let endpoint = StreamableHttp::new(server, HttpConfig::new());
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
