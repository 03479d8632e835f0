//! What a trace view shows, as its URL query says: filters, axis, tab, selected frame (or picked frame of
//! an MCP lane), timing method, and the Session tab's session and turn.
//!
//! The URL is the single source of truth for a trace view, so that a view can be shared and survives a
//! reload. [`ViewUrl`] reads the router's query and writes it back through the router's navigation; this
//! module only turns query pairs into typed values and back, and never encodes anything itself.
//!
//! A value the view cannot use (`min_latency_ms=abc`, `dir=sideways`) is kept in the URL and reported in
//! [`ViewQuery::rejected`], so the page can say it is ignored rather than drop it silently.

use acp_tee_shared::api::{FrameQuery, FrameSummary, RequestSort};
use acp_tee_shared::check::Severity;
use acp_tee_shared::{Direction, FrameKind};
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_navigate};
use leptos_router::location::Url;
use leptos_router::params::ParamsMap;
use leptos_router::NavigateOptions;
use std::rc::Rc;

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
    /// Only frames from this seq on (a range filtered to: `from`).
    pub from: Option<i64>,
    /// Only frames up to this seq (`to`).
    pub to: Option<i64>,
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
            from: self.from,
            to: self.to,
            ..FrameQuery::default()
        }
    }

    /// Whether a frame passes, when that can be told without the server: `None` for full-text search and
    /// for batches under the errors filter (their elements are not in the summary).
    pub fn matches(&self, f: &FrameSummary) -> Option<bool> {
        if self.q.is_some() || (self.errors && f.kind == FrameKind::Batch) {
            return None;
        }
        let ok = self.dir.is_none_or(|d| d == f.dir)
            && self.kind.is_none_or(|k| k == f.kind)
            && self.method.as_ref().is_none_or(|m| f.method.as_ref() == Some(m))
            && self.session.as_ref().is_none_or(|s| f.session_id.as_ref() == Some(s))
            && (!self.errors || f.kind == FrameKind::Error)
            && self.min_latency_ms.is_none_or(|ms| f.latency_ns.is_some_and(|l| l as f64 > ms * 1e6))
            && self.from.is_none_or(|from| f.seq >= from)
            && self.to.is_none_or(|to| f.seq <= to);
        Some(ok)
    }
}

/// The vertical axis of the diagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Axis {
    /// One row per frame.
    #[default]
    Rows,
    /// Real time, compressed: short gaps stretch the space between rows, long idle gaps are folded.
    Time,
    /// Real time, proportional: the space between rows is the gap at the chosen scale.
    Linear,
}

/// The tab of a trace view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tab {
    /// The sequence diagram.
    #[default]
    Diagram,
    /// Per-method timing, histogram, slowest requests.
    Timing,
    /// The ACP sessions: turns as a conversation, tool calls, waits, open requests.
    Session,
    /// What the protocol checks found (`/api/traces/{id}/findings`).
    Findings,
    /// One row per JSON-RPC request, sortable and paged (`/api/traces/{id}/requests`).
    Requests,
}

/// A query value the view cannot use, kept so the page can say so.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// The query key (`min_latency_ms`).
    pub key: &'static str,
    /// The value as written.
    pub value: String,
    /// What would have been accepted.
    pub expected: &'static str,
}

/// Everything the query string of a trace view says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewQuery {
    /// Which frames show.
    pub filters: Filters,
    /// Words to find among the frames shown (`find`): every frame stays drawn, the matches are marked and
    /// stepped through. Not a filter.
    pub find: Option<String>,
    /// How the diagram's vertical axis runs.
    pub axis: Axis,
    /// Milliseconds per 100 px on the proportional axis (`None`: the default scale).
    pub scale: Option<f64>,
    /// Runs of streamed chunks drawn as one row each (`collapse=chunks`).
    pub collapse: bool,
    /// Which tab is open.
    pub tab: Tab,
    /// The selected frame's seq.
    pub frame: Option<i64>,
    /// The method whose histogram the Timing tab shows (all methods when `None`).
    pub timing_method: Option<String>,
    /// The session the Session tab shows (the trace's first when `None`).
    pub sid: Option<String>,
    /// The turn the Session tab shows, numbered from 1 as it is shown: its page, scrolled to it (the
    /// first page when `None`).
    pub turn: Option<u64>,
    /// The Findings tab shows only this code.
    pub finding_code: Option<String>,
    /// The Findings tab shows only findings this severe or worse.
    pub finding_severity: Option<Severity>,
    /// The MCP child trace of the picked MCP frame (see [`ViewQuery::mcp_pick`]).
    pub mcp_trace: Option<i64>,
    /// The picked MCP frame's seq in that trace.
    pub mcp_frame: Option<i64>,
    /// The column the Requests tab sorts by (`req_sort`).
    pub req_sort: RequestSort,
    /// The Requests tab sorts largest first (`req_order=desc`).
    pub req_desc: bool,
    /// The Requests tab's page, numbered from 1 (`req_page`; the first when `None`).
    pub req_page: Option<u64>,
    /// A replay's cursor: the view shows the trace as it was when this frame had just arrived (`replay`).
    pub replay: Option<i64>,
    /// The replay's speed (`speed`): one of [`SPEEDS`] (1x when `None`).
    pub speed: Option<u32>,
    /// The range selected with the range tools, first and last seq (`sel=A-B`).
    pub sel: Option<(i64, i64)>,
    /// Values present in the URL that the view ignores, in key order.
    pub rejected: Vec<Rejected>,
}

/// The speeds a replay plays at: times the trace's own pace.
pub const SPEEDS: [u32; 4] = [1, 2, 4, 10];

/// The last seq a page of frames may hold: the end of a range filter and a replay's cursor, whichever is
/// smaller (the frame query's `to`).
pub fn last_seq_shown(range_to: Option<i64>, replay: Option<i64>) -> Option<i64> {
    match (range_to, replay) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Query keys a trace view reads, in the order it writes them.
pub const KEYS: [&str; 28] = [
    "dir",
    "kind",
    "method",
    "session",
    "errors",
    "min_latency_ms",
    "q",
    "find",
    "from",
    "to",
    "axis",
    "scale",
    "collapse",
    "tab",
    "frame",
    "timing_method",
    "sid",
    "turn",
    "finding_code",
    "finding_severity",
    "mcp_trace",
    "mcp_frame",
    "req_sort",
    "req_order",
    "req_page",
    "replay",
    "speed",
    "sel",
];

fn text(value: &str) -> Option<String> {
    (!value.trim().is_empty()).then(|| value.to_owned())
}

impl ViewQuery {
    /// Reads query pairs (already decoded); unknown keys are ignored, bad values are kept as rejected.
    pub fn from_pairs<'a>(get: impl Fn(&str) -> Option<&'a str>) -> ViewQuery {
        let mut v = ViewQuery::default();
        for key in KEYS {
            let Some(value) = get(key) else { continue };
            if let Err(expected) = v.read(key, value) {
                v.rejected.push(Rejected { key, value: value.to_owned(), expected });
            }
        }
        v
    }

    /// Sets the field of one key from its text; `Err` says what would have been accepted.
    fn read(&mut self, key: &str, value: &str) -> Result<(), &'static str> {
        let f = &mut self.filters;
        let empty = value.trim().is_empty();
        match key {
            "dir" if empty => {}
            "dir" => f.dir = Some(value.parse().map_err(|_| "client_to_agent, agent_to_client or agent_stderr")?),
            "kind" if empty => {}
            "kind" => f.kind = Some(value.parse().map_err(|_| "a frame kind (request, response, error, ...)")?),
            "method" => f.method = text(value),
            "session" => f.session = text(value).map(|s| s.trim().to_owned()),
            "q" => f.q = text(value).map(|s| s.trim().to_owned()),
            "find" => self.find = text(value).map(|s| s.trim().to_owned()),
            "errors" => {
                f.errors = match value {
                    "true" | "1" => true,
                    "" | "false" | "0" => false,
                    _ => return Err("true or false"),
                }
            }
            "from" | "to" | "sel" if empty => {}
            "from" => f.from = Some(positive(value).ok_or("a frame number")?),
            "to" => {
                let to = positive(value).filter(|to| f.from.is_none_or(|from| from <= *to));
                f.to = Some(to.ok_or("a frame number, not before from")?)
            }
            "sel" => self.sel = Some(parse_sel(value).ok_or("two frame numbers, first-last")?),
            "min_latency_ms" if empty => {}
            "min_latency_ms" => f.min_latency_ms = Some(parse_ms(value).ok_or("a number of milliseconds, 0 or more")?),
            "axis" => {
                self.axis = match value {
                    "" | "rows" => Axis::Rows,
                    "time" => Axis::Time,
                    "linear" => Axis::Linear,
                    _ => return Err("rows, time or linear"),
                }
            }
            "scale" if empty => {}
            "scale" => {
                self.scale = Some(parse_ms(value).filter(|s| *s > 0.0).ok_or("milliseconds per 100 px, above 0")?)
            }
            "collapse" => {
                self.collapse = match value {
                    "chunks" => true,
                    "" => false,
                    _ => return Err("chunks"),
                }
            }
            "tab" => {
                self.tab = match value {
                    "" | "diagram" => Tab::Diagram,
                    "timing" => Tab::Timing,
                    "session" => Tab::Session,
                    "findings" => Tab::Findings,
                    "requests" => Tab::Requests,
                    _ => return Err("diagram, timing, session, findings or requests"),
                }
            }
            "frame" if empty => {}
            "frame" => self.frame = Some(positive(value).ok_or("a frame number")?),
            "timing_method" => self.timing_method = text(value),
            "sid" => self.sid = text(value),
            "finding_code" => self.finding_code = text(value).map(|s| s.trim().to_owned()),
            "finding_severity" if empty => {}
            "finding_severity" => {
                self.finding_severity = Some(value.trim().parse().map_err(|_| "info, warning or error")?)
            }
            "mcp_trace" | "mcp_frame" if empty => {}
            "mcp_trace" => self.mcp_trace = Some(positive(value).ok_or("a trace id")?),
            "mcp_frame" => self.mcp_frame = Some(positive(value).ok_or("a frame number")?),
            "req_sort" if empty => {}
            "req_sort" => {
                self.req_sort =
                    RequestSort::parse(value.trim()).ok_or("seq, method, id, dir, status, latency, size or session")?
            }
            "req_order" => {
                self.req_desc = match value.trim() {
                    "" | "asc" => false,
                    "desc" => true,
                    _ => return Err("asc or desc"),
                }
            }
            "req_page" if empty => {}
            "req_page" => {
                self.req_page =
                    Some(value.trim().parse().ok().filter(|p: &u64| *p > 0).ok_or("a page number, 1 or more")?)
            }
            "replay" if empty => {}
            "replay" => self.replay = Some(positive(value).ok_or("a frame number")?),
            "speed" if empty => {}
            "speed" => {
                self.speed = Some(
                    value
                        .trim()
                        .parse()
                        .ok()
                        .filter(|s| SPEEDS.contains(s))
                        .ok_or("1, 2, 4 or 10 (times real time)")?,
                )
            }
            "turn" if empty => {}
            "turn" => {
                self.turn = Some(value.trim().parse().ok().filter(|t: &u64| *t > 0).ok_or("a turn number, 1 or more")?)
            }
            _ => {}
        }
        Ok(())
    }

    /// The query pairs of this view, keys in [`KEYS`] order, defaults left out; a rejected value stays in
    /// place of its key until something sets that key.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let f = &self.filters;
        let mut pairs: Vec<(&'static str, String)> = Vec::new();
        for key in KEYS {
            if let Some(r) = self.rejected.iter().find(|r| r.key == key) {
                pairs.push((key, r.value.clone()));
                continue;
            }
            let value = match key {
                "dir" => f.dir.map(|d| d.as_str().to_owned()),
                "kind" => f.kind.map(|k| k.as_str().to_owned()),
                "method" => f.method.clone(),
                "session" => f.session.clone(),
                "errors" => f.errors.then(|| "true".to_owned()),
                "min_latency_ms" => f.min_latency_ms.map(|ms| ms.to_string()),
                "q" => f.q.clone(),
                "find" => self.find.clone(),
                "from" => f.from.map(|s| s.to_string()),
                "to" => f.to.map(|s| s.to_string()),
                "axis" => match self.axis {
                    Axis::Rows => None,
                    Axis::Time => Some("time".to_owned()),
                    Axis::Linear => Some("linear".to_owned()),
                },
                "scale" => self.scale.map(|s| s.to_string()),
                "collapse" => self.collapse.then(|| "chunks".to_owned()),
                "tab" => match self.tab {
                    Tab::Diagram => None,
                    Tab::Timing => Some("timing".to_owned()),
                    Tab::Session => Some("session".to_owned()),
                    Tab::Findings => Some("findings".to_owned()),
                    Tab::Requests => Some("requests".to_owned()),
                },
                "frame" => self.frame.map(|s| s.to_string()),
                "timing_method" => self.timing_method.clone(),
                "sid" => self.sid.clone(),
                "turn" => self.turn.map(|t| t.to_string()),
                "finding_code" => self.finding_code.clone(),
                "finding_severity" => self.finding_severity.map(|s| s.as_str().to_owned()),
                "mcp_trace" => self.mcp_pick().map(|(t, _)| t.to_string()),
                "mcp_frame" => self.mcp_pick().map(|(_, s)| s.to_string()),
                "req_sort" => (self.req_sort != RequestSort::Seq).then(|| self.req_sort.as_str().to_owned()),
                "req_order" => self.req_desc.then(|| "desc".to_owned()),
                "req_page" => self.req_page.filter(|p| *p > 1).map(|p| p.to_string()),
                "replay" => self.replay.map(|s| s.to_string()),
                "speed" => self.speed.filter(|s| *s != SPEEDS[0]).map(|s| s.to_string()),
                "sel" => self.sel.map(|(a, b)| format!("{a}-{b}")),
                _ => None,
            };
            if let Some(v) = value {
                pairs.push((key, v));
            }
        }
        pairs
    }

    /// The picked frame of an MCP child trace (a lane of the diagram), as (trace, seq): both keys given and
    /// no frame of this trace selected (selecting one drops the pick).
    pub fn mcp_pick(&self) -> Option<(i64, i64)> {
        self.mcp_trace.zip(self.mcp_frame).filter(|_| self.frame.is_none())
    }

    /// Picks a frame of an MCP child trace, or nothing (`None`); either way no frame of this trace stays
    /// selected.
    pub fn pick_mcp(&mut self, pick: Option<(i64, i64)>) {
        for key in ["frame", "mcp_trace", "mcp_frame"] {
            self.accept(key);
        }
        self.frame = None;
        (self.mcp_trace, self.mcp_frame) = (pick.map(|p| p.0), pick.map(|p| p.1));
    }

    /// The replay's speed, times the trace's own pace.
    pub fn play_speed(&self) -> u32 {
        self.speed.unwrap_or(SPEEDS[0])
    }

    /// Drops the rejected value of a key (its field is being set).
    pub fn accept(&mut self, key: &str) {
        self.rejected.retain(|r| r.key != key);
    }

    /// Sets one key from text typed by the user: a bad value is kept as rejected and its field cleared.
    pub fn set_typed(&mut self, key: &'static str, value: &str) {
        self.accept(key);
        let mut probe = self.clone();
        match probe.read(key, value) {
            Ok(()) => *self = probe,
            Err(expected) => {
                match key {
                    "min_latency_ms" => self.filters.min_latency_ms = None,
                    "scale" => self.scale = None,
                    _ => {}
                }
                self.rejected.push(Rejected { key, value: value.to_owned(), expected });
            }
        }
    }

    /// The rejected value of a key, if any.
    pub fn rejected(&self, key: &str) -> Option<&Rejected> {
        self.rejected.iter().find(|r| r.key == key)
    }
}

/// A number above 0 (a frame or trace id).
fn positive(value: &str) -> Option<i64> {
    value.trim().parse().ok().filter(|s: &i64| *s > 0)
}

/// A range of seqs written `A-B`, first not past last.
fn parse_sel(value: &str) -> Option<(i64, i64)> {
    let (a, b) = value.trim().split_once('-')?;
    let (a, b) = (positive(a)?, positive(b)?);
    (a <= b).then_some((a, b))
}

/// A non-negative, finite number of milliseconds.
fn parse_ms(value: &str) -> Option<f64> {
    value.trim().parse::<f64>().ok().filter(|ms| ms.is_finite() && *ms >= 0.0)
}

/// The router's navigation, kept where event handlers can reach it.
type Navigate = Rc<dyn Fn(&str, NavigateOptions)>;

/// A trace view's URL: the router's location read as a [`ViewQuery`], and changes written back through the
/// router's navigation (a history entry when asked, else in place).
#[derive(Clone, Copy)]
pub struct ViewUrl {
    /// The view the URL describes (tracked).
    pub query: Memo<ViewQuery>,
    path: Memo<String>,
    navigate: StoredValue<Navigate, LocalStorage>,
}

impl ViewUrl {
    /// The URL of the current route; call inside the router.
    ///
    /// The query is read from the router's raw `search` through the browser's `URLSearchParams` rather than
    /// from `use_query_map`: leptos_router 0.8 decodes query values twice (a search for `%41` would become
    /// `A`; fixed upstream for 0.9).
    pub fn new() -> ViewUrl {
        let location = use_location();
        let search = location.search;
        let query = Memo::new(move |_| {
            search.with(|s| match web_sys::UrlSearchParams::new_with_str(s) {
                Ok(params) => {
                    let values: Vec<(&str, Option<String>)> = KEYS.iter().map(|k| (*k, params.get(k))).collect();
                    ViewQuery::from_pairs(|key| values.iter().find(|(k, _)| *k == key).and_then(|(_, v)| v.as_deref()))
                }
                Err(_) => ViewQuery::default(),
            })
        });
        let navigate = use_navigate();
        ViewUrl { query, path: location.pathname, navigate: StoredValue::new_local(Rc::new(navigate)) }
    }

    /// Changes the view: a new history entry when `push`, else the current entry is replaced.
    pub fn update(&self, push: bool, change: impl FnOnce(&mut ViewQuery)) {
        let mut q = self.query.get_untracked();
        let before = q.clone();
        change(&mut q);
        if q == before {
            return;
        }
        let url = self.url_of(&q);
        let options = NavigateOptions { replace: !push, scroll: false, ..NavigateOptions::default() };
        self.navigate.with_value(|nav| nav(&url, options));
    }

    /// The address of the view this one would become after `change`, for a link (tracked).
    pub fn href(&self, change: impl FnOnce(&mut ViewQuery)) -> String {
        let mut q = self.query.get();
        change(&mut q);
        self.url_of(&q)
    }

    fn url_of(&self, q: &ViewQuery) -> String {
        let mut map = ParamsMap::new();
        for (key, value) in q.to_pairs() {
            // `ParamsMap::insert` decodes what it is given; escaping first keeps the value as it is.
            map.insert(key, Url::escape(&value));
        }
        format!("{}{}", self.path.get_untracked(), map.to_query_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> ViewQuery {
        ViewQuery::from_pairs(|key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v))
    }

    #[test]
    fn view_query_round_trips_through_pairs() {
        let pairs = [
            ("method", "session/prompt"),
            ("errors", "true"),
            ("q", "hello world"),
            ("find", "zebra"),
            ("axis", "time"),
            ("collapse", "chunks"),
            ("tab", "timing"),
            ("frame", "12"),
            ("sid", "sess 1"),
            ("turn", "51"),
        ];
        let v = parse(&pairs);
        assert_eq!(v.filters.method.as_deref(), Some("session/prompt"));
        assert_eq!((v.filters.q.as_deref(), v.find.as_deref()), (Some("hello world"), Some("zebra")));
        assert!(v.filters.errors && v.rejected.is_empty());
        assert_eq!((v.axis, v.tab, v.frame, v.collapse), (Axis::Time, Tab::Timing, Some(12), true));
        assert_eq!((v.sid.as_deref(), v.turn), (Some("sess 1"), Some(51)));
        let back: Vec<(&str, String)> = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(v.to_pairs(), back);
    }

    #[test]
    fn the_requests_tabs_sort_order_and_page_round_trip() {
        let pairs = [("tab", "requests"), ("req_sort", "latency"), ("req_order", "desc"), ("req_page", "3")];
        let v = parse(&pairs);
        assert_eq!((v.tab, v.req_sort, v.req_desc, v.req_page), (Tab::Requests, RequestSort::Latency, true, Some(3)));
        let back: Vec<(&str, String)> = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(v.to_pairs(), back);
        let bad = parse(&[("req_sort", "speed"), ("req_order", "up"), ("req_page", "0")]);
        let keys: Vec<&str> = bad.rejected.iter().map(|r| r.key).collect();
        assert_eq!(keys, ["req_sort", "req_order", "req_page"]);
        assert_eq!((bad.req_sort, bad.req_desc, bad.req_page), (RequestSort::Seq, false, None));
    }

    #[test]
    fn a_range_filter_and_a_selection_round_trip_and_bad_ones_are_rejected() {
        let pairs = [("from", "10"), ("to", "20"), ("sel", "12-15")];
        let v = parse(&pairs);
        assert_eq!((v.filters.from, v.filters.to, v.sel), (Some(10), Some(20), Some((12, 15))));
        let back: Vec<(&str, String)> = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(v.to_pairs(), back);
        let q = v.filters.frame_query(0, 5);
        assert_eq!((q.from, q.to), (Some(10), Some(20)));
        let at = |seq| summary(seq);
        assert_eq!(
            [9, 10, 20, 21].map(|s| v.filters.matches(&at(s))),
            [Some(false), Some(true), Some(true), Some(false)]
        );
        let bad = parse(&[("from", "9"), ("to", "3"), ("sel", "5-2")]);
        let keys: Vec<&str> = bad.rejected.iter().map(|r| r.key).collect();
        assert_eq!(keys, ["to", "sel"]);
        assert_eq!((bad.filters.from, bad.filters.to, bad.sel), (Some(9), None, None));
        for junk in ["0-3", "3", "a-b", "-2-4"] {
            assert_eq!(parse(&[("sel", junk)]).rejected.len(), 1, "{junk}");
        }
    }

    fn summary(seq: i64) -> FrameSummary {
        crate::state::testing::summary(seq, seq, Direction::ClientToAgent, FrameKind::Notification)
    }

    #[test]
    fn an_mcp_pick_needs_both_keys_and_gives_way_to_a_selected_frame() {
        let picked = parse(&[("mcp_trace", "2"), ("mcp_frame", "7")]);
        assert_eq!(picked.mcp_pick(), Some((2, 7)));
        assert_eq!(picked.to_pairs(), [("mcp_trace", "2".into()), ("mcp_frame", "7".into())]);
        assert_eq!(parse(&[("mcp_frame", "7")]).mcp_pick(), None);
        let mut both = parse(&[("frame", "3"), ("mcp_trace", "2"), ("mcp_frame", "7")]);
        assert_eq!(both.mcp_pick(), None);
        assert_eq!(both.to_pairs(), [("frame", "3".into())]);
        both.pick_mcp(Some((2, 8)));
        assert_eq!((both.frame, both.mcp_pick()), (None, Some((2, 8))));
        assert_eq!(parse(&[("mcp_trace", "x"), ("mcp_frame", "7")]).rejected[0].key, "mcp_trace");
    }

    #[test]
    fn a_replay_and_its_speed_round_trip() {
        let pairs = [("frame", "7"), ("replay", "40"), ("speed", "10")];
        let v = parse(&pairs);
        assert_eq!((v.replay, v.play_speed(), v.frame), (Some(40), 10, Some(7)));
        let back: Vec<(&str, String)> = pairs.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(v.to_pairs(), back);
        assert_eq!(parse(&[("replay", "3")]).play_speed(), 1, "1x unless told");
        let bad = parse(&[("replay", "0"), ("speed", "3")]);
        let keys: Vec<&str> = bad.rejected.iter().map(|r| r.key).collect();
        assert_eq!((keys, bad.replay, bad.play_speed()), (vec!["replay", "speed"], None, 1));
    }

    #[test]
    fn a_replay_cursor_and_a_range_end_the_smaller_wins() {
        assert_eq!(last_seq_shown(None, None), None);
        assert_eq!(last_seq_shown(Some(9), None), Some(9));
        assert_eq!(last_seq_shown(None, Some(4)), Some(4));
        assert_eq!(last_seq_shown(Some(9), Some(4)), Some(4));
        assert_eq!(last_seq_shown(Some(3), Some(4)), Some(3));
    }

    #[test]
    fn bad_values_are_kept_as_rejected_not_dropped() {
        let v = parse(&[("dir", "sideways"), ("min_latency_ms", "-5"), ("frame", "x"), ("q", " "), ("turn", "0")]);
        assert_eq!((v.filters.clone(), v.turn), (Filters::default(), None));
        let keys: Vec<&str> = v.rejected.iter().map(|r| r.key).collect();
        assert_eq!(keys, ["dir", "min_latency_ms", "frame", "turn"]);
        assert_eq!(
            v.to_pairs(),
            [("dir", "sideways".into()), ("min_latency_ms", "-5".into()), ("frame", "x".into()), ("turn", "0".into())]
        );
        let mut typed = v.clone();
        typed.set_typed("min_latency_ms", "12.5");
        assert_eq!((typed.filters.min_latency_ms, typed.rejected("min_latency_ms")), (Some(12.5), None));
        typed.set_typed("min_latency_ms", "abc");
        assert_eq!(typed.filters.min_latency_ms, None);
        assert_eq!(typed.rejected("min_latency_ms").map(|r| r.value.as_str()), Some("abc"));
    }
}
