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
//! let client = Client::builder("my-app", "1.0.0")
//!     .on_tools_list_changed(|| async { println!("tools changed") })
//!     .build();
//! client.connect(HttpTransport::new("http://127.0.0.1:3000/mcp")).await?;
//! let filter = SubscriptionFilter::default().with_tools_list_changed(true);
//! let mut listen = client.listen(filter).await?;
//! while let Some(notification) = listen.next().await {
//!     println!("{}", notification.method());
//! }
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use mcpl_core::engine::{BoxFuture, Engine, NotificationContext};
use mcpl_core::types::{LoggingMessageNotificationParams, ServerNotification, meta_keys, names};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::cache::ResponseCache;
use crate::link::Link;

/// How long a listen request may stay open.
pub(crate) const LISTEN_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// How many notifications a [`Subscription`] holds for its reader, unless configured
/// ([`ClientBuilder::with_subscription_capacity`](crate::ClientBuilder::with_subscription_capacity)); more are dropped (and counted, see
/// [`Subscription::dropped`]) until the reader catches up.
///
/// # Examples
///
/// ```
/// use mcpl_client::notify::DEFAULT_SUBSCRIPTION_CAPACITY;
///
/// assert_eq!(DEFAULT_SUBSCRIPTION_CAPACITY, 256);
/// ```
pub const DEFAULT_SUBSCRIPTION_CAPACITY: usize = 256;

pub(crate) type Callback<T> = Arc<dyn Fn(T) -> BoxFuture<'static, ()> + Send + Sync>;

/// The notification handlers and open subscriptions of a client (shared by its clones).
#[derive(Clone)]
pub(crate) struct Notify {
    inner: Arc<Inner>,
}

struct Inner {
    link: Arc<Mutex<Link>>,
    cache: Option<ResponseCache>,
    callbacks: Callbacks,
    subscriptions: Mutex<Vec<Slot>>,
    next_slot: Mutex<u64>,
    capacity: usize,
}

/// The notification handlers of a client, set on its builder.
#[derive(Clone, Default)]
pub(crate) struct Callbacks {
    pub(crate) tools: Option<Callback<()>>,
    pub(crate) prompts: Option<Callback<()>>,
    pub(crate) resources: Option<Callback<()>>,
    pub(crate) updated: Option<Callback<String>>,
    pub(crate) log: Option<Callback<LoggingMessageNotificationParams>>,
}

/// One open subscription: the notifications tagged with its id go to `tx`.
struct Slot {
    key: u64,
    /// The subscription id, learnt from the first acknowledgement it claims.
    id: Option<Value>,
    tx: mpsc::Sender<ServerNotification>,
    /// How many notifications were dropped because the reader fell behind.
    dropped: Arc<AtomicU64>,
    /// Whether the last notification was dropped (one diagnostic per burst).
    dropping: bool,
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let open = self.inner.subscriptions.lock().map(|s| s.len()).unwrap_or_default();
        f.debug_struct("Notify").field("subscriptions", &open).finish_non_exhaustive()
    }
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
    pub(crate) fn new(
        link: Arc<Mutex<Link>>,
        callbacks: Callbacks,
        capacity: usize,
        cache: Option<ResponseCache>,
    ) -> Notify {
        Notify {
            inner: Arc::new(Inner {
                link,
                cache,
                callbacks,
                subscriptions: Mutex::default(),
                next_slot: Mutex::default(),
                capacity: capacity.max(1),
            }),
        }
    }

    /// The handlers and the subscription capacity this was built with.
    pub(crate) fn config(&self) -> (Callbacks, usize) {
        (self.inner.callbacks.clone(), self.inner.capacity)
    }

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
        if let Some(cache) = &self.inner.cache {
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
                if let Some(f) = &inner.callbacks.tools {
                    f(()).await;
                }
            }
            ServerNotification::PromptListChanged(_) => {
                if let Some(f) = &inner.callbacks.prompts {
                    f(()).await;
                }
            }
            ServerNotification::ResourceListChanged(_) => {
                if let Some(f) = &inner.callbacks.resources {
                    f(()).await;
                }
            }
            ServerNotification::ResourceUpdated(p) => {
                if let Some(f) = &inner.callbacks.updated {
                    f(p.uri).await;
                }
            }
            ServerNotification::LoggingMessage(p) => {
                if let Some(f) = &inner.callbacks.log {
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
                let slot = &mut slots[i];
                match slot.tx.try_send(notification.clone()) {
                    Ok(()) => slot.dropping = false,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        slot.dropped.fetch_add(1, Ordering::Relaxed);
                        if !std::mem::replace(&mut slot.dropping, true) {
                            tracing::info!(
                                %id,
                                "a subscription's stream is not read fast enough; dropping its notifications until it is"
                            );
                        }
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {}
                }
            }
            None => tracing::debug!(%id, "notification for an unknown subscription"),
        }
    }

    pub(crate) fn open(&self) -> (u64, mpsc::Receiver<ServerNotification>, Arc<AtomicU64>) {
        let key = {
            let mut next = self.inner.next_slot.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        let capacity = self.inner.capacity;
        let (tx, rx) = mpsc::channel(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut slots = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        slots.push(Slot { key, id: None, tx, dropped: dropped.clone(), dropping: false });
        (key, rx, dropped)
    }

    pub(crate) fn close(&self, key: u64) {
        let mut slots = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|s| s.key != key);
    }
}

/// An open `subscriptions/listen` (2026-07-28): a [`Stream`] of the notifications the server
/// sends for it, starting with `notifications/subscriptions/acknowledged` (which says what the
/// server honours). The stream ends when the server ends the subscription or the connection
/// closes; dropping it cancels the subscription.
///
/// It holds at most [`DEFAULT_SUBSCRIPTION_CAPACITY`] notifications (see
/// [`ClientBuilder::with_subscription_capacity`](crate::ClientBuilder::with_subscription_capacity)) that were not read yet: a reader that falls behind
/// loses the newer ones ([`dropped`](Self::dropped) counts them), and the connection and the
/// handlers go on at their own pace.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use mcpl_client::Client;
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::types::{ServerNotification, SubscriptionFilter, Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
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
/// let server = Server::builder("tools", "1.0.0").build();
/// // A 2026-era server over Streamable HTTP, on a local port.
/// let url = serve_http(server.clone()).await?;
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(HttpTransport::new(url)).await?;
///
/// let filter = SubscriptionFilter::default().with_tools_list_changed(true);
/// let mut subscription = client.listen(filter).await?;
/// // First, what the server honours.
/// let ack = subscription.next().await;
/// assert!(matches!(ack, Some(ServerNotification::SubscriptionsAcknowledged(_))));
///
/// server.tools_mut().add(Tool::new("new", ToolSchema::object()), |_ctx, _args| async {
///     Ok(ToolOutput::text("new"))
/// })?;
/// let change = subscription.next().await;
/// assert!(matches!(change, Some(ServerNotification::ToolListChanged(_))));
/// // Dropping the stream cancels the subscription.
/// drop(subscription);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Subscription {
    pub(crate) rx: mpsc::Receiver<ServerNotification>,
    pub(crate) task: AbortHandle,
    pub(crate) dropped: Arc<AtomicU64>,
}

impl Subscription {
    /// How many notifications for this subscription were dropped because the stream was not
    /// read fast enough.
    ///
    /// # Examples
    ///
    /// ```
    /// use futures::StreamExt;
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::types::SubscriptionFilter;
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
    /// let url = serve_http(mcpl_server::Server::builder("tools", "1.0.0").build()).await?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url)).await?;
    /// let filter = SubscriptionFilter::default().with_tools_list_changed(true);
    /// let mut subscription = client.listen(filter).await?;
    /// subscription.next().await; // the acknowledgement
    /// // Read as fast as the server sends: nothing lost.
    /// assert_eq!(subscription.dropped(), 0);
    /// # Ok(()) }
    /// ```
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
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

pub(crate) fn callback<T, F, Fut>(f: F) -> Callback<T>
where
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |t| Box::pin(f(t)))
}
