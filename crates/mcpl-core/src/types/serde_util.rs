//! Serde helpers shared by the message types.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;

/// Serializes an `f64` holding an integral value as a JSON integer, so `18` read from the wire is
/// written back as `18` rather than `18.0`.
pub(crate) fn write_f64<S: Serializer>(v: f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        let n = v as i64;
        s.serialize_i64(n)
    } else {
        s.serialize_f64(v)
    }
}

/// Serde `with` module for `f64` fields: see [`write_f64`].
pub(crate) mod num {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        write_f64(*v, s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        f64::deserialize(d)
    }
}

/// Serde `with` module for `Option<f64>` fields: see [`write_f64`].
pub(crate) mod opt_num {
    use super::*;

    #[allow(clippy::ref_option)]
    pub(crate) fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => write_f64(*v, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<f64>::deserialize(d)
    }
}

/// Reads the string member `key` of a JSON object, if present.
pub(crate) fn str_member<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

/// Deserializes a value from a JSON value, mapping the error into `D::Error`.
pub(crate) fn from_value<'de, T: DeserializeOwned, D: Deserializer<'de>>(
    value: Value,
) -> Result<T, D::Error> {
    serde_json::from_value(value).map_err(serde::de::Error::custom)
}

/// Decodes request or notification params: absent params decode like `{}`; a decoding failure is
/// a `-32602` invalid params error.
pub(crate) fn decode_params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorObject> {
    let value = params.unwrap_or_else(|| Value::Object(Map::new()));
    serde_json::from_value(value).map_err(ErrorObject::invalid_params)
}

/// Serializes a value that is known to serialize without error (plain data with string keys);
/// falls back to `null` rather than panicking.
pub(crate) fn to_value_lossless<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Implements `Serialize`/`Deserialize` (plus `From` for each variant) for an enum of newtype
/// variants whose inner structs carry their own tag member: serializing writes the inner struct
/// as is, deserializing dispatches on the tag's value.
macro_rules! tagged_union {
    ($name:ident, $tag:literal, { $($variant:ident($ty:ty) = $value:literal),+ $(,)? }) => {
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $($name::$variant(inner) => serde::Serialize::serialize(inner, s),)+
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
                match $crate::types::serde_util::str_member(&map, $tag) {
                    // The tag is checked here: a variant's own decoder (`strict_tag!`'s inherent
                    // one, where there is one) need not rebuild the map to check it again.
                    $(Some($value) => <$ty>::deserialize(serde_json::Value::Object(map))
                        .map_err(serde::de::Error::custom)
                        .map($name::$variant),)+
                    Some(other) => Err(serde::de::Error::custom(format!(
                        "unknown {} `{}` for {}",
                        $tag,
                        other,
                        stringify!($name)
                    ))),
                    None => Err(serde::de::Error::missing_field($tag)),
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

pub(crate) use tagged_union;

/// Implements `Serialize`/`Deserialize` for a struct derived with `#[serde(remote = "Self")]`
/// and a struct-level `#[serde(tag = ..., rename = ...)]`: serializing writes the tag, and
/// deserializing requires the tag member to hold exactly this value (serde's derive alone
/// would ignore it).
macro_rules! strict_tag {
    ($($ty:ident: $tag:literal = $value:literal),+ $(,)?) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $ty::serialize(self, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
                match $crate::types::serde_util::str_member(&map, $tag) {
                    Some($value) => $ty::deserialize(serde_json::Value::Object(map))
                        .map_err(serde::de::Error::custom),
                    Some(other) => Err(serde::de::Error::custom(format!(
                        "expected {} `{}` for {}, found `{}`",
                        $tag,
                        $value,
                        stringify!($ty),
                        other
                    ))),
                    None => Err(serde::de::Error::missing_field($tag)),
                }
            }
        }
    )+};
}

pub(crate) use strict_tag;
