//! The Findings tab (#16): the list filtered by severity and code (in the URL), a link to a frame in the
//! diagram, the markers on the diagram's rows and the counts in the trace list.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;

/// session/new before initialize (error at 1), a cancel for an unknown session (error at 3), an answer
/// to an id never asked (error at 4), a request never answered (warning at 5).
fn broken() -> Vec<Msg> {
    vec![
        c2a(0.0, json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}})),
        a2c(1.0, json!({"jsonrpc":"2.0","id":0,"result":{"sessionId":"s1"}})),
        c2a(2.0, json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"nope"}})),
        a2c(3.0, json!({"jsonrpc":"2.0","id":77,"result":{}})),
        c2a(4.0, json!({"jsonrpc":"2.0","id":5,"method":"_x/ping"})),
    ]
}

#[test]
fn findings_are_listed_filtered_linked_and_marked() {
    let store = TempStore::new();
    import_trace(&store, "broken", &broken());
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list's findings count", |b| {
        b.texts("tr.trace-row td.findings").iter().any(|t| t.trim() == "3 / 1")
    });

    b.goto(&format!("{}/traces/1?tab=findings", server.url));
    b.wait_for("the findings", |b| b.find_all("#findings li.finding").len() == 4);
    let codes = b.js(
        "return Array.from(document.querySelectorAll('#findings li.finding')).map(e => e.dataset.code);",
        json!([]),
    );
    assert_eq!(
        codes,
        json!(["lifecycle.before-initialize", "session.unknown", "rpc.unknown-response", "rpc.unanswered"])
    );
    assert!(
        b.texts("#findings-summary").iter().any(|t| t.contains("3 errors, 1 warning")),
        "{:?}",
        b.texts("#findings-summary")
    );
    b.screenshot("findings");

    b.click("#finding-severity option[value=\"error\"]");
    b.wait_for("errors only", |b| b.find_all("#findings li.finding").len() == 3);
    assert!(b.current_url().contains("finding_severity=error"), "{}", b.current_url());
    b.click("#finding-code option[value=\"session.unknown\"]");
    b.wait_for("one code", |b| b.find_all("#findings li.finding").len() == 1);
    assert!(b.current_url().contains("finding_code=session.unknown"), "{}", b.current_url());

    // Its frame link opens the diagram with the frame selected, and the row carries a marker.
    b.click("#findings li.finding a.frame-link[data-seq=\"3\"]");
    b.wait_for("the frame selected in the diagram", |b| !b.find_all(".frame.selected[data-seq=\"3\"]").is_empty());
    assert_eq!(selected_in_url(&b), Some(3));
    assert_eq!(b.find_all(".frame[data-seq=\"3\"] .finding-mark.sev-error").len(), 1);
    assert_eq!(b.find_all(".frame[data-seq=\"5\"] .finding-mark.sev-warning").len(), 1);
    assert!(b.find_all(".frame[data-seq=\"2\"] .finding-mark").is_empty(), "a clean frame has no marker");
    // The selected frame's finding is in the detail panel; a clean frame has none.
    b.wait_for("the finding in the detail panel", |b| !b.find_all("#frame-findings").is_empty());
    let found = b.texts("#frame-findings li").join("\n");
    assert!(found.starts_with("session.unknown") && found.contains("nope"), "{found}");
    b.click(".frame[data-seq=\"2\"]");
    b.wait_for("frame 2 selected", |b| selected_in_url(b) == Some(2));
    assert!(b.find_all("#frame-findings").is_empty(), "frame 2 has no finding");
    // The header tells error responses (none) from the checks' errors (3), which it links to.
    assert_eq!(b.texts("#error-responses").join(""), "0 error responses");
    assert_eq!(b.texts("#findings-count").join(""), "4 findings (3 errors, 1 warning)");
    b.screenshot("findings-marked");
}
