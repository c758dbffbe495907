//! Tools: definitions, `tools/list` and `tools/call`.

use derive_setters::Setters;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::{ContentBlock, Icon};
use super::meta::Meta;
use super::result::{CacheScope, InputResponses, ResultType, impl_result_type};
use super::tasks::TaskMetadata;

/// Hints about a tool's behaviour. They are hints only: a client must not rely on them for
/// tools from untrusted servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data (default true; meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Whether a tool can run as a task (2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The tool must not be called as a task (the default).
    Forbidden,
    /// The tool may be called as a task or not.
    Optional,
    /// The tool must be called as a task.
    Required,
}

/// Execution properties of a tool (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ToolExecution {
    /// Whether the tool can run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// A JSON Schema describing a tool's input or output.
///
/// The common members are typed; any other keyword (`oneOf`, `$defs`, `additionalProperties`...)
/// is kept in `extra`. An input schema must have `type: "object"`; in 2026-07-28 an output
/// schema may have any type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ToolSchema {
    /// The JSON Schema dialect (`$schema`); 2020-12 when absent.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The schema's `type` (usually the string `"object"`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub schema_type: Option<Value>,
    /// The object's properties, each a JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Map<String, Value>>,
    /// The required property names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(skip)]
    pub required: Option<Vec<String>>,
    /// Every other keyword, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolSchema {
    /// An object schema with no properties (a tool without parameters).
    pub fn object() -> Self {
        ToolSchema { schema_type: Some(Value::String("object".to_owned())), ..Default::default() }
    }

    /// Adds a property.
    #[must_use]
    pub fn with_property(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.properties.get_or_insert_with(Map::new).insert(name.into(), schema);
        self
    }

    /// Adds a required property name.
    #[must_use]
    pub fn with_required(mut self, name: impl Into<String>) -> Self {
        self.required.get_or_insert_with(Vec::new).push(name.into());
        self
    }
}

/// A tool a server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Tool {
    /// The programmatic name.
    pub name: String,
    /// A human-readable name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The schema of the tool's arguments.
    pub input_schema: ToolSchema,
    /// The schema of the tool's `structuredContent` (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<ToolSchema>,
    /// Behaviour hints (2025-03-26 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Execution properties (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Icons for the tool (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Extra metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members this SDK does not know, preserved (e.g. MCPL's top-level `featureSet` tag).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// Creates a tool from a name and an input schema.
    pub fn new(name: impl Into<String>, input_schema: ToolSchema) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            execution: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

/// The answer to `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ListToolsResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The tools.
    pub tools: Vec<Tool>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be reused, in milliseconds (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse the result (2026-07-28, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CallToolRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(skip)]
    pub arguments: Option<Map<String, Value>>,
    /// Run the call as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Answers to the input requests of an earlier `input_required` result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` of an earlier `input_required` result, echoed (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolRequestParams {
    /// Creates params calling the named tool without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        CallToolRequestParams {
            meta: None,
            name: name.into(),
            arguments: None,
            task: None,
            input_responses: None,
            request_state: None,
            extra: Map::new(),
        }
    }

    /// Sets the arguments.
    #[must_use]
    pub fn with_arguments(mut self, arguments: Map<String, Value>) -> Self {
        self.arguments = Some(arguments);
        self
    }

    /// Sets the arguments from any `Serialize` value that serializes to a JSON object: a
    /// struct, a map, `json!({..})`; `()` (or `null`) sets none.
    ///
    /// # Errors
    ///
    /// [`Error::Serialization`](crate::Error::Serialization) if `arguments` does not
    /// serialize, or serializes to something other than an object or `null`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::CallToolRequestParams;
    /// use serde_json::json;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Forecast {
    ///     city: &'static str,
    /// }
    ///
    /// let params = CallToolRequestParams::new("forecast")
    ///     .with_serialized_arguments(Forecast { city: "Oslo" })?;
    /// assert_eq!(params.arguments.unwrap()["city"], "Oslo");
    /// let none = CallToolRequestParams::new("now").with_serialized_arguments(())?;
    /// assert_eq!(none.arguments, None);
    /// assert!(CallToolRequestParams::new("x").with_serialized_arguments(json!([1])).is_err());
    /// # Ok::<(), mcpl_core::Error>(())
    /// ```
    pub fn with_serialized_arguments(
        mut self,
        arguments: impl Serialize,
    ) -> Result<Self, crate::Error> {
        let invalid =
            |source| crate::Error::Serialization { what: "the tool arguments".to_owned(), source };
        self.arguments = match serde_json::to_value(arguments).map_err(invalid)? {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                let kind = match other {
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::String(_) => "a string",
                    _ => "an array",
                };
                return Err(invalid(serde::ser::Error::custom(format!(
                    "tool arguments must be a JSON object, not {kind}"
                ))));
            }
        };
        Ok(self)
    }

    /// Reads the params from a JSON object, as `serde_json::from_value` does, moving its
    /// members instead of rebuilding them: the arguments and the members this SDK does not
    /// know are taken as they are (a server reads every `tools/call` this way).
    ///
    /// # Errors
    ///
    /// A missing `name`, or a member of the wrong type.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::CallToolRequestParams;
    /// use serde_json::json;
    ///
    /// let object = json!({"name": "add", "arguments": {"a": 1}, "x-trace": 7});
    /// let params = CallToolRequestParams::from_object(object.as_object().unwrap().clone())?;
    /// assert_eq!(params.name, "add");
    /// assert_eq!(params.arguments.unwrap()["a"], 1);
    /// assert_eq!(params.extra["x-trace"], 7);
    /// assert!(CallToolRequestParams::from_object(Default::default()).is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_object(object: Map<String, Value>) -> Result<Self, serde_json::Error> {
        /// An optional member: `null` is `None`.
        fn optional<T: serde::de::DeserializeOwned>(
            value: Value,
        ) -> Result<Option<T>, serde_json::Error> {
            match value {
                Value::Null => Ok(None),
                value => serde_json::from_value(value).map(Some),
            }
        }
        let mut params = CallToolRequestParams::new(String::new());
        let mut name = None;
        // One pass, each member moved where it belongs.
        for (key, value) in object {
            match key.as_str() {
                "name" => {
                    name = Some(match value {
                        Value::String(name) => name,
                        other => serde_json::from_value(other)?,
                    });
                }
                "arguments" => {
                    params.arguments = match value {
                        Value::Object(arguments) => Some(arguments),
                        other => optional(other)?,
                    };
                }
                "_meta" => params.meta = optional(value)?,
                "task" => params.task = optional(value)?,
                "inputResponses" => params.input_responses = optional(value)?,
                "requestState" => params.request_state = optional(value)?,
                _ => {
                    params.extra.insert(key, value);
                }
            }
        }
        params.name = name.ok_or_else(|| serde::de::Error::missing_field("name"))?;
        Ok(params)
    }
}

/// The result of a tool call.
///
/// A tool's own failure is reported here with `isError: true` (so the model can see it), not as
/// a JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CallToolResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The unstructured result.
    pub content: Vec<ContentBlock>,
    /// The structured result: an object up to 2025-11-25, any JSON value in 2026-07-28
    /// (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// A successful result with the given content.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        CallToolResult { content, ..Default::default() }
    }

    /// A failed result with an error message the model can read.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(message)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// Whether the tool reported a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// The text of the result's `text` blocks, joined by newlines; `None` when it has none.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::{CallToolResult, ContentBlock};
    ///
    /// let result = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
    /// assert_eq!(result.text().as_deref(), Some("a\nb"));
    /// assert_eq!(CallToolResult::success(vec![]).text(), None);
    /// ```
    pub fn text(&self) -> Option<String> {
        let mut texts = self.content.iter().filter_map(ContentBlock::as_text);
        let first = texts.next()?;
        Some(texts.fold(first.to_owned(), |mut all, t| {
            all.push('\n');
            all.push_str(t);
            all
        }))
    }

    /// The structured content decoded as `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpl_core::types::CallToolResult;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Forecast {
    ///     celsius: f64,
    /// }
    ///
    /// let mut result = CallToolResult::default();
    /// result.structured_content = Some(serde_json::json!({"celsius": 21.5}));
    /// assert_eq!(result.structured::<Forecast>().unwrap().celsius, 21.5);
    /// assert!(CallToolResult::default().structured::<Forecast>().is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Serialization`](crate::Error::Serialization) when the result has no structured
    /// content or it does not decode as `T`.
    pub fn structured<T: serde::de::DeserializeOwned>(&self) -> crate::Result<T> {
        let decode_error = |source| crate::Error::Serialization {
            what: "the tool result's structuredContent".to_owned(),
            source,
        };
        match &self.structured_content {
            Some(value) => T::deserialize(value).map_err(decode_error),
            None => {
                Err(decode_error(serde::de::Error::custom("the result has no structuredContent")))
            }
        }
    }
}

impl_result_type!(ListToolsResult, CallToolResult);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn setters_fill_the_optional_members() {
        let tool = Tool::new("add", ToolSchema::object())
            .with_title("Add")
            .with_description("Adds two numbers")
            .with_annotations(ToolAnnotations::default().with_read_only_hint(true));
        assert_eq!(
            serde_json::to_value(&tool).unwrap(),
            json!({
                "name": "add",
                "title": "Add",
                "description": "Adds two numbers",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}
            })
        );
        let call = CallToolRequestParams::new("add").with_task(TaskMetadata::default());
        assert!(call.task.is_some());
    }

    #[test]
    fn serialized_arguments_are_any_object_or_none() {
        #[derive(Serialize)]
        struct Query {
            city: &'static str,
        }
        let args = |a| CallToolRequestParams::new("t").with_serialized_arguments(a);
        let expected = json!({"city": "Lisbon"}).as_object().cloned();
        assert_eq!(args(json!(Query { city: "Lisbon" })).unwrap().arguments, expected);
        assert_eq!(args(json!({"city": "Lisbon"})).unwrap().arguments, expected);
        assert_eq!(args(json!(null)).unwrap().arguments, None);
        let none = CallToolRequestParams::new("t").with_serialized_arguments(()).unwrap();
        assert_eq!(none.arguments, None);
        for bad in [json!([1]), json!("x"), json!(3), json!(true)] {
            let error = args(bad.clone()).unwrap_err();
            assert_eq!(error.kind(), crate::ErrorKind::Serialization, "{bad}");
            let cause = std::error::Error::source(&error).unwrap().to_string();
            assert!(cause.contains("must be a JSON object"), "{cause}");
        }
    }

    #[test]
    fn a_tool_keeps_members_it_does_not_know() {
        let wire = json!({
            "name": "add",
            "inputSchema": {"type": "object"},
            "featureSet": "notes.store",
            "x-vendor": {"weight": 3},
            "_meta": {"featureSet": "notes.other"}
        });
        let tool: Tool = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(tool.extra.get("featureSet"), Some(&json!("notes.store")));
        assert!(!tool.extra.contains_key("_meta") && !tool.extra.contains_key("name"));
        assert_eq!(serde_json::to_value(&tool).unwrap(), wire, "a round trip loses nothing");
        let plain = serde_json::to_value(Tool::new("t", ToolSchema::object())).unwrap();
        assert_eq!(plain, json!({"name": "t", "inputSchema": {"type": "object"}}));
    }
}
