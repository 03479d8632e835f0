//! `acp-tee check` (#16), through the real binary: a hand-made broken trace
//! per rule, each giving exactly its finding on the right frames
//! (`rules.rs`); clean recordings of real peers giving no errors
//! (`clean.rs`); the exit status and the command line (`cli.rs`).

mod api;
mod clean;
mod cli;
mod rules;

use crate::common::bin;
use acp_tee_shared::check::TraceFindings;
use std::path::Path;
use std::process::Command;

/// `acp-tee check ARGS --format json`: its exit code and the findings.
pub fn check_json(args: &[&str]) -> (i32, Vec<TraceFindings>) {
    let out = Command::new(bin()).arg("check").args(args).args(["--format", "json"]).output().unwrap();
    let code = out.status.code().expect("check exited by a signal");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("check printed no JSON ({e}): {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    (code, serde_json::from_value(doc["traces"].clone()).unwrap())
}

/// Writes `lines` as a raw sacp-tee log (`→ ` client, `← ` agent) to `path`.
pub fn write_log(path: &Path, lines: &[(bool, String)]) {
    let text: String =
        lines.iter().map(|(from_client, l)| format!("{} {l}\n", if *from_client { "→" } else { "←" })).collect();
    std::fs::write(path, text).unwrap();
}
