//! [`HostPolicy`]: what the host allows a server, before intersecting with what the server
//! advertises and what the host supports.

use std::collections::BTreeSet;

use mcpl_core::mcpl::capability::{CapabilityGrant, paths, pattern_matches};
use mcpl_core::mcpl::glob::glob_match;
use mcpl_core::mcpl::policy::FeatureSetsUpdateParams;

/// The host's policy for one connection: which capability paths it may grant (patterns with
/// the one-segment `*` of the grant), which it never grants, which feature sets it enables or
/// disables, and which channel ids it accepts.
///
/// The grant sent is `advertised-as-understood ∩ supported-by-this-host ∩ policy`.
/// [`HostPolicy::default`] allows every path except
/// `contextHooks.beforeInference.inject.system`, which must be allowed explicitly.
///
/// ```
/// use mcpl_client::mcpl::HostPolicy;
/// use mcpl_core::mcpl::capability::paths;
///
/// let policy = HostPolicy::default().deny("channels.*").disable("memory.extraction");
/// assert!(policy.permits(paths::PUSH_EVENTS));
/// assert!(!policy.permits(paths::CHANNELS_PUBLISH));
/// assert!(!policy.permits(paths::INJECT_SYSTEM));
/// assert!(HostPolicy::default().allow(paths::INJECT_SYSTEM).permits(paths::INJECT_SYSTEM));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    allow: Vec<String>,
    deny: Vec<String>,
    enabled: Option<Vec<String>>,
    disabled: Vec<String>,
    channels: Option<Vec<String>>,
}

impl Default for HostPolicy {
    fn default() -> Self {
        let allow = paths::VOCABULARY
            .iter()
            .filter(|p| **p != paths::INJECT_SYSTEM)
            .map(|p| (*p).to_owned())
            .collect();
        HostPolicy { allow, deny: Vec::new(), enabled: None, disabled: Vec::new(), channels: None }
    }
}

impl HostPolicy {
    /// A policy that grants nothing (MCPL in force, every capability denied).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// // A host that speaks MCPL but grants this server nothing (it stays plain MCP in practice).
    /// let policy = HostPolicy::deny_all();
    /// assert!(paths::VOCABULARY.iter().all(|path| !policy.permits(path)));
    /// let host = McplHost::new(policy);
    /// # drop(host);
    /// ```
    pub fn deny_all() -> HostPolicy {
        HostPolicy { allow: Vec::new(), ..HostPolicy::default() }
    }

    /// Also allows the paths `pattern` matches (one-segment `*`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// // Only push events and the channel capabilities (one-segment `*`).
    /// let policy = HostPolicy::deny_all().allow(paths::PUSH_EVENTS).allow("channels.*");
    /// assert!(policy.permits(paths::PUSH_EVENTS));
    /// assert!(policy.permits(paths::CHANNELS_PUBLISH));
    /// assert!(!policy.permits(paths::TOOLS));
    /// ```
    #[must_use]
    pub fn allow(mut self, pattern: impl Into<String>) -> HostPolicy {
        self.allow.push(pattern.into());
        self
    }

    /// Never grants the paths `pattern` matches (wins over [`allow`](Self::allow)).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// // Deny wins over allow.
    /// let policy = HostPolicy::default().allow("channels.*").deny(paths::CHANNELS_PUBLISH);
    /// assert!(policy.permits(paths::CHANNELS_INCOMING));
    /// assert!(!policy.permits(paths::CHANNELS_PUBLISH));
    /// ```
    #[must_use]
    pub fn deny(mut self, pattern: impl Into<String>) -> HostPolicy {
        self.deny.push(pattern.into());
        self
    }

    /// Enables only the named feature sets (an allowlist; call once per name). Without any
    /// call, every set whose `uses` are granted is enabled.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    ///
    /// // Only these two feature sets, whatever else the server declares.
    /// let policy = HostPolicy::default().enable("mail").enable("calendar");
    /// assert_eq!(policy.enabled(), Some(&["mail".to_owned(), "calendar".to_owned()][..]));
    /// ```
    #[must_use]
    pub fn enable(mut self, feature_set: impl Into<String>) -> HostPolicy {
        self.enabled.get_or_insert_with(Vec::new).push(feature_set.into());
        self
    }

    /// Disables a feature set (always subtracts).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?; // feature sets `alerts`, `editor`, ...
    /// let policy = HostPolicy::default().disable("alerts");
    /// assert_eq!(policy.disabled(), ["alerts"]);
    /// let host = McplHost::builder(policy).on_push_event(|_event| async { PushOutcome::accepted(None) }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// assert_eq!(host.enabled_feature_sets(), Some(vec!["editor".to_owned()]));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn disable(mut self, feature_set: impl Into<String>) -> HostPolicy {
        self.disabled.push(feature_set.into());
        self
    }

    /// Accepts only channels whose id matches one of these globs (`*` matches any run of
    /// characters, `?` one: `discord:acme/*`; see [`glob_match`]). Without any call, every
    /// channel id is acceptable.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    ///
    /// let policy = HostPolicy::default().allow_channel("discord:acme/*").allow_channel("email:support");
    /// assert!(policy.permits_channel("discord:acme/general"));
    /// assert!(policy.permits_channel("email:support"));
    /// assert!(!policy.permits_channel("discord:other/general"));
    /// ```
    #[must_use]
    pub fn allow_channel(mut self, glob: impl Into<String>) -> HostPolicy {
        self.channels.get_or_insert_with(Vec::new).push(glob.into());
        self
    }

    /// Whether this policy lets the host grant `path`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let policy = HostPolicy::default();
    /// assert!(policy.permits(paths::TOOLS));
    /// assert!(policy.permits(paths::INJECT_AFTER_USER));
    /// // The system prompt is off limits unless allowed explicitly.
    /// assert!(!policy.permits(paths::INJECT_SYSTEM));
    /// ```
    pub fn permits(&self, path: &str) -> bool {
        self.allow.iter().any(|p| pattern_matches(p, path))
            && !self.deny.iter().any(|p| pattern_matches(p, path))
    }

    /// Whether this policy accepts a channel with this id.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    ///
    /// // Without any `allow_channel`, every id is acceptable.
    /// assert!(HostPolicy::default().permits_channel("slack:team/random"));
    /// let strict = HostPolicy::default().allow_channel("slack:team/*");
    /// assert!(strict.permits_channel("slack:team/random"));
    /// assert!(!strict.permits_channel("slack:elsewhere/random"));
    /// ```
    pub fn permits_channel(&self, channel_id: &str) -> bool {
        self.channels.as_ref().is_none_or(|globs| globs.iter().any(|g| glob_match(g, channel_id)))
    }

    /// The feature-set allowlist, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    ///
    /// assert_eq!(HostPolicy::default().enabled(), None); // every set whose uses are granted
    /// assert_eq!(HostPolicy::default().enable("mail").enabled(), Some(&["mail".to_owned()][..]));
    /// ```
    pub fn enabled(&self) -> Option<&[String]> {
        self.enabled.as_deref()
    }

    /// The disabled feature sets.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::HostPolicy;
    ///
    /// assert!(HostPolicy::default().disabled().is_empty());
    /// let policy = HostPolicy::default().disable("memory").disable("telemetry");
    /// assert_eq!(policy.disabled(), ["memory", "telemetry"]);
    /// ```
    pub fn disabled(&self) -> &[String] {
        &self.disabled
    }

    /// The grant for a server that advertises (as understood) `understood`, on a host that
    /// supports `supported`: every path in both that this policy permits.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeSet;
    ///
    /// use mcpl_client::mcpl::HostPolicy;
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// // What the server advertises, and what this host supports.
    /// let understood: BTreeSet<String> =
    ///     [paths::PUSH_EVENTS, paths::TOOLS, paths::INJECT_SYSTEM].map(String::from).into();
    /// let supported: BTreeSet<&'static str> = [paths::TOOLS, paths::INJECT_SYSTEM].into();
    ///
    /// let grant = HostPolicy::default().grant_for(&understood, &supported);
    /// // `pushEvents` is not supported here; `inject.system` is not permitted by the policy.
    /// assert_eq!(grant.entries(), [paths::TOOLS]);
    /// ```
    pub fn grant_for(
        &self,
        understood: &BTreeSet<String>,
        supported: &BTreeSet<&'static str>,
    ) -> CapabilityGrant {
        CapabilityGrant::new(
            understood
                .iter()
                .filter(|p| supported.contains(p.as_str()) && self.permits(p))
                .cloned(),
        )
    }

    /// The `featureSets/update` params carrying `grant` (concrete paths), the paths of
    /// `understood` it leaves out (diagnostic only) and this policy's feature-set selection.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::BTreeSet;
    ///
    /// use mcpl_client::mcpl::HostPolicy;
    /// use mcpl_core::mcpl::capability::paths;
    ///
    /// let understood: BTreeSet<String> = [paths::PUSH_EVENTS, paths::TOOLS].map(String::from).into();
    /// let supported: BTreeSet<&'static str> = [paths::PUSH_EVENTS, paths::TOOLS].into();
    /// let policy = HostPolicy::default().deny(paths::PUSH_EVENTS).disable("telemetry");
    /// let grant = policy.grant_for(&understood, &supported);
    ///
    /// let params = policy.update_params(&grant, &understood);
    /// assert_eq!(params.effective_capabilities, Some(vec![paths::TOOLS.to_owned()]));
    /// assert_eq!(params.denied_capabilities, Some(vec![paths::PUSH_EVENTS.to_owned()]));
    /// assert_eq!(params.disabled, Some(vec!["telemetry".to_owned()]));
    /// ```
    pub fn update_params(
        &self,
        grant: &CapabilityGrant,
        understood: &BTreeSet<String>,
    ) -> FeatureSetsUpdateParams {
        let denied: Vec<String> =
            understood.iter().filter(|p| !grant.is_granted(p)).cloned().collect();
        {
            let mut params = FeatureSetsUpdateParams::default()
                .with_effective_capabilities(grant.entries().to_vec());
            params.denied_capabilities = (!denied.is_empty()).then_some(denied);
            params.enabled = self.enabled.clone();
            params.disabled = (!self.disabled.is_empty()).then(|| self.disabled.clone());
            params
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_is_the_intersection() {
        let understood: BTreeSet<String> =
            [paths::PUSH_EVENTS, paths::INJECT_SYSTEM, paths::MODEL_INFO, paths::CHANNELS_TYPING]
                .map(str::to_owned)
                .into();
        let supported: BTreeSet<&'static str> =
            [paths::PUSH_EVENTS, paths::INJECT_SYSTEM, paths::CHANNELS_TYPING].into();
        let grant = HostPolicy::default().deny("channels.*").grant_for(&understood, &supported);
        assert_eq!(grant.entries(), ["pushEvents"]);
        let params = HostPolicy::default().update_params(&grant, &understood);
        assert_eq!(params.effective_capabilities.as_deref(), Some(&["pushEvents".to_owned()][..]));
        assert_eq!(params.denied_capabilities.map(|d| d.len()), Some(3));
        let all = HostPolicy::default().allow(paths::INJECT_SYSTEM);
        assert!(all.grant_for(&understood, &supported).is_granted(paths::INJECT_SYSTEM));
        assert!(HostPolicy::deny_all().grant_for(&understood, &supported).is_empty());
    }

    #[test]
    fn feature_set_selection_and_channels_travel_with_the_policy() {
        let policy = HostPolicy::default().enable("mail").enable("memory.*").disable("memory.x");
        let params = policy.update_params(&CapabilityGrant::none(), &BTreeSet::new());
        assert_eq!(params.enabled, Some(vec!["mail".to_owned(), "memory.*".to_owned()]));
        assert_eq!(params.disabled, Some(vec!["memory.x".to_owned()]));
        assert_eq!(params.effective_capabilities, Some(Vec::new()), "an empty grant is explicit");
        assert_eq!(params.denied_capabilities, None);
        let params =
            HostPolicy::default().update_params(&CapabilityGrant::none(), &BTreeSet::new());
        assert_eq!((params.enabled, params.disabled), (None, None));
        assert!(HostPolicy::default().permits_channel("anything"));
        let narrowed = HostPolicy::default().allow_channel("discord:acme/*");
        assert!(narrowed.permits_channel("discord:acme/general"));
        assert!(!narrowed.permits_channel("slack:x"));
    }
}
