//! The rule for a member of the wrong type: it reads as absent, and the
//! rest of the message still reads. serde's derived structs would refuse
//! the whole message for one such leaf (`"title": 7`), so every member of
//! the shapes in [`super`] is read through one of these functions, which
//! accept any JSON value and keep it only when it has the expected type.
//! Nothing is copied: a string without escapes stays borrowed, and a value
//! of another type is skipped as it is read.

use serde::de::{value::MapAccessDeserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// What a leaf may be made from; every other JSON value gives `None`.
pub trait Leaf<'de>: Sized {
    /// What the value is expected to be, for messages.
    const EXPECTED: &'static str;
    fn from_str(_: Cow<'de, str>) -> Option<Self> {
        None
    }
    fn from_i64(_: i64) -> Option<Self> {
        None
    }
    fn from_u64(_: u64) -> Option<Self> {
        None
    }
    fn from_f64(_: f64) -> Option<Self> {
        None
    }
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
}

impl<'de> Leaf<'de> for Cow<'de, str> {
    const EXPECTED: &'static str = "a string";
    fn from_str(s: Cow<'de, str>) -> Option<Self> {
        Some(s)
    }
}

impl Leaf<'_> for i64 {
    const EXPECTED: &'static str = "an integer";
    fn from_i64(n: i64) -> Option<Self> {
        Some(n)
    }
    fn from_u64(n: u64) -> Option<Self> {
        i64::try_from(n).ok()
    }
}

impl Leaf<'_> for u64 {
    const EXPECTED: &'static str = "a non-negative integer";
    fn from_i64(n: i64) -> Option<Self> {
        u64::try_from(n).ok()
    }
    fn from_u64(n: u64) -> Option<Self> {
        Some(n)
    }
}

impl Leaf<'_> for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_i64(n: i64) -> Option<Self> {
        Some(n as f64)
    }
    fn from_u64(n: u64) -> Option<Self> {
        Some(n as f64)
    }
    fn from_f64(n: f64) -> Option<Self> {
        Some(n)
    }
}

impl Leaf<'_> for bool {
    const EXPECTED: &'static str = "a boolean";
    fn from_bool(b: bool) -> Option<Self> {
        Some(b)
    }
}

/// The visits of a string, number, boolean or `null` where a visitor
/// expects an object or an array: each reads as absent
/// (`Self::Value::default()`), never an error.
macro_rules! scalars_read_as_absent {
    () => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}
pub(super) use scalars_read_as_absent;

/// Skips an array, giving `None`.
fn skip_seq<'de, A: SeqAccess<'de>, T>(mut seq: A) -> Result<Option<T>, A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(None)
}

/// Skips an object, giving `None`.
fn skip_map<'de, A: MapAccess<'de>, T>(mut map: A) -> Result<Option<T>, A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(None)
}

struct LeafVisitor<T>(PhantomData<T>);

impl<'de, T: Leaf<'de>> Visitor<'de> for LeafVisitor<T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(T::from_str(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(T::from_str(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(T::from_str(Cow::Owned(s)))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(T::from_i64(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(T::from_u64(n))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
        Ok(T::from_f64(n))
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(T::from_bool(b))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)
    }
}

/// A string, integer, number or boolean member: `None` for any other value.
pub fn leaf<'de, D: Deserializer<'de>, T: Leaf<'de>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(LeafVisitor(PhantomData))
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)
    }
    scalars_read_as_absent!();
}

/// An object member read as `T` (whose own members are lenient in turn):
/// `None` when the value is not an object.
pub fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(ObjectVisitor(PhantomData))
}

/// One element of a list of objects: an element that is no object is kept
/// as `T::default()` (all its members absent), so counts stay true.
struct Element<T>(T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Element<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(|t: Option<T>| Element(t.unwrap_or_default()))
    }
}

struct ListVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for ListVisitor<T> {
    type Value = Option<Vec<T>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Element(t)) = seq.next_element::<Element<T>>()? {
            out.push(t);
        }
        Ok(Some(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)
    }
    scalars_read_as_absent!();
}

/// An array of objects: `None` when the value is not an array.
pub fn list<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    d.deserialize_any(ListVisitor(PhantomData))
}

/// One string of a list of strings; another value reads as absent.
#[derive(Default)]
pub struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d).map(Text)
    }
}

struct StringsVisitor;

impl<'de> Visitor<'de> for StringsVisitor {
    type Value = Option<Vec<Cow<'de, str>>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of strings")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Text(t)) = seq.next_element::<Text>()? {
            out.extend(t);
        }
        Ok(Some(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)
    }
    scalars_read_as_absent!();
}

/// An array of strings (its elements of other types left out): `None` when
/// the value is not an array.
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Cow<'de, str>>>, D::Error> {
    d.deserialize_any(StringsVisitor)
}

/// An array's elements, each as written: `None` when the value is not an
/// array.
pub struct RawItems<'a>(pub Option<Vec<&'a serde_json::value::RawValue>>);

struct RawItemsVisitor;

impl<'de> Visitor<'de> for RawItemsVisitor {
    type Value = Option<Vec<&'de serde_json::value::RawValue>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(Some(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)
    }
    scalars_read_as_absent!();
}

impl<'de> Deserialize<'de> for RawItems<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawItemsVisitor).map(RawItems)
    }
}
