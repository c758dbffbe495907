//! Transports only a client needs.
//!
//! - [`ChildProcess`]: spawn a server as a child process and speak newline-delimited JSON over
//!   its stdin and stdout.
//! - [`HttpTransport`]: Streamable HTTP, for servers of either era.
//! - [`WebSocketTransport`]: WebSocket (`ws://`, `wss://`, and `mcpl://` URIs resolved with
//!   [`McplUri`]), the transport of MCPL servers that send requests at any time.
//!
//! [`redirect`] holds the redirect rule of every HTTP exchange: same-origin only, a few at most.

mod child;
pub mod headers;
pub mod http;
pub mod mcpl_uri;
pub mod redirect;
pub mod ws;

pub use self::child::{ChildProcess, ChildReceiver, ChildSender};
pub use self::http::{HttpReceiver, HttpSender, HttpTransport};
pub use self::mcpl_uri::{McplUri, McplUriError, McplUriErrorKind};
pub use self::ws::WebSocketTransport;
