//! What readers show of a store: masked as exports are (unless
//! `--no-redact`), and a frame's detail cut to a bounded number of bytes.
//!
//! The values stored beside a frame (id, method, session, MCP method,
//! preview) and a trace's name, command line and cwd get the rules for text ([`Redactor::mask_value`]); a detail's
//! bytes and envelope get the whole redaction, then are cut.

use crate::redact::Redactor;
use acp_tee_shared::api::{FrameDetail, FrameSummary, TraceSummary, DETAIL_MAX_BYTES};
use std::borrow::Cow;

/// The one redaction policy of every reader (`serve`, `mcp`, `show`,
/// `export`, the API's exports): the default rules and `rules` when `redact`,
/// else `rules` alone (`--no-redact` turns off the defaults, never a rule
/// the user named).
pub fn policy(redact: bool, rules: Vec<crate::redact::Rule>) -> Redactor {
    if redact {
        Redactor::new(rules)
    } else {
        Redactor::without_defaults(rules)
    }
}

/// [`policy`] with no rules of the user's: what `serve` and `mcp` mask.
pub fn redactor(redact: bool) -> Redactor {
    policy(redact, Vec::new())
}

/// The byte limit a detail query asks for: `None` is [`DETAIL_MAX_BYTES`],
/// `0` no limit.
pub fn detail_limit(max_bytes: Option<u64>) -> usize {
    match max_bytes {
        None => DETAIL_MAX_BYTES,
        Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    }
}

/// A trace's name, command line, working directory and end reason masked,
/// as exports mask them.
pub fn trace(r: &Redactor, mut t: TraceSummary) -> TraceSummary {
    if !r.is_noop() {
        t.meta = crate::export::mask_meta(t.meta, r);
    }
    t
}

/// `f`'s stored values masked.
pub fn summary(r: &Redactor, f: &mut FrameSummary) {
    if r.is_noop() {
        return;
    }
    for value in [&mut f.method, &mut f.session_id, &mut f.mcp_method, &mut f.preview].into_iter().flatten() {
        if let Some(masked) = r.mask_value(value) {
            *value = masked;
        }
    }
    if let Some(serde_json::Value::String(id)) = &mut f.id {
        if let Some(masked) = r.mask_value(id) {
            *id = masked;
        }
    }
}

/// `text` masked.
fn masked_text(r: &Redactor, text: String) -> String {
    match r.redact(text.as_bytes()) {
        Cow::Borrowed(_) => text,
        Cow::Owned(bytes) => String::from_utf8(bytes).expect("redaction keeps UTF-8 text UTF-8"),
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a
/// character boundary; true when it cut.
fn cut_text(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// A frame detail as served: masked by `r`, each of its texts cut to `max`
/// bytes (base64 to whole groups of four), its sizes those of what it
/// would be whole.
pub fn detail(r: &Redactor, mut d: FrameDetail, max: usize) -> FrameDetail {
    summary(r, &mut d.frame);
    if let Some(pair) = &mut d.pair {
        summary(r, pair);
    }
    let mut cut = false;
    if let Some(raw) = d.raw.take() {
        let raw = masked_text(r, raw);
        d.raw_size = raw.len() as i64;
        d.raw = Some(raw);
    }
    if let Some(raw) = &mut d.raw {
        cut |= cut_text(raw, max);
    }
    if let Some(b64) = &mut d.raw_base64 {
        cut |= cut_text(b64, max / 4 * 4);
    }
    if let Some(envelope) = d.envelope.take() {
        let envelope = masked_text(r, envelope);
        d.envelope_size = Some(envelope.len() as i64);
        d.envelope = Some(envelope);
    }
    if let Some(envelope) = &mut d.envelope {
        cut |= cut_text(envelope, max);
    }
    d.cut = cut;
    d
}

/// A frame's bytes (from its detail, not cut), masked by `r`.
pub fn raw_bytes(r: &Redactor, d: FrameDetail) -> Vec<u8> {
    use base64::Engine;
    let bytes = match (d.raw, d.raw_base64) {
        (Some(text), _) => text.into_bytes(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD.decode(b64).unwrap_or_default(),
        (None, None) => Vec::new(),
    };
    match r.redact(&bytes) {
        Cow::Borrowed(_) => bytes,
        Cow::Owned(masked) => masked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_cut_on_character_boundaries() {
        let mut s = "aé".repeat(3);
        assert!(cut_text(&mut s, 2));
        assert_eq!(s, "a");
        let mut s = "abc".to_owned();
        assert!(!cut_text(&mut s, 3));
        assert_eq!(detail_limit(Some(0)), usize::MAX);
        assert_eq!(detail_limit(None), DETAIL_MAX_BYTES);
    }
}
