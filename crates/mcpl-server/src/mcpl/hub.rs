//! The server-wide MCPL state: the installed manifest, the handlers, the live connections.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use mcpl_core::mcpl::digest::Revision;
use mcpl_core::mcpl::manifest::Manifest;
use tokio::sync::watch;

use super::connection::{ConnInner, McplConnection};
use super::error::ManifestError;
use super::handlers::{Mcpl, NotificationFn, ReadyFn, RequestFn};

/// The MCPL side of a server.
pub(crate) struct McplHub {
    /// The installed manifest, with its computed `revision`. Each connection's announcer
    /// watches it; a watch keeps only the latest value, which coalesces bursts of changes.
    manifest: watch::Sender<Arc<Manifest>>,
    pub(crate) requests: HashMap<&'static str, RequestFn>,
    pub(crate) notifications: HashMap<&'static str, NotificationFn>,
    pub(crate) on_ready: Option<ReadyFn>,
    connections: Mutex<Vec<Weak<ConnInner>>>,
}

impl std::fmt::Debug for McplHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McplHub").field("manifest", &*self.manifest.borrow()).finish()
    }
}

/// The manifest with `revision` set to its digest (a given `revision` is replaced).
pub(crate) fn with_revision(manifest: Manifest) -> Result<Manifest, ManifestError> {
    let mut map = manifest.into_map();
    map.remove("revision");
    Ok(Manifest::from_map(map).with_computed_revision()?)
}

impl McplHub {
    pub(crate) fn new(mcpl: Mcpl) -> Result<McplHub, ManifestError> {
        let manifest = with_revision(mcpl.manifest)?;
        let (manifest, _) = watch::channel(Arc::new(manifest));
        Ok(McplHub {
            manifest,
            requests: mcpl.requests,
            notifications: mcpl.notifications,
            on_ready: mcpl.on_ready,
            connections: Mutex::new(Vec::new()),
        })
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
