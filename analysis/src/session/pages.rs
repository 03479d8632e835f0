//! Pages of turns: the passes over a trace's frames that build them with
//! [`Builder`]s, within a bound on what they hold.

use super::turns::{Builder, StderrTail};
use super::Model;
use crate::store::{FrameRef, Store, StoreError};
use acp_tee_shared::session::Turn;
use std::collections::HashMap;

/// Frames a page reads past the next turn's prompt for a turn of the page
/// still open or a request of one still unanswered.
pub const TURN_TAIL_FRAMES: i64 = 20_000;
/// What a pass over the frames holds of the turns it builds, counted as the
/// bytes of the frames fed into them plus this much per frame: a turn's
/// texts and lists come from those bytes (cut), and each frame adds at most
/// one entry to a list.
const HELD_PER_FRAME: u64 = 256;

/// Bytes of frames one pass over a trace holds at most in the turns it
/// builds for `show` and the MCP tools ([`Model::pages_of`]); the pages
/// past them are read by another pass. The count is an over-estimate (whole
/// frames, where turns keep their texts cut): `show` of the bench's
/// 200,000-frame trace stays within it in one pass and peaks at 64 MiB of
/// RSS, where 64 MiB of count took a second pass for the same peak.
pub const HELD_MAX_BYTES: u64 = 128 << 20;

/// A page of turns one pass builds: session `sid`'s turns
/// `offset..offset + limit`.
#[derive(Clone, Copy, Debug)]
pub struct Want<'a> {
    pub sid: &'a str,
    pub offset: u64,
    pub limit: u32,
}

/// What [`Model::each_turn_of`] calls back with: the session's place in
/// the list asked for.
#[derive(Debug)]
pub enum Step<'a> {
    Begin(usize),
    Turn(&'a Turn),
    End(usize),
}

/// One session's page being built in a pass.
struct Reading {
    b: Builder,
    /// The page's first prompt: the session's frames before it are not its.
    start: i64,
    /// No frame of the session comes after this one.
    until: i64,
    /// Frames from this seq on are past the page's reach.
    stop_at: i64,
    done: bool,
    /// Bytes of frames fed into its turns (see [`HELD_PER_FRAME`]).
    held: u64,
}

impl Model {
    /// Turns `offset..offset + limit` of session `sid` in full (an empty page
    /// past the last; `None` for a session the model does not know).
    pub fn turns_of(
        &self,
        reader: &Store,
        trace_id: i64,
        sid: &str,
        offset: u64,
        limit: u32,
        redact: Option<&crate::redact::Redactor>,
    ) -> Result<Option<Vec<Turn>>, StoreError> {
        if self.turn_starts(sid).is_none() {
            return Ok(None);
        }
        let want = Want { sid, offset, limit };
        Ok(self.pages_of(reader, trace_id, &[want], redact, u64::MAX)?.pop().flatten())
    }

    /// The pages `wants` asks for, from one pass over the frames: the pass
    /// begins at the first page's first prompt and ends once every page is
    /// built. What the pass holds stays within `held_max` bytes (counted
    /// as [`HELD_PER_FRAME`] says): past it, the pages last in `wants` are
    /// dropped (`None`: to be read in another pass) and, when only the
    /// first is left, it takes no more turns (a shorter page). A session the
    /// model does not know gets an empty page.
    pub fn pages_of(
        &self,
        reader: &Store,
        trace_id: i64,
        wants: &[Want<'_>],
        redact: Option<&crate::redact::Redactor>,
        held_max: u64,
    ) -> Result<Vec<Option<Vec<Turn>>>, StoreError> {
        let v2 = self.protocol_version() == Some(2);
        let mut readings: Vec<Option<Reading>> = Vec::with_capacity(wants.len());
        let mut by_sid: HashMap<&str, usize> = HashMap::with_capacity(wants.len());
        let mut from = i64::MAX;
        let mut horizon = i64::MIN;
        for w in wants {
            let starts = self.turn_starts(w.sid).unwrap_or(&[]);
            let first = (w.offset.min(starts.len() as u64)) as usize;
            let to = first.saturating_add(w.limit as usize).min(starts.len());
            let until = self.session_last_seq(w.sid).unwrap_or(i64::MAX);
            let stop_at = starts.get(to).map_or(i64::MAX, |next| next.saturating_add(TURN_TAIL_FRAMES));
            let b = Builder::new(first as u64, to - first, v2);
            let done = first == to;
            if by_sid.contains_key(w.sid) {
                // A session asked for twice: its second page is left for
                // another pass.
                readings.push(None);
                continue;
            }
            if !done {
                from = from.min(starts[first]);
                horizon = horizon.max(until.min(stop_at - 1));
                by_sid.insert(w.sid, readings.len());
            }
            let start = starts.get(first).copied().unwrap_or(i64::MAX);
            readings.push(Some(Reading { b, start, until, stop_at, done, held: 0 }));
        }
        let mut left = by_sid.len();
        let mut held = 0u64;
        let mut stderr = StderrTail::default();
        if left > 0 {
            reader.fold_frames_in_parallel(trace_id, from - 1, |f| {
                if f.seq > horizon {
                    return false;
                }
                if f.kind == acp_tee_shared::FrameKind::Stderr {
                    stderr.push(f, redact);
                    return true;
                }
                let Some(&i) = f.session_id.and_then(|sid| by_sid.get(sid)) else { return true };
                {
                    let Some(r) = readings[i].as_mut().filter(|r| !r.done && f.seq >= r.start) else { return true };
                    if f.seq > r.until || f.seq >= r.stop_at {
                        r.done = true;
                        left -= 1;
                        return left > 0;
                    }
                    r.b.feed_masked(f, redact);
                    r.b.take_stderr(&stderr);
                    let cost = f.raw.len() as u64 + HELD_PER_FRAME;
                    r.held += cost;
                    held += cost;
                    // Done once every turn of the page began and ended and
                    // nothing they asked awaits an answer.
                    if r.b.turns.len() >= r.b.want && !r.b.waiting() {
                        r.done = true;
                        left -= 1;
                    }
                }
                while held > held_max {
                    let Some(last) = readings.iter().rposition(Option::is_some) else { break };
                    if last == 0 {
                        // The first page alone: it keeps what it began.
                        let first = readings[0].as_mut().expect("the first page is read");
                        first.b.want = first.b.turns.len().max(1);
                        break;
                    }
                    let dropped = readings[last].take().expect("a page being read");
                    held -= dropped.held;
                    if !dropped.done {
                        left -= 1;
                    }
                }
                left > 0
            })?;
        }
        Ok(readings.into_iter().map(|r| r.map(|r| r.b.turns)).collect())
    }

    /// Calls `each` for every session of `sids` in order: its start, each of
    /// its turns, its end; the first session's from its turn `offset` on,
    /// without its start when `offset` > 0 (its first turns were given
    /// already). One pass over the frames builds the turns of every
    /// session ([`Model::pages_of`]) as far as `held_max` allows; the
    /// sessions past that are read by further passes, from the first one
    /// not finished.
    #[allow(clippy::too_many_arguments)]
    pub fn each_turn_of<E: From<StoreError>>(
        &self,
        reader: &Store,
        trace_id: i64,
        sids: &[&str],
        offset: u64,
        redact: Option<&crate::redact::Redactor>,
        held_max: u64,
        mut each: impl FnMut(Step<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        // The next session to finish, and its next turn.
        let (mut at, mut offset) = (0, offset);
        while at < sids.len() {
            let wants: Vec<Want<'_>> = sids[at..]
                .iter()
                .enumerate()
                .map(|(k, &sid)| Want { sid, offset: if k == 0 { offset } else { 0 }, limit: u32::MAX })
                .collect();
            for page in self.pages_of(reader, trace_id, &wants, redact, held_max)? {
                let Some(turns) = page else { break };
                if offset == 0 {
                    each(Step::Begin(at))?;
                }
                turns.iter().try_for_each(|t| each(Step::Turn(t)))?;
                offset += turns.len() as u64;
                let total = self.turn_starts(sids[at]).map_or(0, <[i64]>::len) as u64;
                if offset < total && !turns.is_empty() {
                    // The first page was cut to fit: its session goes on in
                    // the next pass (every later page was dropped).
                    break;
                }
                each(Step::End(at))?;
                (at, offset) = (at + 1, 0);
            }
        }
        Ok(())
    }

    /// Calls `each` as [`Model::each_turn_of`] does, with the turns
    /// `built` by [`Model::catch_up_building`]; from the first session of
    /// `sids` it did not build whole, further passes build the rest.
    #[allow(clippy::too_many_arguments)]
    pub fn each_turn_built<E: From<StoreError>>(
        &self,
        reader: &Store,
        trace_id: i64,
        sids: &[&str],
        mut built: Built,
        redact: Option<&crate::redact::Redactor>,
        held_max: u64,
        mut each: impl FnMut(Step<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        for (i, sid) in sids.iter().enumerate() {
            let total = self.turn_starts(sid).map_or(0, <[i64]>::len);
            let turns = self.index_of(sid).and_then(|at| built.turns.get_mut(at)).and_then(Option::take);
            let turns = turns.unwrap_or_default();
            if !turns.is_empty() || total == 0 {
                each(Step::Begin(i))?;
                turns.iter().try_for_each(|t| each(Step::Turn(t)))?;
            }
            if turns.len() == total {
                each(Step::End(i))?;
                continue;
            }
            let (offset, rest) = (turns.len() as u64, &sids[i..]);
            return self.each_turn_of(reader, trace_id, rest, offset, redact, held_max, |step| {
                each(match step {
                    Step::Begin(k) => Step::Begin(i + k),
                    Step::End(k) => Step::End(i + k),
                    turn => turn,
                })
            });
        }
        Ok(())
    }

    /// Every page `wants` asks for, in as few passes as
    /// [`HELD_MAX_BYTES`] allows ([`Model::pages_of`]; a page cut to fit is
    /// shorter than asked).
    pub fn pages_in_passes(
        &self,
        reader: &Store,
        trace_id: i64,
        wants: &[Want<'_>],
        redact: Option<&crate::redact::Redactor>,
    ) -> Result<Vec<Vec<Turn>>, StoreError> {
        let mut out = Vec::with_capacity(wants.len());
        while out.len() < wants.len() {
            let pages = self.pages_of(reader, trace_id, &wants[out.len()..], redact, HELD_MAX_BYTES)?;
            // The first page of a pass is always built.
            out.extend(pages.into_iter().map_while(|p| p));
        }
        Ok(out)
    }
}

/// The turns one pass over a trace built along with the whole-trace fold
/// ([`Model::catch_up_building`]), by the place of their session among
/// those the model keeps: all of a session's turns, the first turns only
/// of the session the bound cut short, `None` for a session not built.
#[derive(Debug, Default)]
pub struct Built {
    pub turns: Vec<Option<Vec<Turn>>>,
}

/// The sessions' builders in that pass, within `held_max` bytes (counted
/// as [`HELD_PER_FRAME`] says).
struct Building<'a> {
    builders: Vec<Option<Begun>>,
    /// Sessions from this place on are not built (the bound was reached).
    cut: usize,
    held: u64,
    held_max: u64,
    only: Option<usize>,
    redact: Option<&'a crate::redact::Redactor>,
    stderr: StderrTail,
}

impl Model {
    /// Brings the model up to date as [`Model::catch_up`] does and, in the
    /// same pass, builds the turns of every session (of session `only`,
    /// when given) holding at most `held_max` bytes: when they would hold
    /// more, the sessions last in order are dropped (and those after
    /// them never begun), and a first session alone keeps the turns it
    /// began. The model must be new: turns are built from the trace's
    /// first frame.
    pub fn catch_up_building(
        &mut self,
        reader: &Store,
        trace_id: i64,
        redact: Option<&crate::redact::Redactor>,
        only: Option<&str>,
        held_max: u64,
    ) -> Result<Built, StoreError> {
        debug_assert_eq!(self.last_seq, 0, "turns are built from the first frame");
        let mut b = Building {
            builders: Vec::new(),
            cut: usize::MAX,
            held: 0,
            held_max,
            only: None,
            redact,
            stderr: StderrTail::default(),
        };
        reader.fold_frames_in_parallel(trace_id, self.last_seq, |f| {
            if f.kind == acp_tee_shared::FrameKind::Stderr {
                b.stderr.push(f, redact);
            }
            if let Some(at) = self.feed(f, redact) {
                if b.only.is_none() && only == Some(self.sessions[at].summary.session_id.as_str()) {
                    b.only = Some(at);
                }
                if only.is_none() || b.only == Some(at) {
                    b.feed(at, f, self.protocol_version() == Some(2));
                }
            }
            true
        })?;
        Ok(Built { turns: b.builders.into_iter().map(|x| x.map(|s| s.b.turns)).collect() })
    }
}

/// A session's builder in a pass over a whole trace, begun at the
/// session's first prompt, and the bytes fed into it (counted as
/// [`HELD_PER_FRAME`] says) since they were last let go.
struct Begun {
    b: Builder,
    held: u64,
}

impl Begun {
    /// Feeds `f`, a frame of the session whose builder `slot` holds, to
    /// it: begun at the session's first prompt (`track`: keeping the turns
    /// it touches, [`Builder::take_touched`]), fed masked, given the stderr
    /// lines of a turn that failed. What the frame costs, `None` when no
    /// turn of the session has begun.
    fn feed(
        slot: &mut Option<Begun>,
        f: &FrameRef<'_>,
        v2: bool,
        track: bool,
        redact: Option<&crate::redact::Redactor>,
        stderr: &StderrTail,
    ) -> Option<u64> {
        if slot.is_none() {
            if !(f.kind == acp_tee_shared::FrameKind::Request && f.method == Some("session/prompt")) {
                return None;
            }
            let mut b = Builder::new(0, usize::MAX, v2);
            b.track_touched = track;
            *slot = Some(Begun { b, held: 0 });
        }
        let s = slot.as_mut()?;
        s.b.v2 = v2;
        s.b.feed_masked(f, redact);
        s.b.take_stderr(stderr);
        let cost = f.raw.len() as u64 + HELD_PER_FRAME;
        s.held += cost;
        Some(cost)
    }
}

impl Model {
    /// Brings the model up to date as [`Model::catch_up`] does and, in the
    /// same pass, builds the turns of every session, giving each to `each`
    /// (its session's id, its place among the session's turns) as soon as
    /// it is over (answered, nothing it asked still awaiting an answer: no
    /// later frame changes it) and dropping it; the turns still open when
    /// the trace ends are given last, as they stand. What the pass holds
    /// is the turns not over yet: when they would hold more than
    /// `held_max` bytes (counted as [`HELD_PER_FRAME`] says) the pass stops
    /// and returns false, the model half caught up (a trace whose turns
    /// stay open, which [`Model::catch_up_building`] reads within its
    /// bound). The model must be new.
    pub fn catch_up_turn_by_turn(
        &mut self,
        reader: &Store,
        trace_id: i64,
        redact: Option<&crate::redact::Redactor>,
        held_max: u64,
        mut each: impl FnMut(&str, usize, &Turn) + Send,
    ) -> Result<bool, StoreError> {
        debug_assert_eq!(self.last_seq, 0, "turns are built from the first frame");
        let mut builders: Vec<Option<Begun>> = Vec::new();
        // Per session, the turns begun and not given out yet.
        let mut unreleased: Vec<Vec<usize>> = Vec::new();
        let (mut held, mut whole) = (0u64, true);
        let mut stderr = StderrTail::default();
        reader.fold_frames_in_parallel(trace_id, self.last_seq, |f| {
            if f.kind == acp_tee_shared::FrameKind::Stderr {
                stderr.push(f, redact);
            }
            let Some(at) = self.feed(f, redact) else { return true };
            if builders.len() <= at {
                builders.resize_with(at + 1, || None);
                unreleased.resize_with(at + 1, Vec::new);
            }
            let before = builders[at].as_ref().map_or(0, |s| s.b.turns.len());
            let v2 = self.protocol_version() == Some(2);
            let Some(cost) = Begun::feed(&mut builders[at], f, v2, true, redact, &stderr) else { return true };
            held += cost;
            let (s, open) = (builders[at].as_mut().expect("fed above"), &mut unreleased[at]);
            open.extend(before..s.b.turns.len());
            // Only a turn closed or answered for by this frame can have become over.
            let sid = &self.sessions[at].summary.session_id;
            for k in s.b.take_touched() {
                if s.b.is_over(k) {
                    if let Some(i) = open.iter().position(|&u| u == k) {
                        open.remove(i);
                        each(sid, k, &s.b.take_turn(k));
                    }
                }
            }
            if open.is_empty() {
                held -= s.held;
                s.held = 0;
            }
            whole = held <= held_max;
            whole
        })?;
        if !whole {
            return Ok(false);
        }
        for (at, (s, open)) in builders.iter_mut().zip(&unreleased).enumerate() {
            let Some(s) = s else { continue };
            let sid = &self.sessions[at].summary.session_id;
            for &k in open {
                each(sid, k, &s.b.take_turn(k));
            }
        }
        Ok(true)
    }
}

impl Building<'_> {
    /// Feeds `f`, a frame of the session at place `at`, to its builder
    /// (begun at the session's first prompt).
    fn feed(&mut self, at: usize, f: &FrameRef<'_>, v2: bool) {
        if at >= self.cut {
            return;
        }
        if self.builders.len() <= at {
            self.builders.resize_with(at + 1, || None);
        }
        let Some(cost) = Begun::feed(&mut self.builders[at], f, v2, false, self.redact, &self.stderr) else { return };
        self.held += cost;
        while self.held > self.held_max {
            let Some(last) = self.builders.iter().rposition(Option::is_some) else { break };
            if last == 0 || self.builders[..last].iter().all(Option::is_none) {
                // The first session alone: it keeps what it began.
                let first = &mut self.builders[last].as_mut().expect("a session being built").b;
                first.want = first.turns.len().max(1);
                break;
            }
            let dropped = self.builders[last].take().expect("a session being built");
            self.held -= dropped.held;
            self.cut = self.cut.min(last);
        }
    }
}
