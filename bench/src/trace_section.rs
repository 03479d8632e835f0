//! Sections 4–6 of the report, on one large generated trace (and a tenth of
//! it for the export comparison): the server's API and live push, the viewer
//! in headless Chromium, and export.

use crate::procs::{self, mib};
use crate::report::{f, n, Report};
use crate::server::{self, Server};
use crate::stats::median;
use crate::tracegen::{self, Generated};
use crate::{export, viewer, Config};
use acp_tee_webdriver::Browser;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// The generated store and its two traces.
pub struct Traces {
    /// The store file.
    pub db: PathBuf,
    /// The large trace (1,000,000 frames; 20,000 with `--quick`).
    pub big: Generated,
    /// A tenth of it.
    pub small: Generated,
}

/// Records the two traces through the real acp-tee and reports how fast.
pub fn generate(cfg: &Config, report: &mut Report) -> Result<Traces> {
    let db = cfg.work.join("big.db");
    let target = if cfg.quick { 20_000 } else { 1_000_000 };
    report.say("## Generated traces\n");
    report.say(&format!(
        "Recorded by `acp-tee --db big.db -- acp-tee-bench __agent` (bench/src/tracegen.rs): `session/prompt` \
         (8 in 10; answered by two `session/update` notifications and a response), `session/set_mode`, \
         `session/new`, `session/load`; every 41st request answered with an error, every 100th writes a \
         stderr line; 64 requests in flight. Target {} frames, then a tenth of that.\n",
        n(target)
    ));
    let big = tracegen::generate(&cfg.acp_tee, &db, "big", target, tracegen::Sessions::InTurn)?;
    let small = tracegen::generate(&cfg.acp_tee, &db, "small", target / 10, tracegen::Sessions::InTurn)?;
    let size = std::fs::metadata(&db)?.len();
    let rows = [&big, &small]
        .iter()
        .map(|g| {
            vec![
                g.trace_id.to_string(),
                n(g.frames),
                f(g.took.as_secs_f64(), 2),
                n((g.frames as f64 / g.took.as_secs_f64()) as u64),
            ]
        })
        .collect::<Vec<_>>();
    report.table(&["trace", "frames (all stored)", "seconds to trace end", "frames/s end to end"], &rows);
    report.say(&format!("Store file: {:.0} MiB.\n", mib(size)));
    Ok(Traces { db, big, small })
}

/// Section 4: API requests on the large trace and live push.
pub fn server(cfg: &Config, report: &mut Report, t: &Traces) -> Result<()> {
    report.say("## 4. Server\n");
    let reps = if cfg.quick { 3 } else { 15 };
    let srv = Server::start(&cfg.acp_tee, &t.db, &cfg.dist)?;
    let (id, total) = (t.big.trace_id, t.big.frames as i64);
    let deep = total * 9 / 10;
    // Searches first: as a user meets them, right after the recording.
    let paths = [
        ("search, rare word", format!("/api/traces/{id}/frames?q={}&limit=200", tracegen::RARE_WORD)),
        ("search, common word", format!("/api/traces/{id}/frames?q=fox&limit=200")),
        ("trace list", "/api/traces".to_owned()),
        ("first page", format!("/api/traces/{id}/frames?limit=200")),
        ("stats", format!("/api/traces/{id}/stats")),
        ("sessions", format!("/api/traces/{id}/sessions")),
        ("a session's first turns", format!("/api/traces/{id}/sessions/sess-0?limit=50")),
        ("a session's turns from 500", format!("/api/traces/{id}/sessions/sess-0?offset=500&limit=50")),
        ("deep page (offset 90%)", format!("/api/traces/{id}/frames?offset={deep}&limit=200")),
        ("cursor page (after 50%)", format!("/api/traces/{id}/frames?after={}&limit=200", total / 2)),
        ("last page", format!("/api/traces/{id}/frames?offset={}&limit=200", total - 200)),
        ("method filter", format!("/api/traces/{id}/frames?method=session/new&limit=200")),
        ("method filter, deep", format!("/api/traces/{id}/frames?method=session/new&offset=2000&limit=200")),
        ("errors only", format!("/api/traces/{id}/frames?errors=true&limit=200")),
        ("dir + kind", format!("/api/traces/{id}/frames?dir=agent_to_client&kind=notification&limit=200")),
        ("slower than 1 ms", format!("/api/traces/{id}/frames?min_latency_ms=1&limit=200")),
        ("one frame", format!("/api/traces/{id}/frames/{}", total / 2)),
        ("requests by seq", format!("/api/traces/{id}/requests?limit=100")),
        ("requests by latency", format!("/api/traces/{id}/requests?sort=latency&desc=true&limit=100")),
        ("requests by seq, last page", format!("/api/traces/{id}/requests?desc=true&limit=100")),
        ("in flight at 50%", format!("/api/traces/{id}/in_flight?at={}", total / 2)),
    ];
    let catching_up = {
        let (db, trace_id, frames, ended) = (t.db.clone(), t.big.trace_id, t.big.frames, t.big.ended);
        std::thread::spawn(move || index_caught_up(&db, trace_id, frames, &ended))
    };
    let searched_at = t.big.ended.elapsed().as_secs_f64();
    let indexed = search_index_state(&t.db);
    let mut indexed_after = String::new();
    let mut rows = Vec::new();
    for (what, path) in &paths {
        let timed = server::time_get(&srv, path, reps)?;
        if *what == "search, common word" {
            indexed_after = search_index_state(&t.db);
        }
        let target = match *what {
            "search, rare word" | "search, common word" => {
                let ok = timed.warm.p95 < SEARCH_P95_MS;
                format!("p95 < {SEARCH_P95_MS} ms: {}", report.verdict(&format!("API {what}"), ok))
            }
            "first page" | "stats" => {
                let ok = timed.first_ms < 50.0 && timed.warm.p50 < 50.0;
                format!("< 50 ms: {}", report.verdict(&format!("API {what}"), ok))
            }
            // What the Session tab asks first; the first `sessions` builds
            // the model from every frame, later ones read only new frames.
            "sessions" | "a session's first turns" => {
                let ok = timed.first_ms < 1500.0 && timed.warm.p50 < 50.0;
                format!("first < 1500 ms, p50 < 50 ms: {}", report.verdict(&format!("API {what}"), ok))
            }
            // The Requests tab's first page (#35).
            "requests by seq" | "requests by latency" => {
                let ok = timed.first_ms < REQUESTS_MS && timed.warm.p95 < REQUESTS_MS;
                format!("< {REQUESTS_MS} ms: {}", report.verdict(&format!("API {what}"), ok))
            }
            _ => String::new(),
        };
        rows.push(request_row(what.to_string(), path, &timed, target));
    }
    let caught_up = catching_up.join().unwrap_or_else(|_| "unknown (the watch failed)".to_owned());
    // The same searches once the index is built (or a minute after the end).
    for (what, path) in &paths[..2] {
        let timed = server::time_get(&srv, path, reps)?;
        let ok = timed.warm.p95 < SEARCH_P95_MS;
        let target = format!("p95 < {SEARCH_P95_MS} ms: {}", report.verdict(&format!("API {what}, indexed"), ok));
        rows.push(request_row(format!("{what}, {}", search_index_state(&t.db)), path, &timed, target));
    }
    drop(srv);
    report.say(&format!(
        "`acp-tee serve` on the {}-frame trace; each request once (`first`), then {reps} more timed \
         (p50/p95/max), in ms, wall time of a full HTTP GET from this process over loopback. The searches \
         come first, {searched_at:.1} s after the {}-frame trace's recording ended (the {}-frame one \
         recorded meanwhile): search index {indexed} when they started, {indexed_after} when they were \
         done. The index reached the end of the {}-frame trace {caught_up}; the last two rows are the same \
         searches timed then.\n",
        n(t.big.frames),
        n(t.big.frames),
        n(t.small.frames),
        n(t.big.frames),
    ));
    report.table(&["request", "path", "first ms", "p50 ms", "p95 ms", "max ms", "frames", "bytes", "target"], &rows);

    let count = if cfg.quick { 20 } else { 200 };
    let live = server::live_push(&cfg.acp_tee, &cfg.work.join("live"), &cfg.dist, count)?;
    let ok = live.p99 < 50.0;
    let verdict = report.verdict("live push < 50 ms", ok);
    report.say(&format!(
        "Live push: a line written into a recording `acp-tee -- cat` → the SSE `frames` event carrying it on \
         `/api/traces/N/live`, {count} lines paced 10–29 ms apart; ms.\n"
    ));
    report.table(
        &["p50 ms", "p95 ms", "p99 ms", "max ms", "target (p99)"],
        &[vec![f(live.p50, 1), f(live.p95, 1), f(live.p99, 1), f(live.max, 1), format!("< 50 ms: {verdict}")]],
    );
    Ok(())
}

/// A row of the server's table: what was asked, the path, its times, its size.
fn request_row(what: String, path: &str, timed: &server::Timed, target: String) -> Vec<String> {
    vec![
        what,
        format!("`{path}`"),
        f(timed.first_ms, 1),
        f(timed.warm.p50, 1),
        f(timed.warm.p95, 1),
        f(timed.warm.max, 1),
        timed.frames.map_or("—".into(), |c| c.to_string()),
        n(timed.body_bytes as u64),
        target,
    ]
}

/// The target for the request table's first page, by seq or by latency, in the API and painted (#35).
const REQUESTS_MS: f64 = 200.0;

/// The target for the first page of a search, p95 (#21).
const SEARCH_P95_MS: f64 = 50.0;

/// How far the full-text index reaches now, over every trace.
fn search_index_state(db: &std::path::Path) -> String {
    let q = || -> rusqlite::Result<(i64, i64)> {
        let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let indexed = c.query_row("SELECT coalesce(sum(indexed_seq), 0) FROM search_progress", [], |r| r.get(0))?;
        let max = c.query_row("SELECT coalesce(sum(frame_count), 0) FROM traces", [], |r| r.get(0))?;
        Ok((indexed, max))
    };
    match q() {
        Ok((i, m)) => format!("{} of {} frames indexed", n(i as u64), n(m as u64)),
        Err(e) => format!("unknown ({e})"),
    }
}

/// Watches the search index (every 50 ms) until it reaches the last of
/// trace `trace_id`'s `frames` frames; says when, as text: seconds after
/// `ended`, or that it had not within a minute of it.
fn index_caught_up(db: &std::path::Path, trace_id: i64, frames: u64, ended: &std::time::Instant) -> String {
    let reached = || -> rusqlite::Result<i64> {
        let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        c.query_row("SELECT coalesce(max(indexed_seq), 0) FROM search_progress WHERE trace_id = ?1", [trace_id], |r| {
            r.get(0)
        })
    };
    let limit = std::time::Duration::from_secs(60);
    loop {
        if reached().is_ok_and(|seq| seq as u64 >= frames) {
            return format!("{:.1} s after its recording ended", ended.elapsed().as_secs_f64());
        }
        if ended.elapsed() > limit {
            return format!("not within {} s of its recording's end", limit.as_secs());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Section 5: the viewer in headless Chromium.
pub fn viewer(cfg: &Config, report: &mut Report, t: &Traces) -> Result<()> {
    report.say("## 5. Viewer\n");
    if !cfg.dist.join("index.html").is_file() {
        bail!("the viewer is not built ({} has no index.html): run scripts/build-viewer", cfg.dist.display());
    }
    let (Some(driver), Some(chromium)) = (procs::which("chromedriver"), procs::which("chromium")) else {
        bail!("chromium and chromedriver are not on PATH: run scripts/install-tools");
    };
    let srv = Server::start(&cfg.acp_tee, &t.db, &cfg.dist)?;
    // Chromium wants its profile on a short local path.
    let profile = std::env::temp_dir().join(format!("acp-tee-bench-profile-{}", std::process::id()));
    let b = Browser::start(&driver.display().to_string(), &chromium.display().to_string(), &profile)?;
    viewer::install_observer(&b)?;
    let loads = if cfg.quick { 2 } else { 5 };
    // First, while this server has built no session model yet.
    let session = viewer::session_tab(&b, &srv.url, t.big.trace_id, loads)?;
    let first = viewer::first_diagram(&b, &srv.url, t.big.trace_id, loads)?;
    let painted = median(&first.painted);
    let ok = painted < 1500.0 && first.painted[0] < 1500.0;
    let verdict = report.verdict("viewer first diagram < 1.5 s", ok);
    report.say(&format!(
        "Headless Chromium (window 1400×900) through chromedriver, `/traces/{}` of the {}-frame trace. Times \
         from the page's `performance.now()` (origin: navigation start): the first `.frame` row inserted \
         (MutationObserver installed before any page script) and the paint after it. {loads} loads; the \
         first with an empty browser cache.\n",
        t.big.trace_id,
        n(t.big.frames)
    ));
    report.table(
        &["load", "first row inserted ms", "painted ms", "rows in DOM", "DOM elements", "target"],
        &[
            vec![
                "first (cold cache)".into(),
                f(first.inserted[0], 0),
                f(first.painted[0], 0),
                n(first.rows),
                n(first.elements),
                String::new(),
            ],
            vec![
                format!("median of {loads}"),
                f(median(&first.inserted), 0),
                f(painted, 0),
                String::new(),
                String::new(),
                format!("< 1500 ms: {verdict}"),
            ],
        ],
    );

    let ok = session[0] < 1500.0 && median(&session) < 1500.0;
    let verdict = report.verdict("viewer Session tab < 1.5 s", ok);
    report.say(&format!(
        "Session tab: `/traces/{}?tab=session`, time from navigation until the first session's facts and its \
         first turn are painted; the first load asks a server that has not built the trace's session model \
         yet (it reads every frame, from when the server serves the page), the others find it kept.\n",
        t.big.trace_id
    ));
    report.table(
        &["first load (model built) ms", "each later load ms", "target"],
        &[vec![
            f(session[0], 0),
            session[1..].iter().map(|v| f(*v, 0)).collect::<Vec<_>>().join(", "),
            format!("first and median < 1500 ms: {verdict}"),
        ]],
    );

    let mut rows = Vec::new();
    for (what, query) in [("by seq", ""), ("by latency, slowest first", "&req_sort=latency&req_order=desc")] {
        let times = viewer::requests_tab(&b, &srv.url, t.big.trace_id, query, loads)?;
        let ok = median(&times) < REQUESTS_MS;
        let verdict = report.verdict(&format!("viewer Requests tab {what} < {REQUESTS_MS} ms"), ok);
        rows.push(vec![
            what.to_owned(),
            f(times[0], 0),
            f(median(&times), 0),
            format!("median < {REQUESTS_MS} ms: {verdict}"),
        ]);
    }
    report.say(&format!(
        "Requests tab: `/traces/{}?tab=requests` (sorted by seq, then by latency), the trace's view open (its \
         diagram drawn and its findings come): time from a click on the tab until the first page of 100 rows \
         is painted.\n",
        t.big.trace_id
    ));
    report.table(&["sort", "first ms", "median ms", "target"], &rows);
    // The jumps below start from the diagram, as `first_diagram` leaves it.
    viewer::first_diagram(&b, &srv.url, t.big.trace_id, 1)?;

    let reps = if cfg.quick { 1 } else { 3 };
    let jumps = viewer::jumps(&b, t.big.frames, &[0.1, 0.5, 0.9, 1.0], reps)?;
    report.say(&format!(
        "Jumps: `#diagram-scroll` set from the top to a fraction of the trace; time until the rows there are \
         drawn (no loading placeholder left, row numbers around the expected one); median of {reps}.\n"
    ));
    let rows = jumps
        .iter()
        .map(|j| {
            vec![format!("{:.0}%", j.frac * 100.0), f(j.ms, 0), format!("#{}–#{}", n(j.lo as u64), n(j.hi as u64))]
        })
        .collect::<Vec<_>>();
    report.table(&["position", "rows drawn after ms", "rows drawn"], &rows);

    let ms = if cfg.quick { 500 } else { 2000 };
    let mut rows = Vec::new();
    // Baseline: the same page not scrolling, for the frame cadence of headless
    // Chromium on this machine at this moment.
    let idle = viewer::scroll(&b, 0, ms)?;
    for px in [0, 40, 400] {
        let s = if px == 0 { idle.clone() } else { viewer::scroll(&b, px, ms)? };
        let target = if px == 0 {
            "baseline".to_owned()
        } else {
            // At most one more dropped frame at p95 than idle (a frame is 16.7 ms;
            // 0.3 ms of slack for timer jitter, so that a tie is not a failure).
            let smooth = s.frame_ms.p95 <= idle.frame_ms.p95 + 17.0;
            format!("p95 <= idle p95 + 17 ms: {}", report.verdict(&format!("smooth scroll at {px} px/frame"), smooth))
        };
        rows.push(vec![
            if px == 0 {
                "idle, no scrolling".to_owned()
            } else {
                format!("{px} px/frame (~{} px/s at 60 fps)", px * 60)
            },
            n(s.frames),
            f(s.frame_ms.p50, 1),
            f(s.frame_ms.p95, 1),
            f(s.frame_ms.max, 1),
            format!("{:.0}%", 100.0 * s.blank as f64 / s.frames.max(1) as f64),
            handler_cell(&s),
            target,
        ]);
    }
    // The browser's own limit: the rows the diagram draws, copied into a
    // static page of the same styles and scrolled the same way, with no
    // application code running. Made last, as it replaces the diagram.
    viewer::jumps(&b, t.big.frames, &[0.3], 1)?;
    viewer::static_copy(&b, 4000)?;
    for px in [40, 400] {
        let s = viewer::scroll_static(&b, px, ms)?;
        rows.push(vec![
            format!("static copy, {px} px/frame"),
            n(s.frames),
            f(s.frame_ms.p50, 1),
            f(s.frame_ms.p95, 1),
            f(s.frame_ms.max, 1),
            "—".to_owned(),
            handler_cell(&s),
            "baseline: the browser's own limit".to_owned(),
        ]);
    }
    report.say(&format!(
        "Continuous scroll from 30% of the trace for {ms} ms, `scrollTop += px` on every animation frame; \
         frame intervals (ms; 16.7 = 60 fps), against the same page idle. `loading rows shown`: frames in \
         which a row was still a placeholder. `static copy`: the rows the diagram draws, copied 4,000 \
         times into a static element of the same page and styles (the lanes behind them) and scrolled the \
         same way, with no application code running: what headless Chromium itself manages on this \
         machine. `scroll handlers`: the time the page's own `scroll` listeners took per scroll event.\n"
    ));
    report.table(
        &[
            "speed",
            "frames",
            "p50 ms",
            "p95 ms",
            "max ms",
            "loading rows shown",
            "scroll handlers p50 / p95 ms",
            "target",
        ],
        &rows,
    );

    // The overview strip, from a server of its own that has not added the trace up yet (last: the page
    // it leaves open is that server's, gone afterwards).
    let fresh = Server::start(&cfg.acp_tee, &t.db, &cfg.dist)?;
    let strip = viewer::overview_strip(&b, &fresh.url, t.big.trace_id, loads)?;
    drop(fresh);
    let draws: Vec<f64> = strip.iter().map(viewer::StripLoad::first_draw).collect();
    let ok = draws[0] < 300.0 && median(&draws) < 300.0;
    let verdict = report.verdict("viewer overview strip first draw < 300 ms", ok);
    report.say(&format!(
        "Overview strip: `/traces/{}` on a server started for it, so the first load asks for an overview of \
         the {}-frame trace that server has not made (it starts adding the trace up when it serves the page; \
         later loads find it kept). First draw: from the app's request for `/overview` (resource timing) to \
         the paint after the strip entered the DOM; also when the answer arrived and the paint, ms since \
         navigation.\n",
        t.big.trace_id,
        n(t.big.frames)
    ));
    report.table(
        &["load", "buckets", "asked ms", "answered ms", "painted ms", "first draw ms", "target"],
        &strip
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    if i == 0 { "first (server cold)".into() } else { format!("{}", i + 1) },
                    n(s.buckets),
                    f(s.asked, 0),
                    f(s.answered, 0),
                    f(s.painted, 0),
                    f(s.first_draw(), 0),
                    if i == 0 { format!("first and median < 300 ms: {verdict}") } else { String::new() },
                ]
            })
            .collect::<Vec<_>>(),
    );

    Ok(())
}

/// Section 6: export of the large and the small trace.
pub fn export(cfg: &Config, report: &mut Report, t: &Traces) -> Result<()> {
    report.say("## 6. Export\n");
    report.say(
        "`acp-tee export --db big.db --trace ID --format F -o FILE`; wall time and peak `VmHWM` (sampled every 5 ms) of the \
         export process. The ndjson files are checked to hold one line per frame plus the header.\n",
    );
    let mut rows = Vec::new();
    let mut rss = Vec::new();
    for g in [&t.big, &t.small] {
        for format in ["json", "ndjson"] {
            let out = cfg.work.join(format!("export-{}.{format}", g.trace_id));
            let e = export::run(&cfg.acp_tee, &t.db, g.trace_id, format, &out, g.frames)
                .with_context(|| format!("export of trace {}", g.trace_id))?;
            rss.push((g.frames, e.max_rss));
            rows.push(vec![
                n(g.frames),
                format.into(),
                f(e.took.as_secs_f64(), 2),
                n((g.frames as f64 / e.took.as_secs_f64()) as u64),
                f(e.bytes as f64 / 1e6, 0),
                f(mib(e.max_rss), 1),
            ]);
        }
    }
    report.table(&["frames", "format", "seconds", "frames/s", "MB written", "peak RSS MiB"], &rows);
    // Constant memory: the 10× larger trace may not need more than 1.25× the RSS (+4 MiB of noise).
    let big = rss.iter().filter(|r| r.0 == t.big.frames).map(|r| r.1).max().unwrap_or(0);
    let small = rss.iter().filter(|r| r.0 == t.small.frames).map(|r| r.1).max().unwrap_or(0);
    let ok = (big as f64) <= small as f64 * 1.25 + 4.0 * 1024.0 * 1024.0;
    let v = report.verdict("export in constant memory", ok);
    report.say(&format!(
        "Constant memory (peak RSS at {} frames ≤ 1.25 × peak at {} + 4 MiB): {:.1} vs {:.1} MiB: {v}\n",
        n(t.big.frames),
        n(t.small.frames),
        mib(big),
        mib(small)
    ));
    Ok(())
}

/// The scroll handlers' median and 95th percentile, or a dash when no scroll
/// event came.
fn handler_cell(s: &viewer::Scroll) -> String {
    s.handler_ms.as_ref().map_or("—".to_owned(), |h| format!("{} / {}", f(h.p50, 1), f(h.p95, 1)))
}

/// At least this many frames per second checked on the large trace (#16).
const CHECK_FRAMES_PER_S: f64 = 200_000.0;

/// `acp-tee check` of both traces: frames per second and memory.
pub fn check(cfg: &Config, report: &mut Report, t: &Traces) -> Result<()> {
    report.say("## 7. Protocol checks\n");
    report.say(
        "`acp-tee check --db big.db --trace ID --format json`: every frame read from the store, its JSON-RPC shape, \
         its params or result deserialized into the official ACP schema types and the sequence rules applied; wall \
         time and peak `VmHWM` (sampled every 5 ms) of the check process. The run fails unless every frame was read.\n",
    );
    let mut rows = Vec::new();
    let mut big_rate = 0.0;
    for g in [&t.big, &t.small] {
        let c = crate::check::run(&cfg.acp_tee, &t.db, g.trace_id, g.frames)
            .with_context(|| format!("check of trace {}", g.trace_id))?;
        let rate = g.frames as f64 / c.took.as_secs_f64();
        if g.frames == t.big.frames {
            big_rate = rate;
        }
        rows.push(vec![
            n(g.frames),
            f(c.took.as_secs_f64(), 2),
            n(rate as u64),
            f(mib(c.max_rss), 1),
            format!("{} / {} / {}", c.counts.0, c.counts.1, c.counts.2),
        ]);
    }
    report.table(&["frames", "seconds", "frames/s", "peak RSS MiB", "errors / warnings / infos"], &rows);
    let v = report.verdict("check at 200,000 frames/s", big_rate >= CHECK_FRAMES_PER_S);
    report.say(&format!(
        "Target: at least {} frames/s on the {}-frame trace: {} frames/s: {v}\n",
        n(CHECK_FRAMES_PER_S as u64),
        n(t.big.frames),
        n(big_rate as u64)
    ));
    Ok(())
}
