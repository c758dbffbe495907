//! The server registry: which ids are configured, connecting or connected, under which prefix.
//!
//! Every check runs before anything is written. A connect first takes a [`Reservation`] of
//! the id (and its prefix) synchronously, so a second connect of the same id, or of a meeting
//! prefix, is refused at once even while the first handshake runs. The reservation is a
//! token that must be completed or released.
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
//! registry.complete(reservation, "connection handle");
//! assert_eq!(registry.connection("a"), Some(&"connection handle"));
//! ```

use std::collections::BTreeMap;

use crate::config::{ConfigError, ServerConfig};
use crate::prefix::{PrefixConflict, check_prefix};

/// Why the registry refused.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{HostConfig, ServerConfig};
/// # fn server(id: &str, prefix: &str) -> ServerConfig {
/// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
/// #         "toolPrefix": "{prefix}"}}]}}"#);
/// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
/// # }
/// use mcpl_host::registry::{Registry, RegistryError};
///
/// let mut registry: Registry<u32> = Registry::default();
/// let r = registry.reserve(server("a", "tasks")).unwrap();
/// registry.complete(r, 1);
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
}

impl RegistryError {
    /// A stable name of the failure.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
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
        }
    }
}

/// Where a server is in its life.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{HostConfig, ServerConfig};
/// # fn server(id: &str, prefix: &str) -> ServerConfig {
/// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
/// #         "toolPrefix": "{prefix}"}}]}}"#);
/// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
/// # }
/// use mcpl_host::registry::{Phase, Registry};
///
/// let mut registry: Registry<u32> = Registry::default();
/// let r = registry.reserve(server("a", "a")).unwrap();
/// assert_eq!(registry.phase("a"), Some(Phase::Connecting));
/// registry.complete(r, 7);
/// assert_eq!(registry.phase("a"), Some(Phase::Connected));
/// registry.mark_down("a");
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
}

/// The right to finish connecting one server id. Complete it with [`Registry::complete`] or
/// give it back with [`Registry::release`].
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{HostConfig, ServerConfig};
/// # fn server(id: &str, prefix: &str) -> ServerConfig {
/// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
/// #         "toolPrefix": "{prefix}"}}]}}"#);
/// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
/// # }
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
    id: String,
    /// What the entry was before (a restart or reconnect of a registered server).
    previous: Option<ServerConfig>,
}

impl Reservation {
    /// The reserved id.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let reservation = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(reservation.id(), "notes");
    /// # registry.complete(reservation, 1);
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// The registry, generic over the connection handle it stores.
///
/// # Examples
///
/// ```
/// # use mcpl_host::config::{HostConfig, ServerConfig};
/// # fn server(id: &str, prefix: &str) -> ServerConfig {
/// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
/// #         "toolPrefix": "{prefix}"}}]}}"#);
/// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
/// # }
/// use mcpl_host::registry::{Phase, Registry};
///
/// // Generic over the connection handle: the host stores its live connections.
/// let mut registry: Registry<String> = Registry::default();
/// for (id, prefix) in [("notes", "notes"), ("web", "web")] {
///     let r = registry.reserve(server(id, prefix)).unwrap();
///     registry.complete(r, format!("connection to {id}"));
/// }
/// assert_eq!(registry.ids().collect::<Vec<_>>(), ["notes", "web"]);
/// assert_eq!(registry.phase("web"), Some(Phase::Connected));
/// ```
#[derive(Debug)]
pub struct Registry<C> {
    entries: BTreeMap<String, Entry<C>>,
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Registry { entries: BTreeMap::new() }
    }
}

impl<C> Registry<C> {
    fn others(&self, id: &str) -> impl Iterator<Item = (&str, &str)> {
        self.entries
            .iter()
            .filter(move |(k, _)| *k != id)
            .map(|(k, e)| (k.as_str(), e.prefix.as_str()))
    }

    /// Validates `config` against every other registered or connecting server.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1);
    /// // Would this configuration fit? Nothing is written either way.
    /// assert!(registry.check(&server("web", "web")).is_ok());
    /// assert!(registry.check(&server("web", "notes-")).is_err());
    /// assert!(registry.check(&server("notes", "notes-v2")).is_ok()); // not checked against itself
    /// assert!(registry.phase("web").is_none());
    /// ```
    pub fn check(&self, config: &ServerConfig) -> Result<(), RegistryError> {
        config.validate()?;
        check_prefix(&config.id, &config.prefix(), self.others(&config.id))?;
        Ok(())
    }

    /// Reserves a new server id: refused if the id is connecting or registered, or the
    /// configuration is invalid or its prefix meets another's. Nothing is written on refusal.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
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
    /// registry.complete(first, 1);
    /// ```
    pub fn reserve(&mut self, config: ServerConfig) -> Result<Reservation, RegistryError> {
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
        self.entries.insert(
            id.clone(),
            Entry { config, prefix, phase: Phase::Connecting, connection: None },
        );
        Ok(Reservation { id, previous: None })
    }

    /// Reserves a registered server for a restart or reconnect, optionally with a new
    /// configuration (validated against every other server first; nothing changes on refusal).
    /// The old connection is handed back for the caller to close.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1);
    /// // Restart under a new prefix: the old connection is handed back to close.
    /// let (r, old) = registry.reserve_again("notes", Some(server("notes", "n"))).unwrap();
    /// assert_eq!(old, Some(1));
    /// assert_eq!(registry.phase("notes"), Some(Phase::Connecting));
    /// assert_eq!(registry.prefix("notes"), Some("n"));
    /// registry.complete(r, 2);
    /// assert_eq!(registry.connection("notes"), Some(&2));
    /// ```
    pub fn reserve_again(
        &mut self,
        id: &str,
        config: Option<ServerConfig>,
    ) -> Result<(Reservation, Option<C>), RegistryError> {
        let entry = self.entries.get(id).ok_or_else(|| RegistryError::Unknown(id.to_owned()))?;
        if entry.phase == Phase::Connecting {
            return Err(RegistryError::Busy(id.to_owned(), "connecting"));
        }
        let config = config.unwrap_or_else(|| entry.config.clone());
        if config.id != id {
            return Err(RegistryError::Unknown(config.id));
        }
        self.check(&config)?;
        let prefix = config.prefix();
        let Some(entry) = self.entries.get_mut(id) else {
            return Err(RegistryError::Unknown(id.to_owned()));
        };
        let previous = std::mem::replace(&mut entry.config, config);
        entry.prefix = prefix;
        entry.phase = Phase::Connecting;
        let old = entry.connection.take();
        Ok((Reservation { id: id.to_owned(), previous: Some(previous) }, old))
    }

    /// Finishes a connect: the server is registered and connected.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<&str> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert!(registry.connection("notes").is_none());
    /// registry.complete(r, "live connection");
    /// assert_eq!(registry.connection("notes"), Some(&"live connection"));
    /// ```
    pub fn complete(&mut self, reservation: Reservation, connection: C) {
        if let Some(e) = self.entries.get_mut(&reservation.id) {
            e.phase = Phase::Connected;
            e.connection = Some(connection);
        }
    }

    /// Gives a reservation back after a failed handshake. With `keep_down` the server stays
    /// registered (disconnected, e.g. to reconnect in the background); otherwise a new id is
    /// forgotten entirely and a restarted one stays registered, down.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// // A failed first handshake with reconnect on: keep the server registered, down.
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.release(r, true);
    /// assert_eq!(registry.phase("notes"), Some(Phase::Down));
    /// // With reconnect off, a new id is forgotten.
    /// let r = registry.reserve(server("web", "web")).unwrap();
    /// registry.release(r, false);
    /// assert_eq!(registry.phase("web"), None);
    /// ```
    pub fn release(&mut self, reservation: Reservation, keep_down: bool) {
        match (keep_down, reservation.previous.is_some()) {
            (false, false) => {
                self.entries.remove(&reservation.id);
            }
            _ => {
                if let Some(e) = self.entries.get_mut(&reservation.id) {
                    e.phase = Phase::Down;
                    e.connection = None;
                }
            }
        }
    }

    /// Marks a connected server down (its transport closed); the connection is handed back.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1);
    /// // The transport closed: the stale connection comes back, the server stays registered.
    /// assert_eq!(registry.mark_down("notes"), Some(1));
    /// assert_eq!(registry.phase("notes"), Some(Phase::Down));
    /// assert!(registry.connection("notes").is_none());
    /// ```
    pub fn mark_down(&mut self, id: &str) -> Option<C> {
        let e = self.entries.get_mut(id)?;
        e.phase = Phase::Down;
        e.connection.take()
    }

    /// Removes a server entirely; its configuration and connection are handed back.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// registry.complete(r, 1);
    /// let (config, connection) = registry.remove("notes").unwrap();
    /// assert_eq!((config.id.as_str(), connection), ("notes", Some(1)));
    /// // Its prefix is free for another server now.
    /// assert!(registry.check(&server("other", "notes")).is_ok());
    /// ```
    pub fn remove(&mut self, id: &str) -> Option<(ServerConfig, Option<C>)> {
        self.entries.remove(id).map(|e| (e.config, e.connection))
    }

    /// A server's connection, if connected.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(registry.connection("notes"), None); // still connecting
    /// registry.complete(r, 42);
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
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::{Phase, Registry};
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// assert_eq!(registry.phase("notes"), None);
    /// let r = registry.reserve(server("notes", "notes")).unwrap();
    /// assert_eq!(registry.phase("notes"), Some(Phase::Connecting));
    /// # registry.complete(r, 1);
    /// ```
    pub fn phase(&self, id: &str) -> Option<Phase> {
        self.entries.get(id).map(|e| e.phase)
    }

    /// A server's configuration.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "n")).unwrap();
    /// registry.complete(r, 1);
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
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// let r = registry.reserve(server("notes", "n")).unwrap();
    /// assert_eq!(registry.prefix("notes"), Some("n"));
    /// # registry.complete(r, 1);
    /// ```
    pub fn prefix(&self, id: &str) -> Option<&str> {
        self.entries.get(id).map(|e| e.prefix.as_str())
    }

    /// Every id, sorted.
    ///
    /// # Examples
    ///
    /// ```
    /// # use mcpl_host::config::{HostConfig, ServerConfig};
    /// # fn server(id: &str, prefix: &str) -> ServerConfig {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "command": "x",
    /// #         "toolPrefix": "{prefix}"}}]}}"#);
    /// #     HostConfig::from_json(&text).unwrap().servers.remove(0)
    /// # }
    /// use mcpl_host::registry::Registry;
    ///
    /// let mut registry: Registry<u32> = Registry::default();
    /// for id in ["web", "files", "notes"] {
    ///     let r = registry.reserve(server(id, id)).unwrap();
    ///     registry.complete(r, 0);
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
        r.complete(a, 7);
        assert_eq!((r.phase("a"), r.connection("a")), (Some(Phase::Connected), Some(&7)));
    }

    #[test]
    fn failed_connects_and_restarts() {
        let mut r: Registry<u32> = Registry::default();
        let a = r.reserve(server("a", None)).unwrap();
        r.release(a, false);
        assert!(r.phase("a").is_none(), "a failed new connect leaves nothing");
        let a = r.reserve(server("a", None)).unwrap();
        r.complete(a, 1);
        let b = r.reserve(server("b", Some("bee"))).unwrap();
        r.complete(b, 2);
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
        assert_eq!(r.prefix("a"), Some("ay"));
        assert_eq!(r.remove("a").unwrap().1, None);
        assert_eq!(r.ids().collect::<Vec<_>>(), ["b"]);
    }
}
