//! `/api/traces/{id}/sessions` and `/sessions/{sid}`: the session model of
//! a trace (`crate::session`).
//!
//! The server keeps the whole-trace fold of the last
//! [`crate::read::folds::MODELS_KEPT`] traces asked about ([`Models`]) and feeds it
//! only the frames stored since, so asking again about a live trace costs
//! its new frames. Pages of turns re-read only their own frames.
//!
//! `?to=SEQ` answers as of frame SEQ (a replay's cursor): a fold per trace
//! kept apart ([`Replays`], as bounded), fed forward as the cursor advances
//! and folded again only when it moves back.

use super::error::AppError;
use super::routes::{path, query};
use super::AppState;
use crate::read::{Models, Replays};
use crate::session::now_t_ns;
use crate::session::Model;
use crate::store::{Store, StoreError};
use acp_tee_shared::session::{
    SessionDetail, SessionsQuery, TraceSessions, TurnQuery, TURNS_DEFAULT_LIMIT, TURNS_MAX_LIMIT,
};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;

/// Starts bringing trace `id`'s model up to date in the background when a
/// scan slot is free: the server does it when it serves the page of a
/// trace's Session tab, so the model is built while the app starts rather
/// than after it asks. Requests for the model meanwhile wait for this
/// build instead of starting their own (`Models::with_current`).
pub(super) fn warm(st: &AppState, id: i64) {
    let Some(slot) = st.db.try_scan_slot() else { return };
    let (db, models, r) = (st.db.clone(), st.sessions.clone(), st.redactor());
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(e) = db.run(move |s| overview(&models, s, id, &r)).await {
            tracing::debug!("session model of trace {id} not built ahead: {e}");
        }
    });
}

/// The trace id of an app page showing a trace: `/traces/{id}?...`.
fn trace_page(uri: &axum::http::Uri) -> Option<i64> {
    let id = uri.path().strip_prefix("/traces/")?.trim_end_matches('/');
    id.parse::<i64>().ok().filter(|_| id.bytes().all(|b| b.is_ascii_digit()))
}

/// The trace id of an app page that opens a trace's Session tab:
/// `/traces/{id}?...tab=session...`.
fn session_tab_page(uri: &axum::http::Uri) -> Option<i64> {
    let id = trace_page(uri)?;
    uri.query()?.split('&').any(|kv| kv == "tab=session").then_some(id)
}

/// The trace id of an app page that opens a trace's diagram (no `tab`, or
/// `tab=diagram`), where the overview strip shows.
fn diagram_page(uri: &axum::http::Uri) -> Option<i64> {
    let id = trace_page(uri)?;
    let tab = uri.query().unwrap_or("").split('&').find_map(|kv| kv.strip_prefix("tab="));
    matches!(tab, None | Some("" | "diagram")).then_some(id)
}

/// Middleware: a `GET` of an app page that opens a trace's diagram starts
/// adding up its overview (`super::overview::warm`), and one that opens a
/// Session tab starts [`warm`] on that trace (one whole-trace read per
/// page, so neither waits behind the other), then serves the page as usual.
pub async fn warm_on_page(
    State(st): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if req.method() == axum::http::Method::GET {
        if let Some(id) = diagram_page(req.uri()) {
            super::overview::warm(&st, id);
        }
        if let Some(id) = session_tab_page(req.uri()) {
            warm(&st, id);
        }
    }
    next.run(req).await
}

/// Trace `id`'s sessions, its model brought up to date first.
pub(super) fn overview(
    models: &Models,
    store: &Store,
    id: i64,
    redactor: &crate::redact::Redactor,
) -> Result<TraceSessions, StoreError> {
    let trace = store.trace_summary(id)?;
    models.with_current(store, id, redactor, |m| Ok(m.sessions(now_t_ns(&trace))))
}

/// The session models a request reads: the whole trace's, or a replay's
/// up to a seq.
#[derive(Clone)]
struct Folded {
    models: Models,
    replays: Replays,
    /// No frame after this seq counts (`?to=SEQ`).
    to: Option<i64>,
}

impl Folded {
    fn of(st: &AppState, to: Option<i64>) -> Result<Folded, AppError> {
        if to.is_some_and(|s| s < 1) {
            return Err(AppError::BadRequest("to must be a seq of the trace, 1 or more".into()));
        }
        Ok(Folded { models: st.sessions.clone(), replays: st.replays.clone(), to })
    }

    /// Runs `read` on trace `id`'s model brought up to date (or up to `to`),
    /// with the present on the trace's clock its ages run to: a replay's is
    /// its last frame, as an ended trace's is.
    fn with<T>(
        &self,
        store: &Store,
        trace: &acp_tee_shared::api::TraceSummary,
        redactor: &crate::redact::Redactor,
        read: impl FnOnce(&Model, Option<i64>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let id = trace.meta.id;
        match self.to {
            Some(to) => self.replays.with_to(store, id, to, redactor, |m| read(m, None)),
            None => self.models.with_current(store, id, redactor, |m| read(m, now_t_ns(trace))),
        }
    }
}

/// `GET /api/traces/{id}/sessions?to=SEQ`
pub async fn sessions(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<SessionsQuery>, QueryRejection>,
) -> Result<Json<TraceSessions>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    let (folded, r) = (Folded::of(&st, q.to)?, st.redactor());
    let view = st
        .db
        .run_scan(move |s| {
            let trace = s.trace_summary(id)?;
            folded.with(s, &trace, &r, |m, now| Ok(m.sessions(now)))
        })
        .await?;
    Ok(Json(view))
}

/// `GET /api/traces/{id}/sessions/{sid}?offset=N&limit=N&to=SEQ`
pub async fn session(
    State(st): State<AppState>,
    ids: Result<Path<(i64, String)>, PathRejection>,
    q: Result<Query<TurnQuery>, QueryRejection>,
) -> Result<Json<SessionDetail>, AppError> {
    let ((id, sid), q) = (path(ids)?, query(q)?);
    let limit = q.limit.unwrap_or(TURNS_DEFAULT_LIMIT);
    if !(1..=TURNS_MAX_LIMIT).contains(&limit) {
        return Err(AppError::BadRequest(format!("limit must be between 1 and {TURNS_MAX_LIMIT}")));
    }
    let offset = q.offset.unwrap_or(0);
    let (folded, r) = (Folded::of(&st, q.to)?, st.redactor());
    let missing = format!("trace {id} has no session {sid}");
    let detail: Result<SessionDetail, u64> = st
        .db
        .run_scan(move |s| {
            let trace = s.trace_summary(id)?;
            folded.with(s, &trace, &r, |model, now| {
                let view = model.sessions(now);
                let left_out = view.sessions_left_out;
                let all: Vec<String> = view.sessions.iter().map(|x| x.session_id.clone()).collect();
                let Some(summary) = view.sessions.into_iter().find(|x| x.session_id == sid) else {
                    return Ok(Err(left_out));
                };
                let redact = (!r.is_noop()).then_some(&r);
                let Some(turns) = model.turns_of(s, id, &sid, offset, limit, redact)? else { return Ok(Err(left_out)) };
                let x = model.extras(&sid);
                let open_requests = model.open_requests_of(&sid, now);
                let mut detail = SessionDetail {
                    summary,
                    turns,
                    offset,
                    open_requests,
                    plan: x.plan,
                    commands: x.commands,
                    changes: x.changes,
                    left_out: x.left_out,
                };
                if let Some(linker) = crate::read::family::Linker::of(s, &trace, all, &r)? {
                    linker.link(&sid, &mut detail.turns);
                }
                Ok(Ok(detail))
            })
        })
        .await?;
    detail.map(Json).map_err(|left_out| AppError::NotFound(crate::read::folds::past_the_bound(missing, left_out)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, Uri};
    use std::time::{Duration, Instant};
    use tower::ServiceExt;

    #[test]
    fn only_a_diagram_page_names_a_trace_whose_overview_to_warm() {
        let page = |s: &str| diagram_page(&s.parse::<Uri>().unwrap());
        assert_eq!(page("/traces/7"), Some(7));
        assert_eq!(page("/traces/7/?frame=3&tab=diagram"), Some(7));
        assert_eq!(page("/traces/7?tab="), Some(7));
        for other in ["/traces/7?tab=session", "/traces/7?q=x&tab=timing", "/api/traces/7", "/traces/x", "/"] {
            assert_eq!(page(other), None, "{other}");
        }
    }

    #[test]
    fn only_a_session_tab_page_names_a_trace_to_warm() {
        let page = |s: &str| session_tab_page(&s.parse::<Uri>().unwrap());
        assert_eq!(page("/traces/7?tab=session"), Some(7));
        assert_eq!(page("/traces/7/?sid=a&tab=session&turn=3"), Some(7));
        for other in [
            "/traces/7",
            "/traces/7?tab=diagram",
            "/traces/7?tab=sessions",
            "/api/traces/7?tab=session",
            "/traces/7/frames?tab=session",
            "/traces/+7?tab=session",
            "/traces/99999999999999999999?tab=session",
        ] {
            assert_eq!(page(other), None, "{other}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serving_a_session_tab_page_builds_that_traces_model_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let id = crate::store::create_maintained(&path).create_trace(&crate::store::test_start(), 1).unwrap();
        let state = AppState::new(super::super::Db::open(&path).unwrap(), &path, None, None);
        let models = state.sessions.clone();
        let app = super::super::app(state);
        let get = |uri: String| Request::get(uri).body(Body::empty()).unwrap();

        // Which pages warm is `session_tab_page`'s to say (above); here, that
        // serving one does.
        assert!(!models.holds(id));
        app.oneshot(get(format!("/traces/{id}?tab=session"))).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !models.holds(id) {
            assert!(Instant::now() < deadline, "the model of trace {id} was never built");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
