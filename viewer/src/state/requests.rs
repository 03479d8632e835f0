//! What the Requests tab knows: one page of the trace's request table, sorted and paged as the URL says.
//! Nothing is fetched until the tab is open; while it is open, new frames of a live trace bring the same
//! page again (same sort, same offset), at most once per [`REFRESH_MS`]. Frames that arrive while the tab
//! is closed are caught up with when it opens.

use super::sessions::REFRESH_MS;
use super::throttle::Throttle;
use super::TraceState;
use crate::api::{self, ApiFailure};
use crate::view_query::{Tab, ViewQuery};
use acp_tee_shared::api::{RequestPage, RequestQuery, REQUESTS_DEFAULT_LIMIT};
use leptos::prelude::*;
use leptos::task::spawn_local;

/// Rows per page: the server's default page.
pub const PAGE_ROWS: i64 = REQUESTS_DEFAULT_LIMIT;

/// A page as it came, with the query it answers.
pub type Page = (RequestQuery, Result<RequestPage, ApiFailure>);

/// The Requests tab's data, shared through [`TraceState`].
#[derive(Clone, Copy)]
pub struct RequestsData {
    /// The last page fetched.
    pub page: RwSignal<Option<Page>>,
    /// The page the URL asks for.
    pub wanted: Memo<RequestQuery>,
    /// True while the Requests tab is open.
    pub open: Memo<bool>,
    /// Frames arrived that the page shown does not know.
    stale: StoredValue<bool>,
    /// Refreshes at most once per [`REFRESH_MS`].
    throttle: Throttle,
}

/// The API query of the page `q` asks for.
pub fn query_of(q: &ViewQuery) -> RequestQuery {
    let page = q.req_page.unwrap_or(1).max(1) as i64;
    RequestQuery {
        sort: Some(q.req_sort),
        desc: Some(q.req_desc),
        offset: Some((page - 1).saturating_mul(PAGE_ROWS)),
        limit: Some(PAGE_ROWS),
    }
}

impl RequestsData {
    /// Nothing fetched yet; the page follows `query`.
    pub fn new(query: Memo<ViewQuery>) -> RequestsData {
        RequestsData {
            page: RwSignal::new(None),
            wanted: Memo::new(move |_| query.with(query_of)),
            open: Memo::new(move |_| query.with(|q| q.tab == Tab::Requests)),
            stale: StoredValue::new(false),
            throttle: Throttle::new(f64::from(REFRESH_MS)),
        }
    }

    /// True while the page shown is not the one the URL asks for (another is being fetched) (tracked).
    pub fn loading(&self) -> bool {
        let wanted = self.wanted.get();
        self.page.with(|p| p.as_ref().is_some_and(|(k, _)| *k != wanted))
    }

    /// The page to show and whether it answers what the URL asks for: while another page is fetched,
    /// the last one stays (a table that empties at every click would jump) (tracked).
    pub fn shown(&self) -> Option<(Result<RequestPage, ApiFailure>, bool)> {
        let wanted = self.wanted.get();
        self.page.with(|p| p.as_ref().map(|(k, r)| (r.clone(), *k == wanted)))
    }
}

/// Starts the Requests tab's fetching effect: whenever the tab is open and the URL asks for a page not
/// fetched (or frames arrived since); it stops with the view.
pub fn start(st: TraceState) {
    let rd = st.requests;
    Effect::new(move |_| {
        let (open, wanted) = (rd.open.get(), rd.wanted.get());
        if !open {
            return;
        }
        let fetched = rd.page.with_untracked(|p| p.as_ref().is_some_and(|(k, _)| *k == wanted));
        if !fetched || rd.stale.get_value() {
            rd.stale.set_value(false);
            spawn_local(fetch(st, wanted));
        }
    });
}

/// New frames of a live trace (or its end): the page is fetched again, now or when the tab opens.
pub fn heard_frames(st: TraceState) {
    let rd = st.requests;
    rd.stale.set_value(true);
    if !rd.open.get_untracked() {
        return;
    }
    rd.throttle.run(move || async move {
        rd.stale.set_value(false);
        if let Some(wanted) = rd.wanted.try_get_untracked() {
            fetch(st, wanted).await;
        }
    });
}

async fn fetch(st: TraceState, q: RequestQuery) {
    let rd = st.requests;
    rd.throttle.ran();
    let result = api::requests(st.id, &q).await;
    if rd.wanted.try_get_untracked().as_ref() != Some(&q) {
        return;
    }
    // An unchanged page is not drawn again; a failed refresh keeps the page that is shown.
    let keep = rd.page.with_untracked(|p| match (p, &result) {
        (Some((k, Ok(old))), Ok(new)) => *k == q && old == new,
        (Some((k, Ok(_))), Err(e)) if *k == q => {
            leptos::logging::warn!("requests page: {e}");
            true
        }
        _ => false,
    });
    if !keep {
        rd.page.set(Some((q, result)));
    }
}
