//! Importing `acp-tee-trace` exports (docs/trace-format.md): the JSON
//! document, read with a streaming visitor so that one frame at a time is in
//! memory, and the NDJSON form, read line by line.
//!
//! Every field the file gives is kept (trace fields, `seq`, `t_ns`, kinds,
//! pairing, sessions), so exporting an imported trace gives back the
//! document it came from but for trace ids. The [`Framer`] fills in what the
//! file leaves out and the viewer's previews. A trace's counts are those of
//! the frames stored (see [`TraceSink::finish`]); a seq must be new in its
//! trace and at most [`MAX_SEQ`](crate::store::MAX_SEQ).
//!
//! [`Framer`]: crate::frame::Framer

use super::{Claim, Context, ImportError, TraceSink, MAX_HEADER_BYTES, MAX_LINE_BYTES};
use crate::model::{Mode, NewFrame};
use acp_tee_shared::{ExportFrame, NdjsonHeader, TraceMeta, FORMAT_NAME, FORMAT_VERSION};
use base64::Engine;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

/// Reads a JSON document or NDJSON, told apart by the first line.
pub fn read(ctx: &mut Context, mut input: impl BufRead) -> Result<(), ImportError> {
    let start = input.fill_buf().map_err(|cause| ImportError::Read { path: ctx.path.clone(), cause })?;
    let text = String::from_utf8_lossy(&start[..start.len().min(4096)]).into_owned();
    if text.contains("\"traces\"") && !text.contains("\"trace\":") {
        read_document(ctx, input)
    } else {
        read_ndjson(ctx, input)
    }
}

fn read_ndjson(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let mut current: Option<(TraceSink, TraceMeta, Claim)> = None;
    ctx.lines(input, |ctx, number, line| {
        if line.starts_with("{\"format\"") || current.is_none() {
            if line.len() > MAX_HEADER_BYTES {
                return Err(ctx.invalid(number, format!("header line longer than {MAX_HEADER_BYTES} bytes")));
            }
            let header = serde_json::from_str::<NdjsonHeader>(line).map_err(|e| ctx.invalid(number, why_header(e)))?;
            check_version(ctx, &header.format, header.version)?;
            let claim = Claim::of(&header.trace, number).map_err(|why| ctx.invalid(number, why))?;
            if let Some((sink, meta, claim)) = current.take() {
                sink.finish(ctx, meta, Some(claim))?;
            }
            let mut sink = TraceSink::start(ctx, &header.trace.mode)?;
            if let Some(protocol) = header.trace.protocol {
                // Frames the file leaves bare are read as its protocol's.
                sink.framer.set_protocol(protocol);
            }
            current = Some((sink, header.trace, claim));
            return Ok(());
        }
        let (sink, _, _) = current.as_mut().expect("a header came first");
        match serde_json::from_str::<ExportFrame>(line) {
            Ok(f) => add_frame(ctx, sink, number, f),
            Err(e) => ctx.bad_line(number, format!("not an acp-tee-trace frame: {e}")),
        }
    })?;
    if let Some((sink, meta, claim)) = current {
        sink.finish(ctx, meta, Some(claim))?;
    }
    Ok(())
}

/// Stores frame `f`, read from `line`, unless it is bad: a seq the trace
/// already has, or a value out of range.
fn add_frame(ctx: &mut Context, sink: &mut TraceSink, line: u64, f: ExportFrame) -> Result<(), ImportError> {
    if sink.has_seq(ctx, f.seq)? {
        return ctx.bad_line(line, format!("duplicate seq {}", f.seq));
    }
    match frame(sink, f) {
        Ok(frame) => sink.push(ctx, frame),
        Err(why) => ctx.bad_line(line, format!("not an acp-tee-trace frame: {why}")),
    }
}

fn why_header(e: serde_json::Error) -> String {
    format!("not an acp-tee-trace header line ({{\"format\":\"acp-tee-trace\",\"version\":1,\"trace\":{{...}}}}): {e}")
}

fn check_version(ctx: &Context, format: &str, version: u32) -> Result<(), ImportError> {
    if format != FORMAT_NAME {
        return Err(ImportError::BadFile {
            path: ctx.path.clone(),
            why: format!("`format` is `{format}`, not `{FORMAT_NAME}`"),
        });
    }
    if version > FORMAT_VERSION {
        return Err(ImportError::BadFile {
            path: ctx.path.clone(),
            why: format!(
                "acp-tee-trace version {version} is newer than this acp-tee reads ({FORMAT_VERSION}); upgrade acp-tee"
            ),
        });
    }
    Ok(())
}

/// A stored frame from an exported one: the file's values where it gives
/// them, the framer's for the rest.
fn frame(sink: &mut TraceSink, f: ExportFrame) -> Result<NewFrame, String> {
    let bytes = |text: Option<String>, b64: Option<String>, what: &str| -> Result<Option<Vec<u8>>, String> {
        match (text, b64) {
            (Some(t), _) => Ok(Some(t.into_bytes())),
            (None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map(Some)
                .map_err(|e| format!("`{what}_base64` is not base64: {e}")),
            (None, None) => Ok(None),
        }
    };
    if !(1..=crate::store::MAX_SEQ).contains(&f.seq) {
        return Err(format!("`seq` must be from 1 to 2^40 - 1, not {}", f.seq));
    }
    if f.t_ns < 0 {
        return Err(format!("`t_ns` must be 0 or more, not {}", f.t_ns));
    }
    let raw = bytes(f.raw, f.raw_base64, "raw")?.ok_or("a frame without `raw` or `raw_base64`")?;
    let envelope = bytes(f.envelope, f.envelope_base64, "envelope")?;
    let mut n = sink.framer.message_at(f.seq, f.dir, f.t_ns as u64, raw, envelope);
    n.kind = f.kind;
    // The file's values win over what its bytes say, as for every field
    // below: export -> import -> export gives the same file.
    n.rpc_id = f.id.map(|id| id.get().to_owned()).or(n.rpc_id);
    n.method = f.method.or(n.method);
    n.session_id = f.session_id.or(n.session_id);
    n.reply_to_seq = f.reply_to_seq.or(n.reply_to_seq);
    n.latency_ns = f.latency_ns.or(n.latency_ns);
    n.mcp = f.protocol.as_deref() == Some("mcp") || (f.protocol.is_none() && n.mcp);
    n.mcp_method = f.mcp_method.or(n.mcp_method);
    n.sender = f.sender;
    n.receiver = f.receiver;
    Ok(n)
}

fn read_document(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let gauge = Rc::new(Gauge::default());
    let mut de = serde_json::Deserializer::from_reader(Gauged { inner: input, gauge: gauge.clone() });
    let mut state = DocState { ctx, gauge: gauge.clone(), failed: None };
    let result = DocSeed(&mut state).deserialize(&mut de).and_then(|()| de.end());
    let DocState { ctx, failed, .. } = state;
    if let Some(e) = failed {
        return Err(e);
    }
    if gauge.over.get() {
        let why = format!("a value longer than {} bytes", gauge.limit.get());
        return Err(ctx.invalid(gauge.line.get(), why));
    }
    result.map_err(|e| ImportError::BadFile {
        path: ctx.path.clone(),
        why: format!("not an acp-tee-trace document: {e}"),
    })
}

/// How far the document reader has read: the line it is on, and the bytes
/// since the last value it finished (a trace field or a frame), which may
/// not exceed `limit`. serde reads the document a byte at a time through
/// [`Gauged`], so no single value is ever held past the limit.
#[derive(Debug)]
pub(super) struct Gauge {
    pub(super) line: Cell<u64>,
    since_mark: Cell<u64>,
    pub(super) limit: Cell<u64>,
    pub(super) over: Cell<bool>,
}

impl Default for Gauge {
    fn default() -> Gauge {
        Gauge {
            line: Cell::new(1),
            since_mark: Cell::new(0),
            limit: Cell::new(MAX_HEADER_BYTES as u64),
            over: Cell::new(false),
        }
    }
}

impl Gauge {
    /// A value of at most `limit` bytes starts here.
    pub(super) fn mark(&self, limit: usize) {
        self.since_mark.set(0);
        self.limit.set(limit as u64);
    }
}

/// The document's reader, counting for its [`Gauge`]; fails once a value
/// is longer than the gauge's limit.
pub(super) struct Gauged<R> {
    pub(super) inner: R,
    pub(super) gauge: Rc<Gauge>,
}

impl<R: BufRead> Read for Gauged<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let g = &*self.gauge;
        let (since, limit) = (g.since_mark.get(), g.limit.get());
        if since >= limit {
            g.over.set(true);
            return Err(io::Error::other("a value is too long"));
        }
        let available = self.inner.fill_buf()?;
        let n = buf.len().min(available.len()).min((limit - since) as usize);
        // serde asks for one byte at a time.
        let newlines = if n == 1 {
            buf[0] = available[0];
            u64::from(buf[0] == b'\n')
        } else {
            buf[..n].copy_from_slice(&available[..n]);
            memchr::memchr_iter(b'\n', &buf[..n]).count() as u64
        };
        self.inner.consume(n);
        g.since_mark.set(since + n as u64);
        g.line.set(g.line.get() + newlines);
        Ok(n)
    }
}

/// The import's state while serde walks the document. An error of ours
/// (store, version) is kept here and stops the walk with a serde error.
struct DocState<'c, 'a> {
    ctx: &'c mut Context<'a>,
    gauge: Rc<Gauge>,
    failed: Option<ImportError>,
}

impl DocState<'_, '_> {
    fn fail<E: de::Error>(&mut self, e: ImportError) -> E {
        let msg = e.to_string();
        self.failed = Some(e);
        E::custom(msg)
    }
}

struct DocSeed<'s, 'c, 'a>(&'s mut DocState<'c, 'a>);

impl<'de> DeserializeSeed<'de> for DocSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an acp-tee-trace document")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        let mut format = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => format = Some(map.next_value::<String>()?),
                "version" => {
                    let version = map.next_value::<u32>()?;
                    let format = format.clone().unwrap_or_else(|| FORMAT_NAME.to_owned());
                    if let Err(e) = check_version(st.ctx, &format, version) {
                        return Err(st.fail(e));
                    }
                }
                "traces" => map.next_value_seed(TracesSeed(st))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            st.gauge.mark(MAX_HEADER_BYTES);
        }
        Ok(())
    }
}

struct TracesSeed<'s, 'c, 'a>(&'s mut DocState<'c, 'a>);

impl<'de> DeserializeSeed<'de> for TracesSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TracesSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of traces")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(TraceSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

struct TraceSeed<'s, 'c, 'a>(&'s mut DocState<'c, 'a>);

impl<'de> DeserializeSeed<'de> for TraceSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// The trace fields a document's trace may have (the rest are ignored).
const TRACE_FIELDS: &[&str] = &[
    "id",
    "name",
    "command",
    "cwd",
    "mode",
    "started_at",
    "ended_at",
    "exit_code",
    "exit_signal",
    "end_reason",
    "frame_count",
    "error_count",
    "missing_frames",
    "missing_unknown",
    "protocol",
    "parent_trace",
];

impl<'de> Visitor<'de> for TraceSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        let mut fields = serde_json::Map::new();
        let mut sink = None;
        st.gauge.mark(MAX_HEADER_BYTES);
        while let Some(key) = map.next_key::<String>()? {
            if key != "frames" {
                if TRACE_FIELDS.contains(&key.as_str()) {
                    fields.insert(key, map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
                st.gauge.mark(MAX_HEADER_BYTES);
                continue;
            }
            let mode = fields.get("mode").and_then(|m| m.as_str()).unwrap_or(Mode::Import.as_str()).to_owned();
            let mut s = TraceSink::start(st.ctx, &mode).map_err(|e| st.fail(e))?;
            st.gauge.mark(MAX_LINE_BYTES);
            map.next_value_seed(FramesSeed { st: &mut *st, sink: &mut s })?;
            st.gauge.mark(MAX_HEADER_BYTES);
            sink = Some(s);
        }
        let meta: TraceMeta = serde_json::from_value(fields.into()).map_err(de::Error::custom)?;
        let line = st.gauge.line.get();
        let claim = Claim::of(&meta, line).map_err(|why| {
            let e = st.ctx.invalid(line, why);
            st.fail(e)
        })?;
        let sink = match sink {
            Some(s) => s,
            None => TraceSink::start(st.ctx, &meta.mode).map_err(|e| st.fail(e))?,
        };
        sink.finish(st.ctx, meta, Some(claim)).map_err(|e| st.fail(e))
    }
}

struct FramesSeed<'s, 'c, 'a> {
    st: &'s mut DocState<'c, 'a>,
    sink: &'s mut TraceSink,
}

impl<'de> DeserializeSeed<'de> for FramesSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FramesSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of frames")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(f) = seq.next_element::<ExportFrame>()? {
            // The line the frame ends on: its line, as acp-tee writes documents.
            let line = self.st.gauge.line.get();
            add_frame(self.st.ctx, self.sink, line, f).map_err(|e| self.st.fail(e))?;
            self.st.gauge.mark(MAX_LINE_BYTES);
        }
        Ok(())
    }
}
