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

use serde::Serialize;
use serde_json::{Map, Value};

/// Alert kinds the host raises.
pub mod kinds {
    /// A server failed to reconnect five times in a row.
    pub const SERVER_DOWN: &str = "mcpl-down";
    /// A server is back after `mcpl-down`.
    pub const SERVER_UP: &str = "mcpl-up";
    /// A server listed a tool name more than once.
    pub const DUPLICATE_TOOLS: &str = "mcpl-duplicate-tools";
    /// A server's `tools/list` refresh failed (its previous list is kept, marked stale).
    pub const TOOLS_STALE: &str = "mcpl-tools-stale";
    /// A server's `tools/list` refresh worked again.
    pub const TOOLS_FRESH: &str = "mcpl-tools-fresh";
    /// A server refused the host's policy (`accepted: false`).
    pub const POLICY_REFUSED: &str = "mcpl-policy-refused";
}

/// One alert.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.data.insert(key.to_owned(), value.into());
        self
    }
}

/// A destination for alerts.
pub trait AlertSink: Send + Sync + Debug + 'static {
    /// Delivers one alert (must not block for long; post asynchronously).
    fn deliver(&self, alert: &OpsAlert);
}

/// The time, injectable so throttling windows are testable.
pub trait Clock: Send + Sync + Debug + 'static {
    /// Now.
    fn now(&self) -> SystemTime;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told (tests).
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
#[derive(Debug, Default)]
pub struct RecordingSink {
    alerts: Mutex<Vec<OpsAlert>>,
}

impl RecordingSink {
    /// How many were delivered.
    pub fn count(&self) -> usize {
        self.alerts.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The delivered alerts.
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
#[derive(Debug)]
pub struct FailuresLog {
    path: PathBuf,
    clock: Arc<dyn Clock>,
}

impl FailuresLog {
    /// A log at `path` (created on first write).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FailuresLog { path: path.into(), clock: Arc::new(SystemClock) }
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
#[derive(Debug, Clone)]
pub struct WebhookSink {
    url: String,
    client: reqwest::Client,
}

impl WebhookSink {
    /// A sink posting to `url`.
    pub fn new(url: impl Into<String>) -> Self {
        WebhookSink { url: url.into(), client: reqwest::Client::new() }
    }
}

impl AlertSink for WebhookSink {
    fn deliver(&self, alert: &OpsAlert) {
        let Ok(body) = serde_json::to_vec(alert) else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(url = %self.url, "ops webhook not posted: no tokio runtime");
            return;
        };
        let request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(Duration::from_secs(10))
            .body(body);
        let url = self.url.clone();
        runtime.spawn(async move {
            match request.send().await {
                Ok(r) if r.status().is_success() => {}
                Ok(r) => {
                    tracing::warn!(%url, status = %r.status(), "ops webhook refused the alert")
                }
                Err(e) => tracing::warn!(%url, error = %e, "ops webhook post failed"),
            }
        });
    }
}

#[derive(Debug)]
struct Throttled {
    sink: Arc<dyn AlertSink>,
    window: Duration,
    clock: Arc<dyn Clock>,
    last: Mutex<HashMap<(String, String), SystemTime>>,
}

impl Throttled {
    fn deliver(&self, alert: &OpsAlert) {
        let now = self.clock.now();
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            let key = (alert.subject.clone(), alert.kind.clone());
            if let Some(at) = last.get(&key)
                && now.duration_since(*at).unwrap_or_default() < self.window
            {
                return;
            }
            // Stamped before delivering, so a burst cannot race past the window.
            last.insert(key, now);
        }
        self.sink.deliver(alert);
    }
}

/// The alert pipeline: every sink gets every alert, throttled sinks at most once per
/// (subject, kind) per window; each alert is also a `tracing` warning (`ops_alert`).
#[derive(Debug, Default, Clone)]
pub struct Alerts {
    sinks: Vec<Arc<dyn AlertSink>>,
    throttled: Vec<Arc<Throttled>>,
}

impl Alerts {
    /// A pipeline that only traces.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a sink that gets every alert (e.g. a [`FailuresLog`]).
    pub fn with_sink(mut self, sink: Arc<dyn AlertSink>) -> Self {
        self.sinks.push(sink);
        self
    }

    /// Adds a sink that gets each (subject, kind) at most once per `window` (e.g. a
    /// [`WebhookSink`] with 15 minutes).
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
            last: Mutex::new(HashMap::new()),
        }));
        self
    }

    /// Raises an alert through every stage.
    pub fn raise(&self, alert: &OpsAlert) {
        let data = Value::Object(alert.data.clone()).to_string();
        tracing::warn!(
            target: "ops_alert",
            kind = %alert.kind,
            subject = %alert.subject,
            data = %data,
            "{}",
            alert.message
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
