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

use super::auth::Principal;

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
    /// Records (or replaces) a session.
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, ()>;

    /// Looks a session up.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<SessionRecord>>;

    /// Forgets a session (it was deleted or expired).
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, ()>;
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
/// store.save(record.clone()).await;
/// assert_eq!(store.load("s1").await, Some(record));
/// store.remove("s1").await;
/// assert_eq!(store.load("s1").await, None);
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
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, ()> {
        self.records().insert(record.id.clone(), record);
        Box::pin(std::future::ready(()))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<SessionRecord>> {
        Box::pin(std::future::ready(self.records().get(id).cloned()))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, ()> {
        self.records().remove(id);
        Box::pin(std::future::ready(()))
    }
}

/// Lets one store be shared by several endpoints (or processes' worth of endpoints in tests).
impl<S: SessionStore> SessionStore for std::sync::Arc<S> {
    fn save(&self, record: SessionRecord) -> BoxFuture<'_, ()> {
        (**self).save(record)
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<SessionRecord>> {
        (**self).load(id)
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, ()> {
        (**self).remove(id)
    }
}
