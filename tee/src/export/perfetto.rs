//! Chrome trace-event JSON (`{"traceEvents":[...]}`), which ui.perfetto.dev
//! and chrome://tracing open.
//!
//! Each trace is a process (`pid` = trace id). Each lane is a thread: the
//! callee of a request (`Agent` for client-to-agent requests, `Client` for
//! the agent's own), `agent stderr`, and for imported multi-component traces
//! each component by name. A request is a span on its callee's thread: a `B`
//! event when it is sent, an `E` event when its response arrives (or at the
//! trace's last frame when it was never answered). Spans on one thread must
//! nest, and concurrent requests do not, so overlapping spans go to further
//! threads of the same callee (`Agent #2`, ...). Notifications are instants
//! on the receiver's thread, stderr lines are log instants, invalid frames
//! and batches are instants too; a request answered inside a batch ends at
//! the batch. `ts` is in microseconds since the start (a child trace
//! exported with its parent: since the parent's start).
//!
//! Memory is bounded by the number of requests open at once, not the trace.

use super::{each_frame, jsons::peers, ExportError, ExportOptions, ExportSummary};
use crate::store::{Store, StoredFrame};
use acp_tee_shared::{Direction, FrameKind, TraceMeta};
use serde_json::json;
use std::collections::HashMap;
use std::io::{self, Write};

/// Writes `traces` as one trace-event document.
pub fn write(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let mut summary = ExportSummary::default();
    let mut events = EventWriter { out, first: true };
    events.out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    // A child exported with its parent (`--with-children`) is drawn on
    // the parent's clock, so their frames line up in time.
    let mut offsets: HashMap<i64, f64> = HashMap::new();
    for trace in traces {
        let parent = trace.parent_trace.and_then(|p| Some((traces.iter().find(|t| t.id == p)?, *offsets.get(&p)?)));
        let offset = parent.map(|(p, at)| at + crate::read::family::offset_ns(p, trace) as f64 / 1000.0).unwrap_or(0.0);
        offsets.insert(trace.id, offset);
    }
    for trace in traces {
        let name = format!("acp-tee trace {}: {}", trace.id, trace.name.as_deref().unwrap_or("unnamed"));
        events.write(&json!({"ph":"M","pid":trace.id,"tid":0,"name":"process_name","args":{"name":name}}))?;
        let mut tracks = Tracks::new(trace.id, offsets.get(&trace.id).copied().unwrap_or(0.0));
        each_frame(store, trace, opts, &mut summary, |f| {
            tracks.frame(&f, &mut events)?;
            if f.kind == FrameKind::Batch {
                // Requests answered inside the batch end with it.
                for request in store.batch_replies(trace.id, f.seq)? {
                    tracks.answered(request, &f, &mut events)?;
                }
            }
            Ok(())
        })?;
        tracks.close_open(&mut events)?;
    }
    events.out.write_all(b"\n]}\n")?;
    Ok(summary)
}

struct EventWriter<'a> {
    out: &'a mut dyn Write,
    first: bool,
}

impl EventWriter<'_> {
    fn write(&mut self, event: &serde_json::Value) -> Result<(), ExportError> {
        self.out.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut *self.out, event).map_err(io::Error::from)?;
        Ok(())
    }
}

/// The threads of one trace and the spans open on them.
struct Tracks {
    pid: i64,
    /// Component name -> its number (1-based) and which of its lanes are busy.
    parties: HashMap<String, (i64, Vec<bool>)>,
    /// Request seq -> (party name, lane) of its open span.
    open: HashMap<i64, (String, usize)>,
    /// The latest timestamp written, in µs: time never goes back on a track.
    last_us: f64,
    /// Where the trace starts on the clock of the export: its parent's,
    /// when its parent is exported with it.
    offset_us: f64,
}

impl Tracks {
    fn new(pid: i64, offset_us: f64) -> Tracks {
        Tracks { pid, parties: HashMap::new(), open: HashMap::new(), last_us: 0.0, offset_us }
    }

    /// The thread id of `party`'s lane `lane`, naming it on first use.
    fn tid(&mut self, party: &str, lane: usize, events: &mut EventWriter) -> Result<i64, ExportError> {
        let fixed = match party {
            "Client" => Some(1),
            "Agent" => Some(2),
            "agent stderr" => Some(3),
            _ => None,
        };
        let next = 4 + self.parties.values().filter(|(n, _)| *n >= 4).count() as i64;
        let (number, lanes) =
            self.parties.entry(party.to_owned()).or_insert_with(|| (fixed.unwrap_or(next), Vec::new()));
        let tid = *number * 1000 + lane as i64;
        if lanes.len() <= lane {
            lanes.resize(lane + 1, false);
            let name = if lane == 0 { party.to_owned() } else { format!("{party} #{}", lane + 1) };
            events.write(&json!({"ph":"M","pid":self.pid,"tid":tid,"name":"thread_name","args":{"name":name}}))?;
            events.write(
                &json!({"ph":"M","pid":self.pid,"tid":tid,"name":"thread_sort_index","args":{"sort_index":tid}}),
            )?;
        }
        Ok(tid)
    }

    /// Takes the lowest free lane of `party`.
    fn acquire(&mut self, party: &str, events: &mut EventWriter) -> Result<(usize, i64), ExportError> {
        let lane = self.parties.get(party).and_then(|(_, lanes)| lanes.iter().position(|busy| !busy));
        let lane = lane.unwrap_or_else(|| self.parties.get(party).map_or(0, |(_, l)| l.len()));
        let tid = self.tid(party, lane, events)?;
        self.parties.get_mut(party).expect("tid registered it").1[lane] = true;
        Ok((lane, tid))
    }

    fn frame(&mut self, f: &StoredFrame, events: &mut EventWriter) -> Result<(), ExportError> {
        let us = (self.offset_us + f.t_ns as f64 / 1000.0).max(self.last_us);
        self.last_us = us;
        let (_, receiver) = peers(f);
        let cat = if f.mcp { "mcp" } else { "acp" };
        let method = f.method.as_deref().unwrap_or("?");
        let id = f.rpc_id.as_deref().unwrap_or("");
        match f.kind {
            FrameKind::Request => {
                let (lane, tid) = self.acquire(receiver, events)?;
                self.open.insert(f.seq, (receiver.to_owned(), lane));
                let args = json!({"seq":f.seq,"id":id,"session":f.session_id,"dir":f.dir.as_str()});
                events.write(&json!({"ph":"B","pid":self.pid,"tid":tid,"ts":us,"name":method,"cat":cat,"args":args}))
            }
            FrameKind::Response | FrameKind::Error => {
                let outcome = if f.kind == FrameKind::Error { "error" } else { "ok" };
                match f.reply_to_seq.and_then(|s| self.open.remove(&s)) {
                    Some((party, lane)) => self.end(&party, lane, us, outcome, Some(f.seq), events),
                    None => self.instant(receiver, us, &format!("{method} (unpaired {outcome})"), cat, f, events),
                }
            }
            FrameKind::Notification => self.instant(receiver, us, method, cat, f, events),
            FrameKind::Stderr => {
                let line = String::from_utf8_lossy(&f.raw);
                let line = line.trim_end();
                let name: String = line.chars().take(80).collect();
                let tid = self.tid("agent stderr", 0, events)?;
                let args = json!({"seq":f.seq,"line":line});
                events.write(
                    &json!({"ph":"i","s":"t","pid":self.pid,"tid":tid,"ts":us,"name":name,"cat":"stderr","args":args}),
                )
            }
            FrameKind::Batch | FrameKind::Invalid => {
                let party = if f.dir == Direction::AgentToClient { "Client" } else { "Agent" };
                self.instant(party, us, f.kind.as_str(), cat, f, events)
            }
        }
    }

    /// Ends the span of request `request`, answered inside batch `f`.
    fn answered(&mut self, request: i64, f: &StoredFrame, events: &mut EventWriter) -> Result<(), ExportError> {
        match self.open.remove(&request) {
            Some((party, lane)) => self.end(&party, lane, self.last_us, "answered in a batch", Some(f.seq), events),
            None => Ok(()),
        }
    }

    fn instant(
        &mut self,
        party: &str,
        us: f64,
        name: &str,
        cat: &str,
        f: &StoredFrame,
        events: &mut EventWriter,
    ) -> Result<(), ExportError> {
        let tid = self.tid(party, 0, events)?;
        let args = json!({"seq":f.seq,"session":f.session_id,"dir":f.dir.as_str()});
        events.write(&json!({"ph":"i","s":"t","pid":self.pid,"tid":tid,"ts":us,"name":name,"cat":cat,"args":args}))
    }

    fn end(
        &mut self,
        party: &str,
        lane: usize,
        us: f64,
        outcome: &str,
        seq: Option<i64>,
        events: &mut EventWriter,
    ) -> Result<(), ExportError> {
        let tid = self.tid(party, lane, events)?;
        if let Some((_, lanes)) = self.parties.get_mut(party) {
            lanes[lane] = false;
        }
        let args = json!({"outcome":outcome,"response_seq":seq});
        events.write(&json!({"ph":"E","pid":self.pid,"tid":tid,"ts":us,"args":args}))
    }

    /// Ends the spans of requests never answered at the last timestamp.
    fn close_open(&mut self, events: &mut EventWriter) -> Result<(), ExportError> {
        let mut open: Vec<(i64, (String, usize))> = self.open.drain().collect();
        open.sort_by_key(|(seq, _)| *seq);
        for (_, (party, lane)) in open {
            self.end(&party, lane, self.last_us, "unanswered", None, events)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{export, tests::store_with_trace, ExportFormat, ExportOptions, TraceSelection};

    #[test]
    fn a_request_is_a_span_on_the_callee_and_stderr_an_instant() {
        let mut out = Vec::new();
        let opts = ExportOptions::new(ExportFormat::Perfetto);
        export(&store_with_trace(), TraceSelection::Latest, &opts, &mut out).unwrap();
        let expect = concat!(
            "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n",
            r#"{"ph":"M","pid":1,"tid":0,"name":"process_name","args":{"name":"acp-tee trace 1: demo"}},"#,
            "\n",
            r#"{"ph":"M","pid":1,"tid":2000,"name":"thread_name","args":{"name":"Agent"}},"#,
            "\n",
            r#"{"ph":"M","pid":1,"tid":2000,"name":"thread_sort_index","args":{"sort_index":2000}},"#,
            "\n",
            r#"{"ph":"B","pid":1,"tid":2000,"ts":1.0,"name":"initialize","cat":"acp","args":{"seq":1,"id":"1","session":null,"dir":"client_to_agent"}},"#,
            "\n",
            r#"{"ph":"M","pid":1,"tid":3000,"name":"thread_name","args":{"name":"agent stderr"}},"#,
            "\n",
            r#"{"ph":"M","pid":1,"tid":3000,"name":"thread_sort_index","args":{"sort_index":3000}},"#,
            "\n",
            r#"{"ph":"i","s":"t","pid":1,"tid":3000,"ts":1.5,"name":"bad � byte","cat":"stderr","args":{"seq":2,"line":"bad � byte"}},"#,
            "\n",
            r#"{"ph":"E","pid":1,"tid":2000,"ts":4.0,"args":{"outcome":"error","response_seq":3}}"#,
            "\n]}\n",
        );
        assert_eq!(String::from_utf8(out).unwrap(), expect);
    }
}
