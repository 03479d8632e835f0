//! The short text the viewer draws beside a frame.

use super::classify::MessageProbe;
use acp_tee_shared::FrameKind;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Longest preview, in characters.
pub const PREVIEW_CHARS: usize = 160;

#[derive(Deserialize)]
struct ParamsProbe<'a> {
    #[serde(borrow, default)]
    update: Option<&'a RawValue>,
    #[serde(borrow, default)]
    prompt: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct UpdateProbe<'a> {
    #[serde(rename = "sessionUpdate")]
    kind: Option<String>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    title: Option<String>,
    status: Option<String>,
}

#[derive(Deserialize)]
struct TextProbe<'a> {
    /// Borrowed from the frame unless it has escapes: a long text is not copied.
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorProbe {
    code: Option<i64>,
    message: Option<String>,
}

fn parse<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
}

/// A one-line summary of a frame for the diagram: the text of a
/// `session/update` chunk, a tool call's title, a prompt's first text, an
/// error's message, a stderr line. `None` when there is nothing worth showing.
/// (The recorder gets JSON-RPC previews from [`super::classify`], which reads
/// them in its single parse; this is the same from raw bytes.)
///
/// Returns that preview and, for a `session/update` notification, its
/// update's `sessionUpdate` kind, both from one parse.
pub fn summary_texts(kind: FrameKind, method: Option<&str>, raw: &[u8]) -> (Option<String>, Option<String>) {
    let json = || -> Option<(Option<String>, Option<String>)> {
        let msg: MessageProbe = serde_json::from_slice(raw).ok()?;
        if kind == FrameKind::Error {
            return Some((error_preview(msg.error?), None));
        }
        let params: ParamsProbe = parse(msg.params)?;
        match method? {
            "session/update" => {
                let u: UpdateProbe = parse(params.update)?;
                let update = u.kind.clone().filter(|_| kind == FrameKind::Notification);
                Some((update_text(u).filter(|s| !s.is_empty()), update))
            }
            "session/prompt" => Some((prompt_preview(&params.prompt?), None)),
            _ => None,
        }
    };
    match kind {
        FrameKind::Stderr | FrameKind::Invalid => (text_preview(raw), None),
        FrameKind::Error | FrameKind::Notification | FrameKind::Request => json().unwrap_or_default(),
        _ => (None, None),
    }
}

/// A line of text (stderr, an unparsable frame): colour codes removed.
pub fn text_preview(raw: &[u8]) -> Option<String> {
    Some(one_line(&strip_ansi(&String::from_utf8_lossy(raw)))).filter(|s| !s.is_empty())
}

/// `code message` of a JSON-RPC error object.
pub fn error_preview(error: &RawValue) -> Option<String> {
    let e: ErrorProbe = parse(Some(error))?;
    let text = format!("{} {}", e.code.map(|c| c.to_string()).unwrap_or_default(), e.message.unwrap_or_default());
    Some(one_line(&text)).filter(|s| !s.is_empty())
}

/// The text (or title, or kind) of a `session/update`'s `update`.
pub fn update_preview(update: &RawValue) -> Option<String> {
    update_text(parse(Some(update))?).filter(|s| !s.is_empty())
}

/// The first text block of a `session/prompt`'s `prompt`.
pub fn prompt_preview(prompt: &[&RawValue]) -> Option<String> {
    prompt.iter().find_map(|c| parse::<TextProbe>(Some(c))?.text).map(|s| one_line(&s)).filter(|s| !s.is_empty())
}

fn update_text(u: UpdateProbe) -> Option<String> {
    let kind = u.kind.unwrap_or_default();
    let content_text = parse::<TextProbe>(u.content).and_then(|c| c.text);
    match (content_text, u.title) {
        (Some(text), _) => Some(one_line(&text)),
        (None, Some(title)) => Some(one_line(&match u.status {
            Some(status) => format!("{kind}: {title} ({status})"),
            None => format!("{kind}: {title}"),
        })),
        (None, None) => Some(one_line(&kind)),
    }
}

/// Removes terminal colour codes (`ESC [ ... letter`), which agents' loggers
/// write to stderr.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
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
        out.push(c);
    }
    out
}

/// Collapses whitespace runs (newlines included) to one space and cuts to
/// [`PREVIEW_CHARS`] characters, marking a cut with an ellipsis.
fn one_line(s: &str) -> String {
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
        summary_texts(kind, method, raw.as_bytes()).0
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
        let kind = |k: FrameKind, m: &str, raw: &str| summary_texts(k, Some(m), raw.as_bytes()).1;
        let chunk = r#"{"method":"session/update","params":{"update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":""}}}}"#;
        assert_eq!(kind(FrameKind::Notification, "session/update", chunk).as_deref(), Some("agent_thought_chunk"));
        // An empty text previews nothing, and still has its kind.
        assert_eq!(summary_texts(FrameKind::Notification, Some("session/update"), chunk.as_bytes()).0, None);
        // A request with the method (a peer's mistake) is no update; nor is a prompt, or a kind not a string.
        assert_eq!(kind(FrameKind::Request, "session/update", &chunk.replace("{\"method", "{\"id\":1,\"method")), None);
        assert_eq!(
            kind(FrameKind::Request, "session/prompt", r#"{"id":1,"method":"session/prompt","params":{"prompt":[]}}"#),
            None
        );
        let odd = r#"{"method":"session/update","params":{"update":{"sessionUpdate":7}}}"#;
        assert_eq!(kind(FrameKind::Notification, "session/update", odd), None);
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
    fn long_text_is_cut() {
        let long = format!("{}\n", "word ".repeat(100));
        let out = p(FrameKind::Stderr, None, &long).unwrap();
        assert_eq!(out.chars().count(), PREVIEW_CHARS + 1);
        assert!(out.ends_with('…'));
    }
}
