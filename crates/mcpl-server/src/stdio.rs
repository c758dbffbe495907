//! Serving on this process's stdin and stdout.

use mcpl_core::Result;
use std::time::Duration;

use mcpl_core::engine::CancellationToken;
use mcpl_core::transport::stdio::stdio;

use crate::server::Server;

/// Serves `server` on stdin/stdout until the client closes stdin.
///
/// Stdout carries protocol messages only; log to stderr.
///
/// # Errors
///
/// A failure to start the transport.
///
/// # Cancel safety
///
/// Dropping the future stops serving.
///
/// # Examples
///
/// A complete stdio server (`no_run`: it serves until stdin closes):
///
/// ```no_run
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
///
/// #[tokio::main]
/// async fn main() -> mcpl_core::Result<()> {
///     let server = Server::builder("echo", "1.0.0")
///         .tool(Tool::new("echo", ToolSchema::object()), |_ctx, args| async move {
///             Ok(ToolOutput::text(serde_json::Value::Object(args).to_string()))
///         })
///         .build();
///     mcpl_server::stdio::serve(server).await
/// }
/// ```
pub async fn serve(server: Server) -> Result<()> {
    let session = server.serve(stdio()).await?;
    session.closed().await;
    Ok(())
}

/// Serves `server` on stdin/stdout until the client closes stdin or `shutdown` is cancelled.
/// On shutdown, requests in flight get up to `grace` to finish and be answered; then the
/// session closes (its handlers stop, and so do its task handlers, their tasks recorded
/// `cancelled`) and this returns.
///
/// Stdin that is a pipe is read through the runtime's IO driver (on Unix: see
/// [`mcpl_core::transport::stdio`]); any other stdin (a terminal, or on Windows) is read by
/// tokio on a blocking thread that its runtime waits for when it shuts down, so a portable
/// process whose stdin may still be open exits once this returns (as below).
///
/// # Errors
///
/// A failure to start the transport.
///
/// # Examples
///
/// Stopping on SIGINT (Ctrl-C) or SIGTERM (`no_run`: it serves until then):
///
/// ```no_run
/// use std::time::Duration;
/// use mcpl_core::engine::CancellationToken;
/// use mcpl_server::Server;
///
/// #[tokio::main]
/// async fn main() -> mcpl_core::Result<()> {
///     let shutdown = CancellationToken::new();
///     let on_signal = shutdown.clone();
///     tokio::spawn(async move {
///         let _ = tokio::signal::ctrl_c().await;
///         on_signal.cancel();
///     });
///     let server = Server::builder("echo", "1.0.0").build();
///     mcpl_server::stdio::serve_until(server, shutdown, Duration::from_secs(10)).await?;
///     std::process::exit(0)
/// }
/// ```
pub async fn serve_until(
    server: Server,
    shutdown: CancellationToken,
    grace: Duration,
) -> Result<()> {
    let session = server.serve(stdio()).await?;
    tokio::select! {
        () = session.closed() => return Ok(()),
        () = shutdown.cancelled() => {}
    }
    crate::session::drain(session.peer(), grace).await;
    if let Err(e) = session.close().await {
        tracing::debug!(error = %e, "closing the stdio session at shutdown failed");
    }
    server.inner.tasks.shutdown().await;
    Ok(())
}
