//! [`ServerBuilder`] collects a server's identity and features; [`Server`] is the result.

use std::fmt;
use std::sync::Arc;

use mcpl_core::types::{Implementation, ServerCapabilities, Tool, ToolsCapability};

use std::future::Future;

use crate::context::Context;
use crate::tool::{Arguments, ToolEntry, ToolResult, validate_tool_name};

/// A built server: its identity and features. Cheap to clone; serve it with
/// [`Server::serve`] or [`crate::stdio::serve`].
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    pub(crate) info: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<ToolEntry>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("tools", &self.inner.tools.iter().map(|t| &t.tool.name).collect::<Vec<_>>())
            .finish()
    }
}

impl Server {
    /// Starts building a server that calls itself `name`, version `version`.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            tools: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The server's identity.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The tools, in registration order (the order of `tools/list`).
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.inner.tools.iter().map(|t| &t.tool)
    }

    /// The capabilities this server advertises.
    pub fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            tools: self.has_tools().then(ToolsCapability::default),
            logging: Some(Default::default()),
            ..ServerCapabilities::default()
        }
    }

    pub(crate) fn has_tools(&self) -> bool {
        !self.inner.tools.is_empty()
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.inner.tools.iter().find(|t| t.tool.name == name)
    }
}

/// Builds a [`Server`].
#[must_use]
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<ToolEntry>,
    errors: Vec<String>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .field("tools", &self.tools.len())
            .finish()
    }
}

/// Why a [`ServerBuilder`] could not build.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid server definition: {}", problems.join("; "))]
pub struct BuildError {
    /// Every problem found.
    pub problems: Vec<String>,
}

impl ServerBuilder {
    /// Sets the instructions sent to clients in the `initialize` result.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Sets the server's human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Adds a tool. Tools are listed in the order they were added.
    ///
    /// An invalid or duplicate name is reported by [`try_build`](Self::try_build).
    pub fn tool<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult> + Send + 'static,
    {
        if let Err(e) = validate_tool_name(&tool.name) {
            self.errors.push(e);
        }
        if self.tools.iter().any(|t| t.tool.name == tool.name) {
            self.errors.push(format!("tool {:?} is defined twice", tool.name));
        }
        self.tools.push(ToolEntry { tool, handler: Arc::new(handler) });
        self
    }

    /// Builds the server, checking the definition.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] listing every invalid or duplicate tool name.
    pub fn try_build(self) -> Result<Server, BuildError> {
        if !self.errors.is_empty() {
            return Err(BuildError { problems: self.errors });
        }
        Ok(self.build_unchecked())
    }

    /// Builds the server. Problems [`try_build`](Self::try_build) would report are logged as
    /// warnings instead; a duplicate tool name serves the first definition.
    pub fn build(self) -> Server {
        for problem in &self.errors {
            tracing::warn!(%problem, "server definition problem");
        }
        self.build_unchecked()
    }

    fn build_unchecked(self) -> Server {
        let mut tools: Vec<ToolEntry> = Vec::with_capacity(self.tools.len());
        for entry in self.tools {
            if !tools.iter().any(|t| t.tool.name == entry.tool.name) {
                tools.push(entry);
            }
        }
        Server {
            inner: Arc::new(ServerInner {
                info: self.info,
                instructions: self.instructions,
                tools,
            }),
        }
    }
}
