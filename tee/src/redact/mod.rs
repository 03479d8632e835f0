//! Masking secrets in frames: on export (by default) and, with
//! `acp-tee record --redact`, before frames are stored.
//!
//! Default rules mask the values of `env` and `headers` (`mcpServers[].env`,
//! `mcpServers[].headers`, `terminal/create`'s `env`, terminal auth methods'
//! `env`; as `{name, value}` lists or as maps) and the value of every member
//! whose name looks like a secret (token, key, secret, password,
//! authorization, cookie, credential). User rules add a JSONPath (`$...`),
//! whose values are masked, or a regular expression, whose matches are masked
//! inside every string (and inside frames that are not JSON, such as stderr).
//!
//! A message is rebuilt only where something was masked: everything else keeps
//! its exact text, members keep their order.
//!
//! Architecture Invariant: redaction works on copies; it never changes the
//! bytes the relay forwards, and export-time redaction never changes the store.

mod jsonpath;
mod values;

pub use jsonpath::{JsonPath, Seg};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// What a masked value becomes.
pub const MASK: &str = "[REDACTED]";

/// One user rule.
#[derive(Clone, Debug)]
pub enum Rule {
    /// Mask the values this path selects.
    Path(JsonPath),
    /// Mask every match inside strings.
    Pattern(regex::Regex),
}

/// A rule the user wrote that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error(
    "redaction rule `{rule}` is not usable: {why}; write a JSONPath such as `$.params.cwd` or a regular expression"
)]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub why: String,
}

impl std::str::FromStr for Rule {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |why: String| RuleError { rule: s.to_owned(), why };
        if s.starts_with('$') {
            JsonPath::parse(s).map(Rule::Path).map_err(fail)
        } else {
            regex::Regex::new(s).map(Rule::Pattern).map_err(|e| fail(e.to_string()))
        }
    }
}

/// A set of rules: the defaults (unless turned off) and the user's.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    defaults: bool,
    rules: Vec<Rule>,
}

impl Redactor {
    /// The default rules plus `rules`.
    pub fn new(rules: Vec<Rule>) -> Redactor {
        Redactor { defaults: true, rules }
    }

    /// Only `rules`, without the defaults.
    pub fn without_defaults(rules: Vec<Rule>) -> Redactor {
        Redactor { defaults: false, rules }
    }

    /// True when it can mask nothing.
    pub fn is_noop(&self) -> bool {
        !self.defaults && self.rules.is_empty()
    }

    /// The frame's bytes with secrets masked (borrowed when nothing was).
    pub fn redact<'a>(&self, raw: &'a [u8]) -> Cow<'a, [u8]> {
        if self.is_noop() {
            return Cow::Borrowed(raw);
        }
        let Ok(text) = std::str::from_utf8(raw) else { return Cow::Borrowed(raw) };
        let body = text.trim_end();
        let tail = &text[body.len()..];
        let changed = match serde_json::from_str::<&RawValue>(body) {
            Ok(value) if body.starts_with('[') => self.batch(value),
            Ok(value) => self.value(value, &mut Vec::new()),
            Err(_) => self.text(body),
        };
        match changed {
            Some(new) => Cow::Owned(format!("{new}{tail}").into_bytes()),
            None => Cow::Borrowed(raw),
        }
    }

    /// A batch: the rules apply to each message as to a message of its own.
    fn batch(&self, value: &RawValue) -> Option<String> {
        let items: Vec<&RawValue> = serde_json::from_str(value.get()).ok()?;
        let new: Vec<Option<String>> = items.iter().map(|m| self.value(m, &mut Vec::new())).collect();
        new.iter().any(Option::is_some).then(|| {
            let parts: Vec<&str> = items.iter().zip(&new).map(|(m, n)| n.as_deref().unwrap_or(m.get())).collect();
            format!("[{}]", parts.join(","))
        })
    }

    fn path_selected(&self, path: &[Seg]) -> bool {
        self.rules.iter().any(|r| matches!(r, Rule::Path(p) if p.matches(path)))
    }

    /// The new text of `value` at `path`, if anything in it was masked.
    fn value(&self, value: &RawValue, path: &mut Vec<Seg>) -> Option<String> {
        if !path.is_empty() && self.path_selected(path) {
            return Some(mask_json());
        }
        let text = value.get();
        match text.as_bytes().first() {
            Some(b'{') => self.object(text, path),
            Some(b'[') => self.array(text, path),
            Some(b'"') => {
                let s: String = serde_json::from_str(text).ok()?;
                self.text(&s).map(|new| serde_json::to_string(&new).expect("strings always serialise"))
            }
            _ => None,
        }
    }

    fn object(&self, text: &str, path: &mut Vec<Seg>) -> Option<String> {
        let Members(members) = serde_json::from_str(text).ok()?;
        let mut new = Vec::with_capacity(members.len());
        for (key, member) in &members {
            path.push(Seg::Key(key.clone()));
            let changed = if self.defaults && looks_secret(key) {
                Some(mask_json())
            } else if self.defaults && (key == "env" || key == "headers") {
                mask_values(member).or_else(|| self.value(member, path))
            } else {
                self.value(member, path)
            };
            path.pop();
            new.push(changed);
        }
        if new.iter().all(Option::is_none) {
            return None;
        }
        let parts: Vec<String> = members
            .iter()
            .zip(new)
            .map(|((k, v), n)| {
                let key = serde_json::to_string(k).expect("strings always serialise");
                format!("{key}:{}", n.as_deref().unwrap_or(v.get()))
            })
            .collect();
        Some(format!("{{{}}}", parts.join(",")))
    }

    fn array(&self, text: &str, path: &mut Vec<Seg>) -> Option<String> {
        let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
        let mut new = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            path.push(Seg::Index(i));
            new.push(self.value(item, path));
            path.pop();
        }
        new.iter().any(Option::is_some).then(|| {
            let parts: Vec<&str> = items.iter().zip(&new).map(|(m, n)| n.as_deref().unwrap_or(m.get())).collect();
            format!("[{}]", parts.join(","))
        })
    }

    /// `text` with every pattern's matches masked, if any matched.
    fn text(&self, text: &str) -> Option<String> {
        let mut out = Cow::Borrowed(text);
        for rule in &self.rules {
            if let Rule::Pattern(re) = rule {
                if let Cow::Owned(s) = re.replace_all(&out, MASK) {
                    out = Cow::Owned(s);
                }
            }
        }
        match out {
            Cow::Owned(s) => Some(s),
            Cow::Borrowed(_) => None,
        }
    }
}

fn mask_json() -> String {
    format!("\"{MASK}\"")
}

/// Whether a member's name says its value is a secret: after dropping case
/// and separators it ends in token, key, secret, password, ... (`apiKey`,
/// `access_token`, `X-Auth-Token`; not `maxTokens` or `keyword`).
pub fn looks_secret(name: &str) -> bool {
    let n: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect();
    const ENDINGS: [&str; 8] = ["token", "key", "secret", "password", "passwd", "credential", "credentials", "pwd"];
    const ANYWHERE: [&str; 4] = ["secret", "password", "authorization", "cookie"];
    ENDINGS.iter().any(|e| n.ends_with(e)) || ANYWHERE.iter().any(|a| n.contains(a))
}

/// The values of an `env` or `headers` member masked: a `{name, value}` list
/// keeps the names, a map keeps its keys.
fn mask_values(member: &RawValue) -> Option<String> {
    let text = member.get();
    if text.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).ok()?;
        let parts: Vec<String> = items
            .iter()
            .map(|item| match serde_json::from_str::<Members>(item.get()) {
                Ok(Members(m)) => {
                    let fields: Vec<String> = m
                        .iter()
                        .map(|(k, v)| {
                            let key = serde_json::to_string(k).expect("strings always serialise");
                            if k == "value" {
                                format!("{key}:{}", mask_json())
                            } else {
                                format!("{key}:{}", v.get())
                            }
                        })
                        .collect();
                    format!("{{{}}}", fields.join(","))
                }
                Err(_) => item.get().to_owned(),
            })
            .collect();
        let new = format!("[{}]", parts.join(","));
        (new != text).then_some(new)
    } else if text.starts_with('{') {
        let Members(m) = serde_json::from_str(text).ok()?;
        let fields: Vec<String> = m
            .iter()
            .map(|(k, _)| format!("{}:{}", serde_json::to_string(k).expect("strings always serialise"), mask_json()))
            .collect();
        Some(format!("{{{}}}", fields.join(",")))
    } else {
        None
    }
}

/// An object's members in the order they were written, values unparsed.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests;
