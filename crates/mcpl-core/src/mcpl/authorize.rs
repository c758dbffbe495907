//! Host-side authorization primitives (spec §5.4, §6.5, §6.6, §10): admitting a
//! server-initiated message, and authorizing each injection of a hook response against the
//! grant current when the response arrives.
//!
//! These are pure functions over the state a host keeps per connection; the host decides when
//! to call them. Authorization never reads the `featureSet` or `namespace` a server puts in a
//! response.

use std::collections::BTreeMap;

use crate::jsonrpc::ErrorObject;

use super::capability::CapabilityGrant;
use super::errors;
use super::hooks::ContextInjection;
use super::manifest::FeatureSets;
use super::policy::DisabledReason;

/// What a host knows about one connection when a server-initiated message arrives.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionState<'a> {
    /// Whether the initial `featureSets/update` exchange has completed.
    pub ready: bool,
    /// The grant in force.
    pub grant: &'a CapabilityGrant,
    /// The server's declared feature sets.
    pub declared: &'a FeatureSets,
    /// Which of them are enabled (from [`super::policy::derive_feature_sets`]).
    pub derived: &'a BTreeMap<String, Result<(), DisabledReason>>,
}

/// Admits (or rejects with the spec's error) a server-initiated message that exercises
/// `capabilities` and is tagged with `feature_set`, checking in this order:
///
/// 1. the initial policy is complete and every capability is granted, else `-32002`
///    `{capability}`;
/// 2. the message carries a feature set, else `-32602`;
/// 3. the set is declared, else `-32003` `{featureSet}`;
/// 4. the set is enabled, else `-32001` `{featureSet}`;
/// 5. the set's `uses` declares every capability exercised, else `-32002`
///    `{capability, featureSet}` (a declaration mismatch: the caller should also log it).
///
/// For `inference/request`, pass
/// [`InferenceRequestParams::required_capabilities`](super::inference::InferenceRequestParams::required_capabilities).
pub fn admit_tagged(
    state: AdmissionState<'_>,
    capabilities: &[&str],
    feature_set: Option<&str>,
) -> Result<(), ErrorObject> {
    admit_untagged(state, capabilities)?;
    let Some(name) = feature_set else {
        return Err(ErrorObject::invalid_params("missing featureSet"));
    };
    let Some(set) = state.declared.get(name) else {
        return Err(errors::unknown_feature_set(name));
    };
    if !matches!(state.derived.get(name), Some(Ok(()))) {
        return Err(errors::feature_set_not_enabled(name));
    }
    let uses = set.valid_uses().unwrap_or_default();
    match capabilities.iter().find(|c| !uses.iter().any(|u| u == *c)) {
        Some(missing) => Err(errors::declaration_mismatch(missing, name)),
        None => Ok(()),
    }
}

/// Admits a server-initiated message that carries no feature set (channel methods, which are
/// authorized by the grant and the channel id): readiness and every capability granted, else
/// `-32002` `{capability}`.
pub fn admit_untagged(state: AdmissionState<'_>, capabilities: &[&str]) -> Result<(), ErrorObject> {
    match capabilities.iter().find(|c| !state.ready || !state.grant.is_granted(c)) {
        Some(denied) => Err(errors::capability_denied(denied)),
        None => Ok(()),
    }
}

/// Splits a `context/beforeInference` response's injections into those the grant allows, each
/// by its own position (`contextHooks.beforeInference.inject.<position>`), and those it does
/// not (to drop with a diagnostic). Pass the grant current when the response **arrives**.
pub fn authorize_injections(
    grant: &CapabilityGrant,
    injections: Vec<ContextInjection>,
) -> (Vec<ContextInjection>, Vec<ContextInjection>) {
    injections.into_iter().partition(|i| grant.is_granted(i.position.capability()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::ErrorCode;
    use crate::mcpl::capability::paths;
    use crate::mcpl::policy::derive_feature_sets;
    use serde_json::json;

    fn declared() -> FeatureSets {
        serde_json::from_value(json!({
            "mail": {"description": "d", "uses": ["pushEvents"]},
            "summaries": {"description": "d", "uses": ["inferenceRequest"]},
            "off": {"description": "d", "uses": ["pushEvents"]},
            "thin": {"description": "d", "uses": ["modelInfo"]}
        }))
        .unwrap()
    }

    #[test]
    fn admission_order() {
        let declared = declared();
        let grant =
            CapabilityGrant::new([paths::PUSH_EVENTS, paths::INFERENCE_REQUEST, paths::MODEL_INFO]);
        let disabled = vec!["off".to_owned()];
        let derived = derive_feature_sets(&declared, &grant, None, Some(&disabled));
        let state =
            AdmissionState { ready: true, grant: &grant, declared: &declared, derived: &derived };
        let code = |r: Result<(), ErrorObject>| r.unwrap_err().code;

        assert!(admit_tagged(state, &[paths::PUSH_EVENTS], Some("mail")).is_ok());
        // Not ready: everything is denied, even what the grant allows.
        let not_ready = AdmissionState { ready: false, ..state };
        let e = admit_tagged(not_ready, &[paths::PUSH_EVENTS], Some("mail")).unwrap_err();
        assert_eq!(e.code, errors::CAPABILITY_DENIED);
        assert_eq!(e.data, Some(json!({"capability": "pushEvents"})));
        // Ungranted capability comes before any feature-set check.
        let e = admit_tagged(state, &[paths::CHANNELS_INCOMING], Some("nope")).unwrap_err();
        assert_eq!(e.data, Some(json!({"capability": "channels.incoming"})));
        assert_eq!(
            code(admit_tagged(state, &[paths::PUSH_EVENTS], None)),
            ErrorCode::INVALID_PARAMS
        );
        assert_eq!(
            code(admit_tagged(state, &[paths::PUSH_EVENTS], Some("nope"))),
            errors::UNKNOWN_FEATURE_SET
        );
        assert_eq!(
            code(admit_tagged(state, &[paths::PUSH_EVENTS], Some("off"))),
            errors::FEATURE_SET_NOT_ENABLED
        );
        // Declaration mismatch: granted, enabled set, but its `uses` lacks the capability.
        let e = admit_tagged(state, &[paths::PUSH_EVENTS], Some("thin")).unwrap_err();
        assert_eq!(e.code, errors::CAPABILITY_DENIED);
        assert_eq!(e.data, Some(json!({"capability": "pushEvents", "featureSet": "thin"})));
        // Streaming inference needs the streaming leaf granted.
        let streaming = [paths::INFERENCE_REQUEST, paths::INFERENCE_REQUEST_STREAMING];
        let e = admit_tagged(state, &streaming, Some("summaries")).unwrap_err();
        assert_eq!(e.data, Some(json!({"capability": "inferenceRequest.streaming"})));
        assert!(admit_tagged(state, &[paths::INFERENCE_REQUEST], Some("summaries")).is_ok());
        // Untagged (channel) methods check readiness and the grant only.
        assert!(admit_untagged(state, &[paths::MODEL_INFO]).is_ok());
        assert_eq!(
            code(admit_untagged(state, &[paths::CHANNELS_REGISTER])),
            errors::CAPABILITY_DENIED
        );
        assert_eq!(
            code(admit_untagged(not_ready, &[paths::MODEL_INFO])),
            errors::CAPABILITY_DENIED
        );
    }

    #[test]
    fn injections_are_authorized_one_by_one() {
        let injections: Vec<ContextInjection> = serde_json::from_value(json!([
            {"namespace": "m", "position": "system", "content": "s"},
            {"namespace": "m", "position": "beforeUser", "content": "b"},
            {"namespace": "m", "position": "afterUser", "content": "a"}
        ]))
        .unwrap();
        let grant = CapabilityGrant::new([paths::INJECT_AFTER_USER, paths::INJECT_BEFORE_USER]);
        let (kept, dropped) = authorize_injections(&grant, injections.clone());
        assert_eq!(kept.len(), 2);
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].namespace, "m");
        assert!(matches!(dropped[0].position, crate::mcpl::hooks::Position::System));
        // A grant revoked while the request was in flight drops everything at receipt.
        let (kept, dropped) = authorize_injections(&CapabilityGrant::none(), injections);
        assert_eq!((kept.len(), dropped.len()), (0, 3));
    }
}
