//! [`McplError`]: why an MCPL call from the host was not made or failed.

use mcpl_core::Error;

/// Why an MCPL call from the host was refused locally or failed on the wire.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
/// use mcpl_core::mcpl::hooks::LifecycleParams;
/// use serde_json::json;
/// # use mcpl_test_kit::mcpl::alerts_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_server, _session, transport) = alerts_server().await?;
/// let host = McplHost::new(HostPolicy::default());
/// let started: LifecycleParams =
///     serde_json::from_value(json!({"inferenceId": "inf-1", "phase": "started"}))?;
///
/// // Before connecting, MCPL is not in force.
/// assert!(matches!(host.lifecycle(started.clone()).await, Err(McplError::NotActive)));
///
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
/// client.connect(transport).await?;
/// // This server's manifest does not advertise `inferenceLifecycle`: not granted, not sent.
/// match host.lifecycle(started).await {
///     Err(McplError::NotGranted { capability }) => assert_eq!(capability, "inferenceLifecycle"),
///     other => panic!("expected NotGranted, got {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McplError {
    /// MCPL is not in force on this connection: not connected, the server does not speak
    /// MCPL, the initial policy exchange has not completed, or the server refused the policy.
    #[error("MCPL is not in force on this connection")]
    NotActive,
    /// The call needs a capability the current grant does not hold; nothing was sent.
    #[error("capability {capability} is not granted")]
    NotGranted {
        /// The capability path.
        capability: String,
    },
    /// The channel is not registered on this connection.
    #[error("channel {channel_id:?} is not registered")]
    UnknownChannel {
        /// The channel id.
        channel_id: String,
    },
    /// The channel is registered but does not allow this (its direction, or the stream
    /// order of `channels/outgoing/*`).
    #[error("channel {channel_id:?}: {reason}")]
    ChannelNotPermitted {
        /// The channel id.
        channel_id: String,
        /// Why.
        reason: String,
    },
    /// An `inference/lifecycle` phase that breaks "exactly one terminal per started".
    #[error("inference {inference_id:?}: {defect}")]
    Lifecycle {
        /// The inference.
        inference_id: String,
        /// What is wrong.
        defect: &'static str,
    },
    /// The feature set cannot be rolled back (undeclared, disabled, or without `rollback`).
    #[error("feature set {feature_set:?} does not support rollback")]
    RollbackUnsupported {
        /// The feature set.
        feature_set: String,
    },
    /// A `featureSets/update` request got no usable answer: reductions stay applied, the
    /// widening part never activates.
    #[error("featureSets/update got no usable answer: {reason}")]
    PolicyUnanswered {
        /// What happened.
        reason: String,
    },
    /// The per-connection `mcpl/manifest` fetch budget is spent; the fetch was dropped.
    #[error("mcpl/manifest fetch dropped by the rate limit")]
    RateLimited,
    /// The fetched manifest could not be used; the previous one stands.
    #[error("unusable manifest: {reason}")]
    InvalidManifest {
        /// Why.
        reason: String,
    },
    /// A checkpoint's state could not be materialized (kept as an opaque checkpoint).
    #[error(transparent)]
    State(#[from] mcpl_core::mcpl::state::StateError),
    /// The exchange itself failed (connection, timeout, the server's error).
    #[error(transparent)]
    Protocol(#[from] Error),
}

impl McplError {
    /// A stable name for the kind of error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let host = McplHost::new(HostPolicy::default());
    /// let err = host.renegotiate().await.unwrap_err();
    /// // A stable name, for logs and metrics.
    /// assert_eq!(err.kind(), "not_active");
    /// # }
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            McplError::NotActive => "not_active",
            McplError::NotGranted { .. } => "not_granted",
            McplError::UnknownChannel { .. } => "unknown_channel",
            McplError::ChannelNotPermitted { .. } => "channel_not_permitted",
            McplError::Lifecycle { .. } => "lifecycle",
            McplError::RollbackUnsupported { .. } => "rollback_unsupported",
            McplError::PolicyUnanswered { .. } => "policy_unanswered",
            McplError::RateLimited => "rate_limited",
            McplError::InvalidManifest { .. } => "invalid_manifest",
            McplError::State(_) => "state",
            McplError::Protocol(_) => "protocol",
        }
    }
}
