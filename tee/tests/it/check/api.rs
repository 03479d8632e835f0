//! `/api/traces/{id}/findings` and the findings counts of `/api/traces`.

use super::write_log;
use crate::common::{bin, Served, TempStore};
use acp_tee_shared::api::TraceSummary;
use acp_tee_shared::check::TraceFindings;
use std::process::Command;

/// Imports `lines` as a sacp-tee log into `store`; returns the trace's id.
fn import(store: &TempStore, name: &str, lines: &[(bool, String)]) -> i64 {
    let file = store.dir.path().join(name);
    write_log(&file, lines);
    let out = Command::new(bin()).args(["import", "--db", store.db.to_str().unwrap()]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    text.trim().rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn the_api_serves_findings_and_the_list_counts_them() {
    let store = TempStore::new();
    let broken = import(
        &store,
        "broken.log",
        &[
            (false, "fetching https://example.com/x?token=abc123secret".to_owned()),
            (true, r#"{"jsonrpc":"2.0","id":1,"method":"_x/ping"}"#.to_owned()),
        ],
    );
    let clean = import(
        &store,
        "clean.log",
        &[
            (true, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#.to_owned()),
            (false, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#.to_owned()),
        ],
    );
    let unasked = import(
        &store,
        "unasked.log",
        &[(true, r#"{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#.to_owned())],
    );
    let served = Served::start(&store.db, &[]);
    let report: TraceFindings = served.get(&format!("/api/traces/{broken}/findings"));
    let found: Vec<(&str, Vec<i64>)> = report.findings.iter().map(|f| (f.code.as_str(), f.seqs.clone())).collect();
    assert_eq!(
        found,
        [("transport.not-json", vec![1]), ("lifecycle.before-initialize", vec![2]), ("rpc.unanswered", vec![2])]
    );
    assert_eq!((report.counts.errors, report.counts.warnings), (2, 1));
    // Quoted text is masked as the server masks frames (here a URL's secret query parameter).
    let quoted = &report.findings[0].message;
    assert!(quoted.contains("https://example.com/x?token=") && !quoted.contains("abc123secret"), "{quoted}");
    let clean_report: TraceFindings = served.get(&format!("/api/traces/{clean}/findings"));
    assert_eq!(clean_report.findings, Vec::new());
    let traces: Vec<TraceSummary> = served.get("/api/traces");
    let counts =
        |id: i64| traces.iter().find(|t| t.meta.id == id).and_then(|t| t.findings).map(|c| (c.errors, c.warnings));
    assert_eq!(counts(broken), Some((2, 1)));
    assert_eq!(counts(clean), Some((0, 0)));
    // A trace nobody asked about is checked in the background for the list.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let traces: Vec<TraceSummary> = served.get("/api/traces");
        let t = traces.iter().find(|t| t.meta.id == unasked).unwrap();
        if let Some(c) = t.findings {
            assert_eq!((c.errors, c.warnings), (1, 1), "before-initialize, unanswered");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the background checks never counted trace {unasked}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let missing = ureq::get(&format!("{}/api/traces/999/findings", served.url)).call();
    assert!(matches!(missing, Err(ureq::Error::Status(404, _))), "{missing:?}");
}
