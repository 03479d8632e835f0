//! The range tools: a drag down the diagram's time column or a shift+drag on the overview strip selects a
//! range; its panel says what the server adds up for it; "Filter to it" cuts the view to it, "Zoom to it"
//! scales the linear axis to it; ctrl+wheel zooms around the pointer; shift+click still measures. On the
//! million-frame trace (across its idle gap, and most of it from the strip) and on a real recorded session
//! at 1400 and 900 px.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::{json, Value};

/// `GET path` from the page (the server's own answer, as the app reads it), and how long it took in ms.
fn api(b: &Browser, path: &str) -> (Value, f64) {
    let v = b.js(
        "const t = performance.now(); const r = new XMLHttpRequest(); r.open('GET', arguments[0], false); r.send(); \
         return [JSON.parse(r.responseText), performance.now() - t];",
        json!([path]),
    );
    (v[0].clone(), v[1].as_f64().unwrap())
}

/// Drags down the time column from frame `from`'s row to frame `to`'s, as pointer events where the rows are.
fn drag_time_column(b: &Browser, from: i64, to: i64) {
    b.js(
        "const [from, to] = arguments; \
         const at = seq => { const r = document.querySelector(`#diagram-scroll .frame[data-seq=\"${seq}\"]`).getBoundingClientRect(); \
                             return { clientX: r.left + 30, clientY: r.top + r.height / 2, bubbles: true, pointerId: 1, button: 0 }; }; \
         const [a, z] = [at(from), at(to)]; \
         document.elementFromPoint(a.clientX, a.clientY).dispatchEvent(new PointerEvent('pointerdown', a)); \
         const mid = { ...a, clientY: (a.clientY + z.clientY) / 2 }; \
         document.elementFromPoint(mid.clientX, mid.clientY).dispatchEvent(new PointerEvent('pointermove', mid)); \
         document.elementFromPoint(z.clientX, z.clientY).dispatchEvent(new PointerEvent('pointermove', z)); \
         document.elementFromPoint(z.clientX, z.clientY).dispatchEvent(new PointerEvent('pointerup', z));",
        json!([from, to]),
    );
}

/// A query value of the page's URL.
fn url_value(b: &Browser, key: &str) -> Option<String> {
    let url = b.current_url();
    let query = url.split_once('?')?.1.to_owned();
    query.split('&').find_map(|p| p.strip_prefix(&format!("{key}=")).map(str::to_owned))
}

/// The text of the first element matching `css` (empty when there is none).
fn text(b: &Browser, css: &str) -> String {
    b.texts(css).into_iter().next().unwrap_or_default()
}

/// The panel's numbers: frames, first and last seq, duration in ns, requests, errors.
fn panel(b: &Browser) -> Option<(u64, String, i64, u64, u64)> {
    let n = |css: &str| text(b, css).replace(',', "").parse::<u64>().ok();
    let ns = b.js("const d = document.getElementById('range-duration'); return d ? +d.dataset.ns : null;", json!([]));
    Some((n("#range-frames")?, text(b, "#range-ends"), ns.as_i64()?, n("#range-requests")?, n("#range-errors")?))
}

/// What the panel should say for the range API's answer `r`.
fn expected(r: &Value) -> (u64, String, i64, u64, u64) {
    let ends = format!("#{} – #{}", r["first_seq"], r["last_seq"]);
    let n = |k: &str| r[k].as_u64().unwrap();
    (n("frames"), ends, r["duration_ns"].as_i64().unwrap(), n("requests"), n("errors"))
}

/// The methods the panel lists with their counts.
fn panel_methods(b: &Browser) -> Vec<(String, u64)> {
    let v = b.js(
        "return Array.from(document.querySelectorAll('#range-methods tr:not(.others)'), \
         tr => [tr.cells[0].textContent, +tr.cells[1].textContent.replace(/,/g, '')]);",
        json!([]),
    );
    v.as_array().unwrap().iter().map(|p| (p[0].as_str().unwrap().to_owned(), p[1].as_u64().unwrap())).collect()
}

/// The top of frame `seq`'s row relative to the top of the rows in view (under the lane headings).
fn row_top_in_view(b: &Browser, seq: i64) -> Option<f64> {
    b.js(
        "const row = document.querySelector(`#diagram-scroll .frame[data-seq=\"${arguments[0]}\"]`); \
         if (!row) return null; \
         return row.getBoundingClientRect().top - document.getElementById('diagram-scroll').getBoundingClientRect().top - 32;",
        json!([seq]),
    )
    .as_f64()
}

#[test]
fn on_a_million_frames_a_range_across_the_idle_gap_is_added_up_filtered_to_and_zoomed_to() {
    use big::GAP_AFTER;
    let server = Server::start(million());
    let b = Browser::start();
    b.resize(1400, 900);
    b.goto(&format!("{}/traces/1?frame={GAP_AFTER}", server.url));
    let (first, last) = (GAP_AFTER - 2, GAP_AFTER + 2);
    b.wait_for("the rows around the gap", |b| {
        let drawn = drawn_seqs(b);
        (first..=last).all(|s| drawn.contains(&s))
    });

    // A drag down the time column selects the five frames around the 60 s gap.
    drag_time_column(&b, first, last);
    b.wait_for("the selection in the URL", |b| url_value(b, "sel") == Some(format!("{first}-{last}")));
    assert_eq!(selected_in_url(&b), Some(GAP_AFTER), "a drag on the time column selects no frame");
    let (r, _) = api(&b, &format!("/api/traces/1/range?from={first}&to={last}"));
    b.wait_for("the panel's numbers", |b| panel(b) == Some(expected(&r)));
    // Frames 1 ms apart but for the gap: 4 ms and 60 s.
    assert_eq!(r["frames"], 5);
    assert_eq!(r["duration_ns"], (4 + big::GAP_MS) * 1_000_000);
    assert_eq!(text(&b, "#range-duration"), "1m 00s");
    assert!(text(&b, "#range-band").contains(&format!("#{first} – #{last}")), "{}", text(&b, "#range-band"));
    b.screenshot("range-million-1400");

    // Shift+click still measures from the selected frame.
    b.js(
        "document.querySelector(`.frame[data-seq=\"${arguments[0]}\"]`).dispatchEvent(new MouseEvent('click', {bubbles: true, shiftKey: true}));",
        json!([last]),
    );
    b.wait_for("the measure", |b| text(b, "#measure").contains(&format!("#{GAP_AFTER} → #{last}:")));

    // Zoom to it: the linear axis, scaled so the 60 s fill the height, the range's first row at the top.
    b.click("#range-zoom");
    b.wait_for("the linear axis at a new scale", |b| {
        url_value(b, "axis").as_deref() == Some("linear") && url_value(b, "scale").is_some()
    });
    let scale: f64 = url_value(&b, "scale").unwrap().parse().unwrap();
    let view_h = b.num("return document.getElementById('diagram-scroll').clientHeight;") - 32.0;
    b.wait_for("the range's first row at the top", |b| row_top_in_view(b, first).is_some_and(|y| y.abs() <= 3.0));
    // Its last row at the bottom: the gap takes what the five rows leave of the height (give or take the few
    // layout pixels a scrolled pixel stands for on a million rows).
    let bottom = row_top_in_view(&b, last).unwrap() + 40.0;
    assert!((bottom - view_h).abs() <= 5.0, "the last row ends at {bottom} of {view_h} px");
    b.screenshot("range-million-zoomed");

    // Ctrl+wheel over the row before the gap zooms in around it: it stays under the pointer.
    let scroll = rect(&b, "#diagram-scroll");
    let before = row_top_in_view(&b, GAP_AFTER).unwrap();
    let (x, y) = (scroll[0] + 300.0, scroll[1] + 32.0 + before + 20.0);
    b.ctrl_wheel(x, y, -300.0);
    b.wait_for("a finer scale", |b| {
        url_value(b, "scale").and_then(|s| s.parse::<f64>().ok()).is_some_and(|s| s < scale * 0.9)
    });
    b.wait_for("the row still under the pointer", |b| {
        row_top_in_view(b, GAP_AFTER).is_some_and(|t| (t - before).abs() <= 3.0)
    });
    let zoom = b.num("return window.visualViewport.scale;");
    assert_eq!(zoom, 1.0, "the page itself was not zoomed");
    // And out again, past where it was.
    let finer: f64 = url_value(&b, "scale").unwrap().parse().unwrap();
    b.ctrl_wheel(x, y, 600.0);
    b.wait_for("a coarser scale", |b| {
        url_value(b, "scale").and_then(|s| s.parse::<f64>().ok()).is_some_and(|s| s > finer * 2.0)
    });
    b.wait_for("the row under the pointer again", |b| {
        row_top_in_view(b, GAP_AFTER).is_some_and(|t| (t - before).abs() <= 3.0)
    });

    // Filter to it: the view holds the five frames, the filter bar says so, the URL has from and to.
    b.click("#range-filter");
    b.wait_for("the range as a filter", |b| {
        url_value(b, "from") == Some(first.to_string()) && url_value(b, "to") == Some(last.to_string())
    });
    b.wait_for("only the range drawn", |b| drawn_seqs(b) == (first..=last).collect::<Vec<_>>());
    b.wait_for("the count of the range", |b| text(b, ".filters .matching") == "5 frames");
    assert!(text(&b, "#filter-range").contains(&format!("#{first}–#{last}")));
    let height = b.num("return document.querySelector('#diagram-scroll .spacer').offsetHeight;");
    assert!(height < 100_000.0, "the rows of five frames are {height} px tall");
    b.screenshot("range-million-filtered");
    // Its ✕ gives the whole trace back; Esc clears the selection.
    b.click("#filter-range button");
    b.wait_for("every frame again", |b| text(b, ".filters .matching") == "1,000,000 frames");
    assert_eq!((url_value(&b, "from"), url_value(&b, "to")), (None, None));
    b.key(None, "Escape");
    b.wait_for("no selection", |b| url_value(b, "sel").is_none() && b.find_all("#range-panel").is_empty());

    // A shift+drag on the overview strip selects most of the trace; the server adds it up quickly.
    b.wait_for("the strip", |b| !b.find_all("#overview .ov-hit").is_empty());
    b.js(
        "const svg = document.querySelector('#overview svg'); const r = svg.getBoundingClientRect(); \
         const at = f => ({ clientX: r.left + f * r.width, clientY: r.top + r.height / 2, bubbles: true, pointerId: 1, shiftKey: true }); \
         svg.dispatchEvent(new PointerEvent('pointerdown', at(0.001))); \
         svg.dispatchEvent(new PointerEvent('pointermove', at(0.5))); \
         svg.dispatchEvent(new PointerEvent('pointermove', at(0.999))); \
         svg.dispatchEvent(new PointerEvent('pointerup', at(0.999)));",
        json!([]),
    );
    b.wait_for("a range from the strip", |b| url_value(b, "sel").is_some());
    let sel = url_value(&b, "sel").unwrap();
    let (a, z) = sel.split_once('-').unwrap();
    let (a, z): (i64, i64) = (a.parse().unwrap(), z.parse().unwrap());
    assert!(a <= 1_000 && z >= big::FRAMES - 1_000, "most of the trace: {sel}");
    let (r, ms) = api(&b, &format!("/api/traces/1/range?from={a}&to={z}"));
    eprintln!("the range {a}..={z} ({} frames) added up in {ms:.0} ms", r["frames"]);
    b.wait_for("the panel of most of the trace", |b| panel(b) == Some(expected(&r)));
    assert_eq!(r["frames"].as_i64().unwrap(), z - a + 1, "a gap-free trace");
    let listed: u64 = panel_methods(&b).iter().map(|m| m.1).sum::<u64>()
        + r["other_frames"].as_u64().unwrap()
        + r["no_method"].as_u64().unwrap();
    assert_eq!(listed, r["frames"].as_u64().unwrap(), "every frame is under a method, the others or none");
    assert!(!b.find_all("#overview-range").is_empty(), "the strip marks the range");
    let (whole, ms) = api(&b, &format!("/api/traces/1/range?from=1&to={}", big::FRAMES));
    eprintln!("the whole trace ({} frames) added up in {ms:.0} ms", whole["frames"]);
    assert_eq!(whole["frames"].as_i64(), Some(big::FRAMES));
    b.screenshot("range-million-strip");
}

#[test]
fn on_a_recorded_session_a_dragged_range_says_what_the_api_says_and_filters_to_its_rows() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let server = Server::start(&store.db);
    let b = Browser::start();
    for width in [1400, 900] {
        b.resize(width, 900);
        b.goto(&format!("{}/traces/1", server.url));
        b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
        let seqs = drawn_seqs(&b);
        let (first, last) = (seqs[1], seqs[6]);
        drag_time_column(&b, first, last);
        b.wait_for("the selection", |b| url_value(b, "sel") == Some(format!("{first}-{last}")));
        let (r, _) = api(&b, &format!("/api/traces/1/range?from={first}&to={last}"));
        b.wait_for("the panel", |b| panel(b) == Some(expected(&r)));
        assert_eq!(r["frames"].as_i64(), Some(last - first + 1));
        // The methods listed are those of the rows in the range.
        let (page, _) = api(&b, &format!("/api/traces/1/frames?from={first}&to={last}"));
        let mut methods: Vec<(String, u64)> = Vec::new();
        for m in page["frames"].as_array().unwrap().iter().filter_map(|f| f["method"].as_str()) {
            match methods.iter_mut().find(|(n, _)| n == m) {
                Some(e) => e.1 += 1,
                None => methods.push((m.to_owned(), 1)),
            }
        }
        let mut listed = panel_methods(&b);
        listed.sort();
        methods.sort();
        assert_eq!(listed, methods, "at {width} px");
        // The panel fits: nothing scrolls sideways.
        let page_w = b.num("return document.documentElement.scrollWidth;");
        assert!(page_w <= width as f64, "the page is {page_w} px wide at {width}");
        let p = rect(&b, "#range-panel");
        let detail = rect(&b, "#detail");
        assert!(p[0] >= detail[0] && p[2] <= detail[2] + 1.0, "the panel {p:?} in the detail {detail:?}");
        b.screenshot(&format!("range-eliza-{width}"));

        b.click("#range-filter");
        b.wait_for("only the range's rows", |b| drawn_seqs(b) == (first..=last).collect::<Vec<_>>());
        assert_eq!(text(&b, ".filters .matching"), format!("{} frames", last - first + 1));
        b.screenshot(&format!("range-eliza-filtered-{width}"));
    }
}
