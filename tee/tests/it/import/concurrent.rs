//! Imports beside recordings: a recording during a long import, a write
//! lock held past the busy timeout, a killed import, a failed one of many
//! chunks.

use super::*;

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
    Store::create_or_open(&store.db).unwrap().maintain(0).unwrap();
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
