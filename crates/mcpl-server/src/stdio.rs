//! Serving on this process's stdin and stdout.

use mcpl_core::Result;
use mcpl_core::transport::stdio::stdio;

use crate::builder::Server;

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
pub async fn serve(server: Server) -> Result<()> {
    let session = server.serve(stdio()).await?;
    session.closed().await;
    Ok(())
}
