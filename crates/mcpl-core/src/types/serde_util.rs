//! Serde helpers shared by the message types.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
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

/// Reads a string and makes `T` of it with `parse`, borrowing the string where the input allows
/// (`Cow<str>`'s own decoder always copies it); `parse`'s error is the decoder's custom error.
pub(crate) fn read_str<'de, D, T, E>(
    d: D,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    E: fmt::Display,
{
    struct Text<F>(F);
    impl<T, E: fmt::Display, F: FnOnce(&str) -> Result<T, E>> Visitor<'_> for Text<F> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<X: de::Error>(self, s: &str) -> Result<T, X> {
            (self.0)(s).map_err(X::custom)
        }
    }
    d.deserialize_str(Text(parse))
}

/// An object whose member `tag` says which type it is, its first member read: the decoder of
/// that type, given as a [`Deserializer`] (see `tagged_union!` and `strict_tag!`).
///
/// Most writers put the tag first: then the type's decoder reads the rest of the object as it
/// comes, the tag handed to it again first, and no tree is built. Otherwise the object is read
/// whole into a tree first. Either way a repeated member is refused (`duplicate field`), so that
/// no reader can take another of its values than this one did.
pub(crate) struct Tagged<A> {
    tag: &'static str,
    /// The tag's value, when it is a string.
    value: Option<String>,
    body: Body<A>,
}

enum Body<A> {
    /// The tag came first: the rest of the object, unread.
    Rest(A),
    /// It did not: the whole object.
    Whole(Map<String, Value>),
}

impl<'de, A: MapAccess<'de>> Tagged<A> {
    /// Reads the first member of `map`, and the whole object if that is not `tag`.
    pub(crate) fn read(mut map: A, tag: &'static str) -> Result<Self, A::Error> {
        let string = |value: Value| match value {
            Value::String(s) => Some(s),
            _ => None,
        };
        match map.next_key_seed(ReadKey)? {
            Some(key) if key == tag => {
                let value = string(map.next_value()?);
                Ok(Tagged { tag, value, body: Body::Rest(map) })
            }
            first => {
                let mut whole = Map::new();
                // `first` is the first key, or `None` for an object without members.
                let mut next = match first {
                    Some(key) => Some((key.into_owned(), map.next_value()?)),
                    None => None,
                };
                while let Some((key, value)) = next {
                    match whole.entry(key) {
                        serde_json::map::Entry::Vacant(slot) => slot.insert(value),
                        serde_json::map::Entry::Occupied(slot) => {
                            let key = slot.key();
                            return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
                        }
                    };
                    next = map.next_entry::<String, Value>()?;
                }
                let value = whole.get(tag).and_then(Value::as_str).map(str::to_owned);
                Ok(Tagged { tag, value, body: Body::Whole(whole) })
            }
        }
    }

    /// The tag's value, when it is a string.
    pub(crate) fn value(&self) -> Option<&str> {
        self.value.as_deref()
    }
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Tagged<A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        match self.body {
            Body::Rest(rest) => {
                visitor.visit_map(TagFirst { tag: self.tag, replay: true, value: self.value, rest })
            }
            Body::Whole(map) => {
                Value::Object(map).deserialize_any(visitor).map_err(de::Error::custom)
            }
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// Reads an object's key, borrowed from the input unless it holds an escape.
struct ReadKey;

impl<'de> DeserializeSeed<'de> for ReadKey {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for ReadKey {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(key))
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key.to_owned()))
    }
    fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(key))
    }
}

/// The rest of an object whose first member, the tag, was read already: that member again,
/// then the rest, where the tag may not come again (the variant's decoder would ignore it).
struct TagFirst<A> {
    tag: &'static str,
    /// Whether the tag's key is still to be handed over.
    replay: bool,
    value: Option<String>,
    rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for TagFirst<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if std::mem::take(&mut self.replay) {
            return seed.deserialize(BorrowedStrDeserializer::new(self.tag)).map(Some);
        }
        match self.rest.next_key_seed(ReadKey)? {
            None => Ok(None),
            Some(key) if key == self.tag => {
                Err(de::Error::custom(format_args!("duplicate field `{}`", self.tag)))
            }
            Some(Cow::Borrowed(key)) => {
                seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
            }
            Some(Cow::Owned(key)) => seed.deserialize(StringDeserializer::new(key)).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(StringDeserializer::new(value)),
            None => self.rest.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.rest.size_hint().map(|n| n + usize::from(self.value.is_some()))
    }
}

/// Implements a visitor of the objects the `tagged_union!` and `strict_tag!` decoders read.
macro_rules! tagged_visitor {
    ($visitor:ident, $out:ty, $tag:literal, |$tagged:ident| $body:expr) => {
        struct $visitor;
        impl<'de> serde::de::Visitor<'de> for $visitor {
            type Value = $out;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<$out, A::Error> {
                #[allow(unused_imports)]
                use serde::de::Error as _;
                let $tagged = $crate::types::serde_util::Tagged::read(map, $tag)?;
                $body
            }
        }
    };
}

pub(crate) use tagged_visitor;

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
                // The tag is checked here: a variant's own decoder (`strict_tag!`'s inherent one,
                // where there is one) need not check it again.
                $crate::types::serde_util::tagged_visitor!(Union, $name, $tag, |tagged| {
                    match tagged.value() {
                        $(Some($value) => <$ty>::deserialize(tagged).map($name::$variant),)+
                        Some(other) => Err(A::Error::custom(format!(
                            "unknown {} `{}` for {}",
                            $tag,
                            other,
                            stringify!($name)
                        ))),
                        None => Err(A::Error::missing_field($tag)),
                    }
                });
                d.deserialize_map(Union)
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
                $crate::types::serde_util::tagged_visitor!(Strict, $ty, $tag, |tagged| {
                    match tagged.value() {
                        Some($value) => $ty::deserialize(tagged),
                        Some(other) => Err(A::Error::custom(format!(
                            "expected {} `{}` for {}, found `{}`",
                            $tag,
                            $value,
                            stringify!($ty),
                            other
                        ))),
                        None => Err(A::Error::missing_field($tag)),
                    }
                });
                d.deserialize_map(Strict)
            }
        }
    )+};
}

pub(crate) use strict_tag;
