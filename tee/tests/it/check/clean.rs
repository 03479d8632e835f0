//! Clean sessions of real peers give no errors: yopo against elizacp,
//! yopo and acpx against the Python SDK agent, and the conductor's own
//! trace of a chain (`tests/fixtures/conductor-trace.jsons`).

use super::check_json;
use crate::common::{bin, peer, TempStore};
use crate::sessions::record::{record_with_acpx, record_with_yopo, run_within, Recorded, PROMPT};
use acp_tee_shared::check::TraceFindings;
use std::process::Command;

/// The findings of a recorded trace; fails on any error.
fn assert_no_errors(db: &std::path::Path, trace_id: i64) -> TraceFindings {
    let (code, mut traces) = check_json(&["--db", db.to_str().unwrap(), "--trace", &trace_id.to_string()]);
    let report = traces.remove(0);
    assert_eq!(report.counts.errors, 0, "{:#?}", report.findings);
    assert_eq!(code, 0);
    assert!(report.frames > 5, "{report:?}");
    report
}

#[test]
fn yopo_against_elizacp_has_no_findings() {
    let store = TempStore::new();
    let mut cmd = Command::new(peer("yopo"));
    cmd.args([
        PROMPT,
        "--",
        bin(),
        "--db",
        store.db.to_str().unwrap(),
        "--",
        &peer("elizacp"),
        "--deterministic",
        "acp",
    ]);
    let out = run_within(cmd);
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    let trace = store.only_trace();
    let report = assert_no_errors(&store.db, trace.id);
    assert_eq!(report.findings, Vec::new());
    assert_eq!(report.protocol_version, Some(1));
}

#[test]
fn yopo_against_the_python_sdk_agent_has_no_errors() {
    let (Recorded { store, trace_id }, _) = record_with_yopo(&[]);
    let report = assert_no_errors(&store.db, trace_id);
    assert_eq!(report.counts.warnings, 0, "{:#?}", report.findings);
}

#[test]
fn acpx_against_the_python_sdk_agent_has_no_errors() {
    let (Recorded { store, trace_id }, _) = record_with_acpx(&["--approve-all"], &["--usage-update"], 0);
    let report = assert_no_errors(&store.db, trace_id);
    assert_eq!(report.counts.warnings, 0, "{:#?}", report.findings);
}

#[test]
fn the_conductor_fixture_has_no_findings() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conductor-trace.jsons");
    let (code, traces) = check_json(&[fixture]);
    assert_eq!(traces.len(), 1);
    assert_eq!(traces[0].findings, Vec::new());
    assert_eq!((code, traces[0].frames), (0, 13));
}
