//! Record once, test forever (#17): recordings of real peers replayed
//! against real agents (`acp-tee replay -- AGENT`), played to a real client
//! (`acp-tee replay --as-agent`), and compared (`acp-tee diff`). The peers
//! are those of `sessions`: yopo, acpx, elizacp and
//! `tests/peers/py_agent.py` on the official Python ACP SDK.

use crate::sessions::record;

use crate::common::*;
use acp_tee::Store;
use acp_tee_shared::diff::{ChangeKind, TextOpKind, TraceDiff};
use acp_tee_shared::Direction;
use record::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// The relay's grace in replays: elizacp does not exit when its stdin
/// closes, so this is how long each replay against it lingers.
const GRACE: &str = "300ms";

/// `yopo PROMPT -- acp-tee --db DB -- elizacp --deterministic acp` in a
/// new store: the store, the trace and what yopo printed.
fn record_elizacp() -> (Recorded, String) {
    let store = TempStore::new();
    let mut cmd = Command::new(peer("yopo"));
    cmd.arg(PROMPT)
        .args(["--", bin(), "--db", store.db.to_str().unwrap(), "--", &peer("elizacp"), "--deterministic", "acp"])
        .current_dir(store.dir.path());
    let out = run_within(cmd);
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    (finish(store), String::from_utf8(out.stdout).unwrap())
}

/// `acp-tee replay --db DB --trace ID -- AGENT...` in the store's
/// directory (py_agent.py names files under its working directory).
fn replay(run: &Recorded, agent: &[String], extra: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(["replay", "--db", run.store.db.to_str().unwrap(), "--trace", &run.trace_id.to_string()])
        .args(["--grace", GRACE, "--step-timeout", "20s"])
        .args(extra)
        .arg("--")
        .args(agent)
        .current_dir(run.store.dir.path());
    run_within(cmd)
}

/// The trace a successful replay says it recorded (`... as trace N: ...`).
fn new_trace(out: &Output) -> i64 {
    let text = String::from_utf8_lossy(&out.stdout);
    let after = text.split(" as trace ").nth(1).unwrap_or_else(|| panic!("no new trace in {text:?}"));
    after.split(':').next().unwrap().parse().unwrap()
}

/// `acp-tee diff --db DB --format json A B`: the exit code and the report.
fn diff(db: &Path, a: &str, b: &str) -> (i32, TraceDiff) {
    let out =
        Command::new(bin()).args(["diff", "--db", db.to_str().unwrap(), "--format", "json", a, b]).output().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("diff printed no report ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), report)
}

fn elizacp() -> Vec<String> {
    vec![peer("elizacp"), "--deterministic".into(), "acp".into()]
}

fn py_agent(args: &[&str]) -> Vec<String> {
    let mut cmd = vec![python_acp(), py_agent_script().display().to_string()];
    cmd.extend(args.iter().map(|a| a.to_string()));
    cmd
}

/// Waits for trace `id` to end and returns its frames parsed.
fn ended_frames(db: &Path, id: i64) -> Vec<Frame> {
    let deadline = std::time::Instant::now() + RUN_LIMIT;
    loop {
        let mut store = Store::open_existing(db).unwrap();
        store.maintain(0).unwrap();
        if store.trace(id).unwrap().ended_at.is_some() {
            return read_frames(db, id);
        }
        assert!(std::time::Instant::now() < deadline, "trace {id} never ended");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_yopo_elizacp_recording_replayed_against_elizacp_is_equivalent() {
    let (run, _) = record_elizacp();
    let out = replay(&run, &elizacp(), &[]);
    assert_eq!(out.status.code(), Some(0), "replay: {}", String::from_utf8_lossy(&out.stdout));
    let id = new_trace(&out);
    assert_ne!(id, run.trace_id);
    ended_frames(&run.store.db, id);
    assert_eq!(Store::open_existing(&run.store.db).unwrap().replay_of(id).unwrap(), Some(run.trace_id));
    let (code, report) = diff(&run.store.db, &run.trace_id.to_string(), &id.to_string());
    assert_eq!(code, 0, "{report:#?}");
    assert!(report.equivalent && report.changed_messages == 0);
    assert!(report.equal_messages >= 6, "{report:#?}");
    assert_eq!(report.turns.len(), 1);
    assert_eq!(report.turns[0].b.as_deref(), Some("end_turn"));
    // elizacp mints a new session id each run; the diff names them both session-1.
    let session =
        |frames: &[Frame]| frames.iter().find_map(|f| f.json["result"]["sessionId"].as_str().map(str::to_owned));
    assert_ne!(session(&run.frames()), session(&read_frames(&run.store.db, id)));
}

#[test]
fn replayed_against_the_python_sdk_agent_diff_reports_the_differences() {
    let (run, _) = record_elizacp();
    let out = replay(&run, &py_agent(&[]), &[]);
    let id = new_trace(&out);
    ended_frames(&run.store.db, id);
    let (code, report) = diff(&run.store.db, &run.trace_id.to_string(), &id.to_string());
    assert_eq!(code, 1, "{report:#?}");
    assert!(!report.equivalent);
    let changed = |method: &str| {
        report.messages.iter().find(|m| m.method.as_deref() == Some(method) && m.change == ChangeKind::Changed)
    };
    let init = changed("initialize").expect("the initialize answers differ");
    assert!(init.values.iter().any(|v| v.path == "result.agentInfo"), "{init:#?}");
    assert!(report.capabilities.iter().any(|c| c.path.starts_with("agentCapabilities.")), "{report:#?}");
    // The Python agent asks permission, elizacp never did: the recording has
    // no answer, so the replay answered with an error.
    assert!(report.messages.iter().any(|m| m.change == ChangeKind::Added
        && m.dir == Direction::AgentToClient
        && m.method.as_deref() == Some(PERMISSION)));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("without a recorded answer") && stdout.contains(PERMISSION), "{stdout}");
    assert!(report.latency.iter().any(|l| l.method == "session/prompt" && l.count_a == 1 && l.count_b == 1));
    // Text too, exit 1.
    let text = Command::new(bin())
        .args(["diff", "--db", run.store.db.to_str().unwrap(), &run.trace_id.to_string(), &id.to_string()])
        .output()
        .unwrap();
    assert_eq!(text.status.code(), Some(1));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("changed  agent_to_client response initialize"), "{text}");
}

#[test]
fn yopo_against_the_replayed_agent_prints_what_elizacp_printed() {
    let (run, printed) = record_elizacp();
    assert!(!printed.trim().is_empty());
    let mut cmd = Command::new(peer("yopo"));
    cmd.arg(PROMPT)
        .args(["--", bin(), "replay", "--db", run.store.db.to_str().unwrap(), "--as-agent"])
        .args(["--trace", &run.trace_id.to_string()]);
    let out = run_within(cmd);
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), printed);
}

#[test]
fn a_permission_request_is_answered_as_recorded() {
    // acpx without a terminal rejects the edit: an answer no default would give.
    let (run, _) = record_with_acpx(&[], &[], ACPX_PERMISSION_DENIED);
    let recorded = run.frames();
    let asked = request(&recorded, Direction::AgentToClient, PERMISSION);
    let answer = &response_to(&recorded, asked).unwrap().json["result"];
    assert_eq!(answer["outcome"]["optionId"], "reject-once");

    let out = replay(&run, &py_agent(&[]), &[]);
    assert_eq!(out.status.code(), Some(0), "replay: {}", String::from_utf8_lossy(&out.stdout));
    let id = new_trace(&out);
    let frames = ended_frames(&run.store.db, id);
    let asked = request(&frames, Direction::AgentToClient, PERMISSION);
    assert_eq!(&response_to(&frames, asked).expect("the replay answered").json["result"], answer);
    assert_eq!(tool_updates(&frames, "failed").len(), 1, "the agent did not see the rejection");
    assert_eq!(tool_updates(&frames, "completed").len(), 0);
    let (code, report) = diff(&run.store.db, &run.trace_id.to_string(), &id.to_string());
    assert_eq!(code, 0, "{report:#?}");
}

#[test]
fn an_acpx_session_replays_against_its_agent() {
    let (run, _) = record_with_acpx(&["--approve-all"], &[], 0);
    let out = replay(&run, &py_agent(&[]), &[]);
    assert_eq!(out.status.code(), Some(0), "replay: {}", String::from_utf8_lossy(&out.stdout));
    let id = new_trace(&out);
    let frames = ended_frames(&run.store.db, id);
    assert_whole_turn(&frames, "edit", "allow-once", "completed");
    let (code, report) = diff(&run.store.db, &run.trace_id.to_string(), &id.to_string());
    assert_eq!(code, 0, "{report:#?}");
}

#[test]
fn an_agent_that_stops_answering_diverges_after_the_step_timeout() {
    let (run, _) = record_elizacp();
    let mut cmd = Command::new(bin());
    cmd.args(["replay", "--db", run.store.db.to_str().unwrap(), "--trace", &run.trace_id.to_string()]).args([
        "--grace",
        GRACE,
        "--step-timeout",
        "1s",
        "--",
        "sleep",
        "600",
    ]);
    let started = std::time::Instant::now();
    let out = run_within(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("diverged") && text.contains("answer to initialize") && text.contains("within 1s"), "{text}");
    assert!(text.contains("nothing came within 1s"), "{text}");
}

#[test]
fn an_agent_that_talks_but_never_answers_diverges_saying_what_came() {
    // The step timeout is no idle timeout: notifications keep coming, the
    // answer never does, and the divergence must not say "nothing".
    let (run, _) = record_elizacp();
    let talker = sh("while :; do echo '{\"jsonrpc\":\"2.0\",\"method\":\"x\"}'; sleep 0.01; done");
    let mut cmd = Command::new(bin());
    cmd.args(["replay", "--db", run.store.db.to_str().unwrap(), "--trace", &run.trace_id.to_string()])
        .args(["--grace", GRACE, "--step-timeout", "1s", "--"])
        .args(&talker);
    let out = run_within(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("answer to initialize") && text.contains("messages came, none the one awaited within 1s"),
        "{text}"
    );
    assert!(!text.contains("nothing came"), "{text}");
}

#[test]
fn diff_reads_an_exported_file_and_refuses_what_it_cannot_read() {
    let (run, _) = record_elizacp();
    let file = run.store.dir.path().join("trace.json");
    let export = Command::new(bin())
        .args(["export", "--db", run.store.db.to_str().unwrap(), "--trace", &run.trace_id.to_string()])
        .args(["--output", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let (code, report) = diff(&run.store.db, file.to_str().unwrap(), &run.trace_id.to_string());
    assert_eq!(code, 0, "{report:#?}");
    let traces_before = Store::open_existing(&run.store.db).unwrap().list_traces().unwrap().len();
    assert_eq!(traces_before, 1, "the file was imported into the user's store");
    for bad in ["999", "no-such-file"] {
        let out =
            Command::new(bin()).args(["diff", "--db", run.store.db.to_str().unwrap(), "1", bad]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("acp-tee: error: "), "{err}");
    }
    let ignore = Command::new(bin())
        .args(["diff", "--db", run.store.db.to_str().unwrap(), "--ignore", "params", "1", "1"])
        .output()
        .unwrap();
    assert_eq!(ignore.status.code(), Some(2), "a bad --ignore path is bad input");
}

#[test]
fn ignore_leaves_values_out_of_the_comparison() {
    let (run, _) = record_elizacp();
    let out = replay(&run, &py_agent(&["--no-permission"]), &[]);
    let id = new_trace(&out);
    ended_frames(&run.store.db, id);
    let (_, plain) = diff(&run.store.db, &run.trace_id.to_string(), &id.to_string());
    let init = |r: &TraceDiff| r.messages.iter().any(|m| m.method.as_deref() == Some("initialize"));
    assert!(init(&plain));
    let out = Command::new(bin())
        .args(["diff", "--db", run.store.db.to_str().unwrap(), "--format", "json", "--ignore", "$.result"])
        .args(["--ignore", "$.params.clientCapabilities", &run.trace_id.to_string(), &id.to_string()])
        .output()
        .unwrap();
    let ignored: TraceDiff = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!init(&ignored), "{ignored:#?}");
    let _: Value = serde_json::to_value(&ignored).unwrap();
}

#[test]
fn timing_recorded_keeps_the_recorded_gaps_between_the_clients_messages() {
    // A conversation written by hand in the conductor's `.jsons`, the
    // client's messages 400 ms apart, replayed from the file's import.
    let store = TempStore::new();
    let lines = [
        json!({"type":"request","ts":0.0,"protocol":"acp","from":"Client","to":"Agent","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}),
        json!({"type":"response","ts":0.002,"from":"Agent","to":"Client","id":1,"is_error":false,"payload":{"protocolVersion":1,"agentCapabilities":{}}}),
        json!({"type":"request","ts":0.4,"protocol":"acp","from":"Client","to":"Agent","id":2,"method":"session/new","params":{"cwd":".","mcpServers":[]}}),
        json!({"type":"response","ts":0.402,"from":"Agent","to":"Client","id":2,"is_error":false,"payload":{"sessionId":"recorded-session"}}),
        json!({"type":"request","ts":0.8,"protocol":"acp","from":"Client","to":"Agent","id":3,"method":"session/prompt","params":{"sessionId":"recorded-session","prompt":[{"type":"text","text":PROMPT}]}}),
        json!({"type":"response","ts":0.802,"from":"Agent","to":"Client","id":3,"is_error":false,"payload":{"stopReason":"end_turn"}}),
    ];
    let file = store.dir.path().join("by-hand.jsons");
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let import = Command::new(bin())
        .args(["import", "--db", store.db.to_str().unwrap(), file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let run = finish(store);
    let out = replay(&run, &elizacp(), &["--timing", "recorded"]);
    assert_eq!(out.status.code(), Some(0), "replay: {}", String::from_utf8_lossy(&out.stdout));
    let frames = ended_frames(&run.store.db, new_trace(&out));
    let sent: Vec<i64> =
        frames.iter().filter(|f| f.stored.dir == Direction::ClientToAgent).map(|f| f.stored.t_ns).collect();
    assert_eq!(sent.len(), 3);
    for gap in sent.windows(2).map(|w| w[1] - w[0]) {
        assert!(gap >= 390_000_000, "the client's messages went {gap} ns apart");
    }
    // The prompt went to the session elizacp made, not the recorded one.
    let prompt = request(&frames, Direction::ClientToAgent, "session/prompt");
    assert_ne!(prompt.json["params"]["sessionId"], "recorded-session");
    assert_eq!(response_to(&frames, prompt).unwrap().json["result"]["stopReason"], "end_turn");
}

#[test]
fn replaying_a_trace_that_does_not_exist_is_bad_input() {
    let (run, _) = record_elizacp();
    let out = Command::new(bin())
        .args(["replay", "--db", run.store.db.to_str().unwrap(), "--trace", "999", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("999"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(Store::open_existing(&run.store.db).unwrap().list_traces().unwrap().len(), 1, "a trace was recorded");
}

#[test]
fn acpx_against_the_replayed_python_agent_gets_its_permission_request_and_tool_call() {
    // Recorded: acpx approving the Python agent's edit. Replayed as the
    // agent to a new acpx run: the request goes out with the recorded id,
    // acpx answers it, and the turn ends as recorded.
    let (run, recorded) = record_with_acpx(&["--approve-all"], &[], 0);
    let agent = command_line(&[
        bin().to_owned(),
        "replay".into(),
        "--db".into(),
        run.store.db.display().to_string(),
        "--as-agent".into(),
        "--trace".into(),
        run.trace_id.to_string(),
    ]);
    let mut cmd = Command::new(acpx());
    cmd.args(["--approve-all", "--format", "json", "--agent", &agent, "exec", PROMPT])
        .current_dir(run.store.dir.path());
    let out = run_within(cmd);
    assert!(out.status.success(), "acpx: {}", String::from_utf8_lossy(&out.stderr));
    let printed: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let of =
        |msgs: &[Value], pick: &dyn Fn(&Value) -> bool| msgs.iter().filter(|m| pick(m)).cloned().collect::<Vec<_>>();
    let asked = |m: &Value| m["method"] == PERMISSION;
    let answer = |m: &Value| m["result"]["outcome"]["optionId"].is_string();
    let ended = |m: &Value| m["result"]["stopReason"] == "end_turn";
    assert_eq!(of(&printed, &asked).len(), 1, "{printed:#?}");
    assert_eq!(of(&printed, &answer), of(&recorded, &answer), "acpx answered otherwise than recorded");
    assert_eq!(of(&printed, &ended).len(), 1, "the turn did not end: {printed:#?}");
    let chunks = |msgs: &[Value]| {
        msgs.iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .map(|m| m["params"]["update"]["content"]["text"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(chunks(&printed), chunks(&recorded));
}

/// One side of a two-session conversation as raw sacp-tee log lines
/// (#30 item 13): `ids` are the session ids the agent mints, in order of
/// creation; `order` says in which order the frames of the two sessions'
/// turns interleave (each entry: the session, 0 or 1, whose next frame
/// comes); `texts` the agent's reply in each session.
fn two_sessions(ids: [&str; 2], order: &[usize], texts: [&str; 2]) -> String {
    let mut lines = vec![
        r#"→ {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}"#.to_owned(),
        r#"← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#.to_owned(),
    ];
    for (n, id) in ids.iter().enumerate() {
        lines.push(format!(
            r#"→ {{"jsonrpc":"2.0","id":{},"method":"session/new","params":{{"cwd":"/tmp","mcpServers":[]}}}}"#,
            n + 1
        ));
        lines.push(format!(r#"← {{"jsonrpc":"2.0","id":{},"result":{{"sessionId":"{id}"}}}}"#, n + 1));
    }
    // Each session's turn: prompt, the agent reads a file, the client
    // answers, a chunk, the end. Request ids differ with the interleaving.
    let turn = |s: usize, step: usize, rpc: usize| -> String {
        let (sid, file, prompt) = (ids[s], ["/a.txt", "/b.txt"][s], ["one", "two"][s]);
        match step {
            0 => format!(
                r#"→ {{"jsonrpc":"2.0","id":{rpc},"method":"session/prompt","params":{{"sessionId":"{sid}","prompt":[{{"type":"text","text":"{prompt}"}}]}}}}"#
            ),
            1 => format!(
                r#"← {{"jsonrpc":"2.0","id":{rpc},"method":"fs/read_text_file","params":{{"sessionId":"{sid}","path":"{file}"}}}}"#
            ),
            2 => format!(r#"→ {{"jsonrpc":"2.0","id":{rpc},"result":{{"content":"text of {file}"}}}}"#),
            3 => format!(
                r#"← {{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"}}}}}}}}"#,
                texts[s]
            ),
            _ => format!(r#"← {{"jsonrpc":"2.0","id":{rpc},"result":{{"stopReason":"end_turn"}}}}"#),
        }
    };
    let mut step = [0usize; 2];
    // The prompt's id and the agent's request's id, per session.
    let mut rpc = [[0usize; 2]; 2];
    let mut next_client = 10;
    let mut next_agent = 100;
    for &s in order {
        let id = match step[s] {
            0 => {
                next_client += 1;
                rpc[s][0] = next_client;
                next_client
            }
            1 => {
                next_agent += 1;
                rpc[s][1] = next_agent;
                next_agent
            }
            2 => rpc[s][1],
            3 => 0,
            _ => rpc[s][0],
        };
        lines.push(turn(s, step[s], id));
        step[s] += 1;
    }
    assert_eq!(step, [5, 5], "each session's turn is whole");
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// `acp-tee import FILE` of `text` into `db`; the new trace's id.
fn import_text(db: &Path, dir: &Path, name: &str, text: &str) -> String {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let out =
        Command::new(bin()).args(["import", "--db", db.to_str().unwrap(), file.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stdout).unwrap();
    said.rsplit("as trace ").next().unwrap().trim().to_owned()
}

/// Two runs of the same two concurrent sessions whose frames interleave
/// differently, the agent minting the ids the other way round, are
/// equivalent: sessions are matched by their order of creation, then
/// messages within each session. A real difference inside one session is
/// still one, named.
#[test]
fn concurrent_sessions_interleaved_differently_are_equivalent_and_a_real_difference_is_named() {
    let store = TempStore::new();
    let texts = ["reply one", "reply two"];
    let a = two_sessions(["x-1", "y-2"], &[0, 1, 0, 1, 0, 1, 0, 1, 0, 1], texts);
    let b = two_sessions(["y-2", "x-1"], &[1, 1, 0, 1, 0, 0, 1, 0, 1, 0], texts);
    let c = two_sessions(["y-2", "x-1"], &[1, 1, 0, 1, 0, 0, 1, 0, 1, 0], ["reply one", "reply TWO"]);
    let ta = import_text(&store.db, store.dir.path(), "a.log", &a);
    let tb = import_text(&store.db, store.dir.path(), "b.log", &b);
    let tc = import_text(&store.db, store.dir.path(), "c.log", &c);
    let (code, report) = diff(&store.db, &ta, &tb);
    assert_eq!((code, report.equivalent, report.changed_messages), (0, true, 0), "{report:#?}");
    assert_eq!(report.equal_messages, 16, "{report:#?}");
    let (code, report) = diff(&store.db, &ta, &tc);
    assert_eq!((code, report.equivalent, report.changed_messages), (1, false, 1), "{report:#?}");
    let change = &report.messages[0];
    assert_eq!((change.change, change.update.as_deref()), (ChangeKind::Changed, Some("agent_message_chunk")));
    let values: Vec<(&str, Option<&Value>, Option<&Value>)> =
        change.values.iter().map(|v| (v.path.as_str(), v.a.as_ref(), v.b.as_ref())).collect();
    assert_eq!(
        values,
        [("params.update.content.text", Some(&json!("reply two")), Some(&json!("reply TWO")))],
        "{report:#?}"
    );
}

/// One session of two turns as raw sacp-tee log lines: each turn's reply
/// streamed as `chunks`, the first turn's tool call titled `tool` and
/// ending `status`.
fn chunked_session(chunks: [&[&str]; 2], tool: &str, status: &str) -> String {
    let update = |u: String| {
        format!(r#"← {{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s-1","update":{u}}}}}"#)
    };
    let mut lines = vec![
        r#"→ {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#
            .to_owned(),
        r#"← {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#.to_owned(),
        r#"→ {"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#.to_owned(),
        r#"← {"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1"}}"#.to_owned(),
    ];
    for (turn, chunks) in chunks.iter().enumerate() {
        let id = 2 + turn;
        lines.push(format!(
            r#"→ {{"jsonrpc":"2.0","id":{id},"method":"session/prompt","params":{{"sessionId":"s-1","prompt":[{{"type":"text","text":"go {turn}"}}]}}}}"#
        ));
        if turn == 0 {
            lines.push(update(format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"t1","title":"{tool}","kind":"read","status":"pending"}}"#
            )));
            lines.push(update(format!(
                r#"{{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"{status}"}}"#
            )));
        }
        for c in *chunks {
            lines.push(update(format!(
                r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{c}"}}}}"#
            )));
        }
        lines.push(format!(r#"← {{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Turn by turn: the same replies streamed in other chunks (one of them
/// empty) differ only in chunking, which the report says, every turn
/// alike; another word and another tool call status are named in their
/// turn, as a word diff and a tool call change, in JSON and in text.
#[test]
fn turns_compare_their_assembled_text_and_tool_calls_and_chunking_alone_is_said() {
    let store = TempStore::new();
    let a = chunked_session([&["The file ", "says hello."], &["Done."]], "Read a.txt", "completed");
    let rechunked = chunked_session([&["The ", "", "file says ", "hello."], &["Do", "ne."]], "Read a.txt", "completed");
    let other = chunked_session([&["The file ", "says goodbye."], &["Done."]], "Read a.txt", "failed");
    let ta = import_text(&store.db, store.dir.path(), "a.log", &a);
    let tb = import_text(&store.db, store.dir.path(), "b.log", &rechunked);
    let tc = import_text(&store.db, store.dir.path(), "c.log", &other);

    let (code, report) = diff(&store.db, &ta, &tb);
    assert_eq!(code, 1, "messages differ: {report:#?}");
    assert!(report.changed_messages >= 4, "{report:#?}");
    assert!(report.only_chunking, "{report:#?}");
    let t = &report.turn_changes;
    assert_eq!((t.compared, t.equal, t.changed, t.turns.len()), (2, 2, 0, 0), "{report:#?}");

    let (code, report) = diff(&store.db, &ta, &tc);
    assert_eq!(code, 1);
    assert!(!report.only_chunking, "{report:#?}");
    let t = &report.turn_changes;
    assert_eq!((t.compared, t.equal, t.changed), (2, 1, 1), "{report:#?}");
    let c = &t.turns[0];
    assert_eq!((c.session.as_str(), c.turn, c.message_same, c.thought_same), ("session-1", 1, false, true));
    let runs: Vec<(TextOpKind, &str)> = c.message.iter().map(|o| (o.op, o.text.as_str())).collect();
    assert_eq!(
        runs,
        [(TextOpKind::Same, "The file says "), (TextOpKind::Removed, "hello."), (TextOpKind::Added, "goodbye.")]
    );
    assert_eq!(c.tools.len(), 1, "{c:#?}");
    let (ta_, tc_) = (c.tools[0].a.as_ref().unwrap(), c.tools[0].b.as_ref().unwrap());
    assert_eq!((ta_.status.as_deref(), tc_.status.as_deref()), (Some("completed"), Some("failed")));
    assert_eq!(ta_.title.as_deref(), Some("Read a.txt"));
    // The same in text.
    let out = Command::new(bin()).args(["diff", "--db", store.db.to_str().unwrap(), &ta, &tc]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("turn texts and tool calls: 1 of 2 turns differ"), "{text}");
    assert!(text.contains("message: The file says [-hello.-]{+goodbye.+}"), "{text}");
    assert!(text.contains("tool call 1: Read a.txt [read] completed -> Read a.txt [read] failed"), "{text}");
    let out = Command::new(bin()).args(["diff", "--db", store.db.to_str().unwrap(), &ta, &tb]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("cut into chunks differently"), "{text}");
    assert!(text.contains("turn texts and tool calls: 0 of 2 turns differ"), "{text}");
}
