//! End-to-end: the built viewer app in real headless Chromium (through
//! chromedriver) against a real `acp-tee serve` on a store recorded from real
//! sessions. Screenshots land in target/screenshots/ for people to look at.
//!
//! Needs the app built (`scripts/build-viewer`) and Debian's chromium and
//! chromium-driver (`scripts/install-tools` installs both).

mod compare;
mod detail;
mod family;
mod filters;
mod findings;
mod fixtures;
mod layout;
mod manage;
mod overview;
mod range;
mod replay;
mod requests;
mod search;
mod session;

use crate::common::webdriver::Browser;
use crate::common::*;
use fixtures::*;
use serde_json::json;
use std::io::Write;

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

#[test]
fn an_unknown_trace_is_one_clean_not_found_page() {
    let store = TempStore::new();
    import_trace(&store, "one", &pairs(1, 1.0));
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/999", server.url));
    b.wait_for("the not-found page", |b| !b.find_all("#trace-not-found").is_empty());
    let body = b.texts("body").join(" ");
    assert_eq!(body.matches("No trace 999").count(), 1, "{body}");
    for absent in [".toolbar", "#export-json", ".filters", "#diagram-scroll", ".notice.error"] {
        assert!(b.find_all(absent).is_empty(), "{absent} is on the not-found page");
    }
    assert!(b.js("return document.title;", json!([])).as_str().unwrap().contains("not found"));
    b.click("#trace-not-found a");
    b.wait_for("the trace list", |b| !b.find_all("tr.trace-row").is_empty());
    b.goto(&format!("{}/nothing/here", server.url));
    b.wait_for("the app's not-found page", |b| {
        b.texts("body").iter().any(|t| t.contains("Nothing here at /nothing/here"))
    });
}

#[test]
fn follow_stops_on_a_selected_frame_is_off_on_ended_traces_and_a_lost_server_shows() {
    let store = TempStore::new();
    import_trace(&store, "ended", &pairs(1, 1.0));
    let mut tee = tee_command(&store.db, &["--name", "live-one"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    writeln!(tee_in, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{}}}}"#).unwrap();
    assert!(!read_exact_from(&mut tee, 1).is_empty());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while store.open().list_traces().unwrap().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "the live trace never showed in the store");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the ended trace", |b| !b.find_all(".frame").is_empty());
    assert_eq!(b.js("return document.getElementById('follow').disabled;", json!([])), json!(true));

    b.goto(&format!("{}/traces/2", server.url));
    b.wait_for("the live trace", |b| b.texts(".frame .method").iter().any(|t| t.trim() == "initialize"));
    assert_eq!(
        b.js("const f = document.getElementById('follow'); return [f.disabled, f.checked];", json!([])),
        json!([false, true])
    );
    b.click(".frame[data-seq=\"1\"]");
    b.wait_for("follow off after selecting a frame", |b| {
        b.js("return document.getElementById('follow').checked;", json!([])) == json!(false)
    });

    drop(server);
    b.wait_for("the lost-server warning", |b| !b.find_all("#connection-lost").is_empty());
    b.screenshot("server-gone");
    drop(tee_in);
    tee.wait().unwrap();
}

#[test]
fn the_trace_list_sorts_moves_by_keyboard_and_says_stopped_for_an_agent_acp_tee_stopped() {
    let store = TempStore::new();
    import_trace(&store, "big", &pairs(6, 1.0));
    // An agent that never exits on EOF: acp-tee stops it with SIGTERM after the grace period.
    let out =
        run_with_input(tee_command(&store.db, &["--name", "sleeper", "--grace", "1s"], &["sleep", "30"]), Vec::new());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.ended_traces(2);
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/", server.url));
    b.wait_for("both traces", |b| b.find_all("tr.trace-row").len() == 2);
    let exit = b.texts("tr.trace-row[data-trace-id=\"2\"] td.exit").join("");
    assert_eq!(exit.trim(), "stopped (SIGTERM)", "{exit}");
    assert_eq!(
        b.js("return getComputedStyle(document.querySelector('tr.trace-row')).cursor;", json!([])),
        json!("pointer")
    );

    let order = |b: &Browser| -> Vec<String> {
        b.js("return Array.from(document.querySelectorAll('tr.trace-row'), r => r.dataset.traceId);", json!([]))
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(order(&b), ["2", "1"], "newest first");
    b.click("button.sort[data-sort=\"frames\"]");
    b.wait_for("sorted by frames, most first", |b| order(b) == ["1", "2"] && b.current_url().contains("sort=frames"));
    b.click("button.sort[data-sort=\"frames\"]");
    b.wait_for("sorted by frames, fewest first", |b| order(b) == ["2", "1"] && b.current_url().contains("order=asc"));

    b.type_into("#find-trace", "sleep");
    b.wait_for("the list filtered", |b| order(b) == ["2"] && b.current_url().contains("find=sleep"));
    b.type_into("#find-trace", "");
    b.wait_for("the list whole again", |b| order(b).len() == 2);

    b.js("document.querySelector('tr.trace-row').focus();", json!([]));
    b.key(None, "ArrowDown");
    assert_eq!(b.js("return document.activeElement.dataset.traceId;", json!([])), json!("1"));
    b.key(None, "Enter");
    b.wait_for("the trace opened", |b| b.current_url().ends_with("/traces/1") && !b.find_all(".frame").is_empty());
}
