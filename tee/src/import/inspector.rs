//! Importing `acp-inspector-trace` v1 files (sagikazarmark/acp-inspector's
//! trace export, `docs/trace-export.md` there), and writing them back is
//! [`crate::export::inspector`].
//!
//! JSONL: a header `{"type":"header","format":"acp-inspector-trace",
//! "version":1,"at","frames","dropped","warning"}`, then one
//! `{"type":"frame","at","connection","direction","encoding","frame"}` per
//! frame, in wire order. `at` is milliseconds since the Unix epoch;
//! `direction` is `client -> agent` or `agent -> client`; `frame` is the
//! wire text verbatim, without its line end (`encoding` `utf8`; `base64`,
//! which acp-tee writes for bytes that are not UTF-8, is read too). Fields
//! this reader does not know are ignored, as the format asks.
//!
//! Each connection becomes a trace of its own, in the order connections
//! first appear: every agent's ids start again at 1, so one trace would pair
//! one agent's response with another's request. At most [`MAX_CONNECTIONS`]
//! are read. A trace's times count from its first frame's `at`; it started
//! then; with several connections each trace's name ends in `(connection
//! N)`. The header's `frames` is checked against the frame records the file
//! holds (fewer: refused as cut short, or with `--skip-bad` counted as
//! missing); its `dropped` (frames the inspector no longer held) counts as
//! missing in the first trace, the oldest frames being the ones dropped.

use super::{imported_meta, Claim, Context, ImportError, ImportFormat, Stamps, TraceSink, MAX_HEADER_BYTES};
use crate::model::Mode;
use acp_tee_shared::Direction;
use base64::Engine;
use serde::Deserialize;
use std::borrow::Cow;
use std::io::BufRead;

/// What the format calls itself.
pub const FORMAT: &str = "acp-inspector-trace";

/// The newest version this reads and the one the export writes.
pub const VERSION: u32 = 1;

/// Connections one file may hold at most: each is a trace with its own
/// pairing state. The inspector keeps its newest 10,000 frames, so a real
/// file holds a few.
pub const MAX_CONNECTIONS: usize = 64;

#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
    format: String,
    version: u32,
    frames: i64,
    #[serde(default)]
    dropped: i64,
}

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "type")]
    kind: Cow<'a, str>,
    at: i64,
    connection: u64,
    direction: Cow<'a, str>,
    #[serde(default)]
    encoding: Option<Cow<'a, str>>,
    #[serde(borrow)]
    frame: Cow<'a, str>,
}

/// One connection's trace.
struct Connection {
    id: u64,
    sink: TraceSink,
    stamps: Stamps,
}

/// Reads an `acp-inspector-trace` file into one trace per connection.
pub fn read(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let mut header: Option<(u64, Header)> = None;
    let mut conns: Vec<Connection> = Vec::new();
    let mut current = 0;
    ctx.lines(input, |ctx, number, line| {
        if header.is_none() {
            header = Some((number, read_header(ctx, number, line)?));
            return Ok(());
        }
        let r = match serde_json::from_str::<Record>(line) {
            Ok(r) if r.kind == "frame" => r,
            Ok(r) => return ctx.bad_line(number, format!("unknown record type `{}`; expected frame", r.kind)),
            Err(e) => return ctx.bad_line(number, format!("not an acp-inspector-trace frame record: {e}")),
        };
        let Some(at) = chrono::DateTime::from_timestamp_millis(r.at) else {
            return ctx.bad_line(number, format!("`at` {} is not a time in milliseconds since 1970", r.at));
        };
        let dir = match &*r.direction {
            "client -> agent" => Direction::ClientToAgent,
            "agent -> client" => Direction::AgentToClient,
            other => {
                let why = format!("unknown direction `{other}`; expected `client -> agent` or `agent -> client`");
                return ctx.bad_line(number, why);
            }
        };
        let mut bytes = match r.encoding.as_deref().unwrap_or("utf8") {
            "utf8" => r.frame.into_owned().into_bytes(),
            "base64" => match base64::engine::general_purpose::STANDARD.decode(&*r.frame) {
                Ok(b) => b,
                Err(e) => return ctx.bad_line(number, format!("`frame` is not base64: {e}")),
            },
            other => return ctx.bad_line(number, format!("unknown encoding `{other}`; expected utf8 or base64")),
        };
        bytes.push(b'\n');
        let i = match conns.iter().position(|c| c.id == r.connection) {
            Some(i) => i,
            None if conns.len() >= MAX_CONNECTIONS => {
                let why = format!("more than {MAX_CONNECTIONS} connections in one file");
                return Err(ctx.invalid(number, why));
            }
            None => {
                conns.push(Connection {
                    id: r.connection,
                    sink: TraceSink::start(ctx, Mode::Import.as_str())?,
                    stamps: Stamps::default(),
                });
                conns.len() - 1
            }
        };
        if i != current {
            // Only one connection's frames wait in memory at a time.
            conns[current].sink.flush(ctx)?;
            current = i;
        }
        let c = &mut conns[i];
        let t_ns = c.stamps.t_ns(at);
        let frame = c.sink.framer.message(dir, t_ns, bytes, None);
        c.sink.push(ctx, frame)
    })?;
    let Some((header_line, header)) = header else {
        return Err(ImportError::Empty { path: ctx.path.clone() });
    };
    finish(ctx, conns, header_line, &header)
}

fn read_header(ctx: &Context, number: u64, line: &str) -> Result<Header, ImportError> {
    if line.len() > MAX_HEADER_BYTES {
        return Err(ctx.invalid(number, format!("header line longer than {MAX_HEADER_BYTES} bytes")));
    }
    let h = serde_json::from_str::<Header>(line).map_err(|e| {
        let why = format!(
            "not an acp-inspector-trace header ({{\"type\":\"header\",\"format\":\"{FORMAT}\",\"version\":1,\"frames\":N,...}}): {e}"
        );
        ctx.invalid(number, why)
    })?;
    if h.kind != "header" || h.format != FORMAT {
        let why = format!("the first record is a `{}` of `{}`, not an {FORMAT} header", h.kind, h.format);
        return Err(ImportError::BadFile { path: ctx.path.clone(), why });
    }
    if h.version > VERSION {
        let why =
            format!("{FORMAT} version {} is newer than this acp-tee reads ({VERSION}); upgrade acp-tee", h.version);
        return Err(ImportError::BadFile { path: ctx.path.clone(), why });
    }
    if h.frames < 0 || h.dropped < 0 {
        return Err(ctx.invalid(number, "`frames` and `dropped` are counts, 0 or more".into()));
    }
    Ok(h)
}

/// Checks the frames held against the header's count and finishes each
/// connection's trace.
fn finish(ctx: &mut Context, conns: Vec<Connection>, line: u64, header: &Header) -> Result<(), ImportError> {
    let held: i64 = conns.iter().map(|c| c.sink.frames).sum();
    if held == 0 {
        return Err(ImportError::Empty { path: ctx.path.clone() });
    }
    let unstored = (header.frames - held).max(0);
    if unstored > 0 && !ctx.opts.skip_bad {
        return Err(ImportError::Incomplete { path: ctx.path.clone(), line, claimed: header.frames, held });
    }
    let several = conns.len() > 1;
    for (i, mut c) in conns.into_iter().enumerate() {
        let claim = (i == 0).then(|| {
            // The whole file's bad lines and shortfall are the first trace's.
            c.sink.skipped_before = 0;
            Claim { line, frames: c.sink.frames + unstored, missing: header.dropped }
        });
        let started = c.stamps.started(ctx, c.sink.last_t_ns);
        let mut meta = imported_meta(ctx, ImportFormat::AcpInspector, started, c.sink.last_t_ns);
        if several {
            meta.name = meta.name.map(|n| format!("{n} (connection {})", c.id));
        }
        c.sink.finish(ctx, meta, claim)?;
    }
    Ok(())
}
