//! Retention and trace management from the command line: `prune` by age,
//! count and size, `rm`, `rename`, `pin`/`unpin`, while a recording and
//! `serve` use the same store.

use crate::common::{bin, tee_command, Served, TempStore};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `acp-tee ARGS --db DB`, its output.
fn acp_tee(db: &Path, args: &[&str]) -> Output {
    Command::new(bin()).args(args).arg("--db").arg(db).output().expect("run acp-tee")
}

/// `acp-tee ARGS --db DB`, which must succeed; its stdout.
fn ok(db: &Path, args: &[&str]) -> String {
    let out = acp_tee(db, args);
    assert!(out.status.success(), "acp-tee {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A prompt line of about 1 KB, numbered.
fn line(i: usize) -> String {
    let pad = "p".repeat(1000);
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"s\",\"prompt\":[{{\"type\":\"text\",\"text\":\"{pad} word{i}\"}}]}}}}\n")
}

/// Records a trace named `name` of `lines` requests echoed by `cat` (twice
/// as many frames), ended.
fn record(store: &TempStore, name: &str, lines: usize) {
    let input: String = (0..lines).map(line).collect();
    let out = crate::common::run_with_input(tee_command(&store.db, &["--name", name], &["cat"]), input.into_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Imports the acp-tee NDJSON export `export` as a trace named `name` that
/// ended `days` days ago.
fn import_aged(store: &TempStore, export: &str, name: &str, days: i64) {
    let mut lines = export.lines();
    let mut header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let ended = chrono::Utc::now() - chrono::Duration::days(days);
    let started = ended - chrono::Duration::seconds(5);
    header["trace"]["name"] = name.into();
    header["trace"]["started_at"] = started.to_rfc3339_opts(chrono::SecondsFormat::Micros, true).into();
    header["trace"]["ended_at"] = ended.to_rfc3339_opts(chrono::SecondsFormat::Micros, true).into();
    let file = store.dir.path().join(format!("{name}.ndjson"));
    let mut text = header.to_string();
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    ok(&store.db, &["import", file.to_str().unwrap()]);
}

/// Rows of trace `id` in every table that holds a trace's rows (the search
/// index by its rowid range), by table.
fn rows_of(db: &Path, id: i64) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = conn
        .prepare(
            "SELECT DISTINCT m.name FROM sqlite_master m, pragma_table_info(m.name) c
             WHERE m.type = 'table' AND c.name = 'trace_id'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(tables.len() >= 7, "{tables:?}");
    let mut rows: Vec<(String, i64)> = tables
        .into_iter()
        .map(|t| {
            let n =
                conn.query_row(&format!("SELECT count(*) FROM {t} WHERE trace_id = ?1"), [id], |r| r.get(0)).unwrap();
            (t, n)
        })
        .collect();
    let (lo, hi) = (id << 40, (id + 1) << 40);
    rows.push((
        "frames_fts".into(),
        conn.query_row("SELECT count(*) FROM frames_fts WHERE rowid > ?1 AND rowid < ?2", [lo, hi], |r| r.get(0))
            .unwrap(),
    ));
    rows.push((
        "traces".into(),
        conn.query_row("SELECT count(*) FROM traces WHERE id = ?1", [id], |r| r.get(0)).unwrap(),
    ));
    rows
}

/// The ids the API lists.
fn listed(served: &Served) -> Vec<i64> {
    let traces: Vec<Value> = served.get("/api/traces");
    traces.iter().map(|t| t["id"].as_i64().unwrap()).collect()
}

/// Traces by name: id and frames.
fn by_name(db: &Path) -> std::collections::BTreeMap<String, (i64, i64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn.prepare("SELECT name, id, frame_count FROM traces").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?)))).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Waits until the search index holds every frame of every trace (serve's
/// background maintenance does it), so a removal has index rows to remove.
fn wait_indexed(db: &Path) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let behind: i64 = conn
            .query_row(
                "SELECT count(*) FROM traces t LEFT JOIN search_progress p ON p.trace_id = t.id
                 WHERE t.ended_at IS NOT NULL AND coalesce(p.indexed_seq, 0) < t.frame_count",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if behind == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{behind} traces not indexed within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn prune_by_age_count_and_size_while_a_recording_and_serve_run() {
    let store = TempStore::new();
    record(&store, "base", 500);
    let export = ok(&store.db, &["export", "--trace", "latest", "--format", "ndjson", "--no-redact"]);
    ok(&store.db, &["rm", "base"]);
    // Eight traces of about 1 MB each that ended 60, 50, ... 1 days ago.
    for (name, days) in
        [("d60", 60), ("d50", 50), ("d40", 40), ("d30", 30), ("d20", 20), ("d10", 10), ("d5", 5), ("d1", 1)]
    {
        import_aged(&store, &export, name, days);
    }
    assert!(ok(&store.db, &["pin", "d50"]).contains("pinned trace"));

    // A recording that goes on through every prune.
    let mut live = tee_command(&store.db, &["--name", "live"], &["cat"]).spawn().unwrap();
    let mut live_in = live.stdin.take().unwrap();
    live_in.write_all(line(0).as_bytes()).unwrap();
    let served = Served::start(&store.db, &[]);
    wait_indexed(&store.db);
    let before = by_name(&store.db);
    let pinned_rows = rows_of(&store.db, before["d50"].0);
    let size_before = std::fs::metadata(&store.db).unwrap().len();

    // By age: those that ended more than 35 days ago, but the pinned one.
    let out = ok(&store.db, &["prune", "--older-than", "35d"]);
    assert!(out.contains("removed 2 traces"), "{out}");
    assert!(out.contains("kept 1 pinned and 0 not ended"), "{out}");
    // By count: the 5 latest stay (the live one among them), the pinned one too.
    let out = ok(&store.db, &["prune", "--keep", "5"]);
    assert!(out.contains("removed 1 trace ("), "{out}");
    // A dry run by size says what would go and removes nothing.
    let out = ok(&store.db, &["prune", "--max-size", "2MB", "--dry-run"]);
    assert!(out.contains("would remove"), "{out}");
    let now = by_name(&store.db);
    assert_eq!(now.len(), 6, "{now:?}");
    // By size: the oldest until about 2 MB are left.
    let out = ok(&store.db, &["prune", "--max-size", "2MB"]);
    assert!(out.contains("removed"), "{out}");

    let after = by_name(&store.db);
    let mut names: Vec<&str> = after.keys().map(String::as_str).collect();
    names.sort();
    assert!(names.contains(&"live") && names.contains(&"d50"), "{names:?}");
    assert!(!names.contains(&"d60") && !names.contains(&"d40") && !names.contains(&"d30"), "{names:?}");
    assert!(after.len() < 5, "{names:?}");
    for (name, (id, _)) in &before {
        if after.contains_key(name) {
            continue;
        }
        let rows = rows_of(&store.db, *id);
        assert!(rows.iter().all(|(_, n)| *n == 0), "{name}: {rows:?}");
        assert!(!listed(&served).contains(id), "{name} still listed");
        let status = ureq::get(&format!("{}/api/traces/{id}", served.url)).call().map_or_else(
            |e| match e {
                ureq::Error::Status(code, _) => code,
                other => panic!("{other}"),
            },
            |r| r.status(),
        );
        assert_eq!(status, 404, "{name}");
    }
    assert_eq!(rows_of(&store.db, before["d50"].0), pinned_rows, "the pinned trace is whole");
    let size_after = std::fs::metadata(&store.db).unwrap().len();
    assert!(size_after < size_before / 2, "{size_before} -> {size_after}");

    // The live recording went on: every line sent is stored.
    live_in.write_all(line(1).as_bytes()).unwrap();
    drop(live_in);
    let out = live.wait_with_output().unwrap();
    assert_eq!(out.stdout, [line(0), line(1)].concat().into_bytes());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let traces: Vec<Value> = served.get("/api/traces");
        let t = traces.iter().find(|t| t["name"] == "live").expect("the live trace is listed");
        if t["ended_at"].is_string() {
            assert_eq!((t["frame_count"].as_i64(), t["missing_frames"].as_i64()), (Some(4), Some(0)), "{t}");
            break;
        }
        assert!(Instant::now() < deadline, "the live trace did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn rm_rename_pin_and_unpin_say_what_they_did_and_refuse_what_they_cannot() {
    let store = TempStore::new();
    record(&store, "first", 3);
    record(&store, "second", 3);
    let out = ok(&store.db, &["rename", "first", "renamed"]);
    assert!(out.contains("to \"renamed\""), "{out}");
    assert!(ok(&store.db, &["list"]).contains("renamed"));
    ok(&store.db, &["pin", "renamed"]);
    let refused = acp_tee(&store.db, &["rm", "renamed", "second"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("is pinned; `acp-tee unpin 1` first; nothing was removed"), "{err}");
    assert_eq!(by_name(&store.db).len(), 2);
    assert!(ok(&store.db, &["unpin", "1"]).contains("unpinned trace 1"));
    let out = ok(&store.db, &["rm", "renamed", "second"]);
    assert!(out.contains("removed trace 1 \"renamed\"") && out.contains("removed trace 2 \"second\""), "{out}");
    assert!(by_name(&store.db).is_empty());
    // What names nothing, or a name no trace may have, is a clear error.
    let missing = acp_tee(&store.db, &["rm", "7"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no trace"), "{missing:?}");
    record(&store, "third", 1);
    for bad in ["", "a\nb"] {
        let out = acp_tee(&store.db, &["rename", "third", bad]);
        assert!(!out.status.success(), "{bad:?}");
    }
    // A trace being recorded cannot be removed.
    let mut live = tee_command(&store.db, &["--name", "live"], &["cat"]).stdin(Stdio::piped()).spawn().unwrap();
    let mut live_in = live.stdin.take().unwrap();
    live_in.write_all(line(0).as_bytes()).unwrap();
    let mut buf = vec![0u8; line(0).len()];
    std::io::Read::read_exact(live.stdout.as_mut().unwrap(), &mut buf).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !by_name(&store.db).contains_key("live") {
        assert!(Instant::now() < deadline, "the live trace never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = acp_tee(&store.db, &["rm", "live"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("has not ended"), "{out:?}");
    drop(live_in);
    live.wait().unwrap();
}

#[test]
fn prune_without_a_rule_says_how_to_give_one() {
    let store = TempStore::new();
    record(&store, "t", 1);
    let out = acp_tee(&store.db, &["prune"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to prune by"), "{out:?}");
    let out = acp_tee(&store.db, &["prune", "--older-than", "soon"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// Waits until the store at `db` holds exactly the traces named `names`.
fn wait_for_names(db: &Path, names: &[&str], by: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = by_name(db);
        let mut have: Vec<&str> = now.keys().map(String::as_str).collect();
        have.sort();
        if have == names {
            return;
        }
        assert!(Instant::now() < deadline, "{by} did not leave {names:?} within 60 s: {have:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_recorder_and_serve_apply_the_configured_policy_by_themselves() {
    let store = TempStore::new();
    for name in ["a", "b", "c"] {
        record(&store, name, 3);
    }
    ok(&store.db, &["pin", "a"]);
    // A recording with a policy in its environment: its recorder, when idle,
    // removes all but the 2 latest (itself and c), never the pinned one.
    let mut live = tee_command(&store.db, &["--name", "live"], &["cat"]);
    live.env("ACP_TEE_RETENTION_KEEP", "2");
    let mut live = live.spawn().unwrap();
    let mut live_in = live.stdin.take().unwrap();
    live_in.write_all(line(0).as_bytes()).unwrap();
    wait_for_names(&store.db, &["a", "c", "live"], "the recorder");
    drop(live_in);
    assert!(live.wait().unwrap().success());

    // serve with a policy in the config file: all but the latest.
    let config = store.dir.path().join("config.toml");
    std::fs::write(&config, "[retention]\nkeep = 1\n").unwrap();
    let mut serve = Command::new(bin());
    serve.args(["serve", "--port", "0", "--db"]).arg(&store.db).env("ACP_TEE_CONFIG", &config);
    let mut served = serve.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    wait_for_names(&store.db, &["a", "live"], "serve");
    served.kill().unwrap();
    served.wait().unwrap();
}
