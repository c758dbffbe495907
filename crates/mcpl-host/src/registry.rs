//! The server registry: which ids are configured, connecting or connected, under which prefix.
//!
//! Every check runs before anything is written. A connect first takes a [`Reservation`] of
//! the id (and its prefix) synchronously, so a second connect of the same id, or of a meeting
//! prefix, is refused at once even while the first handshake runs. The reservation is a
//! token that must be completed or released.
//!
//! Each entry has one piece of work at a time (a connect, then its connection and its
//! reconnects), named by a generation and cancelled by a [`CancellationToken`]: removing the
//! entry, restarting it or shutting the registry down cancels that work, and a connect that
//! finishes after it was cancelled cannot complete (its connection is handed back to close).
//!
//! ```
//! use mcpl_host::config::HostConfig;
//! use mcpl_host::registry::Registry;
//!
//! let config = HostConfig::from_json(r#"{"servers": [{"id": "a", "command": "x"}]}"#).unwrap();
//! let mut registry: Registry<&str> = Registry::default();
//! let reservation = registry.reserve(config.servers[0].clone()).unwrap();
//! // While `a` is connecting, a second connect of `a` is refused.
//! assert!(registry.reserve(config.servers[0].clone()).is_err());
//! registry.complete(reservation, "connection handle").unwrap();
//! assert_eq!(registry.connection("a"), Some(&"connection handle"));
//! ```

use std::collections::{BTreeMap, BTreeSet};

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::config::{ConfigError, ServerConfig};
use crate::prefix::{PrefixConflict, ReservedPrefix, check_prefix, check_reserved};

/// Why the registry refused.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{ServerConfig, ServerTransport};
/// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
/// use mcpl_host::registry::{Registry, RegistryError};
///
/// let mut registry: Registry<u32> = Registry::default();
/// let r = registry.reserve(server("a", "tasks")).unwrap();
/// registry.complete(r, 1).unwrap();
/// assert!(matches!(
///     registry.reserve(server("a", "other")),
///     Err(RegistryError::Busy(_, "connected"))
/// ));
/// assert!(matches!(
///     registry.reserve(server("b", "tasks")),
///     Err(RegistryError::PrefixConflict(_))
/// ));
/// assert!(matches!(registry.reserve_again("c", None), Err(RegistryError::Unknown(_))));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The id is connecting or registered already.
    #[error("server {0:?} is already {1}")]
    Busy(String, &'static str),
    /// No such server.
    #[error("unknown server {0:?}")]
    Unknown(String),
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The prefix meets another server's.
    #[error(transparent)]
    PrefixConflict(#[from] PrefixConflict),
    /// The prefix is a name the host reserved.
    #[error(transparent)]
    ReservedPrefix(#[from] ReservedPrefix),
    /// The registry was shut down: nothing connects any more.
    #[error("the host is shut down")]
    ShutDown,
}

impl RegistryError {
    /// A stable name of the failure.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("a", "tasks")).unwrap();
    /// assert_eq!(registry.reserve(server("a", "tasks")).unwrap_err().kind(), "busy");
    /// let conflict = registry.reserve(server("b", "tasks--b")).unwrap_err();
    /// assert_eq!(conflict.kind(), "prefix_conflict");
    /// let mut empty = server("c", "c");
    /// empty.tool_prefix = Some(String::new());
    /// assert_eq!(registry.reserve(empty).unwrap_err().kind(), "empty_prefix");
    /// # registry.release(r, false);
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            RegistryError::Busy(..) => "busy",
            RegistryError::Unknown(_) => "unknown_server",
            RegistryError::Config(e) => e.kind(),
            RegistryError::PrefixConflict(_) => "prefix_conflict",
            RegistryError::ReservedPrefix(_) => "reserved_prefix",
            RegistryError::ShutDown => "shut_down",
        }
    }
}

/// Where a server is in its life.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{ServerConfig, ServerTransport};
/// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
/// use mcpl_host::registry::{Phase, Registry};
///
/// let mut registry: Registry<u32> = Registry::default();
/// let r = registry.reserve(server("a", "a")).unwrap();
/// assert_eq!(registry.phase("a"), Some(Phase::Connecting));
/// let lease = registry.complete(r, 7).unwrap();
/// assert_eq!(registry.phase("a"), Some(Phase::Connected));
/// registry.lost(&lease); // its transport closed
/// assert_eq!(registry.phase("a"), Some(Phase::Down));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A handshake is running.
    Connecting,
    /// Connected.
    Connected,
    /// Registered but disconnected (reconnecting in the background, or waiting).
    Down,
}

#[derive(Debug)]
struct Entry<C> {
    config: ServerConfig,
    prefix: String,
    phase: Phase,
    connection: Option<C>,
    /// What a failed restart or reconnect puts back (the configuration and prefix before it);
    /// its prefix stays reserved while the handshake runs.
    previous: Option<(ServerConfig, String)>,
    /// The generation of the entry's current work.
    generation: u64,
    /// Cancels that work.
    cancel: CancellationToken,
    /// Whether the running connect is a background reconnect (a restart pre-empts it).
    background: bool,
}

/// The right to finish connecting one server id. Complete it with [`Registry::complete`] or
/// give it back with [`Registry::release`].
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{ServerConfig, ServerTransport};
/// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
/// use mcpl_host::registry::Registry;
///
/// let mut registry: Registry<u32> = Registry::default();
/// let reservation = registry.reserve(server("a", "a")).unwrap();
/// // ... run the handshake; it failed, and the server should not be retried:
/// registry.release(reservation, false);
/// assert!(registry.phase("a").is_none()); // the id is free again
/// assert!(registry.reserve(server("a", "a")).is_ok());
/// ```
#[derive(Debug)]
#[must_use = "a reservation holds its id until completed or released"]
pub struct Reservation {
    lease: Lease,
}

impl Reservation {
    /// The reserved id.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let reservation = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(reservation.id(), "notes");
    /// # registry.complete(reservation, 1).unwrap();
    /// ```
    pub fn id(&self) -> &str {
        &self.lease.id
    }

    /// The entry's work this reservation belongs to: its connection and reconnects hold it
    /// after the reservation completes.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let reservation = registry.reserve(server("notes", "notes")).unwrap();
    /// let lease = reservation.lease().clone();
    /// registry.remove("notes"); // a disconnect during the handshake
    /// assert!(lease.is_cancelled());
    /// // The connection is handed back to close.
    /// assert!(matches!(registry.complete(reservation, 1), Err(1)));
    /// ```
    pub fn lease(&self) -> &Lease {
        &self.lease
    }
}

/// One piece of an entry's work (a connect, then its connection and reconnects): the id, its
/// generation and the token that cancels it. Cheap to clone.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{ServerConfig, ServerTransport};
/// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
/// use mcpl_host::registry::{Phase, Registry};
///
/// let mut registry: Registry<u32> = Registry::default();
/// let r = registry.reserve(server("notes", "notes")).unwrap();
/// let lease = registry.complete(r, 1).unwrap();
/// // The transport closed: the connection's lease marks the server down, then retries.
/// assert!(registry.lost(&lease));
/// let retry = registry.retry(&lease).unwrap();
/// assert_eq!(registry.phase("notes"), Some(Phase::Connecting));
/// # registry.complete(retry, 2).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Lease {
    id: String,
    generation: u64,
    cancel: CancellationToken,
}

impl Lease {
    /// The server id.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(r.lease().id(), "notes");
    /// # registry.complete(r, 1).unwrap();
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The generation: it changes when a restart takes the entry over.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// let first = registry.complete(r, 1).unwrap();
    /// let (r, _old) = registry.reserve_again("notes", None).unwrap();
    /// assert_ne!(r.lease().generation(), first.generation());
    /// assert!(first.is_cancelled()); // the restart cancelled the old work
    /// # registry.complete(r, 2).unwrap();
    /// ```
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the work was cancelled (removed, restarted or shut down).
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert!(!r.lease().is_cancelled());
    /// registry.shutdown();
    /// assert!(r.lease().is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves when the work is cancelled.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// let cancelled = r.lease().cancelled();
    /// registry.remove("notes");
    /// cancelled.await; // a handshake racing this future stops here
    /// # }
    /// ```
    pub fn cancelled(&self) -> WaitForCancellationFutureOwned {
        self.cancel.clone().cancelled_owned()
    }
}

/// The registry, generic over the connection handle it stores.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{ServerConfig, ServerTransport};
/// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
/// use mcpl_host::registry::{Phase, Registry};
///
/// // Generic over the connection handle: the host stores its live connections.
/// let mut registry: Registry<String> = Registry::default();
/// for (id, prefix) in [("notes", "notes"), ("web", "web")] {
///     let r = registry.reserve(server(id, prefix)).unwrap();
///     registry.complete(r, format!("connection to {id}")).unwrap();
/// }
/// assert_eq!(registry.ids().collect::<Vec<_>>(), ["notes", "web"]);
/// assert_eq!(registry.phase("web"), Some(Phase::Connected));
/// ```
#[derive(Debug)]
pub struct Registry<C> {
    entries: BTreeMap<String, Entry<C>>,
    reserved: BTreeSet<String>,
    next_generation: u64,
    root: CancellationToken,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Registry {
            entries: BTreeMap::new(),
            reserved: BTreeSet::new(),
            next_generation: 0,
            root: CancellationToken::new(),
        }
    }
}

impl<C> Registry<C> {
    /// A registry that refuses server prefixes equal to any of `names` (the host's own
    /// modules), like prefixes that meet.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::with_reserved(["notes"]);
    /// assert_eq!(registry.reserve(server("n", "notes")).unwrap_err().kind(), "reserved_prefix");
    /// assert!(registry.reserve(server("n", "notes-v2")).is_ok()); // equality only
    /// ```
    pub fn with_reserved<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Registry { reserved: names.into_iter().map(Into::into).collect(), ..Registry::default() }
    }

    fn others(&self, id: &str) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().filter(move |(k, _)| *k != id).flat_map(|(k, e)| {
            let previous = e.previous.as_ref().map(|(_, p)| p).filter(|p| **p != e.prefix);
            std::iter::once((k.as_str(), e.prefix.as_str()))
                .chain(previous.map(|p| (k.as_str(), p.as_str())))
        })
    }

    fn next_work(&mut self) -> (u64, CancellationToken) {
        self.next_generation += 1;
        (self.next_generation, self.root.child_token())
    }

    /// Validates `config` against every other registered or connecting server.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1).unwrap();
    /// // Would this configuration fit? Nothing is written either way.
    /// assert!(registry.check(&server("web", "web")).is_ok());
    /// assert!(registry.check(&server("web", "notes-")).is_err());
    /// assert!(registry.check(&server("notes", "notes-v2")).is_ok()); // not checked against itself
    /// assert!(registry.phase("web").is_none());
    /// ```
    pub fn check(&self, config: &ServerConfig) -> Result<(), RegistryError> {
        config.validate()?;
        let prefix = config.prefix();
        check_reserved(&config.id, &prefix, self.reserved.iter().map(String::as_str))?;
        check_prefix(&config.id, &prefix, self.others(&config.id))?;
        Ok(())
    }

    /// Reserves a new server id: refused if the id is connecting or registered, or the
    /// configuration is invalid or its prefix meets another's. Nothing is written on refusal.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let first = registry.reserve(server("notes", "notes")).unwrap();
    /// // Refused at once while the first handshake still runs:
    /// assert_eq!(registry.reserve(server("notes", "n")).unwrap_err().kind(), "busy");
    /// assert_eq!(
    ///     registry.reserve(server("other", "notes")).unwrap_err().kind(),
    ///     "prefix_conflict"
    /// );
    /// registry.complete(first, 1).unwrap();
    /// ```
    pub fn reserve(&mut self, config: ServerConfig) -> Result<Reservation, RegistryError> {
        if self.root.is_cancelled() {
            return Err(RegistryError::ShutDown);
        }
        if let Some(e) = self.entries.get(&config.id) {
            let what = match e.phase {
                Phase::Connecting => "connecting",
                Phase::Connected => "connected",
                Phase::Down => "registered",
            };
            return Err(RegistryError::Busy(config.id.clone(), what));
        }
        self.check(&config)?;
        let id = config.id.clone();
        let prefix = config.prefix();
        let (generation, cancel) = self.next_work();
        self.entries.insert(
            id.clone(),
            Entry {
                config,
                prefix,
                phase: Phase::Connecting,
                connection: None,
                previous: None,
                generation,
                cancel: cancel.clone(),
                background: false,
            },
        );
        Ok(Reservation { lease: Lease { id, generation, cancel } })
    }

    /// Reserves a registered server for a restart, optionally with a new configuration
    /// (validated against every other server first; nothing changes on refusal). The entry's
    /// work (its connection, its reconnects, a background reconnect's handshake) is cancelled
    /// and the old connection handed back for the caller to close. Until the new connect
    /// completes, the previous prefix stays reserved too, so a failed restart can put it back.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1).unwrap();
    /// // Restart under a new prefix: the old connection is handed back to close.
    /// let (r, old) = registry.reserve_again("notes", Some(server("notes", "n"))).unwrap();
    /// assert_eq!(old, Some(1));
    /// assert_eq!(registry.phase("notes"), Some(Phase::Connecting));
    /// assert_eq!(registry.prefix("notes"), Some("n"));
    /// registry.complete(r, 2).unwrap();
    /// assert_eq!(registry.connection("notes"), Some(&2));
    /// ```
    pub fn reserve_again(
        &mut self,
        id: &str,
        config: Option<ServerConfig>,
    ) -> Result<(Reservation, Option<C>), RegistryError> {
        if self.root.is_cancelled() {
            return Err(RegistryError::ShutDown);
        }
        let entry = self.entries.get(id).ok_or_else(|| RegistryError::Unknown(id.to_owned()))?;
        if entry.phase == Phase::Connecting && !entry.background {
            return Err(RegistryError::Busy(id.to_owned(), "connecting"));
        }
        let config = config.unwrap_or_else(|| entry.config.clone());
        if config.id != id {
            return Err(RegistryError::Unknown(config.id));
        }
        self.check(&config)?;
        let prefix = config.prefix();
        let (generation, cancel) = self.next_work();
        let Some(entry) = self.entries.get_mut(id) else {
            return Err(RegistryError::Unknown(id.to_owned()));
        };
        entry.cancel.cancel();
        // A background reconnect's handshake was pre-empted: what it would restore stays.
        let restore = match entry.previous.take() {
            Some(previous) if entry.phase == Phase::Connecting => previous,
            _ => (entry.config.clone(), entry.prefix.clone()),
        };
        entry.previous = Some(restore);
        entry.config = config;
        entry.prefix = prefix;
        entry.phase = Phase::Connecting;
        entry.generation = generation;
        entry.cancel = cancel.clone();
        entry.background = false;
        let old = entry.connection.take();
        Ok((Reservation { lease: Lease { id: id.to_owned(), generation, cancel } }, old))
    }

    /// Takes a registered, disconnected server's work up again for a background reconnect:
    /// `None` if `lease` is no longer its work (removed, restarted, shut down) or the server is
    /// not down.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// // The first handshake failed; the server stays registered, down, with its work.
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// let lease = r.lease().clone();
    /// registry.release(r, true);
    /// let retry = registry.retry(&lease).expect("still this server's work");
    /// assert_eq!(registry.phase("notes"), Some(Phase::Connecting));
    /// registry.release(retry, true);
    /// // A restart takes over: the old work can no longer retry.
    /// let (r, _) = registry.reserve_again("notes", None).unwrap();
    /// assert!(registry.retry(&lease).is_none());
    /// # registry.complete(r, 1).unwrap();
    /// ```
    pub fn retry(&mut self, lease: &Lease) -> Option<Reservation> {
        if lease.is_cancelled() {
            return None;
        }
        let entry = self.entries.get_mut(&lease.id)?;
        if entry.generation != lease.generation || entry.phase != Phase::Down {
            return None;
        }
        entry.previous = Some((entry.config.clone(), entry.prefix.clone()));
        entry.phase = Phase::Connecting;
        entry.background = true;
        Some(Reservation { lease: lease.clone() })
    }

    /// Finishes a connect: the server is registered and connected, and the work's lease is
    /// returned (its connection holds it). If the work was cancelled meanwhile (a disconnect, a
    /// restart, a shutdown), nothing changes and the connection is handed back to close.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<&str> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert!(registry.connection("notes").is_none());
    /// registry.complete(r, "live connection").unwrap();
    /// assert_eq!(registry.connection("notes"), Some(&"live connection"));
    /// ```
    pub fn complete(&mut self, reservation: Reservation, connection: C) -> Result<Lease, C> {
        let lease = reservation.lease;
        if lease.is_cancelled() {
            return Err(connection);
        }
        match self.entries.get_mut(&lease.id) {
            Some(e) if e.generation == lease.generation && e.phase == Phase::Connecting => {
                e.phase = Phase::Connected;
                e.connection = Some(connection);
                e.previous = None;
                e.background = false;
                Ok(lease)
            }
            _ => Err(connection),
        }
    }

    /// Gives a reservation back after a failed (or cancelled) handshake. A restart or
    /// reconnect puts the previous configuration and prefix back, the server registered and
    /// down. A new id stays registered, down, with `keep_down` (e.g. to reconnect in the
    /// background), and is forgotten otherwise. Returns the configuration the server keeps, if
    /// it stays registered; a reservation whose work was taken over changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// // A failed first handshake with reconnect on: keep the server registered, down.
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert!(registry.release(r, true).is_some());
    /// assert_eq!(registry.phase("notes"), Some(Phase::Down));
    /// // With reconnect off, a new id is forgotten.
    /// let r = registry.reserve(server("web", "web")).unwrap();
    /// assert!(registry.release(r, false).is_none());
    /// assert_eq!(registry.phase("web"), None);
    /// // A failed restart under a new prefix puts the old one back.
    /// let (r, _) = registry.reserve_again("notes", Some(server("notes", "n2"))).unwrap();
    /// assert_eq!(registry.prefix("notes"), Some("n2"));
    /// registry.release(r, true);
    /// assert_eq!(registry.prefix("notes"), Some("notes"));
    /// ```
    pub fn release(&mut self, reservation: Reservation, keep_down: bool) -> Option<ServerConfig> {
        let lease = reservation.lease;
        let e = self.entries.get_mut(&lease.id)?;
        if e.generation != lease.generation || e.phase != Phase::Connecting {
            return None;
        }
        match e.previous.take() {
            Some((config, prefix)) => {
                e.config = config;
                e.prefix = prefix;
            }
            None if !keep_down => {
                self.entries.remove(&lease.id);
                return None;
            }
            None => {}
        }
        e.phase = Phase::Down;
        e.connection = None;
        e.background = false;
        Some(e.config.clone())
    }

    /// Marks a connected server down because its transport closed, if `lease` is still its
    /// work; `false` (nothing changed) otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// let old = registry.complete(r, 1).unwrap();
    /// let (r, _) = registry.reserve_again("notes", None).unwrap(); // a restart
    /// let new = registry.complete(r, 2).unwrap();
    /// assert!(!registry.lost(&old), "the old connection's close changes nothing");
    /// assert!(registry.lost(&new));
    /// assert_eq!(registry.phase("notes"), Some(Phase::Down));
    /// ```
    pub fn lost(&mut self, lease: &Lease) -> bool {
        match self.entries.get_mut(&lease.id) {
            Some(e) if e.generation == lease.generation && e.phase == Phase::Connected => {
                e.phase = Phase::Down;
                e.connection = None;
                true
            }
            _ => false,
        }
    }

    /// Whether `lease` is still the current work of its server.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// let lease = registry.complete(r, 1).unwrap();
    /// assert!(registry.is_current(&lease));
    /// registry.remove("notes");
    /// assert!(!registry.is_current(&lease));
    /// ```
    pub fn is_current(&self, lease: &Lease) -> bool {
        !lease.is_cancelled()
            && self.entries.get(&lease.id).is_some_and(|e| e.generation == lease.generation)
    }

    /// Shuts the registry down: every entry's work is cancelled (in-flight connects cannot
    /// complete and are released by their owners, reconnects stop), every connected server is
    /// marked down, and further reservations are refused. The connections are handed back to
    /// close.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1).unwrap();
    /// let connecting = registry.reserve(server("web", "web")).unwrap();
    /// assert_eq!(registry.shutdown(), [1]);
    /// assert_eq!(registry.phase("notes"), Some(Phase::Down));
    /// assert!(registry.complete(connecting, 2).is_err());
    /// assert_eq!(registry.reserve(server("files", "files")).unwrap_err().kind(), "shut_down");
    /// ```
    pub fn shutdown(&mut self) -> Vec<C> {
        self.root.cancel();
        // Connects in flight stay reserved until their cancelled handshakes give them back.
        self.entries
            .values_mut()
            .filter(|e| e.phase == Phase::Connected)
            .filter_map(|e| {
                e.phase = Phase::Down;
                e.connection.take()
            })
            .collect()
    }

    /// Removes a server entirely, cancelling its work (an in-flight connect cannot complete);
    /// its configuration and connection are handed back.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1).unwrap();
    /// let (config, connection) = registry.remove("notes").unwrap();
    /// assert_eq!((config.id.as_str(), connection), ("notes", Some(1)));
    /// // Its prefix is free for another server now.
    /// assert!(registry.check(&server("other", "notes")).is_ok());
    /// ```
    pub fn remove(&mut self, id: &str) -> Option<(ServerConfig, Option<C>)> {
        let e = self.entries.remove(id)?;
        e.cancel.cancel();
        Some((e.config, e.connection))
    }

    /// A server's connection, if connected.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(registry.connection("notes"), None); // still connecting
    /// registry.complete(r, 42).unwrap();
    /// assert_eq!(registry.connection("notes"), Some(&42));
    /// ```
    pub fn connection(&self, id: &str) -> Option<&C> {
        self.entries.get(id).and_then(|e| e.connection.as_ref())
    }

    /// A server's phase.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// assert_eq!(registry.phase("notes"), None);
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(registry.phase("notes"), Some(Phase::Connecting));
    /// # registry.complete(r, 1).unwrap();
    /// ```
    pub fn phase(&self, id: &str) -> Option<Phase> {
        self.entries.get(id).map(|e| e.phase)
    }

    /// A server's configuration.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "n")).unwrap();
    /// registry.complete(r, 1).unwrap();
    /// let config = registry.config("notes").unwrap();
    /// assert!(config.reconnect.enabled);
    /// assert_eq!(config.tool_prefix.as_deref(), Some("n"));
    /// ```
    pub fn config(&self, id: &str) -> Option<&ServerConfig> {
        self.entries.get(id).map(|e| &e.config)
    }

    /// A server's prefix.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "n")).unwrap();
    /// assert_eq!(registry.prefix("notes"), Some("n"));
    /// # registry.complete(r, 1).unwrap();
    /// ```
    pub fn prefix(&self, id: &str) -> Option<&str> {
        self.entries.get(id).map(|e| e.prefix.as_str())
    }

    /// Every id, sorted.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{ServerConfig, ServerTransport};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig { ServerConfig::new(id, ServerTransport::Url { url: "ws://127.0.0.1:9/".into(), headers: Default::default() }).with_tool_prefix(prefix) }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// for id in ["web", "files", "notes"] {
    ///     let r = registry.reserve(server(id, id)).unwrap();
    ///     registry.complete(r, 0).unwrap();
    /// }
    /// assert_eq!(registry.ids().collect::<Vec<_>>(), ["files", "notes", "web"]);
    /// ```
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::HostConfig;

    fn server(id: &str, prefix: Option<&str>) -> ServerConfig {
        let text = match prefix {
            Some(p) => {
                format!(r#"{{"servers": [{{"id": "{id}", "command": "x", "toolPrefix": "{p}"}}]}}"#)
            }
            None => format!(r#"{{"servers": [{{"id": "{id}", "command": "x"}}]}}"#),
        };
        HostConfig::from_json(&text).unwrap().servers.remove(0)
    }

    #[test]
    fn connect_reserves_before_the_handshake() {
        let mut r: Registry<u32> = Registry::default();
        let a = r.reserve(server("a", Some("foo"))).unwrap();
        assert_eq!(r.reserve(server("a", Some("zzz"))).unwrap_err().kind(), "busy");
        assert_eq!(r.config("a").unwrap().prefix(), "foo", "a refused connect wrote nothing");
        // A meeting prefix is refused against a reserved server too, naming both.
        let e = r.reserve(server("b", Some("foo--bar"))).unwrap_err();
        assert!(e.to_string().contains("\"a\"") && e.to_string().contains("\"b\""));
        assert!(r.phase("b").is_none());
        assert!(r.reserve(server("c", Some("foo-bar"))).is_ok());
        r.complete(a, 7).unwrap();
        assert_eq!((r.phase("a"), r.connection("a")), (Some(Phase::Connected), Some(&7)));
    }

    #[test]
    fn failed_connects_and_restarts() {
        let mut r: Registry<u32> = Registry::default();
        let a = r.reserve(server("a", None)).unwrap();
        r.release(a, false);
        assert!(r.phase("a").is_none(), "a failed new connect leaves nothing");
        let a = r.reserve(server("a", None)).unwrap();
        r.complete(a, 1).unwrap();
        let b = r.reserve(server("b", Some("bee"))).unwrap();
        r.complete(b, 2).unwrap();
        // A restart with a prefix meeting b's is refused and a keeps running.
        assert_eq!(
            r.reserve_again("a", Some(server("a", Some("bee-")))).unwrap_err().kind(),
            "prefix_conflict"
        );
        assert_eq!((r.phase("a"), r.connection("a")), (Some(Phase::Connected), Some(&1)));
        assert_eq!(r.reserve_again("zz", None).unwrap_err().kind(), "unknown_server");
        // A valid restart hands back the old connection; a failed handshake leaves it down.
        let (res, old) = r.reserve_again("a", Some(server("a", Some("ay")))).unwrap();
        assert_eq!(old, Some(1));
        assert_eq!(r.reserve_again("a", None).unwrap_err().kind(), "busy");
        r.release(res, false);
        assert_eq!(r.phase("a"), Some(Phase::Down));
        assert_eq!(r.prefix("a"), Some("mcpl--a"), "a failed restart puts the old prefix back");
        assert_eq!(r.config("a").unwrap().tool_prefix, None);
        assert_eq!(r.remove("a").unwrap().1, None);
        assert_eq!(r.ids().collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn a_restart_keeps_the_previous_prefix_reserved_until_it_completes() {
        let mut r: Registry<u32> = Registry::default();
        let a = r.reserve(server("a", Some("alpha"))).unwrap();
        r.complete(a, 1).unwrap();
        let (res, _) = r.reserve_again("a", Some(server("a", Some("beta")))).unwrap();
        // Both prefixes are held while the restart's handshake runs.
        for prefix in ["alpha", "beta", "alpha-", "beta--x"] {
            let e = r.reserve(server("b", Some(prefix))).unwrap_err();
            assert_eq!(e.kind(), "prefix_conflict", "{prefix}");
        }
        let lease = r.complete(res, 2).unwrap();
        assert!(r.is_current(&lease));
        // Once the new prefix is in force the old one is free.
        assert!(r.reserve(server("b", Some("alpha"))).is_ok());
    }

    #[test]
    fn cancelled_work_cannot_complete_or_release() {
        let mut r: Registry<u32> = Registry::default();
        let a = r.reserve(server("a", None)).unwrap();
        let lease = a.lease().clone();
        r.remove("a");
        assert!(lease.is_cancelled());
        assert!(matches!(r.complete(a, 1), Err(1)));
        assert!(r.phase("a").is_none());
        // A new server of the same id is not touched by the old work.
        let again = r.reserve(server("a", None)).unwrap();
        assert!(r.retry(&lease).is_none());
        r.complete(again, 2).unwrap();
        assert!(!r.lost(&lease));
        assert_eq!(r.connection("a"), Some(&2));
    }

    #[test]
    fn a_restart_pre_empts_a_background_reconnect() {
        let mut r: Registry<u32> = Registry::default();
        let a = r.reserve(server("a", Some("alpha"))).unwrap();
        let lease = a.lease().clone();
        r.release(a, true);
        let retry = r.retry(&lease).unwrap();
        // A connect of the id is still refused; a restart takes over.
        assert_eq!(r.reserve(server("a", None)).unwrap_err().kind(), "busy");
        let (restart, _) = r.reserve_again("a", Some(server("a", Some("beta")))).unwrap();
        assert!(lease.is_cancelled());
        assert!(matches!(r.complete(retry, 1), Err(1)));
        assert!(r.phase("a") == Some(Phase::Connecting) && r.prefix("a") == Some("beta"));
        // The restart fails: what was there before the reconnect is back.
        assert_eq!(r.release(restart, true).unwrap().prefix(), "alpha");
        assert_eq!((r.phase("a"), r.prefix("a")), (Some(Phase::Down), Some("alpha")));
    }

    #[test]
    fn reserved_names_are_refused_by_equality() {
        let mut r: Registry<u32> = Registry::with_reserved(["notes"]);
        let e = r.reserve(server("n", Some("notes"))).unwrap_err();
        assert!(matches!(e, RegistryError::ReservedPrefix(ref p) if p.prefix == "notes"));
        let n = r.reserve(server("n", Some("notes-v2"))).unwrap();
        r.complete(n, 1).unwrap();
        let e = r.reserve_again("n", Some(server("n", Some("notes")))).unwrap_err();
        assert_eq!(e.kind(), "reserved_prefix");
        assert_eq!(r.prefix("n"), Some("notes-v2"));
    }
}
