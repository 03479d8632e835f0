//! Assembling texts from chunks, within a bound.

use super::wire::ContentBlock;
use acp_tee_shared::session::{KindCount, Text, TEXT_MAX_CHARS};

/// Kinds counted in one list at most (`other_blocks`, `other_updates`,
/// tool call content kinds); more distinct kinds are counted as `other`.
const KINDS_MAX: usize = 32;

/// Adds one to `kind`'s count in `counts`.
pub fn count_kind(counts: &mut Vec<KindCount>, kind: &str) {
    // Kinds are kept cut, so they are compared cut: a long kind seen twice
    // is one entry counted twice, not two entries of the same name.
    let kind = cut(kind, 64);
    if let Some(c) = counts.iter_mut().find(|c| c.kind == kind) {
        c.count += 1;
    } else if counts.len() < KINDS_MAX {
        counts.push(KindCount { kind, count: 1 });
    } else if let Some(c) = counts.iter_mut().find(|c| c.kind == "other") {
        c.count += 1;
    } else if let Some(last) = counts.last_mut() {
        // The list is full of named kinds: the last one becomes `other`.
        last.kind = "other".into();
        last.count += 1;
    }
}

pub use crate::fold::cut;

/// Adds `block` (arrived in frame `seq`) to `text`; its characters are kept
/// when `keep` and [`TEXT_MAX_CHARS`] allows.
pub fn add_block(text: &mut Text, block: &ContentBlock<'_>, seq: i64, keep: bool) {
    text.chunks += 1;
    text.first_seq.get_or_insert(seq);
    text.last_seq = Some(seq);
    match (block.kind.as_deref(), &block.text) {
        (Some("text") | None, Some(t)) => add_str(text, t, keep),
        (kind, _) => count_kind(&mut text.other_blocks, kind.unwrap_or("unknown")),
    }
}

/// Adds `s` to `text`.
pub fn add_str(text: &mut Text, s: &str, keep: bool) {
    let have = text.chars as usize;
    if keep && have < TEXT_MAX_CHARS {
        let room = TEXT_MAX_CHARS - have;
        match s.char_indices().nth(room) {
            Some((at, _)) => {
                text.text.push_str(&s[..at]);
                text.chars += (room + s[at..].chars().count()) as u64;
            }
            None => {
                text.text.push_str(s);
                text.chars += s.chars().count() as u64;
            }
        }
    } else {
        text.chars += s.chars().count() as u64;
    }
}

/// A JSON value's text, cut to [`TEXT_MAX_CHARS`] characters.
pub fn json_text(raw: &serde_json::value::RawValue) -> String {
    cut(raw.get(), TEXT_MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_keep_their_bound_and_count_the_rest() {
        let mut t = Text::default();
        let long = "é".repeat(TEXT_MAX_CHARS - 1);
        add_str(&mut t, &long, true);
        add_str(&mut t, "abc", true);
        assert_eq!(t.text.chars().count(), TEXT_MAX_CHARS);
        assert!(t.text.ends_with('a'));
        assert_eq!(t.chars, TEXT_MAX_CHARS as u64 + 2);
        add_str(&mut t, "xyz", true);
        assert_eq!(t.chars, TEXT_MAX_CHARS as u64 + 5);
        let mut counted = Text::default();
        add_str(&mut counted, "héllo", false);
        assert_eq!((counted.text.as_str(), counted.chars), ("", 5));
    }

    #[test]
    fn a_long_kind_seen_twice_is_one_entry_counted_twice() {
        let mut counts = Vec::new();
        let long = "k".repeat(100);
        count_kind(&mut counts, &long);
        count_kind(&mut counts, &long);
        count_kind(&mut counts, "short");
        let listed: Vec<(usize, u64)> = counts.iter().map(|c| (c.kind.chars().count(), c.count)).collect();
        assert_eq!(listed, [(64, 2), (5, 1)]);
    }

    #[test]
    fn kind_lists_stay_bounded() {
        let mut counts = Vec::new();
        for i in 0..100 {
            count_kind(&mut counts, &format!("k{i}"));
        }
        assert_eq!(counts.len(), KINDS_MAX);
        assert_eq!(counts.iter().map(|c| c.count).sum::<u64>(), 100);
        assert_eq!(counts.last().unwrap().kind, "other");
    }
}
