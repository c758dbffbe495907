//! `experimental.mcpl` in both directions of `initialize`: the server manifest ([`Manifest`])
//! and the host advertisement ([`HostAdvertisement`]), with the typed capability objects they
//! share and the feature-set declarations ([`FeatureSets`]).
//!
//! A [`Manifest`] keeps the JSON object exactly as received (or built): typed views are read
//! from it on demand, and nothing is lost on a round trip, which the revision digest needs
//! (a `null` or `false` member is content).
//!
//! ```
//! use mcpl_core::mcpl::manifest::{Capability, ChannelsCapability, FeatureSet, Manifest};
//!
//! let manifest = Manifest::new()
//!     .with_push_events(true)
//!     .with_channels(Capability::Detailed(ChannelsCapability::default()
//!         .with_register(true)
//!         .with_publish(true)))
//!     .with_feature_set("demo.messaging", FeatureSet::new(
//!         "Demo",
//!         ["channels.publish", "pushEvents"],
//!     ))
//!     .with_computed_revision()
//!     .unwrap();
//! assert_eq!(manifest.version(), Some("0.5"));
//! assert!(manifest.understood_paths(false).contains("channels.publish"));
//! assert!(manifest.revision().unwrap().is_well_formed());
//! ```

use derive_setters::Setters;
use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::capability::{self, paths};
use super::digest::{self, DigestError, Revision};
use super::tags::TagOntology;

/// The MCPL version this SDK speaks.
pub const MCPL_VERSION: &str = "0.5";
/// The key of MCPL in `capabilities.experimental`.
pub const EXPERIMENTAL_KEY: &str = "mcpl";

/// A capability node: `true` (everything beneath it), `false` (nothing), or the detailed object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Capability<T> {
    /// The boolean shorthand: `true` advertises every leaf beneath the node.
    Flag(bool),
    /// The detailed form.
    Detailed(T),
}

/// `contextHooks`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ContextHooksCapability {
    /// `contextHooks.beforeInference`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_inference: Option<Capability<BeforeInferenceCapability>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `contextHooks.beforeInference`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct BeforeInferenceCapability {
    /// Reading the user message (`...observe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<bool>,
    /// Injecting context (`...inject.*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inject: Option<Capability<InjectCapability>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `contextHooks.beforeInference.inject`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InjectCapability {
    /// Into the system position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<bool>,
    /// Before the user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_user: Option<bool>,
    /// After the user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_user: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `inferenceRequest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InferenceRequestCapability {
    /// `inferenceRequest.streaming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `channels`: an object of seven booleans (not a boolean itself, except as shorthand).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ChannelsCapability {
    /// `channels.register`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub register: Option<bool>,
    /// `channels.lifecycle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<bool>,
    /// `channels.publish`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<bool>,
    /// `channels.incoming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming: Option<bool>,
    /// `channels.streaming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// `channels.acknowledge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledge: Option<bool>,
    /// `channels.typing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typing: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The capability members of `experimental.mcpl`, typed. Both the manifest and the host
/// advertisement carry them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct McplCapabilities {
    /// `pushEvents`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_events: Option<bool>,
    /// `contextHooks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_hooks: Option<Capability<ContextHooksCapability>>,
    /// `inferenceLifecycle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_lifecycle: Option<bool>,
    /// `inferenceRequest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_request: Option<Capability<InferenceRequestCapability>>,
    /// `modelInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_info: Option<bool>,
    /// `channels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Capability<ChannelsCapability>>,
}

impl McplCapabilities {
    /// Reads the known members of an `experimental.mcpl` object, member by member: a member
    /// of the wrong type reads as absent instead of failing the whole object.
    pub fn from_map_lenient(map: &Map<String, Value>) -> Self {
        McplCapabilities {
            push_events: member(map, "pushEvents"),
            context_hooks: member(map, "contextHooks"),
            inference_lifecycle: member(map, "inferenceLifecycle"),
            inference_request: member(map, "inferenceRequest"),
            model_info: member(map, "modelInfo"),
            channels: member(map, "channels"),
        }
    }
}

fn member<T: DeserializeOwned>(map: &Map<String, Value>, key: &str) -> Option<T> {
    map.get(key).and_then(|v| T::deserialize(v).ok())
}

/// What a host supports: `experimental.mcpl` in the `initialize` request.
///
/// Feature configuration is not here (it follows in `featureSets/update`); `featureSets` is a
/// boolean saying the host understands feature sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct HostAdvertisement {
    /// The MCPL version (`"0.5"`).
    pub version: String,
    /// What the host supports.
    #[serde(flatten)]
    pub capabilities: McplCapabilities,
    /// Whether the host understands feature sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_sets: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HostAdvertisement {
    /// An advertisement of version 0.5 with the given capabilities and feature sets supported.
    pub fn new(capabilities: McplCapabilities) -> Self {
        HostAdvertisement {
            version: MCPL_VERSION.to_owned(),
            capabilities,
            feature_sets: Some(true),
            extra: Map::new(),
        }
    }

    /// Reads `experimental.mcpl` from an `initialize` request's capabilities, if present and an
    /// object (any other value means the peer does not speak MCPL).
    pub fn from_experimental(experimental: Option<&Map<String, Value>>) -> Option<Self> {
        let value = experimental?.get(EXPERIMENTAL_KEY)?;
        value.is_object().then(|| Self::deserialize(value).ok()).flatten()
    }
}

/// One feature set's declared `uses`: the list of capability paths, or whatever was sent
/// instead (kept, so validation can disable the set with `invalid_uses`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Uses {
    /// A list of strings.
    Paths(Vec<String>),
    /// Anything else (not an array, or an array with non-strings).
    Malformed(Value),
}

/// A feature set declaration (`featureSets.<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct FeatureSet {
    /// Free text (required by the schema; absent reads as empty).
    #[serde(default)]
    pub description: String,
    /// The capability paths the set needs (required by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<Uses>,
    /// Whether the set supports `state/rollback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<bool>,
    /// The producer's tag ontology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag_ontology: Option<TagOntology>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FeatureSet {
    /// A declaration with a description and its `uses`.
    pub fn new<I, S>(description: impl Into<String>, uses: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        FeatureSet {
            description: description.into(),
            uses: Some(Uses::Paths(uses.into_iter().map(Into::into).collect())),
            rollback: None,
            tag_ontology: None,
            extra: Map::new(),
        }
    }

    /// The `uses` list if it is valid: present, non-empty, and only vocabulary paths (exact
    /// strings). `None` means the set must be disabled with reason `invalid_uses`.
    pub fn valid_uses(&self) -> Option<&[String]> {
        match &self.uses {
            Some(Uses::Paths(p)) if !p.is_empty() && p.iter().all(|s| paths::is_known(s)) => {
                Some(p)
            }
            _ => None,
        }
    }
}

/// The feature sets a server declares, keyed by name.
///
/// On the wire this is an object keyed by name. On input the array-of-`{name, ...}` form other
/// libraries send is accepted too; it is always written as an object.
///
/// Each declaration is read on its own ([`FeatureSets::read`]): one that does not parse is
/// left out and reported, and the others stand. Deserializing a `FeatureSets` with serde is the
/// strict form: any unusable declaration fails it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeatureSets(pub BTreeMap<String, FeatureSet>);

/// Why a feature-set declaration was left out when `featureSets` was read.
///
/// # Examples
///
/// ```
/// use mcpl_core::mcpl::manifest::{FeatureSetError, FeatureSets};
/// use serde_json::json;
///
/// let read = FeatureSets::read(&json!({
///     "alerts": {"description": "Alerts", "uses": ["pushEvents"]},
///     "notes": {"description": "Notes", "uses": ["tools"], "rollback": "yes"}
/// }))
/// .unwrap();
/// assert!(read.sets.get("alerts").is_some());
/// let left_out = &read.invalid[0];
/// assert_eq!(left_out.name, "notes");
/// assert!(matches!(left_out.error, FeatureSetError::Malformed(_)));
/// assert_eq!(left_out.error.kind(), "malformed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FeatureSetError {
    /// The declaration does not parse: not an object, or a member of the wrong type
    /// (`"description": 5`, `"rollback": "yes"`).
    #[error("the declaration does not parse")]
    Malformed(#[source] serde_json::Error),
    /// The array form declares the name more than once: every declaration of it is left out
    /// (fail closed rather than guess which one counts).
    #[error("the name is declared more than once")]
    Duplicate,
    /// An item of the array form has no string `name`.
    #[error("an item of the array form has no name")]
    Nameless,
}

impl FeatureSetError {
    /// A short stable name: `malformed`, `duplicate` or `nameless`.
    pub fn kind(&self) -> &'static str {
        match self {
            FeatureSetError::Malformed(_) => "malformed",
            FeatureSetError::Duplicate => "duplicate",
            FeatureSetError::Nameless => "nameless",
        }
    }
}

/// A feature-set declaration left out when `featureSets` was read, and why.
#[derive(Debug, thiserror::Error)]
#[error("feature set {name:?} is left out")]
#[non_exhaustive]
pub struct InvalidFeatureSet {
    /// The set's name; for an array-form item without one, `#` and its index.
    pub name: String,
    /// Why it was left out.
    #[source]
    pub error: FeatureSetError,
}

impl InvalidFeatureSet {
    /// An `InvalidFeatureSet` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(name: impl Into<String>, error: FeatureSetError) -> Self {
        Self { name: name.into(), error }
    }
}

/// `featureSets` read declaration by declaration: see [`FeatureSets::read`].
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct FeatureSetsRead {
    /// The declarations that parse.
    pub sets: FeatureSets,
    /// The ones left out, in the order they appeared.
    pub invalid: Vec<InvalidFeatureSet>,
}

impl FeatureSets {
    /// The declaration named `name`.
    pub fn get(&self, name: &str) -> Option<&FeatureSet> {
        self.0.get(name)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Reads a `featureSets` value one declaration at a time: a declaration that does not
    /// parse is left out (reported in [`FeatureSetsRead::invalid`]) and the others stand.
    ///
    /// # Errors
    ///
    /// When `value` is neither an object keyed by name nor the array form.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::FeatureSets;
    /// use serde_json::json;
    ///
    /// let read = FeatureSets::read(&json!({
    ///     "alerts": {"description": "Alerts", "uses": ["pushEvents"]},
    ///     "broken": {"description": 5, "uses": ["tools"]}
    /// }))
    /// .unwrap();
    /// assert_eq!(read.sets.names().collect::<Vec<_>>(), ["alerts"]);
    /// assert_eq!(read.invalid[0].name, "broken");
    /// assert!(FeatureSets::read(&json!("alerts")).is_err());
    /// ```
    pub fn read(value: &Value) -> Result<FeatureSetsRead, serde_json::Error> {
        use serde::de::Error;
        let mut read = FeatureSetsRead::default();
        let parse = |name: String, v: &Value, read: &mut FeatureSetsRead| {
            match FeatureSet::deserialize(v) {
                Ok(set) => {
                    read.sets.0.insert(name, set);
                }
                Err(e) => read
                    .invalid
                    .push(InvalidFeatureSet { name, error: FeatureSetError::Malformed(e) }),
            }
        };
        match value {
            Value::Object(map) => {
                for (name, v) in map {
                    parse(name.clone(), v, &mut read);
                }
            }
            Value::Array(items) => {
                let mut seen = BTreeMap::<&str, usize>::new();
                for item in items {
                    if let Some(name) = item.get("name").and_then(Value::as_str) {
                        *seen.entry(name).or_default() += 1;
                    }
                }
                for (index, item) in items.iter().enumerate() {
                    let name = item.get("name").and_then(Value::as_str);
                    let Some(name) = name else {
                        let name = format!("#{index}");
                        read.invalid
                            .push(InvalidFeatureSet { name, error: FeatureSetError::Nameless });
                        continue;
                    };
                    if seen.get(name).is_some_and(|n| *n > 1) {
                        if !read.invalid.iter().any(|i| i.name == name) {
                            let error = FeatureSetError::Duplicate;
                            read.invalid.push(InvalidFeatureSet { name: name.to_owned(), error });
                        }
                        continue;
                    }
                    let mut set = item.clone();
                    if let Some(map) = set.as_object_mut() {
                        map.remove("name");
                    }
                    parse(name.to_owned(), &set, &mut read);
                }
            }
            _ => {
                return Err(serde_json::Error::custom(
                    "featureSets must be an object keyed by name",
                ));
            }
        }
        Ok(read)
    }
}

impl Serialize for FeatureSets {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for FeatureSets {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let read = FeatureSets::read(&Value::deserialize(d)?).map_err(D::Error::custom)?;
        match read.invalid.into_iter().next() {
            None => Ok(read.sets),
            Some(invalid) => {
                let detail = match &invalid.error {
                    FeatureSetError::Malformed(e) => format!("{invalid}: {e}"),
                    other => format!("{invalid}: {other}"),
                };
                Err(D::Error::custom(detail))
            }
        }
    }
}

/// The server manifest: `experimental.mcpl` in the `initialize` result, and the result of
/// `mcpl/manifest`. Holds the JSON object verbatim; see the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Manifest(Map<String, Value>);

impl Default for Manifest {
    fn default() -> Self {
        Manifest::new()
    }
}

/// The manifest was not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the MCPL manifest is not a JSON object")]
pub struct NotAnObject;

impl Manifest {
    /// A manifest with `version: "0.5"` and nothing else.
    pub fn new() -> Self {
        let mut map = Map::new();
        map.insert("version".to_owned(), Value::String(MCPL_VERSION.to_owned()));
        Manifest(map)
    }

    /// Wraps a JSON object as received.
    pub fn from_map(map: Map<String, Value>) -> Self {
        Manifest(map)
    }

    /// Wraps a JSON value, which must be an object.
    pub fn from_value(value: Value) -> Result<Self, NotAnObject> {
        match value {
            Value::Object(map) => Ok(Manifest(map)),
            _ => Err(NotAnObject),
        }
    }

    /// Reads `experimental.mcpl` from an `initialize` result's capabilities: `None` if absent
    /// (a plain MCP server), an error if present but not an object.
    pub fn from_experimental(
        experimental: Option<&Map<String, Value>>,
    ) -> Option<Result<Self, NotAnObject>> {
        experimental?.get(EXPERIMENTAL_KEY).map(|v| Manifest::from_value(v.clone()))
    }

    /// The JSON object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The JSON object, owned.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }

    /// The manifest as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }

    /// `version`, if it is a string.
    pub fn version(&self) -> Option<&str> {
        self.0.get("version").and_then(Value::as_str)
    }

    /// `revision`, if it is a string (untrusted: compare for equality only).
    pub fn revision(&self) -> Option<Revision> {
        self.0.get("revision").and_then(Value::as_str).map(Revision::new)
    }

    /// The typed capability members (read leniently, member by member).
    pub fn capabilities(&self) -> McplCapabilities {
        McplCapabilities::from_map_lenient(&self.0)
    }

    /// The feature sets that parse: `None` if `featureSets` is absent, an error if it is
    /// neither an object nor the array form. A declaration that does not parse is left out and
    /// the others stand; [`read_feature_sets`](Self::read_feature_sets) also says which were
    /// left out, and why.
    pub fn feature_sets(&self) -> Option<Result<FeatureSets, serde_json::Error>> {
        self.read_feature_sets().map(|read| read.map(|read| read.sets))
    }

    /// `featureSets` read declaration by declaration ([`FeatureSets::read`]): `None` if
    /// absent.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::mcpl::manifest::Manifest;
    /// use serde_json::json;
    ///
    /// let manifest = Manifest::from_value(json!({"version": "0.5", "featureSets": {
    ///     "alerts": {"description": "Alerts", "uses": ["pushEvents"]},
    ///     "notes": {"description": "Notes", "uses": ["tools"], "rollback": "yes"}
    /// }}))
    /// .unwrap();
    /// let read = manifest.read_feature_sets().unwrap().unwrap();
    /// assert_eq!(read.sets.names().collect::<Vec<_>>(), ["alerts"]);
    /// assert_eq!(read.invalid[0].name, "notes");
    /// // The sets that parse, alone.
    /// assert!(manifest.feature_sets().unwrap().unwrap().get("alerts").is_some());
    /// ```
    pub fn read_feature_sets(&self) -> Option<Result<FeatureSetsRead, serde_json::Error>> {
        self.0.get("featureSets").map(FeatureSets::read)
    }

    /// The capability paths of the vocabulary this manifest advertises (generic walk, `tools`
    /// iff MCP `capabilities.tools` is present): see [`capability::understood_paths`].
    pub fn understood_paths(&self, mcp_tools: bool) -> BTreeSet<String> {
        capability::understood_paths(&self.0, mcp_tools)
    }

    /// Sets a member (a capability, a vendor extension, ...) to a JSON value.
    ///
    /// To build a member from a Rust value that may hold floats, check it first with
    /// [`digest::revision_of`]: `serde_json` turns NaN and infinities into `null`.
    #[must_use]
    pub fn with_member(mut self, name: impl Into<String>, value: Value) -> Self {
        self.0.insert(name.into(), value);
        self
    }

    /// Sets a member from one of the typed capability values, which hold no floats and only
    /// string keys, so they always serialize.
    fn with_typed(self, name: &str, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.with_member(name, value)
    }

    /// Sets `pushEvents`.
    #[must_use]
    pub fn with_push_events(self, on: bool) -> Self {
        self.with_typed("pushEvents", on)
    }

    /// Sets `contextHooks`.
    #[must_use]
    pub fn with_context_hooks(self, hooks: Capability<ContextHooksCapability>) -> Self {
        self.with_typed("contextHooks", hooks)
    }

    /// Sets `inferenceLifecycle`.
    #[must_use]
    pub fn with_inference_lifecycle(self, on: bool) -> Self {
        self.with_typed("inferenceLifecycle", on)
    }

    /// Sets `inferenceRequest`.
    #[must_use]
    pub fn with_inference_request(self, cap: Capability<InferenceRequestCapability>) -> Self {
        self.with_typed("inferenceRequest", cap)
    }

    /// Sets `modelInfo`.
    #[must_use]
    pub fn with_model_info(self, on: bool) -> Self {
        self.with_typed("modelInfo", on)
    }

    /// Sets `channels`.
    #[must_use]
    pub fn with_channels(self, cap: Capability<ChannelsCapability>) -> Self {
        self.with_typed("channels", cap)
    }

    /// Adds (or replaces) a feature set declaration. If `featureSets` is not an object (a
    /// manifest read from a non-conforming peer), it is replaced by one.
    #[must_use]
    pub fn with_feature_set(mut self, name: impl Into<String>, set: FeatureSet) -> Self {
        let set = serde_json::to_value(set).unwrap_or(Value::Null);
        let entry = self.0.entry("featureSets").or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(sets) = entry {
            sets.insert(name.into(), set);
        }
        self
    }

    /// The canonical revision of this manifest (ignoring any `revision` member it holds).
    pub fn compute_revision(&self) -> Result<Revision, DigestError> {
        digest::revision(&Value::Object(self.0.clone()))
    }

    /// The manifest with `revision` set to its computed digest.
    pub fn with_computed_revision(mut self) -> Result<Self, DigestError> {
        let r = self.compute_revision()?;
        self.0.insert("revision".to_owned(), Value::String(r.into()));
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manifest_round_trips_verbatim() {
        let v = json!({"version": "0.5", "pushEvents": false, "modelInfo": null,
            "channels": true, "vendor": {"x": [1, 2.5]}, "featureSets": {}});
        let m: Manifest = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
        assert_eq!(m.version(), Some("0.5"));
        assert_eq!(m.compute_revision().unwrap(), digest::revision(&v).unwrap());
        let caps = m.capabilities();
        assert_eq!(caps.push_events, Some(false));
        assert_eq!(caps.model_info, None);
        assert_eq!(caps.channels, Some(Capability::Flag(true)));
        assert!(serde_json::from_value::<Manifest>(json!([1])).is_err());
    }

    #[test]
    fn typed_capabilities_read_both_forms() {
        let m = Manifest::from_value(json!({"version": "0.5",
            "contextHooks": {"beforeInference": {"observe": true,
                "inject": {"system": false, "beforeUser": true, "future": 1}}},
            "inferenceRequest": {"streaming": true}, "channels": {"register": true},
            "inferenceLifecycle": "yes"}))
        .unwrap();
        let caps = m.capabilities();
        let Some(Capability::Detailed(hooks)) = caps.context_hooks else { panic!() };
        let Some(Capability::Detailed(bi)) = hooks.before_inference else { panic!() };
        assert_eq!(bi.observe, Some(true));
        let Some(Capability::Detailed(inject)) = bi.inject else { panic!() };
        assert_eq!(
            (inject.system, inject.before_user, inject.after_user),
            (Some(false), Some(true), None)
        );
        assert_eq!(inject.extra.get("future"), Some(&json!(1)));
        // A wrong-typed member reads as absent; the rest still reads.
        assert_eq!(caps.inference_lifecycle, None);
        assert!(
            matches!(caps.inference_request, Some(Capability::Detailed(ref r)) if r.streaming == Some(true))
        );
        let understood = m.understood_paths(false);
        assert!(understood.contains(paths::INFERENCE_REQUEST));
        assert!(understood.contains(paths::INJECT_BEFORE_USER));
        assert!(!understood.contains(paths::INJECT_SYSTEM));
    }

    #[test]
    fn builder_and_revision() {
        let m = Manifest::new()
            .with_push_events(true)
            .with_context_hooks(Capability::Detailed(ContextHooksCapability {
                before_inference: Some(Capability::Flag(true)),
                ..Default::default()
            }))
            .with_inference_lifecycle(true)
            .with_channels(Capability::Detailed(ChannelsCapability {
                register: Some(true),
                publish: Some(true),
                incoming: Some(true),
                ..Default::default()
            }))
            .with_feature_set(
                "demo.messaging",
                FeatureSet::new(
                    "Demo",
                    ["channels.publish", "channels.incoming", "pushEvents", "tools"],
                ),
            );
        // The spec's worked example.
        assert_eq!(
            m.compute_revision().unwrap().as_str(),
            "sha256:_YZTS0h1tqTAMZI6eElCszSQE2WNx3xhAhmgUvNI9H4"
        );
        let with = m.clone().with_computed_revision().unwrap();
        assert_eq!(with.revision(), Some(m.compute_revision().unwrap()));
        assert_eq!(with.compute_revision().unwrap(), m.compute_revision().unwrap());
        let v =
            Manifest::new().with_model_info(true).with_inference_request(Capability::Flag(false));
        assert_eq!(
            v.to_value(),
            json!({"version": "0.5", "modelInfo": true, "inferenceRequest": false})
        );
    }

    #[test]
    fn feature_sets_accept_both_forms() {
        let obj: FeatureSets = serde_json::from_value(json!({
            "memory.retrieval": {"description": "d", "uses": ["tools"], "rollback": true, "x": 1}
        }))
        .unwrap();
        let arr: FeatureSets = serde_json::from_value(json!([
            {"name": "memory.retrieval", "description": "d", "uses": ["tools"], "rollback": true, "x": 1}
        ]))
        .unwrap();
        assert_eq!(obj, arr);
        assert_eq!(
            serde_json::to_value(&arr).unwrap(),
            json!({"memory.retrieval": {"description": "d", "uses": ["tools"], "rollback": true, "x": 1}})
        );
        let dup = json!([{"name": "a", "description": "d"}, {"name": "a", "description": "e"}]);
        assert!(serde_json::from_value::<FeatureSets>(dup).is_err());
        assert!(serde_json::from_value::<FeatureSets>(json!([{"description": "d"}])).is_err());
        assert!(serde_json::from_value::<FeatureSets>(json!("x")).is_err());
        let m = Manifest::from_value(json!({"version": "0.5", "featureSets": [{"name": "f", "description": "d", "uses": ["tools"]}]})).unwrap();
        assert_eq!(m.feature_sets().unwrap().unwrap().names().collect::<Vec<_>>(), ["f"]);
    }

    #[test]
    fn one_malformed_set_leaves_the_others_standing() {
        let m = Manifest::from_value(json!({"version": "0.5", "featureSets": {
            "alerts": {"description": "Alerts", "uses": ["pushEvents"]},
            "described": {"description": 5, "uses": ["tools"]},
            "notes": {"description": "Notes", "uses": ["tools"], "rollback": "yes"},
            "scalar": true,
            "store": {"description": "Store", "uses": ["tools"], "rollback": true}
        }}))
        .unwrap();
        let read = m.read_feature_sets().unwrap().unwrap();
        assert_eq!(read.sets.names().collect::<Vec<_>>(), ["alerts", "store"]);
        let invalid: Vec<(&str, &str)> =
            read.invalid.iter().map(|i| (i.name.as_str(), i.error.kind())).collect();
        assert_eq!(
            invalid,
            [("described", "malformed"), ("notes", "malformed"), ("scalar", "malformed")]
        );
        // The cause is the source, not the text.
        let first = &read.invalid[0];
        assert_eq!(first.to_string(), r#"feature set "described" is left out"#);
        let cause = std::error::Error::source(first).unwrap();
        assert!(std::error::Error::source(cause).unwrap().to_string().contains("invalid type"));
        assert_eq!(m.feature_sets().unwrap().unwrap(), read.sets);
        // The strict serde form refuses the whole value.
        assert!(serde_json::from_value::<FeatureSets>(m.as_map()["featureSets"].clone()).is_err());

        // The array form: a duplicated name is left out entirely, a nameless item too.
        let read = FeatureSets::read(&json!([
            {"name": "a", "description": "d", "uses": ["tools"]},
            {"name": "b", "description": "first", "uses": ["tools"]},
            {"name": "b", "description": "second", "uses": ["tools"]},
            {"description": "nameless", "uses": ["tools"]},
            {"name": "c", "description": "d", "rollback": 1}
        ]))
        .unwrap();
        assert_eq!(read.sets.names().collect::<Vec<_>>(), ["a"]);
        let invalid: Vec<(&str, &str)> =
            read.invalid.iter().map(|i| (i.name.as_str(), i.error.kind())).collect();
        assert_eq!(invalid, [("b", "duplicate"), ("#3", "nameless"), ("c", "malformed")]);
        assert!(FeatureSets::read(&json!(5)).is_err());
    }

    #[test]
    fn valid_uses_is_strict() {
        let set = |uses: Value| -> FeatureSet {
            serde_json::from_value(json!({"description": "d", "uses": uses})).unwrap()
        };
        assert!(set(json!(["tools", "pushEvents"])).valid_uses().is_some());
        assert!(set(json!([])).valid_uses().is_none());
        assert!(set(json!("tools")).valid_uses().is_none());
        assert!(set(json!(["tools", 1])).valid_uses().is_none());
        assert!(set(json!(["channels.publish "])).valid_uses().is_none());
        assert!(set(json!(["stateUpdate"])).valid_uses().is_none());
        assert!(set(json!(["channels"])).valid_uses().is_none());
        let absent: FeatureSet = serde_json::from_value(json!({"description": "d"})).unwrap();
        assert!(absent.valid_uses().is_none());
        // Malformed `uses` is kept verbatim.
        let s = set(json!(["tools", 1]));
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"description": "d", "uses": ["tools", 1]})
        );
    }

    #[test]
    fn host_advertisement() {
        let v = json!({"version": "0.5", "pushEvents": true, "contextHooks": {"beforeInference": true},
            "channels": {"register": true, "typing": false}, "featureSets": true, "vendor": {"a": 1}});
        let h: HostAdvertisement = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(h.feature_sets, Some(true));
        assert_eq!(h.capabilities.push_events, Some(true));
        assert_eq!(h.extra.get("vendor"), Some(&json!({"a": 1})));
        assert!(!h.extra.contains_key("pushEvents"));
        assert_eq!(serde_json::to_value(&h).unwrap(), v);
        let mut exp = Map::new();
        exp.insert("mcpl".to_owned(), v);
        assert_eq!(HostAdvertisement::from_experimental(Some(&exp)), Some(h));
        exp.insert("mcpl".to_owned(), json!(true));
        assert_eq!(HostAdvertisement::from_experimental(Some(&exp)), None);
        assert_eq!(HostAdvertisement::from_experimental(None), None);
        let h = HostAdvertisement::new(McplCapabilities {
            model_info: Some(true),
            ..Default::default()
        });
        assert_eq!(
            serde_json::to_value(&h).unwrap(),
            json!({"version": "0.5", "modelInfo": true, "featureSets": true})
        );
    }

    #[test]
    fn manifest_from_experimental() {
        let mut exp = Map::new();
        assert!(Manifest::from_experimental(Some(&exp)).is_none());
        exp.insert("mcpl".to_owned(), json!(true));
        assert_eq!(Manifest::from_experimental(Some(&exp)), Some(Err(NotAnObject)));
        exp.insert("mcpl".to_owned(), json!({"version": "0.5"}));
        assert_eq!(Manifest::from_experimental(Some(&exp)).unwrap().unwrap(), Manifest::new());
    }
}
