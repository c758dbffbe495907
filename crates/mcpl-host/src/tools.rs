//! The tools the model sees: per-server listings (first listing wins), allow/deny filters,
//! namespaced names, and routing a namespaced name back to its server.
//!
//! ```
//! use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
//! use serde_json::json;
//!
//! let tools = vec![
//!     json!({"name": "read", "inputSchema": {"type": "object"}, "_meta": {"featureSet": "fs.read"}}),
//!     json!({"name": "read", "inputSchema": {"type": "object"}}),
//!     json!({"name": "rm", "inputSchema": {"type": "object"}}),
//! ];
//! let filter = ToolFilter::new(Vec::<String>::new(), ["rm"]);
//! let l = listing("mcpl--files", tools, &filter);
//! assert_eq!(l.repeats, ["read"]);
//! assert_eq!(l.tools.len(), 1);
//! assert_eq!(l.tools[0].feature_set.as_deref(), Some("fs.read"), "the first listing's set");
//!
//! let mut index = ToolIndex::default();
//! index.set_prefix("files", "mcpl--files");
//! index.replace("files", l);
//! let route = index.resolve("mcpl--files--read").unwrap();
//! assert_eq!((route.server.as_str(), route.tool.as_str()), ("files", "read"));
//! ```

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use crate::naming::SEPARATOR;

pub use mcpl_core::mcpl::glob::glob_match;

/// Which of a server's tools are offered: `allow` globs (empty = all), minus `deny` globs
/// (deny wins). Globs match the server's own tool names.
///
/// # Examples
///
/// ```
/// use mcpl_host::tools::ToolFilter;
///
/// // Offer every tool but the destructive ones.
/// let filter = ToolFilter::new(Vec::<String>::new(), ["delete_*", "drop_*"]);
/// assert!(filter.permits("read_file"));
/// assert!(!filter.permits("delete_file"));
/// // The default filter offers everything.
/// assert!(ToolFilter::default().permits("anything"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    allow: Vec<String>,
    deny: Vec<String>,
}

impl ToolFilter {
    /// A filter.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::ToolFilter;
    ///
    /// let filter = ToolFilter::new(["git_*"], ["git_push"]);
    /// assert!(filter.permits("git_status"));
    /// assert!(!filter.permits("git_push")); // deny wins over allow
    /// assert!(!filter.permits("rm")); // not allowed
    /// ```
    pub fn new<A, D>(allow: A, deny: D) -> Self
    where
        A: IntoIterator,
        A::Item: Into<String>,
        D: IntoIterator,
        D::Item: Into<String>,
    {
        ToolFilter {
            allow: allow.into_iter().map(Into::into).collect(),
            deny: deny.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether `tool` is offered.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::ToolFilter;
    ///
    /// let filter = ToolFilter::new(["search", "fetch_*"], Vec::<String>::new());
    /// let offered: Vec<&str> =
    ///     ["search", "fetch_page", "admin"].into_iter().filter(|t| filter.permits(t)).collect();
    /// assert_eq!(offered, ["search", "fetch_page"]);
    /// ```
    pub fn permits(&self, tool: &str) -> bool {
        let allowed = self.allow.is_empty() || self.allow.iter().any(|g| glob_match(g, tool));
        allowed && !self.deny.iter().any(|g| glob_match(g, tool))
    }
}

/// One tool as the model sees it.
///
/// # Examples
///
/// ```
/// use mcpl_host::tools::{ToolFilter, listing};
/// use serde_json::json;
///
/// let tools = vec![json!({
///     "name": "add",
///     "inputSchema": {"type": "object"},
///     "_meta": {"featureSet": "notes.store", "mcpl/class": "write"}
/// })];
/// let l = listing("mcpl--notes", tools, &ToolFilter::default());
/// let tool = &l.tools[0];
/// assert_eq!(tool.name, "add");
/// assert_eq!(tool.namespaced, "mcpl--notes--add");
/// assert_eq!(tool.feature_set.as_deref(), Some("notes.store"));
/// assert_eq!(tool.class.as_deref(), Some("write"));
/// assert_eq!(tool.definition["name"], "mcpl--notes--add"); // what the model sees
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListedTool {
    /// The server's own name.
    pub name: String,
    /// `<prefix>--<name>`.
    pub namespaced: String,
    /// The feature set it is tagged with (`featureSet`, else `_meta.featureSet`).
    pub feature_set: Option<String>,
    /// Its declared class (`_meta["mcpl/class"]`).
    pub class: Option<String>,
    /// The definition, with `name` replaced by the namespaced name.
    pub definition: Value,
}

/// One server's listing after dedupe and filtering.
///
/// # Examples
///
/// ```
/// use mcpl_host::tools::{ToolFilter, listing};
/// use serde_json::json;
///
/// let tools = vec![
///     json!({"name": "add", "inputSchema": {"type": "object"}}),
///     json!({"name": "add", "inputSchema": {"type": "object"}}),
///     json!({"inputSchema": {"type": "object"}}),
/// ];
/// let l = listing("notes", tools, &ToolFilter::default());
/// assert_eq!(l.tools.len(), 1);
/// assert_eq!(l.repeats, ["add"]); // worth an ops alert
/// assert_eq!(l.unnamed, 1);
/// assert!(!l.stale);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Listing {
    /// The offered tools, in listing order.
    pub tools: Vec<ListedTool>,
    /// Names listed more than once (the first listing was kept), in order of first repeat.
    pub repeats: Vec<String>,
    /// Definitions without a string `name` (ignored).
    pub unnamed: usize,
    /// The refresh failed and this is the previous listing.
    pub stale: bool,
}

/// Builds a server's listing: the first listing of each name wins (with its feature set and
/// class), later repeats are reported; filtered tools are left out.
///
/// # Examples
///
/// ```
/// use mcpl_host::tools::{ToolFilter, listing};
/// use serde_json::json;
///
/// let tools = vec![
///     json!({"name": "search", "inputSchema": {"type": "object"}}),
///     json!({"name": "purge", "inputSchema": {"type": "object"}}),
/// ];
/// let l = listing("web", tools, &ToolFilter::new(Vec::<String>::new(), ["purge"]));
/// let names: Vec<&str> = l.tools.iter().map(|t| t.namespaced.as_str()).collect();
/// assert_eq!(names, ["web--search"]);
/// ```
pub fn listing(prefix: &str, tools: Vec<Value>, filter: &ToolFilter) -> Listing {
    let mut seen = HashSet::new();
    let mut out = Listing::default();
    for mut def in tools {
        let Some(name) = def.get("name").and_then(Value::as_str).map(str::to_owned) else {
            out.unnamed += 1;
            continue;
        };
        if !seen.insert(name.clone()) {
            if !out.repeats.contains(&name) {
                out.repeats.push(name);
            }
            continue;
        }
        if !filter.permits(&name) {
            continue;
        }
        let feature_set = def
            .get("featureSet")
            .or_else(|| def.pointer("/_meta/featureSet"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let class = def.pointer("/_meta/mcpl~1class").and_then(Value::as_str).map(str::to_owned);
        let namespaced = format!("{prefix}{SEPARATOR}{name}");
        if let Some(obj) = def.as_object_mut() {
            obj.insert("name".into(), Value::String(namespaced.clone()));
        }
        out.tools.push(ListedTool { name, namespaced, feature_set, class, definition: def });
    }
    out
}

/// Where a namespaced tool name goes.
///
/// # Examples
///
/// ```
/// use mcpl_host::tools::ToolIndex;
///
/// let mut index = ToolIndex::default();
/// index.set_prefix("notes", "mcpl--notes");
/// // Not listed (yet), but under the prefix: routed by prefix, with no feature set known.
/// let route = index.resolve("mcpl--notes--add").unwrap();
/// assert_eq!((route.server.as_str(), route.tool.as_str()), ("notes", "add"));
/// assert_eq!(route.feature_set, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Route {
    /// The server id.
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    /// The feature set the tool is tagged with (from its first listing), if it was listed.
    pub feature_set: Option<String>,
}

/// Every server's prefix and listing, and the namespaced-name index built from them.
///
/// # Examples
///
/// ```
/// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
/// use serde_json::json;
///
/// let mut index = ToolIndex::default();
/// for (server, prefix, tool) in [("notes", "mcpl--notes", "add"), ("web", "web", "search")] {
///     index.set_prefix(server, prefix);
///     let tools = vec![json!({"name": tool, "inputSchema": {"type": "object"}})];
///     index.replace(server, listing(prefix, tools, &ToolFilter::default()));
/// }
/// let offered: Vec<&str> = index.tools().map(|(_, t)| t.namespaced.as_str()).collect();
/// assert_eq!(offered, ["mcpl--notes--add", "web--search"]);
/// assert_eq!(index.resolve("web--search").unwrap().server, "web");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    prefixes: BTreeMap<String, String>,
    listings: BTreeMap<String, Listing>,
}

impl ToolIndex {
    /// Sets `server`'s prefix (replacing any earlier entry of that server).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::ToolIndex;
    ///
    /// let mut index = ToolIndex::default();
    /// index.set_prefix("notes", "mcpl--notes");
    /// assert_eq!(index.resolve("mcpl--notes--add").unwrap().tool, "add");
    /// // A restart under a new prefix replaces the old one.
    /// index.set_prefix("notes", "n");
    /// assert!(index.resolve("mcpl--notes--add").is_none());
    /// assert_eq!(index.resolve("n--add").unwrap().server, "notes");
    /// ```
    pub fn set_prefix(&mut self, server: &str, prefix: &str) {
        self.prefixes.insert(server.to_owned(), prefix.to_owned());
    }

    /// `server`'s prefix, if set.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::ToolIndex;
    ///
    /// let mut index = ToolIndex::default();
    /// index.set_prefix("notes", "mcpl--notes");
    /// assert_eq!(index.prefix("notes"), Some("mcpl--notes"));
    /// assert_eq!(index.prefix("web"), None);
    /// ```
    pub fn prefix(&self, server: &str) -> Option<&str> {
        self.prefixes.get(server).map(String::as_str)
    }

    /// Replaces `server`'s listing.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
    /// use serde_json::json;
    ///
    /// let mut index = ToolIndex::default();
    /// index.set_prefix("notes", "notes");
    /// let v1 = vec![json!({"name": "add", "inputSchema": {"type": "object"}})];
    /// index.replace("notes", listing("notes", v1, &ToolFilter::default()));
    /// // After `notifications/tools/list_changed`, the new listing replaces the old.
    /// let v2 = vec![json!({"name": "append", "inputSchema": {"type": "object"}})];
    /// index.replace("notes", listing("notes", v2, &ToolFilter::default()));
    /// let names: Vec<&str> = index.tools().map(|(_, t)| t.name.as_str()).collect();
    /// assert_eq!(names, ["append"]);
    /// ```
    pub fn replace(&mut self, server: &str, listing: Listing) {
        self.listings.insert(server.to_owned(), listing);
    }

    /// Marks `server`'s listing stale (its refresh failed; the previous list stays).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
    /// use serde_json::json;
    ///
    /// let mut index = ToolIndex::default();
    /// let tools = vec![json!({"name": "add", "inputSchema": {"type": "object"}})];
    /// index.replace("notes", listing("notes", tools, &ToolFilter::default()));
    /// // A refresh failed: the previous tools stay offered, marked stale.
    /// index.mark_stale("notes");
    /// let l = index.listing("notes").unwrap();
    /// assert!(l.stale);
    /// assert_eq!(l.tools.len(), 1);
    /// ```
    pub fn mark_stale(&mut self, server: &str) {
        if let Some(l) = self.listings.get_mut(server) {
            l.stale = true;
        }
    }

    /// Forgets `server`: exactly the entries owned by it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
    /// use serde_json::json;
    ///
    /// let mut index = ToolIndex::default();
    /// index.set_prefix("notes", "notes");
    /// let tools = vec![json!({"name": "add", "inputSchema": {"type": "object"}})];
    /// index.replace("notes", listing("notes", tools, &ToolFilter::default()));
    /// index.remove("notes");
    /// assert!(index.listing("notes").is_none());
    /// assert!(index.resolve("notes--add").is_none());
    /// ```
    pub fn remove(&mut self, server: &str) {
        self.prefixes.remove(server);
        self.listings.remove(server);
    }

    /// A server's listing.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
    /// use serde_json::json;
    ///
    /// let mut index = ToolIndex::default();
    /// let tools = vec![json!({"name": "add", "inputSchema": {"type": "object"}})];
    /// index.replace("notes", listing("notes", tools, &ToolFilter::default()));
    /// assert_eq!(index.listing("notes").map(|l| l.tools.len()), Some(1));
    /// assert!(index.listing("web").is_none());
    /// ```
    pub fn listing(&self, server: &str) -> Option<&Listing> {
        self.listings.get(server)
    }

    /// Every offered tool, by server id then listing order.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
    /// use serde_json::json;
    ///
    /// let mut index = ToolIndex::default();
    /// for server in ["web", "notes"] {
    ///     let tools = vec![json!({"name": "a", "inputSchema": {"type": "object"}}),
    ///                      json!({"name": "b", "inputSchema": {"type": "object"}})];
    ///     index.replace(server, listing(server, tools, &ToolFilter::default()));
    /// }
    /// // By server id, then listing order: the definitions to hand the model.
    /// let names: Vec<String> = index.tools().map(|(s, t)| format!("{s}:{}", t.name)).collect();
    /// assert_eq!(names, ["notes:a", "notes:b", "web:a", "web:b"]);
    /// ```
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ListedTool)> {
        self.listings.iter().flat_map(|(s, l)| l.tools.iter().map(move |t| (s.as_str(), t)))
    }

    /// Routes a namespaced name: to the server that listed it, if that server still owns a
    /// prefix the name is under; else to the server with the longest prefix the name is under
    /// (the tool need not be listed); else `None`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_host::tools::{ToolFilter, ToolIndex, listing};
    /// use serde_json::json;
    ///
    /// let mut index = ToolIndex::default();
    /// // "mcpl--notes" and "mcpl--notes-x" do not meet, so both can be configured.
    /// index.set_prefix("notes", "mcpl--notes");
    /// index.set_prefix("x", "mcpl--notes-x");
    /// let tools = vec![json!({"name": "add", "featureSet": "notes.store", "inputSchema": {}})];
    /// index.replace("notes", listing("mcpl--notes", tools, &ToolFilter::default()));
    ///
    /// let route = index.resolve("mcpl--notes--add").unwrap();
    /// assert_eq!(
    ///     (route.server.as_str(), route.feature_set.as_deref()),
    ///     ("notes", Some("notes.store"))
    /// );
    /// assert_eq!(index.resolve("mcpl--notes-x--run").unwrap().server, "x");
    /// assert!(index.resolve("mcpl--other--add").is_none());
    /// ```
    pub fn resolve(&self, name: &str) -> Option<Route> {
        let under = |prefix: &str| {
            name.strip_prefix(prefix)
                .and_then(|r| r.strip_prefix(SEPARATOR))
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
        };
        for (server, listing) in &self.listings {
            if let Some(t) = listing.tools.iter().find(|t| t.namespaced == name)
                && let Some(prefix) = self.prefixes.get(server)
                && let Some(tool) = under(prefix)
            {
                return Some(Route {
                    server: server.clone(),
                    tool,
                    feature_set: t.feature_set.clone(),
                });
            }
        }
        let (server, prefix) = self
            .prefixes
            .iter()
            .filter(|(_, p)| under(p).is_some())
            .max_by_key(|(_, p)| p.len())?;
        let tool = under(prefix)?;
        let feature_set = self
            .listings
            .get(server)
            .and_then(|l| l.tools.iter().find(|t| t.name == tool))
            .and_then(|t| t.feature_set.clone());
        Some(Route { server: server.clone(), tool, feature_set })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn deny_wins() {
        let f = ToolFilter::new(["read*", "rm"], ["rm"]);
        assert!(f.permits("read_file"));
        assert!(!f.permits("rm"));
        assert!(!f.permits("write"));
    }

    #[test]
    fn first_listing_wins_with_its_set_and_class() {
        let tools = vec![
            json!({"name": "a", "featureSet": "one", "_meta": {"mcpl/class": "read"}}),
            json!({"name": "a", "featureSet": "two", "_meta": {"mcpl/class": "write"}}),
            json!({"name": "b"}),
            json!({"name": "a"}),
            json!({"title": "no name"}),
        ];
        let l = listing("p", tools, &ToolFilter::default());
        assert_eq!(l.repeats, ["a"]);
        assert_eq!(l.unnamed, 1);
        assert_eq!(l.tools.len(), 2);
        assert_eq!(l.tools[0].feature_set.as_deref(), Some("one"));
        assert_eq!(l.tools[0].class.as_deref(), Some("read"));
        assert_eq!(l.tools[0].definition["name"], json!("p--a"));
    }

    #[test]
    fn routing_prefers_the_listing_owner_then_the_longest_prefix() {
        let mut index = ToolIndex::default();
        // Nested prefixes (refused by the registry, but routing must still be deterministic).
        index.set_prefix("a", "a");
        index.set_prefix("ab", "a--b");
        index.replace("a", listing("a", vec![json!({"name": "b--x"})], &ToolFilter::default()));
        index.replace("ab", listing("a--b", vec![json!({"name": "y"})], &ToolFilter::default()));
        assert_eq!(index.resolve("a--b--x").unwrap().server, "a", "listed by a");
        assert_eq!(index.resolve("a--b--y").unwrap().server, "ab");
        // Not listed anywhere: the longest prefix.
        let r = index.resolve("a--b--z").unwrap();
        assert_eq!((r.server.as_str(), r.tool.as_str()), ("ab", "z"));
        assert_eq!(index.resolve("a--q").unwrap().tool, "q");
        assert!(index.resolve("zzz--q").is_none());
        assert!(index.resolve("a--").is_none());
        index.remove("ab");
        assert_eq!(index.resolve("a--b--y").unwrap().server, "a");
    }
}
