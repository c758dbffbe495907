//! Notifications from the server: handlers for list changes, resource updates and log
//! messages, and `subscriptions/listen` (2026-07-28) as a [`Stream`].
//!
//! Handlers run for every matching notification, whichever stream carried it (the 2025 session
//! streams, stdio, or a 2026 listen stream). Progress is per request: see
//! [`RequestOptions::on_progress`](mcpl_core::engine::RequestOptions::on_progress).
//!
//! ```no_run
//! use futures::StreamExt;
//! use mcpl_client::Client;
//! use mcpl_client::transport::HttpTransport;
//! use mcpl_core::types::SubscriptionFilter;
//!
//! # async fn run() -> mcpl_core::Result<()> {
//! let client = Client::new("my-app", "1.0.0")
//!     .on_tools_list_changed(|| async { println!("tools changed") });
//! client.connect(HttpTransport::new("http://127.0.0.1:3000/mcp")).await?;
//! let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
//! let mut listen = client.listen(filter).await?;
//! while let Some(notification) = listen.next().await {
//!     println!("{}", notification.method());
//! }
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use mcpl_core::engine::{BoxFuture, Engine, NotificationContext, RequestOptions};
use mcpl_core::types::{
    LoggingMessageNotificationParams, ServerNotification, SubscriptionFilter, SubscriptionsListen,
    SubscriptionsListenRequestParams, meta_keys, names,
};
use mcpl_core::{Error, Result};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::Client;
use crate::cache::ResponseCache;
use crate::resume::Link;

/// How long a listen request may stay open.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

type Callback<T> = Arc<dyn Fn(T) -> BoxFuture<'static, ()> + Send + Sync>;

/// The notification handlers and open subscriptions of a client (shared by its clones).
#[derive(Clone)]
pub(crate) struct Notify {
    inner: Arc<Inner>,
}

struct Inner {
    /// The connection's endpoint: the response cache partition notifications invalidate.
    link: Arc<Mutex<Link>>,
    /// The response cache the invalidating notifications keep current, if one is set.
    cache: RwLock<Option<ResponseCache>>,
    tools: RwLock<Option<Callback<()>>>,
    prompts: RwLock<Option<Callback<()>>>,
    resources: RwLock<Option<Callback<()>>>,
    updated: RwLock<Option<Callback<String>>>,
    log: RwLock<Option<Callback<LoggingMessageNotificationParams>>>,
    subscriptions: Mutex<Vec<Slot>>,
    next_slot: Mutex<u64>,
}

/// One open subscription: the notifications tagged with its id go to `tx`.
struct Slot {
    key: u64,
    /// The subscription id, learnt from the first acknowledgement it claims.
    id: Option<Value>,
    tx: mpsc::UnboundedSender<ServerNotification>,
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.inner.subscriptions.lock().map(|s| s.len()).unwrap_or_default();
        f.debug_struct("Notify").field("subscriptions", &open).finish_non_exhaustive()
    }
}

fn get<T: Clone>(l: &RwLock<Option<T>>) -> Option<T> {
    l.read().unwrap_or_else(PoisonError::into_inner).clone()
}

fn set<T>(l: &RwLock<Option<T>>, value: T) {
    *l.write().unwrap_or_else(PoisonError::into_inner) = Some(value);
}

const METHODS: [&str; 6] = [
    names::NOTIFICATIONS_TOOLS_LIST_CHANGED,
    names::NOTIFICATIONS_PROMPTS_LIST_CHANGED,
    names::NOTIFICATIONS_RESOURCES_LIST_CHANGED,
    names::NOTIFICATIONS_RESOURCES_UPDATED,
    names::NOTIFICATIONS_MESSAGE,
    names::NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED,
];

impl Notify {
    /// Handlers and subscriptions for the connection `link` describes.
    pub(crate) fn new(link: Arc<Mutex<Link>>) -> Notify {
        Notify {
            inner: Arc::new(Inner {
                link,
                cache: RwLock::default(),
                tools: RwLock::default(),
                prompts: RwLock::default(),
                resources: RwLock::default(),
                updated: RwLock::default(),
                log: RwLock::default(),
                subscriptions: Mutex::default(),
                next_slot: Mutex::default(),
            }),
        }
    }

    /// Keeps `cache` current: from now on every invalidating notification drops what it
    /// makes out of date, before any handler runs.
    pub(crate) fn invalidate(&self, cache: ResponseCache) {
        set(&self.inner.cache, cache);
    }

    /// Registers the dispatcher for every server notification the client handles.
    pub(crate) fn install(&self, engine: &Engine) {
        for method in METHODS {
            let notify = self.clone();
            engine.on_notification(method, move |_ctx: NotificationContext, params| {
                let notify = notify.clone();
                async move { notify.dispatch(method, params).await }
            });
        }
    }

    /// Handles one server notification, whichever stream carried it (a 2025 session stream,
    /// stdio, a 2026 `subscriptions/listen` stream): first the response cache drops what it
    /// makes out of date (so a handler that lists again sees the change), then the
    /// subscription it is tagged for and the registered handler get it.
    async fn dispatch(&self, method: &str, params: Option<Value>) {
        if let Some(cache) = get(&self.inner.cache) {
            let server =
                self.inner.link.lock().unwrap_or_else(PoisonError::into_inner).endpoint.clone();
            if let Some(server) = server {
                cache.notified(&server, method, params.as_ref()).await;
            }
        }
        let notification = match ServerNotification::from_parts(method, params.clone()) {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(method, error = %e.message, "undecodable notification dropped");
                return;
            }
        };
        let subscription = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta_keys::SUBSCRIPTION_ID))
            .cloned();
        if let Some(id) = subscription {
            self.route(&id, &notification);
        }
        let inner = &self.inner;
        match notification {
            ServerNotification::ToolListChanged(_) => {
                if let Some(f) = get(&inner.tools) {
                    f(()).await;
                }
            }
            ServerNotification::PromptListChanged(_) => {
                if let Some(f) = get(&inner.prompts) {
                    f(()).await;
                }
            }
            ServerNotification::ResourceListChanged(_) => {
                if let Some(f) = get(&inner.resources) {
                    f(()).await;
                }
            }
            ServerNotification::ResourceUpdated(p) => {
                if let Some(f) = get(&inner.updated) {
                    f(p.uri).await;
                }
            }
            ServerNotification::LoggingMessage(p) => {
                if let Some(f) = get(&inner.log) {
                    f(p).await;
                }
            }
            _ => {}
        }
    }

    /// Sends a subscription-tagged notification to its subscription. The first
    /// acknowledgement of an id is claimed by the oldest subscription without an id.
    fn route(&self, id: &Value, notification: &ServerNotification) {
        let mut slots = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|s| !s.tx.is_closed());
        let slot = match slots.iter().position(|s| s.id.as_ref() == Some(id)) {
            Some(i) => Some(i),
            None if matches!(notification, ServerNotification::SubscriptionsAcknowledged(_)) => {
                let free = slots.iter().position(|s| s.id.is_none());
                if let Some(i) = free {
                    slots[i].id = Some(id.clone());
                }
                free
            }
            None => None,
        };
        match slot {
            Some(i) => {
                let _ = slots[i].tx.send(notification.clone());
            }
            None => tracing::debug!(%id, "notification for an unknown subscription"),
        }
    }

    fn open(&self) -> (u64, mpsc::UnboundedReceiver<ServerNotification>) {
        let key = {
            let mut next = self.inner.next_slot.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let mut slots = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        slots.push(Slot { key, id: None, tx });
        (key, rx)
    }

    fn close(&self, key: u64) {
        let mut slots = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|s| s.key != key);
    }
}

/// An open `subscriptions/listen` (2026-07-28): a [`Stream`] of the notifications the server
/// sends for it, starting with `notifications/subscriptions/acknowledged` (which says what the
/// server honours). The stream ends when the server ends the subscription or the connection
/// closes; dropping it cancels the subscription.
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::UnboundedReceiver<ServerNotification>,
    task: AbortHandle,
}

impl Stream for Subscription {
    type Item = ServerNotification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn callback<T, F, Fut>(f: F) -> Callback<T>
where
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |t| Box::pin(f(t)))
}

impl Client {
    /// Calls `handler` on `notifications/tools/list_changed`.
    pub fn on_tools_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.tools, callback(move |()| handler()));
        self
    }

    /// Calls `handler` on `notifications/prompts/list_changed`.
    pub fn on_prompts_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.prompts, callback(move |()| handler()));
        self
    }

    /// Calls `handler` on `notifications/resources/list_changed`.
    pub fn on_resources_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.resources, callback(move |()| handler()));
        self
    }

    /// Calls `handler` with the URI of each `notifications/resources/updated`.
    pub fn on_resource_updated<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.updated, callback(handler));
        self
    }

    /// Calls `handler` with each log message (`notifications/message`).
    pub fn on_log_message<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(LoggingMessageNotificationParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.log, callback(handler));
        self
    }

    /// Opens `subscriptions/listen` (2026-07-28) for the notifications in `filter`.
    ///
    /// Registered handlers still run for the notifications the subscription receives.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`; `CapabilityNotSupported` on a 2025-era connection (which has no
    /// `subscriptions/listen`: list changes arrive on the session and reach the handlers).
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription> {
        let peer = self.peer()?;
        if !self.server().is_some_and(|s| s.is_stateless()) {
            return Err(Error::CapabilityNotSupported {
                capability: "subscriptions/listen (2026-07-28 only)".into(),
            });
        }
        let (key, rx) = self.notify.open();
        let params = SubscriptionsListenRequestParams {
            meta: None,
            notifications: filter,
            extra: Default::default(),
        };
        let options = self.with_request_meta(RequestOptions::new().timeout(LISTEN_TIMEOUT));
        let notify = self.notify.clone();
        let task = tokio::spawn(async move {
            match peer.send::<SubscriptionsListen>(params, options).await {
                Ok(_) => tracing::debug!("the server ended the subscription"),
                Err(e) => tracing::debug!(error = %e, "subscription ended"),
            }
            notify.close(key);
        });
        Ok(Subscription { rx, task: task.abort_handle() })
    }
}
