//! Redis-backed stores for mcpl-rs: run a fleet of MCP server instances behind a load
//! balancer, and share a client cache between processes.
//!
//! Every store of the SDK is a trait with an in-memory default; this crate implements them on
//! Redis, through one [`Redis`] connection (the `redis` crate's multiplexed, self-reconnecting
//! `ConnectionManager`, every command bounded by a timeout):
//!
//! - [`RedisSessionStore`] (`mcpl_server::http::session_store::SessionStore`): a 2025-era
//!   session initialized at one instance continues at any other; `DELETE` ends it everywhere;
//!   idle expiry and the session cap hold fleet-wide.
//! - [`RedisEventStore`] (`mcpl_server::http::event_store::EventStore`): an SSE stream cut at
//!   one instance resumes at another with `Last-Event-ID`, replaying exactly the missed events.
//! - [`RedisTaskStore`] (`mcpl_server::task::TaskStore`): a task created at one instance is
//!   polled, updated (`tasks/update`) and cancelled at any other; updates and cancels reach
//!   the instance running the handler (pub/sub), and a cancel stops it.
//! - [`RedisCacheStore`] (`mcpl_client::cache::CacheStore`): client processes share cached
//!   lists and reads, partitioned by server and principal as in memory.
//! - [`FleetEvents`]: list changes and resource updates made at one instance reach the
//!   sessions and `subscriptions/listen` streams of every instance (Redis pub/sub).
//! - The event store also relays a session's messages between instances: what one instance
//!   sends outside its request streams (a log message, a resource update, a request) reaches
//!   the client's standalone `GET` stream at another, and the client's answer reaches the
//!   instance that asked.
//! - [`shared_state_sealer`]: the fleet's `requestState` keys, kept in Redis;
//!   [`rotate_state_key`] rotates them.
//!
//! Keys are `<prefix>:v1:...` and every value carries its format version
//! ([`FORMAT_VERSION`]); failures are [`Error`]s with a stable [`ErrorKind`].
//!
//! # When Redis is down or slow
//!
//! Each command fails within the response timeout ([`RedisConfig::response_timeout`]) with an
//! [`Error`] (kind [`ErrorKind::Unavailable`] or [`ErrorKind::Timeout`]), and the connection
//! is re-established in the background, so an instance recovers by itself when Redis
//! returns. An outage is logged once at `warn` as it begins and once at `info` as it ends (its
//! other failures at `debug`). Meanwhile: a new 2025 session is refused with `503` and
//! `Retry-After`; a request to a session this instance holds live is served (its copy stands
//! in for the record); a request to a session held elsewhere gets `503` and `Retry-After`; a
//! `DELETE` gets `503` (the session may live on elsewhere; retry it); SSE events are not
//! stored (they cannot be replayed) and a resumption is refused (`404`); messages relayed
//! between instances are lost; task calls fail with an internal error (`-32603`); 2026-era
//! requests that need no store are served as ever. The subscriptions (changes, relayed
//! messages, task signals) are made again once Redis is back; after one was lost,
//! [`FleetEvents`] tells its clients that every list may have changed. A client cache reads a
//! failure as a miss.
//!
//! # Examples
//!
//! One instance of a fleet (run as many as needed, behind any load balancer):
//!
//! ```no_run
//! use mcpl_redis::{Redis, RedisConfig, RedisEventStore, RedisSessionStore, RedisTaskStore};
//! use mcpl_server::Server;
//! use mcpl_server::http::{HttpConfig, StreamableHttp};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let redis = Redis::open(RedisConfig::new("redis://127.0.0.1:6379").prefix("notes"))?;
//!     let server = Server::builder("notes", "1.0.0")
//!         .task_store(RedisTaskStore::new(redis.clone()))
//!         .build();
//!     let endpoint = StreamableHttp::with_stores(
//!         server,
//!         HttpConfig::new(),
//!         RedisEventStore::new(redis.clone()),
//!         RedisSessionStore::new(redis),
//!     );
//!     let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
//!     endpoint.serve_at(listener, "/mcp").await?;
//!     Ok(())
//! }
//! ```

mod cache;
mod codec;
mod connection;
mod error;
mod events;
mod fleet;
mod pubsub;
mod server;
mod session;
mod tasks;

pub use self::cache::{DEFAULT_MAX_ENTRY_BYTES, DEFAULT_STALE_FOR, RedisCacheStore};
pub use self::connection::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_PREFIX, DEFAULT_RESPONSE_TIMEOUT, FORMAT_VERSION, Redis,
    RedisConfig,
};
pub use self::error::{Error, ErrorKind};
pub use self::events::{DEFAULT_MAX_EVENT_BYTES, RedisEventStore};
pub use self::fleet::{FleetEvents, rotate_state_key, shared_state_sealer};
pub use self::server::RedisServer;
pub use self::session::{
    DEFAULT_FLEET_SESSIONS, DEFAULT_SESSION_HANDSHAKE, DEFAULT_SESSION_IDLE, RedisSessionStore,
};
pub use self::tasks::RedisTaskStore;
