//! [`Context`]: what a server handler knows about the request it serves.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use mcpl_core::engine::RequestContext;
use mcpl_core::types::{
    ClientCapabilities, Implementation, LoggingLevel, LoggingMessage,
    LoggingMessageNotificationParams,
};
use mcpl_core::{Era, Peer, ProtocolVersion, Result};
use serde_json::Value;

use crate::builder::Server;

/// What the server knows about the client on one connection (stateful era) or from one
/// request's `_meta` (stateless era).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientState {
    pub(crate) version: Option<ProtocolVersion>,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) client_capabilities: Option<ClientCapabilities>,
    /// The minimum level of log messages the client asked for; `None`: no log messages.
    pub(crate) log_level: Option<LoggingLevel>,
    /// The resource URIs this client subscribed to (`resources/subscribe`).
    pub(crate) subscriptions: HashSet<String>,
}

pub(crate) type SharedClientState = Arc<Mutex<ClientState>>;

pub(crate) fn lock(s: &SharedClientState) -> std::sync::MutexGuard<'_, ClientState> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The context of one request served by a server handler.
///
/// Gives the negotiated protocol version and era, the client's identity and capabilities,
/// progress and log notifications for this request, cancellation, and the [`Peer`] for asking
/// the client things.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) request: RequestContext,
    pub(crate) client: SharedClientState,
    pub(crate) server: Option<Server>,
}

impl Context {
    pub(crate) fn new(request: RequestContext, client: SharedClientState) -> Self {
        Context { request, client, server: None }
    }

    /// The server serving this request, to change its features at run time (see
    /// [`Server::tools_mut`]) or to announce resource updates.
    ///
    /// Set for every handler a [`Server`] calls; `None` only for a context built outside one.
    pub fn server(&self) -> Option<&Server> {
        self.server.as_ref()
    }

    /// The engine-level context: id, method, `_meta`, cancellation.
    pub fn request(&self) -> &RequestContext {
        &self.request
    }

    /// The protocol version in use (known once the client initialized).
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        lock(&self.client).version
    }

    /// The era of the protocol version in use.
    pub fn era(&self) -> Era {
        self.protocol_version().map_or(Era::Stateful, ProtocolVersion::era)
    }

    /// The client's identity, as it reported it.
    pub fn client_info(&self) -> Option<Implementation> {
        lock(&self.client).client_info.clone()
    }

    /// The client's capabilities.
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        lock(&self.client).client_capabilities.clone()
    }

    /// The client, for requests and notifications on this connection.
    pub fn peer(&self) -> &Peer {
        self.request.peer()
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.request.is_cancelled()
    }

    /// Resolves when the request is cancelled.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub async fn cancelled(&self) {
        self.request.cancelled().await;
    }

    /// Reports progress, if the client asked for it (see [`RequestContext::progress`]).
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<bool> {
        self.request.progress(progress, total, message).await
    }

    /// Sends a log message to the client, if it asked for messages of this level.
    ///
    /// Returns `Ok(false)` when the message was filtered out: the client set no level (2026
    /// requests without `logLevel` get no messages) or a higher one.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection has closed.
    pub async fn log(
        &self,
        level: LoggingLevel,
        logger: Option<&str>,
        data: Value,
    ) -> Result<bool> {
        let wanted = lock(&self.client).log_level;
        if wanted.is_none_or(|min| level < min) {
            return Ok(false);
        }
        let mut params = LoggingMessageNotificationParams::new(level, data);
        params.logger = logger.map(str::to_owned);
        self.peer().send_notification::<LoggingMessage>(params).await?;
        Ok(true)
    }
}
