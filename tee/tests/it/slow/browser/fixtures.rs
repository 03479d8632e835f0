//! What the browser tests stand on: the built app served by a real `acp-tee serve`, traces recorded from
//! real sessions or imported with exact times, and small readers of the page.

use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The built app (`dist/`), which must exist.
pub fn dist() -> PathBuf {
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist");
    assert!(dist.join("index.html").is_file(), "the viewer is not built: run scripts/build-viewer first");
    dist
}

/// `acp-tee serve` on a free port; killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Server {
    /// Serves the store at `db` and the built app.
    pub fn start(db: &std::path::Path) -> Server {
        Server::start_with(db, &[])
    }

    /// [`Server::start`] with more options of `acp-tee serve` (`--read-only`).
    pub fn start_with(db: &std::path::Path, extra: &[&str]) -> Server {
        let mut child = Command::new(bin())
            .args(["serve", "--port", "0", "--db", db.to_str().unwrap(), "--dist", dist().to_str().unwrap()])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let url = first.split(" at ").nth(1).expect("serve prints its URL").trim().trim_end_matches('/').to_owned();
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Records one real session: yopo sends `prompt` to elizacp through acp-tee (trace `eliza-session`).
pub fn record_eliza(store: &TempStore, prompt: &str) {
    let out = Command::new(peer("yopo"))
        .args([prompt, "--", bin(), "--db", store.db.to_str().unwrap(), "--name", "eliza-session", "--"])
        .args([peer("elizacp").as_str(), "--deterministic", "acp"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.only_trace();
}

/// One frame of a made-up trace: milliseconds from the start, direction, exact text (newline added).
pub struct Msg(pub f64, pub &'static str, pub String);

/// A client-to-agent frame.
pub fn c2a(t_ms: f64, v: serde_json::Value) -> Msg {
    Msg(t_ms, "client_to_agent", v.to_string())
}

/// An agent-to-client frame.
pub fn a2c(t_ms: f64, v: serde_json::Value) -> Msg {
    Msg(t_ms, "agent_to_client", v.to_string())
}

/// A line of the agent's stderr.
pub fn stderr_line(t_ms: f64, text: &str) -> Msg {
    Msg(t_ms, "agent_stderr", text.to_owned())
}

/// Imports a trace with exactly these frames and times into the store (as an acp-tee-trace NDJSON file,
/// through `acp-tee import`); the framer pairs responses with requests from their ids.
pub fn import_trace(store: &TempStore, name: &str, msgs: &[Msg]) {
    let header = json!({"format": "acp-tee-trace", "version": 1, "trace": {
        "id": 1, "name": name, "command": ["demo-agent", "acp"], "mode": "wrap",
        "started_at": "2026-11-30T10:00:00.000000Z", "ended_at": "2026-11-30T10:00:05.000000Z",
        "exit_code": 0, "end_reason": "the agent exited",
        "frame_count": msgs.len(), "error_count": 0, "missing_frames": 0}});
    let mut text = format!("{header}\n");
    for (i, Msg(t_ms, dir, raw)) in msgs.iter().enumerate() {
        let parsed = serde_json::from_str::<serde_json::Value>(raw);
        let v = parsed.as_ref().cloned().unwrap_or(serde_json::Value::Null);
        let kind = match (*dir, v.get("method").is_some(), v.get("id").is_some()) {
            ("agent_stderr", _, _) => "stderr",
            _ if parsed.is_err() => "invalid",
            (_, true, true) => "request",
            (_, true, false) => "notification",
            _ if v.get("error").is_some() => "error",
            _ => "response",
        };
        let frame =
            json!({"seq": i + 1, "t_ns": (t_ms * 1e6) as i64, "dir": dir, "kind": kind, "raw": format!("{raw}\n")});
        text.push_str(&format!("{frame}\n"));
    }
    let file = store.dir.path().join(format!("{name}.ndjson"));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(bin())
        .args(["import", "--db", store.db.to_str().unwrap(), "--name", name, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
}

/// `count` request/response pairs, each answered `latency_ms` after it was sent, 5 ms apart.
pub fn pairs(count: usize, latency_ms: f64) -> Vec<Msg> {
    let mut msgs = Vec::new();
    for i in 0..count {
        let t = i as f64 * (latency_ms + 5.0);
        msgs.push(c2a(t, json!({"jsonrpc": "2.0", "id": i + 1, "method": "session/prompt", "params": {"n": i}})));
        msgs.push(a2c(t + latency_ms, json!({"jsonrpc": "2.0", "id": i + 1, "result": {"stopReason": "end_turn"}})));
    }
    msgs
}

/// `pairs`, the prompts in session `s`: turns, as every reader counts them
/// (a prompt naming no session starts none).
pub fn session_pairs(count: usize, latency_ms: f64) -> Vec<Msg> {
    let mut msgs = Vec::new();
    for i in 0..count {
        let t = i as f64 * (latency_ms + 5.0);
        let params = json!({"sessionId": "s", "prompt": [{"type": "text", "text": format!("prompt {i}")}]});
        msgs.push(c2a(t, json!({"jsonrpc": "2.0", "id": i + 1, "method": "session/prompt", "params": params})));
        msgs.push(a2c(t + latency_ms, json!({"jsonrpc": "2.0", "id": i + 1, "result": {"stopReason": "end_turn"}})));
    }
    msgs
}

/// The `data-seq` of every drawn frame row.
pub fn drawn_seqs(b: &Browser) -> Vec<i64> {
    let v =
        b.js("return Array.from(document.querySelectorAll('#diagram-scroll .frame'), e => +e.dataset.seq);", json!([]));
    let mut seqs: Vec<i64> = v.as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect();
    seqs.sort();
    seqs
}

/// The seq of the selected frame, from the URL.
pub fn selected_in_url(b: &Browser) -> Option<i64> {
    let url = b.current_url();
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|p| p.strip_prefix("frame=")).and_then(|s| s.parse().ok())
}

/// The rectangle of the first element matching `css`: left, top, right, bottom.
pub fn rect(b: &Browser, css: &str) -> [f64; 4] {
    let v = b.js(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];",
        json!([css]),
    );
    let a = v.as_array().unwrap_or_else(|| panic!("nothing matches {css}"));
    [0, 1, 2, 3].map(|i| a[i].as_f64().unwrap())
}

/// The shape of [`million`]'s trace, for tests to find their way in it.
pub mod big {
    /// Frames in the trace.
    pub const FRAMES: i64 = 1_000_000;
    /// Frames of one ordinary turn: prompt, tool call, `fs/read_text_file` and its answer, 95 message chunks,
    /// tool call update, response.
    pub const TURN_FRAMES: i64 = 100;
    /// Every this many turns the prompt is answered with an error.
    pub const ERROR_EVERY: i64 = 50;
    /// The seq of the long prompt (session `long`): answered at [`LONG_ANSWER`], ordinary turns of the
    /// other sessions in between.
    pub const LONG_PROMPT: i64 = 400_001;
    /// The seq of the long prompt's answer.
    pub const LONG_ANSWER: i64 = 600_001;
    /// After this seq nothing happens for [`GAP_MS`].
    pub const GAP_AFTER: i64 = 700_000;
    /// The idle gap's length.
    pub const GAP_MS: i64 = 60_000;
    /// The last frame: a prompt never answered.
    pub const LAST_PROMPT: i64 = FRAMES;
    /// In [`super::million_pair`]'s second trace, this turn's first chunk is `world ` (not `word `)...
    pub const CHANGED_WORD_TURN: i64 = 3;
    /// ... and this turn's tool call ends `failed` (not `completed`).
    pub const CHANGED_TOOL_TURN: i64 = 6;
}

/// A generated trace of [`big::FRAMES`] frames, 1 ms apart but for one idle gap: an `initialize`, then turns
/// of [`big::TURN_FRAMES`] frames alternating between sessions `a` and `b`, a prompt of session `long` in flight
/// from [`big::LONG_PROMPT`] to [`big::LONG_ANSWER`], [`big::GAP_MS`] of silence after [`big::GAP_AFTER`], and
/// a last prompt left unanswered. Imported once per test run (about 20 s in a debug build) into a store of its
/// own, trace 1, and indexed for search; tests only read it; the store of a run whose process is gone is removed by the next.
pub fn million() -> &'static std::path::Path {
    static DB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        // Those of earlier runs (a store is 250 MB) whose test process is gone.
        for old in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = old.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("million-").and_then(|p| p.parse::<u32>().ok()) {
                if !process_alive(pid) {
                    let _ = std::fs::remove_dir_all(old.path());
                }
            }
        }
        let dir = tmp.join(format!("million-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("million.ndjson");
        write_million(&file, false).unwrap();
        let db = dir.join("store.db");
        let out = Command::new(bin())
            .args(["import", "--db", db.to_str().unwrap(), "--name", "million", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::remove_file(&file).unwrap();
        // Indexed for search, as `serve` leaves a store after a while: a search counting its matches in a
        // million frames not yet indexed scans them all, masked, past the server's time limit in a debug build.
        let indexed = acp_tee::Store::open_existing(&db).unwrap().index_for_search(big::FRAMES).unwrap();
        assert_eq!(indexed as i64, big::FRAMES);
        db
    })
}

/// A store of two traces: 1 is [`million`]'s trace, 2 the same run but for two turns (see
/// [`big::CHANGED_WORD_TURN`] and [`big::CHANGED_TOOL_TURN`]), each imported from its file. Made once per test
/// run beside [`million`]'s store (and removed with it); tests only read it.
pub fn million_pair() -> &'static std::path::Path {
    static DB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DB.get_or_init(|| {
        let dir = million().parent().unwrap().to_owned();
        let db = dir.join("pair.db");
        for (variant, name) in [(false, "million"), (true, "million, two turns changed")] {
            let file = dir.join("pair.ndjson");
            write_million(&file, variant).unwrap();
            let out = Command::new(bin())
                .args(["import", "--db", db.to_str().unwrap(), "--name", name, file.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(out.status.success(), "import: {}", String::from_utf8_lossy(&out.stderr));
            std::fs::remove_file(&file).unwrap();
        }
        db
    })
}

/// Writes frames of an acp-tee-trace file, 1 ms apart but for [`big::GAP_MS`] after [`big::GAP_AFTER`].
struct BigWriter {
    out: std::io::BufWriter<std::fs::File>,
    seq: i64,
    t_ms: i64,
}

impl BigWriter {
    fn put(&mut self, dir: &str, kind: &str, raw: serde_json::Value) -> std::io::Result<()> {
        let raw = match raw {
            serde_json::Value::String(text) if kind == "stderr" => text,
            v => v.to_string(),
        };
        self.seq += 1;
        self.t_ms += if self.seq == big::GAP_AFTER + 1 { 1 + big::GAP_MS } else { 1 };
        let frame = json!({"seq": self.seq, "t_ns": self.t_ms * 1_000_000, "dir": dir, "kind": kind, "raw": format!("{raw}\n")});
        writeln!(self.out, "{frame}")
    }
}

fn update(sid: &str, update: serde_json::Value) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})
}

/// `variant`: the second trace of [`million_pair`].
fn write_million(path: &std::path::Path, variant: bool) -> std::io::Result<()> {
    use big::*;
    let header = json!({"format": "acp-tee-trace", "version": 1, "trace": {
        "id": 1, "name": "million", "command": ["big-agent", "acp"], "mode": "wrap",
        "started_at": "2026-11-30T10:00:00.000000Z", "ended_at": "2026-11-30T10:17:41.000000Z",
        "exit_code": 0, "end_reason": "the agent exited",
        "frame_count": FRAMES, "error_count": 0, "missing_frames": 0}});
    let mut w = BigWriter { out: std::io::BufWriter::new(std::fs::File::create(path)?), seq: 0, t_ms: 0 };
    writeln!(w.out, "{header}")?;
    w.put(
        "client_to_agent",
        "request",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}}),
    )?;
    w.put(
        "agent_to_client",
        "response",
        json!({"jsonrpc": "2.0", "id": 0,
        "result": {"protocolVersion": 1, "agentCapabilities": {}}}),
    )?;
    let mut turn = 0i64;
    loop {
        let next = w.seq + 1;
        if next == LONG_ANSWER {
            w.put(
                "agent_to_client",
                "response",
                json!({"jsonrpc": "2.0", "id": "long", "result": {"stopReason": "end_turn"}}),
            )?;
            continue;
        }
        if next == LONG_PROMPT || next == LAST_PROMPT {
            let (rid, text) = if next == LONG_PROMPT { ("long", "a long job") } else { ("last", "never answered") };
            let prompt = json!({"sessionId": rid, "prompt": [{"type": "text", "text": text}]});
            w.put(
                "client_to_agent",
                "request",
                json!({"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": prompt}),
            )?;
            if next == LAST_PROMPT {
                break;
            }
            continue;
        }
        let fixed_ahead =
            [LONG_PROMPT, LONG_ANSWER, LAST_PROMPT].into_iter().any(|f| next <= f && f < next + TURN_FRAMES);
        if fixed_ahead {
            // Up to the next fixed frame: the agent's stderr.
            w.put("agent_stderr", "stderr", json!(format!("working {next}")))?;
            continue;
        }
        turn += 1;
        let sid = if turn % 2 == 0 { "a" } else { "b" };
        let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": format!("turn {turn}")}]});
        w.put(
            "client_to_agent",
            "request",
            json!({"jsonrpc": "2.0", "id": turn, "method": "session/prompt", "params": prompt}),
        )?;
        let call = format!("call-{turn}");
        w.put(
            "agent_to_client",
            "notification",
            update(
                sid,
                json!({"sessionUpdate": "tool_call",
            "toolCallId": call, "title": "Read file", "kind": "read", "status": "pending"}),
            ),
        )?;
        let fs_id = format!("fs-{turn}");
        w.put(
            "agent_to_client",
            "request",
            json!({"jsonrpc": "2.0", "id": fs_id, "method": "fs/read_text_file",
            "params": {"sessionId": sid, "path": format!("/src/file{}.rs", turn % 7)}}),
        )?;
        w.put(
            "client_to_agent",
            "response",
            json!({"jsonrpc": "2.0", "id": fs_id, "result": {"content": "fn main() {}"}}),
        )?;
        for k in 0..TURN_FRAMES - 5 {
            let word = match (turn, k) {
                (t, 0) if t % 997 == 0 => "zebra ",
                (CHANGED_WORD_TURN, 0) if variant => "world ",
                _ => "word ",
            };
            w.put(
                "agent_to_client",
                "notification",
                update(
                    sid,
                    json!({"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": word}}),
                ),
            )?;
        }
        w.put(
            "agent_to_client",
            "notification",
            update(
                sid,
                json!({"sessionUpdate": "tool_call_update",
            "toolCallId": call, "status": if variant && turn == CHANGED_TOOL_TURN { "failed" } else { "completed" }}),
            ),
        )?;
        if turn % ERROR_EVERY == 0 {
            w.put(
                "agent_to_client",
                "error",
                json!({"jsonrpc": "2.0", "id": turn,
                "error": {"code": -32603, "message": "Internal error", "data": {"turn": turn}}}),
            )?;
        } else {
            w.put(
                "agent_to_client",
                "response",
                json!({"jsonrpc": "2.0", "id": turn, "result": {"stopReason": "end_turn"}}),
            )?;
        }
    }
    assert_eq!(w.seq, FRAMES);
    w.out.flush()
}

#[test]
fn the_million_frame_trace_is_what_its_constants_say() {
    let store = acp_tee::Store::open_existing(million()).unwrap();
    let (mut count, mut errors, mut prev_t, mut gap) = (0i64, 0i64, 0i64, None);
    let mut picked = std::collections::BTreeMap::new();
    store
        .for_each_frame(1, |f| -> Result<(), acp_tee::StoreError> {
            count += 1;
            errors += i64::from(f.kind == acp_tee_shared::FrameKind::Error);
            if f.t_ns - prev_t > 1_000_000 && f.seq > 1 {
                gap = Some((f.seq, f.t_ns - prev_t));
            }
            prev_t = f.t_ns;
            if [1, big::LONG_PROMPT, big::LONG_ANSWER, big::LAST_PROMPT].contains(&f.seq) {
                picked.insert(f.seq, (f.method.clone(), f.reply_to_seq));
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(count, big::FRAMES);
    assert_eq!(gap, Some((big::GAP_AFTER + 1, (big::GAP_MS + 1) * 1_000_000)));
    let prompt = (Some("session/prompt".to_owned()), None);
    assert_eq!(picked[&1], (Some("initialize".to_owned()), None));
    assert_eq!(picked[&big::LONG_PROMPT], prompt);
    assert_eq!(picked[&big::LONG_ANSWER], (prompt.0.clone(), Some(big::LONG_PROMPT)));
    assert_eq!(picked[&big::LAST_PROMPT], prompt);
    let turns = (big::FRAMES - 2) / big::TURN_FRAMES;
    assert!(errors >= turns / big::ERROR_EVERY - 2, "{errors} error responses of about {turns} turns");
}
