//! Trace and span ids: derived from the trace's key, so that exporting a
//! trace again gives the same ids, and W3C `traceparent` values read from
//! `_meta`.

use sha2::{Digest, Sha256};

/// The digest of `key`, `what` and `n`, kept apart by NUL bytes.
fn digest(key: &str, what: &str, n: i64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0]);
    h.update(what.as_bytes());
    h.update([0]);
    h.update(n.to_be_bytes());
    h.finalize().into()
}

/// The trace id of `what` (a session id, or `recording`) in the trace keyed
/// `key`; never all zeros.
pub fn trace_id(key: &str, what: &str) -> [u8; 16] {
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest(key, &format!("trace\0{what}"), 0)[..16]);
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// The span id of `what` at seq `n` in the trace keyed `key`; never all
/// zeros.
pub fn span_id(key: &str, what: &str, n: i64) -> [u8; 8] {
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest(key, what, n)[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

/// The trace id and parent span id of a W3C `traceparent`
/// (`00-<32 hex>-<16 hex>-<2 hex>`); `None` when it is malformed or an id is
/// all zeros.
pub fn traceparent(value: &str) -> Option<([u8; 16], [u8; 8])> {
    let mut parts = value.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version.len() != 2 || version == "ff" || flags.len() != 2 || (version == "00" && parts.next().is_some()) {
        return None;
    }
    let trace: [u8; 16] = hex(trace)?.try_into().ok()?;
    let span: [u8; 8] = hex(span)?.try_into().ok()?;
    (trace != [0; 16] && span != [0; 8]).then_some((trace, span))
}

/// Lower-case hex digits to bytes.
fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        assert_eq!(trace_id("k", "s1"), trace_id("k", "s1"));
        assert_ne!(trace_id("k", "s1"), trace_id("k", "s2"));
        assert_ne!(trace_id("k", "s1"), trace_id("k2", "s1"));
        assert_eq!(span_id("k", "rpc", 3), span_id("k", "rpc", 3));
        assert_ne!(span_id("k", "rpc", 3), span_id("k", "rpc", 4));
    }

    #[test]
    fn traceparents_parse() {
        let (t, s) = traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").unwrap();
        assert_eq!(t[0], 0x0a);
        assert_eq!(s[7], 0x31);
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
        ] {
            assert_eq!(traceparent(bad), None, "{bad}");
        }
    }
}
