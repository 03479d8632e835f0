//! Filters: pairs they hide, bad values in the URL, keys and history.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;

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
fn esc_in_the_search_leaves_the_field_and_keeps_the_search() {
    let store = TempStore::new();
    import_trace(
        &store,
        "terminal",
        &[
            c2a(0.0, json!({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s1"}})),
            a2c(1.0, json!({"jsonrpc": "2.0", "id": 7, "method": "terminal/create", "params": {"command": "ls"}})),
            c2a(2.0, json!({"jsonrpc": "2.0", "id": 7, "result": {"id": "t1"}})),
            a2c(3.0, json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
        ],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the four frames", |b| drawn_seqs(b) == vec![1, 2, 3, 4]);

    // Real keys, so the browser's own Esc in a search field (emptying it) would happen if not prevented.
    b.press("/");
    b.wait_for("/ focusing the search", |b| b.js("return document.activeElement.id;", json!([])) == json!("search"));
    b.type_text("terminal");
    b.wait_for("the search applied", |b| {
        b.current_url().contains("q=terminal") && (1..4).contains(&drawn_seqs(b).len())
    });
    let found = drawn_seqs(&b);
    assert!(found.contains(&2), "terminal/create found: {found:?}");
    b.press("Escape");
    b.wait_for("Esc leaving the search field", |b| {
        b.js("return document.activeElement.id;", json!([])) != json!("search")
    });
    // Longer than the typing pause, so an emptied field would have reached the URL.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(b.js("return document.getElementById('search').value;", json!([])), json!("terminal"));
    assert!(b.current_url().contains("q=terminal"), "the search left the URL: {}", b.current_url());
    assert_eq!(drawn_seqs(&b), found, "the frames the search found");
    // Out of the field, keys are the view's again: j steps through what the search found.
    b.press("j");
    b.wait_for("j selecting a found frame", |b| selected_in_url(b) == Some(found[0]));
    assert!(b.current_url().contains("q=terminal"), "{}", b.current_url());
}
