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

use std::future::Future;
use std::sync::Arc;

use mcpl_core::jsonrpc::ErrorObject;
use mcpl_core::types::{Prompt, Resource, ResourceTemplate, Tool};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
#[cfg(feature = "schema")]
use serde::de::DeserializeOwned;

#[cfg(doc)]
use crate::Server;
use crate::context::Context;
use crate::events::ServerEvent;
use crate::features::{Features, Registry};
use crate::handler::registration::RegistrationError;
use crate::input::{PromptReply, ReadReply, ToolReply};
use crate::prompt::{PromptArguments, PromptEntry};
#[cfg(feature = "schema")]
use crate::prompt::{TypedPrompt, typed_prompt};
use crate::resource::{ReadRequest, ResourceEntry, TemplateEntry};
use crate::tool::{Arguments, ToolEntry};
#[cfg(feature = "schema")]
use crate::tool::{IntoToolReply, Typed, typed_tool};

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
    features: &'a Features,
}

impl<'a> ToolsMut<'a> {
    pub(crate) fn new(features: &'a Features) -> Self {
        ToolsMut { features }
    }

    fn change<R>(&self, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
        self.features.change(ServerEvent::ToolsListChanged, f)
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
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
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
        R: IntoToolReply,
    {
        let tool = typed_tool::<Args, R>(name, description)?;
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
        self.features.read().tools.get(name).is_some()
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
        self.features.read().tools.get(name).map(|t| t.enabled)
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
    features: &'a Features,
}

impl<'a> ResourcesMut<'a> {
    pub(crate) fn new(features: &'a Features) -> Self {
        ResourcesMut { features }
    }

    fn change<R>(&self, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
        self.features.change(ServerEvent::ResourcesListChanged, f)
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
        let entry = ResourceEntry::new(resource, Arc::new(handler));
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
        let entry = ResourceEntry::new(resource, Arc::new(handler));
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
        self.features.write().template_completers.insert(key, Arc::new(completer));
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
        self.features.read().resources.get(uri).is_some()
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
    features: &'a Features,
}

impl<'a> PromptsMut<'a> {
    pub(crate) fn new(features: &'a Features) -> Self {
        PromptsMut { features }
    }

    fn change<R>(&self, f: impl FnOnce(&mut Registry) -> (R, bool)) -> R {
        self.features.change(ServerEvent::PromptsListChanged, f)
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
        let entry = PromptEntry::new(prompt, Arc::new(handler));
        self.change(|r| on_success(r.add_prompt(entry)))
    }

    /// Adds a prompt whose arguments deserialize into `Args`; see
    /// [`ServerBuilder::typed_prompt`](crate::ServerBuilder::typed_prompt).
    ///
    /// # Errors
    ///
    /// [`RegistrationError::InvalidPromptArguments`] if `Args` does not list as string
    /// arguments, [`RegistrationError::Duplicate`] if a prompt with this name exists.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::Server;
    /// use mcpl_server::prompt::PromptOutput;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Topic {
    ///     topic: String,
    /// }
    ///
    /// let server = Server::builder("s", "1").build();
    /// server
    ///     .prompts_mut()
    ///     .add_typed("explain", "Explains a topic.", |_c, t: Topic| async move {
    ///         Ok(PromptOutput::user_text(format!("Explain {}.", t.topic)))
    ///     })
    ///     .unwrap();
    /// assert_eq!(server.prompts()[0].arguments.as_ref().unwrap()[0].name, "topic");
    /// ```
    #[cfg(feature = "schema")]
    #[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
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
        R: Into<PromptReply> + 'static,
    {
        let prompt = typed_prompt::<Args>(name, description)?;
        let handler = Arc::new(TypedPrompt::new(&prompt.name, handler));
        self.change(|r| on_success(r.add_prompt(PromptEntry::new(prompt, handler))))
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
        let entry = PromptEntry::new(prompt, Arc::new(handler));
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
        self.features.write().prompt_completers.insert(key, Arc::new(completer));
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
        self.features.read().prompts.get(name).is_some()
    }
}
