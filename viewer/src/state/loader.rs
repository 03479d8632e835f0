//! The effects that fetch for a trace view: its stats, the pages in view, the live stream, the selected
//! frame's detail and jumps to a frame. They only write state; components draw it.

use super::window::{FrameWindow, PAGE};
use super::{HiddenFrame, TraceState};
use crate::api::{self, ApiFailure, LiveHandlers, LiveStream};
use crate::view_query::{Filters, Tab};
use acp_tee_shared::api::{FrameSummary, TraceSummary};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::HashSet;

/// How long after the live stream fails before the trace is asked for again and the stream reopened.
const RETRY_MS: u32 = 1500;

/// Fetch bookkeeping that nothing draws.
#[derive(Clone, Copy)]
struct Loader {
    st: TraceState,
    /// Bumped when the filters change, so answers to older queries are dropped.
    generation: StoredValue<u64>,
    /// Pages being fetched.
    pending: StoredValue<HashSet<usize>>,
    /// The highest seq the live stream has delivered (where a reconnect resumes).
    last_seen: StoredValue<i64>,
    stream: StoredValue<Option<LiveStream>, LocalStorage>,
    reconnect: RwSignal<u32>,
    tail_due: StoredValue<bool>,
    stats_due: StoredValue<bool>,
    /// The frame being located, so that asking twice searches once.
    locating: StoredValue<Option<i64>>,
    /// A replay's growth is being fetched (it fetches again if the cursor moved meanwhile).
    replay_due: StoredValue<bool>,
}

/// Starts every fetching effect of a trace view; they stop when the view's owner is disposed.
pub fn start(st: TraceState) {
    let ld = Loader {
        st,
        generation: StoredValue::new(0),
        pending: StoredValue::new(HashSet::new()),
        last_seen: StoredValue::new(st.trace.with_untracked(|t| t.meta.frame_count)),
        stream: StoredValue::new_local(None),
        reconnect: RwSignal::new(0),
        tail_due: StoredValue::new(false),
        stats_due: StoredValue::new(false),
        locating: StoredValue::new(None),
        replay_due: StoredValue::new(false),
    };
    super::replay::start(st);
    spawn_local(load_stats(ld));
    let query = st.query;
    st.findings.load_when(st.id, move || query.with(|q| matches!(q.tab, Tab::Diagram | Tab::Findings)));
    reset_on_filter_change(ld);
    fetch_pages_in_view(ld);
    follow_live_stream(ld);
    follow_replay(ld);
    find_jumps(ld);
    follow_selection(st);
    load_detail(st);
    super::sessions::start(st);
    super::family::start(st);
    super::requests::start(st);
    super::in_flight::start(st);
    super::overview::start(st);
    super::find::follow_rows(st);
    super::find::count_on_open(st);
    super::range::start(st);
}

async fn load_stats(ld: Loader) {
    let result = api::stats(ld.st.id).await;
    ld.st.stats.try_set(Some(result));
}

/// Brings the selected frame into view whenever the selection changes, however it changed (a click, a
/// jump, a link, back and forward); following a live trace stops so the frame stays where it is.
fn follow_selection(st: TraceState) {
    let selected = Memo::new(move |_| st.query.with(|q| q.frame));
    Effect::new(move |_| match selected.get() {
        Some(seq) => {
            st.follow.set(false);
            st.jump.set(Some(seq));
        }
        None => st.hidden.set(None),
    });
}

/// Fetches the selected frame's detail whenever the selection changes.
fn load_detail(st: TraceState) {
    let selected = Memo::new(move |_| st.query.with(|q| q.frame));
    Effect::new(move |_| {
        let Some(seq) = selected.get() else { return };
        spawn_local(async move {
            let result = api::frame(st.id, seq, false).await;
            // A later selection may have been answered first.
            if st.query.try_with_untracked(|q| q.frame) == Some(Some(seq)) {
                st.detail.try_set(Some((seq, result)));
            }
        });
    });
}

fn reset_on_filter_change(ld: Loader) {
    let st = ld.st;
    let filters = Memo::new(move |_| st.query.with(|q| q.filters.clone()));
    Effect::new(move |first_done: Option<()>| {
        // Reading (not just tracking) makes the memo compute, which is what subscribes it to the query.
        filters.with(|_| ());
        if first_done.is_none() {
            return;
        }
        reset(ld);
        if st.replay.cursor.with_untracked(Option::is_some) {
            reveal_replay(ld);
            return;
        }
        // Keep the selected frame in view across a filter change; otherwise start from the top.
        match st.query.with_untracked(|q| q.frame) {
            Some(seq) => st.jump.set(Some(seq)),
            None => st.reveal.set(Some(0)),
        }
    });
}

/// Drops every fetched frame (the frames shown changed), and answers to requests made before.
fn reset(ld: Loader) {
    let st = ld.st;
    ld.generation.update_value(|g| *g += 1);
    ld.pending.update_value(HashSet::clear);
    st.window.set(FrameWindow::default());
    st.window_error.set(None);
    st.hidden.set(None);
}

/// A replay's cursor shows the trace as it was when that frame had just arrived: moving forward, the frames
/// up to it are added at the bottom, as a live trace's are (the diagram follows the bottom); moving back,
/// entering or leaving, the window is fetched again. Leaving shows the selected frame, else the top.
fn follow_replay(ld: Loader) {
    let st = ld.st;
    Effect::new(move |before: Option<Option<i64>>| {
        let cursor = st.replay.cursor.get();
        let Some(before) = before else {
            if cursor.is_some() {
                reset(ld);
                reveal_replay(ld);
            }
            return cursor;
        };
        match (before, cursor) {
            (Some(a), Some(b)) if b >= a => reveal_replay(ld),
            (_, Some(_)) => {
                reset(ld);
                reveal_replay(ld);
            }
            (Some(_), None) => {
                reset(ld);
                match st.query.with_untracked(|q| q.frame) {
                    Some(seq) => st.jump.set(Some(seq)),
                    // A live trace followed scrolls to its bottom as the window fills.
                    None if st.follow.get_untracked() && st.trace.with_untracked(|t| t.live) => {}
                    None => st.reveal.set(Some(0)),
                }
            }
            (None, None) => {}
        }
        cursor
    });
}

/// Fetches the last page up to a replay's cursor, for its total and tail (coalesced: one fetch at a time,
/// again while the cursor moved during it).
fn reveal_replay(ld: Loader) {
    if ld.replay_due.get_value() {
        return;
    }
    ld.replay_due.set_value(true);
    let st = ld.st;
    spawn_local(async move {
        while let Some(Some(cursor)) = st.replay.cursor.try_get_untracked() {
            let generation = ld.generation.get_value();
            let mut query = st.frame_query(0, 1);
            let result = match api::frames(st.id, &query).await {
                Ok(first) => {
                    let page = (first.total.max(1) as usize - 1) / PAGE;
                    (query.offset, query.limit) = (Some((page * PAGE) as i64), Some(PAGE as i64));
                    api::frames(st.id, &query).await.map(|fetched| (page, fetched))
                }
                Err(e) => Err(e),
            };
            if ld.generation.try_get_value() != Some(generation) {
                continue;
            }
            match result {
                Ok((page, fetched)) => st.window.update(|w| w.insert_page(page, fetched)),
                Err(e) => {
                    st.window_error.set(Some(e));
                    break;
                }
            }
            if st.replay.cursor.try_get_untracked() == Some(Some(cursor)) {
                break;
            }
        }
        ld.replay_due.try_set_value(false);
    });
}

fn fetch_pages_in_view(ld: Loader) {
    let st = ld.st;
    Effect::new(move |_| {
        let rows = st.rows_in_view.get();
        let missing = st.window.with(|w| w.missing_pages(rows));
        for page in missing {
            if ld.pending.try_update_value(|p| p.insert(page)).unwrap_or(false) {
                spawn_local(fetch_page(ld, page));
            }
        }
    });
}

/// True when a page is still wanted: in view, or the first page of a window not loaded yet.
fn page_wanted(st: TraceState, page: usize) -> bool {
    let loaded = st.window.with_untracked(FrameWindow::is_loaded);
    let rows = st.rows_in_view.get_untracked();
    (!loaded && page == 0) || (!rows.is_empty() && rows.start / PAGE <= page && page <= (rows.end - 1) / PAGE)
}

async fn fetch_page(ld: Loader, page: usize) {
    let st = ld.st;
    let generation = ld.generation.get_value();
    // A short wait lets a fast scroll pass pages without fetching them.
    TimeoutFuture::new(30).await;
    if ld.generation.try_get_value() != Some(generation) || !page_wanted(st, page) {
        ld.pending.try_update_value(|p| p.remove(&page));
        return;
    }
    let query = st.frame_query(page * PAGE, PAGE);
    let result = api::frames(st.id, &query).await;
    if ld.generation.try_get_value() != Some(generation) {
        return;
    }
    ld.pending.update_value(|p| {
        p.remove(&page);
    });
    match result {
        Ok(fetched) => {
            st.window.update(|w| w.insert_page(page, fetched));
            if st.window_error.with_untracked(Option::is_some) {
                st.window_error.set(None);
            }
            if st.connection_lost.with_untracked(Option::is_some) {
                st.connection_lost.set(None);
            }
        }
        Err(e) => st.window_error.set(Some(e)),
    }
}

fn follow_live_stream(ld: Loader) {
    let st = ld.st;
    let live = Memo::new(move |_| st.is_live());
    Effect::new(move |_| {
        ld.reconnect.track();
        if !live.get() {
            ld.stream.set_value(None);
            return;
        }
        let handlers = LiveHandlers {
            frames: Box::new(move |frames| on_live_frames(ld, frames)),
            trace: Box::new(move |t| on_live_trace(ld, t)),
            error: Box::new(move || on_live_error(ld)),
        };
        match api::live(st.id, ld.last_seen.get_value(), handlers) {
            Ok(stream) => ld.stream.set_value(Some(stream)),
            Err(e) => st.window_error.set(Some(e)),
        }
    });
}

fn on_live_frames(ld: Loader, frames: Vec<FrameSummary>) {
    let st = ld.st;
    if st.connection_lost.with_untracked(Option::is_some) {
        st.connection_lost.set(None);
    }
    if let Some(last) = frames.last() {
        ld.last_seen.update_value(|s| *s = (*s).max(last.seq));
    }
    super::sessions::heard_frames(st);
    super::family::heard_frames(st);
    super::requests::heard_frames(st);
    super::overview::heard_frames(st);
    // A replay shows the frames up to its cursor; these come when it does (or when it is left).
    if st.replay.cursor.with_untracked(Option::is_some) {
        return;
    }
    st.window.try_update(|w| w.link_replies(&frames));
    let filters: Filters = st.query.with_untracked(|q| q.filters.clone());
    let mut matching = Vec::new();
    let mut unsure = false;
    for f in frames {
        match filters.matches(&f) {
            Some(true) => matching.push(f),
            Some(false) => {}
            None => unsure = true,
        }
    }
    // Full-text search cannot be checked here: the server says which of the new frames match. Frames that
    // cannot be placed (the tail is not fetched) only change the total, which the server also tells.
    let placed = !unsure && (matching.is_empty() || st.window.try_update(|w| w.append_live(matching)).unwrap_or(true));
    if !placed {
        refresh_tail(ld);
    }
}

fn on_live_trace(ld: Loader, t: TraceSummary) {
    let ended = !t.live;
    ld.st.connection_lost.set(None);
    ld.st.heard_trace(t);
    refresh_stats(ld, if ended { 0 } else { 2000 });
    if ended {
        refresh_tail(ld);
        // Ages of open requests now run to the last frame, not to now.
        super::sessions::heard_frames(ld.st);
        super::family::heard_frames(ld.st);
        super::requests::heard_frames(ld.st);
        super::overview::heard_frames(ld.st);
    }
}

/// The stream failed or the server closed it: the trace is asked for again (it may have ended); when the
/// server does not answer, the page says so and keeps trying.
fn on_live_error(ld: Loader) {
    // The stream is replaced later, not from inside its own callback.
    spawn_local(async move {
        TimeoutFuture::new(RETRY_MS).await;
        ld.stream.try_update_value(|s| *s = None);
        match api::trace(ld.st.id).await {
            Ok(t) => {
                ld.st.connection_lost.try_set(None);
                ld.st.trace.try_set(t);
            }
            Err(e) => {
                if ld.st.connection_lost.try_with_untracked(Option::is_none) == Some(true) {
                    let since = js_sys::Date::new_0().to_locale_time_string("en-GB").as_string().unwrap_or_default();
                    leptos::logging::warn!("live trace: {e}");
                    ld.st.connection_lost.try_set(Some(since));
                }
            }
        }
        ld.reconnect.try_update(|n| *n += 1);
    });
}

/// Refetches the last page of the view (coalesced), for a fresh total and tail.
fn refresh_tail(ld: Loader) {
    if ld.tail_due.get_value() {
        return;
    }
    ld.tail_due.set_value(true);
    let st = ld.st;
    let generation = ld.generation.get_value();
    spawn_local(async move {
        TimeoutFuture::new(150).await;
        ld.tail_due.try_set_value(false);
        let Some(total) = st.window.try_with_untracked(FrameWindow::total) else { return };
        let page = total.saturating_sub(1) / PAGE;
        let query = st.frame_query(page * PAGE, PAGE);
        let result = api::frames(st.id, &query).await;
        if let (Ok(fetched), Some(true)) = (result, ld.generation.try_get_value().map(|g| g == generation)) {
            st.window.update(|w| w.insert_page(page, fetched));
        }
    });
}

fn refresh_stats(ld: Loader, delay_ms: u32) {
    if ld.stats_due.get_value() {
        return;
    }
    ld.stats_due.set_value(true);
    spawn_local(async move {
        TimeoutFuture::new(delay_ms).await;
        ld.stats_due.try_set_value(false);
        if let Ok(stats) = api::stats(ld.st.id).await {
            ld.st.stats.try_set(Some(Ok(stats)));
        }
    });
}

fn find_jumps(ld: Loader) {
    let st = ld.st;
    Effect::new(move |_| {
        let Some(seq) = st.jump.get() else { return };
        st.jump.set(None);
        if ld.locating.get_value() == Some(seq) {
            return;
        }
        ld.locating.set_value(Some(seq));
        spawn_local(async move {
            let result = locate(ld, seq).await;
            ld.locating.try_update_value(|l| {
                if *l == Some(seq) {
                    *l = None;
                }
            });
            match result {
                Ok(Some(Found { idx, exact })) => {
                    let hidden = (!exact).then_some(HiddenFrame { seq, before_idx: idx });
                    if st.hidden.try_get_untracked() != Some(hidden) {
                        st.hidden.try_set(hidden);
                    }
                    st.reveal.try_set(Some(idx));
                }
                Ok(None) => {}
                Err(e) => {
                    st.window_error.try_set(Some(e));
                }
            }
        });
    });
}

/// Where [`locate`] found a frame.
struct Found {
    /// Its position in the filtered list, or that of the first frame after it when the filters hide it.
    idx: usize,
    /// False when the filters hide the frame.
    exact: bool,
}

/// Selects the frame at a position of the filtered list (Home, End), fetching its seq when its page is not
/// here.
pub fn select_position(st: TraceState, idx: usize) {
    if let Some(seq) = st.window.with_untracked(|w| w.get(idx).map(|f| f.seq)) {
        st.jump_to(seq, true);
        return;
    }
    spawn_local(async move {
        match seq_at(st, idx).await {
            Ok((Some(seq), _)) => st.jump_to(seq, true),
            Ok((None, _)) => {}
            Err(e) => {
                st.window_error.try_set(Some(e));
            }
        }
    });
}

/// The seq at a position of the filtered list, and the list's length.
async fn seq_at(st: TraceState, offset: usize) -> Result<(Option<i64>, usize), ApiFailure> {
    let page = api::frames(st.id, &st.frame_query(offset, 1)).await?;
    Ok((page.frames.first().map(|f| f.seq), page.total.max(0) as usize))
}

/// Finds the row of a frame under the current filters (or of the first frame after it, when the filters
/// hide it) and fetches its page. Seqs rise with the position, so a binary search with one-frame pages
/// finds it in ~20 requests on a million frames.
async fn locate(ld: Loader, seq: i64) -> Result<Option<Found>, ApiFailure> {
    let st = ld.st;
    let generation = ld.generation.get_value();
    match st.window.with_untracked(|w| w.place_of_seq(seq)) {
        Ok(idx) => return Ok(Some(Found { idx, exact: true })),
        Err(Some(idx)) => return Ok(Some(Found { idx, exact: false })),
        Err(None) => {}
    }
    // Unfiltered, the frame is usually at seq - 1.
    let guess = (seq - 1).max(0) as usize;
    let (found, total) = seq_at(st, guess).await?;
    if total == 0 {
        return Ok(Some(Found { idx: 0, exact: false }));
    }
    let idx = if found == Some(seq) {
        guess
    } else {
        let (mut lo, mut hi) = (0, total);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match seq_at(st, mid).await?.0 {
                Some(s) if s < seq => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    };
    let page = idx.min(total - 1) / PAGE;
    if st.window.with_untracked(|w| w.page(page).is_none()) {
        let fetched = api::frames(st.id, &st.frame_query(page * PAGE, PAGE)).await?;
        if ld.generation.try_get_value() != Some(generation) {
            return Ok(None);
        }
        st.window.update(|w| w.insert_page(page, fetched));
    }
    let exact = st.window.with_untracked(|w| w.get(idx).is_some_and(|f| f.seq == seq));
    Ok((ld.generation.try_get_value() == Some(generation)).then_some(Found { idx, exact }))
}
