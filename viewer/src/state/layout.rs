//! Where each row of the diagram sits vertically, on either axis, without having every frame.
//!
//! On the rows axis row `i` is at `i * ROW_H`. On the time axis the space before a row grows with the time
//! since the previous frame, and gaps too long to show are folded into a fixed-height break. On the linear
//! axis the space before a row is the gap at the chosen scale (never less than a row), nothing folded.
//! Pages not fetched yet are estimated at one row height per frame, and corrected when they arrive.

use super::window::{FrameWindow, PAGE};
use crate::view_query::Axis;
use std::ops::Range;

/// Height of one frame row, pixels.
pub const ROW_H: f64 = 40.0;
/// Height of a folded idle gap on the time axis.
pub const FOLD_H: f64 = 26.0;
/// Time-axis scale.
const PX_PER_MS: f64 = 2.0;
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

/// A row's y relative to its page's first row, and the gap marked above it.
type RowOffset = (f64, Option<i64>);

/// The vertical position of every row of a filtered view.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    axis: Axis,
    total: usize,
    /// Time axis: y of the first row of each page.
    page_top: Vec<f64>,
    /// Time axis, fetched pages: each row's y relative to its page's first row, and its folded gap.
    rows: Vec<Option<Vec<RowOffset>>>,
    height: f64,
}

impl Layout {
    /// Lays out what a window holds on an axis; `scale_ms` is the linear axis's milliseconds per 100 px.
    pub fn build(w: &FrameWindow, axis: Axis, scale_ms: Option<f64>) -> Layout {
        let total = w.total();
        let spacing = match axis {
            Axis::Rows => Spacing::Rows,
            Axis::Time => Spacing::Folded,
            Axis::Linear => Spacing::Linear(100.0 / (scale_ms.unwrap_or(DEFAULT_SCALE_MS) * 1e6)),
        };
        if axis == Axis::Rows || total == 0 {
            return Layout {
                axis: Axis::Rows,
                total,
                page_top: Vec::new(),
                rows: Vec::new(),
                height: total as f64 * ROW_H,
            };
        }
        let pages = total.div_ceil(PAGE);
        let mut page_top = Vec::with_capacity(pages);
        let mut rows = Vec::with_capacity(pages);
        let mut y = 0.0;
        let mut prev_t: Option<i64> = None;
        for p in 0..pages {
            let len = w.page_len(p);
            let fetched = w.page(p);
            // The space before this page's first row needs the previous page's last frame.
            let first_t = fetched.and_then(|f| f.first()).map(|f| f.t_ns);
            let before = match (p, prev_t, first_t) {
                (0, _, _) => (0.0, None),
                (_, Some(a), Some(b)) => spacing.before(b - a),
                _ => (ROW_H, None),
            };
            y += before.0;
            page_top.push(y);
            let laid = fetched.map(|frames| lay_out_page(frames, len, before.1, spacing));
            let span = laid.as_ref().and_then(|r| r.last()).map_or((len as f64 - 1.0) * ROW_H, |r| r.0);
            y += span.max(0.0);
            prev_t = fetched.filter(|f| f.len() == len).and_then(|f| f.last()).map(|f| f.t_ns);
            rows.push(laid);
        }
        Layout { axis, total, page_top, rows, height: y + ROW_H }
    }

    /// Total height of all rows.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// The y of a row's top.
    pub fn y_of(&self, idx: usize) -> f64 {
        if self.axis == Axis::Rows {
            return idx as f64 * ROW_H;
        }
        let (p, j) = (idx / PAGE, idx % PAGE);
        let top = self.page_top.get(p).copied().unwrap_or(self.height);
        match self.rows.get(p).and_then(|r| r.as_ref()).and_then(|r| r.get(j)) {
            Some(&(dy, _)) => top + dy,
            None => top + j as f64 * ROW_H,
        }
    }

    /// The axis rows are laid out on.
    pub fn axis(&self) -> Axis {
        self.axis
    }

    /// The gap marked just above a row: folded on the time axis, labelled on the linear one.
    pub fn gap_before(&self, idx: usize) -> Option<i64> {
        let rows = self.rows.get(idx / PAGE)?.as_ref()?;
        rows.get(idx % PAGE)?.1
    }

    /// The row at a height (the last row whose top is at or above it).
    pub fn index_at(&self, y: f64) -> usize {
        if self.total == 0 {
            return 0;
        }
        let last = self.total - 1;
        if self.axis == Axis::Rows {
            return ((y / ROW_H).floor().max(0.0) as usize).min(last);
        }
        let p = self.page_top.partition_point(|&top| top <= y).saturating_sub(1);
        let top = self.page_top[p];
        let j = match self.rows[p].as_ref() {
            Some(rows) => rows.partition_point(|&(dy, _)| top + dy <= y).saturating_sub(1),
            None => ((y - top) / ROW_H).floor().max(0.0) as usize,
        };
        (p * PAGE + j).min(last)
    }

    /// The rows with any part between two heights.
    pub fn rows_between(&self, y0: f64, y1: f64) -> Range<usize> {
        if self.total == 0 {
            return 0..0;
        }
        self.index_at(y0)..(self.index_at(y1) + 1).min(self.total)
    }
}

/// Row offsets of one fetched page from its frames' times; rows not fetched yet get one row height each.
fn lay_out_page(
    frames: &[acp_tee_shared::api::FrameSummary],
    len: usize,
    first_gap: Option<i64>,
    spacing: Spacing,
) -> Vec<RowOffset> {
    let mut out = Vec::with_capacity(len);
    let mut dy = 0.0;
    out.push((0.0, first_gap));
    for j in 1..len {
        let (space, fold) = match (frames.get(j - 1), frames.get(j)) {
            (Some(a), Some(b)) => spacing.before(b.t_ns - a.t_ns),
            _ => (ROW_H, None),
        };
        dy += space;
        out.push((dy, fold));
    }
    out
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

    fn ratio(&self) -> f64 {
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
    use acp_tee_shared::api::{FramePage, FrameSummary};
    use acp_tee_shared::{Direction, FrameKind};

    fn at(seq: i64, t_ms: f64) -> FrameSummary {
        FrameSummary {
            seq,
            t_ns: (t_ms * 1e6) as i64,
            dir: Direction::ClientToAgent,
            kind: FrameKind::Notification,
            id: None,
            method: None,
            session_id: None,
            reply_to_seq: None,
            latency_ns: None,
            reply_seq: None,
            size: 1,
            preview: None,
            mcp: false,
            mcp_method: None,
        }
    }

    #[test]
    fn time_axis_spaces_by_gap_and_folds_long_idles() {
        let mut w = FrameWindow::default();
        let frames = vec![at(1, 0.0), at(2, 1.0), at(3, 51.0), at(4, 5051.0)];
        w.insert_page(0, FramePage { frames, total: 4, has_more: false });
        let l = Layout::build(&w, Axis::Time, None);
        assert_eq!(l.y_of(1), ROW_H);
        assert_eq!(l.y_of(2), ROW_H + 100.0);
        assert_eq!(l.y_of(3), ROW_H + 100.0 + ROW_H + FOLD_H);
        assert_eq!(l.gap_before(3), Some(5_000_000_000));
        assert_eq!(l.index_at(ROW_H + 99.0), 1);
        assert_eq!(l.rows_between(0.0, 10_000.0), 0..4);
        // Proportional: 50 ms at 10 ms per 100 px is 500 px; 5 s is 50,000 px, not folded.
        let linear = Layout::build(&w, Axis::Linear, Some(10.0));
        assert!((linear.y_of(2) - linear.y_of(1) - 500.0).abs() < 1e-6);
        assert!((linear.y_of(3) - linear.y_of(2) - 50_000.0).abs() < 1e-3);
        assert_eq!((linear.gap_before(1), linear.gap_before(3)), (None, Some(5_000_000_000)));
        let rows = Layout::build(&w, Axis::Rows, None);
        assert_eq!((rows.y_of(3), rows.height()), (3.0 * ROW_H, 4.0 * ROW_H));
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
