//! Property tests of the imports of other tools' formats against hostile
//! files: a valid file of each format (Zed copy, acp-inspector-trace, acpx
//! events, F# inspector JSONL), generated from random messages, is cut,
//! has bytes changed or hostile text put in, then imported with and
//! without `--skip-bad`. Checks: nothing panics; a failure names the file
//! (and changes nothing readers see); the file unharmed imports one frame
//! per message. `ACP_TEE_FUZZ_CASES` scales the count.

use super::tests::import_text;
use super::{ImportFormat, ImportOptions};
use crate::store::Store;
use proptest::prelude::*;
use serde_json::json;

fn cases() -> u32 {
    let n: u32 = std::env::var("ACP_TEE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000);
    (n / 20).max(1)
}

/// One message: (from the client, id, method, params text).
type Msg = (bool, Option<u32>, String, String);

fn message() -> impl Strategy<Value = Msg> {
    let params = prop_oneof![
        Just("null".to_owned()),
        Just("{\"text\":\"a \\\" b\\n\",\"n\":[1.5e3,-0]}".to_owned()),
        "[a-z \\\\\"{}\\[\\]:,]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    (any::<bool>(), proptest::option::of(0u32..5), "[a-z/_]{1,12}", params)
}

fn wire(m: &Msg) -> String {
    let (_, id, method, params) = m;
    match id {
        Some(id) => format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}"),
        None => format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{params}}}"),
    }
}

/// The file of `msgs` in `format`.
fn file(format: ImportFormat, msgs: &[Msg]) -> String {
    let value = |m: &Msg| serde_json::from_str::<serde_json::Value>(&wire(m)).unwrap();
    match format {
        ImportFormat::Zed => {
            let entries: Vec<_> = msgs
                .iter()
                .map(|m| {
                    let dir = if m.0 { "outgoing" } else { "incoming" };
                    let kind = if m.1.is_some() { "request" } else { "notification" };
                    json!({"_direction": dir, "_type": kind, "id": m.1, "method": m.2, "params": value(m)["params"]})
                })
                .collect();
            serde_json::to_string_pretty(&entries).unwrap()
        }
        ImportFormat::AcpInspector => {
            let header = json!({"type": "header", "format": "acp-inspector-trace", "version": 1, "at": 0,
                                "frames": msgs.len(), "dropped": 0, "warning": "w"});
            let frames = msgs.iter().enumerate().map(|(i, m)| {
                let dir = if m.0 { "client -> agent" } else { "agent -> client" };
                json!({"type": "frame", "at": 1_000 + i, "connection": 1 + i % 2, "direction": dir,
                       "encoding": "utf8", "frame": wire(m)})
            });
            std::iter::once(header).chain(frames).map(|v| v.to_string() + "\n").collect()
        }
        ImportFormat::Acpx => msgs
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let dir = if m.0 { "outbound" } else { "inbound" };
                json!({"seq": i + 1, "at": "2026-12-01T17:08:23.932Z", "direction": dir, "message": value(m)})
                    .to_string()
                    + "\n"
            })
            .collect(),
        _ => msgs
            .iter()
            .map(|m| {
                let dir = if m.0 { "fromClient" } else { "fromAgent" };
                json!({"ts": 1_736_935_200_000_i64, "direction": dir, "json": wire(m)}).to_string() + "\n"
            })
            .collect(),
    }
}

const FORMATS: [ImportFormat; 4] =
    [ImportFormat::Zed, ImportFormat::AcpInspector, ImportFormat::Acpx, ImportFormat::AcpInspectorFsharp];

/// Text no format expects, put in at a random place.
const HOSTILE: [&str; 10] = ["\n", "\"", "{", "]", "\0", "\\", "9e999", "\u{feff}", "\r\n\r\n", "[[[[[[[[[[[["];

fn opts(format: ImportFormat, skip_bad: bool) -> ImportOptions {
    ImportOptions { format, name: None, skip_bad, progress: indicatif::ProgressBar::hidden() }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn hostile_files_of_every_format_fail_cleanly_or_import(
        msgs in proptest::collection::vec(message(), 1..8),
        format in 0usize..4,
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        hostile in 0usize..HOSTILE.len(),
        how in 0u8..3,
        skip_bad in any::<bool>(),
        auto in any::<bool>(),
    ) {
        let format = FORMATS[format];
        let good = file(format, &msgs);
        let mut store = Store::in_memory().unwrap();
        let s = import_text(&mut store, "good.txt", &good, &opts(ImportFormat::Auto, false)).unwrap();
        prop_assert_eq!((s.format, s.frames), (format, msgs.len() as u64));

        let mut bytes = good.into_bytes();
        match how {
            0 => bytes.truncate(cut.index(bytes.len() + 1)),
            1 => { let i = at.index(bytes.len()); bytes[i] = byte; }
            _ => { let i = at.index(bytes.len()); bytes.splice(i..i, HOSTILE[hostile].bytes()); }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.txt");
        std::fs::write(&path, &bytes).unwrap();
        let mut store = Store::in_memory().unwrap();
        let o = opts(if auto { ImportFormat::Auto } else { format }, skip_bad);
        match super::import(&mut store, &path, &o) {
            Ok(s) => prop_assert!(s.frames as usize <= msgs.len() + 1, "{} frames from {} messages", s.frames, msgs.len()),
            Err(e) => {
                prop_assert!(e.to_string().contains("bad.txt"), "{}", e);
                prop_assert!(store.list_traces().unwrap().is_empty());
            }
        }
    }
}
