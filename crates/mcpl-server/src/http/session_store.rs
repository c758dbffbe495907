//! [`SessionStore`]: where stateful-era sessions are recorded so that another process (or a
//! restarted one) can continue them.
//!
//! A record holds what the `initialize` handshake established: the session id, the negotiated
//! protocol version, and the client's identity and capabilities. When a request names a session
//! this process does not have live, the endpoint looks it up in the store and, if found, brings
//! the session back by replaying that handshake server-side; the client notices nothing.

use std::collections::HashMap;
use std::sync::Mutex;

use mcpl_core::engine::BoxFuture;
use mcpl_core::types::{ClientCapabilities, Implementation};
use serde::{Deserialize, Serialize};

use crate::principal::Principal;

/// What a session's handshake established.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{ClientCapabilities, Implementation};
/// use mcpl_server::http::session_store::SessionRecord;
///
/// let record = SessionRecord {
///     id: "f3a1".into(),
///     protocol_version: "2025-11-25".into(),
///     client_info: Implementation::new("client", "1.0"),
///     client_capabilities: ClientCapabilities::default(),
///     principal: None,
/// };
/// let json = serde_json::to_value(&record).unwrap();
/// assert_eq!(json["protocolVersion"], "2025-11-25");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The session id (`Mcp-Session-Id`).
    pub id: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The client's identity.
    pub client_info: Implementation,
    /// The client's capabilities.
    pub client_capabilities: ClientCapabilities,
    /// Who created the session (the principal of its `initialize` request's access token);
    /// only that principal's requests continue it. Absent: anonymous.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
}

/// Records sessions. Implement it over a shared database to let sessions move between
/// processes; [`InMemorySessionStore`] keeps them in this process only.
///
/// # Examples
///
/// Two endpoints (think: two processes) sharing one store continue each other's sessions:
///
/// ```
/// use std::sync::Arc;
/// use mcpl_server::Server;
/// use mcpl_server::http::event_store::InMemoryEventStore;
/// use mcpl_server::http::session_store::InMemorySessionStore;
/// use mcpl_server::http::{HttpConfig, StreamableHttp};
///
/// let shared = Arc::new(InMemorySessionStore::new()); // in practice: a database-backed store
/// let server = Server::builder("s", "1").build();
/// let a = StreamableHttp::with_stores(server.clone(), HttpConfig::new(), InMemoryEventStore::default(), shared.clone());
/// let b = StreamableHttp::with_stores(server, HttpConfig::new(), InMemoryEventStore::default(), shared);
/// # drop((a, b));
/// ```
pub trait SessionStore: Send + Sync + 'static {
    /// Records a new session.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::Full`] when the store holds as many sessions as it allows (the
    /// endpoint refuses the session with `503` and `Retry-After`), [`StoreErrorKind::Unavailable`]
    /// when the store cannot be reached (the same answer).
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, Result<(), StoreError>>;

    /// Looks a session up.
    ///
    /// # Errors
    ///
    /// The store's failure: the endpoint answers `503` with `Retry-After`.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>>;

    /// Forgets a session (it was deleted or expired).
    ///
    /// # Errors
    ///
    /// The store's failure: a `DELETE` is answered `503` (the session may live on elsewhere).
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Marks activity on a session this endpoint holds live, and tells whether it is still
    /// recorded: `false` means it ended elsewhere (a `DELETE` on another instance, or it
    /// expired), and the endpoint ends its live copy (`404`). Called for every request to a
    /// live session. The default looks the session up.
    ///
    /// # Errors
    ///
    /// The store's failure: the endpoint keeps serving its live copy meanwhile.
    fn touch<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.load(id).await?.is_some()) })
    }

    /// Whether the store forgets idle sessions by itself, for every endpoint sharing it (a
    /// fleet's store, refreshed by [`touch`](Self::touch)). Then an endpoint that closes a
    /// session it holds (idle here, evicted at its cap, or at shutdown) only drops its own
    /// copy: the record and the session's stored events stay, since the client may carry on
    /// at another instance. Otherwise (the default) the endpoint removes the record of a
    /// session it closes for idleness or eviction.
    fn expires_idle(&self) -> bool {
        false
    }
}

/// What kind of failure a [`StoreError`] is.
///
/// # Examples
///
/// ```
/// use mcpl_server::http::session_store::{StoreError, StoreErrorKind};
///
/// let error = StoreError::new(StoreErrorKind::Full, "capped at 10 sessions");
/// assert_eq!(error.kind(), StoreErrorKind::Full);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store cannot be reached, or did not answer in time.
    Unavailable,
    /// The store holds as many sessions as it allows.
    Full,
    /// A stored value could not be read (a corrupt record, or one of an unknown format).
    Corrupt,
}

impl std::fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreErrorKind::Unavailable => "the session store is unavailable",
            StoreErrorKind::Full => "the session store is full",
            StoreErrorKind::Corrupt => "a stored session could not be read",
        })
    }
}

/// A [`SessionStore`] failure: its [`kind`](Self::kind), and the cause in
/// [`source`](std::error::Error::source).
///
/// # Examples
///
/// ```
/// use std::error::Error as _;
/// use mcpl_server::http::session_store::{StoreError, StoreErrorKind};
///
/// let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
/// let error = StoreError::new(StoreErrorKind::Unavailable, cause);
/// assert_eq!(error.to_string(), "the session store is unavailable");
/// assert_eq!(error.source().unwrap().to_string(), "refused");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct StoreError {
    kind: StoreErrorKind,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl StoreError {
    /// A failure of `kind`, caused by `source`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::session_store::{StoreError, StoreErrorKind};
    ///
    /// let error = StoreError::new(StoreErrorKind::Corrupt, "format version 9 is unknown");
    /// assert_eq!(error.kind(), StoreErrorKind::Corrupt);
    /// ```
    pub fn new(
        kind: StoreErrorKind,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        StoreError { kind, source: source.into() }
    }

    /// What kind of failure it is.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::http::session_store::{StoreError, StoreErrorKind};
    ///
    /// assert_eq!(StoreError::new(StoreErrorKind::Unavailable, "down").kind(), StoreErrorKind::Unavailable);
    /// ```
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }
}

/// A [`SessionStore`] in this process's memory.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{ClientCapabilities, Implementation};
/// use mcpl_server::http::session_store::{InMemorySessionStore, SessionRecord, SessionStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = InMemorySessionStore::new();
/// let record = SessionRecord {
///     id: "s1".into(),
///     protocol_version: "2025-11-25".into(),
///     client_info: Implementation::new("c", "1"),
///     client_capabilities: ClientCapabilities::default(),
///     principal: None,
/// };
/// store.save(record.clone()).await?;
/// assert_eq!(store.load("s1").await?, Some(record));
/// assert!(store.touch("s1").await?);
/// store.remove("s1").await?;
/// assert_eq!(store.load("s1").await?, None);
/// assert!(!store.touch("s1").await?, "ended: an endpoint holding it live ends it too");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    records: Mutex<HashMap<String, SessionRecord>>,
}

impl InMemorySessionStore {
    /// An empty store.
    ///
    /// # Examples
    ///
    /// Two endpoints sharing one store (wrapped in an `Arc`): a session begun on the first is
    /// continued on the second, as it would be behind a load balancer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_server::Server;
    /// use mcpl_server::http::event_store::InMemoryEventStore;
    /// use mcpl_server::http::session_store::InMemorySessionStore;
    /// use mcpl_server::http::{HttpConfig, StreamableHttp};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let store = Arc::new(InMemorySessionStore::new());
    /// let mut addrs = Vec::new();
    /// for _ in 0..2 {
    ///     let server = Server::builder("s", "1").build();
    ///     let config = HttpConfig::new().json_response(true);
    ///     let endpoint =
    ///         StreamableHttp::with_stores(server, config, InMemoryEventStore::default(), store.clone());
    ///     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    ///     addrs.push(listener.local_addr()?);
    ///     tokio::spawn(mcpl_server::http::serve(listener, endpoint.into_router("/mcp")));
    /// }
    ///
    /// let http = reqwest::Client::new();
    /// let post = |addr: std::net::SocketAddr, body: &'static str| {
    ///     http.post(format!("http://{addr}/mcp"))
    ///         .header("content-type", "application/json")
    ///         .header("accept", "application/json, text/event-stream")
    ///         .body(body)
    /// };
    /// let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{
    ///     "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
    /// let reply = post(addrs[0], init).send().await?;
    /// let session = reply.headers()["mcp-session-id"].to_str()?.to_owned();
    ///
    /// // The second endpoint never saw the `initialize`, yet serves the session.
    /// let on_second = |body| post(addrs[1], body)
    ///     .header("mcp-session-id", &session)
    ///     .header("mcp-protocol-version", "2025-11-25");
    /// let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    /// assert_eq!(on_second(initialized).send().await?.status(), 202);
    /// let ping = on_second(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).send().await?;
    /// assert_eq!(ping.status(), 200);
    /// let ping: serde_json::Value = serde_json::from_str(&ping.text().await?)?;
    /// assert_eq!(ping["result"], serde_json::json!({}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    fn records(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.records.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SessionStore for InMemorySessionStore {
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        self.records().insert(record.id.clone(), record);
        Box::pin(std::future::ready(Ok(())))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.records().get(id).cloned())))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.records().remove(id);
        Box::pin(std::future::ready(Ok(())))
    }

    fn touch<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self.records().contains_key(id))))
    }
}

/// Lets one store be shared by several endpoints (or processes' worth of endpoints in tests).
impl<S: SessionStore> SessionStore for std::sync::Arc<S> {
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        (**self).save(record)
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        (**self).load(id)
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).remove(id)
    }

    fn touch<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        (**self).touch(id)
    }

    fn expires_idle(&self) -> bool {
        (**self).expires_idle()
    }
}
