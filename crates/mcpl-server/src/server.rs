//! [`Server`]: a built server, its identity and features, shared by every connection that
//! serves it (build one with [`ServerBuilder`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpl_core::types::{
    Implementation, Prompt, PromptsCapability, Resource, ResourceTemplate, ResourcesCapability,
    ServerCapabilities, TASKS_EXTENSION, Tool, ToolsCapability,
};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

#[cfg(doc)]
use crate::ServerBuilder;
use crate::cache::{CacheHint, CacheHints, CachedResult};
use crate::context::{Context, ServerSide};
use crate::events::ServerEvent;
use crate::features::{Features, ReadGuard};
use crate::mcpl::{ManifestError, McplConnection, McplHub};
use crate::registry::{PromptsMut, ResourcesMut, ToolsMut};
use crate::request_state::StateSealer;
use crate::task_serving::table::Tasks;
use mcpl_core::mcpl::digest::Revision;
use mcpl_core::mcpl::manifest::Manifest;

/// A built server: its identity and features. Cheap to clone (clones share the features);
/// serve it with [`Server::serve`] or [`crate::stdio::serve`].
///
/// # Examples
///
/// A server served to a client over an in-memory transport (any [`Transport`](mcpl_core::Transport)
/// works the same: stdio, a child process's pipes...):
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_core::{Engine, transport::memory};
/// use mcpl_server::{Server, ToolOutput};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let server = Server::builder("greeter", "1.0.0")
///     .tool(Tool::new("hello", ToolSchema::object()), |_ctx, _args| async {
///         Ok(ToolOutput::text("Hello!"))
///     })
///     .build();
///
/// let (client_side, server_side) = memory::pair();
/// let session = server.serve(server_side).await?;
///
/// // A bare client: initialize, then call the tool.
/// let client = Engine::new().connect(client_side).await?;
/// let init = json!({
///     "protocolVersion": "2025-11-25",
///     "capabilities": {},
///     "clientInfo": {"name": "doc", "version": "1"},
/// });
/// client.request("initialize", Some(init), Default::default()).await?;
/// client.notify("notifications/initialized", None).await?;
/// let call = json!({"name": "hello", "arguments": {}});
/// let result = client.request("tools/call", Some(call), Default::default()).await?;
/// assert_eq!(result["content"][0]["text"], "Hello!");
/// session.close().await?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    pub(crate) info: Implementation,
    /// `info` serialized once, for the stateless era's `_meta` of every result.
    pub(crate) info_json: String,
    pub(crate) instructions: Option<String>,
    pub(crate) page_size: Option<usize>,
    /// The longest resource URI read or subscribed to (see [`ServerBuilder::max_uri_length`]).
    pub(crate) max_uri_length: usize,
    /// The most resources one session subscribes to (see [`ServerBuilder::max_subscriptions`]).
    pub(crate) max_subscriptions: usize,
    pub(crate) cache_hints: CacheHints,
    pub(crate) sealer: StateSealer,
    pub(crate) tasks: Arc<Tasks>,
    /// The most requests of one connection (or 2025 HTTP session) whose handlers run at once.
    pub(crate) max_inflight_requests: usize,
    /// The bound on each connection's outgoing queue: messages, bytes.
    pub(crate) max_queued: (usize, usize),
    /// How long one write to a connection may take.
    pub(crate) write_timeout: Option<Duration>,
    /// The tools, resources, prompts and skills, and the channel announcing their changes.
    pub(crate) features: Features,
    pub(crate) mcpl: Option<Arc<McplHub>>,
}

impl ServerSide for Server {
    fn state_sealer(&self) -> &StateSealer {
        Server::state_sealer(self)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The accessor of the server that calls a handler lives beside [`Server`], so that the handler
/// layer ([`crate::context`]) does not import the serving one.
impl Context {
    /// The server serving this request, to change its features at run time (see
    /// [`Server::tools_mut`]) or to announce resource updates.
    ///
    /// Set for every handler a [`Server`] calls; `None` only for a context built outside one.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     // A tool that removes itself after its first call.
    ///     .tool(Tool::new("once", ToolSchema::object()), |ctx, _args| async move {
    ///         if let Some(server) = ctx.server() {
    ///             server.tools_mut().remove("once");
    ///         }
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn server(&self) -> Option<&Server> {
        self.server.as_ref()?.as_any().downcast_ref()
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registry = self.read();
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("tools", &registry.tools.items.iter().map(|t| &t.tool.name).collect::<Vec<_>>())
            .field("resources", &registry.resources.items.len())
            .field("resource_templates", &registry.templates.items.len())
            .field("prompts", &registry.prompts.items.len())
            .field("skills", &registry.skills.entries().count())
            .finish()
    }
}

impl Server {
    /// The sealer of the `requestState` of input-required results (see [`crate::request_state`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").build();
    /// let sealer = server.state_sealer();
    /// assert_eq!(sealer.ttl(), mcpl_server::request_state::DEFAULT_STATE_TTL);
    /// ```
    pub fn state_sealer(&self) -> &StateSealer {
        &self.inner.sealer
    }

    /// The server's identity.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("files", "2.0.0").build();
    /// assert_eq!((server.info().name.as_str(), server.info().version.as_str()), ("files", "2.0.0"));
    /// ```
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The instructions sent to clients, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").instructions("Call `search` first.").build();
    /// assert_eq!(server.instructions(), Some("Call `search` first."));
    /// ```
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The definition of the enabled tool `name`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("ping", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("pong")) })
    ///     .build();
    /// assert!(server.tool_definition("ping").is_some());
    /// server.tools_mut().disable("ping");
    /// assert!(server.tool_definition("ping").is_none());
    /// ```
    pub fn tool_definition(&self, name: &str) -> Option<Tool> {
        self.read().tools.get(name).filter(|t| t.enabled).map(|t| t.tool.clone())
    }

    /// Reads the definition of the enabled tool `name` in place, without copying it.
    #[cfg(feature = "http")]
    pub(crate) fn with_tool_definition<R>(
        &self,
        name: &str,
        f: impl FnOnce(&Tool) -> R,
    ) -> Option<R> {
        self.read().tools.get(name).filter(|t| t.enabled).map(|t| f(&t.tool))
    }

    /// The enabled tools, in registration order (the order of `tools/list`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("b", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("b")) })
    ///     .tool(Tool::new("a", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("a")) })
    ///     .build();
    /// let names: Vec<_> = server.tools().into_iter().map(|t| t.name).collect();
    /// assert_eq!(names, ["b", "a"]);
    /// ```
    pub fn tools(&self) -> Vec<Tool> {
        self.read().tools.items.iter().filter(|t| t.enabled).map(|t| t.tool.clone()).collect()
    }

    /// The static resources, in registration order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource(Resource::new("mem://a", "a"), |_c, req| async move { Ok(vec![ResourceOutput::text(req.uri, "")]) })
    ///     .build();
    /// assert_eq!(server.resources()[0].uri, "mem://a");
    /// ```
    pub fn resources(&self) -> Vec<Resource> {
        self.read().resources.items.iter().map(|r| r.resource.clone()).collect()
    }

    /// The resource templates, in registration order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ResourceTemplate;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource_template(ResourceTemplate::new("notes://{id}", "note"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "")])
    ///     })
    ///     .resource_template(ResourceTemplate::new("tags://{tag}", "tag"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "")])
    ///     })
    ///     .build();
    /// let templates: Vec<_> = server.resource_templates().into_iter().map(|t| t.uri_template).collect();
    /// assert_eq!(templates, ["notes://{id}", "tags://{tag}"]);
    /// ```
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        self.read().templates.items.iter().map(|t| t.template.clone()).collect()
    }

    /// The prompts, in registration order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .prompt(Prompt::new("summarize"), |_c, _a| async { Ok(PromptOutput::user_text("Summarize.")) })
    ///     .prompt(Prompt::new("translate"), |_c, _a| async { Ok(PromptOutput::user_text("Translate.")) })
    ///     .build();
    /// let names: Vec<_> = server.prompts().into_iter().map(|p| p.name).collect();
    /// assert_eq!(names, ["summarize", "translate"]);
    /// ```
    pub fn prompts(&self) -> Vec<Prompt> {
        self.read().prompts.items.iter().map(|p| p.prompt.clone()).collect()
    }

    /// How many items one page of a list request holds; `None`: all of them.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").page_size(50).build();
    /// assert_eq!(server.page_size(), Some(50));
    /// ```
    pub fn page_size(&self) -> Option<usize> {
        self.inner.page_size
    }

    /// The longest resource URI a client may read or subscribe to, in bytes (see
    /// [`ServerBuilder::max_uri_length`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").build();
    /// assert_eq!(server.max_uri_length(), mcpl_server::resource::DEFAULT_MAX_URI_LENGTH);
    /// ```
    pub fn max_uri_length(&self) -> usize {
        self.inner.max_uri_length
    }

    /// The most resources one session subscribes to (see
    /// [`ServerBuilder::max_subscriptions`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").build();
    /// assert_eq!(server.max_subscriptions(), mcpl_server::resource::DEFAULT_MAX_SUBSCRIPTIONS);
    /// ```
    pub fn max_subscriptions(&self) -> usize {
        self.inner.max_subscriptions
    }

    /// The cache hint set for `result` with [`ServerBuilder::cache_hint`]; `None`: the
    /// endpoint's default applies (see [`crate::cache`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::Server;
    /// use mcpl_server::cache::{CacheHint, CachedResult, CacheScope};
    ///
    /// let server = Server::builder("s", "1")
    ///     .cache_hint(CachedResult::ToolsList, CacheHint::private(Duration::from_secs(30)))
    ///     .build();
    /// let hint = server.cache_hint(CachedResult::ToolsList).unwrap();
    /// assert_eq!((hint.ttl_ms(), hint.scope()), (30_000, CacheScope::Private));
    /// assert_eq!(server.cache_hint(CachedResult::Discover), None, "the endpoint's default applies");
    /// ```
    pub fn cache_hint(&self, result: CachedResult) -> Option<CacheHint> {
        self.inner.cache_hints.get(result)
    }

    /// Whether the server serves the tasks extension (see [`crate::task`]): a task-capable
    /// tool was registered, or a task store was set.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::task::InMemoryTaskStore;
    ///
    /// assert!(!Server::builder("s", "1").build().serves_tasks());
    /// assert!(Server::builder("s", "1").task_store(InMemoryTaskStore::new()).build().serves_tasks());
    /// ```
    pub fn serves_tasks(&self) -> bool {
        self.inner.tasks.explicit || self.read().has_task_tools
    }

    /// The capabilities this server advertises: each feature that was ever registered (a
    /// feature emptied at run time stays declared, with an empty list), `logging`,
    /// `completions` when there are prompts or resources to complete, the tasks extension
    /// under `extensions` when [`serves_tasks`](Self::serves_tasks) (advertised in
    /// `server/discover` only: a 2025-era `initialize` result leaves it out, see
    /// [`crate::task`]), and the skills extension (`directoryRead: true`) once a skill was
    /// registered (see [`crate::skills`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("t", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("t")) })
    ///     .build();
    /// let caps = server.capabilities();
    /// assert_eq!(caps.tools.and_then(|t| t.list_changed), Some(true));
    /// assert!(caps.prompts.is_none() && caps.logging.is_some());
    /// ```
    pub fn capabilities(&self) -> ServerCapabilities {
        let mut extensions = self
            .serves_tasks()
            .then(|| Map::from_iter([(TASKS_EXTENSION.to_owned(), Value::Object(Map::new()))]));
        let r = self.read();
        if r.skills.ever {
            let (id, settings) = crate::skills::catalog::declaration();
            extensions.get_or_insert_with(Map::new).insert(id, settings);
        }
        {
            let mut caps =
                ServerCapabilities::default().with_logging(mcpl_core::types::JsonObject::default());
            caps.tools = r.has_tools.then(|| ToolsCapability::default().with_list_changed(true));
            caps.resources = r.has_resources.then(|| {
                ResourcesCapability::default().with_subscribe(true).with_list_changed(true)
            });
            caps.prompts =
                r.has_prompts.then(|| PromptsCapability::default().with_list_changed(true));
            caps.completions = r.has_completions().then(Default::default);
            caps.extensions = extensions;
            caps
        }
    }

    /// A handle to add, remove, replace, enable and disable tools while sessions are live;
    /// each change tells every session's client (`notifications/tools/list_changed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1").build();
    /// let mut changes = server.subscribe_changes();
    /// server
    ///     .tools_mut()
    ///     .add(Tool::new("late", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("hi")) })
    ///     .unwrap();
    /// assert_eq!(server.tools()[0].name, "late");
    /// assert_eq!(changes.try_recv().unwrap(), mcpl_server::ServerEvent::ToolsListChanged);
    /// ```
    pub fn tools_mut(&self) -> ToolsMut<'_> {
        ToolsMut::new(&self.inner.features)
    }

    /// A handle to add, remove and replace resources and resource templates while sessions are
    /// live; each change tells every session's client
    /// (`notifications/resources/list_changed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1").build();
    /// server
    ///     .resources_mut()
    ///     .add(Resource::new("mem://motd", "motd"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "Welcome")])
    ///     })
    ///     .unwrap();
    /// assert!(server.resources_mut().contains("mem://motd"));
    /// assert!(server.resources_mut().remove("mem://motd"));
    /// ```
    pub fn resources_mut(&self) -> ResourcesMut<'_> {
        ResourcesMut::new(&self.inner.features)
    }

    /// A handle to add, remove and replace prompts while sessions are live; each change tells
    /// every session's client (`notifications/prompts/list_changed`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1").build();
    /// server
    ///     .prompts_mut()
    ///     .add(Prompt::new("hello"), |_c, _a| async { Ok(PromptOutput::user_text("Say hello")) })
    ///     .unwrap();
    /// assert_eq!(server.prompts()[0].name, "hello");
    /// ```
    pub fn prompts_mut(&self) -> PromptsMut<'_> {
        PromptsMut::new(&self.inner.features)
    }

    /// The entries of the served skills, in registration order (the order of `skills/list`;
    /// see [`crate::skills`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let skill = SkillBundle::new("notes", "---\nname: notes\ndescription: Take notes\n---\n")?;
    /// let server = Server::builder("s", "1").skill(skill).build();
    /// assert_eq!(server.skills()[0].uri, "skill://notes/SKILL.md");
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn skills(&self) -> Vec<mcpl_core::types::Skill> {
        self.read().skills.entries().cloned().collect()
    }

    /// A handle to add, remove and replace skills while sessions are live; each change tells
    /// every session's client that the resource list changed (skill files are resources).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let server = Server::builder("s", "1").build();
    /// let skill = SkillBundle::new("late", "---\nname: late\ndescription: Added later\n---\n")?;
    /// server.skills_mut().add(skill).unwrap();
    /// assert_eq!(server.skills().len(), 1);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn skills_mut(&self) -> crate::skills::SkillsMut<'_> {
        crate::skills::SkillsMut::new(&self.inner.features)
    }

    /// Tells the sessions subscribed to `uri` (`resources/subscribe`) that the resource changed
    /// (`notifications/resources/updated`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::{Server, ServerEvent};
    ///
    /// let server = Server::builder("s", "1").build();
    /// let mut changes = server.subscribe_changes();
    /// server.notify_resource_updated("file:///log.txt");
    /// assert_eq!(changes.try_recv().unwrap(), ServerEvent::ResourceUpdated { uri: "file:///log.txt".into() });
    /// ```
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.publish(ServerEvent::ResourceUpdated { uri: uri.into() });
    }

    /// Tells this server's clients about `event` as if it happened here: for a change made
    /// elsewhere, such as at another instance of a fleet (the `mcpl-redis` crate relays them).
    /// Every session and `subscriptions/listen` stream that wants it is told, and
    /// [`subscribe_changes`](Self::subscribe_changes) receivers see it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::{Server, ServerEvent};
    ///
    /// let server = Server::builder("s", "1").build();
    /// let mut changes = server.subscribe_changes();
    /// server.notify_change(ServerEvent::ToolsListChanged);
    /// assert_eq!(changes.try_recv().unwrap(), ServerEvent::ToolsListChanged);
    /// ```
    pub fn notify_change(&self, event: ServerEvent) {
        self.publish(event);
    }

    /// Receives every [`ServerEvent`] from now on, for a transport that forwards them to its
    /// clients (sessions served by [`Server::serve`] subscribe on their own).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::{Server, ServerEvent};
    ///
    /// let server = Server::builder("s", "1").build();
    /// let mut changes = server.subscribe_changes();
    /// server.notify_resource_updated("mem://a");
    /// let event = changes.try_recv().unwrap();
    /// assert_eq!(event.method(), "notifications/resources/updated");
    /// assert_eq!(event.resource_uri(), Some("mem://a"));
    /// ```
    pub fn subscribe_changes(&self) -> broadcast::Receiver<ServerEvent> {
        self.inner.features.subscribe()
    }

    fn publish(&self, event: ServerEvent) {
        self.inner.features.publish(event);
    }

    /// The MCPL manifest served now (with its revision); `None` without MCPL.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// assert!(Server::builder("plain", "1").build().mcpl_manifest().is_none());
    ///
    /// let manifest = Manifest::new().with_feature_set("files", FeatureSet::new("Files", ["tools"]));
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(manifest)).build();
    /// let served = server.mcpl_manifest().unwrap();
    /// assert!(served.revision().is_some(), "the served manifest carries its revision");
    /// ```
    pub fn mcpl_manifest(&self) -> Option<Manifest> {
        self.inner.mcpl.as_ref().map(|hub| (*hub.manifest()).clone())
    }

    /// Installs a new MCPL manifest (its `revision` computed; any given one is replaced) and
    /// returns its revision. Every MCPL connection whose host last learned a different revision
    /// is told with `mcpl/manifestChanged {revision, domains}` when a domain changed (a
    /// `version`-only change is not announced); rapid changes coalesce. `mcpl/manifest` serves
    /// the new manifest at once.
    ///
    /// # Errors
    ///
    /// [`ManifestError::NotEnabled`] without MCPL; [`ManifestError::Digest`] for a manifest
    /// that has no revision, [`ManifestError::FeatureSet`], [`ManifestError::InvalidUses`] or
    /// [`ManifestError::FeatureSetsNotAnObject`] for one declaring a feature set the server
    /// cannot serve (the installed one stays).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::{FeatureSet, Manifest};
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(Manifest::new())).build();
    /// let next = Manifest::new().with_feature_set("extra", FeatureSet::new("More", ["tools"]));
    /// let revision = server.set_mcpl_manifest(next).unwrap();
    /// assert_eq!(server.mcpl_manifest().unwrap().revision(), Some(revision));
    /// ```
    pub fn set_mcpl_manifest(&self, next: Manifest) -> Result<Revision, ManifestError> {
        self.inner.mcpl.as_ref().ok_or(ManifestError::NotEnabled)?.install(next)
    }

    /// Installs the MCPL manifest `f` makes of the current one, as
    /// [`set_mcpl_manifest`](Self::set_mcpl_manifest) does; concurrent updates do not lose
    /// each other's changes.
    ///
    /// # Errors
    ///
    /// As [`set_mcpl_manifest`](Self::set_mcpl_manifest).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(Manifest::new())).build();
    /// server.update_mcpl_manifest(|m| m.with_push_events(true)).unwrap();
    /// assert_eq!(server.mcpl_manifest().unwrap().capabilities().push_events, Some(true));
    /// ```
    pub fn update_mcpl_manifest(
        &self,
        f: impl FnOnce(Manifest) -> Manifest,
    ) -> Result<Revision, ManifestError> {
        self.inner.mcpl.as_ref().ok_or(ManifestError::NotEnabled)?.update(f)
    }

    /// The live MCPL connections (hosts that advertised MCPL in `initialize`), for sending to
    /// all of them.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(Manifest::new())).build();
    /// assert!(server.mcpl_connections().is_empty(), "nobody connected yet");
    /// ```
    pub fn mcpl_connections(&self) -> Vec<McplConnection> {
        self.inner.mcpl.as_ref().map(|hub| hub.connections()).unwrap_or_default()
    }

    pub(crate) fn read(&self) -> ReadGuard<'_> {
        self.inner.features.read()
    }
}
