//! The two rules.

use super::*;

fn update_of(raw: &str) -> UpdateSeen {
    let mut keep = None;
    let p = params(raw.as_bytes(), &mut keep).expect("params read");
    update_seen(p.update.as_ref().expect("the update reads"))
}

#[test]
fn a_member_of_the_wrong_type_reads_as_absent_and_the_rest_still_reads() {
    // A tool call's title that is a number.
    let u = update_of(
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":
            {"sessionUpdate":"tool_call","toolCallId":"t1","title":7,"status":"pending","locations":"x"}}}"#,
    );
    assert_eq!(u.title, None);
    assert_eq!(u.locations, None);
    assert_eq!(u.tool_call_id.as_deref(), Some("t1"));
    assert_eq!(u.status.as_deref(), Some("pending"));
    assert_eq!(u.session_update.as_deref(), Some("tool_call"));

    // A prompt element that is a number keeps its place, empty.
    let raw = br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s",
        "prompt":[{"type":"text","text":"a"},7,{"type":"text","text":["b"]},{"type":"text","text":"c"}]}}"#;
    let seen = read_params(raw);
    assert_eq!(seen.session_id.as_deref(), Some("s"));
    let blocks = seen.prompt.expect("the prompt reads");
    let text = |t: &str| (Some("text".to_owned()), Some(t.to_owned()));
    assert_eq!(blocks, vec![text("a"), (None, None), (Some("text".to_owned()), None), text("c")]);

    // usage.inputTokens that is a string; a stop reason that is an object.
    let raw = br#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":{"x":1},
        "usage":{"totalTokens":9,"inputTokens":"x","outputTokens":5}}}"#;
    let a = read_answer(raw);
    assert_eq!(a.stop_reason, None);
    let usage = a.usage.expect("usage reads");
    assert_eq!((usage.total_tokens, usage.input_tokens, usage.output_tokens), (Some(9), None, Some(5)));

    // A negative count is no count; a string id of a number is no string.
    let raw = br#"{"jsonrpc":"2.0","id":1,"result":{"usage":{"totalTokens":-1,"outputTokens":5}}}"#;
    let usage = read_answer(raw).usage.expect("usage reads");
    assert_eq!((usage.total_tokens, usage.output_tokens), (None, Some(5)));

    // params that are no object give none; the envelope still reads.
    for p in ["[1,2]", "\"x\"", "7", "null", "true"] {
        let raw = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{p}}}"#);
        let mut keep = None;
        assert!(params(raw.as_bytes(), &mut keep).is_none(), "{p}");
        let e: Envelope<Routing> = serde_json::from_str(&raw).expect("the envelope reads");
        assert_eq!(e.kind(), Some((FrameKind::Request, Some("session/prompt".to_owned()))), "{p}");
        assert!(e.params.expect("params are there").session_id.is_none(), "{p}");
    }

    // An error that is no object reads as no error; its code as a string
    // loses the code only.
    let mut keep = None;
    let (_, e) = reply(br#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#, &mut keep);
    assert!(e.is_none());
    let mut keep = None;
    let (_, e) = reply(br#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"no"}}"#, &mut keep);
    let e = e.expect("the error reads");
    assert_eq!((e.code, e.message.as_deref()), (None, Some("no")));

    // A message that is no object reads as all absent.
    let mut keep = None;
    let m = message(br#"[{"params":{"sessionId":"s"}}]"#, &mut keep);
    assert!(m.params.is_none() && m.result.is_none() && m.error.is_none());
}

#[test]
fn a_member_written_twice_counts_as_its_last_at_the_top_and_nested() {
    // Top level: the envelope keeps the last and says so.
    let raw = br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"session/cancel","method":"session/prompt",
        "params":{"sessionId":"a"},"params":{"sessionId":"b","prompt":[]}}"#;
    let e: Envelope = serde_json::from_slice(raw).expect("the envelope reads");
    assert!(e.duplicate);
    assert_eq!(e.id.map(RawValue::get), Some("2"));
    assert_eq!(e.kind(), Some((FrameKind::Request, Some("session/prompt".to_owned()))));
    let r: Envelope<Routing> = serde_json::from_slice(raw).expect("the envelope reads");
    assert!(r.duplicate);
    let routing = r.params.expect("params read");
    assert_eq!(routing.session_id.as_deref(), Some("b"));
    assert_eq!(routing.prompt.map(|p| p.len()), Some(0));
    let seen = read_params(raw);
    assert_eq!((seen.session_id.as_deref(), seen.prompt), (Some("b"), Some(vec![])));

    // Once each: no duplicate.
    let e: Envelope = serde_json::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#).unwrap();
    assert!(!e.duplicate);

    // Nested, at every depth: read through read_last.
    let u = update_of(
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a","sessionId":"b","update":
            {"sessionUpdate":"tool_call","toolCallId":"t","status":"pending","status":"completed",
             "locations":[{"path":"/x","path":"/y"}]}}}"#,
    );
    assert_eq!(u.status.as_deref(), Some("completed"));
    assert_eq!(u.locations, Some(vec![Some("/y".to_owned())]));
    let mut keep = None;
    let p = params(br#"{"params":{"sessionId":"a","sessionId":"b"}}"#, &mut keep).expect("params read");
    assert_eq!(p.session_id.as_deref(), Some("b"));
    assert!(keep.is_some(), "the repeat was rebuilt");

    // In a result, and a repeat that changes the type: the last wins, even
    // when it is the wrong type.
    let a = read_answer(
        br#"{"id":1,"result":{"usage":{"inputTokens":1,"inputTokens":2},"stopReason":"end_turn","stopReason":3}}"#,
    );
    assert_eq!(a.usage.and_then(|u| u.input_tokens), Some(2));
    assert_eq!(a.stop_reason, None);

    // A member read from an envelope's text, and a shape read directly.
    let e: Envelope =
        serde_json::from_slice(br#"{"params":{"update":{"content":{"type":"text","text":"a","text":"b"}}}}"#).unwrap();
    let mut keep = None;
    let p: Params = member(e.params, &mut keep).expect("params read");
    let mut keep = None;
    let block: ContentBlock = member(p.update.and_then(|u| u.content), &mut keep).expect("the block reads");
    assert_eq!(block.text.as_deref(), Some("b"));
    let mut keep = None;
    let entry: PlanEntry = read_last(br#"{"content":"a","priority":"low","content":"b"}"#, &mut keep).unwrap();
    assert_eq!((entry.content.as_deref(), entry.priority.as_deref()), (Some("b"), Some("low")));
}
