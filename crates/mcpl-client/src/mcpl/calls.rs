//! The host's inference-time calls: `context/beforeInference` (timeout, fail-open,
//! injections authorized at receipt), `inference/lifecycle` (exactly one terminal per
//! started), `state/rollback`, and the connection's record of tool state.

use mcpl_core::engine::RequestOptions;
use mcpl_core::mcpl::authorize::authorize_injections;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::hooks::{
    BeforeInferenceParams, ContextInjection, LifecycleParams, LifecyclePhase,
};
use mcpl_core::mcpl::methods::{BeforeInference, InferenceLifecycle, Rollback, names};
use mcpl_core::mcpl::state::{RollbackParams, RollbackResult, StateCheckpoint, StateRequestFields};

use super::{Diagnostic, McplError, McplHost, McplStatus};

/// What one `context/beforeInference` contributed.
///
/// # Examples
///
/// ```
/// use mcpl_client::Client;
/// use mcpl_client::mcpl::{HookOutcome, HostPolicy, McplHost};
/// use mcpl_core::mcpl::hooks::{BeforeInferenceParams, Position};
/// use serde_json::json;
/// # use mcpl_test_kit::mcpl::notes_server;
///
/// /// The context a host adds to its prompt: what the grant let through.
/// fn to_prompt(outcome: &HookOutcome) -> Vec<String> {
///     outcome.injections.iter().map(|i| format!("[{}] {:?}", i.namespace, i.content)).collect()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (_session, transport, _lines) = notes_server().await?;
/// let host = McplHost::new(HostPolicy::default()); // never grants `inject.system` by default
/// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
/// client.connect(transport).await?;
///
/// let params: BeforeInferenceParams = serde_json::from_value(json!({
///     "inferenceId": "inf-1", "conversationId": "c-1", "turnIndex": 3, "userMessage": "hi",
///     "model": {"id": "m-1", "vendor": "acme", "contextWindow": 8192},
/// }))?;
/// let outcome = host.before_inference(params).await?;
/// // Without `inject.system` granted, only the injection after the user message counts.
/// assert_eq!(to_prompt(&outcome).len(), 1);
/// assert_eq!(outcome.injections[0].position, Position::AfterUser);
/// // This server sent only what the grant allows: nothing had to be dropped.
/// assert!(outcome.dropped.is_empty());
/// assert_eq!(outcome.feature_set.as_deref(), Some("notes"));
/// assert_eq!(outcome.failure, None);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct HookOutcome {
    /// The injections the grant current at receipt allows, in the server's order.
    pub injections: Vec<ContextInjection>,
    /// The injections dropped (each also reported as a [`Diagnostic::InjectionDropped`]).
    pub dropped: Vec<ContextInjection>,
    /// The feature set the server named in its response (informational: never used to
    /// authorize).
    pub feature_set: Option<String>,
    /// Why the hook contributed nothing, if it failed or timed out (fail-open).
    pub failure: Option<String>,
}

/// Decrements the pending-hook count when the call ends, on every path.
struct PendingHook<'a>(&'a McplHost);

impl Drop for PendingHook<'_> {
    fn drop(&mut self) {
        self.0.with_session_mut(|s| s.hooks_pending = s.hooks_pending.saturating_sub(1));
    }
}

impl McplHost {
    /// Calls `context/beforeInference` on the server. `user_message` is sent as `null` unless
    /// `contextHooks.beforeInference.observe` is granted. Each returned injection is
    /// authorized by its position against the grant **current when the response arrives**;
    /// the others are dropped with a diagnostic. A timeout (default 5 s) or an error yields
    /// no injections and a diagnostic (fail-open).
    ///
    /// # Errors
    ///
    /// Refused locally (nothing sent): [`McplError::NotActive`], or
    /// [`McplError::NotGranted`] when no `contextHooks.beforeInference.*` leaf is granted.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::capability::paths;
    /// use mcpl_core::mcpl::content::TextOrBlocks;
    /// use mcpl_core::mcpl::hooks::BeforeInferenceParams;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::notes_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = notes_server().await?;
    /// // This host lets servers write to the system prompt too.
    /// let host = McplHost::new(HostPolicy::default().allow(paths::INJECT_SYSTEM));
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// // Before each model call: ask the server what it adds.
    /// let params: BeforeInferenceParams = serde_json::from_value(json!({
    ///     "inferenceId": "inf-1", "conversationId": "c-1", "turnIndex": 3, "userMessage": "hi",
    ///     "model": {"id": "m-1", "vendor": "acme", "contextWindow": 8192},
    /// }))?;
    /// let outcome = host.before_inference(params).await?;
    /// let texts: Vec<&TextOrBlocks> = outcome.injections.iter().map(|i| &i.content).collect();
    /// assert_eq!(texts, [&TextOrBlocks::Text("turn 3".into()), &TextOrBlocks::Text("You keep notes.".into())]);
    /// assert!(outcome.dropped.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn before_inference(
        &self,
        mut params: BeforeInferenceParams,
    ) -> Result<HookOutcome, McplError> {
        let method = names::CONTEXT_BEFORE_INFERENCE;
        let peer = self
            .with_session_mut(|s| {
                if s.status != McplStatus::Ready {
                    return Err(McplError::NotActive);
                }
                if !s.grant.any_before_inference() {
                    return Err(McplError::NotGranted {
                        capability: "contextHooks.beforeInference.*".into(),
                    });
                }
                if !s.grant.is_granted(paths::OBSERVE) {
                    params.user_message = None;
                }
                s.hooks_pending += 1;
                Ok(s.peer.clone())
            })
            .unwrap_or(Err(McplError::NotActive))
            .inspect_err(|e| self.refused(method, e))?;
        let _pending = PendingHook(self);
        let options = RequestOptions::new().timeout(self.options().hook_timeout);
        let result = match peer.send::<BeforeInference>(params, options).await {
            Ok(result) => result,
            Err(e) => {
                let reason = e.to_string();
                self.diagnose(Diagnostic::HookFailed { reason: reason.clone() });
                return Ok(HookOutcome { failure: Some(reason), ..HookOutcome::default() });
            }
        };
        // Authorize at receipt: the grant now, not when the request was sent. The response's
        // feature set is checked for the record only; it never authorizes anything.
        let (grant, set_enabled) = self
            .with_session(|s| {
                (s.grant.clone(), matches!(s.derived.get(&result.feature_set), Some(Ok(()))))
            })
            .unwrap_or_default();
        if !set_enabled {
            self.diagnose(Diagnostic::ResponseDefect {
                method: method.to_owned(),
                detail: format!(
                    "the response names feature set {:?}, which is not declared and enabled",
                    result.feature_set
                ),
            });
        }
        let (injections, dropped) = authorize_injections(&grant, result.context_injections);
        for injection in &dropped {
            self.diagnose(Diagnostic::InjectionDropped { injection: Box::new(injection.clone()) });
        }
        Ok(HookOutcome {
            injections,
            dropped,
            feature_set: Some(result.feature_set),
            failure: None,
        })
    }

    /// Sends `inference/lifecycle`, enforcing exactly one terminal phase per `started`: a
    /// second `started`, a terminal without `started` or a second terminal is refused (not
    /// sent) and reported. `model` is sent only if `modelInfo` is granted, `usage` only on
    /// `completed`.
    ///
    /// # Errors
    ///
    /// [`McplError::NotActive`] / [`McplError::NotGranted`] (`inferenceLifecycle`),
    /// [`McplError::Lifecycle`], or the connection's error.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// use mcpl_core::mcpl::hooks::{LifecycleParams, LifecyclePhase};
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::notes_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, mut server_saw) = notes_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// let phase = |phase: &str| -> serde_json::Result<LifecycleParams> {
    ///     serde_json::from_value(json!({"inferenceId": "inf-1", "phase": phase}))
    /// };
    /// host.lifecycle(phase("started")?).await?;
    /// host.lifecycle(phase("completed")?).await?;
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("inf-1 Started"));
    /// assert_eq!(server_saw.recv().await.as_deref(), Some("inf-1 Completed"));
    ///
    /// // Exactly one terminal phase per inference: a second one is refused, not sent.
    /// let err = host.lifecycle(phase("failed")?).await.unwrap_err();
    /// assert!(matches!(err, McplError::Lifecycle { .. }));
    /// assert_eq!(phase("failed")?.phase, LifecyclePhase::Failed);
    /// # Ok(()) }
    /// ```
    pub async fn lifecycle(&self, mut params: LifecycleParams) -> Result<(), McplError> {
        let method = names::INFERENCE_LIFECYCLE;
        let peer = self
            .with_session_mut(|s| {
                if s.status != McplStatus::Ready {
                    return Err(McplError::NotActive);
                }
                if !s.grant.is_granted(paths::INFERENCE_LIFECYCLE) {
                    return Err(McplError::NotGranted {
                        capability: paths::INFERENCE_LIFECYCLE.into(),
                    });
                }
                s.lifecycle.record(&params.inference_id, params.phase.is_terminal()).map_err(
                    |defect| McplError::Lifecycle {
                        inference_id: params.inference_id.clone(),
                        defect,
                    },
                )?;
                if !s.grant.is_granted(paths::MODEL_INFO) {
                    params.model = None;
                }
                Ok(s.peer.clone())
            })
            .unwrap_or(Err(McplError::NotActive));
        let peer = match peer {
            Ok(peer) => peer,
            Err(McplError::Lifecycle { inference_id, defect }) => {
                self.diagnose(Diagnostic::LifecycleDefect {
                    inference_id: inference_id.clone(),
                    defect,
                });
                return Err(McplError::Lifecycle { inference_id, defect });
            }
            Err(e) => {
                self.refused(method, &e);
                return Err(e);
            }
        };
        if params.phase != LifecyclePhase::Completed {
            params.usage = None;
        }
        Ok(peer.send_notification::<InferenceLifecycle>(params).await?)
    }

    /// Calls `state/rollback` for an enabled feature set that declares `rollback: true`.
    ///
    /// # Errors
    ///
    /// [`McplError::NotActive`], [`McplError::RollbackUnsupported`], or the server's error
    /// (`-32005` for an unknown or pruned checkpoint).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// # use mcpl_test_kit::mcpl::notes_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = notes_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    ///
    /// // The user undid the last edits: back to checkpoint cp-1.
    /// let result = host.rollback("notes", "cp-1").await?;
    /// assert!(result.success);
    /// // A checkpoint the server does not know is its error (-32005).
    /// assert!(matches!(host.rollback("notes", "cp-9").await, Err(McplError::Protocol(_))));
    /// // A feature set that does not declare `rollback: true` is refused locally.
    /// let err = host.rollback("calendar", "cp-1").await.unwrap_err();
    /// assert!(matches!(err, McplError::RollbackUnsupported { .. }));
    /// # Ok(()) }
    /// ```
    pub async fn rollback(
        &self,
        feature_set: &str,
        checkpoint: &str,
    ) -> Result<RollbackResult, McplError> {
        let peer = self
            .with_session(|s| {
                if s.status != McplStatus::Ready {
                    return Err(McplError::NotActive);
                }
                let supports = s.declared.get(feature_set).and_then(|f| f.rollback) == Some(true)
                    && matches!(s.derived.get(feature_set), Some(Ok(())));
                if !supports {
                    return Err(McplError::RollbackUnsupported {
                        feature_set: feature_set.to_owned(),
                    });
                }
                Ok(s.peer.clone())
            })
            .unwrap_or(Err(McplError::NotActive))
            .inspect_err(|e| self.refused(names::STATE_ROLLBACK, e))?;
        let params = RollbackParams::new(feature_set.to_owned(), checkpoint.to_owned());
        let result = peer.send::<Rollback>(params, RequestOptions::new()).await?;
        if result.success {
            self.with_session_mut(|s| s.state.roll_back(feature_set, &result.checkpoint));
        }
        Ok(result)
    }

    /// Records the `state` of a `tools/call` result of a tool in `feature_set` in this
    /// connection's [`StateTracker`](mcpl_core::mcpl::state::StateTracker): a snapshot, a
    /// patch applied atomically to the parent's state, or an opaque checkpoint.
    ///
    /// # Errors
    ///
    /// [`McplError::NotActive`] without an MCPL connection; [`McplError::State`] when a patch
    /// cannot be applied (the checkpoint is then kept as opaque).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplError, McplHost};
    /// use mcpl_core::mcpl::state::StateCheckpoint;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::notes_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = notes_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    ///
    /// // Without a connection there is nothing to record into.
    /// let first = StateCheckpoint::snapshot("cp-1", None, json!({"notes": ["buy milk"]}));
    /// assert!(matches!(host.record_state("notes", &first), Err(McplError::NotActive)));
    ///
    /// client.connect(transport).await?;
    /// // A `tools/call` result of a `notes` tool carried this state: record it.
    /// host.record_state("notes", &first)?;
    /// assert_eq!(host.state_fields("notes").state, Some(json!({"notes": ["buy milk"]})));
    /// # Ok(()) }
    /// ```
    pub fn record_state(
        &self,
        feature_set: &str,
        checkpoint: &StateCheckpoint,
    ) -> Result<(), McplError> {
        self.with_session_mut(|s| s.state.record(feature_set, checkpoint))
            .ok_or(McplError::NotActive)?
            .map_err(McplError::from)
    }

    /// The state fields for the next `tools/call` of a tool in `feature_set`: the full `state`
    /// if host-managed, else the `checkpoint`; empty if nothing is recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_client::Client;
    /// use mcpl_client::mcpl::{HostPolicy, McplHost};
    /// use mcpl_core::mcpl::state::StateCheckpoint;
    /// use serde_json::json;
    /// # use mcpl_test_kit::mcpl::notes_server;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let (_session, transport, _lines) = notes_server().await?;
    /// let host = McplHost::new(HostPolicy::default());
    /// let client = Client::builder("my-host", "1.0.0").with_mcpl(host.clone()).build();
    /// client.connect(transport).await?;
    /// assert_eq!(host.state_fields("notes"), Default::default());
    ///
    /// host.record_state("notes", &StateCheckpoint::snapshot("cp-1", None, json!({"n": 1})))?;
    /// let fields = host.state_fields("notes");
    /// // The host keeps this set's state: the next `tools/call` of a `notes` tool carries it.
    /// assert_eq!(fields.state, Some(json!({"n": 1})));
    /// assert_eq!(serde_json::to_value(&fields)?, json!({"state": {"n": 1}}));
    /// # Ok(()) }
    /// ```
    pub fn state_fields(&self, feature_set: &str) -> StateRequestFields {
        self.with_session(|s| s.state.request_fields(feature_set)).unwrap_or_default()
    }
}
