//! Ops alerts: things an operator should hear about (a server down, a duplicate tool listing, a
//! refused policy). Every alert goes through three stages: a JSON line in a failures log, a
//! `tracing` event, and (optionally) a webhook posted at most once per (subject, kind) per
//! window (15 minutes by default), the window stamped before the post so bursts cannot race
//! past it.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use mcpl_host::alerts::{Alerts, ManualClock, OpsAlert, RecordingSink};
//!
//! let clock = Arc::new(ManualClock::default());
//! let webhook = Arc::new(RecordingSink::default());
//! let alerts = Alerts::new().with_throttled(webhook.clone(), Duration::from_secs(900), clock.clone());
//! let alert = OpsAlert::new("mcpl-duplicate-tools", "files", "tools listed twice: read");
//! alerts.raise(&alert);
//! alerts.raise(&alert);
//! assert_eq!(webhook.count(), 1, "once per subject and kind per window");
//! clock.advance(Duration::from_secs(901));
//! alerts.raise(&alert);
//! assert_eq!(webhook.count(), 2);
//! ```

use std::collections::HashMap;
use std::fmt::Debug;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(feature = "http")]
use mcpl_client::transport::redacted_url;
use mcpl_core::log_safe::LogSafe;
use serde::Serialize;
use serde_json::{Map, Value};

/// Alert kinds the host raises.
///
/// # Examples
///
/// ```
/// use mcpl_host::HostEvent;
/// use mcpl_host::alerts::{OpsAlert, kinds};
///
/// /// Whether an alert should page the on-call operator.
/// fn pages(event: &HostEvent) -> bool {
///     let HostEvent::Alert(alert) = event else { return false };
///     [kinds::SERVER_DOWN, kinds::POLICY_REFUSED].contains(&alert.kind.as_str())
/// }
///
/// let down = OpsAlert::new(kinds::SERVER_DOWN, "notes", "notes failed to reconnect 5 times");
/// assert!(pages(&HostEvent::Alert(down)));
/// assert!(!pages(&HostEvent::Alert(OpsAlert::new(kinds::TOOLS_STALE, "notes", "stale"))));
/// ```
pub mod kinds {
    /// A server failed to reconnect five times in a row.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{OpsAlert, kinds};
    ///
    /// let alert =
    ///     OpsAlert::new(kinds::SERVER_DOWN, "notes", "server notes failed to reconnect 5 times")
    ///         .with("attempts", 5);
    /// assert_eq!(alert.kind, "mcpl-down");
    /// ```
    pub const SERVER_DOWN: &str = "mcpl-down";
    /// A server is back after `mcpl-down`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::kinds;
    ///
    /// // Raise and clear are distinct kinds, so each is throttled on its own.
    /// assert_ne!(kinds::SERVER_UP, kinds::SERVER_DOWN);
    /// assert_eq!(kinds::SERVER_UP, "mcpl-up");
    /// ```
    pub const SERVER_UP: &str = "mcpl-up";
    /// A server listed a tool name more than once.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{OpsAlert, kinds};
    /// use mcpl_host::tools::{ToolFilter, listing};
    /// use serde_json::json;
    ///
    /// let tools = vec![
    ///     json!({"name": "read", "inputSchema": {}}),
    ///     json!({"name": "read", "inputSchema": {}}),
    /// ];
    /// let l = listing("files", tools, &ToolFilter::default());
    /// if !l.repeats.is_empty() {
    ///     let alert = OpsAlert::new(kinds::DUPLICATE_TOOLS, "files", "tools listed twice")
    ///         .with("tools", l.repeats.clone());
    ///     assert_eq!(alert.data["tools"], json!(["read"]));
    /// }
    /// ```
    pub const DUPLICATE_TOOLS: &str = "mcpl-duplicate-tools";
    /// A server's `tools/list` refresh failed (its previous list is kept, marked stale).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::kinds;
    ///
    /// assert_eq!(kinds::TOOLS_STALE, "mcpl-tools-stale");
    /// assert_eq!(kinds::TOOLS_FRESH, "mcpl-tools-fresh"); // its clearing kind
    /// ```
    pub const TOOLS_STALE: &str = "mcpl-tools-stale";
    /// A server's `tools/list` refresh worked again.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{OpsAlert, kinds};
    ///
    /// // An embedder tracking which servers offer a stale tool list.
    /// let mut stale = std::collections::BTreeSet::new();
    /// for alert in [
    ///     OpsAlert::new(kinds::TOOLS_STALE, "notes", "tools/list of notes failed: timeout"),
    ///     OpsAlert::new(kinds::TOOLS_FRESH, "notes", "tools/list of notes works again"),
    /// ] {
    ///     match alert.kind.as_str() {
    ///         kinds::TOOLS_STALE => {
    ///             stale.insert(alert.subject);
    ///         }
    ///         kinds::TOOLS_FRESH => {
    ///             stale.remove(&alert.subject);
    ///         }
    ///         _ => {}
    ///     }
    /// }
    /// assert!(stale.is_empty());
    /// ```
    pub const TOOLS_FRESH: &str = "mcpl-tools-fresh";
    /// A server refused the host's policy (`accepted: false`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{OpsAlert, kinds};
    ///
    /// let alert = OpsAlert::new(kinds::POLICY_REFUSED, "notes", "notes refused the host policy")
    ///     .with("reason", "feature set notes.admin is required");
    /// assert_eq!(alert.kind, "mcpl-policy-refused");
    /// ```
    pub const POLICY_REFUSED: &str = "mcpl-policy-refused";
    /// A stored checkpoint tree was unreadable or over the state budget when the host started:
    /// that (server, feature set) starts afresh or stays degraded; nothing else is affected.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{OpsAlert, kinds};
    ///
    /// let alert = OpsAlert::new(kinds::STATE_DEGRADED, "notes", "stored state set aside")
    ///     .with("featureSet", "notes.store");
    /// assert_eq!(alert.kind, "mcpl-state-degraded");
    /// ```
    pub const STATE_DEGRADED: &str = "mcpl-state-degraded";
}

/// One alert.
///
/// # Examples
///
/// ```
/// use mcpl_host::alerts::{OpsAlert, kinds};
/// use serde_json::json;
///
/// let alert =
///     OpsAlert::new(kinds::SERVER_DOWN, "notes", "server notes is down").with("attempts", 5);
/// // The webhook body.
/// assert_eq!(
///     serde_json::to_value(&alert).unwrap(),
///     json!({
///         "kind": "mcpl-down",
///         "subject": "notes",
///         "message": "server notes is down",
///         "data": {"attempts": 5}
///     })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OpsAlert {
    /// What happened (see [`kinds`]); raise and clear are distinct kinds.
    pub kind: String,
    /// Whom it is about (a server id).
    pub subject: String,
    /// A sentence for a human.
    pub message: String,
    /// Structured details.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub data: Map<String, Value>,
}

impl OpsAlert {
    /// An alert without data.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::OpsAlert;
    ///
    /// let alert = OpsAlert::new("backup-failed", "notes", "the nightly state backup failed");
    /// assert_eq!(alert.subject, "notes");
    /// assert!(alert.data.is_empty());
    /// ```
    pub fn new(
        kind: impl Into<String>,
        subject: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        OpsAlert {
            kind: kind.into(),
            subject: subject.into(),
            message: message.into(),
            data: Map::new(),
        }
    }

    /// Adds a data member.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{OpsAlert, kinds};
    /// use serde_json::json;
    ///
    /// let alert =
    ///     OpsAlert::new(kinds::DUPLICATE_TOOLS, "files", "files lists tools more than once")
    ///         .with("tools", vec!["read", "write"])
    ///         .with("refresh", 3);
    /// assert_eq!(alert.data["tools"], json!(["read", "write"]));
    /// assert_eq!(alert.data["refresh"], 3);
    /// ```
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.data.insert(key.to_owned(), value.into());
        self
    }
}

/// A destination for alerts.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mcpl_host::alerts::{AlertSink, Alerts, OpsAlert, kinds};
///
/// /// Shows alerts in the embedder's own status bar.
/// #[derive(Debug, Default)]
/// struct StatusBar(Mutex<Option<String>>);
///
/// impl AlertSink for StatusBar {
///     fn deliver(&self, alert: &OpsAlert) {
///         *self.0.lock().unwrap() = Some(format!("{}: {}", alert.subject, alert.message));
///     }
/// }
///
/// let bar = Arc::new(StatusBar::default());
/// let alerts = Alerts::new().with_sink(bar.clone());
/// alerts.raise(&OpsAlert::new(kinds::SERVER_UP, "notes", "server notes is back"));
/// assert_eq!(bar.0.lock().unwrap().as_deref(), Some("notes: server notes is back"));
/// ```
pub trait AlertSink: Send + Sync + Debug + 'static {
    /// Delivers one alert (must not block for long; post asynchronously).
    fn deliver(&self, alert: &OpsAlert);
}

/// The time, injectable so throttling windows are testable.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use mcpl_host::alerts::Clock;
///
/// /// A clock that runs a fixed offset ahead (e.g. to test window edges).
/// #[derive(Debug)]
/// struct Ahead(Duration);
///
/// impl Clock for Ahead {
///     fn now(&self) -> SystemTime {
///         SystemTime::now() + self.0
///     }
/// }
///
/// assert!(Ahead(Duration::from_secs(60)).now() > SystemTime::now());
/// ```
pub trait Clock: Send + Sync + Debug + 'static {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The system clock.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use mcpl_host::alerts::{Alerts, RecordingSink, SystemClock};
///
/// // In production, throttling windows follow the system clock.
/// let webhook = Arc::new(RecordingSink::default());
/// let window = Duration::from_secs(15 * 60);
/// let alerts = Alerts::new().with_throttled(webhook, window, Arc::new(SystemClock));
/// # let _ = alerts;
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told (tests).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_host::alerts::{Clock, ManualClock};
///
/// let clock = ManualClock::default();
/// let start = clock.now();
/// assert_eq!(clock.now(), start); // it does not move by itself
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(clock.now().duration_since(start).unwrap(), Duration::from_secs(60));
/// ```
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<SystemTime>,
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock { now: Mutex::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000)) }
    }
}

impl ManualClock {
    /// Moves the clock forward.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{Alerts, ManualClock, OpsAlert, RecordingSink, kinds};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = Arc::new(ManualClock::default());
    /// let sink = Arc::new(RecordingSink::default());
    /// let alerts =
    ///     Alerts::new().with_throttled(sink.clone(), Duration::from_secs(900), clock.clone());
    /// let alert = OpsAlert::new(kinds::TOOLS_STALE, "notes", "tools/list failed");
    /// alerts.raise(&alert);
    /// clock.advance(Duration::from_secs(899));
    /// alerts.raise(&alert); // still inside the window
    /// clock.advance(Duration::from_secs(1));
    /// alerts.raise(&alert); // the window has passed
    /// assert_eq!(sink.count(), 2);
    /// ```
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Keeps every delivered alert (tests, or an embedder's own UI).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use mcpl_host::alerts::{Alerts, OpsAlert, RecordingSink, kinds};
///
/// let sink = Arc::new(RecordingSink::default());
/// let alerts = Alerts::new().with_sink(sink.clone());
/// alerts.raise(&OpsAlert::new(kinds::SERVER_DOWN, "notes", "down"));
/// alerts.raise(&OpsAlert::new(kinds::SERVER_UP, "notes", "up"));
/// let kinds_seen: Vec<String> = sink.alerts().into_iter().map(|a| a.kind).collect();
/// assert_eq!(kinds_seen, ["mcpl-down", "mcpl-up"]);
/// ```
#[derive(Debug, Default)]
pub struct RecordingSink {
    alerts: Mutex<Vec<OpsAlert>>,
}

impl RecordingSink {
    /// How many were delivered.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_host::alerts::{Alerts, OpsAlert, RecordingSink};
    ///
    /// let sink = Arc::new(RecordingSink::default());
    /// assert_eq!(sink.count(), 0);
    /// Alerts::new().with_sink(sink.clone()).raise(&OpsAlert::new("k", "s", "m"));
    /// assert_eq!(sink.count(), 1);
    /// ```
    pub fn count(&self) -> usize {
        self.alerts.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The delivered alerts.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_host::alerts::{Alerts, OpsAlert, RecordingSink, kinds};
    ///
    /// let sink = Arc::new(RecordingSink::default());
    /// let alerts = Alerts::new().with_sink(sink.clone());
    /// alerts.raise(&OpsAlert::new(kinds::DUPLICATE_TOOLS, "files", "read listed twice"));
    /// let delivered = sink.alerts();
    /// assert_eq!(delivered[0].subject, "files");
    /// ```
    pub fn alerts(&self) -> Vec<OpsAlert> {
        self.alerts.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl AlertSink for RecordingSink {
    fn deliver(&self, alert: &OpsAlert) {
        self.alerts.lock().unwrap_or_else(PoisonError::into_inner).push(alert.clone());
    }
}

/// Appends each alert as a JSON line `{at, kind, subject, message, ...data}` to a file.
///
/// # Examples
///
/// ```
/// use mcpl_host::alerts::{Alerts, FailuresLog, OpsAlert, kinds};
/// use std::sync::Arc;
///
/// let path =
///     std::env::temp_dir().join(format!("mcpl-host-doc-failures-{}.jsonl", std::process::id()));
/// let alerts = Alerts::new().with_sink(Arc::new(FailuresLog::new(&path)));
/// alerts.raise(
///     &OpsAlert::new(kinds::SERVER_DOWN, "notes", "server notes is down").with("attempts", 5),
/// );
/// alerts.raise(&OpsAlert::new(kinds::SERVER_UP, "notes", "server notes is back"));
///
/// let text = std::fs::read_to_string(&path).unwrap();
/// let lines: Vec<serde_json::Value> =
///     text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
/// assert_eq!(lines.len(), 2);
/// assert_eq!(
///     (lines[0]["kind"].as_str(), lines[0]["attempts"].as_u64()),
///     (Some("mcpl-down"), Some(5))
/// );
/// assert!(lines[1]["at"].as_u64().is_some()); // milliseconds since the epoch
/// std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug)]
pub struct FailuresLog {
    path: PathBuf,
    clock: Arc<dyn Clock>,
}

impl FailuresLog {
    /// A log at `path` (created on first write).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{AlertSink, FailuresLog, OpsAlert};
    ///
    /// let path = std::env::temp_dir()
    ///     .join(format!("mcpl-host-doc-log-new-{}.jsonl", std::process::id()));
    /// let log = FailuresLog::new(&path);
    /// assert!(!path.exists()); // created on the first write
    /// log.deliver(&OpsAlert::new("mcpl-down", "notes", "down"));
    /// assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FailuresLog { path: path.into(), clock: Arc::new(SystemClock) }
    }

    /// The log with `clock` for its `at` stamps.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_host::alerts::{AlertSink, FailuresLog, ManualClock, OpsAlert};
    ///
    /// let path = std::env::temp_dir()
    ///     .join(format!("mcpl-host-doc-log-clock-{}.jsonl", std::process::id()));
    /// let log = FailuresLog::new(&path).with_clock(Arc::new(ManualClock::default()));
    /// log.deliver(&OpsAlert::new("mcpl-down", "notes", "down"));
    /// let line: serde_json::Value =
    ///     serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
    /// assert_eq!(line["at"], 1_800_000_000_000u64); // the manual clock's start
    /// std::fs::remove_file(&path).unwrap();
    /// ```
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

impl AlertSink for FailuresLog {
    fn deliver(&self, alert: &OpsAlert) {
        let at =
            self.clock.now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let mut line = Map::new();
        line.insert("at".into(), at.into());
        line.insert("kind".into(), alert.kind.clone().into());
        line.insert("subject".into(), alert.subject.clone().into());
        line.insert("message".into(), alert.message.clone().into());
        for (k, v) in &alert.data {
            line.entry(k.clone()).or_insert_with(|| v.clone());
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            tracing::error!(path = %self.path.display(), error = %e, "failures log not written");
        }
    }
}

/// Posts each alert as JSON to a URL (in the background, on the current tokio runtime).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_host::alerts::{AlertSink, OpsAlert, WebhookSink, kinds};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A stand-in for the ops endpoint: accepts one POST and sends its body on `rx`.
/// let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
/// let url = format!("http://{}/alerts", listener.local_addr()?);
/// # let rx = mcpl_test_kit::http::accept_one_post(listener);
///
/// // `deliver` posts in the background on the current tokio runtime.
/// WebhookSink::new(url).deliver(&OpsAlert::new(kinds::SERVER_DOWN, "notes", "notes is down"));
/// let mut waited = Duration::ZERO;
/// let body = loop {
///     if let Ok(body) = rx.try_recv() {
///         break body;
///     }
///     assert!(waited < Duration::from_secs(60), "the webhook was not posted");
///     tokio::time::sleep(Duration::from_millis(20)).await;
///     waited += Duration::from_millis(20);
/// };
/// let posted: serde_json::Value = serde_json::from_slice(&body)?;
/// assert_eq!(posted["kind"], "mcpl-down");
/// assert_eq!(posted["subject"], "notes");
/// # Ok(()) }
/// ```
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
#[derive(Clone)]
pub struct WebhookSink {
    url: String,
    client: reqwest::Client,
    secure: bool,
}

#[cfg(feature = "http")]
impl std::fmt::Debug for WebhookSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSink").field("url", &redacted_url(&self.url)).finish_non_exhaustive()
    }
}

/// Whether alerts may be posted to `url`: `https://`, or plain `http://` to a loopback address
/// only (an alert, and the URL's own token, would otherwise cross the network in clear).
///
/// # Examples
///
/// ```
/// use mcpl_host::alerts::webhook_url_is_secure;
///
/// assert!(webhook_url_is_secure("https://hooks.example/T0/B1"));
/// assert!(webhook_url_is_secure("http://127.0.0.1:9000/alerts"));
/// assert!(webhook_url_is_secure("http://localhost/alerts"));
/// assert!(webhook_url_is_secure("http://[::1]:8080/"));
/// assert!(!webhook_url_is_secure("http://ops.example/alerts"));
/// assert!(!webhook_url_is_secure("ftp://ops.example/alerts"));
/// ```
pub fn webhook_url_is_secure(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else { return false };
    match (url.scheme(), url.host()) {
        ("https", Some(_)) => true,
        ("http", Some(url::Host::Domain(d))) => d.eq_ignore_ascii_case("localhost"),
        ("http", Some(url::Host::Ipv4(ip))) => ip.is_loopback(),
        ("http", Some(url::Host::Ipv6(ip))) => ip.is_loopback(),
        _ => false,
    }
}

#[cfg(feature = "http")]
impl WebhookSink {
    /// A sink posting to `url`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use mcpl_host::alerts::{Alerts, SystemClock, WebhookSink};
    ///
    /// // What the host does with `opsWebhook`: one post per server and kind per 15 minutes.
    /// let webhook = Arc::new(WebhookSink::new("https://ops.example/hooks/agent"));
    /// let window = Duration::from_secs(15 * 60);
    /// let alerts = Alerts::new().with_throttled(webhook, window, Arc::new(SystemClock));
    /// # let _ = alerts;
    /// ```
    ///
    /// Only a URL that [`webhook_url_is_secure`] accepts is ever posted to (a host's
    /// configuration refuses any other); redirects are not followed, and the URL is never
    /// logged but without its user info and query.
    pub fn new(url: impl Into<String>) -> Self {
        let url = url.into();
        // The transports' TLS (https works with the default features), no redirects.
        let client = mcpl_client::transport::http::client_builder()
            .ok()
            .and_then(|b| b.redirect(reqwest::redirect::Policy::none()).build().ok())
            .unwrap_or_default();
        WebhookSink { secure: webhook_url_is_secure(&url), url, client }
    }
}

#[cfg(feature = "http")]
impl AlertSink for WebhookSink {
    fn deliver(&self, alert: &OpsAlert) {
        let url = redacted_url(&self.url);
        if !self.secure {
            tracing::warn!(%url, "ops webhook not posted: not https (plain http is for loopback only)");
            return;
        }
        let Ok(body) = serde_json::to_vec(alert) else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(%url, "ops webhook not posted: no tokio runtime");
            return;
        };
        let request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(Duration::from_secs(10))
            .body(body);
        runtime.spawn(async move {
            match request.send().await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => {
                    tracing::warn!(%url, status = %r.status(), "ops webhook refused the alert")
                }
                Err(e) => tracing::warn!(%url, error = %e.without_url(), "ops webhook post failed"),
            }
        });
    }
}

/// How many (subject, kind) windows a throttled sink keeps before it forgets those that are
/// over (subjects are server ids, which come and go).
const PRUNE_AT: usize = 256;

#[derive(Debug)]
struct Throttled {
    sink: Arc<dyn AlertSink>,
    window: Duration,
    clock: Arc<dyn Clock>,
    last: Mutex<Windows>,
}

/// When each (subject, kind) was last delivered; pruned of the windows that are over whenever
/// it reaches `prune_at`, which then doubles past the windows still open.
#[derive(Debug)]
struct Windows {
    at: HashMap<(String, String), SystemTime>,
    prune_at: usize,
}

impl Windows {
    fn new() -> Windows {
        Windows { at: HashMap::new(), prune_at: PRUNE_AT }
    }
}

impl Throttled {
    fn open(&self, at: SystemTime, now: SystemTime) -> bool {
        now.duration_since(at).unwrap_or_default() < self.window
    }

    fn deliver(&self, alert: &OpsAlert) {
        let now = self.clock.now();
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            let key = (alert.subject.clone(), alert.kind.clone());
            if let Some(at) = last.at.get(&key)
                && self.open(*at, now)
            {
                return;
            }
            if last.at.len() >= last.prune_at {
                last.at.retain(|_, at| self.open(*at, now));
                last.prune_at = (last.at.len() * 2).max(PRUNE_AT);
            }
            // Stamped before delivering, so a burst cannot race past the window.
            last.at.insert(key, now);
        }
        self.sink.deliver(alert);
    }
}

/// The alert pipeline: every sink gets every alert, throttled sinks at most once per
/// (subject, kind) per window; each alert is also a `tracing` warning (`ops_alert`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use mcpl_host::alerts::{Alerts, ManualClock, OpsAlert, RecordingSink, kinds};
///
/// let every = Arc::new(RecordingSink::default()); // e.g. a failures log
/// let paged = Arc::new(RecordingSink::default()); // e.g. a webhook
/// let clock = Arc::new(ManualClock::default());
/// let alerts = Alerts::new()
///     .with_sink(every.clone())
///     .with_throttled(paged.clone(), Duration::from_secs(900), clock);
/// for subject in ["notes", "notes", "web"] {
///     alerts.raise(&OpsAlert::new(kinds::SERVER_DOWN, subject, "down"));
/// }
/// assert_eq!(every.count(), 3);
/// assert_eq!(paged.count(), 2); // once per (subject, kind) per window
/// ```
#[derive(Debug, Default, Clone)]
pub struct Alerts {
    sinks: Vec<Arc<dyn AlertSink>>,
    throttled: Vec<Arc<Throttled>>,
}

impl Alerts {
    /// A pipeline that only traces.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{Alerts, OpsAlert};
    ///
    /// // Only a `tracing` warning (target `ops_alert`) per alert.
    /// let alerts = Alerts::new();
    /// alerts.raise(&OpsAlert::new("mcpl-down", "notes", "server notes is down"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a sink that gets every alert (e.g. a [`FailuresLog`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_host::alerts::{Alerts, OpsAlert, RecordingSink};
    ///
    /// let sink = Arc::new(RecordingSink::default());
    /// let alerts = Alerts::new().with_sink(sink.clone());
    /// let alert = OpsAlert::new("mcpl-down", "notes", "down");
    /// alerts.raise(&alert);
    /// alerts.raise(&alert);
    /// assert_eq!(sink.count(), 2); // unthrottled: every alert
    /// ```
    pub fn with_sink(mut self, sink: Arc<dyn AlertSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Adds a sink that gets each (subject, kind) at most once per `window` (e.g. a
    /// [`WebhookSink`] with 15 minutes).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::alerts::{Alerts, ManualClock, OpsAlert, RecordingSink};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = Arc::new(ManualClock::default());
    /// let sink = Arc::new(RecordingSink::default());
    /// let alerts =
    ///     Alerts::new().with_throttled(sink.clone(), Duration::from_secs(60), clock.clone());
    /// alerts.raise(&OpsAlert::new("mcpl-down", "notes", "down"));
    /// alerts.raise(&OpsAlert::new("mcpl-up", "notes", "up")); // another kind: its own window
    /// alerts.raise(&OpsAlert::new("mcpl-down", "notes", "still down")); // throttled
    /// assert_eq!(sink.count(), 2);
    /// ```
    pub fn with_throttled(
        mut self,
        sink: Arc<dyn AlertSink>,
        window: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        self.throttled.push(Arc::new(Throttled {
            sink,
            window,
            clock,
            last: Mutex::new(Windows::new()),
        }));
        self
    }

    /// Raises an alert through every stage.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcpl_host::alerts::{Alerts, OpsAlert, RecordingSink, kinds};
    ///
    /// let sink = Arc::new(RecordingSink::default());
    /// let alerts = Alerts::new().with_sink(sink.clone());
    /// alerts.raise(&OpsAlert::new(kinds::POLICY_REFUSED, "notes", "notes refused the policy"));
    /// assert_eq!(sink.alerts()[0].kind, kinds::POLICY_REFUSED);
    /// ```
    pub fn raise(&self, alert: &OpsAlert) {
        // Messages and data carry server-controlled text (tool names, error messages): a
        // newline in them must not start a forged log line.
        let data = Value::Object(alert.data.clone()).to_string();
        tracing::warn!(
            target: "ops_alert",
            kind = %LogSafe(&alert.kind),
            subject = %LogSafe(&alert.subject),
            data = %LogSafe(&data),
            "{}",
            LogSafe(&alert.message)
        );
        for s in &self.sinks {
            s.deliver(alert);
        }
        for t in &self.throttled {
            t.deliver(alert);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_throttle_forgets_windows_that_are_over() {
        let clock = Arc::new(ManualClock::default());
        let hook = Arc::new(RecordingSink::default());
        let window = Duration::from_secs(900);
        let alerts = Alerts::new().with_throttled(hook.clone(), window, clock.clone());
        let windows = || alerts.throttled[0].last.lock().unwrap().at.len();
        // Servers come and go under new ids, each alerting once, a minute apart.
        for n in 0..2_000 {
            alerts.raise(&OpsAlert::new(kinds::SERVER_DOWN, format!("s{n}"), "down"));
            clock.advance(Duration::from_secs(60));
        }
        assert_eq!(hook.count(), 2_000, "every new subject is delivered");
        // Only windows still open (15 minutes' worth) and fewer than a pruning round are kept.
        assert!(windows() <= 16 + PRUNE_AT, "{} windows kept", windows());
        // A window still open keeps throttling after a prune.
        alerts.raise(&OpsAlert::new(kinds::SERVER_DOWN, "s1999", "down"));
        assert_eq!(hook.count(), 2_000);
    }

    #[test]
    fn throttle_is_per_subject_and_kind() {
        let clock = Arc::new(ManualClock::default());
        let hook = Arc::new(RecordingSink::default());
        let all = Arc::new(RecordingSink::default());
        let alerts = Alerts::new().with_sink(all.clone()).with_throttled(
            hook.clone(),
            Duration::from_secs(900),
            clock.clone(),
        );
        alerts.raise(&OpsAlert::new(kinds::DUPLICATE_TOOLS, "a", "x"));
        alerts.raise(&OpsAlert::new(kinds::DUPLICATE_TOOLS, "a", "x"));
        alerts.raise(&OpsAlert::new(kinds::DUPLICATE_TOOLS, "b", "x"));
        alerts.raise(&OpsAlert::new(kinds::SERVER_DOWN, "a", "x"));
        assert_eq!(all.count(), 4);
        assert_eq!(hook.count(), 3);
        clock.advance(Duration::from_secs(899));
        alerts.raise(&OpsAlert::new(kinds::DUPLICATE_TOOLS, "a", "x"));
        assert_eq!(hook.count(), 3);
        clock.advance(Duration::from_secs(1));
        alerts.raise(&OpsAlert::new(kinds::DUPLICATE_TOOLS, "a", "x"));
        assert_eq!(hook.count(), 4);
    }

    #[test]
    fn failures_log_appends_json_lines() {
        let path =
            std::env::temp_dir().join(format!("mcpl-host-failures-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = FailuresLog::new(&path);
        log.deliver(&OpsAlert::new("k", "s", "m").with("tools", vec!["a", "b"]));
        log.deliver(&OpsAlert::new("k2", "s", "m2"));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["tools"], serde_json::json!(["a", "b"]));
        assert_eq!(lines[1]["kind"], "k2");
        std::fs::remove_file(&path).unwrap();
    }
}
