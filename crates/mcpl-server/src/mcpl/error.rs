//! Why a server-to-host MCPL message was not sent, or a manifest not installed.

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::digest::DigestError;
use mcpl_core::mcpl::manifest::InvalidFeatureSet;
use mcpl_core::mcpl::policy::DisabledReason;

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
    /// The message's feature set is declared but disabled by the host's policy. The text says
    /// why in words, naming the capabilities the host did not grant.
    #[error("feature set {feature_set:?} is disabled: {}", why_disabled(reason))]
    FeatureSetDisabled {
        /// The feature set.
        feature_set: String,
        /// Why it is disabled; [`DisabledReason::MissingCapabilities`] lists the capabilities
        /// its `uses` needs that the host did not grant.
        reason: DisabledReason,
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
    /// The OS random source failed, so no unguessable id could be made for the message (set
    /// one yourself, e.g. [`PushEvent::event_id`](super::PushEvent::event_id)).
    #[error("no unguessable id: the OS random source failed")]
    NoRandomness,
}

/// The words of a [`SendError::FeatureSetDisabled`].
fn why_disabled(reason: &DisabledReason) -> String {
    match reason {
        DisabledReason::MissingCapabilities(missing) => match missing.as_slice() {
            [] => "the host did not grant every capability its uses need".into(),
            [one] => format!("the host did not grant {one} (its uses need it)"),
            [rest @ .., last] => {
                format!(
                    "the host did not grant {} and {last} (its uses need them)",
                    rest.join(", ")
                )
            }
        },
        DisabledReason::NotSelected => {
            "the host's policy does not enable it (not in its enabled list)".into()
        }
        DisabledReason::Disabled => "the host's policy disables it".into(),
        DisabledReason::InvalidUses => {
            "its uses are invalid (this server's manifest is wrong)".into()
        }
    }
}

/// The stable kind of a [`SendError`].
///
/// # Examples
///
/// Deciding what to do about a send that failed:
///
/// ```
/// use mcpl_core::jsonrpc::ErrorObject;
/// use mcpl_server::mcpl::{SendError, SendErrorKind};
///
/// fn advice(e: &SendError) -> &'static str {
///     match e.kind() {
///         SendErrorKind::NotReady => "wait for the host's policy",
///         SendErrorKind::NotGranted | SendErrorKind::FeatureSetDisabled => "the host said no",
///         SendErrorKind::Host | SendErrorKind::Transport => "try again later",
///         _ => "fix the manifest",
///     }
/// }
///
/// assert_eq!(advice(&SendError::NotReady), "wait for the host's policy");
/// assert_eq!(advice(&SendError::Host(ErrorObject::internal("busy"))), "try again later");
/// let undeclared = SendError::FeatureSetUndeclared { feature_set: "alerts".into() };
/// assert_eq!(advice(&undeclared), "fix the manifest");
/// ```
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
    /// [`SendError::NoRandomness`].
    NoRandomness,
}

impl SendErrorKind {
    /// A short stable name: `not_ready`, `not_granted`, `feature_set_undeclared`,
    /// `feature_set_disabled`, `declaration_mismatch`, `host_error`, `transport`.
    ///
    /// # Examples
    ///
    /// The name suits logs, metrics and tool results that report a refusal:
    ///
    /// ```
    /// use mcpl_core::mcpl::policy::DisabledReason;
    /// use mcpl_server::mcpl::SendError;
    ///
    /// let refused = SendError::FeatureSetDisabled {
    ///     feature_set: "chat.assist".into(),
    ///     reason: DisabledReason::MissingCapabilities(vec!["modelInfo".into()]),
    /// };
    /// assert_eq!(refused.kind().as_str(), "feature_set_disabled");
    /// // The text names what the host did not grant.
    /// assert_eq!(
    ///     refused.to_string(),
    ///     "feature set \"chat.assist\" is disabled: the host did not grant modelInfo (its uses need it)"
    /// );
    /// let lost = SendError::Transport(mcpl_core::Error::ConnectionClosed);
    /// assert_eq!(lost.kind().as_str(), "transport");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            SendErrorKind::NotReady => "not_ready",
            SendErrorKind::NotGranted => "not_granted",
            SendErrorKind::FeatureSetUndeclared => "feature_set_undeclared",
            SendErrorKind::FeatureSetDisabled => "feature_set_disabled",
            SendErrorKind::DeclarationMismatch => "declaration_mismatch",
            SendErrorKind::Host => "host_error",
            SendErrorKind::Transport => "transport",
            SendErrorKind::NoRandomness => "no_randomness",
        }
    }
}

impl SendError {
    /// What kind of failure this is.
    ///
    /// # Examples
    ///
    /// A send before the host's first `featureSets/update` is refused as
    /// [`SendErrorKind::NotReady`]:
    ///
    /// ```
    /// use mcpl_core::mcpl::content::McplContent;
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::{Mcpl, PushEvent, SendErrorKind};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest)).build();
    /// # let (session, _host) = mcpl_test_kit::host::connect(&server).await?;
    /// // A host that speaks MCPL initialized, but has not sent its policy yet.
    /// let conn = session.mcpl().expect("the host speaks MCPL");
    /// let event = PushEvent::new("alerts", vec![McplContent::text("Disk almost full")]);
    /// let refused = conn.push_event(event).await.unwrap_err();
    /// assert_eq!(refused.kind(), SendErrorKind::NotReady);
    /// # Ok(()) }
    /// ```
    pub fn kind(&self) -> SendErrorKind {
        match self {
            SendError::NotReady => SendErrorKind::NotReady,
            SendError::NotGranted { .. } => SendErrorKind::NotGranted,
            SendError::FeatureSetUndeclared { .. } => SendErrorKind::FeatureSetUndeclared,
            SendError::FeatureSetDisabled { .. } => SendErrorKind::FeatureSetDisabled,
            SendError::DeclarationMismatch { .. } => SendErrorKind::DeclarationMismatch,
            SendError::Host(_) => SendErrorKind::Host,
            SendError::Transport(_) => SendErrorKind::Transport,
            SendError::NoRandomness => SendErrorKind::NoRandomness,
        }
    }

    /// Whether the gate refused the message locally: nothing was sent.
    ///
    /// # Examples
    ///
    /// A refusal is final until the host's policy changes; a host error or a failed exchange
    /// happened after the message left:
    ///
    /// ```
    /// use mcpl_core::jsonrpc::ErrorObject;
    /// use mcpl_server::mcpl::SendError;
    ///
    /// assert!(SendError::NotGranted { capability: "pushEvents".into() }.is_refusal());
    /// assert!(SendError::NotReady.is_refusal());
    /// assert!(!SendError::Host(ErrorObject::internal("busy")).is_refusal());
    /// assert!(!SendError::Transport(mcpl_core::Error::ConnectionClosed).is_refusal());
    /// ```
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
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
/// use mcpl_server::Server;
/// use mcpl_server::mcpl::{ManifestError, Mcpl};
///
/// // A server built without MCPL has no manifest to replace.
/// let plain = Server::builder("plain", "1").build();
/// let e = plain.set_mcpl_manifest(Manifest::new()).unwrap_err();
/// assert!(matches!(e, ManifestError::NotEnabled));
///
/// // A feature set name with a space has no revision; the installed manifest stays.
/// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(Manifest::new())).build();
/// let before = server.mcpl_manifest().unwrap().revision();
/// let bad =
///     Manifest::new().with_feature_set("team alerts", FeatureSet::new("Alerts", ["pushEvents"]));
/// let e = server.set_mcpl_manifest(bad).unwrap_err();
/// assert!(matches!(e, ManifestError::Digest(_)));
/// assert_eq!(server.mcpl_manifest().unwrap().revision(), before);
///
/// // So is a feature set no host could enable.
/// let unusable = Manifest::new().with_feature_set("later", FeatureSet::new("Later", ["stateUpdate"]));
/// let e = server.set_mcpl_manifest(unusable).unwrap_err();
/// assert!(matches!(e, ManifestError::InvalidUses { .. }));
/// assert_eq!(server.mcpl_manifest().unwrap().revision(), before);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The server was built without MCPL ([`ServerBuilder::mcpl`](crate::ServerBuilder::mcpl)).
    #[error("this server does not serve MCPL")]
    NotEnabled,
    /// The manifest has no revision: an identifier breaks the charset rule.
    #[error("the manifest has no revision")]
    Digest(#[from] DigestError),
    /// A feature-set declaration does not parse (a member of the wrong type, such as
    /// `"rollback": "yes"`): the server could not serve it.
    #[error("the manifest declares a feature set the server cannot read")]
    FeatureSet(#[source] InvalidFeatureSet),
    /// A feature set's `uses` is absent, empty or names something outside the capability
    /// vocabulary: every host would disable it (`invalid_uses`).
    #[error("feature set {feature_set:?} has no valid uses")]
    InvalidUses {
        /// The feature set.
        feature_set: String,
    },
    /// `featureSets` is not an object keyed by feature-set name.
    #[error("featureSets is not an object keyed by name")]
    FeatureSetsNotAnObject,
}

impl ManifestError {
    /// A short stable name: `not_enabled`, `invalid_feature_set`, `invalid_uses`,
    /// `feature_sets_not_an_object`, or the digest error's code.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// let plain = Server::builder("plain", "1").build();
    /// let e = plain.set_mcpl_manifest(Manifest::new()).unwrap_err();
    /// assert_eq!(e.kind(), "not_enabled");
    ///
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(Manifest::new())).build();
    /// let e = server
    ///     .update_mcpl_manifest(|m| m.with_feature_set("", FeatureSet::new("Nameless", ["pushEvents"])))
    ///     .unwrap_err();
    /// assert_eq!(e.kind(), "identifier_charset");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ManifestError::NotEnabled => "not_enabled",
            ManifestError::Digest(e) => e.code(),
            ManifestError::FeatureSet(_) => "invalid_feature_set",
            ManifestError::InvalidUses { .. } => "invalid_uses",
            ManifestError::FeatureSetsNotAnObject => "feature_sets_not_an_object",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disabled_feature_set_says_why_in_words() {
        let disabled =
            |reason| SendError::FeatureSetDisabled { feature_set: "s".into(), reason }.to_string();
        let missing = ["inferenceRequest", "inferenceRequest.streaming", "modelInfo"];
        assert_eq!(
            disabled(DisabledReason::MissingCapabilities(missing.map(String::from).to_vec())),
            "feature set \"s\" is disabled: the host did not grant inferenceRequest, \
             inferenceRequest.streaming and modelInfo (its uses need them)"
        );
        assert!(disabled(DisabledReason::NotSelected).contains("does not enable it"));
        assert!(disabled(DisabledReason::Disabled).contains("disables it"));
        assert!(disabled(DisabledReason::InvalidUses).contains("uses are invalid"));
    }
}
