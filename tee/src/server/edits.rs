//! The API's one write path: the trace list's rename, pin and delete, on a
//! store [`Editor`] of its own. Everything else the server does reads
//! through `query_only` connections (`crate::read::Db`).
//!
//! Who may write ([`require_edit`], on the write routes only):
//! - nobody under `serve --read-only`, or when the store is read-only here
//!   (403, saying why);
//! - with a token set (always, beyond loopback), only a request that
//!   presents it (checked here again, not only by the token layer);
//! - without a token (loopback), only a request addressed to a loopback name
//!   (`Host`: `localhost`, `127.0.0.1`, `[::1]`), so a page that rebinds its
//!   own DNS name to 127.0.0.1 cannot write;
//! - from a browser, only the viewer's own pages: an `Origin` must be the
//!   server's own, `Sec-Fetch-Site` must be `same-origin` (or `none`); and a
//!   `PATCH` body must be `application/json` (which no cross-site form can
//!   send without a preflight this server never answers).
//!
//! One change runs at a time, on a blocking thread (a removal deletes a
//! chunk at a time and gives the space back after); a change that waits
//! longer than [`EDIT_WAIT`] for the one before it is answered 503.

use super::error::AppError;
use super::AppState;
use crate::read::mask;
use crate::store::{Editor, RemoveError, StoreError};
use acp_tee_shared::api::{name_problem, Capabilities, TraceChange, TraceSummary};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, Request, State};
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// Bytes a `PATCH` body may have at most (a name of [`acp_tee_shared::api::MAX_NAME_CHARS`]
/// characters of 4 bytes each, escaped, fits many times).
pub const EDIT_BODY_BYTES: usize = 8 * 1024;

/// How long a change waits for the one running before it (a removal of a
/// large trace) before it is answered 503.
pub const EDIT_WAIT: Duration = Duration::from_secs(20);

/// Whether this server changes traces, and with what.
#[derive(Clone)]
pub enum Edits {
    /// Changes go through this editor, one at a time.
    On(Arc<Mutex<Editor>>),
    /// Changes are refused (403) with this reason.
    Off(Arc<str>),
}

impl Edits {
    /// Changes through `editor`.
    pub fn on(editor: Editor) -> Edits {
        Edits::On(Arc::new(Mutex::new(editor)))
    }

    /// Changes refused, saying `why`.
    pub fn off(why: impl Into<String>) -> Edits {
        Edits::Off(why.into().into())
    }
}

/// The reason `serve --read-only` gives.
pub const READ_ONLY: &str =
    "this acp-tee serve was started with --read-only: traces cannot be renamed, pinned or deleted here";

/// Why the request with `headers` may not change traces on a server whose
/// token is `token`, beside the server's own reason (`None`: it may). The
/// token itself is checked by [`require_edit`] (a request without it never
/// gets this far on a server that has one).
fn refusal(headers: &HeaderMap, token: Option<&str>) -> Option<String> {
    let host = headers.get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if token.is_none() && !names_loopback(host) {
        return Some(format!(
            "changes without a token are taken only at a loopback address (127.0.0.1, localhost), not at {host:?}; \
             start acp-tee serve with --token to change traces from elsewhere"
        ));
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let own = origin.to_str().ok().is_some_and(|o| {
            ["http://", "https://"]
                .iter()
                .any(|scheme| o.strip_prefix(scheme).is_some_and(|h| h.eq_ignore_ascii_case(host)))
        });
        if !own {
            return Some(
                "changes are taken only from the viewer's own pages (this request came from another origin)".into(),
            );
        }
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return Some(
                "changes are taken only from the viewer's own pages (this request came from another site)".into(),
            );
        }
    }
    None
}

/// True when the `Host` value `host` (with or without a port) names this
/// machine's loopback: `localhost` or a loopback address.
fn names_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Lets a change through only when this server takes changes and this
/// request may make them (see the module's doc); 403 otherwise.
pub async fn require_edit(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if let Edits::Off(why) = &st.edits {
        return AppError::Forbidden(why.to_string()).into_response();
    }
    if let Some(token) = &st.token {
        let ok =
            super::auth::presented(&req).iter().any(|t| super::auth::constant_time_eq(t.as_bytes(), token.as_bytes()));
        if !ok {
            return AppError::Unauthorized.into_response();
        }
    }
    if let Some(why) = refusal(req.headers(), st.token.as_deref()) {
        return AppError::Forbidden(why).into_response();
    }
    next.run(req).await
}

/// `GET /api/capabilities`: whether the client asking may change traces, as
/// [`require_edit`] would decide for it.
pub async fn capabilities(State(st): State<AppState>, headers: HeaderMap) -> Json<Capabilities> {
    let edit_off = match &st.edits {
        Edits::Off(why) => Some(why.to_string()),
        Edits::On(_) => refusal(&headers, st.token.as_deref()),
    };
    Json(Capabilities { edit: edit_off.is_none(), edit_off })
}

/// The editor, once the change before this one is done.
async fn editor(st: &AppState) -> Result<tokio::sync::OwnedMutexGuard<Editor>, AppError> {
    let Edits::On(editor) = &st.edits else {
        // `require_edit` answered already; this is for a route added without it.
        return Err(AppError::Forbidden(READ_ONLY.into()));
    };
    tokio::time::timeout(EDIT_WAIT, editor.clone().lock_owned()).await.map_err(|_| {
        AppError::Unavailable(format!(
            "another change to the store (the removal of a large trace) is still running after {} s; try again when it has finished",
            EDIT_WAIT.as_secs()
        ))
    })
}

/// A store error of a change as the API answers it.
fn store_error(e: StoreError) -> AppError {
    if e.is_busy() {
        AppError::Unavailable("the store is busy (a recorder or another acp-tee is writing to it); try again".into())
    } else {
        e.into()
    }
}

/// `PATCH /api/traces/{id}` with a JSON [`TraceChange`]: renames and/or pins
/// or unpins the trace (the name first: when the pin then fails, the new
/// name stays); answers the trace as `GET /api/traces` lists it.
pub async fn change_trace(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TraceSummary>, AppError> {
    let id = super::routes::path(id)?;
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(AppError::NotJson("the body must be JSON, sent with Content-Type: application/json".into()));
    }
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => {
            AppError::TooLarge(format!("the body may have at most {EDIT_BODY_BYTES} bytes"))
        }
        _ => AppError::BadRequest(e.body_text()),
    })?;
    let change: TraceChange = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadRequest(format!("the body must be {{\"name\": \"...\"}} and/or {{\"pinned\": true|false}}: {e}"))
    })?;
    let name = match &change.name {
        Some(name) => match name_problem(name) {
            Some(problem) => return Err(AppError::BadRequest(problem)),
            None => Some(name.trim().to_owned()),
        },
        None => None,
    };
    if name.is_none() && change.pinned.is_none() {
        return Err(AppError::BadRequest("nothing to change: give \"name\" or \"pinned\"".into()));
    }
    let editor = editor(&st).await?;
    tokio::task::spawn_blocking(move || {
        if let Some(name) = &name {
            editor.rename(id, name)?;
        }
        if let Some(pinned) = change.pinned {
            editor.set_pinned(id, pinned)?;
        }
        Ok(())
    })
    .await
    .map_err(|e| AppError::Internal(format!("the change stopped: {e}")))?
    .map_err(store_error)?;
    // As the list shows it (with its findings counts), so the row can be replaced by it.
    let mut changed = [st.db.run(move |s| s.trace_summary(id)).await?];
    st.checks.fill_counts(&mut changed);
    let [changed] = changed;
    Ok(Json(mask::trace(&st.redactor(), changed)))
}

/// `DELETE /api/traces/{id}`: removes the trace (204), unless it is recorded
/// now or pinned (409). The space it held is given back after the answer.
pub async fn remove_trace(
    State(st): State<AppState>,
    id: Result<Path<i64>, PathRejection>,
) -> Result<StatusCode, AppError> {
    let id = super::routes::path(id)?;
    let mut editor = editor(&st).await?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let removed = editor.remove(&[id]);
        let reclaim = removed.is_ok();
        let _ = tx.send(removed);
        // The next change waits for this one: the editor is held until here.
        if reclaim {
            if let Err(e) = editor.reclaim() {
                tracing::warn!("serve: giving back the space of trace {id}: {e}");
            }
        }
    });
    match rx.await {
        Ok(Ok(())) => Ok(StatusCode::NO_CONTENT),
        Ok(Err(RemoveError::NotEnded(id))) => Err(AppError::Conflict(format!(
            "trace {id} has not ended (it is being recorded, or its recorder is still storing it); it can be deleted once it ends"
        ))),
        Ok(Err(RemoveError::Pinned(id))) => Err(AppError::Conflict(format!("trace {id} is pinned; unpin it first"))),
        Ok(Err(RemoveError::Store(e))) => Err(store_error(e)),
        Err(_) => Err(AppError::Internal(format!("the removal of trace {id} stopped before it said how it went"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_names() {
        for host in ["127.0.0.1:7878", "127.0.0.1", "localhost:1", "LOCALHOST", "[::1]:7878", "[::1]", "127.1.2.3:80"] {
            assert!(names_loopback(host), "{host}");
        }
        for host in ["", "evil.example:7878", "10.0.0.1:7878", "[::2]:1", "localhost.evil.example", "0.0.0.0:7878"] {
            assert!(!names_loopback(host), "{host}");
        }
    }

    #[test]
    fn who_may_change() {
        let own = [("host", "127.0.0.1:7878"), ("origin", "http://127.0.0.1:7878"), ("sec-fetch-site", "same-origin")];
        assert_eq!(refusal(&headers(&own), None), None);
        assert_eq!(refusal(&headers(&own[..1]), None), None, "curl sends no origin");
        // DNS rebinding: the page's own name, pointing at 127.0.0.1.
        let rebound = [("host", "evil.example:7878"), ("origin", "http://evil.example:7878")];
        assert!(refusal(&headers(&rebound), None).is_some());
        assert_eq!(refusal(&headers(&rebound), Some("token")), None, "with the token, any name");
        let cross = [("host", "127.0.0.1:7878"), ("origin", "http://evil.example")];
        assert!(refusal(&headers(&cross), None).is_some());
        assert!(refusal(&headers(&[("host", "127.0.0.1:7878"), ("origin", "null")]), None).is_some());
        let site = [("host", "127.0.0.1:7878"), ("sec-fetch-site", "cross-site")];
        assert!(refusal(&headers(&site), None).is_some());
    }
}
