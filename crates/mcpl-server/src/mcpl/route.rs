//! Serving the host-to-server MCPL methods, and MCPL's part of `initialize`.

use mcpl_core::Peer;
use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::CapabilityGrant;
use mcpl_core::mcpl::errors;
use mcpl_core::mcpl::hooks::{BeforeInferenceResult, LifecycleParams};
use mcpl_core::mcpl::manifest::{EXPERIMENTAL_KEY, HostAdvertisement};
use mcpl_core::mcpl::methods::{self, names};
use mcpl_core::mcpl::policy::{FeatureSetsUpdateParams, accepted_receipt, derive_feature_sets};
use mcpl_core::mcpl::state::RollbackParams;
use mcpl_core::types::ServerCapabilities;
use serde_json::{Map, Value};

use super::connection::{McplConnection, announce, declared_sets};
use crate::codec::{decode, encode};
use crate::context::{Context, SharedClientState, lock};
use crate::server::Server;

/// The capability reported when a `context/beforeInference` arrives without any of its leaves
/// granted: the one-segment pattern naming the four of them.
const BEFORE_INFERENCE_ANY: &str = "contextHooks.beforeInference.*";

/// MCPL's part of `initialize`: when the server serves MCPL and the host advertised it, puts
/// the manifest into the result's `capabilities.experimental.mcpl`, and starts the
/// connection's MCPL state and its announcer (seeded with the manifest sent here, so no
/// announcement follows the handshake).
pub(crate) fn initialize(
    server: &Server,
    peer: &Peer,
    client: &SharedClientState,
    experimental: Option<&Map<String, Value>>,
    capabilities: &mut ServerCapabilities,
) {
    let Some(hub) = server.inner.mcpl.clone() else { return };
    let Some(host) = HostAdvertisement::from_experimental(experimental) else {
        tracing::debug!("the host does not speak MCPL: serving plain MCP");
        return;
    };
    let mut manifests = hub.subscribe();
    let manifest = manifests.borrow_and_update().clone();
    capabilities
        .experimental
        .get_or_insert_with(Map::new)
        .insert(EXPERIMENTAL_KEY.to_owned(), manifest.to_value());
    let peer = peer.unrelated();
    let conn = McplConnection::new(peer.clone(), host, hub.clone());
    hub.register(&conn);
    lock(client).mcpl = Some(conn);
    tokio::spawn(announce(peer, manifests, manifest));
}

/// Serves a host-to-server MCPL request.
pub(crate) async fn request(ctx: &Context, method: &str, params: Option<Value>) -> HandlerResult {
    let conn = lock(&ctx.client).mcpl.clone();
    let Some(conn) = conn else {
        // Not an MCPL connection: plain MCP knows no such method.
        return Err(ErrorObject::method_not_found(method));
    };
    if names::REMOVED.contains(&method) {
        return Err(ErrorObject::method_not_found(method));
    }
    match method {
        names::FEATURE_SETS_UPDATE => update_policy(ctx, &conn, params),
        names::MANIFEST => encode(&*conn.hub().manifest()),
        names::STATE_ROLLBACK => rollback(&conn, params).await,
        names::CONTEXT_BEFORE_INFERENCE => {
            if !conn.is_ready() || !conn.grant().any_before_inference() {
                return Err(errors::capability_denied(BEFORE_INFERENCE_ANY));
            }
            let handler = conn.hub().requests.get(method).cloned();
            let Some(handler) = handler else {
                return Err(ErrorObject::method_not_found(method));
            };
            let result = handler(conn.clone(), params).await?;
            encode(authorize_injections(
                &conn,
                result.decode().map_err(ErrorObject::invalid_params)?,
            ))
        }
        _ => {
            if let Some(capability) = methods::required_capability(method)
                && !conn.is_granted(capability)
            {
                return Err(errors::capability_denied(capability));
            }
            let handler = conn.hub().requests.get(method).cloned();
            match handler {
                Some(handler) => handler(conn, params).await,
                None => Err(ErrorObject::method_not_found(method)),
            }
        }
    }
}

/// `featureSets/update` as a request: the new policy, readiness, and the receipt.
fn update_policy(ctx: &Context, conn: &McplConnection, params: Option<Value>) -> HandlerResult {
    let params: FeatureSetsUpdateParams = match decode(params) {
        Ok(p) => p,
        Err(e) => {
            // Malformed policy: fail closed.
            conn.policy().grant = CapabilityGrant::none();
            return Err(e);
        }
    };
    let grant = match params.grant() {
        Ok(grant) => grant,
        Err(e) => {
            tracing::debug!(error = %e, "malformed featureSets/update: the grant becomes empty");
            conn.policy().grant = CapabilityGrant::none();
            return Err(e.to_error_object());
        }
    };
    let declared = declared_sets(&conn.hub().manifest());
    let disabled = params.disabled.unwrap_or_default();
    let derived =
        derive_feature_sets(&declared, &grant, params.enabled.as_deref(), Some(&disabled));
    let first = {
        let mut policy = conn.policy();
        let first = !policy.ready;
        policy.grant = grant;
        policy.enabled = params.enabled;
        policy.disabled = disabled;
        policy.ready = true;
        first
    };
    tracing::debug!(grant = ?conn.grant().entries(), "MCPL policy applied");
    if first && let Some(on_ready) = conn.hub().on_ready.clone() {
        // What `on_ready` sends must follow the receipt.
        let conn = conn.clone();
        let queued = ctx.request().after_answer(move || {
            tokio::spawn(on_ready(conn));
        });
        if !queued {
            tracing::warn!("MCPL on_ready cannot be ordered after the receipt here: not run");
        }
    }
    encode(accepted_receipt(&derived))
}

/// Drops the injections whose position is not granted now, and all of them when the answer
/// names a feature set that is not enabled.
fn authorize_injections(
    conn: &McplConnection,
    mut result: BeforeInferenceResult,
) -> BeforeInferenceResult {
    if !conn.is_enabled(&result.feature_set) {
        if !result.context_injections.is_empty() {
            tracing::debug!(
                feature_set = %result.feature_set,
                "context/beforeInference answer names a feature set that is not enabled: injections dropped"
            );
        }
        result.context_injections.clear();
        return result;
    }
    let grant = conn.grant();
    result.context_injections.retain(|injection| {
        let capability = injection.position.capability();
        let granted = grant.is_granted(capability);
        if !granted {
            tracing::debug!(capability, namespace = %injection.namespace, "injection dropped: position not granted");
        }
        granted
    });
    result
}

async fn rollback(conn: &McplConnection, params: Option<Value>) -> HandlerResult {
    let Some(handler) = conn.hub().requests.get(names::STATE_ROLLBACK).cloned() else {
        return Err(ErrorObject::method_not_found(names::STATE_ROLLBACK));
    };
    let parsed: RollbackParams = decode(params.clone())?;
    let declared = declared_sets(&conn.hub().manifest());
    match declared.get(&parsed.feature_set) {
        None => return Err(errors::unknown_feature_set(&parsed.feature_set)),
        Some(set) if set.rollback != Some(true) => {
            return Err(ErrorObject::invalid_params(format_args!(
                "feature set {:?} does not declare rollback",
                parsed.feature_set
            )));
        }
        Some(_) => {}
    }
    handler(conn.clone(), params).await
}

/// Serves a host-to-server MCPL notification; anything else is ignored.
pub(crate) async fn notification(client: &SharedClientState, method: &str, params: Option<Value>) {
    let conn = lock(client).mcpl.clone();
    let Some(conn) = conn else {
        tracing::trace!(method, "notification ignored");
        return;
    };
    if method == names::FEATURE_SETS_UPDATE {
        narrow(&conn, params);
        return;
    }
    if let Some(capability) = methods::required_capability(method)
        && !conn.is_granted(capability)
    {
        tracing::debug!(method, capability, "MCPL notification dropped: capability not granted");
        return;
    }
    if method == names::INFERENCE_LIFECYCLE {
        // One terminal phase per inference reaches the handler. Params that do not decode are
        // the handler's to refuse (with its diagnostic).
        if let Ok(lifecycle) = decode::<LifecycleParams>(params.clone())
            && !conn.admit_lifecycle(&lifecycle)
        {
            return;
        }
    }
    let Some(handler) = conn.hub().notifications.get(method).cloned() else {
        tracing::trace!(method, "MCPL notification without a handler ignored");
        return;
    };
    handler(conn, params).await;
}

/// `featureSets/update` as a notification: only its `disabled` list applies.
fn narrow(conn: &McplConnection, params: Option<Value>) {
    let params: FeatureSetsUpdateParams = match decode(params) {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(error = %e.message, "malformed featureSets/update notification ignored");
            return;
        }
    };
    if params.effective_capabilities.is_some()
        || params.denied_capabilities.is_some()
        || params.enabled.is_some()
    {
        tracing::debug!(
            "featureSets/update notification carries grant fields or `enabled`: ignored (a grant changes by request only)"
        );
    }
    if let Some(disabled) = params.disabled {
        let mut policy = conn.policy();
        for name in disabled {
            if !policy.disabled.contains(&name) {
                policy.disabled.push(name);
            }
        }
    }
}
