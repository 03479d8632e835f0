//! Importing Zed's ACP log: what "Copy All Messages" in the ACP logs pane
//! (`dev: open acp logs`) puts on the clipboard, saved to a file.
//!
//! The copy is one pretty-printed JSON array of
//! `{"_direction","_type","id","method","params"}` entries, as Zed's
//! `acp_tools` crate writes them (`serialize_observed_messages`):
//!
//! - `_direction`: `outgoing` is Zed to the agent (client to agent),
//!   `incoming` the agent to Zed, `stderr` a line the agent wrote to its
//!   stderr.
//! - `_type`: `request`, `response`, `notification` or `stderr`.
//! - `params`: a request's or notification's params; a response's result,
//!   or its error serialized as `{"code","message","data"?}` (Zed keeps the
//!   two apart only in memory); a stderr entry's line, a string, without its
//!   line end. `method` is a response's request's method (or
//!   `[unrecognized response]`), and is not needed: the framer pairs by id.
//!
//! Each entry becomes the JSON-RPC message line it was: `{"jsonrpc":"2.0",
//! "id","method","params"}`, or for a response `"result"` or `"error"`. A
//! response's `params` is taken as an error when it is an object with an
//! integer `code`, a string `message`, at most `data` besides and nothing
//! else (the shape of an ACP `Error`); otherwise it is the result. A result
//! of exactly that shape would be read as an error: no ACP method returns
//! one. Values are kept as their exact text with the pretty-printing's
//! whitespace taken out ([`compact`]), so every frame is one line.
//!
//! The copy has no times: every frame is at `t_ns` 0 (latencies are 0, order
//! is the file's), and the trace is pinned to the time the file was last
//! written, as for sacp-tee's raw logs.
//!
//! The array is read as a stream (one entry in memory at a time, none
//! longer than [`MAX_LINE_BYTES`]); a bad entry is reported at the line of
//! its opening brace.

use super::acp_tee::{Gauge, Gauged};
use super::{imported_meta, message_line, Context, ImportError, ImportFormat, TraceSink, MAX_LINE_BYTES};
use crate::model::{Mode, NewFrame};
use acp_tee_shared::Direction;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;
use std::io::BufRead;
use std::rc::Rc;

/// Reads a Zed ACP log copy into one trace.
pub fn read(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let gauge = Rc::new(Gauge::default());
    gauge.mark(MAX_LINE_BYTES);
    let mut de = serde_json::Deserializer::from_reader(Gauged { inner: input, gauge: gauge.clone() });
    let sink = TraceSink::start(ctx, Mode::Import.as_str())?;
    let mut st = State { ctx, sink, gauge: gauge.clone(), failed: None };
    let result = ArraySeed(&mut st).deserialize(&mut de).and_then(|()| de.end());
    let State { ctx, sink, failed, .. } = st;
    if let Some(e) = failed {
        return Err(e);
    }
    if gauge.over.get() {
        let why = format!("a value longer than {} bytes", gauge.limit.get());
        return Err(ctx.invalid(gauge.line.get(), why));
    }
    result.map_err(|e| ImportError::BadFile {
        path: ctx.path.clone(),
        why: format!("not a Zed ACP log (a JSON array of messages): {e}"),
    })?;
    if sink.frames == 0 {
        return Err(ImportError::Empty { path: ctx.path.clone() });
    }
    let started = crate::clock::rfc3339(ctx.file_time());
    let meta = imported_meta(ctx, ImportFormat::Zed, started, sink.last_t_ns);
    sink.finish(ctx, meta, None)
}

/// The import's state while serde walks the array; an error of ours stops
/// the walk and is kept here.
struct State<'c, 'a> {
    ctx: &'c mut Context<'a>,
    sink: TraceSink,
    gauge: Rc<Gauge>,
    failed: Option<ImportError>,
}

struct ArraySeed<'s, 'c, 'a>(&'s mut State<'c, 'a>);

impl<'de> DeserializeSeed<'de> for ArraySeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArraySeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of messages")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let st = self.0;
        while let Some(entry) = seq.next_element_seed(EntrySeed(st.gauge.clone()))? {
            let (line, entry) = entry;
            let made = frame(&mut st.sink, entry);
            let stored = match made {
                Ok(frame) => st.sink.push(st.ctx, frame),
                Err(why) => st.ctx.bad_line(line, why),
            };
            if let Err(e) = stored {
                let msg = e.to_string();
                st.failed = Some(e);
                return Err(de::Error::custom(msg));
            }
            st.gauge.mark(MAX_LINE_BYTES);
        }
        Ok(())
    }
}

/// One entry's members, each as its exact text.
#[derive(Default)]
struct Entry {
    direction: Option<Box<RawValue>>,
    kind: Option<Box<RawValue>>,
    id: Option<Box<RawValue>>,
    method: Option<Box<RawValue>>,
    params: Option<Box<RawValue>>,
}

/// Reads one entry and the line its opening brace is on.
struct EntrySeed(Rc<Gauge>);

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = (u64, Entry);
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed {
    type Value = (u64, Entry);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // serde has read the `{`: the gauge is on its line.
        let line = self.0.line.get();
        let mut e = Entry::default();
        while let Some(key) = map.next_key::<String>()? {
            let slot = match key.as_str() {
                "_direction" => &mut e.direction,
                "_type" => &mut e.kind,
                "id" => &mut e.id,
                "method" => &mut e.method,
                "params" => &mut e.params,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok((line, e))
    }
}

/// The string a member holds, if it is one.
fn string(v: &Option<Box<RawValue>>) -> Option<String> {
    v.as_deref().and_then(|v| serde_json::from_str::<String>(v.get()).ok())
}

/// The shape of an ACP `Error` as Zed writes it into a response's `params`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read only to tell the shape
struct ErrorShape {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<IgnoredAny>,
}

/// Whether a response's `params` is an error rather than a result.
pub fn is_error(params: &str) -> bool {
    serde_json::from_str::<ErrorShape>(params).is_ok()
}

fn frame(sink: &mut TraceSink, e: Entry) -> Result<NewFrame, String> {
    let direction = string(&e.direction).ok_or("an entry without a string `_direction`")?;
    let dir = match direction.as_str() {
        "outgoing" => Direction::ClientToAgent,
        "incoming" => Direction::AgentToClient,
        "stderr" => {
            let line = string(&e.params).ok_or("a stderr entry whose `params` is not its line (a string)")?;
            return Ok(sink.framer.message(Direction::AgentStderr, 0, format!("{line}\n").into_bytes(), None));
        }
        other => return Err(format!("unknown `_direction` `{other}`; expected outgoing, incoming or stderr")),
    };
    let kind = string(&e.kind).ok_or("an entry without a string `_type`")?;
    let id = e.id.as_deref().map(|v| compact(v.get())).filter(|id| id != "null");
    let params = e.params.as_deref().map(|v| compact(v.get()));
    let raw = match kind.as_str() {
        "request" | "notification" => {
            let method = string(&e.method).ok_or_else(|| format!("a {kind} without a string `method`"))?;
            let id = if kind == "request" { Some(id.ok_or("a request without `id`")?) } else { None };
            message_line(id.as_deref(), Some(&method), params.as_deref(), None)
        }
        "response" => {
            let id = id.ok_or("a response without `id`")?;
            let value = params.unwrap_or_else(|| "null".into());
            let key = if is_error(&value) { "error" } else { "result" };
            message_line(Some(&id), None, None, Some((key, &value)))
        }
        other => return Err(format!("unknown `_type` `{other}`; expected request, response or notification")),
    };
    Ok(sink.framer.message(dir, 0, raw, None))
}

/// `json` (valid JSON text) without the whitespace between its tokens;
/// strings, numbers and member order are kept exactly.
pub fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}
