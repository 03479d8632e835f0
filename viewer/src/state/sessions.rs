//! What the Session tab knows: the trace's sessions with its open requests, and one page of one session's
//! turns. Nothing is fetched until the tab is open (the server reads the whole trace for it); while it is
//! open, new frames of a live trace bring a fresh overview, and a fresh page when the page shows the
//! session's last turns, at most once per [`REFRESH_MS`]. Frames that arrive while the tab is closed are
//! caught up with when it opens. In a replay, both are as of the cursor, refreshed as it moves (at most
//! once per [`REFRESH_MS`] while playing).

use super::throttle::Throttle;
use super::TraceState;
use crate::api::{self, ApiFailure};
use crate::view_query::Tab;
use acp_tee_shared::session::{SessionDetail, TraceSessions, TURNS_DEFAULT_LIMIT};
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The shortest time between two refreshes of a live trace's sessions, in milliseconds.
pub const REFRESH_MS: u32 = 1000;

/// Turns per page: the server's default page.
pub const PAGE_TURNS: u64 = TURNS_DEFAULT_LIMIT as u64;

/// Which page of turns: the session and the first turn's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageKey {
    /// The `sessionId`.
    pub sid: String,
    /// The index of the page's first turn (a multiple of [`PAGE_TURNS`]).
    pub offset: u64,
}

/// A page of turns as it came, with the key it was asked for.
pub type Page = (PageKey, Result<SessionDetail, ApiFailure>);

/// The Session tab's data, shared through [`TraceState`].
#[derive(Clone, Copy)]
pub struct SessionData {
    /// The trace's sessions and open requests; `None` until first fetched.
    pub overview: RwSignal<Option<Result<TraceSessions, ApiFailure>>>,
    /// The last page of turns fetched.
    pub page: RwSignal<Option<Page>>,
    /// The page the URL asks for: its session (the URL's, else the trace's first) and offset.
    pub wanted: Memo<Option<PageKey>>,
    /// True while the Session tab is open.
    pub open: Memo<bool>,
    /// Frames arrived that the overview does not know yet.
    stale: StoredValue<bool>,
    /// Refreshes at most once per [`REFRESH_MS`].
    throttle: Throttle,
    /// Bumped per overview request, so an older answer never replaces a newer one.
    generation: StoredValue<u64>,
}

impl SessionData {
    /// Nothing fetched yet; the page follows `query`.
    pub fn new(query: Memo<crate::view_query::ViewQuery>) -> SessionData {
        let overview = RwSignal::new(None::<Result<TraceSessions, ApiFailure>>);
        let first = Memo::new(move |_| {
            overview.with(|o| o.as_ref().and_then(|o| o.as_ref().ok()?.sessions.first().map(|s| s.session_id.clone())))
        });
        let wanted = Memo::new(move |_| {
            let (sid, turn) = query.with(|q| (q.sid.clone(), q.turn));
            let sid = sid.or_else(|| first.get())?;
            Some(PageKey { sid, offset: page_of(turn) })
        });
        SessionData {
            overview,
            page: RwSignal::new(None),
            wanted,
            open: Memo::new(move |_| query.with(|q| q.tab == Tab::Session)),
            stale: StoredValue::new(false),
            throttle: Throttle::new(f64::from(REFRESH_MS)),
            generation: StoredValue::new(0),
        }
    }

    /// The page shown now: the one fetched, when it is the one the URL asks for (tracked).
    pub fn current_page(&self) -> Option<Result<SessionDetail, ApiFailure>> {
        let wanted = self.wanted.get()?;
        self.page.with(|p| p.as_ref().filter(|(k, _)| *k == wanted).map(|(_, r)| r.clone()))
    }
}

/// The offset of the page that holds turn `turn` (numbered from 1; the first page when `None`).
pub fn page_of(turn: Option<u64>) -> u64 {
    turn.unwrap_or(1).saturating_sub(1) / PAGE_TURNS * PAGE_TURNS
}

/// Starts the Session tab's fetching effects; they stop with the view.
pub fn start(st: TraceState) {
    let sd = st.sessions;
    // The overview: when the tab opens, unless what is here is current.
    Effect::new(move |_| {
        if sd.open.get() && (sd.overview.with_untracked(Option::is_none) || sd.stale.get_value()) {
            refresh(st);
        }
    });
    // The page: whenever the URL asks for another one while the tab is open.
    Effect::new(move |_| {
        let (open, wanted) = (sd.open.get(), sd.wanted.get());
        let Some(key) = wanted.filter(|_| open) else { return };
        if sd.page.with_untracked(|p| p.as_ref().is_none_or(|(k, _)| *k != key)) {
            spawn_local(fetch_page(st, key));
        }
    });
    // A replay's cursor moved (or the replay began or ended): as new frames would.
    Effect::new(move |first: Option<()>| {
        st.replay.cursor.track();
        if first.is_some() {
            heard_frames(st);
        }
    });
}

/// New frames of a live trace (or its end): the sessions are refreshed, now or when the tab opens.
pub fn heard_frames(st: TraceState) {
    st.sessions.stale.set_value(true);
    if st.sessions.open.get_untracked() {
        refresh(st);
    }
}

/// Fetches the overview, and the page when it shows the session's last turns; coalesced, and not sooner
/// than [`REFRESH_MS`] after the last refresh.
fn refresh(st: TraceState) {
    let sd = st.sessions;
    sd.throttle.run(move || async move {
        sd.stale.set_value(false);
        let generation = sd.generation.get_value() + 1;
        sd.generation.set_value(generation);
        let result = api::sessions(st.id, st.replay.cursor.get_untracked()).await;
        if sd.generation.try_get_value() != Some(generation) {
            return;
        }
        match result {
            Ok(o) => {
                if sd.overview.with_untracked(|old| old.as_ref().and_then(|r| r.as_ref().ok()) != Some(&o)) {
                    sd.overview.set(Some(Ok(o)));
                }
            }
            // A failed refresh keeps what was shown; the header says when the server is gone.
            Err(e) if sd.overview.with_untracked(|o| matches!(o, Some(Ok(_)))) => {
                leptos::logging::warn!("sessions: {e}");
            }
            Err(e) => sd.overview.set(Some(Err(e))),
        }
        // A replay's cursor may have moved into or out of any page.
        let replay = st.replay.cursor.with_untracked(Option::is_some);
        if let Some(key) = sd.wanted.get_untracked().filter(|k| replay || shows_last_turns(sd, k)) {
            fetch_page(st, key).await;
        }
    });
}

/// True when the page fetched for `key` holds (or would hold) the session's last turns, so new frames
/// may change it.
fn shows_last_turns(sd: SessionData, key: &PageKey) -> bool {
    sd.page.with_untracked(|p| match p {
        Some((k, Ok(d))) if k == key => key.offset + PAGE_TURNS >= d.summary.turns,
        _ => false,
    })
}

async fn fetch_page(st: TraceState, key: PageKey) {
    let sd = st.sessions;
    let to = st.replay.cursor.get_untracked();
    let result = api::session(st.id, &key.sid, key.offset, TURNS_DEFAULT_LIMIT, to).await;
    if sd.wanted.try_get_untracked().flatten().as_ref() != Some(&key) {
        return;
    }
    // An unchanged page is not drawn again; a failed refresh keeps the page that is shown.
    let keep = sd.page.with_untracked(|p| match (p, &result) {
        (Some((k, Ok(old))), Ok(new)) => *k == key && old == new,
        (Some((k, Ok(_))), Err(e)) if *k == key => {
            leptos::logging::warn!("session page: {e}");
            true
        }
        _ => false,
    });
    if !keep {
        sd.page.set(Some((key, result)));
    }
}
