//! Manifest changes (spec §17): `mcpl/manifestChanged`, `mcpl/manifest`, the change domains,
//! and the host's change-receipt vocabulary.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::digest::{self, DigestError, Revision};
use super::manifest::Manifest;

/// A part of the manifest a change touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ChangeDomain {
    /// Every member except `version`, `revision` and `featureSets` (vendor extensions too).
    Capabilities,
    /// `featureSets`, without any `tagOntology`.
    FeatureSets,
    /// The `tagOntology` of any feature set.
    TagOntology,
}

/// `mcpl/manifestChanged` params (server to host, ungated). Exactly `{revision, domains}`;
/// other members are a defect, kept in `extra` so a host can log them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ManifestChangedParams {
    /// The new revision (untrusted; equality only).
    pub revision: Revision,
    /// The domains whose canonical form changed (at least one).
    pub domains: Vec<ChangeDomain>,
    /// Members the schema forbids, kept for diagnostics.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ManifestChangedParams {
    /// A `ManifestChangedParams` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(revision: Revision, domains: Vec<ChangeDomain>) -> Self {
        Self { revision, domains, extra: Default::default() }
    }
}

/// `mcpl/manifest` params (empty). The result is the complete current [`Manifest`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ManifestParams {
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An impact in a host's change receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeImpact {
    /// A capability was removed and its grant revoked.
    CapabilityRevoked,
    /// A capability was added; granting it waits for policy.
    CapabilityExpansionPending,
    /// A feature set became unavailable.
    FeatureDegraded,
    /// A feature set became available again.
    FeatureRestored,
    /// A changed ontology invalidated the operator's acceptance.
    OntologyAcceptanceInvalidated,
    /// A described tag vanished while a rule still references it.
    OntologyReferenceUndeclared,
    /// Tools, resources, prompts or channels changed.
    SurfaceChanged,
}

/// What a receipt entry asks of the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Disposition {
    /// Already applied.
    Applied,
    /// Someone must decide.
    DecisionNeeded,
    /// For information.
    Informational,
}

/// The canonical form of each domain of a manifest, for diffing.
fn domain_forms(m: &Manifest) -> Result<[Option<String>; 3], DigestError> {
    let map = m.as_map();
    let mut caps = Map::new();
    for (k, v) in map {
        if !matches!(k.as_str(), "version" | "revision" | "featureSets") {
            caps.insert(k.clone(), v.clone());
        }
    }
    let (sets, ontologies) = match map.get("featureSets") {
        None => (None, None),
        Some(Value::Object(sets)) => {
            let mut without = Map::new();
            let mut onto = Map::new();
            for (name, set) in sets {
                let mut set = set.clone();
                if let Some(o) = set.as_object_mut().and_then(|s| s.remove("tagOntology")) {
                    onto.insert(name.clone(), o);
                }
                without.insert(name.clone(), set);
            }
            (Some(Value::Object(without)), Some(Value::Object(onto)))
        }
        Some(other) => (Some(other.clone()), None),
    };
    // Each domain is canonicalized inside a manifest-shaped wrapper so that set normalization
    // and identifier checks apply exactly as in the digest.
    let form = |v: Option<Value>, key: &str| -> Result<Option<String>, DigestError> {
        v.map(|v| {
            let mut wrapper = Map::new();
            wrapper.insert(key.to_owned(), v);
            digest::canonicalize(&Value::Object(wrapper))
        })
        .transpose()
    };
    let onto_form = match ontologies {
        None => None,
        Some(Value::Object(onto)) => {
            // Put the ontologies back under their sets so `coreTags`/`implies` normalize.
            let sets: Map<String, Value> = onto
                .into_iter()
                .map(|(k, o)| {
                    let mut s = Map::new();
                    s.insert("tagOntology".to_owned(), o);
                    (k, Value::Object(s))
                })
                .collect();
            form(Some(Value::Object(sets)), "featureSets")?
        }
        Some(_) => None,
    };
    Ok([form(Some(Value::Object(caps)), "capabilities")?, form(sets, "featureSets")?, onto_form])
}

/// The domains whose canonical form differs between two manifests (a server announces these;
/// absent and empty differ, reordered set members do not). A `version`-only change maps to no
/// domain and is not announced.
pub fn changed_domains(old: &Manifest, new: &Manifest) -> Result<Vec<ChangeDomain>, DigestError> {
    let (a, b) = (domain_forms(old)?, domain_forms(new)?);
    let all = [ChangeDomain::Capabilities, ChangeDomain::FeatureSets, ChangeDomain::TagOntology];
    Ok(all
        .into_iter()
        .zip(a.iter().zip(b.iter()))
        .filter(|(_, (x, y))| x != y)
        .map(|(d, _)| d)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(v: Value) -> Manifest {
        Manifest::from_value(v).unwrap()
    }

    #[test]
    fn manifest_changed_round_trip() {
        let v = json!({"revision": "sha256:avQtP4WOeCQjBngwqpati0wz9OUZrhyIBrQecAO8D_8",
            "domains": ["capabilities", "tagOntology"]});
        let p: ManifestChangedParams = serde_json::from_value(v.clone()).unwrap();
        assert!(p.extra.is_empty());
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let p: ManifestChangedParams = serde_json::from_value(json!({"revision": "r",
            "domains": ["featureSets"], "payload": {}}))
        .unwrap();
        assert!(p.extra.contains_key("payload"));
        assert!(
            serde_json::from_value::<ManifestChangedParams>(json!({"revision": "r",
            "domains": ["everything"]}))
            .is_err()
        );
        assert_eq!(
            serde_json::to_value(ChangeImpact::CapabilityExpansionPending).unwrap(),
            json!("capability-expansion-pending")
        );
        assert_eq!(
            serde_json::to_value(Disposition::DecisionNeeded).unwrap(),
            json!("decision-needed")
        );
        assert_eq!(serde_json::to_value(ManifestParams::default()).unwrap(), json!({}));
    }

    #[test]
    fn domains() {
        let base = m(json!({"version": "0.5"}));
        let empty_sets = m(json!({"version": "0.5", "featureSets": {}}));
        assert_eq!(
            changed_domains(&base, &empty_sets).unwrap(),
            [ChangeDomain::FeatureSets, ChangeDomain::TagOntology]
        );
        assert!(changed_domains(&base, &m(json!({"version": "0.6"}))).unwrap().is_empty());
        let a = m(
            json!({"version": "0.5", "pushEvents": true, "featureSets": {"f": {"description": "d",
            "uses": ["tools", "pushEvents"], "tagOntology": {"coreTags": ["chat:dm", "chat:reply"]}}}}),
        );
        let reordered = m(
            json!({"version": "0.5", "pushEvents": true, "featureSets": {"f": {"description": "d",
            "uses": ["pushEvents", "tools"], "tagOntology": {"coreTags": ["chat:reply", "chat:dm"]}}}}),
        );
        assert!(changed_domains(&a, &reordered).unwrap().is_empty());
        let onto = m(
            json!({"version": "0.5", "pushEvents": true, "featureSets": {"f": {"description": "d",
            "uses": ["tools", "pushEvents"], "tagOntology": {"coreTags": ["chat:dm"]}}}}),
        );
        assert_eq!(changed_domains(&a, &onto).unwrap(), [ChangeDomain::TagOntology]);
        let caps = m(
            json!({"version": "0.5", "pushEvents": false, "featureSets": {"f": {"description": "d",
            "uses": ["tools", "pushEvents"], "tagOntology": {"coreTags": ["chat:dm", "chat:reply"]}}}}),
        );
        assert_eq!(changed_domains(&a, &caps).unwrap(), [ChangeDomain::Capabilities]);
        assert!(changed_domains(&a, &m(json!({"bad key": 1}))).is_err());
    }
}
