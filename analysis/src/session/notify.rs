//! Notifications in the whole-trace fold: `session/update` (what each kind
//! adds to its session), `session/cancel` and `$/cancel_request`.

use super::text::{count_kind, cut};
use super::wire::{self, Params};
use super::{end_turn, hash, note, push_bounded, Model, Plan, PlanEntry, LIST_MAX, PENDING_MAX, SHORT_MAX};
use crate::frame::id_key;
use crate::redact::Redactor;
use crate::store::FrameRef;
use acp_tee_shared::session::{ContextUsage, SettingChange};

impl Model {
    pub(super) fn notification(&mut self, f: &FrameRef<'_>, redact: Option<&Redactor>) {
        match f.method {
            Some("session/update") => {
                // Streamed chunks, most of a trace, are only counted here.
                if wire::plain_update_kind(f.raw).is_some_and(|k| wire::COUNTED_KINDS.contains(&k)) {
                    self.counted_update(f);
                    return;
                }
                let mut keep = None;
                let params = wire::params(f.raw, &mut keep);
                let kind = params.as_ref().and_then(|p| p.update.as_ref()).and_then(|u| u.session_update.as_deref());
                // Kinds whose text the model shows are read again, masked.
                let shown = matches!(
                    kind,
                    Some(
                        "plan"
                            | "available_commands_update"
                            | "current_mode_update"
                            | "session_info_update"
                            | "usage_update"
                    )
                );
                match redact.filter(|_| shown) {
                    Some(r) => {
                        let raw = r.redact(f.raw);
                        let mut keep = None;
                        self.update(f, wire::params(&raw, &mut keep));
                    }
                    None => self.update(f, params),
                }
            }
            Some("session/cancel") => {
                if let Some(s) = f.session_id.and_then(|sid| self.session(sid, f)) {
                    for turn in &mut s.open_turns {
                        turn.1.get_or_insert(f.seq);
                    }
                    let open: Vec<i64> = s.open_turns.iter().map(|t| t.0).collect();
                    for seq in open {
                        if let Some(p) = self.pending.get_mut(&seq) {
                            p.cancel_seq.get_or_insert(f.seq);
                        }
                    }
                }
            }
            Some("$/cancel_request") => {
                let mut keep = None;
                let params = wire::params(f.raw, &mut keep);
                let Some(id) = params.as_ref().and_then(|p| p.request_id) else { return };
                let key = id_key(id.get());
                // The side that sent the request cancels it.
                if let Some(p) = self
                    .pending
                    .values_mut()
                    .find(|p| p.dir == f.dir && p.rpc_id.as_deref().map(id_key).as_deref() == Some(&*key))
                {
                    p.cancel_seq.get_or_insert(f.seq);
                }
            }
            _ => {}
        }
    }

    /// Counts an update of one of `wire::COUNTED_KINDS`, as `update` would.
    fn counted_update(&mut self, f: &FrameRef<'_>) {
        let Some(s) = f.session_id.and_then(|sid| self.session(sid, f)) else { return };
        s.summary.updates += 1;
        if let Some((_, replayed, _)) = &mut s.replaying {
            *replayed += 1;
            s.summary.replayed_updates += 1;
        }
    }

    fn update(&mut self, f: &FrameRef<'_>, params: Option<Params<'_>>) {
        let Some(sid) = f.session_id else { return };
        let room_for_tool_call_ids = self.tool_call_ids_kept < PENDING_MAX;
        let mut tool_call_id_kept = false;
        let Some(s) = self.session(sid, f) else { return };
        s.summary.updates += 1;
        let Some(update) = params.and_then(|p| p.update) else {
            count_kind(&mut s.summary.other_updates, "unreadable");
            return;
        };
        let kind = update.session_update.as_deref().unwrap_or("unknown");
        if let Some((_, replayed, seen)) = &mut s.replaying {
            *replayed += 1;
            s.summary.replayed_updates += 1;
            // A tool call shown twice in one replay: the conversation is
            // replayed twice (chunks of one message share its id, so only
            // tool calls can tell).
            if let Some(id) = update.tool_call_id.as_deref().filter(|_| kind == "tool_call") {
                if seen.len() < PENDING_MAX && !seen.insert(id.to_owned()) {
                    note(&mut s.summary, "replayed-twice", "the replay showed a tool call twice", Some(f.seq));
                }
            }
            return;
        }
        match kind {
            // A `tool_call` repeated for one id (Claude Code sends one
            // without its input, then one with it) updates that call: it
            // counts once.
            "tool_call" => match update.tool_call_id.as_deref().map(hash) {
                Some(h) if s.tool_call_ids.contains(&h) => {}
                Some(h) if room_for_tool_call_ids => {
                    s.tool_call_ids.insert(h);
                    tool_call_id_kept = true;
                    s.summary.tool_calls += 1;
                }
                Some(_) => {
                    s.summary.tool_calls += 1;
                    note(
                        &mut s.summary,
                        "tool-calls-unchecked",
                        "past PENDING_MAX tool call ids kept in the trace, a tool_call repeated for one id may count twice",
                        Some(f.seq),
                    );
                }
                None => s.summary.tool_calls += 1,
            },
            // An update for a call no `tool_call` announced (yet) still
            // tells of a tool call: the turn lists it (set apart), the OTLP
            // mapper gives it a span, so it counts, once, here too.
            "tool_call_update" => {
                if let Some(h) = update.tool_call_id.as_deref().map(hash) {
                    if !s.tool_call_ids.contains(&h) && room_for_tool_call_ids {
                        s.tool_call_ids.insert(h);
                        tool_call_id_kept = true;
                        s.summary.tool_calls += 1;
                    }
                }
            }
            "plan" => {
                let entries = update.entries.unwrap_or_default();
                let plan = s.plan.get_or_insert_with(Plan::default);
                plan.seq = f.seq;
                plan.updates += 1;
                plan.entries_left_out = entries.len().saturating_sub(LIST_MAX) as u64;
                plan.entries = entries
                    .iter()
                    .take(LIST_MAX)
                    .map(|e| PlanEntry {
                        content: cut(e.content.as_deref().unwrap_or(""), SHORT_MAX),
                        status: cut(e.status.as_deref().unwrap_or(""), 32),
                        priority: e.priority.as_deref().map(|p| cut(p, 32)),
                    })
                    .collect();
            }
            "available_commands_update" => {
                let commands = update.available_commands.unwrap_or_default();
                let named = commands.iter().filter(|c| c.name.is_some()).count();
                s.left_out.commands_left_out = named.saturating_sub(LIST_MAX) as u64;
                s.commands = commands
                    .iter()
                    .filter_map(|c| c.name.as_deref().map(|n| cut(n, SHORT_MAX)))
                    .take(LIST_MAX)
                    .collect();
            }
            "current_mode_update" => {
                if let Some(mode) = update.current_mode_id.as_deref() {
                    s.summary.mode = Some(cut(mode, SHORT_MAX));
                    push_bounded(
                        &mut s.changes,
                        &mut s.left_out.changes_left_out,
                        SettingChange { setting: "mode".into(), value: cut(mode, SHORT_MAX), seq: f.seq, t_ns: f.t_ns },
                    );
                }
            }
            "config_option_update" => push_bounded(
                &mut s.changes,
                &mut s.left_out.changes_left_out,
                SettingChange { setting: "config_options".into(), value: "updated".into(), seq: f.seq, t_ns: f.t_ns },
            ),
            "session_info_update" => {
                if let Some(title) = update.title.as_deref() {
                    s.summary.title = Some(cut(title, SHORT_MAX));
                }
            }
            "usage_update" => {
                s.summary.context = Some(ContextUsage {
                    used: update.used.unwrap_or(0),
                    size: update.size.unwrap_or(0),
                    cost: update.cost.as_ref().and_then(|c| c.describe()),
                    seq: f.seq,
                })
            }
            "state_update" => {
                // v2: the turn ends here, not with the prompt's response.
                if let (Some(reason), Some(&(_, cancel))) = (update.stop_reason.as_deref(), s.open_turns.last()) {
                    s.open_turns.pop();
                    end_turn(&mut s.summary, cancel, Some(reason), f.seq);
                    count_kind(&mut s.ends, &cut(reason, 64));
                }
            }
            "agent_message_chunk"
            | "agent_thought_chunk"
            | "user_message_chunk"
            | "agent_message"
            | "agent_thought"
            | "user_message"
            | "tool_call_content_chunk"
            | "plan_update" => {}
            other => count_kind(&mut s.summary.other_updates, other),
        }
        self.tool_call_ids_kept += usize::from(tool_call_id_kept);
    }
}
