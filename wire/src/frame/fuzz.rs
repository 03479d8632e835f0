//! Property tests at scale for the frame code: no input makes the splitter or
//! the classifier panic, and frames always concatenate back to the input.
//! `ACP_TEE_FUZZ_CASES` sets the number of cases (default 10,000).

use super::{classify, FrameSplitter, Pairer};
use acp_tee_shared::Direction;
use proptest::prelude::*;

pub use crate::fuzz_cases as cases;

/// Byte strings that look like what crosses a tee, and some that do not.
fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
    let json_value = prop_oneof![
        Just("null".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[a-z\\\\\"/ \u{e9}]{0,12}".prop_map(|s| format!("{s:?}")),
        Just("{}".to_owned()),
        Just("[1,{\"a\":[]}]".to_owned()),
    ];
    let message = (
        proptest::option::of(json_value.clone()),
        proptest::option::of("[a-z/_$]{0,16}"),
        proptest::option::of(json_value.clone()),
        proptest::option::of(json_value),
        0u8..4,
    )
        .prop_map(|(id, method, params, result, shape)| {
            let mut members = Vec::new();
            if let Some(id) = id {
                members.push(format!("\"id\":{id}"));
            }
            if let Some(m) = method {
                members.push(format!("\"method\":\"{m}\""));
            }
            if let Some(p) = params {
                members.push(format!("\"params\":{{\"sessionId\":{p},\"update\":{p},\"prompt\":[{p}]}}"));
            }
            if let Some(r) = result {
                members.push(if shape == 0 { format!("\"error\":{r}") } else { format!("\"result\":{r}") });
            }
            let obj = format!("{{{}}}", members.join(","));
            match shape {
                1 => format!("[{obj},{obj}]").into_bytes(),
                // Cut anywhere, even inside a UTF-8 sequence.
                2 => obj.as_bytes()[..obj.len() / 2].to_vec(),
                _ => obj.into_bytes(),
            }
        });
    let piece = prop_oneof![
        message,
        proptest::collection::vec(any::<u8>(), 0..64),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn splitting_classifying_and_pairing_never_panic_and_lose_nothing(
        data in wire_bytes(),
        cut in proptest::collection::vec(1usize..64, 1..8),
    ) {
        let mut splitter = FrameSplitter::new();
        let mut pairer = Pairer::new();
        let mut frames = Vec::new();
        let mut rest = &data[..];
        let mut sizes = cut.iter().cycle();
        while !rest.is_empty() {
            let n = (*sizes.next().unwrap()).min(rest.len());
            splitter.push(&rest[..n], |f| frames.push(f));
            rest = &rest[n..];
        }
        frames.extend(splitter.finish());
        prop_assert_eq!(frames.concat(), data.clone());
        for (i, f) in frames.iter().enumerate() {
            let mut c = classify(f);
            let dir = if i % 2 == 0 { Direction::ClientToAgent } else { Direction::AgentToClient };
            let p = pairer.observe(i as i64 + 1, i as i64, dir, &mut c);
            if let Some(req) = p.reply_to_seq {
                prop_assert!(req <= i as i64);
            }
            let _ = super::summary_texts(c.frame_kind(), c.method.as_deref(), f, false);
            let _ = super::summary_texts(c.frame_kind(), c.method.as_deref(), f, true);
        }
    }
}
