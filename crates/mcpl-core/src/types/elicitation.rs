//! Elicitation: a server asking the user for input, through a form (with a restricted JSON
//! Schema of primitive fields) or, from 2025-11-25, by sending them to a URL.

use derive_setters::Setters;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::result::{ResultType, impl_result_type};
use super::serde_util::{from_value, opt_num, str_member, strict_tag};
use super::tasks::TaskMetadata;

/// The `format` of a string field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// An e-mail address.
    Email,
    /// A URI.
    Uri,
    /// A date.
    Date,
    /// A date and time.
    DateTime,
}

/// A string field (`"type": "string"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "string", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct StringSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The shortest accepted length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// The longest accepted length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// The string's format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// The default value (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// Whether a number field takes any number or only integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberType {
    /// Any number.
    Number,
    /// Integers only.
    Integer,
}

/// A number field (`"type": "number"` or `"integer"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct NumberSchema {
    /// `number` or `integer`.
    #[serde(rename = "type")]
    pub number_type: NumberType,
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The smallest accepted value.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub minimum: Option<f64>,
    /// The largest accepted value.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub maximum: Option<f64>,
    /// The default value (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opt_num")]
    pub default: Option<f64>,
}

impl NumberSchema {
    /// A number field of the given type.
    pub fn new(number_type: NumberType) -> Self {
        NumberSchema {
            number_type,
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
        }
    }
}

/// A boolean field (`"type": "boolean"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "boolean")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct BooleanSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
}

/// One titled option of an enum field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct EnumOption {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// The label shown for it.
    pub title: String,
}

impl EnumOption {
    /// Creates an option.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption { value: value.into(), title: title.into() }
    }
}

/// A single-choice field whose options are plain values (2025-11-25 and later; earlier
/// revisions call it `EnumSchema`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "string")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UntitledSingleSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// The default option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A single-choice field whose options have labels (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "string", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TitledSingleSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    pub one_of: Vec<EnumOption>,
    /// The default option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A single-choice field with labels in a parallel, non-standard `enumNames` list (the
/// 2025-06-18 `EnumSchema`, kept for compatibility).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "string", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct LegacyTitledEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Labels for the options, in the same order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// The default option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// The `items` of an untitled multi-select field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "string")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UntitledEnumItems {
    /// The options.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
}

/// The `items` of a titled multi-select field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TitledEnumItems {
    /// The options.
    pub any_of: Vec<EnumOption>,
}

/// A multiple-choice field whose options are plain values (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "array", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct UntitledMultiSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: UntitledEnumItems,
    /// The options selected by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// A multiple-choice field whose options have labels (2025-11-25 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "array", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct TitledMultiSelectEnumSchema {
    /// The field's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fewest options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// The most options to select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The options.
    pub items: TitledEnumItems,
    /// The options selected by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
}

/// Which primitive schema a JSON object is, decided from `type` and the distinguishing members.
enum Kind {
    String,
    Number,
    Boolean,
    UntitledSingle,
    TitledSingle,
    Legacy,
    UntitledMulti,
    TitledMulti,
}

fn classify(map: &Map<String, Value>) -> Result<Kind, String> {
    match str_member(map, "type") {
        Some("string") if map.contains_key("oneOf") => Ok(Kind::TitledSingle),
        Some("string") if map.contains_key("enumNames") => Ok(Kind::Legacy),
        Some("string") if map.contains_key("enum") => Ok(Kind::UntitledSingle),
        Some("string") => Ok(Kind::String),
        Some("number" | "integer") => Ok(Kind::Number),
        Some("boolean") => Ok(Kind::Boolean),
        Some("array") => {
            let titled = map
                .get("items")
                .and_then(Value::as_object)
                .is_some_and(|items| items.contains_key("anyOf") || items.contains_key("oneOf"));
            Ok(if titled { Kind::TitledMulti } else { Kind::UntitledMulti })
        }
        Some(other) => Err(format!("unsupported primitive schema type `{other}`")),
        None => Err("primitive schema without a `type`".to_owned()),
    }
}

/// Defines an enum over primitive schema structs, serialized untagged and deserialized with
/// [`classify`].
macro_rules! schema_union {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident($ty:ty) = $kind:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum $name {
            $($(#[$vdoc])* $variant($ty),)+
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = Map::<String, Value>::deserialize(d)?;
                match classify(&map).map_err(serde::de::Error::custom)? {
                    $(Kind::$kind => from_value::<$ty, D>(Value::Object(map)).map($name::$variant),)+
                    #[allow(unreachable_patterns)]
                    _ => Err(serde::de::Error::custom(concat!(
                        "schema is not a ",
                        stringify!($name)
                    ))),
                }
            }
        }

        $(impl From<$ty> for $name {
            fn from(inner: $ty) -> Self {
                $name::$variant(inner)
            }
        })+
    };
}

schema_union! {
    /// A field of an elicitation form: a primitive type or an enum.
    PrimitiveSchemaDefinition {
        /// A string.
        String(StringSchema) = String,
        /// A number or integer.
        Number(NumberSchema) = Number,
        /// A boolean.
        Boolean(BooleanSchema) = Boolean,
        /// A single choice among plain values.
        UntitledSingleSelect(UntitledSingleSelectEnumSchema) = UntitledSingle,
        /// A single choice among labelled values.
        TitledSingleSelect(TitledSingleSelectEnumSchema) = TitledSingle,
        /// Several choices among plain values.
        UntitledMultiSelect(UntitledMultiSelectEnumSchema) = UntitledMulti,
        /// Several choices among labelled values.
        TitledMultiSelect(TitledMultiSelectEnumSchema) = TitledMulti,
        /// A single choice with `enumNames` labels.
        LegacyTitled(LegacyTitledEnumSchema) = Legacy,
    }
}

schema_union! {
    /// Any enum field (2025-11-25 and later).
    EnumSchema {
        /// A single choice among plain values.
        UntitledSingleSelect(UntitledSingleSelectEnumSchema) = UntitledSingle,
        /// A single choice among labelled values.
        TitledSingleSelect(TitledSingleSelectEnumSchema) = TitledSingle,
        /// Several choices among plain values.
        UntitledMultiSelect(UntitledMultiSelectEnumSchema) = UntitledMulti,
        /// Several choices among labelled values.
        TitledMultiSelect(TitledMultiSelectEnumSchema) = TitledMulti,
        /// A single choice with `enumNames` labels.
        LegacyTitled(LegacyTitledEnumSchema) = Legacy,
    }
}

schema_union! {
    /// A single-choice enum field (2025-11-25 and later).
    SingleSelectEnumSchema {
        /// Plain values.
        Untitled(UntitledSingleSelectEnumSchema) = UntitledSingle,
        /// Labelled values.
        Titled(TitledSingleSelectEnumSchema) = TitledSingle,
    }
}

schema_union! {
    /// A multiple-choice enum field (2025-11-25 and later).
    MultiSelectEnumSchema {
        /// Plain values.
        Untitled(UntitledMultiSelectEnumSchema) = UntitledMulti,
        /// Labelled values.
        Titled(TitledMultiSelectEnumSchema) = TitledMulti,
    }
}

/// The restricted JSON Schema of an elicitation form: a flat object of primitive fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "object")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ElicitationSchema {
    /// The JSON Schema dialect (`$schema`).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The fields by name.
    pub properties: BTreeMap<String, PrimitiveSchemaDefinition>,
    /// The names of the required fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[setters(skip)]
    pub required: Option<Vec<String>>,
}

impl ElicitationSchema {
    /// Adds a field.
    #[must_use]
    pub fn with_property(
        mut self,
        name: impl Into<String>,
        schema: impl Into<PrimitiveSchemaDefinition>,
    ) -> Self {
        self.properties.insert(name.into(), schema.into());
        self
    }

    /// Marks a field as required.
    #[must_use]
    pub fn with_required(mut self, name: impl Into<String>) -> Self {
        self.required.get_or_insert_with(Vec::new).push(name.into());
        self
    }
}

/// The `mode` value of a form-mode elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FormMode {
    /// `form`.
    Form,
}

/// Params of a form-mode `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ElicitRequestFormParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `form`; may be omitted (and is, before 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// What the server asks for, shown to the user.
    pub message: String,
    /// The form.
    pub requested_schema: ElicitationSchema,
    /// Run the request as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitRequestFormParams {
    /// A form request with an explicit `mode: "form"`.
    pub fn new(message: impl Into<String>, requested_schema: ElicitationSchema) -> Self {
        ElicitRequestFormParams {
            meta: None,
            mode: Some(FormMode::Form),
            message: message.into(),
            requested_schema,
            task: None,
            extra: Map::new(),
        }
    }
}

/// Params of a URL-mode `elicitation/create` (`"mode": "url"`, 2025-11-25 and later): the
/// client sends the user to a URL, for input that must not pass through the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "mode", rename = "url", rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ElicitRequestURLParams {
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Why the user should go to the URL.
    pub message: String,
    /// The URL.
    pub url: String,
    /// The elicitation's id, echoed by `notifications/elicitation/complete` (required in
    /// 2025-11-25, absent in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Run the request as a task (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
}

impl ElicitRequestURLParams {
    /// A URL request.
    pub fn new(message: impl Into<String>, url: impl Into<String>) -> Self {
        ElicitRequestURLParams {
            meta: None,
            message: message.into(),
            url: url.into(),
            elicitation_id: None,
            task: None,
        }
    }
}

/// Params of `elicitation/create`: form or URL mode, told apart by `mode` (absent means form).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Form mode.
    Form(ElicitRequestFormParams),
    /// URL mode (2025-11-25 and later).
    Url(ElicitRequestURLParams),
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        match str_member(&map, "mode") {
            Some("url") => from_value::<_, D>(Value::Object(map)).map(ElicitRequestParams::Url),
            Some("form") | None => {
                from_value::<_, D>(Value::Object(map)).map(ElicitRequestParams::Form)
            }
            Some(other) => {
                Err(serde::de::Error::custom(format!("unknown elicitation mode `{other}`")))
            }
        }
    }
}

impl From<ElicitRequestFormParams> for ElicitRequestParams {
    fn from(p: ElicitRequestFormParams) -> Self {
        ElicitRequestParams::Form(p)
    }
}

impl From<ElicitRequestURLParams> for ElicitRequestParams {
    fn from(p: ElicitRequestURLParams) -> Self {
        ElicitRequestParams::Url(p)
    }
}

/// How the user answered an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted (or, in URL mode, agreed to go to the URL).
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

/// The value of one submitted form field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitValue {
    /// A boolean.
    Bool(bool),
    /// A number (kept exactly as sent).
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// The selected options of a multi-select field (2025-11-25 and later).
    Strings(Vec<String>),
}

/// The client's answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ElicitResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Not sent by any revision; kept for uniformity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// What the user did.
    pub action: ElicitAction,
    /// The submitted fields (form mode with `accept` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<BTreeMap<String, ElicitValue>>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitResult {
    /// A result with the given action and no content.
    pub fn new(action: ElicitAction) -> Self {
        ElicitResult { meta: None, result_type: None, action, content: None, extra: Map::new() }
    }
}

impl_result_type!(ElicitResult);

strict_tag! {
    StringSchema: "type" = "string",
    BooleanSchema: "type" = "boolean",
    UntitledSingleSelectEnumSchema: "type" = "string",
    TitledSingleSelectEnumSchema: "type" = "string",
    LegacyTitledEnumSchema: "type" = "string",
    UntitledEnumItems: "type" = "string",
    UntitledMultiSelectEnumSchema: "type" = "array",
    TitledMultiSelectEnumSchema: "type" = "array",
    ElicitationSchema: "type" = "object",
    ElicitRequestURLParams: "mode" = "url",
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn form_mode_may_be_omitted() {
        let v = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        let p: ElicitRequestParams = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(&p, ElicitRequestParams::Form(f) if f.mode.is_none()));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
        let u: ElicitRequestParams =
            serde_json::from_value(json!({"mode": "url", "message": "m", "url": "https://x"}))
                .unwrap();
        assert!(matches!(u, ElicitRequestParams::Url(_)));
        assert!(serde_json::from_value::<ElicitRequestParams>(json!({"mode": "voice"})).is_err());
    }

    #[test]
    fn primitive_schemas_classify() {
        let cases = [
            (json!({"type": "string", "format": "email"}), "String"),
            (json!({"type": "integer", "minimum": 1}), "Number"),
            (json!({"type": "boolean", "default": true}), "Boolean"),
            (json!({"type": "string", "enum": ["a"]}), "UntitledSingleSelect"),
            (json!({"type": "string", "enum": ["a"], "enumNames": ["A"]}), "LegacyTitled"),
            (
                json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]}),
                "TitledSingleSelect",
            ),
            (
                json!({"type": "array", "items": {"type": "string", "enum": ["a"]}}),
                "UntitledMultiSelect",
            ),
            (
                json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}),
                "TitledMultiSelect",
            ),
        ];
        for (v, name) in cases {
            let s: PrimitiveSchemaDefinition = serde_json::from_value(v.clone()).unwrap();
            assert!(format!("{s:?}").starts_with(name), "{s:?}");
            assert_eq!(serde_json::to_value(&s).unwrap(), v);
        }
    }
}
