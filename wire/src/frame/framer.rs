//! Turns the relay's chunks into numbered, classified and paired frames.

use crate::frame::{classify_with, text_preview, Classified, FrameSplitter, Pairer};
use crate::model::{BatchMessage, NewFrame, PREVIEW_STORED_FROM};
use crate::redact::Redactor;
use acp_tee_shared::{Direction, FrameKind, Protocol};
use std::borrow::Cow;
use std::collections::HashMap;

/// One splitter per direction, one sequence counter and one pairer per trace.
#[derive(Default)]
pub struct Framer {
    splitters: [FrameSplitter; 3],
    meta: Annotator,
}

/// What numbers, classifies and pairs frames, whatever cut them.
#[derive(Default)]
struct Annotator {
    pairer: Pairer,
    last_seq: i64,
    /// MCP-over-ACP connection id -> the ACP session it was opened in.
    mcp_sessions: HashMap<String, String>,
    /// Record-time redaction (`record --redact`): what is stored is masked.
    redactor: Option<Redactor>,
    /// The trace's protocol, once known (given, or from its first
    /// `initialize`); `None` reads as ACP.
    protocol: Option<Protocol>,
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

    /// A framer whose frames come out masked by `redactor` (when given):
    /// their bytes, envelopes, previews and every value read from them (id,
    /// method, session, MCP method). Frames are still classified and paired
    /// by their original bytes, so masking never pairs two requests' ids.
    pub fn with_redactor(redactor: Option<Redactor>) -> Self {
        Framer { meta: Annotator { redactor, ..Annotator::default() }, ..Framer::default() }
    }

    /// Feeds bytes read going `dir` at `t_ns`; each completed frame goes to `emit`
    /// stamped with `t_ns`, the moment its last byte arrived.
    pub fn chunk(&mut self, dir: Direction, t_ns: u64, data: &[u8], mut emit: impl FnMut(NewFrame)) {
        let Framer { splitters, meta } = self;
        splitters[slot(dir)].push(data, |raw| emit(meta.frame(dir, t_ns, raw, None)));
    }

    /// One whole message (proxy mode), with the envelope it travelled in on
    /// the successor side of the hop.
    pub fn message(&mut self, dir: Direction, t_ns: u64, raw: Vec<u8>, envelope: Option<Vec<u8>>) -> NewFrame {
        self.meta.frame(dir, t_ns, raw, envelope)
    }

    /// One whole message given seq `seq` (imports keep the seq their source
    /// gave it); later frames count on from there.
    pub fn message_at(
        &mut self,
        seq: i64,
        dir: Direction,
        t_ns: u64,
        raw: Vec<u8>,
        envelope: Option<Vec<u8>>,
    ) -> NewFrame {
        self.meta.last_seq = seq - 1;
        self.meta.frame(dir, t_ns, raw, envelope)
    }

    /// The stream going `dir` ended: its unterminated last line, if any, is a frame.
    pub fn eof(&mut self, dir: Direction, t_ns: u64, mut emit: impl FnMut(NewFrame)) {
        if let Some(raw) = self.splitters[slot(dir)].finish() {
            emit(self.meta.frame(dir, t_ns, raw, None));
        }
    }

    /// Ends every stream (the relay is gone).
    pub fn eof_all(&mut self, t_ns: u64, mut emit: impl FnMut(NewFrame)) {
        for dir in Direction::ALL {
            self.eof(dir, t_ns, &mut emit);
        }
    }

    /// Numbers the next frame `seq + 1` (a recorder continuing a trace whose
    /// frames up to `seq` are stored).
    pub fn continue_after(&mut self, seq: i64) {
        self.meta.last_seq = seq;
    }

    /// Bytes of unfinished lines held, waiting for their newline.
    pub fn pending_bytes(&self) -> usize {
        self.splitters.iter().map(FrameSplitter::pending_len).sum()
    }

    /// The trace speaks `protocol` (`record --protocol`, or a trace being
    /// continued whose protocol is known): no `initialize` changes it.
    pub fn set_protocol(&mut self, protocol: Protocol) {
        self.meta.protocol = Some(protocol);
    }

    /// The trace's protocol, once known.
    pub fn protocol(&self) -> Option<Protocol> {
        self.meta.protocol
    }

    /// The seq given to the newest frame (0 before the first).
    pub fn last_seq(&self) -> i64 {
        self.meta.last_seq
    }
}

impl Annotator {
    fn frame(&mut self, dir: Direction, t_ns: u64, raw: Vec<u8>, envelope: Option<Vec<u8>>) -> NewFrame {
        self.last_seq += 1;
        let seq = self.last_seq;
        let t_ns = i64::try_from(t_ns).unwrap_or(i64::MAX);
        let mut frame = NewFrame {
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
            envelope,
            mcp: false,
            mcp_method: None,
            preview: None,
            sender: None,
            receiver: None,
            batch: Vec::new(),
            protocol_known: None,
        };
        // Short frames are stored without a preview; readers make it.
        let preview = frame.raw.len() >= PREVIEW_STORED_FROM;
        let mcp_trace = self.protocol == Some(Protocol::Mcp);
        frame.mcp = mcp_trace;
        if dir == Direction::AgentStderr {
            if let Some(r) = &self.redactor {
                if let Cow::Owned(raw) = r.redact(&frame.raw) {
                    frame.raw = raw;
                }
            }
            frame.preview = text_preview(&frame.raw).filter(|_| preview);
            return frame;
        }
        let mut c = classify_with(&frame.raw, preview);
        c.rename_proxy_initialize();
        // With redaction, `c` keeps its original id (pairing needs it) and
        // takes every other value from the masked bytes; the id to store is
        // the masked one.
        let masked_id = match &self.redactor {
            Some(r) => mask(r, &mut frame, &mut c, preview),
            None => None,
        };
        let pairing = self.pairer.observe(seq, t_ns, dir, &mut c);
        self.tie_mcp_session(&mut c);
        frame.kind = c.frame_kind();
        if self.protocol.is_none()
            && matches!(frame.kind, FrameKind::Request | FrameKind::Response)
            && c.method.as_deref() == Some("initialize")
        {
            self.protocol = crate::frame::protocol_of_initialize(&frame.raw);
            frame.protocol_known = self.protocol;
        }
        let mcp_trace = self.protocol == Some(Protocol::Mcp);
        if mcp_trace {
            // An MCP trace: every message is MCP, its method the MCP method.
            c.mcp_method = c.method.clone();
            // A response's preview is a tool's failure; an error keeps its own.
            let method = c.method.as_deref();
            match frame.kind {
                FrameKind::Request | FrameKind::Notification if preview => {
                    c.preview = method.and_then(|m| crate::frame::mcp_preview(m, &frame.raw));
                }
                FrameKind::Response if preview => {
                    c.preview = method.and_then(|m| crate::frame::mcp_result_preview(m, &frame.raw));
                }
                _ => {}
            }
        }
        frame.errors = c.error_count() as i64;
        frame.mcp = mcp_trace || c.is_mcp();
        frame.rpc_id = masked_id.unwrap_or(c.id);
        frame.method = c.method;
        frame.session_id = c.session_id;
        frame.mcp_method = c.mcp_method;
        frame.reply_to_seq = pairing.reply_to_seq;
        frame.latency_ns = pairing.latency_ns;
        // A batch's messages, each with its own pairing (the frame's is the
        // first paired one's).
        frame.batch = c
            .elements
            .iter()
            .map(|m| BatchMessage {
                kind: m.frame_kind(),
                method: m.method.clone(),
                reply_to_seq: m.reply.reply_to_seq,
                latency_ns: m.reply.latency_ns,
            })
            .collect();
        frame.preview = match frame.kind {
            FrameKind::Invalid if preview => text_preview(&frame.raw),
            _ => c.preview,
        };
        frame
    }

    /// MCP-over-ACP messages name a connection, not a session: remember the
    /// session each connection was opened in and fill it in later.
    fn tie_mcp_session(&mut self, c: &mut crate::frame::Classified) {
        if !c.is_mcp() {
            return;
        }
        let Some(conn) = c.connection_id.clone() else { return };
        match (&c.session_id, c.method.as_deref()) {
            (Some(session), Some("mcp/connect")) => {
                self.mcp_sessions.insert(conn, session.clone());
            }
            (None, _) => c.session_id = self.mcp_sessions.get(&conn).cloned(),
            _ => {}
        }
    }
}

/// Masks `frame`'s bytes and envelope; where that changed them, `c` takes
/// the method, session, MCP method and preview of the masked bytes (element
/// by element in a batch) and the masked id is returned, to be stored in
/// place of the original one `c` keeps for pairing.
fn mask(r: &Redactor, frame: &mut NewFrame, c: &mut Classified, preview: bool) -> Option<Option<String>> {
    if let Some(envelope) = &frame.envelope {
        if let Cow::Owned(masked) = r.redact(envelope) {
            frame.envelope = Some(masked);
        }
    }
    let Cow::Owned(raw) = r.redact(&frame.raw) else { return None };
    frame.raw = raw;
    let mut m = classify_with(&frame.raw, preview);
    m.rename_proxy_initialize();
    fn take(c: &mut Classified, m: Classified) {
        c.method = m.method;
        c.session_id = m.session_id;
        c.mcp_method = m.mcp_method;
        c.preview = m.preview;
        // Batch elements (one level: an element is never a batch).
        for (ce, me) in c.elements.iter_mut().zip(m.elements) {
            take(ce, me);
        }
    }
    let id = m.id.clone();
    take(c, m);
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mcp_trace_is_known_from_its_initialize_and_every_frame_is_mcp() {
        let mut f = Framer::new();
        let mut out = Vec::new();
        let c2a = [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"git_status","arguments":{}}}"#,
        ];
        f.chunk(Direction::AgentStderr, 1, b"starting\n", |x| out.push(x));
        f.chunk(Direction::ClientToAgent, 2, format!("{}\n", c2a[0]).as_bytes(), |x| out.push(x));
        f.chunk(
            Direction::AgentToClient,
            3,
            br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}"#,
            |x| out.push(x),
        );
        f.chunk(Direction::AgentToClient, 3, b"\n", |x| out.push(x));
        for (i, m) in c2a[1..].iter().enumerate() {
            f.chunk(Direction::ClientToAgent, 4 + i as u64, format!("{m}\n").as_bytes(), |x| out.push(x));
        }
        f.chunk(Direction::AgentToClient, 9, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n", |x| {
            out.push(x)
        });
        assert_eq!(f.protocol(), Some(Protocol::Mcp));
        // The stderr line before the initialize was not known to be MCP yet.
        assert!(!out[0].mcp);
        assert_eq!(out[1].protocol_known, Some(Protocol::Mcp));
        assert!(out[2..].iter().all(|x| x.protocol_known.is_none()));
        assert!(out[1..].iter().all(|x| x.mcp));
        let methods: Vec<_> = out[1..].iter().map(|x| x.mcp_method.as_deref()).collect();
        assert_eq!(
            methods,
            [
                Some("initialize"),
                Some("initialize"),
                Some("notifications/initialized"),
                Some("tools/call"),
                Some("tools/call")
            ]
        );
        assert_eq!(out[5].reply_to_seq, Some(5));

        // Given at the start, the protocol stays whatever initialize says.
        let mut f = Framer::new();
        f.set_protocol(Protocol::Acp);
        f.chunk(Direction::ClientToAgent, 1, format!("{}\n", c2a[0]).as_bytes(), |x| out.push(x));
        assert_eq!(f.protocol(), Some(Protocol::Acp));
        assert!(!out.last().unwrap().mcp);
        assert_eq!(out.last().unwrap().protocol_known, None);
    }

    #[test]
    fn frames_from_interleaved_streams() {
        let mut f = Framer::new();
        let mut out = Vec::new();
        f.chunk(Direction::ClientToAgent, 10, b"{\"id\":1,\"method\":\"initialize\"}\n{\"id\":2,", |x| out.push(x));
        f.chunk(Direction::AgentStderr, 11, b"starting\nhalf", |x| out.push(x));
        f.chunk(Direction::AgentToClient, 20, b"{\"id\":1,\"result\":{}}\n", |x| out.push(x));
        f.chunk(Direction::ClientToAgent, 30, b"\"method\":\"session/new\"}\n", |x| out.push(x));
        f.eof_all(40, |x| out.push(x));
        type Summary<'a> = (i64, i64, FrameKind, Option<&'a str>, Option<i64>, Option<i64>);
        let summary: Vec<Summary> =
            out.iter().map(|x| (x.seq, x.t_ns, x.kind, x.method.as_deref(), x.reply_to_seq, x.latency_ns)).collect();
        assert_eq!(
            summary,
            vec![
                (1, 10, FrameKind::Request, Some("initialize"), None, None),
                (2, 11, FrameKind::Stderr, None, None, None),
                (3, 20, FrameKind::Response, Some("initialize"), Some(1), Some(10)),
                (4, 30, FrameKind::Request, Some("session/new"), None, None),
                (5, 40, FrameKind::Stderr, None, None, None),
            ]
        );
        assert_eq!(out[4].raw, b"half");
        assert_eq!(f.last_seq(), 5);
    }

    #[test]
    fn mcp_messages_inherit_the_session_of_their_connection() {
        let mut f = Framer::new();
        let mut msg = |dir, t, raw: &str| f.message(dir, t, raw.as_bytes().to_vec(), Some(b"env".to_vec()));
        let connect = msg(
            Direction::AgentToClient,
            1,
            r#"{"id":"m1","method":"mcp/connect","params":{"sessionId":"s1","acpUrl":"acp:x"}}"#,
        );
        assert!(connect.mcp);
        assert_eq!(connect.envelope.as_deref(), Some(&b"env"[..]));
        let connected = msg(Direction::ClientToAgent, 2, r#"{"id":"m1","result":{"connectionId":"c1"}}"#);
        assert!(connected.mcp);
        assert_eq!(connected.session_id.as_deref(), Some("s1"));
        let call = msg(
            Direction::AgentToClient,
            3,
            r#"{"id":"m2","method":"mcp/message","params":{"connectionId":"c1","method":"tools/list"}}"#,
        );
        assert_eq!(call.session_id.as_deref(), Some("s1"));
        assert_eq!(call.mcp_method.as_deref(), Some("tools/list"));
        let prompt =
            msg(Direction::ClientToAgent, 4, r#"{"id":1,"method":"session/prompt","params":{"sessionId":"s1"}}"#);
        assert!(!prompt.mcp);
    }
}
