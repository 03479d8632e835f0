//! The bounds a page of frames keeps before it reaches SQL, for every
//! reader that takes a [`FrameQuery`] from outside (the API, the MCP tools).

use acp_tee_shared::api::FrameQuery;

/// Checks a frame query's numbers before it reaches SQL.
pub fn validate(q: &FrameQuery) -> Result<(), String> {
    let bad = |m: &str| Err(m.to_owned());
    if q.limit.is_some_and(|l| !(1..=1000).contains(&l)) {
        return bad("limit must be between 1 and 1000");
    }
    if q.offset.is_some_and(|o| o < 0) {
        return bad("offset must not be negative");
    }
    // The largest latency a frame can have: i64::MAX nanoseconds.
    const MAX_LATENCY_MS: f64 = i64::MAX as f64 / 1e6;
    if q.min_latency_ms.is_some_and(|ms| !(0.0..=MAX_LATENCY_MS).contains(&ms)) {
        return bad("min_latency_ms must be a number of milliseconds from 0 to 9223372036854 (the largest latency a frame can have)");
    }
    if q.from.is_some_and(|s| s < 1) || q.to.is_some_and(|s| s < 1) {
        return bad("from and to must be seqs of the trace, 1 or more");
    }
    if q.q.as_ref().is_some_and(|t| t.len() > 1000) {
        return bad("the search text must be at most 1000 bytes");
    }
    Ok(())
}
