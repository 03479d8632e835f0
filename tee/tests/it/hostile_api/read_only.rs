//! Read-only stores: a store user nobody can only read, one on a read-only
//! mount, one of an older schema, one a recorder with write access is
//! recording into.

use super::*;

/// Runs the binary as user nobody (tests run as root, whom file modes do
/// not stop), from a copy nobody can reach wherever the build lives.
struct Nobody {
    _dir: tempfile::TempDir,
    bin: std::path::PathBuf,
}

impl Nobody {
    fn new() -> Nobody {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.path().join("acp-tee");
        std::fs::copy(crate::common::bin(), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Nobody { _dir: dir, bin }
    }

    /// `acp-tee` as nobody.
    fn command(&self) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"]).arg(&self.bin);
        cmd
    }
}

/// Makes `dir` and the files in it readable by all and writable by none but root.
fn share_read_only(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        std::fs::set_permissions(entry.unwrap().path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

#[test]
fn a_read_only_store_can_be_listed_exported_and_served() {
    let nobody = Nobody::new();
    let store = TempStore::new();
    let id = store_lines(&store.db, (0..50).map(|n| (Direction::ClientToAgent, update(n, 100))));
    share_read_only(store.dir.path());
    assert_eq!(std::fs::read_dir(store.dir.path()).unwrap().count(), 1, "the store closed cleanly: no log files");

    let list = nobody.command().args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    assert!(list.status.success(), "list: {}", String::from_utf8_lossy(&list.stderr));
    assert!(String::from_utf8_lossy(&list.stdout).contains("hostile"));
    let export = nobody
        .command()
        .args(["export", "--db", store.db.to_str().unwrap(), "--format", "ndjson", "--no-redact"])
        .output()
        .unwrap();
    assert!(export.status.success(), "export: {}", String::from_utf8_lossy(&export.stderr));
    assert_eq!(String::from_utf8_lossy(&export.stdout).lines().count(), 51);

    let served = Served::start_as(nobody.command(), &store.db, &[]);
    let traces = get_json(served.addr, "/api/traces", 200, Duration::from_secs(10));
    assert_eq!(traces[0]["frame_count"], 50);
    // Searched by scanning: the server cannot index a store it cannot write.
    let found = get_json(served.addr, &format!("/api/traces/{id}/frames?q=lorem"), 200, Duration::from_secs(10));
    assert_eq!(found["total"], 50);
    let resp = get_raw(served.addr, &format!("/api/traces/{id}/export"), Duration::from_secs(10)).unwrap();
    assert!(resp.status == 200 && resp.complete);
    drop(served);
    // Nothing was written: no log file, the same single file.
    assert_eq!(std::fs::read_dir(store.dir.path()).unwrap().count(), 1);
}

#[test]
fn a_store_on_a_read_only_mount_can_be_listed_and_exported() {
    let store = TempStore::new();
    store_lines(&store.db, (0..20).map(|n| (Direction::ClientToAgent, update(n, 100))));
    // Root is stopped by a read-only mount (EROFS), unlike by file modes.
    let dir = store.dir.path().display();
    let db = store.db.display();
    let script = format!(
        "mount --bind {dir} {dir} && mount -o remount,bind,ro {dir} && \
         {bin} list --db {db} && {bin} export --db {db} --format ndjson | wc -l",
        bin = bin()
    );
    let out = Command::new("unshare").args(["-m", "sh", "-c", &script]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("hostile") && stdout.trim_end().ends_with("21"), "{stdout}");
}

#[test]
fn a_read_only_store_of_an_older_schema_says_how_to_upgrade_it() {
    let nobody = Nobody::new();
    let store = TempStore::new();
    store_lines(&store.db, [(Direction::ClientToAgent, update(0, 10))]);
    set_user_version(&store.db, acp_tee::SCHEMA_VERSION - 1);
    share_read_only(store.dir.path());
    let out = nobody.command().args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("read-only") && stderr.contains("write access"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_read_only_store_being_recorded_into_can_be_read() {
    let nobody = Nobody::new();
    use std::os::unix::fs::PermissionsExt;
    let store = TempStore::new();
    store_lines(&store.db, (0..5).map(|n| (Direction::ClientToAgent, update(n, 100))));
    share_read_only(store.dir.path());
    // A recorder (root) keeps writing; its log files are readable by all.
    let mut tee = tee_command(&store.db, &["--name", "live"], &["cat"]).spawn().unwrap();
    let mut tee_in = tee.stdin.take().unwrap();
    writeln!(tee_in, r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{}}}}"#).unwrap();
    assert!(!read_exact_from(&mut tee, 1).is_empty());
    let deadline = Instant::now() + Duration::from_secs(20);
    while Store::open_existing(&store.db).unwrap().frame_page_total(2) < 1 {
        assert!(Instant::now() < deadline, "the first frame was never stored");
        std::thread::sleep(Duration::from_millis(10));
    }
    for f in ["traces.db-wal", "traces.db-shm"] {
        let path = store.dir.path().join(f);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let list = nobody.command().args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    assert!(list.status.success(), "list: {}", String::from_utf8_lossy(&list.stderr));
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains("live") && listed.contains("hostile"), "{listed}");
    drop(tee_in);
    assert!(tee.wait().unwrap().success());
}
