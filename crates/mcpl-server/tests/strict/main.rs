//! Strict serving over real sockets (issue 15): panics answered, inputs validated, URI
//! templates matched in linear time, sessions, tasks and request state bound to the principal
//! that created them, task expiry, and strict `Host`/`Origin` parsing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unreachable_pub)]

mod host_origin;
mod panics;
mod principals;
mod support;
mod task_expiry;
mod uri_templates;
mod validation;
