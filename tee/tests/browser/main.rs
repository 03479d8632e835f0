//! End-to-end: the built viewer app in real headless Chromium (through
//! chromedriver) against a real `acp-tee serve` on a store recorded from real
//! sessions. Screenshots land in target/screenshots/ for people to look at.
//!
//! Needs the app built (`scripts/build-viewer`) and Debian's chromium and
//! chromium-driver (`scripts/install-tools` installs both).

#[path = "../common/mod.rs"]
mod common;
mod fixtures;
mod session;

use common::webdriver::Browser;
use common::*;
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
fn after_the_timing_tab_the_diagram_draws_every_row_and_shows_a_slowest_response() {
    let store = TempStore::new();
    import_trace(&store, "fourteen", &pairs(7, 3.0));
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/traces/1?tab=timing", server.url));
    b.wait_for("the timing tab", |b| !b.find_all("#method-stats tbody tr").is_empty());
    b.click("#tab-diagram");
    b.wait_for("all 14 rows", |b| drawn_seqs(b) == (1..=14).collect::<Vec<_>>());

    // A slowest response picked on the Timing tab is drawn and selected in the diagram.
    b.goto(&format!("{}/traces/1?tab=timing", server.url));
    b.wait_for("the slowest responses", |b| !b.find_all("#slowest li").is_empty());
    let seq =
        b.js("return +document.querySelector('#slowest li:last-child').dataset.seq;", json!([])).as_i64().unwrap();
    b.click("#slowest li:last-child");
    b.wait_for("the slowest response selected in the diagram", |b| {
        !b.find_all(&format!("#diagram-scroll .frame.selected[data-seq=\"{seq}\"]")).is_empty()
    });
    assert_eq!(drawn_seqs(&b), (1..=14).collect::<Vec<_>>());
    assert_eq!(selected_in_url(&b), Some(seq));

    // The method whose histogram shows is in the URL; hints, links and controls fit what is shown.
    b.click("#tab-timing");
    b.wait_for("the timing tab again", |b| !b.find_all("#method-stats tbody tr").is_empty());
    let shown =
        b.js("return ['axis-rows', 'follow'].map(id => document.getElementById(id).offsetParent !== null);", json!([]));
    assert_eq!(shown, json!([false, false]), "axis and follow controls on the Timing tab");
    assert!(!b.find_all("#method-stats + .hint:not(.hidden)").is_empty(), "the hint shows before a pick");
    assert!(!b.find_all("#histogram-all.hidden").is_empty(), "no 'show all' while all show");
    b.click("#method-stats tbody tr");
    b.wait_for("the pick in the URL", |b| b.current_url().contains("timing_method=session%2Fprompt"));
    assert!(!b.find_all("#method-stats + .hint.hidden").is_empty(), "the hint hides after a pick");
    assert!(b.find_all("#histogram-all.hidden").is_empty(), "'show all' offered after a pick");
    // A histogram bar lists its responses in the diagram.
    b.click("#histogram g.bucket");
    b.wait_for("the bar's responses in the diagram", |b| {
        let url = b.current_url();
        url.contains("min_latency_ms=")
            && url.contains("method=session%2Fprompt")
            && !url.contains("tab=timing")
            && drawn_seqs(b) == (1..=7).map(|i| 2 * i).collect::<Vec<_>>()
    });
}

#[test]
fn at_900_px_the_lanes_fit_beside_the_detail_and_the_trace_list_fits() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let server = Server::start(&store.db);
    let b = Browser::start();
    // Screenshots of every screen at 1400 px first, for people to look at.
    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list", |b| !b.find_all("tr.trace-row").is_empty());
    b.screenshot("1400-list");
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    b.screenshot("1400-diagram");
    b.click(".frame[data-kind=\"request\"]");
    b.wait_for("the detail", |b| !b.find_all("#detail .json").is_empty());
    b.screenshot("1400-detail");
    b.click("#tab-timing");
    b.wait_for("the timing tab", |b| !b.find_all("#method-stats tbody tr").is_empty());
    b.screenshot("1400-timing");

    b.resize(900, 900);
    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list", |b| !b.find_all("tr.trace-row").is_empty());
    b.screenshot("900-list");
    let page_w = b.num("return document.documentElement.scrollWidth;");
    assert!(page_w <= 900.0, "the trace list is {page_w} px wide at 900");
    let exit = rect(&b, "tr.trace-row td:last-child");
    assert!(exit[2] <= 900.0, "the exit column ends at {} px", exit[2]);

    b.goto(&format!("{}/traces/1?frame=1", server.url));
    b.wait_for("the diagram and detail", |b| {
        // Frame 1 is the request or elizacp's first stderr line, whichever
        // came first: either has a detail title.
        b.find_all(".frame").len() >= 9 && !b.find_all("#detail h2").is_empty()
    });
    b.screenshot("900-detail");
    let detail = rect(&b, "#detail");
    for lane in ["client", "tee", "agent"] {
        let head = rect(&b, &format!("[data-lane=\"{lane}\"]"));
        assert!(head[2] <= detail[0], "the {lane} heading ({head:?}) is under the detail panel ({detail:?})");
    }
    let sideways = b.num("const s = document.getElementById('diagram-scroll'); return s.scrollWidth - s.clientWidth;");
    assert!(sideways <= 0.0, "the diagram needs {sideways} px of sideways scrolling at 900");
    // Nothing of the diagram covers the detail panel's title.
    let covered = b.js(
        "const h = document.querySelector('#detail h2').getBoundingClientRect(); \
         const el = document.elementFromPoint(h.left + 4, h.top + h.height / 2); \
         return !!el && !el.closest('#detail');",
        json!([]),
    );
    assert_eq!(covered, json!(false), "something covers the detail panel's title");
    b.screenshot("900-diagram");
    b.click("#tab-timing");
    b.wait_for("the timing tab", |b| !b.find_all("#method-stats tbody tr").is_empty());
    b.screenshot("900-timing");

    // Narrower still, the diagram scrolls sideways: headings and lanes move together.
    b.resize(640, 800);
    b.click("#tab-diagram");
    b.wait_for("sideways scrolling", |b| {
        b.num("const s = document.getElementById('diagram-scroll'); return s.scrollWidth - s.clientWidth;") > 40.0
    });
    b.js("document.getElementById('diagram-scroll').scrollLeft = 40;", json!([]));
    b.wait_for("the agent heading over the agent lane", |b| {
        let head = rect(b, "[data-lane=\"agent\"]");
        let lane = rect(b, ".spacer > .lane-line:nth-of-type(3)");
        ((head[0] + head[2]) / 2.0 - lane[0]).abs() < 2.0
    });
}

#[test]
fn busy_spans_whose_requests_are_filtered_out_do_not_overprint() {
    let store = TempStore::new();
    import_trace(
        &store,
        "two-slow",
        &[
            c2a(0.0, json!({"jsonrpc": "2.0", "id": 1, "method": "slow/one", "params": {}})),
            c2a(10.0, json!({"jsonrpc": "2.0", "id": 2, "method": "slow/two", "params": {}})),
            a2c(61.2, json!({"jsonrpc": "2.0", "id": 2, "result": {}})),
            a2c(1230.0, json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
        ],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?min_latency_ms=10", server.url));
    b.wait_for("the two responses and their spans", |b| {
        drawn_seqs(b) == vec![3, 4] && b.find_all(".busy .busy-label").len() == 2
    });
    let labels = b.js(
        "return Array.from(document.querySelectorAll('.busy .busy-label'), e => { const r = e.getBoundingClientRect(); \
         return [e.textContent, r.top, r.bottom]; });",
        json!([]),
    );
    let labels = labels.as_array().unwrap();
    let (a, c) = (&labels[0], &labels[1]);
    let overlap = a[1].as_f64().unwrap() < c[2].as_f64().unwrap() && c[1].as_f64().unwrap() < a[2].as_f64().unwrap();
    assert!(!overlap, "busy labels overprint: {labels:?}");
    // Each span ends at its own response; none is drawn from the top of the diagram.
    for seq in [1, 2] {
        let bar = rect(&b, &format!(".busy[data-seq=\"{seq}\"]"));
        let reply = rect(&b, &format!(".frame[data-seq=\"{}\"]", if seq == 1 { 4 } else { 3 }));
        assert!(
            bar[1] > reply[1] - 40.0,
            "the span of #{seq} starts at {} px, its response's row at {}",
            bar[1],
            reply[1]
        );
    }
    b.screenshot("busy-filtered");

    // The linear axis draws gaps to scale: 1,168.8 ms at 1 s per 100 px is ~117 px, and the zoom doubles it.
    let gap = |b: &Browser| rect(b, ".frame[data-seq=\"4\"]")[1] - rect(b, ".frame[data-seq=\"3\"]")[1];
    b.goto(&format!("{}/traces/1?axis=linear&scale=1000", server.url));
    b.wait_for("the linear axis", |b| drawn_seqs(b) == vec![1, 2, 3, 4]);
    let g = gap(&b);
    assert!((110.0..125.0).contains(&g), "a 1.17 s gap is {g} px at 1 s per 100 px");
    assert!(b.texts(".gap-mark").iter().any(|t| t.contains("1.17 s")), "{:?}", b.texts(".gap-mark"));
    b.click("#zoom-in");
    b.wait_for("the scale zoomed in", |b| b.current_url().contains("scale=500") && (225.0..245.0).contains(&gap(b)));
    b.screenshot("linear-axis");
}

#[test]
fn jumping_to_a_pair_the_filters_hide_says_so_and_j_steps_on_from_there() {
    let store = TempStore::new();
    import_trace(&store, "pairs", &pairs(4, 2.0));
    let server = Server::start(&store.db);
    let b = Browser::start();
    // Requests only: the responses (2, 4, 6, 8) are hidden.
    b.goto(&format!("{}/traces/1?kind=request&frame=3", server.url));
    b.wait_for("the requests and the detail of #3", |b| {
        drawn_seqs(b) == vec![1, 3, 5, 7] && !b.find_all("#jump-pair").is_empty()
    });
    b.click("#jump-pair");
    b.wait_for("the notice that #4 is hidden", |b| {
        b.texts("#hidden-notice").iter().any(|t| t.contains("#4 is hidden by the current filters"))
    });
    assert_eq!(selected_in_url(&b), Some(4));
    assert!(!b.find_all("#hidden-mark").is_empty(), "the diagram marks where #4 would be");
    b.key(None, "j");
    b.wait_for("j selecting the request after #4", |b| selected_in_url(b) == Some(5));
    b.key(None, "k");
    b.wait_for("k going back to #3", |b| selected_in_url(b) == Some(3));
    assert!(b.find_all("#hidden-notice").is_empty(), "the notice stays after the hidden frame is left");
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
fn filters_apply_alike_show_bad_values_and_keys_and_history_work() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let server = Server::start(&store.db);
    let b = Browser::start();
    let history = |b: &Browser| b.num("return history.length;");

    // A bad value in the URL is shown, marked invalid and said to be ignored.
    b.goto(&format!("{}/traces/1?min_latency_ms=abc&dir=sideways", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    assert_eq!(b.js("return document.getElementById('filter-min-latency').value;", json!([])), json!("abc"));
    assert_eq!(b.find_all("#filter-min-latency.invalid").len(), 1);
    let rejected = b.texts("#rejected li").join(" | ");
    assert!(rejected.contains("min_latency_ms=abc") && rejected.contains("dir=sideways"), "{rejected}");
    assert!(
        b.js("return document.title;", json!([])).as_str().unwrap().contains("eliza-session"),
        "title names the trace"
    );

    // Typing into "slower than" and the session field applies after a pause, without Enter, in place.
    let before = history(&b);
    b.type_into("#filter-min-latency", "-5");
    b.wait_for("-5 rejected", |b| b.current_url().contains("min_latency_ms=-5"));
    assert_eq!(b.find_all("#filter-min-latency.invalid").len(), 1);
    b.type_into("#filter-min-latency", "0");
    b.wait_for("0 applied", |b| {
        b.current_url().contains("min_latency_ms=0") && b.find_all("#filter-min-latency.invalid").is_empty()
    });
    b.type_into("#filter-session", "no-such-session");
    b.wait_for("the session filter applied", |b| {
        b.current_url().contains("session=no-such-session")
            && b.texts("#diagram-scroll .notice").iter().any(|t| t.contains("No frame matches"))
    });
    assert_eq!(history(&b), before, "typing added history entries");
    b.click("#diagram-scroll .notice button");
    b.wait_for("filters cleared", |b| b.find_all(".frame").len() >= 9 && !b.current_url().contains('?'));

    // A search for literal percent escapes stays as typed through the URL and a reload.
    b.type_into("#search", "%41");
    b.key(Some("#search"), "Enter");
    b.wait_for("the search in the URL", |b| b.current_url().contains("q=%2541"));
    b.goto(&b.current_url());
    b.wait_for("the search after reload", |b| {
        b.js("const e = document.getElementById('search'); return e && e.value;", json!([])) == json!("%41")
    });
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);

    // Frames are focusable options; a click selects and adds a history entry; Back goes to the previous one.
    assert!(b.find_all(".frame[role=\"option\"][tabindex=\"0\"]").len() >= 9);
    let before = history(&b);
    b.click(".frame[data-seq=\"1\"]");
    b.wait_for("#1 selected", |b| selected_in_url(b) == Some(1));
    b.click(".frame[data-seq=\"2\"]");
    b.wait_for("#2 selected", |b| selected_in_url(b) == Some(2));
    assert_eq!(history(&b), before + 2.0);
    b.js("history.back();", json!([]));
    b.wait_for("back at #1", |b| {
        selected_in_url(b) == Some(1) && !b.find_all(".frame.selected[data-seq=\"1\"]").is_empty()
    });

    // Keys: End, Home, Enter on a focused frame, Esc, and / for the search.
    let last =
        b.num("return Math.max(...Array.from(document.querySelectorAll('.frame'), e => +e.dataset.seq));") as i64;
    b.key(None, "End");
    b.wait_for("End selecting the last frame", |b| selected_in_url(b) == Some(last));
    b.key(None, "Home");
    b.wait_for("Home selecting the first frame", |b| selected_in_url(b) == Some(1));
    b.js("document.querySelector('.frame[data-seq=\"3\"]').focus();", json!([]));
    b.key(Some(".frame[data-seq=\"3\"]"), "Enter");
    b.wait_for("Enter selecting the focused frame", |b| selected_in_url(b) == Some(3));
    // Stepping from a focused row takes the focus along.
    b.key(None, "j");
    b.wait_for("j selecting #4 and focusing it", |b| {
        selected_in_url(b) == Some(4) && b.js("return document.activeElement.dataset.seq;", json!([])) == json!("4")
    });
    // Shift+click measures the time from the selected frame; the selection stays.
    b.js(
        "document.querySelector('.frame[data-seq=\"7\"]').dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true}));",
        json!([]),
    );
    b.wait_for("the time from #4 to #7", |b| {
        b.texts("#measure").iter().any(|t| t.contains("#4 → #7:")) && !b.find_all("#measure-band").is_empty()
    });
    assert_eq!(selected_in_url(&b), Some(4));
    b.key(None, "Escape");
    b.wait_for("Esc clearing the selection", |b| selected_in_url(b).is_none());
    b.key(None, "/");
    assert_eq!(b.js("return document.activeElement.id;", json!([])), json!("search"));
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

#[test]
fn the_detail_shows_stderr_once_without_escapes_and_json_in_wire_order() {
    let store = TempStore::new();
    import_trace(
        &store,
        "detail",
        &[
            Msg(
                0.0,
                "client_to_agent",
                r#"{"zeta":1,"jsonrpc":"2.0","id":1,"method":"x/y","params":{"b":2,"a":1}}"#.to_owned(),
            ),
            stderr_line(1.0, "\u{1b}[31mERROR\u{1b}[0m something failed"),
            Msg(2.0, "agent_to_client", "this is not json".to_owned()),
            c2a(3.0, json!({"jsonrpc": "2.0", "id": LONG_ID, "method": LONG_METHOD, "params": {}})),
            a2c(
                4.0,
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-one", "update": {}}}),
            ),
            a2c(
                5.0,
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-two", "update": {}}}),
            ),
        ],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?frame=2", server.url));
    b.wait_for("the stderr detail", |b| !b.find_all("#detail pre.line").is_empty());
    assert_eq!(b.texts("#detail h3"), ["Line"], "one section for a stderr line");
    let line = b.texts("#detail pre.line").join("");
    assert_eq!(line, "ERROR something failed\n");
    b.click(".frame[data-seq=\"3\"]");
    b.wait_for("the invalid frame's detail", |b| b.texts("#detail").iter().any(|t| t.contains("Not JSON")));
    assert_eq!(b.texts("#detail h3"), ["Raw"], "no JSON section for text that is not JSON");
    b.click(".frame[data-seq=\"1\"]");
    b.wait_for("the JSON tree", |b| !b.find_all("#detail .json .jk").is_empty());
    let keys = b.texts("#detail .json .jk");
    assert_eq!(keys, ["\"zeta\"", "\"jsonrpc\"", "\"id\"", "\"method\"", "\"params\"", "\"b\"", "\"a\""], "wire order");

    // Long names and ids are cut with an ellipsis and whole in their tooltips; the method list stays narrow.
    b.wait_for("the methods in the filter", |b| b.find_all("#filter-method option").len() > 2);
    let width = b.num("return document.getElementById('filter-method').offsetWidth;");
    assert!(width <= 222.0, "the method list is {width} px wide");
    let id = b.js(
        "const e = document.querySelector('.frame[data-seq=\"4\"] .rpc-id'); \
         return [e.title, getComputedStyle(e).textOverflow, e.scrollWidth > e.clientWidth];",
        json!([]),
    );
    assert_eq!(id, json!([format!("id \"{LONG_ID}\""), "ellipsis", true]));
    let names = b.js("return document.querySelector('.frame[data-seq=\"4\"] .names').title;", json!([]));
    assert_eq!(names, json!(LONG_METHOD));
    // Interleaved sessions get a colour each.
    let colours = b.js(
        "return Array.from(document.querySelectorAll('.frame .sess'), e => getComputedStyle(e).backgroundColor);",
        json!([]),
    );
    let colours = colours.as_array().unwrap();
    assert!(colours.len() == 2 && colours[0] != colours[1], "{colours:?}");

    // The method in the facts filters by it.
    b.click("#detail button.fact-filter[data-filter=\"method\"]");
    b.wait_for("the method filter from the detail", |b| {
        b.current_url().contains("method=x%2Fy") && drawn_seqs(b) == vec![1]
    });

    // Search words are marked in the diagram's previews.
    b.goto(&format!("{}/traces/1?q=something", server.url));
    b.wait_for("the stderr line found", |b| b.texts(".frame .preview mark").iter().any(|t| t == "something"));
}

const LONG_ID: &str = "an-id-that-is-far-too-long-to-show-whole-in-the-diagram-0123456789abcdef";
const LONG_METHOD: &str = "_vendor/extensions/very/long/method/name/that/goes/on/and/on/and/on/for/ever";

#[test]
fn a_32_mib_frame_shows_a_bounded_preview_quickly_and_secrets_stay_masked() {
    let store = TempStore::new();
    let huge = "0123456789abcdef".repeat(2 * 1024 * 1024);
    let big = "x".repeat(300 * 1024);
    let prompt = |id: i64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}})
    };
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w", "mcpServers": [
        {"type": "http", "name": "web", "url": "https://host/mcp?api_key=SECRET2",
         "headers": [{"name": "Authorization", "value": "Bearer SECRET"}]}]}});
    let input = format!("{}\n{new}\n{}\n", prompt(1, &huge), prompt(3, &big));
    let out = run_with_input(tee_command(&store.db, &[], &as_strs(&sh("cat >/dev/null"))), input.into_bytes());
    assert!(out.status.success());
    // acp-tee exits when the run ends; its recorder may still be storing.
    store.only_trace();
    let server = Server::start(&store.db);
    let b = Browser::start();

    let started = std::time::Instant::now();
    b.goto(&format!("{}/traces/1?frame=1", server.url));
    b.wait_for("the cut frame's preview", |b| !b.find_all("#detail #cut-notice").is_empty());
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "the detail took {took:?}");
    assert!(b.find_all("#detail .json").is_empty(), "no JSON tree for a cut frame");
    let shown = b.num("return document.querySelector('#detail pre.raw').textContent.length;");
    assert!(shown as usize <= acp_tee_shared::api::DETAIL_MAX_BYTES, "{shown} characters shown");
    let href = b.js("return document.getElementById('download-raw').getAttribute('href');", json!([]));
    assert_eq!(href, json!("/api/traces/1/frames/1/raw"));

    // "show all" fetches the whole frame, still as text.
    b.goto(&format!("{}/traces/1?frame=3", server.url));
    b.wait_for("the second cut frame", |b| !b.find_all("#detail #show-all").is_empty());
    b.click("#show-all");
    b.wait_for("the whole frame", |b| b.texts("#cut-notice").iter().any(|t| t.starts_with("All ")));
    let shown = b.num("return document.querySelector('#detail pre.raw').textContent.length;");
    assert!(shown as usize > big.len(), "{shown} characters shown");

    // Secrets are masked in the detail as in exports.
    b.goto(&format!("{}/traces/1?frame=2", server.url));
    b.wait_for("the session/new detail", |b| !b.find_all("#detail .json .jk").is_empty());
    let text = b.texts("#detail").join(" ");
    assert!(!text.contains("SECRET") && text.contains("[REDACTED]"), "{text}");
}
