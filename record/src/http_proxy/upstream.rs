//! The `--upstream` URL: where requests go, the credentials it carries, and
//! how it is shown.
//!
//! A URL's userinfo (`http://alice:secret@host/acp`) is what a user means as
//! the upstream's credentials: it is sent as `Authorization: Basic` (unless
//! the client sends an `Authorization` of its own) and never shown. The
//! URL is shown (in the trace's command, the proxy's notes and its error
//! answers to clients) without userinfo and with the values of query
//! parameters named like secrets (`token`, `api_key`, ...) masked.

use crate::redact::{looks_secret, MASK};
use anyhow::Context as _;
use axum::http::{HeaderValue, Uri};
use base64::Engine as _;

/// The upstream endpoint, parsed.
#[derive(Debug, Clone)]
pub struct UpstreamUrl {
    /// `http`/`https`, the host and port, the path and the configured query.
    pub uri: Uri,
    /// `Authorization: Basic` from the URL's userinfo, when it had one.
    pub basic: Option<HeaderValue>,
    /// The URL as shown: no userinfo, secret query values masked.
    pub shown: String,
}

impl UpstreamUrl {
    /// Parses `--upstream` (`http://`, `https://`, `ws://` or `wss://`).
    pub fn parse(text: &str) -> anyhow::Result<UpstreamUrl> {
        // Said without the text itself: it may hold credentials.
        let uri: Uri = text.parse().context("--upstream is not a URL; pass http://HOST:PORT/acp")?;
        let scheme = match uri.scheme_str() {
            Some("http" | "ws") => "http",
            Some("https" | "wss") => "https",
            _ => anyhow::bail!("--upstream must start with http://, https://, ws:// or wss://"),
        };
        let authority = uri.authority().context("--upstream names no host")?;
        let (userinfo, host_port) = match authority.as_str().rsplit_once('@') {
            Some((userinfo, host_port)) => (Some(userinfo), host_port),
            None => (None, authority.as_str()),
        };
        anyhow::ensure!(!host_port.is_empty(), "--upstream names no host");
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let basic = userinfo.map(|u| {
            let decoded: Vec<u8> = percent_encoding::percent_decode_str(u).collect();
            let token = base64::engine::general_purpose::STANDARD.encode(decoded);
            let mut value = HeaderValue::from_str(&format!("Basic {token}")).expect("base64 is a header value");
            value.set_sensitive(true);
            value
        });
        let shown_scheme = uri.scheme_str().unwrap_or(scheme);
        let shown_user = if userinfo.is_some() { format!("{MASK}@") } else { String::new() };
        let shown = format!("{shown_scheme}://{shown_user}{host_port}{}", shown_path(uri.path(), uri.query()));
        let uri = Uri::builder().scheme(scheme).authority(host_port).path_and_query(path).build()?;
        Ok(UpstreamUrl { uri, basic, shown })
    }

    /// The upstream URI for a request whose own query is `query`: the
    /// configured query stays as it is, and the client's parameters follow,
    /// but for those the configured query names (the client cannot
    /// replace a token the proxy was given).
    pub fn with_query(&self, query: Option<&str>) -> Uri {
        let Some(query) = query.filter(|q| !q.is_empty()) else { return self.uri.clone() };
        let configured = self.uri.query().unwrap_or("");
        let named: Vec<&str> = configured.split('&').filter_map(|p| p.split('=').next()).collect();
        let theirs: Vec<&str> =
            query.split('&').filter(|p| !named.contains(&p.split('=').next().unwrap_or(""))).collect();
        let merged: Vec<&str> = [configured].into_iter().filter(|c| !c.is_empty()).chain(theirs).collect();
        let path = self.uri.path();
        let path_and_query = if merged.is_empty() { path.to_owned() } else { format!("{path}?{}", merged.join("&")) };
        let mut builder = Uri::builder().path_and_query(path_and_query);
        if let (Some(scheme), Some(authority)) = (self.uri.scheme(), self.uri.authority()) {
            builder = builder.scheme(scheme.clone()).authority(authority.clone());
        }
        builder.build().unwrap_or_else(|_| self.uri.clone())
    }
}

/// `path` and `query` as shown: each value of a parameter named like a
/// secret masked.
fn shown_path(path: &str, query: Option<&str>) -> String {
    let Some(query) = query else { return path.to_owned() };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((name, _)) if looks_secret(name) => format!("{name}={MASK}"),
            _ => p.to_owned(),
        })
        .collect();
    format!("{path}?{}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_becomes_basic_and_secrets_are_never_shown() {
        let u = UpstreamUrl::parse("http://alice:S%40CRET@127.0.0.1:9/acp?token=Q1&x=1").unwrap();
        assert_eq!(u.uri.to_string(), "http://127.0.0.1:9/acp?token=Q1&x=1");
        let basic = base64::engine::general_purpose::STANDARD.encode("alice:S@CRET");
        assert_eq!(u.basic.unwrap().to_str().unwrap(), format!("Basic {basic}"));
        assert_eq!(u.shown, "http://[REDACTED]@127.0.0.1:9/acp?token=[REDACTED]&x=1");
        assert!(!u.shown.contains("Q1") && !u.shown.contains("CRET"));
    }

    #[test]
    fn the_configured_query_stays_and_the_clients_follows() {
        let u = UpstreamUrl::parse("ws://h:1/acp?token=T").unwrap();
        assert_eq!(u.with_query(Some("x=1")).to_string(), "http://h:1/acp?token=T&x=1");
        assert_eq!(u.with_query(Some("token=other&y=2")).to_string(), "http://h:1/acp?token=T&y=2");
        assert_eq!(u.with_query(None).to_string(), "http://h:1/acp?token=T");
        let plain = UpstreamUrl::parse("https://h/acp").unwrap();
        assert_eq!(plain.with_query(Some("a=b")).to_string(), "https://h/acp?a=b");
    }

    #[test]
    fn upstream_urls_are_http_or_https() {
        assert_eq!(UpstreamUrl::parse("ws://127.0.0.1:9/acp").unwrap().uri.to_string(), "http://127.0.0.1:9/acp");
        assert_eq!(UpstreamUrl::parse("wss://h/acp?x=1").unwrap().uri.to_string(), "https://h/acp?x=1");
        assert!(UpstreamUrl::parse("ftp://h/").unwrap_err().to_string().contains("must start with http://"));
        assert!(UpstreamUrl::parse("not a url").is_err());
    }
}
