//! MCPL on tools: a tool's feature set, and the state a `tools/call` result carries.

use mcpl_core::mcpl::state::StateCheckpoint;
use mcpl_core::types::{CallToolResult, Meta, Tool};
use serde_json::Value;

/// MCPL members of a tool definition.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::mcpl::McplTool;
///
/// let tool = Tool::new("remember", ToolSchema::object()).in_feature_set("memory.store");
/// assert_eq!(tool.feature_set(), Some("memory.store"));
/// let json = serde_json::to_value(&tool).unwrap();
/// assert_eq!(json["_meta"]["featureSet"], "memory.store");
/// ```
pub trait McplTool: Sized {
    /// Tags the tool with an MCPL feature set (`_meta.featureSet`): its calls belong to that
    /// set (for a stateful set, one declaring `rollback: true`, the host keeps its state).
    fn in_feature_set(self, feature_set: impl Into<String>) -> Self;

    /// The feature set the tool is tagged with.
    fn feature_set(&self) -> Option<&str>;
}

impl McplTool for Tool {
    fn in_feature_set(mut self, feature_set: impl Into<String>) -> Self {
        self.meta
            .get_or_insert_with(Meta::default)
            .0
            .insert("featureSet".to_owned(), Value::String(feature_set.into()));
        self
    }

    fn feature_set(&self) -> Option<&str> {
        self.meta.as_ref()?.0.get("featureSet")?.as_str()
    }
}

/// A `tools/call` result carrying MCPL state (`state: {checkpoint, parent, data? | patch?}`).
///
/// Read the state the host sent with the call from
/// [`Context::mcpl_state`](crate::Context::mcpl_state).
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::state::StateCheckpoint;
/// use mcpl_server::ToolOutput;
/// use mcpl_server::mcpl::WithState;
/// use serde_json::json;
///
/// let result = ToolOutput::text("remembered")
///     .with_state(StateCheckpoint::snapshot("cp-2", Some("cp-1".into()), json!({"notes": ["milk"]})));
/// let json = serde_json::to_value(&result).unwrap();
/// assert_eq!(json["state"]["checkpoint"], "cp-2");
/// assert_eq!(json["state"]["parent"], "cp-1");
/// assert_eq!(json["state"]["data"]["notes"][0], "milk");
/// ```
pub trait WithState {
    /// The result with `state` set.
    #[must_use]
    fn with_state(self, state: StateCheckpoint) -> Self;
}

impl WithState for CallToolResult {
    fn with_state(mut self, state: StateCheckpoint) -> Self {
        match serde_json::to_value(state) {
            Ok(state) => {
                self.extra.insert("state".to_owned(), state);
            }
            Err(e) => tracing::warn!(error = %e, "MCPL state not serializable: left out"),
        }
        self
    }
}
