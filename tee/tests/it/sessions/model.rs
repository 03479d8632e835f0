//! The session model of real recordings: what `acp-tee show --format json`
//! and `/api/traces/{id}/sessions` say is what a person finds reading the
//! raw frames (compared frame by frame, not to literals of the model).

use super::record::*;
use crate::common::*;
use acp_tee_shared::session::{SessionDetail, ShowDocument, TraceSessions};
use acp_tee_shared::Direction;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `acp-tee show --format json` of trace `trace_id`.
fn show(db: &Path, trace_id: i64) -> ShowDocument {
    let out = Command::new(bin())
        .args(["show", "--db", db.to_str().unwrap(), "--trace", &trace_id.to_string(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "show failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("show printed no document ({e})"))
}

/// The text the agent's message chunks carry, in order.
fn chunk_text(frames: &[Frame], kind: &str) -> String {
    updates(frames, kind).iter().filter_map(|f| f.json["params"]["update"]["content"]["text"].as_str()).collect()
}

#[test]
fn show_and_the_api_give_the_turn_the_tool_call_and_its_permission_wait_of_a_yopo_run() {
    let (run, _) = record_with_yopo(&[]);
    let frames = run.frames();
    let doc = show(&run.store.db, run.trace_id);

    assert_eq!(doc.overview.agent.as_deref(), Some("acp-tee-py-agent 1.0.0"));
    assert_eq!(doc.overview.protocol_version, Some(1));
    assert_eq!(doc.overview.sessions.len(), 1);
    assert!(doc.overview.open_requests.is_empty(), "{:?}", doc.overview.open_requests);
    let summary = &doc.overview.sessions[0];
    let new = request(&frames, Direction::ClientToAgent, "session/new");
    assert_eq!(summary.session_id, response_to(&frames, new).unwrap().json["result"]["sessionId"]);
    assert_eq!((summary.began.as_str(), summary.began_seq), ("new", Some(new.stored.seq)));
    assert_eq!((summary.turns, summary.tool_calls, summary.permission_requests), (1, 1, 1));

    let turns = &doc.sessions[0].turns;
    assert_eq!(turns.len(), 1);
    let turn = &turns[0];
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    let done = response_to(&frames, prompt).unwrap();
    assert_eq!((turn.request_seq, turn.response_seq), (prompt.stored.seq, Some(done.stored.seq)));
    assert_eq!(turn.prompt.text, PROMPT);
    assert_eq!(turn.message.text, chunk_text(&frames, "agent_message_chunk"));
    assert_eq!(turn.thought.text, chunk_text(&frames, "agent_thought_chunk"));
    assert_eq!(turn.stop_reason.as_deref(), done.json["result"]["stopReason"].as_str());
    assert_eq!(turn.usage.map(|u| u.total_tokens), done.json["result"]["usage"]["totalTokens"].as_u64());
    let first_chunk = updates(&frames, "agent_message_chunk")[0];
    assert_eq!(turn.first_chunk_ns, Some(first_chunk.stored.t_ns - prompt.stored.t_ns));

    assert_eq!(turn.tool_calls.len(), 1);
    let call = &turn.tool_calls[0];
    assert_eq!(call.tool_call_id, TOOL_CALL_ID);
    let statuses: Vec<(&str, i64)> = call.statuses.iter().map(|s| (s.status.as_str(), s.seq)).collect();
    let mut seen = vec![("pending", updates(&frames, "tool_call")[0].stored.seq)];
    for status in ["in_progress", "completed"] {
        seen.push((status, tool_updates(&frames, status)[0].stored.seq));
    }
    assert_eq!(statuses, seen);
    let ask = request(&frames, Direction::AgentToClient, PERMISSION);
    let answer = response_to(&frames, ask).unwrap();
    let permission = &call.permissions[0];
    assert_eq!((permission.request_seq, permission.response_seq), (ask.stored.seq, Some(answer.stored.seq)));
    assert_eq!(permission.waited_ns, Some(answer.stored.t_ns - ask.stored.t_ns));
    assert_eq!(permission.option_id.as_deref(), answer.json["result"]["outcome"]["optionId"].as_str());
    assert_eq!(permission.options.len(), ask.json["params"]["options"].as_array().unwrap().len());
    assert_eq!(summary.permission_wait_ns, answer.stored.t_ns - ask.stored.t_ns);

    // The API says the same.
    let served = Served::start(&run.store.db, &[]);
    let api: TraceSessions = served.get(&format!("/api/traces/{}/sessions", run.trace_id));
    assert_eq!(api, doc.overview);
    let detail: SessionDetail =
        served.get(&format!("/api/traces/{}/sessions/{}?limit=5", run.trace_id, summary.session_id));
    assert_eq!(detail.turns, doc.sessions[0].turns);
    assert_eq!(detail.plan, doc.sessions[0].plan);
    assert_eq!(detail.plan.as_ref().map(|p| p.updates), Some(updates(&frames, "plan").len() as u64));

    // Bad requests get JSON errors, never a crash or an unbounded page.
    let sid = &summary.session_id;
    let id = run.trace_id;
    for (path, status) in [
        (format!("/api/traces/{id}/sessions/{sid}?limit=0"), 400),
        (format!("/api/traces/{id}/sessions/{sid}?limit=100000"), 400),
        (format!("/api/traces/{id}/sessions/{sid}?offset=-1"), 400),
        (format!("/api/traces/{id}/sessions/{sid}?offset=99999999999999999999999"), 400),
        (format!("/api/traces/{id}/sessions/no-such-session"), 404),
        (format!("/api/traces/{id}/sessions/{}", "x".repeat(10_000)), 404),
        ("/api/traces/999/sessions".to_owned(), 404),
        ("/api/traces/abc/sessions".to_owned(), 400),
    ] {
        let err = ureq::get(&format!("{}{path}", served.url)).call().unwrap_err();
        let ureq::Error::Status(code, response) = err else { panic!("{path}: {err}") };
        assert_eq!(code, status, "{path}");
        let body: acp_tee_shared::api::ApiError = response.into_json().unwrap();
        assert!(!body.error.is_empty(), "{path}");
    }
    let past: SessionDetail = served.get(&format!("/api/traces/{id}/sessions/{sid}?offset=1000000"));
    assert!(past.turns.is_empty());
}

#[test]
fn a_permission_nobody_answers_is_an_open_request_whose_age_grows_while_the_client_waits() {
    let mut wait = start_permission_wait(&[]);
    let frames = wait.frames();
    let ask = request(&frames, Direction::AgentToClient, PERMISSION);
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    let served = Served::start(&wait.store.db, &[]);
    let path = format!("/api/traces/{}/sessions", wait.trace_id);

    let first: TraceSessions = served.get(&path);
    assert!(first.live);
    let open: Vec<(i64, &str)> = first.open_requests.iter().map(|o| (o.seq, o.waiting_for.as_str())).collect();
    assert_eq!(open, [(prompt.stored.seq, "agent"), (ask.stored.seq, "client")]);
    let asked = &first.open_requests[1];
    assert_eq!(asked.method.as_deref(), Some(PERMISSION));
    assert!(asked.age_ns > 0);
    // Live: the age is measured to now, so it grows with nothing recorded.
    let deadline = Instant::now() + Duration::from_secs(30);
    let later = loop {
        let again: TraceSessions = served.get(&path);
        if again.open_requests[1].age_ns >= asked.age_ns + 200_000_000 {
            break again;
        }
        assert!(Instant::now() < deadline, "the age never grew");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(later.last_seq, first.last_seq);
    // The session's permission wait counts the open one up to the same now.
    assert_eq!(later.sessions[0].permission_wait_ns, later.open_requests[1].age_ns);
    let doc = show(&wait.store.db, wait.trace_id);
    let turn = &doc.sessions[0].turns[0];
    assert_eq!(turn.response_seq, None);
    assert_eq!(turn.tool_calls[0].permissions[0].response_seq, None);
    assert_eq!(turn.tool_calls[0].status.as_deref(), Some("in_progress"));
    let text = Command::new(bin())
        .args(["show", "--db", wait.store.db.to_str().unwrap(), "--trace", &wait.trace_id.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(&format!("#{} {PERMISSION}", ask.stored.seq)), "{text}");
    assert!(text.contains("waiting") && text.contains("for the client"), "{text}");

    // The live stream carries the sessions too, on request.
    let stream = ureq::get(&format!("{}/api/traces/{}/live?sessions=true", served.url, wait.trace_id)).call().unwrap();
    let mut events = sse_events(stream.into_reader());
    let live = next_sessions(&mut events);
    assert!(live.open_requests.iter().any(|o| o.seq == ask.stored.seq), "{:?}", live.open_requests);

    // Answered at last: nothing is open once the trace ended, and the live
    // stream says so.
    wait.answer(true);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !next_sessions(&mut events).open_requests.is_empty() {
        assert!(Instant::now() < deadline, "the stream never showed the answer");
    }
    let ended: TraceSessions = served.get(&path);
    assert!(!ended.live);
    assert!(ended.open_requests.is_empty(), "{:?}", ended.open_requests);
    assert_eq!(ended.sessions[0].turns, 1);
}

#[test]
fn a_cancelled_turn_ends_cancelled_and_its_tool_call_failed() {
    let run = record_cancel_with_acpx();
    let frames = run.frames();
    let doc = show(&run.store.db, run.trace_id);
    let cancel =
        messages(&frames, Direction::ClientToAgent, acp_tee_shared::FrameKind::Notification, "session/cancel")[0];
    let session = doc.sessions.iter().find(|s| !s.turns.is_empty()).expect("a session with a turn");
    let turn = &session.turns[0];
    assert_eq!(turn.cancel_seq, Some(cancel.stored.seq));
    assert_eq!(turn.stop_reason.as_deref(), Some("cancelled"));
    assert_eq!(turn.tool_calls[0].status.as_deref(), Some("failed"));
    let summary = doc.overview.sessions.iter().find(|s| s.session_id == session.session_id).unwrap();
    assert!(summary.notes.is_empty(), "{:?}", summary.notes);
}

/// The events of a Server-Sent Events stream: (event name, data).
fn sse_events(body: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<(String, String)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut name, mut data) = (String::new(), String::new());
        for line in std::io::BufRead::lines(std::io::BufReader::new(body)) {
            let Ok(line) = line else { return };
            if let Some(n) = line.strip_prefix("event:") {
                name = n.trim().to_owned();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            } else if line.is_empty()
                && !data.is_empty()
                && tx.send((std::mem::take(&mut name), std::mem::take(&mut data))).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The next `sessions` event of `events`.
fn next_sessions(events: &mut std::sync::mpsc::Receiver<(String, String)>) -> TraceSessions {
    loop {
        let (name, data) = events.recv_timeout(Duration::from_secs(30)).expect("a sessions event within 30 s");
        if name == "sessions" {
            return serde_json::from_str(&data).unwrap();
        }
    }
}

#[test]
fn an_elizacp_session_driven_by_yopo_is_one_turn_whose_reply_is_its_chunks() {
    let store = TempStore::new();
    let mut cmd = Command::new(peer("yopo"));
    cmd.args(["Hello, I feel anxious today", "--", bin(), "--db", store.db.to_str().unwrap(), "--"]).args([
        peer("elizacp").as_str(),
        "--deterministic",
        "acp",
    ]);
    let out = run_within(cmd);
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    let run = finish(store);
    let frames = run.frames();
    let doc = show(&run.store.db, run.trace_id);
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    let done = response_to(&frames, prompt).expect("elizacp answered the prompt");
    assert_eq!(doc.overview.sessions.len(), 1);
    assert_eq!(doc.overview.sessions[0].session_id, prompt.json["params"]["sessionId"]);
    let turn = &doc.sessions[0].turns[0];
    assert_eq!(turn.prompt.text, "Hello, I feel anxious today");
    assert_eq!(turn.response_seq, Some(done.stored.seq));
    assert_eq!(turn.stop_reason.as_deref(), done.json["result"]["stopReason"].as_str());
    let reply = chunk_text(&frames, "agent_message_chunk");
    assert!(!reply.is_empty(), "elizacp sent no chunk");
    assert_eq!(turn.message.text, reply);
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), reply.trim());
}
