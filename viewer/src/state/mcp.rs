//! Where the frames of the MCP lanes sit in the diagram. The rows are the ACP trace's frames; an MCP frame
//! has no row of its own: it is drawn at the height its time maps to between the drawn rows around it
//! (interpolated between their arrows; across a folded idle gap, beside the row it is nearer in time), so
//! the reader sees what the server did between two ACP messages. Frames that bunch between two rows are
//! spread to stay apart, in time order; only those with room keep a label.
//!
//! Only the rows drawn are looked at, so this costs the same on a trace of a million frames.

use super::busy::assign_columns;
use super::family::McpLane;
use super::layout::{FOLD_H, PX_PER_MS, ROW_H};
use acp_tee_shared::api::FrameSummary;
use acp_tee_shared::{Direction, FrameKind};
use std::collections::HashMap;

/// y of an arrow within its row (as the diagram draws it).
pub const ARROW_Y: f64 = 20.0;
/// Space kept between an MCP arrow and the ACP arrows above and below it.
const PAD: f64 = 7.0;
/// Space an MCP arrow needs above it for its label.
pub const LABEL_DY: f64 = 13.0;
/// The least space between two MCP arrows, when they must squeeze.
const MIN_DY: f64 = 4.0;
/// Frames after the trace's last row (a live trace's server at work) are drawn below it, this many at most
/// one label apart; more squeeze into that room.
const MAX_TAIL: usize = 8;

/// A frame of an MCP lane on this trace's clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McpEvent {
    /// When, on this trace's clock (the child's `t_ns` plus its offset).
    pub t_ns: i64,
    /// Its lane.
    pub lane: usize,
    /// Its position in the lane's frames.
    pub idx: usize,
}

/// Every fetched frame of every lane in time order; stderr lines are left out (they are the server's own
/// business, not a message to or from the agent).
pub fn timeline(lanes: &[McpLane]) -> Vec<McpEvent> {
    let mut events: Vec<McpEvent> = lanes
        .iter()
        .enumerate()
        .flat_map(|(lane, l)| {
            l.frames.iter().enumerate().filter(|(_, f)| f.dir != Direction::AgentStderr).map(move |(idx, f)| McpEvent {
                t_ns: f.t_ns + l.offset_ns,
                lane,
                idx,
            })
        })
        .collect();
    events.sort_by_key(|e| (e.t_ns, e.lane, e.idx));
    events
}

/// A drawn ACP row the MCP frames are placed against.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    /// Its frame's time.
    pub t_ns: i64,
    /// The row's top.
    pub y: f64,
    /// A folded idle gap is drawn just above the row (time axis).
    pub folded: bool,
}

/// An MCP frame with its place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    /// Which lane, which of its frames.
    pub event: McpEvent,
    /// The height of its arrow.
    pub y: f64,
    /// Whether it has room for its label.
    pub labelled: bool,
}

/// What [`place`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    /// The frames placed, top to bottom.
    pub placed: Vec<Placed>,
    /// The lowest arrow drawn below the last row (`None`: nothing drawn there).
    pub tail_bottom: Option<f64>,
}

/// Places the MCP frames that fall between the first and last drawn rows (`anchors`, top to bottom); with
/// `at_end` (the last anchor is the trace's last row), the frames after it too, below it.
pub fn place(anchors: &[Anchor], at_end: bool, events: &[McpEvent]) -> Placement {
    let mut out = Placement::default();
    let Some(first) = anchors.first() else { return out };
    // Times of rows only rise; a row recorded out of order is taken as at its predecessor's time.
    let mut t_prev = first.t_ns;
    let mut from = events.partition_point(|e| e.t_ns < first.t_ns);
    for pair in anchors.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (ta, tb) = (t_prev, b.t_ns.max(t_prev));
        t_prev = tb;
        let to = from + events[from..].partition_point(|e| e.t_ns < tb);
        if to > from {
            let mut ys: Vec<f64> = events[from..to].iter().map(|e| at_time(a, b, ta, tb, e.t_ns)).collect();
            let (lo, hi) = (a.y + ARROW_Y + PAD, b.y + ARROW_Y - PAD);
            if b.folded {
                // Each side of the fold keeps its own: nothing is drawn over the fold's band.
                let split = ys.partition_point(|&y| y < b.y);
                let (before, after) = ys.split_at_mut(split);
                spread(before, lo, b.y - FOLD_H - 2.0);
                spread(after, b.y + 3.0, hi);
            } else {
                spread(&mut ys, lo, hi);
            }
            out.placed.extend(events[from..to].iter().zip(ys).map(|(e, y)| Placed { event: *e, y, labelled: false }));
        }
        from = to;
    }
    let last = anchors[anchors.len() - 1];
    if at_end && from < events.len() {
        let n = events.len() - from;
        let top = last.y + ARROW_Y + LABEL_DY;
        let mut ys: Vec<f64> = (0..n).map(|k| top + k as f64 * LABEL_DY).collect();
        spread(&mut ys, top, top + (MAX_TAIL - 1) as f64 * LABEL_DY);
        out.tail_bottom = ys.last().copied();
        out.placed.extend(events[from..].iter().zip(ys).map(|(e, y)| Placed { event: *e, y, labelled: false }));
    }
    // A label needs the space above its arrow: the previous arrow's label must not be there.
    let mut labelled_at = f64::NEG_INFINITY;
    for p in &mut out.placed {
        if p.y - labelled_at >= LABEL_DY - 0.01 {
            p.labelled = true;
            labelled_at = p.y;
        }
    }
    out
}

/// The arrow height time `t` maps to between rows `a` and `b` (at times `ta` <= `tb`): in proportion
/// between their arrows, or, across a folded gap, at the time axis's scale from the row it is nearer to.
fn at_time(a: Anchor, b: Anchor, ta: i64, tb: i64, t: i64) -> f64 {
    let (ya, yb) = (a.y + ARROW_Y, b.y + ARROW_Y);
    if b.folded {
        let px = |ns: i64| ns as f64 / 1e6 * PX_PER_MS;
        return if t - ta <= tb - t { (ya + px(t - ta)).min(b.y - FOLD_H) } else { (yb - px(tb - t)).max(b.y) };
    }
    let frac = if tb > ta { (t - ta) as f64 / (tb - ta) as f64 } else { 0.5 };
    ya + frac.clamp(0.0, 1.0) * (yb - ya)
}

/// Moves rising heights apart, within `lo..=hi`: a label apart when that fits, else [`MIN_DY`], else
/// evenly over the room.
fn spread(ys: &mut [f64], lo: f64, hi: f64) {
    let n = ys.len();
    if n == 0 {
        return;
    }
    let room = (hi - lo).max(0.0);
    let gaps = (n - 1) as f64;
    let dy = if gaps * LABEL_DY <= room {
        LABEL_DY
    } else if gaps * MIN_DY <= room {
        MIN_DY
    } else {
        let step = if n > 1 { room / gaps } else { 0.0 };
        ys.iter_mut().enumerate().for_each(|(i, y)| *y = lo + i as f64 * step);
        return;
    };
    let mut prev = f64::NEG_INFINITY;
    for y in ys.iter_mut() {
        *y = y.max(lo).max(prev + dy);
        prev = *y;
    }
    let mut next = f64::INFINITY;
    for y in ys.iter_mut().rev() {
        *y = y.min(hi).min(next - dy);
        next = *y;
    }
}

/// A server's busy span on its lane: from the agent's request to the server's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct McpSpan {
    /// The lane.
    pub lane: usize,
    /// The request's seq in the child trace.
    pub req_seq: i64,
    /// Top: the request's arrow, or the top of what is drawn when the request is further up.
    pub y0: f64,
    /// Bottom: the answer's arrow, or the bottom of what is drawn when the answer is further down.
    pub y1: f64,
    /// The span goes on below what is drawn.
    pub open_end: bool,
    /// Its duration, or why there is none.
    pub label: String,
    /// The answer was an error.
    pub error: bool,
    /// Side-by-side position among the lane's overlapping spans (0 = on the lane).
    pub column: usize,
}

/// The busy spans touching what is drawn: `anchors` and the frames `placement` placed; `live` words the
/// label of unanswered requests.
pub fn spans(lanes: &[McpLane], anchors: &[Anchor], placement: &Placement, live: bool) -> Vec<McpSpan> {
    let (Some(first), Some(last)) = (anchors.first(), anchors.last()) else { return Vec::new() };
    let at: HashMap<(usize, usize), f64> =
        placement.placed.iter().map(|p| ((p.event.lane, p.event.idx), p.y)).collect();
    let (top, bottom) = (first.y + ARROW_Y, placement.tail_bottom.unwrap_or(last.y + ARROW_Y));
    let (t_top, t_bottom) = (first.t_ns, anchors.iter().map(|a| a.t_ns).max().unwrap_or(last.t_ns));
    let mut out = Vec::new();
    for (li, lane) in lanes.iter().enumerate() {
        let t = |f: &FrameSummary| f.t_ns + lane.offset_ns;
        for (ri, req) in lane.frames.iter().enumerate() {
            if req.kind != FrameKind::Request || req.dir != Direction::ClientToAgent {
                continue;
            }
            let y0 = match at.get(&(li, ri)) {
                Some(&y) => y,
                None if t(req) < t_top => top,
                None => continue,
            };
            let answer = req.reply_seq.and_then(|s| lane.index_of(s)).map(|i| (i, &lane.frames[i]));
            let (y1, open_end, label, error) = match answer {
                Some((ai, a)) => {
                    let error = a.kind == FrameKind::Error || a.tool_error;
                    let label = a.latency_ns.map_or(String::new(), crate::format::duration_ns);
                    match at.get(&(li, ai)) {
                        Some(&y) => (y, false, label, error),
                        None if t(a) < t_top => continue,
                        None if t(a) >= t_bottom => (bottom, true, "…".to_owned(), false),
                        None => continue,
                    }
                }
                None if req.reply_seq.is_some() => (bottom, true, "…".to_owned(), false),
                None => (bottom, true, if live { "pending" } else { "no reply" }.to_owned(), false),
            };
            out.push(McpSpan { lane: li, req_seq: req.seq, y0, y1, open_end, label, error, column: 0 });
        }
    }
    assign_columns(&mut out, MAX_COLUMNS, |s| s.lane, |s| (s.y0, s.y1), |s, c| s.column = c);
    out
}

/// Most side-by-side columns per lane; more concurrent requests share the last one.
const MAX_COLUMNS: usize = 3;

/// The extra height the rows need below the last one for the frames placed there.
pub fn tail_room(placement: &Placement, layout_height: f64) -> f64 {
    placement.tail_bottom.map_or(0.0, |y| (y + ROW_H / 4.0 - layout_height).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;

    fn frame(seq: i64, t_ms: f64, dir: Direction, kind: FrameKind) -> FrameSummary {
        FrameSummary { method: Some("tools/call".into()), ..summary(seq, (t_ms * 1e6) as i64, dir, kind) }
    }

    fn lane(offset_ms: f64, frames: Vec<FrameSummary>) -> McpLane {
        McpLane {
            trace_id: 2,
            name: "time".into(),
            offset_ns: (offset_ms * 1e6) as i64,
            live: false,
            frame_count: frames.len() as i64,
            frames,
        }
    }

    fn row(t_ms: f64, y: f64) -> Anchor {
        Anchor { t_ns: (t_ms * 1e6) as i64, y, folded: false }
    }

    /// A request at `at` ms answered `took` ms later, and a stderr line between them.
    fn call(at: f64, took: f64) -> Vec<FrameSummary> {
        let mut req = frame(1, at, Direction::ClientToAgent, FrameKind::Request);
        req.reply_seq = Some(3);
        let mut resp = frame(3, at + took, Direction::AgentToClient, FrameKind::Response);
        resp.reply_to_seq = Some(1);
        resp.latency_ns = Some((took * 1e6) as i64);
        vec![req, frame(2, at + 1.0, Direction::AgentStderr, FrameKind::Stderr), resp]
    }

    #[test]
    fn frames_go_between_the_rows_their_times_fall_between() {
        // The child started 100 ms after the trace: its 10 ms is the trace's 110 ms.
        let lanes = [lane(100.0, call(10.0, 60.0))];
        let events = timeline(&lanes);
        assert_eq!(events.len(), 2, "the stderr line is left out");
        assert_eq!((events[0].t_ns, events[1].t_ns), (110_000_000, 170_000_000));
        // Rows at 0, 100 (y 0), 150 (y 40), 200 (y 80).
        let anchors = [row(0.0, -40.0), row(100.0, 0.0), row(150.0, 40.0), row(200.0, 80.0)];
        let p = place(&anchors, false, &events);
        assert_eq!(p.placed.len(), 2);
        let (req, resp) = (p.placed[0], p.placed[1]);
        assert!(req.y > ARROW_Y && req.y < 40.0 + ARROW_Y, "{req:?}");
        assert!(resp.y > 40.0 + ARROW_Y && resp.y < 80.0 + ARROW_Y, "{resp:?}");
        // 110 ms is a fifth of the way from 100 to 150: a fifth of the 40 px between their arrows.
        assert_eq!(req.y, ARROW_Y + 8.0);
        assert!(req.labelled && resp.labelled);
        // The busy span runs from the request's arrow to the answer's.
        let s = spans(&lanes, &anchors, &p, false);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].y0, s[0].y1, s[0].open_end, s[0].label.as_str()), (req.y, resp.y, false, "60.0 ms"));
    }

    #[test]
    fn bunched_frames_are_spread_in_order_and_only_those_with_room_are_labelled() {
        let frames: Vec<FrameSummary> = (1..=6)
            .map(|s| frame(s, 100.0 + s as f64 * 0.001, Direction::ClientToAgent, FrameKind::Notification))
            .collect();
        let events = timeline(&[lane(0.0, frames)]);
        let p = place(&[row(100.0, 0.0), row(101.0, ROW_H)], false, &events);
        let ys: Vec<f64> = p.placed.iter().map(|p| p.y).collect();
        assert!(ys.windows(2).all(|w| w[1] >= w[0] + MIN_DY - 1e-9), "{ys:?}");
        assert!(ys.iter().all(|&y| (ARROW_Y + PAD..=ROW_H + ARROW_Y - PAD).contains(&y)), "{ys:?}");
        let labelled = p.placed.iter().filter(|p| p.labelled).count();
        assert!((1..6).contains(&labelled), "{labelled} labelled");
        // Too many for the room at MIN_DY: evenly over it.
        let mut many = vec![0.0; 20];
        spread(&mut many, 10.0, 30.0);
        assert_eq!((many[0], many[19]), (10.0, 30.0));
    }

    #[test]
    fn across_a_fold_frames_stay_beside_the_row_they_are_nearer_to() {
        let frames = vec![
            frame(1, 1.0, Direction::ClientToAgent, FrameKind::Request),
            frame(2, 9_999.0, Direction::AgentToClient, FrameKind::Response),
        ];
        let events = timeline(&[lane(0.0, frames)]);
        let folded = Anchor { t_ns: 10_000_000_000, y: ROW_H + FOLD_H, folded: true };
        let p = place(&[row(0.0, 0.0), folded], false, &events);
        assert!(p.placed[0].y < ROW_H, "{:?}", p.placed[0]);
        assert!(p.placed[1].y > ROW_H + FOLD_H, "{:?}", p.placed[1]);
        // Several after the idle gap stay after it, squeezed, rather than spread over the fold.
        let late: Vec<FrameSummary> =
            (1..=4).map(|s| frame(s, 9_990.0 + s as f64, Direction::ClientToAgent, FrameKind::Notification)).collect();
        let p = place(&[row(0.0, 0.0), folded], false, &timeline(&[lane(0.0, late)]));
        assert!(p.placed.iter().all(|p| p.y > ROW_H + FOLD_H), "{p:?}");
    }

    #[test]
    fn after_the_last_row_frames_go_below_it_only_at_the_end_and_open_spans_reach_the_bottom() {
        let mut req = frame(1, 500.0, Direction::ClientToAgent, FrameKind::Request);
        req.reply_seq = None;
        let lanes = [lane(0.0, vec![req])];
        let events = timeline(&lanes);
        let anchors = [row(0.0, 0.0), row(100.0, ROW_H)];
        assert!(place(&anchors, false, &events).placed.is_empty());
        let p = place(&anchors, true, &events);
        assert_eq!(p.placed[0].y, ROW_H + ARROW_Y + LABEL_DY);
        assert!(tail_room(&p, 2.0 * ROW_H) > 0.0);
        let s = spans(&lanes, &anchors, &p, true);
        assert_eq!((s[0].open_end, s[0].label.as_str()), (true, "pending"));
        // A request further up whose answer is below what is drawn spans all of it.
        let lanes = [lane(0.0, call(-50.0, 500.0))];
        let p = place(&anchors, false, &timeline(&lanes));
        let s = spans(&lanes, &anchors, &p, false);
        assert_eq!((s[0].y0, s[0].y1, s[0].open_end), (ARROW_Y, ROW_H + ARROW_Y, true));
    }
}
