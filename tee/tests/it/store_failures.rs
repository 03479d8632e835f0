//! The store failing or shared: forwarding goes on, nothing is lost silently.

use crate::common::*;
use acp_tee_shared::Direction;

#[test]
fn an_unwritable_store_warns_once_and_forwarding_goes_on() {
    let store = TempStore::new();
    // A path below a regular file cannot be created, even by root.
    let blocker = store.dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let db = blocker.join("traces.db");
    let input: Vec<u8> = (0..500).flat_map(|i| format!("{{\"id\":{i},\"method\":\"m\"}}\n").into_bytes()).collect();
    let out = run_with_input(tee_command(&db, &[], &["cat"]), input.clone());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout == input, "forwarded bytes changed");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("not recording to").count(), 1, "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "stderr: {stderr}");
    assert!(stderr.contains(db.to_str().unwrap()), "the warning names the store: {stderr}");
}

#[test]
fn the_store_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let store = TempStore::new();
    let out = run_with_input(tee_command(&store.db, &[], &["cat"]), b"x\n".to_vec());
    assert!(out.status.success());
    store.only_trace();
    let mode = std::fs::metadata(&store.db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn four_concurrent_tees_into_one_store_lose_nothing() {
    let store = TempStore::new();
    // A sustained burst: 20,000 requests from each of four recorders at once.
    let lines = 20_000;
    let runs: Vec<_> = (0..4)
        .map(|n| {
            let db = store.db.clone();
            std::thread::spawn(move || {
                let input: Vec<u8> = (0..lines)
                    .flat_map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tee{n}\"}}\n").into_bytes())
                    .collect();
                let out = run_with_input(tee_command(&db, &["--name", &format!("tee{n}")], &["cat"]), input.clone());
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                assert!(out.stdout == input);
                (format!("tee{n}"), input)
            })
        })
        .collect();
    let inputs: Vec<(String, Vec<u8>)> = runs.into_iter().map(|h| h.join().unwrap()).collect();
    let traces = store.ended_traces(4);
    assert_eq!(traces.len(), 4);
    for (name, input) in inputs {
        let trace = traces.iter().find(|t| t.name.as_deref() == Some(&name)).unwrap();
        assert_eq!(trace.missing_frames, 0);
        assert_eq!(trace.frame_count, 2 * lines);
        assert!(store.stream(trace.id, Direction::ClientToAgent) == input);
        assert!(store.stream(trace.id, Direction::AgentToClient) == input);
    }
}

/// A tmpfs of `bytes` mounted on a new directory for the test's life: a
/// filesystem that fills up for every process writing to it, as a shared
/// disk does (a file size limit reaches one process only). Mounting needs
/// root, which CI has.
struct SmallFilesystem {
    dir: tempfile::TempDir,
}

impl SmallFilesystem {
    fn mount(bytes: u64) -> SmallFilesystem {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "this test mounts a tmpfs, which needs root: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SmallFilesystem { dir }
    }
}

impl Drop for SmallFilesystem {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_filesystem_still_gets_the_runs_end_and_a_true_missing_count() {
    let lines = 20_000;
    let input: Vec<u8> = (0..lines)
        .flat_map(|i| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m\",\"params\":{{\"p\":\"{}\"}}}}\n",
                "x".repeat(960)
            )
            .into_bytes()
        })
        .collect();
    // 40 MB of frames into 20 MiB: the filesystem fills up mid-run, at a
    // different point for each amount of other files on it.
    for filler in [2_000_000, 6_000_000, 11_000_000] {
        let fs = SmallFilesystem::mount(20 << 20);
        std::fs::write(fs.dir.path().join("filler"), vec![0u8; filler]).unwrap();
        let store = TempStore { db: fs.dir.path().join("s.db"), dir: tempfile::tempdir().unwrap() };
        let out = run_with_input(tee_command(&store.db, &[], &["cat"]), input.clone());
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == input, "forwarded bytes changed");
        // The recorder ends the trace itself; nothing may be left for the
        // next opener to guess at. Read it before freeing any space.
        let trace = wait_for_end(&store.db);
        assert_eq!(trace.exit_code, Some(0), "filler {filler}: {trace:?}");
        assert_eq!(trace.end_reason.as_deref(), Some("the client closed; the agent exited"), "filler {filler}");
        assert!(trace.missing_frames > 0, "filler {filler}: the filesystem never filled up: {trace:?}");
        assert_eq!(trace.frame_count + trace.missing_frames, 2 * lines, "filler {filler}: {trace:?}");
        std::fs::remove_file(fs.dir.path().join("filler")).unwrap();
        // Once there is room again, the next opener changes nothing.
        let again = store.only_trace();
        assert_eq!(
            (again.ended_at, again.end_reason, again.missing_frames),
            (trace.ended_at, trace.end_reason, trace.missing_frames)
        );
    }
}

/// The only trace in `db` once its recorder ended it, read without running
/// the maintenance step (which writes, and would end a trace whose recorder
/// is gone): what the recorder itself stored.
fn wait_for_end(db: &std::path::Path) -> acp_tee_shared::TraceMeta {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        // Looked for before the trace is read: a recorder gone then has
        // written all it ever will.
        let recorder = std::process::Command::new("pgrep")
            .arg("-f")
            .arg(format!("__recorder --db={}", db.display()))
            .output()
            .expect("run pgrep");
        let traces = acp_tee::Reader::open(db).and_then(|r| r.list_traces()).unwrap_or_default();
        if let [trace] = &traces[..] {
            if trace.ended_at.is_some() {
                return trace.clone();
            }
        }
        assert!(!recorder.stdout.is_empty(), "the recorder exited without ending the trace: {traces:?}");
        assert!(std::time::Instant::now() < deadline, "the trace did not end within 120 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_directory_given_as_the_store_is_named_as_one() {
    let store = TempStore::new();
    for args in [&["list"][..], &["show"], &["export"], &["check"]] {
        let out = std::process::Command::new(bin()).args(args).arg("--db").arg(store.dir.path()).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is a directory"), "{args:?}: {err}");
        assert!(!err.contains("disk I/O error"), "{args:?}: {err}");
    }
}
