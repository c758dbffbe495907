//! The size of a JSON value on the wire, without writing it out.

use serde_json::Value;

/// The length in bytes of `value` as compact JSON, counted without building the text: how
/// much of a budget a message's payload takes (bounded queues, list caps).
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::encoded_len;
/// use serde_json::json;
///
/// let value = json!({"level": "info", "data": "hello"});
/// assert_eq!(encoded_len(&value), value.to_string().len());
/// ```
pub fn encoded_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_compact_length() {
        let values = [
            json!(null),
            json!({"a": [1, "two", {"b": "\u{e9}\n\"q\""}], "c": 1.5}),
            json!("x".repeat(1000)),
        ];
        for value in values {
            assert_eq!(encoded_len(&value), serde_json::to_vec(&value).unwrap_or_default().len());
        }
    }
}
