//! [`Client`]: era negotiation (`server/discover` or the `initialize` handshake) and typed calls.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpl_core::engine::{Engine, RequestOptions};
use mcpl_core::jsonrpc::ErrorCode;
use mcpl_core::types::{
    CallTool, CallToolRequestParams, CallToolResult, ClientCapabilities, Discover, DiscoverResult,
    EmptyResult, Implementation, Initialize, InitializeRequestParams, InitializeResult,
    Initialized, ListTools, Meta, Method, Outcome, Ping, RequestParams, ServerCapabilities, Tool,
};
use mcpl_core::{Era, Error, ErrorKind, Peer, ProtocolVersion, Result, Transport};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cache::{CacheMode, ResponseCache};
use crate::handlers::Handlers;
use crate::input::InputRequiredMode;
use crate::mcpl::McplHost;
use crate::notify::Notify;
use crate::resume::Link;
use crate::transport::http::{INVALID_TOOL_HEADERS, SESSION_RENEWED, TOO_LARGE};
use crate::transport::redirect::RedirectRefused;

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

/// How long [`Negotiation::Auto`] waits for `server/discover` before trying `initialize`.
const DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// How the client picks the protocol revision when it connects.
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
/// // An mcpl-server answers `server/discover`: `Auto` picks the stateless era.
/// # let (_session, transport) = echo_server().await?;
/// let client = Client::new("app", "1.0.0").with_negotiation(Negotiation::Auto);
/// let details = client.connect(transport).await?;
/// assert_eq!(details.protocol_version, ProtocolVersion::V2026_07_28);
/// client.close().await?;
///
/// // Pinned to a 2025 revision, the same server is reached with `initialize`.
/// # let (_session, transport) = echo_server().await?;
/// let client = Client::new("app", "1.0.0")
///     .with_negotiation(Negotiation::Pinned(ProtocolVersion::V2025_11_25));
/// let details = client.connect(transport).await?;
/// assert_eq!(details.protocol_version, ProtocolVersion::V2025_11_25);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Negotiation {
    /// Try the stateless era first: `server/discover` under the newest revision. A server that
    /// answers `-32022` with a list of versions gets the newest one both sides speak (once);
    /// any other failure (`-32601`, HTTP `404` or `400`, an error that is not a 2026 one, no
    /// answer within 10 s) falls back to the `initialize` handshake.
    #[default]
    Auto,
    /// Speak exactly this revision: `server/discover` for a stateless-era version,
    /// `initialize` for a stateful one.
    Pinned(ProtocolVersion),
}

impl Negotiation {
    /// [`Negotiation::Auto`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Negotiation;
    ///
    /// assert_eq!(Negotiation::auto(), Negotiation::Auto);
    /// assert_eq!(Negotiation::auto(), Negotiation::default());
    /// ```
    pub fn auto() -> Negotiation {
        Negotiation::Auto
    }

    /// [`Negotiation::Pinned`] to `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_core::ProtocolVersion;
    ///
    /// let negotiation = Negotiation::pinned(ProtocolVersion::V2025_06_18);
    /// assert_eq!(negotiation, Negotiation::Pinned(ProtocolVersion::V2025_06_18));
    /// let client = Client::new("app", "1.0.0").with_negotiation(negotiation);
    /// # drop(client);
    /// ```
    pub fn pinned(version: ProtocolVersion) -> Negotiation {
        Negotiation::Pinned(version)
    }
}

/// What the server told the client about itself in the handshake (`initialize`) or in
/// `server/discover`. Serializable, as part of a
/// [`SessionSnapshot`](crate::resume::SessionSnapshot).
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
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
/// # let (_session, transport) = echo_server().await?;
/// let client = Client::new("app", "1.0.0");
/// let details = client.connect(transport).await?;
/// assert_eq!(details.server_info.name, "echo-server");
/// assert_eq!(details.instructions.as_deref(), Some("Echoes what you send."));
/// assert!(details.capabilities.tools.is_some());
/// // `server/discover` also lists the revisions the server speaks.
/// assert!(details.supported_versions.iter().any(|v| v == "2026-07-28"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerDetails {
    /// The negotiated protocol version.
    pub protocol_version: ProtocolVersion,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's identity.
    pub server_info: Implementation,
    /// The server's instructions, if any.
    pub instructions: Option<String>,
    /// The revisions the server says it supports (from `server/discover`; empty after
    /// `initialize`, which does not list them).
    pub supported_versions: Vec<String>,
    /// The whole `server/discover` result, in the stateless era.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discover: Option<DiscoverResult>,
}

impl ServerDetails {
    /// Whether the connection speaks the stateless (2026) era, where every request carries its
    /// own `_meta`.
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
    /// let details = Client::new("app", "1.0.0").connect(transport).await?;
    /// assert!(details.is_stateless());
    ///
    /// # let (_session, transport) = echo_server().await?;
    /// let stateful = Client::new("app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// assert!(!stateful.connect(transport).await?.is_stateless());
    /// # Ok(()) }
    /// ```
    pub fn is_stateless(&self) -> bool {
        self.protocol_version.era() == Era::Stateless
    }
}

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
    info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
    negotiation: Negotiation,
    pub(crate) server: Arc<Mutex<Option<ServerDetails>>>,
    pub(crate) handlers: Handlers,
    pub(crate) input_mode: InputRequiredMode,
    pub(crate) max_pages: usize,
    pub(crate) max_list_items: usize,
    pub(crate) max_list_bytes: usize,
    pub(crate) notify: Notify,
    /// Refuse, locally, requests the server did not advertise (see [`crate::capability`]).
    strict: bool,
    /// The response cache, if any, and how calls use it (see [`crate::cache`]).
    pub(crate) cache: Option<ResponseCache>,
    pub(crate) cache_mode: CacheMode,
    /// The connection's endpoint identity and session handle (see [`crate::resume`]).
    pub(crate) link: Arc<Mutex<Link>>,
    /// The MCPL host side, if configured (see [`crate::mcpl`]).
    pub(crate) mcpl: Option<McplHost>,
}

impl Client {
    /// Creates a client that calls itself `name`, version `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    ///
    /// let client = Client::new("my-app", "1.0.0");
    /// assert!(!client.is_connected());
    /// assert!(client.server().is_none());
    /// ```
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Client {
        let engine = Engine::new();
        // Both sides of an MCP connection answer `ping` with an empty result.
        engine.on::<Ping, _, _>(|_ctx, _params| async { Ok(EmptyResult::default()) });
        let link = Arc::new(Mutex::new(Link::default()));
        let notify = Notify::new(Arc::clone(&link));
        notify.install(&engine);
        let server = Arc::new(Mutex::new(None));
        let renewed = Arc::clone(&server);
        engine.on_notification(SESSION_RENEWED, move |_ctx, params| {
            let renewed = Arc::clone(&renewed);
            async move { refresh(&renewed, params) }
        });
        Client {
            engine,
            info: Implementation::new(name, version),
            capabilities: ClientCapabilities::default(),
            negotiation: Negotiation::Auto,
            server,
            handlers: Handlers::default(),
            input_mode: InputRequiredMode::default(),
            max_pages: DEFAULT_MAX_PAGES,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            notify,
            strict: false,
            cache: None,
            cache_mode: CacheMode::Use,
            link,
            mcpl: None,
        }
    }

    /// Speaks MCPL on every connection with `host`'s policy and handlers (see
    /// [`crate::mcpl`]). MCPL lives in the `initialize` (2025) era, so
    /// [`Negotiation::Auto`] tries `initialize` first; a server that does not speak that era
    /// (it answers `initialize` with an error) is reached with `server/discover` in the
    /// stateless era instead, as plain MCP (the host's `status()` stays `None`). Pinning a
    /// stateless revision makes [`connect`](Self::connect) fail. The host advertisement joins
    /// the client capabilities (`experimental.mcpl`) of the `initialize` era only.
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    ///
    /// let client = Client::new("host", "1").with_mcpl(McplHost::new(HostPolicy::default()));
    /// let experimental = client.capabilities().experimental.unwrap();
    /// assert_eq!(experimental["mcpl"]["version"], "0.5");
    /// ```
    pub fn with_mcpl(mut self, host: McplHost) -> Client {
        host.install(&self.engine);
        // A renewed 2025 HTTP session is a new server-side session: its MCPL state starts
        // over from the new `initialize` result, with a new initial policy.
        let server = Arc::clone(&self.server);
        let weak = host.weak();
        self.engine.on_notification(SESSION_RENEWED, move |ctx, params| {
            let server = Arc::clone(&server);
            let weak = weak.clone();
            let peer = ctx.peer().clone();
            async move {
                refresh(&server, params);
                let details = server.lock().unwrap_or_else(PoisonError::into_inner).clone();
                if let (Some(host), Some(details)) = (McplHost::from_weak(&weak), details) {
                    tokio::spawn(async move { host.attach(peer, &details).await });
                }
            }
        });
        self.mcpl = Some(host);
        self
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
    /// let client = Client::new("host", "1").with_mcpl(McplHost::new(HostPolicy::default()));
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
        self.server.lock().unwrap_or_else(PoisonError::into_inner).clone()
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
        match self.server() {
            Some(details) if details.is_stateless() => options.meta(
                request_meta(details.protocol_version, &stateless(self.capabilities()), &self.info)
                    .0,
            ),
            _ => options,
        }
    }

    /// The one path every typed request takes: strict capability check, response cache,
    /// then the wire.
    pub(crate) async fn send<M: Method>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<M::Result> {
        let value = self.send_value::<M>(params, options).await?;
        serde_json::from_value(value)
            .map_err(|source| Error::Serialization { what: format!("{} result", M::NAME), source })
    }

    /// [`send`](Self::send), with the result left as JSON.
    pub(crate) async fn send_value<M: Method>(
        &self,
        params: M::Params,
        options: RequestOptions,
    ) -> Result<Value> {
        let params = serde_json::to_value(&params).map_err(|source| Error::Serialization {
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
    ) -> Result<Value> {
        if self.strict {
            if let Some(server) = self.server() {
                crate::capability::check(method, &server.capabilities)?;
            }
        }
        if method.starts_with("tools/") && self.mcpl.as_ref().is_some_and(McplHost::denies_tools) {
            // MCPL: a denied `tools` grant means the host sends no `tools/*`.
            return Err(Error::CapabilityNotSupported { capability: "tools".into() });
        }
        let peer = self.peer()?;
        let wire = if params.is_null() { None } else { Some(params.clone()) };
        let fetch = || async move { peer.request(method, wire, options).await.map_err(lift) };
        match &self.cache {
            Some(cache) => {
                let server =
                    self.link.lock().unwrap_or_else(PoisonError::into_inner).endpoint.clone();
                cache.exchange(server.as_deref(), self.cache_mode, method, &params, fetch).await
            }
            None => fetch().await,
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
        if self.server().is_some_and(|s| s.is_stateless()) {
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
        if let Some(server) = self.server() {
            crate::capability::check(ListTools::NAME, &server.capabilities)?;
        }
        self.list_pages::<ListTools, _>("tools", |page| (page.tools, page.next_cursor)).await
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
        let mut params = CallToolRequestParams::new(name);
        if let Some(arguments) = tool_arguments(arguments)? {
            params = params.with_arguments(arguments);
        }
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
        let name = params.name.clone();
        let name = name.as_str();
        let options = self.with_request_meta(options);
        let outcome = match self
            .send_fulfilling::<CallTool, _>(params.clone(), options.clone())
            .await
        {
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
                self.send_fulfilling::<CallTool, _>(params, options).await?
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

/// What the client says about itself when it connects.
struct Hello {
    negotiation: Negotiation,
    /// [`Negotiation::Auto`] tries `initialize` before `server/discover` (an MCPL host).
    stateful_first: bool,
    info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
}

impl Hello {
    async fn run(&self, peer: &Peer) -> Result<ServerDetails> {
        match self.negotiation {
            Negotiation::Pinned(v) if v.era() == Era::Stateless => {
                self.discover(peer, v, RequestOptions::new()).await.map_err(|e| {
                    if !stateful_only(&e) {
                        return e;
                    }
                    tracing::debug!(error = %e, "the server speaks only the stateful era");
                    Error::UnsupportedProtocolVersion {
                        requested: v.to_string(),
                        supported: Vec::new(),
                    }
                })
            }
            Negotiation::Pinned(v) => self.initialize(peer, v).await,
            Negotiation::Auto if self.stateful_first => self.stateful_first(peer).await,
            Negotiation::Auto => {
                let options = RequestOptions::new().timeout(DISCOVER_TIMEOUT);
                match self.discover(peer, ProtocolVersion::LATEST, options).await {
                    Ok(details) => Ok(details),
                    Err(Error::UnsupportedProtocolVersion { supported, requested }) => {
                        tracing::debug!(%requested, ?supported, "retrying with a mutual version");
                        match mutual(&supported) {
                            Some(v) if v.era() == Era::Stateless => {
                                self.discover(peer, v, RequestOptions::new()).await
                            }
                            Some(v) => self.initialize(peer, v).await,
                            None => self.initialize(peer, ProtocolVersion::LATEST_STATEFUL).await,
                        }
                    }
                    Err(e) if e.is_closed() => Err(e),
                    Err(e) => {
                        tracing::debug!(error = %e, "server/discover failed; trying initialize");
                        self.initialize(peer, ProtocolVersion::LATEST_STATEFUL).await
                    }
                }
            }
        }
    }

    /// [`Negotiation::Auto`] for an MCPL host: `initialize` (where MCPL lives); a server that
    /// answers it with an error is asked `server/discover` (the stateless era, plain MCP). When
    /// both fail, the error of the era the server seems to speak is returned: `discover`'s if
    /// `initialize` was unknown to it (`-32601`) or refused for its version, else
    /// `initialize`'s.
    async fn stateful_first(&self, peer: &Peer) -> Result<ServerDetails> {
        let refused = match self.initialize(peer, ProtocolVersion::LATEST_STATEFUL).await {
            Ok(details) => return Ok(details),
            Err(e) if e.is_closed() => return Err(e),
            Err(e) => e,
        };
        if let Error::UnsupportedProtocolVersion { supported, .. } = &refused {
            match mutual(supported) {
                Some(v) if v.era() == Era::Stateful => return self.initialize(peer, v).await,
                Some(v) => return self.discover(peer, v, RequestOptions::new()).await,
                None => {}
            }
        }
        tracing::debug!(error = %refused, "initialize failed; trying server/discover");
        let options = RequestOptions::new().timeout(DISCOVER_TIMEOUT);
        let discovered = match self.discover(peer, ProtocolVersion::LATEST, options).await {
            Err(Error::UnsupportedProtocolVersion { supported, requested }) => {
                match mutual(&supported).filter(|v| v.era() == Era::Stateless) {
                    Some(v) => self.discover(peer, v, RequestOptions::new()).await,
                    None => Err(Error::UnsupportedProtocolVersion { supported, requested }),
                }
            }
            other => other,
        };
        let unknown_era = refused.kind() == ErrorKind::UnsupportedProtocolVersion
            || refused.rpc_error().is_some_and(|o| o.code == ErrorCode::METHOD_NOT_FOUND);
        match discovered {
            Err(e) if !unknown_era => {
                tracing::debug!(error = %e, "server/discover failed too");
                Err(refused)
            }
            other => other,
        }
    }

    async fn discover(
        &self,
        peer: &Peer,
        version: ProtocolVersion,
        options: RequestOptions,
    ) -> Result<ServerDetails> {
        let meta = request_meta(version, &stateless(self.capabilities.clone()), &self.info);
        let result: DiscoverResult =
            peer.send::<Discover>(RequestParams::with_meta(meta), options).await.map_err(lift)?;
        let server_info = result
            .meta
            .as_ref()
            .and_then(|m| m.server_info().ok().flatten())
            .unwrap_or_else(|| Implementation::new("", ""));
        Ok(ServerDetails {
            protocol_version: version,
            capabilities: result.capabilities.clone(),
            server_info,
            instructions: result.instructions.clone(),
            supported_versions: result.supported_versions.clone(),
            discover: Some(result),
        })
    }

    async fn initialize(&self, peer: &Peer, version: ProtocolVersion) -> Result<ServerDetails> {
        let params = InitializeRequestParams::new(
            version.as_str(),
            self.capabilities.clone(),
            self.info.clone(),
        );
        let result: InitializeResult =
            peer.send::<Initialize>(params, RequestOptions::new()).await.map_err(lift)?;
        let details = negotiate(result)?;
        peer.send_notification::<Initialized>(Default::default()).await?;
        Ok(details)
    }
}

/// `capabilities` as the stateless era sees them: without the MCPL host advertisement (MCPL
/// needs `initialize`).
fn stateless(mut capabilities: ClientCapabilities) -> ClientCapabilities {
    if let Some(experimental) = &mut capabilities.experimental {
        experimental.remove(mcpl_core::mcpl::manifest::EXPERIMENTAL_KEY);
        if experimental.is_empty() {
            capabilities.experimental = None;
        }
    }
    capabilities
}

/// The `_meta` every stateless-era request carries.
fn request_meta(
    version: ProtocolVersion,
    capabilities: &ClientCapabilities,
    info: &Implementation,
) -> Meta {
    let mut meta = Meta::for_request(version, capabilities);
    meta.set_client_info(info);
    meta
}

/// Whether `error`, the answer to a stateless-era `server/discover`, shows a server of the
/// stateful era only: it does not know the method (`-32601`), finds the request invalid
/// (`-32600`) or refuses it with an implementation-defined server error (`-32000` to
/// `-32099`, such as "server not initialized" or "no session", other than the codes this
/// era defines), or the HTTP endpoint answers `400`, `404` or `405` with no JSON-RPC body.
fn stateful_only(error: &Error) -> bool {
    let Some(e) = error.rpc_error() else { return false };
    if let Some(data) = e.data.as_ref().filter(|d| d.get("transport").is_some()) {
        let http = data.get("transport").and_then(Value::as_str) == Some("http");
        let status = data.get("status").and_then(Value::as_u64);
        return http && matches!(status, Some(400 | 404 | 405));
    }
    let stateless_codes = [ErrorCode::RESOURCE_NOT_FOUND, ErrorCode::URL_ELICITATION_REQUIRED];
    match e.code {
        ErrorCode::METHOD_NOT_FOUND | ErrorCode::INVALID_REQUEST => true,
        code => (-32099..=-32000).contains(&code.0) && !stateless_codes.contains(&code),
    }
}

/// The newest version in `supported` that this SDK speaks.
fn mutual(supported: &[String]) -> Option<ProtocolVersion> {
    ProtocolVersion::ALL.iter().rev().copied().find(|v| supported.iter().any(|s| s == v.as_str()))
}

/// Turns the transport's local answers back into typed errors: "response too large", "tool
/// with invalid `x-mcp-header` annotations" and "redirect refused".
pub(crate) fn lift(error: Error) -> Error {
    if let Some(data) = error.rpc_error().and_then(|e| e.data.as_ref()) {
        if let Some(refused) = RedirectRefused::from_data(data) {
            return Error::Transport {
                context: "the request was redirected".into(),
                source: Some(Box::new(refused)),
            };
        }
        if data.get("transport").and_then(Value::as_str) == Some(INVALID_TOOL_HEADERS) {
            let text = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            return Error::InvalidToolHeaders { tool: text("tool"), detail: text("detail") };
        }
    }
    let limit = error
        .rpc_error()
        .and_then(|e| e.data.as_ref())
        .filter(|d| d.get("transport").and_then(Value::as_str) == Some(TOO_LARGE))
        .and_then(|d| d.get("limit"))
        .and_then(Value::as_u64)
        .and_then(|l| usize::try_from(l).ok());
    match limit {
        Some(limit) => Error::MessageTooLarge { limit },
        None => error,
    }
}

/// Adopts the server's details from the `initialize` result of a renewed session.
fn refresh(server: &Mutex<Option<ServerDetails>>, params: Option<Value>) {
    let details = params
        .ok_or_else(|| "no result".to_owned())
        .and_then(|p| serde_json::from_value::<InitializeResult>(p).map_err(|e| e.to_string()))
        .and_then(|r| negotiate(r).map_err(|e| e.to_string()));
    match details {
        Ok(details) => {
            tracing::debug!(server = ?details.server_info.name, "session renewed");
            *server.lock().unwrap_or_else(PoisonError::into_inner) = Some(details);
        }
        Err(e) => tracing::warn!(error = ?e, "unusable initialize result after a renewal"),
    }
}

fn negotiate(result: InitializeResult) -> Result<ServerDetails> {
    let version = ProtocolVersion::parse(&result.protocol_version)
        .filter(|v| v.era() == Era::Stateful)
        .ok_or_else(|| Error::UnsupportedProtocolVersion {
            requested: result.protocol_version.clone(),
            supported: ProtocolVersion::ALL
                .iter()
                .filter(|v| v.era() == Era::Stateful)
                .map(|v| v.to_string())
                .collect(),
        })?;
    Ok(ServerDetails {
        protocol_version: version,
        capabilities: result.capabilities,
        server_info: result.server_info,
        instructions: result.instructions,
        supported_versions: Vec::new(),
        discover: None,
    })
}

/// The arguments of a tool call from any serializable value: an object, or none for null.
fn tool_arguments(arguments: impl Serialize) -> Result<Option<Map<String, Value>>> {
    let invalid = |source| Error::Serialization { what: "the tool arguments".to_owned(), source };
    match serde_json::to_value(arguments).map_err(invalid)? {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(None),
        other => Err(invalid(serde::ser::Error::custom(format!(
            "tool arguments must be a JSON object, not {}",
            json_type(&other)
        )))),
    }
}

/// The JSON type name of `value`, for error messages.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_arguments_are_any_object_or_none() {
        #[derive(Serialize)]
        struct Query {
            city: &'static str,
        }
        let expected = json!({"city": "Lisbon"}).as_object().cloned();
        assert_eq!(tool_arguments(Query { city: "Lisbon" }).unwrap(), expected);
        assert_eq!(tool_arguments(json!({"city": "Lisbon"})).unwrap(), expected);
        assert_eq!(tool_arguments(expected.clone().unwrap()).unwrap(), expected);
        assert_eq!(tool_arguments(()).unwrap(), None);
        assert_eq!(tool_arguments(json!(null)).unwrap(), None);
        for bad in [json!([1]), json!("x"), json!(3), json!(true)] {
            let error = tool_arguments(&bad).unwrap_err();
            assert_eq!(error.kind(), mcpl_core::ErrorKind::Serialization, "{bad}");
            let cause = std::error::Error::source(&error).unwrap().to_string();
            assert!(cause.contains("must be a JSON object"), "{cause}");
        }
    }

    #[test]
    fn mutual_version_is_the_newest_both_speak() {
        let supported = ["2025-06-18".to_owned(), "1999-01-01".to_owned(), "2025-03-26".to_owned()];
        assert_eq!(mutual(&supported), Some(ProtocolVersion::V2025_06_18));
        assert_eq!(mutual(&["1999-01-01".to_owned()]), None);
    }

    #[test]
    fn which_discover_failures_show_a_stateful_only_server() {
        let rpc = |code: i64, data: Option<Value>| {
            let mut object = ErrorObject::new(ErrorCode(code), "no");
            object.data = data;
            Error::from_rpc(object)
        };
        for code in [-32601, -32600, -32000, -32001, -32099] {
            assert!(stateful_only(&rpc(code, None)), "{code}");
        }
        for code in [-32603, -32602, -32002, -32042, -32100, 1] {
            assert!(!stateful_only(&rpc(code, None)), "{code}");
        }
        for status in [400, 404, 405] {
            let data = json!({"transport": "http", "status": status});
            assert!(stateful_only(&rpc(-32603, Some(data))), "{status}");
        }
        for data in [json!({"transport": "http", "status": 500}), json!({"transport": "http"})] {
            assert!(!stateful_only(&rpc(-32603, Some(data))));
        }
        // A transport's local answer is never read as the server's refusal.
        let too_large = json!({"transport": TOO_LARGE, "limit": 10});
        assert!(!stateful_only(&rpc(-32601, Some(too_large))));
        assert!(!stateful_only(&Error::ConnectionClosed));
    }

    #[test]
    fn oversized_transport_answers_become_message_too_large() {
        let object = ErrorObject::new(ErrorCode::INTERNAL_ERROR, "too big")
            .with_data(json!({"transport": TOO_LARGE, "limit": 10}));
        let lifted = lift(Error::from_rpc(object));
        assert!(matches!(lifted, Error::MessageTooLarge { limit: 10 }));
        let other = lift(Error::from_rpc(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "x")));
        assert_eq!(other.kind(), mcpl_core::ErrorKind::Rpc);
    }

    #[test]
    fn refused_tools_become_invalid_tool_headers() {
        let object = ErrorObject::new(ErrorCode::INTERNAL_ERROR, "refused").with_data(
            json!({"transport": INVALID_TOOL_HEADERS, "tool": "t", "detail": "bad header"}),
        );
        match lift(Error::from_rpc(object)) {
            Error::InvalidToolHeaders { tool, detail } => {
                assert_eq!((tool.as_str(), detail.as_str()), ("t", "bad header"));
            }
            other => panic!("{other:?}"),
        }
    }
}
