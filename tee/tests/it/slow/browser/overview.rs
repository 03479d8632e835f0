//! The overview strip above the diagram: drawn from the server's buckets on the million-frame trace (the idle
//! gap an empty stretch, a click landing on the frames of that time, a drag moving the diagram, the visible
//! window following the scroll) and on a real recorded session (its bars add up to the trace's frames, it
//! fits 900 and 1400 px).

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::{json, Value};

/// The strip's buckets as drawn: frames and first seq of each.
fn drawn_buckets(b: &Browser) -> Vec<(u64, Option<i64>)> {
    let v = b.js(
        "return Array.from(document.querySelectorAll('#overview .ov-hit'), \
         e => [+e.dataset.frames, e.dataset.firstSeq === undefined ? null : +e.dataset.firstSeq]);",
        json!([]),
    );
    v.as_array().unwrap().iter().map(|p| (p[0].as_u64().unwrap(), p[1].as_i64())).collect()
}

/// `GET path` from the page (the server's own answer, as the app reads it).
fn api(b: &Browser, path: &str) -> Value {
    b.js(
        "const r = new XMLHttpRequest(); r.open('GET', arguments[0], false); r.send(); return JSON.parse(r.responseText);",
        json!([path]),
    )
}

/// Presses the pointer at `from` (0..1 of the strip's width), moves it through `through`, and lets go at the
/// last point, as pointer events on the strip.
fn pointer(b: &Browser, from: f64, through: &[f64]) {
    b.js(
        "const [from, through] = arguments; \
         const svg = document.querySelector('#overview svg'); const r = svg.getBoundingClientRect(); \
         const at = f => ({ clientX: r.left + f * r.width, clientY: r.top + r.height / 2, bubbles: true, pointerId: 1 }); \
         svg.dispatchEvent(new PointerEvent('pointerdown', at(from))); \
         for (const f of through) svg.dispatchEvent(new PointerEvent('pointermove', at(f))); \
         svg.dispatchEvent(new PointerEvent('pointerup', at(through.length ? through[through.length - 1] : from)));",
        json!([from, through]),
    );
}

/// The visible-window box's first and last bucket.
fn window_box(b: &Browser) -> Option<(usize, usize)> {
    let v = b.js(
        "const w = document.querySelector('#overview .ov-window'); return w ? [+w.dataset.lo, +w.dataset.hi] : null;",
        json!([]),
    );
    v.as_array().map(|a| (a[0].as_u64().unwrap() as usize, a[1].as_u64().unwrap() as usize))
}

#[test]
fn on_a_million_frames_the_strip_shows_the_gap_goes_where_clicked_and_dragged_and_marks_the_rows_in_view() {
    let server = Server::start(million());
    let b = Browser::start();
    b.resize(1400, 900);
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the strip", |b| !b.find_all("#overview .ov-hit").is_empty());
    b.wait_for("the diagram", |b| !drawn_seqs(b).is_empty());
    let buckets = drawn_buckets(&b);
    let n = buckets.len();
    assert!(n > 100, "{n} buckets");
    assert_eq!(buckets.iter().map(|b| b.0).sum::<u64>(), big::FRAMES as u64, "every frame is in a bar");
    let overview = api(&b, "/api/traces/1/overview");
    let (start, width) = (overview["start_t_ns"].as_i64().unwrap(), overview["bucket_ns"].as_i64().unwrap());
    let t_of = |seq: i64| 1_000_000 * if seq > big::GAP_AFTER { seq + big::GAP_MS } else { seq };

    // The idle gap: empty buckets from the one after the gap's last frame to the one before the next frame.
    let before = buckets.iter().rposition(|b| b.1.is_some_and(|s| s <= big::GAP_AFTER)).unwrap();
    let after = buckets.iter().position(|b| b.1.is_some_and(|s| s > big::GAP_AFTER)).unwrap();
    let empty = (before + 1..after).filter(|&i| buckets[i].0 == 0).count();
    let expected = (big::GAP_MS * 1_000_000 / width) as usize;
    assert!(empty + 1 >= expected && empty >= 10, "{empty} empty buckets in a gap {expected} buckets wide");
    assert_eq!(buckets[after].1, Some(big::GAP_AFTER + 1), "the first bucket after the gap starts with its frame");
    let bars = b.js("return document.querySelector('#overview .ov-frames').getAttribute('d');", json!([]));
    assert!(!bars.as_str().unwrap().contains(&format!("M{} ", before + 1)), "a bar is drawn in the gap");
    b.screenshot("overview-million");

    // A click at 75% of the width (the middle of that bucket): the diagram shows the frames of that
    // bucket's time, the first selected.
    let bucket = (0.75 * n as f64) as usize;
    pointer(&b, (bucket as f64 + 0.5) / n as f64, &[]);
    let seq = buckets[bucket..].iter().find_map(|b| b.1).unwrap();
    b.wait_for("the clicked bucket's first frame selected and drawn", |b| {
        selected_in_url(b) == Some(seq) && drawn_seqs(b).contains(&seq)
    });
    let (lo, hi) = (start + bucket as i64 * width, start + (bucket as i64 + 1) * width);
    assert!(
        lo <= t_of(seq) && t_of(seq) < hi,
        "frame {seq} at {} ns is not in bucket {bucket} ({lo}..{hi})",
        t_of(seq)
    );
    let drawn = drawn_seqs(&b);
    let times: Vec<i64> = drawn.iter().map(|&s| t_of(s)).collect();
    assert!(times.iter().all(|&t| (t - t_of(seq)).abs() < 10 * width), "rows drawn far from the bucket: {drawn:?}");
    b.wait_for("the window box on the clicked bucket", |b| {
        window_box(b).is_some_and(|(l, h)| l <= bucket && bucket <= h)
    });

    // Scrolling the diagram moves the box.
    b.js(
        "const s = document.getElementById('diagram-scroll'); s.scrollTop = 0.1 * (s.scrollHeight - s.clientHeight);",
        json!([]),
    );
    b.wait_for("the box near 10%", |b| window_box(b).is_some_and(|(l, _)| l < n / 5));
    let first = window_box(&b).unwrap();
    b.js(
        "const s = document.getElementById('diagram-scroll'); s.scrollTop = 0.5 * (s.scrollHeight - s.clientHeight);",
        json!([]),
    );
    b.wait_for("the box moved on", |b| window_box(b).is_some_and(|(l, _)| l > first.1 && l > n / 3));

    // A click in the gap lands on the first frame after it.
    pointer(&b, (before as f64 + 2.5) / n as f64, &[]);
    b.wait_for("the frame after the gap selected", |b| selected_in_url(b) == Some(big::GAP_AFTER + 1));
    b.wait_for("and drawn", |b| drawn_seqs(b).contains(&(big::GAP_AFTER + 1)));

    // A drag from 20% to 40%: the diagram follows to the rows at 40%, without selecting them.
    let target = (0.4 * n as f64) as usize;
    pointer(&b, 0.2, &[0.25, 0.3, 0.35, (target as f64 + 0.5) / n as f64]);
    let target_seq = buckets[target..].iter().find_map(|b| b.1).unwrap();
    b.wait_for("the diagram at the drag's end", |b| drawn_seqs(b).contains(&target_seq));
    b.wait_for("the box there too", |b| window_box(b).is_some_and(|(l, h)| l <= target && target <= h));
    assert_eq!(selected_in_url(&b), Some(big::GAP_AFTER + 1), "a drag selects nothing");
    b.screenshot("overview-million-dragged");
}

#[test]
fn on_a_recorded_session_the_bars_add_up_to_the_trace_and_the_strip_fits_900_and_1400_px() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let frames = store.open().trace(1).unwrap().frame_count;
    let server = Server::start(&store.db);
    let b = Browser::start();
    for width in [1400, 900] {
        b.resize(width, 900);
        b.goto(&format!("{}/traces/1", server.url));
        b.wait_for("the strip", |b| !b.find_all("#overview .ov-hit").is_empty());
        b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
        let buckets = drawn_buckets(&b);
        assert_eq!(buckets.iter().map(|b| b.0).sum::<u64>() as i64, frames, "at {width} px");
        // The whole trace is in view: the box covers every bucket holding a frame.
        let (first, last) =
            (buckets.iter().position(|b| b.0 > 0).unwrap(), buckets.iter().rposition(|b| b.0 > 0).unwrap());
        b.wait_for("the window box over the whole trace", |b| window_box(b) == Some((first, last)));
        let page_w = b.num("return document.documentElement.scrollWidth;");
        assert!(page_w <= width as f64, "the page is {page_w} px wide at {width}");
        let strip = rect(&b, "#overview");
        let diagram = rect(&b, "#diagram-scroll");
        assert!(
            strip[2] <= diagram[2] + 1.0 && strip[3] <= diagram[1] + 1.0,
            "the strip {strip:?} is above the diagram {diagram:?}"
        );
        // The findings are placed once the checks have read the trace (the diagram asks for them).
        b.wait_for("findings known", |b| b.find_all("#overview-findings-note").is_empty());
        b.screenshot(&format!("overview-{width}"));
    }
    // A click on the last bucket holding frames selects its first frame.
    let buckets = drawn_buckets(&b);
    let last = buckets.iter().rposition(|b| b.0 > 0).unwrap();
    pointer(&b, (last as f64 + 0.5) / buckets.len() as f64, &[]);
    let seq = buckets[last].1.unwrap();
    b.wait_for("the last bucket's first frame selected", |b| selected_in_url(b) == Some(seq));
}
