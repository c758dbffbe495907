//! The MCPL channel server (see `mcpl_examples::mcpl_channels`) on stdin/stdout, or on
//! WebSocket with `--ws ADDR`. `--conformance` adds the `mcpl_conformance_trigger` tool. See
//! `mcpl_examples::mcpl_cli` for the command line.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mcpl_examples::init_logging();
    mcpl_examples::mcpl_cli::run(mcpl_examples::mcpl_channels::channel_server).await
}
