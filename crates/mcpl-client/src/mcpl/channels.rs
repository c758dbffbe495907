//! Channels on the host side: the registry of channels a server registered and the host
//! accepted, itemized authorization of `channels/register` and `channels/changed`,
//! `channels/list`, validation of `channels/incoming` at receipt, and the host's channel calls.
//!
//! A descriptor is accepted when its id is new (or, for `updated`, registered), the host
//! policy permits the id ([`HostPolicy::allow_channel`](super::HostPolicy::allow_channel)),
//! and the grant holds what its direction needs: `channels.publish` for `outbound`,
//! `channels.incoming` for `inbound`, either for `bidirectional`. Otherwise it is rejected
//! with `reason` `invalid_descriptor`, `duplicate_id`, `unknown_channel`, `not_permitted` or
//! `capability_denied`.

use std::collections::BTreeSet;

use mcpl_core::engine::RequestOptions;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::channels::{
    AcknowledgeParams, AcknowledgeResult, ChannelDescriptor, ChannelDirection, ChannelItemResult,
    ChannelResults, CloseChannelParams, IncomingItemResult, IncomingParams, IncomingResult,
    ListChannelsParams, ListChannelsResult, OpenChannelParams, OpenChannelResult,
    OutgoingChunkParams, OutgoingCompleteParams, PublishParams, PublishResult, TypingParams,
};
use mcpl_core::mcpl::content::McplContent;
use mcpl_core::mcpl::methods::{
    Acknowledge, CloseChannel, ListChannels, OpenChannel, OutgoingChunk, OutgoingComplete, Publish,
    PublishNotification, Typing, names,
};
use serde_json::Value;

use super::session::Session;
use super::{Diagnostic, IncomingOutcome, McplError, McplHost};

type Answer = Result<Value, ErrorObject>;

fn item(id: &str, verdict: Result<(), &'static str>) -> ChannelItemResult {
    {
        let mut result = ChannelItemResult::new(id.to_owned(), verdict.is_ok());
        result.reason = verdict.err().map(str::to_owned);
        result
    }
}

/// Whether the grant holds what a channel of this direction needs.
fn direction_granted(s: &Session, direction: ChannelDirection) -> bool {
    let publish = s.grant.is_granted(paths::CHANNELS_PUBLISH);
    let incoming = s.grant.is_granted(paths::CHANNELS_INCOMING);
    match direction {
        ChannelDirection::Outbound => publish,
        ChannelDirection::Inbound => incoming,
        ChannelDirection::Bidirectional => publish || incoming,
    }
}

/// What one batch of channel changes does.
enum Change {
    Add(Value),
    Update(Value),
    Remove(Value),
}

/// Applies the changes in order, one result per item, and reports each rejection.
fn apply(host: &McplHost, method: &str, changes: Vec<Change>) -> Vec<ChannelItemResult> {
    let policy = host.policy();
    let results = host
        .with_session_mut(|s| {
            let mut seen = BTreeSet::new();
            changes
                .into_iter()
                .map(|change| {
                    let (raw, add) = match change {
                        Change::Remove(raw) => {
                            let id = raw.as_str().unwrap_or_default().to_owned();
                            let verdict = match s.channels.remove(&id) {
                                Some(_) => Ok(()),
                                None => Err("unknown_channel"),
                            };
                            return item(&id, verdict);
                        }
                        Change::Add(raw) => (raw, true),
                        Change::Update(raw) => (raw, false),
                    };
                    let id = raw.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let descriptor = match serde_json::from_value::<ChannelDescriptor>(raw) {
                        Ok(d) if !d.id.is_empty() => d,
                        _ => return item(&id, Err("invalid_descriptor")),
                    };
                    let known = s.channels.contains_key(&id);
                    let verdict = if !seen.insert(id.clone()) || (add && known) {
                        Err("duplicate_id")
                    } else if !add && !known {
                        Err("unknown_channel")
                    } else if !policy.permits_channel(&id) {
                        Err("not_permitted")
                    } else if !direction_granted(s, descriptor.direction) {
                        Err("capability_denied")
                    } else {
                        Ok(())
                    };
                    if verdict.is_ok() {
                        s.channels.insert(id.clone(), descriptor);
                    }
                    item(&id, verdict)
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for r in results.iter().filter(|r| !r.accepted) {
        host.diagnose(Diagnostic::ChannelRejected {
            method: method.to_owned(),
            channel_id: r.id.clone(),
            reason: r.reason.clone().unwrap_or_default(),
        });
    }
    results
}

fn list_of(params: &Option<Value>, key: &str) -> Result<Vec<Value>, ErrorObject> {
    match params.as_ref().and_then(|p| p.get(key)) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(ErrorObject::invalid_params(format!("{key} must be an array"))),
    }
}

fn changes(params: &Option<Value>) -> Result<Vec<Change>, ErrorObject> {
    let mut out: Vec<Change> = list_of(params, "added")?.into_iter().map(Change::Add).collect();
    out.extend(list_of(params, "removed")?.into_iter().map(Change::Remove));
    out.extend(list_of(params, "updated")?.into_iter().map(Change::Update));
    Ok(out)
}

fn results(results: Vec<ChannelItemResult>) -> Answer {
    serde_json::to_value(ChannelResults::default().with_results(results))
        .map_err(ErrorObject::internal)
}

pub(crate) async fn register(host: &McplHost, params: Option<Value>) -> Answer {
    let method = names::CHANNELS_REGISTER;
    host.admit_untagged(method, paths::CHANNELS_REGISTER)?;
    let Some(Value::Array(items)) = params.as_ref().and_then(|p| p.get("channels")).cloned() else {
        return Err(host.reject(method, ErrorObject::invalid_params("channels must be an array")));
    };
    results(apply(host, method, items.into_iter().map(Change::Add).collect()))
}

pub(crate) async fn changed_request(host: &McplHost, params: Option<Value>) -> Answer {
    let method = names::CHANNELS_CHANGED;
    host.admit_untagged(method, paths::CHANNELS_REGISTER)?;
    let changes = changes(&params).map_err(|e| host.reject(method, e))?;
    results(apply(host, method, changes))
}

/// The notification form cannot report rejections: filter per item, and say so.
pub(crate) fn changed_notification(host: &McplHost, params: Option<Value>) {
    let method = names::CHANNELS_CHANGED;
    if host.admit_untagged(method, paths::CHANNELS_REGISTER).is_err() {
        return;
    }
    let changes = match changes(&params) {
        Ok(c) => c,
        Err(e) => {
            host.reject(method, e);
            return;
        }
    };
    let rejected = apply(host, method, changes).iter().filter(|r| !r.accepted).count();
    if rejected > 0 {
        host.diagnose(Diagnostic::UnreportedChannelRejections { rejected });
    }
}

pub(crate) async fn list(host: &McplHost) -> Answer {
    host.admit_untagged(names::CHANNELS_LIST, paths::CHANNELS_REGISTER)?;
    serde_json::to_value(ListChannelsResult::default().with_channels(host.channels()))
        .map_err(ErrorObject::internal)
}

pub(crate) async fn incoming(host: &McplHost, params: Option<Value>) -> Answer {
    let method = names::CHANNELS_INCOMING;
    let Some(handler) = host.inner.handlers.incoming.clone() else {
        return Err(host
            .reject(method, mcpl_core::mcpl::errors::capability_denied(paths::CHANNELS_INCOMING)));
    };
    host.admit_untagged(method, paths::CHANNELS_INCOMING)?;
    let params: IncomingParams = serde_json::from_value(params.unwrap_or(Value::Null))
        .map_err(|e| host.reject(method, ErrorObject::invalid_params(e)))?;
    let mut out = Vec::with_capacity(params.messages.len());
    for mut message in params.messages {
        // Validated at receipt, one by one: the grant and the registry may change in between.
        let verdict = host
            .with_session(|s| {
                if !s.granted(paths::CHANNELS_INCOMING) {
                    return Err("capability_denied");
                }
                match s.channels.get(&message.channel_id) {
                    None => Err("unregistered_channel"),
                    Some(c) if c.direction == ChannelDirection::Outbound => {
                        Err("outbound_only_channel")
                    }
                    Some(_) => Ok(()),
                }
            })
            .unwrap_or(Err("capability_denied"));
        let message_id = message.message_id.clone();
        let claimed_channel = message.channel_id.clone();
        let outcome = match verdict {
            Err(reason) => IncomingOutcome::Declined { reason: reason.to_owned() },
            Ok(()) => {
                message.tags = host.clean_tags(method, message.tags.take());
                let channel_id = message.channel_id.clone();
                let outcome = handler(message).await;
                if let IncomingOutcome::Declined { reason } = &outcome {
                    tracing::debug!(channel_id = ?channel_id, message_id = ?message_id, reason = ?reason, "incoming message declined");
                }
                outcome
            }
        };
        let result = match outcome {
            IncomingOutcome::Accepted { conversation_id } => {
                let mut result = IncomingItemResult::new(message_id, true);
                result.conversation_id = conversation_id;
                result
            }
            IncomingOutcome::Declined { reason } => {
                if verdict.is_err() {
                    host.diagnose(Diagnostic::IncomingRejected {
                        channel_id: claimed_channel.clone(),
                        message_id: message_id.clone(),
                        reason: reason.clone(),
                    });
                }
                IncomingItemResult::new(message_id, false).with_reason(reason)
            }
        };
        out.push(result);
    }
    serde_json::to_value(IncomingResult::default().with_results(out)).map_err(ErrorObject::internal)
}

impl McplHost {
    /// Checks that MCPL is in force and `capability` granted, and (if given) that the channel
    /// is registered and allows sending; reports a refusal.
    fn channel_gate(
        &self,
        method: &str,
        capability: &str,
        channel_id: Option<&str>,
        outgoing: bool,
    ) -> Result<mcpl_core::Peer, McplError> {
        let verdict = self
            .with_session(|s| {
                if s.status != super::McplStatus::Ready {
                    return Err(McplError::NotActive);
                }
                if !s.grant.is_granted(capability) {
                    return Err(McplError::NotGranted { capability: capability.to_owned() });
                }
                if let Some(id) = channel_id {
                    match s.channels.get(id) {
                        None => {
                            return Err(McplError::UnknownChannel { channel_id: id.to_owned() });
                        }
                        Some(c) if outgoing && c.direction == ChannelDirection::Inbound => {
                            return Err(McplError::ChannelNotPermitted {
                                channel_id: id.to_owned(),
                                reason: "the channel is inbound only".into(),
                            });
                        }
                        Some(_) => {}
                    }
                }
                Ok(s.peer.clone())
            })
            .unwrap_or(Err(McplError::NotActive));
        verdict.inspect_err(|e| self.refused(method, e))
    }

    pub(crate) fn refused(&self, method: &str, error: &McplError) {
        self.diagnose(Diagnostic::CallRefused {
            method: method.to_owned(),
            reason: error.to_string(),
        });
    }

    /// `channels/open` (needs `channels.lifecycle`). The opened channel joins the registry.
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the server's error (`-32024` open failed).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::channels::{ChannelDirection, OpenChannelParams};
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// let opened = host.open_channel(params).await?;
    /// assert_eq!(opened.channel.id, "room-general");
    /// assert_eq!(opened.channel.direction, ChannelDirection::Bidirectional);
    /// // It joined the host's registry.
    /// assert_eq!(host.channels().len(), 1);
    /// # Ok(()) }
    /// ```
    pub async fn open_channel(
        &self,
        params: OpenChannelParams,
    ) -> Result<OpenChannelResult, McplError> {
        let peer =
            self.channel_gate(names::CHANNELS_OPEN, paths::CHANNELS_LIFECYCLE, None, false)?;
        let result = peer.send::<OpenChannel>(params, RequestOptions::new()).await?;
        self.with_session_mut(|s| {
            s.channels.insert(result.channel.id.clone(), result.channel.clone());
        });
        Ok(result)
    }

    /// `channels/close` (needs `channels.lifecycle`; the channel must be registered). A closed
    /// channel leaves the registry.
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the server's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// use mcpl_core::mcpl::channels::OpenChannelParams;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// assert!(host.close_channel("room-general").await?);
    /// assert!(host.channels().is_empty());
    /// // A channel that is not registered is refused locally.
    /// let err = host.close_channel("room-general").await.unwrap_err();
    /// assert!(matches!(err, McplError::UnknownChannel { .. }));
    /// # Ok(()) }
    /// ```
    pub async fn close_channel(&self, channel_id: &str) -> Result<bool, McplError> {
        let peer = self.channel_gate(
            names::CHANNELS_CLOSE,
            paths::CHANNELS_LIFECYCLE,
            Some(channel_id),
            false,
        )?;
        let params = CloseChannelParams::new(channel_id.to_owned());
        let result = peer.send::<CloseChannel>(params, RequestOptions::new()).await?;
        if result.closed {
            self.with_session_mut(|s| s.channels.remove(channel_id));
        }
        Ok(result.closed)
    }

    /// The checks both forms of `channels/publish` make: `channels.publish` granted, the
    /// channel registered and not inbound-only.
    fn publish_gate(&self, channel_id: &str) -> Result<mcpl_core::Peer, McplError> {
        self.channel_gate(names::CHANNELS_PUBLISH, paths::CHANNELS_PUBLISH, Some(channel_id), true)
    }

    /// Runs one step of the outgoing-stream bookkeeping; a refusal is reported and returned as
    /// `ChannelNotPermitted`.
    fn outgoing_step<T>(
        &self,
        method: &str,
        channel_id: &str,
        step: impl FnOnce(&mut Session) -> Result<T, String>,
    ) -> Result<T, McplError> {
        self.with_session_mut(step)
            .unwrap_or_else(|| Err("not connected".into()))
            .map_err(|reason| McplError::ChannelNotPermitted {
                channel_id: channel_id.to_owned(),
                reason,
            })
            .inspect_err(|e| self.refused(method, e))
    }

    /// `channels/publish` as a request (needs `channels.publish`; the channel must be
    /// registered and not inbound-only). The only way to deliver to a channel.
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the server's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::channels::{OpenChannelParams, PublishParams};
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// let reply: PublishParams = serde_json::from_value(json!({
    ///     "conversationId": "c-1", "channelId": "room-general",
    ///     "content": [{"type": "text", "text": "Hello, room!"}],
    /// }))?;
    /// let result = host.publish(reply).await?;
    /// assert!(result.delivered);
    /// assert_eq!(result.message_id.as_deref(), Some("m-1"));
    /// assert_eq!(server_saw.recv().await.as_deref(),
    ///     Some(r#"publish room-general [{"type":"text","text":"Hello, room!"}]"#));
    /// # Ok(()) }
    /// ```
    pub async fn publish(&self, params: PublishParams) -> Result<PublishResult, McplError> {
        let peer = self.publish_gate(&params.channel_id)?;
        Ok(peer.send::<Publish>(params, RequestOptions::new()).await?)
    }

    /// `channels/publish` as a notification: fire and forget, no delivery result (same checks
    /// as [`publish`](Self::publish)).
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the connection's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// use mcpl_core::mcpl::channels::{OpenChannelParams, PublishParams};
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// let note = |channel: &str| -> serde_json::Result<PublishParams> {
    ///     serde_json::from_value(json!({"conversationId": "c-1", "channelId": channel,
    ///         "content": [{"type": "text", "text": "fyi"}]}))
    /// };
    /// host.publish_notification(note("room-general")?).await?;
    /// assert!(server_saw.recv().await.is_some_and(|line| line.starts_with("publish room-general")));
    /// // Only registered channels: nothing is sent to others.
    /// let err = host.publish_notification(note("room-unknown")?).await.unwrap_err();
    /// assert!(matches!(err, McplError::UnknownChannel { .. }));
    /// # Ok(()) }
    /// ```
    pub async fn publish_notification(&self, params: PublishParams) -> Result<(), McplError> {
        let peer = self.publish_gate(&params.channel_id)?;
        Ok(peer.send_notification::<PublishNotification>(params).await?)
    }

    /// `channels/list` sent to the server (needs `channels.register`): the channels the server
    /// says it has. The host's own registry of accepted channels is
    /// [`channels`](Self::channels).
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the server's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// // What the server says it has, whether or not the host accepted it.
    /// let listed = host.list_server_channels().await?;
    /// let ids: Vec<&str> = listed.channels.iter().map(|c| c.id.as_str()).collect();
    /// assert_eq!(ids, ["room-lobby"]);
    /// assert!(host.channels().is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn list_server_channels(&self) -> Result<ListChannelsResult, McplError> {
        let peer =
            self.channel_gate(names::CHANNELS_LIST, paths::CHANNELS_REGISTER, None, false)?;
        let params = ListChannelsParams::default();
        Ok(peer.send::<ListChannels>(params, RequestOptions::new()).await?)
    }

    /// `channels/typing` (needs `channels.typing`; a registered channel).
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the connection's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::channels::OpenChannelParams;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// // The model started composing a reply: show a typing indicator.
    /// host.typing("room-general").await?;
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("typing room-general"));
    /// # Ok(()) }
    /// ```
    pub async fn typing(&self, channel_id: &str) -> Result<(), McplError> {
        let peer = self.channel_gate(
            names::CHANNELS_TYPING,
            paths::CHANNELS_TYPING,
            Some(channel_id),
            true,
        )?;
        let params = TypingParams::new(channel_id.to_owned());
        Ok(peer.send_notification::<Typing>(params).await?)
    }

    /// `channels/acknowledge` (needs `channels.acknowledge`; a registered channel).
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally, or the server's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::channels::{AcknowledgeParams, OpenChannelParams};
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// // Mark a message as seen.
    /// let seen: AcknowledgeParams = serde_json::from_value(json!({
    ///     "channelId": "room-general", "messageId": "msg-42", "intent": "seen",
    /// }))?;
    /// let result = host.acknowledge(seen).await?;
    /// assert!(result.acknowledged);
    /// assert_eq!(result.representation.as_deref(), Some("👍"));
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("ack room-general msg-42 seen"));
    /// # Ok(()) }
    /// ```
    pub async fn acknowledge(
        &self,
        params: AcknowledgeParams,
    ) -> Result<AcknowledgeResult, McplError> {
        let peer = self.channel_gate(
            names::CHANNELS_ACKNOWLEDGE,
            paths::CHANNELS_ACKNOWLEDGE,
            Some(&params.channel_id),
            false,
        )?;
        Ok(peer.send::<Acknowledge>(params, RequestOptions::new()).await?)
    }

    /// `channels/outgoing/chunk` (needs `channels.streaming`; only to this server's registered
    /// channel). The index is assigned here, monotonic per inference across channels; returns
    /// it.
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally (including a chunk after `complete`), or the
    /// connection's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::channels::OpenChannelParams;
    /// use mcpl_core::mcpl::content::McplContent;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// // Stream a reply to the room as the model writes it; indexes are assigned here.
    /// assert_eq!(host.outgoing_chunk("inf-1", "c-1", "room-general", "Hel").await?, 0);
    /// assert_eq!(host.outgoing_chunk("inf-1", "c-1", "room-general", "lo!").await?, 1);
    /// host.outgoing_complete("inf-1", "c-1", "room-general", vec![McplContent::text("Hello!")]).await?;
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("chunk 0 Hel"));
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("chunk 1 lo!"));
    /// # Ok(()) }
    /// ```
    pub async fn outgoing_chunk(
        &self,
        inference_id: &str,
        conversation_id: &str,
        channel_id: &str,
        delta: impl Into<String>,
    ) -> Result<u64, McplError> {
        let method = names::CHANNELS_OUTGOING_CHUNK;
        let peer = self.channel_gate(method, paths::CHANNELS_STREAMING, Some(channel_id), true)?;
        let index =
            self.outgoing_step(method, channel_id, |s| s.outgoing.chunk(inference_id, channel_id))?;
        let params = OutgoingChunkParams::new(
            inference_id.to_owned(),
            conversation_id.to_owned(),
            channel_id.to_owned(),
            index,
            delta,
        );
        peer.send_notification::<OutgoingChunk>(params).await?;
        Ok(index)
    }

    /// `channels/outgoing/complete`: once per (inference, channel) that got chunks, with the
    /// full moderated content.
    ///
    /// # Errors
    ///
    /// [`McplError`]: refused locally (no chunks, or already completed), or the connection's
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// use mcpl_core::mcpl::channels::OpenChannelParams;
    /// use mcpl_core::mcpl::content::McplContent;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::chat_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = chat_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// let params: OpenChannelParams =
    ///     serde_json::from_value(json!({"type": "chat", "address": {"room": "general"}}))?;
    /// host.open_channel(params).await?;
    ///
    /// host.outgoing_chunk("inf-1", "c-1", "room-general", "Hi").await?;
    /// // The full, moderated reply closes the stream...
    /// host.outgoing_complete("inf-1", "c-1", "room-general", vec![McplContent::text("Hi")]).await?;
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("chunk 0 Hi"));
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("complete room-general"));
    /// // ...once: nothing more goes to that (inference, channel).
    /// let again = host.outgoing_complete("inf-1", "c-1", "room-general", vec![]).await;
    /// assert!(matches!(again, Err(McplError::ChannelNotPermitted { .. })));
    /// # Ok(()) }
    /// ```
    pub async fn outgoing_complete(
        &self,
        inference_id: &str,
        conversation_id: &str,
        channel_id: &str,
        content: Vec<McplContent>,
    ) -> Result<(), McplError> {
        let method = names::CHANNELS_OUTGOING_COMPLETE;
        let peer = self.channel_gate(method, paths::CHANNELS_STREAMING, Some(channel_id), true)?;
        self.outgoing_step(method, channel_id, |s| s.outgoing.complete(inference_id, channel_id))?;
        let params = OutgoingCompleteParams::new(
            inference_id.to_owned(),
            conversation_id.to_owned(),
            channel_id.to_owned(),
            content,
        );
        Ok(peer.send_notification::<OutgoingComplete>(params).await?)
    }
}
