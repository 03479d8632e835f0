//! `acp-tee serve`: the viewer's HTTP server (axum).
//!
//! `/api/...` is a JSON API over the store's typed queries (routes listed in
//! `shared/src/api.rs`), plus a Server-Sent Events stream per trace, and one
//! write path: renaming, pinning and deleting a trace ([`edits`]), unless
//! `serve --read-only`.
//! Everything else is the viewer app built into the binary ([`assets`]), or
//! from `--dist DIR` during development (an `index.html` fallback for its
//! client-side routes), or a page saying how to get it.
//!
//! Frames are served masked by the default rules of exports ([`mask`]),
//! unless `serve --no-redact`; a frame's detail carries at most
//! [`acp_tee_shared::api::DETAIL_MAX_BYTES`] of its bytes unless asked for
//! more, and `.../frames/{seq}/raw` downloads them whole.
//!
//! Architecture Invariant: handlers only read, through `query_only`
//! connections, except the write routes of [`edits`], which change traces
//! through the one `Editor` behind [`edits::require_edit`]; every value from a
//! request is a bound SQL parameter; errors are JSON `{"error"}`.

mod assets;
mod auth;
mod edits;
mod error;
mod find;
mod findings;
mod live;
mod overview;
mod range;
mod requests;
mod routes;
pub(crate) mod sessions;

pub use auth::generate_token;

/// Whether the viewer's files are built into this binary.
pub fn viewer_embedded() -> bool {
    assets::present()
}
pub use error::AppError;

use crate::read::{mask, Db};
use anyhow::Context;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use axum::routing::{any, get, patch};
use axum::Router;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use tokio::sync::watch;
use tower_http::services::{ServeDir, ServeFile};

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    db: Db,
    token: Option<String>,
    changes: watch::Receiver<u64>,
    dist: Option<PathBuf>,
    /// Whether frames are served masked (the default rules of exports).
    redact: bool,
    /// Session models kept between requests.
    sessions: crate::read::Models,
    /// Session models of replays (`?to=SEQ`) kept between requests.
    replays: crate::read::Replays,
    /// Searches' counts of indexed matches kept between pages.
    search_counts: crate::store::api::SearchCounts,
    /// Protocol checkers and finding counts kept between requests.
    checks: findings::Checks,
    /// Overviews of traces kept between requests.
    overviews: overview::Overviews,
    /// Whether traces may be renamed, pinned and deleted, and through what.
    edits: edits::Edits,
    /// Background threads of this state run while this lives.
    _alive: std::sync::Arc<()>,
}

impl AppState {
    /// State over the store `db`; `token` is required on every request when
    /// set; `dist` is a built viewer to serve instead of the one built into
    /// the binary (its `index.html` must exist to be served). It changes no
    /// trace until given an editor ([`AppState::with_editor`]).
    pub fn new(db: Db, db_path: &Path, token: Option<String>, dist: Option<PathBuf>) -> Self {
        let changes = live::watch_store(db_path);
        let alive = std::sync::Arc::new(());
        live::maintain_behind_recorders(db_path, std::sync::Arc::downgrade(&alive));
        let checks = findings::Checks::default();
        checks.check_in_background(db_path, std::sync::Arc::downgrade(&alive));
        let dist = dist.filter(|d| d.join("index.html").is_file());
        AppState {
            db,
            token,
            changes,
            dist,
            redact: true,
            sessions: crate::read::Models::default(),
            replays: crate::read::Replays::default(),
            search_counts: Default::default(),
            checks,
            overviews: overview::Overviews::default(),
            edits: edits::Edits::off("this server takes no changes: traces cannot be renamed, pinned or deleted here"),
            _alive: alive,
        }
    }

    /// The same state renaming, pinning and deleting traces through `editor`
    /// when a request may ([`edits::require_edit`]).
    pub fn with_editor(mut self, editor: crate::store::Editor) -> Self {
        self.edits = edits::Edits::on(editor);
        self
    }

    /// The same state refusing every change (`serve --read-only`).
    pub fn read_only(self) -> Self {
        self.refusing_changes(edits::READ_ONLY)
    }

    /// The same state refusing every change, saying `why`.
    fn refusing_changes(mut self, why: impl Into<String>) -> Self {
        self.edits = edits::Edits::off(why);
        self
    }

    /// The same state serving frames as they were stored, unmasked
    /// (`serve --no-redact`).
    pub fn without_redaction(mut self) -> Self {
        self.redact = false;
        self
    }

    /// What masks the frames this state serves.
    fn redactor(&self) -> crate::redact::Redactor {
        mask::redactor(self.redact)
    }
}

const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>acp-tee</title>
<body style=\"font-family:sans-serif;max-width:40em;margin:4em auto\">
<h1>This acp-tee has no viewer app</h1>
<p>The API works (try <a href=\"/api/traces\">/api/traces</a>), but this binary was built without
the viewer: trunk or the wasm32 target were missing when it was compiled. Install them
(<code>scripts/install-tools viewer</code> in the repository) and build acp-tee again, or pass
<code>--dist DIR</code> with a viewer built by <code>scripts/build-viewer</code>.</p>";

/// The whole application: API routes, token check, static app.
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/traces", get(routes::list_traces))
        .route(
            "/traces/{id}",
            get(routes::one_trace).merge(
                patch(edits::change_trace)
                    .delete(edits::remove_trace)
                    .route_layer(axum::middleware::from_fn_with_state(state.clone(), edits::require_edit))
                    .route_layer(DefaultBodyLimit::max(edits::EDIT_BODY_BYTES)),
            ),
        )
        .route("/capabilities", get(edits::capabilities))
        .route("/traces/{id}/frames", get(routes::frames))
        .route("/traces/{id}/find", get(find::find))
        .route("/traces/{id}/matches", get(find::matches))
        .route("/search", get(find::search))
        .route("/traces/{id}/frames/{seq}", get(routes::frame))
        .route("/traces/{id}/frames/{seq}/raw", get(routes::frame_raw))
        .route("/traces/{id}/stats", get(routes::stats))
        .route("/traces/{id}/family", get(routes::family))
        .route("/traces/{id}/sessions", get(sessions::sessions))
        .route("/traces/{id}/sessions/{sid}", get(sessions::session))
        .route("/traces/{id}/findings", get(findings::findings))
        .route("/traces/{id}/requests", get(requests::requests))
        .route("/traces/{id}/in_flight", get(requests::in_flight))
        .route("/traces/{id}/overview", get(overview::overview))
        .route("/traces/{id}/range", get(range::range))
        .route("/traces/{id}/live", get(routes::live))
        .route("/traces/{id}/export", get(routes::export_trace))
        .route("/diff/{a}/{b}", get(routes::diff))
        .fallback(api_not_found);
    // `/api` and `/api/` themselves are no route of the nested router.
    let router = Router::new().nest("/api", api).route("/api/", any(api_not_found));
    let router = match &state.dist {
        Some(dist) => router.fallback_service(ServeDir::new(dist).fallback(ServeFile::new(dist.join("index.html")))),
        None if assets::present() => router.fallback(assets::serve),
        None => router.fallback(|| async { (StatusCode::SERVICE_UNAVAILABLE, Html(NOT_BUILT)).into_response() }),
    };
    router
        .layer(axum::middleware::from_fn_with_state(state.clone(), sessions::warm_on_page))
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token))
        .with_state(state)
}

/// Any path under `/api` that is not a route: a JSON 404, never the app.
async fn api_not_found() -> AppError {
    AppError::NotFound(
        "no such API route; the routes are listed in docs/viewer.md (`GET /api/traces` lists the traces)".into(),
    )
}

/// What `acp-tee serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The store.
    pub db: PathBuf,
    /// Address to listen on.
    pub bind: IpAddr,
    /// Port (0: any free one).
    pub port: u16,
    /// Token to require; generated when listening beyond loopback without one.
    pub token: Option<String>,
    /// Open a browser on the URL.
    pub open: bool,
    /// A built viewer app to serve instead of the one built into acp-tee.
    pub dist: Option<PathBuf>,
    /// Path (under the URL) to open, e.g. `/traces/3`.
    pub open_path: String,
    /// Serve frames masked as exports are (false: `--no-redact`).
    pub redact: bool,
    /// Refuse every change to the store (`--read-only`).
    pub read_only: bool,
}

/// Serves until Ctrl-C.
pub fn run(opts: ServeOptions) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(serve(opts))
}

async fn serve(opts: ServeOptions) -> anyhow::Result<()> {
    if let Some(t) = &opts.token {
        auth::check_token(t)?;
    }
    let db = Db::open(&opts.db)?;
    let token = match (opts.token.clone(), opts.bind.is_loopback()) {
        (Some(t), _) => Some(t),
        (None, true) => None,
        (None, false) => Some(generate_token().context("cannot generate an access token")?),
    };
    match &opts.dist {
        Some(dist) if !dist.join("index.html").is_file() => anyhow::bail!(
            "no index.html in {}: build the viewer there with scripts/build-viewer, or leave out --dist to \
             serve the app built into acp-tee",
            dist.display()
        ),
        None if !assets::present() => {
            tracing::warn!("this acp-tee was built without the viewer app; serving the API only")
        }
        _ => {}
    }
    let mut state = AppState::new(db, &opts.db, token.clone(), opts.dist.clone());
    if !opts.redact {
        state = state.without_redaction();
    }
    state = match opts.read_only {
        true => state.read_only(),
        false => match crate::store::Editor::open(&opts.db) {
            Ok(editor) => state.with_editor(editor),
            Err(e) => {
                // The viewer still reads; its list says why it cannot change traces.
                tracing::warn!("serving read-only: {e}");
                state.refusing_changes(format!("traces cannot be renamed, pinned or deleted here: {e}"))
            }
        },
    };
    let addr = SocketAddr::new(opts.bind, opts.port);
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}; pass --port"))?;
    let local = listener.local_addr()?;
    let mut url = format!("http://{local}{}", opts.open_path);
    if let Some(t) = &token {
        url.push('?');
        url.push_str(&auth::token_query(t));
    }
    // stdout is free in this mode; scripts read the URL from it.
    println!("acp-tee: serving {} at {url}", opts.db.display());
    if opts.open {
        open_browser(&url);
    }
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

fn open_browser(url: &str) {
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if opened.is_err() {
        tracing::warn!("cannot start a browser (xdg-open); open {url} yourself");
    }
}
