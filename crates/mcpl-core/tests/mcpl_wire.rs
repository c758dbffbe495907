#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! MCPL messages between two engines over real bytes (the line transport on a byte pipe):
//! the typed method markers, the grant, the receipt, error codes with their `data`, the
//! manifest and its revision, and a notification.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpl_core::Engine;
use mcpl_core::engine::RequestOptions;
use mcpl_core::jsonrpc::ErrorCode;
use mcpl_core::mcpl::capability::{CapabilityGrant, paths};
use mcpl_core::mcpl::changes::{ChangeDomain, ManifestChangedParams};
use mcpl_core::mcpl::content::McplContent;
use mcpl_core::mcpl::errors;
use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
use mcpl_core::mcpl::methods::{
    GetManifest, ManifestChanged, PushEvent, Rollback, UpdateFeatureSets,
};
use mcpl_core::mcpl::policy::{
    FeatureSetsUpdateParams, PolicyReceipt, ReceiptMode, accepted_receipt, derive_feature_sets,
};
use mcpl_core::mcpl::push::{PushEventParams, PushEventResult, PushPayload};
use mcpl_core::mcpl::state::{RollbackParams, RollbackResult};
use mcpl_core::transport::lines::LineTransport;
use serde_json::json;

fn manifest() -> Manifest {
    Manifest::new()
        .with_push_events(true)
        .with_inference_lifecycle(true)
        .with_channels(Capability::Flag(true))
        .with_feature_set("mail.push", FeatureSet::new("Mail", [paths::PUSH_EVENTS]))
        .with_feature_set(
            "memory.extraction",
            FeatureSet::new("Memory", [paths::INFERENCE_LIFECYCLE, paths::PUSH_EVENTS]),
        )
        .with_computed_revision()
        .unwrap()
}

fn push(event_id: &str) -> PushEventParams {
    PushEventParams::new(
        "mail.push".to_owned(),
        event_id.to_owned(),
        "2026-08-01T10:00:00Z".to_owned(),
        PushPayload::new(vec![McplContent::text("new mail")]),
    )
    .with_tags(vec!["chat:dm".to_owned()])
}

#[tokio::test]
async fn mcpl_round_trip_over_bytes() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);

    // The MCPL server: answers policy, manifest and rollback requests.
    let server = Engine::new();
    let server_grant = Arc::new(Mutex::new(CapabilityGrant::none()));
    let g = server_grant.clone();
    server.on::<UpdateFeatureSets, _, _>(move |_ctx, params: FeatureSetsUpdateParams| {
        let g = g.clone();
        async move {
            let grant = params.grant().map_err(|e| e.to_error_object())?;
            let declared = manifest().feature_sets().unwrap().unwrap();
            let derived = derive_feature_sets(
                &declared,
                &grant,
                params.enabled.as_deref(),
                params.disabled.as_deref(),
            );
            *g.lock().unwrap() = grant;
            Ok(accepted_receipt(&derived))
        }
    });
    server.on::<GetManifest, _, _>(|_ctx, _params| async { Ok(manifest()) });
    server.on::<Rollback, _, _>(|_ctx, p: RollbackParams| async move {
        if p.checkpoint == "known" {
            Ok(RollbackResult::new(p.checkpoint, true))
        } else {
            Err(errors::checkpoint_not_found(&p.checkpoint))
        }
    });

    // The MCPL host: authorizes inbound push events against its grant.
    let host = Engine::new();
    let host_grant = Arc::new(Mutex::new(CapabilityGrant::none()));
    let g = host_grant.clone();
    host.on::<PushEvent, _, _>(move |_ctx, p: PushEventParams| {
        let g = g.clone();
        async move {
            if !g.lock().unwrap().is_granted(paths::PUSH_EVENTS) {
                return Err(errors::capability_denied(paths::PUSH_EVENTS));
            }
            Ok(PushEventResult::new(true).with_inference_id(format!("inf-{}", p.event_id)))
        }
    });
    let (changed_tx, mut changed_rx) = tokio::sync::mpsc::unbounded_channel();
    host.on_notification_of::<ManifestChanged, _, _>(move |_ctx, p: ManifestChangedParams| {
        let tx = changed_tx.clone();
        async move {
            let _ = tx.send(p);
        }
    });

    let to_host = server.connect(LineTransport::new(br, bw)).await.unwrap();
    let to_server = host.connect(LineTransport::new(ar, aw)).await.unwrap();
    let opts = RequestOptions::new;

    // The host fetches the manifest and checks its revision against its own digest.
    let fetched = to_server.send::<GetManifest>(Default::default(), opts()).await.unwrap();
    assert_eq!(fetched, manifest());
    assert_eq!(fetched.revision(), Some(fetched.compute_revision().unwrap()));

    // Before any grant, a push is denied with -32002 and its data arrives intact.
    let err = to_host.send::<PushEvent>(push("e1"), opts()).await.unwrap_err();
    let e = err.rpc_error().unwrap();
    assert_eq!(e.code, errors::CAPABILITY_DENIED);
    assert_eq!(e.data, Some(json!({"capability": "pushEvents"})));

    // The initial policy request: the receipt reports the degraded feature set.
    let policy = FeatureSetsUpdateParams::default()
        .with_effective_capabilities(vec![paths::PUSH_EVENTS.to_owned(), "channels.*".to_owned()]);
    let receipt = to_server.send::<UpdateFeatureSets>(policy.clone(), opts()).await.unwrap();
    let PolicyReceipt::Accepted(accepted) = receipt else { panic!("refused") };
    assert_eq!(accepted.mode, Some(ReceiptMode::Degraded));
    let unavailable = accepted.unavailable_features.unwrap();
    assert_eq!(unavailable.len(), 1);
    assert_eq!(unavailable[0].feature_set, "memory.extraction");
    assert_eq!(
        unavailable[0].missing_capabilities,
        Some(vec![paths::INFERENCE_LIFECYCLE.to_owned()])
    );
    assert!(server_grant.lock().unwrap().is_granted(paths::CHANNELS_TYPING));
    // An expansion activates on the host only after the receipt.
    *host_grant.lock().unwrap() = policy.grant().unwrap();
    let ok = to_host.send::<PushEvent>(push("e2"), opts()).await.unwrap();
    assert!(ok.accepted);
    assert_eq!(ok.inference_id.as_deref(), Some("inf-e2"));

    // A malformed policy (a path both granted and denied) is -32602.
    let bad = FeatureSetsUpdateParams::default()
        .with_effective_capabilities(vec![paths::PUSH_EVENTS.to_owned()])
        .with_denied_capabilities(vec![paths::PUSH_EVENTS.to_owned()]);
    let err = to_server.send::<UpdateFeatureSets>(bad, opts()).await.unwrap_err();
    assert_eq!(err.rpc_error().unwrap().code, ErrorCode::INVALID_PARAMS);

    // Rollback: known checkpoint succeeds, unknown is -32005 with data.
    let rb = |c: &str| RollbackParams::new("mail.push".to_owned(), c.to_owned());
    assert!(to_server.send::<Rollback>(rb("known"), opts()).await.unwrap().success);
    let err = to_server.send::<Rollback>(rb("pruned"), opts()).await.unwrap_err();
    let e = err.rpc_error().unwrap();
    assert_eq!(e.code, errors::CHECKPOINT_NOT_FOUND);
    assert_eq!(e.data, Some(json!({"checkpoint": "pruned"})));

    // A manifest change announcement arrives typed.
    let next = manifest().with_model_info(true);
    let announce = ManifestChangedParams::new(
        next.compute_revision().unwrap(),
        vec![ChangeDomain::Capabilities],
    );
    to_host.send_notification::<ManifestChanged>(announce.clone()).await.unwrap();
    let got =
        tokio::time::timeout(Duration::from_secs(10), changed_rx.recv()).await.unwrap().unwrap();
    assert_eq!(got, announce);
    assert_ne!(got.revision, manifest().revision().unwrap());

    host.close().await.unwrap();
}
