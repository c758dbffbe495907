//! The line transport over this process's stdin and stdout.
//!
//! Stdout carries protocol messages only: nothing else in the process may print to it. Send logs
//! to stderr (for example with `tracing_subscriber::fmt().with_writer(std::io::stderr)`).

use tokio::io::{Stdin, Stdout};

use super::lines::LineTransport;

/// A transport over stdin and stdout.
pub type StdioTransport = LineTransport<Stdin, Stdout>;

/// Creates the transport over this process's stdin and stdout.
///
/// # Examples
///
/// ```no_run
/// # async fn run() -> mcpl_core::Result<()> {
/// let engine = mcpl_core::Engine::new();
/// engine.connect(mcpl_core::transport::stdio::stdio()).await?;
/// # Ok(()) }
/// ```
pub fn stdio() -> StdioTransport {
    LineTransport::new(tokio::io::stdin(), tokio::io::stdout())
}
