//! MCP lanes, from real families: acpx → acp-tee → an agent on the official Python ACP and MCP SDKs
//! (tests/peers/py_mcp_agent.py) → acp-tee → mcp-server-time. The diagram draws the server's lane, its
//! frames between the ACP rows their times fall between (also while the trace is recorded), and a picked
//! one in the detail panel; the Session tab lists each MCP request under its tool call, a failed one
//! marked.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use crate::sessions::record::{command_line, run_within, RUN_LIMIT};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `acpx --approve-all --mcp-config FILE --agent 'acp-tee --db DB -- python py_mcp_agent.py' exec PROMPT`,
/// FILE naming mcp-server-time wrapped in `acp-tee --name time`; HOME and the working directory are
/// temporary (`home` holds both).
fn acpx_turn(db: &Path, home: &Path, prompt: &str) -> Command {
    let work = home.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let db = db.to_str().unwrap();
    let time_server = installed_peer("mcp-venv/bin/mcp-server-time", "python-mcp");
    let server = json!({"name": "time", "command": bin(), "args": ["--db", db, "--name", "time", "--", time_server]});
    let config = home.join("mcp.json");
    std::fs::write(&config, json!({ "mcpServers": [server] }).to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_mcp_agent.py");
    let agent = [bin().to_owned(), "--db".into(), db.into(), "--".into(), python_mcp(), script.display().to_string()];
    let mut cmd = Command::new(acpx());
    cmd.args(["--approve-all", "--cwd", work.to_str().unwrap(), "--mcp-config", config.to_str().unwrap()])
        .args(["--agent", &command_line(&agent), "exec", prompt])
        .env("HOME", home);
    cmd
}

/// How many traces the store holds (0 while it is being created).
fn trace_count(db: &Path) -> usize {
    acp_tee::Store::open_existing(db).ok().and_then(|s| s.list_traces().ok()).map_or(0, |t| t.len())
}

fn api(server: &Server, path: &str) -> Value {
    ureq::get(&format!("{}{path}", server.url)).call().unwrap().into_json().unwrap()
}

/// The top of the line of the arrow drawn by the element matching `css` (an ACP row or an MCP frame).
fn arrow_y(b: &Browser, css: &str) -> f64 {
    b.num(&format!(
        "const el = document.querySelector({}); return el.querySelector('svg.arrow line').getBoundingClientRect().top;",
        json!(css)
    ))
}

fn rect(b: &Browser, css: &str) -> Vec<f64> {
    let r = b.js(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];",
        json!([css]),
    );
    r.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

/// A session's first tool call: the frames that announced and ended it, and whether its MCP request was
/// sent after the announcement (on the ACP trace's clock; the test agent sends it after by default).
fn tool_call_frames(server: &Server, trace: i64) -> (i64, i64, bool) {
    let sessions = api(server, &format!("/api/traces/{trace}/sessions"));
    let sid = sessions["sessions"][0]["session_id"].as_str().unwrap().to_owned();
    let detail = api(server, &format!("/api/traces/{trace}/sessions/{sid}"));
    let call = &detail["turns"][0]["tool_calls"][0];
    let statuses = call["statuses"].as_array().unwrap();
    let after = call["mcp_calls"][0]["t_ns"].as_i64().unwrap() >= call["first_t_ns"].as_i64().unwrap();
    (call["first_seq"].as_i64().unwrap(), statuses.last().unwrap()["seq"].as_i64().unwrap(), after)
}

const CALL: &str = ".mcp-frame[data-kind=\"request\"][data-label=\"tools/call get_current_time\"]";

#[test]
fn mcp_servers_get_lanes_between_the_acp_rows_and_their_requests_show_under_tool_calls() {
    let store = TempStore::new();
    let b = Browser::start();

    // The first turn is watched while it is recorded: the page is open before the agent starts its
    // server (the agent's Python takes seconds to answer initialize), and the lane comes with the news.
    let home = tempfile::tempdir().unwrap();
    let mut acpx = acpx_turn(&store.db, home.path(), r#"get_current_time {"timezone": "UTC"}"#)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + RUN_LIMIT;
    while trace_count(&store.db) == 0 {
        assert!(Instant::now() < deadline, "the ACP trace never showed in the store");
        std::thread::sleep(Duration::from_millis(20));
    }
    let server = Server::start(&store.db);
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the live trace's first rows", |b| !b.find_all(".frame").is_empty());
    let child_before_page = trace_count(&store.db) > 1;
    while b.find_all(CALL).is_empty() {
        assert!(Instant::now() < deadline, "the live page never drew the MCP server's tools/call");
        std::thread::sleep(Duration::from_millis(100));
    }
    if child_before_page {
        eprintln!("the MCP server was recorded before the page was drawn: its lane was not seen arriving live");
    }
    assert!(wait_within(&mut acpx, RUN_LIMIT).expect("acpx hung").success());

    // The second turn's tool answers an error (an unknown time zone).
    let home = tempfile::tempdir().unwrap();
    let out = run_within(acpx_turn(&store.db, home.path(), r#"get_current_time {"timezone": "Not/AZone"}"#));
    assert!(out.status.success(), "acpx: {}", String::from_utf8_lossy(&out.stderr));
    let traces = store.ended_traces(4);
    let acp: Vec<i64> = traces.iter().filter(|t| t.parent_trace.is_none()).map(|t| t.id).collect();
    assert_eq!(acp.len(), 2, "{traces:?}");
    let (ok, failed) = (acp[0], acp[1]);
    let family = api(&server, &format!("/api/traces/{ok}/family"));
    let child = family["children"][0]["meta"]["id"].as_i64().unwrap();
    let name = family["children"][0]["server"].as_str().expect("the server named itself").to_owned();

    // The lane, headed by the server's name, between Agent and stderr.
    b.goto(&format!("{}/traces/{ok}", server.url));
    b.wait_for("the MCP lane's tools/call", |b| !b.find_all(CALL).is_empty());
    assert_eq!(b.texts("[data-lane=\"mcp\"]"), std::slice::from_ref(&name));
    let (agent, mcp, stderr) =
        (rect(&b, "[data-lane=\"agent\"]"), rect(&b, "[data-lane=\"mcp\"]"), rect(&b, "[data-lane=\"stderr\"]"));
    assert!(agent[2] <= mcp[0] && mcp[2] <= stderr[0], "agent {agent:?}, mcp {mcp:?}, stderr {stderr:?}");
    // The tools/call and its answer sit between the tool call's announcement and its completion.
    let (announced, ended, sent_after) = tool_call_frames(&server, ok);
    let top = arrow_y(&b, &format!(".frame[data-seq=\"{announced}\"]"));
    let bottom = arrow_y(&b, &format!(".frame[data-seq=\"{ended}\"]"));
    let call = arrow_y(&b, CALL);
    let answer = arrow_y(&b, ".mcp-frame[data-kind=\"response\"][data-label=\"tools/call\"]");
    assert!(call < answer && answer < bottom, "MCP {call} then {answer}, before the tool call's end at {bottom}");
    // Where the clocks say it was sent: after the announcement (the agent's way), else above it.
    assert_eq!(top < call, sent_after, "the tool call announced at {top}, its request at {call}");
    // The request goes to the server's lane, the answer comes back; the server is busy in between.
    let arrow = rect(&b, CALL);
    assert!((arrow[0] - agent[0] - (agent[2] - agent[0]) / 2.0).abs() < 2.0, "{arrow:?} starts at the Agent");
    assert!((arrow[2] - mcp[0] - (mcp[2] - mcp[0]) / 2.0).abs() < 2.0, "{arrow:?} ends at the MCP lane");
    let busy = b.texts(".mcp-busy .busy-label");
    assert!(busy.iter().any(|l| l.contains("ms")), "{busy:?}");
    // initialize and tools/list of the session's start are drawn too.
    let labels = b.js("return Array.from(document.querySelectorAll('.mcp-frame'), e => e.dataset.label);", json!([]));
    for m in ["initialize", "tools/list", "notifications/initialized"] {
        assert!(labels.as_array().unwrap().iter().any(|l| l == m), "no {m} in {labels}");
    }
    b.screenshot("mcp-lanes-1400");

    // A click shows the frame in the detail panel, its own trace a link away.
    b.click(CALL);
    b.wait_for("the MCP frame's detail", |b| {
        b.texts("#detail .json").iter().any(|t| t.contains("get_current_time") && t.contains("UTC"))
    });
    let seq = b.js(&format!("return +document.querySelector({}).dataset.seq;", json!(CALL)), json!([]));
    assert!(b.current_url().contains(&format!("mcp_trace={child}&mcp_frame={seq}")), "{}", b.current_url());
    assert!(b.texts("#detail").join(" ").contains(&format!("MCP server {name}")));
    let href = b.js("return document.getElementById('mcp-open-trace').getAttribute('href');", json!([]));
    assert_eq!(href, json!(format!("/traces/{child}?frame={seq}")));
    assert_eq!(b.find_all(".mcp-frame.selected").len(), 1);
    b.screenshot("mcp-detail-1400");

    // The Session tab: the request under its tool call, linked by time alone (one tool call was running).
    b.click("#tab-session");
    b.wait_for("the MCP request under the tool call", |b| !b.find_all(".tool .mcp-call").is_empty());
    let listed = b.texts(".tool .mcp-call").join("\n");
    for part in [name.as_str(), "tools/call", "get_current_time", "answered in", "during the tool call"] {
        assert!(listed.contains(part), "{part:?} missing from {listed}");
    }
    assert!(!listed.contains("one of"), "{listed}");
    assert!(b.find_all(".tool.mcp-failed, .mcp-call.failed").is_empty());
    b.screenshot("mcp-session-1400");

    // The failed call: listed with the server's words, its tool call marked.
    b.goto(&format!("{}/traces/{failed}?tab=session", server.url));
    b.wait_for("the failed MCP request", |b| !b.find_all(".tool.mcp-failed .mcp-call.failed").is_empty());
    let listed = b.texts(".mcp-call.failed").join("\n");
    assert!(listed.contains("failed after") && listed.contains("Not/AZone"), "{listed}");
    assert_eq!(b.texts(".tool.mcp-failed .chip.mcp-failed"), ["MCP error"]);
    b.screenshot("mcp-session-failed-1400");

    // At 900 px the lanes fit beside the detail panel, without sideways scrolling.
    b.resize(900, 900);
    let (announced, ..) = tool_call_frames(&server, failed);
    b.goto(&format!("{}/traces/{failed}?frame={announced}", server.url));
    b.wait_for("the diagram and detail at 900", |b| {
        !b.find_all(CALL).is_empty() && !b.find_all("#detail h2").is_empty()
    });
    let detail = rect(&b, "#detail");
    let mcp = rect(&b, "[data-lane=\"mcp\"]");
    assert!(mcp[2] <= detail[0] && rect(&b, "[data-lane=\"stderr\"]")[0] >= mcp[2], "{mcp:?} beside {detail:?}");
    // The tool's failure (a result marked isError) is drawn as a failure, the server's words in its label.
    let answer = b.js(
        "return Array.from(document.querySelectorAll('.mcp-frame[data-kind=response]'), e => e.dataset.label).pop();",
        json!([]),
    );
    assert!(
        answer.as_str().is_some_and(|l| l.starts_with("tools/call tool error: ") && l.contains("Not/AZone")),
        "{answer}"
    );
    assert!(!b.find_all(".mcp-busy[title*=\"ms\"]").is_empty());
    let sideways = b.num("const s = document.getElementById('diagram-scroll'); return s.scrollWidth - s.clientWidth;");
    assert!(sideways <= 0.0, "the diagram needs {sideways} px of sideways scrolling at 900");
    assert!(rect(&b, CALL)[2] <= detail[0]);
    b.screenshot("mcp-lanes-900");
    b.click("#tab-session");
    b.wait_for("the Session tab at 900", |b| !b.find_all(".mcp-call").is_empty());
    b.screenshot("mcp-session-900");
}
