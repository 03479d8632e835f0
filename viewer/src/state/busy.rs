//! The callee's busy spans: from a request to its response, on the lane of the peer that answers.

use super::layout::Layout;
use super::window::FrameWindow;
use acp_tee_shared::api::InFlight;
use acp_tee_shared::{Direction, FrameKind};
use std::collections::BTreeMap;
use std::ops::Range;

/// Which peer is busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// The client answers (a request from the agent).
    Client,
    /// The agent answers (a request from the client).
    Agent,
}

/// One request's busy span as far as the rows in view tell.
#[derive(Clone, Debug, PartialEq)]
pub struct BusySpan {
    /// The request's seq (also its colour).
    pub req_seq: i64,
    /// Whose lane it is drawn on.
    pub callee: Callee,
    /// Top of the request's row (or of the first row in view when the request is further up and not
    /// fetched, or a stub's height above the response when the filters hide the request).
    pub y0: f64,
    /// Top of the response's row (or of the last row in view when it is further down).
    pub y1: f64,
    /// The span continues below what is drawn.
    pub open_end: bool,
    /// The span began above what is drawn, its request not among the rows fetched (a request in flight
    /// over the whole window).
    pub open_start: bool,
    /// The request is hidden by the filters: only the end of the span is drawn, above its response.
    pub hidden_start: bool,
    /// Duration text, or why there is none.
    pub label: String,
    /// The answer was an error.
    pub error: bool,
    /// Side-by-side position among spans overlapping on the same lane (0 = on the lane).
    pub column: usize,
}

fn callee(dir: Direction) -> Option<Callee> {
    match dir {
        Direction::ClientToAgent => Some(Callee::Agent),
        Direction::AgentToClient => Some(Callee::Client),
        Direction::AgentStderr => None,
    }
}

/// Height of the stub drawn above a response whose request the filters hide.
pub const STUB_H: f64 = 14.0;

/// The busy spans touching the rows `rows`; `live` words the label of unanswered requests. `in_flight`
/// (the server's answer for a row at or above the first drawn) adds the requests sent above the rows and
/// answered below them, or never: a bar across all rows drawn, open at both ends, labelled with the method
/// and the duration.
pub fn busy_spans(
    w: &FrameWindow,
    l: &Layout,
    rows: Range<usize>,
    live: bool,
    in_flight: Option<&InFlight>,
) -> Vec<BusySpan> {
    if rows.is_empty() {
        return Vec::new();
    }
    let (top, bottom) = (l.y_of(rows.start), l.y_of(rows.end - 1));
    let last_seq = w.get(rows.end - 1).map_or(i64::MAX, |f| f.seq);
    let mut spans: BTreeMap<i64, BusySpan> = BTreeMap::new();
    for idx in rows.clone() {
        let Some(f) = w.get(idx) else { continue };
        let Some(who) = callee(f.dir) else { continue };
        let span = match (f.kind, f.reply_to_seq) {
            (FrameKind::Request, _) => {
                let end = f.reply_seq.map(|rs| (rs, w.index_of_seq(rs)));
                let (y1, open_end, label, error) = match end {
                    Some((_, Some(ri))) => {
                        let reply = w.get(ri);
                        let label = reply.and_then(|r| r.latency_ns).map_or(String::new(), crate::format::duration_ns);
                        (l.y_of(ri), false, label, reply.is_some_and(|r| r.kind == FrameKind::Error))
                    }
                    // The response is further down than what is fetched.
                    Some((rs, None)) if rs > last_seq => (bottom, true, "…".to_owned(), false),
                    // The response is filtered out: nothing tells where it is.
                    Some((_, None)) => continue,
                    None => (bottom, true, if live { "pending" } else { "no reply" }.to_owned(), false),
                };
                let y0 = l.y_of(idx);
                BusySpan {
                    req_seq: f.seq,
                    callee: who,
                    y0,
                    y1,
                    open_end,
                    open_start: false,
                    hidden_start: false,
                    label,
                    error,
                    column: 0,
                }
            }
            (FrameKind::Response | FrameKind::Error, Some(rq)) if !spans.contains_key(&rq) => {
                let y1 = l.y_of(idx);
                let (y0, hidden_start) = match w.place_of_seq(rq) {
                    Ok(qi) => (l.y_of(qi), false),
                    // The filters hide the request: a stub above the response, not a bar from the top.
                    Err(Some(_)) => (y1 - STUB_H, true),
                    // Further up than what is fetched: the span runs from the top of what is drawn.
                    Err(None) => (top.min(y1), false),
                };
                let label = f.latency_ns.map_or(String::new(), crate::format::duration_ns);
                let error = f.kind == FrameKind::Error;
                // The request is in the other direction, so the callee is the sender of the response.
                let who = if who == Callee::Agent { Callee::Client } else { Callee::Agent };
                BusySpan {
                    req_seq: rq,
                    callee: who,
                    y0,
                    y1,
                    open_end: false,
                    open_start: false,
                    hidden_start,
                    label,
                    error,
                    column: 0,
                }
            }
            _ => continue,
        };
        spans.entry(span.req_seq).or_insert(span);
    }
    let first_seq = w.get(rows.start).map_or(i64::MIN, |f| f.seq);
    for r in in_flight.map_or(&[][..], |f| &f.requests[..]) {
        // Only those that neither begin nor end among the rows drawn: the others are drawn above.
        let across = r.seq < first_seq && r.reply_seq.is_none_or(|rs| rs > last_seq);
        let Some(who) = callee(r.dir).filter(|_| across && !spans.contains_key(&r.seq)) else { continue };
        let duration = match r.latency_ns {
            Some(ns) => crate::format::duration_ns(ns),
            None if live => "pending".to_owned(),
            None => "no reply".to_owned(),
        };
        let label = format!("{} · {duration}", r.method.as_deref().unwrap_or("request"));
        spans.insert(
            r.seq,
            BusySpan {
                req_seq: r.seq,
                callee: who,
                y0: top,
                y1: bottom,
                open_end: true,
                open_start: true,
                hidden_start: false,
                label,
                error: r.error,
                column: 0,
            },
        );
    }
    let mut spans: Vec<BusySpan> = spans.into_values().collect();
    assign_columns(
        &mut spans,
        MAX_COLUMNS,
        |s| usize::from(s.callee == Callee::Agent),
        |s| (s.y0, s.y1),
        |s, c| s.column = c,
    );
    spans
}

/// Most side-by-side columns per lane; more concurrent requests share the last one.
const MAX_COLUMNS: usize = 4;

/// Puts overlapping spans of each lane (`lane`) side by side, greedily by
/// start: sorts `spans` by their start (`ys`: start and end) and gives each
/// the first column free when it starts (`set`), at most `max - 1` (more
/// concurrent spans share the last one). The busy bars and the MCP lanes'
/// spans are laid out by it.
pub fn assign_columns<T>(
    spans: &mut [T],
    max: usize,
    lane: impl Fn(&T) -> usize,
    ys: impl Fn(&T) -> (f64, f64),
    set: impl Fn(&mut T, usize),
) {
    spans.sort_by(|a, b| ys(a).0.total_cmp(&ys(b).0));
    let mut ends: std::collections::HashMap<usize, Vec<f64>> = std::collections::HashMap::new();
    for s in spans.iter_mut() {
        let (y0, y1) = ys(s);
        let lane = ends.entry(lane(s)).or_default();
        let col = lane.iter().position(|&end| end < y0).unwrap_or(lane.len());
        if col == lane.len() {
            lane.push(y1);
        } else {
            lane[col] = y1;
        }
        set(s, col.min(max - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;
    use crate::view_query::Axis;
    use acp_tee_shared::api::{FramePage, InFlightRequest};

    /// A window of notifications with seqs 100..=110 (all fetched), laid out one row each.
    fn rows() -> (FrameWindow, Layout) {
        let mut w = FrameWindow::default();
        let frames = (100..=110).map(|s| summary(s, s * 1000, Direction::AgentToClient, FrameKind::Notification));
        w.insert_page(0, FramePage { frames: frames.collect(), total: 11, has_more: false });
        let l = Layout::build(&w, Axis::Rows, None, false);
        (w, l)
    }

    fn request(seq: i64, dir: Direction, reply_seq: Option<i64>, latency_ns: Option<i64>) -> InFlightRequest {
        InFlightRequest { seq, dir, method: Some("session/prompt".into()), reply_seq, latency_ns, error: false }
    }

    #[test]
    fn requests_in_flight_over_the_rows_are_bars_across_them() {
        let (w, l) = rows();
        let in_flight = InFlight {
            at: 100,
            requests: vec![
                // Sent above, answered below: across every row, on the Agent lane.
                request(50, Direction::ClientToAgent, Some(200), Some(2_000_000_000)),
                // Answered among the rows: not drawn across (its answer's row would draw it).
                request(60, Direction::ClientToAgent, Some(105), Some(1_000)),
                // Never answered, the agent asked: the Client lane.
                request(70, Direction::AgentToClient, None, None),
            ],
            left_out: 0,
        };
        let spans = busy_spans(&w, &l, 0..11, false, Some(&in_flight));
        let got: Vec<_> =
            spans.iter().map(|s| (s.req_seq, s.callee, s.open_start, s.open_end, s.label.as_str())).collect();
        assert_eq!(
            got,
            [
                (50, Callee::Agent, true, true, "session/prompt · 2.00 s"),
                (70, Callee::Client, true, true, "session/prompt · no reply")
            ]
        );
        assert!(spans.iter().all(|s| (s.y0, s.y1) == (l.y_of(0), l.y_of(10))));
        // Without the server's answer the rows alone tell of none.
        assert_eq!(busy_spans(&w, &l, 0..11, true, None), Vec::new());
        let live = busy_spans(&w, &l, 0..11, true, Some(&in_flight));
        assert_eq!(live[1].label, "session/prompt · pending");
    }
}
