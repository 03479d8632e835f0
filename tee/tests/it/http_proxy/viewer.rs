//! The viewer in headless Chromium (`common::webdriver`) on connections
//! recorded by `acp-tee http-proxy`, while they are open. Needs the app
//! built (`scripts/build-viewer`) and chromium with chromium-driver
//! (`scripts/install-tools chromium`).

use super::*;
use crate::common::webdriver::Browser;

#[test]
fn the_viewer_draws_an_open_http_connection_live_with_its_transport_facts() {
    let agent = Agent::start();
    let store = TempStore::new();
    let proxy = Proxy::start(&store.db, &agent.url);
    let mut held = held_client(&proxy.url, 1);
    let served = Served::start(&store.db, &[]);
    // The connection's recorder creates its trace after the client has its
    // first answers: wait for it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        let traces: Vec<Value> = served.get("/api/traces");
        if let Some(id) = traces.first().and_then(|t| t["id"].as_i64()) {
            break id;
        }
        assert!(Instant::now() < deadline, "serve lists no trace of the open connection within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    let b = Browser::start();
    b.goto(&format!("{}/traces/{id}", served.url));
    // The live view follows the newest frames: the first rows are scrolled to, as a reader would.
    b.wait_for("rows drawn", |b| !b.find_all(".frame").is_empty());
    b.js("document.getElementById('diagram-scroll').scrollTop = 0;", serde_json::json!([]));
    b.wait_for("the conversation in the diagram", |b| {
        let methods = b.texts(".frame .method");
        ["initialize", "session/new", "session/prompt", "session/request_permission"]
            .iter()
            .all(|m| methods.iter().any(|t| t.trim() == *m))
    });
    // The proxy's notes are on the stderr lane.
    b.wait_for("the notes", |b| b.texts(".frame.stderr .preview").iter().any(|t| t.contains("SSE")));
    // A frame's detail shows its transport facts.
    // (By script: the first rows sit under the sticky lane heads.)
    b.js(
        r#"document.querySelector('.frame[data-kind="response"][aria-label$="session/new"]').click()"#,
        serde_json::json!([]),
    );
    b.wait_for("the transport facts", |b| {
        b.texts("#detail h3").iter().any(|t| t.contains("Transport (HTTP or WebSocket)"))
            && b.texts("#detail pre.envelope").iter().any(|t| t.contains("connectionId"))
    });
    b.screenshot("http-proxy-detail");
    // Live: the client's DELETE arrives while the page is open.
    writeln!(held.stdin.take().unwrap()).unwrap();
    assert!(wait_within(&mut held, Duration::from_secs(30)).unwrap().success());
    b.wait_for("the end of the connection, live", |b| {
        // The last rows are below the fold of this window: scrolled to, as a reader would.
        b.js(
            "const s = document.getElementById('diagram-scroll'); s.scrollTop = s.scrollHeight;",
            serde_json::json!([]),
        );
        let page = b.texts("body").concat();
        page.contains("the client ended the connection (DELETE answered 202 Accepted)")
            && b.texts(".frame.stderr .preview").iter().any(|t| t.contains("the client went away during the SSE"))
    });
    b.screenshot("http-proxy-live");
}
