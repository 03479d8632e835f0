//! The replay bar: on the million-frame trace, a 10x replay from just before the idle gap grows the diagram
//! up to its cursor, plays the gap compressed and says so, pauses, steps exactly a frame (buttons and
//! keys), resumes paused after a reload and leaves with Esc; on a real recorded session, a 4x replay from
//! the start draws its rows in seq order until the whole trace shows, and the Session tab of a paused
//! replay tells the turn as far as the cursor; on a trace still recorded, frames that arrive wait for the
//! cursor and show once the replay is left.

use super::fixtures::*;
use crate::common::webdriver::Browser;
use crate::common::*;
use serde_json::json;

/// The replay's cursor in the URL (`replay=SEQ`).
fn replay_in_url(b: &Browser) -> Option<i64> {
    let url = b.current_url();
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|p| p.strip_prefix("replay=")).and_then(|s| s.parse().ok())
}

/// The last row drawn and the frame the bar's clock is at, read together.
fn last_row_and_cursor(b: &Browser) -> (Option<i64>, Option<i64>) {
    let v = b.js(
        "const seqs = Array.from(document.querySelectorAll('#diagram-scroll .frame'), e => +e.dataset.seq); \
         const m = (document.getElementById('replay-clock') || {}).textContent?.match(/#(\\d+)/); \
         return [seqs.length ? Math.max(...seqs) : null, m ? +m[1] : null];",
        json!([]),
    );
    (v[0].as_i64(), v[1].as_i64())
}

fn playing(b: &Browser) -> bool {
    b.texts("#replay-play").iter().any(|t| t.contains("pause"))
}

/// True when the page scrolls sideways.
fn scrolls_sideways(b: &Browser) -> bool {
    b.js("return document.documentElement.scrollWidth > document.documentElement.clientWidth;", json!([]))
        == json!(true)
}

#[test]
fn on_a_million_frames_a_10x_replay_grows_to_its_cursor_compresses_the_gap_pauses_and_steps_a_frame() {
    let server = Server::start(million());
    let b = Browser::start();
    b.resize(1400, 900);
    let from = big::GAP_AFTER - 200;
    b.goto(&format!("{}/traces/1?frame={from}&speed=10", server.url));
    b.wait_for("the selected frame's detail", |b| !b.find_all("#replay-from").is_empty());
    b.click("#replay-from");
    b.wait_for("the replay bar, playing", |b| !b.find_all("#replay-bar").is_empty() && playing(b));
    assert!(b.find_all("#replay-speed-10.on").len() == 1, "10x is the speed chosen");

    // Growing: no row past the cursor is ever drawn, and the last row reaches it.
    let mut grew = Vec::new();
    b.wait_for("the diagram growing to the gap", |b| {
        let (last, cursor) = last_row_and_cursor(b);
        if let (Some(last), Some(cursor)) = (last, cursor) {
            assert!(last <= cursor, "row {last} drawn past the cursor {cursor}");
            grew.push(last);
        }
        grew.last().is_some_and(|&l| l > from)
    });
    // The gap: played compressed, said on the bar, the cursor and last row on the frame before it.
    b.wait_for("the idle gap said and drawn up to its first frame", |b| {
        let said = b.texts("#replay-skip").iter().any(|t| t.contains("skipping") && t.contains("idle"));
        said && last_row_and_cursor(b) == (Some(big::GAP_AFTER), Some(big::GAP_AFTER))
    });
    assert!(b.texts("#replay-skip").join("").contains("1m 00s"), "{:?}", b.texts("#replay-skip"));
    b.screenshot("replay-million-gap-1400");
    // Past it: the frames after the gap grow in, and the note goes.
    b.wait_for("frames after the gap", |b| {
        let (last, cursor) = last_row_and_cursor(b);
        assert!(last <= cursor, "row {last:?} drawn past the cursor {cursor:?}");
        last.is_some_and(|l| l > big::GAP_AFTER + 50) && b.find_all("#replay-skip").is_empty()
    });
    assert!(grew.windows(2).all(|w| w[0] <= w[1]), "the last row went back: {grew:?}");

    // Pause: the URL and the last row are the cursor; a frame forward is exactly one more, back one less.
    b.click("#replay-play");
    b.wait_for("paused, the URL at the cursor", |b| {
        !playing(b) && replay_in_url(b).is_some() && replay_in_url(b) == last_row_and_cursor(b).1
    });
    let at = replay_in_url(&b).unwrap();
    b.wait_for("the last row at the cursor", |b| last_row_and_cursor(b) == (Some(at), Some(at)));
    b.click("#replay-forward");
    b.wait_for("a frame forward", |b| last_row_and_cursor(b) == (Some(at + 1), Some(at + 1)));
    assert_eq!(replay_in_url(&b), Some(at + 1));
    b.click("#replay-back");
    b.wait_for("a frame back", |b| last_row_and_cursor(b) == (Some(at), Some(at)));
    // The keys, with nothing focused: `.` forward, `,` back; the replay stayed paused throughout.
    b.js("document.activeElement && document.activeElement.blur();", json!([]));
    b.key(None, ".");
    b.wait_for("`.`: a frame forward", |b| last_row_and_cursor(b) == (Some(at + 1), Some(at + 1)));
    b.key(None, ",");
    b.wait_for("`,`: a frame back", |b| last_row_and_cursor(b) == (Some(at), Some(at)));
    assert!(!playing(&b) && replay_in_url(&b) == Some(at), "stepping pauses and the URL follows");

    // A reload resumes paused at the same frame (the diagram shows the selected frame; End, the last row).
    b.goto(&b.current_url());
    b.wait_for("the replay resumed after a reload", |b| last_row_and_cursor(b).1 == Some(at));
    assert!(!playing(&b), "a reload resumes paused");
    b.wait_for("the last row, the cursor", |b| {
        b.key(None, "End");
        last_row_and_cursor(b) == (Some(at), Some(at))
    });

    // The slider: let go at 300 s of the trace's time goes back to about frame 300,000 (placed by the overview's
    // buckets), paused, the diagram cut there.
    b.wait_for("the overview", |b| !b.find_all("#overview .ov-hit").is_empty());
    b.js(
        "const s = document.getElementById('replay-slider'); s.value = '300000'; \
         s.dispatchEvent(new Event('change', {bubbles: true}));",
        json!([]),
    );
    b.wait_for("the cursor at the slider's time", |b| replay_in_url(b).is_some_and(|s| s < at));
    let there = replay_in_url(&b).unwrap();
    assert!((there - 300_000).abs() < 3_000, "300 s is frame {there}");
    b.wait_for("the clock at it", |b| last_row_and_cursor(b).1 == Some(there));
    b.wait_for("the last row, the cursor", |b| {
        b.key(None, "End");
        last_row_and_cursor(b) == (Some(there), Some(there))
    });
    assert!(!playing(&b));

    // The bar fits 900 px.
    b.resize(900, 800);
    b.wait_for("the bar at 900 px", |b| rect(b, "#replay-bar")[2] <= 900.0);
    assert!(!scrolls_sideways(&b), "the page scrolls sideways at 900 px");
    assert!(
        rect(&b, "#replay-close")[2] <= 900.0 && rect(&b, "#replay-slider")[2] - rect(&b, "#replay-slider")[0] >= 100.0
    );
    b.screenshot("replay-million-paused-900");

    // Esc leaves: the whole trace, the bar gone, no `replay` in the URL.
    b.js("document.activeElement && document.activeElement.blur();", json!([]));
    b.press("Escape");
    b.wait_for("the replay left", |b| b.find_all("#replay-bar").is_empty() && replay_in_url(b).is_none());
    b.wait_for("the whole trace", |b| {
        b.key(None, "End");
        drawn_seqs(b).last() == Some(&big::FRAMES)
    });
}

#[test]
fn a_real_session_replayed_at_4x_draws_its_rows_in_order_and_the_session_tab_tells_it_up_to_the_cursor() {
    let store = TempStore::new();
    record_eliza(&store, "I would like to see my messages");
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.resize(1400, 900);
    b.goto(&format!("{}/traces/1", server.url));
    b.wait_for("the diagram", |b| b.find_all(".frame").len() >= 9);
    let all = drawn_seqs(&b);
    assert_eq!(all, (1..=all.len() as i64).collect::<Vec<_>>(), "the whole short trace is drawn");

    b.goto(&format!("{}/traces/1?speed=4", server.url));
    b.wait_for("the replay button", |b| !b.find_all("#replay-start:not(.hidden)").is_empty());
    b.click("#replay-start");
    // Every look at the diagram while it plays: the rows are the first frames of the trace, in order, and
    // none past the cursor.
    b.wait_for("the replay at its end", |b| {
        let drawn = drawn_seqs(b);
        assert_eq!(drawn, (1..=drawn.len() as i64).collect::<Vec<_>>(), "not a prefix of the trace");
        let (last, cursor) = last_row_and_cursor(b);
        assert!(last <= cursor || cursor.is_none(), "row {last:?} drawn past the cursor {cursor:?}");
        !playing(b) && drawn == all && cursor == all.last().copied()
    });
    b.screenshot("replay-eliza-end-1400");

    // The Session tab of a replay paused at the prompt: the prompt, no reply yet; a few frames on, the reply.
    let prompt = b.js(
        "const f = Array.from(document.querySelectorAll('.frame[data-kind=request]')).find(e => e.querySelector('.method').textContent.trim() === 'session/prompt'); return +f.dataset.seq;",
        json!([]),
    );
    let prompt = prompt.as_i64().unwrap();
    b.goto(&format!("{}/traces/1?tab=session&replay={prompt}", server.url));
    let text = |b: &Browser, css: &str| b.texts(css).join("");
    b.wait_for("the prompt, at the cursor", |b| {
        text(b, "#turn-0 .msg.prompt .msg-text") == "I would like to see my messages"
    });
    assert!(text(&b, "#turn-0 .msg.agent .msg-text").trim().is_empty(), "the reply shows before it came");
    assert_eq!(text(&b, "#turn-0 .turn-end .stop"), "no answer yet", "the turn ended before it did");
    assert!(!b.find_all("#replay-bar").is_empty(), "the bar is over the Session tab too");
    let open = text(&b, "#open-requests");
    assert!(open.contains("at the replay's cursor") && open.contains("session/prompt waiting"), "{open}");
    b.screenshot("replay-eliza-session-at-prompt-1400");
    b.resize(900, 800);
    b.wait_for("the bar at 900 px", |b| rect(b, "#replay-bar")[2] <= 900.0);
    assert!(!scrolls_sideways(&b), "the page scrolls sideways at 900 px");
    b.screenshot("replay-eliza-session-at-prompt-900");
    // Played on to the end (space: play): the reply and the end of the turn.
    b.js("document.activeElement && document.activeElement.blur();", json!([]));
    b.key(None, " ");
    b.wait_for("the reply and the turn's end", |b| {
        !text(b, "#turn-0 .msg.agent .msg-text").trim().is_empty() && text(b, "#turn-0 .turn-end .stop") == "end_turn"
    });
}

#[test]
fn a_replay_of_a_trace_still_recorded_keeps_its_cursor_while_frames_arrive_and_leaving_shows_them() {
    use std::io::Write;
    let store = TempStore::new();
    let mut tee = tee_command(&store.db, &["--name", "live-one"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    let mut say = |line: String| {
        writeln!(tee_in, "{line}").unwrap();
        // `cat` echoes it: two frames each.
        assert_eq!(read_exact_from(&mut tee, line.len() + 1), format!("{line}\n").into_bytes());
    };
    for id in 1..=3 {
        say(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping/{id}","params":{{}}}}"#));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while store.open().list_traces().unwrap().first().is_none_or(|t| t.frame_count < 6) {
        assert!(std::time::Instant::now() < deadline, "the frames never showed in the store");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let server = Server::start(&store.db);
    let b = Browser::start();
    b.goto(&format!("{}/traces/1?replay=2", server.url));
    b.wait_for("the replay at frame 2", |b| last_row_and_cursor(b) == (Some(2), Some(2)));
    say(r#"{"jsonrpc":"2.0","method":"live/ping","params":{}}"#.to_owned());
    b.wait_for("the new frames counted", |b| b.texts("body").join(" ").contains("8 frames"));
    assert_eq!(last_row_and_cursor(&b), (Some(2), Some(2)), "a live frame was drawn past the cursor");
    b.screenshot("replay-live-1400");
    b.click("#replay-close");
    b.wait_for("the whole trace with the live frame", |b| {
        b.texts(".frame .method").iter().any(|t| t.trim() == "live/ping") && b.find_all("#replay-bar").is_empty()
    });
    drop(tee_in);
    tee.wait().unwrap();
}
