//! `acp-tee import` through the real binary: the real conductor trace
//! fixture, a real sacp-tee log of yopo and elizacp, and malformed files that
//! must leave the store unchanged.

mod common;

use acp_tee::Store;
use common::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conductor-trace.jsons")
}

fn import(db: &Path, args: &[&str]) -> Output {
    Command::new(bin()).arg("import").arg("--db").arg(db).args(args).output().unwrap()
}

#[test]
fn the_conductor_fixture_imports_paired_and_timed() {
    let store = TempStore::new();
    let out = import(&store.db, &["--name", "from-conductor", fixture().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("imported 13 frames from {} (jsons) as trace 1\n", fixture().display())
    );
    let trace = store.only_trace();
    assert_eq!((trace.name.as_deref(), trace.mode.as_str()), (Some("from-conductor"), "import"));
    assert_eq!(trace.command, ["import", "jsons", fixture().to_str().unwrap()]);
    assert_eq!((trace.frame_count, trace.error_count), (13, 0));
    let frames = exported_frames(&store.db, 1);
    // (seq, kind, method, reply_to_seq, latency_ns) from the fixture's ts.
    type Row<'a> = (i64, &'a str, &'a str, Option<i64>, Option<i64>);
    let got: Vec<Row> = frames
        .iter()
        .map(|f| {
            (
                f["seq"].as_i64().unwrap(),
                f["kind"].as_str().unwrap(),
                f["method"].as_str().unwrap(),
                f["reply_to_seq"].as_i64(),
                f["latency_ns"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, "request", "initialize", None, None),
            (2, "response", "initialize", Some(1), Some(3_966_803 - 1_354_728)),
            (3, "request", "session/new", None, None),
            (4, "response", "session/new", Some(3), Some(6_292_555 - 4_619_711)),
            (5, "request", "session/prompt", None, None),
            (6, "notification", "session/update", None, None),
            (7, "response", "session/prompt", Some(5), Some(13_422_931 - 6_654_671)),
            (8, "request", "session/prompt", None, None),
            (9, "notification", "session/update", None, None),
            (10, "response", "session/prompt", Some(8), Some(14_742_965 - 13_871_538)),
            (11, "request", "session/prompt", None, None),
            (12, "notification", "session/update", None, None),
            (13, "response", "session/prompt", Some(11), Some(17_740_749 - 16_613_065)),
        ]
    );
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
    // The session comes from session/new's result, on every later message.
    let session = "4a93f76e-2345-41ec-b240-9ea5c88b667d";
    assert!(frames[3..].iter().all(|f| f["session_id"] == session), "{frames:?}");
    assert_eq!(frames[0]["sender"], "Client");
    assert_eq!(frames[1]["receiver"], "Client");
    // The viewer's API shows previews and the origin like for recordings.
    let summary = store.open().trace_summary(1).unwrap();
    assert_eq!(summary.imported_from, Some(format!("jsons file {}", fixture().display())));
    let page = store.open().frame_page(1, &Default::default()).unwrap();
    assert_eq!(page.frames[5].preview.as_deref(), Some("Do you often feel tired today 0?"));
}

/// Every trace of the store, exported without redaction: what "unchanged" compares.
fn everything(db: &Path) -> Vec<u8> {
    let out = Command::new(bin()).args(["export", "--trace", "all", "--no-redact", "--db"]).arg(db).output().unwrap();
    assert!(out.status.success());
    out.stdout
}

#[test]
fn a_malformed_file_changes_nothing_unless_bad_lines_are_skipped() {
    let store = TempStore::new();
    assert!(import(&store.db, &[fixture().to_str().unwrap()]).status.success());
    let before = everything(&store.db);
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture()).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(7, r#"{"type":"request","ts":0.0138,"from":"Client","to":"Agent","id":9,"method":"#);
    lines.push("not json at all");
    let bad = dir.path().join("broken.jsons");
    std::fs::write(&bad, lines.join("\n")).unwrap();

    let out = import(&store.db, &[bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with(&format!("acp-tee: error: {}:8: not a conductor trace event: ", bad.display())), "{err}");
    assert!(err.trim_end().ends_with("nothing was imported (fix the line, or pass --skip-bad to leave bad lines out)"));
    assert!(out.stdout.is_empty());
    assert_eq!(everything(&store.db), before, "a failed import changed the store");
    assert_eq!(store.open().list_traces().unwrap().len(), 1);

    let out = import(&store.db, &["--skip-bad", bad.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("acp-tee: warning: 2 bad lines of {} were left out (--skip-bad)\n", bad.display())
    );
    assert_eq!(store.open().trace(2).unwrap().frame_count, 13);

    // A cut-off acp-tee document fails whole too, naming where.
    let export = dir.path().join("cut.json");
    let full = Command::new(bin()).args(["export", "--trace", "1", "--db"]).arg(&store.db).output().unwrap().stdout;
    std::fs::write(&export, &full[..full.len() / 2]).unwrap();
    let before = everything(&store.db);
    let out = import(&store.db, &[export.to_str().unwrap()]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("cut.json: not an acp-tee-trace document: EOF while parsing"), "{err}");
    assert_eq!(everything(&store.db), before);
    let out = import(&store.db, &["--format", "acp-tee", "/nonexistent/t.json"]);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "acp-tee: error: cannot read /nonexistent/t.json: No such file or directory (os error 2); check the path\n"
    );
}

#[test]
fn a_real_sacp_tee_log_imports_paired() {
    let (yopo, elizacp, sacp) = (peer("yopo"), peer("elizacp"), peer("sacp-tee"));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sacp.log");
    let marker = unique_marker("sacp");
    let out = Command::new(yopo)
        .args([
            "I feel like logging",
            "--",
            &sacp,
            "--log-file",
            log.to_str().unwrap(),
            "--",
            &elizacp,
            "--deterministic",
            "acp",
        ])
        .env("ACP_TEE_TEST_MARK", &marker)
        .output()
        .unwrap();
    kill_marked(&marker, "elizacp");
    kill_marked(&marker, "sacp-tee");
    assert!(out.status.success(), "yopo through sacp-tee failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("→ "), "{text}");

    let store = TempStore::new();
    let out = import(&store.db, &[log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().contains("(sacp-tee) as trace 1"));
    let frames = exported_frames(&store.db, 1);
    assert_eq!(frames.len(), text.lines().count());
    // sacp-tee itself often loses the last response when yopo kills it (the
    // defect acp-tee fixes), so the prompt's answer may be missing from its
    // log; every response the log holds must be paired.
    for method in ["initialize", "session/new", "session/prompt"] {
        let req = frames.iter().find(|f| f["kind"] == "request" && f["method"] == method).unwrap();
        let resp = frames.iter().find(|f| f["kind"] == "response" && f["id"] == req["id"]);
        if method != "session/prompt" || resp.is_some() {
            let resp: &Value = resp.unwrap_or_else(|| panic!("no response to {method} in the log"));
            assert_eq!(resp["reply_to_seq"], req["seq"]);
            assert_eq!((resp["dir"].as_str(), resp["latency_ns"].as_i64()), (Some("agent_to_client"), Some(0)));
        }
    }
    // The raw lines are the wire bytes sacp-tee logged, newline restored.
    for (f, line) in frames.iter().zip(text.lines()) {
        assert_eq!(f["raw"].as_str().unwrap(), format!("{}\n", &line[line.find(' ').unwrap() + 1..]));
    }
}

// ---- hostile and concurrent imports ----------------------------------------

/// Writes the start of an acp-tee-trace document whose first frame's `raw`
/// never ends, until the reader goes away.
fn endless_document(mut stdin: std::process::ChildStdin) {
    use std::io::Write;
    let head = concat!(
        r#"{"format":"acp-tee-trace","version":1,"traces":[{"id":1,"command":["a"],"mode":"wrap","#,
        r#""started_at":"2026-01-01T00:00:00.000000Z","frame_count":1,"error_count":0,"missing_frames":0,"#,
        "\n",
        r#""frames":[{"seq":1,"t_ns":0,"dir":"client_to_agent","kind":"request","raw":""#,
    );
    if stdin.write_all(head.as_bytes()).is_err() {
        return;
    }
    let chunk = vec![b'a'; 1 << 20];
    while stdin.write_all(&chunk).is_ok() {}
}

#[test]
fn input_without_line_ends_fails_at_the_limit_in_bounded_memory() {
    // 2 GiB of address space: the old code grew until the kernel killed it.
    let limit = 2 << 30;
    for format in ["acp-tee", "jsons", "sacp-tee", "acp-inspector", "acpx", "acp-inspector-fsharp"] {
        let store = TempStore::new();
        let db = store.db.to_str().unwrap();
        let r = run_bounded(&["import", "--db", db, "--format", format, "/dev/zero"], limit, None);
        eprintln!("{format} from /dev/zero: exit {:?}, peak RSS {} MiB", r.code, r.peak_kib / 1024);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (
                Some(1),
                &*format!("acp-tee: error: /dev/zero:1: line longer than {MAX_LINE} bytes; nothing was imported\n")
            ),
            "{format}"
        );
        assert!((r.peak_kib as u64) < MAX_LINE / 1024 * 3 / 2, "{format}: peak RSS {} KiB", r.peak_kib);
        assert!(store.open().list_traces().unwrap().is_empty());
    }
    // The JSON document is read as a stream, not by lines: one value that
    // never ends is refused at the same length.
    let store = TempStore::new();
    let db = store.db.to_str().unwrap();
    let r = run_bounded(&["import", "--db", db, "--format", "acp-tee", "/dev/stdin"], limit, Some(endless_document));
    eprintln!("endless document: exit {:?}, peak RSS {} MiB", r.code, r.peak_kib / 1024);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            Some(1),
            &*format!("acp-tee: error: /dev/stdin:2: a value longer than {MAX_LINE} bytes; nothing was imported\n")
        )
    );
    assert!((r.peak_kib as u64) < MAX_LINE / 1024 * 3 / 2, "peak RSS {} KiB", r.peak_kib);
    assert!(store.open().list_traces().unwrap().is_empty());
}

/// An NDJSON export of one trace of `n` small notifications, its header
/// claiming `n` frames.
fn write_big_ndjson(path: &Path, n: u64) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        out,
        r#"{{"format":"acp-tee-trace","version":1,"trace":{{"id":1,"name":"big","command":["gen"],"mode":"wrap","started_at":"2026-01-01T00:00:00.000000Z","ended_at":"2026-01-01T00:00:01.000000Z","frame_count":{n},"error_count":0,"missing_frames":0}}}}"#
    )
    .unwrap();
    for i in 1..=n {
        writeln!(
            out,
            r#"{{"seq":{i},"t_ns":{},"dir":"client_to_agent","kind":"notification","method":"x","raw":"{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{{\"n\":{i}}}}}\n"}}"#,
            i * 1000
        )
        .unwrap();
    }
    out.flush().unwrap();
}

/// Rows of `table` in the store, hidden ones included (read with SQL, as
/// nothing in acp-tee shows an import in progress).
fn raw_count(db: &Path, table: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap_or(0)
}

/// Waits until the running import `child` of `n` frames has committed some
/// but not all of them; panics when it ends first or after 60 s.
fn wait_for_committed_frames(db: &Path, child: &mut std::process::Child, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let committed = if db.exists() { raw_count(db, "frames") } else { 0 };
        if 0 < committed && committed < n as i64 {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the import ended before any of its frames were committed");
        assert!(Instant::now() < deadline, "no frames committed within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.try_wait().unwrap().is_none(), "the import ended before any of its frames were committed");
}

fn lines(n: usize) -> Vec<u8> {
    (0..n).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n")).collect::<String>().into_bytes()
}

#[test]
fn a_recording_during_a_long_import_is_stored_while_the_import_goes_on() {
    let store = TempStore::new();
    let file = store.dir.path().join("huge.ndjson");
    let n = 600_000;
    write_big_ndjson(&file, n);
    let mut importing = Command::new(bin())
        .args(["import", "--db", store.db.to_str().unwrap(), file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_committed_frames(&store.db, &mut importing, n);
    // Readers do not see the trace before it is complete.
    assert!(store.open().trace_summaries().unwrap().is_empty());
    let out = Command::new(bin()).args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 1, "only the header row");

    let input = lines(500);
    let out = run_with_input(tee_command(&store.db, &["--name", "during"], &["cat"]), input.clone());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, input);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("locked"), "{}", String::from_utf8_lossy(&out.stderr));
    // The recording is stored and ended while the import is still going.
    let deadline = Instant::now() + Duration::from_secs(60);
    let recorded = loop {
        let traces = store.open().list_traces().unwrap();
        if let Some(t) = traces.into_iter().find(|t| t.name.as_deref() == Some("during") && t.ended_at.is_some()) {
            break t;
        }
        assert!(Instant::now() < deadline, "the recording did not end within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(importing.try_wait().unwrap().is_none(), "the import ended before the recording: the test proves nothing");
    assert_eq!((recorded.frame_count, recorded.missing_frames), (1000, 0));
    assert_eq!(store.stream(recorded.id, acp_tee_shared::Direction::AgentToClient), input);

    let done = importing.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let imported = store.open().trace(1).unwrap();
    assert_eq!((imported.frame_count, imported.missing_frames), (n as i64, 0));
    assert_eq!(store.open().list_traces().unwrap().len(), 2);
}

#[test]
fn a_recording_waits_out_a_write_lock_held_past_the_busy_timeout() {
    use std::io::Read;
    let store = TempStore::new();
    drop(Store::create_or_open(&store.db).unwrap());
    // Another process's transaction holds the write lock for 35 s, past the
    // 30 s busy timeout after which the recorder used to give up.
    let holder = rusqlite::Connection::open(&store.db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let started = Instant::now();
    let hold = Duration::from_secs(35);
    let holder = std::thread::spawn(move || {
        while started.elapsed() < hold {
            std::thread::sleep(Duration::from_millis(100));
        }
        holder.execute_batch("ROLLBACK").unwrap();
    });
    let input = lines(200);
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let mut output = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut output).unwrap();
    // Forwarding never waits for the store.
    assert_eq!(output, input);
    assert!(started.elapsed() < Duration::from_secs(30), "forwarding waited for the lock");
    assert!(store.open().list_traces().unwrap().is_empty());
    // acp-tee exits when the run ends; the recorder, on its own, waits.
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(30), "acp-tee waited for the lock");
    // The recorder meets the busy timeout (and warns) only after acp-tee
    // exited: nothing on acp-tee's stderr, and nothing is reported lost.
    assert_eq!(stderr(&out), "");
    holder.join().unwrap();
    let trace = store.only_trace();
    assert_eq!((trace.frame_count, trace.missing_frames), (400, 0));
    assert_eq!(store.stream(trace.id, acp_tee_shared::Direction::ClientToAgent), input);
}

#[test]
fn a_killed_import_is_never_shown_and_the_next_import_removes_it() {
    let store = TempStore::new();
    let file = store.dir.path().join("huge.ndjson");
    let n = 300_000;
    write_big_ndjson(&file, n);
    let mut importing = Command::new(bin())
        .args(["import", "--db", store.db.to_str().unwrap(), file.to_str().unwrap()])
        .spawn()
        .unwrap();
    wait_for_committed_frames(&store.db, &mut importing, n);
    importing.kill().unwrap();
    importing.wait().unwrap();
    assert!(raw_count(&store.db, "frames") > 0);
    assert!(store.open().trace_summaries().unwrap().is_empty());
    assert!(store.open().list_traces().unwrap().is_empty());
    assert!(matches!(store.open().trace(1), Err(acp_tee::StoreError::NoSuchTrace(1))));

    let out = import(&store.db, &[fixture().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!((raw_count(&store.db, "traces"), raw_count(&store.db, "frames")), (1, 13));
    for table in ["method_spans", "kind_counts", "method_stats"] {
        let conn = rusqlite::Connection::open(&store.db).unwrap();
        let other: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM {table} WHERE trace_id NOT IN (SELECT id FROM traces)"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(other, 0, "{table} keeps rows of the removed trace");
    }
}

#[test]
fn a_failed_import_of_many_chunks_leaves_no_row_behind() {
    let store = TempStore::new();
    assert!(import(&store.db, &[fixture().to_str().unwrap()]).status.success());
    let before = everything(&store.db);
    let file = store.dir.path().join("bad-end.ndjson");
    write_big_ndjson(&file, 50_000);
    std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"seq\":\n").unwrap();
    let out = import(&store.db, &[file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad-end.ndjson:50002: "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!((raw_count(&store.db, "traces"), raw_count(&store.db, "frames")), (1, 13));
    assert_eq!(everything(&store.db), before);
}

/// One NDJSON header line for a trace claiming `frames` and `missing`.
fn header(name: &str, frames: i64, missing: i64) -> String {
    format!(
        r#"{{"format":"acp-tee-trace","version":1,"trace":{{"id":7,"name":{},"command":["a"],"mode":"wrap","started_at":"2026-01-01T00:00:00.000000Z","ended_at":"2026-01-01T00:00:01.000000Z","frame_count":{frames},"error_count":0,"missing_frames":{missing}}}}}"#,
        serde_json::to_string(name).unwrap()
    )
}

/// A frame line with `seq`.
fn frame_line(seq: i64) -> String {
    format!(
        r#"{{"seq":{seq},"t_ns":{seq},"dir":"client_to_agent","kind":"notification","method":"m","raw":"{{\"jsonrpc\":\"2.0\",\"method\":\"m\"}}\n"}}"#
    )
}

fn write_lines(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn counts_come_from_the_frames_stored_not_from_the_header() {
    let store = TempStore::new();
    let dir = store.dir.path();
    // A header of 3 frames followed by 20.
    let mut more = vec![header("more", 3, 0)];
    more.extend((1..=20).map(frame_line));
    assert!(import(&store.db, &[write_lines(dir, "more.ndjson", &more).to_str().unwrap()]).status.success());
    let t = store.open().trace(1).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (20, 0));

    // Seqs 2 to 4 taken out, the header still claiming no frame missing:
    // the gap is counted, and pages by offset step over it.
    let mut gappy = vec![header("gappy", 5, 0)];
    gappy.extend([1, 5, 6, 7, 8].map(frame_line));
    assert!(import(&store.db, &[write_lines(dir, "gappy.ndjson", &gappy).to_str().unwrap()]).status.success());
    let t = store.open().trace(2).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (5, 3));
    let page = |offset| {
        let q = acp_tee_shared::api::FrameQuery { offset: Some(offset), limit: Some(2), ..Default::default() };
        let p = store.open().frame_page(2, &q).unwrap();
        (p.frames.iter().map(|f| f.seq).collect::<Vec<_>>(), p.total)
    };
    assert_eq!(
        (0..5).map(page).collect::<Vec<_>>(),
        [(vec![1, 5], 5), (vec![5, 6], 5), (vec![6, 7], 5), (vec![7, 8], 5), (vec![8], 5)]
    );

    // Negative counts are refused.
    for (field, frames, missing) in [("frame_count", -5, 0), ("missing_frames", 1, -1)] {
        let neg = write_lines(dir, "neg.ndjson", &[header("neg", frames, missing), frame_line(1)]);
        let out = import(&store.db, &[neg.to_str().unwrap()]);
        assert_eq!(
            stderr(&out),
            format!(
                "acp-tee: error: {}:1: `{field}` is {}; counts are 0 or more; nothing was imported\n",
                neg.display(),
                frames.min(missing)
            )
        );
    }
    assert_eq!(store.open().list_traces().unwrap().len(), 2);

    // An export cut short at a line end (a full disk): refused, unless
    // --skip-bad, which imports what is there and counts the rest as missing.
    let mut cut = vec![header("cut", 50, 2)];
    cut.extend((1..=30).map(frame_line));
    let cut = write_lines(dir, "cut.ndjson", &cut);
    let out = import(&store.db, &[cut.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:1: the header says the trace has 50 frames, the file holds 30; \
             it is cut short or was edited; nothing was imported \
             (pass --skip-bad to import the frames it holds, the rest counted as missing)\n",
            cut.display()
        )
    );
    assert_eq!(store.open().list_traces().unwrap().len(), 2);
    let out = import(&store.db, &["--skip-bad", cut.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: warning: {} holds 20 frames fewer than its headers say; they are counted as missing (--skip-bad)\n",
            cut.display()
        )
    );
    let t = store.open().trace(3).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (30, 22));
}

#[test]
fn duplicate_and_out_of_range_seqs_are_bad_lines() {
    let store = TempStore::new();
    let dir = store.dir.path();
    let dup = write_lines(
        dir,
        "dup.ndjson",
        &[header("dup", 4, 0), frame_line(1), frame_line(2), frame_line(2), frame_line(3)],
    );
    let out = import(&store.db, &[dup.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:4: duplicate seq 2; nothing was imported \
             (fix the line, or pass --skip-bad to leave bad lines out)\n",
            dup.display()
        )
    );
    assert!(!store.db.exists() || store.open().list_traces().unwrap().is_empty());
    let out = import(&store.db, &["--skip-bad", dup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!("acp-tee: warning: 1 bad lines of {} were left out (--skip-bad)\n", dup.display())
    );
    let t = store.open().trace(1).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (3, 1));

    let big = write_lines(dir, "big.ndjson", &[header("big", 2, 0), frame_line(1), frame_line(1 << 40)]);
    let out = import(&store.db, &[big.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:3: not an acp-tee-trace frame: `seq` must be from 1 to 2^40 - 1, not 1099511627776; \
             nothing was imported (fix the line, or pass --skip-bad to leave bad lines out)\n",
            big.display()
        )
    );
    assert!(import(&store.db, &["--skip-bad", big.to_str().unwrap()]).status.success());
    assert_eq!(store.open().trace(2).unwrap().frame_count, 1);

    // In a JSON document too, with the line the frame ends on.
    let doc = dir.join("dup.json");
    let frames = [1, 2, 2].map(frame_line).join(",\n");
    let text = format!(
        "{{\"format\":\"acp-tee-trace\",\"version\":1,\"traces\":[\n{{\"id\":1,\"command\":[],\"mode\":\"wrap\",\"started_at\":\"2026-01-01T00:00:00.000000Z\",\"frame_count\":3,\"error_count\":0,\"missing_frames\":0,\"frames\":[\n{frames}\n]}}\n]}}\n"
    );
    std::fs::write(&doc, text).unwrap();
    let out = import(&store.db, &[doc.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:5: duplicate seq 2; nothing was imported \
             (fix the line, or pass --skip-bad to leave bad lines out)\n",
            doc.display()
        )
    );
    assert!(import(&store.db, &["--skip-bad", doc.to_str().unwrap()]).status.success());
    assert_eq!(store.open().trace(3).unwrap().frame_count, 2);
}

#[test]
fn list_shows_control_characters_in_stored_names_escaped() {
    let store = TempStore::new();
    let dir = store.dir.path();
    // A name that would set the terminal's title, turn it red, and forge a row.
    let name = "\u{1b}]0;pwned\u{7}\u{1b}[31mred\n99  forged  2026-01-01 00:00:00  1.000s  1  0  0\r";
    let mut lines = vec![header(name, 1, 0)];
    lines.push(frame_line(1));
    // No name: the command's first word is shown instead.
    lines.push(header("x", 1, 0).replace(r#""name":"x","#, "").replace(r#"["a"]"#, r#"["\u009b2J\u001b[H"]"#));
    lines.push(frame_line(1));
    let file = write_lines(dir, "evil.ndjson", &lines);
    assert!(import(&store.db, &[file.to_str().unwrap()]).status.success());
    let out = Command::new(bin()).args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.contains(r"\u{1b}]0;pwned\u{7}\u{1b}[31mred\n99  forged  2026-01-01 00:00:00  1.000s  1  0  0\r"),
        "{text}"
    );
    assert!(text.contains(r"\u{9b}2J\u{1b}[H"), "{text}");
}
