//! The host configuration (a JSON file): the servers to run and how, and where state lives.
//!
//! ```
//! use mcpl_client::Negotiation;
//! use mcpl_core::ProtocolVersion;
//! use mcpl_host::config::{HostConfig, ServerTransport};
//!
//! let config = HostConfig::from_json(r#"{
//!     "servers": {
//!         "memory": {"command": "mcpl-memory-server", "env": {"RUST_LOG": "warn"}},
//!         "chat": {"url": "ws://127.0.0.1:9000/mcpl", "toolPrefix": "chat",
//!                  "tools": {"deny": ["admin_*"]}},
//!         "search": {"url": "https://search.example/mcp", "protocol": "stateless"}
//!     },
//!     "state": {"dir": "state", "retention": 500}
//! }"#).unwrap();
//! assert_eq!(config.servers.len(), 3);
//! assert_eq!(config.servers[0].prefix(), "chat");
//! assert_eq!(config.servers[1].prefix(), "mcpl--memory");
//! assert!(matches!(config.servers[1].transport, ServerTransport::Stdio { .. }));
//! // The era is negotiated unless pinned: "search" speaks only 2026-07-28 (plain MCP).
//! assert_eq!(config.servers[1].protocol, Negotiation::Auto);
//! assert_eq!(config.servers[2].protocol, Negotiation::Pinned(ProtocolVersion::V2026_07_28));
//!
//! // Prefixes that meet are refused, naming both servers, both prefixes and the rule.
//! let err = HostConfig::from_json(r#"{"servers": [
//!     {"id": "a", "command": "x", "toolPrefix": "foo"},
//!     {"id": "b", "command": "y", "toolPrefix": "foo--bar"}
//! ]}"#).unwrap_err();
//! assert!(err.to_string().contains("followed by '--'"));
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use derive_setters::Setters;
use mcpl_client::Negotiation;
use mcpl_client::mcpl::HostPolicy;
use mcpl_client::transport::redacted_url;
use mcpl_core::ProtocolVersion;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::state::StateBudget;
use serde::Deserialize;
use serde_json::Value;

use crate::alerts::webhook_url_is_secure;
use crate::naming::default_prefix;
use crate::prefix::{PrefixConflict, check_prefix};
use crate::tools::ToolFilter;

/// A configuration error.
///
/// # Examples
///
/// ```
/// use mcpl_host::config::{ConfigError, HostConfig};
///
/// let err = HostConfig::from_json(r#"{"servers": {"my server": {"command": "x"}}}"#).unwrap_err();
/// assert!(matches!(err, ConfigError::BadId(ref id) if id == "my server"));
///
/// let err = HostConfig::from_json(r#"{"servers": {"a": {"command": "x", "url": "ws://h/"}}}"#)
///     .unwrap_err();
/// assert!(matches!(err, ConfigError::Transport(ref id) if id == "a"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not valid JSON, or not the expected shape (an unknown or mistyped member).
    #[error("invalid host configuration")]
    Invalid(#[source] serde_json::Error),
    /// `servers` is neither an array nor an object.
    #[error("`servers` must be an array or an object")]
    ServersShape,
    /// One server's entry is not the expected shape (an unknown or mistyped member).
    #[error("invalid entry for server {server}")]
    InvalidServer {
        /// The server: its key (`"notes"`), else its position in the array (`#2`).
        server: String,
        /// What serde found.
        source: serde_json::Error,
    },
    /// A server keyed by one id in an object names another as its `id`.
    #[error("server key {key:?} differs from its id {id:?}")]
    IdMismatch {
        /// The key in `servers`.
        key: String,
        /// The `id` member.
        id: String,
    },
    /// A server in the `servers` array has no `id`.
    #[error("server #{0} has no id")]
    MissingId(usize),
    /// `protocol` is neither `auto`, `stateful`, `stateless` nor a known revision.
    #[error(
        "server {server:?}: protocol {protocol:?} is not \"auto\", \"stateful\", \"stateless\" \
         or one of the revisions {}",
        ProtocolVersion::ALL.map(|v| v.as_str()).join(", ")
    )]
    UnknownProtocol {
        /// The server.
        server: String,
        /// What was configured.
        protocol: String,
    },
    /// A server id outside `[A-Za-z0-9_-]+`.
    #[error("server id {0:?} must be non-empty and only ASCII letters, digits, '_' and '-'")]
    BadId(String),
    /// Two servers with one id.
    #[error("server id {0:?} is configured twice")]
    DuplicateId(String),
    /// A server with no transport, or two (`command` and `url`).
    #[error("server {0:?} needs exactly one of `command` (stdio) or `url` (WebSocket / HTTP)")]
    Transport(String),
    /// An empty tool prefix.
    #[error("server {0:?} has an empty toolPrefix")]
    EmptyPrefix(String),
    /// Two prefixes meet.
    #[error(transparent)]
    PrefixConflict(#[from] PrefixConflict),
    /// `opsWebhook` is not `https://` (plain `http://` is allowed to a loopback address only).
    /// The URL itself is not repeated: it is usually a secret.
    #[error("opsWebhook must be an https:// URL (plain http:// only to a loopback address)")]
    InsecureWebhook,
}

impl ConfigError {
    /// A stable name of the failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::HostConfig;
    ///
    /// let kind = |text: &str| HostConfig::from_json(text).unwrap_err().kind();
    /// assert_eq!(kind("not json"), "invalid");
    /// assert_eq!(
    ///     kind(r#"{"servers": [{"id": "a", "command": "x"}, {"id": "a", "command": "y"}]}"#),
    ///     "duplicate_id"
    /// );
    /// assert_eq!(
    ///     kind(r#"{"servers": {"a": {"command": "x", "toolPrefix": ""}}}"#),
    ///     "empty_prefix"
    /// );
    /// // b's prefix meets a's default prefix `mcpl--a`.
    /// let meeting = r#"{"servers": {"a": {"command": "x"},
    ///                               "b": {"command": "y", "toolPrefix": "mcpl--a"}}}"#;
    /// assert_eq!(kind(meeting), "prefix_conflict");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            ConfigError::Read { .. } => "read",
            ConfigError::Invalid(_) => "invalid",
            ConfigError::ServersShape => "servers_shape",
            ConfigError::InvalidServer { .. } => "invalid_server",
            ConfigError::IdMismatch { .. } => "id_mismatch",
            ConfigError::MissingId(_) => "missing_id",
            ConfigError::UnknownProtocol { .. } => "unknown_protocol",
            ConfigError::BadId(_) => "bad_id",
            ConfigError::DuplicateId(_) => "duplicate_id",
            ConfigError::Transport(_) => "transport",
            ConfigError::EmptyPrefix(_) => "empty_prefix",
            ConfigError::PrefixConflict(_) => "prefix_conflict",
            ConfigError::InsecureWebhook => "insecure_webhook",
        }
    }
}

/// How the host reaches a server.
///
/// # Examples
///
/// ```
/// use mcpl_host::config::{HostConfig, ServerTransport};
///
/// let config = HostConfig::from_json(r#"{"servers": {
///     "files": {"command": "mcpl-fs", "args": ["--root", "/srv"], "cwd": "/srv"},
///     "chat": {"url": "wss://chat.example/mcpl", "headers": {"Authorization": "Bearer t"}}
/// }}"#)
/// .unwrap();
/// // Servers are sorted by id.
/// match &config.servers[0].transport {
///     ServerTransport::Url { url, headers } => {
///         assert_eq!(url, "wss://chat.example/mcpl");
///         assert_eq!(headers["Authorization"], "Bearer t");
///     }
///     other => panic!("expected a URL, got {other:?}"),
/// }
/// let ServerTransport::Stdio { command, args, .. } = &config.servers[1].transport else {
///     panic!("expected stdio");
/// };
/// assert_eq!((command.as_str(), args.len()), ("mcpl-fs", 2));
/// ```
#[derive(Clone, PartialEq)]
pub enum ServerTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdio.
    ///
    /// Its environment is minimal: the variables of
    /// [`DEFAULT_INHERITED_ENV`](mcpl_client::transport::DEFAULT_INHERITED_ENV) that the host
    /// has (on Unix `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`, `LANG`, `LC_ALL`,
    /// `TMPDIR`), plus `env`. The host's other variables (API keys, cloud credentials) are not
    /// passed on unless `inheritEnv` is `true`.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it.
        env: BTreeMap<String, String>,
        /// The working directory.
        cwd: Option<PathBuf>,
        /// Pass the host's whole environment on (`inheritEnv`; default `false`).
        inherit_env: bool,
    },
    /// A URL: `ws://`, `wss://` or `mcpl://` (WebSocket), or `http(s)://` (Streamable HTTP:
    /// 2025-era sessions, or 2026-07-28 stateless requests; see [`ServerConfig::protocol`]).
    Url {
        /// The URL.
        url: String,
        /// Extra request headers (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// The former name of [`ServerTransport`] (it clashed with the `mcpl_core::Transport` trait).
#[deprecated(note = "renamed ServerTransport")]
pub type Transport = ServerTransport;

impl std::fmt::Debug for ServerTransport {
    /// Variable and header values, and a URL's user info and query, are left out: they hold
    /// credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerTransport::Stdio { command, args, env, cwd, inherit_env } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .field("inherit_env", inherit_env)
                .finish(),
            ServerTransport::Url { url, headers } => f
                .debug_struct("Url")
                .field("url", &redacted_url(url))
                .field("headers", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// The capability paths every server is granted unless its `grant.deny` says otherwise: what
/// hosts grant servers they did not write. Tools, push events, and registering channels (and
/// the host opening and closing them). Observing or injecting around the user's messages
/// (`contextHooks.*`), requesting inference (`inferenceRequest*`), observing inferences
/// (`inferenceLifecycle`), reading the model (`modelInfo`) and everything that moves
/// conversation content through channels (`channels.publish`, `channels.incoming`,
/// `channels.streaming`, `channels.acknowledge`, `channels.typing`) are granted only when a
/// server's `grant.allow` names them.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::capability::paths;
/// use mcpl_host::config::{DEFAULT_GRANT, HostConfig};
///
/// assert!(DEFAULT_GRANT.contains(&paths::TOOLS));
/// let config = HostConfig::from_json(r#"{"servers": {
///     "memory": {"command": "mcpl-memory", "grant": {"allow": ["contextHooks.beforeInference.*"]}},
///     "files": {"command": "mcpl-fs"}
/// }}"#).unwrap();
/// let (files, memory) = (config.servers[0].policy(), config.servers[1].policy());
/// assert!(files.permits(paths::TOOLS) && !files.permits(paths::OBSERVE));
/// assert!(memory.permits(paths::OBSERVE) && memory.permits(paths::TOOLS));
/// assert!(!memory.permits(paths::INFERENCE_REQUEST));
/// ```
pub const DEFAULT_GRANT: &[&str] =
    &[paths::TOOLS, paths::PUSH_EVENTS, paths::CHANNELS_REGISTER, paths::CHANNELS_LIFECYCLE];

/// Reconnect policy: exponential backoff with jitter from `initial` up to `max` (the SDK's one
/// [`Backoff`](mcpl_client::backoff::Backoff)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_host::config::{HostConfig, Reconnect};
///
/// let config = HostConfig::from_json(r#"{"servers": {"a": {"command": "x",
///     "reconnectIntervalMs": 1000, "reconnectMaxIntervalMs": 60000}}}"#).unwrap();
/// assert_eq!(config.servers[0].reconnect, Reconnect {
///     enabled: true,
///     initial: Duration::from_secs(1),
///     max: Duration::from_secs(60),
/// });
/// // The defaults: on, from 5 s up to 300 s.
/// assert_eq!(Reconnect::default().initial, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    /// Whether to reconnect after the connection drops.
    pub enabled: bool,
    /// The first delay.
    pub initial: Duration,
    /// The ceiling.
    pub max: Duration,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect { enabled: true, initial: Duration::from_secs(5), max: Duration::from_secs(300) }
    }
}

impl Reconnect {
    /// The delay before attempt `n` (0-based): a random time in the upper half of
    /// `initial * 2^n` capped at `max`, never less than `initial` (see
    /// [`Backoff::delay`](mcpl_client::backoff::Backoff::delay)), so that servers that went
    /// down together are not all reconnected at the same moment.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::Reconnect;
    /// use std::time::Duration;
    ///
    /// let policy = Reconnect {
    ///     enabled: true,
    ///     initial: Duration::from_secs(5),
    ///     max: Duration::from_secs(60),
    /// };
    /// assert_eq!(policy.delay(0), Duration::from_secs(5));
    /// let fourth = policy.delay(3);
    /// assert!(fourth >= Duration::from_secs(20) && fourth <= Duration::from_secs(40));
    /// assert!(policy.delay(u32::MAX) <= Duration::from_secs(60)); // no overflow
    /// ```
    pub fn delay(&self, attempt: u32) -> Duration {
        mcpl_client::backoff::Backoff::new(self.initial, self.max).delay(attempt)
    }
}

/// One server.
///
/// # Examples
///
/// ```
/// use mcpl_host::config::HostConfig;
///
/// let config = HostConfig::from_json(r#"{"servers": {"notes": {
///     "command": "mcpl-notes",
///     "reconnect": false,
///     "featureSets": {"disabled": ["notes.admin"]},
///     "tools": {"allow": ["note_*"], "deny": ["note_purge"]},
///     "grant": {"deny": ["inference.request"]}
/// }}}"#).unwrap();
/// let notes = &config.servers[0];
/// assert_eq!(notes.id, "notes");
/// assert!(!notes.reconnect.enabled);
/// assert_eq!(notes.disabled_feature_sets, ["notes.admin"]);
/// assert!(notes.tools.permits("note_add") && !notes.tools.permits("note_purge"));
/// assert_eq!(notes.grant_deny, ["inference.request"]);
/// ```
#[derive(Debug, Clone, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The id (`[A-Za-z0-9_-]+`).
    pub id: String,
    /// How to reach it.
    pub transport: ServerTransport,
    /// The tool prefix, if not the default `mcpl--<id>`.
    pub tool_prefix: Option<String>,
    /// Reconnect policy.
    pub reconnect: Reconnect,
    /// Feature sets to enable (`None`: all that the grant allows).
    pub enabled_feature_sets: Option<Vec<String>>,
    /// Feature sets to disable.
    pub disabled_feature_sets: Vec<String>,
    /// Which tools are offered.
    pub tools: ToolFilter,
    /// Capability paths (patterns) granted beyond [`DEFAULT_GRANT`].
    pub grant_allow: Option<Vec<String>>,
    /// Capability paths never granted.
    pub grant_deny: Vec<String>,
    /// How the protocol era is chosen (`protocol`): [`Negotiation::Auto`] (`"auto"`, the
    /// default) tries `initialize` first, where MCPL lives, and reaches a server that does not
    /// speak that era with `server/discover` (2026-07-28, plain MCP); a pinned revision
    /// (`"stateful"` for the newest 2025-era one, `"stateless"` for 2026-07-28, or the revision
    /// itself, such as `"2025-06-18"`) is spoken or the connect fails. MCPL needs a stateful
    /// revision: pinned to a stateless one, the server is plain MCP.
    pub protocol: Negotiation,
}

impl ServerConfig {
    /// A server `id` reached over `transport`, everything else as a configuration file
    /// leaves it by default (the prefix from the id, the default reconnects, grants and
    /// negotiation); the rest is set with the `with_*` setters.
    ///
    /// ```
    /// use mcpl_host::config::{ServerConfig, ServerTransport};
    ///
    /// let url = ServerTransport::Url { url: "http://127.0.0.1:9/mcp".into(), headers: Default::default() };
    /// let config = ServerConfig::new("notes", url).with_tool_prefix("n");
    /// assert_eq!(config.prefix(), "n");
    /// ```
    pub fn new(id: impl Into<String>, transport: ServerTransport) -> Self {
        ServerConfig {
            id: id.into(),
            transport,
            tool_prefix: None,
            reconnect: Reconnect::default(),
            enabled_feature_sets: None,
            disabled_feature_sets: Vec::new(),
            tools: ToolFilter::default(),
            grant_allow: None,
            grant_deny: Vec::new(),
            protocol: Negotiation::default(),
        }
    }

    /// The effective tool prefix.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::HostConfig;
    ///
    /// let config = HostConfig::from_json(r#"{"servers": {
    ///     "notes": {"command": "mcpl-notes"},
    ///     "chat": {"url": "ws://127.0.0.1:9000/", "toolPrefix": "chat"}
    /// }}"#).unwrap();
    /// assert_eq!(config.servers[0].prefix(), "chat");
    /// assert_eq!(config.servers[1].prefix(), "mcpl--notes");
    /// ```
    pub fn prefix(&self) -> String {
        self.tool_prefix.clone().unwrap_or_else(|| default_prefix(&self.id))
    }

    /// The policy the host offers this server: [`DEFAULT_GRANT`] plus `grant.allow`, less
    /// `grant.deny`, with its feature-set selection.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::capability::paths;
    /// use mcpl_host::config::HostConfig;
    ///
    /// let config = HostConfig::from_json(r#"{"servers": {"chat": {"url": "ws://127.0.0.1:9/",
    ///     "grant": {"allow": ["channels.publish", "inferenceRequest"], "deny": ["pushEvents"]},
    ///     "featureSets": {"disabled": ["chat.admin"]}}}}"#).unwrap();
    /// let policy = config.servers[0].policy();
    /// assert!(policy.permits(paths::CHANNELS_PUBLISH) && policy.permits(paths::INFERENCE_REQUEST));
    /// assert!(policy.permits(paths::TOOLS) && !policy.permits(paths::PUSH_EVENTS));
    /// assert!(!policy.permits(paths::INJECT_SYSTEM));
    /// assert_eq!(policy.disabled(), ["chat.admin"]);
    /// ```
    pub fn policy(&self) -> HostPolicy {
        let allowed = DEFAULT_GRANT
            .iter()
            .map(|p| (*p).to_owned())
            .chain(self.grant_allow.iter().flatten().cloned());
        let mut policy = allowed.fold(HostPolicy::deny_all(), HostPolicy::allow);
        for d in &self.grant_deny {
            policy = policy.deny(d.clone());
        }
        for e in self.enabled_feature_sets.iter().flatten() {
            policy = policy.enable(e.clone());
        }
        for d in &self.disabled_feature_sets {
            policy = policy.disable(d.clone());
        }
        policy
    }

    /// Checks the id, the transport and the prefix (not against other servers).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::HostConfig;
    ///
    /// let mut server = HostConfig::from_json(r#"{"servers": {"notes": {"command": "x"}}}"#)
    ///     .unwrap()
    ///     .servers
    ///     .remove(0);
    /// assert!(server.validate().is_ok());
    /// server.id = "notes/v2".into();
    /// assert_eq!(server.validate().unwrap_err().kind(), "bad_id");
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ok = !self.id.is_empty()
            && self.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(ConfigError::BadId(self.id.clone()));
        }
        if self.tool_prefix.as_deref() == Some("") {
            return Err(ConfigError::EmptyPrefix(self.id.clone()));
        }
        Ok(())
    }
}

/// Where checkpoint state lives, and the budget every state keeps.
///
/// The budget's members (`maxDepth`, `maxBytes`, `maxOperations`, `maxWork`) default to
/// [`StateBudget::default`], derived from the message size limit: a state at most 64 levels
/// deep and 4 MiB large, a patch of at most 131,072 operations copying and shifting at most
/// 16 MiB. A result whose state crosses it is rejected (nothing is applied or stored).
///
/// # Examples
///
/// ```
/// use std::path::Path;
/// use mcpl_host::config::{HostConfig, StateConfig};
///
/// let config = HostConfig::from_json(r#"{"state": {"dir": "/var/lib/agent/state",
///     "maxDepth": 16, "maxBytes": 262144}}"#).unwrap();
/// assert_eq!(config.state.dir.as_deref(), Some(Path::new("/var/lib/agent/state")));
/// assert_eq!(config.state.retention, 1000); // the default cap
/// assert_eq!(config.state.budget.max_depth(), 16);
/// assert_eq!(config.state.budget.max_size(), 262_144);
/// assert_eq!(StateConfig::default().dir, None); // in memory only
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct StateConfig {
    /// The directory of the file store (`None`: in memory only).
    pub dir: Option<PathBuf>,
    /// The node cap per checkpoint tree.
    pub retention: usize,
    /// The limits of every state and patch.
    pub budget: StateBudget,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig { dir: None, retention: 1000, budget: StateBudget::default() }
    }
}

/// The whole configuration.
///
/// # Examples
///
/// ```
/// use mcpl_host::config::HostConfig;
///
/// let config = HostConfig::from_json(r#"{
///     "servers": [{"id": "notes", "command": "mcpl-notes"}],
///     "failuresLog": "/var/log/agent/failures.jsonl",
///     "opsWebhook": "https://ops.example/hooks/agent"
/// }"#).unwrap();
/// assert_eq!(config.servers.len(), 1);
/// assert!(config.failures_log.is_some());
/// assert_eq!(config.ops_webhook.as_deref(), Some("https://ops.example/hooks/agent"));
/// // An empty configuration is valid: servers can be connected at run time.
/// assert_eq!(HostConfig::from_json("{}").unwrap(), HostConfig::default());
/// ```
#[derive(Clone, Default, PartialEq, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct HostConfig {
    /// The servers, sorted by id.
    pub servers: Vec<ServerConfig>,
    /// State persistence.
    pub state: StateConfig,
    /// A failures log (JSON lines) for ops alerts.
    pub failures_log: Option<PathBuf>,
    /// A webhook for ops alerts (at most once per server and kind per 15 minutes).
    pub ops_webhook: Option<String>,
}

impl std::fmt::Debug for HostConfig {
    /// The webhook URL without its user info and query (webhook URLs are often secrets
    /// themselves; a hook's path may be too, so operators should treat logs as sensitive all the
    /// same); servers as their own `Debug` shows them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("servers", &self.servers)
            .field("state", &self.state)
            .field("failures_log", &self.failures_log)
            .field("ops_webhook", &self.ops_webhook.as_deref().map(redacted_url))
            .finish()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawServer {
    id: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    inherit_env: bool,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    tool_prefix: Option<String>,
    reconnect: Option<bool>,
    reconnect_interval_ms: Option<u64>,
    reconnect_max_interval_ms: Option<u64>,
    #[serde(default)]
    feature_sets: RawSelection,
    #[serde(default)]
    tools: RawFilter,
    #[serde(default)]
    grant: RawGrant,
    protocol: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSelection {
    enabled: Option<Vec<String>>,
    #[serde(default)]
    disabled: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    allow: Option<Vec<String>>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawState {
    dir: Option<PathBuf>,
    retention: Option<usize>,
    max_depth: Option<usize>,
    max_bytes: Option<usize>,
    max_operations: Option<usize>,
    max_work: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    servers: Value,
    #[serde(default)]
    state: RawState,
    failures_log: Option<PathBuf>,
    ops_webhook: Option<String>,
}

impl HostConfig {
    /// Reads and validates a configuration file. Relative paths in it (`state.dir`, `cwd`,
    /// `failuresLog`) are resolved against the file's directory.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::{ConfigError, HostConfig};
    ///
    /// let dir = std::env::temp_dir().join(format!("mcpl-host-doc-load-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("host.json");
    /// std::fs::write(&path, r#"{"servers": {"notes": {"command": "mcpl-notes"}},
    ///                           "state": {"dir": "state"}}"#).unwrap();
    /// let config = HostConfig::load(&path).unwrap();
    /// // Relative paths are resolved against the file's directory.
    /// assert_eq!(config.state.dir, Some(dir.join("state")));
    ///
    /// let missing = HostConfig::load(&dir.join("absent.json")).unwrap_err();
    /// assert!(matches!(missing, ConfigError::Read { .. }));
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        let mut config = Self::from_json(&text)?;
        if let Some(base) = path.parent() {
            let resolve = |p: &mut PathBuf| {
                if p.is_relative() {
                    *p = base.join(&*p);
                }
            };
            config.state.dir.as_mut().map(resolve);
            config.failures_log.as_mut().map(resolve);
            for s in &mut config.servers {
                if let ServerTransport::Stdio { cwd: Some(cwd), .. } = &mut s.transport {
                    resolve(cwd);
                }
            }
        }
        Ok(config)
    }

    /// Parses and validates a configuration. `servers` is an array of objects with an `id`,
    /// or an object keyed by id.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::HostConfig;
    ///
    /// // An array of servers with ids, or an object keyed by id: the same configuration.
    /// let a = HostConfig::from_json(r#"{"servers": [{"id": "notes", "command": "mcpl-notes"}]}"#)
    ///     .unwrap();
    /// let b =
    ///     HostConfig::from_json(r#"{"servers": {"notes": {"command": "mcpl-notes"}}}"#).unwrap();
    /// assert_eq!(a, b);
    /// // Unknown members are refused rather than ignored.
    /// let err = HostConfig::from_json(r#"{"servers": {"notes": {"comand": "mcpl-notes"}}}"#)
    ///     .unwrap_err();
    /// assert_eq!(err.kind(), "invalid_server");
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = serde_json::from_str(text).map_err(ConfigError::Invalid)?;
        let entries: Vec<(Option<String>, Value)> = match raw.servers {
            Value::Null => Vec::new(),
            Value::Array(a) => a.into_iter().map(|v| (None, v)).collect(),
            Value::Object(m) => m.into_iter().map(|(k, v)| (Some(k), v)).collect(),
            _ => {
                return Err(ConfigError::ServersShape);
            }
        };
        let mut servers = Vec::new();
        for (position, (key, value)) in entries.into_iter().enumerate() {
            let raw: RawServer = serde_json::from_value(value).map_err(|source| {
                let server = key.clone().unwrap_or_else(|| format!("#{position}"));
                ConfigError::InvalidServer { server, source }
            })?;
            let id = match (key, raw.id) {
                (Some(key), Some(id)) if key != id => {
                    return Err(ConfigError::IdMismatch { key, id });
                }
                (Some(k), _) => k,
                (None, Some(id)) => id,
                (None, None) => return Err(ConfigError::MissingId(position)),
            };
            let transport = match (raw.command, raw.url) {
                (Some(command), None) => ServerTransport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    cwd: raw.cwd,
                    inherit_env: raw.inherit_env,
                },
                (None, Some(url)) => ServerTransport::Url { url, headers: raw.headers },
                _ => return Err(ConfigError::Transport(id)),
            };
            let protocol = match raw.protocol.as_deref() {
                None => Negotiation::Auto,
                Some(text) => protocol(text).ok_or_else(|| ConfigError::UnknownProtocol {
                    server: id.clone(),
                    protocol: text.to_owned(),
                })?,
            };
            let defaults = Reconnect::default();
            let server = ServerConfig {
                transport,
                tool_prefix: raw.tool_prefix,
                reconnect: Reconnect {
                    enabled: raw.reconnect.unwrap_or(defaults.enabled),
                    initial: raw
                        .reconnect_interval_ms
                        .map_or(defaults.initial, Duration::from_millis),
                    max: raw.reconnect_max_interval_ms.map_or(defaults.max, Duration::from_millis),
                },
                enabled_feature_sets: raw.feature_sets.enabled,
                disabled_feature_sets: raw.feature_sets.disabled,
                tools: ToolFilter::new(raw.tools.allow, raw.tools.deny),
                grant_allow: raw.grant.allow,
                grant_deny: raw.grant.deny,
                protocol,
                id,
            };
            server.validate()?;
            servers.push(server);
        }
        servers.sort_by(|a, b| a.id.cmp(&b.id));
        for pair in servers.windows(2) {
            if pair[0].id == pair[1].id {
                return Err(ConfigError::DuplicateId(pair[0].id.clone()));
            }
        }
        let prefixes: Vec<(String, String)> =
            servers.iter().map(|s| (s.id.clone(), s.prefix())).collect();
        // Each server against the ones before it, as the host reserves them in id order: the
        // same conflict as `Host::start` reports for this configuration.
        for (i, (id, prefix)) in prefixes.iter().enumerate() {
            check_prefix(id, prefix, prefixes[..i].iter().map(|(a, b)| (a.as_str(), b.as_str())))?;
        }
        let mut budget = StateBudget::default();
        if let Some(n) = raw.state.max_bytes {
            // The other limits follow the size unless set too.
            budget = StateBudget::for_message_size(n);
        }
        if let Some(n) = raw.state.max_depth {
            budget = budget.with_max_depth(n);
        }
        if let Some(n) = raw.state.max_operations {
            budget = budget.with_max_operations(n);
        }
        if let Some(n) = raw.state.max_work {
            budget = budget.with_max_work(n);
        }
        let state = StateConfig {
            dir: raw.state.dir,
            retention: raw.state.retention.unwrap_or(StateConfig::default().retention).max(1),
            budget,
        };
        if raw.ops_webhook.as_deref().is_some_and(|url| !webhook_url_is_secure(url)) {
            return Err(ConfigError::InsecureWebhook);
        }
        Ok(HostConfig {
            servers,
            state,
            failures_log: raw.failures_log,
            ops_webhook: raw.ops_webhook,
        })
    }
}

/// The negotiation a `protocol` member names.
fn protocol(text: &str) -> Option<Negotiation> {
    match text {
        "auto" => Some(Negotiation::Auto),
        "stateful" => Some(Negotiation::Pinned(ProtocolVersion::LATEST_STATEFUL)),
        "stateless" => Some(Negotiation::Pinned(ProtocolVersion::LATEST)),
        revision => ProtocolVersion::parse(revision).map(Negotiation::Pinned),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn refusals() {
        let kind = |t: &str| HostConfig::from_json(t).unwrap_err().kind();
        assert_eq!(kind(r#"{"servers": [{"id": "a b", "command": "x"}]}"#), "bad_id");
        assert_eq!(
            kind(r#"{"servers": [{"id": "a", "command": "x"}, {"id": "a", "command": "y"}]}"#),
            "duplicate_id"
        );
        assert_eq!(kind(r#"{"servers": [{"id": "a"}]}"#), "transport");
        assert_eq!(
            kind(r#"{"servers": [{"id": "a", "command": "x", "url": "ws://h"}]}"#),
            "transport"
        );
        assert_eq!(
            kind(r#"{"servers": [{"id": "a", "command": "x", "toolPrefix": ""}]}"#),
            "empty_prefix"
        );
        assert_eq!(
            kind(r#"{"servers": [{"id": "a", "command": "x", "bogus": 1}]}"#),
            "invalid_server"
        );
        assert_eq!(kind(r#"{"servers": [{"command": "x"}]}"#), "missing_id");
        assert_eq!(kind(r#"{"servers": {"a": {"id": "b", "command": "x"}}}"#), "id_mismatch");
        assert_eq!(kind(r#"{"servers": 3}"#), "servers_shape");
        // Default prefixes of ids `a` and `a--b` (ids may hold `-`) meet.
        assert_eq!(
            kind(r#"{"servers": [{"id": "a", "command": "x"}, {"id": "a--b", "command": "y"}]}"#),
            "prefix_conflict"
        );
        assert_eq!(
            kind(r#"{"servers": [{"id": "a", "command": "x"}, {"id": "a-", "command": "y"}]}"#),
            "prefix_conflict"
        );
        assert_eq!(
            kind(r#"{"opsWebhook": "http://ops.example/hook?token=t"}"#),
            "insecure_webhook"
        );
        let e = HostConfig::from_json(r#"{"opsWebhook": "http://ops.example/hook?token=t"}"#)
            .unwrap_err();
        assert!(!e.to_string().contains("token=t"), "{e}");
        assert!(HostConfig::from_json(r#"{"opsWebhook": "http://127.0.0.1:9/hook"}"#).is_ok());
        let ok = r#"{"servers": [{"id": "a", "command": "x", "toolPrefix": "foo"},
                                  {"id": "b", "command": "y", "toolPrefix": "foo-bar"},
                                  {"id": "c", "command": "z", "toolPrefix": "foobar"}]}"#;
        assert_eq!(HostConfig::from_json(ok).unwrap().servers.len(), 3);
    }

    #[test]
    fn debug_output_holds_no_secrets() {
        let config = HostConfig::from_json(
            r#"{"servers": {
                "a": {"command": "srv", "env": {"OPENAI_API_KEY": "sk-env-secret"}},
                "b": {"url": "https://u:pw-secret@mcp.example/mcp?key=q-secret",
                      "headers": {"Authorization": "Bearer h-secret"}}},
              "opsWebhook": "https://hooks.example/T0/B1?token=w-secret"}"#,
        )
        .unwrap();
        let shown = format!("{config:?} {:#?}", config.servers);
        for secret in ["sk-env-secret", "pw-secret", "q-secret", "h-secret", "w-secret"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("OPENAI_API_KEY") && shown.contains("Authorization"), "{shown}");
    }

    #[test]
    fn the_default_grant_is_the_safe_set() {
        let config = HostConfig::from_json(
            r#"{"servers": {"plain": {"command": "x"},
                "trusted": {"command": "y", "inheritEnv": true, "grant": {"allow": [
                    "contextHooks.beforeInference.observe", "contextHooks.beforeInference.inject.*",
                    "inferenceRequest", "inferenceLifecycle"]}}}}"#,
        )
        .unwrap();
        let plain = config.servers[0].policy();
        for path in paths::VOCABULARY {
            assert_eq!(plain.permits(path), DEFAULT_GRANT.contains(&path), "{path}");
        }
        let trusted = &config.servers[1];
        assert!(matches!(trusted.transport, ServerTransport::Stdio { inherit_env: true, .. }));
        let policy = trusted.policy();
        for path in [paths::OBSERVE, paths::INJECT_AFTER_USER, paths::INFERENCE_REQUEST] {
            assert!(policy.permits(path), "{path}");
        }
        assert!(!policy.permits(paths::CHANNELS_PUBLISH));
    }

    #[test]
    fn protocol_pins_or_chooses_the_era() {
        let protocol = |member: &str| {
            let text = format!(r#"{{"servers": {{"a": {{"command": "x"{member}}}}}}}"#);
            HostConfig::from_json(&text).map(|c| c.servers[0].protocol)
        };
        assert_eq!(protocol("").unwrap(), Negotiation::Auto);
        assert_eq!(protocol(r#", "protocol": "auto""#).unwrap(), Negotiation::Auto);
        let pinned = |v| Negotiation::Pinned(v);
        assert_eq!(
            protocol(r#", "protocol": "stateful""#).unwrap(),
            pinned(ProtocolVersion::LATEST_STATEFUL)
        );
        assert_eq!(
            protocol(r#", "protocol": "stateless""#).unwrap(),
            pinned(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(
            protocol(r#", "protocol": "2025-06-18""#).unwrap(),
            pinned(ProtocolVersion::V2025_06_18)
        );
        let err = protocol(r#", "protocol": "2024-99-99""#).unwrap_err();
        assert_eq!(err.kind(), "unknown_protocol");
        assert!(err.to_string().contains("2026-07-28"), "{err}");
    }

    #[test]
    fn a_read_failure_keeps_its_cause_once() {
        use std::error::Error as _;
        let missing = Path::new("/nonexistent/mcpl-host-config.json");
        let err = HostConfig::load(missing).unwrap_err();
        let cause = err.source().unwrap().to_string();
        assert!(!err.to_string().contains(&cause), "{err}");
        assert!(err.to_string().contains("mcpl-host-config.json"), "{err}");
    }

    #[test]
    fn invalid_json_keeps_its_cause_once() {
        use std::error::Error as _;
        for text in ["not json", r#"{"servers": {"a": {"comand": "x"}}}"#] {
            let err = HostConfig::from_json(text).unwrap_err();
            let cause = err.source().unwrap().to_string();
            assert!(!err.to_string().contains(&cause), "{err}");
        }
        let err = HostConfig::from_json(r#"{"servers": {"notes": {"comand": "x"}}}"#).unwrap_err();
        assert!(matches!(err, ConfigError::InvalidServer { ref server, .. } if server == "notes"));
        assert!(err.source().unwrap().to_string().contains("comand"), "{err:?}");
    }

    #[test]
    fn backoff() {
        let r = Reconnect {
            enabled: true,
            initial: Duration::from_secs(5),
            max: Duration::from_secs(300),
        };
        assert_eq!(r.delay(0), Duration::from_secs(5));
        let fourth = r.delay(3);
        assert!(fourth >= Duration::from_secs(20) && fourth <= Duration::from_secs(40));
        for late in [10, 200] {
            let delay = r.delay(late);
            assert!(delay >= Duration::from_secs(150) && delay <= Duration::from_secs(300));
        }
    }
}
