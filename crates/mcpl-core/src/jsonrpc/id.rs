//! Request ids.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON-RPC request id: a string or an integer.
///
/// Ids round-trip exactly: `0` stays the integer `0`, `"0"` stays the string `"0"`, and the two are
/// different ids. MCP forbids `null` ids on requests, so there is no null variant here; the one place
/// the wire allows `null` (an error answering a message whose id could not be read) is typed as
/// `Option<RequestId>`.
///
/// # Examples
///
/// ```
/// use mcpl_core::jsonrpc::RequestId;
///
/// let id: RequestId = serde_json::from_str("0").unwrap();
/// assert_eq!(id, RequestId::Number(0));
/// assert_eq!(serde_json::to_string(&RequestId::from("a")).unwrap(), "\"a\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl serde::de::Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer request id")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("request id out of range"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<RequestId, E> {
                // JSON-RPC discourages fractional ids; integral floats (e.g. `1.0`) are accepted.
                if v.fract() == 0.0 && v >= i64::MIN as f64 && v <= i64::MAX as f64 {
                    Ok(RequestId::Number(v as i64))
                } else {
                    Err(E::custom("request id must be an integer"))
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_a_valid_id_and_differs_from_string_zero() {
        let n: RequestId = serde_json::from_str("0").unwrap();
        let s: RequestId = serde_json::from_str("\"0\"").unwrap();
        assert_eq!(n, RequestId::Number(0));
        assert_ne!(n, s);
        assert_eq!(serde_json::to_string(&n).unwrap(), "0");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"0\"");
    }

    #[test]
    fn rejects_null_bool_object_and_fraction() {
        for bad in ["null", "true", "{}", "[]", "1.5"] {
            assert!(serde_json::from_str::<RequestId>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn extremes_round_trip() {
        for n in [i64::MIN, -1, 0, 1, i64::MAX] {
            let text = serde_json::to_string(&RequestId::Number(n)).unwrap();
            assert_eq!(serde_json::from_str::<RequestId>(&text).unwrap(), RequestId::Number(n));
        }
    }
}
