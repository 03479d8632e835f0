//! Members written twice: the one reading every consumer gives them.
//!
//! A JSON object may name a member more than once; peers' parsers
//! (JavaScript's `JSON.parse`, Python's `json`) keep the last value, and so
//! does classification ([`crate::acp::Envelope`]). serde's derived structs
//! refuse such an object instead ("duplicate field"), so every consumer that
//! reads messages through them (the checker, the session model, the OTLP
//! mapper, the previews) parses with [`read_last`]: the text as written
//! first, and only when serde refused a repeated member, the text rebuilt by
//! [`last_members`]. The usual message costs nothing extra.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::collections::HashMap;

/// Parses `text` as `T`, reading a repeated member (at any depth) as its
/// last occurrence: when serde refuses `text` for a duplicate field, the
/// text rebuilt by [`last_members`] is kept in `keep` and parsed instead.
pub fn read_last<'a, T: Deserialize<'a>>(text: &'a [u8], keep: &'a mut Option<Vec<u8>>) -> serde_json::Result<T> {
    match serde_json::from_slice::<T>(text) {
        Err(e) if is_repeat(&e) => match last_members(text) {
            Some(rebuilt) => {
                let rebuilt: &'a Vec<u8> = keep.insert(rebuilt);
                serde_json::from_slice(rebuilt)
            }
            None => Err(e),
        },
        read => read,
    }
}

/// True when serde refused a text for a member written twice.
fn is_repeat(e: &serde_json::Error) -> bool {
    e.classify() == serde_json::error::Category::Data && e.to_string().starts_with("duplicate field")
}

/// `text` (one JSON value) with every member written more than once, in
/// any object at any depth, kept only at its last occurrence with its last
/// value; `None` when no object repeats a member, or `text` is not JSON.
/// Everything else stays as written: values' texts unchanged, objects and
/// arrays without a repeat inside copied whole; a rebuilt object loses
/// only the whitespace between its members and its names' escapes (a name
/// is written back from its decoded text). The result is never longer than
/// `text`.
pub fn last_members(text: &[u8]) -> Option<Vec<u8>> {
    let value: &RawValue = serde_json::from_slice(text).ok()?;
    let mut out = String::with_capacity(text.len());
    rebuild(value.get(), &mut out).then(|| out.into_bytes())
}

/// Writes `text` (a valid JSON value) to `out`, rebuilt when a repeat is
/// inside; true when it was.
fn rebuild(text: &str, out: &mut String) -> bool {
    let start = out.len();
    let changed = match text.as_bytes().first() {
        Some(b'{') => {
            let Ok(Members(members)) = serde_json::from_str::<Members>(text) else {
                out.push_str(text);
                return false;
            };
            let mut last: HashMap<&str, usize> = HashMap::with_capacity(members.len());
            for (i, (name, _)) in members.iter().enumerate() {
                last.insert(name.as_str(), i);
            }
            let mut changed = last.len() < members.len();
            out.push('{');
            let mut first = true;
            for (i, (name, value)) in members.iter().enumerate() {
                if last.get(name.as_str()) != Some(&i) {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                // A name serializes without fail.
                out.push_str(&serde_json::to_string(name).unwrap_or_default());
                out.push(':');
                changed |= rebuild(value.get(), out);
            }
            out.push('}');
            changed
        }
        Some(b'[') => {
            let Ok(elements) = serde_json::from_str::<Vec<&RawValue>>(text) else {
                out.push_str(text);
                return false;
            };
            let mut changed = false;
            out.push('[');
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                changed |= rebuild(e.get(), out);
            }
            out.push(']');
            changed
        }
        _ => false,
    };
    if !changed {
        out.truncate(start);
        out.push_str(text);
    }
    changed
}

/// An object's members in order, repeats included, values as written.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(MembersVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last(s: &str) -> Option<String> {
        last_members(s.as_bytes()).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn a_repeated_member_at_any_depth_is_kept_last_and_nothing_else_changes() {
        assert_eq!(last(r#"{"id":15,"id":16,"method":"x"}"#).as_deref(), Some(r#"{"id":16,"method":"x"}"#));
        assert_eq!(
            last(r#"{"a": [1.50, {"b":1,"b": {"c" : 2}}], "d" : {"e" : 1e2}}"#).as_deref(),
            Some(r#"{"a":[1.50,{"b":{"c" : 2}}],"d":{"e" : 1e2}}"#)
        );
        assert_eq!(last(r#"{"x\u0041":1,"xA":2}"#).as_deref(), Some(r#"{"xA":2}"#));
        assert_eq!(last(r#"{"a":1,"b":[{"c":2}]}"#), None);
        assert_eq!(last(r#"{"a":1,"a""#), None);
        assert_eq!(last("[1,2]"), None);
    }

    #[test]
    fn read_last_reads_a_repeat_as_its_last_and_other_failures_as_they_were() {
        #[derive(serde::Deserialize)]
        struct M {
            id: i64,
        }
        let mut keep = None;
        assert_eq!(read_last::<M>(br#"{"id":15,"id":16}"#, &mut keep).unwrap().id, 16);
        let mut keep = None;
        assert!(read_last::<M>(br#"{"id":"x"}"#, &mut keep).is_err());
        assert!(keep.is_none());
    }
}
