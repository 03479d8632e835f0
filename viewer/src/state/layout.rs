//! Where each row of the diagram sits vertically, on either axis, without having every frame.
//!
//! On the rows axis row `i` is at `i * ROW_H`. On the time axis the space before a row grows with the time
//! since the previous frame, and gaps too long to show are folded into a fixed-height break. On the linear
//! axis the space before a row is the gap at the chosen scale (never less than a row), nothing folded.
//! Pages not fetched yet are estimated at one row height per frame, and corrected when they arrive.

use super::window::{FrameWindow, PAGE};
use crate::view_query::Axis;
use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::session::CHUNK_KINDS;
use acp_tee_shared::FrameKind;
use std::ops::Range;

/// Height of one frame row, pixels.
pub const ROW_H: f64 = 40.0;
/// Height of a folded idle gap on the time axis.
pub const FOLD_H: f64 = 26.0;
/// Time-axis scale.
pub const PX_PER_MS: f64 = 2.0;
/// Gaps that would take more than this are folded (120 ms at the scale above).
const FOLD_AT_PX: f64 = 240.0;
/// The linear axis's scale when the URL names none: milliseconds per 100 px.
pub const DEFAULT_SCALE_MS: f64 = 100.0;

/// How a row's vertical position is worked out.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Spacing {
    /// One row height per frame.
    Rows,
    /// Compressed time, long gaps folded.
    Folded,
    /// Proportional time: pixels per nanosecond.
    Linear(f64),
}

impl Spacing {
    /// The space before a row after a gap, and the gap when it is marked above the row (folded on the time
    /// axis, labelled on the linear one).
    fn before(self, gap_ns: i64) -> (f64, Option<i64>) {
        match self {
            Spacing::Rows => (ROW_H, None),
            Spacing::Folded => {
                let px = gap_ns as f64 / 1e6 * PX_PER_MS;
                if px <= ROW_H {
                    (ROW_H, None)
                } else if px <= FOLD_AT_PX {
                    (px, None)
                } else {
                    (ROW_H + FOLD_H, Some(gap_ns))
                }
            }
            Spacing::Linear(px_per_ns) => {
                let px = gap_ns.max(0) as f64 * px_per_ns;
                if px <= ROW_H {
                    (ROW_H, None)
                } else {
                    (px, Some(gap_ns))
                }
            }
        }
    }
}

/// Whether `b` continues a run of streamed chunks that `a` is in: both `session/update` notifications of one
/// chunk kind, one way, in one session.
pub fn continues_run(a: &FrameSummary, b: &FrameSummary) -> bool {
    let chunk = |f: &FrameSummary| {
        f.kind == FrameKind::Notification
            && f.method.as_deref() == Some("session/update")
            && f.update.as_deref().is_some_and(|u| CHUNK_KINDS.contains(&u))
    };
    chunk(a) && chunk(b) && a.dir == b.dir && a.session_id == b.session_id && a.update == b.update
}

/// Characters of a collapsed run's joined text kept at most (the row shows what fits; its tooltip the rest).
pub const JOINED_MAX_CHARS: usize = 1000;

/// The text of a run of streamed chunks as it reads joined: each chunk's preview, a space between two only
/// where the text had whitespace (`FrameSummary::spaced`), so "Hel" "lo wor" "ld. " read "Hello world.".
/// `None` when no chunk has text.
pub fn joined_preview<'a>(frames: impl IntoIterator<Item = &'a FrameSummary>) -> Option<String> {
    let (mut out, mut chars, mut space) = (String::new(), 0usize, false);
    for f in frames {
        space |= f.spaced & 1 != 0;
        if let Some(p) = f.preview.as_deref().filter(|p| !p.is_empty()) {
            if space && !out.is_empty() {
                out.push(' ');
                chars += 1;
            }
            let n = p.chars().count();
            if chars + n > JOINED_MAX_CHARS {
                out.extend(p.chars().take(JOINED_MAX_CHARS.saturating_sub(chars)));
                out.push('…');
                return Some(out);
            }
            out.push_str(p);
            chars += n;
            space = false;
        }
        space |= f.spaced & 2 != 0;
    }
    (!out.is_empty()).then_some(out)
}

/// A fetched row's place: its y relative to its page's first row, the gap marked above it, and, when runs
/// of chunks are collapsed, whether it is drawn and how many rows its run holds.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RowOffset {
    dy: f64,
    gap: Option<i64>,
    /// False for a row that continues a collapsed run: it sits, undrawn, under the run's first row.
    shown: bool,
    /// For a drawn row: the rows of its run fetched so far (1 when it heads no run).
    run: u32,
}

/// The vertical position of every row of a filtered view.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    axis: Axis,
    /// False when every row is one row height below the last (the rows axis, nothing collapsed).
    paged: bool,
    total: usize,
    /// Time axis: y of the first row of each page.
    page_top: Vec<f64>,
    /// Time axis, fetched pages: each row's y relative to its page's first row, and its folded gap.
    rows: Vec<Option<Vec<RowOffset>>>,
    height: f64,
}

impl Layout {
    /// Lays out what a window holds on an axis; `scale_ms` is the linear axis's milliseconds per 100 px;
    /// with `collapse`, each run of streamed chunks (see [`continues_run`]) takes one row, as far as its
    /// frames are fetched.
    pub fn build(w: &FrameWindow, axis: Axis, scale_ms: Option<f64>, collapse: bool) -> Layout {
        let total = w.total();
        let spacing = match axis {
            Axis::Rows => Spacing::Rows,
            Axis::Time => Spacing::Folded,
            Axis::Linear => Spacing::Linear(100.0 / (scale_ms.unwrap_or(DEFAULT_SCALE_MS) * 1e6)),
        };
        if (axis == Axis::Rows && !collapse) || total == 0 {
            return Layout {
                axis,
                paged: false,
                total,
                page_top: Vec::new(),
                rows: Vec::new(),
                height: total as f64 * ROW_H,
            };
        }
        let pages = total.div_ceil(PAGE);
        let mut page_top = Vec::with_capacity(pages);
        let mut rows: Vec<Option<Vec<RowOffset>>> = Vec::with_capacity(pages);
        let mut y = 0.0;
        // The previous page's last frame, when that page is whole, and where its run's head is.
        let mut prev: Option<&FrameSummary> = None;
        let mut head: Option<(usize, usize)> = None;
        for p in 0..pages {
            let len = w.page_len(p);
            let fetched = w.page(p);
            let first = fetched.and_then(|f| f.first());
            let hidden_first = collapse && matches!((prev, first), (Some(a), Some(b)) if continues_run(a, b));
            // The space before this page's first row needs the previous page's last frame.
            let before = match (p, prev, first) {
                (0, _, _) => (0.0, None),
                _ if hidden_first => (0.0, None),
                (_, Some(a), Some(b)) => spacing.before(b.t_ns - a.t_ns),
                _ => (ROW_H, None),
            };
            y += before.0;
            page_top.push(y);
            if !hidden_first {
                head = None;
            }
            let laid = fetched.map(|frames| {
                let mut laid = Vec::with_capacity(len);
                let mut dy = 0.0;
                for j in 0..len {
                    let (a, b) = (if j == 0 { prev } else { frames.get(j - 1) }, frames.get(j));
                    let hidden = if j == 0 {
                        hidden_first
                    } else {
                        collapse && matches!((a, b), (Some(a), Some(b)) if continues_run(a, b))
                    };
                    let (space, gap) = match (j, hidden, a, b) {
                        (0, _, _, _) => (0.0, before.1),
                        (_, true, _, _) => (0.0, None),
                        (_, false, Some(a), Some(b)) => spacing.before(b.t_ns - a.t_ns),
                        _ => (ROW_H, None),
                    };
                    dy += space;
                    if hidden {
                        match head {
                            Some((hp, hj)) if hp == p => bump(&mut laid, hj),
                            Some((hp, hj)) => {
                                if let Some(r) = rows.get_mut(hp).and_then(Option::as_mut) {
                                    bump(r, hj);
                                }
                            }
                            None => {}
                        }
                    } else {
                        head = Some((p, j));
                    }
                    laid.push(RowOffset { dy, gap, shown: !hidden, run: 1 });
                }
                laid
            });
            if laid.is_none() {
                head = None;
            }
            let span = laid.as_ref().and_then(|r| r.last()).map_or((len as f64 - 1.0) * ROW_H, |r| r.dy);
            y += span.max(0.0);
            prev = fetched.filter(|f| f.len() == len).and_then(|f| f.last());
            rows.push(laid);
        }
        Layout { axis, paged: true, total, page_top, rows, height: y + ROW_H }
    }

    /// Total height of all rows.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// The y of a row's top.
    pub fn y_of(&self, idx: usize) -> f64 {
        if !self.paged {
            return idx as f64 * ROW_H;
        }
        let (p, j) = (idx / PAGE, idx % PAGE);
        let top = self.page_top.get(p).copied().unwrap_or(self.height);
        match self.row(idx) {
            Some(r) => top + r.dy,
            None => top + j as f64 * ROW_H,
        }
    }

    fn row(&self, idx: usize) -> Option<&RowOffset> {
        self.rows.get(idx / PAGE)?.as_ref()?.get(idx % PAGE)
    }

    /// False for a row that continues a collapsed run of chunks (it is not drawn).
    pub fn is_shown(&self, idx: usize) -> bool {
        self.row(idx).is_none_or(|r| r.shown)
    }

    /// How many fetched rows the run a drawn row heads holds (1: no run).
    pub fn run_of(&self, idx: usize) -> u32 {
        self.row(idx).map_or(1, |r| r.run)
    }

    /// Whether rows' heights vary (and pages not fetched are estimated): false on the rows axis with nothing
    /// collapsed, where row `i` is at `i * ROW_H` whatever is fetched.
    pub fn is_paged(&self) -> bool {
        self.paged
    }

    /// The axis rows are laid out on.
    pub fn axis(&self) -> Axis {
        self.axis
    }

    /// The gap marked just above a row: folded on the time axis, labelled on the linear one.
    pub fn gap_before(&self, idx: usize) -> Option<i64> {
        self.row(idx)?.gap
    }

    /// The row at a height (the last row whose top is at or above it).
    pub fn index_at(&self, y: f64) -> usize {
        if self.total == 0 {
            return 0;
        }
        let last = self.total - 1;
        if !self.paged {
            return ((y / ROW_H).floor().max(0.0) as usize).min(last);
        }
        let p = self.page_top.partition_point(|&top| top <= y).saturating_sub(1);
        let top = self.page_top[p];
        let j = match self.rows[p].as_ref() {
            Some(rows) => rows.partition_point(|r| top + r.dy <= y).saturating_sub(1),
            None => ((y - top) / ROW_H).floor().max(0.0) as usize,
        };
        // A row under a collapsed run is found as the run's first row, which is drawn there.
        let mut idx = (p * PAGE + j).min(last);
        while idx > 0 && !self.is_shown(idx) {
            idx -= 1;
        }
        idx
    }

    /// The rows with any part between two heights.
    pub fn rows_between(&self, y0: f64, y1: f64) -> Range<usize> {
        if self.total == 0 {
            return 0..0;
        }
        self.index_at(y0)..(self.index_at(y1) + 1).min(self.total)
    }
}

/// Counts one more row into the run headed by row `j` of a page's offsets.
fn bump(rows: &mut [RowOffset], j: usize) {
    if let Some(r) = rows.get_mut(j) {
        r.run += 1;
    }
}

/// Most pixels the scroll area is made tall: browsers stop laying out around 33 million, so taller
/// content is scrolled proportionally (a pixel of scrollbar is then more than a pixel of rows).
pub const MAX_SCROLL_H: f64 = 8_000_000.0;

/// Maps the scroll position of a (possibly shortened) scroll area to heights in the layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scroller {
    /// Height of the content.
    pub layout_h: f64,
    /// Height given to the scroll area.
    pub scroll_h: f64,
    /// Height of the visible part.
    pub view_h: f64,
}

impl Scroller {
    /// For content of a height seen through a viewport.
    pub fn new(layout_h: f64, view_h: f64) -> Scroller {
        Scroller { layout_h, scroll_h: layout_h.min(MAX_SCROLL_H), view_h }
    }

    /// Layout pixels per scrolled pixel: 1 unless the content is taller than the scroll area can be.
    pub fn ratio(&self) -> f64 {
        let (content, area) = (self.layout_h - self.view_h, self.scroll_h - self.view_h);
        if area <= 0.0 || content <= area {
            1.0
        } else {
            content / area
        }
    }

    /// The layout height at the top of the viewport.
    pub fn layout_top(&self, scroll_top: f64) -> f64 {
        scroll_top * self.ratio()
    }

    /// The scroll position that puts a layout height at the top of the viewport.
    pub fn scroll_for(&self, layout_y: f64) -> f64 {
        layout_y / self.ratio()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;
    use acp_tee_shared::api::{FramePage, FrameSummary};
    use acp_tee_shared::{Direction, FrameKind};

    fn at(seq: i64, t_ms: f64) -> FrameSummary {
        summary(seq, (t_ms * 1e6) as i64, Direction::ClientToAgent, FrameKind::Notification)
    }

    #[test]
    fn time_axis_spaces_by_gap_and_folds_long_idles() {
        let mut w = FrameWindow::default();
        let frames = vec![at(1, 0.0), at(2, 1.0), at(3, 51.0), at(4, 5051.0)];
        w.insert_page(0, FramePage { frames, total: 4, has_more: false });
        let l = Layout::build(&w, Axis::Time, None, false);
        assert_eq!(l.y_of(1), ROW_H);
        assert_eq!(l.y_of(2), ROW_H + 100.0);
        assert_eq!(l.y_of(3), ROW_H + 100.0 + ROW_H + FOLD_H);
        assert_eq!(l.gap_before(3), Some(5_000_000_000));
        assert_eq!(l.index_at(ROW_H + 99.0), 1);
        assert_eq!(l.rows_between(0.0, 10_000.0), 0..4);
        // Proportional: 50 ms at 10 ms per 100 px is 500 px; 5 s is 50,000 px, not folded.
        let linear = Layout::build(&w, Axis::Linear, Some(10.0), false);
        assert!((linear.y_of(2) - linear.y_of(1) - 500.0).abs() < 1e-6);
        assert!((linear.y_of(3) - linear.y_of(2) - 50_000.0).abs() < 1e-3);
        assert_eq!((linear.gap_before(1), linear.gap_before(3)), (None, Some(5_000_000_000)));
        let rows = Layout::build(&w, Axis::Rows, None, false);
        assert_eq!((rows.y_of(3), rows.height()), (3.0 * ROW_H, 4.0 * ROW_H));
    }

    fn chunk(seq: i64, sid: &str, kind: &str) -> FrameSummary {
        FrameSummary {
            dir: Direction::AgentToClient,
            method: Some("session/update".into()),
            session_id: Some(sid.into()),
            update: Some(kind.into()),
            ..at(seq, seq as f64)
        }
    }

    #[test]
    fn a_runs_previews_join_as_its_text_does() {
        let piece = |seq: i64, preview: &str, spaced: u8| FrameSummary {
            preview: Some(preview.to_owned()).filter(|p| !p.is_empty()),
            spaced,
            ..chunk(seq, "s", "agent_message_chunk")
        };
        // "Hel" "lo wor" "ld. " " " "\nHow" " are" " you?"
        let run = [
            piece(1, "Hel", 0),
            piece(2, "lo wor", 0),
            piece(3, "ld.", 2),
            piece(4, "", 3),
            piece(5, "How", 1),
            piece(6, "are", 1),
            piece(7, "you?", 1),
        ];
        assert_eq!(joined_preview(&run).as_deref(), Some("Hello world. How are you?"));
        assert_eq!(joined_preview(&run[3..4]), None);
        let long = vec![piece(1, &"x".repeat(600), 2), piece(2, &"y".repeat(600), 0)];
        let joined = joined_preview(&long).unwrap();
        assert_eq!(joined.chars().count(), JOINED_MAX_CHARS + 1);
        assert!(joined.ends_with("y…") && joined.contains("x y"), "{joined}");
    }

    #[test]
    fn collapsed_runs_of_chunks_take_one_row_each_and_are_found_at_their_first_row() {
        // #1 alone, #2-#4 one run, #5 a tool call, #6-#7 a run of thoughts, #8 a chunk of another session.
        let frames = vec![
            at(1, 0.0),
            chunk(2, "a", "agent_message_chunk"),
            chunk(3, "a", "agent_message_chunk"),
            chunk(4, "a", "agent_message_chunk"),
            chunk(5, "a", "tool_call"),
            chunk(6, "a", "agent_thought_chunk"),
            chunk(7, "a", "agent_thought_chunk"),
            chunk(8, "b", "agent_thought_chunk"),
        ];
        let mut w = FrameWindow::default();
        w.insert_page(0, FramePage { frames, total: 8, has_more: false });
        let l = Layout::build(&w, Axis::Rows, None, true);
        let shown: Vec<usize> = (0..8).filter(|&i| l.is_shown(i)).collect();
        assert_eq!(shown, [0, 1, 4, 5, 7]);
        let runs: Vec<u32> = shown.iter().map(|&i| l.run_of(i)).collect();
        assert_eq!(runs, [1, 3, 1, 2, 1]);
        assert_eq!((l.y_of(1), l.y_of(3), l.y_of(4)), (ROW_H, ROW_H, 2.0 * ROW_H));
        assert_eq!(l.height(), 5.0 * ROW_H);
        // Anywhere on the run's row is the run's first frame; its rows are all in the range drawn.
        assert_eq!(l.index_at(ROW_H + 10.0), 1);
        assert_eq!(l.rows_between(ROW_H, 2.0 * ROW_H + 1.0), 1..5);
        // Not collapsed: a row each.
        let plain = Layout::build(&w, Axis::Rows, None, false);
        assert!((0..8).all(|i| plain.is_shown(i) && plain.run_of(i) == 1));
        assert_eq!(plain.height(), 8.0 * ROW_H);
        // On the time axis too: the run's frames add no space.
        let time = Layout::build(&w, Axis::Time, None, true);
        assert_eq!(time.y_of(2), time.y_of(1));
        assert!(time.y_of(4) > time.y_of(3));
    }

    #[test]
    fn a_run_goes_on_across_pages_once_both_are_fetched() {
        let total = PAGE + 3;
        let page = |p: usize| -> Vec<FrameSummary> {
            let seqs = if p == 0 { 1..=PAGE as i64 } else { PAGE as i64 + 1..=total as i64 };
            seqs.map(|s| if s > PAGE as i64 - 2 { chunk(s, "a", "agent_message_chunk") } else { at(s, s as f64) })
                .collect()
        };
        let mut w = FrameWindow::default();
        w.insert_page(1, FramePage { frames: page(1), total: total as i64, has_more: false });
        // The first page unknown: the second page's first row heads what is known.
        let l = Layout::build(&w, Axis::Rows, None, true);
        assert!(l.is_shown(PAGE));
        assert_eq!(l.run_of(PAGE), 3);
        w.insert_page(0, FramePage { frames: page(0), total: total as i64, has_more: true });
        let l = Layout::build(&w, Axis::Rows, None, true);
        let head = PAGE - 2;
        assert!(l.is_shown(head) && (head + 1..total).all(|i| !l.is_shown(i)));
        assert_eq!(l.run_of(head), 5);
        assert_eq!(l.index_at(l.y_of(head) + 1.0), head);
        assert_eq!(l.height(), (head + 1) as f64 * ROW_H);
    }

    #[test]
    fn tall_content_scrolls_proportionally() {
        let s = Scroller::new(40_000_000.0, 1000.0);
        assert_eq!(s.scroll_h, MAX_SCROLL_H);
        let bottom = s.scroll_h - s.view_h;
        assert!((s.layout_top(bottom) - (s.layout_h - s.view_h)).abs() < 1e-3);
        assert!((s.layout_top(s.scroll_for(1234.0)) - 1234.0).abs() < 1e-6);
    }
}
