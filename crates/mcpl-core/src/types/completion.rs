//! Argument completion: `completion/complete`.

use derive_setters::Setters;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::meta::Meta;
use super::result::{ResultType, impl_result_type};
use super::serde_util::{strict_tag, tagged_union};

/// A reference to a prompt (`"type": "ref/prompt"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "ref/prompt")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct PromptReference {
    /// The prompt's name.
    pub name: String,
    /// A human-readable name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl PromptReference {
    /// A reference to the named prompt.
    pub fn new(name: impl Into<String>) -> Self {
        PromptReference { name: name.into(), title: None }
    }
}

/// A reference to a resource template (`"type": "ref/resource"`; `ResourceReference` in
/// revisions before 2025-06-18).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[serde(remote = "Self")]
#[serde(tag = "type", rename = "ref/resource")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct ResourceTemplateReference {
    /// The URI or URI template.
    pub uri: String,
}

impl ResourceTemplateReference {
    /// A reference to the template `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceTemplateReference { uri: uri.into() }
    }
}

/// What a completion is for: a prompt or a resource template, tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionReference {
    /// `ref/prompt`.
    Prompt(PromptReference),
    /// `ref/resource`.
    ResourceTemplate(ResourceTemplateReference),
}

tagged_union!(CompletionReference, "type", {
    Prompt(PromptReference) = "ref/prompt",
    ResourceTemplate(ResourceTemplateReference) = "ref/resource",
});

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CompletionArgument {
    /// The argument's name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

impl CompletionArgument {
    /// A `CompletionArgument` of its required members; the optional ones are set with the
    /// `with_*` setters.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self { name: name.into(), value: value.into() }
    }
}

/// Values of arguments already resolved (2025-06-18 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CompletionContext {
    /// Resolved arguments by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Setters)]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CompleteRequestParams {
    /// Request metadata (required in 2026-07-28).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument being completed.
    pub argument: CompletionArgument,
    /// Arguments already resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CompleteRequestParams {
    /// Params completing `argument` for `reference`.
    pub fn new(reference: impl Into<CompletionReference>, argument: CompletionArgument) -> Self {
        CompleteRequestParams {
            meta: None,
            reference: reference.into(),
            argument,
            context: None,
            extra: Map::new(),
        }
    }
}

/// The completion values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct Completion {
    /// The values, at most 100.
    pub values: Vec<String>,
    /// How many values exist in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist than were returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The answer to `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Setters)]
#[serde(rename_all = "camelCase")]
#[setters(prefix = "with_", strip_option, into)]
#[non_exhaustive]
pub struct CompleteResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// `complete` (required in 2026-07-28, absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The completion.
    pub completion: Completion,
    /// Members this SDK does not know, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl_result_type!(CompleteResult);

strict_tag! {
    PromptReference: "type" = "ref/prompt",
    ResourceTemplateReference: "type" = "ref/resource",
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// The union's tag values are its variants' own (the union checks the tag for them).
    #[test]
    fn a_reference_decodes_as_the_variant_that_wrote_it() {
        for reference in [
            json!({"type": "ref/prompt", "name": "p"}),
            json!({"type": "ref/resource", "uri": "file:///{x}"}),
        ] {
            let decoded: CompletionReference = serde_json::from_value(reference.clone()).unwrap();
            assert_eq!(serde_json::to_value(&decoded).unwrap(), reference);
        }
        assert!(serde_json::from_value::<CompletionReference>(json!({"type": "ref/x"})).is_err());
    }
}
