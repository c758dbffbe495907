//! What servers ask of the host: each request is admitted against the grant and feature
//! sets current when it arrives (`-32002` before the initial policy receipt), then handed to
//! the embedder's handler. Every request gets an answer.
//!
//! Tags on `push/event` and `channels/incoming` are cleaned before a handler sees them:
//! un-namespaced tags are dropped (with a diagnostic) and the core closure applied.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpl_core::engine::RequestContext;
use mcpl_core::jsonrpc::{ErrorCode, ErrorObject, RequestId};
use mcpl_core::mcpl::authorize::{admit_tagged, admit_untagged};
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::changes::ManifestChangedParams;
use mcpl_core::mcpl::inference::{InferenceChunkParams, InferenceRequestParams};
use mcpl_core::mcpl::methods::{InferenceChunk, names};
use mcpl_core::mcpl::push::{PushEventParams, PushEventResult};
use mcpl_core::mcpl::tags::{Tag, core_closure};
use mcpl_core::{Engine, Peer};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use super::{Diagnostic, McplHost, channels};

/// The former name of the `push/event` params the host's push handler gets
/// ([`PushEventParams`], admitted: its tags cleaned, namespaced only, core closure applied).
/// Renamed because `mcpl_server::mcpl::PushEvent` is the event a server sends.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
/// use mcpl_core::mcpl::push::PushEventParams;
/// # use mcpl_test_kit::mcpl::requests_server;
///
/// /// Where a host might put an event: its feature set, its id, its text.
/// fn summary(event: &PushEventParams) -> String {
///     let text = serde_json::to_value(&event.payload.content).unwrap_or_default();
///     format!("[{}] {} {}", event.feature_set, event.event_id, text[0]["text"])
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport) = requests_server().await?;
/// let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
/// let host = McplHost::builder(HostPolicy::default()).on_push_event(move |event| {
///     tx.send(summary(&event)).ok();
///     async { PushOutcome::accepted(None) }
/// }).build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
/// client.connect(transport).await?;
/// client.call_tool("alert", ()).await?;
/// assert_eq!(seen.recv().await.as_deref(), Some(r#"[alerts] disk-1 "Disk almost full""#));
/// # Ok(()) }
/// ```
#[deprecated(note = "use mcpl_core::mcpl::push::PushEventParams")]
pub type PushEvent = PushEventParams;

/// The host's treatment of an admitted `push/event`.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
/// use mcpl_core::types::ContentBlock;
/// # use mcpl_test_kit::mcpl::requests_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport) = requests_server().await?;
/// // A host in "do not disturb" mode.
/// let host = McplHost::builder(HostPolicy::default())
///     .on_push_event(|_event| async { PushOutcome::declined("do not disturb") })
///     .build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
/// client.connect(transport).await?;
/// // The server's `alert` tool reports what the host answered.
/// let result = client.call_tool("alert", ()).await?;
/// assert_eq!(result.content, [ContentBlock::text("accepted: false")]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushOutcome {
    /// Accepted; `inference_id` if it triggered an inference.
    Accepted {
        /// The inference it triggered, if any.
        inference_id: Option<String>,
    },
    /// Not accepted (throttled, muted, ...): `accepted: false` with the reason. A declined
    /// event is not remembered, so a retry reaches the handler again.
    Declined {
        /// Why.
        reason: String,
    },
}

impl PushOutcome {
    /// [`PushOutcome::Accepted`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::PushOutcome;
    ///
    /// // The event started an inference of the host's.
    /// let outcome = PushOutcome::accepted(Some("inf-42".into()));
    /// assert_eq!(outcome, PushOutcome::Accepted { inference_id: Some("inf-42".into()) });
    /// ```
    pub fn accepted(inference_id: Option<String>) -> PushOutcome {
        PushOutcome::Accepted { inference_id }
    }

    /// [`PushOutcome::Declined`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::mcpl::PushOutcome;
    ///
    /// let outcome = PushOutcome::declined("throttled: 10 events per minute");
    /// assert!(matches!(outcome, PushOutcome::Declined { reason } if reason.starts_with("throttled")));
    /// ```
    pub fn declined(reason: impl Into<String>) -> PushOutcome {
        PushOutcome::Declined { reason: reason.into() }
    }
}

/// The host's treatment of one admitted `channels/incoming` message.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, IncomingOutcome, McplHost};
/// use mcpl_core::types::ContentBlock;
/// # use mcpl_test_kit::mcpl::requests_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport) = requests_server().await?;
/// let host = McplHost::builder(HostPolicy::default()).on_channel_message(|message| async move {
///     if message.author.name.is_empty() {
///         return IncomingOutcome::Declined { reason: "anonymous".into() };
///     }
///     IncomingOutcome::Accepted { conversation_id: Some(format!("conv-{}", message.channel_id)) }
/// }).build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
/// client.connect(transport).await?;
///
/// // The server's `relay` tool registers `chat:general` and forwards a message from it.
/// let result = client.call_tool("relay", ()).await?;
/// let expected = r#"[{"messageId":"m-7","accepted":true,"conversationId":"conv-chat:general"}]"#;
/// assert_eq!(result.content, [ContentBlock::text(expected)]);
/// assert_eq!(host.channels()[0].id, "chat:general");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncomingOutcome {
    /// Accepted, mapped to `conversation_id` if the host says so.
    Accepted {
        /// The conversation the message went to.
        conversation_id: Option<String>,
    },
    /// Not accepted, with the reason.
    Declined {
        /// Why.
        reason: String,
    },
}

/// An admitted `inference/request`.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost};
/// use mcpl_core::mcpl::hooks::Usage;
/// use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
/// use mcpl_core::types::ContentBlock;
/// # use mcpl_test_kit::mcpl::requests_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport) = requests_server().await?;
/// let host = McplHost::builder(HostPolicy::default()).on_inference(|call| async move {
///     // The server asked for a stream: send the text as it is generated, then the whole.
///     if let Some(chunks) = &call.chunks {
///         for piece in ["Hel", "lo"] {
///             chunks.send(piece).await.ok();
///         }
///     }
///     Ok(InferenceResult::new("Hello", "host-model", FinishReason::EndTurn, Usage::new(3, 2)))
/// }).build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
/// client.connect(transport).await?;
/// // The server's `stream` tool reports the chunks it received and the result.
/// let result = client.call_tool("stream", ()).await?;
/// assert_eq!(result.content, [ContentBlock::text("Hel|lo => Hello")]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct InferenceCall {
    /// The request's params.
    pub params: InferenceRequestParams,
    /// With `stream: true`: sends `inference/chunk`s for this request (send them before
    /// returning the full result).
    pub chunks: Option<ChunkSender>,
}

/// A server's request about state the host keeps (the unmerged MCPL 0.5 state branch).
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use std::sync::{Arc, Mutex};
///
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost, StateCall};
/// use mcpl_core::types::ContentBlock;
/// use serde_json::{Value, json};
/// # use mcpl_test_kit::mcpl::requests_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport) = requests_server().await?;
/// // The host keeps each feature set's latest state for the server.
/// let kept: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
/// let host = McplHost::builder(HostPolicy::default()).on_state(move |call| {
///     let kept = kept.clone();
///     async move {
///         let mut kept = kept.lock().unwrap();
///         Ok(match call {
///             StateCall::Update { feature_set, params } => {
///                 kept.insert(feature_set, params["data"].clone());
///                 json!({})
///             }
///             StateCall::Get { feature_set } => json!({"data": kept.get(&feature_set)}),
///         })
///     }
/// }).build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
/// client.connect(transport).await?;
/// // The server's `save` tool stores a draft, then reads it back.
/// let result = client.call_tool("save", ()).await?;
/// assert_eq!(result.content, [ContentBlock::text(r#"{"data":{"draft":"v1"}}"#)]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum StateCall {
    /// `state/update {featureSet, checkpoint, parent, data?, patch?}`: the params, admitted.
    Update {
        /// The feature set (declared and enabled).
        feature_set: String,
        /// The params as sent.
        params: Value,
    },
    /// `state/get {featureSet}`.
    Get {
        /// The feature set (declared and enabled).
        feature_set: String,
    },
}

/// Sends the `inference/chunk` notifications of one streamed `inference/request`: `requestId`
/// is the request's JSON-RPC id, `index` counts from 0.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HostPolicy, McplHost};
/// use mcpl_core::jsonrpc::ErrorObject;
/// use mcpl_core::mcpl::hooks::Usage;
/// use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
/// use mcpl_core::types::ContentBlock;
/// # use mcpl_test_kit::mcpl::requests_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport) = requests_server().await?;
/// let indexes = Arc::new(Mutex::new(Vec::new()));
/// let seen = indexes.clone();
/// let host = McplHost::builder(HostPolicy::default()).on_inference(move |call| {
///     let seen = seen.clone();
///     async move {
///         let chunks = call.chunks.ok_or_else(|| ErrorObject::invalid_params("expected a stream"))?;
///         for piece in ["a", "b", "c"] {
///             let index = chunks.send(piece).await.map_err(ErrorObject::internal)?;
///             seen.lock().unwrap().push(index);
///         }
///         Ok(InferenceResult::new("abc", "host-model", FinishReason::EndTurn, Usage::new(1, 3)))
///     }
/// }).build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
/// client.connect(transport).await?;
/// let result = client.call_tool("stream", ()).await?;
/// assert_eq!(result.content, [ContentBlock::text("a|b|c => abc")]);
/// assert_eq!(*indexes.lock().unwrap(), [0, 1, 2]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ChunkSender {
    peer: Peer,
    request_id: RequestId,
    next: Arc<AtomicU64>,
}

impl ChunkSender {
    /// Sends the next chunk; returns its index.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed` if the connection is gone.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::hooks::Usage;
    /// use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
    /// use mcpl_core::types::ContentBlock;
    /// # use mcpl_test_kit::mcpl::requests_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport) = requests_server().await?;
    /// let host = McplHost::builder(HostPolicy::default()).on_inference(|call| async move {
    ///     let mut text = String::new();
    ///     for word in ["streamed ", "words"] {
    ///         if let Some(chunks) = &call.chunks {
    ///             chunks.send(word).await.ok(); // `Err` only if the connection is gone
    ///         }
    ///         text.push_str(word);
    ///     }
    ///     Ok(InferenceResult::new(text, "host-model", FinishReason::EndTurn, Usage::new(1, 2)))
    /// }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    /// let result = client.call_tool("stream", ()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("streamed |words => streamed words")]);
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, delta: impl Into<String>) -> mcpl_core::Result<u64> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let params = InferenceChunkParams::new(self.request_id.clone(), index, delta);
        self.peer.send_notification::<InferenceChunk>(params).await?;
        Ok(index)
    }

    /// The request this stream belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::hooks::Usage;
    /// use mcpl_core::mcpl::inference::{FinishReason, InferenceResult};
    /// # use mcpl_test_kit::mcpl::requests_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport) = requests_server().await?;
    /// let ids = Arc::new(Mutex::new(Vec::new()));
    /// let seen = ids.clone();
    /// let host = McplHost::builder(HostPolicy::default()).on_inference(move |call| {
    ///     // Key the host's own bookkeeping (cancellation, logs) by the request being answered.
    ///     if let Some(chunks) = &call.chunks {
    ///         seen.lock().unwrap().push(chunks.request_id().clone());
    ///     }
    ///     async {
    ///         Ok(InferenceResult::new("ok", "host-model", FinishReason::EndTurn, Usage::new(1, 1)))
    ///     }
    /// }).build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    /// client.call_tool("stream", ()).await?;
    /// assert_eq!(ids.lock().unwrap().len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }
}

type Answer = Result<Value, ErrorObject>;

fn encode<T: Serialize>(value: T) -> Answer {
    serde_json::to_value(value).map_err(ErrorObject::internal)
}

fn decode<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    serde_json::from_value(params.unwrap_or_else(|| Value::Object(Map::new())))
        .map_err(ErrorObject::invalid_params)
}

fn missing(method: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("this host does not handle {method}"))
}

impl McplHost {
    /// Reports a rejection and returns it, for `?`.
    pub(crate) fn reject(&self, method: &str, error: ErrorObject) -> ErrorObject {
        let text = |k: &str| {
            error.data.as_ref().and_then(|d| d.get(k)).and_then(Value::as_str).map(str::to_owned)
        };
        if let (Some(feature_set), Some(capability)) = (text("featureSet"), text("capability")) {
            self.diagnose(Diagnostic::DeclarationMismatch {
                method: method.to_owned(),
                feature_set,
                capability,
            });
        }
        self.diagnose(Diagnostic::InboundRejected {
            method: method.to_owned(),
            code: error.code.0,
            message: error.message.clone(),
        });
        error
    }

    /// Admits an untagged method (readiness + grant); not ready or no MCPL ⇒ `-32002`.
    pub(crate) fn admit_untagged(&self, method: &str, capability: &str) -> Result<(), ErrorObject> {
        self.settle();
        let verdict = self
            .with_session(|s| admit_untagged(s.admission(), &[capability]))
            .unwrap_or_else(|| Err(mcpl_core::mcpl::errors::capability_denied(capability)));
        verdict.map_err(|e| self.reject(method, e))
    }

    /// Drops un-namespaced tags (with a diagnostic), then applies the core closure.
    pub(crate) fn clean_tags(
        &self,
        method: &str,
        tags: Option<Vec<String>>,
    ) -> Option<Vec<String>> {
        let tags = tags?;
        let kept: Vec<String> = tags
            .into_iter()
            .filter(|t| {
                let ok = Tag::parse(t).is_some();
                if !ok {
                    self.diagnose(Diagnostic::UnnamespacedTag {
                        method: method.to_owned(),
                        tag: t.clone(),
                    });
                }
                ok
            })
            .collect();
        Some(core_closure(kept).into_iter().collect())
    }

    async fn push_event(&self, params: Option<Value>) -> Answer {
        let method = names::PUSH_EVENT;
        let Some(handler) = self.inner.handlers.push.clone() else {
            return Err(self.reject(method, missing(method)));
        };
        let feature_set = super::str_member(&params, "featureSet").map(str::to_owned);
        self.settle();
        let verdict = self
            .with_session(|s| {
                admit_tagged(s.admission(), &[paths::PUSH_EVENTS], feature_set.as_deref())
            })
            .unwrap_or_else(|| Err(mcpl_core::mcpl::errors::capability_denied(paths::PUSH_EVENTS)));
        verdict.map_err(|e| self.reject(method, e))?;
        let mut event: PushEventParams = decode(params).map_err(|e| self.reject(method, e))?;
        event.tags = self.clean_tags(method, event.tags.take());
        let event_id = event.event_id.clone();
        let Some(slot) = self.with_session_mut(|s| {
            s.pushes.get_or_insert_with(event_id.clone(), || Arc::new(OnceCell::new()))
        }) else {
            return Err(
                self.reject(method, mcpl_core::mcpl::errors::capability_denied(paths::PUSH_EVENTS))
            );
        };
        // The first arrival runs the handler; duplicates (even concurrent ones) get its answer.
        let mut ran = false;
        let outcome = slot
            .get_or_try_init(|| {
                ran = true;
                async move {
                    match handler(event).await {
                        PushOutcome::Accepted { inference_id } => Ok(inference_id),
                        PushOutcome::Declined { reason } => Err(reason),
                    }
                }
            })
            .await;
        match outcome {
            Ok(inference_id) => {
                if !ran {
                    self.diagnose(Diagnostic::DuplicatePush { event_id });
                }
                encode({
                    let mut v = PushEventResult::new(true);
                    v.inference_id = inference_id.clone();
                    v
                })
            }
            Err(reason) => {
                // Declined events are not remembered.
                self.with_session_mut(|s| s.pushes.remove(&event_id));
                encode(PushEventResult::new(false).with_reason(reason))
            }
        }
    }

    async fn inference_request(&self, ctx: RequestContext, params: Option<Value>) -> Answer {
        let method = names::INFERENCE_REQUEST;
        let Some(handler) = self.inner.handlers.inference.clone() else {
            return Err(self.reject(method, missing(method)));
        };
        let stream =
            params.as_ref().and_then(|p| p.get("stream")).and_then(Value::as_bool) == Some(true);
        let required: &[&str] = if stream {
            &[paths::INFERENCE_REQUEST, paths::INFERENCE_REQUEST_STREAMING]
        } else {
            &[paths::INFERENCE_REQUEST]
        };
        let feature_set = super::str_member(&params, "featureSet").map(str::to_owned);
        self.settle();
        let verdict = self
            .with_session(|s| {
                admit_tagged(s.admission(), required, feature_set.as_deref())?;
                if s.hooks_pending > 0 {
                    return Err(ErrorObject::new(
                        ErrorCode::INVALID_REQUEST,
                        "inference/request while a context/beforeInference to this server is pending (hooks must not trigger inference)"));
                }
                Ok(())
            })
            .unwrap_or_else(|| Err(mcpl_core::mcpl::errors::capability_denied(paths::INFERENCE_REQUEST)));
        if let Err(e) = &verdict
            && e.code == ErrorCode::INVALID_REQUEST
        {
            self.diagnose(Diagnostic::InferenceDuringHook);
        }
        verdict.map_err(|e| self.reject(method, e))?;
        let params: InferenceRequestParams = decode(params).map_err(|e| self.reject(method, e))?;
        let chunks = stream.then(|| ChunkSender {
            peer: ctx.peer().clone(),
            request_id: ctx.id().clone(),
            next: Arc::new(AtomicU64::new(0)),
        });
        encode(handler(InferenceCall { params, chunks }).await?)
    }

    async fn model_info(&self) -> Answer {
        let method = names::MODEL_INFO;
        let Some(handler) = self.inner.handlers.model_info.clone() else {
            return Err(self.reject(method, missing(method)));
        };
        self.admit_untagged(method, paths::MODEL_INFO)?;
        encode(handler().await?)
    }

    fn manifest_changed(&self, params: Option<Value>) {
        let params: ManifestChangedParams = match decode(params) {
            Ok(p) => p,
            Err(e) => {
                self.diagnose(Diagnostic::ManifestDefect {
                    detail: format!("undecodable mcpl/manifestChanged: {}", e.message),
                });
                return;
            }
        };
        if !params.extra.is_empty() {
            let extra: Vec<&String> = params.extra.keys().collect();
            self.diagnose(Diagnostic::ManifestDefect {
                detail: format!(
                    "mcpl/manifestChanged carries members the schema forbids: {extra:?}"
                ),
            });
        }
        if self.status().is_none() {
            return;
        }
        tracing::debug!(revision = ?params.revision, domains = ?params.domains, "manifest changed");
        if self.options().refresh_on_change {
            let host = self.clone();
            tokio::spawn(async move { host.refresh_announced().await });
        }
    }
}

impl McplHost {
    async fn state_call(&self, method: &'static str, params: Option<Value>) -> Answer {
        let Some(handler) = self.inner.handlers.state.clone() else {
            return Err(missing(method));
        };
        let feature_set = super::str_member(&params, "featureSet").map(str::to_owned);
        self.settle();
        let verdict = self
            .with_session(|s| admit_tagged(s.admission(), &[paths::TOOLS], feature_set.as_deref()))
            .unwrap_or_else(|| Err(mcpl_core::mcpl::errors::capability_denied(paths::TOOLS)));
        verdict.map_err(|e| self.reject(method, e))?;
        let feature_set = feature_set.unwrap_or_default();
        let call = if method == STATE_UPDATE {
            StateCall::Update { feature_set, params: params.unwrap_or(Value::Null) }
        } else {
            StateCall::Get { feature_set }
        };
        handler(call).await
    }
}

/// `state/update` (server to host).
pub(crate) const STATE_UPDATE: &str = "state/update";
/// `state/get` (server to host).
pub(crate) const STATE_GET: &str = "state/get";

/// Registers the server-request handlers. They hold the host weakly.
pub(crate) fn install(host: &McplHost, engine: &Engine) {
    macro_rules! request {
        ($name:expr, |$h:ident, $ctx:ident, $params:ident| $body:expr) => {{
            let weak = host.weak();
            engine.on_request($name, move |$ctx: RequestContext, $params: Option<Value>| {
                let weak = weak.clone();
                async move {
                    let Some($h) = McplHost::from_weak(&weak) else {
                        return Err(missing($name));
                    };
                    let _ = (&$ctx, &$params);
                    $body.await
                }
            });
        }};
    }
    request!(names::PUSH_EVENT, |h, ctx, params| h.push_event(params));
    request!(names::INFERENCE_REQUEST, |h, ctx, params| h.inference_request(ctx, params));
    request!(names::MODEL_INFO, |h, ctx, params| h.model_info());
    request!(names::CHANNELS_REGISTER, |h, ctx, params| channels::register(&h, params));
    request!(names::CHANNELS_CHANGED, |h, ctx, params| channels::changed_request(&h, params));
    request!(names::CHANNELS_LIST, |h, ctx, params| channels::list(&h));
    request!(names::CHANNELS_INCOMING, |h, ctx, params| channels::incoming(&h, params));
    request!(STATE_UPDATE, |h, ctx, params| h.state_call(STATE_UPDATE, params));
    request!(STATE_GET, |h, ctx, params| h.state_call(STATE_GET, params));
    let weak = host.weak();
    engine.on_notification(names::CHANNELS_CHANGED, move |_ctx, params| {
        let weak = weak.clone();
        async move {
            if let Some(h) = McplHost::from_weak(&weak) {
                channels::changed_notification(&h, params);
            }
        }
    });
    let weak = host.weak();
    engine.on_notification(names::MANIFEST_CHANGED, move |_ctx, params| {
        let weak = weak.clone();
        async move {
            if let Some(h) = McplHost::from_weak(&weak) {
                h.manifest_changed(params);
            }
        }
    });
}
