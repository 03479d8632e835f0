//! Managing traces from the list (#33): rename, pin and delete in the page,
//! against a real `acp-tee serve`, checked in the store; under `serve
//! --read-only` the list offers none of them and the API refuses them.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};

/// The store's traces now as `(id, name, pinned)`, newest first.
fn stored(store: &TempStore) -> Vec<(i64, Option<String>, bool)> {
    let traces = acp_tee::Store::open_existing(&store.db).unwrap().list_traces().unwrap();
    traces.into_iter().map(|t| (t.id, t.name, t.pinned)).collect()
}

/// The row of trace `id`, and something in it.
fn in_row(id: i64, css: &str) -> String {
    format!("tr.trace-row[data-trace-id=\"{id}\"] {css}")
}

/// The ids of the rows shown, in order.
fn rows(b: &Browser) -> Vec<i64> {
    let ids = b.js("return Array.from(document.querySelectorAll('tr.trace-row'), r => +r.dataset.traceId);", json!([]));
    ids.as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect()
}

/// Whether the element matching `css` is disabled.
fn disabled(b: &Browser, css: &str) -> bool {
    b.js("return document.querySelector(arguments[0]).disabled;", json!([css])) == json!(true)
}

/// `fetch(path, {method, body})` from the page; the answer's status and text.
fn fetch(b: &Browser, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let v = b.js(
        "const init = {method: arguments[1]}; \
         if (arguments[2] !== null) { init.body = arguments[2]; init.headers = {'Content-Type': 'application/json'}; } \
         return fetch(arguments[0], init).then(r => r.text().then(t => [r.status, t]));",
        json!([path, method, body]),
    );
    (v[0].as_u64().unwrap() as u16, v[1].as_str().unwrap().to_owned())
}

#[test]
fn the_list_renames_pins_and_deletes_traces() {
    let store = TempStore::new();
    import_trace(&store, "alpha", &pairs(1, 1.0));
    import_trace(&store, "beta", &pairs(2, 1.0));
    import_trace(&store, "gamma", &pairs(3, 1.0));
    import_trace(&store, "delta", &pairs(1, 1.0));
    // A trace recorded now: it cannot be deleted.
    let mut tee = tee_command(&store.db, &["--name", "live-one"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    writeln!(tee_in, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{}}}}"#).unwrap();
    assert!(!read_exact_from(&mut tee, 1).is_empty());
    let deadline = Instant::now() + Duration::from_secs(20);
    while stored(&store).len() < 5 {
        assert!(Instant::now() < deadline, "the live trace never showed in the store");
        std::thread::sleep(Duration::from_millis(20));
    }
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/", server.url));
    b.wait_for("the five traces and their actions", |b| {
        rows(b) == [5, 4, 3, 2, 1] && b.find_all("button.delete-trace").len() == 5
    });
    assert!(b.find_all("#edits-off").is_empty());
    let size = b.texts(&in_row(3, "td.size")).join("");
    assert!(size.ends_with(" B") || size.ends_with(" KiB"), "the size column: {size:?}");
    assert!(disabled(&b, &in_row(5, "button.delete-trace")), "a live trace's delete is off");
    b.screenshot("manage-list");

    // Rename in place: Enter saves; the row shows the name, the store has it.
    b.click(&in_row(2, "button.rename-trace"));
    b.wait_for("the rename field", |b| !b.find_all(&in_row(2, "input.rename")).is_empty());
    b.type_into(&in_row(2, "input.rename"), "  beta, renamed  ");
    b.key(Some(&in_row(2, "input.rename")), "Enter");
    b.wait_for("the new name", |b| b.texts(&in_row(2, "td.name a")) == ["beta, renamed"]);
    assert!(b.find_all("input.rename").is_empty());
    assert!(b.current_url().ends_with('/'), "Enter in the field opened the trace: {}", b.current_url());
    assert_eq!(stored(&store)[3], (2, Some("beta, renamed".to_owned()), false));
    // A name the server would refuse is refused in the page; Esc cancels.
    b.click(&in_row(2, "button.rename-trace"));
    b.wait_for("the rename field", |b| !b.find_all(&in_row(2, "input.rename")).is_empty());
    b.type_into(&in_row(2, "input.rename"), "   ");
    b.key(Some(&in_row(2, "input.rename")), "Enter");
    b.wait_for("the refusal", |b| b.texts("#edit-error").join("").contains("must not be empty"));
    b.key(Some(&in_row(2, "input.rename")), "Escape");
    b.wait_for("the field gone", |b| b.find_all("input.rename").is_empty());
    assert_eq!(b.texts(&in_row(2, "td.name a")), ["beta, renamed"]);

    // Pin: a pin mark, the button pressed, delete off; unpin takes them back.
    b.click(&in_row(1, "button.pin-trace"));
    b.wait_for("the pin mark", |b| !b.find_all(&in_row(1, ".pin-mark")).is_empty());
    assert_eq!(
        b.js(
            "return document.querySelector(arguments[0]).getAttribute('aria-pressed');",
            json!([in_row(1, "button.pin-trace")])
        ),
        json!("true")
    );
    assert!(disabled(&b, &in_row(1, "button.delete-trace")), "a pinned trace's delete is off");
    assert_eq!(stored(&store)[4], (1, Some("alpha".to_owned()), true));
    b.screenshot("manage-pinned");
    b.click(&in_row(4, "button.pin-trace"));
    b.wait_for("trace 4 pinned", |b| !b.find_all(&in_row(4, ".pin-mark")).is_empty());
    b.click(&in_row(4, "button.pin-trace"));
    b.wait_for("trace 4 unpinned", |b| b.find_all(&in_row(4, ".pin-mark")).is_empty());
    assert!(!stored(&store)[1].2);

    // Delete: the question names the trace; Cancel keeps it, Delete removes it.
    b.click(&in_row(3, "button.delete-trace"));
    b.wait_for("the question", |b| !b.find_all("#confirm-delete").is_empty());
    let question = b.texts("#confirm-delete-question").join("");
    assert!(
        question.starts_with("Delete trace 3 (gamma, 6 frames, ") && question.ends_with(")? This cannot be undone."),
        "{question}"
    );
    b.screenshot("manage-confirm");
    b.click("#confirm-delete-no");
    b.wait_for("the question gone", |b| b.find_all("#confirm-delete").is_empty());
    assert_eq!(rows(&b), [5, 4, 3, 2, 1]);
    b.click(&in_row(3, "button.delete-trace"));
    b.wait_for("the question", |b| !b.find_all("#confirm-delete").is_empty());
    b.click("#confirm-delete-yes");
    b.wait_for("trace 3 gone from the list", |b| rows(b) == [5, 4, 2, 1]);
    let left: Vec<i64> = stored(&store).iter().map(|t| t.0).collect();
    assert_eq!(left, [5, 4, 2, 1]);
    assert_eq!(fetch(&b, "GET", "/api/traces/3", None).0, 404);

    // What the server refuses shows in its words: trace 4, removed behind
    // the page's back while the question is open.
    b.click(&in_row(4, "button.delete-trace"));
    b.wait_for("the question", |b| !b.find_all("#confirm-delete").is_empty());
    let mut editor = acp_tee::Editor::open(&store.db).unwrap();
    editor.remove(&[4]).unwrap();
    drop(editor);
    b.click("#confirm-delete-yes");
    b.wait_for("the server's refusal", |b| {
        let error = b.texts("#edit-error").join("");
        error.contains("Could not delete trace 4") && error.contains("no trace with id 4")
    });
    b.wait_for("trace 4 gone with the next refresh", |b| rows(b) == [5, 2, 1]);
    assert_eq!(stored(&store).len(), 3);
    drop(tee_in);
    tee.wait().unwrap();
}

#[test]
fn under_read_only_the_list_offers_no_changes_and_the_api_refuses_them() {
    let store = TempStore::new();
    import_trace(&store, "alpha", &pairs(1, 1.0));
    import_trace(&store, "beta", &pairs(2, 1.0));
    let before = stored(&store);
    let server = Server::start_with(&store.db, &["--read-only"]);
    let b = Browser::start();
    b.goto(&format!("{}/", server.url));
    b.wait_for("the list, read-only", |b| rows(b) == [2, 1] && !b.find_all("#edits-off").is_empty());
    let why = b.js("return document.getElementById('edits-off').title;", json!([]));
    assert!(why.as_str().unwrap().contains("--read-only"), "{why}");
    for offered in ["button.rename-trace", "button.pin-trace", "button.delete-trace", "col.col-actions", "input.rename"]
    {
        assert!(b.find_all(offered).is_empty(), "{offered} is offered under --read-only");
    }
    b.screenshot("manage-read-only");
    // The page's own requests are refused, with the reason.
    for (method, body) in
        [("DELETE", None), ("PATCH", Some(r#"{"name": "x"}"#)), ("PATCH", Some(r#"{"pinned": true}"#))]
    {
        let (status, text) = fetch(&b, method, "/api/traces/1", body);
        assert_eq!(status, 403, "{method} {text}");
        assert!(text.contains("--read-only"), "{text}");
    }
    assert_eq!(stored(&store), before);
}
