//! The short text the viewer draws beside a frame.

use crate::acp::{self, Envelope, RawText, Routing, RpcError, Update};
use acp_tee_shared::FrameKind;
use serde_json::value::RawValue;

/// Longest preview, in characters.
pub const PREVIEW_CHARS: usize = 160;

/// `raw` (a member's text) as `T`, by the one reading of ACP
/// ([`acp::member`]): a repeated member counts as its last, a member of the
/// wrong type as absent.
fn parse<'a, T: serde::Deserialize<'a>>(raw: Option<&'a RawValue>, keep: &'a mut Option<Vec<u8>>) -> Option<T> {
    acp::member(raw, keep)
}

/// A one-line summary of a frame for the diagram: the text of a
/// `session/update` chunk, a tool call's title, a prompt's first text, an
/// error's message, a stderr line. `None` when there is nothing worth showing.
/// (The recorder gets JSON-RPC previews from [`super::classify`], which reads
/// them in its single parse; this is the same from raw bytes.)
///
/// Returns that preview and, for a `session/update` notification, its
/// update's `sessionUpdate` kind and the whitespace its text's edges had,
/// all from one parse. A frame of an MCP trace (`mcp`) has the MCP preview
/// ([`super::mcp_preview`]) instead, and a response of one a tool's failure
/// ([`super::mcp_result_preview`]).
pub fn summary_texts(kind: FrameKind, method: Option<&str>, raw: &[u8], mcp: bool) -> SummaryTexts {
    let preview = |preview| SummaryTexts { preview, ..SummaryTexts::default() };
    match kind {
        FrameKind::Request | FrameKind::Notification if mcp => {
            return preview(method.and_then(|m| super::mcp_preview(m, raw)));
        }
        FrameKind::Response if mcp => return preview(method.and_then(|m| super::mcp_result_preview(m, raw))),
        _ => {}
    }
    let json = || -> Option<SummaryTexts> {
        let msg: Envelope = serde_json::from_slice(raw).ok()?;
        if kind == FrameKind::Error {
            return Some(preview(error_preview(msg.error?)));
        }
        let mut keep = None;
        let params: Routing = parse(msg.params, &mut keep)?;
        match method? {
            "session/update" => {
                let mut keep = None;
                let u: Update = parse(params.update, &mut keep)?;
                let update = u.session_update.as_deref().map(str::to_owned).filter(|_| kind == FrameKind::Notification);
                let (text, spaced) = update_text(u).unwrap_or_default();
                Some(SummaryTexts { preview: Some(text).filter(|s| !s.is_empty()), spaced, update })
            }
            "session/prompt" => Some(preview(prompt_preview(&params.prompt?))),
            _ => None,
        }
    };
    match kind {
        FrameKind::Stderr | FrameKind::Invalid => preview(text_preview(raw)),
        FrameKind::Error | FrameKind::Notification | FrameKind::Request => json().unwrap_or_default(),
        _ => SummaryTexts::default(),
    }
}

/// What [`summary_texts`] reads of a frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SummaryTexts {
    /// The one-line preview.
    pub preview: Option<String>,
    /// A `session/update` notification's `sessionUpdate`.
    pub update: Option<String>,
    /// For an update's content text: [`SPACED_BEFORE`] when it begins with
    /// whitespace, [`SPACED_AFTER`] when it ends with some (or is cut), which
    /// the preview leaves out; what joining the previews of streamed chunks
    /// needs.
    pub spaced: u8,
}

/// [`SummaryTexts::spaced`]: the text begins with whitespace.
pub const SPACED_BEFORE: u8 = 1;
/// [`SummaryTexts::spaced`]: the text ends with whitespace, or is cut.
pub const SPACED_AFTER: u8 = 2;

/// A line of text (stderr, an unparsable frame): colour codes removed. The
/// bytes are decoded (invalid UTF-8 as U+FFFD, as `String::from_utf8_lossy`
/// does) only until the preview is full, never copied whole.
pub fn text_preview(raw: &[u8]) -> Option<String> {
    let chars = raw.utf8_chunks().flat_map(|chunk| {
        let bad = (!chunk.invalid().is_empty()).then_some(char::REPLACEMENT_CHARACTER);
        chunk.valid().chars().chain(bad)
    });
    let mut line = OneLine::default();
    for c in strip_ansi(chars) {
        if !line.push(c) {
            break;
        }
    }
    Some(line.finish()).filter(|s| !s.is_empty())
}

/// `code message` of a JSON-RPC error object.
pub fn error_preview(error: &RawValue) -> Option<String> {
    let mut keep = None;
    let e: RpcError = parse(Some(error), &mut keep)?;
    let text = format!("{} {}", e.code.map(|c| c.to_string()).unwrap_or_default(), e.message.unwrap_or_default());
    Some(one_line(&text)).filter(|s| !s.is_empty())
}

/// The text (or title, or kind) of a `session/update`'s `update`.
pub fn update_preview(update: &RawValue) -> Option<String> {
    let mut keep = None;
    update_text(parse(Some(update), &mut keep)?).map(|(text, _)| text).filter(|s| !s.is_empty())
}

/// The first text block of a `session/prompt`'s `prompt`.
pub fn prompt_preview(prompt: &[&RawValue]) -> Option<String> {
    prompt
        .iter()
        .find_map(|c| {
            let mut keep = None;
            text_line(parse::<RawText>(Some(c), &mut keep)?.text?)
        })
        .filter(|s| !s.is_empty())
}

/// The preview of an update and, for its content's text, the whitespace
/// at its edges ([`SummaryTexts::spaced`]).
fn update_text(u: Update) -> Option<(String, u8)> {
    let kind = u.session_update.unwrap_or_default();
    let mut keep = None;
    let content_text = parse::<RawText>(u.content, &mut keep).and_then(|c| text_line_spaced(c.text?));
    match (content_text, u.title) {
        (Some(text), _) => Some(text),
        (None, Some(title)) => Some((
            one_line(&match u.status {
                Some(status) => format!("{kind}: {title} ({status})"),
                None => format!("{kind}: {title}"),
            }),
            0,
        )),
        (None, None) => Some((one_line(&kind), 0)),
    }
}

/// The [`one_line`] of the JSON string `text` (its literal, quotes
/// included), decoding it as it goes; `None` when it is not a string or
/// does not decode (a lone surrogate), as a parse into a `String` would
/// say. The whole literal is checked, but only the preview is kept.
pub(super) fn text_line(text: &RawValue) -> Option<String> {
    text_line_spaced(text).map(|(line, _)| line)
}

/// [`text_line`] and the whitespace at the text's edges
/// ([`SummaryTexts::spaced`]).
fn text_line_spaced(text: &RawValue) -> Option<(String, u8)> {
    let literal = text.get().strip_prefix('"')?.strip_suffix('"')?;
    let mut line = OneLine::default();
    let mut chars = literal.chars();
    while let Some(c) = chars.next() {
        let c = if c == '\\' { unescape(&mut chars)? } else { c };
        if !line.push(c) {
            break;
        }
    }
    // The rest only for its escapes.
    while let Some(at) = memchr::memchr(b'\\', chars.as_str().as_bytes()) {
        chars = chars.as_str()[at + 1..].chars();
        unescape(&mut chars)?;
    }
    Some(line.finish_spaced())
}

/// The character of the JSON escape after a backslash, read from `chars`.
fn unescape(chars: &mut std::str::Chars) -> Option<char> {
    fn hex(chars: &mut std::str::Chars) -> Option<u32> {
        let digits = chars.as_str().get(..4)?;
        let n = u32::from_str_radix(digits, 16).ok()?;
        *chars = chars.as_str()[4..].chars();
        Some(n)
    }
    Some(match chars.next()? {
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'u' => {
            let n = hex(chars)?;
            match n {
                0xD800..=0xDBFF => {
                    let rest = chars.as_str().strip_prefix("\\u")?;
                    *chars = rest.chars();
                    let low = hex(chars).filter(|l| (0xDC00..=0xDFFF).contains(l))?;
                    char::from_u32(0x10000 + ((n - 0xD800) << 10) + (low - 0xDC00))?
                }
                _ => char::from_u32(n)?,
            }
        }
        c => c,
    })
}

/// Removes terminal colour codes (`ESC [ ... letter`), which agents' loggers
/// write to stderr, from `chars` as they are read.
fn strip_ansi(chars: impl Iterator<Item = char>) -> impl Iterator<Item = char> {
    let mut chars = chars.peekable();
    std::iter::from_fn(move || loop {
        let c = chars.next()?;
        if c != '\u{1b}' {
            return Some(c);
        }
        if chars.next_if_eq(&'[').is_some() {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    })
}

/// [`one_line`] built a character at a time, keeping only what the preview
/// shows.
#[derive(Default)]
struct OneLine {
    out: String,
    /// The word being read, copied to `out` when it ends.
    word: String,
    /// Characters shown so far (`out`, the word and the spaces).
    count: usize,
    /// A whitespace run came after the last word.
    space: bool,
    /// The preview is cut: nothing more is kept.
    cut: bool,
    /// Whether the first character was whitespace, and the last so far.
    first_space: Option<bool>,
    last_space: bool,
}

impl OneLine {
    /// Adds `c`; false once the preview is full (more is ignored).
    fn push(&mut self, c: char) -> bool {
        if self.cut {
            return false;
        }
        self.first_space.get_or_insert(c.is_whitespace());
        self.last_space = c.is_whitespace();
        if c.is_whitespace() {
            if !self.word.is_empty() {
                self.out.push_str(&self.word);
                self.word.clear();
                self.space = true;
            }
            return true;
        }
        if self.word.is_empty() && self.space {
            self.out.push(' ');
            self.count += 1;
        }
        if self.count >= PREVIEW_CHARS {
            self.out.push_str(&self.word);
            self.out.push('…');
            self.word.clear();
            self.cut = true;
            return false;
        }
        self.word.push(c);
        self.count += 1;
        true
    }

    fn finish(mut self) -> String {
        self.out.push_str(&self.word);
        self.out
    }

    /// [`OneLine::finish`] and the whitespace at the edges of what was
    /// pushed (a cut counts as space after).
    fn finish_spaced(self) -> (String, u8) {
        let before = if self.first_space == Some(true) { SPACED_BEFORE } else { 0 };
        let after = if self.last_space || self.cut { SPACED_AFTER } else { 0 };
        (self.finish(), before | after)
    }
}

/// Collapses whitespace runs (newlines included) to one space and cuts to
/// [`PREVIEW_CHARS`] characters, marking a cut with an ellipsis.
pub(super) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(PREVIEW_CHARS) + 4);
    if s.is_ascii() {
        // Fast path: one byte per character; the same whitespace as
        // `char::is_whitespace` has in ASCII.
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if matches!(bytes[i], b' ' | b'\t'..=b'\r') {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && !matches!(bytes[i], b' ' | b'\t'..=b'\r') {
                i += 1;
            }
            if !out.is_empty() {
                out.push(' ');
            }
            let room = PREVIEW_CHARS.saturating_sub(out.len());
            if i - start > room {
                out.push_str(&s[start..start + room]);
                out.push('…');
                return out;
            }
            out.push_str(&s[start..i]);
        }
        return out;
    }
    let mut count = 0;
    // The word being read (copied whole when it ends) and whether a
    // whitespace run came before it.
    let mut word: Option<usize> = None;
    let mut space = false;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if let Some(start) = word.take() {
                out.push_str(&s[start..i]);
                space = true;
            }
            continue;
        }
        if word.is_none() {
            if space {
                out.push(' ');
                count += 1;
            }
            word = Some(i);
        }
        if count >= PREVIEW_CHARS {
            out.push_str(&s[word.unwrap_or(i)..i]);
            out.push('…');
            return out;
        }
        count += 1;
    }
    if let Some(start) = word {
        out.push_str(&s[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kind: FrameKind, method: Option<&str>, raw: &str) -> Option<String> {
        summary_texts(kind, method, raw.as_bytes(), false).preview
    }

    /// A repeated member counts as its last, in the recorder's previews
    /// (from classification) as in [`summary_texts`] (#30 item 8).
    #[test]
    fn a_repeated_member_previews_as_its_last() {
        let chunk = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lost"},"content":{"type":"text","text":"kept","text":"kept last"}}}}"#;
        assert_eq!(p(FrameKind::Notification, Some("session/update"), chunk).as_deref(), Some("kept last"));
        assert_eq!(super::super::classify(chunk.as_bytes()).preview.as_deref(), Some("kept last"));
        let err = r#"{"id":3,"error":{"code":1,"message":"lost","message":"kept"}}"#;
        assert_eq!(p(FrameKind::Error, None, err).as_deref(), Some("1 kept"));
        let prompt =
            r#"{"id":3,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"lost","text":"kept"}]}}"#;
        assert_eq!(super::super::classify(prompt.as_bytes()).preview.as_deref(), Some("kept"));
    }

    #[test]
    fn previews() {
        let chunk = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"How do you\ndo."}}}}"#;
        assert_eq!(p(FrameKind::Notification, Some("session/update"), chunk).as_deref(), Some("How do you do."));
        let tool = r#"{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","title":"Read file","status":"pending"}}}"#;
        assert_eq!(
            p(FrameKind::Notification, Some("session/update"), tool).as_deref(),
            Some("tool_call: Read file (pending)")
        );
        let plan = r#"{"method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[]}}}"#;
        assert_eq!(p(FrameKind::Notification, Some("session/update"), plan).as_deref(), Some("plan"));
        let prompt = r#"{"id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"image"},{"type":"text","text":"hello"}]}}"#;
        assert_eq!(p(FrameKind::Request, Some("session/prompt"), prompt).as_deref(), Some("hello"));
        let err = r#"{"id":3,"error":{"code":-32601,"message":"Method not found"}}"#;
        assert_eq!(p(FrameKind::Error, None, err).as_deref(), Some("-32601 Method not found"));
        let stderr = "\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m started\n";
        assert_eq!(p(FrameKind::Stderr, None, stderr).as_deref(), Some("2026 INFO started"));
        assert_eq!(p(FrameKind::Request, Some("initialize"), r#"{"id":1,"method":"initialize"}"#), None);
        assert_eq!(p(FrameKind::Invalid, None, "\n"), None);
    }

    #[test]
    fn a_session_updates_kind_comes_with_its_preview_and_nothing_elses_does() {
        let kind = |k: FrameKind, m: &str, raw: &str| summary_texts(k, Some(m), raw.as_bytes(), false).update;
        let chunk = r#"{"method":"session/update","params":{"update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":""}}}}"#;
        assert_eq!(kind(FrameKind::Notification, "session/update", chunk).as_deref(), Some("agent_thought_chunk"));
        // An empty text previews nothing, and still has its kind.
        assert_eq!(
            summary_texts(FrameKind::Notification, Some("session/update"), chunk.as_bytes(), false).preview,
            None
        );
        // A request with the method (a peer's mistake) is no update; nor is a prompt, or a kind not a string.
        assert_eq!(kind(FrameKind::Request, "session/update", &chunk.replace("{\"method", "{\"id\":1,\"method")), None);
        assert_eq!(
            kind(FrameKind::Request, "session/prompt", r#"{"id":1,"method":"session/prompt","params":{"prompt":[]}}"#),
            None
        );
        let odd = r#"{"method":"session/update","params":{"update":{"sessionUpdate":7}}}"#;
        assert_eq!(kind(FrameKind::Notification, "session/update", odd), None);
    }

    /// A chunk's preview leaves out the whitespace at its edges; `spaced`
    /// keeps whether there was some, so that a run's previews join as its
    /// text does ("Hel" "lo wor" "ld. " -> "Hello world.").
    #[test]
    fn a_chunks_edges_say_whether_it_joins_its_neighbours_with_a_space() {
        let spaced = |text: &str| {
            let raw = json_chunk(text);
            let t = summary_texts(FrameKind::Notification, Some("session/update"), raw.as_bytes(), false);
            (t.preview.unwrap_or_default(), t.spaced)
        };
        assert_eq!(spaced("Hel"), ("Hel".into(), 0));
        assert_eq!(spaced("lo wor"), ("lo wor".into(), 0));
        assert_eq!(spaced("ld. "), ("ld.".into(), SPACED_AFTER));
        assert_eq!(spaced("\\n How"), ("How".into(), SPACED_BEFORE));
        assert_eq!(spaced(" "), (String::new(), SPACED_BEFORE | SPACED_AFTER));
        assert_eq!(spaced(""), (String::new(), 0));
        // A text cut short is followed by a space: what follows it is not its continuation.
        let long = "x".repeat(PREVIEW_CHARS + 10);
        assert_eq!(spaced(&long).1, SPACED_AFTER);
        // Not a chunk's text: a title has no edges to tell.
        let tool = r#"{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","title":" read ","status":"pending"}}}"#;
        assert_eq!(summary_texts(FrameKind::Notification, Some("session/update"), tool.as_bytes(), false).spaced, 0);
    }

    fn json_chunk(text: &str) -> String {
        format!(
            r#"{{"method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}}}"#
        )
    }

    #[test]
    fn cut_is_the_same_for_ascii_and_other_text() {
        // A word that ends exactly at the limit, then more words.
        let exact = format!("{} more words", "x".repeat(PREVIEW_CHARS));
        assert_eq!(one_line(&exact), format!("{} …", "x".repeat(PREVIEW_CHARS)));
        let exact_wide = format!("{} more words", "é".repeat(PREVIEW_CHARS));
        assert_eq!(one_line(&exact_wide), format!("{} …", "é".repeat(PREVIEW_CHARS)));
        for (ascii, wide) in [("a  b\n\tc ", "é  b\n\tc "), ("  lead", "  léad"), ("\u{b}x\u{c}y", "\u{b}é\u{c}y")] {
            assert_eq!(one_line(ascii).chars().count(), one_line(wide).chars().count(), "{ascii:?} / {wide:?}");
        }
        assert_eq!(one_line("a  b\n\tc "), "a b c");
        assert_eq!(one_line("é\u{2003}b"), "é b");
        let long = "word ".repeat(100);
        let wide = "wörd ".repeat(100);
        assert_eq!(one_line(&long).chars().count(), one_line(&wide).chars().count());
    }

    #[test]
    fn the_preview_built_a_character_at_a_time_is_one_line() {
        let words = ["x", "word", "wörd", "é", &"y".repeat(PREVIEW_CHARS), &"z".repeat(PREVIEW_CHARS - 3)];
        let gaps = ["", " ", "  ", "\n\t", "\u{2003}"];
        for n in 0..400usize {
            let mut text = String::new();
            for k in 0..(n % 60) {
                text.push_str(gaps[(n + k) % gaps.len()]);
                text.push_str(words[(n * 7 + k * 3) % words.len()]);
            }
            let mut line = OneLine::default();
            text.chars().take_while(|&c| line.push(c)).for_each(drop);
            assert_eq!(line.finish(), one_line(&text), "{text:?}");
        }
    }

    #[test]
    fn json_texts_decode_as_serde_reads_them() {
        let texts = [r#""plain""#, r#""a\nb\t\"c\" \\ \/ \u00e9 \ud83d\ude00 \b\f\r""#, r#""""#, r#""  \n  ""#];
        for t in texts {
            let raw: &RawValue = serde_json::from_str(t).unwrap();
            let decoded: String = serde_json::from_str(t).unwrap();
            assert_eq!(text_line(raw), Some(one_line(&decoded)), "{t}");
        }
        for t in [r#""lone \ud83d here""#, r#""\ude00""#, "7", "null"] {
            let raw: &RawValue = serde_json::from_str(t).unwrap();
            assert_eq!(text_line(raw), None, "{t}");
        }
        // A lone surrogate far past the preview still makes it none, as before.
        let late = format!("\"{} \\ud800\"", "word ".repeat(1000));
        assert_eq!(text_line(serde_json::from_str(&late).unwrap()), None);
    }

    #[test]
    fn stderr_previews_decode_as_from_utf8_lossy() {
        for raw in [&b"\x1b[31mred\x1b[0m \xff\xfe ok"[..], b"caf\xc3", b"\x1b\x1b[1mx", b"\xe2\x82 \x1b["] {
            let lossy = String::from_utf8_lossy(raw);
            let mut plain = String::new();
            let mut chars = lossy.chars();
            while let Some(c) = chars.next() {
                if c == '\u{1b}' {
                    if chars.clone().next() == Some('[') {
                        for d in chars.by_ref().skip(1) {
                            if d.is_ascii_alphabetic() {
                                break;
                            }
                        }
                    }
                    continue;
                }
                plain.push(c);
            }
            assert_eq!(text_preview(raw), Some(one_line(&plain)).filter(|s| !s.is_empty()), "{raw:?}");
        }
    }

    #[test]
    fn long_text_is_cut() {
        let long = format!("{}\n", "word ".repeat(100));
        let out = p(FrameKind::Stderr, None, &long).unwrap();
        assert_eq!(out.chars().count(), PREVIEW_CHARS + 1);
        assert!(out.ends_with('…'));
    }
}
