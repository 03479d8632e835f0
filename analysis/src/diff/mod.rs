//! `acp-tee diff`: two traces aligned message by message.
//!
//! Each message (stderr lines are not messages) becomes a key — direction,
//! kind (a response and an error are both answers), method (a response's
//! is its request's) and, for `session/update`, the update's kind — and a
//! hash of its contents with JSON-RPC ids left out, minted values named
//! (`names.rs`) and the `--ignore` paths removed. The keys are aligned
//! (`align.rs`) per session: a message belongs to the session it names
//! (`params.sessionId`, `result.sessionId`; an answer to its request's),
//! sessions are matched by their names, which follow the order their ids
//! first appear (their `session/new` answers), and the messages of no
//! session (`initialize`, ...) are aligned among themselves, so two
//! faithful runs of concurrent sessions whose frames interleave differently
//! compare equal. Aligned messages with different hashes are changed, the
//! others added or missing. Only the changed messages listed
//! ([`DIFF_MAX_LISTED`]) are read again, to say which values differ.
//!
//! Memory and work are bounded whatever the traces hold: at most
//! [`DIFF_MAX_MESSAGES`] messages per side are compared (a few dozen
//! bytes each), a message is parsed only up to [`DIFF_MAX_FRAME_BYTES`]
//! (a larger one is compared by its bytes), the alignment by
//! [`ALIGN_MAX_EDITS`](align::ALIGN_MAX_EDITS), turns by
//! [`DIFF_MAX_TURNS`], value differences by [`VALUES_MAX`] per message,
//! distinct keys by [`DIFF_MAX_KEYS`].

use self::align::Op;
use self::names::Names;
use crate::fold::{self, Conversation, Event};
use crate::redact::JsonPath;
use crate::store::{FrameRef, Store, StoreError, StoredFrame};
use acp_tee_shared::diff::{ChangeKind, DiffSide, MessageChange, MethodLatency, TraceDiff, TurnEnd, ValueChange};
use acp_tee_shared::{Direction, FrameKind};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

pub mod align;
mod key;
pub mod names;
pub mod turns;

pub use key::Key;

/// Messages per side compared at most; the rest are counted as not read
/// (`DiffSide::truncated`).
pub const DIFF_MAX_MESSAGES: usize = 200_000;

/// The largest message whose contents are parsed (ids left out, minted
/// values named); a larger one is compared by its exact bytes.
pub const DIFF_MAX_FRAME_BYTES: usize = 1 << 20;

/// Added, missing or changed messages listed at most (all are counted).
pub const DIFF_MAX_LISTED: usize = 200;

/// Differing values listed per changed message at most.
pub const VALUES_MAX: usize = 50;

/// Characters of a differing value shown at most (a longer string, object
/// or array is cut, or summarised by its size).
pub const VALUE_MAX_CHARS: usize = 300;

/// How a turn ended, said of a turn whose prompt is among the messages read
/// and whose answer is not (past [`DIFF_MAX_MESSAGES`]).
pub const END_NOT_READ: &str = "past the messages read";

/// Prompt turns per side whose ends are compared at most.
pub const DIFF_MAX_TURNS: usize = 10_000;

/// The keys of both sides, numbered.
#[derive(Default)]
struct Keys {
    numbers: HashMap<Key, u32>,
    keys: Vec<Key>,
}

/// Distinct keys (direction, kind, method, update kind) numbered at most;
/// past it a message with a new method counts under one key per direction
/// and kind, method `…` (a hostile trace may give every message a method of
/// its own).
pub const DIFF_MAX_KEYS: usize = 10_000;

impl Keys {
    fn number(&mut self, mut key: Key) -> u32 {
        if self.keys.len() >= DIFF_MAX_KEYS && !self.numbers.contains_key(&key) {
            key = Key { method: Some("…".into()), update: None, ..key };
        }
        if let Some(n) = self.numbers.get(&key) {
            return *n;
        }
        let n = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.numbers.insert(key, n);
        n
    }
}

/// One message of a side.
struct Entry {
    seq: i64,
    t_ns: i64,
    key: u32,
    kind: FrameKind,
    hash: u64,
    reply_to: Option<i64>,
    /// The session it belongs to, by name (`None`: no session).
    session: Option<String>,
}

/// One side, read.
struct Side {
    entries: Vec<Entry>,
    truncated: bool,
    names: Names,
    /// Per prompt, in order: its session's name and how it ended.
    turns: Vec<(String, Option<String>)>,
    /// The prompt's seq → its index in `turns`.
    prompts: HashMap<i64, usize>,
    /// The one fold, which tells the turns.
    conversation: Conversation,
    /// `clientCapabilities` and `agentCapabilities` of the first `initialize`.
    capabilities: serde_json::Map<String, Value>,
    initialize_seq: Option<i64>,
    /// A request's seq → the session it named (for its answer), at most
    /// one per message read.
    sessions: HashMap<i64, String>,
}

/// What the diff is asked to leave out.
#[derive(Default)]
pub struct DiffOptions {
    /// Values removed before comparing (`--ignore`).
    pub ignore: Vec<JsonPath>,
    /// Masks each message before it is read (`serve` masks what it serves).
    pub redactor: Option<crate::redact::Redactor>,
}

/// One side of a comparison: a trace of a store.
#[derive(Clone, Copy)]
pub struct SideRef<'a> {
    /// The store.
    pub store: &'a Store,
    /// The trace.
    pub trace_id: i64,
}

/// Compares `a` with `b`.
pub fn diff(a: SideRef<'_>, b: SideRef<'_>, opts: &DiffOptions) -> Result<TraceDiff, StoreError> {
    let mut keys = Keys::default();
    let side_a = read_side(a, &mut keys, opts)?;
    let side_b = read_side(b, &mut keys, opts)?;
    let (ops, method) = align_per_session(&side_a, &side_b);
    let mut out = TraceDiff {
        equivalent: true,
        a: describe(a, &side_a)?,
        b: describe(b, &side_b)?,
        alignment: match method {
            align::Method::Edits => "edits".into(),
            align::Method::Order => "order".into(),
        },
        equal_messages: 0,
        changed_messages: 0,
        messages: Vec::new(),
        capabilities: Vec::new(),
        latency: latency(&side_a, &side_b, &keys),
        turns: turns(&side_a, &side_b),
        turn_changes: turns::turn_diffs(a, b, opts.redactor.as_ref())?,
        only_chunking: false,
    };
    // Whether every message that differs is a streamed chunk.
    let mut only_chunks = true;
    let mut names = (side_a.names, side_b.names);
    for op in ops {
        let (ea, eb) = match op {
            Op::Both(i, j) if side_a.entries[i].hash == side_b.entries[j].hash => {
                out.equal_messages += 1;
                continue;
            }
            Op::Both(i, j) => (Some(&side_a.entries[i]), Some(&side_b.entries[j])),
            Op::OnlyA(i) => (Some(&side_a.entries[i]), None),
            Op::OnlyB(j) => (None, Some(&side_b.entries[j])),
        };
        out.changed_messages += 1;
        let key = &keys.keys[ea.or(eb).map_or(0, |e| e.key) as usize];
        only_chunks &= key.update.as_deref().is_some_and(is_chunk);
        if out.messages.len() < DIFF_MAX_LISTED {
            out.messages.push(change(a, b, ea, eb, &keys, &mut names, opts)?);
        }
    }
    let caps_a = Value::Object(side_a.capabilities);
    let caps_b = Value::Object(side_b.capabilities);
    let mut truncated = false;
    value_changes(&caps_a, &caps_b, &mut String::new(), &mut out.capabilities, &mut truncated);
    out.equivalent = out.changed_messages == 0 && out.capabilities.is_empty() && out.turns.iter().all(|t| t.a == t.b);
    let texts_alike = out.turn_changes.turns.iter().all(|t| t.message_same && t.thought_same && t.tools.is_empty())
        && out.turn_changes.changed == out.turn_changes.turns.len() as u64;
    out.only_chunking = !out.equivalent
        && out.changed_messages > 0
        && only_chunks
        && texts_alike
        && out.capabilities.is_empty()
        && out.turns.iter().all(|t| t.a == t.b);
    Ok(out)
}

/// True for the `session/update` kinds that stream text in chunks.
fn is_chunk(update: &str) -> bool {
    matches!(update, "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk")
}

/// The alignment of `a` with `b`, session by session (sessions by name;
/// the messages of no session first), as indices into their entries.
fn align_per_session(a: &Side, b: &Side) -> (Vec<Op>, align::Method) {
    let mut groups: BTreeMap<Option<&str>, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, e) in a.entries.iter().enumerate() {
        groups.entry(e.session.as_deref()).or_default().0.push(i);
    }
    for (j, e) in b.entries.iter().enumerate() {
        groups.entry(e.session.as_deref()).or_default().1.push(j);
    }
    let mut ops = Vec::with_capacity(a.entries.len().max(b.entries.len()));
    let mut method = align::Method::Edits;
    for (ia, ib) in groups.values() {
        let ka: Vec<u32> = ia.iter().map(|&i| a.entries[i].key).collect();
        let kb: Vec<u32> = ib.iter().map(|&j| b.entries[j].key).collect();
        let (group_ops, group_method) = align::align(&ka, &kb);
        if matches!(group_method, align::Method::Order) {
            method = align::Method::Order;
        }
        ops.extend(group_ops.into_iter().map(|op| match op {
            Op::Both(i, j) => Op::Both(ia[i], ib[j]),
            Op::OnlyA(i) => Op::OnlyA(ia[i]),
            Op::OnlyB(j) => Op::OnlyB(ib[j]),
        }));
    }
    (ops, method)
}

fn describe(o: SideRef<'_>, side: &Side) -> Result<DiffSide, StoreError> {
    let meta = o.store.trace(o.trace_id)?;
    Ok(DiffSide {
        trace_id: o.trace_id,
        name: meta.name,
        messages: side.entries.len() as u64,
        truncated: side.truncated,
    })
}

/// A frame's contents as compared: parsed (when small enough) with the
/// ids left out, minted values named and ignored paths removed.
fn normalised(raw: &[u8], names: &mut Names, opts: &DiffOptions) -> Option<Value> {
    if raw.len() > DIFF_MAX_FRAME_BYTES {
        return None;
    }
    let masked = match &opts.redactor {
        Some(r) => r.redact(raw),
        None => std::borrow::Cow::Borrowed(raw),
    };
    let mut v: Value = serde_json::from_slice(&masked).ok()?;
    strip_ids(&mut v);
    names.normalise(&mut v);
    names::remove_ignored(&mut v, &opts.ignore);
    Some(v)
}

/// Leaves out the JSON-RPC ids of a message, or of each message of a batch.
fn strip_ids(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("id");
        }
        Value::Array(items) => items.iter_mut().for_each(|i| {
            if let Value::Object(m) = i {
                m.remove("id");
            }
        }),
        _ => {}
    }
}

fn hash_of(v: Option<&Value>, raw: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match v {
        Some(v) => v.to_string().hash(&mut h),
        None => raw.hash(&mut h),
    }
    h.finish()
}

/// A stop reason as kept (hostile traces give them any length).
fn cut_reason(m: &str) -> String {
    m.chars().take(VALUE_MAX_CHARS).collect()
}

fn read_side(o: SideRef<'_>, keys: &mut Keys, opts: &DiffOptions) -> Result<Side, StoreError> {
    let mut side = Side {
        entries: Vec::new(),
        truncated: false,
        names: Names::default(),
        turns: Vec::new(),
        prompts: HashMap::new(),
        conversation: Conversation::default(),
        capabilities: serde_json::Map::new(),
        initialize_seq: None,
        sessions: HashMap::new(),
    };
    o.store.for_each_frame_after(o.trace_id, 0, |f: StoredFrame| -> Result<bool, StoreError> {
        if f.dir == Direction::AgentStderr {
            return Ok(true);
        }
        if side.entries.len() >= DIFF_MAX_MESSAGES {
            side.truncated = true;
            return Ok(false);
        }
        let value = normalised(&f.raw, &mut side.names, opts);
        let key = match &value {
            Some(_) => Key::of(f.dir, f.kind, f.method.as_deref(), &f.raw),
            None => Key::new(f.dir, f.kind, f.method.as_deref(), None),
        };
        // The session the frame names, as the recorder read it, by the name
        // `normalised` gave it.
        let names = &mut side.names;
        let named = value
            .as_ref()
            .and(f.session_id.as_deref())
            .map(|sid| names.name(0, sid).unwrap_or_else(|| cut_reason(sid)));
        let session = match named {
            Some(s) => Some(s),
            None => f.reply_to_seq.and_then(|r| side.sessions.get(&r).cloned()),
        };
        if let (FrameKind::Request, Some(s)) = (f.kind, &session) {
            side.sessions.insert(f.seq, s.clone());
        }
        note_turn(&mut side, &f);
        note_capabilities(&mut side, &f, value.as_ref());
        let key = keys.number(key);
        side.entries.push(Entry {
            seq: f.seq,
            t_ns: f.t_ns,
            key,
            kind: f.kind,
            hash: hash_of(value.as_ref(), &f.raw),
            reply_to: f.reply_to_seq,
            session,
        });
        Ok(true)
    })?;
    Ok(side)
}

/// Turns as the one fold tells them ([`crate::fold`]): each kept with its
/// session's name and how it ended.
fn note_turn(side: &mut Side, f: &StoredFrame) {
    let names = &mut side.names;
    let (turns, prompts) = (&mut side.turns, &mut side.prompts);
    side.conversation.feed(&FrameRef::from(f), &mut |e| match e {
        Event::TurnStarted { session, prompt, .. } if turns.len() < DIFF_MAX_TURNS => {
            // The session's name, as `normalised` named it.
            let name = names.name(0, session.id).unwrap_or_else(|| cut_reason(session.id));
            prompts.insert(prompt, turns.len());
            turns.push((name, None));
        }
        Event::TurnEnded { prompt, end, .. } => {
            let Some(&turn) = prompts.get(&prompt) else { return };
            let end = match end {
                fold::TurnEnd::Reason(r) => r,
                fold::TurnEnd::Error => "error".to_owned(),
                fold::TurnEnd::NoReason => "answered without a stop reason".to_owned(),
            };
            turns[turn].1 = Some(end);
        }
        _ => {}
    });
}

/// The capabilities of the first `initialize` and of its answer.
fn note_capabilities(side: &mut Side, f: &StoredFrame, v: Option<&Value>) {
    if f.method.as_deref() != Some("initialize") {
        return;
    }
    let Some(v) = v else { return };
    match f.kind {
        FrameKind::Request if side.initialize_seq.is_none() => {
            side.initialize_seq = Some(f.seq);
            side.capabilities.insert("clientCapabilities".into(), v["params"]["clientCapabilities"].clone());
        }
        FrameKind::Response if f.reply_to_seq.is_some() && f.reply_to_seq == side.initialize_seq => {
            side.capabilities.insert("agentCapabilities".into(), v["result"]["agentCapabilities"].clone());
        }
        _ => {}
    }
}

/// A listed change: for a changed message, both frames read again.
fn change(
    a: SideRef<'_>,
    b: SideRef<'_>,
    ea: Option<&Entry>,
    eb: Option<&Entry>,
    keys: &Keys,
    names: &mut (Names, Names),
    opts: &DiffOptions,
) -> Result<MessageChange, StoreError> {
    let key = &keys.keys[ea.or(eb).expect("one side at least").key as usize];
    let mut out = MessageChange {
        change: match (ea, eb) {
            (Some(_), Some(_)) => ChangeKind::Changed,
            (Some(_), None) => ChangeKind::Missing,
            _ => ChangeKind::Added,
        },
        dir: key.dir,
        kind: eb.or(ea).map_or(key.kind, |e| e.kind),
        method: key.method.clone(),
        update: key.update.clone(),
        a_seq: ea.map(|e| e.seq),
        b_seq: eb.map(|e| e.seq),
        values: Vec::new(),
        values_truncated: false,
    };
    if let (Some(ea), Some(eb)) = (ea, eb) {
        let va = frame_value(a, ea.seq, &mut names.0, opts)?;
        let vb = frame_value(b, eb.seq, &mut names.1, opts)?;
        value_changes(&va, &vb, &mut String::new(), &mut out.values, &mut out.values_truncated);
    }
    Ok(out)
}

/// Frame `seq` as compared; its bytes as a string when it is not parsed.
fn frame_value(o: SideRef<'_>, seq: i64, names: &mut Names, opts: &DiffOptions) -> Result<Value, StoreError> {
    let raw = o.store.frame_raw(o.trace_id, seq)?.unwrap_or_default();
    Ok(normalised(&raw, names, opts).unwrap_or_else(|| Value::String(format!("<{} bytes, not parsed>", raw.len()))))
}

/// The paths where `a` and `b` differ, under `path`, into `out` (at most
/// [`VALUES_MAX`]). Depth is bounded by serde_json's (128).
fn value_changes(a: &Value, b: &Value, path: &mut String, out: &mut Vec<ValueChange>, truncated: &mut bool) {
    if a == b {
        return;
    }
    fn push(path: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<ValueChange>, truncated: &mut bool) {
        if out.len() >= VALUES_MAX {
            *truncated = true;
        } else {
            out.push(ValueChange { path: path.to_owned(), a: a.map(shown), b: b.map(shown) });
        }
    }
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
            for k in keys {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                match (ma.get(k), mb.get(k)) {
                    (Some(x), Some(y)) => value_changes(x, y, path, out, truncated),
                    (x, y) => push(path, x, y, out, truncated),
                }
                path.truncate(len);
            }
        }
        (Value::Array(xa), Value::Array(xb)) => {
            for i in 0..xa.len().max(xb.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                match (xa.get(i), xb.get(i)) {
                    (Some(x), Some(y)) => value_changes(x, y, path, out, truncated),
                    (x, y) => push(path, x, y, out, truncated),
                }
                path.truncate(len);
            }
        }
        _ => push(path, Some(a), Some(b), out, truncated),
    }
}

/// A value as shown in a difference: strings cut, large objects and arrays
/// summarised.
fn shown(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > VALUE_MAX_CHARS => {
            Value::String(format!("{}…", s.chars().take(VALUE_MAX_CHARS).collect::<String>()))
        }
        Value::Object(_) | Value::Array(_) => {
            let text = v.to_string();
            if text.len() > VALUE_MAX_CHARS {
                Value::String(format!("<{} bytes of JSON>", text.len()))
            } else {
                v.clone()
            }
        }
        v => v.clone(),
    }
}

/// Per method, the latencies of its answers (answer time minus request time).
fn latencies(side: &Side, keys: &Keys) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for e in &side.entries {
        let (Some(req), FrameKind::Response) = (e.reply_to, keys.keys[e.key as usize].kind) else { continue };
        let Ok(at) = side.entries.binary_search_by_key(&req, |r| r.seq) else { continue };
        let method = keys.keys[e.key as usize].method.clone().unwrap_or_default();
        out.entry(method).or_default().push(e.t_ns - side.entries[at].t_ns);
    }
    out
}

fn percentile(sorted: &[i64], p: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

fn ratio(a: Option<i64>, b: Option<i64>) -> Option<f64> {
    match (a?, b?) {
        (0, _) => None,
        (a, b) => Some(b as f64 / a as f64),
    }
}

fn latency(a: &Side, b: &Side, keys: &Keys) -> Vec<MethodLatency> {
    let (mut la, mut lb) = (latencies(a, keys), latencies(b, keys));
    let methods: std::collections::BTreeSet<String> = la.keys().chain(lb.keys()).cloned().collect();
    methods
        .into_iter()
        .map(|method| {
            let xa = la.remove(&method).unwrap_or_default();
            let xb = lb.remove(&method).unwrap_or_default();
            let (mut xa, mut xb) = (xa, xb);
            xa.sort_unstable();
            xb.sort_unstable();
            let (p50_a, p50_b) = (percentile(&xa, 0.5), percentile(&xb, 0.5));
            let (p95_a, p95_b) = (percentile(&xa, 0.95), percentile(&xb, 0.95));
            MethodLatency {
                method,
                count_a: xa.len() as u64,
                count_b: xb.len() as u64,
                p50_a_ns: p50_a,
                p50_b_ns: p50_b,
                p95_a_ns: p95_a,
                p95_b_ns: p95_b,
                p50_ratio: ratio(p50_a, p50_b),
                p95_ratio: ratio(p95_a, p95_b),
            }
        })
        .collect()
}

/// The n-th turn of each side beside each other, session by session (the
/// turns of `session-1` in order, then `session-2`'s, ...). Sessions are
/// named by order of appearance on each side (`session-1`).
fn turns(a: &Side, b: &Side) -> Vec<TurnEnd> {
    fn by_session(side: &Side) -> Vec<&(String, Option<String>)> {
        let mut turns: Vec<&(String, Option<String>)> = side.turns.iter().collect();
        turns.sort_by(|x, y| x.0.cmp(&y.0));
        turns
    }
    // A turn not ended among the messages read of a trace holding more may have ended past them.
    let end = |side: &Side, t: Option<&(String, Option<String>)>| {
        let t = t?;
        t.1.clone().or_else(|| side.truncated.then(|| END_NOT_READ.to_owned()))
    };
    let (ta_all, tb_all) = (by_session(a), by_session(b));
    (0..ta_all.len().max(tb_all.len()))
        .map(|i| {
            let (ta, tb) = (ta_all.get(i).copied(), tb_all.get(i).copied());
            TurnEnd {
                turn: i as u64 + 1,
                session: ta.or(tb).map(|t| t.0.clone()).unwrap_or_default(),
                a: end(a, ta),
                b: end(b, tb),
            }
        })
        .collect()
}
