//! The viewer app built into the binary: `dist/` as it was when acp-tee was
//! compiled (build.rs builds it first when it can). Release builds carry
//! the files; debug builds read them from the source tree's `dist/` when
//! asked (rust-embed's own behaviour), so a rebuilt app needs no recompile
//! while developing.

use axum::body::Body;
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;

#[derive(Embed)]
#[folder = "../dist/"]
#[allow_missing = true]
struct Dist;

/// Whether this binary carries the viewer app.
pub fn present() -> bool {
    Dist::get("index.html").is_some()
}

/// The file at `uri`'s path, or `index.html` for the app's own routes
/// (`/traces/3`): any path that names no file.
pub async fn serve(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let (name, file) = match Dist::get(path).filter(|_| !path.is_empty()) {
        Some(file) => (path, file),
        None => match Dist::get("index.html") {
            Some(index) => ("index.html", index),
            None => return StatusCode::NOT_FOUND.into_response(),
        },
    };
    // trunk names its wasm, JavaScript and CSS by content hash: those never
    // change; index.html names them, so it is checked every time.
    let cache = if name == "index.html" { "no-cache" } else { "public, max-age=31536000, immutable" };
    (
        [(header::CONTENT_TYPE, file.metadata.mimetype().to_owned()), (header::CACHE_CONTROL, cache.to_owned())],
        Body::from(file.data.into_owned()),
    )
        .into_response()
}
