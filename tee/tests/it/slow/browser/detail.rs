//! The frame detail: stderr, JSON in wire order, a 32 MiB frame.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;

const LONG_ID: &str = "an-id-that-is-far-too-long-to-show-whole-in-the-diagram-0123456789abcdef";
const LONG_METHOD: &str = "_vendor/extensions/very/long/method/name/that/goes/on/and/on/and/on/for/ever";

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
