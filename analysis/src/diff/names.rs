//! What differs between two runs of the same conversation by nature: the
//! values one peer mints and the other only echoes (`sessionId`,
//! `toolCallId`, `terminalId`) and JSON-RPC ids. `Names` names minted
//! values by their order of first appearance, so two traces compare equal
//! when they mint in the same order; `learn` pairs the values of two
//! aligned messages, so a replay can send the live run's values.

use crate::redact::{JsonPath, Seg};
use serde_json::Value;
use std::collections::HashMap;

/// The members whose string values a peer mints and the other echoes.
pub const MINTED_MEMBERS: [&str; 3] = ["sessionId", "toolCallId", "terminalId"];

/// The prefixes of the names [`Names`] gives, per member of
/// [`MINTED_MEMBERS`].
const NAME_PREFIXES: [&str; 3] = ["session-", "tool-call-", "terminal-"];

/// Distinct minted values named per member at most; past it values are
/// left as they are (compared as written).
pub const NAMES_MAX: usize = 10_000;

/// Minted values named by order of first appearance, per member.
#[derive(Debug, Default)]
pub struct Names {
    named: [HashMap<String, u64>; 3],
}

impl Names {
    /// The name of minted value `value` of member `member` (an index into
    /// [`MINTED_MEMBERS`]), giving it the next one on its first appearance.
    pub fn name(&mut self, member: usize, value: &str) -> Option<String> {
        let map = &mut self.named[member];
        let next = map.len() as u64 + 1;
        let n = match map.get(value) {
            Some(n) => *n,
            None if map.len() < NAMES_MAX => *map.entry(value.to_owned()).or_insert(next),
            None => return None,
        };
        Some(format!("{}{n}", NAME_PREFIXES[member]))
    }

    /// Replaces every minted value in `v` by its name.
    pub fn normalise(&mut self, v: &mut Value) {
        walk_minted(v, &mut |member, s| {
            if let Some(name) = self.name(member, s) {
                *s = name;
            }
        });
    }
}

/// Calls `each` with every string value of a member named in
/// [`MINTED_MEMBERS`] in `v` (the index of the member, the value). Values
/// parsed by serde_json are at most 128 levels deep, so the recursion is
/// bounded.
pub fn walk_minted(v: &mut Value, each: &mut impl FnMut(usize, &mut String)) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if let (Some(member), Value::String(s)) = (MINTED_MEMBERS.iter().position(|m| m == k), &mut *child) {
                    each(member, s);
                } else {
                    walk_minted(child, each);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|c| walk_minted(c, each)),
        _ => {}
    }
}

/// The minted values of `recorded` paired with those at the same places in
/// `live` (an aligned message of the live run), into `map` (recorded →
/// live), at most [`NAMES_MAX`] pairs.
pub fn learn(recorded: &Value, live: &Value, map: &mut HashMap<String, String>) {
    match (recorded, live) {
        (Value::Object(r), Value::Object(l)) => {
            for (k, rv) in r {
                let Some(lv) = l.get(k) else { continue };
                match (MINTED_MEMBERS.contains(&k.as_str()), rv, lv) {
                    (true, Value::String(rs), Value::String(ls)) => {
                        if rs != ls && map.len() < NAMES_MAX {
                            map.entry(rs.clone()).or_insert_with(|| ls.clone());
                        }
                    }
                    _ => learn(rv, lv, map),
                }
            }
        }
        (Value::Array(r), Value::Array(l)) => r.iter().zip(l).for_each(|(rv, lv)| learn(rv, lv, map)),
        _ => {}
    }
}

/// Replaces the minted values of `v` found in `map` by what they map to.
pub fn apply(v: &mut Value, map: &HashMap<String, String>) {
    if map.is_empty() {
        return;
    }
    walk_minted(v, &mut |_, s| {
        if let Some(to) = map.get(s.as_str()) {
            s.clone_from(to);
        }
    });
}

/// Removes from `v` the values the paths select (`--ignore`).
pub fn remove_ignored(v: &mut Value, paths: &[JsonPath]) {
    if paths.is_empty() {
        return;
    }
    let mut at: Vec<Owned> = Vec::new();
    remove_below(v, paths, &mut at);
}

/// A path segment, owned while the value below it is changed.
enum Owned {
    Key(String),
    Index(usize),
}

fn selected(paths: &[JsonPath], at: &[Owned]) -> bool {
    let segs: Vec<Seg<'_>> = at
        .iter()
        .map(|s| match s {
            Owned::Key(k) => Seg::Key(k),
            Owned::Index(i) => Seg::Index(*i),
        })
        .collect();
    paths.iter().any(|p| p.matches(&segs))
}

fn remove_below(v: &mut Value, paths: &[JsonPath], at: &mut Vec<Owned>) {
    match v {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                at.push(Owned::Key(k.clone()));
                if selected(paths, at) {
                    map.remove(&k);
                } else if let Some(child) = map.get_mut(&k) {
                    remove_below(child, paths, at);
                }
                at.pop();
            }
        }
        Value::Array(items) => {
            let mut i = 0;
            let mut index = 0;
            while i < items.len() {
                at.push(Owned::Index(index));
                if selected(paths, at) {
                    items.remove(i);
                } else {
                    remove_below(&mut items[i], paths, at);
                    i += 1;
                }
                at.pop();
                index += 1;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minted_values_are_named_in_order_of_appearance() {
        let mut names = Names::default();
        let mut v = json!({"sessionId": "zz", "x": [{"toolCallId": "c9"}, {"sessionId": "aa"}, {"sessionId": "zz"}]});
        names.normalise(&mut v);
        assert_eq!(
            v,
            json!({"sessionId": "session-1", "x": [{"toolCallId": "tool-call-1"}, {"sessionId": "session-2"}, {"sessionId": "session-1"}]})
        );
    }

    #[test]
    fn learned_values_are_applied() {
        let mut map = HashMap::new();
        learn(&json!({"result": {"sessionId": "old"}}), &json!({"result": {"sessionId": "new"}}), &mut map);
        let mut v = json!({"params": {"sessionId": "old", "text": "old"}});
        apply(&mut v, &map);
        assert_eq!(v, json!({"params": {"sessionId": "new", "text": "old"}}));
    }

    #[test]
    fn ignored_paths_are_removed() {
        let paths = [JsonPath::parse("$.result.agentInfo.version").unwrap(), JsonPath::parse("$..meta").unwrap()];
        let mut v = json!({"result": {"agentInfo": {"name": "a", "version": "1"}, "x": [{"meta": 1}, 2]}});
        remove_ignored(&mut v, &paths);
        assert_eq!(v, json!({"result": {"agentInfo": {"name": "a"}, "x": [{}, 2]}}));
    }
}
