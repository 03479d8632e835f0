//! Exports and imports between formats, on real recorded sessions (yopo
//! driving elizacp through acp-tee) and the real conductor trace fixture;
//! the `.jsons` export read back by the real `agent-client-protocol-trace-viewer`.

use crate::common::*;
use acp_tee::Framer;
use acp_tee::Store;
use acp_tee_shared::Direction;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A real conductor trace (`agent-client-protocol-conductor --trace`), kept in the repository.
const FIXTURE: &str = "tests/fixtures/conductor-trace.jsons";

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE)
}

/// `acp-tee ARGS` on `db`; panics with its stderr unless it succeeds.
fn tee(db: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(bin()).args(args).arg("--db").arg(db).output().unwrap();
    assert!(out.status.success(), "acp-tee {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Records one real session: yopo driving elizacp through acp-tee.
fn record_session(store: &TempStore, prompt: &str) -> i64 {
    let (yopo, elizacp) = (peer("yopo"), peer("elizacp"));
    let marker = unique_marker(prompt);
    let db = store.db.to_str().unwrap();
    let out = Command::new(yopo)
        .args([prompt, "--", bin(), "--db", db, "--", &elizacp, "--deterministic", "acp"])
        .env("ACP_TEE_TEST_MARK", &marker)
        .output()
        .unwrap();
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    let traces = store.ended_traces(1);
    kill_marked(&marker, "elizacp");
    traces.last().unwrap().id
}

/// The document with every trace's `id` blanked: what may differ after a round trip.
fn without_ids(doc: &[u8], ndjson: bool) -> Vec<Value> {
    let text = std::str::from_utf8(doc).unwrap();
    if ndjson {
        text.lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                if v.get("trace").is_some() {
                    v["trace"]["id"] = Value::Null;
                }
                v
            })
            .collect()
    } else {
        let mut v: Value = serde_json::from_str(text).unwrap();
        for t in v["traces"].as_array_mut().unwrap() {
            t["id"] = Value::Null;
        }
        vec![v]
    }
}

#[test]
fn our_format_round_trips_a_recorded_session_exactly() {
    let store = TempStore::new();
    let id = record_session(&store, "I feel like exporting things").to_string();
    for (format, ndjson) in [("json", false), ("ndjson", true)] {
        for redaction in [&["--no-redact"][..], &[][..]] {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join(format!("t.{format}"));
            let mut args = vec!["export", "--trace", &id, "--format", format, "-o", file.to_str().unwrap()];
            args.extend(redaction);
            tee(&store.db, &args);
            let first = std::fs::read(&file).unwrap();
            let printed = String::from_utf8(tee(&store.db, &["import", file.to_str().unwrap()])).unwrap();
            let new_id = store.open().latest_trace_id().unwrap().to_string();
            assert!(printed.contains("(acp-tee) as trace"), "{printed}");
            let mut args = vec!["export", "--trace", &new_id, "--format", format];
            args.extend(redaction);
            let second = tee(&store.db, &args);
            assert_eq!(without_ids(&first, ndjson), without_ids(&second, ndjson), "{format} {redaction:?}");
            // Apart from the id, the text is the same byte for byte.
            let (a, b) = (String::from_utf8(first).unwrap(), String::from_utf8(second).unwrap());
            let strip = |s: &str, id: &str| s.replacen(&format!("\"id\":{id},\"name\""), "\"id\":_,\"name\"", 1);
            assert_eq!(strip(&a, &id), strip(&b, &new_id));
        }
    }
    // The imported copy is told apart from the recording.
    let summaries = store.open().trace_summaries().unwrap();
    assert!(summaries[0].imported_from.as_deref().unwrap().starts_with("acp-tee file "));
    assert_eq!(summaries.last().unwrap().imported_from, None);
}

#[test]
fn the_fixture_goes_through_jsons_both_ways() {
    let store = TempStore::new();
    tee(&store.db, &["import", fixture().to_str().unwrap()]);
    let exported = tee(&store.db, &["export", "--format", "jsons"]);
    let ours: Vec<Value> =
        exported.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    let source = std::fs::read_to_string(fixture()).unwrap();
    let theirs: Vec<Value> = source.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(ours.len(), theirs.len());
    for (mut o, t) in ours.into_iter().zip(theirs) {
        // We know the session the conductor leaves out; everything else is theirs.
        if let Some(session) = o.as_object_mut().unwrap().remove("session") {
            assert_eq!(session, t["params"]["sessionId"]);
        }
        assert_eq!(o, t);
    }
    // And our .jsons imports again to the same frames.
    let dir = tempfile::tempdir().unwrap();
    let again = dir.path().join("again.jsons");
    std::fs::write(&again, &exported).unwrap();
    tee(&store.db, &["import", again.to_str().unwrap()]);
    let frames = |id: i64| -> Vec<Value> {
        exported_frames(&store.db, id)
            .into_iter()
            .map(|mut f| {
                f.as_object_mut().unwrap().remove("raw");
                f
            })
            .collect()
    };
    assert_eq!(frames(1), frames(2));
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Kills the child when dropped, so a failed assertion leaves no server behind.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_conductors_viewer_reads_our_jsons() {
    let store = TempStore::new();
    let id = record_session(&store, "I feel like being viewed").to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ours.jsons");
    tee(&store.db, &["export", "--trace", &id, "--format", "jsons", "-o", file.to_str().unwrap()]);
    let port = free_port();
    let viewer = Command::new(peer("agent-client-protocol-trace-viewer"))
        .args(["--no-open", "--port", &port.to_string()])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _viewer = KillOnDrop(viewer);
    let url = format!("http://127.0.0.1:{port}/events");
    let deadline = Instant::now() + Duration::from_secs(20);
    let events: Value = loop {
        match ureq::get(&url).call() {
            Ok(resp) => break resp.into_json().unwrap(),
            Err(e) => {
                assert!(Instant::now() < deadline, "the trace viewer did not answer: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    // The viewer drops lines it cannot parse: it must have kept every one.
    let ours: Vec<Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events, Value::Array(ours.clone()));
    let kinds: Vec<&str> = ours.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let requests = kinds.iter().filter(|k| **k == "request").count();
    assert_eq!(requests, 3, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "response").count(), 3);
    for e in &ours {
        let pair = (e["from"].as_str().unwrap(), e["to"].as_str().unwrap());
        assert!(pair == ("Client", "Agent") || pair == ("Agent", "Client"), "{e}");
        assert!(e["ts"].as_f64().unwrap() > 0.0);
    }
    // Every response answers a request the viewer can pair (same id, reversed ends).
    for r in ours.iter().filter(|e| e["type"] == "response") {
        assert!(ours.iter().any(|q| q["type"] == "request" && q["id"] == r["id"] && q["to"] == r["from"]), "{r}");
    }
}

/// Checks the structure Perfetto needs: every B has its E on the same
/// track, nothing ends that did not begin, time never goes back on a track,
/// every track used is named. Returns (spans, instants).
fn check_trace_events(doc: &Value) -> (usize, usize) {
    let events = doc["traceEvents"].as_array().unwrap();
    let mut depth: HashMap<(i64, i64), i64> = HashMap::new();
    let mut last_ts: HashMap<(i64, i64), f64> = HashMap::new();
    let mut named = std::collections::HashSet::new();
    let (mut spans, mut instants) = (0, 0);
    for e in events {
        let track = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
        match e["ph"].as_str().unwrap() {
            "M" => {
                if e["name"] == "thread_name" {
                    named.insert(track);
                }
                continue;
            }
            "B" => {
                *depth.entry(track).or_default() += 1;
                spans += 1;
            }
            "E" => {
                let d = depth.entry(track).or_default();
                *d -= 1;
                assert!(*d >= 0, "an end without a begin on {track:?}");
            }
            "i" => instants += 1,
            other => panic!("unexpected phase {other}"),
        }
        assert!(named.contains(&track), "track {track:?} used before it was named");
        let ts = e["ts"].as_f64().unwrap();
        let last = last_ts.entry(track).or_insert(0.0);
        assert!(ts >= *last, "time went back on {track:?}: {ts} after {last}");
        *last = ts;
    }
    assert!(depth.values().all(|d| *d == 0), "spans left open: {depth:?}");
    (spans, instants)
}

#[test]
fn perfetto_export_nests_and_orders_every_track() {
    let store = TempStore::new();
    let id = record_session(&store, "I feel like tracing").to_string();
    let doc: Value =
        serde_json::from_slice(&tee(&store.db, &["export", "--trace", &id, "--format", "perfetto"])).unwrap();
    let (spans, instants) = check_trace_events(&doc);
    assert_eq!(spans, 3, "initialize, session/new, session/prompt");
    assert!(instants >= 1, "session/update notifications are instants");
    let events = doc["traceEvents"].as_array().unwrap();
    let agent_tid =
        events.iter().find(|e| e["name"] == "thread_name" && e["args"]["name"] == "Agent").unwrap()["tid"].clone();
    for b in events.iter().filter(|e| e["ph"] == "B") {
        assert_eq!(b["tid"], agent_tid, "a client's request is a span on the agent's track: {b}");
    }
    // Concurrent and unanswered requests, and the fixture, stay well formed too.
    let script =
        r#"read a; read b; printf '{"id":2,"result":{}}\n'; echo oops >&2; printf '{"id":1,"result":{}}\n'; read c"#;
    let input =
        b"{\"id\":1,\"method\":\"slow\"}\n{\"id\":2,\"method\":\"fast\"}\n{\"id\":3,\"method\":\"never\"}\n".to_vec();
    // The agent ends by itself after `read c`; no short grace may cut it off.
    let out = run_with_input(tee_command(&store.db, &[], &as_strs(&sh(script))), input);
    assert!(out.status.success());
    store.ended_traces(2);
    let doc: Value =
        serde_json::from_slice(&tee(&store.db, &["export", "--trace", "latest", "--format", "perfetto"])).unwrap();
    assert_eq!(check_trace_events(&doc), (3, 1));
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    // The three requests overlap: they cannot share one track.
    assert!(names.contains(&"Agent") && names.contains(&"Agent #2") && names.contains(&"agent stderr"), "{names:?}");
    tee(&store.db, &["import", fixture().to_str().unwrap()]);
    let doc: Value =
        serde_json::from_slice(&tee(&store.db, &["export", "--trace", "all", "--format", "perfetto"])).unwrap();
    check_trace_events(&doc);
}

/// Stores a trace of `n` frames (requests and responses of 400 bytes) straight
/// through the library.
fn generate_trace(db: &Path, n: usize) {
    let mut store = Store::create_or_open(db).unwrap();
    store.maintain(0).unwrap();
    let mut store = acp_tee::Recording::new(store).unwrap();
    let start = acp_tee::TraceStart {
        protocol: None,
        name: Some(format!("big-{n}")),
        command: vec!["gen".into()],
        cwd: None,
        mode: "wrap".into(),
        started_at: "2026-01-01T00:00:00.000000Z".into(),
    };
    let id = store.create_trace(&start, std::process::id()).unwrap();
    let mut framer = Framer::new();
    let pad = "x".repeat(300);
    let mut batch = Vec::new();
    for i in 0..n as u64 {
        let (dir, line) = if i % 2 == 0 {
            (Direction::ClientToAgent, format!("{{\"id\":{i},\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"s\",\"token\":\"{pad}\"}}}}\n"))
        } else {
            (Direction::AgentToClient, format!("{{\"id\":{},\"result\":{{\"text\":\"{pad}\"}}}}\n", i - 1))
        };
        framer.chunk(dir, i * 1000, line.as_bytes(), |f| batch.push(f));
        if batch.len() == 5000 {
            store.insert_frames(id, &batch).unwrap();
            batch.clear();
        }
    }
    store.insert_frames(id, &batch).unwrap();
    let end = acp_tee::TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: "generated".into() };
    store.finish_trace(id, &end, 0, "2026-01-01T00:00:01.000000Z").unwrap();
}

/// Peak resident memory (KiB) of `acp-tee ARGS --db DB`.
fn peak_kib(db: &Path, args: &[&str]) -> i64 {
    let (mut cmd, peak) = PeakRss::command(bin(), None);
    let status = cmd.args(args).arg("--db").arg(db).stdout(Stdio::null()).status().unwrap();
    assert!(status.success(), "acp-tee {args:?} failed: {status}");
    peak.kib()
}

#[test]
fn export_and_import_memory_stay_flat_as_traces_grow() {
    let (small, large) = (TempStore::new(), TempStore::new());
    generate_trace(&small.db, 25_000);
    generate_trace(&large.db, 100_000);
    for format in ["json", "ndjson", "jsons", "perfetto"] {
        let args = ["export", "--format", format, "-o", "/dev/null"];
        let (a, b) = (peak_kib(&small.db, &args), peak_kib(&large.db, &args));
        eprintln!("export {format}: peak RSS {a} KiB at 25k frames, {b} KiB at 100k frames");
        // Four times the frames (about 30 MB more to write) may not cost
        // more than a few MiB of memory.
        assert!(b < a + 4096, "{format}: {a} KiB at 25k frames, {b} KiB at 100k");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut peaks = Vec::new();
    for (store, n) in [(&small, 25_000), (&large, 100_000)] {
        let file = dir.path().join(format!("{n}.json"));
        tee(&store.db, &["export", "--no-redact", "-o", file.to_str().unwrap()]);
        let fresh = TempStore::new();
        let started = Instant::now();
        peaks.push(peak_kib(&fresh.db, &["import", file.to_str().unwrap()]));
        eprintln!("import of {n} frames: {:?}, peak RSS {} KiB", started.elapsed(), peaks.last().unwrap());
        assert_eq!(fresh.open().trace(1).unwrap().frame_count, n);
    }
    assert!(peaks[1] < peaks[0] + 4096, "import: {peaks:?} KiB");
}

#[test]
fn a_trace_with_a_large_frame_round_trips_and_is_searchable() {
    let store = TempStore::new();
    // A 3 MiB prompt (stored and indexed in place) with a word of its own in
    // the middle, between small frames.
    let text =
        format!("{} needle {}", r"the quick brown fox\n".repeat(80_000), r"jumps over the lazy dog\n".repeat(60_000));
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/prompt\",\"params\":{{\"sessionId\":\"s\",\"prompt\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n"
    );
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}}\n{big}{{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}\n"
    );
    let out = run_with_input(tee_command(&store.db, &[], &["cat"]), input.clone().into_bytes());
    assert!(out.status.success());
    assert!(out.stdout == input.as_bytes());
    let id = store.only_trace().id;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.ndjson");
    let trace = id.to_string();
    tee(&store.db, &["export", "--trace", &trace, "--format", "ndjson", "--no-redact", "-o", file.to_str().unwrap()]);
    tee(&store.db, &["import", file.to_str().unwrap()]);
    let copy = store.open().latest_trace_id().unwrap();
    assert_ne!(copy, id);
    let second = tee(&store.db, &["export", "--trace", &copy.to_string(), "--format", "ndjson", "--no-redact"]);
    assert_eq!(without_ids(&std::fs::read(&file).unwrap(), true), without_ids(&second, true));
    let mut db = store.open();
    let mut big_seqs = HashMap::new();
    for trace in [id, copy] {
        let frames = store.frames(trace);
        assert_eq!(frames.len(), 6);
        let seqs: Vec<i64> = frames.iter().filter(|f| f.raw == big.as_bytes()).map(|f| f.seq).collect();
        assert_eq!(seqs.len(), 2, "trace {trace}: the large frame is not stored exactly, both ways");
        big_seqs.insert(trace, seqs);
    }
    let search = |db: &Store, trace| {
        let q = acp_tee_shared::api::FrameQuery { q: Some("needle".into()), ..Default::default() };
        db.frame_page(trace, &q).unwrap().frames.iter().map(|f| f.seq).collect::<Vec<_>>()
    };
    // Found whether scanned or, once the frames are in it, by the index.
    assert_eq!(search(&db, copy), big_seqs[&copy]);
    while db.index_for_search(1000).unwrap() > 0 {}
    for trace in [id, copy] {
        assert_eq!(search(&db, trace), big_seqs[&trace], "trace {trace}");
    }
}

#[test]
fn export_to_dash_writes_stdout_and_the_note_counts_parts_of_frames() {
    let store = TempStore::new();
    // One frame holding a batch of a message and three elements that are no
    // message, and a stderr line: four parts of two frames have no place in
    // .jsons.
    let agent = sh("cat >/dev/null; echo '[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},1,2,3]'; echo oops >&2");
    let out = run_with_input(tee_command(&store.db, &[], &as_strs(&agent)), Vec::new());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    store.only_trace();
    let out = Command::new(bin())
        .current_dir(store.dir.path())
        .args(["export", "--format", "jsons", "-o", "-", "--db"])
        .arg(&store.db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!store.dir.path().join("-").exists(), "`-o -` wrote a file named -");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "the one message, on stdout: {text}");
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("note: 4 parts of the 2 frames exported"), "{note}");
}
