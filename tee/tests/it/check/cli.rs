//! The command line: exit statuses, text output, --min-severity, stored traces.

use super::{check_json, write_log};
use crate::common::{bin, TempStore};
use std::process::Command;

#[test]
fn bad_input_exits_2_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsons");
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "hello\n").unwrap();
    let db = dir.path().join("traces.db");
    for args in [
        vec![missing.to_str().unwrap()],
        vec![garbage.to_str().unwrap()],
        vec!["--db", db.to_str().unwrap(), "--trace", "42"],
    ] {
        let out = Command::new(bin()).arg("check").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("acp-tee: error: "), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = Command::new(bin()).args(["check", "--format", "yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "clap's usage errors exit 2 too");
}

#[test]
fn text_output_names_frames_and_min_severity_filters() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.log");
    let lines = vec![
        (true, r#"{"jsonrpc":"2.0","id":1,"method":"_x/ping"}"#.to_owned()),
        (false, "\x1b[31mnot json".to_owned()),
    ];
    write_log(&file, &lines);
    let out = Command::new(bin()).args(["check", file.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(" frame 2: error transport.not-json: the agent wrote a line that is not JSON"), "{text}");
    assert!(
        text.contains(" frame 1: error lifecycle.before-initialize: the client sent `_x/ping` before initialize"),
        "{text}"
    );
    assert!(text.contains(" frame 1: warning rpc.unanswered: "), "{text}");
    assert!(!text.contains('\x1b'), "control characters are escaped: {text}");
    assert!(text.ends_with(": 2 errors, 1 warning, 0 infos in 2 frames\n"), "{text}");
    let (code, traces) = check_json(&["--min-severity", "error", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    let codes: Vec<&str> = traces[0].findings.iter().map(|f| f.code.as_str()).collect();
    assert_eq!(codes, ["lifecycle.before-initialize", "transport.not-json"]);
    assert_eq!(traces[0].counts.warnings, 1, "counts stay whole: {:?}", traces[0].counts);
}

#[test]
fn a_stored_trace_is_checked_by_id_and_as_latest() {
    let store = TempStore::new();
    let out = Command::new(bin())
        .args(["import", "--db", store.db.to_str().unwrap()])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conductor-trace.jsons"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = store.only_trace().id.to_string();
    for trace in [id.as_str(), "latest", "all"] {
        let (code, traces) = check_json(&["--db", store.db.to_str().unwrap(), "--trace", trace]);
        assert_eq!(code, 0, "{trace}: {:#?}", traces);
        assert_eq!(traces.len(), 1);
        assert_eq!(traces[0].trace_id.to_string(), id);
    }
}

#[test]
fn help_names_the_exit_statuses_and_choices() {
    let out = Command::new(bin()).args(["check", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for needle in ["Exit status: 0", "- json: One JSON document", "--min-severity", "[TRACE|FILE]", "--trace <TRACE>"] {
        assert!(help.contains(needle), "{needle} missing from:\n{help}");
    }
}

/// A finding of no frame (`check.limit` for too many sessions) is printed
/// without a frame part: `NAME: info check.limit: ...`, never `NAME:: ...`.
#[test]
fn a_finding_of_no_frame_is_printed_without_an_empty_frame_part() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sessions.log");
    let mut lines = vec![
        (true, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#.to_owned()),
        (false, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#.to_owned()),
    ];
    for i in 1..=acp_tee::CHECK_MAX_SESSIONS + 1 {
        lines.push((
            true,
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"session/new","params":{{"cwd":"/","mcpServers":[]}}}}"#),
        ));
        lines.push((false, format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"sessionId":"s{i}"}}}}"#)));
    }
    write_log(&file, &lines);
    let out = Command::new(bin()).args(["check", file.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let name = file.to_str().unwrap();
    let limit = text.lines().find(|l| l.contains("check.limit")).unwrap_or_else(|| panic!("no check.limit: {text}"));
    assert!(limit.starts_with(&format!("{name}: info check.limit: more than ")), "{limit}");
    assert!(!text.contains("::"), "{text}");
}
