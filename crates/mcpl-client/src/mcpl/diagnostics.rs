//! [`Diagnostic`]: every rejection, drop and peer defect the host side sees, typed. Each one
//! is logged with `tracing` and handed to the sink set with
//! [`McplHost::on_diagnostic`](super::McplHost::on_diagnostic).

use std::sync::Arc;

use mcpl_core::mcpl::hooks::ContextInjection;
use mcpl_core::mcpl::policy::PolicyReceipt;

/// Something the host side rejected, dropped or found defective.
///
/// # Examples
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{Diagnostic, HostPolicy, McplHost, PushOutcome};
/// # use mcpl_test_kit::mcpl::alerts_server;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_server, _session, transport) = alerts_server().await?;
/// let dropped_tags = Arc::new(Mutex::new(Vec::new()));
/// let sink = dropped_tags.clone();
/// let host = McplHost::builder(HostPolicy::default())
///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
///     .on_diagnostic(move |diagnostic| {
///         if let Diagnostic::UnnamespacedTag { tag, .. } = diagnostic {
///             sink.lock().unwrap().push(tag.clone());
///         }
///     })
///     .build();
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
/// client.connect(transport).await?;
///
/// // The server's event is tagged "acme:disk" and "urgent"; tags need a namespace.
/// client.call_tool("alert", ()).await?;
/// assert_eq!(*dropped_tags.lock().unwrap(), ["urgent"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// A server request was answered with an error (not granted, not ready, bad params, ...).
    InboundRejected {
        /// The method.
        method: String,
        /// The JSON-RPC error code sent.
        code: i64,
        /// The error message sent.
        message: String,
    },
    /// A server exercised a capability its tagged feature set's `uses` does not declare (it was
    /// rejected with `-32002` even though the grant allows the capability).
    DeclarationMismatch {
        /// The method.
        method: String,
        /// The feature set.
        feature_set: String,
        /// The capability exercised.
        capability: String,
    },
    /// A `push/event` repeated an `eventId` already accepted: answered with the original
    /// result, the handler not called again.
    DuplicatePush {
        /// The event id.
        event_id: String,
    },
    /// A tag without a namespace (`"mention"`), dropped before the handler saw it.
    UnnamespacedTag {
        /// The method that carried it.
        method: String,
        /// The tag.
        tag: String,
    },
    /// An `inference/request` arrived while a `context/beforeInference` to the same server was
    /// pending (hooks must not trigger inference); it was rejected.
    InferenceDuringHook,
    /// One channel of `channels/register` or `channels/changed` was not accepted.
    ChannelRejected {
        /// The method.
        method: String,
        /// The channel id.
        channel_id: String,
        /// The reason given (`capability_denied`, `not_permitted`, ...).
        reason: String,
    },
    /// A notification-form `channels/changed` had items filtered out, which the server cannot
    /// learn (it should send the request form).
    UnreportedChannelRejections {
        /// How many items were rejected.
        rejected: usize,
    },
    /// A `channels/incoming` message was not accepted.
    IncomingRejected {
        /// The channel it claimed.
        channel_id: String,
        /// The message id.
        message_id: String,
        /// Why.
        reason: String,
    },
    /// A `context/beforeInference` injection the grant current at receipt does not allow.
    InjectionDropped {
        /// The dropped injection.
        injection: Box<ContextInjection>,
    },
    /// A response from the server with a defect that does not void it (e.g. a
    /// `context/beforeInference` result naming an undeclared or disabled feature set).
    ResponseDefect {
        /// The method.
        method: String,
        /// What is wrong.
        detail: String,
    },
    /// A `context/beforeInference` failed or timed out; the host went on without it.
    HookFailed {
        /// What happened.
        reason: String,
    },
    /// The server refused a policy (`accepted: false`). Nothing was widened.
    PolicyRefused {
        /// The receipt.
        receipt: PolicyReceipt,
    },
    /// A `featureSets/update` request got no usable answer: reductions stay applied, an
    /// expansion never activates (the initial policy: MCPL stays off).
    PolicyUnanswered {
        /// What happened.
        reason: String,
    },
    /// An `inference/lifecycle` phase that breaks "exactly one terminal per started"; not sent.
    LifecycleDefect {
        /// The inference.
        inference_id: String,
        /// What is wrong.
        defect: &'static str,
    },
    /// A host call refused locally (not granted, unknown channel, stream order, ...).
    CallRefused {
        /// The method.
        method: String,
        /// Why.
        reason: String,
    },
    /// `mcpl/manifest` fetches over the per-connection budget were dropped: reported once per
    /// burst (the first dropped fetch), not once per fetch. A dropped fetch after
    /// `mcpl/manifestChanged` is made up by one fetch when the budget has room again.
    ManifestFetchDropped,
    /// A manifest (at `initialize` or fetched) with a defect: unparseable, a wrong revision,
    /// invalid `uses`, extra members in `mcpl/manifestChanged`, ...
    ManifestDefect {
        /// What is wrong.
        detail: String,
    },
}

impl Diagnostic {
    /// A stable name for the kind of diagnostic.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost, PushOutcome};
    /// # use mcpl_test_kit::mcpl::alerts_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_server, _session, transport) = alerts_server().await?;
    /// // Count diagnostics by kind, for metrics.
    /// let kinds = Arc::new(Mutex::new(Vec::new()));
    /// let sink = kinds.clone();
    /// let host = McplHost::builder(HostPolicy::default())
    ///     .on_push_event(|_event| async { PushOutcome::accepted(None) })
    ///     .on_diagnostic(move |diagnostic| sink.lock().unwrap().push(diagnostic.kind()))
    ///     .build();
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host).build();
    /// client.connect(transport).await?;
    /// // The `alert` tool pushes the same event id twice: one tag dropped, then one duplicate.
    /// client.call_tool("alert", ()).await?;
    /// client.call_tool("alert", ()).await?;
    /// let kinds = kinds.lock().unwrap();
    /// assert!(kinds.contains(&"unnamespaced_tag"));
    /// assert!(kinds.contains(&"duplicate_push"));
    /// # Ok(()) }
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Diagnostic::InboundRejected { .. } => "inbound_rejected",
            Diagnostic::DeclarationMismatch { .. } => "declaration_mismatch",
            Diagnostic::DuplicatePush { .. } => "duplicate_push",
            Diagnostic::UnnamespacedTag { .. } => "unnamespaced_tag",
            Diagnostic::InferenceDuringHook => "inference_during_hook",
            Diagnostic::ChannelRejected { .. } => "channel_rejected",
            Diagnostic::UnreportedChannelRejections { .. } => "unreported_channel_rejections",
            Diagnostic::IncomingRejected { .. } => "incoming_rejected",
            Diagnostic::InjectionDropped { .. } => "injection_dropped",
            Diagnostic::ResponseDefect { .. } => "response_defect",
            Diagnostic::HookFailed { .. } => "hook_failed",
            Diagnostic::PolicyRefused { .. } => "policy_refused",
            Diagnostic::PolicyUnanswered { .. } => "policy_unanswered",
            Diagnostic::LifecycleDefect { .. } => "lifecycle_defect",
            Diagnostic::CallRefused { .. } => "call_refused",
            Diagnostic::ManifestFetchDropped => "manifest_fetch_dropped",
            Diagnostic::ManifestDefect { .. } => "manifest_defect",
        }
    }
}

pub(crate) type Sink = Arc<dyn Fn(&Diagnostic) + Send + Sync>;

/// Logs `diagnostic` and hands it to `sink`.
pub(crate) fn emit(sink: Option<&Sink>, diagnostic: Diagnostic) {
    tracing::warn!(kind = diagnostic.kind(), ?diagnostic, "mcpl host diagnostic");
    if let Some(sink) = sink {
        sink(&diagnostic);
    }
}
