//! The server's features: the tables of its tools, resources, templates, prompts, completers
//! and skills ([`Registry`]), and [`Features`], those tables with the channel that announces
//! their changes to live sessions. The handles of [`crate::registry`] and [`crate::skills`]
//! change them; the router reads them.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tokio::sync::broadcast;

use crate::completion::Completer;
use crate::events::ServerEvent;
use crate::handler::registration::RegistrationError;
use crate::prompt::PromptEntry;
use crate::resource::{ResourceEntry, TemplateEntry};
use crate::tool::ToolEntry;

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

    pub(crate) fn position(&self, key: &str) -> Option<usize> {
        self.items.iter().position(|t| t.key() == key)
    }

    /// Adds an item; refuses a key already present.
    pub(crate) fn add(&mut self, kind: &'static str, item: T) -> Result<(), RegistrationError> {
        if self.position(item.key()).is_some() {
            return Err(RegistrationError::Duplicate { kind, key: item.key().to_owned() });
        }
        self.items.push(item);
        self.revision += 1;
        Ok(())
    }

    /// Adds an item, or replaces the one with its key in place.
    pub(crate) fn upsert(&mut self, item: T) {
        match self.position(item.key()) {
            Some(i) => self.items[i] = item,
            None => self.items.push(item),
        }
        self.revision += 1;
    }

    pub(crate) fn remove(&mut self, key: &str) -> bool {
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
    pub(crate) skills: crate::skills::catalog::SkillCatalog,
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

/// Read access to the registry (a poisoned lock is still read: every change is one assignment).
pub(crate) type ReadGuard<'a> = RwLockReadGuard<'a, Registry>;
/// Write access to the registry.
pub(crate) type WriteGuard<'a> = RwLockWriteGuard<'a, Registry>;

/// A server's [`Registry`] behind its lock, and the channel of its [`ServerEvent`]s.
pub(crate) struct Features {
    registry: RwLock<Registry>,
    events: broadcast::Sender<ServerEvent>,
}

impl std::fmt::Debug for Features {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Features").finish_non_exhaustive()
    }
}

impl Features {
    pub(crate) fn new(registry: Registry, events: broadcast::Sender<ServerEvent>) -> Self {
        Features { registry: RwLock::new(registry), events }
    }

    pub(crate) fn read(&self) -> ReadGuard<'_> {
        self.registry.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> WriteGuard<'_> {
        self.registry.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// A receiver of the events published from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ServerEvent> {
        self.events.subscribe()
    }

    /// Publishes `event` to every live session.
    pub(crate) fn publish(&self, event: ServerEvent) {
        // An error only means no session is listening.
        let _ = self.events.send(event);
    }

    /// Publishes `event` if `changed`.
    pub(crate) fn announce(&self, changed: bool, event: ServerEvent) {
        if changed {
            self.publish(event);
        }
    }

    /// Applies `f` to the registry, then announces `event` if `f` changed the list.
    pub(crate) fn change<R>(
        &self,
        event: ServerEvent,
        f: impl FnOnce(&mut Registry) -> (R, bool),
    ) -> R {
        let (result, changed) = f(&mut self.write());
        self.announce(changed, event);
        result
    }
}
