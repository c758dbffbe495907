//! Manifest changes: fetching `mcpl/manifest` within a per-connection budget, diffing against
//! the manifest in force (the host's diff is authoritative, never the revision string), and
//! applying the change: removals revoke at once, additions never auto-grant. One
//! [`ChangeReceipt`] per change.

use std::collections::BTreeSet;

use mcpl_core::engine::RequestOptions;
use mcpl_core::mcpl::changes::{
    ChangeDomain, ChangeImpact, Disposition, ManifestParams, changed_domains,
};
use mcpl_core::mcpl::manifest::Manifest;
use mcpl_core::mcpl::methods::GetManifest;
use mcpl_core::mcpl::policy::PolicyReceipt;
use serde_json::{Map, Value};

use super::session::intersect_derived;
use super::{Diagnostic, McplError, McplHost, McplStatus, read};

/// One line of a [`ChangeReceipt`].
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

impl McplHost {
    /// Fetches `mcpl/manifest` and applies the change: validated as at `initialize`, diffed
    /// against the manifest in force, capabilities and feature sets that went away revoked
    /// host-side at once (then a `featureSets/update` request), additions left pending
    /// (`capability-expansion-pending`: [`renegotiate`](Self::renegotiate) activates them
    /// through the receipt). Returns the [`ChangeReceipt`] (also handed to
    /// [`on_change_receipt`](Self::on_change_receipt)), or `None` if nothing changed.
    ///
    /// # Errors
    ///
    /// [`McplError::RateLimited`] past the fetch budget (dropped, with a diagnostic);
    /// [`McplError::NotActive`]; [`McplError::InvalidManifest`] (the previous manifest
    /// stands); the exchange's error.
    pub async fn refresh_manifest(&self) -> Result<Option<ChangeReceipt>, McplError> {
        let options = self.options();
        let peer = self
            .with_session_mut(|s| {
                if s.status != McplStatus::Ready {
                    return Err(McplError::NotActive);
                }
                if !s.take_fetch(options.fetch_burst, options.fetch_window) {
                    return Err(McplError::RateLimited);
                }
                Ok(s.peer.clone())
            })
            .unwrap_or(Err(McplError::NotActive));
        let peer = match peer {
            Err(McplError::RateLimited) => {
                self.diagnose(Diagnostic::ManifestFetchDropped);
                return Err(McplError::RateLimited);
            }
            other => other?,
        };
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
            s.install(grant.clone(), derived_now);
            let update =
                narrowed.then(|| (s.peer.clone(), policy.update_params(&grant, &s.understood)));
            Some((domains, entries, update))
        });
        let (domains, entries, update) = match applied {
            None => return Err(McplError::NotActive),
            Some(None) => return Ok(None),
            Some(Some(change)) => change,
        };
        // The reduction is in force host-side; now tell the server.
        let policy_receipt = match update {
            Some((peer, params)) => match self.exchange_policy(&peer, params).await {
                Ok(receipt) => {
                    self.with_session_mut(|s| s.receipt = Some(receipt.clone()));
                    Some(receipt)
                }
                Err(_) => None,
            },
            None => None,
        };
        let receipt = ChangeReceipt {
            revision: next.revision().map(String::from),
            domains,
            entries,
            policy_receipt,
        };
        tracing::info!(?receipt, "mcpl manifest change applied");
        if let Some(sink) = read(&self.inner.receipts) {
            sink(&receipt);
        }
        Ok(Some(receipt))
    }
}
