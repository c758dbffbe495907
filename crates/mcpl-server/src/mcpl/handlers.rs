//! [`Mcpl`]: the manifest and the handlers of the host-to-server methods a server serves.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

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
use crate::router::{decode, encode};

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
///     .with_feature_set("notes.context", FeatureSet::new("Notes in context", ["contextHooks.beforeInference.inject.afterUser"]));
/// let mcpl = Mcpl::new(manifest).on_before_inference(|_conn, params| async move {
///     let note = format!("turn {} of {}", params.turn_index, params.conversation_id);
///     Ok(BeforeInferenceResult {
///         feature_set: "notes.context".into(),
///         context_injections: vec![ContextInjection {
///             namespace: "notes".into(),
///             position: Position::AfterUser,
///             content: TextOrBlocks::Text(note),
///             metadata: None,
///             extra: Default::default(),
///         }],
///         extra: Default::default(),
///     })
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
                    tracing::warn!(method, error = %e.message, "malformed MCPL notification dropped")
                }
            }
        })
    })
}

impl Mcpl {
    /// MCPL with `manifest` (any `revision` in it is replaced by the computed one) and no
    /// handlers yet.
    pub fn new(manifest: Manifest) -> Self {
        Mcpl { manifest, requests: HashMap::new(), notifications: HashMap::new(), on_ready: None }
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
    pub fn on_before_inference<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, BeforeInferenceParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<BeforeInferenceResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CONTEXT_BEFORE_INFERENCE, handler)
    }

    /// Receives `inference/lifecycle` notifications (needs `inferenceLifecycle`).
    pub fn on_inference_lifecycle<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, LifecycleParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::INFERENCE_LIFECYCLE, handler)
    }

    /// Serves `state/rollback`, for feature sets that declare `rollback: true` (others are
    /// refused with `-32602` before `handler` runs). Answer an unknown or pruned checkpoint with
    /// [`checkpoint_not_found`](mcpl_core::mcpl::errors::checkpoint_not_found) (`-32005`).
    pub fn on_rollback<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, RollbackParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RollbackResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::STATE_ROLLBACK, handler)
    }

    /// Serves `channels/open` (needs `channels.lifecycle`); fail with
    /// [`channel_open_failed`](mcpl_core::mcpl::errors::channel_open_failed) (`-32024`).
    pub fn on_channel_open<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, OpenChannelParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<OpenChannelResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_OPEN, handler)
    }

    /// Serves `channels/close` (needs `channels.lifecycle`); answer an unknown channel with
    /// [`unknown_channel`](mcpl_core::mcpl::errors::unknown_channel) (`-32023`).
    pub fn on_channel_close<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, CloseChannelParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CloseChannelResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_CLOSE, handler)
    }

    /// Serves `channels/publish`, the request and the notification form (needs
    /// `channels.publish`); the notification form drops the result.
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
    pub fn on_channel_list<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, ListChannelsParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListChannelsResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_LIST, handler)
    }

    /// Receives `channels/outgoing/chunk` notifications (needs `channels.streaming`). Advisory:
    /// deliver only what `channels/publish` brings.
    pub fn on_channel_outgoing_chunk<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, OutgoingChunkParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::CHANNELS_OUTGOING_CHUNK, handler)
    }

    /// Receives `channels/outgoing/complete` notifications (needs `channels.streaming`).
    /// Advisory: deliver only what `channels/publish` brings.
    pub fn on_channel_outgoing_complete<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, OutgoingCompleteParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::CHANNELS_OUTGOING_COMPLETE, handler)
    }

    /// Receives `channels/typing` notifications (needs `channels.typing`).
    pub fn on_channel_typing<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, TypingParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification(names::CHANNELS_TYPING, handler)
    }

    /// Serves `channels/acknowledge` (needs `channels.acknowledge`).
    pub fn on_channel_acknowledge<F, Fut>(self, handler: F) -> Self
    where
        F: Fn(McplConnection, AcknowledgeParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AcknowledgeResult, ErrorObject>> + Send + 'static,
    {
        self.request(names::CHANNELS_ACKNOWLEDGE, handler)
    }
}
