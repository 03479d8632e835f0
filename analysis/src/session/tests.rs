use super::*;
use crate::store::testing::store_from;
use acp_tee_shared::session::{Turn, OPEN_REQUESTS_MAX, PER_TURN_MAX, SESSIONS_MAX};
use acp_tee_shared::Direction;
use acp_tee_shared::Direction::{AgentToClient as A2C, ClientToAgent as C2A};
use acp_tee_shared::FrameKind;

/// Lines going their way at their time (ms), as a trace.
fn trace(lines: &[(Direction, u64, &str)]) -> crate::store::Store {
    let owned: Vec<(Direction, u64, Vec<u8>)> =
        lines.iter().map(|(d, ms, l)| (*d, ms * 1_000_000, format!("{l}\n").into_bytes())).collect();
    let chunks: Vec<(Direction, u64, &[u8])> = owned.iter().map(|(d, t, b)| (*d, *t, b.as_slice())).collect();
    store_from(&chunks)
}

fn model_of(store: &crate::store::Store) -> Model {
    let mut m = Model::default();
    m.catch_up(store, 1, None).unwrap();
    m
}

const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":"#;

fn update(body: &str) -> String {
    format!("{UPDATE}{body}}}}}")
}

/// A v1 session: initialize, new, a prompt answered with chunks, a tool
/// call that asks permission, usage; then a second prompt never answered
/// with a permission request the client never answers.
fn conversation() -> Vec<(Direction, u64, String)> {
    vec![
        (C2A, 0, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"ed","version":"1"}}}"#.into()),
        (A2C, 1, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"ag","version":"2"}}}"#.into()),
        (C2A, 2, r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#.into()),
        (A2C, 3, r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","modes":{"currentModeId":"ask","availableModes":[]}}}"#.into()),
        (C2A, 10, r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"fix "},{"type":"text","text":"it"},{"type":"image","data":"AA","mimeType":"image/png"}]}}"#.into()),
        (A2C, 15, update(r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}"#)),
        (A2C, 25, update(r#"{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"Sure, "}}"#)),
        (A2C, 26, update(r#"{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"done."}}"#)),
        (A2C, 27, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit a.rs","kind":"edit","locations":[{"path":"/w/a.rs"}]}"#)),
        (A2C, 28, r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]}}"#.into()),
        (C2A, 78, r#"{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}"#.into()),
        (A2C, 79, update(r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress"}"#)),
        (A2C, 80, r#"{"jsonrpc":"2.0","id":"f1","method":"fs/write_text_file","params":{"sessionId":"s1","path":"/w/a.rs","content":"x"}}"#.into()),
        (C2A, 82, r#"{"jsonrpc":"2.0","id":"f1","result":null}"#.into()),
        (A2C, 83, update(r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":[{"type":"diff","path":"/w/a.rs","newText":"x"}]}"#)),
        (A2C, 84, update(r#"{"sessionUpdate":"plan","entries":[{"content":"edit","priority":"high","status":"completed"}]}"#)),
        (A2C, 85, update(r#"{"sessionUpdate":"usage_update","used":1200,"size":200000,"cost":{"amount":0.5,"currency":"USD"}}"#)),
        (A2C, 86, update(r#"{"sessionUpdate":"mystery_update","x":1}"#)),
        (A2C, 90, r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","usage":{"totalTokens":30,"inputTokens":20,"outputTokens":10}}}"#.into()),
        (C2A, 100, r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"again"}]}}"#.into()),
        (A2C, 101, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Run ls","kind":"execute","status":"pending"}"#)),
        (A2C, 102, r#"{"jsonrpc":"2.0","id":"p2","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t2"},"options":[{"optionId":"allow","kind":"allow_once"}]}}"#.into()),
        (C2A, 150, r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#.into()),
        (C2A, 200, r#"{"jsonrpc":"2.0","id":9,"method":"_x/ping"}"#.into()),
    ]
}

fn as_refs(lines: &[(Direction, u64, String)]) -> Vec<(Direction, u64, &str)> {
    lines.iter().map(|(d, t, l)| (*d, *t, l.as_str())).collect()
}

#[test]
fn sessions_sum_up_turns_tools_permissions_usage_and_open_requests() {
    let lines = conversation();
    let store = trace(&as_refs(&lines));
    let view = model_of(&store).sessions(None);
    assert_eq!(view.protocol_version, Some(1));
    assert_eq!(view.agent.as_deref(), Some("ag 2"));
    assert_eq!(view.client.as_deref(), Some("ed 1"));
    assert_eq!(view.sessions.len(), 1);
    let s = &view.sessions[0];
    assert_eq!((s.session_id.as_str(), s.began.as_str(), s.began_seq), ("s1", "new", Some(3)));
    assert_eq!(s.cwd.as_deref(), Some("/w"));
    assert_eq!(s.mode.as_deref(), Some("ask"));
    assert_eq!((s.turns, s.tool_calls, s.permission_requests), (2, 2, 2));
    // 50 ms for the answered one; the open one (p2, asked at 102 ms) has
    // waited up to the trace's last frame (200 ms), or to a live trace's now.
    assert_eq!(s.permission_wait_ns, 50_000_000 + 98_000_000);
    let live = model_of(&store).sessions(Some(1_000_000_000));
    assert_eq!(live.sessions[0].permission_wait_ns, 50_000_000 + 898_000_000);
    assert_eq!(s.usage.unwrap().total_tokens, 30);
    assert_eq!(
        s.context.as_ref().map(|c| (c.used, c.size, c.cost.clone())),
        Some((1200, 200000, Some("0.5 USD".into())))
    );
    assert_eq!(s.other_updates.iter().map(|k| (k.kind.as_str(), k.count)).collect::<Vec<_>>(), [("mystery_update", 1)]);
    // Open: the second prompt (cancelled, never ended), its permission
    // request, the extension request.
    let open: Vec<(Option<&str>, &str, Option<i64>, i64)> = view
        .open_requests
        .iter()
        .map(|o| (o.method.as_deref(), o.waiting_for.as_str(), o.cancel_seq, o.age_ns))
        .collect();
    assert_eq!(
        open,
        [
            (Some("session/prompt"), "agent", Some(23), 100_000_000),
            (Some("session/request_permission"), "client", None, 98_000_000),
            (Some("_x/ping"), "agent", None, 0),
        ]
    );
    assert_eq!(s.open_requests, 2);
    // Live: ages run to now.
    let live = model_of(&store).sessions(Some(1_200_000_000));
    assert_eq!(live.open_requests[1].age_ns, 1_098_000_000);
    assert!(live.live);
    // Stuck or streaming: how long since the last frame of the request's
    // session (the cancel at 150 ms), or of the trace (the ping at 200 ms)
    // for a request naming no session.
    let quiet: Vec<(i64, &str)> = live.open_requests.iter().map(|o| (o.quiet_ns, o.quiet_of.as_str())).collect();
    assert_eq!(quiet, [(1_050_000_000, "session"), (1_050_000_000, "session"), (1_000_000_000, "trace")]);
}

#[test]
fn a_page_of_turns_assembles_messages_tool_calls_and_waits() {
    let lines = conversation();
    let store = trace(&as_refs(&lines));
    let model = model_of(&store);
    let page = model.turns_of(&store, 1, "s1", 0, 10, None).unwrap().unwrap();
    assert_eq!(page.len(), 2);
    let t = &page[0];
    assert_eq!((t.index, t.request_seq, t.response_seq), (0, 5, Some(19)));
    assert_eq!(t.prompt.text, "fix it");
    assert_eq!(t.prompt.other_blocks[0].kind, "image");
    assert_eq!(t.message.text, "Sure, done.");
    assert_eq!(t.thought.text, "hmm");
    assert_eq!(t.first_chunk_ns, Some(15_000_000));
    assert_eq!(t.end_t_ns.unwrap() - t.start_t_ns, 80_000_000);
    assert_eq!(t.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(t.messages.len(), 1);
    assert_eq!(t.usage.unwrap().output_tokens, 10);
    let call = &t.tool_calls[0];
    assert_eq!(
        (call.tool_call_id.as_str(), call.title.as_deref(), call.kind.as_deref()),
        ("t1", Some("Edit a.rs"), Some("edit"))
    );
    let statuses: Vec<&str> = call.statuses.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(statuses, ["pending", "in_progress", "completed"]);
    assert_eq!(call.locations, ["/w/a.rs"]);
    assert_eq!(call.content[0].kind, "diff");
    let p = &call.permissions[0];
    assert_eq!((p.request_seq, p.response_seq, p.waited_ns), (10, Some(11), Some(50_000_000)));
    assert_eq!((p.outcome.as_deref(), p.option_id.as_deref()), (Some("selected"), Some("allow")));
    assert_eq!(p.options, ["allow: allow_once", "no: reject_once"]);
    // The names the user saw, and the chosen one's.
    assert_eq!(
        (p.option_names.as_slice(), p.option_name.as_deref()),
        (&["Allow".to_owned(), "No".to_owned()][..], Some("Allow"))
    );
    let fs = &t.client_calls[0];
    assert_eq!(
        (fs.method.as_str(), fs.subject.as_deref(), fs.duration_ns),
        ("fs/write_text_file", Some("/w/a.rs"), Some(2_000_000))
    );
    // The second turn: cancelled, waiting on a permission nobody answered.
    let t = &page[1];
    assert_eq!((t.index, t.response_seq, t.cancel_seq), (1, None, Some(23)));
    assert_eq!(t.tool_calls[0].permissions[0].response_seq, None);
    // Paging.
    let second = model.turns_of(&store, 1, "s1", 1, 1, None).unwrap().unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0], page[1]);
    assert!(model.turns_of(&store, 1, "s1", 5, 1, None).unwrap().unwrap().is_empty());
    assert!(model.turns_of(&store, 1, "nope", 0, 1, None).unwrap().is_none());
}

#[test]
fn caught_up_while_the_trace_grows_the_model_is_the_model_read_at_once() {
    use crate::store::testing::{create_trace, finish_trace};
    let lines = conversation();
    let mut store = crate::store::Store::in_memory().unwrap();
    let id = create_trace(&mut store);
    let mut framer = crate::frame::Framer::new();
    let mut growing = Model::default();
    for part in lines.chunks(7) {
        let mut frames = Vec::new();
        for (dir, ms, line) in part {
            framer.chunk(*dir, ms * 1_000_000, format!("{line}\n").as_bytes(), |f| frames.push(f));
        }
        store.insert_frames(id, &frames).unwrap();
        growing.catch_up(&store, id, None).unwrap();
    }
    finish_trace(&store, id);
    let whole = model_of(&store);
    assert_eq!(growing.last_seq(), lines.len() as i64);
    assert_eq!(growing.sessions(None), whole.sessions(None));
    assert_eq!(growing.sessions(None).sessions[0].turns, 2);
}

#[test]
fn a_model_caught_up_to_a_seq_is_the_model_of_the_trace_cut_there() {
    let owned = conversation();
    let lines: Vec<(Direction, u64, &str)> = owned.iter().map(|(d, ms, l)| (*d, *ms, l.as_str())).collect();
    let store = trace(&lines);
    // Fed forward a frame at a time, as a replay's cursor advances.
    let mut replay = Model::default();
    for to in 1..=lines.len() {
        replay.catch_up_to(&store, 1, to as i64, None).unwrap();
        let cut_store = trace(&lines[..to]);
        let cut = model_of(&cut_store);
        assert_eq!(replay.last_seq(), to as i64);
        assert_eq!(replay.sessions(None), cut.sessions(None), "sessions up to {to}");
        let turns = replay.turns_of(&store, 1, "s1", 0, 50, None).unwrap();
        assert_eq!(turns, cut.turns_of(&cut_store, 1, "s1", 0, 50, None).unwrap(), "turns up to {to}");
        assert_eq!(replay.open_requests_of("s1", None), cut.open_requests_of("s1", None), "open up to {to}");
    }
    // A model past the seq is left as it is (the server folds again from the start).
    replay.catch_up_to(&store, 1, 3, None).unwrap();
    assert_eq!(replay.last_seq(), lines.len() as i64);
}

#[test]
fn loads_that_replay_nothing_or_twice_and_cancels_not_honoured_are_noted() {
    let lines = vec![
        (
            C2A,
            0,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s1","cwd":"/w"}}"#.to_owned(),
        ),
        (A2C, 1, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned()),
        (
            C2A,
            2,
            r#"{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s1","cwd":"/w"}}"#.to_owned(),
        ),
        (A2C, 3, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"x"}"#)),
        (A2C, 4, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"x"}"#)),
        (A2C, 5, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_owned()),
        (
            C2A,
            6,
            r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.to_owned(),
        ),
        (C2A, 7, r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}"#.to_owned()),
        (A2C, 8, r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#.to_owned()),
    ];
    let store = trace(&as_refs(&lines));
    let view = model_of(&store).sessions(None);
    let s = &view.sessions[0];
    assert_eq!((s.began.as_str(), s.began_seq, s.replayed_updates, s.tool_calls), ("load", Some(1), 2, 0));
    let codes: Vec<&str> = s.notes.iter().map(|n| n.code.as_str()).collect();
    assert_eq!(codes, ["load-replayed-nothing", "replayed-twice", "cancel-not-honoured"]);
    assert!(view.open_requests.is_empty());
}

#[test]
fn a_turn_answered_by_an_error_keeps_its_data() {
    let prompt = |id: u32| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s1","prompt":[]}}}}"#)
    };
    let lines = vec![
        (C2A, 0, prompt(1)),
        (A2C, 1, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"details":"model overloaded"}}}"#.to_owned()),
        (C2A, 2, prompt(2)),
        (A2C, 3, r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":null}}"#.to_owned()),
    ];
    let store = trace(&as_refs(&lines));
    let model = model_of(&store);
    let turns = model.turns_of(&store, 1, "s1", 0, 5, None).unwrap().unwrap();
    assert_eq!(turns[0].error.as_deref(), Some("-32603: Internal error"));
    assert_eq!(turns[0].error_data.as_deref(), Some(r#"{"details":"model overloaded"}"#));
    assert_eq!(turns[1].error_data, None, "a null data says nothing");
}

#[test]
fn v2_turns_end_with_their_state_update() {
    let lines = vec![
        (C2A, 0, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}"#.to_owned()),
        (A2C, 1, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}"#.to_owned()),
        (
            C2A,
            2,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.to_owned(),
        ),
        (A2C, 3, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned()),
        (A2C, 4, update(r#"{"sessionUpdate":"agent_message","messageId":"m","content":{"type":"text","text":"hi"}}"#)),
        (A2C, 9, update(r#"{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}"#)),
    ];
    let store = trace(&as_refs(&lines));
    let model = model_of(&store);
    let turn = &model.turns_of(&store, 1, "s1", 0, 5, None).unwrap().unwrap()[0];
    assert_eq!((turn.stop_reason.as_deref(), turn.end_t_ns), (Some("end_turn"), Some(9_000_000)));
    assert_eq!(turn.message.text, "hi");
    assert!(model.sessions(None).sessions[0].other_updates.is_empty());
}

#[test]
fn hostile_frames_are_counted_not_trusted() {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let lines = vec![
        (
            A2C,
            0,
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{deep}}}}}"#),
        ),
        (
            A2C,
            1,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":7}}}"#
                .to_owned(),
        ),
        (A2C, 2, r#"{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}"#.to_owned()),
        (
            C2A,
            3,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":"not a list"}}"#
                .to_owned(),
        ),
    ];
    let store = trace(&as_refs(&lines));
    let model = model_of(&store);
    let s = &model.sessions(None).sessions[0];
    assert_eq!((s.updates, s.turns), (2, 1));
    assert_eq!(s.other_updates[0].kind, "unreadable");
    let turns = model.turns_of(&store, 1, "s1", 0, 5, None).unwrap().unwrap();
    assert_eq!(turns[0].prompt.chars, 0);
}

/// A stored frame as the recorder classifies one, for feeding the model
/// without a store.
fn frame<'a>(
    seq: i64,
    dir: Direction,
    kind: FrameKind,
    method: &'a str,
    session: Option<&'a str>,
    raw: &'a str,
) -> FrameRef<'a> {
    FrameRef {
        seq,
        t_ns: seq * 1000,
        dir,
        kind,
        rpc_id: Some("1"),
        method: Some(method),
        session_id: session,
        reply_to_seq: None,
        raw: raw.as_bytes(),
    }
}

#[test]
fn sessions_and_open_requests_past_their_bounds_are_counted_not_kept() {
    let mut m = Model::default();
    let extra = 25;
    let mut seq = 0;
    for i in 0..SESSIONS_MAX + extra {
        seq += 1;
        let sid = format!("s{i}");
        m.feed(&frame(seq, A2C, FrameKind::Notification, "session/update", Some(&sid), "{}"), None);
    }
    for _ in 0..PENDING_MAX + extra {
        seq += 1;
        m.feed(&frame(seq, C2A, FrameKind::Request, "x/y", None, r#"{"id":1,"method":"x/y"}"#), None);
    }
    // A session left out sends again: it is one session left out.
    seq += 1;
    m.feed(&frame(seq, A2C, FrameKind::Notification, "session/update", Some("s10000"), "{}"), None);
    let view = m.sessions(None);
    assert_eq!(view.sessions.len(), SESSIONS_MAX);
    assert_eq!((view.frames_left_out, view.sessions_left_out), (extra as u64 + 1, extra as u64));
    assert_eq!(view.open_requests.len(), OPEN_REQUESTS_MAX);
    assert_eq!(view.open_requests_total, (PENDING_MAX + extra) as u64);
    assert_eq!(view.requests_not_followed, extra as u64);
    assert_eq!(m.conv.pending().len(), PENDING_MAX);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// One message of a small vocabulary, in session `s`, with id `id`.
    fn line(pick: u8, s: u8, id: u8) -> (Direction, String) {
        let sid = format!("s{s}");
        let up = |body: &str| {
            (
                A2C,
                format!(
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{body}}}}}"#
                ),
            )
        };
        match pick % 12 {
            0 => (
                C2A,
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"{sid}","prompt":[{{"type":"text","text":"p{id}"}}]}}}}"#
                ),
            ),
            1 => (A2C, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#)),
            2 => up(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#),
            3 => up(&format!(r#"{{"sessionUpdate":"tool_call","toolCallId":"t{id}","title":"x"}}"#)),
            4 => up(&format!(r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t{id}","status":"completed"}}"#)),
            5 => (
                A2C,
                format!(
                    r#"{{"jsonrpc":"2.0","id":"q{id}","method":"session/request_permission","params":{{"sessionId":"{sid}","toolCall":{{"toolCallId":"t{id}"}},"options":[]}}}}"#
                ),
            ),
            6 => (C2A, format!(r#"{{"jsonrpc":"2.0","id":"q{id}","result":{{"outcome":{{"outcome":"cancelled"}}}}}}"#)),
            7 => (C2A, format!(r#"{{"jsonrpc":"2.0","method":"session/cancel","params":{{"sessionId":"{sid}"}}}}"#)),
            8 => (
                C2A,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/load","params":{{"sessionId":"{sid}"}}}}"#),
            ),
            9 => (A2C, format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1,"message":"no"}}}}"#)),
            10 => up(r#"{"sessionUpdate":"plan","entries":[{"content":"c","status":"pending"}]}"#),
            _ => (A2C, r#"{"jsonrpc":"2.0","id":"#.to_owned() + &id.to_string()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases((acp_tee_wire::fuzz_cases() / 50).max(16)))]

        /// Whatever the order of messages, the model does not fail, its
        /// counts match the frames, and reading turns page by page gives
        /// what one page of all of them gives.
        #[test]
        fn any_order_of_messages_pages_the_same(picks in prop::collection::vec((0u8..12, 0u8..3, 0u8..6), 1..80), size in 1u32..4, held in 0u64..4000) {
            let lines: Vec<(Direction, u64, String)> =
                picks.iter().enumerate().map(|(i, &(p, s, id))| { let (d, l) = line(p, s, id); (d, i as u64, l) }).collect();
            let store = trace(&as_refs(&lines));
            let model = model_of(&store);
            let view = model.sessions(None);
            let prompts = picks.iter().filter(|p| p.0 % 12 == 0).count() as u64;
            prop_assert_eq!(view.sessions.iter().map(|s| s.turns).sum::<u64>(), prompts);
            for s in &view.sessions {
                let all = model.turns_of(&store, 1, &s.session_id, 0, 10_000, None).unwrap().unwrap();
                prop_assert_eq!(all.len() as u64, s.turns);
                let mut paged = Vec::new();
                let mut offset = 0;
                loop {
                    let page = model.turns_of(&store, 1, &s.session_id, offset, size, None).unwrap().unwrap();
                    if page.is_empty() { break; }
                    offset += page.len() as u64;
                    paged.extend(page);
                }
                prop_assert_eq!(paged, all);
            }
            // One pass for every session, however little it may hold, gives
            // what reading each session alone gives.
            let sids: Vec<&str> = view.sessions.iter().map(|s| s.session_id.as_str()).collect();
            let alone: Vec<Vec<Turn>> =
                sids.iter().map(|sid| model.turns_of(&store, 1, sid, 0, 10_000, None).unwrap().unwrap()).collect();
            for held_max in [0, held, u64::MAX] {
                prop_assert_eq!(&each_turn(&model, &store, &sids, held_max), &alone);
                // Built in the model's own pass as far as `held_max` allows,
                // the rest by further passes: the same turns, the same model.
                let mut one = Model::default();
                let built = one.catch_up_building(&store, 1, None, None, held_max).unwrap();
                prop_assert_eq!(one.sessions(None), view.clone());
                prop_assert_eq!(&each_turn_from(&one, &store, &sids, built, held_max), &alone);
            }
            // Given out one by one as each is over (what `diff` digests): the same turns, the same model;
            // a pass that may hold nothing stops, unless no turn stays open past its frame.
            let mut streamed = Model::default();
            let mut given: std::collections::HashMap<String, Vec<Option<Turn>>> = Default::default();
            let whole = streamed
                .catch_up_turn_by_turn(&store, 1, None, u64::MAX, |sid, k, t| {
                    let turns = given.entry(sid.to_owned()).or_default();
                    if turns.len() <= k {
                        turns.resize(k + 1, None);
                    }
                    assert!(turns[k].is_none(), "turn {k} of {sid} given twice");
                    turns[k] = Some(t.clone());
                })
                .unwrap();
            prop_assert!(whole);
            prop_assert_eq!(streamed.sessions(None), view.clone());
            let given: Vec<Vec<Turn>> = sids
                .iter()
                .map(|sid| given.remove(*sid).unwrap_or_default().into_iter().map(|t| t.expect("every turn given")).collect())
                .collect();
            prop_assert_eq!(&given, &alone);
            // Holding nothing, the pass stops at the first prompt (a turn is never over in its own frame).
            let mut tight = Model::default();
            let whole = tight.catch_up_turn_by_turn(&store, 1, None, 0, |_, _, _| {}).unwrap();
            prop_assert_eq!(whole, prompts == 0);
        }
    }
}

/// Every session's turns through `Model::each_turn_of`, checking its steps
/// come in order.
fn each_turn(model: &Model, store: &crate::store::Store, sids: &[&str], held_max: u64) -> Vec<Vec<Turn>> {
    in_order(|each| model.each_turn_of::<crate::store::StoreError>(store, 1, sids, 0, None, held_max, each))
}

/// The same through `Model::each_turn_built`, from what `built` holds.
fn each_turn_from(
    model: &Model,
    store: &crate::store::Store,
    sids: &[&str],
    built: Built,
    held_max: u64,
) -> Vec<Vec<Turn>> {
    in_order(|each| model.each_turn_built::<crate::store::StoreError>(store, 1, sids, built, None, held_max, each))
}

/// What `steps` calls its callback with, as turns by session, checking the
/// steps come in order.
fn in_order(
    steps: impl FnOnce(
        &mut dyn FnMut(Step<'_>) -> Result<(), crate::store::StoreError>,
    ) -> Result<(), crate::store::StoreError>,
) -> Vec<Vec<Turn>> {
    let mut out: Vec<Vec<Turn>> = Vec::new();
    let mut open = false;
    steps(&mut |step| {
        match step {
            Step::Begin(i) => {
                assert!(!open && i == out.len(), "begin {i}");
                out.push(Vec::new());
                open = true;
            }
            Step::Turn(t) => {
                assert!(open);
                out.last_mut().expect("a session begun").push(t.clone());
            }
            Step::End(i) => {
                assert!(open && i + 1 == out.len());
                open = false;
            }
        }
        Ok(())
    })
    .unwrap();
    assert!(!open);
    out
}

#[test]
fn one_pass_builds_the_turns_of_concurrent_sessions_and_one_that_holds_too_much_takes_more() {
    // Three sessions at once, each prompt answered after the others began.
    let mut lines = Vec::new();
    let mut t = 0;
    for round in 0..4 {
        for s in 0..3 {
            t += 1;
            let id = round * 10 + s;
            lines.push((C2A, t, format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s{s}","prompt":[{{"type":"text","text":"p{id}"}}]}}}}"#)));
        }
        for s in 0..3 {
            t += 1;
            let id = round * 10 + s;
            lines.push((A2C, t, format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s{s}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"a{id}"}}}}}}}}"#)));
            lines.push((A2C, t, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#)));
        }
    }
    let store = trace(&as_refs(&lines));
    let model = model_of(&store);
    let sids = ["s0", "s1", "s2"];
    let wants: Vec<Want<'_>> = sids.iter().map(|&sid| Want { sid, offset: 0, limit: u32::MAX }).collect();
    let all = model.pages_of(&store, 1, &wants, None, u64::MAX).unwrap();
    for (sid, page) in sids.iter().zip(&all) {
        let page = page.as_ref().expect("every page built in one pass");
        assert_eq!(page, &model.turns_of(&store, 1, sid, 0, 100, None).unwrap().unwrap());
        assert_eq!(page.len(), 4);
        assert_eq!(page[3].message.text, format!("a3{}", &sid[1..]));
    }
    // Holding nothing: the later pages are left for other passes and the
    // first keeps the turn it began.
    let cut = model.pages_of(&store, 1, &wants, None, 0).unwrap();
    assert_eq!(cut[0].as_ref().map(Vec::len), Some(1));
    assert!(cut[1].is_none() && cut[2].is_none());
    let pages: Vec<Vec<Turn>> = all.into_iter().map(Option::unwrap).collect();
    let got = each_turn(&model, &store, &sids, 0);
    for (g, p) in got.iter().zip(&pages) {
        for (a, b) in g.iter().zip(p) {
            assert_eq!(a, b);
        }
        assert_eq!(g.len(), p.len());
    }
    assert_eq!(got.len(), pages.len());
    assert_eq!(model.pages_in_passes(&store, 1, &wants, None).unwrap(), pages);
}

#[test]
fn what_the_model_shows_is_masked_as_served_frames_are() {
    let lines = vec![
        (C2A, 0, r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"see https://h/x?token=abc1 now"}]}}"#.to_owned()),
        (A2C, 1, update(r#"{"sessionUpdate":"session_info_update","title":"https://h/y?api_key=abc2"}"#)),
        (A2C, 2, update(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"at https://h/z?access_token=abc3"}}"#)),
        (A2C, 3, update(r#"{"sessionUpdate":"plan","entries":[{"content":"open https://h/p?token=abc4","status":"pending"}]}"#)),
        // URLs spelled with escapes, and a chunk with nothing to mask (read
        // unmasked) next to them.
        (A2C, 4, update(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" and https:\/\/h/e?token=abc5"}}"#)),
        (A2C, 4, update(r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"h\u0074tps://h/u?key=abc6"}}"#)),
        (A2C, 4, update(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":" done\n"},"apiKey":"x"}"#)),
        (A2C, 5, r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#.to_owned()),
    ];
    let store = trace(&as_refs(&lines));
    let redactor = crate::redact::Redactor::new(Vec::new());
    let mut m = Model::default();
    m.catch_up(&store, 1, Some(&redactor)).unwrap();
    let view = m.sessions(None);
    let plan = m.extras("s1").plan;
    let turn = &m.turns_of(&store, 1, "s1", 0, 1, Some(&redactor)).unwrap().unwrap()[0];
    let shown = format!("{view:?} {plan:?} {turn:?}");
    for secret in ["abc1", "abc2", "abc3", "abc4", "abc5", "abc6"] {
        assert!(!shown.contains(secret), "{secret} shown: {shown}");
    }
    assert!(turn.message.text.starts_with("at https://h/z?access_token="), "{}", turn.message.text);
    assert!(turn.message.text.ends_with("token=[REDACTED] done\n"), "{}", turn.message.text);
    assert_eq!(turn.thought.text, "https://h/u?key=[REDACTED]");
    // And so in the pass that builds every session's turns with the model.
    let built = Model::default().catch_up_building(&store, 1, Some(&redactor), None, u64::MAX).unwrap();
    assert_eq!(built.turns[0].as_ref().map(|t| &t[0]), Some(turn));
    // Without masking, all of it is there.
    let plain = model_of(&store);
    let turn = &plain.turns_of(&store, 1, "s1", 0, 1, None).unwrap().unwrap()[0];
    assert!(format!("{:?} {turn:?}", plain.sessions(None)).contains("abc2") && turn.prompt.text.contains("abc1"));
}

/// A prompt answered with a thought, a message, a tool call that asks
/// permission, more message, a plan, more message and an `fs` request.
fn split_turn() -> Vec<(Direction, u64, String)> {
    let chunk = |kind: &str, text: &str| {
        update(&format!(r#"{{"sessionUpdate":"{kind}","content":{{"type":"text","text":"{text}"}}}}"#))
    };
    vec![
        (C2A, 0, r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"go"}]}}"#.into()),
        (A2C, 1, chunk("agent_thought_chunk", "think")),
        (A2C, 2, chunk("agent_message_chunk", "First ")),
        (A2C, 3, chunk("agent_message_chunk", "I look.")),
        (A2C, 4, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","kind":"read"}"#)),
        (A2C, 5, update(r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}"#)),
        (A2C, 6, chunk("agent_message_chunk", "Found it. ")),
        (A2C, 7, r#"{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t1"},"options":[]}}"#.into()),
        (C2A, 8, r#"{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"cancelled"}}}"#.into()),
        (A2C, 9, chunk("agent_message_chunk", "Asked.")),
        (A2C, 10, update(r#"{"sessionUpdate":"plan","entries":[]}"#)),
        (A2C, 11, chunk("agent_message_chunk", "Planned.")),
        (A2C, 12, r#"{"jsonrpc":"2.0","id":"f1","method":"fs/read_text_file","params":{"sessionId":"s1","path":"/a"}}"#.into()),
        (C2A, 13, r#"{"jsonrpc":"2.0","id":"f1","result":{"content":""}}"#.into()),
        (A2C, 14, chunk("agent_message_chunk", "Read.")),
        (A2C, 15, chunk("agent_thought_chunk", "more")),
        (A2C, 16, chunk("agent_message_chunk", "End.")),
        (A2C, 17, r#"{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#.into()),
    ]
}

#[test]
fn a_message_is_split_where_something_else_happened_in_time_order() {
    let lines = split_turn();
    let store = trace(&as_refs(&lines));
    let turn = model_of(&store).turns_of(&store, 1, "s1", 0, 1, None).unwrap().unwrap().remove(0);
    assert_eq!(turn.message.text, "First I look.Found it. Asked.Planned.Read.End.");
    let parts: Vec<(&str, &str, i64, i64, Option<&str>)> = turn
        .parts
        .iter()
        .map(|p| (p.role.as_str(), turn.part_text(p), p.first_seq, p.last_seq, p.after.as_ref().map(|a| a.1.as_str())))
        .collect();
    assert_eq!(
        parts,
        [
            ("thought", "think", 2, 2, None),
            ("agent", "First I look.", 3, 4, None),
            ("agent", "Found it. ", 7, 7, Some("tool call t1 began")),
            ("agent", "Asked.", 10, 10, Some("permission asked")),
            ("agent", "Planned.", 12, 12, Some("plan")),
            ("agent", "Read.", 15, 15, Some("fs/read_text_file")),
            ("thought", "more", 16, 16, None),
            ("agent", "End.", 17, 17, None),
        ]
    );
    assert_eq!(turn.parts[2].after.as_ref().map(|a| a.0), Some(5), "the tool call began in frame 5");
    assert_eq!(turn.parts.iter().map(|p| p.chunks).sum::<u64>(), turn.message.chunks + turn.thought.chunks);
    assert_eq!(turn.parts_left_out, 0);
}

#[test]
fn parts_past_the_bound_are_counted_and_the_rest_of_the_text_kept_whole() {
    let mut lines = vec![(
        C2A,
        0,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.to_owned(),
    )];
    let parts = PER_TURN_MAX + 3;
    for i in 0..parts {
        let ms = 1 + 2 * i as u64;
        lines.push((
            A2C,
            ms,
            update(&format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"p{i} "}}}}"#)),
        ));
        lines.push((A2C, ms + 1, update(r#"{"sessionUpdate":"plan","entries":[]}"#)));
    }
    let store = trace(&as_refs(&lines));
    let turn = model_of(&store).turns_of(&store, 1, "s1", 0, 1, None).unwrap().unwrap().remove(0);
    assert_eq!(turn.parts.len(), PER_TURN_MAX);
    assert_eq!(turn.parts_left_out, 3);
    assert_eq!(turn.part_text(turn.parts.last().unwrap()), format!("p{} ", PER_TURN_MAX - 1));
    assert_eq!(turn.text_after_parts("agent"), format!("p{} p{} p{} ", parts - 3, parts - 2, parts - 1));
}

#[test]
fn an_open_prompt_whose_agent_streams_is_told_from_one_left_hanging() {
    let mut lines = split_turn();
    lines.pop(); // the answer at 17 ms
    let store = trace(&as_refs(&lines));
    let open = &model_of(&store).sessions(Some(20_000_000)).open_requests;
    assert_eq!(open.len(), 1);
    // Waiting 20 ms, the last chunk 4 ms ago: streaming.
    assert_eq!((open[0].age_ns, open[0].quiet_ns, open[0].quiet_of.as_str()), (20_000_000, 4_000_000, "session"));
    lines.truncate(1); // only the prompt: nothing came since
    let store = trace(&as_refs(&lines));
    let open = &model_of(&store).sessions(Some(20_000_000)).open_requests;
    assert_eq!((open[0].age_ns, open[0].quiet_ns), (20_000_000, 20_000_000));
}

#[test]
fn an_error_turn_keeps_the_agents_last_stderr_lines_written_while_it_was_open() {
    let mut lines = vec![(Direction::AgentStderr, 0, "before the prompt".to_owned())];
    lines.push((
        C2A,
        1,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.into(),
    ));
    for i in 0..7 {
        lines.push((Direction::AgentStderr, 2 + i, format!("\u{1b}[31mERROR\u{1b}[0m step {i}")));
    }
    lines.push((A2C, 10, r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"boom"}}"#.into()));
    lines.push((
        C2A,
        11,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.into(),
    ));
    lines.push((Direction::AgentStderr, 12, "fine".into()));
    lines.push((A2C, 13, r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#.into()));
    let store = trace(&as_refs(&lines));
    let turns = model_of(&store).turns_of(&store, 1, "s1", 0, 2, None).unwrap().unwrap();
    let stderr: Vec<(i64, &str)> = turns[0].stderr.iter().map(|l| (l.seq, l.text.as_str())).collect();
    // The last five of the seven, colour codes gone; none from before the prompt.
    assert_eq!(
        stderr,
        [(5, "ERROR step 2"), (6, "ERROR step 3"), (7, "ERROR step 4"), (8, "ERROR step 5"), (9, "ERROR step 6")]
    );
    assert!(turns[1].stderr.is_empty(), "a turn that did not fail keeps none");
}

#[test]
fn a_failed_turns_stderr_lines_are_masked_in_both_passes() {
    let lines = vec![
        (
            C2A,
            1,
            r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#.to_owned(),
        ),
        (Direction::AgentStderr, 2, "GET https://h/v1?api_key=abc7 failed".to_owned()),
        (A2C, 3, r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"boom"}}"#.into()),
    ];
    let store = trace(&as_refs(&lines));
    let redactor = crate::redact::Redactor::new(Vec::new());
    let mut m = Model::default();
    m.catch_up(&store, 1, Some(&redactor)).unwrap();
    let turn = &m.turns_of(&store, 1, "s1", 0, 1, Some(&redactor)).unwrap().unwrap()[0];
    assert_eq!(turn.stderr.len(), 1);
    assert!(!turn.stderr[0].text.contains("abc7") && turn.stderr[0].text.contains("[REDACTED]"), "{:?}", turn.stderr);
    let built = Model::default().catch_up_building(&store, 1, Some(&redactor), None, u64::MAX).unwrap();
    assert_eq!(built.turns[0].as_ref().map(|t| &t[0]), Some(turn));
}

#[test]
fn a_client_call_belongs_to_the_tool_call_in_progress_when_only_one_is() {
    let lines = conversation();
    let store = trace(&as_refs(&lines));
    let turn = &model_of(&store).turns_of(&store, 1, "s1", 0, 1, None).unwrap().unwrap()[0];
    // fs/write_text_file at 80 ms, while t1 was in progress (since 79 ms) and no other.
    let call = &turn.client_calls[0];
    assert_eq!(
        (call.method.as_str(), call.tool_call_id.as_deref(), call.tool_calls_in_progress),
        ("fs/write_text_file", Some("t1"), 0)
    );
    // The split turn's fs/read_text_file came after t1 completed: no tool call's.
    let lines = split_turn();
    let store = trace(&as_refs(&lines));
    let turn = &model_of(&store).turns_of(&store, 1, "s1", 0, 1, None).unwrap().unwrap()[0];
    assert_eq!((turn.client_calls[0].tool_call_id.as_deref(), turn.client_calls[0].tool_calls_in_progress), (None, 0));
    // Two tool calls in progress: which made it is unknown, and said so.
    let mut lines = split_turn();
    lines.insert(
        5,
        (A2C, 5, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Run","kind":"execute"}"#)),
    );
    lines.insert(
        6,
        (A2C, 5, update(r#"{"sessionUpdate":"tool_call","toolCallId":"t3","title":"Run","kind":"execute"}"#)),
    );
    let store = trace(&as_refs(&lines));
    let turn = &model_of(&store).turns_of(&store, 1, "s1", 0, 1, None).unwrap().unwrap()[0];
    assert_eq!((turn.client_calls[0].tool_call_id.as_deref(), turn.client_calls[0].tool_calls_in_progress), (None, 2));
}
