//! Find (`find=`): Enter and shift+Enter step through the frames holding a word, selecting each, wrapping
//! at the ends, while every frame stays drawn; the counter says which match of how many; the rows drawn that
//! match are marked. On the generated million-frame trace and a real recorded session, with the trace
//! list's search of every trace's frames.

use super::*;

/// The body of `GET path` on the page's server, as JSON (a synchronous request from the page).
fn api(b: &Browser, path: &str) -> serde_json::Value {
    b.js(
        "const x = new XMLHttpRequest(); x.open('GET', arguments[0], false); x.send(); \
         if (x.status !== 200) throw new Error(arguments[0] + ': ' + x.status + ' ' + x.responseText); \
         return JSON.parse(x.responseText);",
        json!([path]),
    )
}

/// The seqs of the frames the frames filter finds for `q` (the oracle find is checked against).
fn filtered_seqs(b: &Browser, trace: i64, q: &str) -> Vec<i64> {
    let page = api(b, &format!("/api/traces/{trace}/frames?q={q}&limit=1000"));
    assert_eq!(page["has_more"], json!(false));
    page["frames"].as_array().unwrap().iter().map(|f| f["seq"].as_i64().unwrap()).collect()
}

/// Enter (shift+Enter when `back`) in the find field.
fn enter(b: &Browser, back: bool) {
    b.js(
        "document.getElementById('find').dispatchEvent(new KeyboardEvent('keydown', \
         {key: 'Enter', shiftKey: arguments[0], bubbles: true, cancelable: true}));",
        json!([back]),
    );
}

fn status(b: &Browser) -> String {
    b.texts("#find-status").concat().trim().to_owned()
}

/// The seqs of the drawn rows marked as matches.
fn found_rows(b: &Browser) -> Vec<i64> {
    let v = b.js(
        "return Array.from(document.querySelectorAll('#diagram-scroll .frame.found'), e => +e.dataset.seq);",
        json!([]),
    );
    let mut seqs: Vec<i64> = v.as_array().unwrap().iter().map(|s| s.as_i64().unwrap()).collect();
    seqs.sort();
    seqs
}

/// The height of everything the diagram scrolls through.
fn scroll_height(b: &Browser) -> f64 {
    b.num("return document.getElementById('diagram-scroll').scrollHeight;")
}

/// Waits until the step selects `seq` (in the URL and drawn), the counter says `counter`, and the rows
/// marked as matches are exactly the drawn ones among `matches`, `seq` among them.
fn wait_at(b: &Browser, seq: i64, counter: &str, matches: &[i64]) {
    b.wait_for(&format!("match {seq}: {counter}"), |b| {
        selected_in_url(b) == Some(seq) && status(b) == counter && drawn_seqs(b).contains(&seq)
    });
    b.wait_for(&format!("the rows holding the word marked around {seq}"), |b| {
        let drawn = drawn_seqs(b);
        let want: Vec<i64> = drawn.iter().copied().filter(|s| matches.contains(s)).collect();
        found_rows(b) == want && want.contains(&seq)
    });
    assert_eq!(b.find_all(&format!(".frame.selected[data-seq=\"{seq}\"]")).len(), 1);
}

#[test]
fn find_steps_through_a_rare_word_in_a_million_frames_and_every_frame_stays() {
    let server = Server::start(million());
    let b = Browser::start();
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the first rows", |b| drawn_seqs(b).contains(&1));
    b.wait_for("the frame count", |b| !b.texts(".filters .matching").concat().is_empty());
    let (height, count) = (scroll_height(&b), b.texts(".filters .matching").concat());
    // `zebra` is in the first chunk of every 997th turn: nine of them (the trace ends before the 9970th).
    let zebras = filtered_seqs(&b, 1, "zebra");
    assert_eq!(zebras.len(), 9, "{zebras:?}");

    b.type_into("#find", "zebra");
    enter(&b, false);
    wait_at(&b, zebras[0], "1 of 9", &zebras);
    let url = b.current_url();
    assert!(url.contains("find=zebra") && !url.contains("q="), "find is not the filter: {url}");
    // Every frame is still drawn: the same count and height, the rows around the match that do not hold it.
    assert_eq!((scroll_height(&b), b.texts(".filters .matching").concat()), (height, count.clone()));
    let drawn = drawn_seqs(&b);
    assert!(drawn.contains(&(zebras[0] - 1)) && drawn.contains(&(zebras[0] + 1)), "{drawn:?}");
    assert!(b.find_all(".frame:not(.found)").len() > 10, "rows without the word are drawn");
    let marks = b.texts(&format!(".frame[data-seq=\"{}\"] mark", zebras[0]));
    assert_eq!(marks, ["zebra"], "the word is marked in the preview");
    b.screenshot("find-million-1400");

    enter(&b, false);
    wait_at(&b, zebras[1], "2 of 9", &zebras);
    enter(&b, true);
    wait_at(&b, zebras[0], "1 of 9", &zebras);
    // Back past the first: the last, said to have wrapped.
    enter(&b, true);
    wait_at(&b, zebras[8], "9 of 9 · wrapped to the last", &zebras);
    assert_eq!((scroll_height(&b), b.texts(".filters .matching").concat()), (height, count.clone()));
    b.resize(900, 900);
    b.wait_for("the match drawn at 900 px", |b| drawn_seqs(b).contains(&zebras[8]));
    b.screenshot("find-million-900");
    b.resize(1400, 900);
    enter(&b, false);
    wait_at(&b, zebras[0], "1 of 9 · wrapped to the first", &zebras);
    // The arrow buttons step as the keys do.
    b.click("#find-next");
    wait_at(&b, zebras[1], "2 of 9", &zebras);

    // A word no frame holds: said so, the selection stays.
    b.type_into("#find", "okapi");
    enter(&b, false);
    b.wait_for("no match", |b| status(b) == "no match");
    assert_eq!(selected_in_url(&b), Some(zebras[1]));
    b.wait_for("no row marked", |b| found_rows(b).is_empty());

    // Filtered to a range holding three of them: find counts and steps within what the diagram shows.
    let (from, to) = (zebras[3] - 1, zebras[5] + 1);
    b.goto(&format!("{}/traces/1?from={from}&to={to}", server.url));
    b.wait_for("the range's first rows", |b| drawn_seqs(b).contains(&from));
    b.type_into("#find", "zebra");
    enter(&b, false);
    wait_at(&b, zebras[3], "1 of 3", &zebras);
    enter(&b, true);
    wait_at(&b, zebras[5], "3 of 3 · wrapped to the last", &zebras);
    enter(&b, false);
    wait_at(&b, zebras[3], "1 of 3 · wrapped to the first", &zebras);
}

#[test]
fn find_on_a_recorded_session_and_the_list_finds_the_trace_holding_a_word() {
    let store = TempStore::new();
    record_eliza(&store, "I would like a marmalade recipe");
    import_trace(&store, "plain", &pairs(6, 10.0));
    let server = Server::start(&store.db);
    let b = Browser::start();

    // Find in the recorded session: a word in several frames.
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    let rows = b.find_all(".frame").len();
    let hits = filtered_seqs(&b, 1, "sessionId");
    assert!(hits.len() >= 3, "{hits:?}");
    let n = hits.len();
    b.press("f");
    b.wait_for("the find field focused", |b| b.js("return document.activeElement.id;", json!([])) == json!("find"));
    b.type_text("sessionId");
    enter(&b, false);
    wait_at(&b, hits[0], &format!("1 of {n}"), &hits);
    enter(&b, false);
    wait_at(&b, hits[1], &format!("2 of {n}"), &hits);
    enter(&b, true);
    wait_at(&b, hits[0], &format!("1 of {n}"), &hits);
    enter(&b, true);
    wait_at(&b, hits[n - 1], &format!("{n} of {n} · wrapped to the last"), &hits);
    enter(&b, false);
    wait_at(&b, hits[0], &format!("1 of {n} · wrapped to the first"), &hits);
    assert_eq!(b.find_all(".frame").len(), rows, "every frame stays drawn");
    // With the search filter as well, find steps among the frames it shows.
    let both = filtered_seqs(&b, 1, "sessionId+marmalade");
    assert!(!both.is_empty() && both.len() < n, "{both:?}");
    let filtered = filtered_seqs(&b, 1, "marmalade");
    b.goto(&format!("{}/traces/1?q=marmalade&find=sessionId", server.url));
    b.wait_for("the filtered frames", |b| drawn_seqs(b) == filtered);
    enter(&b, false);
    wait_at(&b, both[0], &format!("1 of {}", both.len()), &both);

    // The list: Enter in its field searches every trace's frames; the hit opens at its first match.
    let marmalade = filtered_seqs(&b, 1, "marmalade");
    assert!(!marmalade.is_empty());
    assert!(filtered_seqs(&b, 2, "marmalade").is_empty());
    b.goto(&format!("{}/", server.url));
    b.wait_for("the trace list", |b| b.find_all("tr.trace-row").len() == 2);
    b.type_into("#find-trace", "marmalade");
    b.key(Some("#find-trace"), "Enter");
    b.wait_for("the frame search", |b| b.find_all("#frame-search .hit").len() == 1);
    let summary = b.texts("#frame-search-summary").concat();
    assert_eq!(summary, "1 trace holds “marmalade” in its frames");
    assert_eq!(b.find_all("#frame-search .hit[data-trace=\"1\"]").len(), 1);
    let hit = b.texts("#frame-search .hit").concat();
    assert!(
        hit.contains(&format!("{} match", marmalade.len())) && hit.contains(&format!("first #{}", marmalade[0])),
        "{hit}"
    );
    b.screenshot("list-frame-search-1400");
    b.resize(900, 900);
    b.screenshot("list-frame-search-900");
    b.resize(1400, 900);
    b.click("#frame-search .hit-link");
    b.wait_for("the trace at its first match", |b| {
        selected_in_url(b) == Some(marmalade[0]) && b.current_url().contains("/traces/1?")
    });
    assert!(b.current_url().contains("find=marmalade"), "{}", b.current_url());
    b.wait_for("find on in the field", |b| {
        b.js("return document.getElementById('find').value;", json!([])) == json!("marmalade")
    });
    b.wait_for("the counter at the first match", |b| status(b) == format!("1 of {}", marmalade.len()));
    b.wait_for("the match marked", |b| {
        found_rows(b) == marmalade.iter().copied().filter(|s| drawn_seqs(b).contains(s)).collect::<Vec<_>>()
            && !found_rows(b).is_empty()
    });
    b.screenshot("find-recorded-session");
}
