//! Hostile recordings and hostile peers for `diff` and `replay`: no trace
//! makes the diff panic or report a trace different from itself, and no
//! recording or peer makes the replay engine panic or send anything but
//! one JSON message per line. `ACP_TEE_FUZZ_CASES` scales the count
//! (default 500: each case builds stores).

use super::diff::{diff, DiffOptions, DIFF_MAX_LISTED};
use super::engine::{Engine, Timing};
use super::script;
use super::source::Opened;
use crate::frame::Framer;
use crate::model::NewFrame;
use crate::store::Store;
use acp_tee_shared::Direction;
use proptest::prelude::*;
use serde_json::Value;

fn cases() -> u32 {
    std::env::var("ACP_TEE_FUZZ_CASES").ok().and_then(|c| c.parse::<u32>().ok()).map_or(500, |c| (c / 20).max(10))
}

/// JSON values of every type, some deep, some with minted members of odd types.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[a-z\\\\\"/ \u{e9}\u{202e}]{0,12}".prop_map(|s| format!("{s:?}")),
        Just("{\"sessionId\":{\"sessionId\":[1]},\"toolCallId\":7}".to_owned()),
        (1usize..200).prop_map(|d| format!("{}1{}", "[".repeat(d), "]".repeat(d))),
        (1usize..40).prop_map(|d| format!("{}0{}", "{\"a\":".repeat(d), "}".repeat(d))),
    ]
}

/// One line of a conversation: a message (often of ACP's methods), or not.
fn line() -> impl Strategy<Value = (Direction, String)> {
    let method = prop_oneof![
        Just("initialize"),
        Just("session/new"),
        Just("session/prompt"),
        Just("session/update"),
        Just("session/request_permission"),
        Just("fs/read_text_file"),
        Just("x"),
    ];
    let message = (proptest::option::of(0u8..6), proptest::option::of(method), value(), value(), 0u8..5, "[a-c]{1,2}")
        .prop_map(|(id, method, params, result, shape, sid)| {
            let mut members = vec!["\"jsonrpc\":\"2.0\"".to_owned()];
            if let Some(id) = id {
                members.push(format!("\"id\":{}", if id == 5 { "\"s\"".to_owned() } else { id.to_string() }));
            }
            if let Some(m) = method {
                members.push(format!("\"method\":\"{m}\""));
                members.push(format!(
                    "\"params\":{{\"sessionId\":\"{sid}\",\"update\":{{\"sessionUpdate\":{params}}},\"x\":{params}}}"
                ));
            } else if shape == 0 {
                members.push(format!("\"error\":{result}"));
            } else {
                members.push(format!(
                    "\"result\":{{\"sessionId\":\"{sid}\",\"stopReason\":{result},\"agentCapabilities\":{result}}}"
                ));
            }
            let obj = format!("{{{}}}", members.join(","));
            match shape {
                1 => format!("[{obj},{obj}]"),
                2 => String::from_utf8_lossy(&obj.as_bytes()[..obj.len() / 2]).into_owned(),
                _ => obj,
            }
        });
    let dir = prop_oneof![Just(Direction::ClientToAgent), Just(Direction::AgentToClient), Just(Direction::AgentStderr)];
    (dir, prop_oneof![4 => message, 1 => "[ -~]{0,20}"])
}

fn conversation() -> impl Strategy<Value = Vec<(Direction, String)>> {
    proptest::collection::vec(line(), 0..40)
}

/// `lines` recorded into a new store through the framer.
fn record(lines: &[(Direction, String)]) -> Opened {
    let mut store = Store::in_memory().unwrap();
    let id = store.create_trace(&crate::store::test_start(), 1).unwrap();
    let mut framer = Framer::new();
    let mut frames: Vec<NewFrame> = Vec::new();
    for (i, (dir, line)) in lines.iter().enumerate() {
        framer.chunk(*dir, 1000 * (i as u64 + 1), format!("{line}\n").as_bytes(), |f| frames.push(f));
    }
    framer.eof_all(1000 * (lines.len() as u64 + 1), |f| frames.push(f));
    store.insert_frames(id, &frames).unwrap();
    Opened::owning(store, id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn a_trace_is_equivalent_to_itself_and_any_two_compare(a in conversation(), b in conversation()) {
        let (ta, ta2, tb) = (record(&a), record(&a), record(&b));
        let opts = DiffOptions::default();
        let same = diff((&ta).into(), (&ta2).into(), &opts).unwrap();
        prop_assert!(same.equivalent, "{:#?}", same);
        prop_assert_eq!(same.changed_messages, 0);
        let d = diff((&ta).into(), (&tb).into(), &opts).unwrap();
        prop_assert!(d.messages.len() <= DIFF_MAX_LISTED);
        prop_assert!(d.equal_messages <= d.a.messages.min(d.b.messages));
        prop_assert!(d.equal_messages + d.changed_messages >= d.a.messages.max(d.b.messages));
        serde_json::to_string(&d).unwrap();
        super::text::render(&d, "a", "b");
    }

    #[test]
    fn the_engine_sends_one_message_per_line_whatever_it_replays_and_hears(
        recorded in conversation(),
        heard in conversation(),
        as_agent in any::<bool>(),
    ) {
        let opened = record(&recorded);
        let script = script::load(opened.store(), opened.trace_id).unwrap();
        let ours = if as_agent { Direction::AgentToClient } else { Direction::ClientToAgent };
        let mut engine = Engine::new(&script, ours, Timing::Reached);
        let mut out = Vec::new();
        engine.send_ready(&mut out).unwrap();
        for (_, line) in &heard {
            if let Some(live) = super::engine::Live::read(line.as_bytes().to_vec()) {
                engine.receive(live, &mut out).unwrap();
            }
            engine.send_ready(&mut out).unwrap();
        }
        let _ = engine.waiting();
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).unwrap();
            prop_assert!(v.is_object());
        }
    }
}

#[test]
fn past_the_key_bound_new_methods_count_under_one_key() {
    use super::diff::DIFF_MAX_KEYS;
    let method = |i: usize, tag: &str| {
        (Direction::ClientToAgent, format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{tag}{i}\",\"params\":{{}}}}"))
    };
    let n = DIFF_MAX_KEYS + 100;
    let a: Vec<_> = (0..n).map(|i| method(i, "m")).collect();
    let b: Vec<_> = (0..n).map(|i| method(i, if i < DIFF_MAX_KEYS { "m" } else { "other" })).collect();
    let d = diff((&record(&a)).into(), (&record(&b)).into(), &DiffOptions::default()).unwrap();
    assert_eq!(d.changed_messages, 100, "{:?}", d.messages.first());
    assert!(d.messages.iter().all(|m| m.method.as_deref() == Some("…")));
    assert_eq!(d.equal_messages as usize, DIFF_MAX_KEYS);
}
