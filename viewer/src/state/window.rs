//! The frames of one filtered view, as far as they have been fetched: pages of [`PAGE`] frames keyed by
//! page number, and how many frames match in all.
//!
//! Only the pages around what the user looks at are ever fetched, and far ones are evicted, so memory stays
//! bounded on a trace of a million frames.

use acp_tee_shared::api::{FramePage, FrameSummary};
use std::collections::BTreeMap;
use std::ops::Range;

/// Frames per fetched page.
pub const PAGE: usize = 200;

/// Pages kept before the farthest from the last fetched one are dropped (100k frames).
const MAX_PAGES: usize = 500;

/// The fetched part of a filtered frame list.
#[derive(Clone, Debug, Default)]
pub struct FrameWindow {
    total: usize,
    loaded: bool,
    pages: BTreeMap<usize, Vec<FrameSummary>>,
}

impl FrameWindow {
    /// How many frames match the filters in all.
    pub fn total(&self) -> usize {
        self.total
    }

    /// True once the first page has arrived (so `total` is known).
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// The frame at a position of the filtered list, when fetched.
    pub fn get(&self, idx: usize) -> Option<&FrameSummary> {
        self.pages.get(&(idx / PAGE))?.get(idx % PAGE)
    }

    /// Every fetched frame, in order.
    pub fn fetched(&self) -> impl Iterator<Item = &FrameSummary> {
        self.pages.values().flatten()
    }

    /// The fetched frames of a page.
    pub fn page(&self, page: usize) -> Option<&[FrameSummary]> {
        self.pages.get(&page).map(Vec::as_slice)
    }

    /// How many frames page `page` should hold given `total`.
    pub fn page_len(&self, page: usize) -> usize {
        self.total.saturating_sub(page * PAGE).min(PAGE)
    }

    /// Pages overlapping the rows `rows` that are not (completely) fetched.
    pub fn missing_pages(&self, rows: Range<usize>) -> Vec<usize> {
        if !self.loaded {
            return vec![0];
        }
        let end = rows.end.min(self.total);
        if rows.start >= end {
            return Vec::new();
        }
        (rows.start / PAGE..=(end - 1) / PAGE)
            .filter(|&p| self.pages.get(&p).is_none_or(|f| f.len() < self.page_len(p)))
            .collect()
    }

    /// Stores a fetched page. Totals only grow while a view lives (frames are never deleted), so a page
    /// fetched before some live frames arrived cannot shrink what is known.
    pub fn insert_page(&mut self, page: usize, fetched: FramePage) {
        self.loaded = true;
        self.total = self.total.max(fetched.total.max(0) as usize);
        let longer = self.pages.get(&page).is_none_or(|have| have.len() <= fetched.frames.len());
        if longer {
            self.pages.insert(page, fetched.frames);
        }
        self.evict_far_from(page);
    }

    /// Appends live frames that match the view. Returns false when the tail of the list is not fetched,
    /// so the frames cannot be placed: the caller then asks the server for a fresh total.
    pub fn append_live(&mut self, frames: Vec<FrameSummary>) -> bool {
        if !self.loaded {
            return false;
        }
        let last_seq = match self.total {
            0 => 0,
            n => match self.get(n - 1) {
                Some(f) => f.seq,
                None => return false,
            },
        };
        for f in frames.into_iter().filter(|f| f.seq > last_seq) {
            self.pages.entry(self.total / PAGE).or_default().push(f);
            self.total += 1;
        }
        true
    }

    /// Records on fetched requests the responses that just arrived live (their `reply_seq`), so their busy
    /// spans close; responses the filters hide count too.
    pub fn link_replies(&mut self, frames: &[FrameSummary]) {
        for f in frames {
            let Some(request) = f.reply_to_seq else { continue };
            if let Some(idx) = self.index_of_seq(request) {
                if let Some(r) = self.pages.get_mut(&(idx / PAGE)).and_then(|p| p.get_mut(idx % PAGE)) {
                    r.reply_seq = Some(f.seq);
                }
            }
        }
    }

    /// The position of a frame in the filtered list, when its page is fetched.
    pub fn index_of_seq(&self, seq: i64) -> Option<usize> {
        self.pages.iter().find_map(|(p, frames)| {
            let (first, last) = (frames.first()?.seq, frames.last()?.seq);
            if seq < first || seq > last {
                return None;
            }
            frames.binary_search_by_key(&seq, |f| f.seq).ok().map(|i| p * PAGE + i)
        })
    }

    /// Where a frame sits among the fetched ones: `Ok(position)` when fetched; `Err(Some(position))` when
    /// the frames around it are fetched and it is not among them (the filters hide it), with the position
    /// of the first frame after it; `Err(None)` when that cannot be told yet.
    pub fn place_of_seq(&self, seq: i64) -> Result<usize, Option<usize>> {
        let prev_known = |idx: usize| idx == 0 || self.get(idx - 1).is_some_and(|f| f.seq < seq);
        for (p, frames) in &self.pages {
            let pos = frames.partition_point(|f| f.seq < seq);
            match frames.get(pos) {
                Some(f) if f.seq == seq => return Ok(p * PAGE + pos),
                Some(_) => {
                    let idx = p * PAGE + pos;
                    return Err(prev_known(idx).then_some(idx));
                }
                None => {}
            }
        }
        let end = self.total;
        Err((self.loaded && prev_known(end)).then_some(end))
    }

    /// The seq of the frame `step` positions from a frame (-1: the one before, 1: the one after), also
    /// when the filters hide that frame, as far as the fetched frames tell.
    pub fn neighbour(&self, seq: i64, step: i64) -> Option<i64> {
        let idx = match self.place_of_seq(seq) {
            Ok(i) => i as i64 + step,
            Err(Some(after)) if step > 0 => after as i64 + step - 1,
            Err(Some(after)) => after as i64 + step,
            Err(None) => return None,
        };
        usize::try_from(idx).ok().and_then(|i| self.get(i)).map(|f| f.seq)
    }

    fn evict_far_from(&mut self, page: usize) {
        while self.pages.len() > MAX_PAGES {
            let far = self.pages.keys().copied().max_by_key(|p| p.abs_diff(page));
            match far {
                Some(p) => self.pages.remove(&p),
                None => break,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;
    use acp_tee_shared::{Direction, FrameKind};

    fn frame(seq: i64) -> FrameSummary {
        FrameSummary {
            method: Some("m".into()),
            size: 10,
            ..summary(seq, seq * 1000, Direction::ClientToAgent, FrameKind::Notification)
        }
    }

    fn page(seqs: Range<i64>, total: i64) -> FramePage {
        FramePage { frames: seqs.map(frame).collect(), total, has_more: false }
    }

    #[test]
    fn live_frames_append_only_after_the_fetched_tail() {
        let mut w = FrameWindow::default();
        assert_eq!(w.missing_pages(0..10), vec![0]);
        w.insert_page(0, page(1..4, 3));
        assert!(w.append_live(vec![frame(2), frame(3), frame(4)]));
        assert_eq!(w.total(), 4);
        assert_eq!(w.index_of_seq(4), Some(3));
        // A page fetched before the live frame arrived does not undo it.
        w.insert_page(0, page(1..4, 3));
        assert_eq!((w.total(), w.get(3).map(|f| f.seq)), (4, Some(4)));
    }

    #[test]
    fn a_frame_the_filters_hide_has_a_place_and_neighbours() {
        let mut w = FrameWindow::default();
        // Seqs 2, 4, 6 match; 3 and 5 are hidden.
        w.insert_page(0, FramePage { frames: vec![frame(2), frame(4), frame(6)], total: 3, has_more: false });
        assert_eq!(w.place_of_seq(4), Ok(1));
        assert_eq!(w.place_of_seq(3), Err(Some(1)));
        assert_eq!(w.place_of_seq(1), Err(Some(0)));
        assert_eq!(w.place_of_seq(9), Err(Some(3)));
        assert_eq!((w.neighbour(3, 1), w.neighbour(3, -1)), (Some(4), Some(2)));
        assert_eq!((w.neighbour(1, 1), w.neighbour(1, -1)), (Some(2), None));
        assert_eq!(w.neighbour(9, -1), Some(6));
        // Page 1 not fetched: a seq beyond page 0 cannot be placed.
        let mut big = FrameWindow::default();
        big.insert_page(0, page(1..201, 450));
        assert_eq!(big.place_of_seq(300), Err(None));
        assert_eq!(big.neighbour(300, 1), None);
    }

    #[test]
    fn pages_not_fetched_are_missing_and_block_live_appends() {
        let mut w = FrameWindow::default();
        w.insert_page(0, page(1..201, 450));
        assert_eq!(w.missing_pages(150..420), vec![1, 2]);
        assert!(!w.append_live(vec![frame(451)]));
        w.insert_page(2, page(401..451, 450));
        assert!(w.append_live(vec![frame(451)]));
        assert_eq!(w.get(450).map(|f| f.seq), Some(451));
        assert_eq!(w.missing_pages(440..451), Vec::<usize>::new());
    }
}
