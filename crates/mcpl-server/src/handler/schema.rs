//! JSON Schemas for tools: generating them from Rust types and checking values against them.
//!
//! Generating a schema from a type ([`input_schema_for`], [`output_schema_for`], the typed
//! tools of the builder) needs the `schema` feature (schemars). Checking a call's arguments and
//! a tool's structured content against the tool's schemas needs the `validation` feature
//! (jsonschema); without it the schemas are sent to clients as written and nothing is checked
//! on the server (a typed tool still refuses arguments that do not deserialize).

#[cfg(feature = "validation")]
use std::fmt;
#[cfg(feature = "validation")]
use std::sync::Arc;

use mcpl_core::types::ToolSchema;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
#[cfg(feature = "schema")]
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// How many validation problems a message names before it stops listing them.
#[cfg(feature = "validation")]
const MAX_LISTED_PROBLEMS: usize = 5;

/// The input schema (JSON Schema 2020-12) of a tool whose arguments deserialize into `T`.
///
/// The schema describes what `T` accepts when deserialized. Tool arguments are a JSON object, so
/// `T` must be a struct (or a map-like type) whose schema has `"type": "object"`.
///
/// ```
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add {
///     a: i64,
///     b: i64,
/// }
///
/// let schema = mcpl_server::schema::input_schema_for::<Add>().unwrap();
/// assert_eq!(schema.schema_type, Some(serde_json::json!("object")));
/// assert_eq!(schema.required, Some(vec!["a".to_owned(), "b".to_owned()]));
/// ```
///
/// # Errors
///
/// [`SchemaError::NotAnObject`] if `T`'s schema is not an object schema.
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub fn input_schema_for<T: JsonSchema>() -> Result<ToolSchema, SchemaError> {
    let schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>();
    object_schema(schema.to_value())
}

/// The output schema (JSON Schema 2020-12) of a tool whose structured content is a serialized
/// `T`.
///
/// ```
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum {
///     total: i64,
/// }
///
/// let schema = mcpl_server::schema::output_schema_for::<Sum>().unwrap();
/// assert!(schema.properties.unwrap().contains_key("total"));
/// ```
///
/// # Errors
///
/// [`SchemaError::NotAnObject`] if `T`'s schema is not an object schema (structured content is
/// an object in every revision up to 2025-11-25).
#[cfg(feature = "schema")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema")))]
pub fn output_schema_for<T: JsonSchema>() -> Result<ToolSchema, SchemaError> {
    let schema =
        SchemaSettings::draft2020_12().for_serialize().into_generator().into_root_schema_for::<T>();
    object_schema(schema.to_value())
}

#[cfg(feature = "schema")]
fn object_schema(value: Value) -> Result<ToolSchema, SchemaError> {
    if value.get("type") != Some(&Value::String("object".to_owned())) {
        let title = value.get("title").and_then(Value::as_str).unwrap_or("the type").to_owned();
        return Err(SchemaError::NotAnObject(title));
    }
    serde_json::from_value(value).map_err(|e| SchemaError::Invalid(e.to_string()))
}

/// Why a schema could not be generated or compiled.
///
/// # Examples
///
/// ```
/// use mcpl_server::schema::{SchemaError, input_schema_for};
///
/// // A tool's arguments are always an object; a bare string is not.
/// let err = input_schema_for::<String>().unwrap_err();
/// assert!(matches!(err, SchemaError::NotAnObject(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema does not describe a JSON object (`"type": "object"`).
    #[error("the schema of {0} is not an object schema (`\"type\": \"object\"`)")]
    NotAnObject(String),
    /// The schema is not a valid JSON Schema.
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
    /// A prompt argument (this property) does not accept a string: prompt arguments are
    /// strings.
    #[error("prompt argument {0:?} does not accept a string (prompt arguments are strings)")]
    NotAString(String),
}

/// A JSON Schema compiled once, to check many values against.
#[cfg(feature = "validation")]
#[derive(Clone)]
pub(crate) struct CompiledSchema {
    validator: Arc<jsonschema::Validator>,
}

#[cfg(feature = "validation")]
impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

#[cfg(feature = "validation")]
impl CompiledSchema {
    /// Compiles a tool schema (JSON Schema 2020-12 unless its `$schema` says otherwise).
    pub(crate) fn compile(schema: &ToolSchema) -> Result<Self, SchemaError> {
        let value =
            serde_json::to_value(schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        let validator =
            jsonschema::validator_for(&value).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(CompiledSchema { validator: Arc::new(validator) })
    }

    /// Checks `value`; the error describes every problem (up to a few), each with its location.
    pub(crate) fn check(&self, value: &Value) -> Result<(), String> {
        // The common case first: a valid value needs no error iterator.
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let mut problems = Vec::new();
        let mut count = 0usize;
        for error in self.validator.iter_errors(value) {
            count += 1;
            if problems.len() < MAX_LISTED_PROBLEMS {
                let path = error.instance_path().to_string();
                let at = if path.is_empty() { "/".to_owned() } else { path };
                problems.push(format!("at {at}: {error}"));
            }
        }
        match count {
            0 => Ok(()),
            n if n > problems.len() => {
                Err(format!("{} (and {} more)", problems.join("; "), n - problems.len()))
            }
            _ => Err(problems.join("; ")),
        }
    }
}

/// A tool schema taken as written: without the `validation` feature nothing is checked.
#[cfg(not(feature = "validation"))]
#[derive(Debug, Clone)]
pub(crate) struct CompiledSchema;

#[cfg(not(feature = "validation"))]
impl CompiledSchema {
    /// Accepts any schema (its `type` is checked by the caller).
    pub(crate) fn compile(_schema: &ToolSchema) -> Result<Self, SchemaError> {
        Ok(CompiledSchema)
    }

    /// Accepts any value.
    pub(crate) fn check(&self, _value: &Value) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(all(test, feature = "validation"))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_name_the_problem_and_its_place() {
        let schema: ToolSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": false
        }))
        .unwrap();
        let compiled = CompiledSchema::compile(&schema).unwrap();
        assert!(compiled.check(&json!({"n": 3})).is_ok());
        let err = compiled.check(&json!({"n": "x"})).unwrap_err();
        assert!(err.contains("/n"), "{err}");
        let err = compiled.check(&json!({})).unwrap_err();
        assert!(err.contains("\"n\""), "{err}");
    }

    #[test]
    fn invalid_schemas_do_not_compile() {
        let schema: ToolSchema =
            serde_json::from_value(json!({"type": "object", "minProperties": "two"})).unwrap();
        assert!(matches!(CompiledSchema::compile(&schema), Err(SchemaError::Invalid(_))));
    }

    #[test]
    #[cfg(feature = "schema")]
    fn non_object_types_are_refused() {
        assert!(matches!(input_schema_for::<i32>(), Err(SchemaError::NotAnObject(_))));
    }
}
