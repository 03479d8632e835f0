//! The one pass of redaction over a frame's text: a JSON scanner that keeps
//! its own stack of open arrays and objects (no recursion), checks the syntax
//! as it goes and notes, in the order of the text, the byte ranges to
//! replace. Each value's fate is decided before it is read, from its
//! container: the member's name, the path automaton's states one level up,
//! and what the defaults make of `env` and `headers`.
//!
//! Every open container costs a byte; the ones looked into (at most
//! [`REDACT_MAX_DEPTH`] + 1, as deeper values are masked unread) also keep a
//! [`Level`] and the path automaton's states.

use super::jsonpath::Seg;
use super::{looks_secret, Redactor, MASK_JSON, REDACT_MAX_DEPTH};
use std::borrow::Cow;
use std::ops::Range;

/// The text is not exactly one JSON value.
#[derive(Debug)]
pub(super) struct NotJson;

/// One replacement of a byte range of the text.
#[derive(Debug)]
pub(super) struct Edit {
    at: Range<usize>,
    with: Replacement,
}

#[derive(Debug)]
enum Replacement {
    /// `"[REDACTED]"`.
    Mask,
    /// A string encoded again.
    Text(String),
}

/// The replacements that mask the secrets in `text`, in order.
pub(super) fn edits(redactor: &Redactor, text: &str) -> Result<Vec<Edit>, NotJson> {
    Scanner::new(redactor, text).run()
}

/// `text` with `edits` (in order, not overlapping) made.
pub(super) fn apply(text: &str, edits: &[Edit]) -> String {
    let mut out = String::with_capacity(text.len() + edits.len() * MASK_JSON.len());
    let mut copied = 0;
    for edit in edits {
        out.push_str(&text[copied..edit.at.start]);
        out.push_str(match &edit.with {
            Replacement::Mask => MASK_JSON,
            Replacement::Text(s) => s,
        });
        copied = edit.at.end;
    }
    out.push_str(&text[copied..]);
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Array,
    Object,
}

/// What the rules make of the values inside a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Plain,
    /// The top-level array: each element is a message of its own.
    Batch,
    /// An `env` or `headers` list: its objects are `{name, value}` entries.
    EnvList,
    /// An entry of such a list: its `value` is masked.
    EnvEntry,
    /// An `env` or `headers` map: every value is masked.
    EnvMap,
}

/// What a value about to be read is to its container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The whole frame.
    Root,
    /// The value of an `env` or `headers` member (defaults on).
    Env,
    /// An element of an `env` or `headers` list.
    EnvItem,
    Plain,
}

impl Role {
    /// The context a container in this role gives its values.
    fn ctx(self, kind: Kind) -> Ctx {
        match (self, kind) {
            (Role::Root, Kind::Array) => Ctx::Batch,
            (Role::Env, Kind::Array) => Ctx::EnvList,
            (Role::Env, Kind::Object) => Ctx::EnvMap,
            (Role::EnvItem, Kind::Object) => Ctx::EnvEntry,
            _ => Ctx::Plain,
        }
    }
}

/// An open container the scanner looks into.
struct Level<'s> {
    ctx: Ctx,
    /// The index of the element being read (arrays).
    index: usize,
    /// The name of the member being read, decoded (objects, when needed).
    key: Cow<'s, str>,
}

/// What the scanner expects next.
#[derive(Clone, Copy, Debug)]
enum Want {
    Value,
    /// After `[`.
    ValueOrEnd,
    /// After `{`.
    KeyOrEnd,
    /// After `,` in an object.
    Key,
    Colon,
    CommaOrEnd,
    /// The top-level value is complete.
    Nothing,
}

struct Scanner<'r, 's> {
    redactor: &'r Redactor,
    text: &'s str,
    bytes: &'s [u8],
    pos: usize,
    /// Every open container, innermost last.
    open: Vec<Kind>,
    /// The open containers that are not inside a masked value, innermost
    /// last (all of `open` unless a mask is being skipped).
    levels: Vec<Level<'s>>,
    /// The path automaton's states: `words` per level, then those of the
    /// value being read.
    states: Vec<u64>,
    words: usize,
    /// Where the value being masked started and how many containers were
    /// open around it.
    masking: Option<(usize, usize)>,
    /// Whether member names matter (defaults or paths).
    keys: bool,
    /// Whether strings are searched (patterns, or the defaults' URL rule).
    strings: bool,
    edits: Vec<Edit>,
}

impl<'r, 's> Scanner<'r, 's> {
    fn new(redactor: &'r Redactor, text: &'s str) -> Self {
        let words = redactor.paths.words();
        Scanner {
            redactor,
            text,
            bytes: text.as_bytes(),
            pos: 0,
            open: Vec::new(),
            levels: Vec::new(),
            states: vec![0; words],
            words,
            masking: None,
            keys: redactor.defaults || words > 0,
            strings: redactor.has_patterns() || redactor.defaults,
            edits: Vec::new(),
        }
    }

    fn run(mut self) -> Result<Vec<Edit>, NotJson> {
        let mut want = Want::Value;
        loop {
            self.skip_whitespace();
            let Some(&b) = self.bytes.get(self.pos) else {
                return if matches!(want, Want::Nothing) { Ok(self.edits) } else { Err(NotJson) };
            };
            want = match (want, b) {
                (Want::ValueOrEnd, b']') | (Want::KeyOrEnd, b'}') | (Want::CommaOrEnd, b']' | b'}') => self.close(b)?,
                (Want::Value | Want::ValueOrEnd, _) => self.value(b)?,
                (Want::Key | Want::KeyOrEnd, b'"') => self.key()?,
                (Want::Colon, b':') => {
                    self.pos += 1;
                    Want::Value
                }
                (Want::CommaOrEnd, b',') => self.comma(),
                _ => return Err(NotJson),
            };
        }
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.bytes.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// Reads the value starting with `b`, or opens it when a container.
    fn value(&mut self, b: u8) -> Result<Want, NotJson> {
        let start = self.pos;
        let role = match self.masking {
            Some(_) => Role::Plain,
            None => self.decide().unwrap_or_else(|| {
                self.masking = Some((start, self.open.len()));
                Role::Plain
            }),
        };
        match b {
            b'{' => return Ok(self.open(Kind::Object, role)),
            b'[' => return Ok(self.open(Kind::Array, role)),
            b'"' => {
                let escaped = self.string()?;
                if self.strings && self.masking.is_none() {
                    self.mask_in_string(start, escaped);
                }
            }
            b'-' | b'0'..=b'9' => self.number()?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            _ => return Err(NotJson),
        }
        Ok(self.value_done())
    }

    /// The role of the value about to be read, or `None` when it is to be
    /// masked; leaves its path states after the last level's.
    fn decide(&mut self) -> Option<Role> {
        let depth = self.open.len();
        let w = self.words;
        let Some(parent) = self.levels.last() else {
            self.redactor.paths.start(&mut self.states[..w]);
            return Some(Role::Root);
        };
        if depth > REDACT_MAX_DEPTH {
            return None;
        }
        let (above, here) = self.states.split_at_mut(depth * w);
        if parent.ctx == Ctx::Batch {
            self.redactor.paths.start(here);
            return Some(Role::Plain);
        }
        let key = (self.open[depth - 1] == Kind::Object).then_some(&*parent.key);
        let seg = key.map_or(Seg::Index(parent.index), Seg::Key);
        if self.redactor.paths.advance(&above[(depth - 1) * w..], seg, here) {
            return None;
        }
        if !self.redactor.defaults {
            return Some(Role::Plain);
        }
        match (parent.ctx, key) {
            (Ctx::EnvMap, _) => None,
            (Ctx::EnvEntry, Some("value")) => None,
            (_, Some(k)) if looks_secret(k) => None,
            (_, Some("env" | "headers")) => Some(Role::Env),
            (Ctx::EnvList, None) => Some(Role::EnvItem),
            _ => Some(Role::Plain),
        }
    }

    fn open(&mut self, kind: Kind, role: Role) -> Want {
        self.pos += 1;
        self.open.push(kind);
        if self.masking.is_none() {
            self.levels.push(Level { ctx: role.ctx(kind), index: 0, key: Cow::Borrowed("") });
            self.states.resize((self.levels.len() + 1) * self.words, 0);
        }
        match kind {
            Kind::Array => Want::ValueOrEnd,
            Kind::Object => Want::KeyOrEnd,
        }
    }

    fn close(&mut self, b: u8) -> Result<Want, NotJson> {
        let expected = if b == b']' { Kind::Array } else { Kind::Object };
        if self.open.pop() != Some(expected) {
            return Err(NotJson);
        }
        self.pos += 1;
        if self.levels.len() > self.open.len() {
            self.levels.pop();
            self.states.truncate((self.levels.len() + 1) * self.words);
        }
        Ok(self.value_done())
    }

    /// After a complete value: ends a mask that started with it.
    fn value_done(&mut self) -> Want {
        if let Some((start, depth)) = self.masking {
            if depth == self.open.len() {
                self.masking = None;
                if &self.text[start..self.pos] != MASK_JSON {
                    self.edits.push(Edit { at: start..self.pos, with: Replacement::Mask });
                }
            }
        }
        if self.open.is_empty() {
            Want::Nothing
        } else {
            Want::CommaOrEnd
        }
    }

    fn comma(&mut self) -> Want {
        self.pos += 1;
        match self.open.last() {
            Some(Kind::Object) => Want::Key,
            _ => {
                if self.masking.is_none() {
                    if let Some(level) = self.levels.last_mut() {
                        level.index += 1;
                    }
                }
                Want::Value
            }
        }
    }

    fn key(&mut self) -> Result<Want, NotJson> {
        let start = self.pos;
        let escaped = self.string()?;
        if self.keys && self.masking.is_none() {
            let key = decode(&self.text[start + 1..self.pos - 1], escaped);
            if let Some(level) = self.levels.last_mut() {
                level.key = key;
            }
        }
        Ok(Want::Colon)
    }

    /// Skips a string (at its `"`); true when it holds escapes.
    fn string(&mut self) -> Result<bool, NotJson> {
        self.pos += 1;
        let mut escaped = false;
        loop {
            let rest = &self.bytes[self.pos..];
            self.pos += rest.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).ok_or(NotJson)?;
            match self.bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.pos += match self.bytes.get(self.pos + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                        Some(b'u') if self.hex4(self.pos + 2) => 6,
                        _ => return Err(NotJson),
                    };
                }
                _ => return Err(NotJson),
            }
        }
    }

    fn hex4(&self, at: usize) -> bool {
        self.bytes.get(at..at + 4).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    }

    /// Notes the string at `start..pos` encoded again if a pattern matches
    /// inside it, or (defaults) a URL in it has a secret query value.
    fn mask_in_string(&mut self, start: usize, escaped: bool) {
        let raw = &self.text[start + 1..self.pos - 1];
        if !escaped && !self.redactor.has_patterns() && !raw.contains("://") {
            return;
        }
        let content = decode(raw, escaped);
        if let Some(new) = self.redactor.mask_string(&content) {
            let encoded = serde_json::to_string(&new).expect("strings always serialise");
            self.edits.push(Edit { at: start..self.pos, with: Replacement::Text(encoded) });
        }
    }

    /// Skips `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<(), NotJson> {
        if self.bytes[self.pos] == b'-' {
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(NotJson),
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            self.some_digits()?;
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    fn digits(&mut self) {
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
    }

    fn some_digits(&mut self) -> Result<(), NotJson> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            Err(NotJson)
        } else {
            Ok(())
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), NotJson> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(NotJson)
        }
    }
}

/// The text of a string's content (between its quotes, checked by
/// [`Scanner::string`]); a `\u` escape of half a surrogate pair alone
/// becomes U+FFFD.
fn decode(content: &str, escaped: bool) -> Cow<'_, str> {
    if !escaped {
        return Cow::Borrowed(content);
    }
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.as_bytes()[at + 1];
        rest = &rest[at + 2..];
        out.push(match code {
            b'u' => {
                let (c, after) = unicode_escape(rest);
                rest = after;
                c
            }
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            other => other as char,
        });
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The character of a `\u` escape whose four hex digits start `rest` (with
/// the low half that follows a high surrogate), and what is left after it.
fn unicode_escape(rest: &str) -> (char, &str) {
    let hex = |s: &str| u32::from_str_radix(&s[..4], 16).expect("checked while scanning");
    let first = hex(rest);
    let after = &rest[4..];
    if (0xD800..0xDC00).contains(&first) && after.starts_with("\\u") {
        let second = hex(&after[2..]);
        if (0xDC00..0xE000).contains(&second) {
            let c = char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00));
            return (c.expect("a surrogate pair is a character"), &after[6..]);
        }
    }
    (char::from_u32(first).unwrap_or('\u{FFFD}'), after)
}
