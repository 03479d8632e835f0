//! Pretty, collapsible JSON in the order it was written: objects and arrays are `<details>` open down to a
//! depth, leaves coloured by type. Members keep their wire order and repeated members all show (a
//! `serde_json::Value` would sort them and keep only the last).

use leptos::prelude::*;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// Depth below which containers start open.
const OPEN_DEPTH: usize = 4;
/// Items of a container shown before the rest is summarised.
const MAX_ITEMS: usize = 500;

/// A JSON value with its object members in wire order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object's members, in order, repeats included.
    Object(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            members.push((k, v));
        }
        Ok(Json::Object(members))
    }
}

/// Parses JSON text keeping member order (serde_json's nesting limit applies).
pub fn parse(text: &str) -> Result<Json, serde_json::Error> {
    serde_json::from_str(text)
}

/// A JSON value as a collapsible tree; the search's `words` are marked in strings.
pub fn json_tree(v: &Json, words: &[String]) -> AnyView {
    node(None, v, 0, words)
}

fn node(key: Option<String>, v: &Json, depth: usize, words: &[String]) -> AnyView {
    let key_view = key.map(|k| view! { <span class="jk">{k}</span><span class="jp">": "</span> });
    let (open, close, len, children): (&str, &str, usize, Vec<AnyView>) = match v {
        Json::Object(members) if !members.is_empty() => {
            let kids = members
                .iter()
                .take(MAX_ITEMS)
                .map(|(k, c)| node(Some(serde_json::to_string(k).unwrap_or_default()), c, depth + 1, words))
                .collect();
            ("{", "}", members.len(), kids)
        }
        Json::Array(items) if !items.is_empty() => {
            let kids = items.iter().take(MAX_ITEMS).map(|c| node(None, c, depth + 1, words)).collect();
            ("[", "]", items.len(), kids)
        }
        leaf => return view! { <div class="jl">{key_view}{leaf_view(leaf, words)}</div> }.into_any(),
    };
    let more = (len > MAX_ITEMS).then(|| view! { <div class="jmore">{format!("… {} more", len - MAX_ITEMS)}</div> });
    let noun = match (open, len) {
        ("{", 1) => "key",
        ("{", _) => "keys",
        (_, 1) => "item",
        _ => "items",
    };
    view! {
        <details class="jn" open=depth < OPEN_DEPTH && len <= 100>
            <summary>
                {key_view}
                <span class="jb">{open}</span>
                <span class="jsum">{format!("… {len} {noun} {close}")}</span>
            </summary>
            <div class="jc">{children} {more}</div>
            <span class="jb">{close}</span>
        </details>
    }
    .into_any()
}

fn leaf_view(v: &Json, words: &[String]) -> AnyView {
    let (class, text) = match v {
        Json::String(s) => ("js", serde_json::to_string(s).unwrap_or_default()),
        Json::Number(n) => ("jnum", n.to_string()),
        Json::Bool(b) => ("jbool", b.to_string()),
        Json::Null => ("jnull", "null".to_owned()),
        Json::Object(_) => ("jb", "{}".to_owned()),
        Json::Array(_) => ("jb", "[]".to_owned()),
    };
    view! { <span class=class>{super::highlight::marked(text, words)}</span> }.into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_wire_order_and_repeats() {
        let v = parse(r#"{"z":1,"a":{"y":true,"b":null},"z":[2,"x"]}"#).unwrap();
        let Json::Object(members) = v else { panic!("an object") };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "a", "z"]);
        let Json::Object(inner) = &members[1].1 else { panic!("an object") };
        assert_eq!(inner[0].0, "y");
    }
}
