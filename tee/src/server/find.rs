//! Find, beside the frames filter: `/api/traces/{id}/find` steps to the
//! next or previous frame holding some words, `/api/traces/{id}/matches`
//! says which frames of a seq range hold them (the rows a viewer draws),
//! `/api/search` which traces have such frames. Each is searched as shown:
//! masked (unless `--no-redact`), so a word only inside a masked value
//! finds nothing; each waits for a scan slot, as a filtered page does.

use super::error::AppError;
use super::routes::{path, query};
use super::AppState;
use crate::read::{mask, QUERY_TIME_LIMIT};
use crate::store::api::Toward;
use acp_tee_shared::api::{
    FindQuery, FindStep, MatchList, SearchQuery, TraceSearch, FIND_COUNT_CAP, MATCHES_MAX_SPAN, SEARCH_COUNT_CAP,
    SEARCH_MAX_TRACES,
};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::Json;
use std::time::{Duration, Instant};

/// Time `/api/search` begins traces for: past it, the traces left are not
/// searched (and the answer says so), well before the query's own limit.
const SEARCH_BUDGET: Duration = Duration::from_secs(5);

/// The words of `text` as a search takes them, or why not.
fn words(name: &str, text: Option<&str>) -> Result<String, AppError> {
    let text = text.unwrap_or_default();
    if text.trim().is_empty() {
        return Err(AppError::BadRequest(format!("{name} must name the words to look for")));
    }
    if text.len() > 1000 {
        return Err(AppError::BadRequest(format!("{name} must be at most 1000 bytes")));
    }
    Ok(text.to_owned())
}

/// Checks the filters of `q` as `/frames` checks them.
fn validate(q: &FindQuery) -> Result<(), AppError> {
    words("find", q.find.as_deref())?;
    let filters = acp_tee_shared::api::FrameQuery { q: q.q.clone(), ..q.frame_query() };
    crate::read::query::validate(&filters).map_err(AppError::BadRequest)
}

/// `GET /api/traces/{id}/find?find=WORDS&after=SEQ` (or `&before=SEQ`)
pub async fn find(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<FindQuery>, QueryRejection>,
) -> Result<Json<FindStep>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    validate(&q)?;
    let toward = match (q.after, q.before) {
        (Some(_), Some(_)) => return Err(AppError::BadRequest("give after or before, not both".into())),
        (_, Some(b)) if b < 1 => return Err(AppError::BadRequest("before must be a seq, 1 or more".into())),
        (Some(a), _) if a < 0 => return Err(AppError::BadRequest("after must be a seq, 0 or more".into())),
        (_, Some(b)) => Toward::Before(b),
        (a, None) => Toward::After(a.unwrap_or(0)),
    };
    let seen = st.redactor();
    let frames = q.frame_query();
    let step =
        st.db.run_scan(move |s| s.seen_by(&seen).run(|| s.find_step(id, &frames, toward, FIND_COUNT_CAP))).await?;
    Ok(Json(step))
}

/// `GET /api/traces/{id}/matches?find=WORDS&from=SEQ&to=SEQ`
pub async fn matches(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    q: Result<Query<FindQuery>, QueryRejection>,
) -> Result<Json<MatchList>, AppError> {
    let (id, q) = (path(id)?, query(q)?);
    validate(&q)?;
    let (Some(from), Some(to)) = (q.from, q.to) else {
        return Err(AppError::BadRequest("matches needs from and to, the first and last seq of the range".into()));
    };
    if from < 1 || to < from || to - from >= MATCHES_MAX_SPAN {
        return Err(AppError::BadRequest(format!(
            "from and to must be seqs with from <= to, at most {MATCHES_MAX_SPAN} apart"
        )));
    }
    let seen = st.redactor();
    let frames = q.frame_query();
    let seqs = st.db.run_scan(move |s| s.seen_by(&seen).run(|| s.matches_between(id, &frames, from, to))).await?;
    Ok(Json(MatchList { seqs }))
}

/// `GET /api/search?q=WORDS`: the newest [`SEARCH_MAX_TRACES`] traces
/// searched while [`SEARCH_BUDGET`] lasts; each hit's trace and first
/// frame masked as the list and the frames are.
pub async fn search(
    State(st): State<AppState>,
    q: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<Json<TraceSearch>, AppError> {
    let q = query(q)?;
    let text = words("q", q.q.as_deref())?;
    let r = st.redactor();
    let seen = r.clone();
    let until = Instant::now() + SEARCH_BUDGET.min(QUERY_TIME_LIMIT / 2);
    let mut found = st
        .db
        .run_scan(move |s| s.seen_by(&seen).run(|| s.search_traces(&text, SEARCH_MAX_TRACES, SEARCH_COUNT_CAP, until)))
        .await?;
    for hit in &mut found.hits {
        hit.trace = mask::trace(&r, hit.trace.clone());
        mask::summary(&r, &mut hit.first);
    }
    Ok(Json(found))
}
