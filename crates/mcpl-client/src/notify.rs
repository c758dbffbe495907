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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// How many notifications a [`Subscription`] holds for its reader, unless configured
/// ([`Client::with_subscription_capacity`]); more are dropped (and counted, see
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
    /// How many notifications a subscription holds for its reader.
    capacity: AtomicUsize,
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
                capacity: AtomicUsize::new(DEFAULT_SUBSCRIPTION_CAPACITY),
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

    fn open(&self) -> (u64, mpsc::Receiver<ServerNotification>, Arc<AtomicU64>) {
        let key = {
            let mut next = self.inner.next_slot.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        let capacity = self.inner.capacity.load(Ordering::Relaxed).max(1);
        let (tx, rx) = mpsc::channel(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut slots = self.inner.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
        slots.push(Slot { key, id: None, tx, dropped: dropped.clone(), dropping: false });
        (key, rx, dropped)
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
///
/// It holds at most [`DEFAULT_SUBSCRIPTION_CAPACITY`] notifications (see
/// [`Client::with_subscription_capacity`]) that were not read yet: a reader that falls behind
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
/// let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
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
    rx: mpsc::Receiver<ServerNotification>,
    task: AbortHandle,
    dropped: Arc<AtomicU64>,
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
    /// let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
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

fn callback<T, F, Fut>(f: F) -> Callback<T>
where
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |t| Box::pin(f(t)))
}

impl Client {
    /// Calls `handler` on `notifications/tools/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("tools", "1.0.0")
    ///     .tool(Tool::new("first", ToolSchema::object()), |_ctx, _args| async {
    ///         Ok(ToolOutput::text("first"))
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_tools_list_changed(move || {
    ///         let tx = tx.clone();
    ///         async move { tx.send(()).ok(); }
    ///     });
    /// client.connect(transport).await?;
    /// assert_eq!(client.list_tools().await?.len(), 1);
    ///
    /// server.tools_mut().add(Tool::new("second", ToolSchema::object()), |_ctx, _args| async {
    ///     Ok(ToolOutput::text("second"))
    /// })?;
    /// changed.recv().await;
    /// // Time to list again.
    /// assert_eq!(client.list_tools().await?.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn on_tools_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.tools, callback(move |()| handler()));
        self
    }

    /// Calls `handler` on `notifications/prompts/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("prompts", "1.0.0")
    ///     .prompt(Prompt::new("first"), |_ctx, _args| async { Ok(PromptOutput::user_text("1")) })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_prompts_list_changed(move || {
    ///         let tx = tx.clone();
    ///         async move { tx.send(()).ok(); }
    ///     });
    /// client.connect(transport).await?;
    ///
    /// server.prompts_mut().add(Prompt::new("second"), |_ctx, _args| async {
    ///     Ok(PromptOutput::user_text("2"))
    /// })?;
    /// changed.recv().await;
    /// assert_eq!(client.list_prompts().await?.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn on_prompts_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.prompts, callback(move |()| handler()));
        self
    }

    /// Calls `handler` on `notifications/resources/list_changed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(Resource::new("file:///a.txt", "a"), |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "a")])
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut changed) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_resources_list_changed(move || {
    ///         let tx = tx.clone();
    ///         async move { tx.send(()).ok(); }
    ///     });
    /// client.connect(transport).await?;
    ///
    /// assert!(server.resources_mut().remove("file:///a.txt"));
    /// changed.recv().await;
    /// assert!(client.list_resources().await?.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn on_resources_list_changed<F, Fut>(self, handler: F) -> Client
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.resources, callback(move |()| handler()));
        self
    }

    /// Calls `handler` with the URI of each `notifications/resources/updated`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(Resource::new("file:///status.json", "status"), |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "{}")])
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut updated) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_resource_updated(move |uri| {
    ///         let tx = tx.clone();
    ///         async move { tx.send(uri).ok(); }
    ///     });
    /// client.connect(transport).await?;
    /// client.subscribe_resource("file:///status.json").await?;
    ///
    /// server.notify_resource_updated("file:///status.json");
    /// let uri = updated.recv().await.unwrap_or_default();
    /// // Read it again for the new contents.
    /// let fresh = client.read_resource(&uri).await?;
    /// assert_eq!(fresh.contents[0].uri(), "file:///status.json");
    /// # Ok(()) }
    /// ```
    pub fn on_resource_updated<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.updated, callback(handler));
        self
    }

    /// Calls `handler` with each log message (`notifications/message`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_core::types::{LoggingLevel, Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("noisy", ToolSchema::object()), |ctx, _args| async move {
    ///         ctx.log(LoggingLevel::Warning, Some("noisy"), json!({"disk": "almost full"})).await.ok();
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let (tx, mut logs) = tokio::sync::mpsc::unbounded_channel();
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25))
    ///     .on_log_message(move |message| {
    ///         let tx = tx.clone();
    ///         async move { tx.send(message).ok(); }
    ///     });
    /// client.connect(transport).await?;
    /// client.set_log_level(LoggingLevel::Info).await?;
    /// client.call_tool("noisy", ()).await?;
    ///
    /// let message = logs.recv().await.expect("a log message");
    /// assert_eq!(message.level, LoggingLevel::Warning);
    /// assert_eq!(message.logger.as_deref(), Some("noisy"));
    /// assert_eq!(message.data["disk"], "almost full");
    /// # Ok(()) }
    /// ```
    pub fn on_log_message<F, Fut>(self, handler: F) -> Client
    where
        F: Fn(LoggingMessageNotificationParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        set(&self.notify.inner.log, callback(handler));
        self
    }

    /// How many notifications each [`Subscription`] holds for its reader before newer ones
    /// are dropped (see [`Subscription::dropped`]). Default: [`DEFAULT_SUBSCRIPTION_CAPACITY`]
    /// (256).
    ///
    /// ```
    /// let client = mcpl_client::Client::new("app", "1").with_subscription_capacity(4096);
    /// # drop(client);
    /// ```
    pub fn with_subscription_capacity(self, capacity: usize) -> Client {
        self.notify.inner.capacity.store(capacity.max(1), Ordering::Relaxed);
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
    /// let filter = SubscriptionFilter {
    ///     resource_subscriptions: Some(vec!["file:///status.json".into()]),
    ///     ..Default::default()
    /// };
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
        Ok(Subscription { rx, task: task.abort_handle(), dropped })
    }
}
