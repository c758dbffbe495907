//! [`ServerBuilder`] collects a server's identity and features; [`Server`] is the result.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use mcpl_core::types::{
    Implementation, Prompt, PromptsCapability, Resource, ResourceTemplate, ResourcesCapability,
    ServerCapabilities, TASKS_EXTENSION, Tool, ToolExecution, ToolsCapability,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use mcpl_core::jsonrpc::ErrorObject;

use crate::cache::{CacheHint, CacheHints, CachedResult};
use crate::completion::{CompletionRequest, CompletionResult};
use crate::context::Context;
use crate::events::{EVENT_BUFFER, ServerEvent};
use crate::input::{PromptReply, ReadReply, ToolReply};
use crate::mcpl::{ManifestError, Mcpl, McplConnection, McplHub};
use crate::prompt::{PromptArguments, PromptEntry};
use crate::registry::{PromptsMut, ReadGuard, Registry, ResourcesMut, ToolsMut, WriteGuard};
use crate::resource::{ReadRequest, ResourceEntry, TemplateEntry};
use crate::state::StateSealer;
use crate::task::{TaskOptions, TaskStore, Tasks};
use crate::tool::{Arguments, ToolEntry, Typed, typed_tool, with_schema_of};
use mcpl_core::mcpl::digest::Revision;
use mcpl_core::mcpl::manifest::Manifest;

/// The default bound on one write to a stdio or WebSocket client: 30 seconds (see
/// [`ServerBuilder::write_timeout`]).
///
/// # Examples
///
/// ```
/// assert_eq!(mcpl_server::DEFAULT_WRITE_TIMEOUT, std::time::Duration::from_secs(30));
/// ```
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

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
    pub(crate) instructions: Option<String>,
    pub(crate) page_size: Option<usize>,
    /// The longest resource URI read or subscribed to (see [`ServerBuilder::max_uri_length`]).
    pub(crate) max_uri_length: usize,
    cache_hints: CacheHints,
    sealer: StateSealer,
    pub(crate) tasks: Tasks,
    /// The most requests of one connection (or 2025 HTTP session) whose handlers run at once.
    pub(crate) max_inflight_requests: usize,
    /// The bound on each connection's outgoing queue: messages, bytes.
    pub(crate) max_queued: (usize, usize),
    /// How long one write to a connection may take.
    pub(crate) write_timeout: Option<Duration>,
    registry: RwLock<Registry>,
    events: broadcast::Sender<ServerEvent>,
    pub(crate) mcpl: Option<Arc<McplHub>>,
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
    /// Starts building a server that calls itself `name`, version `version`.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("my-server", "0.1.0").title("My Server").build();
    /// assert_eq!(server.info().name, "my-server");
    /// assert_eq!(server.info().title.as_deref(), Some("My Server"));
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            page_size: None,
            max_uri_length: crate::resource::DEFAULT_MAX_URI_LENGTH,
            cache_hints: CacheHints::default(),
            sealer: None,
            state_ttl: None,
            task_store: None,
            task_ttl: None,
            task_poll_interval: None,
            max_inflight_requests: mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS,
            max_queued: (
                mcpl_core::engine::DEFAULT_MAX_QUEUED_MESSAGES,
                mcpl_core::engine::DEFAULT_MAX_QUEUED_BYTES,
            ),
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            registry: Registry::default(),
            mcpl: None,
            errors: Vec::new(),
        }
    }

    /// The sealer of the `requestState` of input-required results (see [`crate::state`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").build();
    /// let sealer = server.state_sealer();
    /// assert_eq!(sealer.ttl(), mcpl_server::state::DEFAULT_STATE_TTL);
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
            let (id, settings) = crate::skills::declaration();
            extensions.get_or_insert_with(Map::new).insert(id, settings);
        }
        ServerCapabilities {
            tools: r
                .has_tools
                .then(|| ToolsCapability { list_changed: Some(true), ..Default::default() }),
            resources: r.has_resources.then(|| ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
                ..Default::default()
            }),
            prompts: r
                .has_prompts
                .then(|| PromptsCapability { list_changed: Some(true), ..Default::default() }),
            completions: r.has_completions().then(Default::default),
            logging: Some(Default::default()),
            extensions,
            ..ServerCapabilities::default()
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
        ToolsMut::new(self)
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
        ResourcesMut::new(self)
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
        PromptsMut::new(self)
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
        crate::skills::SkillsMut::new(self)
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
        self.inner.events.subscribe()
    }

    fn publish(&self, event: ServerEvent) {
        // An error only means no session is listening.
        let _ = self.inner.events.send(event);
    }

    pub(crate) fn announce(&self, changed: bool, event: ServerEvent) {
        if changed {
            self.publish(event);
        }
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
        self.inner.registry.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> WriteGuard<'_> {
        self.inner.registry.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Builds a [`Server`].
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
///
/// let server = Server::builder("weather", "2.1.0")
///     .title("Weather")
///     .instructions("Ask for a city's forecast.")
///     .page_size(20)
///     .tool(Tool::new("forecast", ToolSchema::object()), |_ctx, _args| async {
///         Ok(ToolOutput::text("sunny"))
///     })
///     .try_build()
///     .expect("a valid definition");
/// assert_eq!(server.tools().len(), 1);
/// ```
#[must_use]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    page_size: Option<usize>,
    max_uri_length: usize,
    cache_hints: CacheHints,
    sealer: Option<StateSealer>,
    state_ttl: Option<Duration>,
    task_store: Option<Arc<dyn TaskStore>>,
    task_ttl: Option<Option<Duration>>,
    task_poll_interval: Option<Duration>,
    max_inflight_requests: usize,
    max_queued: (usize, usize),
    write_timeout: Option<Duration>,
    registry: Registry,
    mcpl: Option<Arc<McplHub>>,
    errors: Vec<RegistrationError>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .field("tools", &self.registry.tools.items.len())
            .field("resources", &self.registry.resources.items.len())
            .field("resource_templates", &self.registry.templates.items.len())
            .field("prompts", &self.registry.prompts.items.len())
            .field("errors", &self.errors)
            .finish()
    }
}

/// Why a feature could not be registered.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{RegistrationError, Server, ToolOutput};
///
/// let err = Server::builder("s", "1")
///     .tool(Tool::new("bad name!", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
///     .try_build()
///     .unwrap_err();
/// assert!(matches!(err.problems[0], RegistrationError::InvalidName(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// A tool name breaks the naming rules (see [`crate::tool::validate_tool_name`]).
    #[error("{0}")]
    InvalidName(String),
    /// A tool's input or output schema is not a valid object schema.
    #[error("tool {tool:?}: {problem}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What is wrong.
        problem: String,
    },
    /// A resource template does not parse.
    #[error("{0}")]
    InvalidTemplate(String),
    /// The name or URI is already registered.
    #[error("{kind} {key:?} is defined twice")]
    Duplicate {
        /// What kind of feature: `tool`, `resource`, `resource template` or `prompt`.
        kind: &'static str,
        /// Its name or URI.
        key: String,
    },
    /// The MCPL manifest has no revision (an identifier breaks the charset rule), or declares a
    /// feature set the server cannot serve.
    #[error("MCPL manifest: {0}")]
    InvalidMcplManifest(String),
    /// A completer names a prompt argument or template variable that does not exist.
    #[error("completer for {target}: no such {what}")]
    UnknownCompletionTarget {
        /// The prompt or template, and the argument or variable.
        target: String,
        /// What is missing.
        what: &'static str,
    },
}

/// Why a [`ServerBuilder`] could not build.
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
///
/// let tool = || Tool::new("twice", ToolSchema::object());
/// let err = Server::builder("s", "1")
///     .tool(tool(), |_c, _a| async { Ok(ToolOutput::text("1")) })
///     .tool(tool(), |_c, _a| async { Ok(ToolOutput::text("2")) })
///     .try_build()
///     .unwrap_err();
/// assert_eq!(err.problems.len(), 1);
/// assert!(err.to_string().contains("defined twice"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid server definition: {}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct BuildError {
    /// Every problem found.
    pub problems: Vec<RegistrationError>,
}

impl ServerBuilder {
    /// Sets the instructions sent to clients in the `initialize` result.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").instructions("Be brief.").build();
    /// assert_eq!(server.instructions(), Some("Be brief."));
    /// ```
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Sets the server's human-readable title (`serverInfo.title`), for clients to show
    /// instead of its name.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("gh-issues", "2.1.0").title("GitHub Issues").build();
    /// assert_eq!(server.info().name, "gh-issues");
    /// assert_eq!(server.info().title.as_deref(), Some("GitHub Issues"));
    /// ```
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Splits `tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`
    /// into pages of `size` items (at least 1), linked by opaque cursors. By default every
    /// list is one page.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").page_size(0).build();
    /// assert_eq!(server.page_size(), Some(1), "at least one item per page");
    /// ```
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = Some(size.max(1));
        self
    }

    /// Sets the longest resource URI a client may read or subscribe to, in bytes; a longer one
    /// is refused (`-32602`) before it is looked up or matched against any template. Default
    /// [`DEFAULT_MAX_URI_LENGTH`](crate::resource::DEFAULT_MAX_URI_LENGTH), 8 KiB.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_uri_length(2048).build();
    /// assert_eq!(server.max_uri_length(), 2048);
    /// ```
    pub fn max_uri_length(mut self, bytes: usize) -> Self {
        self.max_uri_length = bytes;
        self
    }

    /// Sets how long clients may reuse `result`, and who may (the `ttlMs` and `cacheScope` of
    /// 2026-07-28 results; see [`crate::cache`]). Without it, the endpoint's default applies
    /// ([`HttpConfig::cache_ttl`](crate::http::HttpConfig::cache_ttl), scope `public`).
    /// 2025-era results never carry these members.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::Server;
    /// use mcpl_server::cache::{CacheHint, CachedResult};
    ///
    /// let server = Server::builder("s", "1")
    ///     .cache_hint(CachedResult::PromptsList, CacheHint::public(Duration::from_secs(3600)))
    ///     .cache_hint(CachedResult::Discover, CacheHint::public(Duration::from_secs(60)))
    ///     .build();
    /// assert_eq!(server.cache_hint(CachedResult::Discover).unwrap().ttl_ms(), 60_000);
    /// ```
    pub fn cache_hint(mut self, result: CachedResult, hint: CacheHint) -> Self {
        self.cache_hints.set(result, hint);
        self
    }

    /// Sets the sealer of the `requestState` of input-required results (see
    /// [`crate::state`]). By default each server draws a random key
    /// ([`StateSealer::random`]); instances of one deployment behind a shared endpoint must
    /// share a key.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::state::StateSealer;
    ///
    /// // Every instance behind one endpoint seals with the same key.
    /// let key = [7u8; 32]; // in practice: from your secret store
    /// let server = Server::builder("s", "1").state_sealer(StateSealer::new(&key)).build();
    /// # drop(server);
    /// ```
    pub fn state_sealer(mut self, sealer: StateSealer) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Sets how long a sealed `requestState` stays valid (default
    /// [`DEFAULT_STATE_TTL`](crate::state::DEFAULT_STATE_TTL), 10 minutes); overrides the
    /// time to live of a sealer set with [`state_sealer`](Self::state_sealer).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = mcpl_server::Server::builder("s", "1")
    ///     .request_state_ttl(Duration::from_secs(120))
    ///     .build();
    /// assert_eq!(server.state_sealer().ttl(), Duration::from_secs(120));
    /// ```
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = Some(ttl);
        self
    }

    /// Sets where tasks live (see [`crate::task`]); by default an
    /// [`InMemoryTaskStore`](crate::task::InMemoryTaskStore) private to this server. Setting a
    /// store also serves the tasks extension when no tool is task-capable.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::task::InMemoryTaskStore;
    ///
    /// let server = Server::builder("s", "1").task_store(InMemoryTaskStore::new()).build();
    /// assert!(server.serves_tasks());
    /// ```
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// Sets how long tasks are kept after their creation (`ttlMs`); `None`: forever. Default
    /// [`DEFAULT_TASK_TTL`](crate::task::DEFAULT_TASK_TTL), one hour.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = mcpl_server::Server::builder("s", "1")
    ///     .task_ttl(Some(Duration::from_secs(24 * 3600)))
    ///     .task_poll_interval(Duration::from_millis(500))
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn task_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.task_ttl = Some(ttl);
        self
    }

    /// Sets the polling interval suggested to clients (`pollIntervalMs`). Default
    /// [`DEFAULT_POLL_INTERVAL`](crate::task::DEFAULT_POLL_INTERVAL), one second.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = mcpl_server::Server::builder("s", "1")
    ///     .task_poll_interval(Duration::from_secs(5))
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.task_poll_interval = Some(interval);
        self
    }

    /// The most requests of one client connection (a stdio or WebSocket connection, or a
    /// 2025 HTTP session) whose handlers run at once; one more is answered at once with
    /// `-32000` ("too many requests in flight"), never queued. Default:
    /// [`DEFAULT_MAX_INFLIGHT_REQUESTS`](mcpl_core::engine::DEFAULT_MAX_INFLIGHT_REQUESTS)
    /// (256).
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_inflight_requests(32).build();
    /// # drop(server);
    /// ```
    pub fn max_inflight_requests(mut self, max: usize) -> Self {
        self.max_inflight_requests = max;
        self
    }

    /// The bound on what waits to be written to one client connection (a stdio or WebSocket
    /// connection, or a 2025 HTTP session): at most `messages` messages and `bytes` bytes (the
    /// JSON size of their payloads). At the bound, handlers' answers and the server's
    /// notifications and requests wait, and the connection reads no more requests than the
    /// in-flight limit lets run: a client that stops reading costs at most this much memory
    /// (see [`EngineConfig::max_queued_messages`](mcpl_core::engine::EngineConfig::max_queued_messages)).
    /// Default: 256 messages, 8 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = mcpl_server::Server::builder("s", "1").max_queued(64, 1024 * 1024).build();
    /// # drop(server);
    /// ```
    pub fn max_queued(mut self, messages: usize, bytes: usize) -> Self {
        self.max_queued = (messages, bytes);
        self
    }

    /// How long one write to a stdio or WebSocket client may take before the client is taken
    /// to have stopped reading: its connection is closed, and the refusal is logged once and
    /// counted ([`RefusalKind::WriteTimeout`](crate::http::RefusalKind::WriteTimeout) for a
    /// WebSocket endpoint). HTTP connections have their own,
    /// [`ConnectionConfig::write_timeout`](crate::http::ConnectionConfig::write_timeout).
    /// `None`: a write may wait forever (the queue bound of [`max_queued`](Self::max_queued)
    /// still holds the memory). Default: [`DEFAULT_WRITE_TIMEOUT`] (30 s).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server =
    ///     mcpl_server::Server::builder("s", "1").write_timeout(Some(Duration::from_secs(60))).build();
    /// # drop(server);
    /// ```
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    fn record(mut self, result: Result<(), RegistrationError>) -> Self {
        if let Err(e) = result {
            self.errors.push(e);
        }
        self
    }

    /// Adds a tool. Tools are listed in the order they were added.
    ///
    /// Every call's arguments are checked against the tool's input schema first: arguments
    /// that do not match get a tool error result (`isError: true`) naming the problem, and the
    /// handler is not called. When the tool has an output schema, the handler's structured
    /// content is checked against it; a mismatch is the server's bug and answers `-32603`.
    ///
    /// An invalid or duplicate name, or an invalid schema, is reported by
    /// [`try_build`](Self::try_build).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    /// use serde_json::json;
    ///
    /// let schema = ToolSchema::object()
    ///     .with_property("city", json!({"type": "string"}))
    ///     .with_required("city");
    /// let mut tool = Tool::new("forecast", schema);
    /// tool.description = Some("Today's weather in a city.".into());
    /// let server = Server::builder("weather", "1.0.0")
    ///     .tool(tool, |_ctx, args| async move {
    ///         let city = args["city"].as_str().unwrap_or_default();
    ///         Ok(ToolOutput::text(format!("Sunny in {city}")))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// assert_eq!(server.tools()[0].name, "forecast");
    /// ```
    pub fn tool<F, Fut, R>(self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        self.tool_entry(ToolEntry::new(tool, Arc::new(handler)))
    }

    /// Adds a tool whose arguments deserialize into `Args`; its input schema is generated from
    /// `Args` (JSON Schema 2020-12).
    ///
    /// ```
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add {
    ///     /// The first term.
    ///     a: i64,
    ///     /// The second term.
    ///     b: i64,
    /// }
    ///
    /// let server = Server::builder("calc", "1.0.0")
    ///     .typed_tool("add", "Adds two integers.", |_ctx, args: Add| async move {
    ///         Ok(ToolOutput::text((args.a + args.b).to_string()))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// assert_eq!(server.tools()[0].input_schema.required.as_deref(), Some(&["a".to_owned(), "b".to_owned()][..]));
    /// ```
    pub fn typed_tool<Args, F, Fut, R>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        Args: DeserializeOwned + JsonSchema + 'static,
        F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        let entry = typed_tool::<Args>(name, description)
            .and_then(|tool| ToolEntry::new(tool, Arc::new(Typed::new(handler))));
        self.tool_entry(entry)
    }

    /// Adds a tool whose arguments deserialize into `Args`, from a full definition (title,
    /// annotations, output schema...) whose input schema is replaced by the one of `Args`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolAnnotations, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Query {
    ///     /// What to look for.
    ///     text: String,
    /// }
    ///
    /// let mut tool = Tool::new("search", ToolSchema::object());
    /// tool.title = Some("Search".into());
    /// let mut annotations = ToolAnnotations::default();
    /// annotations.read_only_hint = Some(true);
    /// tool.annotations = Some(annotations);
    /// let server = Server::builder("s", "1")
    ///     .typed_tool_with(tool, |_ctx, q: Query| async move { Ok(ToolOutput::text(q.text)) })
    ///     .try_build()
    ///     .unwrap();
    /// let listed = &server.tools()[0];
    /// assert_eq!(listed.title.as_deref(), Some("Search"));
    /// assert!(listed.input_schema.properties.as_ref().is_some_and(|p| p.contains_key("text")));
    /// ```
    pub fn typed_tool_with<Args, F, Fut, R>(self, tool: Tool, handler: F) -> Self
    where
        Args: DeserializeOwned + JsonSchema + 'static,
        F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        let entry = with_schema_of::<Args>(tool)
            .and_then(|tool| ToolEntry::new(tool, Arc::new(Typed::new(handler))));
        self.tool_entry(entry)
    }

    /// Adds a tool that may run as a task (see [`crate::task`]): `options` says whether calls
    /// may or must be tasks and when the task starts; the definition's `execution.taskSupport`
    /// is set to match.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::task::TaskOptions;
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("jobs", "1.0.0")
    ///     .task_tool(Tool::new("crunch", ToolSchema::object()), TaskOptions::optional(), |_ctx, _args| async {
    ///         tokio::time::sleep(Duration::from_secs(5)).await;
    ///         Ok(ToolOutput::text("done"))
    ///     })
    ///     .build();
    /// assert!(server.serves_tasks());
    /// ```
    pub fn task_tool<F, Fut, R>(self, mut tool: Tool, options: TaskOptions, handler: F) -> Self
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        tool.execution.get_or_insert_with(ToolExecution::default).task_support =
            Some(options.support);
        let entry = ToolEntry::new(tool, Arc::new(handler)).map(|mut e| {
            e.task = options;
            e
        });
        self.tool_entry(entry)
    }

    /// Serves MCPL 0.5 (see [`crate::mcpl`]): `mcpl` holds the manifest, whose `revision` is
    /// computed here, and the handlers of the host-to-server methods.
    /// [`try_build`](Self::try_build) reports a manifest that has no revision (an identifier
    /// breaking the charset rule), and each feature set the server cannot serve (a declaration
    /// that does not parse, or whose `uses` is not a non-empty list of capability paths).
    /// [`build`](Self::build) then serves no MCPL for the former, and leaves such sets out of
    /// the served manifest for the latter (the other sets work).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use mcpl_server::Server;
    /// use mcpl_server::mcpl::Mcpl;
    ///
    /// let server = Server::builder("s", "1").mcpl(Mcpl::new(Manifest::new().with_model_info(true))).build();
    /// let manifest = server.mcpl_manifest().unwrap();
    /// assert_eq!(manifest.revision(), Some(manifest.compute_revision().unwrap()));
    /// ```
    pub fn mcpl(mut self, mcpl: Mcpl) -> Self {
        match McplHub::new(mcpl) {
            Ok((hub, problems)) => {
                for problem in problems {
                    self.errors.push(RegistrationError::InvalidMcplManifest(error_chain(&problem)));
                }
                self.mcpl = Some(Arc::new(hub));
            }
            Err(e) => self.errors.push(RegistrationError::InvalidMcplManifest(error_chain(&e))),
        }
        self
    }

    fn tool_entry(mut self, entry: Result<ToolEntry, RegistrationError>) -> Self {
        let result = entry.and_then(|entry| self.registry.add_tool(entry));
        self.record(result)
    }

    /// Adds a static resource, read by `handler`. Resources are listed in the order they were
    /// added.
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let mut readme = Resource::new("file:///README.md", "README");
    /// readme.mime_type = Some("text/markdown".into());
    /// let server = Server::builder("files", "1.0.0")
    ///     .resource(readme, |_ctx, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "# Hello")])
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn resource<F, Fut, R>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let result =
            self.registry.add_resource(ResourceEntry { resource, handler: Arc::new(handler) });
        self.record(result)
    }

    /// Adds a resource template (RFC 6570, see [`crate::uri_template`]); reads of URIs it
    /// matches go to `handler` with the template's variables. Static resources are matched
    /// first, then templates in the order they were added.
    ///
    /// ```
    /// use mcpl_core::types::ResourceTemplate;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("users", "1.0.0")
    ///     .resource_template(ResourceTemplate::new("users://{id}/profile", "profile"), |_ctx, req| async move {
    ///         let id = req.var("id").unwrap_or_default().to_owned();
    ///         Ok(vec![ResourceOutput::text(req.uri, format!("user {id}"))])
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn resource_template<F, Fut, R>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let result = TemplateEntry::new(template, Arc::new(handler))
            .and_then(|entry| self.registry.add_template(entry));
        self.record(result)
    }

    /// Serves a skill (see [`crate::skills`]): its files become resources, and the server
    /// declares the skills extension. Skills are listed in the order they were added; a skill
    /// URI already served, or a file URI served with other contents, is reported by
    /// [`try_build`](Self::try_build).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let manifest = "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\nSee references/FORMS.md\n";
    /// let skill = SkillBundle::new("pdf-processing", manifest)?.file("references/FORMS.md", "# Forms")?;
    /// let server = Server::builder("docs", "1.0.0").skill(skill).try_build().unwrap();
    /// let uris: Vec<_> = server.resources().into_iter().map(|r| r.uri).collect();
    /// assert!(uris.is_empty(), "static resources only; skill files are listed by resources/list");
    /// assert_eq!(server.skills().len(), 1);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn skill(mut self, skill: crate::skills::SkillBundle) -> Self {
        let result = crate::skills::register(&mut self.registry, skill);
        self.record(result)
    }

    /// Serves each of `skills`, as [`skill`](Self::skill) does (the skills
    /// [`load_dir`](crate::skills::load_dir) found, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::skills::SkillBundle;
    ///
    /// let skill = |name: &str| SkillBundle::new(name, format!("---\nname: {name}\ndescription: d\n---\n"));
    /// let server = Server::builder("s", "1").skills([skill("a")?, skill("b")?]).build();
    /// assert_eq!(server.skills().len(), 2);
    /// # Ok::<(), mcpl_server::skills::SkillError>(())
    /// ```
    pub fn skills(self, skills: impl IntoIterator<Item = crate::skills::SkillBundle>) -> Self {
        skills.into_iter().fold(self, Self::skill)
    }

    /// Adds a prompt. Prompts are listed in the order they were added; a `prompts/get` that
    /// lacks a required argument is refused (`-32602`) before `handler` runs.
    ///
    /// ```
    /// use mcpl_core::types::{Prompt, PromptArgument};
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let mut prompt = Prompt::new("review");
    /// let mut code = PromptArgument::new("code");
    /// code.required = Some(true);
    /// prompt.arguments = Some(vec![code]);
    /// let server = Server::builder("reviewer", "1.0.0")
    ///     .prompt(prompt, |_ctx, args| async move {
    ///         Ok(PromptOutput::user_text(format!("Review this:\n{}", args["code"])))
    ///     })
    ///     .build();
    /// # drop(server);
    /// ```
    pub fn prompt<F, Fut, R>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(Context, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<PromptReply> + 'static,
    {
        let result = self.registry.add_prompt(PromptEntry { prompt, handler: Arc::new(handler) });
        self.record(result)
    }

    /// Sets the completer of a prompt's argument (`completion/complete` with `ref/prompt`).
    ///
    /// [`try_build`](Self::try_build) reports a completer whose prompt or argument does not
    /// exist.
    ///
    /// ```
    /// use mcpl_core::types::{Prompt, PromptArgument};
    /// use mcpl_server::Server;
    /// use mcpl_server::completion::matching;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let mut prompt = Prompt::new("greet");
    /// prompt.arguments = Some(vec![PromptArgument::new("language")]);
    /// let server = Server::builder("s", "1")
    ///     .prompt(prompt, |_ctx, _args| async { Ok(PromptOutput::user_text("hi")) })
    ///     .prompt_completer("greet", "language", |_ctx, req| async move {
    ///         Ok(matching(["english", "esperanto", "french"], &req.value))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// # drop(server);
    /// ```
    pub fn prompt_completer<F, Fut>(mut self, prompt: &str, argument: &str, completer: F) -> Self
    where
        F: Fn(Context, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionResult> + Send + 'static,
    {
        let key = (prompt.to_owned(), argument.to_owned());
        self.registry.prompt_completers.insert(key, Arc::new(completer));
        self
    }

    /// Sets the completer of a resource template's variable (`completion/complete` with
    /// `ref/resource`, whose `uri` is the template).
    ///
    /// [`try_build`](Self::try_build) reports a completer whose template or variable does not
    /// exist.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ResourceTemplate;
    /// use mcpl_server::Server;
    /// use mcpl_server::completion::matching;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource_template(ResourceTemplate::new("repo://{name}/readme", "readme"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "...")])
    ///     })
    ///     .resource_completer("repo://{name}/readme", "name", |_ctx, req| async move {
    ///         Ok(matching(["mcpl-rs", "mcpl-host"], &req.value))
    ///     })
    ///     .try_build()
    ///     .unwrap();
    /// # drop(server);
    /// ```
    pub fn resource_completer<F, Fut>(
        mut self,
        uri_template: &str,
        variable: &str,
        completer: F,
    ) -> Self
    where
        F: Fn(Context, CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CompletionResult> + Send + 'static,
    {
        let key = (uri_template.to_owned(), variable.to_owned());
        self.registry.template_completers.insert(key, Arc::new(completer));
        self
    }

    fn check_completers(&mut self) {
        let r = &self.registry;
        for (prompt, argument) in r.prompt_completers.keys() {
            let exists = r
                .prompts
                .get(prompt)
                .is_some_and(|p| p.prompt.arguments.iter().flatten().any(|a| &a.name == argument));
            if !exists {
                self.errors.push(RegistrationError::UnknownCompletionTarget {
                    target: format!("prompt {prompt:?} argument {argument:?}"),
                    what: "prompt argument",
                });
            }
        }
        for (template, variable) in r.template_completers.keys() {
            let exists = r
                .templates
                .get(template)
                .is_some_and(|t| t.parsed.variables().any(|v| v == variable));
            if !exists {
                self.errors.push(RegistrationError::UnknownCompletionTarget {
                    target: format!("template {template:?} variable {variable:?}"),
                    what: "template variable",
                });
            }
        }
    }

    /// Builds the server, checking the definition.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] listing every invalid or duplicate name, invalid schema or template,
    /// and completer without a target.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    ///
    /// // A completer for a prompt that does not exist.
    /// let err = Server::builder("s", "1")
    ///     .prompt_completer("missing", "arg", |_c, _r| async { Ok(vec![]) })
    ///     .try_build()
    ///     .unwrap_err();
    /// assert_eq!(err.problems.len(), 1);
    /// ```
    pub fn try_build(mut self) -> Result<Server, BuildError> {
        self.check_completers();
        if !self.errors.is_empty() {
            return Err(BuildError { problems: self.errors });
        }
        Ok(self.build_unchecked())
    }

    /// Builds the server. Problems [`try_build`](Self::try_build) would report are logged as
    /// warnings instead, and the features they concern are left out (a duplicate serves the
    /// first definition).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// // The invalid tool is left out (and a warning logged); the rest is served.
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("ok", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("ok")) })
    ///     .tool(Tool::new("not ok", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
    ///     .build();
    /// assert_eq!(server.tools().len(), 1);
    /// ```
    pub fn build(mut self) -> Server {
        self.check_completers();
        for problem in &self.errors {
            tracing::warn!(%problem, "server definition problem");
        }
        self.build_unchecked()
    }

    fn build_unchecked(self) -> Server {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let mut sealer = self.sealer.unwrap_or_else(StateSealer::random);
        if let Some(ttl) = self.state_ttl {
            sealer = sealer.with_ttl(ttl);
        }
        Server {
            inner: Arc::new(ServerInner {
                info: self.info,
                instructions: self.instructions,
                page_size: self.page_size,
                max_uri_length: self.max_uri_length,
                cache_hints: self.cache_hints,
                sealer,
                tasks: Tasks::new(self.task_store, self.task_ttl, self.task_poll_interval),
                max_inflight_requests: self.max_inflight_requests,
                max_queued: self.max_queued,
                write_timeout: self.write_timeout,
                registry: RwLock::new(self.registry),
                events,
                mcpl: self.mcpl,
            }),
        }
    }
}

/// `e` and its causes, `: `-separated: a problem kept as text keeps its cause.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
