//! The fold on conversations written line by line, framed as the recorder
//! frames them.

use super::*;

/// `lines` framed (`>` the client's, `<` the agent's) and folded: what each
/// frame meant, as one line per event.
fn events(lines: &[&str]) -> Vec<String> {
    events_with(Conversation::default(), lines).1
}

fn events_with(mut conv: Conversation, lines: &[&str]) -> (Conversation, Vec<String>) {
    let frames = crate::testing::framed(lines);
    let mut out = Vec::new();
    for f in &frames {
        conv.feed(&FrameRef::from(f), &mut |e| out.push(format!("{}: {}", f.seq, said(&e))));
    }
    (conv, out)
}

fn said(e: &Event<'_, '_>) -> String {
    match e {
        Event::SessionSeen { session } => format!("seen {}", session.id),
        Event::SessionLeftOut { session } => format!("left out {session}"),
        Event::Request { what, followed, .. } => {
            format!("request {what:?}{}", if *followed { "" } else { " unfollowed" })
        }
        Event::Answer { request, replayed, .. } => format!(
            "answer to {} cancel {:?}{}",
            request.seq,
            request.cancel_seq,
            replayed.map(|n| format!(" replayed {n}")).unwrap_or_default()
        ),
        Event::Opened { session, opening, .. } => format!("opened {} {}", session.id, opening.as_str()),
        Event::TurnStarted { session, prompt, in_flight } => {
            format!("turn {prompt} of {} in flight {in_flight:?}", session.id)
        }
        Event::TurnEnded { prompt, cancel, end, .. } => format!("turn {prompt} ended {end:?} cancel {cancel:?}"),
        Event::Update(u) => format!(
            "update {}{}{}",
            u.kind.unwrap_or("?"),
            if u.replayed { " replayed" } else { "" },
            if u.new_tool_call { " new tool call" } else { "" }
        ),
        Event::Cancel { session } => format!("cancel {}", session.id),
    }
}

const OPEN: [&str; 4] = [
    r#">{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
    r#"<{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#,
    r#">{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#,
    r#"<{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#,
];

fn with_open(rest: &[&'static str]) -> Vec<&'static str> {
    OPEN.iter().chain(rest).copied().collect()
}

fn expect(got: Vec<String>, want: &[&str]) {
    assert_eq!(got, want.iter().map(|s| s.to_string()).collect::<Vec<_>>());
}

#[test]
fn a_turn_starts_with_its_prompt_and_ends_with_its_answer_cancel_and_tool_calls_told_once() {
    let got = events(&with_open(&[
        r#">{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1"}}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","rawInput":{}}}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t2"}}}"#,
        r#">{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
        r#"<{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}"#,
    ]));
    expect(
        got,
        &[
            "1: request Initialize",
            "2: answer to 1 cancel None",
            "3: request Open(New)",
            "4: seen s",
            "4: answer to 3 cancel None",
            "4: opened s new",
            "5: request Prompt",
            "5: turn 5 of s in flight None",
            "6: update tool_call new tool call",
            // The same id again: the same tool call.
            "7: update tool_call",
            // An update for an id never announced announces it.
            "8: update tool_call_update new tool call",
            "9: cancel s",
            "10: answer to 5 cancel Some(9)",
            "10: turn 5 ended Reason(\"end_turn\") cancel Some(9)",
        ],
    );
}

#[test]
fn a_v2_turn_ends_with_its_state_update_not_its_answer() {
    let mut lines = with_open(&[
        r#">{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#"<{"jsonrpc":"2.0","id":2,"result":{}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","stopReason":"end_turn"}}}"#,
    ]);
    lines[1] = r#"<{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}"#;
    let got = events(&lines);
    expect(
        got[6..].to_vec(),
        &[
            "5: request Prompt",
            "5: turn 5 of s in flight None",
            "6: answer to 5 cancel None",
            "7: update state_update",
            "7: turn 5 ended Reason(\"end_turn\") cancel None",
        ],
    );
}

#[test]
fn a_load_replays_until_its_answer_but_a_turns_updates_are_the_turns() {
    let got = events(&with_open(&[
        r#">{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"old"}}}"#,
        r#"<{"jsonrpc":"2.0","id":2,"result":{}}"#,
        r#">{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#">{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}"#,
        r#"<{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#,
    ]));
    expect(
        got[6..].to_vec(),
        &[
            "5: request Open(Load)",
            // Shown again: no new tool call.
            "6: update tool_call replayed",
            "7: answer to 5 cancel None replayed 1",
            "7: opened s load",
            "8: request Prompt",
            "8: turn 8 of s in flight None",
            "9: request Open(Load)",
            // A turn is open: the update is the turn's.
            "10: update agent_message_chunk",
        ],
    );
}

#[test]
fn a_cancel_request_cancels_the_request_it_names_not_the_turn() {
    let got = events(&with_open(&[
        r#">{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#">{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"\u0070"}}"#,
        r#"<{"jsonrpc":"2.0","id":"p","error":{"code":-32800,"message":"cancelled"}}"#,
    ]));
    expect(got[8..].to_vec(), &["7: answer to 5 cancel Some(6)", "7: turn 5 ended Error cancel None"]);
}

#[test]
fn a_second_prompt_says_which_turn_is_in_flight() {
    let got = events(&with_open(&[
        r#">{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
        r#">{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
    ]));
    assert_eq!(got.last().unwrap(), "6: turn 6 of s in flight Some(5)");
}

#[test]
fn sessions_past_the_bound_are_left_out_but_the_one_kept() {
    let mut conv = Conversation::keeping("keep");
    // Fill the registry without frames: the bound is what is tested.
    for i in 0..SESSIONS_MAX {
        conv.session(&format!("s{i}"), &mut |_| {});
    }
    let (_, got) = events_with(
        conv,
        &[
            r#">{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"other"}}"#,
            r#">{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"keep"}}"#,
        ],
    );
    expect(got, &["1: left out other", "2: seen keep", "2: cancel keep"]);
}
