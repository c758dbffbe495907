//! The weather example server on stdin/stdout.

/// How long requests in flight may take to finish on SIGINT or SIGTERM.
const GRACE: std::time::Duration = std::time::Duration::from_secs(10);

#[tokio::main]
async fn main() -> mcpl_core::Result<()> {
    mcpl_examples::init_logging();
    mcpl_server::stdio::serve_until(
        mcpl_examples::weather_server(),
        mcpl_examples::shutdown_signal(),
        GRACE,
    )
    .await?;
    // Unless stdin is a pipe, the runtime would wait for its stdin reader (a blocking thread)
    // until stdin closes.
    std::process::exit(0)
}
