//! Finds a non-finite float in any `Serialize` value before it is turned into JSON.
//!
//! `serde_json` silently writes NaN and the infinities as `null`, which would give an in-memory
//! manifest holding `f64::NAN` the digest of a different manifest. This serializer only walks
//! the value and reports the path of the first non-finite float.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Impossible};

/// Where a non-finite float was found (or a serializer error message).
#[derive(Debug)]
pub(crate) struct Found(pub(crate) String);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Found(msg.to_string())
    }
}

/// Returns the dotted path of the first non-finite float in `value`, if any.
pub(crate) fn find_non_finite<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    let mut path = Vec::new();
    match value.serialize(Walker { path: &mut path }) {
        Ok(()) => None,
        Err(Found(p)) => Some(p),
    }
}

struct Walker<'a> {
    path: &'a mut Vec<String>,
}

impl Walker<'_> {
    fn float(self, v: f64) -> Result<(), Found> {
        if v.is_finite() { Ok(()) } else { Err(Found(self.path.join("."))) }
    }
}

struct Compound<'a> {
    path: &'a mut Vec<String>,
    index: usize,
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, segment: String, v: &T) -> Result<(), Found> {
        self.path.push(segment);
        let r = v.serialize(Walker { path: self.path });
        self.path.pop();
        r
    }

    fn next_index<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let i = self.index;
        self.index += 1;
        self.element(format!("[{i}]"), v)
    }
}

macro_rules! ok_scalars {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, _v: $ty) -> Result<(), Found> {
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for Walker<'a> {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    ok_scalars! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_i128(i128), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_u128(u128), serialize_char(char),
        serialize_str(&str), serialize_bytes(&[u8]), serialize_unit_struct(&'static str),
    }

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.float(v)
    }

    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Found> {
        v.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Found> {
        v.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Found> {
        self.path.push(variant.to_owned());
        let r = v.serialize(Walker { path: self.path });
        self.path.pop();
        r
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }

    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        Ok(Compound { path: self.path, index: 0 })
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        self.next_index(v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        self.next_index(v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        self.next_index(v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        self.next_index(v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        // Remember the key's text for the path; keys themselves cannot be floats in JSON.
        let name = key.serialize(KeyName).unwrap_or_else(|_| "?".to_owned());
        self.path.push(name);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let r = v.serialize(Walker { path: self.path });
        self.path.pop();
        r
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Found> {
        self.element(key.to_owned(), v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Found> {
        self.element(key.to_owned(), v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

/// Renders a map key (a string, or a number or bool that JSON writes as a string).
struct KeyName;

macro_rules! key_display {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<String, Found> {
            Ok(v.to_string())
        }
    )*};
}

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = Found;
    type SerializeSeq = Impossible<String, Found>;
    type SerializeTuple = Impossible<String, Found>;
    type SerializeTupleStruct = Impossible<String, Found>;
    type SerializeTupleVariant = Impossible<String, Found>;
    type SerializeMap = Impossible<String, Found>;
    type SerializeStruct = Impossible<String, Found>;
    type SerializeStructVariant = Impossible<String, Found>;

    key_display! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_i128(i128), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_u128(u128), serialize_char(char),
        serialize_str(&str), serialize_f32(f32), serialize_f64(f64),
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<String, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_none(self) -> Result<String, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<String, Found> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Found> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, Found> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Found> {
        Err(Found("?".to_owned()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Found> {
        Err(Found("?".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Limits {
        ok: f64,
        inner: Vec<Option<f32>>,
    }

    #[test]
    fn finds_the_path_of_a_non_finite_float() {
        assert_eq!(find_non_finite(&Limits { ok: 1.5, inner: vec![Some(2.0), None] }), None);
        let bad = Limits { ok: 1.5, inner: vec![None, Some(f32::NAN)] };
        assert_eq!(find_non_finite(&bad).as_deref(), Some("inner.[1]"));
        let mut map = BTreeMap::new();
        map.insert("limits", vec![f64::INFINITY]);
        assert_eq!(find_non_finite(&map).as_deref(), Some("limits.[0]"));
        assert_eq!(find_non_finite(&serde_json::json!({"a": [1, 2.5]})), None);
    }
}
