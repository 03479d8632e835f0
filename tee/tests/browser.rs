//! End-to-end: the built viewer app in real headless Chromium (through
//! chromedriver) against a real `acp-tee serve` on a store recorded from real
//! sessions. Screenshots land in target/screenshots/ for people to look at.
//!
//! Needs the app built (`scripts/build-viewer`) and Debian's chromium and
//! chromium-driver (`scripts/install-tools` installs both).

mod common;

use common::webdriver::Browser;
use common::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn dist() -> PathBuf {
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist");
    assert!(dist.join("index.html").is_file(), "the viewer is not built: run scripts/build-viewer first");
    dist
}

/// `acp-tee serve` on a free port; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(db: &std::path::Path) -> Server {
        let mut child = Command::new(bin())
            .args(["serve", "--port", "0", "--db", db.to_str().unwrap(), "--dist", dist().to_str().unwrap()])
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

fn record_eliza(store: &TempStore, prompt: &str) {
    let out = Command::new(peer("yopo"))
        .args([prompt, "--", bin(), "--db", store.db.to_str().unwrap(), "--name", "eliza-session", "--"])
        .args([peer("elizacp").as_str(), "--deterministic", "acp"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.only_trace();
}

#[test]
fn the_viewer_draws_a_real_session_and_follows_a_live_one() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let server = Server::start(&store.db);
    let b = Browser::start();

    // The trace list.
    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list", |b| !b.find_all("table#traces tr.trace-row").is_empty());
    assert_eq!(b.find_all("tr.trace-row[data-trace-id=\"1\"]").len(), 1);
    b.screenshot("trace-list");

    // The sequence diagram: lanes, arrows and method labels.
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    for (lane, text) in [("client", "Client"), ("tee", "acp-tee"), ("agent", "Agent"), ("stderr", "stderr")] {
        let texts = b.texts(&format!("[data-lane=\"{lane}\"]"));
        assert!(texts.iter().any(|t| t.trim() == text), "lane {lane}: {texts:?}");
    }
    let methods = b.texts(".frame .method");
    for m in ["initialize", "session/new", "session/prompt", "session/update"] {
        assert!(methods.iter().any(|t| t.trim() == m), "no {m} label in {methods:?}");
    }
    assert!(b.find_all(".frame .arrow").len() >= 7, "arrows are drawn");
    assert_eq!(b.find_all(".frame[data-kind=\"response\"][data-dir=\"agent_to_client\"]").len(), 3);
    let busy = b.texts(".busy .busy-label");
    assert!(
        busy.len() >= 3 && busy.iter().all(|l| l.contains("ms") || l.contains("µs") || l.contains("us")),
        "{busy:?}"
    );
    b.screenshot("diagram");

    // Click the prompt request: its JSON shows in the detail panel.
    b.click(".frame[data-kind=\"request\"]");
    b.wait_for("the detail panel", |b| {
        b.texts("#detail .json").iter().any(|t| t.contains("protocolVersion") || t.contains("session"))
    });
    let prompt_seq = b.js(
        "const f = Array.from(document.querySelectorAll('.frame[data-kind=request]')).find(e => e.querySelector('.method').textContent.trim() === 'session/prompt'); return f.dataset.seq;",
        json!([]),
    );
    b.click(&format!(".frame[data-seq=\"{}\"]", prompt_seq.as_str().unwrap()));
    b.wait_for("the prompt's JSON", |b| {
        b.texts("#detail .json").iter().any(|t| t.contains("I would like to see my messages"))
    });
    assert!(b.texts("#detail pre.raw").iter().any(|t| t.contains("\"method\":\"session/prompt\"")));
    b.screenshot("detail");

    // Filter by method: only session/prompt frames remain, and the URL says so.
    // Clicking an option is how WebDriver picks it: the page gets real input/change events.
    b.click("#filter-method option[value=\"session/prompt\"]");
    b.wait_for("the method filter", |b| {
        let m = b.texts(".frame .method");
        !m.is_empty() && m.iter().all(|t| t.trim() == "session/prompt")
    });
    assert!(b.current_url().contains("method=session%2Fprompt"), "{}", b.current_url());
    b.screenshot("filtered");

    // Live: a trace being recorded now; a frame written after the page
    // loaded must appear.
    let mut tee = tee_command(&store.db, &["--name", "live-one"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    writeln!(tee_in, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{}}}}"#).unwrap();
    assert!(!read_exact_from(&mut tee, 1).is_empty());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::metadata(&store.db).is_ok_and(|_| store.open().list_traces().unwrap().len() == 2) {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    b.goto(&format!("{}/traces/2", server.url));
    b.wait_for("the live trace's first frame", |b| b.texts(".frame .method").iter().any(|t| t.trim() == "initialize"));
    writeln!(tee_in, r#"{{"jsonrpc":"2.0","method":"live/ping","params":{{}}}}"#).unwrap();
    b.wait_for("a frame recorded after page load", |b| {
        b.texts(".frame .method").iter().any(|t| t.trim() == "live/ping")
    });
    b.screenshot("live");
    drop(tee_in);
    tee.wait().unwrap();
}

#[test]
fn hostile_recorded_content_is_shown_as_text_never_run() {
    let store = TempStore::new();
    let method = r#"<img src=x onerror="window.__pwned=1">"#;
    let input = format!(
        "{}\n{}\n",
        serde_json::json!({"jsonrpc":"2.0","id":1,"method":method,"params":{"note":"<script>window.__pwned=2</script>"}}),
        serde_json::json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"<i>s</i>","update":{
            "sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"<b onmouseover=\"window.__pwned=4\">bold</b><script>window.__pwned=5</script>"}}}}),
    );
    let agent = sh("cat; echo '<script>window.__pwned=3</script><img src=y onerror=window.__pwned=6>' >&2");
    let out = run_with_input(
        tee_command(&store.db, &["--name", "<script>window.__pwned=7</script>"], &as_strs(&agent)),
        input.into_bytes(),
    );
    assert!(out.status.success());
    store.only_trace();
    let server = Server::start(&store.db);
    let b = Browser::start();
    let pwned = |b: &Browser| b.js("return window.__pwned === undefined ? null : window.__pwned;", json!([]));

    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list", |b| !b.find_all("tr.trace-row").is_empty());
    assert!(b.texts("table#traces").iter().any(|t| t.contains("<script>window.__pwned=7</script>")));
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the hostile frames", |b| b.find_all(".frame").len() >= 5);
    assert!(b.texts(".frame .method").iter().any(|t| t.contains(method)), "the method is shown as text");
    assert!(b.texts("body").iter().any(|t| t.contains("window.__pwned=3")), "the stderr line is shown as text");
    b.click(".frame[data-seq=\"1\"]");
    b.wait_for("the detail panel", |b| {
        b.texts("#detail .json").iter().any(|t| t.contains("<script>window.__pwned=2</script>"))
    });
    let injected = b.js(
        "return document.querySelectorAll('#diagram-scroll img, #diagram-scroll script, #detail img, #detail script, #detail b, table#traces script').length;",
        json!([]),
    );
    assert_eq!(injected, json!(0), "recorded markup became elements");
    b.screenshot("hostile");
    assert_eq!(pwned(&b), serde_json::Value::Null, "recorded script ran");
}
