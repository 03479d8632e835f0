//! Conversations written line by line for the unit tests: `>` marks what
//! the client sent, `<` what the agent sent.

use crate::frame::Framer;
use crate::model::NewFrame;
use acp_tee_shared::Direction;

/// `lines` framed as the recorder frames them: classified and paired, line
/// `i` sent at `i` ns.
pub fn framed(lines: &[&str]) -> Vec<NewFrame> {
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let (dir, raw) = match line.split_at(1) {
            (">", rest) => (Direction::ClientToAgent, rest),
            (_, rest) => (Direction::AgentToClient, rest),
        };
        framer.chunk(dir, i as u64, format!("{raw}\n").as_bytes(), |f| frames.push(f));
    }
    framer.eof_all(lines.len() as u64, |f| frames.push(f));
    frames
}
