//! Masking secrets in frames: on export (by default) and, with
//! `acp-tee record --redact`, before frames are stored.
//!
//! Default rules mask the values of `env` and `headers` (`mcpServers[].env`,
//! `mcpServers[].headers`, `terminal/create`'s `env`, terminal auth methods'
//! `env`; as `{name, value}` lists, whose `value`s are masked, or as maps,
//! whose every value is) and the value of every member whose name looks like
//! a secret (token, key, secret, password, authorization, cookie, credential),
//! and, inside every string (and frames that are not JSON), the values of a
//! URL's query parameters named like that (`https://h/mcp?api_key=...`).
//! User rules add a JSONPath (`$...`), whose values are masked, or a regular
//! expression, whose matches are masked inside every string (and inside
//! frames that are not JSON, such as stderr). A batch is masked as if each of
//! its elements were a message of its own.
//!
//! One pass over the bytes (`scan.rs`) does it all, in time linear in the
//! frame and with a stack that does not grow with nesting: it checks that the
//! frame is JSON (else the patterns apply to its text; bytes that are not
//! UTF-8 are left alone) and notes the byte ranges to replace, in order. A
//! masked value becomes `"[REDACTED]"` and is not looked into; a string a
//! pattern matched is encoded again with its matches masked; every other byte
//! (whitespace, escapes, key spelling, member order) is copied as it was, and
//! a frame with nothing to mask is returned as it came. A value inside more
//! than [`REDACT_MAX_DEPTH`] arrays and objects is masked whole, unread (fail
//! closed: the output is still JSON and nothing deeper can leak).
//!
//! Redacting a redacted frame again changes nothing: masks are masked to
//! themselves, and a pattern match that overlaps a `[REDACTED]` already in a
//! string is left as it is. (Word-boundary and anchor assertions next to a
//! mask are the exception: `\bx` can match again once what stood before `x`
//! became `]`.)
//!
//! Architecture Invariant: redaction works on copies; it never changes the
//! bytes the relay forwards, and export-time redaction never changes the store.

mod jsonpath;
mod scan;
mod urls;
mod values;

pub use jsonpath::{JsonPath, Seg};

use jsonpath::Paths;

use std::borrow::Cow;

/// How many arrays and objects deep the redactor looks into a message: a
/// value inside more of them is masked whole.
pub const REDACT_MAX_DEPTH: usize = 10_000;

/// What a masked value becomes.
pub const MASK: &str = "[REDACTED]";

/// [`MASK`] as a JSON string.
const MASK_JSON: &str = "\"[REDACTED]\"";

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
    /// The path rules as one automaton.
    paths: Paths,
}

impl Redactor {
    /// The default rules plus `rules`.
    pub fn new(rules: Vec<Rule>) -> Redactor {
        Redactor::with(true, rules)
    }

    /// Only `rules`, without the defaults.
    pub fn without_defaults(rules: Vec<Rule>) -> Redactor {
        Redactor::with(false, rules)
    }

    fn with(defaults: bool, rules: Vec<Rule>) -> Redactor {
        let paths = Paths::new(rules.iter().filter_map(|r| match r {
            Rule::Path(p) => Some(p.clone()),
            Rule::Pattern(_) => None,
        }));
        Redactor { defaults, rules, paths }
    }

    /// True when it can mask nothing.
    pub fn is_noop(&self) -> bool {
        !self.defaults && self.rules.is_empty()
    }

    /// True when masking the JSON message `raw` could change only the
    /// values of members named like secrets or under `env` and `headers`
    /// (the default rules), never a string's content: there is no user
    /// rule, and no string in it can hold a URL (no `://`, nor a `\/` or
    /// `\u` escape that could spell one).
    pub fn masks_only_members(&self, raw: &[u8]) -> bool {
        use memchr::memmem::Finder;
        use std::sync::LazyLock;
        static FINDERS: LazyLock<[Finder<'static>; 3]> =
            LazyLock::new(|| [Finder::new(b"://"), Finder::new(b"\\/"), Finder::new(b"\\u")]);
        self.rules.is_empty() && FINDERS.iter().all(|f| f.find(raw).is_none())
    }

    /// The frame's bytes with secrets masked (borrowed when nothing was).
    pub fn redact<'a>(&self, raw: &'a [u8]) -> Cow<'a, [u8]> {
        if self.is_noop() {
            return Cow::Borrowed(raw);
        }
        let Ok(text) = std::str::from_utf8(raw) else { return Cow::Borrowed(raw) };
        let body = text.trim_end();
        let tail = &text[body.len()..];
        let changed = match scan::edits(self, body) {
            Ok(edits) if edits.is_empty() => None,
            Ok(edits) => Some(scan::apply(body, &edits)),
            Err(scan::NotJson) => self.mask_string(body),
        };
        match changed {
            Some(new) => Cow::Owned(format!("{new}{tail}").into_bytes()),
            None => Cow::Borrowed(raw),
        }
    }

    /// Whether any user rule is a regular expression.
    fn has_patterns(&self) -> bool {
        self.rules.iter().any(|r| matches!(r, Rule::Pattern(_)))
    }

    /// `text`, a string's content or a frame that is not JSON, with what the
    /// rules mask inside text masked (the defaults: secret query values of
    /// URLs; then every pattern's matches), if anything was.
    fn mask_string(&self, text: &str) -> Option<String> {
        let urls = if self.defaults { urls::mask_url_queries(text) } else { None };
        match urls {
            Some(masked) => Some(self.mask_patterns(&masked).unwrap_or(masked)),
            None => self.mask_patterns(text),
        }
    }

    /// `text` with every pattern's matches masked, if any was.
    fn mask_patterns(&self, text: &str) -> Option<String> {
        let mut out = Cow::Borrowed(text);
        for rule in &self.rules {
            if let Rule::Pattern(re) = rule {
                if let Some(new) = mask_matches(re, &out) {
                    out = Cow::Owned(new);
                }
            }
        }
        match out {
            Cow::Owned(s) => Some(s),
            Cow::Borrowed(_) => None,
        }
    }
}

/// `text` with the matches of `re` masked, if any was. A match that overlaps
/// a [`MASK`] already in `text` (or, when empty, touches one) is left alone,
/// so that masking twice changes nothing.
fn mask_matches(re: &regex::Regex, text: &str) -> Option<String> {
    let masks: Vec<(usize, usize)> = text.match_indices(MASK).map(|(at, m)| (at, at + m.len())).collect();
    let mut near = masks.iter().peekable();
    let (mut out, mut copied, mut changed) = (String::new(), 0, false);
    for m in re.find_iter(text) {
        while near.next_if(|(_, end)| *end < m.start()).is_some() {}
        let touches = near
            .clone()
            .take_while(|(start, _)| *start <= m.end())
            .any(|(start, end)| m.is_empty() || (*start < m.end() && *end > m.start()));
        if !touches {
            out.push_str(&text[copied..m.start()]);
            out.push_str(MASK);
            copied = m.end();
            changed = true;
        }
    }
    changed.then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

/// Whether a member's name says its value is a secret: after dropping case
/// and separators it ends in token, key, secret, password, ... (`apiKey`,
/// `access_token`, `X-Auth-Token`; not `maxTokens` or `keyword`).
pub fn looks_secret(name: &str) -> bool {
    const ENDINGS: [&[u8]; 8] =
        [b"token", b"key", b"secret", b"password", b"passwd", b"credential", b"credentials", b"pwd"];
    const ANYWHERE: [&[u8]; 4] = [b"secret", b"password", b"authorization", b"cookie"];
    // The name's ASCII letters and digits, lower-cased (every other byte,
    // UTF-8 included, dropped): on the stack for the usual name, as this
    // runs for every member of every frame masked.
    let mut short = [0u8; 64];
    let mut len = 0;
    let mut long: Vec<u8> = Vec::new();
    for b in name.bytes().filter(u8::is_ascii_alphanumeric).map(|b| b.to_ascii_lowercase()) {
        match short.get_mut(len) {
            Some(slot) if long.is_empty() => {
                *slot = b;
                len += 1;
            }
            _ => {
                if long.is_empty() {
                    long.extend_from_slice(&short);
                }
                long.push(b);
            }
        }
    }
    let n: &[u8] = if long.is_empty() { &short[..len] } else { &long };
    ENDINGS.iter().any(|e| n.ends_with(e)) || ANYWHERE.iter().any(|a| n.windows(a.len()).any(|w| w == *a))
}

#[cfg(test)]
mod tests;
