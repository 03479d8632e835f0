//! The trace's MCP children: the MCP stdio servers its agent started, each recorded by acp-tee as a trace
//! of its own whose `parent_trace` is this one (`/api/traces/{id}/family`). The diagram draws each as a
//! lane beside the Agent; the detail panel shows the frame picked on one.
//!
//! A child's frame summaries are fetched with the frames API up to [`MAX_CHILD_FRAMES`] (the lane says
//! when it has more). While the trace or a child is recorded, the family and the children's new frames are
//! fetched again when the live stream delivers and every [`POLL_MS`] besides (a server may be busy while
//! the ACP side is quiet), at most one refresh per [`MIN_GAP_MS`]; after the trace ends, polling stops
//! within [`POLLS_AFTER_END`] polls.

use super::mcp::{timeline, McpEvent};
use super::throttle::Throttle;
use super::TraceState;
use crate::api::{self, ApiFailure};
use acp_tee_shared::api::{FamilyMember, FrameDetail, FrameQuery, FrameSummary};
use acp_tee_shared::Protocol;
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Most frames of one child fetched and drawn: a busy server's lane stays cheap to place on every scroll.
pub const MAX_CHILD_FRAMES: usize = 5_000;
/// Frames per request for a child (the API's largest page).
const FETCH_PAGE: usize = 1_000;
/// How often a live family is asked for again, milliseconds.
pub const POLL_MS: u32 = 2_000;
/// The shortest time between two refreshes, milliseconds.
const MIN_GAP_MS: f64 = 500.0;
/// Polls made after the trace ended while a child still says it is recorded (its end may lag).
const POLLS_AFTER_END: u32 = 5;

/// One MCP child, as drawn: a lane.
#[derive(Clone, Debug, PartialEq)]
pub struct McpLane {
    /// The child trace.
    pub trace_id: i64,
    /// Its heading: the server's `serverInfo.name`, else the trace's name.
    pub name: String,
    /// Where the child starts on this trace's clock (add to its frames' `t_ns`).
    pub offset_ns: i64,
    /// Still being recorded.
    pub live: bool,
    /// Frames the child holds in all.
    pub frame_count: i64,
    /// Its first frames (at most [`MAX_CHILD_FRAMES`]), in seq order.
    pub frames: Vec<FrameSummary>,
}

impl McpLane {
    /// Frames of the child not fetched and not drawn because of [`MAX_CHILD_FRAMES`].
    pub fn left_out(&self) -> u64 {
        if self.frames.len() < MAX_CHILD_FRAMES {
            return 0;
        }
        (self.frame_count.max(0) as u64).saturating_sub(self.frames.len() as u64)
    }

    /// The position of frame `seq` among the fetched ones.
    pub fn index_of(&self, seq: i64) -> Option<usize> {
        self.frames.binary_search_by_key(&seq, |f| f.seq).ok()
    }
}

/// A picked MCP frame's detail as it came, with the (trace, seq) it is for.
pub type PickedDetail = ((i64, i64), Result<FrameDetail, ApiFailure>);

/// The family's state, shared through [`TraceState`].
#[derive(Clone, Copy)]
pub struct FamilyData {
    /// The MCP children, oldest first.
    pub lanes: RwSignal<Vec<McpLane>>,
    /// Every fetched frame of every lane on this trace's clock, in time order (stderr left out).
    pub events: Memo<Vec<McpEvent>>,
    /// Why the family could not be read, when nothing of it is known.
    pub error: RwSignal<Option<String>>,
    /// The picked MCP frame's detail, with the (trace, seq) it is for.
    pub detail: RwSignal<Option<PickedDetail>>,
    /// Refreshes at most once per [`MIN_GAP_MS`].
    throttle: Throttle,
    /// Bumped when polling (re)starts, so an older poll loop ends.
    poll: StoredValue<u64>,
}

impl FamilyData {
    /// Nothing fetched yet.
    pub fn new() -> FamilyData {
        let lanes = RwSignal::new(Vec::<McpLane>::new());
        FamilyData {
            lanes,
            events: Memo::new(move |_| lanes.with(|l| timeline(l))),
            error: RwSignal::new(None),
            detail: RwSignal::new(None),
            throttle: Throttle::new(MIN_GAP_MS),
            poll: StoredValue::new(0),
        }
    }

    /// True when a child is still being recorded (untracked).
    fn any_live(&self) -> bool {
        self.lanes.with_untracked(|l| l.iter().any(|l| l.live))
    }
}

impl Default for FamilyData {
    fn default() -> Self {
        FamilyData::new()
    }
}

/// Starts the family's fetching: now, on the live stream's news ([`heard_frames`]), by polling while live,
/// and the picked frame's detail.
pub fn start(st: TraceState) {
    refresh(st);
    poll_while_live(st);
    load_picked_detail(st);
}

/// The live stream delivered (frames, or the trace's end): the children may have news too.
pub fn heard_frames(st: TraceState) {
    refresh(st);
}

/// Fetches the family and the children's new frames; coalesced, and not sooner than [`MIN_GAP_MS`] after
/// the last refresh.
fn refresh(st: TraceState) {
    st.family.throttle.run(move || load(st));
}

/// Polls every [`POLL_MS`] while the trace (or, a few polls longer, a child) is recorded.
fn poll_while_live(st: TraceState) {
    let fd = st.family;
    let live = Memo::new(move |_| st.is_live());
    Effect::new(move |_| {
        let parent_live = live.get();
        if !parent_live && !fd.any_live() {
            return;
        }
        let generation = fd.poll.get_value() + 1;
        fd.poll.set_value(generation);
        spawn_local(async move {
            let mut after_end = 0;
            loop {
                TimeoutFuture::new(POLL_MS).await;
                if fd.poll.try_get_value() != Some(generation) {
                    return;
                }
                let parent_live = st.trace.try_with_untracked(|t| t.live).unwrap_or(false);
                if !parent_live {
                    after_end += 1;
                    if after_end > POLLS_AFTER_END || !fd.any_live() {
                        // One last look: the children's last frames and ends.
                        refresh(st);
                        return;
                    }
                }
                refresh(st);
            }
        });
    });
}

/// Fetches the picked MCP frame's detail whenever the pick changes.
fn load_picked_detail(st: TraceState) {
    let picked = Memo::new(move |_| st.query.with(|q| q.mcp_pick()));
    Effect::new(move |_| {
        let Some((trace, seq)) = picked.get() else { return };
        if st.family.detail.with_untracked(|d| d.as_ref().is_some_and(|(k, r)| *k == (trace, seq) && r.is_ok())) {
            return;
        }
        spawn_local(async move {
            let result = api::frame(trace, seq, false).await;
            if st.query.try_with_untracked(|q| q.mcp_pick()) == Some(Some((trace, seq))) {
                st.family.detail.try_set(Some(((trace, seq), result)));
            }
        });
    });
}

/// Whether a child is drawn as an MCP lane: MCP, or not known yet (no `initialize` seen).
fn is_mcp(c: &FamilyMember) -> bool {
    c.meta.protocol != Some(Protocol::Acp)
}

/// The family, then each MCP child's frames after those already here (up to [`MAX_CHILD_FRAMES`]).
async fn load(st: TraceState) {
    let fd = st.family;
    let family = match api::family(st.id).await {
        Ok(f) => f,
        Err(e) => {
            // What is drawn stays; the header says when the server is gone.
            leptos::logging::warn!("family: {e}");
            if fd.lanes.try_with_untracked(Vec::is_empty) == Some(true) && !e.is_not_found() {
                fd.error.try_set(Some(e.message));
            }
            return;
        }
    };
    let mut fetched: Vec<(FamilyMember, Vec<FrameSummary>)> = Vec::new();
    for child in family.children.into_iter().filter(is_mcp) {
        let id = child.meta.id;
        let Some((mut after, mut have)) = fd.lanes.try_with_untracked(|lanes| {
            lanes
                .iter()
                .find(|l| l.trace_id == id)
                .map_or((0, 0), |l| (l.frames.last().map_or(0, |f| f.seq), l.frames.len()))
        }) else {
            return;
        };
        let mut frames = Vec::new();
        let wanted = child.live || (have as i64) < child.meta.frame_count;
        while wanted && have < MAX_CHILD_FRAMES {
            let limit = FETCH_PAGE.min(MAX_CHILD_FRAMES - have);
            let query = FrameQuery { after: Some(after), limit: Some(limit as i64), ..FrameQuery::default() };
            match api::frames(id, &query).await {
                Ok(page) => {
                    let n = page.frames.len();
                    after = page.frames.last().map_or(after, |f| f.seq);
                    have += n;
                    frames.extend(page.frames);
                    if !page.has_more || n == 0 {
                        break;
                    }
                }
                Err(e) => {
                    leptos::logging::warn!("frames of MCP trace {id}: {e}");
                    break;
                }
            }
        }
        fetched.push((child, frames));
    }
    let changed = fd.lanes.try_with_untracked(|lanes| {
        let mut next = lanes.clone();
        for (child, frames) in fetched {
            merge(&mut next, child, frames);
        }
        (next != *lanes).then_some(next)
    });
    if let Some(Some(next)) = changed {
        fd.lanes.set(next);
    }
    if fd.error.try_with_untracked(Option::is_some) == Some(true) {
        fd.error.set(None);
    }
}

/// Puts a child's facts and newly fetched frames into the lanes: frames already here are not added again
/// (refreshes may overlap), and requests learn the seq of their responses that just came.
pub fn merge(lanes: &mut Vec<McpLane>, child: FamilyMember, frames: Vec<FrameSummary>) {
    let id = child.meta.id;
    let pos = match lanes.iter().position(|l| l.trace_id == id) {
        Some(p) => p,
        None => {
            lanes.push(McpLane {
                trace_id: id,
                name: String::new(),
                offset_ns: 0,
                live: false,
                frame_count: 0,
                frames: Vec::new(),
            });
            lanes.len() - 1
        }
    };
    let lane = &mut lanes[pos];
    lane.name = child.server.clone().or_else(|| child.meta.name.clone()).unwrap_or_else(|| format!("trace {id}"));
    lane.offset_ns = child.offset_ns;
    lane.live = child.live;
    lane.frame_count = child.meta.frame_count;
    let last = lane.frames.last().map_or(0, |f| f.seq);
    for f in frames.into_iter().filter(|f| f.seq > last) {
        if lane.frames.len() >= MAX_CHILD_FRAMES {
            break;
        }
        if let Some(request) = f.reply_to_seq.and_then(|r| lane.index_of(r)) {
            lane.frames[request].reply_seq = Some(f.seq);
        }
        lane.frames.push(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testing::summary;
    use acp_tee_shared::{Direction, FrameKind, TraceMeta};

    fn member(frame_count: i64, live: bool) -> FamilyMember {
        let meta = TraceMeta {
            id: 2,
            name: Some("time".into()),
            command: vec!["mcp-server-time".into()],
            cwd: None,
            mode: "wrap".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: None,
            exit_code: None,
            exit_signal: None,
            end_reason: None,
            frame_count,
            error_count: 0,
            missing_frames: 0,
            missing_unknown: false,
            pinned: false,
            bytes: 0,
            protocol: Some(Protocol::Mcp),
            parent_trace: Some(1),
        };
        FamilyMember { meta, server: Some("mcp-time".into()), offset_ns: 5, live }
    }

    fn frame(seq: i64, kind: FrameKind, reply_to: Option<i64>) -> FrameSummary {
        let dir = if kind == FrameKind::Request { Direction::ClientToAgent } else { Direction::AgentToClient };
        FrameSummary { method: Some("tools/call".into()), reply_to_seq: reply_to, ..summary(seq, seq, dir, kind) }
    }

    #[test]
    fn refreshes_add_only_new_frames_and_close_requests_answered_since() {
        let mut lanes = Vec::new();
        merge(&mut lanes, member(1, true), vec![frame(1, FrameKind::Request, None)]);
        assert_eq!((lanes[0].name.as_str(), lanes[0].offset_ns, lanes[0].live), ("mcp-time", 5, true));
        // An overlapping refresh brings frame 1 again, and the answer.
        merge(
            &mut lanes,
            member(2, false),
            vec![frame(1, FrameKind::Request, None), frame(2, FrameKind::Response, Some(1))],
        );
        assert_eq!(lanes.len(), 1);
        assert_eq!(lanes[0].frames.iter().map(|f| f.seq).collect::<Vec<_>>(), [1, 2]);
        assert_eq!((lanes[0].frames[0].reply_seq, lanes[0].live), (Some(2), false));
        assert_eq!(lanes[0].left_out(), 0);
        // Past the bound, what is left out is counted.
        lanes[0].frames = (1..=MAX_CHILD_FRAMES as i64).map(|s| frame(s, FrameKind::Notification, None)).collect();
        lanes[0].frame_count = MAX_CHILD_FRAMES as i64 + 7;
        assert_eq!(lanes[0].left_out(), 7);
    }
}
