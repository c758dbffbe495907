//! The single-use transport of one stateless-era request: what the endpoint serves each POST
//! with, and what a custom HTTP stack embeds to serve one with an engine of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::SinkExt;
use futures::StreamExt;
use futures::channel::mpsc::{Receiver, Sender, UnboundedReceiver, UnboundedSender};
use mcpl_core::engine::embed::LazyMeta;
use mcpl_core::jsonrpc::{ErrorObject, ErrorResponse, Message, Request, RequestId};
use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
use mcpl_core::{Error, Result};
use serde_json::{Value, json};

/// A transport that serves exactly one request.
///
/// It is created with the request and hands the engine that request, then whatever the engine
/// sends goes to the [`StatelessOutput`] until the response to the request. Starting it a
/// second time — even through a shared `Arc`, from many tasks at once — fails with
/// [`Error::StatelessTransportReuse`] before anything is written.
///
/// A server-to-client request (sampling, elicitation, roots) does not exist in the stateless
/// era; one sent through this transport is answered at once with a `-32601` error (ask for
/// input with an input-required result instead).
///
/// Clones share the one use: of any number of clones started at once, exactly one starts.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::{Engine, ErrorKind};
/// use mcpl_server::http::stateless::StatelessTransport;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let engine = Engine::new();
/// engine.on_request("ping", |_ctx, _params| async { Ok(json!({})) });
/// let (transport, mut output) = StatelessTransport::new(Request::new(1, "ping", None));
/// let again = transport.clone();
/// let _peer = engine.connect(transport).await?;
/// match output.recv().await {
///     Some(Message::Response(response)) => assert_eq!(response.result, json!({})),
///     other => panic!("unexpected {other:?}"),
/// }
/// // Single use: a clone cannot serve another request.
/// let err = Engine::new().connect(again).await.unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::StatelessTransportReuse);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct StatelessTransport {
    shared: Arc<SingleUse>,
}

#[derive(Debug)]
struct SingleUse {
    claimed: AtomicBool,
    parts: Mutex<Option<Parts>>,
}

#[derive(Debug)]
struct Parts {
    request: Request,
    /// The request's `_meta`, read on demand (its params then come without it).
    meta: Option<LazyMeta>,
    /// Where what the engine sends goes; `None`: nowhere (nothing but the answer is wanted,
    /// and the caller writes that itself).
    output: Option<Sender<Message>>,
}

/// How many messages may wait in a [`StatelessOutput`] for their reader (an HTTP client
/// reading the response's stream slowly): past this, a send waits, and with it the handler
/// (whose own sends wait for room in its connection's queue). A reader that stops for good is
/// cut by the connection's write timeout.
const OUTPUT_BUFFER: usize = 64;

/// A channel of [`OUTPUT_BUFFER`] messages (futures' channels allocate nothing up front;
/// Tokio's allocate a block of slots).
fn output_channel() -> (Sender<Message>, StatelessOutput) {
    let (output, rx) = futures::channel::mpsc::channel(OUTPUT_BUFFER);
    (output, StatelessOutput { rx })
}

/// Receives what the engine sends through a [`StatelessTransport`], in order.
///
/// Also a [`Stream`](futures::Stream) of the messages.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::Request;
/// use mcpl_server::http::stateless::{StatelessOutput, StatelessTransport};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let (transport, mut output): (StatelessTransport, StatelessOutput) =
///     StatelessTransport::new(Request::new(1, "tools/list", None));
/// drop(transport);
/// // Nothing was sent, and the sender is gone with the transport.
/// assert!(output.recv().await.is_none());
/// # });
/// ```
#[derive(Debug)]
pub struct StatelessOutput {
    rx: Receiver<Message>,
}

impl StatelessOutput {
    /// The next message sent; `None` once the transport's sender is gone.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::{Message, Request};
    /// use mcpl_core::Engine;
    /// use mcpl_server::http::stateless::StatelessTransport;
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let engine = Engine::new();
    /// engine.on_request("work", |ctx, _params| async move {
    ///     let _ = ctx.peer().notify("notifications/message", Some(json!({"data": "hi"}))).await;
    ///     Ok(json!({}))
    /// });
    /// let (transport, mut output) = StatelessTransport::new(Request::new(1, "work", None));
    /// let _peer = engine.connect(transport).await?;
    /// // What the handler sent as it went, then its answer.
    /// assert!(matches!(output.recv().await, Some(Message::Notification(_))));
    /// assert!(matches!(output.recv().await, Some(Message::Response(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn recv(&mut self) -> Option<Message> {
        self.rx.next().await
    }
}

impl futures::Stream for StatelessOutput {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        std::pin::Pin::new(&mut self.rx).poll_next(cx)
    }
}

impl StatelessTransport {
    /// A transport serving `request`, and the receiver of what is sent back.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::Request;
    /// use mcpl_server::http::stateless::StatelessTransport;
    ///
    /// let (transport, _output) = StatelessTransport::new(Request::new("a", "server/discover", None));
    /// # drop(transport);
    /// ```
    pub fn new(request: Request) -> (StatelessTransport, StatelessOutput) {
        let (output, rx) = output_channel();
        (StatelessTransport::of(request, None, Some(output)), rx)
    }

    fn of(
        request: Request,
        meta: Option<LazyMeta>,
        output: Option<Sender<Message>>,
    ) -> StatelessTransport {
        let parts = Parts { request, meta, output };
        let shared = SingleUse { claimed: AtomicBool::new(false), parts: Mutex::new(Some(parts)) };
        StatelessTransport { shared: Arc::new(shared) }
    }

    /// Takes the one use: `StatelessTransportReuse` if this transport, or a clone, took it.
    fn claim(&self) -> Result<Parts> {
        if self.shared.claimed.swap(true, Ordering::SeqCst) {
            return Err(Error::StatelessTransportReuse);
        }
        let parts = self.shared.parts.lock().unwrap_or_else(PoisonError::into_inner).take();
        parts.ok_or(Error::StatelessTransportReuse)
    }
}

/// A request the endpoint serves itself, inline on the HTTP task. Serving consumes it, so it
/// serves once by construction: unlike a [`StatelessTransport`] (which may be cloned and
/// must refuse a second use), it needs no shared cell to claim.
pub(crate) struct InlineRequest {
    parts: Parts,
}

impl InlineRequest {
    /// `request`, whose `_meta` is `meta` (read on demand), and, if `streaming`, the receiver
    /// of what its handler sends as it goes; without, that is dropped.
    pub(crate) fn new(
        request: Request,
        meta: Option<LazyMeta>,
        streaming: bool,
    ) -> (InlineRequest, Option<StatelessOutput>) {
        let (output, rx) = match streaming {
            true => {
                let (output, rx) = output_channel();
                (Some(output), Some(rx))
            }
            false => (None, None),
        };
        (InlineRequest { parts: Parts { request, meta, output } }, rx)
    }

    /// The request, its `_meta`, and the sender of what its handler sends as it goes (see
    /// [`embed::run_request`](mcpl_core::engine::embed::run_request), which serves them).
    pub(crate) fn into_parts(self) -> (Request, Option<LazyMeta>, StatelessSender) {
        let Parts { request, meta, output } = self.parts;
        let sender = StatelessSender { id: request.id.clone(), output, loopback: None };
        (request, meta, sender)
    }
}

impl Transport for StatelessTransport {
    type Sender = StatelessSender;
    type Receiver = StatelessReceiver;

    async fn start(self) -> Result<(StatelessSender, StatelessReceiver)> {
        let Parts { mut request, meta, output } = self.claim()?;
        // The engine reads `_meta` from the params it receives.
        if let Some(meta) = meta.as_ref().and_then(LazyMeta::map) {
            let params = request.params.get_or_insert_with(|| json!({}));
            if let Some(params) = params.as_object_mut() {
                params.insert("_meta".into(), Value::Object(meta.clone()));
            }
        }
        let (loopback, loopback_rx) = futures::channel::mpsc::unbounded();
        let id = request.id.clone();
        Ok((
            StatelessSender { id, output, loopback: Some(loopback) },
            StatelessReceiver { first: Some(request), loopback: loopback_rx },
        ))
    }
}

/// The sending half of a [`StatelessTransport`].
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Request, Response};
/// use mcpl_core::transport::{Transport, TransportReceiver, TransportSender};
/// use mcpl_server::http::stateless::StatelessTransport;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (transport, mut output) = StatelessTransport::new(Request::new(1, "ping", None));
/// let (mut sender, mut receiver) = transport.start().await?;
/// let Some(Message::Request(request)) = receiver.recv().await? else { panic!("the request") };
/// sender.send(Response::new(request.id, serde_json::json!({})).into()).await?;
/// assert!(matches!(output.recv().await, Some(Message::Response(_))));
/// // The exchange is over: the receiving side ends.
/// assert!(receiver.recv().await?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct StatelessSender {
    id: RequestId,
    /// Where what is sent goes (at most [`OUTPUT_BUFFER`] messages waiting); `None`: nowhere.
    output: Option<Sender<Message>>,
    /// To the receiving half, if there is one.
    loopback: Option<UnboundedSender<Option<Message>>>,
}

impl StatelessSender {
    fn loop_back(&self, message: Option<Message>) {
        if let Some(loopback) = &self.loopback {
            let _ = loopback.unbounded_send(message);
        }
    }
}

impl TransportSender for StatelessSender {
    async fn send(&mut self, message: Message) -> Result<()> {
        match message {
            Message::Request(r) => {
                let error = ErrorObject::method_not_found(&r.method).with_data(json!({
                    "reason": "server-to-client requests do not exist in the stateless era"
                }));
                self.loop_back(Some(ErrorResponse::new(Some(r.id), error).into()));
                Ok(())
            }
            message => {
                let done = message.id() == Some(&self.id)
                    && matches!(message, Message::Response(_) | Message::Error(_));
                if let Some(output) = &mut self.output {
                    // Waits while the reader is behind (see `OUTPUT_BUFFER`).
                    output.send(message).await.map_err(|_| Error::ConnectionClosed)?;
                }
                if done {
                    // The one exchange is over: end the receiving side too.
                    self.loop_back(None);
                }
                Ok(())
            }
        }
    }

    async fn close(self) -> Result<()> {
        Ok(())
    }
}

/// The receiving half of a [`StatelessTransport`].
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::{Message, Request};
/// use mcpl_core::transport::{Transport, TransportReceiver};
/// use mcpl_server::http::stateless::StatelessTransport;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (transport, _output) = StatelessTransport::new(Request::new(7, "tools/list", None));
/// let (_sender, mut receiver) = transport.start().await?;
/// // The one request comes first.
/// let Some(Message::Request(request)) = receiver.recv().await? else { panic!("the request") };
/// assert_eq!(request.method, "tools/list");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct StatelessReceiver {
    first: Option<Request>,
    loopback: UnboundedReceiver<Option<Message>>,
}

impl TransportReceiver for StatelessReceiver {
    async fn recv(&mut self) -> Result<Option<Message>> {
        if let Some(request) = self.first.take() {
            return Ok(Some(Message::Request(request)));
        }
        Ok(self.loopback.next().await.flatten())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use mcpl_core::engine::{Engine, embed};

    #[tokio::test]
    async fn what_waits_for_a_slow_reader_is_bounded() {
        use mcpl_core::jsonrpc::Notification;
        let request = Request::new(1, "work", None);
        let (request, output) = InlineRequest::new(request, None, true);
        let (_, _, mut sender) = request.into_parts();
        let mut output = output.unwrap();
        let note = |i: usize| Message::from(Notification::new("n", Some(json!(i))));
        let wait = std::time::Duration::from_millis(50);
        let mut sent = 0;
        // Nobody reads: sends complete until the buffer (and the sender's own slot) is full.
        while tokio::time::timeout(wait, sender.send(note(sent))).await.is_ok() {
            sent += 1;
            assert!(sent <= 10 * OUTPUT_BUFFER, "sends never wait");
        }
        assert_eq!(sent, OUTPUT_BUFFER);
        // What waits for the reader: the buffer, and the send that then waited (futures'
        // channels give each sender a slot of its own besides the buffer), in order.
        let mut waiting = 0;
        while let Ok(Message::Notification(n)) = output.rx.try_recv() {
            assert_eq!(n.params, Some(json!(waiting)));
            waiting += 1;
        }
        assert_eq!(waiting, OUTPUT_BUFFER + 1);
        // Read, the sender goes on at once.
        tokio::time::timeout(wait, sender.send(note(waiting))).await.unwrap().unwrap();
        let next = output.recv().await;
        assert!(matches!(next, Some(Message::Notification(n)) if n.params == Some(json!(waiting))));
    }

    #[tokio::test]
    async fn the_endpoint_serves_an_inline_request_its_handler_sending_to_the_output() {
        let meta = LazyMeta::new(|| json!({"progressToken": "p"}).as_object().cloned());
        let request = Request::new(1, "work", Some(json!({"a": 1})));
        let (request, output) = InlineRequest::new(request, Some(meta), true);
        let (Request { id, method, params }, meta, mut sender) = request.into_parts();
        let engine = Engine::new();
        let served =
            embed::run_request(&engine, id, method, meta, None, &mut sender, |ctx| async move {
                let _ = ctx.peer().notify("notifications/message", None).await;
                (ctx.progress_token().cloned(), params)
            })
            .await
            .unwrap();
        assert_eq!(served, (Some(json!("p")), Some(json!({"a": 1}))));
        let mut output = output.unwrap();
        assert!(matches!(output.recv().await, Some(Message::Notification(_))));
        // Without streaming, what the handler sends goes nowhere.
        let (request, output) = InlineRequest::new(Request::new(2, "work", None), None, false);
        assert!(output.is_none());
        let (_, _, mut sender) = request.into_parts();
        sender
            .send(Message::Notification(mcpl_core::jsonrpc::Notification::new("n", None)))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn started_it_hands_over_the_meta_it_read_on_demand() {
        let meta = LazyMeta::new(|| json!({"k": 1}).as_object().cloned());
        let request = Request::new(1, "work", Some(json!({"a": true})));
        let transport = StatelessTransport::of(request, Some(meta), None);
        let (mut sender, mut receiver) = transport.start().await.unwrap();
        let Some(Message::Request(request)) = receiver.recv().await.unwrap() else {
            panic!("the request")
        };
        assert_eq!(request.params, Some(json!({"a": true, "_meta": {"k": 1}})));
        // With no output, what is sent goes nowhere; the answer still ends the exchange.
        let answer = mcpl_core::jsonrpc::Response::new(request.id, json!({}));
        sender.send(answer.into()).await.unwrap();
        assert!(receiver.recv().await.unwrap().is_none());
    }
}
