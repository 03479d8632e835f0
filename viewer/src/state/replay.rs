//! A replay of the trace: a cursor (the URL's `replay`) that shows the trace as it was when that frame had
//! just arrived, played forward on the trace's own clock at the URL's `speed`.
//!
//! The cursor is the only thing the rest of the view reads: the loader asks for no frame past it (the frame
//! query's `to`, see [`crate::view_query::last_seq_shown`]) and grows the diagram as it advances, much as a
//! live trace grows; the Session tab asks the server for the sessions as of it. Playing, a timer counts the
//! trace's clock forward ([`advance`]) and reveals every frame whose time it has passed ([`revealed`]): the
//! times of the next frames come from a bounded page read ahead of the cursor ([`AHEAD`] frames, read again
//! when half gone), so a fast replay of a dense trace reveals many frames per tick and fetches once per
//! page, never per frame. An idle gap that would take longer than [`GAP_PLAY_MS`] to play is played in that
//! time, and [`ReplayData::skipping`] says so while it is.
//!
//! The URL follows the cursor (in place, at most once a second while playing), so a reload resumes paused
//! where the replay was; Back and Forward move a paused replay.

use super::throttle::Throttle;
use super::TraceState;
use crate::api;
use acp_tee_shared::api::{FrameQuery, TraceOverview};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::VecDeque;

/// Frames read ahead of the cursor per fetch (the API's largest page): at 10x over frames 1 ms apart, a
/// tenth of a second of playing.
pub const AHEAD: i64 = 1000;

/// The longest an idle gap takes to play, in milliseconds of the browser's clock: longer ones are played
/// faster, in this time.
pub const GAP_PLAY_MS: f64 = 2000.0;

/// How often the trace's clock is counted forward while playing.
const TICK_MS: u32 = 50;

/// The longest step of the browser's clock a tick counts (a tab in the background runs its timers late).
const TICK_MAX_MS: f64 = 250.0;

/// Where playing goes next: the trace's clock after a step, and the idle gap being played faster, if one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The trace's clock (a `t_ns`).
    pub clock: i64,
    /// The length of the idle gap being played faster (ns).
    pub skipping: Option<i64>,
}

/// The trace's clock after `wall_ms` of playing at `speed` from `clock`, when the last frame revealed is at
/// `from_t` and the next at `next_t`. A gap between them that would play longer than [`GAP_PLAY_MS`] is
/// played in that time and the clock stops at the next frame (what follows plays at the chosen speed).
pub fn advance(clock: i64, from_t: i64, next_t: i64, wall_ms: f64, speed: u32) -> Step {
    let gap = next_t - from_t;
    if gap as f64 > GAP_PLAY_MS * 1e6 * f64::from(speed) {
        let step = (wall_ms * gap as f64 / GAP_PLAY_MS) as i64;
        return Step { clock: clock.saturating_add(step).min(next_t), skipping: Some(gap) };
    }
    Step { clock: clock.saturating_add((wall_ms * 1e6 * f64::from(speed)) as i64), skipping: None }
}

/// How many of the frames ahead (seq, t_ns, in order) the clock has passed.
pub fn revealed(ahead: &VecDeque<(i64, i64)>, clock: i64) -> usize {
    ahead.partition_point(|(_, t)| *t <= clock)
}

/// The frame at a point of the trace's time, as far as the overview's buckets tell: counted into its bucket
/// as if the bucket's frames were evenly spread (the first frame after an empty one).
pub fn seq_at_time(o: &TraceOverview, t_ns: i64) -> Option<i64> {
    if o.bucket_ns <= 0 || o.buckets.is_empty() {
        return None;
    }
    let at = (t_ns - o.start_t_ns).max(0);
    let i = ((at / o.bucket_ns) as usize).min(o.buckets.len() - 1);
    let b = &o.buckets[i];
    match (b.first_seq, b.last_seq) {
        (Some(first), Some(last)) => {
            let part = ((at - i as i64 * o.bucket_ns) as f64 / o.bucket_ns as f64).clamp(0.0, 1.0);
            Some(first + ((last - first) as f64 * part) as i64)
        }
        _ => o.seq_at_bucket(i),
    }
}

/// The frames read ahead of the cursor.
#[derive(Default)]
struct Ahead {
    /// Seq and time of each frame after the cursor, in order.
    frames: VecDeque<(i64, i64)>,
    /// The trace has no frame after the last one here (as last asked).
    ended: bool,
    /// A read is under way.
    fetching: bool,
    /// Bumped when the cursor is moved, so a read for an older place is dropped.
    generation: u64,
}

/// The replay's state, shared through [`TraceState`].
#[derive(Clone, Copy)]
pub struct ReplayData {
    /// The last frame revealed; `None` when not replaying (the whole trace shows).
    pub cursor: RwSignal<Option<i64>>,
    /// The cursor frame's time (`None` until read).
    pub cursor_t: RwSignal<Option<i64>>,
    /// Where playing is on the trace's clock: at or after the cursor frame's time.
    pub clock: RwSignal<i64>,
    /// True while playing.
    pub playing: RwSignal<bool>,
    /// The length of the idle gap being played faster, while it is.
    pub skipping: RwSignal<Option<i64>>,
    ahead: StoredValue<Ahead>,
    /// When the last tick counted (`Date.now()`).
    last_tick_ms: StoredValue<f64>,
    /// Writes the cursor to the URL at most once a second while playing.
    url_sync: Throttle,
}

impl ReplayData {
    /// Not replaying; [`start`] reads the URL.
    pub fn new() -> ReplayData {
        ReplayData {
            cursor: RwSignal::new(None),
            cursor_t: RwSignal::new(None),
            clock: RwSignal::new(0),
            playing: RwSignal::new(false),
            skipping: RwSignal::new(None),
            ahead: StoredValue::new(Ahead::default()),
            last_tick_ms: StoredValue::new(0.0),
            url_sync: Throttle::new(1000.0),
        }
    }

    /// True while replaying (tracked).
    pub fn active(&self) -> bool {
        self.cursor.with(Option::is_some)
    }
}

impl Default for ReplayData {
    fn default() -> Self {
        ReplayData::new()
    }
}

/// Starts following the URL's `replay` (a reload, Back, Forward; not while playing: then the URL follows
/// the cursor) and the timer that plays; both stop with the view. Called before anything else of the view
/// fetches, so that a replay's first requests already stop at its cursor.
pub fn start(st: TraceState) {
    let rd = st.replay;
    if let Some(seq) = st.query.with_untracked(|q| q.replay) {
        seek(st, seq);
    }
    let wanted = Memo::new(move |_| st.query.with(|q| q.replay));
    Effect::new(move |_| {
        let want = wanted.get();
        if rd.playing.get_untracked() || want == rd.cursor.get_untracked() {
            return;
        }
        match want {
            Some(seq) => seek(st, seq),
            None => {
                rd.cursor.set(None);
                rd.skipping.set(None);
            }
        }
    });
    Effect::new(move |_| {
        if !rd.playing.get() {
            rd.skipping.set(None);
            return;
        }
        rd.last_tick_ms.set_value(js_sys::Date::now());
        let ticking = set_interval_with_handle(move || tick(st), std::time::Duration::from_millis(TICK_MS.into()));
        if let Ok(handle) = ticking {
            on_cleanup(move || handle.clear());
        }
    });
}

/// Puts the cursor on frame `seq`, paused or not, and reads its time and the frames after it.
fn seek(st: TraceState, seq: i64) {
    let rd = st.replay;
    rd.cursor.set(Some(seq));
    rd.cursor_t.set(None);
    rd.skipping.set(None);
    rd.ahead.update_value(|a| {
        *a = Ahead { generation: a.generation + 1, ..Ahead::default() };
    });
    read_ahead(st, seq - 1);
}

/// Reads the frames after seq `after` into the frames ahead (the cursor's own, when it is the first, sets
/// the clock).
fn read_ahead(st: TraceState, after: i64) {
    let rd = st.replay;
    let Some(generation) = rd
        .ahead
        .try_update_value(|a| {
            (!a.fetching).then(|| {
                a.fetching = true;
                a.generation
            })
        })
        .flatten()
    else {
        return;
    };
    spawn_local(async move {
        let query = FrameQuery { after: Some(after.max(0)), limit: Some(AHEAD), ..FrameQuery::default() };
        let result = api::frames(st.id, &query).await;
        let cursor = rd.cursor.try_get_untracked().flatten();
        rd.ahead.try_update_value(|a| {
            if a.generation != generation {
                return;
            }
            a.fetching = false;
            let Ok(page) = result else { return };
            a.ended = !page.has_more;
            for f in page.frames {
                if Some(f.seq) == cursor {
                    rd.cursor_t.set(Some(f.t_ns));
                    rd.clock.set(f.t_ns);
                } else if cursor.is_some_and(|c| f.seq > c) {
                    a.frames.push_back((f.seq, f.t_ns));
                }
            }
        });
    });
}

/// One count of the trace's clock while playing: reveals the frames it passed, stops at the end.
fn tick(st: TraceState) {
    let rd = st.replay;
    let now = js_sys::Date::now();
    let wall = (now - rd.last_tick_ms.get_value()).clamp(0.0, TICK_MAX_MS);
    rd.last_tick_ms.set_value(now);
    let (Some(from_t), Some(cursor)) = (rd.cursor_t.get_untracked(), rd.cursor.get_untracked()) else { return };
    let speed = st.query.with_untracked(|q| q.play_speed());
    let (next, last, ended, short) = rd.ahead.with_value(|a| {
        (a.frames.front().copied(), a.frames.back().copied(), a.ended, a.frames.len() < AHEAD as usize / 2)
    });
    if short && !ended {
        read_ahead(st, last.map_or(cursor, |(s, _)| s));
    }
    let (Some((_, next_t)), Some((_, last_t))) = (next, last) else {
        if ended {
            pause(st);
        }
        return;
    };
    let step = advance(rd.clock.get_untracked(), from_t, next_t, wall, speed);
    // Not past what is read ahead, unless that is the end.
    let clock = if ended { step.clock } else { step.clock.min(last_t) };
    rd.clock.set(clock);
    if rd.skipping.get_untracked() != step.skipping {
        rd.skipping.set(step.skipping);
    }
    let passed = rd.ahead.try_update_value(|a| {
        let n = revealed(&a.frames, clock);
        a.frames.drain(..n).next_back()
    });
    if let Some(Some((seq, t))) = passed {
        rd.cursor_t.set(Some(t));
        rd.cursor.set(Some(seq));
        rd.url_sync.run(move || async move { write_url(st) });
    }
}

/// Writes the cursor to the URL, in place.
fn write_url(st: TraceState) {
    let Some(cursor) = st.replay.cursor.try_get_untracked() else { return };
    st.url.update(false, |q| {
        q.accept("replay");
        q.replay = cursor;
    });
}

/// Starts playing (from the start, when not replaying yet).
pub fn play(st: TraceState) {
    let rd = st.replay;
    if rd.cursor.get_untracked().is_none() {
        go_to(st, 1, true);
    }
    st.follow.set(true);
    rd.playing.set(true);
}

/// Stops playing; the URL says where.
pub fn pause(st: TraceState) {
    st.replay.playing.set(false);
    write_url(st);
}

/// Plays or pauses.
pub fn toggle(st: TraceState) {
    if st.replay.playing.get_untracked() {
        pause(st);
    } else {
        play(st);
    }
}

/// Puts the cursor on frame `seq` (a new history entry when `push`): paused, unless playing.
pub fn go_to(st: TraceState, seq: i64, push: bool) {
    let last = st.trace.with_untracked(|t| t.meta.frame_count).max(1);
    let seq = seq.clamp(1, last);
    seek(st, seq);
    st.follow.set(true);
    st.url.update(push, |q| {
        q.accept("replay");
        q.replay = Some(seq);
    });
}

/// Pauses and moves the cursor one frame (`step` = 1 or -1).
pub fn step(st: TraceState, step: i64) {
    let Some(cursor) = st.replay.cursor.get_untracked() else { return };
    st.replay.playing.set(false);
    go_to(st, cursor + step, false);
}

/// Plays from frame `seq` ("replay from here").
pub fn play_from(st: TraceState, seq: i64) {
    go_to(st, seq, true);
    play(st);
}

/// Sets the speed (in place).
pub fn set_speed(st: TraceState, speed: u32) {
    st.url.update(false, |q| {
        q.accept("speed");
        q.speed = Some(speed);
    });
}

/// Leaves the replay: the whole trace shows again (a history entry: Back returns to the replay, paused).
pub fn leave(st: TraceState) {
    let rd = st.replay;
    rd.playing.set(false);
    rd.cursor.set(None);
    rd.skipping.set(None);
    rd.ahead.update_value(|a| *a = Ahead { generation: a.generation + 1, ..Ahead::default() });
    st.follow.set(st.is_live() && st.query.with_untracked(|q| q.frame.is_none()));
    st.url.update(true, |q| {
        q.accept("replay");
        q.replay = None;
    });
}

/// Moves the cursor to the frame at a point of the trace's time, as the overview places it (the slider).
pub fn scrub_to_time(st: TraceState, t_ns: i64) {
    let seq = st
        .overview
        .overview
        .with_untracked(|o| o.as_ref().and_then(|o| o.as_ref().ok()).and_then(|o| seq_at_time(o, t_ns)));
    if let Some(seq) = seq {
        go_to(st, seq, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_tee_shared::api::OverviewBucket;

    const MS: i64 = 1_000_000;

    #[test]
    fn the_clock_runs_at_the_speed_chosen() {
        assert_eq!(advance(0, 0, 5 * MS, 100.0, 1), Step { clock: 100 * MS, skipping: None });
        assert_eq!(advance(0, 0, 5 * MS, 100.0, 10).clock, 1000 * MS);
        assert_eq!(advance(7, 0, 5 * MS, 0.0, 4).clock, 7);
    }

    #[test]
    fn an_idle_gap_too_long_to_play_plays_in_the_gap_time_and_says_so() {
        let gap = 60_000 * MS;
        // At 10x, 60 s would take 6 s: it takes 2 s, a tenth per 200 ms, and stops at the next frame.
        let s = advance(0, 0, gap, 200.0, 10);
        assert_eq!(s, Step { clock: gap / 10, skipping: Some(gap) });
        assert_eq!(advance(gap - MS, 0, gap, 200.0, 10).clock, gap);
        // 60 s at 1x and 10 s at 1x are compressed; 10 s at 10x (1 s to play) is not.
        assert!(advance(0, 0, 10_000 * MS, 50.0, 1).skipping.is_some());
        assert_eq!(advance(0, 0, 10_000 * MS, 50.0, 10), Step { clock: 500 * MS, skipping: None });
        // The gap is from the last frame revealed, however far the clock has come into it.
        assert_eq!(advance(gap / 2, 0, gap, 100.0, 10).skipping, Some(gap));
    }

    #[test]
    fn every_frame_the_clock_passed_is_revealed_at_once() {
        let ahead: VecDeque<(i64, i64)> = (1..=1000).map(|s| (s, s * MS)).collect();
        assert_eq!(revealed(&ahead, 0), 0);
        assert_eq!(revealed(&ahead, MS), 1);
        // A tick at 10x over frames 1 ms apart passes 500 of them.
        assert_eq!(revealed(&ahead, advance(0, 0, MS, 50.0, 10).clock), 500);
        assert_eq!(revealed(&ahead, i64::MAX), 1000);
    }

    #[test]
    fn a_time_is_placed_in_its_bucket_and_an_empty_one_goes_to_the_next_frame() {
        let bucket = |first: Option<i64>, last: Option<i64>| OverviewBucket {
            frames: first.zip(last).map_or(0, |(a, b)| (b - a + 1) as u64),
            first_seq: first,
            last_seq: last,
            ..OverviewBucket::default()
        };
        let o = TraceOverview {
            start_t_ns: 1000,
            bucket_ns: 100,
            buckets: vec![bucket(Some(1), Some(101)), bucket(None, None), bucket(Some(102), Some(110))],
            ..TraceOverview::default()
        };
        assert_eq!(seq_at_time(&o, 0), Some(1));
        assert_eq!(seq_at_time(&o, 1050), Some(51));
        assert_eq!(seq_at_time(&o, 1150), Some(102));
        assert_eq!(seq_at_time(&o, 99_999), Some(110));
        assert_eq!(seq_at_time(&TraceOverview::default(), 5), None);
    }
}
