//! Turns the relay's chunks into numbered, classified and paired frames.

use crate::frame::{classify, FrameSplitter, Pairer};
use crate::store::NewFrame;
use acp_tee_shared::{Direction, FrameKind};

/// One splitter per direction, one sequence counter and one pairer per trace.
#[derive(Default)]
pub struct Framer {
    splitters: [FrameSplitter; 3],
    pairer: Pairer,
    last_seq: i64,
}

fn slot(dir: Direction) -> usize {
    match dir {
        Direction::ClientToAgent => 0,
        Direction::AgentToClient => 1,
        Direction::AgentStderr => 2,
    }
}

impl Framer {
    /// A framer for a new trace; the first frame gets seq 1.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes read going `dir` at `t_ns`; each completed frame goes to `emit`
    /// stamped with `t_ns`, the moment its last byte arrived.
    pub fn chunk(
        &mut self,
        dir: Direction,
        t_ns: u64,
        data: &[u8],
        mut emit: impl FnMut(NewFrame),
    ) {
        let Framer {
            splitters,
            pairer,
            last_seq,
        } = self;
        splitters[slot(dir)].push(data, |raw| {
            emit(make_frame(pairer, last_seq, dir, t_ns, raw))
        });
    }

    /// The stream going `dir` ended: its unterminated last line, if any, is a frame.
    pub fn eof(&mut self, dir: Direction, t_ns: u64, mut emit: impl FnMut(NewFrame)) {
        if let Some(raw) = self.splitters[slot(dir)].finish() {
            emit(make_frame(
                &mut self.pairer,
                &mut self.last_seq,
                dir,
                t_ns,
                raw,
            ));
        }
    }

    /// Ends every stream (the relay is gone).
    pub fn eof_all(&mut self, t_ns: u64, mut emit: impl FnMut(NewFrame)) {
        for dir in Direction::ALL {
            self.eof(dir, t_ns, &mut emit);
        }
    }

    /// The seq given to the newest frame (0 before the first).
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }
}

fn make_frame(
    pairer: &mut Pairer,
    last_seq: &mut i64,
    dir: Direction,
    t_ns: u64,
    raw: Vec<u8>,
) -> NewFrame {
    *last_seq += 1;
    let seq = *last_seq;
    let t_ns = i64::try_from(t_ns).unwrap_or(i64::MAX);
    if dir == Direction::AgentStderr {
        return NewFrame {
            seq,
            t_ns,
            dir,
            kind: FrameKind::Stderr,
            rpc_id: None,
            method: None,
            session_id: None,
            reply_to_seq: None,
            latency_ns: None,
            errors: 0,
            raw,
        };
    }
    let mut c = classify(&raw);
    let pairing = pairer.observe(seq, t_ns, dir, &mut c);
    NewFrame {
        seq,
        t_ns,
        dir,
        kind: c.frame_kind(),
        errors: c.error_count() as i64,
        rpc_id: c.id,
        method: c.method,
        session_id: c.session_id,
        reply_to_seq: pairing.reply_to_seq,
        latency_ns: pairing.latency_ns,
        raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_from_interleaved_streams() {
        let mut f = Framer::new();
        let mut out = Vec::new();
        f.chunk(
            Direction::ClientToAgent,
            10,
            b"{\"id\":1,\"method\":\"initialize\"}\n{\"id\":2,",
            |x| out.push(x),
        );
        f.chunk(Direction::AgentStderr, 11, b"starting\nhalf", |x| {
            out.push(x)
        });
        f.chunk(
            Direction::AgentToClient,
            20,
            b"{\"id\":1,\"result\":{}}\n",
            |x| out.push(x),
        );
        f.chunk(
            Direction::ClientToAgent,
            30,
            b"\"method\":\"session/new\"}\n",
            |x| out.push(x),
        );
        f.eof_all(40, |x| out.push(x));
        type Summary<'a> = (
            i64,
            i64,
            FrameKind,
            Option<&'a str>,
            Option<i64>,
            Option<i64>,
        );
        let summary: Vec<Summary> = out
            .iter()
            .map(|x| {
                (
                    x.seq,
                    x.t_ns,
                    x.kind,
                    x.method.as_deref(),
                    x.reply_to_seq,
                    x.latency_ns,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (1, 10, FrameKind::Request, Some("initialize"), None, None),
                (2, 11, FrameKind::Stderr, None, None, None),
                (
                    3,
                    20,
                    FrameKind::Response,
                    Some("initialize"),
                    Some(1),
                    Some(10)
                ),
                (4, 30, FrameKind::Request, Some("session/new"), None, None),
                (5, 40, FrameKind::Stderr, None, None, None),
            ]
        );
        assert_eq!(out[4].raw, b"half");
        assert_eq!(f.last_seq(), 5);
    }
}
