//! `session/update` in the whole-trace model: what each kind adds to its
//! session (cancels and turn ends are the fold's, [`crate::fold`]).

use super::text::{count_kind, cut};
use super::wire;
use super::{note, push_bounded, Model, Plan, PlanEntry, LIST_MAX, PENDING_MAX, SHORT_MAX};
use crate::fold;
use crate::redact::Redactor;
use crate::store::FrameRef;
use acp_tee_shared::session::{ContextUsage, SettingChange};

impl Model {
    /// A `session/update` of a kept session, as the fold read it: what each
    /// kind adds to its session. Kinds whose text the model shows are read
    /// again from the masked bytes.
    pub(super) fn update(&mut self, f: &FrameRef<'_>, u: &fold::Update<'_, '_>, redact: Option<&Redactor>) {
        let s = &mut self.sessions[u.session.at];
        s.summary.updates += 1;
        let Some(kind) = u.kind else {
            count_kind(&mut s.summary.other_updates, "unreadable");
            return;
        };
        if u.replayed {
            s.summary.replayed_updates += 1;
            let Some(seen) = &mut s.replay_seen else { return };
            // A tool call shown twice in one replay: the conversation is
            // replayed twice (chunks of one message share its id, so only
            // tool calls can tell).
            let id = u.update.and_then(|u| u.tool_call_id.as_deref()).filter(|_| kind == "tool_call");
            if let Some(id) = id {
                if seen.len() < PENDING_MAX && !seen.insert(id.to_owned()) {
                    note(&mut s.summary, "replayed-twice", "the replay showed a tool call twice", Some(f.seq));
                }
            }
            return;
        }
        if u.new_tool_call {
            // A `tool_call` repeated for one id (Claude Code sends one
            // without its input, then one with it) updates that call; an
            // update for a call never announced still tells of one: the
            // fold says which announce a call.
            s.summary.tool_calls += 1;
        }
        if u.tool_calls_unchecked {
            note(
                &mut s.summary,
                "tool-calls-unchecked",
                "past PENDING_MAX tool call ids kept in the trace, a tool_call repeated for one id may count twice",
                Some(f.seq),
            );
        }
        let shown = matches!(
            kind,
            "plan" | "available_commands_update" | "current_mode_update" | "session_info_update" | "usage_update"
        );
        let masked = redact.filter(|_| shown).map(|r| r.redact(f.raw));
        let mut keep = None;
        let reread;
        let update = match &masked {
            Some(raw) => {
                reread = wire::params(raw, &mut keep).and_then(|p| p.update);
                reread.as_ref()
            }
            None => u.update,
        };
        match kind {
            "plan" => {
                let entries = update.and_then(|u| u.entries.as_deref()).unwrap_or_default();
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
                let commands = update.and_then(|u| u.available_commands.as_deref()).unwrap_or_default();
                let named = commands.iter().filter(|c| c.name.is_some()).count();
                s.left_out.commands_left_out = named.saturating_sub(LIST_MAX) as u64;
                s.commands = commands
                    .iter()
                    .filter_map(|c| c.name.as_deref().map(|n| cut(n, SHORT_MAX)))
                    .take(LIST_MAX)
                    .collect();
            }
            "current_mode_update" => {
                if let Some(mode) = update.and_then(|u| u.current_mode_id.as_deref()) {
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
                if let Some(title) = update.and_then(|u| u.title.as_deref()) {
                    s.summary.title = Some(cut(title, SHORT_MAX));
                }
            }
            "usage_update" => {
                s.summary.context = update.map(|u| ContextUsage {
                    used: u.used.unwrap_or(0),
                    size: u.size.unwrap_or(0),
                    cost: u.cost.as_ref().and_then(|c| c.describe()),
                    seq: f.seq,
                })
            }
            // v2: the fold ends the turn (`Event::TurnEnded`).
            "state_update"
            | "tool_call"
            | "tool_call_update"
            | "agent_message_chunk"
            | "agent_thought_chunk"
            | "user_message_chunk"
            | "agent_message"
            | "agent_thought"
            | "user_message"
            | "tool_call_content_chunk"
            | "plan_update" => {}
            other => count_kind(&mut s.summary.other_updates, other),
        }
    }
}
