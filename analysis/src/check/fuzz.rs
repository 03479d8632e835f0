//! Property tests at scale for the checker: no sequence of frames, however
//! hostile, makes it panic, and what it keeps stays within its bounds.
//! `ACP_TEE_FUZZ_CASES` sets the number of cases (default 10,000).

use super::{test_frame, CheckOptions, Checker, MAX_FINDINGS};
use acp_tee_shared::{Direction, FrameKind};
use acp_tee_wire::fuzz_cases as cases;
use proptest::prelude::*;

/// Lines that look like ACP conversations, broken in every way the rules
/// know, and some that are not messages at all.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![
        Just("1".to_owned()),
        Just("2".to_owned()),
        Just("\"a\"".to_owned()),
        Just("null".to_owned()),
        Just("1.5".to_owned()),
        Just("{}".to_owned()),
    ];
    let method = prop_oneof![
        Just("initialize"),
        Just("session/new"),
        Just("session/load"),
        Just("session/prompt"),
        Just("session/cancel"),
        Just("session/update"),
        Just("session/request_permission"),
        Just("fs/read_text_file"),
        Just("terminal/create"),
        Just("$/cancel_request"),
        Just("_ext/x"),
        Just("nope"),
    ];
    let params = prop_oneof![
        Just("{\"sessionId\":\"s\"}".to_owned()),
        Just("{\"sessionId\":\"s\",\"prompt\":[]}".to_owned()),
        Just("{\"requestId\":1}".to_owned()),
        Just("{\"options\":[{\"optionId\":\"o\"}],\"sessionId\":\"s\"}".to_owned()),
        Just("{\"clientCapabilities\":{\"fs\":{\"readTextFile\":true}},\"protocolVersion\":1}".to_owned()),
        Just("[1,[2,{\"x\":null}]]".to_owned()),
        Just("\"\\ud800\"".to_owned()),
    ];
    let result = prop_oneof![
        Just("\"result\":{\"sessionId\":\"s\"}".to_owned()),
        Just("\"result\":{\"stopReason\":\"end_turn\"}".to_owned()),
        Just("\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"x\"}}".to_owned()),
        Just("\"result\":{\"protocolVersion\":2,\"agentCapabilities\":{\"loadSession\":true}}".to_owned()),
        Just("\"error\":{\"code\":-32800,\"message\":\"c\"}".to_owned()),
        Just("\"error\":7".to_owned()),
    ];
    (
        proptest::option::of(id),
        proptest::option::of(method),
        proptest::option::of(params),
        proptest::option::of(result),
        0u8..6,
    )
        .prop_map(|(id, method, params, result, shape)| {
            let mut members = Vec::new();
            if shape != 5 {
                members.push("\"jsonrpc\":\"2.0\"".to_owned());
            }
            if let Some(id) = id {
                members.push(format!("\"id\":{id}"));
            }
            if let Some(m) = method {
                members.push(format!("\"method\":\"{m}\""));
            }
            if let Some(p) = params {
                members.push(format!("\"params\":{p}"));
            }
            if let Some(r) = result {
                members.push(r);
            }
            let obj = format!("{{{}}}", members.join(","));
            match shape {
                1 => format!("[{obj},{obj}]").into_bytes(),
                // Cut anywhere, even inside a UTF-8 sequence.
                2 => obj.as_bytes()[..obj.len() / 2].to_vec(),
                3 => b"\x1b[32mhello\xff\n".to_vec(),
                _ => obj.into_bytes(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn any_frames_are_checked_without_panic(lines in proptest::collection::vec((any::<bool>(), line()), 0..40)) {
        let mut checker = Checker::new(CheckOptions { max_line_bytes: 64 });
        for (i, (from_client, raw)) in lines.iter().enumerate() {
            let dir = if *from_client { Direction::ClientToAgent } else { Direction::AgentToClient };
            checker.feed(&test_frame(i as i64 + 1, dir, FrameKind::Invalid, raw));
        }
        let report = checker.report(1);
        prop_assert!(report.findings.len() <= MAX_FINDINGS);
        prop_assert_eq!(report.counts.total(), report.findings.len() as u64 + report.left_out);
        for f in &report.findings {
            prop_assert!(!f.message.is_empty());
            prop_assert!(f.seqs.iter().all(|s| *s >= 1 && *s <= lines.len() as i64));
        }
    }
}
