//! The access token required when the server listens beyond loopback.

use super::error::AppError;
use super::AppState;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Name of the cookie that carries the token after the first visit.
pub const COOKIE_NAME: &str = "acp_tee_token";

/// A fresh random token: 32 hex digits from the OS.
pub fn generate_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares in time that depends on the lengths only, not on where the
/// first difference is.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn presented(req: &Request) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(q) = req.uri().query() {
        found.extend(q.split('&').filter_map(|kv| kv.strip_prefix("token=")).map(str::to_owned));
    }
    let headers = req.headers();
    if let Some(bearer) =
        headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
    {
        found.push(bearer.to_owned());
    }
    for cookies in headers.get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()) {
        found.extend(
            cookies.split(';').filter_map(|c| c.trim().strip_prefix(&format!("{COOKIE_NAME}="))).map(str::to_owned),
        );
    }
    found
}

/// Lets a request through when no token is set or it presents the token (as
/// `?token=`, `Authorization: Bearer`, or the cookie set on the first visit).
pub async fn require_token(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(token) = state.token.clone() else { return next.run(req).await };
    let ok = presented(&req).iter().any(|t| constant_time_eq(t.as_bytes(), token.as_bytes()));
    if !ok {
        return AppError::Unauthorized.into_response();
    }
    let mut resp = next.run(req).await;
    let cookie = format!("{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Strict");
    if let Ok(v) = cookie.parse() {
        resp.headers_mut().append(SET_COOKIE, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let t = generate_token().unwrap();
        assert_eq!(t.len(), 32);
        assert_ne!(t, generate_token().unwrap());
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
