//! RFC 8785 JSON Canonicalization Scheme (JCS) over [`serde_json::Value`].
//!
//! JCS is `JSON.stringify` of ECMAScript with object members sorted by their UTF-16 code units:
//! no whitespace, strings escaped only where JSON requires it, numbers written the way
//! ECMAScript's `Number::toString` writes a double. `serde_json`'s own output differs in member
//! order (for non-ASCII names), in escapes and in numbers, hence this serializer.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// Writes `value` in RFC 8785 canonical form.
///
/// A `serde_json::Value` cannot hold a non-finite number, so this cannot fail; numbers are
/// taken as IEEE 754 doubles (an integer beyond 2^53 is rounded, as ECMAScript would).
///
/// ```
/// use mcpl_core::mcpl::digest::canonical_json;
/// let v = serde_json::json!({"b": [1.0, 1e21, -0.0], "a": "\u{7f}é"});
/// assert_eq!(canonical_json(&v), "{\"a\":\"\u{7f}é\",\"b\":[1,1e+21,0]}");
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map),
    }
}

fn write_object(out: &mut String, map: &Map<String, Value>) {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_by(|a, b| utf16_cmp(a.0, b.0));
    out.push('{');
    for (i, (name, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, name);
        out.push(':');
        write_value(out, value);
    }
    out.push('}');
}

/// Orders strings by their UTF-16 code units (RFC 8785 §3.2.3 member order).
pub(crate) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 => {
                // Infallible: writing to a String.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_number(out: &mut String, n: &Number) {
    // Every JSON number is a double in ECMAScript; integers too (u64/i64 -> f64 rounds to
    // nearest, exactly as parsing the decimal digits would).
    #[allow(clippy::cast_precision_loss)]
    let x = if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(0.0)
    };
    out.push_str(&es_number(x));
}

/// Formats a finite double as ECMAScript's `Number::toString` does (ECMA-262 §6.1.6.1.20):
/// the shortest digits that round-trip, positional for decimal exponents in `-7 < e < 21`,
/// otherwise `d.ddde±x`; `-0` is `0`. Returns `None` for NaN and the infinities, which JSON
/// cannot represent.
///
/// ```
/// use mcpl_core::mcpl::digest::es_number_checked as es;
/// assert_eq!(es(1e20).as_deref(), Some("100000000000000000000"));
/// assert_eq!(es(1e21).as_deref(), Some("1e+21"));
/// assert_eq!(es(1e-7).as_deref(), Some("1e-7"));
/// assert_eq!(es(f64::NAN), None);
/// ```
pub fn es_number_checked(x: f64) -> Option<String> {
    x.is_finite().then(|| es_number(x))
}

/// [`es_number_checked`] for a value known to be finite (a non-finite one yields `null`).
pub(crate) fn es_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` prints the shortest digit string that round-trips (ties resolved to the
    // closest), which is the `k`, `s` of ECMA-262's Number::toString.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    // The value is 0.digits × 10^n.
    let n = exponent + 1;
    let mut out = String::with_capacity(32);
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', usize::try_from(n - k).unwrap_or(0)));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', usize::try_from(-n).unwrap_or(0)));
        out.push_str(digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let e = n - 1;
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", e.unsigned_abs());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn numbers_follow_ecmascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-17.0, "-17"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (0.3333333333333333, "0.3333333333333333"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e-6, "0.000001"),
            (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"),
            (-1.25e-7, "-1.25e-7"),
            (123.456, "123.456"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (9007199254740991.0, "9007199254740991"),
            (9007199254740992.0, "9007199254740992"),
            (123456789012345683968.0, "123456789012345680000"),
            (4.35, "4.35"),
            (0.000001234, "0.000001234"),
            (1e300, "1e+300"),
        ];
        for (x, want) in cases {
            assert_eq!(es_number(*x), *want, "{x:e}");
        }
        assert_eq!(es_number_checked(f64::INFINITY), None);
        assert_eq!(es_number_checked(f64::NEG_INFINITY), None);
        assert_eq!(es_number_checked(f64::NAN), None);
    }

    #[test]
    fn big_integers_go_through_doubles() {
        let v: Value = serde_json::from_str(
            "[123456789012345678901, 18446744073709551615, -9223372036854775808]",
        )
        .unwrap();
        assert_eq!(
            canonical_json(&v),
            "[123456789012345680000,18446744073709552000,-9223372036854776000]"
        );
    }

    #[test]
    fn strings_escape_only_what_json_requires() {
        let v = json!("\"\\\u{0}\u{1f}\u{8}\t\n\u{c}\r\u{7f}\u{2028}\u{a0}🙂é");
        assert_eq!(
            canonical_json(&v),
            "\"\\\"\\\\\\u0000\\u001f\\b\\t\\n\\f\\r\u{7f}\u{2028}\u{a0}🙂é\""
        );
    }

    #[test]
    fn members_sort_by_utf16_code_units() {
        // U+FF61 sorts after U+1F642 in UTF-8 but before it in UTF-16 (surrogates D83D...).
        let v = json!({"\u{ff61}": 1, "\u{1f642}": 2, "b": null, "a": [true, false]});
        assert_eq!(
            canonical_json(&v),
            "{\"a\":[true,false],\"b\":null,\"\u{1f642}\":2,\"\u{ff61}\":1}"
        );
    }

    proptest! {
        #[test]
        fn es_numbers_round_trip(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assume!(x.is_finite());
            let s = es_number(x);
            let back: f64 = s.parse().unwrap();
            prop_assert!(back == x || (x == 0.0 && back == 0.0), "{} -> {}", x, s);
            // ES never writes a trailing `.` , a `+` in a positional number, or leading zeros.
            prop_assert!(!s.ends_with('.'));
            prop_assert!(!s.contains(".e"));
        }

        #[test]
        fn canonical_json_parses_back_to_the_same_value(s in "[ -~\u{80}-\u{10ffff}]{0,12}") {
            let v = json!({ s.clone(): [s.clone(), 1.5, null] });
            let text = canonical_json(&v);
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(back, v);
        }
    }
}
