//! [`SessionHandle`]: the server-side session a transport holds, shared with its owner.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The server-side session of a transport that has one (the `Mcp-Session-Id` of a Streamable
/// HTTP connection in the 2025 era), shared between the transport and whoever connected it.
///
/// Through it the owner can read the session the transport holds (to save it and continue it
/// later), seed a transport with an existing session before it starts (to continue one), and
/// ask that closing the transport keep the session alive on the server instead of ending it.
/// Clones share the same session.
///
/// # Examples
///
/// ```
/// use mcpl_core::transport::SessionHandle;
///
/// let handle = SessionHandle::new();
/// handle.set("abc123", Some("2025-11-25"));
/// assert_eq!(handle.id().as_deref(), Some("abc123"));
/// assert!(!handle.keeps_on_close());
/// handle.keep_on_close(true);
/// assert!(handle.clone().keeps_on_close());
/// ```
#[derive(Debug, Clone, Default)]
pub struct SessionHandle {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    id: Option<String>,
    protocol_version: Option<String>,
    keep_on_close: bool,
}

impl SessionHandle {
    /// A handle without a session.
    pub fn new() -> SessionHandle {
        SessionHandle::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session id, once the server assigned one (or the handle was seeded with one).
    pub fn id(&self) -> Option<String> {
        self.state().id.clone()
    }

    /// The protocol version the session speaks, if known.
    pub fn protocol_version(&self) -> Option<String> {
        self.state().protocol_version.clone()
    }

    /// Records the session id and, if given, its protocol version.
    pub fn set(&self, id: impl Into<String>, protocol_version: Option<&str>) {
        let mut state = self.state();
        state.id = Some(id.into());
        if let Some(v) = protocol_version {
            state.protocol_version = Some(v.to_owned());
        }
    }

    /// Records the protocol version the session speaks.
    pub fn set_protocol_version(&self, protocol_version: impl Into<String>) {
        self.state().protocol_version = Some(protocol_version.into());
    }

    /// Forgets the session.
    pub fn clear(&self) {
        let mut state = self.state();
        state.id = None;
        state.protocol_version = None;
    }

    /// Whether closing the transport keeps the session alive on the server (`true`) or ends
    /// it (`false`, the default).
    pub fn keep_on_close(&self, keep: bool) {
        self.state().keep_on_close = keep;
    }

    /// See [`keep_on_close`](Self::keep_on_close).
    pub fn keeps_on_close(&self) -> bool {
        self.state().keep_on_close
    }

    /// A new handle holding the same session id and version but sharing nothing with this one.
    pub fn detached_copy(&self) -> SessionHandle {
        let state = self.state();
        SessionHandle {
            inner: Arc::new(Mutex::new(State {
                id: state.id.clone(),
                protocol_version: state.protocol_version.clone(),
                keep_on_close: state.keep_on_close,
            })),
        }
    }
}
