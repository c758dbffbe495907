//! Connecting, restarting and disconnecting servers: reservation, handshake, commit,
//! the watch on a live connection and reconnection with backoff.

use std::sync::{Arc, PoisonError};

use mcpl_client::mcpl::{McplHost, McplStatus, PushOutcome};
#[cfg(feature = "child")]
use mcpl_client::transport::ChildProcess;
#[cfg(feature = "http")]
use mcpl_client::transport::HttpTransport;
#[cfg(feature = "ws")]
use mcpl_client::transport::WebSocketTransport;
use mcpl_client::{Client, Negotiation};
use mcpl_core::Era;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::policy::PolicyReceipt;
use serde_json::Value;

use crate::alerts::{OpsAlert, kinds};
use crate::checkpoint::StateMode;
use crate::config::ServerConfig;
#[cfg(any(feature = "child", feature = "http", feature = "ws"))]
use crate::config::ServerTransport;
use crate::error::ConnectError;
pub(super) use crate::error::HostError;
use crate::registry::{Lease, Reservation};
use crate::tools::Listing;
use crate::unavailable::{self};

use super::calls::state_call;
use super::*;

/// Why a push event the application has no room for is declined.
const EVENTS_FULL: &str = "the host is busy: its events queue is full; send the event again later";

impl Host {
    /// Connects a server at run time. Every check runs first: an id that is connecting or
    /// registered, or a prefix meeting another server's (or equal to a reserved name), is
    /// refused at once and nothing changes. A failed handshake releases the id (or, with
    /// reconnect on, keeps the server registered and retries in the background). A
    /// [`Host::disconnect`] or [`Host::shutdown`] during the handshake wins: the connect is
    /// cancelled, its connection closed, and it returns [`HostError::Cancelled`].
    ///
    /// # Errors
    ///
    /// [`HostError::Registry`] for a refusal, [`HostError::Connect`] for a failed handshake,
    /// [`HostError::Cancelled`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::{Host, HostError};
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::registry::Phase;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let missing = |id: &str, prefix: &str| {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "toolPrefix": "{prefix}",
    /// #         "command": "/nonexistent/mcpl-doc-server", "reconnectIntervalMs": 3600000}}]}}"#);
    /// #     HostConfig::from_json(&text).map(|mut c| c.servers.remove(0))
    /// # };
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// let err = host.connect(missing("notes", "notes")?).await.unwrap_err();
    /// assert!(matches!(err, HostError::Connect { ref server, .. } if server == "notes"));
    /// // Reconnect is on: the server stays registered, down, and retries in the background.
    /// assert_eq!(host.servers(), [("notes".into(), "notes".into(), Phase::Down)]);
    /// // A second connect of the id is refused at once.
    /// let again = host.connect(missing("notes", "other")?).await.unwrap_err();
    /// assert_eq!(again.kind(), "busy");
    /// # Ok(()) }
    /// ```
    pub async fn connect(&self, config: ServerConfig) -> Result<(), HostError> {
        let reservation = lock(&self.inner.registry).reserve(config.clone())?;
        self.drive(reservation, config).await
    }

    /// Restarts a server, optionally with a new configuration: validated against every other
    /// server first (a refused restart leaves the server running), then the old connection is
    /// closed and a new one opened. Checkpoint trees are kept. A restart whose handshake fails
    /// puts the server back as it was: its previous configuration and prefix (held for it
    /// while the handshake ran) and, if it was connected and the restart changed its
    /// configuration, a connection under the previous one again at once (one attempt, whatever
    /// its `reconnect`), before the error returns. If that fails too, or the configuration was
    /// kept (it just failed), its tools stay offered, marked stale, and reconnects follow when
    /// the configuration enables them.
    ///
    /// # Errors
    ///
    /// As [`Host::connect`]; [`RegistryError::Unknown`] for an unknown id.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let missing = |id: &str, prefix: &str| {
    /// #     let text = format!(r#"{{"servers": [{{"id": "{id}", "toolPrefix": "{prefix}",
    /// #         "command": "/nonexistent/mcpl-doc-server", "reconnectIntervalMs": 3600000}}]}}"#);
    /// #     HostConfig::from_json(&text).map(|mut c| c.servers.remove(0))
    /// # };
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// # let _ = host.connect(missing("a", "alpha")?).await;
    /// # let _ = host.connect(missing("b", "beta")?).await;
    /// // Servers "a" (prefix "alpha") and "b" (prefix "beta") are registered.
    /// // A restart under a prefix that meets b's is refused; a leaves unchanged.
    /// let err = host.restart("a", Some(missing("a", "beta--x")?)).await.unwrap_err();
    /// assert_eq!(err.kind(), "prefix_conflict");
    /// assert_eq!(host.servers()[0].1, "alpha");
    /// // A restart under a new prefix whose handshake fails puts "alpha" back.
    /// let err = host.restart("a", Some(missing("a", "gamma")?)).await.unwrap_err();
    /// assert_eq!(err.kind(), "connect");
    /// assert_eq!(host.servers()[0].1, "alpha");
    /// let err = host.restart("nobody", None).await.unwrap_err();
    /// assert_eq!(err.kind(), "unknown_server");
    /// # Ok(()) }
    /// ```
    pub async fn restart(&self, id: &str, config: Option<ServerConfig>) -> Result<(), HostError> {
        let (reservation, old, previous) = {
            let mut registry = lock(&self.inner.registry);
            let previous = registry.config(id).cloned();
            let (reservation, old) = registry.reserve_again(id, config)?;
            (reservation, old, previous)
        };
        let was_connected = old.is_some();
        if let Some(old) = old {
            let _ = old.client.close().await;
        }
        self.inner.tools.write().unwrap_or_else(PoisonError::into_inner).mark_stale(id);
        let config = lock(&self.inner.registry).config(id).cloned();
        let Some(config) = config else { return Err(HostError::Cancelled(id.to_owned())) };
        let lease = reservation.lease().clone();
        match self.establish(reservation, &config).await {
            Ok(()) => Ok(()),
            Err(Failed::Cancelled) => Err(HostError::Cancelled(id.to_owned())),
            Err(Failed::Handshake { source, reconnect }) => {
                // The registry holds the previous configuration again. It was connected, and
                // the connection that failed was a different one: connect it again at once.
                // (The same configuration just failed: its reconnects, if any, follow.)
                let mut reconnect = reconnect;
                if was_connected && previous.as_ref() != Some(&config) {
                    reconnect = match self.reconnect_now(&lease).await {
                        Ok(()) | Err(Failed::Cancelled) => false,
                        Err(Failed::Handshake { reconnect, .. }) => reconnect,
                    };
                }
                if reconnect {
                    self.spawn_reconnect(lease, 1);
                }
                Err(HostError::Connect { server: id.to_owned(), source })
            }
        }
    }

    /// Removes a server permanently: cancels its connect or reconnects, closes it, forgets its
    /// tools and deletes its checkpoint trees. Unknown ids are a no-op.
    ///
    /// # Errors
    ///
    /// The checkpoint store failed to delete the trees.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::{Host, HostEvent};
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, mut events) = Host::start(config).await?;
    /// # while events.try_recv().is_ok() {}
    /// host.disconnect("notes").await?;
    /// // The server, its tools and its checkpoint trees are gone; the model is told.
    /// assert!(host.servers().is_empty() && host.tools().is_empty());
    /// let Ok(HostEvent::ToolsChanged { removed, .. }) = events.try_recv() else { unreachable!() };
    /// assert_eq!(removed, ["mcpl--notes--add"]);
    /// host.disconnect("notes").await?; // unknown ids are a no-op
    /// # Ok(()) }
    /// ```
    pub async fn disconnect(&self, id: &str) -> Result<(), HostError> {
        let gate = self.lifecycle_gate(id);
        let _one_at_a_time = gate.lock().await;
        let (removed, before) = {
            let mut registry = lock(&self.inner.registry);
            let removed = registry.remove(id);
            let mut tools = self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
            let before = names_in(&tools, id);
            tools.remove(id);
            (removed, before)
        };
        if let Some((_, Some(link))) = &removed {
            let _ = link.client.close().await;
        }
        if !before.is_empty() {
            self.emit(HostEvent::ToolsChanged {
                server: id.to_owned(),
                added: Vec::new(),
                removed: before,
            });
        }
        let removed_trees = self.inner.checkpoints.remove_server(id);
        // Last, still under the gate: a commit waiting on it finds the server gone.
        self.forget(id);
        removed_trees?;
        Ok(())
    }

    /// Forgets what the host keeps per server id (the lifecycle and refresh gates, the push
    /// dedupe, the stale mark) once the id is gone from the registry, so these do not grow with
    /// ids that are gone. An id registered again meanwhile keeps them.
    pub(super) fn forget(&self, id: &str) {
        let gone = |host: &Host| lock(&host.inner.registry).phase(id).is_none();
        // Each map's lock is held across the check, as where entries are made.
        for gates in [&self.inner.lifecycle, &self.inner.refreshing] {
            let mut gates = lock(gates);
            if gone(self) {
                gates.remove(id);
            }
        }
        let mut pushes = lock(&self.inner.pushes);
        if gone(self) {
            pushes.forget(id);
            lock(&self.inner.stale).remove(id);
        }
    }

    /// The one connect path of first connects, restarts and [`Host::start`]: establishes the
    /// reservation, and on a failed handshake starts the reconnects the server's (restored)
    /// configuration asks for.
    pub(super) async fn drive(
        &self,
        reservation: Reservation,
        config: ServerConfig,
    ) -> Result<(), HostError> {
        let lease = reservation.lease().clone();
        let id = config.id.clone();
        match self.establish(reservation, &config).await {
            Ok(()) => Ok(()),
            Err(Failed::Cancelled) => Err(HostError::Cancelled(id)),
            Err(Failed::Handshake { source, reconnect }) => {
                if reconnect {
                    self.spawn_reconnect(lease, 1);
                }
                Err(HostError::Connect { server: id, source })
            }
        }
    }

    /// Runs one handshake for `reservation` (racing its cancellation) and commits it, or gives
    /// the reservation back. Used by every connect: first connects, restarts, reconnects.
    pub(super) async fn establish(
        &self,
        reservation: Reservation,
        config: &ServerConfig,
    ) -> Result<(), Failed> {
        let link = self.link(config, reservation.lease().generation());
        let cancelled = reservation.lease().cancelled();
        let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.handshake(&link, config));
        let outcome = tokio::select! {
            biased;
            () = cancelled => None,
            outcome = handshake => Some(match outcome {
                Ok(outcome) => outcome,
                Err(_) => Err(ConnectError::Timeout(HANDSHAKE_TIMEOUT)),
            }),
        };
        match outcome {
            Some(Ok(())) => self.commit(reservation, config, link).await,
            outcome => {
                // Whatever the transport got to (a child process, a socket) is closed.
                let _ = link.client.close().await;
                let cancelled = reservation.lease().is_cancelled();
                // A cancelled first connect leaves nothing; a restart or reconnect puts the
                // previous configuration back.
                let keep = config.reconnect.enabled && !cancelled;
                let kept = lock(&self.inner.registry).release(reservation, keep);
                if kept.is_none() {
                    self.forget(&config.id);
                }
                match outcome {
                    Some(Err(source)) if !cancelled => {
                        let reconnect = kept.is_some_and(|c| c.reconnect.enabled);
                        Err(Failed::Handshake { source, reconnect })
                    }
                    _ => Err(Failed::Cancelled),
                }
            }
        }
    }

    /// A finished handshake: the registry entry, the prefix routing and the checkpoint trees
    /// change together, unless the connect was cancelled meanwhile (then the connection is
    /// closed and nothing changes). Then the tools are listed and the connection watched.
    pub(super) async fn commit(
        &self,
        reservation: Reservation,
        config: &ServerConfig,
        link: Link,
    ) -> Result<(), Failed> {
        let id = config.id.clone();
        let prefix = config.prefix();
        let gate = self.lifecycle_gate(&id);
        let one_at_a_time = gate.lock().await;
        let committed = {
            let mut registry = lock(&self.inner.registry);
            match registry.complete(reservation, link.clone()) {
                Ok(lease) => {
                    let mut tools =
                        self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
                    // Under a new prefix the old names go at once (the listing follows).
                    let renamed = tools.prefix(&id).is_some_and(|p| p != prefix);
                    let gone = if renamed { names_in(&tools, &id) } else { Vec::new() };
                    if renamed {
                        tools.replace(&id, Listing::default());
                    }
                    tools.set_prefix(&id, &prefix);
                    Ok((lease, gone))
                }
                Err(link) => Err(link),
            }
        };
        let (lease, gone) = match committed {
            Ok(committed) => committed,
            Err(link) => {
                drop(one_at_a_time);
                let _ = link.client.close().await;
                self.forget(&id);
                return Err(Failed::Cancelled);
            }
        };
        if !gone.is_empty() {
            self.emit(HostEvent::ToolsChanged {
                server: id.clone(),
                added: Vec::new(),
                removed: gone,
            });
        }
        self.register_feature_sets(&id, &link);
        // Announced under the gate: a removal waiting on it comes after, never before.
        self.emit(HostEvent::Connected { server: id.clone() });
        drop(one_at_a_time);
        if link.mcpl.status() == Some(McplStatus::Refused) {
            self.policy_refused(&id, link.mcpl.receipt().as_ref());
        }
        for disabled in unavailable::disabled_feature_sets(config, &link.mcpl) {
            tracing::info!(server = %id, feature_set = %disabled.feature_set, "{disabled}");
        }
        self.refresh_tools(&id).await;
        self.listen(lease.clone(), link.clone());
        self.watch(lease, link);
        Ok(())
    }

    /// In the stateless era, keeps a `subscriptions/listen` open for the server's tool-list
    /// changes (the 2025 era carries them on the session), if it declares any.
    pub(super) fn listen(&self, lease: Lease, link: Link) {
        let declares = link.client.server().is_some_and(|details| {
            details.is_stateless()
                && details.capabilities.tools.as_ref().is_some_and(|t| t.list_changed == Some(true))
        });
        if !declares {
            return;
        }
        let host = self.clone();
        tokio::spawn(async move {
            let id = lease.id().to_owned();
            crate::listen::keep(link.client, lease, || host.refresh_tools(&id)).await;
        });
    }

    /// Builds one connection: the MCPL host side and the client wired to this host.
    pub(super) fn link(&self, config: &ServerConfig, generation: u64) -> Link {
        let id = config.id.clone();
        let weak = Arc::downgrade(&self.inner);
        let handlers = &self.inner.handlers;
        let push_server = id.clone();
        let push_host = weak.clone();
        let diag_server = id.clone();
        let diag_events = self.inner.events.clone();
        let state_server = id.clone();
        let receipt_server = id.clone();
        let receipt_host = weak.clone();
        let mcpl = McplHost::builder(config.policy())
            .on_push_event(move |event| {
                // Deduplicated per (server, eventId) across reconnects too: a server that
                // retries an event on its next connection is answered, not delivered twice.
                // One the application has no room for is declined, not remembered: the
                // server may send it again.
                let outcome = match push_host.upgrade() {
                    Some(inner) => {
                        let mut seen = lock(&inner.pushes);
                        if seen.contains(&push_server, &event.event_id) {
                            PushOutcome::accepted(None)
                        } else {
                            let id = event.event_id.clone();
                            let push = HostEvent::Push { server: push_server.clone(), event };
                            if inner.events.offer(push) {
                                seen.record(&push_server, id);
                                PushOutcome::accepted(None)
                            } else {
                                PushOutcome::declined(EVENTS_FULL)
                            }
                        }
                    }
                    None => PushOutcome::accepted(None),
                };
                async { outcome }
            })
            .on_state(move |call| {
                let checkpoints = weak.upgrade().map(|inner| inner.checkpoints.clone());
                let server = state_server.clone();
                async move {
                    let Some(checkpoints) = checkpoints else {
                        return Err(ErrorObject::internal("the host is gone"));
                    };
                    // Applying a patch within the budget can take milliseconds: off the runtime.
                    tokio::task::spawn_blocking(move || state_call(&checkpoints, &server, call))
                        .await
                        .unwrap_or_else(|_| Err(ErrorObject::internal("the state update failed")))
                }
            })
            .on_diagnostic(move |d| {
                diag_events.send(HostEvent::Diagnostic {
                    server: diag_server.clone(),
                    diagnostic: d.clone(),
                });
            })
            .on_change_receipt(move |receipt| {
                if let (Some(inner), Some(refused @ PolicyReceipt::Refused(_))) =
                    (receipt_host.upgrade(), &receipt.policy_receipt)
                {
                    (Host { inner }).policy_refused(&receipt_server, Some(refused));
                }
            });
        let mcpl = match &handlers.inference {
            Some(handler) => {
                let handler = handler.clone();
                let server = id.clone();
                mcpl.on_inference(move |call| handler(server.clone(), call))
            }
            None => mcpl,
        };
        let mcpl = match &handlers.model {
            Some(model) => {
                let model = model.clone();
                mcpl.on_model_info(move || {
                    let model = model.clone();
                    async move { Ok(model) }
                })
            }
            None => mcpl,
        };
        let mcpl = mcpl.build();
        let refresh = self.clone();
        let refresh_id = id.clone();
        let client = Client::builder("mcpl-host", env!("CARGO_PKG_VERSION"))
            .with_negotiation(config.protocol);
        // MCPL needs the stateful era: pinned to a stateless revision, the server is plain MCP.
        let stateless =
            matches!(config.protocol, Negotiation::Pinned(v) if v.era() == Era::Stateless);
        let client = if stateless { client } else { client.with_mcpl(mcpl.clone()) };
        let mut client = client.on_tools_list_changed(move || {
            let host = refresh.clone();
            let id = refresh_id.clone();
            async move {
                tokio::spawn(async move { host.refresh_tools(&id).await });
            }
        });
        if let Some(handler) = &handlers.sampling {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_sampling(move |params| handler(server.clone(), params));
        }
        if let Some(handler) = &handlers.elicitation {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_elicitation(move |form| handler(server.clone(), form));
        }
        if let Some(handler) = &handlers.url_elicitation {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_url_elicitation(move |request| handler(server.clone(), request));
        }
        if let Some(handler) = &handlers.roots {
            let (handler, server) = (handler.clone(), id.clone());
            client = client.on_roots(move || handler(server.clone()));
        }
        Link { client: client.build(), mcpl, generation }
    }

    /// Opens `link`'s transport from the configuration and runs the handshake.
    // A build without any transport feature connects to nothing.
    #[cfg_attr(
        not(any(feature = "child", feature = "http", feature = "ws")),
        allow(unreachable_code, unused_variables)
    )]
    pub(super) async fn handshake(
        &self,
        link: &Link,
        config: &ServerConfig,
    ) -> Result<(), ConnectError> {
        let client = &link.client;
        let connected: mcpl_core::Result<mcpl_client::ServerDetails> = match &config.transport {
            #[cfg(feature = "child")]
            ServerTransport::Stdio { command, args, env, cwd, inherit_env } => {
                let mut child = ChildProcess::new(command).args(args);
                if *inherit_env {
                    child = child.inherit_env();
                }
                for (k, v) in env {
                    child = child.env(k, v);
                }
                if let Some(cwd) = cwd {
                    child = child.current_dir(cwd);
                }
                client.connect(child).await
            }
            #[cfg(feature = "http")]
            ServerTransport::Url { url, headers }
                if url.starts_with("http://") || url.starts_with("https://") =>
            {
                let mut http = HttpTransport::new(url.clone());
                for (k, v) in headers {
                    http = http.header(k, v).map_err(ConnectError::Handshake)?;
                }
                client.connect(http).await
            }
            #[cfg(feature = "ws")]
            ServerTransport::Url { url, headers }
                if !(url.starts_with("http://") || url.starts_with("https://")) =>
            {
                let mut ws = WebSocketTransport::new(url.clone());
                for (k, v) in headers {
                    ws = ws.header(k.clone(), v.clone());
                }
                client.connect(ws).await
            }
            other => return Err(missing_transport(other)),
        };
        connected.map(drop).map_err(ConnectError::Handshake)
    }

    /// Registers the stateful feature sets the server declares (idempotent: existing trees
    /// are resumed).
    pub(super) fn register_feature_sets(&self, id: &str, link: &Link) {
        if let Some(Ok(sets)) = link.mcpl.manifest().and_then(|m| m.feature_sets()) {
            for (name, set) in &sets.0 {
                let host_state = set.extra.get("hostState") == Some(&Value::Bool(true));
                let rollback = set.rollback == Some(true);
                if !(host_state || rollback) {
                    continue;
                }
                let mode =
                    if host_state { StateMode::HostManaged } else { StateMode::ServerManaged };
                if let Err(e) = self.inner.checkpoints.register(id, name, mode, rollback) {
                    tracing::error!(server = id, feature_set = ?name, error = %e, "checkpoint tree not registered");
                }
            }
        }
    }

    /// Raises `mcpl-policy-refused`: the server answered the host's policy `accepted: false`.
    /// The message names the capabilities it said it needs and what would supply them.
    pub(super) fn policy_refused(&self, id: &str, receipt: Option<&PolicyReceipt>) {
        let mut message = format!("server {id} refused the host policy");
        if let Some(PolicyReceipt::Refused(refused)) = receipt {
            if let Some(reason) = &refused.reason {
                message.push_str(&format!(" ({reason})"));
            }
            let (link, config) = {
                let registry = lock(&self.inner.registry);
                (registry.connection(id).cloned(), registry.config(id).cloned())
            };
            if let (Some(link), Some(config), Some(missing)) =
                (link, config, refused.missing_capabilities.as_deref().filter(|m| !m.is_empty()))
            {
                let missing = unavailable::missing_capabilities(&config, &link.mcpl, missing);
                let needs: Vec<String> = missing.iter().map(ToString::to_string).collect();
                message.push_str(&format!(": it needs {}", needs.join("; and ")));
            }
        }
        let mut alert = OpsAlert::new(kinds::POLICY_REFUSED, id, message);
        if let Some(PolicyReceipt::Refused(refused)) = receipt {
            alert = alert.with("fallback", refused.fallback.as_str());
            if let Some(reason) = &refused.reason {
                alert = alert.with("reason", reason.as_str());
            }
            if let Some(missing) = &refused.missing_capabilities {
                alert = alert.with("missingCapabilities", missing.clone());
            }
        }
        self.alert(alert);
    }

    /// Watches a committed connection: when its transport closes (and it is still the
    /// server's current connection), the server is marked down and reconnects start.
    pub(super) fn watch(&self, lease: Lease, link: Link) {
        let host = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = lease.cancelled() => return,
                () = link.client.closed() => {}
            }
            let id = lease.id().to_owned();
            let reconnect = {
                let mut registry = lock(&host.inner.registry);
                if !registry.lost(&lease) {
                    return; // removed, restarted or shut down meanwhile
                }
                host.inner.tools.write().unwrap_or_else(PoisonError::into_inner).mark_stale(&id);
                registry.config(&id).is_some_and(|c| c.reconnect.enabled)
            };
            tracing::warn!(server = %id, "server connection ended");
            host.emit(HostEvent::Disconnected { server: id });
            if reconnect {
                host.spawn_reconnect(lease, 0);
            }
        });
    }

    /// Reconnects in the background with backoff, through the one connect path, until
    /// connected or until the work is cancelled (a disconnect, a restart, a shutdown).
    pub(super) fn spawn_reconnect(&self, lease: Lease, first_attempt: u32) {
        let host = self.clone();
        tokio::spawn(async move {
            let id = lease.id().to_owned();
            let mut attempt = first_attempt;
            let mut alerted = false;
            loop {
                let Some(policy) = lock(&host.inner.registry).config(&id).map(|c| c.reconnect)
                else {
                    return;
                };
                tokio::select! {
                    biased;
                    () = lease.cancelled() => return,
                    () = tokio::time::sleep(policy.delay(attempt)) => {}
                }
                match host.reconnect_now(&lease).await {
                    Ok(()) => {
                        if alerted {
                            host.alert(OpsAlert::new(
                                kinds::SERVER_UP,
                                &id,
                                format!("server {id} is back"),
                            ));
                        }
                        return;
                    }
                    Err(Failed::Cancelled) => return,
                    Err(Failed::Handshake { .. }) => {
                        attempt = attempt.saturating_add(1);
                        if attempt == DOWN_AFTER {
                            alerted = true;
                            host.alert(
                                OpsAlert::new(
                                    kinds::SERVER_DOWN,
                                    &id,
                                    format!("server {id} failed to reconnect {DOWN_AFTER} times"),
                                )
                                .with("attempts", attempt),
                            );
                        }
                    }
                }
            }
        });
    }

    /// One reconnect of a server that is down, under the configuration it is registered with,
    /// if `lease` is still its work (else `Failed::Cancelled`).
    pub(super) async fn reconnect_now(&self, lease: &Lease) -> Result<(), Failed> {
        let (reservation, config) = {
            let mut registry = lock(&self.inner.registry);
            let config = registry.config(lease.id()).cloned();
            match (config, registry.retry(lease)) {
                (Some(config), Some(reservation)) => (reservation, config),
                _ => return Err(Failed::Cancelled),
            }
        };
        self.establish(reservation, &config).await
    }

    /// The gate that orders a server's commits and removals (forgotten with the server, see
    /// [`Host::forget`]).
    pub(super) fn lifecycle_gate(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        lock(&self.inner.lifecycle).entry(id.to_owned()).or_default().clone()
    }
}
