//! The kind of a `session/update` read from its bytes, when that is sure:
//! the whole-trace model need not parse the many chunks it only counts.

use memchr::memmem::Finder;
use std::sync::LazyLock;

/// Update kinds the whole-trace model only counts: a frame of one of them
/// need not be parsed there.
pub use acp_tee_shared::session::CHUNK_KINDS as COUNTED_KINDS;

/// The `sessionUpdate` of the message in `raw` when its bytes name it once,
/// plainly: the member name appears exactly once and no `\u` escape is
/// anywhere (an escaped `"session\u0055pdate"` is the same name), so that
/// one occurrence is the member the full parse would read. `None` whenever
/// that cannot be told from the bytes; the caller then parses.
pub fn plain_update_kind(raw: &[u8]) -> Option<&str> {
    const NAME: &[u8] = b"\"sessionUpdate\"";
    // Built once: building a searcher per frame cost a thirtieth of the fold.
    static NAME_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(NAME));
    static ESCAPE_FINDER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    let mut found = NAME_FINDER.find_iter(raw);
    let at = found.next()?;
    if found.next().is_some() || ESCAPE_FINDER.find(raw).is_some() {
        return None;
    }
    let skip_ws = |b: &[u8]| -> usize { b.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n')).count() };
    let mut rest = &raw[at + NAME.len()..];
    rest = &rest[skip_ws(rest)..];
    rest = rest.strip_prefix(b":")?;
    rest = &rest[skip_ws(rest)..];
    rest = rest.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_kind_is_read_from_the_bytes_and_anything_doubtful_is_left_to_the_parser() {
        fn kind(s: &str) -> Option<&str> {
            plain_update_kind(s.as_bytes())
        }
        assert_eq!(
            kind(r#"{"params":{"update":{"sessionUpdate" : "agent_message_chunk","content":{}}}}"#),
            Some("agent_message_chunk")
        );
        // Named twice, escaped anywhere, not a string, or an escape in the value.
        assert_eq!(
            kind(
                r#"{"params":{"_meta":{"sessionUpdate":"agent_message_chunk"},"update":{"sessionUpdate":"tool_call"}}}"#
            ),
            None
        );
        assert_eq!(
            kind(
                r#"{"params":{"update":{"session\u0055pdate":"tool_call"},"x":{"sessionUpdate":"agent_message_chunk"}}}"#
            ),
            None
        );
        assert_eq!(kind(r#"{"params":{"update":{"sessionUpdate":7}}}"#), None);
        assert_eq!(kind(r#"{"params":{"update":{"sessionUpdate":"a\"b"}}}"#), None);
        assert_eq!(kind(r#"{"params":{"update":{}}}"#), None);
        // A text holding the name is escaped (`\"`), so it is no member name.
        assert_eq!(
            kind(
                r#"{"params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"text":"say \"sessionUpdate\""}}}}"#
            ),
            Some("agent_message_chunk")
        );
    }
}
