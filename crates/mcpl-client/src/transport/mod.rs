//! Transports only a client needs.
//!
//! - [`ChildProcess`]: spawn a server as a child process and speak newline-delimited JSON over
//!   its stdin and stdout.

mod child;

pub use self::child::{ChildProcess, ChildReceiver, ChildSender};
