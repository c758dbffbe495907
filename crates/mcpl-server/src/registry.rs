//! The server's features, and handles to change them while sessions are live.
//!
//! [`Server::tools_mut`], [`Server::resources_mut`] and [`Server::prompts_mut`] give a handle
//! whose every change that alters a list (adding, removing, replacing, enabling or disabling)
//! publishes one [`ServerEvent`]; every live session then sends the
//! matching `notifications/*/list_changed` to its client.
//!
//! ```
//! use mcpl_core::types::{Tool, ToolSchema};
//! use mcpl_server::{Server, ToolOutput};
//!
//! let server = Server::builder("s", "1").build();
//! server
//!     .tools_mut()
//!     .add(Tool::new("late", ToolSchema::object()), |_ctx, _args| async {
//!         Ok(ToolOutput::text("added at run time"))
//!     })
//!     .unwrap();
//! server.tools_mut().disable("late");
//! assert_eq!(server.tools().len(), 0);
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{Prompt, Resource, ResourceTemplate, Tool};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::builder::{RegistrationError, Server};
use crate::completion::Completer;
use crate::context::Context;
use crate::events::ServerEvent;
use crate::input::{PromptReply, ReadReply, ToolReply};
use crate::prompt::{PromptArguments, PromptEntry};
use crate::resource::{ReadRequest, ResourceEntry, TemplateEntry};
use crate::tool::{Arguments, ToolEntry, Typed, typed_tool};

/// An item kept in a [`Catalog`], found by its key (a name or a URI).
pub(crate) trait Keyed {
    fn key(&self) -> &str;
}

impl Keyed for ToolEntry {
    fn key(&self) -> &str {
        &self.tool.name
    }
}

impl Keyed for ResourceEntry {
    fn key(&self) -> &str {
        &self.resource.uri
    }
}

impl Keyed for TemplateEntry {
    fn key(&self) -> &str {
        &self.template.uri_template
    }
}

impl Keyed for PromptEntry {
    fn key(&self) -> &str {
        &self.prompt.name
    }
}

/// One list of features, in registration order, with a revision that changes with it.
pub(crate) struct Catalog<T> {
    pub(crate) items: Vec<T>,
    pub(crate) revision: u64,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Catalog { items: Vec::new(), revision: 0 }
    }
}

impl<T: Keyed> Catalog<T> {
    pub(crate) fn get(&self, key: &str) -> Option<&T> {
        self.items.iter().find(|t| t.key() == key)
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.items.iter().position(|t| t.key() == key)
    }

    /// Adds an item; refuses a key already present.
    fn add(&mut self, kind: &'static str, item: T) -> Result<(), RegistrationError> {
        if self.position(item.key()).is_some() {
            return Err(RegistrationError::Duplicate { kind, key: item.key().to_owned() });
        }
        self.items.push(item);
        self.revision += 1;
        Ok(())
    }

    /// Adds an item, or replaces the one with its key in place.
    fn upsert(&mut self, item: T) {
        match self.position(item.key()) {
            Some(i) => self.items[i] = item,
            None => self.items.push(item),
        }
        self.revision += 1;
    }

    fn remove(&mut self, key: &str) -> bool {
        let Some(i) = self.position(key) else { return false };
        self.items.remove(i);
        self.revision += 1;
        true
    }
}

/// Everything a server offers.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Catalog<ToolEntry>,
    pub(crate) resources: Catalog<ResourceEntry>,
    pub(crate) templates: Catalog<TemplateEntry>,
    pub(crate) prompts: Catalog<PromptEntry>,
    /// Completers by (prompt name, argument name).
    pub(crate) prompt_completers: HashMap<(String, String), Arc<dyn Completer>>,
    /// Completers by (URI template, variable name).
    pub(crate) template_completers: HashMap<(String, String), Arc<dyn Completer>>,
    /// Whether tools were ever registered: the capability, once declared, stays.
    pub(crate) has_tools: bool,
    /// Whether resources or templates were ever registered.
    pub(crate) has_resources: bool,
    /// Whether prompts were ever registered.
    pub(crate) has_prompts: bool,
    /// Whether a task-capable tool was ever registered.
    pub(crate) has_task_tools: bool,
    /// The skills (see [`crate::skills`]); their files are resources.
    pub(crate) skills: crate::skills::SkillCatalog,
}

impl Registry {
    pub(crate) fn add_tool(&mut self, entry: ToolEntry) -> Result<(), RegistrationError> {
        let task_capable = entry.task.is_task_capable();
        self.tools.add("tool", entry)?;
        self.has_tools = true;
        self.has_task_tools |= task_capable;
        Ok(())
    }

    pub(crate) fn add_resource(&mut self, entry: ResourceEntry) -> Result<(), RegistrationError> {
        self.resources.add("resource", entry)?;
        self.has_resources = true;
        Ok(())
    }

    pub(crate) fn add_template(&mut self, entry: TemplateEntry) -> Result<(), RegistrationError> {
        self.templates.add("resource template", entry)?;
        self.has_resources = true;
        Ok(())
    }

    pub(crate) fn add_prompt(&mut self, entry: PromptEntry) -> Result<(), RegistrationError> {
        self.prompts.add("prompt", entry)?;
        self.has_prompts = true;
        Ok(())
    }

    /// Whether `completion/complete` is served: there is something to complete.
    pub(crate) fn has_completions(&self) -> bool {
        self.has_prompts || self.has_resources
    }
}

/// Applies `f` to the registry of `server`, then announces `event` if `f` changed the list.
fn change<R>(server: &Server, event: ServerEvent, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
    let (result, changed) = f(&mut server.write());
    server.announce(changed, event);
    result
}

/// An operation's result paired with whether it changed the list: it did if it succeeded.
fn on_success<T, E>(result: Result<T, E>) -> (Result<T, E>, bool) {
    let changed = result.is_ok();
    (result, changed)
}

/// Changes a server's tools while it serves; see the [module docs](self).
///
/// # Examples
///
/// ```
/// use mcpl_core::types::{Tool, ToolSchema};
/// use mcpl_server::{Server, ToolOutput};
///
/// let server = Server::builder("s", "1")
///     .tool(Tool::new("a", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("a")) })
///     .build();
/// let tools = server.tools_mut();
/// tools.disable("a");
/// assert_eq!(tools.is_enabled("a"), Some(false));
/// tools.enable("a");
/// assert!(tools.remove("a"));
/// assert!(!tools.contains("a"));
/// ```
#[derive(Debug)]
#[must_use]
pub struct ToolsMut<'a> {
    server: &'a Server,
}

impl<'a> ToolsMut<'a> {
    pub(crate) fn new(server: &'a Server) -> Self {
        ToolsMut { server }
    }

    fn change<R>(&self, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
        change(self.server, ServerEvent::ToolsListChanged, f)
    }

    /// Adds a tool at the end of the list.
    ///
    /// # Errors
    ///
    /// A [`RegistrationError`] for an invalid name or schema, or a name already in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("a", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("a")) })
    ///     .build();
    /// let added = server.tools_mut().add(Tool::new("b", ToolSchema::object()), |_c, _a| async {
    ///     Ok(ToolOutput::text("b"))
    /// });
    /// assert!(added.is_ok());
    /// // A second tool of the same name is refused.
    /// let again = server.tools_mut().add(Tool::new("b", ToolSchema::object()), |_c, _a| async {
    ///     Ok(ToolOutput::text("b"))
    /// });
    /// assert!(again.is_err());
    /// ```
    pub fn add<F, Fut, R>(&self, tool: Tool, handler: F) -> Result<(), RegistrationError>
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        let entry = ToolEntry::new(tool, Arc::new(handler))?;
        self.change(|r| on_success(r.add_tool(entry)))
    }

    /// Adds a tool whose arguments deserialize into `Args`; see
    /// [`ServerBuilder::typed_tool`](crate::ServerBuilder::typed_tool).
    ///
    /// # Errors
    ///
    /// A [`RegistrationError`] for an invalid name, a schema that is not an object schema, or
    /// a name already in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Echo {
    ///     text: String,
    /// }
    ///
    /// let server = Server::builder("s", "1").build();
    /// server
    ///     .tools_mut()
    ///     .add_typed("echo", "Echoes text.", |_ctx, args: Echo| async move { Ok(ToolOutput::text(args.text)) })
    ///     .unwrap();
    /// assert_eq!(server.tools()[0].name, "echo");
    /// ```
    pub fn add_typed<Args, F, Fut, R>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Result<(), RegistrationError>
    where
        Args: DeserializeOwned + JsonSchema + 'static,
        F: Fn(Context, Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        let tool = typed_tool::<Args>(name, description)?;
        let entry = ToolEntry::new(tool, Arc::new(Typed::new(handler)))?;
        self.change(|r| on_success(r.add_tool(entry)))
    }

    /// Adds a tool, or replaces the tool of the same name where it stands in the list (it is
    /// then enabled).
    ///
    /// # Errors
    ///
    /// A [`RegistrationError`] for an invalid name or schema.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("a", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("a")) })
    ///     .build();
    /// let mut v2 = Tool::new("a", ToolSchema::object());
    /// v2.description = Some("Version 2".into());
    /// server.tools_mut().replace(v2, |_c, _a| async { Ok(ToolOutput::text("a2")) }).unwrap();
    /// assert_eq!(server.tools()[0].description.as_deref(), Some("Version 2"));
    /// ```
    pub fn replace<F, Fut, R>(&self, tool: Tool, handler: F) -> Result<(), RegistrationError>
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ToolReply> + 'static,
    {
        let entry = ToolEntry::new(tool, Arc::new(handler))?;
        self.change(|r| {
            r.has_task_tools |= entry.task.is_task_capable();
            r.tools.upsert(entry);
            r.has_tools = true;
            ((), true)
        });
        Ok(())
    }

    /// Removes a tool; returns whether it existed.
    ///
    /// # Examples
    ///
    /// Live sessions are told the list changed (`notifications/tools/list_changed`):
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ServerEvent, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("beta", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("b")) })
    ///     .build();
    /// let mut changes = server.subscribe_changes();
    /// assert!(server.tools_mut().remove("beta"));
    /// assert_eq!(changes.try_recv().unwrap(), ServerEvent::ToolsListChanged);
    /// // Removing it again changes nothing, and announces nothing.
    /// assert!(!server.tools_mut().remove("beta"));
    /// assert!(changes.try_recv().is_err());
    /// ```
    pub fn remove(&self, name: &str) -> bool {
        self.change(|r| {
            let removed = r.tools.remove(name);
            (removed, removed)
        })
    }

    /// Lists and serves a disabled tool again; returns whether the tool exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("deploy", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("done")) })
    ///     .build();
    /// let tools = server.tools_mut();
    /// tools.disable("deploy"); // during a maintenance window
    /// assert!(server.tools().is_empty());
    /// assert!(tools.enable("deploy"));
    /// assert_eq!(server.tools()[0].name, "deploy");
    /// assert!(!tools.enable("no-such-tool"));
    /// ```
    pub fn enable(&self, name: &str) -> bool {
        self.set_enabled(name, true)
    }

    /// Hides a tool from `tools/list` and refuses its calls as unknown, without forgetting it;
    /// returns whether the tool exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("a", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("a")) })
    ///     .build();
    /// assert!(server.tools_mut().disable("a"));
    /// assert!(server.tools().is_empty(), "hidden from tools/list");
    /// assert!(server.tools_mut().contains("a"), "but not forgotten");
    /// assert!(server.tools_mut().enable("a"));
    /// assert_eq!(server.tools().len(), 1);
    /// ```
    pub fn disable(&self, name: &str) -> bool {
        self.set_enabled(name, false)
    }

    fn set_enabled(&self, name: &str, enabled: bool) -> bool {
        self.change(|r| {
            let Some(i) = r.tools.position(name) else { return (false, false) };
            let changed = r.tools.items[i].enabled != enabled;
            if changed {
                r.tools.items[i].enabled = enabled;
                r.tools.revision += 1;
            }
            (true, changed)
        })
    }

    /// Whether a tool of this name exists (enabled or not).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("search", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
    ///     .build();
    /// let tools = server.tools_mut();
    /// tools.disable("search");
    /// assert!(tools.contains("search"), "disabled tools still exist");
    /// assert!(!tools.contains("fetch"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.server.read().tools.get(name).is_some()
    }

    /// Whether the named tool is enabled; `None` if it does not exist.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Tool, ToolSchema};
    /// use mcpl_server::{Server, ToolOutput};
    ///
    /// let server = Server::builder("s", "1")
    ///     .tool(Tool::new("search", ToolSchema::object()), |_c, _a| async { Ok(ToolOutput::text("")) })
    ///     .build();
    /// let tools = server.tools_mut();
    /// assert_eq!(tools.is_enabled("search"), Some(true));
    /// tools.disable("search");
    /// assert_eq!(tools.is_enabled("search"), Some(false));
    /// assert_eq!(tools.is_enabled("fetch"), None);
    /// ```
    pub fn is_enabled(&self, name: &str) -> Option<bool> {
        self.server.read().tools.get(name).map(|t| t.enabled)
    }
}

/// Changes a server's resources and resource templates while it serves; see the
/// [module docs](self).
///
/// # Examples
///
/// ```
/// use mcpl_core::types::ResourceTemplate;
/// use mcpl_server::Server;
/// use mcpl_server::resource::ResourceOutput;
///
/// let server = Server::builder("s", "1").build();
/// let resources = server.resources_mut();
/// resources
///     .add_template(ResourceTemplate::new("notes://{id}", "note"), |_c, req| async move {
///         Ok(vec![ResourceOutput::text(req.uri, "...")])
///     })
///     .unwrap();
/// assert_eq!(server.resource_templates().len(), 1);
/// assert!(resources.remove_template("notes://{id}"));
/// ```
#[derive(Debug)]
#[must_use]
pub struct ResourcesMut<'a> {
    server: &'a Server,
}

impl<'a> ResourcesMut<'a> {
    pub(crate) fn new(server: &'a Server) -> Self {
        ResourcesMut { server }
    }

    fn change<R>(&self, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
        change(self.server, ServerEvent::ResourcesListChanged, f)
    }

    /// Adds a static resource at the end of the list.
    ///
    /// # Errors
    ///
    /// [`RegistrationError::Duplicate`] if a resource with this URI exists.
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
    ///     .add(Resource::new("mem://status", "status"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "all good")])
    ///     })
    ///     .unwrap();
    /// assert_eq!(server.resources().len(), 1);
    /// ```
    pub fn add<F, Fut, R>(&self, resource: Resource, handler: F) -> Result<(), RegistrationError>
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let entry = ResourceEntry { resource, handler: Arc::new(handler) };
        self.change(|r| on_success(r.add_resource(entry)))
    }

    /// Adds a resource template at the end of the list.
    ///
    /// # Errors
    ///
    /// A [`RegistrationError`] for a template that does not parse or is already registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::ResourceTemplate;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1").build();
    /// let resources = server.resources_mut();
    /// resources
    ///     .add_template(ResourceTemplate::new("users://{id}/profile", "profile"), |_c, req| async move {
    ///         let id = req.var("id").unwrap_or_default().to_owned();
    ///         Ok(vec![ResourceOutput::text(req.uri, format!("profile of {id}"))])
    ///     })
    ///     .unwrap();
    /// assert_eq!(server.resource_templates()[0].uri_template, "users://{id}/profile");
    ///
    /// // The same template twice, or one that does not parse, is refused.
    /// let handler = |_c, req: mcpl_server::resource::ReadRequest| async move {
    ///     Ok(vec![ResourceOutput::text(req.uri, "")])
    /// };
    /// assert!(resources.add_template(ResourceTemplate::new("users://{id}/profile", "again"), handler).is_err());
    /// assert!(resources.add_template(ResourceTemplate::new("users://{id", "broken"), handler).is_err());
    /// ```
    pub fn add_template<F, Fut, R>(
        &self,
        template: ResourceTemplate,
        handler: F,
    ) -> Result<(), RegistrationError>
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let entry = TemplateEntry::new(template, Arc::new(handler))?;
        self.change(|r| on_success(r.add_template(entry)))
    }

    /// Adds a static resource, or replaces the one with the same URI in place.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1").build();
    /// let status = || Resource::new("mem://status", "status");
    /// server.resources_mut().replace(status(), |_c, req| async move { Ok(vec![ResourceOutput::text(req.uri, "v1")]) });
    /// server.resources_mut().replace(status(), |_c, req| async move { Ok(vec![ResourceOutput::text(req.uri, "v2")]) });
    /// assert_eq!(server.resources().len(), 1);
    /// ```
    pub fn replace<F, Fut, R>(&self, resource: Resource, handler: F)
    where
        F: Fn(Context, ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<ReadReply> + 'static,
    {
        let entry = ResourceEntry { resource, handler: Arc::new(handler) };
        self.change(|r| {
            r.resources.upsert(entry);
            r.has_resources = true;
            ((), true)
        });
    }

    /// Removes a static resource; returns whether it existed.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::{Server, ServerEvent};
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource(Resource::new("file:///tmp/report.txt", "report"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "...")])
    ///     })
    ///     .build();
    /// let mut changes = server.subscribe_changes();
    /// assert!(server.resources_mut().remove("file:///tmp/report.txt"));
    /// assert!(server.resources().is_empty());
    /// assert_eq!(changes.try_recv().unwrap(), ServerEvent::ResourcesListChanged);
    /// assert!(!server.resources_mut().remove("file:///tmp/report.txt"));
    /// ```
    pub fn remove(&self, uri: &str) -> bool {
        self.change(|r| {
            let removed = r.resources.remove(uri);
            (removed, removed)
        })
    }

    /// Removes a resource template (named by its URI template) and its completers; returns
    /// whether it existed.
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
    ///     .resource_template(ResourceTemplate::new("logs://{day}", "logs"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "")])
    ///     })
    ///     .build();
    /// let resources = server.resources_mut();
    /// resources.set_completer("logs://{day}", "day", |_ctx, req| async move {
    ///     Ok(matching(["monday", "tuesday"], &req.value))
    /// });
    /// assert!(resources.remove_template("logs://{day}"));
    /// assert!(server.resource_templates().is_empty());
    /// assert!(!resources.remove_template("logs://{day}"), "already gone");
    /// ```
    pub fn remove_template(&self, uri_template: &str) -> bool {
        self.change(|r| {
            let removed = r.templates.remove(uri_template);
            r.template_completers.retain(|(t, _), _| t != uri_template);
            (removed, removed)
        })
    }

    /// Sets the completer of a template variable (`completion/complete` with `ref/resource`).
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
    ///     .resource_template(ResourceTemplate::new("repo://{owner}/{name}", "repository"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "")])
    ///     })
    ///     .build();
    /// // Suggest owners the server knows, narrowed to what the user typed.
    /// server.resources_mut().set_completer("repo://{owner}/{name}", "owner", |_ctx, req| async move {
    ///     Ok(matching(["rust-lang", "tokio-rs", "serde-rs"], &req.value))
    /// });
    /// assert!(server.capabilities().completions.is_some());
    /// ```
    pub fn set_completer<F, Fut>(&self, uri_template: &str, variable: &str, completer: F)
    where
        F: Fn(Context, crate::completion::CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::completion::CompletionResult> + Send + 'static,
    {
        let key = (uri_template.to_owned(), variable.to_owned());
        self.server.write().template_completers.insert(key, Arc::new(completer));
    }

    /// Whether a static resource with this URI exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Resource;
    /// use mcpl_server::Server;
    /// use mcpl_server::resource::ResourceOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .resource(Resource::new("mem://config", "config"), |_c, req| async move {
    ///         Ok(vec![ResourceOutput::text(req.uri, "{}")])
    ///     })
    ///     .build();
    /// assert!(server.resources_mut().contains("mem://config"));
    /// assert!(!server.resources_mut().contains("mem://secrets"));
    /// ```
    pub fn contains(&self, uri: &str) -> bool {
        self.server.read().resources.get(uri).is_some()
    }
}

/// Changes a server's prompts while it serves; see the [module docs](self).
///
/// # Examples
///
/// ```
/// use mcpl_core::types::Prompt;
/// use mcpl_server::Server;
/// use mcpl_server::prompt::PromptOutput;
///
/// let server = Server::builder("s", "1").build();
/// let prompts = server.prompts_mut();
/// prompts.add(Prompt::new("p"), |_c, _a| async { Ok(PromptOutput::user_text("v1")) }).unwrap();
/// prompts.replace(Prompt::new("p"), |_c, _a| async { Ok(PromptOutput::user_text("v2")) });
/// assert!(prompts.contains("p"));
/// assert!(prompts.remove("p"));
/// ```
#[derive(Debug)]
#[must_use]
pub struct PromptsMut<'a> {
    server: &'a Server,
}

impl<'a> PromptsMut<'a> {
    pub(crate) fn new(server: &'a Server) -> Self {
        PromptsMut { server }
    }

    fn change<R>(&self, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
        change(self.server, ServerEvent::PromptsListChanged, f)
    }

    /// Adds a prompt at the end of the list.
    ///
    /// # Errors
    ///
    /// [`RegistrationError::Duplicate`] if a prompt with this name exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::{RegistrationError, Server, ServerEvent};
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1").build();
    /// let mut changes = server.subscribe_changes();
    /// let summarize = |_c, _a| async { Ok(PromptOutput::user_text("Summarize the thread.")) };
    /// server.prompts_mut().add(Prompt::new("summarize"), summarize).unwrap();
    /// assert_eq!(server.prompts()[0].name, "summarize");
    /// assert_eq!(changes.try_recv().unwrap(), ServerEvent::PromptsListChanged);
    ///
    /// let again = server.prompts_mut().add(Prompt::new("summarize"), summarize);
    /// assert!(matches!(again, Err(RegistrationError::Duplicate { .. })));
    /// ```
    pub fn add<F, Fut, R>(&self, prompt: Prompt, handler: F) -> Result<(), RegistrationError>
    where
        F: Fn(Context, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<PromptReply> + 'static,
    {
        let entry = PromptEntry { prompt, handler: Arc::new(handler) };
        self.change(|r| on_success(r.add_prompt(entry)))
    }

    /// Adds a prompt, or replaces the one with the same name in place.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .prompt(Prompt::new("first"), |_c, _a| async { Ok(PromptOutput::user_text("1")) })
    ///     .prompt(Prompt::new("review"), |_c, _a| async { Ok(PromptOutput::user_text("Review this.")) })
    ///     .build();
    /// let mut v2 = Prompt::new("review");
    /// v2.description = Some("Review, with the style guide".into());
    /// server.prompts_mut().replace(v2, |_c, _a| async { Ok(PromptOutput::user_text("Review this, per the style guide.")) });
    /// let prompts = server.prompts();
    /// assert_eq!(prompts.len(), 2);
    /// assert_eq!(prompts[1].description.as_deref(), Some("Review, with the style guide"), "kept its place");
    /// ```
    pub fn replace<F, Fut, R>(&self, prompt: Prompt, handler: F)
    where
        F: Fn(Context, PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<PromptReply> + 'static,
    {
        let entry = PromptEntry { prompt, handler: Arc::new(handler) };
        self.change(|r| {
            r.prompts.upsert(entry);
            r.has_prompts = true;
            ((), true)
        });
    }

    /// Removes a prompt and its completers; returns whether it existed.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::{Server, ServerEvent};
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .prompt(Prompt::new("draft"), |_c, _a| async { Ok(PromptOutput::user_text("Draft it.")) })
    ///     .build();
    /// let mut changes = server.subscribe_changes();
    /// assert!(server.prompts_mut().remove("draft"));
    /// assert!(server.prompts().is_empty());
    /// assert_eq!(changes.try_recv().unwrap(), ServerEvent::PromptsListChanged);
    /// assert!(!server.prompts_mut().remove("draft"));
    /// ```
    pub fn remove(&self, name: &str) -> bool {
        self.change(|r| {
            let removed = r.prompts.remove(name);
            r.prompt_completers.retain(|(p, _), _| p != name);
            (removed, removed)
        })
    }

    /// Sets the completer of a prompt argument (`completion/complete` with `ref/prompt`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{Prompt, PromptArgument};
    /// use mcpl_server::Server;
    /// use mcpl_server::completion::matching;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1").build();
    /// let mut prompt = Prompt::new("greet");
    /// prompt.arguments = Some(vec![PromptArgument::new("name")]);
    /// server.prompts_mut().add(prompt, |_c, _a| async { Ok(PromptOutput::user_text("hi")) }).unwrap();
    /// server.prompts_mut().set_completer("greet", "name", |_ctx, req| async move {
    ///     Ok(matching(["Ada", "Alan"], &req.value))
    /// });
    /// ```
    pub fn set_completer<F, Fut>(&self, prompt: &str, argument: &str, completer: F)
    where
        F: Fn(Context, crate::completion::CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = crate::completion::CompletionResult> + Send + 'static,
    {
        let key = (prompt.to_owned(), argument.to_owned());
        self.server.write().prompt_completers.insert(key, Arc::new(completer));
    }

    /// Whether a prompt with this name exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::Prompt;
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// let server = Server::builder("s", "1")
    ///     .prompt(Prompt::new("draft"), |_c, _a| async { Ok(PromptOutput::user_text("Draft it.")) })
    ///     .build();
    /// assert!(server.prompts_mut().contains("draft"));
    /// assert!(!server.prompts_mut().contains("publish"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.server.read().prompts.get(name).is_some()
    }
}

/// Read access to the registry (a poisoned lock is still read: every change is one assignment).
pub(crate) type ReadGuard<'a> = RwLockReadGuard<'a, Registry>;
/// Write access to the registry.
pub(crate) type WriteGuard<'a> = RwLockWriteGuard<'a, Registry>;
