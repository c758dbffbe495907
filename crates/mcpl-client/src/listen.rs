//! The client's side of notifications: `subscriptions/listen` streams and the deprecated
//! notification handler setters (see [`crate::notify`]).

use std::future::Future;

use mcpl_core::engine::RequestOptions;
use mcpl_core::types::{
    LoggingMessageNotificationParams, SubscriptionFilter, SubscriptionsListen,
    SubscriptionsListenRequestParams,
};
use mcpl_core::{Error, Result};

use crate::Client;
use crate::notify::{LISTEN_TIMEOUT, Subscription};

impl Client {
    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_tools_list_changed`](crate::ClientBuilder::on_tools_list_changed). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_tools_list_changed(..)` then `build()`"
    )]
    pub fn on_tools_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.to_builder().on_tools_list_changed(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_prompts_list_changed`](crate::ClientBuilder::on_prompts_list_changed). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_prompts_list_changed(..)` then `build()`"
    )]
    pub fn on_prompts_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.to_builder().on_prompts_list_changed(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_resources_list_changed`](crate::ClientBuilder::on_resources_list_changed). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_resources_list_changed(..)` then `build()`"
    )]
    pub fn on_resources_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.to_builder().on_resources_list_changed(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_resource_updated`](crate::ClientBuilder::on_resource_updated). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_resource_updated(..)` then `build()`"
    )]
    pub fn on_resource_updated<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.to_builder().on_resource_updated(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::on_log_message`](crate::ClientBuilder::on_log_message). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).on_log_message(..)` then `build()`"
    )]
    pub fn on_log_message<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(LoggingMessageNotificationParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.to_builder().on_log_message(handler).build()
    }

    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::with_subscription_capacity`](crate::ClientBuilder::with_subscription_capacity). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).with_subscription_capacity(..)` then `build()`"
    )]
    pub fn with_subscription_capacity(self, capacity: usize) -> Client {
        self.to_builder().with_subscription_capacity(capacity).build()
    }

    /// Opens `subscriptions/listen` (2026-07-28) for the notifications in `filter`.
    ///
    /// Registered handlers still run for the notifications the subscription receives.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`; `CapabilityNotSupported` on a 2025-era connection (which has no
    /// `subscriptions/listen`: list changes arrive on the session and reach the handlers).
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::types::{Resource, ServerNotification, SubscriptionFilter};
    /// use mcpl_core::{ErrorKind, ProtocolVersion};
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    /// # async fn serve_http(server: mcpl_server::Server) -> std::io::Result<String> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok(url)
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(Resource::new("file:///status.json", "status"), |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "{}")])
    ///     })
    ///     .build();
    /// let url = serve_http(server.clone()).await?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url.clone())).await?;
    ///
    /// // Updates of one resource, in the 2026 era.
    /// let filter = SubscriptionFilter::default()
    ///     .with_resource_subscriptions(vec!["file:///status.json".into()]);
    /// let mut updates = client.listen(filter).await?;
    /// assert!(matches!(updates.next().await, Some(ServerNotification::SubscriptionsAcknowledged(_))));
    /// server.notify_resource_updated("file:///status.json");
    /// assert!(matches!(updates.next().await, Some(ServerNotification::ResourceUpdated(_))));
    ///
    /// // A 2025-era connection has no `subscriptions/listen`.
    /// let stateful = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// stateful.connect(HttpTransport::new(url)).await?;
    /// let err = stateful.listen(SubscriptionFilter::default()).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::CapabilityNotSupported);
    /// # Ok(()) }
    /// ```
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription> {
        let peer = self.peer()?;
        if !self.server().is_some_and(|s| s.is_stateless()) {
            return Err(Error::CapabilityNotSupported {
                capability: "subscriptions/listen (2026-07-28 only)".into(),
            });
        }
        let (key, rx, dropped) = self.notify.open();
        let params = SubscriptionsListenRequestParams::default().with_notifications(filter);
        let options = self.with_request_meta(RequestOptions::new().timeout(LISTEN_TIMEOUT));
        let notify = self.notify.clone();
        let task = tokio::spawn(async move {
            match peer.send::<SubscriptionsListen>(params, options).await {
                Ok(_) => tracing::debug!("the server ended the subscription"),
                Err(e) => tracing::debug!(error = %e, "subscription ended"),
            }
            notify.close(key);
        });
        Ok(Subscription { rx, task: task.abort_handle(), dropped })
    }
}
