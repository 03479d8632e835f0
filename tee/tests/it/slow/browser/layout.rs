//! The diagram's layout: every row after the timing tab, lanes beside the
//! detail at 900 px, busy spans of filtered requests.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;

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
    // Trace 2: methods with long names, whose ids have less room beside them.
    let long = |t: f64, id: i64, method: &str| {
        a2c(t, json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"sessionId": "s1"}}))
    };
    let answer = |t: f64, id: i64| c2a(t, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    import_trace(
        &store,
        "long-methods",
        &[
            long(0.0, 1, "session/request_permission"),
            answer(1.0, 1),
            long(2.0, 12345, "fs/write_text_file"),
            answer(3.0, 12345),
            long(4.0, 7, "terminal/wait_for_exit"),
            answer(5.0, 7),
        ],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    // Screenshots of every screen at 1400 px first, for people to look at.
    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list", |b| !b.find_all("tr.trace-row").is_empty());
    b.screenshot("1400-list");
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    b.screenshot("1400-diagram");
    // At 1400 px the toolbar is one line, as it always was.
    let mids = b.js(
        &format!("{TOOLBAR_ITEMS} return items.map(e => {{ const r = e.getBoundingClientRect(); return (r.top + r.bottom) / 2; }});"),
        json!([]),
    );
    let mids: Vec<f64> = mids.as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
    assert!(
        mids.len() >= 8 && mids.iter().all(|m| (m - mids[0]).abs() < 3.0),
        "the toolbar at 1400 px is not one line: {mids:?}"
    );
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

    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    fits_at_900(&b);
    let ids = b.find_all("#diagram-scroll .frame .rpc-id").len();
    assert!(ids >= 6, "{ids} id labels drawn at 900 px, with room for all six");
    b.goto(&format!("{}/traces/1?frame=1", server.url));
    b.wait_for("the diagram and detail", |b| {
        // Frame 1 is the request or elizacp's first stderr line, whichever
        // came first: either has a detail title.
        b.find_all(".frame").len() >= 9 && !b.find_all("#detail h2").is_empty()
    });
    b.screenshot("900-detail");
    fits_at_900(&b);
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
    for frame in ["", "?frame=1"] {
        b.goto(&format!("{}/traces/2{frame}", server.url));
        b.wait_for("the long method names", |b| drawn_seqs(b) == (1..=6).collect::<Vec<_>>());
        fits_at_900(&b);
        // Every id is drawn; a name too long for the room left is cut short.
        assert_eq!(b.find_all("#diagram-scroll .frame .rpc-id").len(), 6, "ids beside long names");
    }
    b.screenshot("900-long-methods");
    b.goto(&format!("{}/traces/1?frame=1", server.url));
    b.wait_for("the diagram and detail", |b| b.find_all(".frame").len() >= 9 && !b.find_all("#detail h2").is_empty());
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

/// The toolbar's shown buttons, links and labels, as `items` in a script.
const TOOLBAR_ITEMS: &str =
    "const items = Array.from(document.querySelectorAll('.toolbar button, .toolbar a.button, .toolbar label')) \
    .filter(e => e.offsetParent !== null);";

/// A trace page at 900 px: the page does not scroll sideways, every toolbar button is inside the window,
/// "collapse chunks" is one line, and no JSON-RPC id label runs into its row's method name.
fn fits_at_900(b: &Browser) {
    let page = b.js("const d = document.documentElement; return [d.scrollWidth, d.clientWidth];", json!([]));
    let (scroll_w, client_w) = (page[0].as_f64().unwrap(), page[1].as_f64().unwrap());
    assert!(scroll_w <= client_w, "the trace page scrolls sideways at 900 px: {scroll_w} > {client_w}");
    let outside = b.js(
        &format!(
            "{TOOLBAR_ITEMS} return items.filter(e => {{ const r = e.getBoundingClientRect(); \
             return r.left < 0 || r.right > document.documentElement.clientWidth; }}).map(e => e.textContent);"
        ),
        json!([]),
    );
    assert_eq!(outside, json!([]), "toolbar items outside the window at 900 px");
    let lines = b.num(
        "const l = document.getElementById('collapse').parentElement; \
         const t = Array.from(l.childNodes).find(n => n.nodeType === 3 && n.textContent.includes('collapse chunks')); \
         const r = document.createRange(); r.selectNodeContents(t); return r.getClientRects().length;",
    );
    assert_eq!(lines, 1.0, "'collapse chunks' takes {lines} lines at 900 px");
    let overlaps = b.js(
        "const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; \
         return Array.from(document.querySelectorAll('#diagram-scroll .frame')).flatMap(f => { \
           const id = f.querySelector('.rpc-id'), name = f.querySelector('.names .method, .names .label'); \
           if (!id || !name) return []; \
           const a = id.getBoundingClientRect(), m = name.getBoundingClientRect(), box = name.parentElement.getBoundingClientRect(); \
           const n = {left: Math.max(m.left, box.left), right: Math.min(m.right, box.right), top: m.top, bottom: m.bottom}; \
           return hit(a, n) ? [[f.dataset.seq, id.textContent, name.textContent, a.left, a.right, n.left, n.right]] : []; });",
        json!([]),
    );
    assert_eq!(
        overlaps,
        json!([]),
        "id labels over method names at 900 px (seq, id, name, id's and name's left and right)"
    );
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
fn runs_of_streamed_chunks_collapse_into_one_row_and_keys_step_over_them() {
    let store = TempStore::new();
    let update = |t: f64, kind: &str, text: &str| {
        a2c(
            t,
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
                "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}}}}),
        )
    };
    let mut msgs = vec![c2a(
        0.0,
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
            "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}}),
    )];
    // #2-#6 five message chunks, #7 a tool call, #8-#10 three thought chunks, #11 the answer.
    let pieces = ["Hel", "lo wor", "ld. ", " ", "\nHow are you?"];
    msgs.extend(pieces.iter().zip(1..).map(|(text, i)| update(f64::from(i), "agent_message_chunk", text)));
    msgs.push(a2c(
        7.0,
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1",
            "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "status": "pending"}}}),
    ));
    msgs.extend((0..3).map(|i| update(8.0 + f64::from(i), "agent_thought_chunk", "hmm ")));
    msgs.push(a2c(12.0, json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})));
    import_trace(&store, "chunks", &msgs);
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/traces/1?collapse=chunks&frame=2", server.url));
    b.wait_for("one row per run", |b| drawn_seqs(b) == vec![1, 2, 7, 8, 11]);
    let runs = b.texts("#diagram-scroll .frame .run");
    assert_eq!(runs, ["×5", "×3"]);
    // Each run reads as its chunks' text joined, spaces where the text had them (not its first chunk's).
    let texts = b.js(
        "return ['2', '8'].map(s => document.querySelector(`.frame[data-seq='${s}'] .preview`).textContent);",
        json!([]),
    );
    assert_eq!(texts, json!(["Hello world. How are you?", "hmm hmm hmm"]));
    b.screenshot("chunks-joined");
    assert!(b.js("return document.getElementById('collapse').checked;", json!([])).as_bool().unwrap());
    // The rows keep the one-row spacing: the tool call sits right under the message run.
    let (run, tool) = (rect(&b, ".frame[data-seq='2']"), rect(&b, ".frame[data-seq='7']"));
    assert!((tool[1] - run[3]).abs() < 1.0, "message run {run:?}, tool call {tool:?}");
    b.key(None, "j");
    b.wait_for("j stepping over the run to the tool call", |b| selected_in_url(b) == Some(7));
    b.key(None, "k");
    b.wait_for("k stepping back to the run's first chunk", |b| selected_in_url(b) == Some(2));

    // Unticked: every frame has its row again, and the URL says so.
    b.click("#collapse");
    b.wait_for("every row", |b| drawn_seqs(b) == (1..=11).collect::<Vec<_>>());
    assert!(!b.current_url().contains("collapse="), "{}", b.current_url());
    assert!(b.find_all("#diagram-scroll .frame .run").is_empty());
}

/// One slow response among 400 fast ones: its histogram bar is tall enough to see and click, and the
/// filter it sets reads as a person would write it (not `min_latency_ms=2147.483648`).
#[test]
fn a_single_outliers_histogram_bar_is_visible_and_its_filter_reads_cleanly() {
    let store = TempStore::new();
    let mut msgs = pairs(400, 1.0);
    let t = 400.0 * 6.0;
    msgs.push(c2a(t, json!({"jsonrpc": "2.0", "id": 999, "method": "session/prompt", "params": {}})));
    msgs.push(a2c(t + 2200.0, json!({"jsonrpc": "2.0", "id": 999, "result": {"stopReason": "end_turn"}})));
    import_trace(&store, "outlier", &msgs);
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=timing", server.url));
    b.wait_for("the histogram", |b| !b.find_all("#histogram g.bucket").is_empty());
    let last = "#histogram g.bucket[data-count=\"1\"]:last-of-type";
    let height = b
        .js("return document.querySelector(arguments[0] + ' rect.bar').getBoundingClientRect().height;", json!([last]));
    assert!(height.as_f64().unwrap() >= 2.0, "the outlier's bar is {height} px tall");
    b.click(last);
    b.wait_for("the outlier alone in the diagram", |b| drawn_seqs(b) == [802]);
    let url = b.current_url();
    let value = url.split("min_latency_ms=").nth(1).unwrap().split('&').next().unwrap();
    let digits = value.chars().filter(char::is_ascii_digit).collect::<String>();
    assert!(digits.trim_start_matches('0').trim_end_matches('0').len() <= 3, "min_latency_ms={value}");
    assert!(value.parse::<f64>().unwrap() <= 2200.0, "min_latency_ms={value}");
}

/// At 1400 and 1200 px no column of the trace list but the name and command is cut: the start time, the
/// duration, the counts, the status and the exit ("stopped (SIGTERM)") read whole.
#[test]
fn the_trace_lists_columns_read_whole_at_1400_and_1200_px() {
    let store = TempStore::new();
    import_trace(&store, "a-trace-with-a-rather-long-name-for-the-list", &pairs(3, 1.0));
    // A run acp-tee stopped with SIGTERM after the client left.
    let file = store.dir.path().join("stopped.ndjson");
    let header = json!({"format": "acp-tee-trace", "version": 1, "trace": {
        "id": 1, "name": "stopped", "command": ["some-agent", "--with", "flags"], "mode": "wrap",
        "started_at": "2026-11-30T10:00:00.000000Z", "ended_at": "2026-11-30T10:01:05.000000Z",
        "exit_code": null, "exit_signal": 15,
        "end_reason": "the client closed its input; the agent was stopped after the grace period (SIGTERM)",
        "frame_count": 0, "error_count": 0, "missing_frames": 0}});
    std::fs::write(&file, format!("{header}\n")).unwrap();
    let out = std::process::Command::new(bin())
        .args(["import", "--db", store.db.to_str().unwrap(), file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let server = Server::start(&store.db);
    let b = Browser::start();
    for width in [1400, 1200] {
        b.resize(width, 900);
        b.goto(&format!("{}/", server.url));
        b.wait_for("both traces", |b| b.find_all("tr.trace-row").len() == 2);
        assert!(b.texts("tr.trace-row td.exit").iter().any(|t| t.contains("stopped (SIGTERM)")));
        let cut = b.js(
            "return Array.from(document.querySelectorAll('tr.trace-row td'))
                .filter(td => !td.classList.contains('name') && !td.classList.contains('cmd'))
                .filter(td => td.scrollWidth > td.clientWidth)
                .map(td => td.className + ': ' + td.textContent);",
            json!([]),
        );
        assert_eq!(cut, json!([]), "cells cut at {width} px");
        b.screenshot(&format!("{width}-list-columns"));
    }
}

/// On a million frames the scroll area is capped (`MAX_SCROLL_H`) and a scrolled pixel stands for several
/// of the layout's: one wheel notch skipped 13 rows. Now it moves the rows as far as on a small trace
/// (100 px: three or four rows).
#[test]
fn one_wheel_notch_moves_a_million_frames_by_a_few_rows() {
    let server = Server::start(million());
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?frame=500000", server.url));
    // Both rows whose pitch is measured below.
    b.wait_for("frames 500000 and 500001 drawn", |b| {
        !b.find_all(".frame[data-seq=\"500000\"]").is_empty() && !b.find_all(".frame[data-seq=\"500001\"]").is_empty()
    });
    let first_visible = |b: &Browser| {
        b.num(
            "const box = document.getElementById('diagram-scroll').getBoundingClientRect();
             const rows = Array.from(document.querySelectorAll('#diagram-scroll .frame'))
                 .filter(e => e.getBoundingClientRect().top >= box.top + 30);
             return Math.min(...rows.map(e => +e.dataset.seq));",
        )
    };
    let area = rect(&b, "#diagram-scroll");
    let (x, y) = ((area[0] + area[2]) / 2.0, (area[1] + area[3]) / 2.0);
    let scroll_top = |b: &Browser| b.num("return document.getElementById('diagram-scroll').scrollTop;");
    let (before, top0) = (first_visible(&b), scroll_top(&b));
    // Layout pixels per scrolled pixel, from what the page shows: the rows' pitch, the spacer's height.
    let row_h = b.num(
        "const a = document.querySelector('#diagram-scroll .frame[data-seq=\"500000\"]').getBoundingClientRect();
         const b = document.querySelector('#diagram-scroll .frame[data-seq=\"500001\"]').getBoundingClientRect();
         return b.top - a.top;",
    );
    let (spacer, view) = (
        b.num("return document.querySelector('#diagram-scroll .spacer').offsetHeight;"),
        b.num("return document.getElementById('diagram-scroll').clientHeight;"),
    );
    let ratio = (big::FRAMES as f64 * row_h - view) / (spacer - view);
    assert!(ratio > 2.0, "the scroll area is not capped at a million frames (ratio {ratio})");
    for _ in 0..3 {
        b.wheel(x, y, 100.0);
    }
    let rows = (scroll_top(&b) - top0) * ratio / row_h;
    assert!((6.0..=15.0).contains(&rows), "three notches moved the layout by {rows} rows");
    // And the diagram follows: the rows now at the top are those.
    b.wait_for("the rows three notches further", |b| (first_visible(b) - before - rows).abs() <= 2.0);
}

/// Landing inside the idle gap on the linear axis (60 s drawn to scale, far taller than the view) shows no
/// row: a note says which frames the gap lies between, how long it is and how far into it the view is, and
/// takes you to either side.
#[test]
fn inside_a_long_idle_gap_the_linear_axis_says_where_the_view_is() {
    let server = Server::start(million());
    let b = Browser::start();
    let (before, after) = (big::GAP_AFTER, big::GAP_AFTER + 1);
    b.goto(&format!("{}/traces/1?axis=linear&frame={before}", server.url));
    // The rows whose box shows in the scroll area below the lane headings.
    let in_sight = |b: &Browser| {
        b.js(
            "const box = document.getElementById('diagram-scroll').getBoundingClientRect();
             return Array.from(document.querySelectorAll('#diagram-scroll .frame')).filter(e => {
                 const r = e.getBoundingClientRect(); return r.bottom > box.top + 32 && r.top < box.bottom; })
                 .map(e => +e.dataset.seq);",
            json!([]),
        )
    };
    let sees = |b: &Browser, seq: i64| in_sight(b).as_array().unwrap().contains(&json!(seq));
    // The page after the gap arriving adds its 60 s to the layout (and, the scroll area being capped, changes
    // what a scrolled pixel stands for): the frame landed on stays in sight, and no idle note shows beside it.
    // The rows' height (`data-layout-h`, layout pixels) holds the gap once that page is in: a row per frame,
    // the other gaps being shorter than a row.
    let gap_in = |b: &Browser| {
        b.num("const s = document.querySelector('#diagram-scroll .spacer'); return s ? +s.dataset.layoutH : 0;")
            > big::FRAMES as f64 * 40.0 + big::GAP_MS as f64 - 100.0
    };
    b.wait_for("the page after the gap", gap_in);
    b.wait_for("the frame landed on in sight, and no idle note", |b| {
        sees(b, before) && b.find_all("#idle-note").is_empty()
    });
    let into = |b: &Browser| -> f64 {
        let note = b.texts("#idle-note span").join("");
        let rest = note.split(" · this view is ").nth(1).unwrap_or_else(|| panic!("{note}"));
        rest.split(" s into it").next().unwrap().parse().unwrap_or_else(|_| panic!("{note}"))
    };
    // 4,000 scrolled pixels are at least 4,000 of the layout's (1 px per ms at the default scale), and at most
    // what the capped scroll area stands for: well inside the 60,000 px of the gap.
    b.js("document.getElementById('diagram-scroll').scrollTop += 4000;", json!([]));
    b.wait_for("the idle note", |b| !b.find_all("#idle-note").is_empty());
    assert_eq!(in_sight(&b), json!([]), "rows in sight beside the idle note");
    let note = b.texts("#idle-note span").join("");
    assert!(
        note.starts_with(&format!("Idle: nothing between #{before} and #{after} for 1m 00s · this view is ")),
        "{note}"
    );
    let first = into(&b);
    assert!((4.0..56.0).contains(&first), "{note}");
    b.screenshot("idle-note");
    // Further down, further in.
    b.js("document.getElementById('diagram-scroll').scrollTop += 1000;", json!([]));
    b.wait_for("the view further into the gap", |b| into(b) > first);
    b.click("#idle-after");
    b.wait_for("the frame after the gap selected and in sight", |b| {
        selected_in_url(b) == Some(after) && sees(b, after)
    });
    assert!(b.find_all("#idle-note").is_empty(), "the idle note with #{after} in sight");
}
