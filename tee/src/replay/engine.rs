//! The replay itself, for either side: we play the messages one direction
//! of the recording sent ("ours"), each once the live peer has sent what
//! the recording had from it before that message, and answer the peer's
//! requests with the recorded answers.
//!
//! The matching rules (docs/replay.md):
//!
//! - The live peer's messages are counted per [`Key`]; the k-th of a key is
//!   aligned with the recording's k-th, and the minted values in the two
//!   (`sessionId`, `toolCallId`, `terminalId`) are paired (`names::learn`):
//!   what we send carries the live run's values.
//! - One of our messages goes out once the peer has sent as many of the key
//!   of the last message it had sent before it in the recording.
//! - A request from the peer is matched with the first recorded request of
//!   the same method not matched yet whose params are equal (minted values
//!   mapped back), else with the first of that method not matched yet; the
//!   recorded answer to it goes out (when its turn comes) with the live
//!   request's id. A request without a recorded counterpart is answered
//!   with an error at once.
//! - Our requests keep their recorded ids.

use super::names;
use super::script::{Recorded, Script};
use super::Key;
use acp_tee_shared::{Direction, FrameKind};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant};

/// The JSON-RPC error code of the answer to a request the recording has no
/// answer for (the code of an internal error).
pub const NO_RECORDED_ANSWER: i64 = -32603;

/// What comes from the live peer.
#[derive(Debug)]
pub enum Incoming {
    /// One message.
    Message(Live),
    /// A line that is no JSON (or too long): counted, else ignored.
    Bad,
    /// The peer closed its output.
    End,
}

/// One message from the live peer, read as the recorder reads a frame
/// ([`crate::frame::classify_with`]).
#[derive(Debug)]
pub struct Live {
    /// The message.
    pub value: Value,
    /// Request, notification or answer.
    pub kind: FrameKind,
    /// Its method.
    pub method: Option<String>,
    /// Its id's key ([`crate::frame::id_key`]).
    pub id: Option<String>,
    /// The line as the peer wrote it.
    pub raw: Vec<u8>,
}

impl Live {
    /// The message of `line`, `None` when it is no single JSON-RPC message.
    pub fn read(line: Vec<u8>) -> Option<Live> {
        let c = crate::frame::classify_with(&line, false);
        let kind = c.frame_kind();
        if !matches!(kind, FrameKind::Request | FrameKind::Notification | FrameKind::Response | FrameKind::Error) {
            return None;
        }
        let value = serde_json::from_slice(&line).ok()?;
        let id = c.id.as_deref().map(|id| crate::frame::id_key(id).into_owned());
        Some(Live { value, kind, method: c.method, id, raw: line })
    }
}

/// How a replay ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Every message was sent and every recorded answer to ours came.
    Completed,
    /// The peer did not do what the recording had it do; why.
    Diverged(String),
}

/// What a replay counted.
#[derive(Debug, Default)]
pub struct Tally {
    /// Our messages sent.
    pub sent: u64,
    /// Messages of the peer received.
    pub received: u64,
    /// Requests of the peer answered from the recording.
    pub answered: u64,
    /// Requests of the peer without a recorded counterpart (answered with an error).
    pub unmatched: Vec<String>,
    /// Lines of the peer that were no message.
    pub bad_lines: u64,
}

/// When our messages go.
#[derive(Clone, Copy, Debug)]
pub enum Timing {
    /// Each once the peer reached the point it had in the recording.
    Reached,
    /// Each at its recorded time since the first (`--timing recorded`).
    Recorded,
}

/// The state of one replay.
pub struct Engine<'s> {
    script: &'s Script,
    ours: Direction,
    /// Indices of our messages, in order.
    steps: Vec<usize>,
    /// Per step: the key of the peer's last message before it and how many
    /// of that key the peer had sent by then.
    after: Vec<Option<(Key, usize)>>,
    next: usize,
    /// The peer's messages so far, per key.
    seen: HashMap<Key, usize>,
    /// The peer's recorded messages per key, in order.
    recorded_of: HashMap<Key, Vec<usize>>,
    /// Recorded minted values → the live run's.
    minted: HashMap<String, String>,
    /// Live minted values → the recording's (to match requests by content).
    minted_back: HashMap<String, String>,
    /// The peer's recorded requests matched with a live one: its live id.
    live_ids: HashMap<usize, Value>,
    /// Our requests not answered yet (by id text) that the recording has answers to.
    awaited: HashMap<String, usize>,
    /// Our request ids sent → their method.
    our_methods: HashMap<String, String>,
    timing: Timing,
    /// The recorded requests that have a recorded answer.
    has_answer: HashSet<usize>,
    /// The peer's recorded requests per method, in order, with how many
    /// at the front are matched already.
    requests_of: HashMap<String, (usize, Vec<usize>)>,
    /// When the current step became the next one.
    since: Instant,
    /// Messages received from the peer since then.
    received_since: u64,
    started: Instant,
    /// What was counted.
    pub tally: Tally,
}

/// Recorded requests of one method a live request is compared with at most.
pub const MATCH_WINDOW: usize = 64;

/// How many of the requests we await or remember, and keys of the peer's
/// messages we count, we keep at most.
const TRACKED_MAX: usize = 100_000;

impl<'s> Engine<'s> {
    /// A replay of `script` in which we send what went `ours`.
    pub fn new(script: &'s Script, ours: Direction, timing: Timing) -> Engine<'s> {
        let mut steps = Vec::new();
        let mut after = Vec::new();
        let mut counts: HashMap<Key, usize> = HashMap::new();
        let mut last: Option<(Key, usize)> = None;
        let mut recorded_of: HashMap<Key, Vec<usize>> = HashMap::new();
        let mut has_answer = HashSet::new();
        let mut requests_of: HashMap<String, (usize, Vec<usize>)> = HashMap::new();
        for (i, m) in script.messages.iter().enumerate() {
            if let Some(r) = m.reply_to {
                has_answer.insert(r);
            }
            if m.key.dir != ours && m.is_request() {
                requests_of.entry(m.key.method.clone().unwrap_or_default()).or_default().1.push(i);
            }
            if m.key.dir == ours {
                steps.push(i);
                after.push(last.clone());
            } else {
                let n = counts.entry(m.key.clone()).or_default();
                *n += 1;
                last = Some((m.key.clone(), *n));
                recorded_of.entry(m.key.clone()).or_default().push(i);
            }
        }
        Engine {
            script,
            ours,
            steps,
            after,
            next: 0,
            seen: HashMap::new(),
            recorded_of,
            minted: HashMap::new(),
            minted_back: HashMap::new(),
            live_ids: HashMap::new(),
            awaited: HashMap::new(),
            our_methods: HashMap::new(),
            timing,
            has_answer,
            requests_of,
            since: Instant::now(),
            received_since: 0,
            started: Instant::now(),
            tally: Tally::default(),
        }
    }

    /// Whether every step was sent and every recorded answer to ours came.
    pub fn done(&self) -> bool {
        self.next == self.steps.len() && self.awaited.is_empty()
    }

    /// Sends every step whose time has come to `out`.
    pub fn send_ready(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        while self.next < self.steps.len() && self.ready(self.next) {
            self.send_step(out)?;
        }
        out.flush()
    }

    /// How long until the next step is due by the clock (`--timing
    /// recorded`); `None` when it waits on the peer, or nothing is left.
    pub fn due_in(&self) -> Option<Duration> {
        let Timing::Recorded = self.timing else { return None };
        let step = *self.steps.get(self.next)?;
        Some(self.at(step).saturating_sub(self.started.elapsed()))
    }

    /// When step `i` (a message index) is due, since the start, by the clock.
    fn at(&self, i: usize) -> Duration {
        let first = self.steps.first().map_or(0, |s| self.script.messages[*s].t_ns);
        Duration::from_nanos((self.script.messages[i].t_ns - first).max(0) as u64)
    }

    /// Whether step `n` can go now.
    fn ready(&self, n: usize) -> bool {
        let m = &self.script.messages[self.steps[n]];
        if let Some(req) = m.reply_to {
            if !self.live_ids.contains_key(&req) {
                return false;
            }
        }
        match self.timing {
            Timing::Recorded => self.started.elapsed() >= self.at(self.steps[n]),
            Timing::Reached => match &self.after[n] {
                None => true,
                Some((key, count)) => self.seen.get(key).copied().unwrap_or(0) >= *count,
            },
        }
    }

    fn send_step(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        let i = self.steps[self.next];
        let m = &self.script.messages[i];
        let mut v = m.value.clone();
        names::apply(&mut v, &self.minted);
        if let (Some(req), Value::Object(obj)) = (m.reply_to, &mut v) {
            if let Some(id) = self.live_ids.get(&req) {
                obj.insert("id".into(), id.clone());
            }
        }
        if m.is_request() {
            let id = m.id.clone().unwrap_or_default();
            if self.our_methods.len() < TRACKED_MAX {
                self.our_methods.insert(id.clone(), m.key.method.clone().unwrap_or_default());
            }
            if self.answered_in_recording(i) {
                self.awaited.insert(id, i);
            }
        }
        let mut line = serde_json::to_vec(&v).expect("a Value serialises");
        line.push(b'\n');
        out.write_all(&line)?;
        self.tally.sent += 1;
        self.next += 1;
        self.since = Instant::now();
        self.received_since = 0;
        Ok(())
    }

    fn answered_in_recording(&self, request: usize) -> bool {
        self.has_answer.contains(&request)
    }

    /// Takes one message from the peer; answers at once, on `out`, a
    /// request the recording has no answer to.
    pub fn receive(&mut self, live: Live, out: &mut impl Write) -> std::io::Result<()> {
        self.tally.received += 1;
        self.received_since += 1;
        let theirs = match self.ours {
            Direction::ClientToAgent => Direction::AgentToClient,
            _ => Direction::ClientToAgent,
        };
        let Live { value: v, kind, method, id: id_text, raw } = live;
        let id = v.get("id").cloned();
        let answered = match kind {
            FrameKind::Response | FrameKind::Error => {
                let id_text = id_text.unwrap_or_default();
                self.awaited.remove(&id_text);
                self.our_methods.get(&id_text).cloned()
            }
            _ => None,
        };
        let key = Key::of(theirs, kind, method.as_deref().or(answered.as_deref()), &raw);
        if self.seen.len() >= TRACKED_MAX && !self.seen.contains_key(&key) {
            return Ok(());
        }
        let count = self.seen.entry(key.clone()).or_default();
        *count += 1;
        let count = *count;
        if let Some(&r) = self.recorded_of.get(&key).and_then(|list| list.get(count - 1)) {
            let recorded = &self.script.messages[r].value;
            names::learn(recorded, &v, &mut self.minted);
            names::learn(&v, recorded, &mut self.minted_back);
        }
        if kind == FrameKind::Request {
            let method = method.unwrap_or_default();
            match self.match_request(&method, &v) {
                Some(r) => {
                    self.live_ids.insert(r, id.unwrap_or(Value::Null));
                    self.tally.answered += 1;
                }
                None => {
                    if self.tally.unmatched.len() < 100 {
                        self.tally.unmatched.push(method.clone());
                    }
                    let answer = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {"code": NO_RECORDED_ANSWER, "message": format!("acp-tee replay: the recording has no answer to this {method} request")},
                    });
                    let mut line = serde_json::to_vec(&answer).expect("a Value serialises");
                    line.push(b'\n');
                    out.write_all(&line)?;
                    out.flush()?;
                }
            }
        }
        Ok(())
    }

    /// The recorded request of the peer that live request `v` stands for:
    /// among the first [`MATCH_WINDOW`] of the same method not yet matched
    /// that have a recorded answer, the first with equal params (minted
    /// values mapped back to the recording's), else the first.
    fn match_request(&mut self, method: &str, v: &Value) -> Option<usize> {
        let mut params = v.get("params").cloned().unwrap_or(Value::Null);
        names::apply(&mut params, &self.minted_back);
        let (front, list) = self.requests_of.get_mut(method)?;
        while *front < list.len() && self.live_ids.contains_key(&list[*front]) {
            *front += 1;
        }
        let candidates: Vec<usize> = list[*front..]
            .iter()
            .copied()
            .filter(|i| !self.live_ids.contains_key(i) && self.has_answer.contains(i))
            .take(MATCH_WINDOW)
            .collect();
        let same = |i: &&usize| self.script.messages[**i].value.get("params").unwrap_or(&Value::Null) == &params;
        candidates.iter().find(same).or(candidates.first()).copied()
    }

    /// How many messages the peer sent while the next step waited.
    pub fn received_while_waiting(&self) -> u64 {
        self.received_since
    }

    /// How long the next step has waited, and for what (for a divergence).
    pub fn waiting(&self) -> (Duration, String) {
        let Some(&i) = self.steps.get(self.next) else {
            let ids: Vec<&String> = self.awaited.keys().take(3).collect();
            let what = ids
                .iter()
                .filter_map(|id| self.our_methods.get(*id).map(|m| format!("{m} (id {id})")))
                .collect::<Vec<_>>()
                .join(", ");
            return (self.since.elapsed(), format!("every message was sent; no answer came to {what}"));
        };
        let m: &Recorded = &self.script.messages[i];
        let mut what = format!("the recorded {} (seq {}) waits", m.key.describe(), m.seq);
        let unanswered = m.reply_to.filter(|req| !self.live_ids.contains_key(req));
        if let Some(req) = unanswered {
            let r = &self.script.messages[req];
            what.push_str(&format!(
                " for the {} it answers (recorded seq {}), not sent by the peer",
                r.key.describe(),
                r.seq
            ));
        } else if let Some((key, count)) = &self.after[self.next] {
            let got = self.seen.get(key).copied().unwrap_or(0);
            what.push_str(&format!(" for the peer's {} {} (it sent {got})", nth(*count), key.describe()));
        }
        (self.since.elapsed(), what)
    }
}

/// `1st`, `2nd`, `3rd`, `4th`...
fn nth(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}
