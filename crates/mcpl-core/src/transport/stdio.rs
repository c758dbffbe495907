//! The line transport over this process's stdin and stdout.
//!
//! Stdout carries protocol messages only: nothing else in the process may print to it. Send logs
//! to stderr (for example with `tracing_subscriber::fmt().with_writer(std::io::stderr)`).
//!
//! Tokio's own [`Stdin`] and [`Stdout`] read and write on its blocking thread pool: every line
//! read and every answer written is handed to another thread and back, which costs more than
//! the request itself. On Unix, when stdin or stdout is a pipe (as it is for a server spawned by
//! a client), this transport reads or writes it directly through the runtime's IO driver
//! instead: the pipe is put in non-blocking mode, as tokio's child-process pipes are. A
//! terminal, a file or a socket falls back to tokio's blocking [`Stdin`] and [`Stdout`].

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, Stdin, Stdout};

use super::lines::LineTransport;

/// A transport over stdin and stdout.
pub type StdioTransport = LineTransport<StdinReader, StdoutWriter>;

/// Creates the transport over this process's stdin and stdout.
///
/// # Panics
///
/// On Unix, when stdin or stdout is a pipe, if called outside a Tokio runtime with IO enabled
/// (`#[tokio::main]` and `Builder::enable_all` enable it), as every Tokio IO type does.
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
    LineTransport::new(StdinReader::new(), StdoutWriter::new())
}

/// This process's stdin: a pipe read through the runtime's IO driver, or tokio's [`Stdin`].
#[derive(Debug)]
pub struct StdinReader(Reader);

#[derive(Debug)]
enum Reader {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    Blocking(Stdin),
}

impl StdinReader {
    /// Opens stdin: directly when it is a pipe (Unix), else through tokio's blocking pool.
    ///
    /// # Panics
    ///
    /// As [`stdio`].
    pub fn new() -> Self {
        #[cfg(unix)]
        if let Some(pipe) = pipe::receiver() {
            return StdinReader(Reader::Pipe(pipe));
        }
        StdinReader(Reader::Blocking(tokio::io::stdin()))
    }

    /// Whether stdin is read directly as a pipe (not on tokio's blocking pool).
    pub fn is_pipe(&self) -> bool {
        !matches!(self.0, Reader::Blocking(_))
    }
}

impl Default for StdinReader {
    fn default() -> Self {
        Self::new()
    }
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Reader::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            Reader::Blocking(stdin) => Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

/// This process's stdout: a pipe written through the runtime's IO driver, or tokio's
/// [`Stdout`].
#[derive(Debug)]
pub struct StdoutWriter(Writer);

#[derive(Debug)]
enum Writer {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    Blocking(Stdout),
}

impl StdoutWriter {
    /// Opens stdout: directly when it is a pipe (Unix), else through tokio's blocking pool.
    ///
    /// # Panics
    ///
    /// As [`stdio`].
    pub fn new() -> Self {
        #[cfg(unix)]
        if let Some(pipe) = pipe::sender() {
            return StdoutWriter(Writer::Pipe(pipe));
        }
        StdoutWriter(Writer::Blocking(tokio::io::stdout()))
    }

    /// Whether stdout is written directly as a pipe (not on tokio's blocking pool).
    pub fn is_pipe(&self) -> bool {
        !matches!(self.0, Writer::Blocking(_))
    }
}

impl Default for StdoutWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Writer::Pipe(pipe) => Pin::new(pipe).poll_write(cx, buf),
            Writer::Blocking(stdout) => Pin::new(stdout).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Writer::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Writer::Blocking(stdout) => Pin::new(stdout).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().0 {
            #[cfg(unix)]
            Writer::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            Writer::Blocking(stdout) => Pin::new(stdout).poll_shutdown(cx),
        }
    }
}

/// Stdin and stdout as pipes of the runtime's IO driver, when they are pipes.
#[cfg(unix)]
mod pipe {
    use std::os::fd::{AsFd, OwnedFd};

    use tokio::net::unix::pipe::{Receiver, Sender};

    /// Stdin as a pipe, or `None` when it is not one (or cannot be duplicated). The
    /// descriptor is a duplicate, so the process's stdin stays open for anything else.
    pub(super) fn receiver() -> Option<Receiver> {
        let fd = duplicate(std::io::stdin().as_fd())?;
        Receiver::from_owned_fd(fd).ok()
    }

    /// Stdout as a pipe, or `None` when it is not one.
    pub(super) fn sender() -> Option<Sender> {
        let fd = duplicate(std::io::stdout().as_fd())?;
        Sender::from_owned_fd(fd).ok()
    }

    fn duplicate(fd: std::os::fd::BorrowedFd<'_>) -> Option<OwnedFd> {
        match fd.try_clone_to_owned() {
            Ok(owned) => Some(owned),
            Err(error) => {
                tracing::debug!(%error, "stdio: cannot duplicate the descriptor; using tokio's blocking stdio");
                None
            }
        }
    }
}
