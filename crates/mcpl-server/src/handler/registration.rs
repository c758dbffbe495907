//! [`RegistrationError`]: why a tool, resource, prompt or completer could not be registered.

/// Why a feature could not be registered.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{RegistrationError, Server, ToolOutput};
///
/// let err = Server::builder("s", "1")
///     .tool(Tool::new("bad name!", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
///     .try_build()
///     .unwrap_err();
/// assert!(matches!(err.problems[0], RegistrationError::InvalidName(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A tool name breaks the naming rules (see [`crate::tool::validate_tool_name`]).
    #[error("{0}")]
    InvalidName(String),
    /// A tool's input or output schema is not a valid object schema.
    #[error("tool {tool:?}: {problem}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        problem: String,
    },
    /// A typed prompt's arguments type does not give a usable list of string arguments.
    #[error("prompt {prompt:?}: its arguments type cannot be listed")]
    InvalidPromptArguments {
        /// The prompt's name.
        prompt: String,
        /// What is wrong.
        #[source]
        source: crate::schema::SchemaError,
    },
    /// The operating system's random generator failed: no default `requestState` key could
    /// be drawn. Set one with [`ServerBuilder::state_sealer`](crate::ServerBuilder::state_sealer); a server built anyway with
    /// [`build`](crate::ServerBuilder::build) refuses every sealed state and task id.
    #[error("no default requestState key")]
    NoRandomness(#[source] crate::request_state::RandomnessError),
    /// A resource template does not parse.
    #[error("{0}")]
    InvalidTemplate(String),
    /// The name or URI is already registered.
    #[error("{kind} {key:?} is defined twice")]
    Duplicate {
        /// What kind of feature: `tool`, `resource`, `resource template` or `prompt`.
        kind: &'static str,
        /// Its name or URI.
        key: String,
    },
    /// The MCPL manifest has no revision (an identifier breaks the charset rule), or declares a
    /// feature set the server cannot serve.
    #[error("MCPL manifest: {0}")]
    InvalidMcplManifest(String),
    /// A completer names a prompt argument or template variable that does not exist.
    #[error("completer for {target}: no such {what}")]
    UnknownCompletionTarget {
        /// The prompt or template, and the argument or variable.
        target: String,
        /// What is missing.
        what: &'static str,
    },
}
