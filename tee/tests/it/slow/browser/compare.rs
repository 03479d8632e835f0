//! The compare view (#17): two traces ticked in the list, compared as
//! `acp-tee diff` compares them.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use acp_tee_analysis::diff::END_NOT_READ;
use serde_json::json;

#[test]
fn two_traces_ticked_in_the_list_open_their_comparison() {
    let store = TempStore::new();
    import_trace(&store, "two prompts", &session_pairs(2, 1.0));
    import_trace(&store, "three prompts", &session_pairs(3, 4.0));
    let server = Server::start(&store.db);
    let b = Browser::start();

    b.goto(&format!("{}/", server.url));
    b.wait_for("both traces", |b| b.find_all("tr.trace-row").len() == 2);
    assert!(b.find_all("#compare-link").is_empty(), "a compare link before anything was ticked");
    b.click("tr.trace-row[data-trace-id=\"2\"] input.pick");
    b.wait_for("the hint to tick another", |b| b.texts(".list-head").iter().any(|t| t.contains("tick another")));
    assert!(b.current_url().ends_with('/'), "ticking opened the trace: {}", b.current_url());
    b.click("tr.trace-row[data-trace-id=\"1\"] input.pick");
    b.wait_for("the compare link", |b| !b.find_all("#compare-link").is_empty());
    b.click("#compare-link");

    b.wait_for("the verdict", |b| !b.find_all("#compare-verdict").is_empty());
    assert!(b.current_url().ends_with("/compare/1/2"), "{}", b.current_url());
    assert_eq!(b.texts("#compare-verdict"), ["different"]);
    let added = b.js(
        "return Array.from(document.querySelectorAll('#compare-messages tr.change'), r => [r.dataset.change, r.querySelector('.what').textContent]);",
        json!([]),
    );
    assert_eq!(
        added,
        json!([
            ["added", "client_to_agent request session/prompt"],
            ["added", "agent_to_client response session/prompt"]
        ])
    );
    let turns = b.js(
        "return Array.from(document.querySelectorAll('#compare-turns tbody tr'), r => [r.classList.contains('differs'), r.cells[2].textContent, r.cells[3].textContent]);",
        json!([]),
    );
    // The turns that ended alike are a tally; the one that did not, a row.
    assert_eq!(turns, json!([[true, "not ended", "end_turn"]]));
    assert_eq!(b.texts("#compare-turn-ends"), ["1 of 3 turns ended differently; the other 2 alike: end_turn 2."]);
    let latency = b.texts("#compare-latency tbody tr").join("\n");
    assert!(latency.contains("session/prompt") && latency.contains("2 | 3") && latency.contains("×4.00"), "{latency}");
    b.screenshot("compare");

    // A link on a change opens that frame of its trace.
    b.click("#compare-messages tr.change-added a");
    b.wait_for("the trace view", |b| b.current_url().contains("/traces/2?frame="));
}

#[test]
fn equal_runs_say_there_is_no_difference_rather_than_show_an_empty_table() {
    let store = TempStore::new();
    import_trace(&store, "one", &session_pairs(2, 1.0));
    import_trace(&store, "the same", &session_pairs(2, 1.0));
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/compare/1/2", server.url));
    b.wait_for("the verdict", |b| !b.find_all("#compare-verdict").is_empty());
    assert_eq!(b.texts("#compare-verdict"), ["equivalent"]);
    assert_eq!(b.texts("#compare-no-differences"), ["No differences: every message of a has its equal in b."]);
    assert!(b.find_all("#compare-messages").is_empty(), "an empty table of changes");
}

#[test]
fn comparing_a_trace_that_does_not_exist_says_so() {
    let store = TempStore::new();
    import_trace(&store, "one", &pairs(1, 1.0));
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/compare/1/99", server.url));
    b.wait_for("the error", |b| !b.find_all("#compare-error").is_empty());
    assert!(b.texts("#compare-error").join("").contains("99"), "{:?}", b.texts("#compare-error"));
}

#[test]
fn hostile_content_in_a_comparison_is_shown_as_text_never_run() {
    let store = TempStore::new();
    let method = r#"<img src=x onerror="window.__pwned=1">"#;
    import_trace(&store, "plain", &[c2a(0.0, json!({"jsonrpc": "2.0", "method": method, "params": {"v": 1}}))]);
    import_trace(
        &store,
        "<img src=y onerror=window.__pwned=2>",
        &[c2a(
            0.0,
            json!({"jsonrpc": "2.0", "method": method, "params": {"v": "<b onmouseover=\"window.__pwned=3\">x</b>"}}),
        )],
    );
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/compare/1/2", server.url));
    b.wait_for("the comparison", |b| !b.find_all("#compare-messages tr.change").is_empty());
    let page = b.texts(".compare-page").join("\n");
    assert!(page.contains(method) && page.contains("<img src=y onerror=window.__pwned=2>"), "{page}");
    let injected = b.js(
        "return document.querySelectorAll('.compare-page img, .compare-page script, .compare-page b').length;",
        json!([]),
    );
    assert_eq!(injected, json!(0), "recorded markup became elements");
    assert_eq!(b.js("return window.__pwned === undefined;", json!([])), json!(true));
}

/// A trace view offers "compare with…" the other traces; the comparison reads top-down: verdict, turns,
/// latency, then the messages.
#[test]
fn a_trace_view_compares_with_another_trace_and_the_summary_comes_first() {
    let store = TempStore::new();
    import_trace(&store, "two prompts", &session_pairs(2, 1.0));
    import_trace(&store, "three prompts", &session_pairs(3, 4.0));
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/2", server.url));
    b.wait_for("the diagram", |b| !b.find_all(".frame").is_empty());
    b.click("#compare-with summary");
    b.wait_for("the other trace offered", |b| !b.find_all("#compare-with a[data-trace-id=\"1\"]").is_empty());
    assert!(b.find_all("#compare-with a[data-trace-id=\"2\"]").is_empty(), "the trace is offered itself");
    b.click("#compare-with a[data-trace-id=\"1\"]");
    b.wait_for("the comparison", |b| !b.find_all("#compare-verdict").is_empty());
    assert!(b.current_url().ends_with("/compare/1/2"), "{}", b.current_url());
    let order = b.js(
        "return Array.from(document.querySelectorAll('#compare-verdict, #compare-turn-ends, #compare-turns, #compare-latency, #compare-turn-summary, #compare-messages'), e => e.id);",
        json!([]),
    );
    assert_eq!(
        order,
        json!([
            "compare-verdict",
            "compare-turn-ends",
            "compare-turns",
            "compare-latency",
            "compare-turn-summary",
            "compare-messages"
        ])
    );
}

/// Two real recordings (yopo and elizacp, two prompts): the turn's reply
/// differs, shown as a word diff whose removed and added words are those
/// the API reports, and whose kept and removed words make a's reply, kept
/// and added b's; at 900 and 1400 px the page does not scroll sideways.
#[test]
fn recorded_runs_show_each_turn_reply_as_a_word_diff() {
    let store = TempStore::new();
    for (name, prompt) in [("first", "I feel happy today"), ("second", "I feel tired today")] {
        let out = std::process::Command::new(peer("yopo"))
            .args([prompt, "--", bin(), "--db", store.db.to_str().unwrap(), "--name", name, "--"])
            .args([peer("elizacp").as_str(), "--deterministic", "acp"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/compare/1/2", server.url));
    b.wait_for("the turn by turn section", |b| !b.find_all("#compare-turn-summary").is_empty());
    let report = b.js("return fetch('/api/diff/1/2').then(r => r.json());", json!([]));
    let turns = &report["turn_changes"];
    assert_eq!(turns["changed"], json!(1), "{report:#}");
    let change = &turns["turns"][0];
    assert_eq!(change["message_same"], json!(false), "{change:#}");
    let runs = change["message"].as_array().unwrap();
    let side = |keep: &str| -> String {
        runs.iter().filter(|r| r["op"] == "same" || r["op"] == keep).map(|r| r["text"].as_str().unwrap()).collect()
    };
    // The page's runs: the same text, marked the same way.
    let drawn = b.js(
        "return Array.from(document.querySelectorAll('.turn-change .word-diff > *'), e => [e.tagName, e.textContent]);",
        json!([]),
    );
    let from_api: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let tag = match r["op"].as_str().unwrap() {
                "removed" => "DEL",
                "added" => "INS",
                _ => "SPAN",
            };
            json!([tag, r["text"]])
        })
        .collect();
    assert_eq!(drawn, json!(from_api));
    assert!(
        drawn.as_array().unwrap().iter().any(|r| r[0] == "DEL")
            && drawn.as_array().unwrap().iter().any(|r| r[0] == "INS")
    );
    // a's reply and b's, as the Session API assembles them.
    for (trace, keep) in [(1, "removed"), (2, "added")] {
        let sessions = b.js(&format!("return fetch('/api/traces/{trace}/sessions').then(r => r.json());"), json!([]));
        let sid = sessions["sessions"][0]["session_id"].as_str().unwrap().to_owned();
        let detail = b.js(
            &format!(
                "return fetch('/api/traces/{trace}/sessions/' + encodeURIComponent(arguments[0])).then(r => r.json());"
            ),
            json!([sid]),
        );
        assert_eq!(detail["turns"][0]["message"]["text"].as_str().unwrap(), side(keep), "trace {trace}");
    }
    assert_eq!(
        b.texts("#compare-turn-summary"),
        ["1 of 1 turns differ in their assembled reply, thoughts or tool calls."]
    );
    for width in [1400, 900] {
        b.resize(width, 900);
        let page_w = b.num("return document.documentElement.scrollWidth;");
        assert!(page_w <= width as f64, "the page is {page_w} px wide at {width}");
        b.screenshot(&format!("compare-turns-{width}"));
    }
}

/// Two runs of a million frames that differ in two turns (one word of a reply, one tool call's status) read
/// top-down: the verdict, how the thousands of turns ended as one tally, then turn by turn exactly those two
/// turns, how they differ, then the two messages that changed; the part that differs is near the top.
#[test]
fn two_runs_of_a_million_frames_compare_top_down_to_the_two_turns_that_differ() {
    let server = Server::start(million_pair());
    let b = Browser::start();
    b.resize(1400, 900);
    b.goto(&format!("{}/compare/1/2", server.url));
    // The server compares for as long as `DIFF_TIME_LIMIT` (60 s) allows, beside its search indexer and
    // checks reading both traces for the first time.
    b.wait_for_within("the comparison or its failure", std::time::Duration::from_secs(75), |b| {
        !b.find_all("#compare-verdict, #compare-error").is_empty()
    });
    assert_eq!(b.texts("#compare-error"), Vec::<String>::new(), "the comparison failed");
    assert_eq!(b.texts("#compare-verdict"), ["different"]);
    let order = b.js(
        "return Array.from(document.querySelectorAll('#compare-verdict, #compare-turn-ends, #compare-turns, #compare-latency, #compare-turn-summary, #compare-messages'), e => e.id);",
        json!([]),
    );
    assert_eq!(
        order,
        json!(["compare-verdict", "compare-turn-ends", "compare-latency", "compare-turn-summary", "compare-messages"])
    );
    // Every turn of the messages read ended alike: one line, not a row each.
    let report = b.js("return fetch('/api/diff/1/2').then(r => r.json());", json!([]));
    let ends = report["turns"].as_array().unwrap_or_else(|| panic!("{report}"));
    let count = |end: &str| ends.iter().filter(|t| t["a"] == end && t["b"] == end).count();
    let (ended, errors, unread) = (count("end_turn"), count("error"), count(END_NOT_READ));
    // The last turn read began before the 200,000th message and ended after it.
    assert_eq!((ended + errors + unread, unread), (ends.len(), 1), "{ends:?}");
    assert!(ends.len() > 1000 && errors > 0, "{} turns, {errors} errors", ends.len());
    assert_eq!(
        b.texts("#compare-turn-ends"),
        [format!(
            "All {} turns of the messages read ended alike on both sides: end_turn {ended} · error {errors} · {END_NOT_READ} 1.",
            ends.len()
        )]
    );
    // Turn by turn: of every turn of the two traces, the two that differ.
    let compared = report["turn_changes"]["compared"].as_u64().unwrap();
    assert!(compared as i64 > big::FRAMES / big::TURN_FRAMES / 2, "{compared} turns compared");
    assert_eq!(
        b.texts("#compare-turn-summary"),
        [format!("2 of {compared} turns differ in their assembled reply, thoughts or tool calls.")]
    );
    let turns = b.js(
        "return Array.from(document.querySelectorAll('.turn-change'), s => [s.dataset.session, +s.dataset.turn]);",
        json!([]),
    );
    // Turn 3 is session b's second, turn 6 session a's third (b, the first to prompt, is session-1).
    assert_eq!(turns, json!([["session-1", 2], ["session-2", 3]]));
    let word = b.js(
        "return Array.from(document.querySelectorAll('.turn-change')[0].querySelectorAll('.word-diff > del, .word-diff > ins'), e => [e.tagName, e.textContent]);",
        json!([]),
    );
    assert_eq!(word, json!([["DEL", "word"], ["INS", "world"]]));
    let tool = b.texts("#compare-turn-changes .turn-change:nth-of-type(2) table.tools tbody tr");
    assert_eq!(tool.len(), 1, "{tool:?}");
    assert!(tool[0].contains("Read file [read] completed") && tool[0].contains("Read file [read] failed"), "{tool:?}");
    // The messages: the chunk and the tool call update, changed.
    let changes = b.js(
        "return Array.from(document.querySelectorAll('#compare-messages tr.change'), r => [r.dataset.change, r.querySelector('.what').textContent]);",
        json!([]),
    );
    assert_eq!(
        changes,
        json!([
            ["changed", "agent_to_client notification session/update agent_message_chunk"],
            ["changed", "agent_to_client notification session/update tool_call_update"]
        ])
    );
    // What differs is within the first screens of the page, not under thousands of rows.
    let top =
        b.num("return document.getElementById('compare-turn-changes').getBoundingClientRect().top + window.scrollY;");
    assert!(top < 1500.0, "the turns that differ begin {top} px down the page");
    b.screenshot("compare-million-1400");
    b.resize(900, 900);
    let page_w = b.num("return document.documentElement.scrollWidth;");
    assert!(page_w <= 900.0, "the page is {page_w} px wide at 900");
    b.screenshot("compare-million-900");
}
