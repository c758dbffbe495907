//! Why a server's feature sets are disabled, in words an operator can act on: which
//! capability is missing and what would supply it (a `HostBuilder` handler, the server's
//! `grant.allow` or `grant.deny`, or nothing the host can do).
//!
//! ```
//! use mcpl_core::mcpl::policy::DisabledReason;
//! use mcpl_host::unavailable::{DisabledFeatureSet, MissingCapability, Remedy};
//!
//! let disabled = DisabledFeatureSet {
//!     server: "chat".into(),
//!     feature_set: "chat.assist".into(),
//!     reason: DisabledReason::MissingCapabilities(vec!["modelInfo".into()]),
//!     missing: vec![MissingCapability {
//!         capability: "modelInfo".into(),
//!         remedies: vec![Remedy::Handler("model_info"), Remedy::Allow],
//!     }],
//! };
//! assert_eq!(
//!     disabled.to_string(),
//!     "feature set \"chat.assist\" of server \"chat\" is disabled: it needs modelInfo, which is \
//!      not granted (the host offers it only with HostBuilder::model_info; add \"modelInfo\" to \
//!      the server's grant.allow)"
//! );
//! ```

use std::collections::BTreeSet;
use std::fmt;

use mcpl_client::mcpl::McplHost;
use mcpl_core::mcpl::capability::{paths, pattern_matches};
use mcpl_core::mcpl::policy::DisabledReason;

use crate::config::ServerConfig;

/// What would supply a capability the grant lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Remedy {
    /// The host offers the capability only with this `HostBuilder` method (`model_info`,
    /// `on_inference`).
    Handler(&'static str),
    /// This host does not offer the capability at all.
    NotOffered,
    /// The server's configuration must allow it: `grant.allow`.
    Allow,
    /// The server's configuration denies it: a pattern in `grant.deny` matches it.
    Undeny,
    /// The server's manifest does not advertise the capability, so no grant can include it:
    /// the server is at fault.
    NotAdvertised,
}

impl Remedy {
    /// The remedy for `capability`, in words.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::unavailable::Remedy;
    ///
    /// assert_eq!(
    ///     Remedy::Undeny.describe("pushEvents"),
    ///     "remove the pattern matching \"pushEvents\" from the server's grant.deny"
    /// );
    /// ```
    pub fn describe(&self, capability: &str) -> String {
        match self {
            Remedy::Handler(method) => {
                format!("the host offers it only with HostBuilder::{method}")
            }
            Remedy::NotOffered => "this host does not offer it".to_owned(),
            Remedy::Allow => format!("add \"{capability}\" to the server's grant.allow"),
            Remedy::Undeny => {
                format!("remove the pattern matching \"{capability}\" from the server's grant.deny")
            }
            Remedy::NotAdvertised => "the server's manifest does not advertise it".to_owned(),
        }
    }
}

/// A capability a feature set's `uses` needs that the grant lacks, and what would supply it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingCapability {
    /// The capability path.
    pub capability: String,
    /// What would supply it (all of them are needed).
    pub remedies: Vec<Remedy>,
}

impl fmt::Display for MissingCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, which is not granted", self.capability)?;
        let remedies: Vec<String> =
            self.remedies.iter().map(|r| r.describe(&self.capability)).collect();
        if !remedies.is_empty() {
            write!(f, " ({})", remedies.join("; "))?;
        }
        Ok(())
    }
}

/// A feature set a server declares that its connection has disabled, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisabledFeatureSet {
    /// The server.
    pub server: String,
    /// The feature set.
    pub feature_set: String,
    /// Why (the spec's derivation).
    pub reason: DisabledReason,
    /// For [`DisabledReason::MissingCapabilities`]: each missing capability and its remedies.
    pub missing: Vec<MissingCapability>,
}

impl fmt::Display for DisabledFeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (set, server) = (&self.feature_set, &self.server);
        write!(f, "feature set {set:?} of server {server:?} is disabled: ")?;
        match &self.reason {
            DisabledReason::MissingCapabilities(_) => {
                let needs: Vec<String> = self.missing.iter().map(ToString::to_string).collect();
                write!(f, "it needs {}", needs.join("; and "))
            }
            DisabledReason::NotSelected => {
                write!(f, "the server's featureSets.enabled does not name it (add it there)")
            }
            DisabledReason::Disabled => write!(f, "the server's featureSets.disabled names it"),
            DisabledReason::InvalidUses => {
                write!(f, "its uses are invalid (the server's manifest is at fault)")
            }
        }
    }
}

/// What would supply each capability of `missing` on this connection.
pub(crate) fn missing_capabilities(
    config: &ServerConfig,
    mcpl: &McplHost,
    missing: &[String],
) -> Vec<MissingCapability> {
    let supported = mcpl.supported();
    let policy = mcpl.policy();
    let understood = mcpl.understood().unwrap_or_default();
    missing
        .iter()
        .map(|capability| MissingCapability {
            capability: capability.clone(),
            remedies: remedies(config, &supported, &policy, &understood, capability),
        })
        .collect()
}

fn remedies(
    config: &ServerConfig,
    supported: &BTreeSet<&'static str>,
    policy: &mcpl_client::mcpl::HostPolicy,
    understood: &BTreeSet<String>,
    capability: &str,
) -> Vec<Remedy> {
    if !understood.contains(capability) {
        return vec![Remedy::NotAdvertised];
    }
    let mut remedies = Vec::new();
    if !supported.contains(capability) {
        remedies.push(match capability {
            paths::MODEL_INFO => Remedy::Handler("model_info"),
            paths::INFERENCE_REQUEST | paths::INFERENCE_REQUEST_STREAMING => {
                Remedy::Handler("on_inference")
            }
            _ => Remedy::NotOffered,
        });
    }
    if !policy.permits(capability) {
        let denied = config.grant_deny.iter().any(|pattern| pattern_matches(pattern, capability));
        remedies.push(if denied { Remedy::Undeny } else { Remedy::Allow });
    }
    remedies
}

/// The feature sets `mcpl`'s connection has disabled, explained (none without MCPL).
pub(crate) fn disabled_feature_sets(
    config: &ServerConfig,
    mcpl: &McplHost,
) -> Vec<DisabledFeatureSet> {
    let Some(disabled) = mcpl.disabled_feature_sets() else { return Vec::new() };
    disabled
        .into_iter()
        .map(|(feature_set, reason)| {
            let missing = match &reason {
                DisabledReason::MissingCapabilities(m) => missing_capabilities(config, mcpl, m),
                _ => Vec::new(),
            };
            DisabledFeatureSet { server: config.id.clone(), feature_set, reason, missing }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_in_words() {
        let set = |reason| DisabledFeatureSet {
            server: "s".into(),
            feature_set: "f".into(),
            reason,
            missing: Vec::new(),
        };
        assert!(set(DisabledReason::NotSelected).to_string().contains("featureSets.enabled"));
        assert!(set(DisabledReason::Disabled).to_string().contains("featureSets.disabled"));
        assert!(set(DisabledReason::InvalidUses).to_string().contains("manifest is at fault"));
        let missing = MissingCapability {
            capability: "inferenceRequest".into(),
            remedies: vec![Remedy::Handler("on_inference")],
        };
        let pushes =
            MissingCapability { capability: "pushEvents".into(), remedies: vec![Remedy::Undeny] };
        let mut both = set(DisabledReason::MissingCapabilities(vec![
            "inferenceRequest".into(),
            "pushEvents".into(),
        ]));
        both.missing = vec![missing, pushes];
        assert_eq!(
            both.to_string(),
            "feature set \"f\" of server \"s\" is disabled: it needs inferenceRequest, which is \
             not granted (the host offers it only with HostBuilder::on_inference); and \
             pushEvents, which is not granted (remove the pattern matching \"pushEvents\" from \
             the server's grant.deny)"
        );
    }
}
