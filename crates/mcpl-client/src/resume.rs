//! Session resume: save a connection as a [`SessionSnapshot`], close it without ending the
//! server-side session, and continue it later on the same [`Client`] instance (or another one,
//! in another process).
//!
//! The snapshot holds everything the handshake produced: the session id (2025-era HTTP), the
//! protocol version, the server's capabilities, identity and instructions, the 2026-era
//! `server/discover` result, and the endpoint identity the response cache partitions by.
//! [`Client::resume`] restores all of it, so getters return the server's data, strict
//! capability checks keep working, and the cache keeps using that server's entries. Resuming
//! sends nothing: in the 2026 era the saved discover result stands in for `server/discover`;
//! in the 2025 era the transport continues the session by its id. (An MCPL host is the one
//! exception: it sends its initial `featureSets/update` again, see [`Client::resume`].)
//!
//! ```no_run
//! use mcpl_client::Client;
//! use mcpl_client::resume::SessionSnapshot;
//! use mcpl_client::transport::HttpTransport;
//!
//! # async fn run() -> mcpl_core::Result<()> {
//! let client = Client::new("my-app", "1.0.0");
//! client.connect(HttpTransport::new("http://127.0.0.1:3000/mcp")).await?;
//! // Close, keeping the server-side session; the snapshot is plain serde data.
//! let snapshot = client.suspend().await?;
//! let saved = serde_json::to_string(&snapshot).map_err(|e| mcpl_core::Error::Serialization {
//!     what: "snapshot".into(),
//!     source: e,
//! })?;
//! // Later: continue where it left off.
//! let snapshot: SessionSnapshot = serde_json::from_str(&saved).map_err(|e| {
//!     mcpl_core::Error::Serialization { what: "snapshot".into(), source: e }
//! })?;
//! client.resume(HttpTransport::new("http://127.0.0.1:3000/mcp"), snapshot).await?;
//! // And end the session for good.
//! client.terminate().await?;
//! # Ok(()) }
//! ```

use std::sync::PoisonError;

use mcpl_core::transport::SessionHandle;
use mcpl_core::{Era, Error, Result, Transport};
use serde::{Deserialize, Serialize};

use crate::client::Client;
use crate::link::Link;
use crate::negotiation::ServerDetails;

/// A connection saved for [`Client::resume`]. Serializable with serde (camelCase JSON).
///
/// # Examples
///
/// ```
/// use mcpl_client::{Client, Negotiation, SessionSnapshot};
/// use mcpl_client::transport::HttpTransport;
/// use mcpl_core::ProtocolVersion;
/// # async fn serve_http() -> std::io::Result<String> {
/// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
/// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
/// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
/// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
/// #             Ok(mcpl_server::ToolOutput::text(text))
/// #         })
/// #         .build();
/// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
/// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// #     let url = format!("http://{}/mcp", listener.local_addr()?);
/// #     tokio::spawn(mcpl_server::http::serve(listener, app));
/// #     Ok(url)
/// # }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A 2025-era Streamable HTTP session, on a local port.
/// let url = serve_http().await?;
/// let client = Client::new("my-app", "1.0.0")
///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
/// client.connect(HttpTransport::new(url.clone())).await?;
///
/// let snapshot = client.suspend().await?;
/// assert!(snapshot.session_id.is_some());
/// assert_eq!(snapshot.endpoint.as_deref(), Some(url.as_str()));
/// // Plain serde data: store it anywhere.
/// let saved = serde_json::to_string(&snapshot)?;
///
/// // Later, maybe in another process: the same session continues.
/// let restored: SessionSnapshot = serde_json::from_str(&saved)?;
/// assert_eq!(restored, snapshot);
/// let client = Client::new("my-app", "1.0.0");
/// client.resume(HttpTransport::new(url), restored).await?;
/// client.call_tool("echo", ()).await?;
/// client.terminate().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionSnapshot {
    /// The 2025-era session id (Streamable HTTP), if the connection had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What the server said about itself: protocol version, capabilities, server info,
    /// instructions, supported versions and the 2026-era discover result.
    pub server: ServerDetails,
    /// The endpoint identity (URL, command line) the response cache partitions by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

impl SessionSnapshot {
    /// Whether the snapshot can be resumed: a stateless-era connection always can; a
    /// stateful-era one only with a session id (over stdio, the session dies with the process).
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
    /// // The stateless era: every request stands alone, so any connection can be resumed.
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(transport).await?;
    /// assert!(client.session_snapshot().expect("connected").is_resumable());
    ///
    /// // A stateful-era stream (stdio, or in memory as here) has no session id: its session ends
    /// // with the transport.
    /// # let (_session, transport) = echo_server().await?;
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// client.connect(transport).await?;
    /// assert!(!client.session_snapshot().expect("connected").is_resumable());
    /// # Ok(()) }
    /// ```
    pub fn is_resumable(&self) -> bool {
        self.server.protocol_version.era() == Era::Stateless || self.session_id.is_some()
    }
}

impl Client {
    /// The snapshot of the current connection, or `None` when unconnected (also once the
    /// server ended the connection).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::ProtocolVersion;
    /// # async fn serve_http() -> std::io::Result<String> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok(url)
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_http().await?;
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// assert!(client.session_snapshot().is_none());
    ///
    /// client.connect(HttpTransport::new(url.clone())).await?;
    /// let snapshot = client.session_snapshot().expect("connected");
    /// assert!(snapshot.session_id.is_some());
    /// assert_eq!(snapshot.server.server_info.name, "echo-server");
    /// assert_eq!(snapshot.endpoint, Some(url));
    /// // Taking a snapshot changes nothing: the client stays connected.
    /// assert!(client.is_connected());
    /// # Ok(()) }
    /// ```
    pub fn session_snapshot(&self) -> Option<SessionSnapshot> {
        let server = self.server()?;
        let link = self.link.lock().unwrap_or_else(PoisonError::into_inner);
        Some(SessionSnapshot {
            session_id: link.session.as_ref().and_then(SessionHandle::id),
            server,
            endpoint: link.endpoint.clone(),
        })
    }

    /// Closes the connection but keeps its server-side session (no HTTP `DELETE`), and returns
    /// the snapshot to [`resume`](Self::resume) it with.
    ///
    /// # Errors
    ///
    /// - `ConnectionClosed` if the client is not connected (the server may have ended the
    ///   connection).
    /// - `Transport` if the connection cannot be resumed (a 2025-era connection without a
    ///   session id, such as one over stdio); the connection is left open.
    ///
    /// A transport whose close fails does not fail the suspend: the server-side session was
    /// kept, so the snapshot is returned (the client is unconnected) and the failure logged
    /// as a warning.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::{ErrorKind, ProtocolVersion};
    /// # async fn serve_http() -> std::io::Result<String> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok(url)
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_http().await?;
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// client.connect(HttpTransport::new(url.clone())).await?;
    ///
    /// let snapshot = client.suspend().await?;
    /// assert!(!client.is_connected());
    /// // The server kept the session: the same client continues it.
    /// client.resume(HttpTransport::new(url), snapshot).await?;
    /// client.ping().await?;
    ///
    /// // Not connected: nothing to suspend.
    /// let idle = Client::new("my-app", "1.0.0");
    /// assert_eq!(idle.suspend().await.unwrap_err().kind(), ErrorKind::ConnectionClosed);
    /// # Ok(()) }
    /// ```
    pub async fn suspend(&self) -> Result<SessionSnapshot> {
        let snapshot = self.session_snapshot().ok_or(Error::ConnectionClosed)?;
        if !snapshot.is_resumable() {
            return Err(Error::Transport {
                context: "this connection cannot be resumed: a stateful-era connection without \
                          a session id ends with its transport"
                    .into(),
                source: None,
            });
        }
        if let Err(e) = self.close_keeping_session(true).await {
            // The session lives on the server; without its snapshot it would be orphaned.
            tracing::warn!(error = %e, "the transport's close failed while suspending; the session is kept");
        }
        Ok(snapshot)
    }

    /// Closes the connection and ends its server-side session (a 2025-era HTTP session is
    /// `DELETE`d), including one continued with [`resume`](Self::resume). The same as
    /// [`close`](Self::close), named for clarity next to [`suspend`](Self::suspend).
    ///
    /// # Errors
    ///
    /// As [`close`](Self::close).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::{Client, Negotiation};
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::ProtocolVersion;
    /// # async fn serve_http() -> std::io::Result<String> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok(url)
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_http().await?;
    /// let client = Client::new("my-app", "1.0.0")
    ///     .with_negotiation(Negotiation::pinned(ProtocolVersion::V2025_11_25));
    /// client.connect(HttpTransport::new(url.clone())).await?;
    /// let snapshot = client.suspend().await?;
    ///
    /// // Continue the session once more, then end it on the server too.
    /// client.resume(HttpTransport::new(url), snapshot).await?;
    /// client.terminate().await?;
    /// assert!(!client.is_connected());
    /// # Ok(()) }
    /// ```
    pub async fn terminate(&self) -> Result<()> {
        self.close().await
    }

    /// Connects over `transport` by continuing the connection `snapshot` saved, without a
    /// handshake: nothing is sent. The server details, the session id (seeded into the
    /// transport's [`SessionHandle`] unless the transport already continues one) and the cache
    /// partition all come from the snapshot; a transport that names no endpoint (an in-memory
    /// pipe) is not cached, whatever the snapshot says.
    ///
    /// With an MCPL host ([`with_mcpl`](Client::with_mcpl)), a snapshot of an MCPL session
    /// re-attaches it: the host's grant is not part of the snapshot, so the host sends its
    /// initial `featureSets/update` again and MCPL is in force once the server's receipt
    /// arrives (the server keeps its side of the session).
    ///
    /// # Errors
    ///
    /// - `AlreadyConnected` if this client is connected.
    /// - `Transport` if the snapshot is not resumable, if it was taken for another endpoint
    ///   than the transport's, or if it holds a session id the transport cannot carry.
    /// - The transport's start error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::transport::HttpTransport;
    /// use mcpl_core::ErrorKind;
    /// use mcpl_core::types::ContentBlock;
    /// use serde_json::json;
    /// # async fn serve_http() -> std::io::Result<String> {
    /// #     use mcpl_server::http::{HttpConfig, StreamableHttp};
    /// #     let server = mcpl_server::Server::builder("echo-server", "1.0.0")
    /// #         .tool(mcpl_core::types::Tool::new("echo", mcpl_core::types::ToolSchema::object()), |_ctx, args| async move {
    /// #             let text = args.get("text").and_then(|t| t.as_str()).unwrap_or_default().to_owned();
    /// #             Ok(mcpl_server::ToolOutput::text(text))
    /// #         })
    /// #         .build();
    /// #     let app = StreamableHttp::new(server, HttpConfig::new()).into_router("/mcp");
    /// #     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// #     let url = format!("http://{}/mcp", listener.local_addr()?);
    /// #     tokio::spawn(mcpl_server::http::serve(listener, app));
    /// #     Ok(url)
    /// # }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let url = serve_http().await?;
    /// let client = Client::new("my-app", "1.0.0");
    /// client.connect(HttpTransport::new(url.clone())).await?;
    /// let snapshot = client.suspend().await?;
    ///
    /// // Another client instance picks up where the first stopped: no `server/discover` this time.
    /// let resumed = Client::new("my-app", "1.0.0");
    /// let details = resumed.resume(HttpTransport::new(url), snapshot.clone()).await?;
    /// assert_eq!(details.server_info.name, "echo-server");
    /// let result = resumed.call_tool("echo", json!({"text": "still here"})).await?;
    /// assert_eq!(result.content, [ContentBlock::text("still here")]);
    ///
    /// // A snapshot belongs to its endpoint.
    /// let elsewhere = Client::new("my-app", "1.0.0");
    /// let err = elsewhere
    ///     .resume(HttpTransport::new("http://127.0.0.1:9/mcp"), snapshot)
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), ErrorKind::Transport);
    /// # Ok(()) }
    /// ```
    pub async fn resume<T: Transport>(
        &self,
        transport: T,
        snapshot: SessionSnapshot,
    ) -> Result<ServerDetails> {
        let refuse = |context: String| Err(Error::Transport { context, source: None });
        if !snapshot.is_resumable() {
            return refuse("the snapshot is of a stateful-era connection without a session".into());
        }
        let link = Link::of(&transport);
        // A transport naming no endpoint is never cached: the snapshot's endpoint cannot tell
        // where this one leads.
        if let (Some(now), Some(then)) = (&link.endpoint, &snapshot.endpoint)
            && now != then
        {
            return refuse(format!("the snapshot is of {then:?}, not of {now:?}"));
        }
        if let Some(id) = &snapshot.session_id {
            match &link.session {
                Some(handle) => match handle.id() {
                    None => handle.set(id, Some(snapshot.server.protocol_version.as_str())),
                    Some(other) if &other != id => {
                        return refuse(format!(
                            "the transport continues session {other:?}, the snapshot {id:?}"
                        ));
                    }
                    Some(_) => {}
                },
                None => return refuse("the transport cannot carry a session id".into()),
            }
        }
        let details = snapshot.server;
        let restored = details.clone();
        let (peer, _) =
            self.engine.connect_with(transport, |_peer| async move { Ok(restored) }).await?;
        self.established(details.clone(), link);
        if let Some(host) = &self.mcpl {
            host.attach(peer, &details).await;
        }
        Ok(details)
    }
}
