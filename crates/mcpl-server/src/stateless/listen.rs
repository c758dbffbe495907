//! `subscriptions/listen`: a long-lived request that carries the notifications its client opted
//! into, each tagged with the subscription (the request's id), until the client cancels it or
//! the transport ends.
//!
//! On Streamable HTTP the request's SSE stream carries them; on a connection (stdio,
//! WebSocket) they go on the connection, interleaved with other traffic, and the request stays
//! in flight.

use std::collections::{HashSet, VecDeque};

use mcpl_core::jsonrpc::{ErrorObject, Notification, RequestId};
use mcpl_core::types::{SubscriptionFilter, meta_keys, names};
use serde::Deserialize as _;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::events::ServerEvent;
use crate::server::Server;

/// An open subscription: what it honours, and the server's changes to filter.
#[derive(Debug)]
pub(crate) struct Listen {
    /// The subscription's id: the `subscriptions/listen` request's, as JSON.
    subscription: Value,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: HashSet<String>,
    /// The honoured filter, as the acknowledgement says it.
    honoured: Map<String, Value>,
    changes: broadcast::Receiver<ServerEvent>,
    /// Notifications owed after the subscription fell behind the server's changes.
    owed: VecDeque<ServerEvent>,
}

impl Listen {
    /// Opens the subscription of request `id` with `params`: its `notifications`, an object of
    /// the filter's members only (a member this server does not know is refused, so that a
    /// typo is not read as "nothing wanted"), each of its type; resource URIs within the
    /// server's cap. The server's changes are followed from here on.
    ///
    /// # Errors
    ///
    /// `-32602` for a filter that does not read as described.
    pub(crate) fn open(
        server: &Server,
        id: &RequestId,
        params: Option<&Value>,
    ) -> Result<Listen, ErrorObject> {
        let notifications = params.and_then(|p| p.get("notifications"));
        let Some(notifications) = notifications.filter(|n| n.is_object()) else {
            return Err(ErrorObject::invalid_params("notifications must be an object"));
        };
        let filter = SubscriptionFilter::deserialize(notifications)
            .map_err(|e| ErrorObject::invalid_params(format_args!("notifications: {e}")))?;
        if let Some(unknown) = filter.extra.keys().next() {
            return Err(ErrorObject::invalid_params(format_args!(
                "notifications: unknown member {unknown:?}"
            )));
        }
        let max = server.max_uri_length();
        if filter.resource_subscriptions.iter().flatten().any(|uri| uri.len() > max) {
            return Err(crate::resource::uri_too_long(max));
        }
        let tools = filter.tools_list_changed.unwrap_or(false);
        let prompts = filter.prompts_list_changed.unwrap_or(false);
        let resources = filter.resources_list_changed.unwrap_or(false);
        let uris: Vec<String> = filter.resource_subscriptions.unwrap_or_default();
        let mut honoured = Map::new();
        for (wanted, key) in [
            (tools, "toolsListChanged"),
            (prompts, "promptsListChanged"),
            (resources, "resourcesListChanged"),
        ] {
            if wanted {
                honoured.insert(key.into(), json!(true));
            }
        }
        if !uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        Ok(Listen {
            subscription: serde_json::to_value(id).unwrap_or_default(),
            tools,
            prompts,
            resources,
            uris: uris.into_iter().collect(),
            honoured,
            changes: server.subscribe_changes(),
            owed: VecDeque::new(),
        })
    }

    /// The first notification of the subscription: what it honours.
    pub(crate) fn acknowledgement(&self) -> Notification {
        let params = Map::from_iter([("notifications".to_owned(), json!(self.honoured))]);
        self.tagged(names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED, params)
    }

    /// The next notification the subscription carries; `None` once the server's changes end.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub(crate) async fn next(&mut self) -> Option<Notification> {
        loop {
            let event = match self.owed.pop_front() {
                Some(event) => event,
                None => match self.changes.recv().await {
                    Ok(event) => event,
                    Err(RecvError::Lagged(missed)) => {
                        // Resource updates are lost; the lists may have changed, so say so.
                        tracing::debug!(missed, "a subscription fell behind on server events");
                        self.owed.extend([
                            ServerEvent::ToolsListChanged,
                            ServerEvent::PromptsListChanged,
                            ServerEvent::ResourcesListChanged,
                        ]);
                        continue;
                    }
                    Err(RecvError::Closed) => return None,
                },
            };
            if !self.wants(&event) {
                continue;
            }
            let params = event.params().and_then(|p| p.as_object().cloned()).unwrap_or_default();
            return Some(self.tagged(event.method(), params));
        }
    }

    /// The result that ends the subscription gracefully (undecorated).
    pub(crate) fn ended(&self) -> Value {
        json!({ "_meta": { meta_keys::SUBSCRIPTION_ID: self.subscription } })
    }

    fn wants(&self, event: &ServerEvent) -> bool {
        match event {
            ServerEvent::ToolsListChanged => self.tools,
            ServerEvent::PromptsListChanged => self.prompts,
            ServerEvent::ResourcesListChanged => self.resources,
            ServerEvent::ResourceUpdated { uri } => self.uris.contains(uri),
        }
    }

    /// A notification of `method` with `params`, tagged with the subscription in its `_meta`.
    fn tagged(&self, method: &str, mut params: Map<String, Value>) -> Notification {
        params.insert("_meta".into(), json!({ meta_keys::SUBSCRIPTION_ID: self.subscription }));
        Notification::new(method, Some(Value::Object(params)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn only_what_was_asked_for_tagged_with_the_subscription() {
        let server = Server::builder("s", "1").build();
        let params = json!({"notifications": {"toolsListChanged": true,
            "resourceSubscriptions": ["a://x"]}});
        let mut listen = Listen::open(&server, &RequestId::from("l"), Some(&params)).unwrap();
        let ack = listen.acknowledgement();
        assert_eq!(ack.method, names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED);
        assert_eq!(
            ack.params.unwrap(),
            json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["a://x"]},
                "_meta": {meta_keys::SUBSCRIPTION_ID: "l"}})
        );
        server.notify_resource_updated("a://other");
        server.notify_change(ServerEvent::PromptsListChanged);
        server.notify_resource_updated("a://x");
        let next = listen.next().await.unwrap();
        assert_eq!(next.method, "notifications/resources/updated");
        assert_eq!(
            next.params.unwrap(),
            json!({"uri": "a://x", "_meta": {meta_keys::SUBSCRIPTION_ID: "l"}})
        );
        assert_eq!(listen.ended(), json!({"_meta": {meta_keys::SUBSCRIPTION_ID: "l"}}));
    }

    #[test]
    fn a_filter_that_does_not_read_is_refused() {
        let server = Server::builder("s", "1").build();
        let id = RequestId::from(1);
        for params in [
            json!({}),
            json!({"notifications": []}),
            json!({"notifications": {"toolsListChanged": "yes"}}),
            json!({"notifications": {"toolListChanged": true}}),
        ] {
            let error = Listen::open(&server, &id, Some(&params)).unwrap_err();
            assert_eq!(error.code, mcpl_core::jsonrpc::ErrorCode::INVALID_PARAMS, "{params}");
        }
    }
}
