//! What an embedder asks of a running [`Host`]: the tool list and its refresh, the servers
//! and their MCPL state, tool calls, rollback, the inference hooks, shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::PoisonError;

use mcpl_client::ServerDetails;
use mcpl_client::mcpl::{McplError, McplHost, StateCall};
use mcpl_core::engine::RequestOptions;
use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::mcpl::capability::paths;
use mcpl_core::mcpl::hooks::{BeforeInferenceParams, LifecycleParams, Position};
use mcpl_core::types::{CallToolRequestParams, Tool};
use serde::Serialize;
use serde_json::{Value, json};

use crate::alerts::{OpsAlert, kinds};
use crate::checkpoint::{CheckpointManager, RecordOutcome};
pub(super) use crate::error::HostError;
use crate::error::RollbackFailure;
use crate::registry::{Phase, Registry};
use crate::tools::listing;
use crate::unavailable::{self, DisabledFeatureSet};

use super::*;

impl Host {
    /// Lists a server's tools again (one refresh at a time per server). A failure keeps the
    /// previous list, marked stale, and raises an alert; repeated tool names raise an alert
    /// on every refresh that finds them.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_server::ToolOutput;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let server = mcpl_test_kit::notes();
    /// # let url = mcpl_test_kit::http::serve_on_ws(server.clone()).await?;
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// // The server gains a tool while connected (`server` is the running mcpl_server::Server).
    /// server.tools_mut().add(Tool::new("clear", ToolSchema::object()), |_ctx, _args| async {
    ///     Ok(ToolOutput::text("cleared"))
    /// })?;
    /// // The host refreshes on `notifications/tools/list_changed` by itself; an explicit refresh
    /// // (an operator's request) waits for the new list.
    /// host.refresh_tools("notes").await;
    /// let tools = host.tools();
    /// let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    /// assert_eq!(names, ["mcpl--notes--add", "mcpl--notes--clear"]);
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn refresh_tools(&self, id: &str) {
        let gate = {
            let mut gates = lock(&self.inner.refreshing);
            // No gate for an id the host does not have (it would outlive it).
            if lock(&self.inner.registry).phase(id).is_none() {
                return;
            }
            gates.entry(id.to_owned()).or_default().clone()
        };
        let _one_at_a_time = gate.lock().await;
        let (link, config) = {
            let registry = lock(&self.inner.registry);
            (registry.connection(id).cloned(), registry.config(id).cloned())
        };
        let (Some(link), Some(config)) = (link, config) else { return };
        let listed = tokio::time::timeout(LIST_TIMEOUT, link.client.list_tools()).await;
        // What the listing changes is written only while `link` is still the server's
        // connection (a disconnect or restart meanwhile wins).
        let current = |registry: &Registry<Link>| {
            registry.connection(id).is_some_and(|l| l.generation == link.generation)
        };
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            outcome => {
                let why = match outcome {
                    Ok(Err(e)) => e.to_string(),
                    _ => "tools/list timed out".to_owned(),
                };
                {
                    let registry = lock(&self.inner.registry);
                    if !current(&registry) {
                        return;
                    }
                    self.inner.tools.write().unwrap_or_else(PoisonError::into_inner).mark_stale(id);
                    // Under the registry's lock: a removal cannot come between and leave it.
                    lock(&self.inner.stale).insert(id.to_owned());
                }
                self.alert(OpsAlert::new(
                    kinds::TOOLS_STALE,
                    id,
                    format!("tools/list of {id} failed: {why}"),
                ));
                return;
            }
        };
        let values: Vec<Value> =
            tools.iter().filter_map(|t| serde_json::to_value(t).ok()).collect();
        let listing = listing(&config.prefix(), values, &config.tools);
        let repeats = listing.repeats.clone();
        let after: BTreeSet<String> = listing.tools.iter().map(|t| t.namespaced.clone()).collect();
        let before: BTreeSet<String> = {
            let registry = lock(&self.inner.registry);
            if !current(&registry) {
                return;
            }
            let mut tools = self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
            let before = names_in(&tools, id).into_iter().collect();
            tools.replace(id, listing);
            before
        };
        if lock(&self.inner.stale).remove(id) {
            self.alert(OpsAlert::new(
                kinds::TOOLS_FRESH,
                id,
                format!("tools/list of {id} works again"),
            ));
        }
        if !repeats.is_empty() {
            self.alert(
                OpsAlert::new(
                    kinds::DUPLICATE_TOOLS,
                    id,
                    format!("server {id} lists tools more than once: {}", repeats.join(", ")),
                )
                .with("tools", repeats),
            );
        }
        let added: Vec<String> = after.difference(&before).cloned().collect();
        let removed: Vec<String> = before.difference(&after).cloned().collect();
        if !added.is_empty() || !removed.is_empty() {
            self.emit(HostEvent::ToolsChanged { server: id.to_owned(), added, removed });
        }
    }

    /// Every offered tool definition (namespaced), by server then listing order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// // Hand the namespaced definitions to the model.
    /// let tools = host.tools();
    /// let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    /// assert_eq!(names, ["mcpl--notes--add"]);
    /// let item = &tools[0].input_schema.properties.as_ref().unwrap()["item"];
    /// assert_eq!(item["type"], "string");
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn tools(&self) -> Vec<Tool> {
        let tools = self.inner.tools.read().unwrap_or_else(PoisonError::into_inner);
        // Each definition is a listed `Tool`, renamed: it reads back as one.
        tools
            .tools()
            .filter_map(|(_, t)| serde_json::from_value(t.definition.clone()).ok())
            .collect()
    }

    /// Every server: id, prefix and phase.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::registry::Phase;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// for (id, prefix, phase) in host.servers() {
    ///     assert_eq!((id.as_str(), prefix.as_str()), ("notes", "mcpl--notes"));
    ///     assert_eq!(phase, Phase::Connected);
    /// }
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn servers(&self) -> Vec<(String, String, Phase)> {
        let registry = lock(&self.inner.registry);
        let ids: Vec<String> = registry.ids().map(str::to_owned).collect();
        ids.into_iter()
            .filter_map(|id| {
                let prefix = registry.prefix(&id)?.to_owned();
                let phase = registry.phase(&id)?;
                Some((id, prefix, phase))
            })
            .collect()
    }

    /// What a connected server said about itself: the negotiated protocol revision (and so
    /// the era), its capabilities, identity and instructions. `None` while it is not connected.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::ProtocolVersion;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_http(mcpl_test_kit::notes()).await?;
    ///
    /// // A notes server serves both eras over Streamable HTTP at `url`.
    /// let config = HostConfig::from_json(&json!({"servers": {
    ///     "auto": {"url": url},
    ///     "pinned": {"url": url, "protocol": "stateless"}
    /// }}).to_string())?;
    /// let (host, _events) = Host::start(config).await?;
    /// // Negotiation tries the 2025 era first (where MCPL lives); a pin decides.
    /// let era = |id: &str| host.server(id).map(|details| details.protocol_version);
    /// assert_eq!(era("auto"), Some(ProtocolVersion::V2025_11_25));
    /// assert_eq!(era("pinned"), Some(ProtocolVersion::V2026_07_28));
    /// assert!(host.server("web").is_none());
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn server(&self, id: &str) -> Option<ServerDetails> {
        let client = lock(&self.inner.registry).connection(id).map(|l| l.client.clone());
        client.and_then(|c| c.server())
    }

    /// The feature sets a connected MCPL server declares that its grant and policy leave
    /// disabled, each with why and what would enable it: which capability is missing, and
    /// whether the host offers it only with a `HostBuilder` handler, the server's `grant.allow`
    /// must name it, or its `grant.deny` names it. Empty for plain MCP servers and servers not
    /// connected. The host also logs each (at INFO) when the server connects.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use mcpl_host::unavailable::Remedy;
    /// use serde_json::json;
    /// # use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// # use mcpl_server::mcpl::Mcpl;
    /// # use mcpl_server::Server;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let manifest = Manifest::new()
    /// #     .with_model_info(true)
    /// #     .with_feature_set("chat.model", FeatureSet::new("Model-aware replies", ["modelInfo"]));
    /// # let server = Server::builder("chat", "1.0.0").mcpl(Mcpl::new(manifest)).build();
    /// # let url = mcpl_test_kit::http::serve_on_ws(server).await?;
    ///
    /// // A chat server at `url` declares `chat.model`, which uses `modelInfo`.
    /// let config = HostConfig::from_json(&json!({"servers": {"chat": {"url": url,
    ///     "grant": {"allow": ["tools"]}}}}).to_string())?;
    /// // No HostBuilder::model_info, and the grant does not allow it.
    /// let (host, _events) = Host::start(config).await?;
    /// let disabled = host.disabled_feature_sets("chat");
    /// assert_eq!(disabled[0].feature_set, "chat.model");
    /// assert_eq!(disabled[0].missing[0].capability, "modelInfo");
    /// assert_eq!(disabled[0].missing[0].remedies, [Remedy::Handler("model_info"), Remedy::Allow]);
    /// assert!(disabled[0].to_string().contains("HostBuilder::model_info"));
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn disabled_feature_sets(&self, id: &str) -> Vec<DisabledFeatureSet> {
        let (link, config) = {
            let registry = lock(&self.inner.registry);
            (registry.connection(id).cloned(), registry.config(id).cloned())
        };
        match (link, config) {
            (Some(link), Some(config)) => unavailable::disabled_feature_sets(&config, &link.mcpl),
            _ => Vec::new(),
        }
    }

    /// The checkpoint manager (trees, injection, rollback bookkeeping).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::checkpoint::{StateMode, TreeKey};
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// // The host registers a tree for every stateful feature set a server declares.
    /// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, true)?;
    /// assert_eq!(host.checkpoints().keys(), [TreeKey::new("notes", "notes.store")]);
    /// # Ok(()) }
    /// ```
    pub fn checkpoints(&self) -> &CheckpointManager {
        &self.inner.checkpoints
    }

    /// The MCPL host side of a connected server.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// // Every connected server has an MCPL host side (status, grant, manifest, diagnostics).
    /// let mcpl = host.mcpl("notes").expect("connected");
    /// // This server speaks plain MCP, so MCPL is not in force on its connection.
    /// assert!(!mcpl.is_ready());
    /// assert!(host.mcpl("web").is_none());
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub fn mcpl(&self, id: &str) -> Option<McplHost> {
        lock(&self.inner.registry).connection(id).map(|l| l.mcpl.clone())
    }

    /// Calls a tool by its namespaced name: the one dispatch path for every caller. Routes to
    /// the server that listed it (else the longest prefix), applies the server's allow/deny
    /// list again, injects the feature set's checkpoint (and state, for host-managed sets),
    /// and records the result's state on the tree the attribution rule picks.
    ///
    /// # Errors
    ///
    /// [`HostError::InvalidArguments`] if `arguments` is not an object (a struct, a map,
    /// `json!({..})`) or `()`, [`HostError::UnknownTool`], [`HostError::NotConnected`],
    /// [`HostError::ToolNotAllowed`] (nothing is sent), or [`HostError::Call`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ContentBlock;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let url = mcpl_test_kit::http::serve_on_ws(mcpl_test_kit::notes()).await?;
    ///
    /// // A notes server with one tool, `add`, listens at `url` (a WebSocket, served in-process).
    /// let text = json!({"servers": {"notes": {"url": url}}}).to_string();
    /// let config = HostConfig::from_json(&text)?;
    /// let (host, _events) = Host::start(config).await?;
    /// let call = host.call_tool("mcpl--notes--add", json!({"item": "milk"})).await?;
    /// assert_eq!(call.result.content, [ContentBlock::text("added milk")]);
    /// // Any `Serialize` arguments: a struct, or `()` for none.
    /// #[derive(serde::Serialize)]
    /// struct Add {
    ///     item: &'static str,
    /// }
    /// let call = host.call_tool("mcpl--notes--add", Add { item: "eggs" }).await?;
    /// assert_eq!(call.result.text().as_deref(), Some("added eggs"));
    /// assert_eq!(host.call_tool("mcpl--notes--add", ()).await?.result.text().as_deref(), Some("added "));
    /// // No server lists this name and no prefix covers it: nothing is sent.
    /// let err = host.call_tool("mcpl--web--search", json!({})).await.unwrap_err();
    /// assert_eq!(err.kind(), "unknown_tool");
    /// # host.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<ToolCall, HostError> {
        let params = CallToolRequestParams::new(name)
            .with_serialized_arguments(arguments)
            .map_err(|source| HostError::InvalidArguments { tool: name.to_owned(), source })?;
        let route = self
            .inner
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .resolve(name)
            .ok_or_else(|| HostError::UnknownTool(name.to_owned()))?;
        let (link, config) = {
            let registry = lock(&self.inner.registry);
            (registry.connection(&route.server).cloned(), registry.config(&route.server).cloned())
        };
        let link = link.ok_or_else(|| HostError::NotConnected(route.server.clone()))?;
        if !config.is_some_and(|c| c.tools.permits(&route.tool)) {
            return Err(HostError::ToolNotAllowed(name.to_owned()));
        }
        let mut params = params.with_name(route.tool.clone());
        let injection =
            self.inner.checkpoints.injection(&route.server, route.feature_set.as_deref());
        injection.apply_to(&mut params.extra);
        let mut result = link
            .client
            .call_tool_params(params, RequestOptions::new())
            .await
            .map_err(|source| HostError::Call { server: route.server.clone(), source })?;
        let state = match result.extra.remove("state") {
            Some(state) => {
                // Applying a patch within the budget can take milliseconds: off the runtime.
                let (checkpoints, server) = (self.inner.checkpoints.clone(), route.server.clone());
                let set = route.feature_set.clone();
                tokio::task::spawn_blocking(move || {
                    checkpoints.record_result(&server, set.as_deref(), &state)
                })
                .await
                .unwrap_or_else(|_| RecordOutcome::Malformed("recording the state failed".into()))
            }
            None => RecordOutcome::NoState,
        };
        Ok(ToolCall { server: route.server, tool: route.tool, result, state })
    }

    /// Rolls a feature set back to `checkpoint`: it must exist locally (else nothing is sent);
    /// for a set declaring `rollback: true` the server is asked first and the host moves its
    /// pointer only on `success: true` (a `-32005` marks the checkpoint pruned); a host-managed
    /// set without server rollback rolls back on the host alone.
    ///
    /// # Errors
    ///
    /// [`HostError::Rollback`], its cause a [`RollbackFailure`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::checkpoint::StateMode;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// let trees = host.checkpoints();
    /// // A host-managed set without server rollback: the host rolls back alone.
    /// trees.register("notes", "notes.store", StateMode::HostManaged, false)?;
    /// trees.record_result("notes", Some("notes.store"), &json!(
    ///     {"checkpoint": "c1", "parent": null, "data": {"items": ["milk"]}}));
    /// trees.record_result("notes", Some("notes.store"), &json!(
    ///     {"checkpoint": "c2", "parent": "c1", "data": {"items": ["milk", "eggs"]}}));
    /// host.rollback("notes", "notes.store", "c1").await?;
    /// let tree = trees.tree("notes", "notes.store").unwrap();
    /// assert_eq!(tree.current.as_deref(), Some("c1"));
    /// assert_eq!(tree.current_state(), Some(&json!({"items": ["milk"]})));
    /// // An unknown checkpoint is refused before anything is sent.
    /// let err = host.rollback("notes", "notes.store", "c9").await.unwrap_err();
    /// assert_eq!(err.kind(), "rollback");
    /// # Ok(()) }
    /// ```
    pub async fn rollback(
        &self,
        server: &str,
        feature_set: &str,
        checkpoint: &str,
    ) -> Result<(), HostError> {
        let failed = |source: RollbackFailure| HostError::Rollback {
            server: server.to_owned(),
            feature_set: feature_set.to_owned(),
            checkpoint: checkpoint.to_owned(),
            source,
        };
        let checkpoints = &self.inner.checkpoints;
        let ask_server = checkpoints
            .prepare_rollback(server, feature_set, checkpoint)
            .map_err(|e| failed(e.into()))?;
        if !ask_server {
            return checkpoints
                .commit_rollback(server, feature_set, checkpoint, None)
                .map_err(|e| failed(e.into()));
        }
        let mcpl = self.mcpl(server).ok_or_else(|| HostError::NotConnected(server.to_owned()))?;
        match mcpl.rollback(feature_set, checkpoint).await {
            Ok(result) if result.success => {
                let data = result.extra.get("data").cloned();
                checkpoints
                    .commit_rollback(server, feature_set, checkpoint, data)
                    .map_err(|e| failed(e.into()))
            }
            Ok(result) => Err(failed(RollbackFailure::Declined { reason: result.reason })),
            Err(McplError::Protocol(e)) if e.rpc_error().is_some_and(|o| o.code.0 == -32005) => {
                checkpoints.mark_pruned(server, feature_set, checkpoint);
                Err(failed(RollbackFailure::Pruned))
            }
            Err(e) => Err(failed(RollbackFailure::Request(e))),
        }
    }

    /// Fans `context/beforeInference` out to every connected server whose grant allows a hook,
    /// in parallel, each bounded by its connection's hook timeout (5 s by default) and
    /// fail-open. Each injection was authorized by its position against the grant current when
    /// its response arrived. The result is grouped by position, servers in id order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::hooks::BeforeInferenceParams;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// let params: BeforeInferenceParams = serde_json::from_value(json!({
    ///     "inferenceId": "inf-7",
    ///     "conversationId": "conv-1",
    ///     "turnIndex": 3,
    ///     "userMessage": null,
    ///     "model": {"id": "example-model", "vendor": "example", "contextWindow": 128000}
    /// }))?;
    /// let injections = host.before_inference(params).await;
    /// for (server, why) in &injections.failed {
    ///     eprintln!("{server} contributed nothing: {why}"); // fail-open
    /// }
    /// assert!(injections.before_user.is_empty() && injections.after_user.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn before_inference(&self, params: BeforeInferenceParams) -> Injections {
        let links: Vec<(String, McplHost)> = {
            let registry = lock(&self.inner.registry);
            let ids: Vec<String> = registry.ids().map(str::to_owned).collect();
            ids.into_iter()
                .filter_map(|id| registry.connection(&id).map(|l| (id, l.mcpl.clone())))
                .filter(|(_, m)| m.grant().is_some_and(|g| g.any_before_inference()))
                .collect()
        };
        let calls = links.into_iter().map(|(id, mcpl)| {
            let params = params.clone();
            async move { (id, mcpl.before_inference(params).await) }
        });
        let mut out = Injections::default();
        for (server, outcome) in futures::future::join_all(calls).await {
            match outcome {
                Ok(outcome) => {
                    if let Some(why) = outcome.failure {
                        out.failed.push((server.clone(), why));
                    }
                    for injection in outcome.injections {
                        let group = match injection.position {
                            Position::System => &mut out.system,
                            Position::BeforeUser => &mut out.before_user,
                            Position::AfterUser => &mut out.after_user,
                        };
                        group.push((server.clone(), injection));
                    }
                }
                Err(e) => out.failed.push((server, e.to_string())),
            }
        }
        out
    }

    /// Sends `inference/lifecycle` to every connected server granted `inferenceLifecycle`
    /// (each connection enforces one terminal phase per `started`). Returns the servers that
    /// refused it locally, with why.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::hooks::LifecycleParams;
    /// use mcpl_host::Host;
    /// use mcpl_host::config::HostConfig;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// for phase in ["started", "completed"] {
    ///     let params: LifecycleParams = serde_json::from_value(
    ///         json!({"inferenceId": "inf-7", "phase": phase, "conversationId": "conv-1"}),
    ///     )?;
    ///     // Servers that refused it locally (e.g. a second terminal phase), with why.
    ///     let refused = host.lifecycle(params).await;
    ///     assert!(refused.is_empty());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn lifecycle(&self, params: LifecycleParams) -> Vec<(String, String)> {
        let links: Vec<(String, McplHost)> = {
            let registry = lock(&self.inner.registry);
            let ids: Vec<String> = registry.ids().map(str::to_owned).collect();
            ids.into_iter()
                .filter_map(|id| registry.connection(&id).map(|l| (id, l.mcpl.clone())))
                .filter(|(_, m)| {
                    m.grant().is_some_and(|g| g.is_granted(paths::INFERENCE_LIFECYCLE))
                })
                .collect()
        };
        let mut refused = Vec::new();
        for (id, mcpl) in links {
            if let Err(e) = mcpl.lifecycle(params.clone()).await {
                refused.push((id, e.to_string()));
            }
        }
        refused
    }

    /// Closes every connection and stops every connect and reconnect: a handshake in flight
    /// is cancelled and its connection closed, background reconnects end, and later connects
    /// and restarts are refused ([`RegistryError::ShutDown`]). Checkpoint trees stay in the
    /// store.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::Host;
    /// use mcpl_host::checkpoint::StateMode;
    /// use mcpl_host::config::HostConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (host, _events) = Host::start(HostConfig::default()).await?;
    /// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, false)?;
    /// host.shutdown().await;
    /// // Trees outlive the connections (and, with `state.dir`, the process).
    /// assert_eq!(host.checkpoints().keys().len(), 1);
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) {
        let links = {
            let mut registry = lock(&self.inner.registry);
            let links = registry.shutdown();
            let mut tools = self.inner.tools.write().unwrap_or_else(PoisonError::into_inner);
            for id in registry.ids() {
                tools.mark_stale(id);
            }
            links
        };
        for link in links {
            let _ = link.client.close().await;
        }
        // Every change saved before returning; the writer's file I/O stays off this runtime.
        let checkpoints = self.inner.checkpoints.clone();
        let _ = tokio::task::spawn_blocking(move || checkpoints.flush()).await;
    }
}

/// Serves `state/update` and `state/get` from the checkpoint trees.
pub(super) fn state_call(
    checkpoints: &CheckpointManager,
    server: &str,
    call: StateCall,
) -> Result<Value, ErrorObject> {
    match call {
        StateCall::Update { params, .. } => Ok(checkpoints.state_update(server, &params)),
        StateCall::Get { feature_set } => checkpoints.state_get(server, &feature_set),
    }
}

/// A summary of a record outcome, for logs and the JSON-lines interface.
///
/// # Examples
///
/// ```
/// use mcpl_host::checkpoint::{CheckpointManager, MemoryCheckpointStore, RecordOutcome, StateMode};
/// use mcpl_host::host::describe;
/// use serde_json::json;
///
/// assert_eq!(describe(&RecordOutcome::NoState), json!({"outcome": "none"}));
///
/// let trees = CheckpointManager::open(MemoryCheckpointStore::new(), 100).unwrap();
/// trees.register("notes", "notes.store", StateMode::HostManaged, false).unwrap();
/// let outcome =
///     trees.record_result("notes", Some("notes.store"), &json!({"checkpoint": "c1", "data": {}}));
/// assert_eq!(
///     describe(&outcome),
///     json!({"outcome": "recorded", "featureSet": "notes.store", "how": "new"}),
/// );
/// ```
pub fn describe(outcome: &RecordOutcome) -> Value {
    match outcome {
        RecordOutcome::NoState => json!({"outcome": "none"}),
        RecordOutcome::Recorded { feature_set, recorded } => {
            json!({"outcome": "recorded", "featureSet": feature_set, "how": format!("{recorded:?}").to_lowercase()})
        }
        RecordOutcome::Dropped(reason) => json!({"outcome": "dropped", "reason": reason.kind()}),
        RecordOutcome::Rejected { feature_set, error } => {
            json!({"outcome": "rejected", "featureSet": feature_set, "reason": error.kind(), "detail": crate::checkpoint::describe_error(error)})
        }
        RecordOutcome::Malformed(why) => json!({"outcome": "malformed", "detail": why}),
    }
}

/// The trees of one server, for display: feature set to `{mode, rollback, current, state,
/// degraded, checkpoints}`.
///
/// # Examples
///
/// ```
/// use mcpl_host::Host;
/// use mcpl_host::checkpoint::StateMode;
/// use mcpl_host::config::HostConfig;
/// use mcpl_host::host::state_view;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (host, _events) = Host::start(HostConfig::default()).await?;
/// host.checkpoints().register("notes", "notes.store", StateMode::HostManaged, false)?;
/// host.checkpoints().record_result("notes", None, &json!({"checkpoint": "c1", "data": {"n": 1}}));
/// let view = state_view(&host, "notes");
/// assert_eq!(view["notes.store"]["current"], "c1");
/// assert_eq!(view["notes.store"]["state"], json!({"n": 1}));
/// # Ok(()) }
/// ```
pub fn state_view(host: &Host, server: &str) -> BTreeMap<String, Value> {
    let manager = host.checkpoints();
    manager
        .keys()
        .into_iter()
        .filter(|k| k.server == server)
        .filter_map(|k| {
            let tree = manager.tree(&k.server, &k.feature_set)?;
            let view = json!({
                "mode": tree.mode,
                "rollback": tree.rollback,
                "current": tree.current,
                "state": tree.current_state(),
                "degraded": tree.is_degraded(),
                "checkpoints": tree.nodes.iter().map(|(id, n)| json!({"id": id, "parent": n.parent, "children": n.children})).collect::<Vec<_>>(),
            });
            Some((k.feature_set, view))
        })
        .collect()
}
