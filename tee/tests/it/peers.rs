//! Real peers from crates.io: the yopo client driving the elizacp agent
//! through acp-tee. `.ci/run` installs them (elizacp 12.0.0, yopo 11.0.0).

use crate::common::*;
use serde_json::Value;
use std::process::Command;

const PROMPT: &str = "I feel like testing my tools today";

/// Every process still running with `marker` in its environment.
fn processes_marked(marker: &str) -> Vec<String> {
    let needle = format!("ACP_TEE_TEST_MARK={marker}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| process_alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default())
        .collect()
}

#[test]
fn yopo_and_elizacp_through_acp_tee() {
    let (yopo, elizacp) = (peer("yopo"), peer("elizacp"));
    let direct = Command::new(&yopo).args([PROMPT, "--", &elizacp, "--deterministic", "acp"]).output().unwrap();
    assert!(direct.status.success(), "yopo without acp-tee failed");

    let store = TempStore::new();
    let marker = unique_marker("yopo and elizacp");
    let teed = Command::new(&yopo)
        .args([PROMPT, "--", bin(), "--db", store.db.to_str().unwrap(), "--", &elizacp, "--deterministic", "acp"])
        .env("ACP_TEE_TEST_MARK", &marker)
        .output()
        .unwrap();
    assert!(teed.status.success(), "yopo through acp-tee failed: {}", String::from_utf8_lossy(&teed.stderr));
    let printed = String::from_utf8(teed.stdout).unwrap();
    assert_eq!(printed, String::from_utf8(direct.stdout).unwrap());

    // yopo SIGKILLs acp-tee the instant it has its answer: elizacp must die
    // with it, and the trace must still hold that answer.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while processes_marked(&marker).iter().any(|c| c.trim() == "elizacp") {
        assert!(std::time::Instant::now() < deadline, "elizacp outlived acp-tee");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let trace = store.only_trace();
    assert_eq!(trace.command, [elizacp.as_str(), "--deterministic", "acp"]);
    let frames = exported_frames(&store.db, trace.id);
    for method in ["initialize", "session/new", "session/prompt"] {
        assert_paired(&frames, method);
    }
    let session =
        frames.iter().find(|f| f["method"] == "session/new" && f["kind"] == "response").unwrap()["session_id"].clone();
    assert!(session.is_string());
    let updates: Vec<&Value> = frames.iter().filter(|f| f["method"] == "session/update").collect();
    assert!(!updates.is_empty(), "no session/update notifications");
    for u in updates {
        assert_eq!(u["kind"], "notification");
        assert_eq!(u["dir"], "agent_to_client");
        assert_eq!(u["session_id"], session);
    }
    // What yopo printed is what the recorded message chunks say.
    let mut reply = String::new();
    for f in frames.iter().filter(|f| f["method"] == "session/update") {
        let msg: Value = serde_json::from_str(f["raw"].as_str().unwrap()).unwrap();
        if msg["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            reply.push_str(msg["params"]["update"]["content"]["text"].as_str().unwrap());
        }
    }
    assert!(!reply.trim().is_empty());
    assert!(printed.contains(reply.trim()), "yopo printed {printed:?}, the trace says {reply:?}");
}
