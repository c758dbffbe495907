//! Transports only a client needs.
//!
//! - [`ChildProcess`]: spawn a server as a child process and speak newline-delimited JSON over
//!   its stdin and stdout.
//! - [`HttpTransport`]: Streamable HTTP, for servers of either era.

mod child;
pub mod headers;
pub mod http;

pub use self::child::{ChildProcess, ChildReceiver, ChildSender};
pub use self::http::{HttpReceiver, HttpSender, HttpTransport};
