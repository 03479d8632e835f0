//! Matching responses to the requests they answer.

use super::classify::Classified;
use acp_tee_shared::{Direction, FrameKind};
use hashlink::LinkedHashMap;
use std::collections::HashSet;
use std::sync::Arc;

/// Requests waiting for a response that a pairer keeps at most; past that,
/// the oldest is forgotten (its response, should it come, stays unpaired).
/// A peer that never answers cannot make the recorder grow without bound.
pub const MAX_PENDING: usize = 100_000;

type Key = (Direction, String);

/// Distinct methods and session ids a pairer shares among its pending
/// requests at most; past that, each request keeps its own copy.
const MAX_SHARED_TEXTS: usize = 10_000;

/// A request still waiting for its response.
#[derive(Debug, Clone)]
struct Pending {
    seq: i64,
    t_ns: i64,
    /// Shared with the other requests of the same method ([`Pairer::share`]).
    method: Option<Arc<str>>,
    session_id: Option<Arc<str>>,
}

/// What pairing found out about a response frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pairing {
    /// The `seq` of the request answered.
    pub reply_to_seq: Option<i64>,
    /// Nanoseconds from that request to this response.
    pub latency_ns: Option<i64>,
}

/// Pairs each response with the request that went the other way with the same id.
///
/// JSON-RPC ids are scoped per direction: the client's request 7 and the agent's
/// request 7 are different requests, so pending requests are keyed by the
/// direction they travelled and their id's value ([`super::id_key`]: `"\u00e9"`
/// and `"é"` are one id, `1` and `"1"` are two).
///
/// At most [`MAX_PENDING`] requests wait; the oldest is forgotten first.
/// They wait in one map in the order they came (a request reusing a pending
/// id replaces it and becomes the newest), so each costs one entry, with its
/// method and session shared among the requests that have the same: about
/// 150 bytes for a short id, 15 MB at the limit.
#[derive(Debug)]
pub struct Pairer {
    pending: LinkedHashMap<Key, Pending>,
    /// The methods and session ids pending requests share.
    shared: HashSet<Arc<str>>,
    limit: usize,
    forgotten: u64,
}

impl Default for Pairer {
    fn default() -> Self {
        Self::with_limit(MAX_PENDING)
    }
}

impl Pairer {
    /// A pairer with no pending requests.
    #[cfg(any(test, feature = "testing"))]
    pub fn new() -> Self {
        Self::default()
    }

    /// A pairer that keeps at most `limit` pending requests.
    pub fn with_limit(limit: usize) -> Self {
        Pairer { pending: LinkedHashMap::new(), shared: HashSet::new(), limit: limit.max(1), forgotten: 0 }
    }

    /// How many requests wait for a response.
    #[cfg(any(test, feature = "testing"))]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// `text` as one allocation shared by every pending request that has it
    /// (up to [`MAX_SHARED_TEXTS`] distinct ones; the set is emptied when
    /// nothing waits).
    fn share(&mut self, text: &Option<String>) -> Option<Arc<str>> {
        let text = text.as_deref()?;
        if let Some(shared) = self.shared.get(text) {
            return Some(shared.clone());
        }
        let shared: Arc<str> = Arc::from(text);
        if self.shared.len() < MAX_SHARED_TEXTS {
            self.shared.insert(shared.clone());
        }
        Some(shared)
    }

    fn remember(&mut self, key: Key, request: Pending) {
        self.pending.insert(key, request);
        if self.pending.len() > self.limit {
            self.pending.pop_front();
            self.forgotten += 1;
            if self.forgotten == 1 {
                tracing::debug!("more than {} requests wait for a response; forgetting the oldest", self.limit);
            }
        }
    }

    /// Notes the frame `seq` seen at `t_ns` going `dir`. For a response this
    /// returns its request, and fills in the method (and session, when the
    /// response has none) from that request. For a batch, each response in
    /// it gets its own pairing (`reply` of its element) and the first one
    /// found is returned.
    pub fn observe(&mut self, seq: i64, t_ns: i64, dir: Direction, frame: &mut Classified) -> Pairing {
        match frame.frame_kind() {
            FrameKind::Batch => {
                let mut first = Pairing::default();
                for element in &mut frame.elements {
                    let p = self.observe_message(seq, t_ns, dir, element);
                    element.reply = p;
                    if first.reply_to_seq.is_none() {
                        first = p;
                    }
                }
                first
            }
            _ => self.observe_message(seq, t_ns, dir, frame),
        }
    }

    fn observe_message(&mut self, seq: i64, t_ns: i64, dir: Direction, msg: &mut Classified) -> Pairing {
        let Some(id) = msg.id.as_deref().map(|id| super::id_key(id).into_owned()) else {
            return Pairing::default();
        };
        match msg.frame_kind() {
            FrameKind::Request => {
                let (method, session_id) = (self.share(&msg.method), self.share(&msg.session_id));
                self.remember((dir, id), Pending { seq, t_ns, method, session_id });
                Pairing::default()
            }
            FrameKind::Response | FrameKind::Error => {
                let Some(request_dir) = dir.opposite() else {
                    return Pairing::default();
                };
                let Some(req) = self.pending.remove(&(request_dir, id)) else {
                    return Pairing::default();
                };
                if self.pending.is_empty() {
                    // Nothing waits: what was shared is shared no more.
                    self.shared.clear();
                }
                if msg.method.is_none() {
                    msg.method = req.method.as_deref().map(str::to_owned);
                }
                if msg.session_id.is_none() {
                    msg.session_id = req.session_id.as_deref().map(str::to_owned);
                }
                Pairing { reply_to_seq: Some(req.seq), latency_ns: Some(t_ns - req.t_ns) }
            }
            _ => Pairing::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::classify::classify;
    use Direction::*;

    /// Feeds (direction, t_ns, raw) frames; returns (method, session, pairing) of each.
    fn run(frames: &[(Direction, i64, &str)]) -> Vec<(Option<String>, Option<String>, Pairing)> {
        let mut p = Pairer::new();
        frames
            .iter()
            .enumerate()
            .map(|(i, (dir, t, raw))| {
                let mut c = classify(raw.as_bytes());
                let pairing = p.observe(i as i64 + 1, *t, *dir, &mut c);
                (c.method, c.session_id, pairing)
            })
            .collect()
    }

    fn paired(seq: i64, latency: i64) -> Pairing {
        Pairing { reply_to_seq: Some(seq), latency_ns: Some(latency) }
    }

    #[test]
    fn ids_are_scoped_per_direction() {
        let out = run(&[
            (ClientToAgent, 10, r#"{"id":7,"method":"session/prompt","params":{"sessionId":"s"}}"#),
            (AgentToClient, 20, r#"{"id":7,"method":"session/request_permission","params":{"sessionId":"s"}}"#),
            (ClientToAgent, 35, r#"{"id":7,"result":{"outcome":"allow"}}"#),
            (AgentToClient, 100, r#"{"id":7,"result":{"stopReason":"end_turn"}}"#),
        ]);
        assert_eq!(out[2].0.as_deref(), Some("session/request_permission"));
        assert_eq!(out[2].2, paired(2, 15));
        assert_eq!(out[3].0.as_deref(), Some("session/prompt"));
        assert_eq!(out[3].1.as_deref(), Some("s"));
        assert_eq!(out[3].2, paired(1, 90));
    }

    #[test]
    fn same_direction_and_unknown_ids_do_not_pair() {
        let out = run(&[
            (ClientToAgent, 1, r#"{"id":1,"method":"a"}"#),
            (ClientToAgent, 2, r#"{"id":1,"result":{}}"#),
            (AgentToClient, 3, r#"{"id":"1","result":{}}"#),
            (AgentToClient, 4, r#"{"id":2,"error":{"code":1,"message":"m"}}"#),
            (AgentToClient, 5, r#"{"id":1,"error":{"code":1,"message":"m"}}"#),
            (AgentToClient, 6, r#"{"id":1,"result":{}}"#),
        ]);
        let pairings: Vec<Pairing> = out.iter().map(|o| o.2).collect();
        let none = Pairing::default();
        assert_eq!(pairings, vec![none, none, none, none, paired(1, 4), none]);
    }

    #[test]
    fn past_the_limit_the_oldest_request_is_forgotten_and_memory_stays_bounded() {
        let mut p = Pairer::with_limit(3);
        let mut seq = 0;
        let mut observe = |p: &mut Pairer, dir, raw: String| {
            seq += 1;
            p.observe(seq, seq, dir, &mut classify(raw.as_bytes()))
        };
        for id in 1..=4 {
            observe(&mut p, ClientToAgent, format!(r#"{{"id":{id},"method":"m"}}"#));
        }
        assert_eq!(p.pending(), 3);
        // Request 1 was forgotten; 2, 3 and 4 still pair.
        assert_eq!(observe(&mut p, AgentToClient, r#"{"id":1,"result":{}}"#.into()).reply_to_seq, None);
        assert_eq!(observe(&mut p, AgentToClient, r#"{"id":2,"result":{}}"#.into()).reply_to_seq, Some(2));
        // One request never answered, then many answered ones: nothing of
        // the answered ones is kept.
        for id in 100..20_100 {
            observe(&mut p, ClientToAgent, format!(r#"{{"id":{id},"method":"m"}}"#));
            observe(&mut p, AgentToClient, format!(r#"{{"id":{id},"result":{{}}}}"#));
        }
        assert_eq!(p.pending(), 2);
        // A reused id replaces its request and becomes the newest.
        observe(&mut p, ClientToAgent, r#"{"id":3,"method":"again"}"#.into());
        observe(&mut p, ClientToAgent, r#"{"id":5,"method":"m"}"#.into());
        observe(&mut p, ClientToAgent, r#"{"id":6,"method":"m"}"#.into());
        assert_eq!(p.pending(), 3);
        assert_eq!(observe(&mut p, AgentToClient, r#"{"id":4,"result":{}}"#.into()).reply_to_seq, None);
        // Frame 40,007 is the request that reused id 3 (6 frames, then 40,000).
        assert_eq!(observe(&mut p, AgentToClient, r#"{"id":3,"result":{}}"#.into()).reply_to_seq, Some(40_007));
    }

    #[test]
    fn batch_elements_pair() {
        let out = run(&[
            (ClientToAgent, 1, r#"[{"id":1,"method":"a"},{"id":2,"method":"b"}]"#),
            (AgentToClient, 9, r#"{"id":2,"result":{}}"#),
            (AgentToClient, 12, r#"[{"id":1,"result":{}}]"#),
        ]);
        assert_eq!(out[1].0.as_deref(), Some("b"));
        assert_eq!(out[1].2, paired(1, 8));
        assert_eq!(out[2].2, paired(1, 11));
    }
}
