//! Property tests over whole conversations: generated traffic with nested,
//! escaped, batched, repeated-member and odd-id messages goes through the
//! recorder's framer into a real store, then out through every export, the
//! API's reads and an import. Checks: nothing panics; every response pairs
//! with its request by id value however either spelled it (batches
//! included); the `.jsons` export has exactly one event per message; export
//! -> import -> export is identical; an `acp-inspector-trace` export imports
//! back to the same frames. `ACP_TEE_FUZZ_CASES` scales the count
//! (default 10,000 gives 200 conversations).

use super::{export, ExportFormat, ExportOptions, TraceSelection};
use crate::frame::Framer;
use crate::import::{import, ImportFormat, ImportOptions};
use crate::model::NewFrame;
use crate::store::Store;
use acp_tee_shared::api::FrameQuery;
use acp_tee_shared::{Direction, FrameKind};
use proptest::prelude::*;

fn cases() -> u32 {
    let n: u32 = std::env::var("ACP_TEE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000);
    (n / 50).max(1)
}

/// One id value, spelled two ways: as the request wrote it and as the
/// response did. `n` keeps ids unique within a conversation.
fn id_spellings(n: usize, style: u8) -> (String, String) {
    match style % 6 {
        0 => (n.to_string(), n.to_string()),
        1 => (n.to_string(), format!("{n}.0")),
        2 => (format!("{n}0e-1"), format!("{n}")),
        3 => (format!("\"\\u00e9/{n}\""), format!("\"é\\/{n}\"")),
        4 => (format!("\"q\\\"{n}\""), format!("\"q\\u0022{n}\"")),
        _ => (format!("\"{n}\""), format!("\"\\u003{n}\"")),
    }
}

/// A JSON value nested `depth` deep, arrays and objects taking turns, with
/// a member named like a secret at the bottom when `secret`.
fn nested(depth: usize, secret: bool) -> String {
    let leaf = if secret { "{\"apiKey\":\"k\",\"x\":\"\\u00e9\"}" } else { "\"\\u00e9\\/x\"" };
    let mut s = String::with_capacity(depth * 8 + leaf.len());
    for i in 0..depth {
        s.push_str(if i % 2 == 0 { "[" } else { "{\"a\":" });
    }
    s.push_str(leaf);
    for i in (0..depth).rev() {
        s.push(if i % 2 == 0 { ']' } else { '}' });
    }
    s
}

/// What one generated exchange is.
#[derive(Clone, Debug)]
struct Exchange {
    /// The request goes agent to client (else client to agent).
    from_agent: bool,
    style: u8,
    depth: usize,
    secret: bool,
    /// The response repeats its id member (the last one counts).
    repeated_id: bool,
    /// 0: result, 1: result null, 2: error, 3: never answered.
    outcome: u8,
    /// Answered inside a batch with the next answered exchange.
    batched: bool,
}

/// Mostly shallow params; sometimes thousands of levels, beyond what
/// redaction reads (`REDACT_MAX_DEPTH`) too.
fn depth() -> impl Strategy<Value = usize> {
    prop_oneof![9 => 0usize..60, 1 => 4_000usize..12_000]
}

fn exchange() -> impl Strategy<Value = Exchange> {
    (any::<bool>(), any::<u8>(), depth(), any::<bool>(), any::<bool>(), 0u8..4, any::<bool>()).prop_map(
        |(from_agent, style, depth, secret, repeated_id, outcome, batched)| Exchange {
            from_agent,
            style,
            depth,
            secret,
            repeated_id,
            outcome,
            batched,
        },
    )
}

/// The lines of a conversation (direction, line) and, per line, what it
/// must become: `Some(request line index)` for each response message.
struct Conversation {
    lines: Vec<(Direction, String)>,
    /// For each line: the indexes of the request lines its responses answer.
    answers: Vec<Vec<usize>>,
    /// JSON-RPC messages in all (one event each in `.jsons`).
    messages: usize,
    /// Lines or batch elements that are no message.
    not_messages: usize,
}

fn conversation(exchanges: &[Exchange], noise: &[u8]) -> Conversation {
    let mut c = Conversation { lines: Vec::new(), answers: Vec::new(), messages: 0, not_messages: 0 };
    let dir = |from_agent: bool| if from_agent { Direction::AgentToClient } else { Direction::ClientToAgent };
    let mut request_line = Vec::new();
    for (n, e) in exchanges.iter().enumerate() {
        let (id, _) = id_spellings(n + 100, e.style);
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"m/{n}\",\"params\":{}}}",
            nested(e.depth, e.secret)
        );
        request_line.push(c.lines.len());
        c.lines.push((dir(e.from_agent), line));
        c.answers.push(Vec::new());
        c.messages += 1;
        // Noise between the requests: notifications, positional arrays, garbage.
        match noise.get(n).copied().unwrap_or(0) % 5 {
            0 => {
                c.lines.push((
                    dir(e.from_agent),
                    "{\"jsonrpc\":\"2.0\",\"method\":\"session\\/update\",\"params\":null}".into(),
                ));
                c.messages += 1;
            }
            1 => {
                c.lines.push((dir(!e.from_agent), format!("[{id},\"m/{n}\",{{}}]")));
                c.not_messages += 3;
            }
            2 => {
                c.lines.push((dir(e.from_agent), "not json \u{1b}[31m".into()));
                c.not_messages += 1;
            }
            _ => continue,
        }
        c.answers.push(Vec::new());
    }
    // Answers in reverse order, batched where asked (a batch holds answers
    // going one way only).
    let mut pending: Vec<(bool, String, usize)> = Vec::new();
    let flush = |c: &mut Conversation, pending: &mut Vec<(bool, String, usize)>| {
        if pending.is_empty() {
            return;
        }
        let from_agent = pending[0].0;
        let text = if pending.len() == 1 {
            pending[0].1.clone()
        } else {
            format!("[{}]", pending.iter().map(|p| p.1.as_str()).collect::<Vec<_>>().join(","))
        };
        c.lines.push((dir(from_agent), text));
        c.answers.push(pending.iter().map(|p| p.2).collect());
        pending.clear();
    };
    for (n, e) in exchanges.iter().enumerate().rev() {
        if e.outcome == 3 {
            continue;
        }
        let (_, id) = id_spellings(n + 100, e.style);
        let id = if e.repeated_id { format!("\"wrong\",\"id\":{id}") } else { id };
        let body = match e.outcome {
            0 => "\"result\":{\"stopReason\":\"end_turn\"}".to_owned(),
            1 => "\"result\":null".to_owned(),
            _ => "\"error\":{\"code\":-32603,\"message\":\"\\u00e9\"}".to_owned(),
        };
        let answer = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},{body}}}");
        // Answers travel the other way from their request.
        let from_agent = !e.from_agent;
        if pending.first().is_some_and(|p| p.0 != from_agent) {
            flush(&mut c, &mut pending);
        }
        pending.push((from_agent, answer, request_line[n]));
        c.messages += 1;
        if !e.batched {
            flush(&mut c, &mut pending);
        }
    }
    flush(&mut c, &mut pending);
    c
}

/// Records `c` through the framer into a new store; returns it with the
/// trace's id and the frames (one per line, in order).
fn record(c: &Conversation) -> (Store, i64, Vec<NewFrame>) {
    let mut store = Store::in_memory().unwrap();
    let id = super::tests::create_trace(&mut store);
    let mut framer = Framer::new();
    let mut frames = Vec::new();
    for (i, (dir, line)) in c.lines.iter().enumerate() {
        framer.chunk(*dir, 1000 * (i as u64 + 1), format!("{line}\n").as_bytes(), |f| frames.push(f));
    }
    framer.eof_all(1000 * (c.lines.len() as u64 + 1), |f| frames.push(f));
    store.insert_frames(id, &frames).unwrap();
    super::tests::finish_trace(&store, id);
    (store, id, frames)
}

fn export_text(store: &Store, format: ExportFormat) -> (String, super::ExportSummary) {
    let mut out = Vec::new();
    let summary = export(store, TraceSelection::Latest, &ExportOptions::new(format), &mut out).unwrap();
    (String::from_utf8(out).unwrap(), summary)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn conversations_pair_by_value_export_once_per_message_and_round_trip(
        exchanges in proptest::collection::vec(exchange(), 1..12),
        noise in proptest::collection::vec(any::<u8>(), 12),
    ) {
        let c = conversation(&exchanges, &noise);
        let (store, trace, frames) = record(&c);
        prop_assert_eq!(frames.len(), c.lines.len());

        // Pairing by value, batches element by element.
        for (frame, answers) in frames.iter().zip(&c.answers) {
            let expect: Vec<i64> = answers.iter().map(|&line| frames[line].seq).collect();
            let mut got: Vec<i64> = match frame.kind {
                FrameKind::Batch => frame.batch.iter().filter_map(|m| m.reply_to_seq).collect(),
                _ => frame.reply_to_seq.into_iter().collect(),
            };
            let mut expect_sorted = expect.clone();
            expect_sorted.sort_unstable();
            got.sort_unstable();
            prop_assert_eq!(&got, &expect_sorted, "{:?}", String::from_utf8_lossy(&frame.raw));
            if frame.kind == FrameKind::Batch {
                prop_assert_eq!(store.batch_replies(trace, frame.seq).unwrap(), expect_sorted);
            }
        }

        // One `.jsons` event per message; everything else counted.
        let (jsons, summary) = export_text(&store, ExportFormat::Jsons);
        prop_assert_eq!(jsons.lines().count(), c.messages);
        prop_assert_eq!(summary.left_out as usize, c.not_messages);
        // (Valid JSON, however deep: a RawValue has no recursion limit.)
        for line in jsons.lines() {
            serde_json::from_str::<&serde_json::value::RawValue>(line).unwrap();
        }

        // Every other format writes valid JSON.
        let (perfetto, _) = export_text(&store, ExportFormat::Perfetto);
        serde_json::from_str::<&serde_json::value::RawValue>(&perfetto).unwrap();
        let (json, _) = export_text(&store, ExportFormat::Json);
        serde_json::from_str::<&serde_json::value::RawValue>(&json).unwrap();
        // OTLP lines are the official request type, each span ending after
        // it starts.
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        let (otlp, _) = export_text(&store, ExportFormat::Otlp);
        for line in otlp.lines() {
            let req: ExportTraceServiceRequest = serde_json::from_str(line).unwrap();
            for s in req.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans) {
                prop_assert!(s.end_time_unix_nano >= s.start_time_unix_nano, "{:?}", s.name);
            }
        }

        // export -> import -> export: the same file.
        let (first, _) = export_text(&store, ExportFormat::Ndjson);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ndjson");
        std::fs::write(&path, &first).unwrap();
        let mut again = Store::in_memory().unwrap();
        let opts = ImportOptions { format: ImportFormat::Auto, name: None, skip_bad: false, progress: indicatif::ProgressBar::hidden() };
        import(&mut again, &path, &opts).unwrap();
        let (second, _) = export_text(&again, ExportFormat::Ndjson);
        let frames_of = |text: &str| text.lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
        prop_assert_eq!(frames_of(&second), frames_of(&first));

        // export (unmasked) as acp-inspector-trace -> import: the same bytes, each
        // going its way, paired alike.
        let mut inspector = Vec::new();
        let unmasked = ExportOptions {
            redactor: crate::redact::Redactor::without_defaults(Vec::new()),
            ..ExportOptions::new(ExportFormat::AcpInspector)
        };
        export(&store, TraceSelection::Latest, &unmasked, &mut inspector).unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, &inspector).unwrap();
        let mut back = Store::in_memory().unwrap();
        import(&mut back, &path, &opts).unwrap();
        let mut imported = Vec::new();
        back.for_each_frame(1, |f| -> Result<(), crate::store::StoreError> {
            imported.push((f.raw, f.dir, f.kind, f.reply_to_seq));
            Ok(())
        }).unwrap();
        let recorded: Vec<_> = frames.iter().map(|f| (f.raw.clone(), f.dir, f.kind, f.reply_to_seq)).collect();
        prop_assert_eq!(imported, recorded);

        // The API's reads of every frame.
        for f in &frames {
            let detail = store.frame_detail(trace, f.seq).unwrap();
            prop_assert!(detail.is_some());
        }
        for kind in [None, Some(FrameKind::Batch), Some(FrameKind::Error)] {
            let q = FrameQuery { kind, limit: Some(5), ..Default::default() };
            store.frame_page(trace, &q).unwrap();
        }
    }
}
