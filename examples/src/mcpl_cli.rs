//! The command line the MCPL example servers share:
//! `[--conformance] [--ws ADDR]`.
//!
//! - Without `--ws` the server serves stdin/stdout (newline-delimited JSON-RPC).
//! - With `--ws ADDR` (e.g. `--ws 127.0.0.1:0`) it serves WebSocket connections at
//!   `ws://ADDR/mcpl` instead, each connection its own session
//!   ([`mcpl_server::ws::WebSocketEndpoint`]), and prints the bound URL
//!   (`ws://127.0.0.1:PORT/mcpl`) on stdout, on one line, once it listens; port `0` picks a
//!   free port. The endpoint keeps the SDK's DNS-rebinding protection: only loopback `Host`
//!   names are accepted.
//! - `--conformance` adds the `mcpl_conformance_trigger` tool ([`crate::mcpl_trigger`]), over
//!   either transport.
//!
//! ```
//! use mcpl_examples::mcpl_cli::{Args, Listen};
//!
//! let args = Args::parse(["--ws", "127.0.0.1:0", "--conformance"]).unwrap();
//! assert_eq!(args, Args { conformance: true, listen: Listen::WebSocket("127.0.0.1:0".into()) });
//! assert_eq!(Args::parse(Vec::<String>::new()).unwrap().listen, Listen::Stdio);
//! assert!(Args::parse(["--ws"]).is_err());
//! ```

use std::process::ExitCode;

use mcpl_server::Server;
use mcpl_server::http::ConnectionConfig;
use mcpl_server::ws::{WebSocketEndpoint, WsConfig};

/// The path the WebSocket endpoint is served at.
pub const WS_PATH: &str = "/mcpl";

/// The usage line.
pub const USAGE: &str = "usage: SERVER [--conformance] [--ws ADDR]

Serves on stdin/stdout, or with --ws on WebSocket at ws://ADDR/mcpl (ADDR like 127.0.0.1:0;
the bound URL is printed on stdout once listening). --conformance adds the
mcpl_conformance_trigger tool.";

/// Where a server listens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Listen {
    /// Stdin and stdout.
    #[default]
    Stdio,
    /// WebSocket connections on this address (`HOST:PORT`).
    WebSocket(String),
}

/// The parsed command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// `--conformance`: list the conformance trigger tool.
    pub conformance: bool,
    /// The transport.
    pub listen: Listen,
}

/// A command line that is not `[--conformance] [--ws ADDR]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// An argument the servers do not know.
    #[error("unexpected argument {0:?}")]
    Unexpected(String),
    /// `--ws` without its address.
    #[error("--ws needs an address, e.g. --ws 127.0.0.1:0")]
    MissingAddress,
    /// `-h` or `--help`.
    #[error("help requested")]
    Help,
}

/// Serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The stdio session could not start.
    #[error("stdio: {0}")]
    Stdio(#[from] mcpl_core::Error),
    /// The WebSocket listener could not bind or serve.
    #[error("websocket on {addr}: {source}")]
    WebSocket {
        /// The address given with `--ws`.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

impl Args {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    ///
    /// [`ArgsError`] for anything but `--conformance`, `--ws ADDR`, `-h` or `--help`.
    pub fn parse<I, S>(args: I) -> Result<Args, ArgsError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut parsed = Args::default();
        let mut it = args.into_iter().map(Into::into);
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--conformance" => parsed.conformance = true,
                "--ws" => match it.next() {
                    Some(addr) if !addr.starts_with('-') => parsed.listen = Listen::WebSocket(addr),
                    _ => return Err(ArgsError::MissingAddress),
                },
                "-h" | "--help" => return Err(ArgsError::Help),
                _ => return Err(ArgsError::Unexpected(arg)),
            }
        }
        Ok(parsed)
    }
}

/// Serves `server` on `listen` until stdin closes (stdio), or until SIGINT or SIGTERM (either).
///
/// # Errors
///
/// The stdio session could not start, or the WebSocket address could not be bound.
pub async fn serve(server: Server, listen: &Listen) -> Result<(), ServeError> {
    match listen {
        Listen::Stdio => {
            let grace = std::time::Duration::from_secs(10);
            mcpl_server::stdio::serve_until(server, crate::shutdown_signal(), grace).await?;
            // Unless stdin is a pipe, the runtime would wait for its stdin reader (a blocking
            // thread) until stdin closes.
            std::process::exit(0)
        }
        Listen::WebSocket(addr) => {
            let failed = |source| ServeError::WebSocket { addr: addr.clone(), source };
            let listener = tokio::net::TcpListener::bind(addr.as_str()).await.map_err(failed)?;
            let url = format!("ws://{}{WS_PATH}", listener.local_addr().map_err(failed)?);
            // On SIGINT or SIGTERM: stop accepting, close connections once their requests end.
            let connections = ConnectionConfig::new().shutdown_on(crate::shutdown_signal());
            let config = WsConfig::new().connections(connections.clone());
            let app = WebSocketEndpoint::new(server, config).into_router(WS_PATH);
            // The socket already listens: a client reading this line can connect at once.
            println!("{url}");
            tracing::info!(%url, "listening");
            mcpl_server::ws::serve_with(listener, app, connections).await.map_err(failed)
        }
    }
}

/// The whole `main` of an example server: parses the command line, builds the server with
/// `build(conformance)` and serves it. Exit code 2 on a bad command line, 1 when serving fails.
pub async fn run(build: impl FnOnce(bool) -> Server) -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(ArgsError::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match serve(build(args.conformance), &args.listen).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
