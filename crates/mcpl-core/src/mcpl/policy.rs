//! The negotiated policy: `featureSets/update` (spec §5.3, §6.7), the server's degradation
//! receipt, and the derivation of which feature sets are enabled (spec §6.4).

use derive_setters::Setters;
use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::capability::{CapabilityGrant, GrantError, pattern_matches};
use super::manifest::FeatureSets;
use super::open_enum::open_enum;

/// `featureSets/update` params (host to server).
///
/// Sent as a **request** for every grant change; as a notification it carries descriptive
/// metadata only, and a server applies nothing from it but its `disabled` list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct FeatureSetsUpdateParams {
    /// The grant: the sole allowlist. Absent in a request means a grant of nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_capabilities: Option<Vec<String>>,
    /// Diagnostic only; must not overlap `effective_capabilities`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub denied_capabilities: Option<Vec<String>>,
    /// If present, the allowlist of feature sets (names or one-segment `*` patterns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<Vec<String>>,
    /// Feature sets to disable (always subtracts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<Vec<String>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FeatureSetsUpdateParams {
    /// The grant this request establishes (absent = nothing); an error if a path is both
    /// granted and denied (answer `-32602`, and the grant stays or becomes empty).
    pub fn grant(&self) -> Result<CapabilityGrant, GrantError> {
        CapabilityGrant::from_policy(
            self.effective_capabilities.as_deref(),
            self.denied_capabilities.as_deref(),
        )
    }
}

open_enum! {
    /// `mode` of an accepted receipt (only `degraded` is attested; omitted when nothing is).
    ReceiptMode {
        /// Some feature sets are unavailable.
        Degraded = "degraded",
    }
}

open_enum! {
    /// `effect` of an unavailable feature (only `disabled` is attested).
    FeatureEffect {
        /// The feature set is disabled.
        Disabled = "disabled",
    }
}

open_enum! {
    /// What a refusing server asks the host to do.
    Fallback {
        /// Drop MCPL, keep MCP (tools, resources, prompts).
        McpOnly = "mcp-only",
        /// Close the connection.
        Close = "close",
    }
}

/// A feature set the policy leaves unavailable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UnavailableFeature {
    /// The feature set.
    pub feature_set: String,
    /// The capabilities its `uses` needs that the grant lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_capabilities: Option<Vec<String>>,
    /// What happens to it (required).
    pub effect: FeatureEffect,
    /// Why (`invalid_uses`, `not_selected`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl UnavailableFeature {
    /// An `UnavailableFeature` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(feature_set: impl Into<String>, effect: FeatureEffect) -> Self {
        Self {
            feature_set: feature_set.into(),
            missing_capabilities: None,
            effect,
            reason: None,
            extra: Default::default(),
        }
    }
}

/// The server accepted the policy (possibly degraded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct AcceptedReceipt {
    /// `degraded` if something is unavailable; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ReceiptMode>,
    /// The unavailable feature sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_features: Option<Vec<UnavailableFeature>>,
    /// Notes for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<Value>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The server refused the policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct RefusedReceipt {
    /// What the host should do (required).
    pub fallback: Fallback,
    /// The capabilities the server needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_capabilities: Option<Vec<String>>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RefusedReceipt {
    /// A `RefusedReceipt` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(fallback: Fallback) -> Self {
        Self { fallback, missing_capabilities: None, reason: None, extra: Default::default() }
    }
}

/// The result of a `featureSets/update` request: the degradation receipt. It is testimony, not
/// entitlement: a host never widens a grant because of it.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicyReceipt {
    /// `accepted: true`.
    Accepted(AcceptedReceipt),
    /// `accepted: false` (with the required `fallback`).
    Refused(RefusedReceipt),
}

impl Serialize for PolicyReceipt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let (accepted, body) = match self {
            PolicyReceipt::Accepted(r) => (true, serde_json::to_value(r)),
            PolicyReceipt::Refused(r) => (false, serde_json::to_value(r)),
        };
        let mut map = match body.map_err(S::Error::custom)? {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        map.insert("accepted".to_owned(), Value::Bool(accepted));
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for PolicyReceipt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::deserialize(d)?;
        match map.remove("accepted") {
            Some(Value::Bool(true)) => AcceptedReceipt::deserialize(Value::Object(map))
                .map(PolicyReceipt::Accepted)
                .map_err(D::Error::custom),
            Some(Value::Bool(false)) => RefusedReceipt::deserialize(Value::Object(map))
                .map(PolicyReceipt::Refused)
                .map_err(D::Error::custom),
            Some(_) => Err(D::Error::custom("`accepted` must be a boolean")),
            None => Err(D::Error::missing_field("accepted")),
        }
    }
}

/// Why a declared feature set is disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DisabledReason {
    /// `uses` is absent, not a list, empty, or holds a value outside the vocabulary.
    InvalidUses,
    /// Some of its `uses` are not granted.
    MissingCapabilities(Vec<String>),
    /// `enabled` is present and does not name it.
    NotSelected,
    /// `disabled` names it.
    Disabled,
}

impl DisabledReason {
    /// The reason as sent in receipts and diagnostics.
    pub fn as_str(&self) -> &'static str {
        match self {
            DisabledReason::InvalidUses => "invalid_uses",
            DisabledReason::MissingCapabilities(_) => "missing_capabilities",
            DisabledReason::NotSelected => "not_selected",
            DisabledReason::Disabled => "disabled",
        }
    }

    /// The entry of a degradation receipt for feature set `name`.
    pub fn to_unavailable(&self, name: &str) -> UnavailableFeature {
        UnavailableFeature {
            feature_set: name.to_owned(),
            missing_capabilities: match self {
                DisabledReason::MissingCapabilities(m) => Some(m.clone()),
                _ => None,
            },
            effect: FeatureEffect::Disabled,
            reason: Some(self.as_str().to_owned()),
            extra: Map::new(),
        }
    }
}

/// Derives which declared feature sets are enabled, fail-closed, in the spec's order:
/// invalid `uses`, then ungranted `uses`, then not in `enabled` (if present), then in
/// `disabled`. `enabled`/`disabled` entries may be one-segment `*` patterns. Naming a set in
/// `enabled` never supplies capabilities its `uses` lacks.
pub fn derive_feature_sets(
    declared: &FeatureSets,
    grant: &CapabilityGrant,
    enabled: Option<&[String]>,
    disabled: Option<&[String]>,
) -> BTreeMap<String, Result<(), DisabledReason>> {
    let named = |list: &[String], name: &str| list.iter().any(|p| pattern_matches(p, name));
    declared
        .0
        .iter()
        .map(|(name, set)| {
            let status = match set.valid_uses() {
                None => Err(DisabledReason::InvalidUses),
                Some(uses) => {
                    let missing: Vec<String> =
                        uses.iter().filter(|p| !grant.is_granted(p)).cloned().collect();
                    if !missing.is_empty() {
                        Err(DisabledReason::MissingCapabilities(missing))
                    } else if enabled.is_some_and(|e| !named(e, name)) {
                        Err(DisabledReason::NotSelected)
                    } else if disabled.is_some_and(|d| named(d, name)) {
                        Err(DisabledReason::Disabled)
                    } else {
                        Ok(())
                    }
                }
            };
            (name.clone(), status)
        })
        .collect()
}

/// The receipt a server answers a policy it accepts with: `mode: "degraded"` and the
/// unavailable sets if any set is disabled, nothing otherwise.
pub fn accepted_receipt(derived: &BTreeMap<String, Result<(), DisabledReason>>) -> PolicyReceipt {
    let unavailable: Vec<UnavailableFeature> = derived
        .iter()
        .filter_map(|(name, s)| s.as_ref().err().map(|r| r.to_unavailable(name)))
        .collect();
    PolicyReceipt::Accepted(if unavailable.is_empty() {
        AcceptedReceipt::default()
    } else {
        AcceptedReceipt {
            mode: Some(ReceiptMode::Degraded),
            unavailable_features: Some(unavailable),
            ..Default::default()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_round_trip_and_grant() {
        let v = json!({"effectiveCapabilities": ["pushEvents", "channels.*"],
            "deniedCapabilities": ["modelInfo"], "enabled": ["memory.*"], "disabled": ["x"], "z": 1});
        let p: FeatureSetsUpdateParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        assert!(p.grant().unwrap().is_granted("channels.typing"));
        let p: FeatureSetsUpdateParams = serde_json::from_value(json!({})).unwrap();
        assert!(p.grant().unwrap().is_empty());
        let p: FeatureSetsUpdateParams = serde_json::from_value(
            json!({"effectiveCapabilities": ["tools"], "deniedCapabilities": ["tools"]}),
        )
        .unwrap();
        assert!(p.grant().is_err());
    }

    #[test]
    fn receipts() {
        let accepted = json!({"accepted": true, "mode": "degraded", "unavailableFeatures": [
            {"featureSet": "memory.extraction", "missingCapabilities": ["inferenceLifecycle"],
             "effect": "disabled"}], "notes": []});
        let r: PolicyReceipt = serde_json::from_value(accepted.clone()).unwrap();
        assert!(matches!(&r, PolicyReceipt::Accepted(a) if a.mode == Some(ReceiptMode::Degraded)));
        assert_eq!(serde_json::to_value(&r).unwrap(), accepted);
        let refused = json!({"accepted": false, "fallback": "mcp-only",
            "missingCapabilities": ["pushEvents"], "reason": "needs push"});
        let r: PolicyReceipt = serde_json::from_value(refused.clone()).unwrap();
        assert!(matches!(&r, PolicyReceipt::Refused(f) if f.fallback == Fallback::McpOnly));
        assert_eq!(serde_json::to_value(&r).unwrap(), refused);
        // `fallback` is required on a refusal; `effect` on an unavailable feature.
        assert!(serde_json::from_value::<PolicyReceipt>(json!({"accepted": false})).is_err());
        assert!(
            serde_json::from_value::<PolicyReceipt>(json!({"accepted": true,
            "unavailableFeatures": [{"featureSet": "a"}]}))
            .is_err()
        );
        assert!(serde_json::from_value::<PolicyReceipt>(json!({"accepted": "yes"})).is_err());
        assert!(serde_json::from_value::<PolicyReceipt>(json!({})).is_err());
        // Open enums tolerate new values.
        let r: PolicyReceipt = serde_json::from_value(json!({"accepted": true, "mode": "partial",
            "unavailableFeatures": [{"featureSet": "a", "effect": "paused"}]}))
        .unwrap();
        let PolicyReceipt::Accepted(a) = r else { panic!() };
        assert_eq!(a.mode, Some(ReceiptMode::Other("partial".into())));
        assert_eq!(a.unavailable_features.unwrap()[0].effect.as_str(), "paused");
    }

    #[test]
    fn derivation_is_fail_closed_and_ordered() {
        let declared: FeatureSets = serde_json::from_value(json!({
            "bad": {"description": "d", "uses": ["pushEvents "]},
            "empty": {"description": "d", "uses": []},
            "memory.retrieval": {"description": "d", "uses": ["contextHooks.beforeInference.inject.afterUser"]},
            "memory.extraction": {"description": "d", "uses": ["inferenceLifecycle", "pushEvents"]},
            "push": {"description": "d", "uses": ["pushEvents"]},
            "tools": {"description": "d", "uses": ["tools"]}
        }))
        .unwrap();
        let grant =
            CapabilityGrant::new(["pushEvents", "tools", "contextHooks.beforeInference.inject.*"]);
        let enabled = vec!["memory.*".to_owned(), "push".to_owned(), "bad".to_owned()];
        let disabled = vec!["push".to_owned()];
        let d = derive_feature_sets(&declared, &grant, Some(&enabled), Some(&disabled));
        assert_eq!(d["bad"], Err(DisabledReason::InvalidUses));
        assert_eq!(d["empty"], Err(DisabledReason::InvalidUses));
        assert_eq!(d["memory.retrieval"], Ok(()));
        assert_eq!(
            d["memory.extraction"],
            Err(DisabledReason::MissingCapabilities(vec!["inferenceLifecycle".to_owned()]))
        );
        assert_eq!(d["push"], Err(DisabledReason::Disabled));
        assert_eq!(d["tools"], Err(DisabledReason::NotSelected));
        // Without `enabled`, nothing is unselected.
        let d = derive_feature_sets(&declared, &grant, None, None);
        assert_eq!(d["tools"], Ok(()));
        assert_eq!(d["push"], Ok(()));
        // An empty grant disables every set.
        let d = derive_feature_sets(&declared, &CapabilityGrant::none(), None, None);
        assert!(d.values().all(Result::is_err));
        let receipt = serde_json::to_value(accepted_receipt(&d)).unwrap();
        assert_eq!(receipt["mode"], "degraded");
        assert_eq!(receipt["unavailableFeatures"].as_array().unwrap().len(), 6);
        let all_ok = derive_feature_sets(&FeatureSets::default(), &grant, None, None);
        assert_eq!(
            serde_json::to_value(accepted_receipt(&all_ok)).unwrap(),
            json!({"accepted": true})
        );
    }
}
