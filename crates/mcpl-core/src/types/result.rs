//! Result basics: the 2026-07-28 `resultType`, cache hints, empty and paginated results,
//! `input_required` results with their input requests and responses, and [`Outcome`].

use derive_setters::Setters;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::elicitation::ElicitResult;
use super::envelope::{ElicitInputRequest, ListRootsInputRequest, SamplingInputRequest};
use super::meta::Meta;
use super::roots::ListRootsResult;
use super::sampling::CreateMessageResult;
use super::serde_util::{from_value, read_str, str_member, tagged_union};
use super::tasks::CreateTaskResult;

/// How a 2026-07-28 result ends the request: `complete` or `input_required`.
///
/// Unknown values are kept in [`ResultType::Other`]. Results of revisions before 2026-07-28 have
/// no `resultType`; every result type's `result_type()` method reads an absent value as
/// [`ResultType::Complete`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum ResultType {
    /// The request is done (`complete`).
    #[default]
    Complete,
    /// The server needs input from the client before it can finish (`input_required`).
    InputRequired,
    /// A value this SDK does not know.
    Other(String),
}

impl ResultType {
    /// The wire form.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Other(s) => s,
        }
    }

    fn input_required() -> Self {
        ResultType::InputRequired
    }
}

impl From<&str> for ResultType {
    fn from(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        read_str(deserializer, |s| Ok::<_, std::convert::Infallible>(ResultType::from(s)))
    }
}

/// Who may reuse a cacheable 2026-07-28 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Only the client that asked.
    Private,
    /// Any client of the server.
    Public,
}

/// Adds `result_type()` and `is_complete()` to result structs with an `Option<ResultType>` field.
macro_rules! impl_result_type {
    ($($ty:ty),+ $(,)?) => {$(
        impl $ty {
            /// The `resultType`, reading an absent value (any revision before 2026-07-28) as
            /// [`ResultType::Complete`](crate::types::ResultType::Complete).
            pub fn result_type(&self) -> $crate::types::ResultType {
                self.result_type.clone().unwrap_or_default()
            }

            /// Whether the result completes the request.
            pub fn is_complete(&self) -> bool {
                self.result_type() == $crate::types::ResultType::Complete
            }
        }
    )+};
}

pub(crate) use impl_result_type;

/// A result with no members of its own (the answer to `ping`, `resources/subscribe`,
/// `logging/setLevel`...); also the schema's base `Result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The members every paginated result has (the schema's `PaginatedResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PaginatedResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The members every cacheable 2026-07-28 result has (the schema's `CacheableResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CacheableResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the result may be reused, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl_result_type!(EmptyResult, PaginatedResult, CacheableResult);

/// A request the server needs the client to answer before it can finish (2026-07-28): sampling,
/// a roots listing, or an elicitation, tagged by `method`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `sampling/createMessage`.
    CreateMessage(SamplingInputRequest),
    /// `roots/list`.
    ListRoots(ListRootsInputRequest),
    /// `elicitation/create`.
    Elicit(ElicitInputRequest),
}

tagged_union!(InputRequest, "method", {
    CreateMessage(SamplingInputRequest) = "sampling/createMessage",
    ListRoots(ListRootsInputRequest) = "roots/list",
    Elicit(ElicitInputRequest) = "elicitation/create",
});

/// Input requests keyed by an id the server picks (2026-07-28).
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`] (2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// The answer to `sampling/createMessage`.
    CreateMessage(CreateMessageResult),
    /// The answer to `roots/list`.
    ListRoots(ListRootsResult),
    /// The answer to `elicitation/create`.
    Elicit(ElicitResult),
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        if map.contains_key("action") {
            from_value::<_, D>(Value::Object(map)).map(InputResponse::Elicit)
        } else if map.contains_key("roots") {
            from_value::<_, D>(Value::Object(map)).map(InputResponse::ListRoots)
        } else {
            from_value::<_, D>(Value::Object(map)).map(InputResponse::CreateMessage)
        }
    }
}

/// Input responses keyed by the ids of the input requests they answer (2026-07-28).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// The members a retried 2026-07-28 request adds after an `input_required` result (the
/// schema's `InputResponseRequestParams`; `tools/call`, `prompts/get` and `resources/read` params
/// carry the same members).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InputResponseRequestParams {
    /// Request metadata (required).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Answers to the input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of the `input_required` result, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A result saying the server needs input before it can finish the request (2026-07-28).
///
/// The client answers each input request and retries the original request with
/// `inputResponses` and the `requestState` echoed back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct InputRequiredResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Always [`ResultType::InputRequired`].
    #[serde(default = "ResultType::input_required")]
    pub result_type: ResultType,
    /// What the server needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state the client sends back on the retried request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for InputRequiredResult {
    fn default() -> Self {
        InputRequiredResult {
            meta: None,
            result_type: ResultType::InputRequired,
            input_requests: None,
            request_state: None,
            extra: Map::new(),
        }
    }
}

/// What a request that may be suspended answers: its own result, an [`InputRequiredResult`]
/// (2026-07-28 `tools/call`, `prompts/get`, `resources/read`), or a [`CreateTaskResult`]
/// (2025-11-25 task-augmented requests).
///
/// Decoding looks at `resultType` first (`input_required`), then at a `task` object member; any
/// other object decodes as `R`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Outcome<R> {
    /// The request finished.
    Complete(R),
    /// The server needs input first (2026-07-28).
    InputRequired(InputRequiredResult),
    /// The server started a task that will produce the result (2025-11-25).
    TaskCreated(CreateTaskResult),
}

impl<R> Outcome<R> {
    /// The finished result, if any.
    pub fn complete(self) -> Option<R> {
        match self {
            Outcome::Complete(r) => Some(r),
            _ => None,
        }
    }
}

impl<R> From<R> for Outcome<R> {
    fn from(r: R) -> Self {
        Outcome::Complete(r)
    }
}

impl<R: serde::de::DeserializeOwned> Outcome<R> {
    /// Decodes an outcome from a result already read as JSON, as its `Deserialize` does, but
    /// in one walk of the value (deserializing from a [`Value`] first copies it into a map).
    ///
    /// # Errors
    ///
    /// The decoding error, as `serde_json::from_value` gives it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{EmptyResult, Outcome};
    /// use serde_json::json;
    ///
    /// let o = Outcome::<EmptyResult>::from_value(json!({"resultType": "input_required"})).unwrap();
    /// assert!(matches!(o, Outcome::InputRequired(_)));
    /// let o = Outcome::<EmptyResult>::from_value(json!({})).unwrap();
    /// assert!(matches!(o, Outcome::Complete(_)));
    /// assert!(Outcome::<EmptyResult>::from_value(json!(1)).is_err());
    /// ```
    pub fn from_value(value: Value) -> serde_json::Result<Self> {
        let map = match value {
            Value::Object(map) => map,
            // Not an object: the same error as the `Deserialize` impl gives.
            other => serde_json::from_value::<Map<String, Value>>(other)?,
        };
        if str_member(&map, "resultType") == Some("input_required") {
            serde_json::from_value(Value::Object(map)).map(Outcome::InputRequired)
        } else if map.get("task").is_some_and(Value::is_object) {
            serde_json::from_value(Value::Object(map)).map(Outcome::TaskCreated)
        } else {
            serde_json::from_value(Value::Object(map)).map(Outcome::Complete)
        }
    }

    /// Decodes an outcome straight from a result's encoded JSON (as [`from_value`] decides
    /// which kind it is), without building a [`Value`] tree: the two members that decide are
    /// read first, then the text is decoded once as the kind they name.
    ///
    /// [`from_value`]: Self::from_value
    ///
    /// # Errors
    ///
    /// The decoding error, as `serde_json` gives it.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::jsonrpc::RawJson;
    /// use mcpl_core::types::{EmptyResult, Outcome};
    ///
    /// let text = |t: &str| RawJson::from_text(t).unwrap();
    /// let o = Outcome::<EmptyResult>::from_json(&text(r#"{"resultType":"input_required"}"#));
    /// assert!(matches!(o, Ok(Outcome::InputRequired(_))));
    /// let o = Outcome::<EmptyResult>::from_json(&text(r#"{"resultType":"complete"}"#));
    /// assert!(matches!(o, Ok(Outcome::Complete(_))));
    /// assert!(Outcome::<EmptyResult>::from_json(&text("1")).is_err());
    /// ```
    pub fn from_json(result: &crate::jsonrpc::RawJson) -> serde_json::Result<Self> {
        use serde_json::value::RawValue;
        /// The members that say which kind of result this is, their values unread.
        #[derive(Deserialize)]
        struct Kind<'a> {
            #[serde(rename = "resultType", borrow, default)]
            result_type: Option<&'a RawValue>,
            #[serde(borrow, default)]
            task: Option<&'a RawValue>,
        }
        let text = result.as_str();
        if result.is_object() && !may_be_other_kind(text) {
            return serde_json::from_str(text).map(Outcome::Complete);
        }
        let kind: Kind<'_> = serde_json::from_str(text)?;
        let input_required = kind.result_type.is_some_and(|t| {
            // Borrowed unless it holds an escape.
            match serde_json::from_str::<&str>(t.get()) {
                Ok(t) => t == "input_required",
                Err(_) => {
                    serde_json::from_str::<String>(t.get()).is_ok_and(|t| t == "input_required")
                }
            }
        });
        if input_required {
            serde_json::from_str(text).map(Outcome::InputRequired)
        } else if kind.task.is_some_and(|t| t.get().starts_with('{')) {
            serde_json::from_str(text).map(Outcome::TaskCreated)
        } else {
            serde_json::from_str(text).map(Outcome::Complete)
        }
    }
}

/// Whether JSON `text` (an object) may be of another kind than complete: the only ways are a
/// `resultType` of `"input_required"` or a member named `task`, so one of them appears quoted,
/// or an escape (a backslash) could spell it. When none does, [`Outcome::from_json`] reads the
/// text once (three scans for byte strings, against a pass of the decoder over the whole text).
fn may_be_other_kind(text: &str) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    static INPUT_REQUIRED: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"input_required\""));
    static TASK: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"task\""));
    let bytes = text.as_bytes();
    memchr::memchr(b'\\', bytes).is_some()
        || INPUT_REQUIRED.find(bytes).is_some()
        || TASK.find(bytes).is_some()
}

impl<'de, R: serde::de::DeserializeOwned> Deserialize<'de> for Outcome<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        if str_member(&map, "resultType") == Some("input_required") {
            from_value::<_, D>(Value::Object(map)).map(Outcome::InputRequired)
        } else if map.get("task").is_some_and(Value::is_object) {
            from_value::<_, D>(Value::Object(map)).map(Outcome::TaskCreated)
        } else {
            from_value::<_, D>(Value::Object(map)).map(Outcome::Complete)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_json_decides_as_from_value_does() {
        use crate::jsonrpc::RawJson;
        use crate::types::CallToolResult;
        let task = json!({"task": {"taskId": "t", "status": "working",
            "createdAt": "2025-01-01T00:00:00Z", "lastUpdatedAt": "2025-01-01T00:00:00Z", "ttl": null}});
        for (value, kind) in [
            (json!({"content": []}), "complete"),
            (json!({"content": [], "resultType": "complete"}), "complete"),
            (json!({"resultType": "input_required", "inputRequests": {}}), "input"),
            (task, "task"),
            // A `task` member that is no object, and a name that only looks like one.
            (json!({"content": [], "task": 1}), "complete"),
            (json!({"content": [{"type": "text", "text": "\"task\""}]}), "complete"),
        ] {
            let kind_of = |o: &Outcome<CallToolResult>| match o {
                Outcome::Complete(_) => "complete",
                Outcome::InputRequired(_) => "input",
                Outcome::TaskCreated(_) => "task",
            };
            let by_value = Outcome::<CallToolResult>::from_value(value.clone()).unwrap();
            let by_text = Outcome::<CallToolResult>::from_json(&RawJson::from(&value)).unwrap();
            assert_eq!((kind_of(&by_value), kind_of(&by_text)), (kind, kind), "{value}");
            assert_eq!(by_value, by_text);
        }
        // A name spelled with an escape is still read.
        let escaped = RawJson::from_text(r#"{"result\u0054ype":"input_required"}"#).unwrap();
        let outcome = Outcome::<CallToolResult>::from_json(&escaped).unwrap();
        assert!(matches!(outcome, Outcome::InputRequired(_)));
        assert!(Outcome::<CallToolResult>::from_json(&RawJson::from(json!([1]))).is_err());
    }

    /// Results whose members, at any depth, include the names that decide their kind.
    fn arb_result() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("task"),
            Just("resultType"),
            Just("content"),
            Just("inputRequests"),
            Just("x"),
        ]
        .prop_map(str::to_owned);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            Just(json!("input_required")),
            Just(json!("complete")),
            Just(json!("task")),
            "[a-z]{0,3}".prop_map(Value::String),
        ];
        let tree = leaf.prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![Just("task"), Just("resultType"), Just("x")]
                        .prop_map(str::to_owned),
                    inner,
                    0..3
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        proptest::collection::btree_map(key, tree, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    proptest::proptest! {
        /// The text is read as the tree is, its names plain or spelled with escapes.
        #[test]
        fn from_json_reads_any_result_as_from_value_does(value in arb_result()) {
            use crate::jsonrpc::RawJson;
            let by_value = Outcome::<Value>::from_value(value.clone()).ok();
            let plain = RawJson::from(&value);
            proptest::prop_assert_eq!(&Outcome::<Value>::from_json(&plain).ok(), &by_value);
            let escaped = plain
                .as_str()
                .replace("\"task\"", r#""t\u0061sk""#)
                .replace("\"resultType\"", r#""result\u0054ype""#)
                .replace("\"input_required\"", r#""input\u005frequired""#);
            let escaped = RawJson::from_text(escaped).unwrap();
            proptest::prop_assert_eq!(&Outcome::<Value>::from_json(&escaped).ok(), &by_value);
        }
    }

    #[test]
    fn result_type_reads_any_string_form() {
        let read = |text: &str| serde_json::from_str::<ResultType>(text);
        assert_eq!(read(r#""complete""#).unwrap(), ResultType::Complete);
        // An escape makes the decoder copy the string first: the same value.
        assert_eq!(read(r#""input\u005frequired""#).unwrap(), ResultType::InputRequired);
        assert_eq!(read(r#""partial""#).unwrap(), ResultType::Other("partial".into()));
        assert_eq!(
            serde_json::from_value::<ResultType>(json!("complete")).unwrap(),
            ResultType::Complete
        );
        let error = read("1").unwrap_err().to_string();
        assert!(error.contains("invalid type: integer `1`, expected a string"), "{error}");
    }

    #[test]
    fn absent_result_type_means_complete() {
        let r: EmptyResult = serde_json::from_value(json!({})).unwrap();
        assert_eq!(r.result_type, None);
        assert_eq!(r.result_type(), ResultType::Complete);
        assert!(r.is_complete());
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({}));
    }

    #[test]
    fn unknown_result_type_survives() {
        let v = json!({"resultType": "partial", "x": 1});
        let r: EmptyResult = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.result_type(), ResultType::Other("partial".into()));
        assert!(!r.is_complete());
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }

    #[test]
    fn outcome_dispatch() {
        let o: Outcome<EmptyResult> =
            serde_json::from_value(json!({"resultType": "input_required"})).unwrap();
        assert!(matches!(o, Outcome::InputRequired(_)));
        let o: Outcome<EmptyResult> = serde_json::from_value(json!({"task": {"taskId": "t",
            "status": "working", "createdAt": "x", "lastUpdatedAt": "x", "ttl": null}}))
        .unwrap();
        assert!(matches!(o, Outcome::TaskCreated(_)));
        let o: Outcome<EmptyResult> =
            serde_json::from_value(json!({"resultType": "complete"})).unwrap();
        assert!(o.complete().unwrap().is_complete());
    }
}
