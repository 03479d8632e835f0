//! Where the app is: the route from the path, the view (filters, axis, tab, selected frame) from the query.
//!
//! The URL is the single source of truth for what a trace view shows, so that a view can be shared and
//! survives reload; [`Nav`] keeps a signal of it in step with `history` and `popstate`.

use acp_tee_shared::api::FrameQuery;
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;

/// The page a path names.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// `/`: every trace in the store.
    List,
    /// `/traces/{id}`: one trace.
    Trace(i64),
    /// Anything else.
    NotFound(String),
}

impl Route {
    /// The route of a path (`/traces/3`).
    pub fn parse(path: &str) -> Route {
        let trimmed = path.trim_end_matches('/');
        if trimmed.is_empty() || trimmed == "/index.html" {
            return Route::List;
        }
        match trimmed.strip_prefix("/traces/").map(str::parse::<i64>) {
            Some(Ok(id)) => Route::Trace(id),
            _ => Route::NotFound(path.to_owned()),
        }
    }
}

/// The frame filters of a trace view, as in the URL and the API.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filters {
    /// Only this direction.
    pub dir: Option<Direction>,
    /// Only this kind.
    pub kind: Option<FrameKind>,
    /// Only this method.
    pub method: Option<String>,
    /// Only this ACP session.
    pub session: Option<String>,
    /// Only error responses.
    pub errors: bool,
    /// Only responses slower than this.
    pub min_latency_ms: Option<f64>,
    /// Full-text search.
    pub q: Option<String>,
}

impl Filters {
    /// True when no filter is set (every frame shows).
    pub fn is_empty(&self) -> bool {
        *self == Filters::default()
    }

    /// The API query for one window of frames under these filters.
    pub fn frame_query(&self, offset: usize, limit: usize) -> FrameQuery {
        FrameQuery {
            offset: Some(offset as i64),
            limit: Some(limit as i64),
            dir: self.dir,
            kind: self.kind,
            method: self.method.clone(),
            session: self.session.clone(),
            errors: self.errors.then_some(true),
            min_latency_ms: self.min_latency_ms,
            q: self.q.clone(),
            ..FrameQuery::default()
        }
    }

    /// Whether a frame passes, when that can be told without the server: `None` for full-text search and
    /// for batches under the errors filter (their elements are not in the summary).
    pub fn matches(&self, f: &acp_tee_shared::api::FrameSummary) -> Option<bool> {
        if self.q.is_some() || (self.errors && f.kind == FrameKind::Batch) {
            return None;
        }
        let ok = self.dir.is_none_or(|d| d == f.dir)
            && self.kind.is_none_or(|k| k == f.kind)
            && self.method.as_ref().is_none_or(|m| f.method.as_ref() == Some(m))
            && self.session.as_ref().is_none_or(|s| f.session_id.as_ref() == Some(s))
            && (!self.errors || f.kind == FrameKind::Error)
            && self.min_latency_ms.is_none_or(|ms| f.latency_ns.is_some_and(|l| l as f64 > ms * 1e6));
        Some(ok)
    }
}

/// The vertical axis of the diagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Axis {
    /// One row per frame.
    #[default]
    Rows,
    /// Real time, idle gaps folded.
    Time,
}

/// The tab of a trace view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tab {
    /// The sequence diagram.
    #[default]
    Diagram,
    /// Per-method timing, histogram, slowest requests.
    Timing,
}

/// Everything the query string of a trace view says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewQuery {
    /// Which frames show.
    pub filters: Filters,
    /// How the diagram's vertical axis runs.
    pub axis: Axis,
    /// Which tab is open.
    pub tab: Tab,
    /// The selected frame's seq.
    pub frame: Option<i64>,
}

impl ViewQuery {
    /// Reads a query string (`?method=session%2Fprompt&q=hello`); unknown keys and bad values are ignored.
    pub fn parse(search: &str) -> ViewQuery {
        let mut v = ViewQuery::default();
        for pair in search.trim_start_matches('?').split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value);
            let text = (!value.is_empty()).then(|| value.clone());
            let f = &mut v.filters;
            match decode(key).as_str() {
                "dir" => f.dir = value.parse().ok(),
                "kind" => f.kind = value.parse().ok(),
                "method" => f.method = text,
                "session" => f.session = text,
                "errors" => f.errors = value == "true" || value == "1",
                "min_latency_ms" => f.min_latency_ms = value.parse().ok().filter(|ms: &f64| ms.is_finite()),
                "q" => f.q = text.filter(|q| !q.trim().is_empty()),
                "axis" => v.axis = if value == "time" { Axis::Time } else { Axis::Rows },
                "tab" => v.tab = if value == "timing" { Tab::Timing } else { Tab::Diagram },
                "frame" => v.frame = value.parse().ok(),
                _ => {}
            }
        }
        v
    }

    /// The query string (`?...`, or empty when everything is at its default), keys in a fixed order.
    pub fn to_search(&self) -> String {
        let f = &self.filters;
        let pairs: [(&str, Option<String>); 10] = [
            ("dir", f.dir.map(|d| d.as_str().to_owned())),
            ("kind", f.kind.map(|k| k.as_str().to_owned())),
            ("method", f.method.clone()),
            ("session", f.session.clone()),
            ("errors", f.errors.then(|| "true".to_owned())),
            ("min_latency_ms", f.min_latency_ms.map(|ms| ms.to_string())),
            ("q", f.q.clone()),
            ("axis", (self.axis == Axis::Time).then(|| "time".to_owned())),
            ("tab", (self.tab == Tab::Timing).then(|| "timing".to_owned())),
            ("frame", self.frame.map(|s| s.to_string())),
        ];
        let parts: Vec<String> =
            pairs.into_iter().filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(&v)))).collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// Percent-encodes a query component (everything but unreserved characters).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes a query component (`%XX` and `+` for space); bad escapes are kept as written.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(hi * 16 + lo);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The browser location the app shows: path and query string.
#[derive(Clone, Debug, PartialEq)]
pub struct Loc {
    /// `/traces/3`.
    pub path: String,
    /// `?q=hello`, or empty.
    pub search: String,
}

/// Navigation: a signal of the location kept in step with the browser's history.
#[derive(Clone, Copy)]
pub struct Nav {
    loc: RwSignal<Loc>,
}

impl Nav {
    /// Reads the current location and follows back/forward.
    pub fn install() -> Nav {
        let nav = Nav { loc: RwSignal::new(browser_loc()) };
        let handle = window_event_listener(leptos::ev::popstate, move |_| nav.loc.set(browser_loc()));
        // The listener lives as long as the app; the handle is leaked on purpose.
        std::mem::forget(handle);
        nav
    }

    /// The current route (tracked).
    pub fn route(&self) -> Route {
        self.loc.with(|l| Route::parse(&l.path))
    }

    /// The current view query (tracked).
    pub fn query(&self) -> ViewQuery {
        self.loc.with(|l| ViewQuery::parse(&l.search))
    }

    /// Goes to a path within the app, adding a history entry.
    pub fn go(&self, path: &str) {
        let loc = match path.split_once('?') {
            Some((p, s)) => Loc { path: p.to_owned(), search: format!("?{s}") },
            None => Loc { path: path.to_owned(), search: String::new() },
        };
        self.set(loc, true);
    }

    /// Changes the view query of the current page: a new history entry when `push`, else in place.
    pub fn update_query(&self, push: bool, change: impl FnOnce(&mut ViewQuery)) {
        let mut q = self.loc.with_untracked(|l| ViewQuery::parse(&l.search));
        change(&mut q);
        let path = self.loc.with_untracked(|l| l.path.clone());
        self.set(Loc { path, search: q.to_search() }, push);
    }

    fn set(&self, loc: Loc, push: bool) {
        if self.loc.with_untracked(|l| *l == loc) {
            return;
        }
        let url = format!("{}{}", loc.path, loc.search);
        if let Ok(history) = window().history() {
            let result = if push {
                history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url))
            } else {
                history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url))
            };
            if result.is_err() {
                leptos::logging::warn!("cannot change the address to {url}");
            }
        }
        self.loc.set(loc);
    }
}

fn browser_loc() -> Loc {
    let location = window().location();
    Loc { path: location.pathname().unwrap_or_default(), search: location.search().unwrap_or_default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_query_round_trips_through_the_url() {
        let search = "?method=session%2Fprompt&errors=true&q=hello%20world&axis=time&tab=timing&frame=12";
        let v = ViewQuery::parse(search);
        assert_eq!(v.filters.method.as_deref(), Some("session/prompt"));
        assert_eq!(v.filters.q.as_deref(), Some("hello world"));
        assert!(v.filters.errors);
        assert_eq!((v.axis, v.tab, v.frame), (Axis::Time, Tab::Timing, Some(12)));
        assert_eq!(v.to_search(), search);
        assert_eq!(ViewQuery::parse("?dir=sideways&frame=x&q=").to_search(), "");
        assert_eq!(decode("a+b%2"), "a b%2");
    }

    #[test]
    fn routes() {
        assert_eq!(Route::parse("/"), Route::List);
        assert_eq!(Route::parse("/traces/7"), Route::Trace(7));
        assert_eq!(Route::parse("/traces/x"), Route::NotFound("/traces/x".into()));
    }
}
