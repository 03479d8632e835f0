//! Payloads of the HTTP API that `acp-tee serve` offers and the viewer reads.
//!
//! Routes (all GET, all JSON unless said otherwise; errors are
//! `{"error": "..."}` with status 400 for bad parameters, 404 for unknown ids
//! and paths, 503 when a query ran out of time or too many exports run):
//! - `/api/traces` -> `Vec<TraceSummary>`, newest first
//! - `/api/traces/{id}` -> [`TraceSummary`]
//! - `/api/traces/{id}/frames?...` ([`FrameQuery`]) -> [`FramePage`]
//! - `/api/traces/{id}/find?find=WORDS&after=SEQ` (or `&before=SEQ`, and
//!   the frame filters) ([`FindQuery`]) -> [`FindStep`]: the next (previous)
//!   frame holding the words among those the filters show, wrapping around
//! - `/api/traces/{id}/matches?find=WORDS&from=SEQ&to=SEQ` ([`FindQuery`])
//!   -> [`MatchList`]: which of those frames in a seq range hold the words
//! - `/api/search?q=WORDS` ([`SearchQuery`]) -> [`TraceSearch`]: the traces
//!   whose frames hold the words, newest first, bounded
//! - `/api/traces/{id}/frames/{seq}?max_bytes=N` -> [`FrameDetail`], its
//!   `raw`/`raw_base64`/`envelope` cut to [`DETAIL_MAX_BYTES`] bytes each
//!   unless `max_bytes` says otherwise (`0`: not cut)
//! - `/api/traces/{id}/frames/{seq}/raw` -> the frame's bytes
//!   (`application/octet-stream`)
//! - `/api/traces/{id}/stats` -> [`TraceStats`]
//! - `/api/traces/{id}/overview?buckets=N` ([`OverviewQuery`]) ->
//!   [`TraceOverview`]: the trace's frames, errors, open requests, sessions
//!   and findings per interval of equal time
//! - `/api/traces/{id}/range?from=SEQ&to=SEQ` ([`RangeQuery`]) ->
//!   [`RangeSummary`]: what a range of seqs holds (the range tools' panel)
//! - `/api/traces/{id}/sessions` -> [`crate::session::TraceSessions`]: its
//!   ACP sessions, what each adds up to, and the requests still open
//! - `/api/traces/{id}/sessions/{sid}?offset=N&limit=N` ->
//!   [`crate::session::SessionDetail`]: one session with a page of its turns
//!   (see [`crate::session::TurnQuery`])
//! - `/api/traces/{id}/requests?sort=COLUMN&desc=true&offset=N&limit=N`
//!   ([`RequestQuery`]) -> [`RequestPage`]: the request table
//! - `/api/traces/{id}/in_flight?at=SEQ` -> [`InFlight`]: the requests sent
//!   before frame `at` and answered after it or never
//! - `/api/traces/{id}/live?after=SEQ` -> Server-Sent Events: event `frames`
//!   with data `Vec<FrameSummary>` (only frames with seq > after, in order,
//!   unfiltered), event `trace` with data [`TraceSummary`] when counts or the
//!   end change; with `&sessions=true` also event `sessions` with data
//!   [`crate::session::TraceSessions`] after new frames of a session
//! - `/api/traces/{id}/export?format=json|ndjson|jsons|perfetto&redact=false`
//!   -> the export in that format (secrets masked unless `redact=false`)
//! - `/api/capabilities` -> [`Capabilities`]: whether this client may change traces
//!
//! The write routes (the trace list's rename, pin and delete), refused with
//! 403 when the server does not allow changes (see [`Capabilities`]):
//! - `PATCH /api/traces/{id}` with a JSON [`TraceChange`] -> the changed
//!   [`TraceSummary`]; 400 for a body that is not one, or a name
//!   [`name_problem`] refuses
//! - `DELETE /api/traces/{id}` -> 204; 409 while the trace is recorded or
//!   while it is pinned

use crate::{Direction, FrameKind, TraceMeta};
use serde::{Deserialize, Serialize};

/// A trace as listed: its metadata and whether it is still being recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Everything stored about the run.
    #[serde(flatten)]
    pub meta: TraceMeta,
    /// True while the recorder is still writing it.
    pub live: bool,
    /// Live, but the run is over: acp-tee was killed and its recorder is
    /// still storing what it had been handed. The trace is not complete yet.
    #[serde(default)]
    pub finishing: bool,
    /// `t_ns` of its last frame (0 when it has none).
    pub last_t_ns: i64,
    /// A live trace's present on its clock when this was read: the time
    /// since `started_at` on the serving machine's clock (`None` once
    /// ended). Its last frame came `now_t_ns - last_t_ns` ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now_t_ns: Option<i64>,
    /// For imported traces: where they came from (`jsons file /x/t.jsons`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<String>,
    /// What the protocol checks found, by severity, once the server has
    /// checked the trace (`/api/traces/{id}/findings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<crate::check::FindingCounts>,
}

/// Filters and paging of `/api/traces/{id}/frames`. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameQuery {
    /// Only frames with `seq` greater than this (cursor paging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    /// Skip this many matching frames first (window paging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// At most this many frames (1..=1000, default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Only this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<Direction>,
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FrameKind>,
    /// Only this method (responses carry their request's method).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only this ACP session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only error responses (and batches holding one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<bool>,
    /// Only responses slower than this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_latency_ms: Option<f64>,
    /// Search over the frames' text: every word given must occur as a whole
    /// word (letters and digits, without case or diacritics; a word of
    /// several, like `session/prompt`, in that order). FTS5 query syntax is
    /// not exposed. See docs/search.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
    /// Only frames with `seq` at least this: the first of a range of the
    /// trace (a range tool's selection, a replay's start). Offsets, totals
    /// and the other filters count within the range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<i64>,
    /// Only frames with `seq` at most this: the last of a range of the
    /// trace (a range tool's selection, how far a replay has come).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
}

/// The most matches `/api/traces/{id}/find` counts (`total`, `position`):
/// a common word in a huge trace is not counted through.
pub const FIND_COUNT_CAP: i64 = 1000;

/// The widest seq range `/api/traces/{id}/matches` answers for (`to - from + 1`).
pub const MATCHES_MAX_SPAN: i64 = 2000;

/// Query of `/api/traces/{id}/find` and `/api/traces/{id}/matches`: words
/// to find (as [`FrameQuery::q`] reads them) among the frames the filters
/// show (the same filters as [`FrameQuery`], `q` among them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FindQuery {
    /// The words to find (required, at most 1000 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find: Option<String>,
    /// `find`: the first match after this seq (the default, from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<i64>,
    /// `find`: the last match before this seq (instead of `after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<i64>,
    /// The first seq looked at: `find` finds nothing before it (the view's
    /// range); `matches` requires it (the first row asked about).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<i64>,
    /// The last seq looked at: `find` finds nothing after it (the view's
    /// range, or a replay's cursor); `matches` requires it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
    /// Only this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<Direction>,
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FrameKind>,
    /// Only this method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only this ACP session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only error responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<bool>,
    /// Only responses slower than this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_latency_ms: Option<f64>,
    /// The search filter: only frames holding these words as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
}

impl FindQuery {
    /// The frame query of the frames that match: the filters and the seq
    /// range, with the words of `find` added to those of `q` (a frame must
    /// hold them all).
    pub fn frame_query(&self) -> FrameQuery {
        let words = [self.q.as_deref(), self.find.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
        FrameQuery {
            from: self.from,
            to: self.to,
            dir: self.dir,
            kind: self.kind,
            method: self.method.clone(),
            session: self.session.clone(),
            errors: self.errors,
            min_latency_ms: self.min_latency_ms,
            q: Some(words),
            ..FrameQuery::default()
        }
    }
}

/// `GET /api/traces/{id}/find`: one step to the next (previous) match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindStep {
    /// The match's seq; `None` when no frame matches.
    pub seq: Option<i64>,
    /// No match lay after `after` (before `before`): this is the first
    /// (last) one, found from the other end.
    pub wrapped: bool,
    /// Which match this is, from 1, when it is among the first
    /// [`FIND_COUNT_CAP`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    /// Matches in the trace, counted up to [`FIND_COUNT_CAP`].
    pub total: i64,
    /// There are more than `total` (counting stopped at the cap).
    pub more: bool,
}

/// `GET /api/traces/{id}/matches`: the matches in a seq range.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchList {
    /// Their seqs, in order.
    pub seqs: Vec<i64>,
}

/// Query of `/api/search`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// The words to look for in the frames of every trace (required, at most 1000 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q: Option<String>,
}

/// The most traces `/api/search` looks into, the newest.
pub const SEARCH_MAX_TRACES: usize = 200;

/// The most matches `/api/search` counts in one trace.
pub const SEARCH_COUNT_CAP: i64 = 100;

/// `GET /api/search`: the traces whose frames hold the words.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceSearch {
    /// The traces with a match, newest first.
    pub hits: Vec<TraceHit>,
    /// How many traces were searched (the newest ones).
    pub searched: usize,
    /// How many traces there are.
    pub traces: usize,
    /// Why the search stopped before the last trace, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One trace of a [`TraceSearch`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceHit {
    /// The trace.
    pub trace: TraceSummary,
    /// Its first match.
    pub first: FrameSummary,
    /// Its matches, counted up to [`SEARCH_COUNT_CAP`].
    pub count: i64,
    /// There are more than `count`.
    pub more: bool,
}

/// A frame without its bytes: enough to draw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameSummary {
    /// Position in the trace, from 1.
    pub seq: i64,
    /// Nanoseconds since the trace started.
    pub t_ns: i64,
    /// Which way it went.
    pub dir: Direction,
    /// What it is.
    pub kind: FrameKind,
    /// The JSON-RPC id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    /// The method (for responses, the request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The ACP session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// For responses: the request's seq.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to_seq: Option<i64>,
    /// For responses: nanoseconds since the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// For requests: the seq of their response, once it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_seq: Option<i64>,
    /// Size of the frame in bytes.
    pub size: i64,
    /// A short text for the diagram (a `session/update`'s text, an error's
    /// message, a stderr line), at most 160 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// MCP-over-ACP.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mcp: bool,
    /// For `mcp/message`: the inner MCP method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_method: Option<String>,
    /// For a `session/update` notification: its update's `sessionUpdate`
    /// (`agent_message_chunk`, `tool_call`, ...), when the frame is short
    /// enough to be read for its summary (no stored preview).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    /// For an update whose preview is its content's text (a streamed
    /// chunk): 1 when the text begins with whitespace, 2 when it ends with
    /// some or is cut (both: 3), which the preview leaves out. The viewer
    /// joins a collapsed run's previews by it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spaced: u8,
    /// An MCP trace's `tools/call` result with `isError: true`: the tool
    /// failed, its preview says `tool error: ` and the tool's text. The
    /// frame is still a `response` (JSON-RPC-wise the call succeeded), so
    /// error counts and the errors filter leave it out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_error: bool,
}

/// One page of frames, in `seq` order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FramePage {
    /// The frames.
    pub frames: Vec<FrameSummary>,
    /// How many frames match the filters in all.
    pub total: i64,
    /// True when more frames follow this page.
    pub has_more: bool,
}

/// One frame with its bytes and its pair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameDetail {
    /// The frame.
    pub frame: FrameSummary,
    /// Its exact bytes when UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Its exact bytes as base64 when not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_base64: Option<String>,
    /// Proxy mode: the message on the successor side of the hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
    /// The request this answers, or the response that answers this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<FrameSummary>,
    /// True when `raw`, `raw_base64` or `envelope` was cut to the detail's
    /// byte limit (see [`FrameDetailQuery`]); the whole frame is at
    /// `/api/traces/{id}/frames/{seq}/raw`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Bytes of the whole raw frame as served (masked unless the server
    /// was started with `--no-redact`).
    #[serde(default)]
    pub raw_size: i64,
    /// Bytes of the whole envelope as served, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope_size: Option<i64>,
}

/// Bytes of `raw` (and of `envelope`) a frame detail carries unless asked
/// for more: the start of a larger frame, and [`FrameDetail::cut`] set.
pub const DETAIL_MAX_BYTES: usize = 256 * 1024;

/// Query of `/api/traces/{id}/frames/{seq}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameDetailQuery {
    /// Bytes of `raw`, `raw_base64` and `envelope` at most (default
    /// [`DETAIL_MAX_BYTES`]; `0`: the whole frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// One bar of a latency histogram: responses with `lo_ns <= latency < hi_ns`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramBucket {
    /// Lower bound, nanoseconds, inclusive.
    pub lo_ns: i64,
    /// Upper bound, nanoseconds, exclusive.
    pub hi_ns: i64,
    /// How many responses fell in it.
    pub count: i64,
}

/// Timing of one method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MethodStats {
    /// The method.
    pub method: String,
    /// Requests and notifications with this method.
    pub count: i64,
    /// Error responses.
    pub errors: i64,
    /// Responses with a latency.
    pub answered: i64,
    /// Latency percentiles (nearest rank, within ~3%: read from log-linear
    /// buckets) and the exact maximum, nanoseconds (absent without responses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<i64>,
    /// 95th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ns: Option<i64>,
    /// 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<i64>,
    /// Maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<i64>,
    /// Latency histogram: one bucket per power of two of nanoseconds.
    pub histogram: Vec<HistogramBucket>,
}

/// Timing of a whole trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    /// Per method, most frequent first.
    pub methods: Vec<MethodStats>,
    /// The slowest responses (up to 20), slowest first.
    pub slowest: Vec<FrameSummary>,
    /// Frames per direction, in [`Direction::ALL`] order.
    pub per_direction: Vec<i64>,
}

/// The body of every API error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    /// What was wrong, for a person.
    pub error: String,
}

/// What this server lets the client that asked do (`GET /api/capabilities`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    /// True when this client may rename, pin and remove traces (`PATCH` and
    /// `DELETE /api/traces/{id}`).
    pub edit: bool,
    /// Why it may not, for a person (`serve --read-only`, a store this
    /// server cannot write, a request from beyond loopback without the token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_off: Option<String>,
}

/// The body of `PATCH /api/traces/{id}`: what to change; at least one field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceChange {
    /// The trace's new name (see [`name_problem`]); surrounding whitespace is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Pin (every prune leaves the trace alone) or unpin it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
}

/// The most characters a trace's name given through the API may have.
pub const MAX_NAME_CHARS: usize = 200;

/// Why `name` (with surrounding whitespace dropped) cannot be a trace's
/// name, or `None` when it can: it must not be empty, must have at most
/// [`MAX_NAME_CHARS`] characters, and no control characters (newlines, tabs,
/// terminal escapes).
pub fn name_problem(name: &str) -> Option<String> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 {
        Some("a trace's name must not be empty".to_owned())
    } else if chars > MAX_NAME_CHARS {
        Some(format!("a trace's name may have at most {MAX_NAME_CHARS} characters (this one has {chars})"))
    } else if name.chars().any(char::is_control) {
        Some("a trace's name must not contain control characters (newlines, tabs, escapes)".to_owned())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_printable() {
        assert_eq!(name_problem("  eliza run 2  "), None);
        assert_eq!(name_problem(&"é".repeat(MAX_NAME_CHARS)), None);
        for bad in ["", "   ", "a\nb", "tab\there", "\u{1b}[31mred", "nul\0"] {
            assert!(name_problem(bad).is_some(), "{bad:?}");
        }
        assert!(name_problem(&"x".repeat(MAX_NAME_CHARS + 1)).unwrap().contains("201"));
    }
}

/// `GET /api/traces/{id}/family`: the trace's parent and children (the MCP
/// servers its agent started, recorded by acp-tee).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceFamily {
    /// The trace this one's relay ran under, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_trace: Option<i64>,
    /// Its children, oldest first.
    pub children: Vec<FamilyMember>,
}

/// A child trace of a [`TraceFamily`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FamilyMember {
    /// The child trace.
    pub meta: TraceMeta,
    /// For an MCP child: its server's `serverInfo.name`, when it answered
    /// `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Where the child starts on the parent's clock: nanoseconds from the
    /// parent's start (both wall-clock starts, to the microsecond), to add
    /// to its frames' `t_ns`.
    pub offset_ns: i64,
    /// Whether it is still being recorded.
    pub live: bool,
}

/// A column the request table (`/api/traces/{id}/requests`) sorts by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestSort {
    /// The request's seq: the order they were sent in (the default).
    #[default]
    Seq,
    /// The method, then seq.
    Method,
    /// The JSON-RPC id: numbers by value, then strings; then seq.
    Id,
    /// The direction (client to agent first), then seq.
    Dir,
    /// Answered, then errors, then unanswered; then seq.
    Status,
    /// The time to the answer; unanswered requests last in either order.
    Latency,
    /// The answer's bytes (as served), then the request's; unanswered last.
    Size,
    /// The ACP session, then seq.
    Session,
}

impl RequestSort {
    /// Every column, in the table's order.
    pub const ALL: [RequestSort; 8] = [
        RequestSort::Seq,
        RequestSort::Method,
        RequestSort::Id,
        RequestSort::Dir,
        RequestSort::Status,
        RequestSort::Latency,
        RequestSort::Size,
        RequestSort::Session,
    ];

    /// The name used in URLs (`sort=latency`).
    pub fn as_str(self) -> &'static str {
        match self {
            RequestSort::Seq => "seq",
            RequestSort::Method => "method",
            RequestSort::Id => "id",
            RequestSort::Dir => "dir",
            RequestSort::Status => "status",
            RequestSort::Latency => "latency",
            RequestSort::Size => "size",
            RequestSort::Session => "session",
        }
    }

    /// The column named `name` in URLs, if there is one.
    pub fn parse(name: &str) -> Option<RequestSort> {
        RequestSort::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// The most rows one page of `/api/traces/{id}/requests` holds.
pub const REQUESTS_MAX_LIMIT: i64 = 500;

/// The rows a page of `/api/traces/{id}/requests` holds unless asked otherwise.
pub const REQUESTS_DEFAULT_LIMIT: i64 = 100;

/// Query of `/api/traces/{id}/requests`: the sort column, its order and the page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestQuery {
    /// The column (default [`RequestSort::Seq`]); `sort=NAME` in the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<RequestSort>,
    /// Largest first (default false: smallest first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<bool>,
    /// Skip this many rows of the sorted table first (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// At most this many rows (1..=[`REQUESTS_MAX_LIMIT`], default [`REQUESTS_DEFAULT_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// How a request was answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RequestStatus {
    /// A result.
    Ok,
    /// A JSON-RPC error: its code and message (masked as frames are), when the error object has them.
    Error {
        /// `error.code`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i64>,
        /// `error.message`, at most [`ERROR_MESSAGE_MAX_CHARS`] characters.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Answered inside a batch of responses (its own answer is not told apart).
    Batch,
    /// No answer: not yet while the trace is recorded, never once it ended.
    Unanswered,
}

/// The most characters of an error's message a request row carries.
pub const ERROR_MESSAGE_MAX_CHARS: usize = 200;

/// One row of the request table: a JSON-RPC request and its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRow {
    /// The request's seq.
    pub seq: i64,
    /// When it was sent: nanoseconds since the trace started.
    pub t_ns: i64,
    /// Which way it went (client to agent: the agent answers).
    pub dir: Direction,
    /// The method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The JSON-RPC id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    /// The ACP session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// How it was answered.
    #[serde(flatten)]
    pub status: RequestStatus,
    /// The answer's seq (a response, an error or a batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_seq: Option<i64>,
    /// Nanoseconds from the request to its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// The request's bytes as served (masked unless `--no-redact`).
    pub request_size: i64,
    /// The answer's bytes as served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_size: Option<i64>,
}

/// One page of the request table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestPage {
    /// The rows, in the order asked for.
    pub requests: Vec<RequestRow>,
    /// How many requests the trace has in all.
    pub total: i64,
    /// How many rows were skipped before this page.
    pub offset: i64,
}

/// Query of `/api/traces/{id}/in_flight`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InFlightQuery {
    /// The seq of the first frame drawn: requests sent before it and answered after it, or not at all.
    pub at: i64,
}

/// The most requests `/api/traces/{id}/in_flight` lists.
pub const IN_FLIGHT_MAX: usize = 64;

/// A request in flight over a frame: sent before it, answered after it or not at all.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InFlightRequest {
    /// The request's seq.
    pub seq: i64,
    /// Which way it went (client to agent: the agent is busy).
    pub dir: Direction,
    /// The method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The answer's seq, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_seq: Option<i64>,
    /// Nanoseconds from the request to its answer, when answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<i64>,
    /// The answer was a JSON-RPC error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
}

/// `GET /api/traces/{id}/in_flight?at=SEQ`: the requests in flight over frame `at`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InFlight {
    /// The frame asked about.
    pub at: i64,
    /// Requests sent before `at` and answered after it or never, newest first, at most [`IN_FLIGHT_MAX`].
    pub requests: Vec<InFlightRequest>,
    /// How many more there are (the oldest ones).
    pub left_out: i64,
}
/// Buckets `/api/traces/{id}/overview` makes when not told.
pub const OVERVIEW_BUCKETS_DEFAULT: usize = 400;

/// The most buckets `/api/traces/{id}/overview` makes (`buckets` is
/// 1..=this).
pub const OVERVIEW_BUCKETS_MAX: usize = 2000;

/// Query of `/api/traces/{id}/overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OverviewQuery {
    /// Buckets wanted: 1..=[`OVERVIEW_BUCKETS_MAX`], default
    /// [`OVERVIEW_BUCKETS_DEFAULT`] (fewer come when the trace spans fewer
    /// nanoseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<usize>,
}

impl OverviewQuery {
    /// The buckets asked for, or why that number cannot be served.
    pub fn buckets(&self) -> Result<usize, String> {
        match self.buckets {
            None => Ok(OVERVIEW_BUCKETS_DEFAULT),
            Some(n @ 1..=OVERVIEW_BUCKETS_MAX) => Ok(n),
            Some(n) => Err(format!("buckets must be 1..={OVERVIEW_BUCKETS_MAX}, not {n}")),
        }
    }
}

/// `GET /api/traces/{id}/overview`: the whole trace's time, from its first
/// frame's `t_ns` to its last, cut into buckets of `bucket_ns` each, and
/// what happened in each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceOverview {
    /// The trace.
    pub trace_id: i64,
    /// Frames counted (all of the trace's when it was read).
    pub frames: i64,
    /// The last seq counted (0 for an empty trace).
    pub last_seq: i64,
    /// `t_ns` where the first bucket starts: the first frame's.
    pub start_t_ns: i64,
    /// Every bucket's width, nanoseconds (at least 1; 0 when there are no
    /// buckets).
    pub bucket_ns: i64,
    /// The buckets, in time order: bucket `i` holds the frames with
    /// `start_t_ns + i * bucket_ns <= t_ns < start_t_ns + (i + 1) * bucket_ns`
    /// (a frame whose time lies before the first frame's counts in the
    /// first). None for an empty trace.
    pub buckets: Vec<OverviewBucket>,
    /// Whether `findings` of the buckets are known: false while the
    /// protocol checks have not read the whole trace (then `findings_note`
    /// says why, and every bucket's `findings` is absent, not 0).
    pub findings_checked: bool,
    /// What the findings leave out or why there are none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings_note: Option<String>,
    /// True while the trace is recorded: ask again for more.
    pub live: bool,
}

/// One interval of a [`TraceOverview`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverviewBucket {
    /// Frames in it.
    pub frames: u64,
    /// Error responses in it (kind `error`).
    pub errors: u64,
    /// Requests sent but not yet answered at its end (a response pairs by
    /// `reply_to_seq`; requests and answers inside batches are not counted).
    pub open: u64,
    /// ACP sessions with a frame in it.
    pub sessions: u64,
    /// Findings of the protocol checks at its frames (absent until the
    /// checks have read the trace: see `findings_checked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<u64>,
    /// The first and last seq in it (absent when it holds no frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seq: Option<i64>,
    /// The last seq in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<i64>,
}

/// `GET /api/traces/{id}/range`: a range of the trace's seqs, both ends
/// included.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeQuery {
    /// The range's first seq (1 or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<i64>,
    /// Its last seq (not before `from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<i64>,
}

impl RangeQuery {
    /// The range asked for, or why it cannot be served.
    pub fn range(&self) -> Result<(i64, i64), String> {
        match (self.from, self.to) {
            (Some(from), Some(to)) if from >= 1 && to >= from => Ok((from, to)),
            (Some(_), Some(_)) => Err("from and to must be seqs, 1 or more, from not past to".into()),
            _ => Err("from and to are both needed".into()),
        }
    }
}

/// Methods a [`RangeSummary`] names at most; the others are added up in
/// `other_methods` and `other_frames`.
pub const RANGE_METHODS_SHOWN: usize = 12;

/// What the frames of a range of seqs add up to (all of them, whatever a
/// view's filters): the range tools' panel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeSummary {
    /// The first seq of the range that holds a frame (absent when none does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seq: Option<i64>,
    /// The last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<i64>,
    /// Frames in the range.
    pub frames: u64,
    /// The last frame's `t_ns` minus the first's (0 for fewer than two).
    pub duration_ns: i64,
    /// Requests in it (kind `request`).
    pub requests: u64,
    /// Error responses in it (kind `error`).
    pub errors: u64,
    /// The most frequent methods with their frame counts (each frame under
    /// the method its row shows), most first, at most
    /// [`RANGE_METHODS_SHOWN`]; masked as frames are.
    pub methods: Vec<MethodCount>,
    /// Methods not in `methods` (a lower bound past
    /// `RANGE_METHODS_COUNTED` distinct names in the store).
    pub other_methods: u64,
    /// Frames of those methods.
    pub other_frames: u64,
    /// Frames with no method (stderr lines, invalid lines, batches).
    pub no_method: u64,
}

/// A method and how many frames of a range have it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodCount {
    /// The method.
    pub method: String,
    /// Its frames.
    pub frames: u64,
}

impl TraceOverview {
    /// The index of the bucket holding seq `seq` (by the buckets' seq
    /// ranges), or of the first non-empty bucket after it when none does;
    /// `None` past the last. One look at each bucket at most.
    pub fn bucket_of_seq(&self, seq: i64) -> Option<usize> {
        self.buckets.iter().position(|b| b.last_seq.is_some_and(|last| last >= seq))
    }

    /// The seq a click on bucket `i` goes to: its first frame's, or the
    /// next frame's after it when it is empty (the end of an idle gap); the
    /// last frame's past the end.
    pub fn seq_at_bucket(&self, i: usize) -> Option<i64> {
        self.buckets.iter().skip(i).find_map(|b| b.first_seq).or_else(|| {
            let last = self.buckets.iter().rev().find_map(|b| b.last_seq);
            last.filter(|_| !self.buckets.is_empty())
        })
    }
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}
