//! Namespaced tool names: `<prefix>--<tool>`.

use std::fmt;

/// The separator between a prefix and a tool name.
///
/// # Examples
///
/// ```
/// use mcpl_host::naming::{SEPARATOR, ToolName};
///
/// assert_eq!(SEPARATOR, "--");
/// let name = ToolName::new("web", "search").to_string();
/// assert_eq!(name.split_once(SEPARATOR), Some(("web", "search")));
/// ```
pub const SEPARATOR: &str = "--";

/// The default prefix of server `id`: `mcpl--<id>`.
///
/// # Examples
///
/// ```
/// use mcpl_host::naming::default_prefix;
///
/// assert_eq!(default_prefix("weather"), "mcpl--weather");
/// ```
pub fn default_prefix(server_id: &str) -> String {
    format!("mcpl{SEPARATOR}{server_id}")
}

/// A tool name as the model sees it: a server's prefix and the server's own tool name.
///
/// # Examples
///
/// ```
/// use mcpl_host::naming::{ToolName, default_prefix};
///
/// let name = ToolName::new(default_prefix("fs"), "read--file");
/// assert_eq!(name.to_string(), "mcpl--fs--read--file");
/// // Splitting needs the prefix, since both halves may contain `--`.
/// assert_eq!(ToolName::parse("mcpl--fs--read--file", "mcpl--fs"), Some(name));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolName {
    prefix: String,
    tool: String,
}

impl ToolName {
    /// Joins `prefix` and `tool`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::naming::ToolName;
    ///
    /// let name = ToolName::new("web", "search");
    /// assert_eq!(name.to_string(), "web--search");
    /// ```
    pub fn new(prefix: impl Into<String>, tool: impl Into<String>) -> Self {
        ToolName { prefix: prefix.into(), tool: tool.into() }
    }

    /// Splits a namespaced `name` given the known `prefix`; `None` if it is not under that
    /// prefix.
    ///
    /// Splitting needs the prefix: since prefixes and tools may both contain `--`, the name
    /// alone is ambiguous.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::naming::ToolName;
    ///
    /// let n = ToolName::parse("mcpl--fs--read--file", "mcpl--fs").unwrap();
    /// assert_eq!(n.tool(), "read--file");
    /// assert!(ToolName::parse("mcpl--fsx--read", "mcpl--fs").is_none());
    /// ```
    pub fn parse(name: &str, prefix: &str) -> Option<ToolName> {
        let tool = name.strip_prefix(prefix)?.strip_prefix(SEPARATOR)?;
        (!tool.is_empty()).then(|| ToolName::new(prefix, tool))
    }

    /// The server's prefix.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::naming::ToolName;
    ///
    /// assert_eq!(ToolName::new("web", "search").prefix(), "web");
    /// ```
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The server's own tool name.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::naming::ToolName;
    ///
    /// let name = ToolName::parse("mcpl--fs--read", "mcpl--fs").unwrap();
    /// assert_eq!(name.tool(), "read"); // what the server itself is called with
    /// ```
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{SEPARATOR}{}", self.prefix, self.tool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let n = ToolName::new(default_prefix("weather"), "get--forecast");
        assert_eq!(n.to_string(), "mcpl--weather--get--forecast");
        assert_eq!(ToolName::parse(&n.to_string(), "mcpl--weather"), Some(n));
        assert_eq!(ToolName::parse("mcpl--weather--", "mcpl--weather"), None);
        assert_eq!(ToolName::parse("mcpl--weather-x", "mcpl--weather"), None);
    }
}
