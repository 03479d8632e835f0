//! What the browser tests stand on: the built app served by a real `acp-tee serve`, traces recorded from
//! real sessions or imported with exact times, and small readers of the page.

use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
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
