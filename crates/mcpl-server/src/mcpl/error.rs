//! Why a server-to-host MCPL message was not sent, or a manifest not installed.

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::digest::DigestError;

/// A server-to-host MCPL message the gate refused to send, or whose exchange failed.
///
/// The gate refuses locally (nothing reaches the host) in this order: the initial
/// `featureSets/update` has not been answered, a capability the message needs is not granted,
/// its feature set is not declared, not enabled, or does not list the capability in `uses`.
///
/// # Examples
///
/// ```
/// use mcpl_server::mcpl::{SendError, SendErrorKind};
///
/// let e = SendError::NotGranted { capability: "pushEvents".into() };
/// assert_eq!(e.kind(), SendErrorKind::NotGranted);
/// assert_eq!(e.kind().as_str(), "not_granted");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The host has not completed the initial `featureSets/update` request yet.
    #[error("MCPL is not ready: the host has not sent its initial featureSets/update")]
    NotReady,
    /// The host did not grant a capability the message needs.
    #[error("capability {capability:?} is not granted")]
    NotGranted {
        /// The capability path.
        capability: String,
    },
    /// The message's feature set is not declared in the manifest.
    #[error("feature set {feature_set:?} is not declared")]
    FeatureSetUndeclared {
        /// The feature set.
        feature_set: String,
    },
    /// The message's feature set is declared but disabled by the host's policy.
    #[error("feature set {feature_set:?} is disabled ({reason})")]
    FeatureSetDisabled {
        /// The feature set.
        feature_set: String,
        /// Why it is disabled (`missing_capabilities`, `not_selected`, `invalid_uses`,
        /// `disabled`).
        reason: &'static str,
    },
    /// The feature set's `uses` does not list the capability the message exercises.
    #[error("feature set {feature_set:?} does not declare {capability:?} in its uses")]
    DeclarationMismatch {
        /// The feature set.
        feature_set: String,
        /// The capability path.
        capability: String,
    },
    /// The host answered with a JSON-RPC error.
    #[error("the host answered with error {}: {}", .0.code.0, .0.message)]
    Host(ErrorObject),
    /// The exchange failed: the connection closed, the request timed out, or the host's result
    /// did not decode.
    #[error("the exchange with the host failed")]
    Transport(#[source] mcpl_core::Error),
}

/// The stable kind of a [`SendError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SendErrorKind {
    /// [`SendError::NotReady`].
    NotReady,
    /// [`SendError::NotGranted`].
    NotGranted,
    /// [`SendError::FeatureSetUndeclared`].
    FeatureSetUndeclared,
    /// [`SendError::FeatureSetDisabled`].
    FeatureSetDisabled,
    /// [`SendError::DeclarationMismatch`].
    DeclarationMismatch,
    /// [`SendError::Host`].
    Host,
    /// [`SendError::Transport`].
    Transport,
}

impl SendErrorKind {
    /// A short stable name: `not_ready`, `not_granted`, `feature_set_undeclared`,
    /// `feature_set_disabled`, `declaration_mismatch`, `host_error`, `transport`.
    pub fn as_str(self) -> &'static str {
        match self {
            SendErrorKind::NotReady => "not_ready",
            SendErrorKind::NotGranted => "not_granted",
            SendErrorKind::FeatureSetUndeclared => "feature_set_undeclared",
            SendErrorKind::FeatureSetDisabled => "feature_set_disabled",
            SendErrorKind::DeclarationMismatch => "declaration_mismatch",
            SendErrorKind::Host => "host_error",
            SendErrorKind::Transport => "transport",
        }
    }
}

impl SendError {
    /// What kind of failure this is.
    pub fn kind(&self) -> SendErrorKind {
        match self {
            SendError::NotReady => SendErrorKind::NotReady,
            SendError::NotGranted { .. } => SendErrorKind::NotGranted,
            SendError::FeatureSetUndeclared { .. } => SendErrorKind::FeatureSetUndeclared,
            SendError::FeatureSetDisabled { .. } => SendErrorKind::FeatureSetDisabled,
            SendError::DeclarationMismatch { .. } => SendErrorKind::DeclarationMismatch,
            SendError::Host(_) => SendErrorKind::Host,
            SendError::Transport(_) => SendErrorKind::Transport,
        }
    }

    /// Whether the gate refused the message locally: nothing was sent.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, SendError::Host(_) | SendError::Transport(_))
    }

    pub(crate) fn from_exchange(e: mcpl_core::Error) -> SendError {
        match e {
            mcpl_core::Error::Rpc(object) => SendError::Host(*object),
            other => SendError::Transport(other),
        }
    }
}

/// A manifest that could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The server was built without MCPL ([`ServerBuilder::mcpl`](crate::ServerBuilder::mcpl)).
    #[error("this server does not serve MCPL")]
    NotEnabled,
    /// The manifest has no revision: an identifier breaks the charset rule.
    #[error("the manifest has no revision")]
    Digest(#[from] DigestError),
}

impl ManifestError {
    /// A short stable name: `not_enabled`, or the digest error's code.
    pub fn kind(&self) -> &'static str {
        match self {
            ManifestError::NotEnabled => "not_enabled",
            ManifestError::Digest(e) => e.code(),
        }
    }
}
