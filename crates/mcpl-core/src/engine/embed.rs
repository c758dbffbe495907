//! The engine's embedding entry points, for SDK builders: the server and HTTP crates of this
//! workspace use them, and so can a custom transport or HTTP stack. Applications do not need
//! them; they use [`Engine::connect`](super::Engine::connect) or a server's `serve`.
//!
//! | Entry point | What it is for |
//! |---|---|
//! | [`serve_request`], [`serve_request_with`] | One request on the caller's task, no connection (a stateless HTTP request). |
//! | [`run_request`] | Run a registered handler's context around caller code, the caller answering. |
//! | [`drive`], [`drive_with`] → [`Driven`] | A connection the caller feeds message by message (a session whose messages arrive over several HTTP requests). |
//! | [`LazyMeta`] | A request's `_meta`, decoded only when a handler reads it. |
//! | [`SessionHandle`] | A transport's server-side session, as [`Transport::session`](crate::Transport::session) reports it. |
//!
//! The same functions exist as hidden methods of [`Engine`] (`engine.serve_request(..)`,
//! ...), where they used to be documented; those keep working.

use std::future::Future;
use std::sync::Arc;

pub use super::driven::{Driven, NotRun, Running, Serving};
pub use super::lazy_meta::LazyMeta;
use super::{Engine, RequestContext};
use crate::error::Result;
use crate::transport::TransportSender;

pub use crate::transport::SessionHandle;

/// Serves one incoming `request` on the caller's task, answering through `sender`.
///
/// For transports that carry exactly one request, such as a stateless HTTP request: no
/// connection is established (the engine's slot is untouched, so any number of these run
/// at once), and no task is spawned. The registered handler runs with a
/// [`RequestContext`] whose peer sends through `sender` as the handler goes (progress, log
/// messages); requests the handler makes of the peer fail at once with `-32601`. The
/// response is the last message sent.
///
/// The request's `params._meta` (an object) moves into the context: the handler reads it
/// with [`RequestContext::meta`], and its `params` come without it.
///
/// # Errors
///
/// The sender's error.
///
/// # Cancel safety
///
/// Dropping the future cancels the handler; nothing more is sent.
pub async fn serve_request<S: TransportSender>(
    engine: &Engine,
    request: crate::jsonrpc::Request,
    sender: S,
) -> Result<()> {
    engine.serve_request(request, sender).await
}

/// Like [`serve_request`], for a transport that reads the request's
/// `_meta` only when the handler asks for it (`meta`, see [`LazyMeta`]; `request`'s params
/// then come without `_meta`), and with `data` attached to the request's connection: the
/// handler reads it with [`Peer::data`](super::Peer::data).
///
/// # Errors
///
/// The sender's error.
///
/// # Cancel safety
///
/// Dropping the future cancels the handler; nothing more is sent.
///
/// # Examples
///
/// ```
/// use mcpl_core::engine::{Engine, LazyMeta, embed};
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver, memory};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::new();
/// engine.on_request("whoami", |ctx, _params| async move {
///     let token = ctx.progress_token().cloned();
///     Ok(json!({ "user": ctx.peer().data::<&str>().copied(), "token": token }))
/// });
/// let (ours, theirs) = memory::pair();
/// let (sender, _unused) = ours.start().await?;
/// let (_unused, mut inbox) = theirs.start().await?;
/// let meta = LazyMeta::new(|| json!({ "progressToken": "p" }).as_object().cloned());
/// let request = Request::new(1, "whoami", None);
/// embed::serve_request_with(&engine, request, Some(meta), Some(Box::new("alice")), sender).await?;
/// let Some(Message::Response(answer)) = inbox.recv().await? else { panic!() };
/// assert_eq!(answer.result, json!({ "user": "alice", "token": "p" }));
/// # Ok(()) }
/// ```
pub async fn serve_request_with<S: TransportSender>(
    engine: &Engine,
    request: crate::jsonrpc::Request,
    meta: Option<LazyMeta>,
    data: Option<Box<dyn std::any::Any + Send + Sync>>,
    sender: S,
) -> Result<()> {
    engine.serve_request_with(request, meta, data, sender).await
}

/// Runs `handler` as the handler of one incoming request on the caller's task, and
/// returns what it returned: unlike [`serve_request_with`], the
/// caller answers the request (through `sender` or any other way), so a result can go to
/// the wire without becoming a [`Value`](serde_json::Value) first.
///
/// The request is `id` and `method`; its `_meta` is read on demand from `meta`, and `data`
/// is attached to its connection ([`Peer::data`](super::Peer::data)). No handler is looked up. The
/// [`RequestContext`] handed to `handler` sends through `sender` as the handler goes
/// (progress, log messages); requests it makes of the peer fail at once with `-32601`.
/// Once `handler` is done the connection is closed: nothing it left behind sends any more.
///
/// # Errors
///
/// The sender's error (the handler is then dropped).
///
/// # Cancel safety
///
/// Dropping the future cancels the handler; nothing more is sent.
///
/// # Examples
///
/// ```
/// use mcpl_core::engine::{Engine, embed};
/// use mcpl_core::jsonrpc::{Message, RequestId, Response};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender, memory};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
/// let engine = Engine::new();
/// let (ours, theirs) = memory::pair();
/// let (mut sender, _unused) = ours.start().await?;
/// let (_unused, mut inbox) = theirs.start().await?;
/// let id = RequestId::from(7);
/// let sum = embed::run_request(&engine, id.clone(), "add", None, None, &mut sender, |ctx| async move {
///     ctx.peer().notify("notifications/message", Some(json!({"data": "adding"}))).await?;
///     Ok::<_, mcpl_core::Error>(2 + 3)
/// })
/// .await??;
/// // The caller answers.
/// sender.send(Response::new(id, json!(sum)).into()).await?;
/// assert!(matches!(inbox.recv().await?, Some(Message::Notification(_))));
/// let Some(Message::Response(answer)) = inbox.recv().await? else { panic!() };
/// assert_eq!(answer.result, json!(5));
/// # Ok(()) }
/// ```
// Inlined: see `Engine::run_request`.
#[inline(always)]
pub fn run_request<'a, S, F, Fut>(
    engine: &Engine,
    id: crate::jsonrpc::RequestId,
    method: impl Into<String>,
    meta: Option<LazyMeta>,
    data: Option<Box<dyn std::any::Any + Send + Sync>>,
    sender: &'a mut S,
    handler: F,
) -> impl Future<Output = Result<Fut::Output>> + 'a
where
    S: TransportSender,
    F: FnOnce(RequestContext) -> Fut + 'a,
    Fut: Future + 'a,
{
    engine.run_request(id, method, meta, data, sender, handler)
}

/// A connection driven by the caller, answering through `sender`: see [`Driven`].
///
/// Like [`serve_request`], it does not take the engine's slot: any
/// number of driven connections share the engine's handlers, each with its own tables.
/// Nothing runs while it is idle.
///
/// # Examples
///
/// ```
/// use mcpl_core::engine::{Engine, embed};
/// use mcpl_core::jsonrpc::{Message, Request, RequestId};
/// use mcpl_core::transport::{Transport, TransportReceiver, memory};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcpl_core::Result<()> {
/// let engine = Engine::new();
/// engine.on_request("whoami", |ctx, _params| async move {
///     Ok(json!(ctx.peer().data::<&str>().copied()))
/// });
/// // Whatever the connection sends goes to `sender`; here, one end of an in-memory pair.
/// let (ours, theirs) = memory::pair();
/// let (sender, _unused) = ours.start().await?;
/// let (_unused, mut inbox) = theirs.start().await?;
/// let driven = embed::drive_with(&engine, sender, "alice");
/// driven.deliver(Request::new(RequestId::from(1), "whoami", None).into()).await?;
/// let Some(Message::Response(answer)) = inbox.recv().await? else { panic!() };
/// assert_eq!(answer.result, json!("alice"));
/// # Ok(()) }
/// ```
pub fn drive<S: TransportSender>(engine: &Engine, sender: S) -> Driven {
    engine.drive(sender)
}

/// Like [`drive_with`], with `data` already shared: the caller keeps a handle to what the
/// connection holds (the same `Arc`, not a copy or an `Arc` of its own), as
/// [`Driven::shared_data`] and [`Peer::shared_data`](super::Peer::shared_data) give one.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// use mcpl_core::engine::{Engine, embed};
/// use mcpl_core::transport::Transport;
/// use mcpl_core::transport::memory;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcpl_core::Result<()> {
/// let engine = Engine::new();
/// let (ours, _theirs) = memory::pair();
/// let (sender, _unused) = ours.start().await?;
/// let counter = Arc::new(AtomicU32::new(0));
/// let driven = embed::drive_with_shared(&engine, sender, counter.clone());
/// counter.fetch_add(1, Ordering::Relaxed);
/// let held = driven.shared_data::<AtomicU32>().unwrap();
/// assert!(Arc::ptr_eq(&held, &counter));
/// assert_eq!(held.load(Ordering::Relaxed), 1);
/// # Ok(()) }
/// ```
pub fn drive_with_shared<S, D>(engine: &Engine, sender: S, data: Arc<D>) -> Driven
where
    S: TransportSender,
    D: std::any::Any + Send + Sync,
{
    engine.drive_with_shared(sender, data)
}

/// Like [`drive`], with `data` attached to the connection: its handlers read it with
/// [`Peer::data`](super::Peer::data).
pub fn drive_with<S, D>(engine: &Engine, sender: S, data: D) -> Driven
where
    S: TransportSender,
    D: std::any::Any + Send + Sync,
{
    engine.drive_with(sender, data)
}
