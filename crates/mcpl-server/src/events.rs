//! [`ServerEvent`]: what changed on a running server, for every live session to pass on.
//!
//! A [`Server`](crate::Server) publishes one event per change (a tool added, a resource
//! updated...). Each session subscribes with [`Server::subscribe_changes`](crate::Server::subscribe_changes)
//! and forwards the events as notifications to its client until it closes.

use mcpl_core::Peer;
use mcpl_core::types::names;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::context::{SharedClientState, lock};

/// How many events may wait for a slow session before it misses some.
pub(crate) const EVENT_BUFFER: usize = 256;

/// A change on a running server that sessions tell their clients about.
///
/// # Examples
///
/// ```
/// use mcpl_server::{Server, ServerEvent};
///
/// let server = Server::builder("s", "1").build();
/// let mut events = server.subscribe_changes();
/// server.notify_resource_updated("mem://x");
/// match events.try_recv().unwrap() {
///     ServerEvent::ResourceUpdated { uri } => assert_eq!(uri, "mem://x"),
///     other => panic!("unexpected {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The list of tools changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The list of resources or resource templates changed
    /// (`notifications/resources/list_changed`).
    ResourcesListChanged,
    /// The list of prompts changed (`notifications/prompts/list_changed`).
    PromptsListChanged,
    /// The resource at `uri` changed (`notifications/resources/updated`); only sessions
    /// subscribed to `uri` are told.
    ResourceUpdated {
        /// The URI of the resource that changed.
        uri: String,
    },
}

impl ServerEvent {
    /// The method of the notification that announces this event.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::ServerEvent;
    ///
    /// assert_eq!(ServerEvent::ToolsListChanged.method(), "notifications/tools/list_changed");
    /// ```
    pub fn method(&self) -> &'static str {
        match self {
            ServerEvent::ToolsListChanged => names::NOTIFICATIONS_TOOLS_LIST_CHANGED,
            ServerEvent::ResourcesListChanged => names::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
            ServerEvent::PromptsListChanged => names::NOTIFICATIONS_PROMPTS_LIST_CHANGED,
            ServerEvent::ResourceUpdated { .. } => names::NOTIFICATIONS_RESOURCES_UPDATED,
        }
    }

    /// The params of the notification that announces this event.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::ServerEvent;
    ///
    /// let event = ServerEvent::ResourceUpdated { uri: "mem://x".into() };
    /// assert_eq!(event.params(), Some(serde_json::json!({"uri": "mem://x"})));
    /// assert_eq!(ServerEvent::PromptsListChanged.params(), None);
    /// ```
    pub fn params(&self) -> Option<Value> {
        match self {
            ServerEvent::ResourceUpdated { uri } => Some(json!({ "uri": uri })),
            _ => None,
        }
    }

    /// The URI of the resource this event is about, for [`ServerEvent::ResourceUpdated`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::ServerEvent;
    ///
    /// assert_eq!(ServerEvent::ResourceUpdated { uri: "mem://x".into() }.resource_uri(), Some("mem://x"));
    /// assert_eq!(ServerEvent::ToolsListChanged.resource_uri(), None);
    /// ```
    pub fn resource_uri(&self) -> Option<&str> {
        match self {
            ServerEvent::ResourceUpdated { uri } => Some(uri),
            _ => None,
        }
    }
}

/// Whether a session whose client state is `client` should be told about `event`: list
/// changes go to everyone, resource updates only to subscribers of that resource.
pub(crate) fn wanted(client: &crate::context::ClientCell, event: &ServerEvent) -> bool {
    match event.resource_uri() {
        Some(uri) => lock(client).subscriptions.contains(uri),
        None => true,
    }
}

/// Forwards server events to `peer` as notifications until the connection closes or the
/// server goes away. Events that arrive while `ready()` is false are dropped.
pub(crate) async fn forward(
    mut events: broadcast::Receiver<ServerEvent>,
    peer: Peer,
    client: SharedClientState,
    ready: impl Fn() -> bool + Send,
) {
    loop {
        let event = tokio::select! {
            () = peer.closed() => return,
            event = events.recv() => event,
        };
        let batch = match event {
            Ok(event) => vec![event],
            Err(broadcast::error::RecvError::Closed) => return,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                // Resource updates are lost; the lists may have changed, so say so.
                tracing::warn!(missed, "session fell behind on server events");
                vec![
                    ServerEvent::ToolsListChanged,
                    ServerEvent::ResourcesListChanged,
                    ServerEvent::PromptsListChanged,
                ]
            }
        };
        if !ready() {
            continue;
        }
        for event in batch {
            if wanted(&client, &event) && peer.notify(event.method(), event.params()).await.is_err()
            {
                return;
            }
        }
    }
}
