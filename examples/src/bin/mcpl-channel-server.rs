//! The MCPL channel server (see `mcpl_examples::mcpl_channels`) on stdin/stdout.
//! `--conformance` adds the `mcpl_conformance_trigger` tool.

#[tokio::main]
async fn main() -> mcpl_core::Result<()> {
    mcpl_examples::init_logging();
    let server = mcpl_examples::mcpl_channels::channel_server(
        mcpl_examples::mcpl_trigger::conformance_requested(),
    );
    // The transport: stdio (one line to switch).
    mcpl_server::stdio::serve(server).await
}
