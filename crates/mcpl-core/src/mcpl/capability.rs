//! Capability paths, what a manifest advertises, and the capability grant (MCPL spec §5.4).
//!
//! A server advertises what it **can** do ([`advertised_paths`]); the host decides per connection
//! what it **may** do and sends that as `featureSets/update.params.effectiveCapabilities`, the
//! sole allowlist ([`CapabilityGrant`]). Any path not granted is denied.
//!
//! ```
//! use mcpl_core::mcpl::capability::{CapabilityGrant, paths};
//!
//! let grant = CapabilityGrant::new(["channels.*", "pushEvents"]);
//! assert!(grant.is_granted(paths::CHANNELS_PUBLISH));
//! assert!(grant.is_granted(paths::PUSH_EVENTS));
//! // `*` matches exactly one segment, and a bare parent grants nothing beneath it.
//! assert!(!grant.is_granted("channels.publish.x"));
//! assert!(!CapabilityGrant::new(["contextHooks"]).is_granted(paths::INJECT_SYSTEM));
//! // No grant at all allows nothing.
//! assert!(!CapabilityGrant::none().is_granted(paths::TOOLS));
//! ```

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;

/// The capability paths of MCPL 0.5: the closed vocabulary, also the only legal `uses` values.
pub mod paths {
    /// `pushEvents`: the server may send `push/event`.
    pub const PUSH_EVENTS: &str = "pushEvents";
    /// `tools`: MCP tools (advertised by MCP's `capabilities.tools`, not inside `experimental.mcpl`).
    pub const TOOLS: &str = "tools";
    /// `modelInfo`: the server may ask `model/info`.
    pub const MODEL_INFO: &str = "modelInfo";
    /// `inferenceRequest`: the server may send `inference/request`.
    pub const INFERENCE_REQUEST: &str = "inferenceRequest";
    /// `inferenceRequest.streaming`: `inference/request` with `stream: true` and `inference/chunk`.
    pub const INFERENCE_REQUEST_STREAMING: &str = "inferenceRequest.streaming";
    /// `inferenceLifecycle`: the host sends `inference/lifecycle`.
    pub const INFERENCE_LIFECYCLE: &str = "inferenceLifecycle";
    /// `contextHooks.beforeInference.observe`: the server sees the user message.
    pub const OBSERVE: &str = "contextHooks.beforeInference.observe";
    /// `contextHooks.beforeInference.inject.system`: injections into the system position (the
    /// most dangerous grant; deny by default).
    pub const INJECT_SYSTEM: &str = "contextHooks.beforeInference.inject.system";
    /// `contextHooks.beforeInference.inject.beforeUser`.
    pub const INJECT_BEFORE_USER: &str = "contextHooks.beforeInference.inject.beforeUser";
    /// `contextHooks.beforeInference.inject.afterUser`.
    pub const INJECT_AFTER_USER: &str = "contextHooks.beforeInference.inject.afterUser";
    /// `channels.register`: `channels/register`, `channels/changed`, `channels/list`.
    pub const CHANNELS_REGISTER: &str = "channels.register";
    /// `channels.lifecycle`: `channels/open`, `channels/close`.
    pub const CHANNELS_LIFECYCLE: &str = "channels.lifecycle";
    /// `channels.publish`: `channels/publish`.
    pub const CHANNELS_PUBLISH: &str = "channels.publish";
    /// `channels.incoming`: `channels/incoming` (a write: it injects and may wake the model).
    pub const CHANNELS_INCOMING: &str = "channels.incoming";
    /// `channels.streaming`: `channels/outgoing/chunk` and `channels/outgoing/complete`.
    pub const CHANNELS_STREAMING: &str = "channels.streaming";
    /// `channels.acknowledge`: `channels/acknowledge`.
    pub const CHANNELS_ACKNOWLEDGE: &str = "channels.acknowledge";
    /// `channels.typing`: `channels/typing`.
    pub const CHANNELS_TYPING: &str = "channels.typing";

    /// Every path of the vocabulary, in the spec's order.
    pub const VOCABULARY: [&str; 17] = [
        PUSH_EVENTS,
        TOOLS,
        MODEL_INFO,
        INFERENCE_REQUEST,
        INFERENCE_REQUEST_STREAMING,
        INFERENCE_LIFECYCLE,
        OBSERVE,
        INJECT_SYSTEM,
        INJECT_BEFORE_USER,
        INJECT_AFTER_USER,
        CHANNELS_REGISTER,
        CHANNELS_LIFECYCLE,
        CHANNELS_PUBLISH,
        CHANNELS_INCOMING,
        CHANNELS_STREAMING,
        CHANNELS_ACKNOWLEDGE,
        CHANNELS_TYPING,
    ];

    /// Whether `path` is one of the 17 paths (exactly: no trimming, no case folding).
    pub fn is_known(path: &str) -> bool {
        VOCABULARY.contains(&path)
    }
}

/// Root members of a manifest or advertisement that are not capabilities.
const NON_CAPABILITY_ROOT: [&str; 3] = ["version", "revision", "featureSets"];

/// The capability paths an `experimental.mcpl` object advertises, by a generic recursive walk.
///
/// - `true` at a node advertises the node's path and every path of `vocabulary` beneath it
///   (`"channels": true` advertises the seven `channels.*` leaves);
/// - an object at a node advertises the node's path itself (so `"inferenceRequest":
///   {"streaming": true}` advertises `inferenceRequest` too) and is walked;
/// - `false`, `null` and any other value advertise nothing;
/// - `version`, `revision` and `featureSets` at the root advertise nothing.
///
/// Segments are joined with `.` (a member name containing a dot is not split, so
/// `{"a.b": {"c": true}}` and `{"a": {"b.c": true}}` both advertise `a.b.c`). The result may
/// hold paths outside `vocabulary` (vendor extensions); intersect with the vocabulary to get
/// what is understood ([`understood_paths`]). `tools` is advertised by MCP's own
/// `capabilities.tools`, not here.
pub fn advertised_paths(mcpl: &Map<String, Value>, vocabulary: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (name, value) in mcpl {
        if !NON_CAPABILITY_ROOT.contains(&name.as_str()) {
            walk(name.clone(), value, vocabulary, &mut out);
        }
    }
    out
}

fn walk(path: String, value: &Value, vocabulary: &[&str], out: &mut BTreeSet<String>) {
    match value {
        Value::Bool(true) => {
            let prefix = format!("{path}.");
            out.extend(
                vocabulary.iter().filter(|p| p.starts_with(&prefix)).map(|p| (*p).to_owned()),
            );
            out.insert(path);
        }
        Value::Object(map) => {
            for (name, inner) in map {
                walk(format!("{path}.{name}"), inner, vocabulary, out);
            }
            out.insert(path);
        }
        _ => {}
    }
}

/// The vocabulary paths a server advertises: the walk of its `experimental.mcpl`, plus `tools`
/// iff MCP's `capabilities.tools` is present, restricted to [`paths::VOCABULARY`].
pub fn understood_paths(mcpl: &Map<String, Value>, mcp_tools: bool) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = advertised_paths(mcpl, &paths::VOCABULARY)
        .into_iter()
        .filter(|p| paths::is_known(p))
        .collect();
    if mcp_tools {
        set.insert(paths::TOOLS.to_owned());
    }
    set
}

/// Whether `pattern` matches `path`: the same number of `.`-separated segments, each equal or
/// the pattern's segment is exactly `*` (which matches any one segment). There is no `**` and
/// no partial-segment glob (`chan*` is a literal segment).
///
/// The same rule applies to feature-set names in `enabled` / `disabled`. It is the protocol's
/// rule for paths, not a glob: the character globs of name filters (tool lists, channel
/// narrowing) are [`glob_match`](super::glob::glob_match).
pub fn pattern_matches(pattern: &str, path: &str) -> bool {
    let mut pattern = pattern.split('.');
    let mut path = path.split('.');
    loop {
        match (pattern.next(), path.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) if p == "*" || p == s => {}
            _ => return false,
        }
    }
}

/// The capability grant of one connection: the `effectiveCapabilities` of the last accepted
/// `featureSets/update` request. An absent grant (no policy yet, or the member missing) allows
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapabilityGrant {
    patterns: Vec<String>,
}

/// Why a policy message's grant fields were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// A path appears in both `effectiveCapabilities` and `deniedCapabilities`: the whole policy
    /// message is malformed (fail closed).
    #[error("capability {path:?} is both granted and denied")]
    Overlap {
        /// The path in both lists.
        path: String,
    },
}

impl GrantError {
    /// The JSON-RPC error to answer the policy request with: `-32602` invalid params.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::invalid_params(self)
    }
}

impl CapabilityGrant {
    /// A grant of exactly these entries (each a path or a pattern with `*` segments).
    pub fn new<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        CapabilityGrant { patterns: entries.into_iter().map(Into::into).collect() }
    }

    /// The grant of nothing.
    pub fn none() -> Self {
        CapabilityGrant::default()
    }

    /// The grant a `featureSets/update` request establishes: `effective` (absent = nothing).
    /// `denied` is diagnostic only and never narrows or widens the grant, but a path listed in
    /// both makes the whole message malformed.
    pub fn from_policy(
        effective: Option<&[String]>,
        denied: Option<&[String]>,
    ) -> Result<Self, GrantError> {
        let effective = effective.unwrap_or_default();
        if let Some(path) = denied.unwrap_or_default().iter().find(|d| effective.contains(d)) {
            return Err(GrantError::Overlap { path: path.clone() });
        }
        Ok(CapabilityGrant::new(effective.iter().cloned()))
    }

    /// The entries as sent on the wire.
    pub fn entries(&self) -> &[String] {
        &self.patterns
    }

    /// Whether the grant allows nothing at all.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether capability `path` is granted: some entry matches it by [`pattern_matches`].
    pub fn is_granted(&self, path: &str) -> bool {
        self.patterns.iter().any(|p| pattern_matches(p, path))
    }

    /// The vocabulary paths this grant allows.
    pub fn granted_vocabulary(&self) -> BTreeSet<&'static str> {
        paths::VOCABULARY.iter().copied().filter(|p| self.is_granted(p)).collect()
    }

    /// Whether any `contextHooks.beforeInference.*` leaf is granted (the server is then called
    /// on `context/beforeInference`, with `userMessage: null` unless `observe` is granted).
    pub fn any_before_inference(&self) -> bool {
        [paths::OBSERVE, paths::INJECT_SYSTEM, paths::INJECT_BEFORE_USER, paths::INJECT_AFTER_USER]
            .iter()
            .any(|p| self.is_granted(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn star_matches_exactly_one_segment() {
        assert!(pattern_matches("channels.*", "channels.publish"));
        assert!(!pattern_matches("channels.*", "channels.publish.x"));
        assert!(!pattern_matches("channels.*", "channels"));
        assert!(!pattern_matches("contextHooks.*", paths::INJECT_SYSTEM));
        assert!(!pattern_matches("contextHooks.*", paths::OBSERVE));
        assert!(pattern_matches("contextHooks.*.*", paths::OBSERVE));
        assert!(pattern_matches("contextHooks.*.inject.*", paths::INJECT_SYSTEM));
        assert!(pattern_matches("*", "pushEvents"));
        assert!(pattern_matches("*", "tools"));
        assert!(!pattern_matches("*", "channels.publish"));
        assert!(!pattern_matches("**", "channels.publish"));
        assert!(!pattern_matches("chan*.publish", "channels.publish"));
        assert!(!pattern_matches("channels.publish", "channels.publish "));
        assert!(!pattern_matches("Channels.publish", "channels.publish"));
        assert!(pattern_matches("channels.publish", "channels.publish"));
    }

    #[test]
    fn a_bare_parent_grants_nothing_beneath_it() {
        let grant = CapabilityGrant::new(["channels", "contextHooks", "inferenceRequest"]);
        assert!(grant.granted_vocabulary().contains(paths::INFERENCE_REQUEST));
        assert!(!grant.is_granted(paths::INFERENCE_REQUEST_STREAMING));
        for leaf in paths::VOCABULARY.iter().filter(|p| p.starts_with("channels.")) {
            assert!(!grant.is_granted(leaf), "{leaf}");
        }
        assert!(!grant.any_before_inference());
        assert!(grant.is_granted("channels"));
    }

    #[test]
    fn absent_grant_allows_nothing() {
        let grant = CapabilityGrant::from_policy(None, None).unwrap();
        assert!(grant.is_empty());
        assert!(paths::VOCABULARY.iter().all(|p| !grant.is_granted(p)));
        let empty = CapabilityGrant::from_policy(Some(&[]), Some(&["tools".to_owned()])).unwrap();
        assert!(empty.granted_vocabulary().is_empty());
    }

    #[test]
    fn denied_is_diagnostic_but_overlap_is_malformed() {
        let eff = vec!["pushEvents".to_owned(), "channels.*".to_owned()];
        let denied = vec!["channels.publish".to_owned()];
        // The pattern covers the denied path, but the lists do not overlap literally: denied
        // is diagnostic only and does not subtract.
        let g = CapabilityGrant::from_policy(Some(&eff), Some(&denied)).unwrap();
        assert!(g.is_granted(paths::CHANNELS_PUBLISH));
        let denied = vec!["pushEvents".to_owned()];
        let e = CapabilityGrant::from_policy(Some(&eff), Some(&denied)).unwrap_err();
        assert_eq!(e, GrantError::Overlap { path: "pushEvents".to_owned() });
        assert_eq!(e.to_error_object().code, crate::jsonrpc::ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn system_injection_is_separately_grantable() {
        let g = CapabilityGrant::new(["contextHooks.beforeInference.inject.*"]);
        assert!(g.is_granted(paths::INJECT_SYSTEM));
        assert!(!g.is_granted(paths::OBSERVE));
        assert!(g.any_before_inference());
        let g = CapabilityGrant::new([paths::INJECT_AFTER_USER, paths::OBSERVE]);
        assert!(!g.is_granted(paths::INJECT_SYSTEM));
    }

    #[test]
    fn advertisement_walk_is_generic() {
        let m = obj(json!({
            "version": "0.5", "revision": "sha256:x",
            "featureSets": {"f": {"description": "d", "uses": ["tools"]}},
            "pushEvents": true, "modelInfo": false, "inferenceLifecycle": null,
            "contextHooks": {"beforeInference": true},
            "inferenceRequest": {"streaming": true},
            "channels": {"register": true, "publish": false},
            "vendorExt": {"deep": {"deeper": true}}
        }));
        let adv = advertised_paths(&m, &paths::VOCABULARY);
        let want: BTreeSet<String> = [
            "pushEvents",
            "contextHooks",
            "contextHooks.beforeInference",
            paths::OBSERVE,
            paths::INJECT_SYSTEM,
            paths::INJECT_BEFORE_USER,
            paths::INJECT_AFTER_USER,
            "inferenceRequest",
            "inferenceRequest.streaming",
            "channels",
            "channels.register",
            "vendorExt",
            "vendorExt.deep",
            "vendorExt.deep.deeper",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        assert_eq!(adv, want);
        let understood = understood_paths(&m, true);
        assert!(understood.contains("tools"));
        assert!(!understood.contains("vendorExt.deep.deeper"));
        assert!(!understood.contains("channels"));
        assert_eq!(understood.len(), 9);
        // A leaf the vocabulary does not know yet is still walked (no list of nestable keys).
        let m = obj(json!({"channels": {"future": {"sub": true}}, "pushEvents": {"x": 1}}));
        let adv = advertised_paths(&m, &paths::VOCABULARY);
        assert!(adv.contains("channels.future.sub"));
        assert!(adv.contains("pushEvents"));
        assert!(!understood_paths(&m, false).contains("channels.publish"));
    }

    #[test]
    fn channels_true_advertises_all_seven_leaves() {
        let adv = understood_paths(&obj(json!({"channels": true})), false);
        assert_eq!(adv.len(), 7);
        assert!(adv.iter().all(|p| p.starts_with("channels.")));
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z]{1,6}", Just("*".to_owned())]
    }

    proptest! {
        #[test]
        fn matching_needs_equal_segment_counts(
            pattern in prop::collection::vec(segment(), 1..5),
            path in prop::collection::vec("[a-z]{1,6}", 1..5),
        ) {
            let (p, s) = (pattern.join("."), path.join("."));
            let matched = pattern_matches(&p, &s);
            let expected = pattern.len() == path.len()
                && pattern.iter().zip(&path).all(|(a, b)| a == "*" || a == b);
            prop_assert_eq!(matched, expected);
            if pattern.len() != path.len() {
                prop_assert!(!matched);
            }
        }

        #[test]
        fn a_grant_is_the_union_of_its_entries(
            entries in prop::collection::vec(prop::sample::select(paths::VOCABULARY.to_vec()), 0..6),
            probe in prop::sample::select(paths::VOCABULARY.to_vec()),
        ) {
            let grant = CapabilityGrant::new(entries.iter().copied());
            prop_assert_eq!(grant.is_granted(probe), entries.contains(&probe));
            // A grant of leaves never grants a parent or a child path.
            let child = format!("{probe}.x");
            prop_assert!(!grant.is_granted(&child));
        }
    }
}
