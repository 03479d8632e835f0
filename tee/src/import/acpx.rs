//! Importing acpx flow session events: the `events.ndjson` acpx writes for
//! each session of a flow run, under
//! `~/.acpx/flows/runs/RUN/sessions/SESSION/`.
//!
//! One `{"seq","at","direction","message"}` per line: `seq` counts from 1,
//! `at` is an RFC 3339 time, `direction` is `outbound` for what acpx (the
//! client) wrote to the agent and `inbound` for what it read, and `message`
//! is the JSON-RPC message as acpx parsed it (written back by
//! `JSON.stringify`, so its text is acpx's, not the wire's). acpx captures
//! the messages of each prompt turn, from `session/prompt` on: a file has no
//! `initialize` or `session/new`.
//!
//! The file is one trace. A frame keeps its `seq` (a gap counts as missing,
//! a repeated one is a bad line); times count from the first line's `at`.

use super::{Context, ImportError, ImportFormat, Stamps, TraceSink};
use crate::model::{Mode, NewFrame};
use crate::store::MAX_SEQ;
use acp_tee_shared::Direction;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::io::BufRead;

#[derive(Deserialize)]
struct Event<'a> {
    seq: i64,
    #[serde(borrow)]
    at: Cow<'a, str>,
    #[serde(borrow)]
    direction: Cow<'a, str>,
    #[serde(borrow)]
    message: &'a RawValue,
}

/// Reads an acpx `events.ndjson` into one trace.
pub fn read(ctx: &mut Context, input: impl BufRead) -> Result<(), ImportError> {
    let mut sink = TraceSink::start(ctx, Mode::Import.as_str())?;
    let mut stamps = Stamps::default();
    ctx.lines(input, |ctx, number, line| {
        let e = match serde_json::from_str::<Event>(line) {
            Ok(e) => e,
            Err(e) => return ctx.bad_line(number, format!("not an acpx session event: {e}")),
        };
        if sink.has_seq(ctx, e.seq)? {
            return ctx.bad_line(number, format!("duplicate seq {}", e.seq));
        }
        match frame(&mut sink, &mut stamps, e) {
            Ok(frame) => sink.push(ctx, frame),
            Err(why) => ctx.bad_line(number, why),
        }
    })?;
    stamps.finish(ctx, sink, ImportFormat::Acpx)
}

fn frame(sink: &mut TraceSink, stamps: &mut Stamps, e: Event) -> Result<NewFrame, String> {
    if !(1..=MAX_SEQ).contains(&e.seq) {
        return Err(format!("`seq` must be from 1 to 2^40 - 1, not {}", e.seq));
    }
    let dir = match &*e.direction {
        "outbound" => Direction::ClientToAgent,
        "inbound" => Direction::AgentToClient,
        other => return Err(format!("unknown direction `{other}`; expected outbound or inbound")),
    };
    let at = chrono::DateTime::parse_from_rfc3339(&e.at)
        .map_err(|err| format!("`at` {:?} is not RFC 3339: {err}", e.at))?
        .with_timezone(&chrono::Utc);
    let raw = format!("{}\n", e.message.get()).into_bytes();
    Ok(sink.framer.message_at(e.seq, dir, stamps.t_ns(at), raw, None))
}
