//! Matching responses to the requests they answer.

use super::classify::Classified;
use acp_tee_shared::{Direction, FrameKind};
use std::collections::{HashMap, VecDeque};

/// Requests waiting for a response that a pairer keeps at most; past that,
/// the oldest is forgotten (its response, should it come, stays unpaired).
/// A peer that never answers cannot make the recorder grow without bound.
pub const MAX_PENDING: usize = 100_000;

type Key = (Direction, String);

/// A request still waiting for its response.
#[derive(Debug, Clone)]
struct Pending {
    seq: i64,
    t_ns: i64,
    method: Option<String>,
    session_id: Option<String>,
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
#[derive(Debug)]
pub struct Pairer {
    pending: HashMap<Key, Pending>,
    /// The pending requests' keys with their seq, oldest first. It also holds
    /// keys already answered or reused (stale: their seq no longer matches),
    /// dropped when they reach the front or at a compaction.
    order: VecDeque<(i64, Key)>,
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
    pub fn new() -> Self {
        Self::default()
    }

    /// A pairer that keeps at most `limit` pending requests.
    pub fn with_limit(limit: usize) -> Self {
        Pairer { pending: HashMap::new(), order: VecDeque::new(), limit: limit.max(1), forgotten: 0 }
    }

    /// How many requests wait for a response.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn remember(&mut self, key: Key, request: Pending) {
        self.order.push_back((request.seq, key.clone()));
        self.pending.insert(key, request);
        if self.pending.len() > self.limit {
            self.forget_oldest();
        }
        if self.order.len() > 2 * self.pending.len() + 1024 {
            let pending = &self.pending;
            self.order.retain(|(seq, key)| pending.get(key).is_some_and(|p| p.seq == *seq));
        }
    }

    fn forget_oldest(&mut self) {
        while let Some((seq, key)) = self.order.pop_front() {
            if self.pending.get(&key).is_some_and(|p| p.seq == seq) {
                self.pending.remove(&key);
                self.forgotten += 1;
                if self.forgotten == 1 {
                    tracing::debug!("more than {} requests wait for a response; forgetting the oldest", self.limit);
                }
                return;
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
                let pending = Pending { seq, t_ns, method: msg.method.clone(), session_id: msg.session_id.clone() };
                self.remember((dir, id), pending);
                Pairing::default()
            }
            FrameKind::Response | FrameKind::Error => {
                let Some(request_dir) = dir.opposite() else {
                    return Pairing::default();
                };
                let Some(req) = self.pending.remove(&(request_dir, id)) else {
                    return Pairing::default();
                };
                if msg.method.is_none() {
                    msg.method = req.method;
                }
                if msg.session_id.is_none() {
                    msg.session_id = req.session_id;
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
        // One request never answered, then many answered ones: the order
        // queue does not keep the answered ones.
        for id in 100..20_100 {
            observe(&mut p, ClientToAgent, format!(r#"{{"id":{id},"method":"m"}}"#));
            observe(&mut p, AgentToClient, format!(r#"{{"id":{id},"result":{{}}}}"#));
        }
        assert_eq!(p.pending(), 2);
        assert!(p.order.len() <= 2 * p.pending() + 1025, "order queue holds {}", p.order.len());
        assert_eq!(observe(&mut p, AgentToClient, r#"{"id":3,"result":{}}"#.into()).reply_to_seq, Some(3));
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
