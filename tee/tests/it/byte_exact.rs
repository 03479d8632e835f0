//! Byte-exactness: whatever goes through `acp-tee -- cat` comes out unchanged,
//! and the stored frames concatenate back to it, in both directions.

use crate::common::*;
use acp_tee_shared::{Direction, FrameKind};
use proptest::prelude::*;

/// One piece of a generated stream.
fn segment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Arbitrary bytes, invalid UTF-8 included.
        proptest::collection::vec(any::<u8>(), 0..300),
        // A JSON-RPC line, LF or CRLF terminated.
        (0u32..1000, "[a-z/_]{1,20}", any::<bool>()).prop_map(|(id, m, crlf)| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{m}\",\"params\":{{}}}}{}",
                if crlf { "\r\n" } else { "\n" }
            )
            .into_bytes()
        }),
        // A batch.
        (0u32..1000).prop_map(|id| format!("[{{\"id\":{id},\"method\":\"a\"}},{{\"method\":\"b\"}}]\n").into_bytes()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        // A large line.
        (1usize..300_000).prop_map(|n| {
            let mut v = vec![b'x'; n];
            v.push(b'\n');
            v
        }),
    ]
}

fn check_round_trip(input: Vec<u8>) {
    let store = TempStore::new();
    let out = run_with_input(tee_command(&store.db, &[], &["cat"]), input.clone());
    assert!(out.status.success(), "acp-tee failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout == input, "output differs from input ({} vs {} bytes)", out.stdout.len(), input.len());
    let trace = store.only_trace();
    assert_eq!(trace.missing_frames, 0);
    assert!(store.stream(trace.id, Direction::ClientToAgent) == input, "client->agent frames differ");
    assert!(store.stream(trace.id, Direction::AgentToClient) == input, "agent->client frames differ");
    let newlines = input.iter().filter(|&&b| b == b'\n').count();
    let expected_frames = newlines + usize::from(!input.is_empty() && input.last() != Some(&b'\n'));
    assert_eq!(trace.frame_count as usize, 2 * expected_frames);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn random_streams_pass_unchanged(segments in proptest::collection::vec(segment(), 0..40)) {
        check_round_trip(segments.concat());
    }
}

#[test]
fn a_32_mib_line_and_an_unterminated_tail() {
    let mut input = vec![b'a'; 32 << 20];
    input.push(b'\n');
    input.extend_from_slice(b"{\"id\":1,\"method\":\"x\"}");
    check_round_trip(input);
}

#[test]
fn frames_are_classified_and_paired() {
    let store = TempStore::new();
    // The agent answers with the line it got, as if the client had sent a response.
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\nnot json\n".to_vec();
    let agent = sh(r#"read req; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'; cat"#);
    let out = run_with_input(tee_command(&store.db, &[], &as_strs(&agent)), input);
    assert!(out.status.success());
    let trace = store.only_trace();
    let frames = store.frames(trace.id);
    let summary: Vec<(Direction, FrameKind, Option<&str>, Option<i64>)> =
        frames.iter().map(|f| (f.dir, f.kind, f.method.as_deref(), f.reply_to_seq)).collect();
    // The client's two lines arrive in one write, so both are framed before
    // the agent's answer.
    assert_eq!(
        summary,
        vec![
            (Direction::ClientToAgent, FrameKind::Request, Some("initialize"), None),
            (Direction::ClientToAgent, FrameKind::Invalid, None, None),
            (Direction::AgentToClient, FrameKind::Response, Some("initialize"), Some(1)),
            (Direction::AgentToClient, FrameKind::Invalid, None, None),
        ]
    );
    assert!(frames[2].latency_ns.unwrap() > 0);
    assert!(frames.windows(2).all(|w| w[0].t_ns <= w[1].t_ns && w[0].seq + 1 == w[1].seq));
}

/// The paths without tee/splice: stdin a regular file (no tee, chunks are
/// read and copied to the recorder), stdout and stderr files opened for
/// appending (splice refuses them, so spliced chunks fall back to copying).
#[test]
fn files_instead_of_pipes_pass_unchanged_too() {
    let store = TempStore::new();
    let dir = tempfile::tempdir().unwrap();
    let mut input = Vec::new();
    for i in 0..20_000 {
        input.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"x\",\"params\":{{}}}}\n").as_bytes(),
        );
    }
    input.extend(vec![b'y'; 700_000]);
    input.push(b'\n');
    let (in_path, out_path, err_path) = (dir.path().join("in"), dir.path().join("out"), dir.path().join("err"));
    std::fs::write(&in_path, &input).unwrap();
    let append = |p: &std::path::Path| std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
    // The agent copies stdin to stdout and a part of it to stderr.
    let agent = sh("tee /dev/stderr | cat");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.stdin(std::fs::File::open(&in_path).unwrap()).stdout(append(&out_path)).stderr(append(&err_path));
    let status = cmd.status().unwrap();
    assert!(status.success());
    assert!(std::fs::read(&out_path).unwrap() == input, "stdout differs");
    let err = std::fs::read(&err_path).unwrap();
    assert!(err.starts_with(&input), "stderr lacks the agent's copy ({} bytes)", err.len());
    let trace = store.only_trace();
    assert_eq!(trace.missing_frames, 0);
    assert!(store.stream(trace.id, Direction::ClientToAgent) == input);
    assert!(store.stream(trace.id, Direction::AgentToClient) == input);
    assert!(store.stream(trace.id, Direction::AgentStderr) == input);
}
