//! Strict capability enforcement: which server capability each request needs.
//!
//! With [`Client::with_strict_capabilities`](crate::Client::with_strict_capabilities) on, every
//! request goes through [`check`] before it is sent, so a method the server did not advertise
//! fails locally with [`ErrorKind::CapabilityNotSupported`](mcpl_core::ErrorKind) and nothing
//! reaches the wire.
//!
//! ```
//! use mcpl_client::capability::{check, required};
//! use mcpl_core::types::ServerCapabilities;
//!
//! assert_eq!(required("prompts/get"), Some("prompts"));
//! assert_eq!(required("ping"), None);
//! let nothing = ServerCapabilities::default();
//! assert!(check("resources/list", &nothing).is_err());
//! assert!(check("ping", &nothing).is_ok());
//! ```

use mcpl_core::types::{SKILLS_EXTENSION, ServerCapabilities, names};
use mcpl_core::{Error, Result};

/// The capability a request of `method` needs the server to have advertised, as a path
/// (`tools`, `resources.subscribe`, `tasks.list`...); `None` for methods every server answers
/// (`ping`, `server/discover`, `initialize`) and for methods this table does not know (custom
/// methods are never refused). The skills extension's methods need the extension
/// (`extensions.io.modelcontextprotocol/skills`), and `resources/directory/read` its
/// `directoryRead` setting.
///
/// # Examples
///
/// ```
/// use mcpl_client::capability::required;
///
/// assert_eq!(required("tools/call"), Some("tools"));
/// assert_eq!(required("resources/subscribe"), Some("resources.subscribe"));
/// assert_eq!(required("logging/setLevel"), Some("logging"));
/// // Every server answers these, and custom methods are never refused.
/// assert_eq!(required("ping"), None);
/// assert_eq!(required("server/discover"), None);
/// assert_eq!(required("x-acme/reindex"), None);
/// ```
pub fn required(method: &str) -> Option<&'static str> {
    Some(match method {
        names::TOOLS_LIST | names::TOOLS_CALL => "tools",
        names::RESOURCES_LIST | names::RESOURCES_TEMPLATES_LIST | names::RESOURCES_READ => {
            "resources"
        }
        names::RESOURCES_SUBSCRIBE | names::RESOURCES_UNSUBSCRIBE => "resources.subscribe",
        names::PROMPTS_LIST | names::PROMPTS_GET => "prompts",
        names::COMPLETION_COMPLETE => "completions",
        names::LOGGING_SET_LEVEL => "logging",
        names::TASKS_LIST => "tasks.list",
        names::TASKS_CANCEL => "tasks.cancel",
        names::TASKS_GET | names::TASKS_RESULT | names::TASKS_UPDATE => "tasks",
        names::SKILLS_LIST | names::SKILLS_GET => SKILLS,
        names::RESOURCES_DIRECTORY_READ => SKILLS_DIRECTORY_READ,
        _ => return None,
    })
}

/// The path of the skills extension (SEP-2640) in [`required`]'s answers.
const SKILLS: &str = "extensions.io.modelcontextprotocol/skills";
/// The path of the skills extension's `directoryRead` setting.
const SKILLS_DIRECTORY_READ: &str = "extensions.io.modelcontextprotocol/skills.directoryRead";

/// Whether `capabilities` advertise the capability at `path` (as [`required`] names them).
fn advertised(capabilities: &ServerCapabilities, path: &str) -> bool {
    let skills = || capabilities.extensions.as_ref().and_then(|e| e.get(SKILLS_EXTENSION));
    match path {
        SKILLS => skills().is_some(),
        SKILLS_DIRECTORY_READ => skills()
            .and_then(|s| s.get("directoryRead"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        "tools" => capabilities.tools.is_some(),
        "resources" => capabilities.resources.is_some(),
        "resources.subscribe" => {
            capabilities.resources.as_ref().and_then(|r| r.subscribe).unwrap_or(false)
        }
        "prompts" => capabilities.prompts.is_some(),
        "completions" => capabilities.completions.is_some(),
        "logging" => capabilities.logging.is_some(),
        "tasks" => capabilities.tasks.is_some(),
        "tasks.list" => capabilities.tasks.as_ref().is_some_and(|t| t.list.is_some()),
        "tasks.cancel" => capabilities.tasks.as_ref().is_some_and(|t| t.cancel.is_some()),
        _ => true,
    }
}

/// Checks that `capabilities` allow a request of `method`.
///
/// # Errors
///
/// `CapabilityNotSupported`, naming the missing capability's path.
///
/// # Examples
///
/// ```
/// use mcpl_client::capability::check;
/// use mcpl_core::ErrorKind;
/// use mcpl_core::types::ServerCapabilities;
/// use serde_json::json;
///
/// // Resources, without subscriptions.
/// let caps: ServerCapabilities = serde_json::from_value(json!({"resources": {}})).unwrap();
/// assert!(check("resources/read", &caps).is_ok());
/// let err = check("resources/subscribe", &caps).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::CapabilityNotSupported);
/// assert!(err.to_string().contains("resources.subscribe"));
/// assert!(check("tools/list", &caps).is_err());
/// ```
///
/// With strict capabilities on, a [`Client`](crate::Client) runs this check before each request:
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_core::ErrorKind;
/// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, _args| async move {
/// #             Ok(mcpl_server::ToolOutput::text("echo"))
/// #         })
/// #         .build();
/// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
/// #     Ok((server.serve(theirs).await?, ours))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcpl_core::Result<()> {
/// # let (_session, transport) = echo_server().await?;
/// // The server offers tools only.
/// let client = Client::new("my-app", "1.0.0").with_strict_capabilities(true);
/// client.connect(transport).await?;
/// client.list_tools().await?;
/// let err = client.list_prompts().await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::CapabilityNotSupported);
/// # Ok(()) }
/// ```
pub fn check(method: &str, capabilities: &ServerCapabilities) -> Result<()> {
    match required(method) {
        Some(path) if !advertised(capabilities, path) => {
            Err(Error::CapabilityNotSupported { capability: path.to_owned() })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpl_core::ErrorKind;
    use mcpl_core::types::ServerCapabilities;
    use serde_json::json;

    use super::*;

    fn caps(v: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn each_method_needs_its_capability() {
        let none = caps(json!({}));
        for (method, path) in [
            ("tools/list", "tools"),
            ("tools/call", "tools"),
            ("resources/list", "resources"),
            ("resources/read", "resources"),
            ("resources/templates/list", "resources"),
            ("resources/subscribe", "resources.subscribe"),
            ("prompts/get", "prompts"),
            ("completion/complete", "completions"),
            ("logging/setLevel", "logging"),
            ("tasks/get", "tasks"),
        ] {
            let e = check(method, &none).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::CapabilityNotSupported, "{method}");
            assert!(e.to_string().contains(path), "{method}: {e}");
        }
        for method in ["ping", "server/discover", "initialize", "x-custom/thing"] {
            check(method, &none).unwrap();
        }
    }

    #[test]
    fn skills_need_the_extension_and_directory_reads_its_setting() {
        let none = caps(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
        for method in ["skills/list", "skills/get", "resources/directory/read"] {
            let e = check(method, &none).unwrap_err();
            assert!(e.to_string().contains("io.modelcontextprotocol/skills"), "{e}");
        }
        let plain = caps(json!({"extensions": {"io.modelcontextprotocol/skills": {}}}));
        check("skills/list", &plain).unwrap();
        check("skills/get", &plain).unwrap();
        assert!(check("resources/directory/read", &plain).is_err());
        let dirs = caps(
            json!({"extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}}),
        );
        check("resources/directory/read", &dirs).unwrap();
    }

    #[test]
    fn advertised_capabilities_pass_and_subscribe_needs_its_flag() {
        let all = caps(json!({
            "tools": {}, "resources": {}, "prompts": {}, "completions": {}, "logging": {}
        }));
        for method in ["tools/list", "resources/read", "prompts/list", "completion/complete"] {
            check(method, &all).unwrap();
        }
        check("logging/setLevel", &all).unwrap();
        assert!(check("resources/subscribe", &all).is_err());
        check("resources/subscribe", &caps(json!({"resources": {"subscribe": true}}))).unwrap();
    }
}
