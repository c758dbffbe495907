//! Cache hints of 2026-07-28 results: how long a client may reuse a result (`ttlMs`) and who
//! may reuse it (`cacheScope`).
//!
//! In the stateless era, `tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`, `resources/read`, `server/discover`, `skills/list` and `skills/get` results
//! carry both members. Each of the lists, `server/discover` and `skills/get` takes its hint
//! from, in order:
//!
//! 1. the hint set for it with [`ServerBuilder::cache_hint`](crate::ServerBuilder::cache_hint);
//! 2. the endpoint's default, [`HttpConfig::cache_ttl`](crate::http::HttpConfig::cache_ttl),
//!    with the scope `public`.
//!
//! A `resources/read` result is `private`, with the endpoint's default time to live, or
//! `ttlMs: 0` when the request carried input responses or a request state.
//!
//! The 2025-11-25 results have no such members, so 2025-era sessions never see them.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use mcpl_server::Server;
//! use mcpl_server::cache::{CacheHint, CachedResult};
//!
//! let server = Server::builder("catalog", "1.0.0")
//!     // The tool list changes rarely and is the same for everyone.
//!     .cache_hint(CachedResult::ToolsList, CacheHint::public(Duration::from_secs(300)))
//!     // The resource list depends on the user: only this client may reuse it, for a minute.
//!     .cache_hint(CachedResult::ResourcesList, CacheHint::private(Duration::from_secs(60)))
//!     .build();
//! let hint = server.cache_hint(CachedResult::ToolsList).unwrap();
//! assert_eq!(hint.ttl_ms(), 300_000);
//! assert_eq!(server.cache_hint(CachedResult::PromptsList), None);
//! ```

use std::time::Duration;

use mcpl_core::types::names;

pub use mcpl_core::types::CacheScope;

/// How long a client may reuse a result, and who may reuse it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use mcpl_server::cache::{CacheHint, CacheScope};
///
/// let hint = CacheHint::private(Duration::from_millis(1500));
/// assert_eq!(hint.ttl_ms(), 1500);
/// assert_eq!(hint.scope(), CacheScope::Private);
/// assert_eq!(CacheHint::no_reuse().ttl_ms(), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheHint {
    ttl: Duration,
    scope: CacheScope,
}

impl CacheHint {
    /// Any client of the server may reuse the result for `ttl`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::cache::{CacheHint, CacheScope};
    ///
    /// assert_eq!(CacheHint::public(Duration::from_secs(1)).scope(), CacheScope::Public);
    /// ```
    pub fn public(ttl: Duration) -> Self {
        CacheHint { ttl, scope: CacheScope::Public }
    }

    /// Only the client that asked may reuse the result, for `ttl`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::cache::{CacheHint, CacheScope};
    ///
    /// assert_eq!(CacheHint::private(Duration::from_secs(1)).scope(), CacheScope::Private);
    /// ```
    pub fn private(ttl: Duration) -> Self {
        CacheHint { ttl, scope: CacheScope::Private }
    }

    /// Nobody may reuse the result (`ttlMs: 0`, `cacheScope: "private"`).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::cache::CacheHint;
    ///
    /// assert_eq!(CacheHint::no_reuse().ttl(), std::time::Duration::ZERO);
    /// ```
    pub fn no_reuse() -> Self {
        Self::private(Duration::ZERO)
    }

    /// How long the result may be reused.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::cache::CacheHint;
    ///
    /// let hint = CacheHint::public(Duration::from_secs(90));
    /// assert_eq!(hint.ttl(), Duration::from_secs(90));
    /// ```
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The time to live in whole milliseconds, as sent (`ttlMs`; saturates at `u64::MAX`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::cache::CacheHint;
    ///
    /// assert_eq!(CacheHint::public(Duration::from_micros(2_500_900)).ttl_ms(), 2_500, "whole milliseconds");
    /// assert_eq!(CacheHint::public(Duration::MAX).ttl_ms(), u64::MAX);
    /// ```
    pub fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// Who may reuse the result.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::cache::{CacheHint, CacheScope};
    ///
    /// assert_eq!(CacheHint::public(Duration::from_secs(60)).scope(), CacheScope::Public);
    /// assert_eq!(CacheHint::no_reuse().scope(), CacheScope::Private);
    /// ```
    pub fn scope(&self) -> CacheScope {
        self.scope
    }
}

/// A server-wide result whose [`CacheHint`] can be set with
/// [`ServerBuilder::cache_hint`](crate::ServerBuilder::cache_hint).
///
/// # Examples
///
/// ```
/// use mcpl_server::cache::CachedResult;
///
/// assert_eq!(CachedResult::ResourceTemplatesList.method(), "resources/templates/list");
/// assert_eq!(CachedResult::for_method("server/discover"), Some(CachedResult::Discover));
/// assert_eq!(CachedResult::for_method("tools/call"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CachedResult {
    /// `tools/list`.
    ToolsList,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `prompts/list`.
    PromptsList,
    /// `server/discover`.
    Discover,
    /// `skills/list` (the skills extension, see [`crate::skills`]).
    SkillsList,
    /// `skills/get`: every skill's entry (see [`crate::skills`]).
    SkillsGet,
}

impl CachedResult {
    /// Every kind, in a fixed order.
    ///
    /// # Examples
    ///
    /// One hint for every server-wide result:
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcpl_server::Server;
    /// use mcpl_server::cache::{CacheHint, CachedResult};
    ///
    /// let hint = CacheHint::public(Duration::from_secs(600));
    /// let server = CachedResult::ALL
    ///     .into_iter()
    ///     .fold(Server::builder("static-catalog", "1.0.0"), |b, result| b.cache_hint(result, hint))
    ///     .build();
    /// assert!(CachedResult::ALL.iter().all(|r| server.cache_hint(*r) == Some(hint)));
    /// ```
    pub const ALL: [CachedResult; 7] = [
        CachedResult::ToolsList,
        CachedResult::ResourcesList,
        CachedResult::ResourceTemplatesList,
        CachedResult::PromptsList,
        CachedResult::Discover,
        CachedResult::SkillsList,
        CachedResult::SkillsGet,
    ];

    /// The method whose result this is.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::cache::CachedResult;
    ///
    /// assert_eq!(CachedResult::ToolsList.method(), "tools/list");
    /// assert_eq!(CachedResult::Discover.method(), "server/discover");
    /// ```
    pub fn method(self) -> &'static str {
        match self {
            CachedResult::ToolsList => names::TOOLS_LIST,
            CachedResult::ResourcesList => names::RESOURCES_LIST,
            CachedResult::ResourceTemplatesList => names::RESOURCES_TEMPLATES_LIST,
            CachedResult::PromptsList => names::PROMPTS_LIST,
            CachedResult::Discover => names::SERVER_DISCOVER,
            CachedResult::SkillsList => names::SKILLS_LIST,
            CachedResult::SkillsGet => names::SKILLS_GET,
        }
    }

    /// The kind of result `method` answers with, if it is one of these.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_server::cache::CachedResult;
    ///
    /// assert_eq!(CachedResult::for_method("prompts/list"), Some(CachedResult::PromptsList));
    /// // `resources/read` results are cached per request, not server-wide.
    /// assert_eq!(CachedResult::for_method("resources/read"), None);
    /// ```
    pub fn for_method(method: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.method() == method)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The hints set per result kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct CacheHints([Option<CacheHint>; CachedResult::ALL.len()]);

impl CacheHints {
    pub(crate) fn set(&mut self, result: CachedResult, hint: CacheHint) {
        self.0[result.index()] = Some(hint);
    }

    pub(crate) fn get(&self, result: CachedResult) -> Option<CacheHint> {
        self.0[result.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_to_its_own_method_and_back() {
        for (i, kind) in CachedResult::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), i);
            assert_eq!(CachedResult::for_method(kind.method()), Some(kind));
        }
        assert_eq!(CachedResult::for_method("resources/read"), None);
    }

    #[test]
    fn hints_are_kept_per_kind() {
        let mut hints = CacheHints::default();
        hints.set(CachedResult::PromptsList, CacheHint::public(Duration::from_secs(2)));
        assert_eq!(hints.get(CachedResult::PromptsList).map(|h| h.ttl_ms()), Some(2000));
        assert_eq!(hints.get(CachedResult::ToolsList), None);
        assert_eq!(CacheHint::public(Duration::MAX).ttl_ms(), u64::MAX);
    }
}
