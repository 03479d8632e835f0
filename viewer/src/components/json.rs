//! Pretty, collapsible JSON: objects and arrays are `<details>` open down to a depth, leaves coloured by type.

use leptos::prelude::*;
use serde_json::Value;

/// Depth below which containers start open.
const OPEN_DEPTH: usize = 4;
/// Items of a container shown before the rest is summarised.
const MAX_ITEMS: usize = 500;

/// A JSON value as a collapsible tree.
pub fn json_tree(v: &Value) -> AnyView {
    node(None, v, 0)
}

fn node(key: Option<String>, v: &Value, depth: usize) -> AnyView {
    let key_view = key.map(|k| view! { <span class="jk">{k}</span><span class="jp">": "</span> });
    let (open, close, len, children): (&str, &str, usize, Vec<AnyView>) = match v {
        Value::Object(map) if !map.is_empty() => {
            let kids = map.iter().take(MAX_ITEMS).map(|(k, c)| node(Some(format!("\"{k}\"")), c, depth + 1)).collect();
            ("{", "}", map.len(), kids)
        }
        Value::Array(items) if !items.is_empty() => {
            let kids = items.iter().take(MAX_ITEMS).map(|c| node(None, c, depth + 1)).collect();
            ("[", "]", items.len(), kids)
        }
        leaf => return view! { <div class="jl">{key_view}{leaf_view(leaf)}</div> }.into_any(),
    };
    let more = (len > MAX_ITEMS).then(|| view! { <div class="jmore">{format!("… {} more", len - MAX_ITEMS)}</div> });
    let noun = if open == "{" { "keys" } else { "items" };
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

fn leaf_view(v: &Value) -> AnyView {
    let (class, text) = match v {
        Value::String(s) => ("js", serde_json::to_string(s).unwrap_or_default()),
        Value::Number(n) => ("jnum", n.to_string()),
        Value::Bool(b) => ("jbool", b.to_string()),
        Value::Null => ("jnull", "null".to_owned()),
        Value::Object(_) => ("jb", "{}".to_owned()),
        Value::Array(_) => ("jb", "[]".to_owned()),
    };
    view! { <span class=class>{text}</span> }.into_any()
}
