//! The per-turn part of a diff: each prompt turn's assembled reply and tool
//! calls, side by side.
//!
//! Each side is read by the session model ([`crate::session::Model`], the
//! one `show` and the viewer's Session tab read), in one pass that builds
//! every turn and digests each as soon as it is over
//! ([`Model::catch_up_turn_by_turn`]): of a turn only hashes are kept (of
//! its message and thoughts as assembled from their chunks, of its tool
//! calls' titles, kinds and statuses), so a side costs a few dozen bytes
//! per turn. (A trace whose turns stay open past the pass's bound is read
//! as `show` reads it, in passes that hold at most [`HELD_MAX_BYTES`].)
//! Turns are paired by session (sessions in the order they first appear)
//! and by place in their session. Only the first
//! [`DIFF_TURN_CHANGES_LISTED`] pairs that differ are built again (one
//! more pass per side) to say how: the message as a word diff, the tool
//! calls that differ.

use super::{SideRef, DIFF_MAX_TURNS};
use crate::session::{Model, Step, Want};
use crate::store::StoreError;
use acp_tee_shared::diff::{TextOp, TextOpKind, ToolBrief, ToolChange, TurnChange, TurnDiffs};
use acp_tee_shared::session::{Text, Turn};
use std::hash::{Hash, Hasher};

/// Differing turns described at most (all are counted).
pub const DIFF_TURN_CHANGES_LISTED: usize = 50;

/// Pieces of a message's word diff listed at most per turn; the rest is
/// one piece saying how many characters it holds.
pub const TEXT_OPS_MAX: usize = 400;

/// Bytes of turns one pass of the session model holds at most while a
/// side is read (more passes when a trace's turns hold more).
const HELD_MAX_BYTES: u64 = 32 << 20;

/// What is compared of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Digest {
    message: u64,
    thought: u64,
    /// Its tool calls' titles, kinds and statuses, in order.
    tools: u64,
}

/// One side's turns, by session (in the order they first appear).
struct Side {
    sids: Vec<String>,
    sessions: Vec<Vec<Digest>>,
    /// Turns past [`DIFF_MAX_TURNS`], not compared.
    left_out: u64,
}

fn text_hash(t: &Text) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&t.text, t.chars).hash(&mut h);
    t.other_blocks.iter().for_each(|k| (&k.kind, k.count).hash(&mut h));
    h.finish()
}

fn brief(t: &acp_tee_shared::session::ToolCall) -> ToolBrief {
    ToolBrief { title: t.title.clone(), kind: t.kind.clone(), status: t.status.clone() }
}

fn digest(t: &Turn) -> Digest {
    let mut tools = std::collections::hash_map::DefaultHasher::new();
    t.tool_calls.iter().map(brief).for_each(|b| b.hash(&mut tools));
    Digest { message: text_hash(&t.message), thought: text_hash(&t.thought), tools: tools.finish() }
}

/// Each session's turn digests, by place in the session.
type Digests = std::collections::HashMap<String, Vec<Option<Digest>>>;

/// Reads the turns of `o` into digests: in one pass, or, for a trace whose
/// turns stay open past that pass's bound, in the passes `show` makes.
fn read(o: SideRef<'_>, redact: Option<&crate::redact::Redactor>) -> Result<(Model, Side), StoreError> {
    let mut model = Model::default();
    let mut by_sid = Digests::default();
    let whole = model.catch_up_turn_by_turn(o.store, o.trace_id, redact, HELD_MAX_BYTES, |sid, k, turn| {
        let digests = by_sid.entry(sid.to_owned()).or_default();
        if digests.len() <= k {
            digests.resize(k + 1, None);
        }
        digests[k] = Some(digest(turn));
    })?;
    if !whole {
        return read_in_passes(o, redact);
    }
    Ok(side_of(model, by_sid))
}

/// [`read`] as `show` reads a trace: turns built in passes over the
/// frames, each holding at most [`HELD_MAX_BYTES`].
fn read_in_passes(o: SideRef<'_>, redact: Option<&crate::redact::Redactor>) -> Result<(Model, Side), StoreError> {
    let mut model = Model::default();
    let built = model.catch_up_building(o.store, o.trace_id, redact, None, HELD_MAX_BYTES)?;
    let sids: Vec<String> = model.sessions(None).sessions.into_iter().map(|s| s.session_id).collect();
    let refs: Vec<&str> = sids.iter().map(String::as_str).collect();
    let mut by_sid = Digests::default();
    let mut current = 0;
    model.each_turn_built::<StoreError>(o.store, o.trace_id, &refs, built, redact, HELD_MAX_BYTES, |step| {
        match step {
            Step::Begin(i) => current = i,
            Step::Turn(t) => by_sid.entry(sids[current].clone()).or_default().push(Some(digest(t))),
            Step::End(_) => {}
        }
        Ok(())
    })?;
    Ok(side_of(model, by_sid))
}

/// The side the model and its sessions' digests make: sessions in the
/// model's order, the first [`DIFF_MAX_TURNS`] turns kept, the rest counted.
fn side_of(model: Model, mut by_sid: Digests) -> (Model, Side) {
    let sids: Vec<String> = model.sessions(None).sessions.into_iter().map(|s| s.session_id).collect();
    let mut side = Side { sessions: vec![Vec::new(); sids.len()], sids: Vec::new(), left_out: 0 };
    let mut kept = 0usize;
    for (i, sid) in sids.iter().enumerate() {
        for d in by_sid.remove(sid).unwrap_or_default().into_iter().flatten() {
            if kept >= DIFF_MAX_TURNS {
                side.left_out += 1;
            } else {
                kept += 1;
                side.sessions[i].push(d);
            }
        }
    }
    side.sids = sids;
    (model, side)
}

/// The turns of `a` and `b` compared.
pub fn turn_diffs(
    a: SideRef<'_>,
    b: SideRef<'_>,
    redact: Option<&crate::redact::Redactor>,
) -> Result<TurnDiffs, StoreError> {
    let (model_a, side_a) = read(a, redact)?;
    let (model_b, side_b) = read(b, redact)?;
    let mut out = TurnDiffs { left_out: side_a.left_out + side_b.left_out, ..TurnDiffs::default() };
    // The pairs that differ: (session place, turn place).
    let mut differing: Vec<(usize, usize)> = Vec::new();
    for s in 0..side_a.sessions.len().max(side_b.sessions.len()) {
        let (ta, tb) = (side_a.sessions.get(s), side_b.sessions.get(s));
        let n = ta.map_or(0, Vec::len).max(tb.map_or(0, Vec::len));
        for k in 0..n {
            let (da, db) = (ta.and_then(|t| t.get(k)), tb.and_then(|t| t.get(k)));
            out.compared += 1;
            let same = match (da, db) {
                (Some(x), Some(y)) => x.message == y.message && x.thought == y.thought && x.tools == y.tools,
                _ => false,
            };
            if same {
                out.equal += 1;
            } else if differing.len() < DIFF_TURN_CHANGES_LISTED {
                differing.push((s, k));
            }
        }
    }
    out.changed = out.compared - out.equal;
    if differing.is_empty() {
        return Ok(out);
    }
    // The differing turns, built again: one pass per side.
    let turns_a = rebuild(&model_a, a, &side_a, &differing, redact)?;
    let turns_b = rebuild(&model_b, b, &side_b, &differing, redact)?;
    for (i, &(s, k)) in differing.iter().enumerate() {
        out.turns.push(change(s, k, turns_a[i].as_ref(), turns_b[i].as_ref()));
    }
    Ok(out)
}

/// Turn `k` of session `s` of `side`, for each pair in `pairs` (`None`
/// where the side has no such turn).
fn rebuild(
    model: &Model,
    o: SideRef<'_>,
    side: &Side,
    pairs: &[(usize, usize)],
    redact: Option<&crate::redact::Redactor>,
) -> Result<Vec<Option<Turn>>, StoreError> {
    let present: Vec<bool> = pairs.iter().map(|&(s, k)| side.sessions.get(s).is_some_and(|t| k < t.len())).collect();
    let wants: Vec<Want<'_>> = pairs
        .iter()
        .zip(&present)
        .filter(|(_, p)| **p)
        .map(|(&(s, k), _)| Want { sid: &side.sids[s], offset: k as u64, limit: 1 })
        .collect();
    let mut pages = model.pages_in_passes(o.store, o.trace_id, &wants, redact)?.into_iter();
    Ok(present.into_iter().map(|p| if p { pages.next().and_then(|mut t| t.pop()) } else { None }).collect())
}

/// How turn `k` of session `s` differs between `a` and `b`.
fn change(s: usize, k: usize, a: Option<&Turn>, b: Option<&Turn>) -> TurnChange {
    let empty = Text::default();
    let (ma, mb) = (a.map_or(&empty, |t| &t.message), b.map_or(&empty, |t| &t.message));
    let message_same = a.is_some() && b.is_some() && text_hash(ma) == text_hash(mb);
    let thought_same = match (a, b) {
        (Some(x), Some(y)) => text_hash(&x.thought) == text_hash(&y.thought),
        _ => false,
    };
    let tools_a: Vec<ToolBrief> = a.map(|t| t.tool_calls.iter().map(brief).collect()).unwrap_or_default();
    let tools_b: Vec<ToolBrief> = b.map(|t| t.tool_calls.iter().map(brief).collect()).unwrap_or_default();
    let tools = (0..tools_a.len().max(tools_b.len()))
        .filter_map(|i| {
            let (x, y) = (tools_a.get(i), tools_b.get(i));
            (x != y).then(|| ToolChange { place: i as u64 + 1, a: x.cloned(), b: y.cloned() })
        })
        .collect();
    TurnChange {
        session: format!("session-{}", s + 1),
        turn: k as u64 + 1,
        a_seq: a.map(|t| t.request_seq),
        b_seq: b.map(|t| t.request_seq),
        a_chars: ma.chars,
        b_chars: mb.chars,
        message_same,
        message: if message_same { Vec::new() } else { word_diff(&ma.text, &mb.text) },
        message_cut: ma.chars > ma.text.chars().count() as u64 || mb.chars > mb.text.chars().count() as u64,
        thought_same,
        tools,
        tools_a: tools_a.len() as u64,
        tools_b: tools_b.len() as u64,
    }
}

/// `a` to `b` as runs of words kept, removed and added: at most
/// [`TEXT_OPS_MAX`] runs, then one run saying how many characters are
/// left out.
pub fn word_diff(a: &str, b: &str) -> Vec<TextOp> {
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_millis(200))
        .diff_words(a, b);
    let mut ops: Vec<TextOp> = Vec::new();
    let mut rest_chars = 0u64;
    for change in diff.iter_all_changes() {
        let kind = match change.tag() {
            similar::ChangeTag::Equal => TextOpKind::Same,
            similar::ChangeTag::Delete => TextOpKind::Removed,
            similar::ChangeTag::Insert => TextOpKind::Added,
        };
        let text = change.value();
        let full = ops.len() >= TEXT_OPS_MAX;
        match ops.last_mut() {
            Some(last) if last.op == kind && rest_chars == 0 => last.text.push_str(text),
            _ if full => rest_chars += text.chars().count() as u64,
            _ => ops.push(TextOp { op: kind, text: text.to_owned() }),
        }
    }
    if rest_chars > 0 {
        ops.push(TextOp { op: TextOpKind::LeftOut, text: format!("{rest_chars} more characters not compared") });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_diff_keeps_runs_and_is_bounded() {
        let ops = word_diff("the quick brown fox", "the slow brown fox jumps");
        let shown: Vec<(TextOpKind, &str)> = ops.iter().map(|o| (o.op, o.text.as_str())).collect();
        assert_eq!(
            shown,
            [
                (TextOpKind::Same, "the "),
                (TextOpKind::Removed, "quick"),
                (TextOpKind::Added, "slow"),
                (TextOpKind::Same, " brown fox"),
                (TextOpKind::Added, " jumps"),
            ]
        );
        assert!(word_diff("same", "same").iter().all(|o| o.op == TextOpKind::Same));
        // Every other word changed: the runs stop at the bound, the rest is counted.
        let a: String = (0..300).map(|i| format!("a{i} x ")).collect();
        let b: String = (0..300).map(|i| format!("b{i} x ")).collect();
        let ops = word_diff(&a, &b);
        assert_eq!(ops.len(), TEXT_OPS_MAX + 1);
        assert_eq!(ops.last().unwrap().op, TextOpKind::LeftOut);
    }
}
