//! [`Client`]: era negotiation (`server/discover` or the `initialize` handshake) and typed calls.

use std::sync::{Arc, Mutex, PoisonError};

use mcpl_core::engine::{Engine, RequestOptions};
use mcpl_core::jsonrpc::RawJson;
use mcpl_core::types::{
    CallTool, CallToolRequestParams, CallToolResult, ClientCapabilities, Discover, DiscoverResult,
    EmptyResult, Implementation, ListTools, Method, Outcome, Ping, Tool,
};
use mcpl_core::{Era, Error, Peer, ProtocolVersion, Result, Transport};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cache::{CacheMode, ResponseCache};
use crate::handlers::Handlers;
use crate::input::InputRequiredMode;
use crate::link::Link;
use crate::mcpl::McplHost;
use crate::negotiation::{Hello, request_meta, stateless};
pub use crate::negotiation::{Negotiation, ServerDetails};
use crate::notify::Notify;

/// The most pages a list call follows before it stops, unless configured.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::client::DEFAULT_MAX_PAGES;
///
/// assert_eq!(DEFAULT_MAX_PAGES, 100);
/// // A client that talks to servers with very long lists follows more pages.
/// let client = Client::new("indexer", "1.0.0").with_max_pages(4 * DEFAULT_MAX_PAGES);
/// # drop(client);
/// ```
pub const DEFAULT_MAX_PAGES: usize = 100;

/// The most items a list call collects across its pages, unless configured.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::client::DEFAULT_MAX_LIST_ITEMS;
///
/// assert_eq!(DEFAULT_MAX_LIST_ITEMS, 10_000);
/// // A client for a server with very many resources collects more.
/// let client = Client::new("indexer", "1.0.0").with_max_list_items(10 * DEFAULT_MAX_LIST_ITEMS);
/// # drop(client);
/// ```
pub const DEFAULT_MAX_LIST_ITEMS: usize = 10_000;

/// The most bytes of JSON a list call accepts across its pages, unless configured (16 MiB).
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::client::DEFAULT_MAX_LIST_BYTES;
///
/// assert_eq!(DEFAULT_MAX_LIST_BYTES, 16 * 1024 * 1024);
/// let client = Client::new("small-device", "1.0.0").with_max_list_bytes(1024 * 1024);
/// # drop(client);
/// ```
pub const DEFAULT_MAX_LIST_BYTES: usize = 16 * 1024 * 1024;

/// A stateless-era `_meta` and the protocol version it was made for.
pub(crate) type MadeMeta = (ProtocolVersion, Map<String, Value>);

/// An MCP client. Cheap to clone; clones share the connection.
///
/// One instance holds at most one connection; [`close`](Self::close) then
/// [`connect`](Self::connect) again works on the same instance.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_core::types::ContentBlock;
/// use serde_json::json;
/// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .instructions("Echoes what you send.")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
/// #     Ok((server.serve(theirs).await?, ours))
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> mcpl_core::Result<()> {
/// // Any transport works: a child process, HTTP, WebSocket; here an in-process server.
/// # let (_session, transport) = echo_server().await?;
/// let client = Client::new("my-app", "1.0.0");
/// client.connect(transport).await?;
///
/// let tools = client.list_tools().await?;
/// assert_eq!(tools[0].name, "echo");
///
/// // Clones share the connection: hand one to another task.
/// let worker = client.clone();
/// let result = tokio::spawn(async move {
///     worker.call_tool("echo", json!({"text": "hello"})).await
/// })
/// .await
/// .expect("the task ran")?;
/// assert_eq!(result.content, [ContentBlock::text("hello")]);
///
/// client.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) engine: Engine,
    pub(crate) info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) negotiation: Negotiation,
    pub(crate) server: Arc<Mutex<Option<ServerDetails>>>,
    pub(crate) handlers: Handlers,
    pub(crate) input_mode: InputRequiredMode,
    pub(crate) max_pages: usize,
    pub(crate) max_list_items: usize,
    pub(crate) max_list_bytes: usize,
    pub(crate) notify: Notify,
    /// Refuse, locally, requests the server did not advertise (see [`crate::capability`]).
    pub(crate) strict: bool,
    /// The response cache, if any, and how calls use it (see [`crate::cache`]).
    pub(crate) cache: Option<ResponseCache>,
    pub(crate) cache_mode: CacheMode,
    /// The connection's endpoint identity and session handle (see [`crate::resume`]).
    pub(crate) link: Arc<Mutex<Link>>,
    /// The MCPL host side, if configured (see [`crate::mcpl`]).
    pub(crate) mcpl: Option<McplHost>,
    /// The per-request `_meta` of the stateless era, made once per protocol version: it
    /// depends on nothing else that can change for a built client (its identity, and its
    /// capabilities without the MCPL advertisement).
    pub(crate) request_meta: Arc<Mutex<Option<MadeMeta>>>,
}

impl Client {
    /// Deprecated: configure the client before it exists, with
    /// [`ClientBuilder::with_mcpl`](crate::ClientBuilder::with_mcpl). This returns a new,
    /// unconnected client with this one's configuration plus the change; the client it is
    /// called on and its clones are not changed.
    #[deprecated(
        since = "0.2.0",
        note = "use `Client::builder(name, version).with_mcpl(..)` then `build()`"
    )]
    pub fn with_mcpl(self, host: McplHost) -> Client {
        self.to_builder().with_mcpl(host).build()
    }

    /// The MCPL host side, if configured with [`with_mcpl`](Self::with_mcpl).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    ///
    /// assert!(Client::new("app", "1").mcpl().is_none());
    ///
    /// let client = Client::builder("host", "1").with_mcpl(McplHost::new(HostPolicy::default())).build();
    /// let host = client.mcpl().expect("configured");
    /// // Not connected yet: nothing negotiated.
    /// assert!(host.status().is_none());
    /// assert!(!host.is_ready());
    /// ```
    pub fn mcpl(&self) -> Option<&McplHost> {
        self.mcpl.as_ref()
    }

    /// Turns strict capability enforcement on or off (default: off). When on, every request
    /// whose capability the server did not advertise (`resources/list` without `resources`,
    /// `resources/subscribe` without `resources.subscribe`, ... see [`crate::capability`])
    /// fails locally with `CapabilityNotSupported` before anything is sent.
    ///
    /// ```
    /// let client = mcpl_client::Client::new("app", "1").with_strict_capabilities(true);
    /// # drop(client);
    /// ```
    pub fn with_strict_capabilities(mut self, strict: bool) -> Client {
        self.strict = strict;
        self
    }

    /// Pins the protocol version: shorthand for
    /// [`with_negotiation`](Self::with_negotiation)`(Negotiation::Pinned(version))`.
    ///
    /// # Errors
    ///
    /// None today: every version this SDK knows can be pinned. The `Result` is kept for
    /// compatibility.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::ProtocolVersion;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("app", "1.0.0").with_protocol_version(ProtocolVersion::V2025_03_26)?;
    /// let details = client.connect(transport).await?;
    /// assert_eq!(details.protocol_version, ProtocolVersion::V2025_03_26);
    /// # Ok(()) }
    /// ```
    pub fn with_protocol_version(self, version: ProtocolVersion) -> Result<Client> {
        Ok(self.with_negotiation(Negotiation::Pinned(version)))
    }

    /// The most pages a list call (`tools/list`, `resources/list`, ...) follows. Default: 100.
    /// A listing with more pages fails with `ListTruncated`
    /// ([`ListLimit::Pages`](mcpl_core::error::ListLimit::Pages)): a partial list is never
    /// returned as the whole.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A server with three tools, one per page.
    /// let server = Server::builder("paged", "1.0.0")
    ///     .page_size(1)
    ///     .tool(Tool::new("a", ToolSchema::object()), |_ctx, _args| async { Ok(ToolOutput::text("a")) })
    ///     .tool(Tool::new("b", ToolSchema::object()), |_ctx, _args| async { Ok(ToolOutput::text("b")) })
    ///     .tool(Tool::new("c", ToolSchema::object()), |_ctx, _args| async { Ok(ToolOutput::text("c")) })
    ///     .build();
    /// let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::new("app", "1.0.0").with_max_pages(2);
    /// client.connect(transport).await?;
    /// // Two pages followed, and a third remains: not the whole list.
    /// let err = client.list_tools().await.unwrap_err();
    /// assert_eq!(err.kind(), mcpl_core::ErrorKind::ListTruncated);
    /// # Ok(()) }
    /// ```
    pub fn with_max_pages(mut self, pages: usize) -> Client {
        self.max_pages = pages.max(1);
        self
    }

    /// The most items a list call collects across its pages. Default:
    /// [`DEFAULT_MAX_LIST_ITEMS`] (10,000). A listing with more fails with `ListTruncated`
    /// ([`ListLimit::Items`](mcpl_core::error::ListLimit::Items)), checked before a page's
    /// items are decoded.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::error::{Error, ListLimit};
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let server = Server::builder("three", "1.0.0")
    ///     .tool(Tool::new("a", ToolSchema::object()), |_ctx, _args| async { Ok(ToolOutput::text("a")) })
    ///     .tool(Tool::new("b", ToolSchema::object()), |_ctx, _args| async { Ok(ToolOutput::text("b")) })
    ///     .tool(Tool::new("c", ToolSchema::object()), |_ctx, _args| async { Ok(ToolOutput::text("c")) })
    ///     .build();
    /// let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::new("app", "1.0.0").with_max_list_items(2);
    /// client.connect(transport).await?;
    /// match client.list_tools().await {
    ///     Err(Error::ListTruncated { method, limit }) => {
    ///         assert_eq!((method.as_str(), limit), ("tools/list", ListLimit::Items(2)));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn with_max_list_items(mut self, items: usize) -> Client {
        self.max_list_items = items;
        self
    }

    /// The most bytes of JSON a list call accepts across its pages (each page counted as
    /// its result's compact JSON). Default: [`DEFAULT_MAX_LIST_BYTES`] (16 MiB). A listing
    /// with more fails with `ListTruncated`
    /// ([`ListLimit::Bytes`](mcpl_core::error::ListLimit::Bytes)). One page is also bounded by
    /// the transport's largest message.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::ErrorKind;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let mut tool = Tool::new("verbose", ToolSchema::object());
    /// tool.description = Some("x".repeat(4096));
    /// let server = Server::builder("verbose", "1.0.0")
    ///     .tool(tool, |_ctx, _args| async { Ok(ToolOutput::text("ok")) })
    ///     .build();
    /// let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::new("app", "1.0.0").with_max_list_bytes(1024);
    /// client.connect(transport).await?;
    /// assert_eq!(client.list_tools().await.unwrap_err().kind(), ErrorKind::ListTruncated);
    /// # Ok(()) }
    /// ```
    pub fn with_max_list_bytes(mut self, bytes: usize) -> Client {
        self.max_list_bytes = bytes;
        self
    }

    /// Sets how the protocol revision is chosen. Default: [`Negotiation::Auto`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2026_07_28));
    /// let details = client.connect(transport).await?;
    /// // A stateless revision is negotiated with `server/discover`, whose result is kept.
    /// assert!(details.discover.is_some());
    /// # Ok(()) }
    /// ```
    pub fn with_negotiation(mut self, negotiation: Negotiation) -> Client {
        self.negotiation = negotiation;
        self
    }

    /// Connects over `transport` and negotiates the protocol revision (see [`Negotiation`]):
    /// `server/discover` for the stateless (2026) era, the `initialize` handshake for the
    /// stateful one.
    ///
    /// # Errors
    ///
    /// - `AlreadyConnected` if this client is connected (the transport is not started).
    /// - `UnsupportedProtocolVersion` if the server answers with a version this SDK does not
    ///   speak, or (pinned) refuses the pinned one; pinned to a stateless revision, also when
    ///   the server speaks only the stateful era (it does not know `server/discover`:
    ///   `-32601`, a "not initialized" or "no session" refusal, HTTP `400`/`404`/`405`), with
    ///   no `supported` versions.
    /// - The transport's or the handshake's error. After any error the client is unconnected
    ///   and can connect again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the client unconnected.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::ErrorKind;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let client = Client::new("app", "1.0.0");
    /// # let (_session, transport) = echo_server().await?;
    /// let details = client.connect(transport).await?;
    /// assert_eq!(details.server_info.name, "echo-server");
    ///
    /// // One connection per client at a time.
    /// # let (_other, another) = echo_server().await?;
    /// let err = client.connect(another).await.unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::AlreadyConnected);
    /// # Ok(()) }
    /// ```
    pub async fn connect<T: Transport>(&self, transport: T) -> Result<ServerDetails> {
        let link = Link::of(&transport);
        let negotiation = match (self.negotiation, &self.mcpl) {
            (negotiation, None) => negotiation,
            (Negotiation::Pinned(v), Some(_)) if v.era() == Era::Stateless => {
                return Err(Error::UnsupportedProtocolVersion {
                    requested: v.to_string(),
                    supported: ProtocolVersion::ALL
                        .iter()
                        .filter(|v| v.era() == Era::Stateful)
                        .map(|v| v.to_string())
                        .collect(),
                });
            }
            (pinned, Some(_)) => pinned,
        };
        let hello = Hello {
            negotiation,
            // MCPL rides on `initialize`: a host tries the stateful era first.
            stateful_first: self.mcpl.is_some(),
            info: self.info.clone(),
            capabilities: self.capabilities(),
        };
        let (peer, details) = self
            .engine
            .connect_with(transport, |peer: Peer| async move { hello.run(&peer).await })
            .await?;
        self.established(details.clone(), link);
        if let Some(host) = &self.mcpl {
            if details.is_stateless() {
                // The stateless era has no MCPL: this connection is plain MCP.
                host.detach();
            } else {
                // The initial policy, before anything else MCPL.
                host.attach(peer, &details).await;
            }
        }
        Ok(details)
    }

    /// Records a connection that was just established.
    pub(crate) fn established(&self, details: ServerDetails, link: Link) {
        // The spans of the connection's later requests name its revision and session.
        if let Some(peer) = self.engine.peer() {
            let session = link.session.as_ref().and_then(mcpl_core::transport::SessionHandle::id);
            peer.update_trace_facts(|facts| {
                facts.protocol_version = Some(details.protocol_version);
                facts.session_id = session.map(Into::into);
            });
        }
        *self.server.lock().unwrap_or_else(PoisonError::into_inner) = Some(details);
        *self.link.lock().unwrap_or_else(PoisonError::into_inner) = link;
    }

    /// Closes the connection, ending its server-side session if it has one (a 2025-era HTTP
    /// session is `DELETE`d). The client can connect again afterwards. To keep the session for
    /// a later [`resume`](Self::resume), use [`suspend`](Self::suspend) instead.
    ///
    /// # Errors
    ///
    /// The transport's close error (the client is unconnected regardless).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::ErrorKind;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let client = Client::new("app", "1.0.0");
    /// # let (_session, transport) = echo_server().await?;
    /// client.connect(transport).await?;
    /// client.close().await?;
    /// assert!(!client.is_connected());
    /// assert_eq!(client.ping().await.unwrap_err().kind(), ErrorKind::ConnectionClosed);
    ///
    /// // The same client connects again.
    /// # let (_session, transport) = echo_server().await?;
    /// client.connect(transport).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<()> {
        self.close_keeping_session(false).await
    }

    /// Closes the connection; `keep` asks the transport to leave the server-side session alive.
    pub(crate) async fn close_keeping_session(&self, keep: bool) -> Result<()> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(host) = &self.mcpl {
            host.detach();
        }
        let link = std::mem::take(&mut *self.link.lock().unwrap_or_else(PoisonError::into_inner));
        if let Some(session) = &link.session {
            session.keep_on_close(keep);
        }
        self.engine.close().await
    }

    /// Whether the client is connected.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let client = Client::new("app", "1.0.0");
    /// assert!(!client.is_connected());
    /// # let (_session, transport) = echo_server().await?;
    /// client.connect(transport).await?;
    /// assert!(client.is_connected());
    /// client.close().await?;
    /// assert!(!client.is_connected());
    /// # Ok(()) }
    /// ```
    pub fn is_connected(&self) -> bool {
        self.engine.is_connected()
    }

    /// Resolves when the current connection ends (at once if there is none): closed by either
    /// side, or its transport failed. A supervisor awaits it to reconnect.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let client = mcpl_client::Client::new("app", "1");
    /// client.closed().await; // not connected: resolves at once
    /// # });
    /// ```
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let peer = self.engine.peer();
        async move {
            if let Some(peer) = peer {
                peer.closed().await;
            }
        }
    }

    /// What the server said about itself, while connected: `None` once the connection ended,
    /// whichever side ended it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// let client = Client::new("app", "1.0.0");
    /// assert!(client.server().is_none());
    /// # let (_session, transport) = echo_server().await?;
    /// client.connect(transport).await?;
    /// let server = client.server().expect("connected");
    /// assert_eq!(server.server_info.name, "echo-server");
    /// # Ok(()) }
    /// ```
    pub fn server(&self) -> Option<ServerDetails> {
        // A connection the server ended is not one: its details are gone with it.
        if !self.engine.is_connected() {
            return None;
        }
        self.with_server(ServerDetails::clone)
    }

    /// `f` of what the server said about itself, while connected (as [`server`](Self::server),
    /// without copying the details).
    pub(crate) fn with_server<R>(&self, f: impl FnOnce(&ServerDetails) -> R) -> Option<R> {
        if !self.engine.is_connected() {
            return None;
        }
        self.server.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(f)
    }

    pub(crate) fn peer(&self) -> Result<Peer> {
        self.engine.peer().ok_or(Error::ConnectionClosed)
    }

    /// The options of every request: in the stateless era, the per-request `_meta`.
    pub(crate) fn options(&self) -> RequestOptions {
        self.with_request_meta(RequestOptions::new())
    }

    /// `options` with, in the stateless era, the per-request `_meta` (protocol version,
    /// client capabilities, client identity).
    pub(crate) fn with_request_meta(&self, options: RequestOptions) -> RequestOptions {
        match self.with_server(|details| details.protocol_version) {
            Some(version) if version.era() == Era::Stateless => {
                options.meta(self.stateless_meta(version))
            }
            _ => options,
        }
    }

    /// The per-request `_meta` of the stateless era at `version`: made on the first request
    /// at that version, then copied.
    fn stateless_meta(&self, version: ProtocolVersion) -> Map<String, Value> {
        let mut made = self.request_meta.lock().unwrap_or_else(PoisonError::into_inner);
        match made.as_ref() {
            Some((known, meta)) if *known == version => meta.clone(),
            _ => {
                let meta = request_meta(version, &stateless(self.capabilities()), &self.info).0;
                *made = Some((version, meta.clone()));
                meta
            }
        }
    }

    /// The one path every typed request takes: strict capability check, response cache,
    /// then the wire.
    pub(crate) async fn send<M: Method>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<M::Result> {
        self.send_ref::<M>(&params, options).await
    }

    /// [`send`](Self::send) of borrowed params (which are only serialized).
    pub(crate) async fn send_ref<M: Method>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> Result<M::Result> {
        let result = self.send_json_ref::<M>(params, options).await?;
        result
            .decode()
            .map_err(|source| Error::Serialization { what: format!("{} result", M::NAME), source })
    }

    /// [`send`](Self::send) of borrowed params, with the result left as the encoded JSON it
    /// arrived as (decoded once, straight into its type, by the caller).
    pub(crate) async fn send_json_ref<M: Method>(
        &self,
        params: &M::Params,
        options: RequestOptions,
    ) -> Result<RawJson> {
        let params = serde_json::to_value(params).map_err(|source| Error::Serialization {
            what: format!("{} params", M::NAME),
            source,
        })?;
        self.exchange(M::NAME, params, options).await
    }

    /// [`send`](Self::send) with untyped params and result.
    async fn exchange(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<RawJson> {
        if self.strict
            && let Some(checked) =
                self.with_server(|server| crate::capability::check(method, &server.capabilities))
        {
            checked?;
        }
        if method.starts_with("tools/") && self.mcpl.as_ref().is_some_and(McplHost::denies_tools) {
            // MCPL: a denied `tools` grant means the host sends no `tools/*`.
            return Err(Error::CapabilityNotSupported { capability: "tools".into() });
        }
        let peer = self.peer()?;
        let wire = |params: Value| if params.is_null() { None } else { Some(params) };
        match &self.cache {
            Some(cache) => {
                let sent = wire(params.clone());
                let fetch = || async move { peer.request_raw(method, sent, options).await };
                let server =
                    self.link.lock().unwrap_or_else(PoisonError::into_inner).endpoint.clone();
                cache.exchange(server.as_deref(), self.cache_mode, method, &params, fetch).await
            }
            // No cache: the params go to the wire as they are.
            None => peer.request_raw(method, wire(params), options).await,
        }
    }

    /// Checks that the server answers: `ping`, or in the stateless era (which removed `ping`)
    /// `server/discover`.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`, a timeout, or the server's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0").build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    /// client.ping().await?;
    /// # Ok(()) }
    /// ```
    pub async fn ping(&self) -> Result<()> {
        if self.with_server(ServerDetails::is_stateless).unwrap_or(false) {
            let _: DiscoverResult =
                self.send::<Discover>(Default::default(), self.options()).await?;
        } else {
            let _: EmptyResult = self.send::<Ping>(Default::default(), self.options()).await?;
        }
        Ok(())
    }

    /// Lists every tool, following pagination cursors. Stops at a repeated cursor or at the
    /// page cap ([`with_max_pages`](Self::with_max_pages), default 100).
    ///
    /// # Errors
    ///
    /// `CapabilityNotSupported` if the server did not advertise tools; otherwise as
    /// [`ping`](Self::ping).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    /// let tools = client.list_tools().await?;
    /// let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    /// assert_eq!(names, ["echo"]);
    /// # Ok(()) }
    /// ```
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        if let Some(checked) = self
            .with_server(|server| crate::capability::check(ListTools::NAME, &server.capabilities))
        {
            checked?;
        }
        self.list_pages::<ListTools, _>(|page| (page.tools, page.next_cursor)).await
    }

    /// Calls a tool.
    ///
    /// `arguments` is anything that serializes to a JSON object: a struct, `json!({...})`, a
    /// `serde_json::Map`; `()` (or `json!(null)`) sends none.
    ///
    /// A tool that failed answers `Ok` with `is_error: Some(true)`; `Err` means the call could
    /// not be made or the server refused it.
    ///
    /// # Errors
    ///
    /// `Serialization` (nothing is sent) if `arguments` does not serialize to an object or
    /// null; otherwise as [`ping`](Self::ping).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the call on the server.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::types::ContentBlock;
    /// use serde_json::json;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    ///
    /// let result = client.call_tool("echo", json!({"text": "hello"})).await?;
    /// assert!(!result.is_error());
    /// assert_eq!(result.text().as_deref(), Some("hello"));
    /// assert_eq!(result.content, [ContentBlock::text("hello")]);
    ///
    /// // A tool the server does not have is refused: `Err`, not a failed result.
    /// assert!(client.call_tool("missing", ()).await.is_err());
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(&self, name: &str, arguments: impl Serialize) -> Result<CallToolResult> {
        self.call_tool_with(name, arguments, RequestOptions::new()).await
    }

    /// Calls a tool with request options: progress updates, a timeout, cancellation.
    ///
    /// In the stateless era the per-request `_meta` (protocol version, capabilities, client
    /// identity) replaces any `_meta` set with [`RequestOptions::meta`].
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    ///
    /// # Cancel safety
    ///
    /// As [`call_tool`](Self::call_tool).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// use mcpl_client::Client;
    /// use mcpl_core::engine::RequestOptions;
    /// # use mcpl_core::types::{Tool, ToolSchema};
    /// # use mcpl_server::{Server, ToolOutput};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// // A tool that reports progress while it works.
    /// let server = Server::builder("worker", "1.0.0")
    ///     .tool(Tool::new("work", ToolSchema::object()), |ctx, _args| async move {
    ///         for step in 1..=3 {
    ///             // Sent only if the request carried a progress token.
    ///             ctx.progress(f64::from(step), Some(3.0), None).await.ok();
    ///         }
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// # let (transport, theirs) = mcpl_core::transport::memory::pair();
    /// # let _session = server.serve(theirs).await?;
    ///
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = Arc::clone(&seen);
    /// let options = RequestOptions::new()
    ///     .timeout(Duration::from_secs(30))
    ///     .on_progress(move |update| log.lock().unwrap().push(update.progress));
    /// let result = client.call_tool_with("work", (), options).await?;
    /// assert_ne!(result.is_error, Some(true));
    /// // Progress sent before the result is delivered before the call returns.
    /// assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: RequestOptions,
    ) -> Result<CallToolResult> {
        let params = CallToolRequestParams::new(name).with_serialized_arguments(arguments)?;
        self.call_tool_params(params, options).await
    }

    /// Calls a tool with full params: for a manual input-required retry, set
    /// `input_responses` and `request_state` (see [`InputRequiredMode::Manual`]).
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    ///
    /// # Cancel safety
    ///
    /// As [`call_tool`](Self::call_tool).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_core::engine::RequestOptions;
    /// use mcpl_core::types::{CallToolRequestParams, ContentBlock};
    /// use serde_json::json;
    /// # async fn echo_server() -> mcpl_core::Result<(mcpl_server::Session, mcpl_core::transport::memory::MemoryTransport)> {
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let (ours, theirs) = mcpl_core::transport::memory::pair();
    /// #     Ok((server.serve(theirs).await?, ours))
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> mcpl_core::Result<()> {
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("app", "1.0.0");
    /// client.connect(transport).await?;
    ///
    /// let args = json!({"text": "hi"}).as_object().cloned().unwrap_or_default();
    /// let params = CallToolRequestParams::new("echo").with_arguments(args);
    /// let result = client.call_tool_params(params, RequestOptions::new()).await?;
    /// assert_eq!(result.content, [ContentBlock::text("hi")]);
    /// # Ok(()) }
    /// ```
    pub async fn call_tool_params(
        &self,
        params: CallToolRequestParams,
        options: RequestOptions,
    ) -> Result<CallToolResult> {
        let name = params.name.as_str();
        // The per-request `_meta` is added by `send_fulfilling`, to each send: what is kept for
        // the retry below is the caller's options alone.
        let outcome = match self.send_fulfilling::<CallTool, _>(&params, options.clone()).await {
            // The server's view of the tool's `x-mcp-header` annotations differs from ours:
            // refresh the tool list (which the HTTP transport learns them from) and retry once.
            Err(Error::HeaderMismatch { detail }) => {
                tracing::debug!(detail = ?detail, tool = ?name, "header mismatch; refreshing the tool list");
                // Past the cache: a cached list never reaches the transport, which would not
                // learn the headers again.
                let mode = match self.cache_mode {
                    CacheMode::Bypass => CacheMode::Bypass,
                    _ => CacheMode::Refresh,
                };
                self.with_cache_mode(mode).list_tools().await?;
                self.send_fulfilling::<CallTool, _>(&params, options).await?
            }
            other => other?,
        };
        match outcome {
            Outcome::Complete(result) => Ok(result),
            _ => Err(Error::Transport {
                context:
                    "the server answered tools/call with a result this release does not handle"
                        .into(),
                source: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_stateless_meta_is_made_once_per_version_and_equals_a_fresh_one() {
        let client = Client::new("app", "1.2.3");
        let fresh =
            |version| request_meta(version, &stateless(client.capabilities()), &client.info).0;
        let version = ProtocolVersion::V2026_07_28;
        assert_eq!(client.stateless_meta(version), fresh(version));
        // Cached: a second request at the same version gets the same `_meta`.
        assert_eq!(client.stateless_meta(version), fresh(version));
        // A meta kept for another version (a connection renegotiated) is not reused.
        let mut stale = Map::new();
        stale.insert("stale".into(), Value::Bool(true));
        *client.request_meta.lock().unwrap() = Some((ProtocolVersion::V2025_11_25, stale));
        assert_eq!(client.stateless_meta(version), fresh(version));
        let kept = client.request_meta.lock().unwrap().clone();
        assert_eq!(kept.map(|(v, _)| v), Some(version));
        // Clones share the cache; their configuration cannot change the `_meta`.
        let clone = client.clone().with_max_pages(3);
        assert_eq!(clone.stateless_meta(version), fresh(version));
    }
}
