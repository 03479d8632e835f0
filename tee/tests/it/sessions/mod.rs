//! Real peers on both sides of acp-tee, for the session model (#15): the
//! clients yopo and acpx, and `tests/peers/py_agent.py`, an agent on the
//! official Python ACP SDK (`agent-client-protocol` from PyPI) that streams
//! chunks, starts a tool call, asks permission and ends the turn.
//! `scripts/install-tools tests` installs them all (the SDK in a venv and
//! acpx under `~/.cache/acp-tee-peers`, see `common::peers_dir`).
//!
//! The helpers (`record_with_yopo`, `record_with_acpx`,
//! `start_permission_wait`) return the store and the trace id so that
//! session-level assertions can be made on the same recordings.

mod model;
pub mod record;

use acp_tee::Reader;
use acp_tee_shared::{Direction, FrameKind};
use record::*;

#[test]
fn yopo_approves_the_python_sdk_agents_tool_call_through_acp_tee() {
    let (run, printed) = record_with_yopo(&[]);
    let frames = run.frames();
    assert_whole_turn(&frames, "edit", "allow-once", "completed");
    for method in ["initialize", "session/new"] {
        let req = request(&frames, Direction::ClientToAgent, method);
        assert!(response_to(&frames, req).is_some(), "{method} was not answered");
    }
    let init = response_to(&frames, request(&frames, Direction::ClientToAgent, "initialize")).unwrap();
    assert_eq!(init.json["result"]["agentInfo"]["name"], "acp-tee-py-agent");
    // What yopo printed is what the recorded message chunks say.
    let text: String = updates(&frames, "agent_message_chunk")
        .iter()
        .map(|f| f.json["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(printed.trim(), text.trim());
    assert!(text.ends_with(" Done."), "{text:?}");
}

#[test]
fn yopo_answers_cancelled_when_only_reject_options_are_offered() {
    let (run, _) = record_with_yopo(&["--reject-only"]);
    let frames = run.frames();
    let ask = assert_turn_until_permission(&frames, "edit");
    let answer = response_to(&frames, ask).expect("the permission request was answered");
    assert_eq!(answer.json["result"]["outcome"], serde_json::json!({"outcome": "cancelled"}));
    assert_eq!(tool_updates(&frames, "failed").len(), 1);
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    assert_eq!(response_to(&frames, prompt).unwrap().json["result"]["stopReason"], "end_turn");
}

#[test]
fn acpx_approves_all_and_prints_what_was_recorded() {
    let (run, printed) = record_with_acpx(&["--approve-all"], &["--usage-update"], 0);
    let frames = run.frames();
    assert_whole_turn(&frames, "edit", "allow-once", "completed");
    let usage = updates(&frames, "usage_update");
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].json["params"]["update"]["used"], 168);
    // acpx's JSON output is the messages it sent and received: each one is
    // a recorded frame.
    assert!(printed.len() >= 15, "acpx printed {} messages", printed.len());
    for message in &printed {
        assert!(frames.iter().any(|f| &f.json == message), "acpx printed {message}, not in the trace");
    }
}

#[test]
fn acpx_without_a_terminal_rejects_an_edit() {
    let (run, _) = record_with_acpx(&[], &[], ACPX_PERMISSION_DENIED);
    assert_whole_turn(&run.frames(), "edit", "reject-once", "failed");
}

#[test]
fn a_permission_nobody_answers_stays_open_while_the_run_lives() {
    let mut wait = start_permission_wait(&[]);
    let frames = wait.frames();
    let ask = assert_turn_until_permission(&frames, "edit");
    assert!(response_to(&frames, ask).is_none(), "the permission request was answered");
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    assert!(response_to(&frames, prompt).is_none(), "the turn ended");
    assert!(tool_updates(&frames, "completed").is_empty() && tool_updates(&frames, "failed").is_empty());
    let traces = Reader::open(&wait.store.db).unwrap().list_traces().unwrap();
    assert_eq!(traces.len(), 1);
    assert!(traces[0].ended_at.is_none(), "the trace ended while the client waits");
    assert!(wait.client_running(), "acpx stopped waiting");

    // Someone answers at last: the turn goes on and ends.
    wait.answer(true);
    assert_whole_turn(&wait.frames(), "edit", "allow-once", "completed");
}

#[test]
fn acpx_cancels_the_turn_with_session_cancel() {
    let run = record_cancel_with_acpx();
    let frames = run.frames();
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    assert_eq!(prompt.json["params"]["prompt"][0]["text"], PROMPT);
    assert_eq!(updates(&frames, "tool_call").len(), 1);
    let cancels = messages(&frames, Direction::ClientToAgent, FrameKind::Notification, "session/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0].json["params"]["sessionId"], prompt.json["params"]["sessionId"]);
    assert!(messages(&frames, Direction::AgentToClient, FrameKind::Request, PERMISSION).is_empty());
    let failed = tool_updates(&frames, "failed");
    assert_eq!(failed.len(), 1);
    assert!(failed[0].stored.seq > cancels[0].stored.seq);
    let done = response_to(&frames, prompt).expect("the prompt was answered");
    assert_eq!(done.json["result"]["stopReason"], "cancelled");
    assert!(done.stored.seq > failed[0].stored.seq);
}
