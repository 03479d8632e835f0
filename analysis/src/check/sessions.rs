//! The checker's sessions: which session a message names, turns in flight
//! on it, and the bound on sessions followed.

use super::rules::Rule;
use super::{hash_of, quote, who, wire, Checker, Session, MAX_SESSIONS, TOOL_CALLS_FOLLOWED};
use serde_json::value::RawValue;
use std::borrow::Cow;

impl Checker {
    /// A `session/prompt` on `sid` starts: judged against the one in flight.
    pub(super) fn prompt(&mut self, seq: i64, sid: &str) {
        let Some(s) = self.session_entry(sid) else { return };
        let earlier = s.prompt.replace(seq);
        s.cancel = None;
        if let Some(earlier) = earlier {
            let message = format!(
                "the client sent a second session/prompt on session {} while the one of frame {earlier} was in flight",
                quote(sid)
            );
            self.find(Rule::PromptInFlight, vec![earlier, seq], message);
        }
    }

    /// A `session/update` of session `sid`: a `tool_call` announces its
    /// `toolCallId`; a `tool_call_update` for one never announced is
    /// `session.unknown-tool-call` (once per tool call).
    pub(super) fn tool_call_update(&mut self, seq: i64, sid: &str, params: Option<&RawValue>) {
        let mut keep = None;
        let Some(update) = wire::member::<wire::Params>(params, &mut keep).and_then(|p| p.update) else { return };
        let (Some(kind), Some(id)) = (update.session_update.as_deref(), update.tool_call_id.as_deref()) else {
            return;
        };
        let full = self.tool_calls >= TOOL_CALLS_FOLLOWED;
        let Some(s) = self.sessions.get_mut(sid) else { return };
        let hash = hash_of(id);
        match kind {
            "tool_call" if !full && s.tool_calls.insert(hash) => self.tool_calls += 1,
            "tool_call" if !full => {}
            "tool_call" => self.limit(seq, &format!("more than {TOOL_CALLS_FOLLOWED} tool calls were announced")),
            "tool_call_update" if !full && !s.tool_calls.contains(&hash) => {
                // Said once per tool call: its later updates follow this one.
                s.tool_calls.insert(hash);
                self.tool_calls += 1;
                let message = format!(
                    "the agent sent tool_call_update for the tool call {} of session {}, which no tool_call announced \
                     before it",
                    quote(id),
                    quote(sid)
                );
                self.find(Rule::UnknownToolCall, vec![seq], message);
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
            "session/load" | "session/resume" => {
                self.session_entry(&sid);
            }
            "session/delete" | "session/fork" | "session/list" => {}
            _ if self.sessions.contains_key(&*sid) || self.sessions_full => {}
            // An agent may speak of the session it is making before it
            // answers session/new with its id.
            _ if !from_client && self.opening > 0 => {
                self.session_entry(&sid);
            }
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
            who(from_client),
            quote(method),
            quote(sid)
        );
        self.find(Rule::UnknownSession, vec![seq], message);
    }

    /// The session `sid`, followed from now on (`None` past [`MAX_SESSIONS`]).
    pub(super) fn session_entry(&mut self, sid: &str) -> Option<&mut Session> {
        if !self.sessions.contains_key(sid) {
            if self.sessions.len() >= MAX_SESSIONS {
                if !self.sessions_full {
                    self.sessions_full = true;
                    self.limit(0, &format!("more than {MAX_SESSIONS} sessions were opened"));
                }
                return None;
            }
            self.sessions.insert(sid.into(), Session::default());
        }
        self.sessions.get_mut(sid)
    }

    pub(super) fn session(&mut self, sid: &str) -> Option<&mut Session> {
        self.sessions.get_mut(sid)
    }
}
