//! Tests as data: every conversation in `tests/corpus/` is imported into a
//! real store by the real binary, and each consumer's output is kept as a
//! snapshot (`tests/corpus/snapshots/`, `SNAPSHOTS` below, reviewed with
//! `cargo insta review`): `show`
//! (JSON and text), `check`, the OTLP spans, `diff` against itself and each
//! export format. A change in what acp-tee says about a conversation is then
//! a snapshot diff to read.
//!
//! The corpus: hand-written conversations in the F# ACP Inspector's JSONL
//! (`{"ts","direction","json"}`, `json` the exact line sent, so repeated
//! members and odd ids stay as written) for the hostile shapes the issues
//! found, the conductor's `.jsons` fixture, and recordings of real peers
//! exported as `acp-tee` NDJSON. Add a file and run `cargo insta test
//! --accept -p acp-tee --test it -- corpus::` to take its snapshots.
//!
//! `every_consumer_counts_the_same_turns_tool_calls_and_permissions` is the
//! agreement check: `show`, the OTLP mapper and `diff` fold the same
//! conversation, and must count the same things in it.

use crate::common::bin;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Files in the corpus folder that are not conversations.
fn is_conversation(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("jsonl" | "jsons" | "ndjson"))
}

/// The time every imported file claims to have been written: formats with
/// no clock of their own (`.jsons`) end the trace then.
const WRITTEN_AT_SECS: u64 = 1_767_323_045;

/// A corpus conversation imported into a store of its own, twice (trace 1
/// and trace 2), from a copy whose path and modification time are fixed, so
/// nothing in any output depends on where or when the test ran.
struct Imported {
    dir: tempfile::TempDir,
    name: String,
}

impl Imported {
    fn new(path: &Path) -> Imported {
        let dir = tempfile::tempdir().unwrap();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let copy = dir.path().join(&name);
        std::fs::copy(path, &copy).unwrap();
        let written = std::time::UNIX_EPOCH + std::time::Duration::from_secs(WRITTEN_AT_SECS);
        std::fs::File::options().write(true).open(&copy).unwrap().set_modified(written).unwrap();
        let imported = Imported { dir, name };
        for _ in 0..2 {
            imported.run(&["import", "--db", "t.db", &imported.name], 0);
        }
        imported
    }

    /// Runs acp-tee in the import's folder; its stdout, with the exit
    /// status checked against `expected`.
    fn run(&self, args: &[&str], expected: i32) -> String {
        let out = Command::new(bin()).args(args).current_dir(self.dir.path()).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            out.status.code(),
            Some(expected),
            "acp-tee {args:?} on {}: {stdout}\n{}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// `acp-tee ARGS --db t.db` with the exit status `expected`.
    fn read(&self, args: &[&str], expected: i32) -> String {
        let mut all = args.to_vec();
        all.extend(["--db", "t.db"]);
        self.run(&all, expected)
    }

    fn json(&self, args: &[&str], expected: i32) -> Value {
        let out = self.read(args, expected);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?} on {}: {e}: {out}", self.name))
    }

    /// Every span of the OTLP export, in order.
    fn spans(&self) -> Vec<Value> {
        let out = self.read(&["export", "--trace", "1", "--format", "otlp", "--otlp-content"], 0);
        let mut spans = Vec::new();
        for line in out.lines() {
            let doc: Value = serde_json::from_str(line).unwrap();
            for rs in doc["resourceSpans"].as_array().unwrap() {
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    spans.extend(ss["spans"].as_array().unwrap().iter().cloned());
                }
            }
        }
        spans
    }
}

/// The corpus's conversations, in name order.
fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| is_conversation(p)).collect();
    files.sort();
    assert!(files.len() >= 5, "the corpus has {} conversations", files.len());
    files
}

/// Where the snapshots are, from this file's folder: beside the
/// conversations, not beside the code.
const SNAPSHOTS: &str = "../corpus/snapshots";

/// Runs `each` on every conversation, with insta's snapshot suffix set to
/// its file name.
fn for_each_conversation(each: impl Fn(&Imported)) {
    for path in corpus() {
        let imported = Imported::new(&path);
        insta::with_settings!({
            snapshot_path => SNAPSHOTS,
            snapshot_suffix => imported.name.clone(),
            prepend_module_to_snapshot => false,
        }, {
            each(&imported);
        });
    }
}

#[test]
fn show() {
    for_each_conversation(|c| {
        insta::assert_json_snapshot!("show_json", c.json(&["show", "--trace", "1", "--format", "json"], 0));
        insta::assert_snapshot!("show_text", c.read(&["show", "--trace", "1"], 0));
    });
}

#[test]
fn check() {
    for_each_conversation(|c| {
        let out = Command::new(bin())
            .args(["check", "--trace", "1", "--format", "json", "--db", "t.db"])
            .current_dir(c.dir.path())
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let errors = doc["traces"][0]["counts"]["errors"].as_u64().unwrap();
        assert_eq!(
            out.status.code(),
            Some(i32::from(errors > 0)),
            "{}: the exit status says whether an error was found",
            c.name
        );
        insta::assert_json_snapshot!("check", doc);
    });
}

/// A span as one line: its depth under its parents, name, start and end in
/// ms from the trace's first span, and its attributes.
fn span_lines(spans: &[Value]) -> String {
    let start = spans.iter().filter_map(|s| nanos(&s["startTimeUnixNano"])).min().unwrap_or(0);
    let by_id: std::collections::HashMap<&str, &Value> =
        spans.iter().map(|s| (s["spanId"].as_str().unwrap(), s)).collect();
    let depth = |span: &Value| {
        let mut d = 0;
        let mut parent = span["parentSpanId"].as_str();
        while let Some(up) = parent.and_then(|p| by_id.get(p)) {
            d += 1;
            parent = up["parentSpanId"].as_str();
        }
        d
    };
    let mut out = String::new();
    for s in spans {
        let ms = |key: &str| nanos(&s[key]).map_or(f64::NAN, |n| (n - start) as f64 / 1e6);
        let attrs: Vec<String> = s["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{}={}", a["key"].as_str().unwrap(), a["value"]))
            .collect();
        let events = s["events"].as_array().map_or(0, Vec::len);
        out += &format!(
            "{}{} [{:.3}..{:.3} ms] events={events} status={} {}\n",
            "  ".repeat(depth(s)),
            s["name"].as_str().unwrap(),
            ms("startTimeUnixNano"),
            ms("endTimeUnixNano"),
            s["status"],
            attrs.join(" ")
        );
    }
    out
}

fn nanos(v: &Value) -> Option<i128> {
    v.as_str()?.parse().ok()
}

#[test]
fn otlp_spans() {
    for_each_conversation(|c| insta::assert_snapshot!("otlp", span_lines(&c.spans())));
}

#[test]
fn diff_of_a_conversation_with_itself() {
    for_each_conversation(|c| {
        let doc = c.json(&["diff", "1", "2", "--format", "json"], 0);
        assert_eq!(doc["equivalent"], true, "{}: {doc:#}", c.name);
        let mut doc = doc;
        doc["b"]["trace_id"] = Value::Null;
        insta::assert_json_snapshot!("diff", doc);
    });
}

#[test]
fn exports() {
    for_each_conversation(|c| {
        for format in ["json", "ndjson", "jsons", "perfetto", "acp-inspector"] {
            let out = c.read(&["export", "--trace", "1", "--format", format, "-o", "-"], 0);
            insta::assert_snapshot!(format!("export_{format}"), without_export_time(format, out));
        }
    });
}

/// `out` with the one value that is the moment of the export (the
/// acp-inspector header's `at`) replaced by a placeholder.
fn without_export_time(format: &str, out: String) -> String {
    if format != "acp-inspector" {
        return out;
    }
    let (header, rest) = out.split_once('\n').unwrap_or((&out, ""));
    let mut header: Value = serde_json::from_str(header).unwrap();
    assert!(header["at"].is_u64(), "the header has its export time: {header}");
    header["at"] = Value::String("<export time>".into());
    format!("{header}\n{rest}")
}

/// What each consumer counts in one conversation.
#[derive(Debug, PartialEq, serde::Serialize)]
struct Counts {
    turns: u64,
    tool_calls: u64,
    permissions: u64,
}

fn sum(sessions: &Value, key: &str) -> u64 {
    sessions.as_array().unwrap().iter().map(|s| s[key].as_u64().unwrap()).sum()
}

#[test]
fn every_consumer_counts_the_same_turns_tool_calls_and_permissions() {
    let table = std::sync::Mutex::new(String::new());
    for_each_conversation(|c| {
        let show = c.json(&["show", "--trace", "1", "--format", "json"], 0);
        let overview = &show["overview"]["sessions"];
        let by_show = Counts {
            turns: sum(overview, "turns"),
            tool_calls: sum(overview, "tool_calls"),
            permissions: sum(overview, "permission_requests"),
        };
        let spans = c.spans();
        let named = |p: &str| spans.iter().filter(|s| s["name"].as_str().unwrap().starts_with(p)).count() as u64;
        let by_otlp = Counts {
            turns: named("invoke_agent"),
            tool_calls: named("execute_tool"),
            permissions: named("session/request_permission"),
        };
        // `check` exits 1 when it finds an error: its status is the `check`
        // test's subject, not this one's.
        let out = Command::new(bin())
            .args(["check", "--trace", "1", "--format", "json", "--db", "t.db"])
            .current_dir(c.dir.path())
            .output()
            .unwrap();
        let check: Value = serde_json::from_slice(&out.stdout).unwrap();
        let counted = &check["traces"][0]["conversation"];
        let by_check = Counts {
            turns: counted["turns"].as_u64().unwrap(),
            tool_calls: counted["tool_calls"].as_u64().unwrap(),
            permissions: counted["permission_requests"].as_u64().unwrap(),
        };
        let diff = c.json(&["diff", "1", "2", "--format", "json"], 0);
        let diff_turns = diff["turns"].as_array().map_or(0, |t| t.len() as u64);
        *table.lock().unwrap() += &format!(
            "{}: show {:?}, check {:?}, otlp {:?}, diff turns {diff_turns}\n",
            c.name, by_show, by_check, by_otlp
        );
        assert_eq!(by_show, by_otlp, "{}: show and the OTLP spans count differently", c.name);
        assert_eq!(by_show, by_check, "{}: show and check count differently", c.name);
        assert_eq!(by_show.turns, diff_turns, "{}: show and diff count turns differently", c.name);
    });
    insta::with_settings!({ snapshot_path => SNAPSHOTS, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("counts", table.into_inner().unwrap());
    });
}

/// A reader that stops reading (`acp-tee show | head`) ends `show`,
/// `export` and `list` quietly with 0, as other Unix tools end, instead of an
/// error about a broken pipe.
#[test]
fn a_reader_that_went_away_ends_readers_quietly() {
    let c = Imported::new(&corpus()[0]);
    for args in [&["show", "--trace", "1"][..], &["export", "--trace", "1", "-o", "-"], &["list"]] {
        let mut child = Command::new(bin())
            .args(args)
            .args(["--db", "t.db"])
            .current_dir(c.dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The read end closed before anything is written: every write fails
        // with EPIPE.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}
