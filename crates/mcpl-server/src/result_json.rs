//! A tool's result written as JSON, as every answer to `tools/call` is.
//!
//! `serde_json` writes a result through the generic serializer: every member name is escaped
//! byte by byte, and the type's unknown members (`extra`) make it a flattened map. The usual
//! result is simpler: text blocks alone, with no annotations or metadata, no structured
//! content and no unknown members. [`write`] writes that shape itself (its member names are
//! fixed, and a text is copied whole unless it holds a quote, a backslash or a control
//! character, which one pass over its bytes finds); anything else, and any text that needs
//! escaping, goes through `serde_json`. The bytes are the same either way: the tests compare
//! both writers on arbitrary results.

use mcpl_core::types::{CallToolResult, ContentBlock, TextContent};

/// Appends `result` as JSON to `out`: exactly the bytes `serde_json::to_writer` writes.
pub(crate) fn write(out: &mut Vec<u8>, result: &CallToolResult) -> serde_json::Result<()> {
    if result.meta.is_some() || result.structured_content.is_some() || !result.extra.is_empty() {
        return serde_json::to_writer(out, result);
    }
    // The members in the order the type declares them: `resultType`, `content`, `isError`.
    out.push(b'{');
    if let Some(result_type) = &result.result_type {
        out.extend_from_slice(br#""resultType":"#);
        serde_json::to_writer(&mut *out, result_type)?;
        out.push(b',');
    }
    out.extend_from_slice(br#""content":["#);
    for (i, block) in result.content.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match block {
            ContentBlock::Text(TextContent { text, annotations: None, meta: None, .. }) => {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                write_str(out, text)?;
                out.push(b'}');
            }
            other => serde_json::to_writer(&mut *out, other)?,
        }
    }
    out.push(b']');
    match result.is_error {
        Some(true) => out.extend_from_slice(br#","isError":true"#),
        Some(false) => out.extend_from_slice(br#","isError":false"#),
        None => {}
    }
    out.push(b'}');
    Ok(())
}

/// Appends `text` as a JSON string: copied whole between quotes when nothing in it needs
/// escaping, else escaped by `serde_json`.
fn write_str(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    if needs_escape(text.as_bytes()) {
        return serde_json::to_writer(out, text);
    }
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
    Ok(())
}

/// Whether `bytes` holds anything a JSON string escapes: a quote, a backslash or a control
/// character (`serde_json` escapes nothing else). One pass without an early exit, which the
/// compiler turns into wide compares.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |found, &b| found | (b < 0x20) | (b == b'"') | (b == b'\\'))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use mcpl_core::types::{Annotations, ImageContent, Meta, ResultType};
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn written(result: &CallToolResult) -> String {
        let mut out = Vec::new();
        write(&mut out, result).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn by_serde(result: &CallToolResult) -> String {
        serde_json::to_string(result).unwrap()
    }

    #[test]
    fn the_usual_result_is_written_as_serde_writes_it() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("This is a simple text response for testing."),
            ContentBlock::text(""),
        ]);
        assert_eq!(
            written(&result),
            r#"{"content":[{"type":"text","text":"This is a simple text response for testing."},{"type":"text","text":""}]}"#
        );
        assert_eq!(written(&result), by_serde(&result));
        let stateless = result.with_result_type(ResultType::Complete).with_is_error(false);
        assert_eq!(written(&stateless), by_serde(&stateless));
        assert!(written(&stateless).starts_with(r#"{"resultType":"complete","content":"#));
        let failed = CallToolResult::error("no such city");
        assert_eq!(written(&failed), by_serde(&failed));
        assert_eq!(written(&CallToolResult::default()), r#"{"content":[]}"#);
    }

    #[test]
    fn a_text_that_needs_escaping_is_escaped_as_serde_escapes_it() {
        for text in
            ["a \"quote\"", "back\\slash", "line\nbreak", "\u{0}\u{1f}", "del \u{7f}", "é ∑ 😀"]
        {
            let result = CallToolResult::success(vec![ContentBlock::text(text)]);
            assert_eq!(written(&result), by_serde(&result), "{text:?}");
        }
        assert!(needs_escape(b"\""));
        assert!(needs_escape(b"\\"));
        assert!(needs_escape(b"\x1f"));
        assert!(!needs_escape("\u{7f} é ∑ 😀 ' /".as_bytes()));
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,40}",
            "[a-z \"\\\\\\x00-\\x1f\\x7f]{0,40}",
            any::<String>(),
            "[a-z]{0,3000}",
        ]
    }

    fn block_strategy() -> impl Strategy<Value = ContentBlock> {
        (text_strategy(), 0..6u8).prop_map(|(text, kind)| match kind {
            0 => ContentBlock::Text(
                TextContent::new(text).with_annotations(Annotations::default().with_priority(0.5)),
            ),
            1 => ContentBlock::Text(
                TextContent::new(text)
                    .with_meta(Meta(json!({"k": "v"}).as_object().unwrap().clone())),
            ),
            2 => ContentBlock::Image(ImageContent::new(text, "image/png")),
            _ => ContentBlock::text(text),
        })
    }

    proptest! {
        /// Any result, usual or not, is written as `serde_json` writes it.
        #[test]
        fn any_result_is_written_as_serde_writes_it(
            content in proptest::collection::vec(block_strategy(), 0..4),
            result_type in proptest::option::of(prop_oneof![
                Just(ResultType::Complete),
                Just(ResultType::InputRequired),
                "[a-z\"]{1,8}".prop_map(ResultType::Other),
            ]),
            is_error in proptest::option::of(any::<bool>()),
            extras in 0..4u8,
        ) {
            let mut result = CallToolResult::success(content);
            result.result_type = result_type;
            result.is_error = is_error;
            match extras {
                1 => result.structured_content = Some(json!({"n": 1})),
                2 => result.meta = Some(Meta(json!({"m": true}).as_object().unwrap().clone())),
                3 => { result.extra.insert("x-extra".into(), json!([1, "two"])); }
                _ => {}
            }
            prop_assert_eq!(written(&result), by_serde(&result));
        }
    }
}
