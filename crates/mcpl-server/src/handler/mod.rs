//! The types a handler author works with: the [`Context`](context::Context) a handler gets,
//! tools, resources, prompts and completions, input-required replies, `requestState`
//! sealing, the access token, typed schemas and the task options. They are re-exported at the
//! crate root under their own names (`mcpl_server::tool`, `mcpl_server::context`, ...).
//!
//! Nothing here imports the serving machinery; what a handler reaches of it (the serving
//! [`Server`](crate::Server), a task's table entry) it reaches through the small traits
//! [`context::ServerSide`] and [`task::TaskSide`] that the serving side implements.

pub mod completion;
pub mod context;
pub mod input;
pub mod principal;
pub mod prompt;
pub(crate) mod registration;
pub mod request_state;
pub mod resource;
pub mod schema;
pub mod task;
pub mod tool;
