//! JSON-RPC 2.0: messages, ids, error objects and the decoding rules MCP applies to untrusted bytes.
//!
//! MCP uses JSON-RPC 2.0 without batches (removed after the 2025-03-26 revision). Every message
//! is one JSON object; [`Message::decode`] turns untrusted bytes into a [`Message`] or a
//! [`DecodeError`] that says which error to answer with.

mod encoded_len;
mod error_object;
mod id;
mod message;
mod raw_json;

pub use self::encoded_len::encoded_len;

pub use self::error_object::{ErrorCode, ErrorObject};
pub use self::id::RequestId;
pub use self::message::{
    DecodeError, ErrorResponse, JSONRPC_VERSION, Message, Notification, Request, Response,
};
pub use self::raw_json::RawJson;
