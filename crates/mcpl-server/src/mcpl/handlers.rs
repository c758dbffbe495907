//! [`Mcpl`]: the manifest and the handlers of the host-to-server methods a server serves.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcpl_core::engine::HandlerResult;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::channels::{
    AcknowledgeParams, AcknowledgeResult, CloseChannelParams, CloseChannelResult,
    ListChannelsParams, ListChannelsResult, OpenChannelParams, OpenChannelResult,
    OutgoingChunkParams, OutgoingCompleteParams, PublishParams, PublishResult, TypingParams,
};
use mcpl_core::mcpl::hooks::{BeforeInferenceParams, BeforeInferenceResult, LifecycleParams};
use mcpl_core::mcpl::manifest::Manifest;
use mcpl_core::mcpl::methods::names;
use mcpl_core::mcpl::state::{RollbackParams, RollbackResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::connection::McplConnection;
use super::lifecycle;
use crate::codec::{decode, encode};

pub(crate) type RequestFn =
    Arc<dyn Fn(McplConnection, Option<Value>) -> BoxFuture<'static, HandlerResult> + Send + Sync>;
pub(crate) type NotificationFn =
    Arc<dyn Fn(McplConnection, Option<Value>) -> BoxFuture<'static, ()> + Send + Sync>;
pub(crate) type ReadyFn = Arc<dyn Fn(McplConnection) -> BoxFuture<'static, ()> + Send + Sync>;

/// MCPL for a server: its manifest and the handlers of the host-to-server methods it serves.
/// Give it to [`ServerBuilder::mcpl`](crate::ServerBuilder::mcpl).
///
/// The SDK itself answers `featureSets/update` (the policy and its receipt) and `mcpl/manifest`
/// (the current manifest). Every other host-to-server method is served by the handler set here,
/// and only while the host granted the capability it needs (else `-32002` with
/// `data.capability`); a method without a handler is `-32601`. `state/rollback` is served for
/// feature sets that declare `rollback: true`.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::hooks::{BeforeInferenceResult, ContextInjection, Position};
/// use mcpl_core::mcpl::content::TextOrBlocks;
/// use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
/// use mcpl_server::mcpl::Mcpl;
/// use mcpl_server::Server;
///
/// let manifest = Manifest::new()
///     .with_context_hooks(Capability::Flag(true))
///     .with_feature_set("notes.context", FeatureSet::new(
///         "Notes in context",
///         ["contextHooks.beforeInference.inject.afterUser"],
///     ));
/// let mcpl = Mcpl::new(manifest).on_before_inference(|_conn, params| async move {
///     let note = format!("turn {} of {}", params.turn_index, params.conversation_id);
///     Ok(BeforeInferenceResult::new("notes.context")
///         .with_context_injections(vec![ContextInjection::new(
///             "notes",
///             Position::AfterUser,
///             TextOrBlocks::Text(note),
///         )]))
/// });
/// let server = Server::builder("notes", "1").mcpl(mcpl).build();
/// # drop(server);
/// ```
#[must_use]
pub struct Mcpl {
    pub(crate) manifest: Manifest,
    pub(crate) requests: HashMap<&'static str, RequestFn>,
    pub(crate) notifications: HashMap<&'static str, NotificationFn>,
    pub(crate) on_ready: Option<ReadyFn>,
    pub(crate) lifecycle: lifecycle::Limits,
}

impl fmt::Debug for Mcpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut requests: Vec<_> = self.requests.keys().collect();
        requests.sort();
        let mut notifications: Vec<_> = self.notifications.keys().collect();
        notifications.sort();
        f.debug_struct("Mcpl")
            .field("manifest", &self.manifest)
            .field("requests", &requests)
            .field("notifications", &notifications)
            .field("on_ready", &self.on_ready.is_some())
            .field("lifecycle", &self.lifecycle)
            .finish()
    }
}

fn request_fn<P, R, F, Fut>(handler: F) -> RequestFn
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    F: Fn(McplConnection, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
{
    let handler = Arc::new(handler);
    Arc::new(move |conn, params| {
        let handler = handler.clone();
        Box::pin(async move {
            let params: P = decode(params)?;
            encode(handler(conn, params).await?)
        })
    })
}

fn notification_fn<P, F, Fut>(method: &'static str, handler: F) -> NotificationFn
where
    P: DeserializeOwned + Send + 'static,
    F: Fn(McplConnection, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let handler = Arc::new(handler);
    Arc::new(move |conn, params| {
        let handler = handler.clone();
        Box::pin(async move {
            match decode::<P>(params) {
                Ok(params) => handler(conn, params).await,
                Err(e) => {
                    tracing::debug!(method, error = %e.message, "malformed MCPL notification dropped")
                }
            }
        })
    })
}

impl Mcpl {
    /// MCPL with `manifest` (any `revision` in it is replaced by the computed one) and no
    /// handlers yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// let manifest = Manifest::new()
    ///     .with_push_events(true)
    ///     .with_feature_set("alerts", FeatureSet::new("Alerts", ["pushEvents"]))
    ///     .with_member("revision", json!("sha256:stale"));
    /// let server = Server::builder("alerts", "1").mcpl(Mcpl::new(manifest.clone())).build();
    /// // The SDK serves the manifest with the revision it computed.
    /// let served = server.mcpl_manifest().unwrap().revision().unwrap();
    /// assert_ne!(served.as_str(), "sha256:stale");
    /// assert_eq!(served, manifest.compute_revision().unwrap());
    /// ```
    pub fn new(manifest: Manifest) -> Self {
        Mcpl {
            manifest,
            requests: HashMap::new(),
            notifications: HashMap::new(),
            on_ready: None,
            lifecycle: lifecycle::Limits::default(),
        }
    }

    fn request<P, R, F, Fut>(mut self, method: &'static str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(McplConnection, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
    {
        self.requests.insert(method, request_fn(handler));
        self
    }

    fn notification<P, F, Fut>(mut self, method: &'static str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(McplConnection, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notifications.insert(method, notification_fn(method, handler));
        self
    }

    /// Runs `f` on each connection once it becomes ready: after the SDK answered the host's
    /// first `featureSets/update` request (what `f` sends follows the receipt). The place to
    /// register channels, for instance.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::{ChannelDescriptor, ChannelDirection};
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let manifest = Manifest::new().with_channels(Capability::Flag(true));
    /// let mcpl = Mcpl::new(manifest).on_ready(|conn| async move {
    ///     let general = ChannelDescriptor::new(
    ///         "general",
    ///         "chat",
    ///         "#general",
    ///         ChannelDirection::Bidirectional,
    ///     );
    ///     if let Err(e) = conn.register_channels(vec![general]).await {
    ///         eprintln!("channels not registered: {e}");
    ///     }
    /// });
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let host_engine = mcpl_core::Engine::new();
    /// # let (tx, mut registered) = tokio::sync::mpsc::unbounded_channel();
    /// # host_engine.on_request("channels/register", move |_ctx, params| {
    /// #     let channels = params.unwrap_or_default()["channels"].clone();
    /// #     let _ = tx.send(channels[0]["id"].clone());
    /// #     async move { Ok(json!({"results": [{"id": channels[0]["id"], "accepted": true}]})) }
    /// # });
    /// # let (_session, host) = mcpl_test_kit::host::connect_with(&server, &host_engine).await?;
    /// // The host grants `channels.register`; once its policy is answered, the channel arrives.
    /// let grant = json!({"effectiveCapabilities": ["channels.register"]});
    /// host.request("featureSets/update", Some(grant), Default::default()).await?;
    /// assert_eq!(registered.recv().await, Some(json!("general")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn on_ready<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(McplConnection) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_ready = Some(Arc::new(move |conn| Box::pin(f(conn))));
        self
    }

    /// Serves `context/beforeInference` (needs any `contextHooks.beforeInference.*` leaf).
    ///
    /// The SDK drops each injection whose position is not granted
    /// (`contextHooks.beforeInference.inject.<position>`) when the answer leaves, and every
    /// injection if the answer names a feature set that is not enabled. `userMessage` is passed
    /// as the host sent it (`null` unless the host granted `observe`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::content::TextOrBlocks;
    /// use mcpl_core::mcpl::hooks::{BeforeInferenceResult, ContextInjection, Position};
    /// use mcpl_core::mcpl::manifest::{Capability, FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// fn inject(position: Position, text: &str) -> ContextInjection {
    ///     let content = TextOrBlocks::Text(text.into());
    ///     ContextInjection::new("notes", position, content)
    /// }
    /// let uses = ["contextHooks.beforeInference.inject.afterUser"];
    /// let manifest = Manifest::new()
    ///     .with_context_hooks(Capability::Flag(true))
    ///     .with_feature_set("notes", FeatureSet::new("Notes in context", uses));
    /// let mcpl = Mcpl::new(manifest).on_before_inference(|_conn, params| async move {
    ///     Ok(BeforeInferenceResult::new("notes")
    ///         .with_context_injections(vec![
    ///             inject(Position::AfterUser, &format!("turn {}", params.turn_index)),
    ///             inject(Position::System, "You keep notes."),
    ///         ]))
    /// });
    /// let server = Server::builder("notes", "1").mcpl(mcpl).build();
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["contextHooks.beforeInference.inject.afterUser"]).await?;
    /// // The host granted `inject.afterUser` only: the system injection is dropped.
    /// let model = json!({"id": "m-1", "vendor": "acme", "contextWindow": 8192, "capabilities": []});
    /// let params = json!({"inferenceId": "inf-1", "conversationId": "c-1", "turnIndex": 3,
    ///     "userMessage": null, "model": model});
    /// let answer = host.request("context/beforeInference", Some(params), Default::default()).await?;
    /// let injections = answer["contextInjections"].as_array().unwrap();
    /// assert_eq!(injections.len(), 1);
    /// assert_eq!(injections[0]["content"], "turn 3");
    /// # Ok(()) }
    /// ```
    pub fn on_before_inference<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, BeforeInferenceParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<BeforeInferenceResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CONTEXT_BEFORE_INFERENCE, handler)
    }

    /// Receives `inference/lifecycle` notifications (needs `inferenceLifecycle`).
    ///
    /// The SDK hands `handler` one terminal phase per inference: a second terminal for the
    /// same `inferenceId` (a retry, or a contradicting one) is dropped, as is a repeated
    /// `started` and a phase whose `inferenceId` is longer than 512 bytes. A terminal without
    /// `started` is tolerated. The ids are remembered per
    /// connection, bounded ([`lifecycle_capacity`](Self::lifecycle_capacity)); an inference
    /// whose terminal never comes stops counting as in flight after
    /// [`lifecycle_timeout`](Self::lifecycle_timeout) (see
    /// [`McplConnection::inferences_in_flight`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    /// use tokio::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (finished, mut inferences) = mpsc::unbounded_channel();
    /// let mcpl = Mcpl::new(Manifest::new().with_inference_lifecycle(true)).on_inference_lifecycle(
    ///     move |_conn, params| {
    ///         if params.phase.is_terminal() {
    ///             let _ = finished.send(params.inference_id);
    ///         }
    ///         async {}
    ///     },
    /// );
    /// let server = Server::builder("activity", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["inferenceLifecycle"]).await?;
    /// // A host granted `inferenceLifecycle` reports an inference's phases.
    /// for phase in ["started", "completed"] {
    ///     let params = json!({"inferenceId": "inf-1", "phase": phase});
    ///     host.notify("inference/lifecycle", Some(params)).await?;
    /// }
    /// assert_eq!(inferences.recv().await.as_deref(), Some("inf-1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn on_inference_lifecycle<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, LifecycleParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::INFERENCE_LIFECYCLE, handler)
    }

    /// How long an inference the host reported `started` counts as in flight without a
    /// terminal phase (the host may never send one after losing control of it). Default: 10
    /// minutes. A terminal arriving later is still handed over, once.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// // Inferences here are short: stop waiting for a terminal phase after two minutes.
    /// let mcpl = Mcpl::new(Manifest::new().with_inference_lifecycle(true))
    ///     .lifecycle_timeout(Duration::from_secs(120));
    /// # drop(mcpl);
    /// ```
    pub fn lifecycle_timeout(mut self, timeout: Duration) -> Self {
        self.lifecycle.timeout = timeout;
        self
    }

    /// How many inferences per connection the `inference/lifecycle` bookkeeping remembers:
    /// this many in flight, and this many ended (the oldest forgotten first; a terminal for an
    /// inference forgotten that long ago would be handed over again). Default: 4096; at least
    /// 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// // A host running many inferences at once.
    /// let mcpl = Mcpl::new(Manifest::new().with_inference_lifecycle(true)).lifecycle_capacity(16_384);
    /// # drop(mcpl);
    /// ```
    pub fn lifecycle_capacity(mut self, inferences: usize) -> Self {
        self.lifecycle.remembered = inferences.max(1);
        self
    }

    /// Serves `state/rollback`, for feature sets that declare `rollback: true` (others are
    /// refused with `-32602` before `handler` runs). Answer an unknown or pruned checkpoint with
    /// [`checkpoint_not_found`](mcpl_core::mcpl::errors::checkpoint_not_found) (`-32005`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::errors;
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_core::mcpl::state::RollbackResult;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut store = FeatureSet::new("Notes", ["tools"]);
    /// store.rollback = Some(true);
    /// let mcpl = Mcpl::new(Manifest::new().with_feature_set("notes", store)).on_rollback(
    ///     |_conn, params| async move {
    ///         if params.checkpoint != "cp-1" {
    ///             return Err(errors::checkpoint_not_found(&params.checkpoint));
    ///         }
    ///         Ok(RollbackResult::new(params.checkpoint, true))
    ///     },
    /// );
    /// let server = Server::builder("notes", "1").mcpl(mcpl).build();
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["tools"]).await?;
    /// // The host rolls the feature set back to a checkpoint the server knows, then to one it does not.
    /// let back = json!({"featureSet": "notes", "checkpoint": "cp-1"});
    /// let answer = host.request("state/rollback", Some(back), Default::default()).await?;
    /// assert_eq!(answer["success"], true);
    /// let unknown = json!({"featureSet": "notes", "checkpoint": "cp-9"});
    /// let e = host.request("state/rollback", Some(unknown), Default::default()).await.unwrap_err();
    /// assert_eq!(e.rpc_error().unwrap().code.0, -32005);
    /// # Ok(()) }
    /// ```
    pub fn on_rollback<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, RollbackParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RollbackResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::STATE_ROLLBACK, handler)
    }

    /// Serves `channels/open` (needs `channels.lifecycle`); fail with
    /// [`channel_open_failed`](mcpl_core::mcpl::errors::channel_open_failed) (`-32024`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::{ChannelDescriptor, ChannelDirection, OpenChannelResult};
    /// use mcpl_core::mcpl::errors;
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))).on_channel_open(
    ///     |_conn, params| async move {
    ///         let Some(room) = params.address.get("room").and_then(|r| r.as_str()) else {
    ///             return Err(errors::channel_open_failed("the address names no room"));
    ///         };
    ///         let channel = ChannelDescriptor::new(
    ///             format!("room-{room}"),
    ///             params.channel_type,
    ///             format!("#{room}"),
    ///             ChannelDirection::Bidirectional,
    ///         )
    ///             .with_address(params.address.clone());
    ///         Ok(OpenChannelResult::new(channel))
    ///     },
    /// );
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.lifecycle"]).await?;
    /// // A host granted `channels.lifecycle` opens a channel.
    /// let open = json!({"type": "chat", "address": {"room": "general"}});
    /// let answer = host.request("channels/open", Some(open), Default::default()).await?;
    /// assert_eq!(answer["channel"]["id"], "room-general");
    /// let nowhere = json!({"type": "chat", "address": {}});
    /// let e = host.request("channels/open", Some(nowhere), Default::default()).await.unwrap_err();
    /// assert_eq!(e.rpc_error().unwrap().code.0, -32024);
    /// # Ok(()) }
    /// ```
    pub fn on_channel_open<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, OpenChannelParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<OpenChannelResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_OPEN, handler)
    }

    /// Serves `channels/close` (needs `channels.lifecycle`); answer an unknown channel with
    /// [`unknown_channel`](mcpl_core::mcpl::errors::unknown_channel) (`-32023`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::CloseChannelResult;
    /// use mcpl_core::mcpl::errors;
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))).on_channel_close(
    ///     |_conn, params| async move {
    ///         if params.channel_id != "general" {
    ///             return Err(errors::unknown_channel(&params.channel_id));
    ///         }
    ///         Ok(CloseChannelResult::new(true))
    ///     },
    /// );
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.lifecycle"]).await?;
    /// // A host granted `channels.lifecycle` closes a channel, then one that does not exist.
    /// let close = json!({"channelId": "general"});
    /// let answer = host.request("channels/close", Some(close), Default::default()).await?;
    /// assert_eq!(answer, json!({"closed": true}));
    /// let unknown = json!({"channelId": "random"});
    /// let e = host.request("channels/close", Some(unknown), Default::default()).await.unwrap_err();
    /// assert_eq!(e.rpc_error().unwrap().code.0, -32023);
    /// # Ok(()) }
    /// ```
    pub fn on_channel_close<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, CloseChannelParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CloseChannelResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_CLOSE, handler)
    }

    /// Serves `channels/publish`, the request and the notification form (needs
    /// `channels.publish`); the notification form drops the result.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::PublishResult;
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    /// use tokio::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (outbox, mut delivered) = mpsc::unbounded_channel();
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))).on_channel_publish(
    ///     move |_conn, params| {
    ///         let sent = outbox.send((params.channel_id, params.content.len()));
    ///         async move {
    ///             Ok(PublishResult::new(sent.is_ok()).with_message_id("m-1"))
    ///         }
    ///     },
    /// );
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.publish"]).await?;
    /// // A host granted `channels.publish` sends the model's reply to a channel.
    /// let reply = json!({"conversationId": "c-1", "channelId": "general",
    ///     "content": [{"type": "text", "text": "Hello!"}]});
    /// let answer = host.request("channels/publish", Some(reply.clone()), Default::default()).await?;
    /// assert_eq!(answer, json!({"delivered": true, "messageId": "m-1"}));
    /// assert_eq!(delivered.recv().await, Some(("general".to_owned(), 1)));
    /// // The notification form reaches the same handler; its result is dropped.
    /// host.notify("channels/publish", Some(reply)).await?;
    /// assert_eq!(delivered.recv().await, Some(("general".to_owned(), 1)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn on_channel_publish<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(McplConnection, PublishParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PublishResult, ErrorObject>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let h = handler.clone();
        self = self.request(names::CHANNELS_PUBLISH, move |c, p| h(c, p));
        self.notification(names::CHANNELS_PUBLISH, move |c, p: PublishParams| {
            let fut = handler(c, p);
            async move {
                if let Err(e) = fut.await {
                    tracing::warn!(code = e.code.0, message = %e.message, "channels/publish notification failed");
                }
            }
        })
    }

    /// Serves `channels/list` from the host (needs `channels.register`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::{ChannelDescriptor, ChannelDirection, ListChannelsResult};
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))).on_channel_list(
    ///     |_conn, _params| async move {
    ///         let general = ChannelDescriptor::new(
    ///             "general",
    ///             "chat",
    ///             "#general",
    ///             ChannelDirection::Bidirectional,
    ///         );
    ///         Ok(ListChannelsResult::default().with_channels(vec![general]))
    ///     },
    /// );
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.register"]).await?;
    /// // A host granted `channels.register` asks which channels the server has.
    /// let answer = host.request("channels/list", Some(json!({})), Default::default()).await?;
    /// assert_eq!(answer["channels"][0]["label"], "#general");
    /// # Ok(()) }
    /// ```
    pub fn on_channel_list<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, ListChannelsParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListChannelsResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_LIST, handler)
    }

    /// Receives `channels/outgoing/chunk` notifications (needs `channels.streaming`). Advisory:
    /// deliver only what `channels/publish` brings.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    /// use tokio::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Shows a draft of the reply while it streams.
    /// let (draft, mut preview) = mpsc::unbounded_channel();
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true)))
    ///     .on_channel_outgoing_chunk(move |_conn, chunk| {
    ///         let _ = draft.send((chunk.index, chunk.delta));
    ///         async {}
    ///     });
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.streaming"]).await?;
    /// // A host granted `channels.streaming` streams a reply headed for a channel.
    /// let chunk = json!({"inferenceId": "inf-1", "conversationId": "c-1", "channelId": "general",
    ///     "index": 0, "delta": "Hel"});
    /// host.notify("channels/outgoing/chunk", Some(chunk)).await?;
    /// assert_eq!(preview.recv().await, Some((0, "Hel".to_owned())));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn on_channel_outgoing_chunk<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, OutgoingChunkParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::CHANNELS_OUTGOING_CHUNK, handler)
    }

    /// Receives `channels/outgoing/complete` notifications (needs `channels.streaming`).
    /// Advisory: deliver only what `channels/publish` brings.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    /// use tokio::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Ends the streamed draft of a reply.
    /// let (done, mut finished) = mpsc::unbounded_channel();
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true)))
    ///     .on_channel_outgoing_complete(move |_conn, complete| {
    ///         let _ = done.send((complete.channel_id, complete.content.len()));
    ///         async {}
    ///     });
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.streaming"]).await?;
    /// // A host granted `channels.streaming` finishes a streamed reply.
    /// let complete = json!({"inferenceId": "inf-1", "conversationId": "c-1", "channelId": "general",
    ///     "content": [{"type": "text", "text": "Hello!"}]});
    /// host.notify("channels/outgoing/complete", Some(complete)).await?;
    /// assert_eq!(finished.recv().await, Some(("general".to_owned(), 1)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn on_channel_outgoing_complete<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, OutgoingCompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::CHANNELS_OUTGOING_COMPLETE, handler)
    }

    /// Receives `channels/typing` notifications (needs `channels.typing`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    /// use tokio::sync::mpsc;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (typing, mut indicator) = mpsc::unbounded_channel();
    /// let mcpl = Mcpl::new(Manifest::new().with_channels(Capability::Flag(true))).on_channel_typing(
    ///     move |_conn, params| {
    ///         let _ = typing.send(params.channel_id);
    ///         async {}
    ///     },
    /// );
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # tokio::time::timeout(std::time::Duration::from_secs(30), async {
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.typing"]).await?;
    /// // A host granted `channels.typing` says the model is composing a reply.
    /// host.notify("channels/typing", Some(json!({"channelId": "general"}))).await?;
    /// assert_eq!(indicator.recv().await.as_deref(), Some("general"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).await?
    /// # }
    /// ```
    pub fn on_channel_typing<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, TypingParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::CHANNELS_TYPING, handler)
    }

    /// Serves `channels/acknowledge` (needs `channels.acknowledge`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::channels::AcknowledgeResult;
    /// use mcpl_core::mcpl::manifest::{Capability, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mcpl = Mcpl::new(
    ///     Manifest::new().with_channels(Capability::Flag(true)),
    /// ).on_channel_acknowledge(
    ///     |_conn, params| async move {
    ///         let reaction = params.value.unwrap_or_else(|| "+1".into());
    ///         Ok(AcknowledgeResult::new(params.intent == "reaction")
    ///             .with_representation(format!(":{reaction}: on {}", params.message_id)))
    ///     },
    /// );
    /// let server = Server::builder("chat", "1").mcpl(mcpl).build();
    /// # let (_session, host) = mcpl_test_kit::host::connect(&server).await?;
    /// # mcpl_test_kit::host::grant(&host, &["channels.acknowledge"]).await?;
    /// // A host granted `channels.acknowledge` reacts to a user's message.
    /// let ack = json!({"channelId": "general", "messageId": "m-7", "intent": "reaction", "value": "eyes"});
    /// let answer = host.request("channels/acknowledge", Some(ack), Default::default()).await?;
    /// assert_eq!(answer["acknowledged"], true);
    /// assert_eq!(answer["representation"], ":eyes: on m-7");
    /// # Ok(()) }
    /// ```
    pub fn on_channel_acknowledge<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, AcknowledgeParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AcknowledgeResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_ACKNOWLEDGE, handler)
    }
}
