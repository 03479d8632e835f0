//! Exports: the `acp-tee-trace` JSON document and its NDJSON form
//! (`docs/trace-format.md`), the conductor's `.jsons` ([`jsons`]), Chrome
//! trace-event JSON for Perfetto ([`perfetto`]) and `acp-inspector-trace`
//! JSONL ([`inspector`]).
//!
//! Every format is written from one streaming read of the store
//! ([`Store::for_each_frame`], a bounded step of frames at a time), so
//! memory stays flat however long the trace. Secrets are masked on
//! the way out by the [`Redactor`] given (the defaults unless the user turned
//! them off); the store is never changed.
//!
//! Architecture Invariant: an `acp-tee-trace` export writes the stored bytes
//! of every frame, untouched but for redaction: as `raw` text when they are
//! UTF-8, else as `raw_base64`.

#[cfg(test)]
mod fuzz;
pub mod inspector;
pub mod jsons;
pub mod otlp;
#[cfg(test)]
mod otlp_tests;
pub mod perfetto;

use crate::redact::Redactor;
use crate::store::{Store, StoreError, StoredFrame};
use acp_tee_shared::{
    ExportFrame, ExportHeader, FrameKind, JsonText, NdjsonHeader, TraceMeta, FORMAT_NAME, FORMAT_VERSION,
};
use base64::Engine;
use indicatif::ProgressBar;
use std::io::{self, Write};

/// Which export format to write (also the values of `export --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One JSON document holding every selected trace.
    Json,
    /// Per trace: a header line, then one frame per line.
    Ndjson,
    /// The conductor's trace format: one event per line (one trace only).
    Jsons,
    /// Chrome trace-event JSON, for ui.perfetto.dev and chrome://tracing.
    Perfetto,
    /// sagikazarmark/acp-inspector's `acp-inspector-trace` JSONL, one
    /// connection per trace.
    AcpInspector,
    /// OpenTelemetry spans as OTLP/JSON lines (docs/otlp.md).
    Otlp,
}

impl ExportFormat {
    /// Every format.
    pub const ALL: [ExportFormat; 6] = [
        ExportFormat::Json,
        ExportFormat::Ndjson,
        ExportFormat::Jsons,
        ExportFormat::Perfetto,
        ExportFormat::AcpInspector,
        ExportFormat::Otlp,
    ];

    /// The name used on the command line and in the API (`json`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Json => "json",
            ExportFormat::Ndjson => "ndjson",
            ExportFormat::Jsons => "jsons",
            ExportFormat::Perfetto => "perfetto",
            ExportFormat::AcpInspector => "acp-inspector",
            ExportFormat::Otlp => "otlp",
        }
    }

    /// The file name extension of a download.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Json => "json",
            ExportFormat::Ndjson => "ndjson",
            ExportFormat::Jsons => "jsons",
            ExportFormat::Perfetto => "perfetto.json",
            ExportFormat::AcpInspector => "jsonl",
            ExportFormat::Otlp => "otlp.jsonl",
        }
    }

    /// The media type of a download.
    pub fn mime(self) -> &'static str {
        match self {
            ExportFormat::Json | ExportFormat::Perfetto => "application/json",
            ExportFormat::Ndjson | ExportFormat::Jsons | ExportFormat::AcpInspector | ExportFormat::Otlp => {
                "application/x-ndjson"
            }
        }
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExportFormat::ALL.into_iter().find(|f| f.as_str() == s).ok_or_else(|| {
            format!("unknown export format `{s}`; use json, ndjson, jsons, perfetto, acp-inspector or otlp")
        })
    }
}

/// Which traces to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceSelection {
    /// The newest trace.
    Latest,
    /// Every trace, oldest first.
    All,
    /// The trace with this id.
    Id(i64),
    /// The trace with this id and its descendants (`--with-children`),
    /// each parent before its children.
    Family(i64),
}

impl std::str::FromStr for TraceSelection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "latest" => Ok(TraceSelection::Latest),
            "all" => Ok(TraceSelection::All),
            _ => s
                .parse::<i64>()
                .map(TraceSelection::Id)
                .map_err(|_| format!("`{s}` is not a trace id; use a number from `acp-tee list`, `latest` or `all`")),
        }
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing the output failed.
    #[error("cannot write the export: {0}")]
    Io(#[from] io::Error),
    /// The format holds one trace and several were selected.
    #[error(
        "the conductor's .jsons format holds one trace; name one (an id, `latest` or a name) without --with-children"
    )]
    OneTraceOnly,
    /// The OTLP collector did not take the spans.
    #[error(transparent)]
    Otlp(#[from] crate::otlp::SendError),
}

/// How to export.
pub struct ExportOptions {
    /// The format.
    pub format: ExportFormat,
    /// What to mask (`Redactor::without_defaults(vec![])` masks nothing).
    pub redactor: Redactor,
    /// Advanced by one per frame written (hidden when not on a terminal).
    pub progress: ProgressBar,
    /// For `otlp`: the trace scope and whether content goes into spans.
    pub otlp: crate::otlp::MapOptions,
}

impl ExportOptions {
    /// `format` with the default redaction and no progress bar.
    #[cfg(test)]
    pub fn new(format: ExportFormat) -> Self {
        ExportOptions {
            format,
            redactor: Redactor::new(Vec::new()),
            progress: ProgressBar::hidden(),
            otlp: Default::default(),
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Frames read from the store.
    pub frames: u64,
    /// Frames the format has no place for (stderr and invalid lines in
    /// `.jsons`, stderr in `acp-inspector-trace`).
    pub left_out: u64,
}

/// The traces `selection` names, oldest first.
pub fn selected_traces(store: &Store, selection: TraceSelection) -> Result<Vec<TraceMeta>, StoreError> {
    Ok(match selection {
        TraceSelection::Latest => vec![store.trace(store.latest_trace_id()?)?],
        TraceSelection::Id(id) => vec![store.trace(id)?],
        TraceSelection::Family(id) => store.family(id)?,
        TraceSelection::All => {
            let mut all = store.list_traces()?;
            all.reverse();
            all
        }
    })
}

/// Writes the selected traces of `store` to `out` as `opts` says.
pub fn export(
    store: &Store,
    selection: TraceSelection,
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let traces: Vec<TraceMeta> =
        selected_traces(store, selection)?.into_iter().map(|t| mask_meta(portable(t), &opts.redactor)).collect();
    let summary = match opts.format {
        ExportFormat::Json => write_json(store, &traces, opts, out)?,
        ExportFormat::Ndjson => write_ndjson(store, &traces, opts, out)?,
        ExportFormat::Jsons => match traces.as_slice() {
            [trace] => jsons::write(store, trace, opts, out)?,
            _ => return Err(ExportError::OneTraceOnly),
        },
        ExportFormat::Perfetto => perfetto::write(store, &traces, opts, out)?,
        ExportFormat::AcpInspector => inspector::write(store, &traces, opts, out)?,
        ExportFormat::Otlp => otlp::write(store, &traces, opts, out)?,
    };
    out.flush()?;
    Ok(summary)
}

/// Sends the spans of the selected traces of `store` to the collector of
/// `client` (`export --otlp-endpoint`); the summary and the spans sent.
pub fn send_otlp(
    store: &Store,
    selection: TraceSelection,
    opts: &ExportOptions,
    client: &crate::otlp::Client,
) -> Result<(ExportSummary, u64), ExportError> {
    let traces: Vec<TraceMeta> =
        selected_traces(store, selection)?.into_iter().map(|t| mask_meta(portable(t), &opts.redactor)).collect();
    otlp::send(store, &traces, opts, client)
}

/// `trace` without what only its store says of it (pinned, its size
/// there): an export is the trace, wherever it is imported next.
fn portable(trace: TraceMeta) -> TraceMeta {
    TraceMeta { pinned: false, bytes: 0, ..trace }
}

/// `trace` with the pattern rules' matches masked in its name, command
/// line, working directory and end reason (a command line may carry a
/// token as well as a message may).
pub fn mask_meta(mut trace: TraceMeta, redactor: &Redactor) -> TraceMeta {
    let texts = trace.name.iter_mut().chain(trace.cwd.iter_mut()).chain(trace.end_reason.iter_mut());
    redactor.mask_values(texts.chain(trace.command.iter_mut()));
    trace
}

/// Requests whose method or session masking changed that a [`Masker`]
/// remembers for their responses, at most; past that the oldest is
/// forgotten (its response's inherited values then get the pattern rules
/// only).
const MASKED_REQUESTS: usize = 100_000;

/// A request's method and session as masked, and its session as stored.
struct Inherited {
    method: Option<String>,
    stored_session: Option<String>,
    session: Option<String>,
}

/// Masks the frames of one trace as they are exported: their bytes and
/// envelopes, and the values stored beside them (id, method, session, MCP
/// method), so that no export carries in a field what it masks in `raw`.
pub struct Masker<'r> {
    redactor: &'r Redactor,
    /// Request seq -> what masking made of its method and session, for the
    /// responses that inherit them (requests whose masking changed them only).
    requests: std::collections::HashMap<i64, Inherited>,
    order: std::collections::VecDeque<i64>,
}

impl<'r> Masker<'r> {
    /// A masker for one trace.
    pub fn new(redactor: &'r Redactor) -> Self {
        Masker { redactor, requests: Default::default(), order: Default::default() }
    }

    /// `f` masked.
    pub fn frame(&mut self, mut f: StoredFrame) -> StoredFrame {
        let r = self.redactor;
        if r.is_noop() {
            return f;
        }
        let stored = (f.method.clone(), f.session_id.clone());
        if let Some(env) = &f.envelope {
            if let std::borrow::Cow::Owned(new) = r.redact(env) {
                f.envelope = Some(new);
            }
        }
        if let std::borrow::Cow::Owned(raw) = r.redact(&f.raw) {
            f.raw = raw;
            if f.kind != FrameKind::Stderr && f.kind != FrameKind::Batch {
                // What the masked bytes say replaces what the original said.
                let mut m = crate::frame::classify_with(&f.raw, false);
                m.rename_proxy_initialize();
                f.rpc_id = m.id;
                f.method = m.method.or(f.method);
                f.session_id = m.session_id.or(f.session_id);
                f.mcp_method = m.mcp_method.or(f.mcp_method);
            }
        }
        // A response's method, and its session unless it named its own,
        // came from its request: they are masked as the request's were.
        if let Some(req) = f.reply_to_seq.and_then(|seq| self.requests.remove(&seq)) {
            f.method = req.method;
            if f.session_id == req.stored_session {
                f.session_id = req.session;
            }
        }
        for value in [&mut f.method, &mut f.session_id, &mut f.mcp_method].into_iter().flatten() {
            if let Some(masked) = r.mask_value(value) {
                *value = masked;
            }
        }
        if f.kind == FrameKind::Request && stored != (f.method.clone(), f.session_id.clone()) {
            let inherited =
                Inherited { method: f.method.clone(), stored_session: stored.1, session: f.session_id.clone() };
            self.remember(f.seq, inherited);
        }
        f
    }

    fn remember(&mut self, seq: i64, request: Inherited) {
        self.requests.insert(seq, request);
        self.order.push_back(seq);
        while self.order.len() > MASKED_REQUESTS {
            if let Some(old) = self.order.pop_front() {
                self.requests.remove(&old);
            }
        }
    }
}

/// The export form of a stored frame.
pub fn export_frame(f: StoredFrame) -> ExportFrame {
    let (raw, raw_base64) = text_or_base64(f.raw);
    let (envelope, envelope_base64) = f.envelope.map(text_or_base64).unwrap_or_default();
    ExportFrame {
        seq: f.seq,
        t_ns: f.t_ns,
        dir: f.dir,
        kind: f.kind,
        // Ids are stored as the JSON text they were on the wire and written
        // as that text.
        id: f.rpc_id.and_then(|id| JsonText::parse(&id)),
        method: f.method,
        session_id: f.session_id,
        reply_to_seq: f.reply_to_seq,
        latency_ns: f.latency_ns,
        raw,
        raw_base64,
        protocol: f.mcp.then(|| "mcp".to_owned()),
        mcp_method: f.mcp_method,
        envelope,
        envelope_base64,
        sender: f.sender,
        receiver: f.receiver,
    }
}

/// Bytes as text when they are UTF-8, else as base64: `(text, base64)`.
fn text_or_base64(bytes: Vec<u8>) -> (Option<String>, Option<String>) {
    match String::from_utf8(bytes) {
        Ok(text) => (Some(text), None),
        Err(e) => (None, Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))),
    }
}

/// Calls `each` with every frame of `trace`, redacted, counting it.
fn each_frame(
    store: &Store,
    trace: &TraceMeta,
    opts: &ExportOptions,
    summary: &mut ExportSummary,
    mut each: impl FnMut(StoredFrame) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let mut masker = Masker::new(&opts.redactor);
    store.for_each_frame(trace.id, |f| -> Result<(), ExportError> {
        summary.frames += 1;
        opts.progress.inc(1);
        each(masker.frame(f))
    })
}

fn write_json(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let mut summary = ExportSummary::default();
    let header = serde_json::to_string(&ExportHeader::default()).map_err(io::Error::from)?;
    // `{"format":..,"version":..` then the traces array, written piecewise so
    // that no trace is ever held in memory whole.
    write!(out, "{},\"traces\":[", &header[..header.len() - 1])?;
    for (i, trace) in traces.iter().enumerate() {
        let meta = serde_json::to_string(trace).map_err(io::Error::from)?;
        let sep = if i == 0 { "\n" } else { ",\n" };
        write!(out, "{sep}{},\"frames\":[", &meta[..meta.len() - 1])?;
        let mut first = true;
        each_frame(store, trace, opts, &mut summary, |f| {
            out.write_all(if first { b"\n" } else { b",\n" })?;
            first = false;
            serde_json::to_writer(&mut *out, &export_frame(f)).map_err(io::Error::from)?;
            Ok(())
        })?;
        write!(out, "\n]}}")?;
    }
    writeln!(out, "\n]}}")?;
    Ok(summary)
}

fn write_ndjson(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let mut summary = ExportSummary::default();
    for trace in traces {
        let header = NdjsonHeader { format: FORMAT_NAME.into(), version: FORMAT_VERSION, trace: trace.clone() };
        serde_json::to_writer(&mut *out, &header).map_err(io::Error::from)?;
        out.write_all(b"\n")?;
        each_frame(store, trace, opts, &mut summary, |f| {
            serde_json::to_writer(&mut *out, &export_frame(f)).map_err(io::Error::from)?;
            out.write_all(b"\n")?;
            Ok(())
        })?;
    }
    Ok(summary)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::frame::Framer;
    use crate::model::{TraceEnd, TraceStart};
    pub(crate) use crate::store::testing::{create_trace, finish_trace, store_from};
    use acp_tee_shared::Direction;

    /// A store holding one finished trace made from fixed chunks.
    pub(super) fn store_with_trace() -> Store {
        let mut store = Store::in_memory().unwrap();
        let start = TraceStart {
            protocol: None,
            name: Some("demo".into()),
            command: vec!["agent".into(), "acp".into()],
            cwd: Some("/w".into()),
            mode: "wrap".into(),
            started_at: "2026-11-30T10:00:00.000000Z".into(),
        };
        let id = store.create_trace(&start, 1).unwrap();
        let mut framer = Framer::new();
        let mut frames = Vec::new();
        framer.chunk(Direction::ClientToAgent, 1000, b"{\"id\":1,\"method\":\"initialize\"}\n", |f| frames.push(f));
        framer.chunk(Direction::AgentStderr, 1500, b"bad \xff byte\n", |f| frames.push(f));
        framer.chunk(Direction::AgentToClient, 4000, b"{\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}\n", |f| {
            frames.push(f)
        });
        store.insert_frames(id, &frames).unwrap();
        let end = TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "the agent exited".into() };
        store.finish_trace(id, &end, 0, "2026-11-30T10:00:01.000000Z").unwrap();
        store
    }

    fn export_to_string(format: ExportFormat) -> String {
        let mut out = Vec::new();
        export(&store_with_trace(), TraceSelection::Latest, &ExportOptions::new(format), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    const META: &str = r#""id":1,"name":"demo","command":["agent","acp"],"cwd":"/w","mode":"wrap","started_at":"2026-11-30T10:00:00.000000Z","ended_at":"2026-11-30T10:00:01.000000Z","exit_code":0,"end_reason":"the agent exited","frame_count":3,"error_count":1,"missing_frames":0"#;
    const F1: &str = r#"{"seq":1,"t_ns":1000,"dir":"client_to_agent","kind":"request","id":1,"method":"initialize","raw":"{\"id\":1,\"method\":\"initialize\"}\n"}"#;
    const F2: &str = r#"{"seq":2,"t_ns":1500,"dir":"agent_stderr","kind":"stderr","raw_base64":"YmFkIP8gYnl0ZQo="}"#;
    const F3: &str = r#"{"seq":3,"t_ns":4000,"dir":"agent_to_client","kind":"error","id":1,"method":"initialize","reply_to_seq":1,"latency_ns":3000,"raw":"{\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}\n"}"#;

    #[test]
    fn json_document() {
        let expect = format!(
            "{{\"format\":\"acp-tee-trace\",\"version\":1,\"traces\":[\n{{{META},\"frames\":[\n{F1},\n{F2},\n{F3}\n]}}\n]}}\n"
        );
        let got = export_to_string(ExportFormat::Json);
        assert_eq!(got, expect);
        let doc: serde_json::Value = serde_json::from_str(&got).unwrap();
        assert_eq!(doc["traces"][0]["frames"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn ndjson_lines() {
        let expect = format!("{{\"format\":\"acp-tee-trace\",\"version\":1,\"trace\":{{{META}}}}}\n{F1}\n{F2}\n{F3}\n");
        assert_eq!(export_to_string(ExportFormat::Ndjson), expect);
    }

    #[test]
    fn frames_read_back_as_shared_types() {
        let doc: serde_json::Value = serde_json::from_str(&export_to_string(ExportFormat::Json)).unwrap();
        let frames: Vec<ExportFrame> = serde_json::from_str(&doc["traces"][0]["frames"].to_string()).unwrap();
        assert_eq!(frames[2].latency_ns, Some(3000));
        let meta: TraceMeta = serde_json::from_value({
            let mut t = doc["traces"][0].clone();
            t.as_object_mut().unwrap().remove("frames");
            t
        })
        .unwrap();
        assert_eq!(meta.error_count, 1);
    }

    #[test]
    fn empty_store_and_unknown_trace_are_errors() {
        let store = Store::in_memory().unwrap();
        let mut out = Vec::new();
        let opts = ExportOptions::new(ExportFormat::Json);
        let err = export(&store, TraceSelection::Latest, &opts, &mut out).unwrap_err();
        assert!(err.to_string().contains("no traces yet"), "{err}");
        let err = export(&store_with_trace(), TraceSelection::Id(9), &opts, &mut out).unwrap_err();
        assert!(err.to_string().contains("no trace with id 9"), "{err}");
    }

    #[test]
    fn selections_parse() {
        assert_eq!("latest".parse::<TraceSelection>(), Ok(TraceSelection::Latest));
        assert_eq!("all".parse::<TraceSelection>(), Ok(TraceSelection::All));
        assert_eq!("12".parse::<TraceSelection>(), Ok(TraceSelection::Id(12)));
        assert!("newest".parse::<TraceSelection>().is_err());
    }
}
