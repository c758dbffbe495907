//! Per-request options: timeouts, progress and cancellation.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// The default time to wait for a response: 60 seconds.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// One `notifications/progress` update for an outgoing request.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// The progress so far; increases with every update.
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// A human-readable message, if any.
    pub message: Option<String>,
}

type ProgressFn = Arc<dyn Fn(ProgressUpdate) + Send + Sync>;

/// A callback for the notifications related to one outgoing request.
pub(crate) type RelatedFn = Arc<dyn Fn(Value) + Send + Sync>;

/// Options for one outgoing request.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_core::engine::RequestOptions;
///
/// let opts = RequestOptions::new()
///     .timeout(Duration::from_secs(5))
///     .reset_timeout_on_progress(true)
///     .max_total_timeout(Duration::from_secs(120))
///     .on_progress(|p| println!("{}/{:?}", p.progress, p.total));
/// # drop(opts);
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct RequestOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) reset_timeout_on_progress: bool,
    pub(crate) max_total_timeout: Option<Duration>,
    pub(crate) on_progress: Option<ProgressFn>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) related: Option<(String, RelatedFn)>,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("max_total_timeout", &self.max_total_timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("cancel", &self.cancel)
            .field("meta", &self.meta)
            .field("related", &self.related.as_ref().map(|(method, _)| method))
            .finish()
    }
}

impl RequestOptions {
    /// Options with every default: the engine's request timeout, no progress, no extra `_meta`.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long to wait for the response (or, with
    /// [`reset_timeout_on_progress`](Self::reset_timeout_on_progress), between progress updates).
    ///
    /// Default: the engine's request timeout (60 s unless configured).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether each progress update restarts the timeout. Default: `false`.
    pub fn reset_timeout_on_progress(mut self, reset: bool) -> Self {
        self.reset_timeout_on_progress = reset;
        self
    }

    /// The longest the request may take in total, however much progress it reports.
    ///
    /// Default: none (only the timeout applies).
    pub fn max_total_timeout(mut self, max: Duration) -> Self {
        self.max_total_timeout = Some(max);
        self
    }

    /// Asks the peer for progress and calls `f` with each update.
    ///
    /// Setting this adds a `progressToken` to the request's `_meta`.
    pub fn on_progress(mut self, f: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Cancels the request when `token` is cancelled: `notifications/cancelled` goes to the peer
    /// and the request fails with `Cancelled`.
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Merges these keys into the request's `params._meta`.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Hands the peer's notifications of `method` whose `params.requestId` is this request's id
    /// to `f` (their params), in the order they arrived, all before the request resolves.
    ///
    /// For protocols that stream partial results of a request as notifications naming it
    /// (MCPL's `inference/chunk`). Such notifications do not reach the engine's notification
    /// handlers while the request is pending. At most 1,024 of them wait for `f`; a peer that
    /// sends more before `f` takes them fails the request with
    /// [`Error::ProtocolViolation`](crate::Error::ProtocolViolation), none dropped unseen.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::engine::RequestOptions;
    ///
    /// let opts = RequestOptions::new().on_related_notification("inference/chunk", |params| {
    ///     println!("delta: {}", params["delta"]);
    /// });
    /// # drop(opts);
    /// ```
    pub fn on_related_notification(
        mut self,
        method: impl Into<String>,
        f: impl Fn(Value) + Send + Sync + 'static,
    ) -> Self {
        self.related = Some((method.into(), Arc::new(f)));
        self
    }
}
