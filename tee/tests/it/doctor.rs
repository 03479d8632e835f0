//! `acp-tee doctor`: what it says of a store, the viewer and the peers, and
//! its exit status.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// `acp-tee doctor --db DB` with PATH set to `path`: (exit status, stdout).
fn doctor(db: &std::path::Path, path: &std::path::Path) -> (i32, String) {
    let out = Command::new(bin()).args(["doctor", "--db"]).arg(db).env("PATH", path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "doctor wrote to stderr: {stderr}");
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

/// A directory on PATH holding an executable `yopo` only.
fn path_with_yopo(dir: &std::path::Path) -> std::path::PathBuf {
    let bin_dir = dir.join("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    let yopo = bin_dir.join("yopo");
    std::fs::write(&yopo, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&yopo, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Not executable: not a peer found.
    std::fs::write(bin_dir.join("elizacp"), "").unwrap();
    bin_dir
}

fn imported(store: &TempStore) {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conductor-trace.jsons");
    let out = Command::new(bin()).args(["import", "--db"]).arg(&store.db).arg(&fixture).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_sound_store_is_described_and_missing_peers_say_their_fix() {
    let store = TempStore::new();
    imported(&store);
    let path = path_with_yopo(store.dir.path());
    let (code, out) = doctor(&store.db, &path);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let schema = acp_tee::SCHEMA_VERSION;
    assert!(lines[0].starts_with(&format!("store: {}: schema {schema}, 1 traces, ", store.db.display())), "{out}");
    // A store made by this build gives space back.
    assert!(lines[1].starts_with("space: ") && lines[1].ends_with("removed traces give their space back"), "{out}");
    assert_eq!(lines[2], "integrity: ok (SQLite quick_check)");
    assert!(lines[3].starts_with("disk: ") && lines[3].contains(" MiB free in "), "{out}");
    assert!(lines[4].starts_with("viewer: "), "{out}");
    assert_eq!(lines[5], format!("peer yopo: {}", path.join("yopo").display()));
    assert_eq!(lines[6], "peer elizacp: not on PATH (only the README's examples need it): fix: cargo install elizacp");
    assert!(lines[7].starts_with("peer agent-client-protocol-conductor: not on PATH"), "{out}");
    assert_eq!(lines.len(), 8, "{out}");
}

#[test]
fn a_store_not_made_yet_is_no_problem_and_one_that_is_no_database_is() {
    let store = TempStore::new();
    let path = path_with_yopo(store.dir.path());
    let (code, out) = doctor(&store.db, &path);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with(&format!("store: {} does not exist yet", store.db.display())), "{out}");
    assert!(!store.db.exists(), "doctor made the store");

    std::fs::write(&store.db, "not a database, a text file of some length to be read").unwrap();
    let (code, out) = doctor(&store.db, &path);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("store: ") && out.contains("not a database"), "{out}");
}

/// `store`'s file with bytes `from..to` (fractions of its length, on page
/// boundaries) overwritten.
fn damaged(store: &TempStore, from: f64, to: f64) {
    let mut bytes = std::fs::read(&store.db).unwrap();
    let page = 4096;
    let pages = bytes.len() / page;
    assert!(pages > 8, "a store of {} bytes", bytes.len());
    let (a, b) = (((pages as f64 * from) as usize).max(1) * page, (pages as f64 * to) as usize * page);
    for x in &mut bytes[a..b] {
        *x = 0x5a;
    }
    std::fs::write(&store.db, &bytes).unwrap();
}

#[test]
fn a_damaged_store_is_unsound_and_exits_1_with_the_fix() {
    // Pages of the schema and the first tables: the store does not open.
    let store = TempStore::new();
    imported(&store);
    damaged(&store, 0.0, 0.9);
    let path = path_with_yopo(store.dir.path());
    let (code, out) = doctor(&store.db, &path);
    assert_eq!(code, 1, "{out}");
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("store: ") && first.contains("malformed") && first.contains("fix: "), "{out}");

    // An index pointed at another's pages: it opens, and quick_check finds
    // the index and its table disagree.
    let store = TempStore::new();
    imported(&store);
    {
        let conn = rusqlite::Connection::open(&store.db).unwrap();
        let mut q = conn
            .prepare("SELECT name, rootpage FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .unwrap();
        let indexes: Vec<(String, i64)> =
            q.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
        drop(q);
        assert!(indexes.len() >= 2, "{indexes:?}");
        conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
        conn.execute(
            "UPDATE sqlite_schema SET rootpage = ?1 WHERE name = ?2",
            rusqlite::params![indexes[1].1, indexes[0].0],
        )
        .unwrap();
    }
    let (code, out) = doctor(&store.db, &path);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("integrity: ok"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("integrity: ") && l.contains("fix: export what reads")), "{out}");
}
