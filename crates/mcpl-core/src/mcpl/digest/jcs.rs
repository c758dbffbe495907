//! RFC 8785 JSON Canonicalization Scheme (JCS) over [`serde_json::Value`].
//!
//! JCS is `JSON.stringify` of ECMAScript with object members sorted by their UTF-16 code units:
//! no whitespace, strings escaped only where JSON requires it, numbers written the way
//! ECMAScript's `Number::toString` writes a double. `serde_json`'s own output differs in member
//! order (for non-ASCII names), in escapes and in numbers; the maintained
//! `serde_json_canonicalizer` crate writes JCS (its numbers through `ryu-js`), and the tests
//! below pin the rules the manifest digest depends on (every digest vector passes through it).

use serde_json::Value;

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
    // Infallible for a `Value`: its map keys are strings and its numbers finite.
    serde_json_canonicalizer::to_string(value).unwrap_or_default()
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
fn es_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_owned();
    }
    ryu_js::Buffer::new().format_finite(x).to_owned()
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
