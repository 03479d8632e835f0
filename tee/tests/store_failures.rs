//! The store failing or shared: forwarding goes on, nothing is lost silently.

mod common;

use acp_tee_shared::Direction;
use common::*;

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
