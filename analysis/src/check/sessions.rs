//! The checker's session rules: which sessions were made, and what the one
//! fold ([`crate::fold`]) says of turns, cancels, replays and tool calls.

use super::rules::Rule;
use super::{quote, wire, Checker, MAX_SESSIONS};
use crate::fold::{Event, Opening, TurnEnd, What, PENDING_MAX};
use crate::store::FrameRef;
use acp_tee_shared::{Direction, FrameKind};
use serde_json::value::RawValue;
use std::borrow::Cow;

impl Checker {
    /// Reads frame `f` through the one fold and judges what it says of
    /// sessions: prompts in flight, cancels not honoured, loads that
    /// replayed nothing, updates of tool calls never announced.
    pub(super) fn fold(&mut self, f: &FrameRef<'_>) {
        let mut conv = std::mem::take(&mut self.conv);
        conv.feed(f, &mut |e| self.judge(f, e));
        self.conv = conv;
    }

    fn judge(&mut self, f: &FrameRef<'_>, e: Event<'_, '_>) {
        let seq = f.seq;
        let counted = &mut self.conversation;
        match &e {
            Event::TurnStarted { .. } => counted.turns += 1,
            Event::Update(u) if u.new_tool_call => counted.tool_calls += 1,
            Event::Request { what: What::Permission, session: Some(_), .. } => counted.permission_requests += 1,
            _ => {}
        }
        match e {
            Event::TurnStarted { session, prompt, in_flight: Some(earlier) } if !self.v2() => {
                let message = format!(
                    "the client sent a second session/prompt on session {} while the one of frame {earlier} was in \
                     flight",
                    quote(session.id)
                );
                self.find(Rule::PromptInFlight, vec![earlier, prompt], message);
            }
            Event::TurnEnded { prompt, cancel: Some(cancel), end, .. } if !self.v2() => {
                let ended = match &end {
                    TurnEnd::Reason(r) if r == "cancelled" => return,
                    TurnEnd::Reason(r) => format!("stop reason {}", quote(r)),
                    TurnEnd::NoReason => "no stop reason".to_owned(),
                    TurnEnd::Error => "an error".to_owned(),
                };
                let message = format!(
                    "the client cancelled the turn of frame {prompt} with session/cancel (frame {cancel}), but it \
                     ended with {ended}, not `cancelled`"
                );
                self.find(Rule::CancelNotHonoured, vec![prompt, cancel, seq], message);
            }
            Event::Answer { request, replayed: Some(0), .. }
                if request.what == What::Open(Opening::Load) && f.kind == FrameKind::Response =>
            {
                let sid = request.session.as_ref().map_or("?", |(_, sid)| &**sid);
                let message = format!(
                    "the agent answered session/load of {} without replaying the conversation (no session/update \
                     since frame {})",
                    quote(sid),
                    request.seq
                );
                self.find(Rule::LoadWithoutReplay, vec![request.seq, seq], message);
            }
            Event::Update(u) if f.dir == Direction::AgentToClient && !u.replayed => {
                if u.tool_calls_unchecked {
                    self.limit(seq, &format!("more than {PENDING_MAX} tool calls were announced"));
                }
                let id = u.update.and_then(|u| u.tool_call_id.as_deref());
                if let (Some("tool_call_update"), true, Some(id)) = (u.kind, u.new_tool_call, id) {
                    // Said once per tool call: the fold keeps it known from
                    // here on.
                    let message = format!(
                        "the agent sent tool_call_update for the tool call {} of session {}, which no tool_call \
                         announced before it",
                        quote(id),
                        quote(u.session.id)
                    );
                    self.find(Rule::UnknownToolCall, vec![seq], message);
                }
            }
            _ => {}
        }
    }

    /// The session a message names, judged: a `sessionId` no session/new,
    /// load, resume or fork made is `session.unknown` (once per id).
    pub(super) fn session_of<'p>(
        &mut self,
        seq: i64,
        from_client: bool,
        method: &str,
        params: Option<&'p RawValue>,
    ) -> Option<Cow<'p, str>> {
        if method.starts_with('_') || method.starts_with("mcp/") || method.starts_with("proxy/") {
            return None;
        }
        let sid = match serde_json::from_str::<wire::SessionRef>(params?.get()) {
            Ok(r) => r.session_id?,
            // A repeated member: read again, as its last.
            Err(_) => Cow::Owned(wire::member::<wire::SessionRef>(params, &mut None)?.session_id?.into_owned()),
        };
        match method {
            // They name a stored session, not one of this connection.
            "session/load" | "session/resume" => self.made(&sid),
            "session/delete" | "session/fork" | "session/list" => {}
            _ if self.made.contains(&*sid) || self.sessions_full => {}
            // An agent may speak of the session it is making before it
            // answers session/new with its id.
            _ if !from_client && self.opening > 0 => self.made(&sid),
            _ => self.unknown_session(seq, from_client, method, &sid),
        }
        Some(sid)
    }

    /// `session.unknown`, once per id.
    pub(super) fn unknown_session(&mut self, seq: i64, from_client: bool, method: &str, sid: &str) {
        if self.unknown_sessions_told.len() >= MAX_SESSIONS || !self.unknown_sessions_told.insert(sid.into()) {
            return;
        }
        let message = format!(
            "{} sent {} for the session {}, which no session/new, load, resume or fork made",
            self.who(from_client),
            quote(method),
            quote(sid)
        );
        self.find(Rule::UnknownSession, vec![seq], message);
    }

    /// Session `sid` was made (by an opening): known from now on, up to
    /// [`MAX_SESSIONS`].
    pub(super) fn made(&mut self, sid: &str) {
        if self.made.contains(sid) {
            return;
        }
        if self.made.len() >= MAX_SESSIONS {
            if !self.sessions_full {
                self.sessions_full = true;
                self.limit(0, &format!("more than {MAX_SESSIONS} sessions were opened"));
            }
            return;
        }
        self.made.insert(sid.into());
    }
}
