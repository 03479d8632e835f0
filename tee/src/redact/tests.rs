use super::*;

fn redact(r: &Redactor, raw: &str) -> String {
    String::from_utf8(r.redact(raw.as_bytes()).into_owned()).unwrap()
}

fn rules(texts: &[&str]) -> Vec<Rule> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

#[test]
fn session_new_env_and_headers_are_masked_and_nothing_else_moves() {
    let raw = concat!(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":["#,
        r#"{"name":"fs","command":"/bin/fs","args":["--ro"],"env":[{"name":"GITHUB_TOKEN","value":"ghp_1"},{"name":"HOME","value":"/h"}]},"#,
        r#"{"type":"http","name":"web","url":"https://x","headers":[{"name":"Authorization","value":"Bearer s3"}]}]}}"#,
        "\n"
    );
    let expect = concat!(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":["#,
        r#"{"name":"fs","command":"/bin/fs","args":["--ro"],"env":[{"name":"GITHUB_TOKEN","value":"[REDACTED]"},{"name":"HOME","value":"[REDACTED]"}]},"#,
        r#"{"type":"http","name":"web","url":"https://x","headers":[{"name":"Authorization","value":"[REDACTED]"}]}]}}"#,
        "\n"
    );
    assert_eq!(redact(&Redactor::new(vec![]), raw), expect);
}

#[test]
fn members_named_like_secrets_are_masked() {
    let raw = r#"{"id":1,"method":"authenticate","params":{"methodId":"api","_meta":{"apiKey":"k1","access_token":"t1","Cookie":{"a":1},"maxTokens":5,"password":null}}}"#;
    let expect = r#"{"id":1,"method":"authenticate","params":{"methodId":"api","_meta":{"apiKey":"[REDACTED]","access_token":"[REDACTED]","Cookie":"[REDACTED]","maxTokens":5,"password":"[REDACTED]"}}}"#;
    assert_eq!(redact(&Redactor::new(vec![]), raw), expect);
}

#[test]
fn env_maps_keep_their_keys() {
    let raw = r#"{"id":1,"result":{"authMethods":[{"id":"t","env":{"A":"1","B":"2"}}]}}"#;
    let expect = r#"{"id":1,"result":{"authMethods":[{"id":"t","env":{"A":"[REDACTED]","B":"[REDACTED]"}}]}}"#;
    assert_eq!(redact(&Redactor::new(vec![]), raw), expect);
}

#[test]
fn untouched_messages_keep_their_exact_bytes() {
    let raw = "{ \"id\" : 1 ,\"result\":{\"b\":1,\"a\":[1, 2]}}\r\n";
    assert!(matches!(Redactor::new(vec![]).redact(raw.as_bytes()), Cow::Borrowed(_)));
    let bad = b"not json \xff\n";
    assert_eq!(&*Redactor::new(rules(&["json"])).redact(bad), &bad[..]);
}

#[test]
fn user_paths_and_patterns_add_to_the_defaults() {
    let r = Redactor::new(rules(&["$.params.cwd", "sk-[a-z0-9]+"]));
    let raw = r#"{"id":3,"method":"session/prompt","params":{"cwd":"/home/me","prompt":[{"type":"text","text":"use sk-abc1 now"}]}}"#;
    let expect = r#"{"id":3,"method":"session/prompt","params":{"cwd":"[REDACTED]","prompt":[{"type":"text","text":"use [REDACTED] now"}]}}"#;
    assert_eq!(redact(&r, raw), expect);
    assert_eq!(redact(&r, "key sk-zz9 leaked\n"), "key [REDACTED] leaked\n");
}

#[test]
fn batches_are_redacted_message_by_message() {
    let r = Redactor::new(rules(&["$.params.x"]));
    let raw = r#"[{"method":"a","params":{"x":1}},{"method":"b","params":{"y":1}}]"#;
    assert_eq!(redact(&r, raw), r#"[{"method":"a","params":{"x":"[REDACTED]"}},{"method":"b","params":{"y":1}}]"#);
}

#[test]
fn without_defaults_only_user_rules_apply() {
    let raw = r#"{"params":{"token":"t","cwd":"/w"}}"#;
    assert_eq!(redact(&Redactor::without_defaults(vec![]), raw), raw);
    assert!(Redactor::without_defaults(vec![]).is_noop());
    let r = Redactor::without_defaults(rules(&["$..cwd"]));
    assert_eq!(redact(&r, raw), r#"{"params":{"token":"t","cwd":"[REDACTED]"}}"#);
}

#[test]
fn secret_names() {
    for name in
        ["token", "apiKey", "api_key", "X-Auth-Token", "client_secret", "PASSWORD", "authorization", "set-cookie"]
    {
        assert!(looks_secret(name), "{name}");
    }
    for name in ["maxTokens", "keyword", "sessionId", "name", "value", "cwd"] {
        assert!(!looks_secret(name), "{name}");
    }
}

#[test]
fn bad_rules_are_refused_with_the_fix() {
    let err = "(unclosed".parse::<Rule>().unwrap_err().to_string();
    assert!(err.starts_with("redaction rule `(unclosed` is not usable:"), "{err}");
    assert!(err.ends_with("write a JSONPath such as `$.params.cwd` or a regular expression"), "{err}");
    assert!("$.a[".parse::<Rule>().is_err());
}
