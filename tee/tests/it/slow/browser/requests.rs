//! The Requests tab (one row per JSON-RPC request, sorted and paged by the server) and the busy bars of
//! requests in flight over the rows drawn (`/api/traces/{id}/in_flight`), on the generated million-frame
//! trace and a real recorded session.

use super::*;
use acp_tee_shared::FrameKind;

/// The `data-seq` of the table's rows, in order.
fn table_seqs(b: &Browser) -> Vec<i64> {
    let v = b
        .js("return Array.from(document.querySelectorAll('table#requests tbody tr'), e => +e.dataset.seq);", json!([]));
    v.as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect()
}

#[test]
fn inside_a_long_prompt_the_agent_lane_shows_it_busy() {
    let server = Server::start(million());
    let b = Browser::start();
    let mid = (big::LONG_PROMPT + big::LONG_ANSWER) / 2;
    b.goto(&format!("{}/traces/1?frame={mid}", server.url));
    b.wait_for("the frames around the middle of the long prompt", |b| drawn_seqs(b).contains(&mid));
    let bar = format!(".busy[data-seq=\"{}\"]", big::LONG_PROMPT);
    b.wait_for("the long prompt's busy bar", |b| !b.find_all(&bar).is_empty());
    let label = b.texts(&format!("{bar} .busy-label")).concat();
    assert!(label.contains("session/prompt") && label.contains("3m 20s"), "{label}");
    assert!(b.find_all(&format!("{bar}.open.open-start")).len() == 1, "open at both ends");
    // On the Agent lane (the client sent it), across every row in view.
    let (bar_rect, scroll) = (rect(&b, &bar), rect(&b, "#diagram-scroll"));
    let agent = rect(&b, ".lane-head[data-lane=\"agent\"]");
    let agent_x = (agent[0] + agent[2]) / 2.0;
    assert!((bar_rect[0] - agent_x).abs() < 40.0, "bar {bar_rect:?} on the agent lane at {agent_x}");
    assert!(bar_rect[1] <= scroll[1] + 40.0 && bar_rect[3] >= scroll[3] - 10.0, "bar {bar_rect:?} spans {scroll:?}");
    b.screenshot("in-flight-long-prompt");
    // Scrolling on inside the turn keeps it.
    b.js("document.getElementById('diagram-scroll').scrollTop += 3000;", json!([]));
    b.wait_for("frames further down", |b| drawn_seqs(b).first().is_some_and(|&s| s > mid + 20));
    b.wait_for("the bar still there", |b| !b.find_all(&bar).is_empty());
}

#[test]
fn the_request_table_of_a_million_frames_sorts_pages_and_selects() {
    let server = Server::start(million());
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?tab=requests", server.url));
    b.wait_for("the first page", |b| table_seqs(b).len() == 100);
    let seqs = table_seqs(&b);
    assert_eq!(seqs[0], 1, "initialize first");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let range = b.texts("#requests-range").concat();
    assert!(range.starts_with("1–100 of"), "{range}");
    // The last prompt was never answered; errors say their code.
    b.click("#requests-next");
    b.wait_for("the second page", |b| table_seqs(b).first().is_some_and(|&s| s > seqs[99]));
    assert!(b.current_url().contains("req_page=2"), "{}", b.current_url());

    // Sorted by latency: slowest first, the long prompt at the top.
    b.click("th[data-sort=latency]");
    b.wait_for("sorted by latency", |b| table_seqs(b).first() == Some(&big::LONG_PROMPT));
    let url = b.current_url();
    assert!(url.contains("req_sort=latency") && url.contains("req_order=desc") && !url.contains("req_page"), "{url}");
    let first = b.texts("table#requests tbody tr:first-child td.latency").concat();
    assert_eq!(first, "3m 20s");
    // Again: the other way; unanswered requests stay last, so the fastest come first.
    b.click("th[data-sort=latency]");
    b.wait_for("fastest first", |b| {
        b.current_url().contains("req_sort=latency") && !b.current_url().contains("req_order")
    });
    b.wait_for("the page sorted the other way", |b| table_seqs(b).first().is_some_and(|&s| s != big::LONG_PROMPT));
    let fastest = b.texts("table#requests tbody tr:first-child td.latency").concat();
    assert!(fastest.ends_with("ms") || fastest.ends_with("µs"), "{fastest}");
    b.click("th[data-sort=latency]");
    b.wait_for("slowest first again", |b| table_seqs(b).first() == Some(&big::LONG_PROMPT));
    b.screenshot("requests-by-latency");

    // A click on a row selects the request in the diagram.
    b.click(&format!("table#requests tbody tr[data-seq=\"{}\"]", big::LONG_PROMPT));
    b.wait_for("the diagram with the long prompt selected", |b| {
        !b.find_all(&format!(".frame.selected[data-seq=\"{}\"]", big::LONG_PROMPT)).is_empty()
    });
    assert_eq!(selected_in_url(&b), Some(big::LONG_PROMPT));
    assert!(!b.current_url().contains("tab=requests"), "{}", b.current_url());
    // Back: the table as it was, sorted by latency.
    b.js("history.back();", json!([]));
    b.wait_for("the table again", |b| table_seqs(b).first() == Some(&big::LONG_PROMPT));
}

#[test]
fn the_request_table_of_a_recorded_session_is_its_requests() {
    let store = TempStore::new();
    record_eliza(&store, "Tell me about my requests");
    let mut want = Vec::new();
    acp_tee::Store::open_existing(&store.db)
        .unwrap()
        .for_each_frame(1, |f| -> Result<(), acp_tee::StoreError> {
            if f.kind == FrameKind::Request {
                want.push((f.seq, f.method.clone().unwrap_or_default()));
            }
            Ok(())
        })
        .unwrap();
    assert!(want.len() >= 3, "{want:?}");
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| !b.find_all(".frame").is_empty());
    b.click("#tab-requests");
    b.wait_for("the table", |b| table_seqs(b).len() == want.len());
    assert!(b.current_url().contains("tab=requests"), "{}", b.current_url());
    let methods = b.js(
        "return Array.from(document.querySelectorAll('table#requests tbody td.method'), e => e.textContent.replace('⊳', '').trim());",
        json!([]),
    );
    let got: Vec<(i64, String)> = table_seqs(&b)
        .into_iter()
        .zip(methods.as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(got, want);
    assert!(b.texts("table#requests td.status").iter().all(|s| s == "ok"), "{:?}", b.texts("table#requests td.status"));
    b.screenshot("requests-eliza");
    // The funnel beside a method filters the diagram to it.
    let prompt = want.iter().find(|(_, m)| m == "session/prompt").unwrap().0;
    b.click(&format!("table#requests tr[data-seq=\"{prompt}\"] .filter-method"));
    b.wait_for("the diagram filtered to session/prompt", |b| {
        let m = b.texts(".frame .method");
        !m.is_empty() && m.iter().all(|t| t.trim() == "session/prompt")
    });
    assert!(b.current_url().contains("method=session%2Fprompt"), "{}", b.current_url());
    assert_eq!(selected_in_url(&b), Some(prompt));
}
