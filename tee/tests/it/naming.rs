//! One way to name a trace (#33 item 4): every subcommand that takes a
//! TRACE takes an id, `latest`, a name (the newest trace of that name),
//! `name:NAME`, or the same as `--trace`, and says clearly when none is
//! found; `-` is standard input; `list` filters, limits and writes JSON.
//! All with the real binary over real stores made by `acp-tee import`.

use crate::common::{bin, run_with_input, TempStore};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conductor-trace.jsons");

/// `acp-tee ARGS` with stdin from `input` (empty: closed).
fn run(args: &[&str], input: &[u8]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    run_with_input(cmd, input.to_vec())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}{}", text(&out.stdout), text(&out.stderr)))
}

/// Imports `file` into `db` named `name`; the new trace's id.
fn import(db: &Path, name: &str, file: &str) -> i64 {
    let out = run(&["import", "--db", db.to_str().unwrap(), "--name", name, file], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    said.trim().rsplit(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{said}"))
}

/// A store of four traces: 1 named `42`, 2 and 3 named `alpha`, 4 named
/// `beta`, so that an id, `latest`, a name and `name:42` each mean another.
fn store() -> TempStore {
    let store = TempStore::new();
    for (name, id) in [("42", 1), ("alpha", 2), ("alpha", 3), ("beta", 4)] {
        assert_eq!(import(&store.db, name, FIXTURE), id);
    }
    store
}

/// What a subcommand did with a TRACE: its exit status, the id of the
/// trace it acted on (when it says), and its stderr.
struct Outcome {
    code: i32,
    acted_on: Option<i64>,
    stderr: String,
}

/// A subcommand that takes a TRACE: how to run it with the TRACE
/// arguments given, and how to read which trace it acted on.
struct Subcommand {
    name: &'static str,
    /// Whether it takes `--trace` too (diff takes two traces, no option).
    takes_trace_option: bool,
    /// Whether it changes which trace a TRACE means (adds, removes or
    /// renames one): each case then gets a store of its own.
    changes_store: bool,
    run: fn(db: &str, trace: &[&str]) -> Outcome,
}

fn outcome(out: &Output, acted_on: impl Fn(&Output) -> Option<i64>) -> Outcome {
    let code = out.status.code().expect("exited by a signal");
    Outcome { code, acted_on: if code == 0 { acted_on(out) } else { None }, stderr: text(&out.stderr) }
}

/// The id after the first `trace ` of the first line of stdout, which the
/// editing commands print (`removed trace 3 "alpha" (...)`, `pinned trace
/// 3 "alpha"`).
fn said_trace(out: &Output) -> Option<i64> {
    let said = text(&out.stdout);
    let (_, rest) = said.lines().next()?.split_once("trace ")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Every subcommand taking a TRACE: a new one joins this list.
const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "show",
        takes_trace_option: true,
        changes_store: false,
        run: |db, trace| {
            let out = run(&[&["show", "--db", db, "--format", "json"], trace].concat(), b"");
            outcome(&out, |o| json(o)["trace"]["id"].as_i64())
        },
    },
    Subcommand {
        name: "check",
        takes_trace_option: true,
        changes_store: false,
        run: |db, trace| {
            let out = run(&[&["check", "--db", db, "--format", "json"], trace].concat(), b"");
            outcome(&out, |o| json(o)["traces"][0]["trace_id"].as_i64())
        },
    },
    Subcommand {
        name: "export",
        takes_trace_option: true,
        changes_store: false,
        run: |db, trace| {
            let out = run(&[&["export", "--db", db, "-o", "-"], trace].concat(), b"");
            outcome(&out, |o| json(o)["traces"][0]["id"].as_i64())
        },
    },
    Subcommand {
        name: "diff",
        takes_trace_option: false,
        changes_store: false,
        run: |db, trace| {
            // Against trace 1: the same file imported, so equivalent (exit 0).
            let out = run(&[&["diff", "--db", db, "--format", "json"], trace, &["1"]].concat(), b"");
            outcome(&out, |o| json(o)["a"]["trace_id"].as_i64())
        },
    },
    Subcommand {
        name: "replay",
        takes_trace_option: true,
        changes_store: true,
        run: |db, trace| {
            // `true` as the agent ends at once: the replay diverges (exit 1)
            // and says which trace it replayed.
            let out = run(&[&["replay", "--db", db], trace, &["--", "true"]].concat(), b"");
            let code = out.status.code().unwrap();
            let said = text(&out.stdout);
            let acted_on = said.strip_prefix("replayed trace ").and_then(|r| r.split(' ').next()?.parse().ok());
            Outcome {
                code: if code == 1 && acted_on.is_some() { 0 } else { code },
                acted_on,
                stderr: text(&out.stderr),
            }
        },
    },
    Subcommand {
        name: "serve",
        takes_trace_option: true,
        changes_store: false,
        run: |db, trace| {
            let mut child = Command::new(bin())
                .args([&["serve", "--db", db, "--port", "0"], trace].concat())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // The first line is the URL; none when it refused to start.
            let mut line = String::new();
            std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            if !line.is_empty() {
                let _ = child.kill();
            }
            let out = child.wait_with_output().unwrap();
            let acted_on = line.trim().rsplit_once("/traces/").and_then(|(_, id)| id.parse().ok());
            Outcome {
                code: if line.is_empty() { out.status.code().unwrap() } else { 0 },
                acted_on,
                stderr: text(&out.stderr),
            }
        },
    },
    Subcommand {
        name: "rm",
        takes_trace_option: false,
        changes_store: true,
        run: |db, trace| outcome(&run(&[&["rm", "--db", db], trace].concat(), b""), said_trace),
    },
    Subcommand {
        name: "pin",
        takes_trace_option: false,
        changes_store: false,
        run: |db, trace| outcome(&run(&[&["pin", "--db", db], trace].concat(), b""), said_trace),
    },
    Subcommand {
        name: "unpin",
        takes_trace_option: false,
        changes_store: false,
        run: |db, trace| outcome(&run(&[&["unpin", "--db", db], trace].concat(), b""), said_trace),
    },
    Subcommand {
        name: "rename",
        takes_trace_option: false,
        changes_store: true,
        run: |db, trace| outcome(&run(&[&["rename", "--db", db], trace, &["renamed"]].concat(), b""), said_trace),
    },
];

#[test]
fn every_subcommand_takes_a_trace_the_same_way() {
    // (TRACE arguments, the trace meant).
    let cases: &[(&[&str], i64)] = &[
        (&["2"], 2),
        (&["latest"], 4),
        (&["alpha"], 3),
        (&["name:42"], 1),
        (&["--trace", "alpha"], 3),
        (&["--trace", "2"], 2),
    ];
    for sub in SUBCOMMANDS {
        let shared = store();
        for (trace, meant) in cases {
            if trace[0] == "--trace" && !sub.takes_trace_option {
                continue;
            }
            let own = sub.changes_store.then(store);
            let got = (sub.run)(own.as_ref().unwrap_or(&shared).db.to_str().unwrap(), trace);
            assert_eq!((got.code, got.acted_on), (0, Some(*meant)), "{} {trace:?}: {}", sub.name, got.stderr);
        }
        // Missing: a clear error naming what exists, and a failing status.
        let db = shared.db.to_str().unwrap();
        let got = (sub.run)(db, &["nope"]);
        assert_ne!(got.code, 0, "{}", sub.name);
        assert!(
            got.stderr.contains("no trace named `nope` (names in the store, newest first: beta, alpha, 42;"),
            "{}: {}",
            sub.name,
            got.stderr
        );
        let got = (sub.run)(db, &["42"]);
        assert_ne!(got.code, 0, "{}", sub.name);
        assert!(got.stderr.contains("no trace 42 in the store (the newest is 4;"), "{}: {}", sub.name, got.stderr);
        if sub.takes_trace_option {
            let got = (sub.run)(db, &["--trace", "nope"]);
            assert_ne!(got.code, 0, "{}", sub.name);
            assert!(got.stderr.contains("no trace named `nope`"), "{}: {}", sub.name, got.stderr);
            // Both at once: a usage error.
            let got = (sub.run)(db, &["2", "--trace", "3"]);
            assert_eq!(got.code, 2, "{}", sub.name);
            assert!(got.stderr.contains("cannot be used with"), "{}: {}", sub.name, got.stderr);
        }
    }
}

#[test]
fn all_is_every_trace_where_a_command_takes_many_and_refused_where_it_takes_one() {
    let store = store();
    let db = store.db.to_str().unwrap();
    let out = run(&["export", "--db", db, "all"], b"");
    let ids: Vec<i64> = json(&out)["traces"].as_array().unwrap().iter().map(|t| t["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    let out = run(&["check", "--db", db, "all", "--format", "json"], b"");
    assert_eq!(json(&out)["traces"].as_array().unwrap().len(), 4);
    let out = run(&["show", "--db", db, "all"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("`all` names every trace, and this command takes one"), "{}", text(&out.stderr));
}

#[test]
fn check_and_diff_tell_a_file_from_a_trace_by_the_stated_rule() {
    let store = store();
    let db = store.db.to_str().unwrap();
    // A file named like a trace name, here: the file wins; name: forces the
    // trace. An id stays a trace however the files here are named.
    let here = tempfile::tempdir().unwrap();
    std::fs::copy(FIXTURE, here.path().join("beta")).unwrap();
    std::fs::copy(FIXTURE, here.path().join("2")).unwrap();
    let check = |arg: &str| {
        let out = Command::new(bin())
            .current_dir(here.path())
            .args(["check", "--db", db, "--format", "json", arg])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{arg}: {}", text(&out.stderr));
        json(&out)["traces"][0]["trace_id"].as_i64().unwrap()
    };
    // A file is imported into a store of its own: its one trace is 1.
    assert_eq!(check("beta"), 1, "the file");
    assert_eq!(check("name:beta"), 4, "the stored trace");
    assert_eq!(check("2"), 2, "an id is a trace");
    assert_eq!(check("./2"), 1, "./2 is the file");
    let out = Command::new(bin())
        .current_dir(here.path())
        .args(["diff", "--db", db, "--format", "json", "beta", "name:beta"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let d = json(&out);
    assert_eq!((d["a"]["name"].as_str(), d["b"]["trace_id"].as_i64()), (Some("beta"), Some(4)));
    // Neither a file nor a trace.
    for args in [&["check", "--db", db, "gone"][..], &["diff", "--db", db, "1", "gone"]] {
        let out = Command::new(bin()).current_dir(here.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("`gone` is neither a file here nor a stored trace: no trace named `gone`"), "{err}");
    }
    let help = text(&run(&["check", "--help"], b"").stdout);
    assert!(help.contains("write ./3 for a file named 3"), "{help}");
    let help = text(&run(&["diff", "--help"], b"").stdout);
    assert!(help.contains("write ./3 for a file named 3"), "{help}");
}

#[test]
fn a_dash_is_standard_input_and_standard_output() {
    let store = TempStore::new();
    let db = store.db.to_str().unwrap();
    let file = std::fs::read(FIXTURE).unwrap();
    let out = run(&["import", "--db", db, "-"], &file);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "imported 13 frames from stdin (jsons) as trace 1\n");
    let list = json(&run(&["list", "--db", db, "--format", "json"], b""));
    assert_eq!(list["traces"][0]["name"], "stdin");
    assert_eq!(list["traces"][0]["frame_count"], 13);

    let out = run(&["check", "--db", db, "-", "--format", "json"], &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json(&out)["traces"][0]["frames"], 13);
    let out = run(&["check", "-"], &file);
    assert!(
        text(&out.stdout).contains("\nstdin: 0 errors") || text(&out.stdout).starts_with("stdin: 0 errors"),
        "{}",
        text(&out.stdout)
    );

    let out = run(&["diff", "--db", db, "-", "1", "--format", "json"], &file);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json(&out)["b"]["trace_id"], 1);
    let out = run(&["diff", "--db", db, "-", "-"], &file);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("standard input can be read once"), "{}", text(&out.stderr));

    // Garbage on stdin: the error names stdin, not a temporary file.
    let out = run(&["import", "--db", db, "-"], b"hello\n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "acp-tee: error: cannot tell the format of stdin; pass --format acp-tee, jsons, sacp-tee, zed, acp-inspector, acpx or acp-inspector-fsharp\n");

    let out = run(&["export", "--db", db, "1", "-o", "-"], b"");
    assert_eq!(json(&out)["traces"][0]["frame_count"], 13);
}

/// An acp-tee export of one trace named `name` that started at `started_at`.
fn export_started_at(db: &str, name: &str, started_at: &str, into: &Path) {
    let out = run(&["export", "--db", db, "1", "--format", "json"], b"");
    let mut doc = json(&out);
    let trace = &mut doc["traces"][0];
    trace["name"] = name.into();
    trace["started_at"] = started_at.into();
    std::fs::write(into, serde_json::to_vec(&doc).unwrap()).unwrap();
}

#[test]
fn list_limits_filters_and_writes_json() {
    let store = store();
    let db = store.db.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (old, recent) = (dir.path().join("old.json"), dir.path().join("recent.json"));
    let an_hour_ago = (chrono::Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339();
    export_started_at(db, "old", "2020-01-01T00:00:00Z", &old);
    export_started_at(db, "recent", &an_hour_ago, &recent);
    assert_eq!(import(&store.db, "old", old.to_str().unwrap()), 5);
    assert_eq!(import(&store.db, "recent", recent.to_str().unwrap()), 6);

    let rows = |out: &Output| -> Vec<String> {
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().skip(1).map(|l| l.split(' ').next().unwrap().to_owned()).collect()
    };
    let out = run(&["list", "--db", db, "--limit", "2"], b"");
    assert_eq!(rows(&out), ["6", "5"]);
    assert!(text(&out.stdout).starts_with("ID  NAME"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).lines().next().unwrap().contains("SIZE"));
    let err = text(&out.stderr);
    assert!(err.starts_with("4 more traces; --limit 0 lists all\nstore "), "{err}");
    let out = run(&["list", "--db", db, "--limit", "0"], b"");
    assert_eq!(rows(&out), ["6", "5", "4", "3", "2", "1"]);
    assert!(!text(&out.stderr).contains("more"), "{}", text(&out.stderr));
    let out = run(&["list", "--db", db, "--limit", "5"], b"");
    assert!(text(&out.stderr).starts_with("1 more trace; "), "{}", text(&out.stderr));
    assert_eq!(rows(&run(&["list", "--db", db], b"")).len(), 6, "20 by default");

    assert_eq!(rows(&run(&["list", "--db", db, "--name", "alpha"], b"")), ["3", "2"]);
    assert_eq!(rows(&run(&["list", "--db", db, "--name", "nope"], b"")), Vec::<String>::new());
    assert_eq!(rows(&run(&["list", "--db", db, "--since", "2019-12-31"], b"")).len(), 6);
    // The fixture's imports started when it was checked out: only `old` is
    // surely before a day ago, and `recent` surely after.
    let day = rows(&run(&["list", "--db", db, "--since", "1d"], b""));
    assert!(day.contains(&"6".to_owned()) && !day.contains(&"5".to_owned()), "{day:?}");
    assert!(rows(&run(&["list", "--db", db, "--since", "2020-01-01T00:00:01Z"], b"")).len() == 5);
    assert_eq!(rows(&run(&["list", "--db", db, "--since", "2h", "--name", "recent"], b"")), ["6"]);
    let out = run(&["list", "--db", db, "--since", "yesterday"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is neither a time ago"), "{}", text(&out.stderr));

    let out = run(&["list", "--db", db, "--format", "json", "--limit", "2", "--name", "alpha"], b"");
    let doc = json(&out);
    assert_eq!(doc["matching"], 2);
    assert_eq!(doc["more"], 0);
    let out = run(&["list", "--db", db, "--format", "json", "--limit", "1"], b"");
    let doc = json(&out);
    assert_eq!((doc["matching"].as_u64(), doc["more"].as_u64()), (Some(6), Some(5)));
    let traces = doc["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!((t["id"].as_i64(), t["name"].as_str(), t["frame_count"].as_i64()), (Some(6), Some("recent"), Some(13)));
    assert!(t["bytes"].as_i64().unwrap() > 0, "{t}");
    assert_eq!(t["pinned"], false);
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let wal = store.db.with_file_name("traces.db-wal");
    let s = &doc["store"];
    assert_eq!(s["path"], db);
    assert_eq!(s["file_bytes"].as_u64(), Some(size(&store.db)));
    assert_eq!(s["wal_bytes"].as_u64(), Some(size(&wal)));
    assert_eq!(s["bytes"].as_u64(), Some(size(&store.db) + size(&wal)));
    assert!(text(&out.stderr).is_empty(), "JSON says it all: {}", text(&out.stderr));
}
