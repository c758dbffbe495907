//! [`Client`]: the `initialize` handshake and typed calls.

use std::sync::{Arc, Mutex, PoisonError};

use mcpl_core::engine::{Engine, RequestOptions};
use mcpl_core::types::{
    CallTool, CallToolRequestParams, CallToolResult, ClientCapabilities, EmptyResult,
    Implementation, Initialize, InitializeRequestParams, InitializeResult, Initialized, ListTools,
    Outcome, PaginatedRequestParams, Ping, ServerCapabilities, Tool,
};
use mcpl_core::{Era, Error, Peer, ProtocolVersion, Result, Transport};
use serde_json::{Map, Value};

/// The most pages `list_tools` follows before it stops.
const MAX_PAGES: usize = 100;

/// What the server told the client about itself in the handshake.
#[derive(Debug, Clone, PartialEq)]
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
}

/// An MCP client. Cheap to clone; clones share the connection.
///
/// One instance holds at most one connection; [`close`](Self::close) then
/// [`connect`](Self::connect) again works on the same instance.
#[derive(Debug, Clone)]
pub struct Client {
    engine: Engine,
    info: Implementation,
    capabilities: ClientCapabilities,
    version: ProtocolVersion,
    server: Arc<Mutex<Option<ServerDetails>>>,
}

impl Client {
    /// Creates a client that calls itself `name`, version `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Client {
        Client {
            engine: Engine::new(),
            info: Implementation::new(name, version),
            capabilities: ClientCapabilities::default(),
            version: ProtocolVersion::LATEST_STATEFUL,
            server: Arc::new(Mutex::new(None)),
        }
    }

    /// Pins the protocol version to ask for. Default: the newest stateful revision
    /// (2025-11-25); the stateless era is not spoken by this release.
    ///
    /// # Errors
    ///
    /// `UnsupportedProtocolVersion` for a stateless-era version.
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Result<Client> {
        if version.era() != Era::Stateful {
            return Err(Error::UnsupportedProtocolVersion {
                requested: version.to_string(),
                supported: ProtocolVersion::ALL
                    .iter()
                    .filter(|v| v.era() == Era::Stateful)
                    .map(|v| v.to_string())
                    .collect(),
            });
        }
        self.version = version;
        Ok(self)
    }

    /// Connects over `transport` and performs the `initialize` handshake.
    ///
    /// # Errors
    ///
    /// - `AlreadyConnected` if this client is connected (the transport is not started).
    /// - `UnsupportedProtocolVersion` if the server answers with a version this SDK does not
    ///   speak.
    /// - The transport's or the handshake's error. After any error the client is unconnected
    ///   and can connect again.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future leaves the client unconnected.
    pub async fn connect<T: Transport>(&self, transport: T) -> Result<ServerDetails> {
        let params = InitializeRequestParams::new(
            self.version.as_str(),
            self.capabilities.clone(),
            self.info.clone(),
        );
        let (_, details) = self
            .engine
            .connect_with(transport, |peer: Peer| async move {
                let result: InitializeResult =
                    peer.send::<Initialize>(params, RequestOptions::new()).await?;
                let details = negotiate(result)?;
                peer.send_notification::<Initialized>(Default::default()).await?;
                Ok(details)
            })
            .await?;
        *self.server.lock().unwrap_or_else(PoisonError::into_inner) = Some(details.clone());
        Ok(details)
    }

    /// Closes the connection. The client can connect again afterwards.
    ///
    /// # Errors
    ///
    /// The transport's close error (the client is unconnected regardless).
    pub async fn close(&self) -> Result<()> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.engine.close().await
    }

    /// Whether the client is connected.
    pub fn is_connected(&self) -> bool {
        self.engine.is_connected()
    }

    /// What the server said about itself, while connected.
    pub fn server(&self) -> Option<ServerDetails> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn peer(&self) -> Result<Peer> {
        self.engine.peer().ok_or(Error::ConnectionClosed)
    }

    /// Sends `ping`.
    ///
    /// # Errors
    ///
    /// `ConnectionClosed`, a timeout, or the server's error.
    pub async fn ping(&self) -> Result<()> {
        let _: EmptyResult =
            self.peer()?.send::<Ping>(Default::default(), RequestOptions::new()).await?;
        Ok(())
    }

    /// Lists every tool, following pagination cursors. Stops at a repeated cursor or after
    /// 100 pages.
    ///
    /// # Errors
    ///
    /// `CapabilityNotSupported` if the server did not advertise tools; otherwise as
    /// [`ping`](Self::ping).
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        if self.server().is_some_and(|s| s.capabilities.tools.is_none()) {
            return Err(Error::CapabilityNotSupported { capability: "tools".into() });
        }
        let peer = self.peer()?;
        let mut tools = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams { cursor: cursor.clone(), ..Default::default() };
            let page = peer.send::<ListTools>(params, RequestOptions::new()).await?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                _ => break,
            }
        }
        Ok(tools)
    }

    /// Calls a tool.
    ///
    /// A tool that failed answers `Ok` with `is_error: Some(true)`; `Err` means the call could
    /// not be made or the server refused it.
    ///
    /// # Errors
    ///
    /// As [`ping`](Self::ping).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future cancels the call on the server.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<CallToolResult> {
        let params = CallToolRequestParams::new(name).with_arguments(arguments);
        match self.peer()?.send::<CallTool>(params, RequestOptions::new()).await? {
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
    })
}
