//! Era negotiation: how a client picks the protocol revision ([`Negotiation`]), runs
//! `server/discover` or the `initialize` handshake, and what it learns about the server
//! ([`ServerDetails`]).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use mcpl_core::engine::RequestOptions;
use mcpl_core::jsonrpc::ErrorCode;
use mcpl_core::types::{
    ClientCapabilities, Discover, DiscoverResult, Implementation, Initialize,
    InitializeRequestParams, InitializeResult, Initialized, Meta, RequestParams,
    ServerCapabilities,
};
use mcpl_core::{Era, Error, ErrorKind, Peer, ProtocolVersion, Result};
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::Value;

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

/// What the client says about itself when it connects.
pub(crate) struct Hello {
    pub(crate) negotiation: Negotiation,
    /// [`Negotiation::Auto`] tries `initialize` before `server/discover` (an MCPL host).
    pub(crate) stateful_first: bool,
    pub(crate) info: Implementation,
    pub(crate) capabilities: ClientCapabilities,
}

impl Hello {
    pub(crate) async fn run(&self, peer: &Peer) -> Result<ServerDetails> {
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
                    // A server that cannot be reached is not one of the other era.
                    Err(e) if e.is_unreachable() => Err(e),
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
            Err(e) if e.is_unreachable() => return Err(e),
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
            peer.send::<Discover>(RequestParams::with_meta(meta), options).await?;
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
            peer.send::<Initialize>(params, RequestOptions::new()).await?;
        let details = negotiate(result)?;
        peer.send_notification::<Initialized>(Default::default()).await?;
        Ok(details)
    }
}

/// `capabilities` as the stateless era sees them: without the MCPL host advertisement (MCPL
/// needs `initialize`).
pub(crate) fn stateless(mut capabilities: ClientCapabilities) -> ClientCapabilities {
    if let Some(experimental) = &mut capabilities.experimental {
        experimental.remove(mcpl_core::mcpl::manifest::EXPERIMENTAL_KEY);
        if experimental.is_empty() {
            capabilities.experimental = None;
        }
    }
    capabilities
}

/// The `_meta` every stateless-era request carries.
pub(crate) fn request_meta(
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
    if let Error::HttpStatus { status, .. } = error {
        return matches!(status, 400 | 404 | 405);
    }
    let Some(e) = error.rpc_error() else { return false };
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

/// Adopts the server's details from the `initialize` result of a renewed session.
pub(crate) fn refresh(server: &Mutex<Option<ServerDetails>>, result: InitializeResult) {
    match negotiate(result) {
        Ok(details) => {
            tracing::debug!(server = ?details.server_info.name, "session renewed");
            *server.lock().unwrap_or_else(PoisonError::into_inner) = Some(details);
        }
        Err(e) => tracing::debug!(error = %e, "unusable initialize result after a renewal"),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use mcpl_core::jsonrpc::{ErrorCode, ErrorObject};

    use super::*;

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
            assert!(stateful_only(&Error::http_status(status, b"", None)), "{status}");
        }
        for status in [401, 500, 502] {
            assert!(!stateful_only(&Error::http_status(status, b"", None)), "{status}");
        }
        // A transport failure is never read as the server's refusal.
        assert!(!stateful_only(&Error::MessageTooLarge { limit: 10 }));
        assert!(!stateful_only(&Error::ConnectionClosed));
    }
}
