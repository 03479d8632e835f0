//! What the whole-trace fold says: the overview of the sessions and their
//! open requests, a session's lists, how turns ended.

use super::Model;
use crate::fold::{Request, What};
use acp_tee_shared::session::{ListsLeftOut, OpenRequest, Plan, SettingChange, TraceSessions, OPEN_REQUESTS_MAX};
use acp_tee_shared::Direction;
use std::collections::HashMap;

impl Model {
    /// What the model says, with the ages of open requests measured at
    /// `now_t_ns` (a live trace's present; else its last frame).
    pub fn sessions(&self, now_t_ns: Option<i64>) -> TraceSessions {
        let now = now_t_ns.unwrap_or(self.last_t_ns).max(self.last_t_ns);
        let open = self.conv.pending();
        // Open requests per session, and how long its open permission
        // requests have waited so far (up to `now`), as the open-requests
        // view measures them.
        let mut per_session: HashMap<&str, (u64, i64)> = HashMap::new();
        for p in &open {
            if let Some((_, s)) = &p.session {
                let entry = per_session.entry(s).or_default();
                entry.0 += 1;
                if p.what == What::Permission {
                    entry.1 = entry.1.saturating_add(now.saturating_sub(p.t_ns).max(0));
                }
            }
        }
        let sessions = self
            .sessions
            .iter()
            .map(|s| {
                let mut summary = s.summary.clone();
                let (open, waiting) = per_session.get(summary.session_id.as_str()).copied().unwrap_or_default();
                summary.open_requests = open;
                summary.permission_wait_ns = summary.permission_wait_ns.saturating_add(waiting);
                summary
            })
            .collect();
        TraceSessions {
            sessions,
            open_requests: open.iter().take(OPEN_REQUESTS_MAX).map(|p| self.open_request(p, now)).collect(),
            open_requests_total: open.len() as u64 + self.conv.pending_left_out,
            last_seq: self.last_seq,
            now_t_ns: now,
            live: now_t_ns.is_some(),
            frames_left_out: self.frames_left_out,
            sessions_left_out: self.left_out.len() as u64,
            requests_not_followed: self.conv.pending_left_out,
            protocol_version: self.conv.protocol_version,
            agent: self.agent.clone(),
            client: self.client.clone(),
        }
    }

    /// Session `sid`'s open requests, oldest first, at most
    /// `OPEN_REQUESTS_MAX` of them, with their ages measured as
    /// [`Model::sessions`] measures them.
    pub fn open_requests_of(&self, sid: &str, now_t_ns: Option<i64>) -> Vec<OpenRequest> {
        let now = now_t_ns.unwrap_or(self.last_t_ns).max(self.last_t_ns);
        let open = self.conv.pending().into_iter().filter(|p| p.session.as_ref().is_some_and(|(_, s)| &**s == sid));
        open.take(OPEN_REQUESTS_MAX).map(|p| self.open_request(p, now)).collect()
    }

    /// Where session `sid`'s turns start (seqs of their prompts).
    pub fn turn_starts(&self, sid: &str) -> Option<&[i64]> {
        self.index_of(sid).map(|i| self.sessions[i].turn_starts.as_slice())
    }

    /// The seq of session `sid`'s last frame.
    pub fn session_last_seq(&self, sid: &str) -> Option<i64> {
        self.index_of(sid).map(|i| self.sessions[i].summary.last_seq)
    }

    /// Session `sid`'s last plan, commands and setting changes.
    pub fn extras(&self, sid: &str) -> Extras {
        match self.index_of(sid) {
            Some(i) => {
                let s = &self.sessions[i];
                Extras {
                    plan: s.plan.clone(),
                    commands: s.commands.clone(),
                    changes: s.changes.clone(),
                    left_out: s.left_out.clone(),
                }
            }
            None => Extras::default(),
        }
    }

    /// How the turns of every session ended, by stop reason (`error` for a
    /// turn answered with an error, [`ANSWERED_WITHOUT_REASON`], `not
    /// ended` for one never answered), from the whole-trace fold.
    pub fn turn_ends(&self) -> std::collections::BTreeMap<String, u64> {
        let mut ends = std::collections::BTreeMap::new();
        for s in &self.sessions {
            let mut ended = 0;
            for k in &s.ends {
                *ends.entry(k.kind.clone()).or_default() += k.count;
                ended += k.count;
            }
            if s.summary.turns > ended {
                *ends.entry("not ended".to_owned()).or_default() += s.summary.turns - ended;
            }
        }
        ends
    }

    /// The protocol version the trace negotiated.
    pub fn protocol_version(&self) -> Option<i64> {
        self.conv.protocol_version
    }
}

/// A session's last plan, commands and setting changes, and what the
/// lists of them leave out.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    pub plan: Option<Plan>,
    pub commands: Vec<String>,
    pub changes: Vec<SettingChange>,
    pub left_out: ListsLeftOut,
}

impl Model {
    fn open_request(&self, p: &Request, now: i64) -> OpenRequest {
        // The last frame of its session (of the trace, when it names no session the model knows).
        let last = p.session.as_ref().and_then(|(_, s)| self.index_of(s)).map(|i| self.sessions[i].summary.last_t_ns);
        OpenRequest {
            seq: p.seq,
            dir: p.dir,
            method: p.method.as_deref().map(str::to_owned),
            rpc_id: p.rpc_id.as_deref().map(str::to_owned),
            session_id: p.session.as_ref().map(|(_, s)| s.to_string()),
            t_ns: p.t_ns,
            age_ns: now.saturating_sub(p.t_ns).max(0),
            waiting_for: if p.dir == Direction::ClientToAgent { "agent" } else { "client" }.into(),
            cancel_seq: p.cancel_seq,
            quiet_ns: now.saturating_sub(last.unwrap_or(self.last_t_ns).max(p.t_ns)).max(0),
            quiet_of: if last.is_some() { "session" } else { "trace" }.into(),
        }
    }
}
