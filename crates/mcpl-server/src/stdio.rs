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
