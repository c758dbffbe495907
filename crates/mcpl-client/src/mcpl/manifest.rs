//! Manifest changes: fetching `mcpl/manifest` within a per-connection budget, diffing against
//! the manifest in force (the host's diff is authoritative, never the revision string), and
//! applying the change: removals revoke at once, additions never auto-grant. One
//! [`ChangeReceipt`] per change.

use std::collections::BTreeSet;
use std::time::Instant;

use mcpl_core::Peer;
use mcpl_core::engine::RequestOptions;
use mcpl_core::mcpl::changes::{
    ChangeDomain, ChangeImpact, Disposition, ManifestParams, changed_domains,
};
use mcpl_core::mcpl::manifest::Manifest;
use mcpl_core::mcpl::methods::GetManifest;
use mcpl_core::mcpl::policy::PolicyReceipt;
use serde_json::{Map, Value};

use super::session::{PendingPolicy, intersect_derived};
use super::{Diagnostic, McplError, McplHost, McplStatus};

/// One line of a [`ChangeReceipt`].
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
/// use mcpl_core::mcpl::changes::{ChangeImpact, Disposition};
/// use mcpl_core::mcpl::manifest::Manifest;
/// # use mcpl_test_kit::mcpl::alerts_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (server, _session, transport) = alerts_server().await?;
/// let host = McplHost::builder(HostPolicy::default())
///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
///     .refresh_on_change(false)
///     .build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
/// client.connect(transport).await?;
///
/// // The server stops pushing events.
/// let mut map = server.mcpl_manifest().expect("an MCPL server").into_map();
/// map.remove("pushEvents");
/// server.set_mcpl_manifest(Manifest::from_map(map))?;
/// let receipt = host.refresh_manifest().await?.expect("a change");
/// for entry in &receipt.entries {
///     println!("{:?} {:?} {}", entry.impact, entry.disposition, entry.subject);
/// }
/// let revoked = receipt.entries.iter().find(|e| e.subject == "pushEvents").expect("an entry");
/// assert_eq!(revoked.impact, ChangeImpact::CapabilityRevoked);
/// assert_eq!(revoked.disposition, Disposition::Applied);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChangeEntry {
    /// What changed for the host.
    pub impact: ChangeImpact,
    /// What it asks of the host.
    pub disposition: Disposition,
    /// The capability path or feature-set name concerned.
    pub subject: String,
}

/// The host's record of one applied manifest change (host-derived: nothing in it is the
/// server's prose).
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
/// use mcpl_core::mcpl::capability::paths;
/// use mcpl_core::mcpl::changes::ChangeDomain;
/// use mcpl_core::mcpl::manifest::Manifest;
/// use mcpl_core::mcpl::policy::PolicyReceipt;
/// # use mcpl_test_kit::mcpl::alerts_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (server, _session, transport) = alerts_server().await?;
/// let host = McplHost::builder(HostPolicy::default())
///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
///     .refresh_on_change(false)
///     .build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
/// client.connect(transport).await?;
///
/// let mut map = server.mcpl_manifest().expect("an MCPL server").into_map();
/// map.remove("pushEvents");
/// let revision = server.set_mcpl_manifest(Manifest::from_map(map))?;
/// let receipt = host.refresh_manifest().await?.expect("a change");
/// assert_eq!(receipt.revision, Some(revision.to_string()));
/// assert!(receipt.domains.contains(&ChangeDomain::Capabilities));
/// // The revocation applied at once, and the reduced grant went to the server.
/// assert!(matches!(receipt.policy_receipt, Some(PolicyReceipt::Accepted(_))));
/// assert!(!host.grant().is_some_and(|g| g.is_granted(paths::PUSH_EVENTS)));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChangeReceipt {
    /// The new manifest's claimed revision (untrusted; for correlation only).
    pub revision: Option<String>,
    /// The domains whose canonical form changed.
    pub domains: Vec<ChangeDomain>,
    /// The impacts, one entry per capability or feature set concerned.
    pub entries: Vec<ChangeEntry>,
    /// The server's receipt for the `featureSets/update` the change required, if any.
    pub policy_receipt: Option<PolicyReceipt>,
}

/// The domains that differ, compared as JSON values (set order counts: conservative).
fn structural_domains(old: &Manifest, new: &Manifest) -> Vec<ChangeDomain> {
    /// Capabilities, feature sets without ontologies, ontologies by set.
    type Domains = (Map<String, Value>, Option<Value>, Vec<(String, Value)>);
    fn split(m: &Manifest) -> Domains {
        let caps: Map<String, Value> = m
            .as_map()
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "version" | "revision" | "featureSets"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut sets = m.as_map().get("featureSets").cloned();
        let mut ontologies = Vec::new();
        if let Some(Value::Object(map)) = sets.as_mut() {
            for (name, set) in map.iter_mut() {
                if let Some(o) = set.as_object_mut().and_then(|o| o.remove("tagOntology")) {
                    ontologies.push((name.clone(), o));
                }
            }
        }
        (caps, sets, ontologies)
    }
    let (a, b) = (split(old), split(new));
    let mut out = Vec::new();
    if a.0 != b.0 {
        out.push(ChangeDomain::Capabilities);
    }
    if a.1 != b.1 {
        out.push(ChangeDomain::FeatureSets);
    }
    if a.2 != b.2 {
        out.push(ChangeDomain::TagOntology);
    }
    out
}

fn entry(
    impact: ChangeImpact,
    disposition: Disposition,
    subject: impl Into<String>,
) -> ChangeEntry {
    ChangeEntry { impact, disposition, subject: subject.into() }
}

/// Why a fetch cannot go now.
enum Fetch {
    /// MCPL is not in force.
    Inactive,
    /// The budget is spent until `reopens`.
    Spent { peer: Peer, reopens: Instant },
}

impl McplHost {
    /// Takes a fetch from the connection's budget. Over budget, the first dropped fetch of a
    /// burst is reported (one diagnostic per burst, not one per fetch).
    fn take_fetch(&self) -> Result<Peer, Fetch> {
        let options = self.options();
        let taken = self.with_session_mut(|s| {
            if s.status != McplStatus::Ready {
                return Err((Fetch::Inactive, false));
            }
            match s.take_fetch(options.fetch_burst, options.fetch_window) {
                Ok(()) => Ok(s.peer.clone()),
                Err(reopens) => {
                    let first = !std::mem::replace(&mut s.fetch_drops_reported, true);
                    Err((Fetch::Spent { peer: s.peer.clone(), reopens }, first))
                }
            }
        });
        match taken.unwrap_or(Err((Fetch::Inactive, false))) {
            Ok(peer) => Ok(peer),
            Err((spent, first)) => {
                if first {
                    self.diagnose(Diagnostic::ManifestFetchDropped);
                } else {
                    tracing::trace!("manifest fetch over the budget dropped");
                }
                Err(spent)
            }
        }
    }

    /// Fetches the manifest after `mcpl/manifestChanged`. Over budget, one fetch is scheduled
    /// for when the budget has room again (announcements meanwhile ride on it), so a change
    /// announced while the window was full is still fetched.
    pub(crate) async fn refresh_announced(&self) {
        loop {
            let (peer, reopens) = match self.take_fetch() {
                Ok(peer) => {
                    if let Err(e) = self.fetch_and_apply(peer).await {
                        tracing::debug!(error = %e, "manifest refresh after mcpl/manifestChanged");
                    }
                    return;
                }
                Err(Fetch::Inactive) => return,
                Err(Fetch::Spent { peer, reopens }) => (peer, reopens),
            };
            let scheduled =
                self.with_session_mut(|s| !std::mem::replace(&mut s.trailing_fetch, true));
            if scheduled != Some(true) {
                // Another announcement's fetch is already scheduled.
                return;
            }
            tokio::select! {
                () = peer.closed() => return,
                () = tokio::time::sleep_until(reopens.into()) => {}
            }
            if self.with_session_mut(|s| s.trailing_fetch = false).is_none() {
                return;
            }
        }
    }

    /// Fetches `mcpl/manifest` and applies the change: validated as at `initialize`, diffed
    /// against the manifest in force, capabilities and feature sets that went away revoked
    /// host-side at once (then a `featureSets/update` request), additions left pending
    /// (`capability-expansion-pending`: [`renegotiate`](Self::renegotiate) activates them
    /// through the receipt). The server's answer to that request applies as for
    /// [`set_policy`](Self::set_policy): a refusal (`accepted: false`) turns MCPL off
    /// ([`McplStatus::Refused`]). Returns the [`ChangeReceipt`] (also handed to
    /// [`on_change_receipt`](Self::on_change_receipt)), or `None` if nothing changed.
    ///
    /// # Errors
    ///
    /// [`McplError::RateLimited`] past the fetch budget (dropped, with a diagnostic);
    /// [`McplError::NotActive`]; [`McplError::InvalidManifest`] (the previous manifest
    /// stands); the exchange's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// use mcpl_core::mcpl::manifest::FeatureSet;
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (server, _session, transport) = alerts_server().await?;
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .refresh_on_change(false) // fetch when the host decides to
    ///     .with_fetch_limit(2, Duration::from_secs(60))
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// let next = server.mcpl_manifest().expect("an MCPL server");
    /// server.set_mcpl_manifest(next.with_feature_set("digest", FeatureSet::new("Digest", ["tools"])))?;
    /// let receipt = host.refresh_manifest().await?;
    /// assert!(receipt.is_some());
    /// assert!(host.manifest().and_then(|m| m.feature_sets()?.ok()?.get("digest").cloned()).is_some());
    /// // Nothing new since: no receipt.
    /// assert!(host.refresh_manifest().await?.is_none());
    /// // The budget (2 per minute) is spent.
    /// assert!(matches!(host.refresh_manifest().await, Err(McplError::RateLimited)));
    /// # Ok(()) }
    /// ```
    pub async fn refresh_manifest(&self) -> Result<Option<ChangeReceipt>, McplError> {
        match self.take_fetch() {
            Ok(peer) => self.fetch_and_apply(peer).await,
            Err(Fetch::Inactive) => Err(McplError::NotActive),
            Err(Fetch::Spent { .. }) => Err(McplError::RateLimited),
        }
    }

    /// Fetches `mcpl/manifest` through `peer` (the fetch already taken from the budget) and
    /// applies the change.
    async fn fetch_and_apply(&self, peer: Peer) -> Result<Option<ChangeReceipt>, McplError> {
        let next = match peer
            .send::<GetManifest>(ManifestParams::default(), RequestOptions::new())
            .await
        {
            Ok(m) => m,
            Err(mcpl_core::Error::Serialization { source, .. }) => {
                let reason = format!("mcpl/manifest result is not a manifest: {source}");
                self.diagnose(Diagnostic::ManifestDefect { detail: reason.clone() });
                return Err(McplError::InvalidManifest { reason });
            }
            Err(e) => return Err(e.into()),
        };
        let declared = self.declared(&next);
        let _guard = self.inner.grant_lock.lock().await;
        let policy = self.policy();
        let supported = self.supported();
        let applied = self.with_session_mut(|s| {
            // The digest refuses identifiers outside its charset; such a manifest is still
            // usable (its bad `uses` are disabled), so diff it structurally instead.
            let domains = changed_domains(&s.manifest, &next)
                .unwrap_or_else(|_| structural_domains(&s.manifest, &next));
            if domains.is_empty() {
                s.manifest = next.clone();
                return None;
            }
            let understood = next.understood_paths(s.mcp_tools);
            let mut entries = Vec::new();
            // Removals revoke at once; additions never auto-grant.
            let kept: Vec<String> =
                s.grant.entries().iter().filter(|p| understood.contains(*p)).cloned().collect();
            for revoked in s.grant.entries().iter().filter(|p| !understood.contains(*p)) {
                entries.push(entry(ChangeImpact::CapabilityRevoked, Disposition::Applied, revoked));
            }
            let grant = mcpl_core::mcpl::capability::CapabilityGrant::new(kept);
            let wanted = policy.grant_for(&understood, &supported);
            for pending in wanted.entries().iter().filter(|p| !grant.is_granted(p)) {
                entries.push(entry(
                    ChangeImpact::CapabilityExpansionPending,
                    Disposition::DecisionNeeded,
                    pending,
                ));
            }
            let before = s.derived.clone();
            s.manifest = next.clone();
            s.understood = understood;
            s.declared = declared;
            let derived = s.derive(&grant, &policy);
            // A set may only keep or lose its enablement through a change, never gain it
            // without a receipt: intersect with what was enabled before.
            let derived_now = intersect_derived(&before, &derived);
            let names: BTreeSet<&String> = before.keys().chain(derived.keys()).collect();
            for name in names {
                let was = matches!(before.get(name), Some(Ok(())));
                let is = matches!(derived_now.get(name), Some(Ok(())));
                let could = matches!(derived.get(name), Some(Ok(())));
                if was && !is {
                    entries.push(entry(
                        ChangeImpact::FeatureDegraded,
                        Disposition::Applied,
                        name.as_str(),
                    ));
                } else if !was && could {
                    entries.push(entry(
                        if before.contains_key(name) {
                            ChangeImpact::FeatureRestored
                        } else {
                            ChangeImpact::SurfaceChanged
                        },
                        Disposition::DecisionNeeded,
                        name.as_str(),
                    ));
                }
            }
            if domains.contains(&ChangeDomain::TagOntology) {
                entries.push(entry(
                    ChangeImpact::OntologyAcceptanceInvalidated,
                    Disposition::Applied,
                    "tagOntology",
                ));
            }
            let narrowed = grant != s.grant || derived_now != before;
            s.install(grant.clone(), derived_now.clone());
            // The reduction is in force host-side; the server is told as any policy change
            // is, and its answer applies the same way (a refusal turns MCPL off).
            let exchange = narrowed.then(|| {
                let params = policy.update_params(&grant, &s.understood);
                let exchange = self.start_exchange(s.peer.clone(), params);
                s.pending = Some(PendingPolicy {
                    exchange: exchange.clone(),
                    target: grant,
                    derived: derived_now,
                    initial: false,
                });
                exchange
            });
            Some((domains, entries, exchange))
        });
        let (domains, entries, exchange) = match applied {
            None => return Err(McplError::NotActive),
            Some(None) => return Ok(None),
            Some(Some(change)) => change,
        };
        let policy_receipt = match exchange {
            Some(exchange) => {
                let outcome = exchange.await;
                self.settle();
                outcome.ok()
            }
            None => None,
        };
        let receipt = ChangeReceipt {
            revision: next.revision().map(String::from),
            domains,
            entries,
            policy_receipt,
        };
        tracing::info!(?receipt, "mcpl manifest change applied");
        if let Some(sink) = self.inner.receipts.clone() {
            sink(&receipt);
        }
        Ok(Some(receipt))
    }
}
