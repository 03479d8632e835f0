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

/// The fewest characters a token given with `--token` may have (a
/// generated one has 32 hex digits).
pub const MIN_TOKEN_CHARS: usize = 16;

/// Why a token given with `--token` is refused.
#[derive(Debug, thiserror::Error)]
pub enum WeakToken {
    /// Too short (empty included).
    #[error("--token must be at least {MIN_TOKEN_CHARS} characters (this one has {0}); pass a longer one, or leave --token out to have one generated")]
    Short(usize),
    /// Holds a control character, which no header or cookie can carry.
    #[error("--token must not contain control characters (tabs, newlines, ...); pass another one, or leave --token out to have one generated")]
    Control,
}

/// Checks a token given with `--token`.
pub fn check_token(token: &str) -> Result<(), WeakToken> {
    let chars = token.chars().count();
    if chars < MIN_TOKEN_CHARS {
        return Err(WeakToken::Short(chars));
    }
    if token.chars().any(char::is_control) {
        return Err(WeakToken::Control);
    }
    Ok(())
}

/// `token=TOKEN` encoded for a URL's query (`&`, `+`, `%`, `#`, spaces ...
/// escaped), as the query is read back.
pub fn token_query(token: &str) -> String {
    form_urlencoded::Serializer::new(String::new()).append_pair("token", token).finish()
}

/// Characters of a token escaped in the cookie (all but letters and digits).
const COOKIE_ESCAPED: &percent_encoding::AsciiSet = percent_encoding::NON_ALPHANUMERIC;

/// Compares in time that depends on the lengths only, not on where the
/// first difference is.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The tokens `req` presents (query, bearer header, cookie).
pub(super) fn presented(req: &Request) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(q) = req.uri().query() {
        // Decoded as forms are (`%XX`, `+` for a space): the printed URL
        // and any other correct encoding of the token get in.
        found.extend(form_urlencoded::parse(q.as_bytes()).filter(|(k, _)| k == "token").map(|(_, v)| v.into_owned()));
    }
    let headers = req.headers();
    // The header's bytes as UTF-8: a token may hold any printable character.
    if let Some(bearer) = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .and_then(|b| std::str::from_utf8(b).ok())
    {
        found.push(bearer.to_owned());
    }
    for cookies in headers.get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()) {
        found.extend(
            cookies
                .split(';')
                .filter_map(|c| c.trim().strip_prefix(&format!("{COOKIE_NAME}=")))
                .map(|v| percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned()),
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
    let value = percent_encoding::utf8_percent_encode(&token, COOKIE_ESCAPED);
    let cookie = format!("{COOKIE_NAME}={value}; Path=/; HttpOnly; SameSite=Strict");
    if let Ok(v) = cookie.parse() {
        resp.headers_mut().append(SET_COOKIE, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_tokens_are_refused_and_others_encoded() {
        assert!(matches!(check_token(""), Err(WeakToken::Short(0))));
        assert!(matches!(check_token("ééééééééééééééé"), Err(WeakToken::Short(15))));
        assert!(matches!(check_token("a-long-token\nwith-a-newline"), Err(WeakToken::Control)));
        check_token(&generate_token().unwrap()).unwrap();
        check_token("a+b&c=d%41 #x and more").unwrap();
        assert_eq!(token_query("a+b&c=d%41 #x"), "token=a%2Bb%26c%3Dd%2541+%23x");
        let query = token_query("a+b&c=d%41 #x");
        let back: Vec<_> = form_urlencoded::parse(query.as_bytes()).collect();
        assert_eq!(back, [("token".into(), "a+b&c=d%41 #x".into())]);
    }

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
