//! Query planning for frame pages: which way a page's rows are found and
//! which way its total is known, chosen in one place ([`plan`]) from the
//! query and two facts of the trace.

use super::{has_filters, has_row_filters, method_alone, range_after, searching};
use acp_tee_shared::api::FrameQuery;

/// What [`plan`] needs to know of the trace besides the query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Facts {
    /// The trace has no gap in its seqs: its last seq is its count of frames
    /// stored (`missing_frames` cannot tell: frames may be missing at the
    /// end only, a live trace counts its missing frames when it ends, and
    /// older imports took a file's word for it). Only looked up for
    /// unfiltered pages without a cursor, the only ones it changes.
    pub gap_free: bool,
    /// The trace has batches (looked up when the query asks for errors
    /// only): which of them hold an error response is counted nowhere.
    pub batches: bool,
}

/// How a page's rows are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PagePlan {
    /// Unfiltered in a gap-free trace: the frame at offset n has seq n + 1,
    /// so the page starts with a seek after seq `after`, not by stepping
    /// over n rows; deep pages of a huge trace cost what the first does.
    SeekBySeq { after: i64 },
    /// Filtered on a method alone, from an offset: every seq of a span is a
    /// match, so whole spans are stepped over by their lengths up to the
    /// `offset`th match, then read from there.
    MethodSpans { offset: i64 },
    /// The filtered rows after seq `after` (from the first when `None`),
    /// `offset` of them skipped.
    Scan { after: Option<i64>, offset: i64 },
    /// A search: the search index's matches in the trace's rowid range
    /// (other filters applied to each), then the frames beyond the index,
    /// scanned; after seq `after`, `offset` of them skipped.
    Search { after: Option<i64>, offset: i64 },
}

/// How a page's total is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TotalPlan {
    /// No filter: the trace's count of frames stored.
    Stored,
    /// A range of seqs alone, of a gap-free trace: the seqs of the range
    /// that the trace has.
    Range,
    /// Direction and kind alone (errors too, in a trace without batches):
    /// the per-kind counts.
    KindCounts,
    /// A method alone: the lengths of its spans.
    MethodSpans,
    /// Counted by the page query when it reached the trace's end (a page
    /// that is not full saw every match from the first on); counted by a
    /// scan otherwise ([`TotalPlan::Count`]). So a search for a rare word
    /// reads its matches once, not twice.
    CountedInPage,
    /// Counted by a scan of the matching frames; a search's by the index
    /// up to the trace's `indexed_seq` (a search alone by FTS5 from its
    /// lists of frames, without reading one) and by a scan beyond it.
    Count,
}

/// The plans for the page `q` asks for of a trace with `facts`.
pub(super) fn plan(q: &FrameQuery, facts: Facts) -> (PagePlan, TotalPlan) {
    let offset = q.offset.unwrap_or(0);
    let page = if !has_row_filters(q) && q.after.is_none() && facts.gap_free {
        PagePlan::SeekBySeq { after: range_after(q).saturating_add(offset) }
    } else if method_alone(q).is_some() && q.after.is_none() && offset > 0 {
        PagePlan::MethodSpans { offset }
    } else if searching(q) {
        PagePlan::Search { after: q.after, offset }
    } else {
        PagePlan::Scan { after: q.after, offset }
    };
    let total = if !has_filters(q) {
        TotalPlan::Stored
    } else if !has_row_filters(q) && facts.gap_free {
        TotalPlan::Range
    } else if by_kind_alone(q, facts) {
        TotalPlan::KindCounts
    } else if method_alone(q).is_some() {
        TotalPlan::MethodSpans
    } else if q.after.is_none() {
        TotalPlan::CountedInPage
    } else {
        TotalPlan::Count
    };
    (page, total)
}

/// True when `q` filters on direction, kind and errors alone, which the
/// per-kind counts answer (but errors in a trace with batches).
fn by_kind_alone(q: &FrameQuery, facts: Facts) -> bool {
    let FrameQuery {
        after: _,
        offset: _,
        limit: _,
        dir: _,
        kind: _,
        method,
        session,
        errors,
        min_latency_ms,
        q: _,
        from,
        to,
    } = q;
    let others = method.is_some()
        || session.is_some()
        || min_latency_ms.is_some()
        || searching(q)
        || from.is_some()
        || to.is_some();
    // Which batches hold an error response is counted nowhere.
    let batch_errors = *errors == Some(true) && facts.batches;
    !(others || batch_errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::tests::query;

    #[test]
    fn each_query_gets_its_plans() {
        use PagePlan::{MethodSpans as SpansFrom, Scan, Search, SeekBySeq};
        use TotalPlan::*;
        let plain = Facts::default();
        let gap_free = Facts { gap_free: true, batches: false };
        let batches = Facts { gap_free: false, batches: true };
        let table: &[(&str, Facts, PagePlan, TotalPlan)] = &[
            ("", gap_free, SeekBySeq { after: 0 }, Stored),
            ("offset=300", gap_free, SeekBySeq { after: 300 }, Stored),
            ("offset=300", plain, Scan { after: None, offset: 300 }, Stored),
            ("after=5&offset=2", gap_free, Scan { after: Some(5), offset: 2 }, Stored),
            ("errors=false&q=%20", gap_free, SeekBySeq { after: 0 }, Stored),
            ("dir=agent_to_client", gap_free, Scan { after: None, offset: 0 }, KindCounts),
            ("kind=request&dir=client_to_agent&offset=4", plain, Scan { after: None, offset: 4 }, KindCounts),
            ("errors=true", plain, Scan { after: None, offset: 0 }, KindCounts),
            ("errors=true", batches, Scan { after: None, offset: 0 }, CountedInPage),
            ("kind=error", batches, Scan { after: None, offset: 0 }, KindCounts),
            ("method=m", plain, Scan { after: None, offset: 0 }, MethodSpans),
            ("method=m&offset=3", plain, SpansFrom { offset: 3 }, MethodSpans),
            ("method=m&offset=3&after=7", plain, Scan { after: Some(7), offset: 3 }, MethodSpans),
            ("method=m&dir=agent_to_client&offset=3", plain, Scan { after: None, offset: 3 }, CountedInPage),
            ("method=m&q=word", plain, Search { after: None, offset: 0 }, CountedInPage),
            ("q=word", gap_free, Search { after: None, offset: 0 }, CountedInPage),
            ("q=word&offset=5", gap_free, Search { after: None, offset: 5 }, CountedInPage),
            ("q=word&after=9", gap_free, Search { after: Some(9), offset: 0 }, Count),
            ("session=s&offset=2", plain, Scan { after: None, offset: 2 }, CountedInPage),
            ("min_latency_ms=1.5&after=1", plain, Scan { after: Some(1), offset: 0 }, Count),
            ("from=10&to=20&offset=3", gap_free, SeekBySeq { after: 12 }, Range),
            ("from=10&offset=3", plain, Scan { after: None, offset: 3 }, CountedInPage),
            ("to=20&method=m&offset=3", gap_free, Scan { after: None, offset: 3 }, CountedInPage),
            ("from=10&q=word", gap_free, Search { after: None, offset: 0 }, CountedInPage),
            ("from=10&dir=agent_to_client&after=12", gap_free, Scan { after: Some(12), offset: 0 }, Count),
        ];
        for (text, facts, page, total) in table {
            assert_eq!(plan(&query(text), *facts), (page.clone(), *total), "{text} with {facts:?}");
        }
    }
}
