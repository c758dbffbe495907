//! What can go wrong in the host: [`HostError`] and the typed causes it carries.

use std::time::Duration;

use mcpl_client::mcpl::McplError;

use crate::checkpoint::{RollbackError, StoreError};
use crate::registry::RegistryError;

/// A host failure.
///
/// # Examples
///
/// ```
/// use mcpl_host::{Host, HostError};
/// use mcpl_host::config::HostConfig;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// match host.call_tool("mcpl--weather--forecast", json!({"city": "Oslo"})).await {
///     Err(HostError::UnknownTool(name)) => assert_eq!(name, "mcpl--weather--forecast"),
///     other => panic!("expected an unknown tool, got {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The registry refused (busy id, meeting prefixes, bad configuration).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The checkpoint store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Connecting to a server failed.
    #[error("server {server:?} did not connect")]
    Connect {
        /// The server.
        server: String,
        /// Why.
        source: ConnectError,
    },
    /// No server offers a tool of this name.
    #[error("no server offers the tool {0:?}")]
    UnknownTool(String),
    /// The server is not connected.
    #[error("server {0:?} is not connected")]
    NotConnected(String),
    /// The tool is filtered out by the server's allow/deny lists.
    #[error("tool {0:?} is not allowed")]
    ToolNotAllowed(String),
    /// A connect was cancelled by a disconnect or a shutdown while its handshake ran; its
    /// connection was closed and it changed nothing.
    #[error("connecting server {0:?} was cancelled")]
    Cancelled(String),
    /// The arguments of a tool call are not an object (nothing was sent).
    #[error("the arguments of tool {tool:?} cannot be sent as a JSON object")]
    InvalidArguments {
        /// The namespaced tool name.
        tool: String,
        /// The serialization error.
        source: mcpl_core::Error,
    },
    /// The call failed at the protocol level.
    #[error("server {server:?}: the tool call failed")]
    Call {
        /// The server.
        server: String,
        /// The error.
        source: mcpl_core::Error,
    },
    /// A rollback could not start or the server refused it.
    #[error("rollback of {feature_set} on server {server:?} to {checkpoint} failed")]
    Rollback {
        /// The server.
        server: String,
        /// The feature set.
        feature_set: String,
        /// The checkpoint asked for.
        checkpoint: String,
        /// Why.
        source: RollbackFailure,
    },
}

impl HostError {
    /// A stable name of the failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let missing = |id: &str, prefix: &str| {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "toolPrefix": "{prefix}",
    /// #         "command": "/nonexistent/mcpl-doc-server", "reconnectIntervalMs": 3600000}}]}}"#);
    /// #     HostConfig::from_json(&text).map(|mut c| c.servers.remove(0))
    /// # };
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// // The handshake fails, but with reconnect on the server stays registered under "tasks".
    /// let err = host.connect(missing("a", "tasks")?).await.unwrap_err();
    /// assert_eq!(err.kind(), "connect");
    /// // A second server whose prefix meets "tasks" is refused before anything is sent.
    /// let err = host.connect(missing("b", "tasks-")?).await.unwrap_err();
    /// assert_eq!(err.kind(), "prefix_conflict");
    /// # Ok(()) }
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            HostError::Registry(e) => e.kind(),
            HostError::Store(e) => e.kind(),
            HostError::Connect { .. } => "connect",
            HostError::Cancelled(_) => "cancelled",
            HostError::UnknownTool(_) => "unknown_tool",
            HostError::NotConnected(_) => "not_connected",
            HostError::ToolNotAllowed(_) => "tool_not_allowed",
            HostError::InvalidArguments { .. } => "invalid_arguments",
            HostError::Call { .. } => "call",
            HostError::Rollback { .. } => "rollback",
        }
    }
}

/// Why a connect failed: the cause of [`HostError::Connect`].
///
/// # Examples
///
/// ```
/// use std::error::Error as _;
/// use mcpl_host::Host;
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::error::ConnectError;
/// use mcpl_host::HostError;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let text = r#"{"servers": {"gone": {"command": "/nonexistent/mcpl-doc-server", "reconnect": false}}}"#;
/// let mut config = HostConfig::from_json(text)?;
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// let err = host.connect(config.servers.remove(0)).await.unwrap_err();
/// let HostError::Connect { ref server, ref source } = err else { panic!("{err:?}") };
/// assert_eq!(server, "gone");
/// assert!(matches!(source, ConnectError::Handshake(_)));
/// // The chain goes on to the transport's own error.
/// assert!(source.source().is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The handshake did not finish in time.
    #[error("the handshake did not finish within {0:?}")]
    Timeout(Duration),
    /// The transport could not be opened or the handshake failed.
    #[error("the connection or its handshake failed")]
    Handshake(#[source] mcpl_core::Error),
    /// The configured transport is not compiled into this build.
    #[error("this transport needs the `{feature}` feature of mcpl-host")]
    MissingFeature {
        /// The Cargo feature that adds it: `child`, `http` or `ws`.
        feature: &'static str,
    },
}

impl ConnectError {
    /// A stable name of the failure: `timeout`, `handshake` or `missing_feature`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_host::error::ConnectError;
    ///
    /// assert_eq!(ConnectError::Timeout(Duration::from_secs(30)).kind(), "timeout");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ConnectError::Timeout(_) => "timeout",
            ConnectError::Handshake(_) => "handshake",
            ConnectError::MissingFeature { .. } => "missing_feature",
        }
    }
}

/// Why a rollback failed: the cause of [`HostError::Rollback`].
///
/// # Examples
///
/// ```
/// use mcpl_host::Host;
/// use mcpl_host::checkpoint::{MoveError, RollbackError, StateMode};
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::error::RollbackFailure;
/// use mcpl_host::HostError;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, false)?;
/// // A checkpoint the host never recorded: refused before anything is sent.
/// let err = host.rollback("notes", "notes.store", "c9").await.unwrap_err();
/// let HostError::Rollback { source, .. } = err else { panic!("{err:?}") };
/// assert!(matches!(
///     source,
///     RollbackFailure::Checkpoints(RollbackError::Checkpoint(MoveError::Unknown(ref c))) if c == "c9"
/// ));
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RollbackFailure {
    /// The host's checkpoint trees refused it (unknown set or checkpoint, no rollback).
    #[error(transparent)]
    Checkpoints(#[from] RollbackError),
    /// The server answered `success: false`.
    #[error("the server declined to roll back ({})", reason.as_deref().unwrap_or("no reason given"))]
    Declined {
        /// The server's reason, if it gave one (server text: escape it before showing it).
        reason: Option<String>,
    },
    /// The server no longer has the checkpoint (`-32005`); it is marked pruned.
    #[error("the server no longer has the checkpoint")]
    Pruned,
    /// The rollback request failed (transport, timeout, or a protocol error).
    #[error("the rollback request failed")]
    Request(#[source] McplError),
}

impl RollbackFailure {
    /// A stable name of the failure: `checkpoints`, `declined`, `pruned` or `request`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::error::RollbackFailure;
    ///
    /// assert_eq!(RollbackFailure::Pruned.kind(), "pruned");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            RollbackFailure::Checkpoints(_) => "checkpoints",
            RollbackFailure::Declined { .. } => "declined",
            RollbackFailure::Pruned => "pruned",
            RollbackFailure::Request(_) => "request",
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::error::Error as _;

    use super::*;

    /// The cause is the error's `source()`, and its text is not repeated in the Display.
    fn cause_once(error: &dyn std::error::Error, cause: &str) {
        let display = error.to_string();
        assert!(!display.contains(cause), "{display:?} repeats its cause {cause:?}");
        assert_eq!(error.source().unwrap().to_string(), cause);
    }

    #[test]
    fn a_failed_call_keeps_its_cause_once() {
        let source = mcpl_core::Error::from_rpc(mcpl_core::jsonrpc::ErrorObject::internal(
            "the disk is full",
        ));
        let cause = source.to_string();
        let error = HostError::Call { server: "notes".into(), source };
        cause_once(&error, &cause);
        assert!(error.to_string().contains("notes"), "{error}");
    }

    #[test]
    fn a_failed_connect_keeps_its_cause_once() {
        let source = mcpl_core::Error::from_rpc(mcpl_core::jsonrpc::ErrorObject::internal("no"));
        let cause = ConnectError::Handshake(source);
        let text = cause.to_string();
        let inner = cause.source().unwrap().to_string();
        let error = HostError::Connect { server: "notes".into(), source: cause };
        cause_once(&error, &text);
        assert!(!error.to_string().contains(&inner), "{error}");
        assert!(!text.contains(&inner), "{text}");
    }

    #[test]
    fn a_failed_rollback_keeps_its_cause_once() {
        let failure = RollbackFailure::Declined { reason: Some("locked".into()) };
        let cause = failure.to_string();
        assert!(cause.contains("locked"), "{cause}");
        let error = HostError::Rollback {
            server: "notes".into(),
            feature_set: "notes.store".into(),
            checkpoint: "c1".into(),
            source: failure,
        };
        cause_once(&error, &cause);
        assert_eq!(error.kind(), "rollback");
        let request = RollbackFailure::Request(McplError::Protocol(mcpl_core::Error::from_rpc(
            mcpl_core::jsonrpc::ErrorObject::internal("the disk is full"),
        )));
        let inner = request.source().unwrap().to_string();
        assert!(!request.to_string().contains(&inner), "{request}");
    }
}
