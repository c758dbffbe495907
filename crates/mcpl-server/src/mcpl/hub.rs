//! The server-wide MCPL state: the installed manifest, the handlers, the live connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use mcpl_core::mcpl::digest::Revision;
use mcpl_core::mcpl::manifest::{FeatureSets, Manifest};
use serde_json::Value;
use tokio::sync::watch;

use super::connection::{ConnInner, McplConnection};
use super::error::ManifestError;
use super::handlers::{Mcpl, NotificationFn, ReadyFn, RequestFn};
use super::lifecycle::Limits;

/// The MCPL side of a server.
pub(crate) struct McplHub {
    /// The installed manifest, with its computed `revision`. Each connection's announcer
    /// watches it; a watch keeps only the latest value, which coalesces bursts of changes.
    manifest: watch::Sender<Arc<Manifest>>,
    pub(crate) requests: HashMap<&'static str, RequestFn>,
    pub(crate) notifications: HashMap<&'static str, NotificationFn>,
    pub(crate) on_ready: Option<ReadyFn>,
    pub(crate) lifecycle: Limits,
    connections: Mutex<Vec<Weak<ConnInner>>>,
}

impl std::fmt::Debug for McplHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McplHub").field("manifest", &*self.manifest.borrow()).finish()
    }
}

/// The manifest with `revision` set to its digest (a given `revision` is replaced), refused if
/// it declares a feature set the server cannot serve.
pub(crate) fn with_revision(manifest: Manifest) -> Result<Manifest, ManifestError> {
    let (manifest, mut unusable) = usable(manifest);
    match unusable.is_empty() {
        true => revised(manifest),
        false => Err(unusable.remove(0)),
    }
}

/// The manifest with `revision` set to its digest.
fn revised(manifest: Manifest) -> Result<Manifest, ManifestError> {
    let mut map = manifest.into_map();
    map.remove("revision");
    Ok(Manifest::from_map(map).with_computed_revision()?)
}

/// The manifest without the feature sets the server cannot serve (a declaration that does
/// not parse, or whose `uses` is not a non-empty list of capability paths; all of them if
/// `featureSets` is not an object keyed by name), and one error for each.
fn usable(manifest: Manifest) -> (Manifest, Vec<ManifestError>) {
    let mut problems = Vec::new();
    let mut map = manifest.into_map();
    let Some(sets) = map.get("featureSets") else { return (Manifest::from_map(map), problems) };
    if !sets.is_object() {
        problems.push(ManifestError::FeatureSetsNotAnObject);
        map.remove("featureSets");
        return (Manifest::from_map(map), problems);
    }
    let unusable: Vec<String> = match FeatureSets::read(sets) {
        Ok(read) => {
            let invalid_uses = read.sets.0.iter().filter(|(_, set)| set.valid_uses().is_none());
            let invalid_uses: Vec<String> = invalid_uses.map(|(name, _)| name.clone()).collect();
            let mut names = Vec::new();
            for invalid in read.invalid {
                names.push(invalid.name.clone());
                problems.push(ManifestError::FeatureSet(invalid));
            }
            for name in invalid_uses {
                problems.push(ManifestError::InvalidUses { feature_set: name.clone() });
                names.push(name);
            }
            names
        }
        Err(_) => Vec::new(),
    };
    if let Some(Value::Object(sets)) = map.get_mut("featureSets") {
        for name in &unusable {
            sets.remove(name);
        }
    }
    (Manifest::from_map(map), problems)
}

impl McplHub {
    /// The hub serving `mcpl`, and what of its manifest it cannot serve (left out of the
    /// served manifest); an error if the manifest has no revision.
    pub(crate) fn new(mcpl: Mcpl) -> Result<(McplHub, Vec<ManifestError>), ManifestError> {
        let (manifest, problems) = usable(mcpl.manifest);
        let (manifest, _) = watch::channel(Arc::new(revised(manifest)?));
        let hub = McplHub {
            manifest,
            requests: mcpl.requests,
            notifications: mcpl.notifications,
            on_ready: mcpl.on_ready,
            lifecycle: mcpl.lifecycle,
            connections: Mutex::new(Vec::new()),
        };
        Ok((hub, problems))
    }

    /// The installed manifest.
    pub(crate) fn manifest(&self) -> Arc<Manifest> {
        self.manifest.borrow().clone()
    }

    /// Watches the installed manifest from now on (the current one counts as seen).
    pub(crate) fn subscribe(&self) -> watch::Receiver<Arc<Manifest>> {
        self.manifest.subscribe()
    }

    /// Installs `next` (its revision computed) and returns the revision. Connections announce
    /// the change on their own.
    pub(crate) fn install(&self, next: Manifest) -> Result<Revision, ManifestError> {
        let next = with_revision(next)?;
        let revision = next.revision().ok_or(ManifestError::NotEnabled)?;
        self.manifest.send_replace(Arc::new(next));
        Ok(revision)
    }

    /// Installs the manifest `f` makes of the current one, atomically with respect to other
    /// updates.
    pub(crate) fn update(
        &self,
        f: impl FnOnce(Manifest) -> Manifest,
    ) -> Result<Revision, ManifestError> {
        let mut outcome = Err(ManifestError::NotEnabled);
        self.manifest.send_if_modified(|current| match with_revision(f((**current).clone())) {
            Ok(next) => {
                outcome = next.revision().ok_or(ManifestError::NotEnabled);
                *current = Arc::new(next);
                true
            }
            Err(e) => {
                outcome = Err(e);
                false
            }
        });
        outcome
    }

    pub(crate) fn register(&self, conn: &McplConnection) {
        let mut all = self.connections.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|c| c.upgrade().is_some_and(|c| !c.peer.is_closed()));
        all.push(Arc::downgrade(&conn.0));
    }

    pub(crate) fn connections(&self) -> Vec<McplConnection> {
        let mut all = self.connections.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|c| c.upgrade().is_some_and(|c| !c.peer.is_closed()));
        all.iter().filter_map(Weak::upgrade).map(McplConnection).collect()
    }
}
