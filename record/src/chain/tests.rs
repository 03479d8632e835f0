//! The proxy's routing, fed raw JSON lines as the conductor 5.0 sends them
//! (shapes taken from a real conductor run).

use super::*;
use acp_tee_shared::Direction::{AgentToClient, ClientToAgent};

fn route(r: &mut Router, line: &str) -> (Option<String>, Logical) {
    let routed = r.route(format!("{line}\n").as_bytes());
    (routed.send.map(|s| String::from_utf8(s).unwrap()), routed.record)
}

fn text(b: &Option<Vec<u8>>) -> Option<&str> {
    b.as_deref().map(|b| std::str::from_utf8(b).unwrap())
}

#[test]
fn initialize_goes_to_the_successor_as_initialize() {
    let mut r = Router::new();
    let (send, rec) = route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":"c-1","method":"proxy/initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
    );
    let wrapped = r#"{"jsonrpc":"2.0","id":"acp-tee-1","method":"proxy/successor","params":{"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}}"#;
    assert_eq!(send.as_deref(), Some(format!("{wrapped}\n").as_str()));
    assert_eq!(rec.dir, ClientToAgent);
    assert_eq!(text(&rec.envelope), Some(format!("{wrapped}\n").as_str()));
    // The answer goes back under the conductor's id, result untouched.
    let (send, rec) = route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":"acp-tee-1","result":{"protocolVersion":1,"agentCapabilities":{ "x" : 1 }}}"#,
    );
    let answer =
        "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"result\":{\"protocolVersion\":1,\"agentCapabilities\":{ \"x\" : 1 }}}\n";
    assert_eq!(send.as_deref(), Some(answer));
    assert_eq!(rec.dir, AgentToClient);
    assert_eq!(rec.raw, answer.as_bytes());
    assert_eq!(r.in_flight(), 0);
}

#[test]
fn notifications_both_ways() {
    let mut r = Router::new();
    let (send, rec) = route(&mut r, r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#);
    assert_eq!(
        send.as_deref(),
        Some("{\"jsonrpc\":\"2.0\",\"method\":\"proxy/successor\",\"params\":{\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"s\"}}}\n")
    );
    assert_eq!(rec.dir, ClientToAgent);
    let update = r#"{"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}}"#;
    let (send, rec) = route(&mut r, update);
    let plain = "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\"}}}\n";
    assert_eq!(send.as_deref(), Some(plain));
    assert_eq!((rec.dir, rec.raw.as_slice()), (AgentToClient, plain.as_bytes()));
    assert_eq!(text(&rec.envelope), Some(format!("{update}\n").as_str()));
}

#[test]
fn agent_requests_are_unwrapped_and_answered_in_the_envelope() {
    let mut r = Router::new();
    let (send, rec) = route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":"w-9","method":"proxy/successor","params":{"method":"session/request_permission","params":{"sessionId":"s","options":[]},"_meta":{"hop":1}}}"#,
    );
    let asked = "{\"jsonrpc\":\"2.0\",\"id\":\"acp-tee-1\",\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s\",\"options\":[]}}\n";
    assert_eq!(send.as_deref(), Some(asked));
    assert_eq!(rec.dir, AgentToClient);
    let (send, rec) = route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":"acp-tee-1","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}"#,
    );
    let answered = "{\"jsonrpc\":\"2.0\",\"id\":\"w-9\",\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}\n";
    assert_eq!(send.as_deref(), Some(answered));
    assert_eq!(rec.dir, ClientToAgent);
    assert_eq!(text(&rec.envelope), Some(answered));
}

#[test]
fn errors_pass_through_unchanged() {
    let mut r = Router::new();
    route(&mut r, r#"{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"gone"}}"#);
    let (send, _) = route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":"acp-tee-1","error":{"code":-32002,"message":"Resource not found","data":{"uri":"gone"}}}"#,
    );
    assert_eq!(
        send.as_deref(),
        Some("{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32002,\"message\":\"Resource not found\",\"data\":{\"uri\":\"gone\"}}}\n")
    );
}

#[test]
fn legacy_names_are_understood_and_spoken_back() {
    let mut r = Router::new();
    let (send, _) = route(&mut r, r#"{"jsonrpc":"2.0","id":0,"method":"_proxy/initialize","params":{}}"#);
    assert_eq!(
        send.as_deref(),
        Some("{\"jsonrpc\":\"2.0\",\"id\":\"acp-tee-1\",\"method\":\"_proxy/successor\",\"params\":{\"method\":\"initialize\",\"params\":{}}}\n")
    );
    let (send, rec) = route(
        &mut r,
        r#"{"jsonrpc":"2.0","method":"_proxy/successor","params":{"method":"session/update","params":{}}}"#,
    );
    assert_eq!(send.as_deref(), Some("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{}}\n"));
    assert_eq!(rec.dir, AgentToClient);
    let (send, _) = route(&mut r, r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#);
    assert!(send.unwrap().contains("\"method\":\"_proxy/successor\""));
}

#[test]
fn cancels_are_passed_on_under_our_ids() {
    let mut r = Router::new();
    route(&mut r, r#"{"jsonrpc":"2.0","id":"p-1","method":"session/prompt","params":{}}"#);
    let (send, rec) = route(&mut r, r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"p-1"}}"#);
    assert_eq!(
        send.as_deref(),
        Some("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"acp-tee-1\"}}\n")
    );
    assert_eq!(rec.dir, ClientToAgent);
    route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":"w-1","method":"proxy/successor","params":{"method":"fs/read_text_file","params":{}}}"#,
    );
    let (send, rec) = route(&mut r, r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"w-1"}}"#);
    assert_eq!(
        send.as_deref(),
        Some("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancel_request\",\"params\":{\"requestId\":\"acp-tee-2\"}}\n")
    );
    assert_eq!(rec.dir, AgentToClient);
    // Once answered, a late cancel goes nowhere.
    route(&mut r, r#"{"jsonrpc":"2.0","id":"acp-tee-1","error":{"code":-32800,"message":"Request cancelled"}}"#);
    let (send, _) = route(&mut r, r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"p-1"}}"#);
    assert_eq!(send, None);
}

#[test]
fn unroutable_responses_and_notifications_are_recorded_not_sent() {
    let mut r = Router::new();
    for line in [
        r#"{"jsonrpc":"2.0","id":"nobody","result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"proxy/successor","params":{"nomethod":1}}"#,
    ] {
        let (send, rec) = route(&mut r, line);
        assert_eq!(send, None, "{line}");
        assert_eq!(rec.raw, format!("{line}\n").as_bytes());
        assert_eq!(rec.envelope, None);
    }
}

#[test]
fn ids_of_both_sides_never_collide() {
    let mut r = Router::new();
    // The client's request 1 and the agent's request 1 are different requests.
    route(&mut r, r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}"#);
    route(
        &mut r,
        r#"{"jsonrpc":"2.0","id":1,"method":"proxy/successor","params":{"method":"fs/read_text_file","params":{}}}"#,
    );
    let (send, _) = route(&mut r, r#"{"jsonrpc":"2.0","id":"acp-tee-2","result":{"content":""}}"#);
    assert_eq!(send.as_deref(), Some("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":\"\"}}\n"));
    let (send, rec) = route(&mut r, r#"{"jsonrpc":"2.0","id":"acp-tee-1","result":{"stopReason":"end_turn"}}"#);
    assert_eq!(send.as_deref(), Some("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"stopReason\":\"end_turn\"}}\n"));
    assert_eq!(rec.dir, AgentToClient);
    assert_eq!(r.in_flight(), 0);
}

#[test]
fn lines_we_cannot_route_are_answered_as_json_rpc_says() {
    let mut r = Router::new();
    let cases: [(&str, Option<&str>); 9] = [
        // An envelope without an inner method: invalid params, under its id.
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"proxy/successor","params":{}}"#,
            Some(
                r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"the envelope's params name no inner method"}}"#,
            ),
        ),
        // A method that is not a string: invalid request, under its id.
        (
            r#"{"jsonrpc":"2.0","id":8,"method":42}"#,
            Some(
                r#"{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"invalid request: `method` is not a string"}}"#,
            ),
        ),
        // Not JSON: parse error, null id.
        (
            "garbage",
            Some(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not JSON"}}"#,
            ),
        ),
        // An array is a batch, never a positional message.
        (
            r#"[11,"session/prompt",{"sessionId":"S"}]"#,
            Some(concat!(
                r#"[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON-RPC message object"}},"#,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: not a JSON-RPC message object"}},"#,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: neither a call nor a response"}}]"#
            )),
        ),
        // A batch: each request answered, notifications not.
        (
            r#"[{"jsonrpc":"2.0","id":"a","method":"session/new","params":{}},{"jsonrpc":"2.0","method":"n"}]"#,
            Some(
                r#"[{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"invalid request: acp-tee proxy does not route batches"}}]"#,
            ),
        ),
        (
            "[]",
            Some(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: an empty batch"}}"#),
        ),
        // An object that is neither a call nor a response.
        (
            r#"{"id":"q"}"#,
            Some(
                r#"{"jsonrpc":"2.0","id":"q","error":{"code":-32600,"message":"invalid request: neither a call nor a response"}}"#,
            ),
        ),
        // Responses and notifications are never answered.
        (r#"{"jsonrpc":"2.0","id":99,"result":{}}"#, None),
        (r#"[{"jsonrpc":"2.0","method":"n"}]"#, None),
    ];
    for (line, answer) in cases {
        let routed = r.route(format!("{line}\n").as_bytes());
        let expect = answer.map(|a| format!("{a}\n"));
        assert_eq!(routed.send.as_deref().map(|s| String::from_utf8(s.to_vec()).unwrap()), expect, "{line}");
        // The line is recorded, and so is our answer, going the other way.
        assert_eq!(routed.record.raw, format!("{line}\n").as_bytes());
        match (&routed.reply, &routed.send) {
            (Some(reply), Some(send)) => {
                assert_eq!(&reply.raw, send);
                assert_ne!(reply.dir, routed.record.dir, "{line}");
            }
            (None, None) => {}
            other => panic!("{line}: reply and send disagree: {other:?}"),
        }
    }
    assert_eq!(r.in_flight(), 0);
}
