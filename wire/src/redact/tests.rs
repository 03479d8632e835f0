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

proptest::proptest! {
    /// The allocation-free reading of a name says what reading it into a
    /// lower-cased `String` says, for names short and long, ASCII or not.
    #[test]
    fn looks_secret_reads_a_name_as_its_letters_and_digits_lower_cased(
        name in "([A-Za-z0-9_ .-]|é|ß|KEY|Token|password|\\u{212A}){0,90}"
    ) {
        let n: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect();
        let endings = ["token", "key", "secret", "password", "passwd", "credential", "credentials", "pwd"];
        let anywhere = ["secret", "password", "authorization", "cookie"];
        let expected = endings.iter().any(|e| n.ends_with(e)) || anywhere.iter().any(|a| n.contains(a));
        proptest::prop_assert_eq!(looks_secret(&name), expected, "{:?}", name);
    }
}

#[test]
fn bad_rules_are_refused_with_the_fix() {
    let err = "(unclosed".parse::<Rule>().unwrap_err().to_string();
    assert!(err.starts_with("redaction rule `(unclosed` is not usable:"), "{err}");
    assert!(err.ends_with("write a JSONPath such as `$.params.cwd` or a regular expression"), "{err}");
    assert!("$.a[".parse::<Rule>().is_err());
}

/// `open` + `inner` + `close`, each of the two repeated `depth` times.
fn nest(open: &str, depth: usize, inner: &str, close: &str) -> String {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
}

/// Runs `f` on a thread with a 256 KiB stack: a pass that recursed per level
/// would overflow it within a few hundred levels.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).unwrap().join().unwrap()
}

#[test]
fn a_million_levels_take_one_pass_on_a_small_stack() {
    on_small_stack(|| {
        let r = Redactor::new(rules(&["$..x", "sk-[0-9]+"]));
        for depth in [100_000, 1_000_000] {
            let raw = format!(r#"{{"id":1,"params":{}}}"#, nest("[", depth, "", "]"));
            let out = redact(&r, &raw);
            let kept = REDACT_MAX_DEPTH;
            let expect = format!(r#"{{"id":1,"params":{}}}"#, nest("[", kept, MASK_JSON, "]"));
            assert_eq!(out, expect, "{depth} levels are cut at the limit");
            assert_eq!(redact(&r, &out), out, "masking the cut again changes nothing");
        }
        // Deep objects: every level is a member to match the paths against.
        // The message is depth 0, so REDACT_MAX_DEPTH + 1 objects are kept.
        let raw = nest(r#"{"a":"#, 200_000, "1", "}");
        let out = redact(&r, &raw);
        assert_eq!(out, nest(r#"{"a":"#, REDACT_MAX_DEPTH + 1, MASK_JSON, "}"));
    });
}

#[test]
fn a_secret_at_depth_5000_is_masked_and_nothing_else() {
    on_small_stack(|| {
        let r = Redactor::new(rules(&["sk-[0-9]+"]));
        let raw = nest(r#"{"a":["#, 2_500, r#"{"token":"t","text":"use sk-1","n":1}"#, "]}");
        let expect = nest(r#"{"a":["#, 2_500, r#"{"token":"[REDACTED]","text":"use [REDACTED]","n":1}"#, "]}");
        assert_eq!(redact(&r, &raw), expect);
    });
}

#[test]
fn what_lies_deeper_than_the_limit_is_masked_whole() {
    on_small_stack(|| {
        let r = Redactor::without_defaults(rules(&["$.nothing"]));
        // The string is inside REDACT_MAX_DEPTH + 1 arrays: masked, though no rule names it.
        let raw = nest("[", REDACT_MAX_DEPTH + 1, r#""SECRET""#, "]");
        assert_eq!(redact(&r, &raw), nest("[", REDACT_MAX_DEPTH, &nest("[", 1, MASK_JSON, "]"), "]"));
        // One level less is looked into (and has nothing to mask).
        let raw = nest("[", REDACT_MAX_DEPTH, r#""SECRET""#, "]");
        assert!(matches!(r.redact(raw.as_bytes()), Cow::Borrowed(_)));
        // Deeper than the limit, broken JSON is still found broken.
        let broken = nest("[", REDACT_MAX_DEPTH + 5, "}", "]");
        assert!(matches!(r.redact(broken.as_bytes()), Cow::Borrowed(_)));
    });
}

/// The backtracking matcher tried every split of a path among the `..`
/// steps, for every value: C(10,000, 5) splits at each of the deepest ones.
#[test]
fn recursive_descent_rules_stay_linear_on_deep_messages() {
    on_small_stack(|| {
        let r = Redactor::without_defaults(rules(&["$..a..a..a..a..a..b"]));
        let raw = nest(r#"{"a":"#, 20_000, r#"{"b":1}"#, "}");
        // Past the limit all is masked; below it nothing matched.
        let out = redact(&r, &raw);
        assert_eq!(out, nest(r#"{"a":"#, REDACT_MAX_DEPTH + 1, MASK_JSON, "}"));
        let raw = nest(r#"{"a":"#, 6, r#"{"b":1,"c":2}"#, "}");
        assert_eq!(redact(&r, &raw), nest(r#"{"a":"#, 6, r#"{"b":"[REDACTED]","c":2}"#, "}"));
    });
}

#[test]
fn keys_keep_their_spelling_and_match_by_their_text() {
    let raw = r#"{ "to\u006ben" : "t" , "a\/b":1, "params":{"cwd":"/w"}}"#;
    let expect = r#"{ "to\u006ben" : "[REDACTED]" , "a\/b":1, "params":{"cwd":"/w"}}"#;
    assert_eq!(redact(&Redactor::new(vec![]), raw), expect);
    let r = Redactor::new(rules(&["$['a/b']"]));
    assert_eq!(redact(&r, raw), r#"{ "to\u006ben" : "[REDACTED]" , "a\/b":"[REDACTED]", "params":{"cwd":"/w"}}"#);
}

#[test]
fn a_lone_surrogate_does_not_hide_the_secrets_beside_it() {
    // serde_json refused to decode the member name, so the object was left as it was.
    let raw = r#"{"token":"t","note":"\ud800","d\udc00":{"password":"p"}}"#;
    let expect = r#"{"token":"[REDACTED]","note":"\ud800","d\udc00":{"password":"[REDACTED]"}}"#;
    assert_eq!(redact(&Redactor::new(vec![]), raw), expect);
    // A pattern inside such a string: the text around it is kept, the lone half becomes U+FFFD.
    let r = Redactor::new(rules(&["sk-[0-9]+"]));
    assert_eq!(redact(&r, r#"["\ud800 sk-1 \ud83d\ude00\n"]"#), "[\"\u{fffd} [REDACTED] \u{1f600}\\n\"]");
}

#[test]
fn env_lists_mask_values_and_the_other_rules_still_apply_inside() {
    let r = Redactor::new(rules(&["sk-[0-9]+"]));
    let raw = r#"{"env":[{"name":"sk-1","value":"v","apiKey":"k"},"loose",[{"value":"nested"}]],"headers":{}}"#;
    let expect = r#"{"env":[{"name":"[REDACTED]","value":"[REDACTED]","apiKey":"[REDACTED]"},"loose",[{"value":"nested"}]],"headers":{}}"#;
    assert_eq!(redact(&r, raw), expect);
}

#[test]
fn batches_with_leading_space_and_nested_batches() {
    let r = Redactor::new(rules(&["$.params.x"]));
    let raw = " [{\"params\":{\"x\":1}}, [{\"params\":{\"x\":2}}]]\n";
    // The inner array is one message (an array), not a batch: its element is at `$[0]`.
    assert_eq!(redact(&r, raw), " [{\"params\":{\"x\":\"[REDACTED]\"}}, [{\"params\":{\"x\":2}}]]\n");
}

#[test]
fn what_is_not_json_gets_the_patterns_only() {
    let r = Redactor::new(rules(&["sk-[0-9]+"]));
    for raw in [
        r#"{"token":"t"} trailing sk-1"#,
        r#"{"token":"t",}sk-1"#,
        r#"{"token":"t" "sk-1"}"#,
        r#"{"token":01,"x":"sk-1"}"#,
        "{\"token\":\"a\u{1}b\",\"x\":\"sk-1\"}",
        r#"{"token":"\x","x":"sk-1"}"#,
        r#"{"token":tru,"x":"sk-1"}"#,
        r#"["sk-1"}"#,
    ] {
        let out = redact(&r, raw);
        assert_eq!(out, raw.replace("sk-1", MASK), "{raw}");
    }
    assert_eq!(redact(&r, "sk-1\r\n \u{a0}"), "[REDACTED]\r\n \u{a0}");
    assert!(matches!(Redactor::new(vec![]).redact(b""), Cow::Borrowed(_)));
}

#[test]
fn redacting_twice_changes_nothing() {
    let r = Redactor::new(rules(&["RED", "E", "x*", "[A-Z]{3}", "sk-[0-9]+", "$..x"]));
    for raw in [
        r#"{"a":"RED sk-12 ABCDEF","x":{"y":1},"env":{"A":"1"},"token":"[REDACTED]"}"#,
        r#"["[REDACTED]sk-1", "E[REDACTED]E"]"#,
        "plain text with RED and sk-3\n",
        r#""""#,
    ] {
        let once = redact(&r, raw);
        assert_eq!(redact(&r, &once), once, "{raw}");
    }
    // Already masked values are left borrowed: nothing to do.
    let masked = r#"{"token":"[REDACTED]","env":[{"name":"A","value":"[REDACTED]"}]}"#;
    assert!(matches!(Redactor::new(vec![]).redact(masked.as_bytes()), Cow::Borrowed(_)));
}

#[test]
fn masks_in_text_are_left_alone_but_what_follows_them_is_not() {
    let r = Redactor::without_defaults(rules(&["REDACTED", "sk-[0-9]+"]));
    assert_eq!(redact(&r, "[REDACTED]sk-1 REDACTED"), "[REDACTED][REDACTED] [REDACTED]");
    assert_eq!(MASK_JSON, format!("\"{MASK}\""));
}

mod generated {
    //! Generated messages: nested, escaped, odd spacing, batches, broken.
    use super::*;
    use proptest::prelude::*;

    /// `ACP_TEE_FUZZ_CASES` cases (default 2,000) per property.
    fn cases() -> u32 {
        std::env::var("ACP_TEE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2_000)
    }

    const SPACE: [&str; 5] = ["", " ", "\n", "\t ", "\r\n  "];

    /// A JSON string literal made of pieces (some escaped, some secrets).
    fn string() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "a",
            "é",
            "😀",
            r"\n",
            r#"\""#,
            r"\\",
            r"\/",
            r"\u00e9",
            r"\ud83d\ude00",
            r"\u0000",
            "sk-42",
            "[REDACTED]",
            "RED",
            " ",
            "x",
            r"\ud800",
        ]);
        prop::collection::vec(piece, 0..5).prop_map(|p| format!("\"{}\"", p.concat()))
    }

    fn leaf() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "0",
                "-0",
                "12",
                "-3.5e+2",
                "1E2",
                "18446744073709551616",
                "true",
                "false",
                "null"
            ])
            .prop_map(str::to_owned),
            string(),
        ]
    }

    /// `{` members `}` with spacing from `s`.
    fn object(members: Vec<(String, String, &str)>, s: &str) -> String {
        let members: Vec<String> = members.into_iter().map(|(k, v, s)| format!("{s}\"{k}\"{s}:{s}{v}")).collect();
        format!("{{{s}{}}}", members.join(","))
    }

    /// A JSON value with member names from `keys`, and members named from
    /// `envs` holding lists of `{name, value}` entries or maps.
    fn value(keys: &'static [&'static str], envs: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
        leaf().prop_recursive(6, 64, 4, move |inner| {
            let space = prop::sample::select(SPACE.to_vec());
            let key = prop::sample::select(keys);
            let members = prop::collection::vec((key.clone(), inner.clone(), space.clone()), 0..4);
            let env = prop::sample::select(envs);
            prop_oneof![
                (prop::collection::vec((inner.clone(), space.clone()), 0..4), space.clone()).prop_map(|(items, s)| {
                    let items: Vec<String> = items.into_iter().map(|(v, s)| format!("{s}{v}{s}")).collect();
                    format!("[{s}{}]", items.join(","))
                }),
                (members.clone(), space.clone())
                    .prop_map(|(m, s)| { object(m.into_iter().map(|(k, v, s)| (k.to_owned(), v, s)).collect(), s) }),
                // An env list: entries with a name, a value, and other members.
                (
                    env.clone(),
                    prop::collection::vec((inner.clone(), inner.clone(), members.clone()), 0..3),
                    space.clone()
                )
                    .prop_map(|(env, entries, s)| {
                        let entries: Vec<String> = entries
                            .into_iter()
                            .map(|(name, value, more)| {
                                let mut m = vec![("name".to_owned(), name, s), ("value".to_owned(), value, s)];
                                m.extend(more.into_iter().map(|(k, v, s)| (k.to_owned(), v, s)));
                                object(m, s)
                            })
                            .collect();
                        object(vec![(env.to_owned(), format!("[{}]", entries.join(",")), s)], s)
                    }),
                // An env map.
                (env, members, space).prop_map(|(env, m, s)| {
                    let map = object(m.into_iter().map(|(k, v, s)| (k.to_owned(), v, s)).collect(), s);
                    object(vec![(env.to_owned(), map, s)], s)
                }),
            ]
        })
    }

    /// A frame: a message, a batch of them, or one wrapped in many arrays,
    /// sometimes broken; with a line ending.
    fn frame(keys: &'static [&'static str], envs: &'static [&'static str]) -> impl Strategy<Value = String> {
        let message = value(keys, envs);
        let whole = prop_oneof![
            4 => message.clone(),
            2 => prop::collection::vec(message.clone(), 1..4).prop_map(|m| format!("[{}]", m.join(","))),
            1 => (message, 1..60usize).prop_map(|(m, depth)| nest("[", depth, &m, "]")),
        ];
        let broken = prop_oneof![
            6 => Just(None),
            1 => any::<prop::sample::Index>().prop_map(|i| Some((i, ""))),
            1 => (any::<prop::sample::Index>(), prop::sample::select(vec!["}", "]", ",", "\"", "x", "\\"]))
                .prop_map(|(i, s)| Some((i, s))),
        ];
        (whole, broken, prop::sample::select(vec!["", "\n", "\r\n"])).prop_map(|(mut text, broken, end)| {
            if let Some((at, insert)) = broken {
                let mut cut = at.index(text.len() + 1);
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                if insert.is_empty() {
                    text.truncate(cut);
                } else {
                    text.insert_str(cut, insert);
                }
            }
            text + end
        })
    }

    const ANY_KEYS: &[&str] =
        &["token", "apiKey", "env", "headers", "value", "name", "params", "x", r"to\u006ben", "Cookie", "id", "a\\\"b"];
    const SAFE_KEYS: &[&str] = &["name", "value", "params", "id", "maxTokens", "keyword", r"n\u0061me", "a\\\"b"];
    const ENVS: &[&str] = &["env", "headers", r"e\u006ev"];
    const NOT_ENVS: &[&str] = &["envs", "header", "Env"];

    /// Every member named like a secret, every `env`/`headers` value, every `x`
    /// and every `sk-N` in a string is masked in `v`.
    fn nothing_leaks(v: &serde_json::Value) -> Result<(), String> {
        let masked = |v: &serde_json::Value| v.as_str() == Some(MASK);
        let mut todo = vec![v];
        while let Some(v) = todo.pop() {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        let env_ok = match v {
                            serde_json::Value::Object(e) if k == "env" || k == "headers" => e.values().all(masked),
                            serde_json::Value::Array(e) if k == "env" || k == "headers" => {
                                e.iter().all(|i| i.get("value").is_none_or(masked))
                            }
                            _ => true,
                        };
                        if (looks_secret(k) || k == "x") && !masked(v) || !env_ok {
                            return Err(format!("{k}: {v}"));
                        }
                        todo.push(v);
                    }
                }
                serde_json::Value::Array(a) => todo.extend(a),
                serde_json::Value::String(s) if s.contains("sk-42") => return Err(s.clone()),
                _ => {}
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

        #[test]
        fn redaction_is_total_valid_idempotent_and_leaks_nothing(raw in frame(ANY_KEYS, ENVS)) {
            let r = Redactor::new(rules(&["$..x", "sk-[0-9]+", "RED", "x*"]));
            let body = raw.trim_end();
            let grammar = serde_json::from_str::<&serde_json::value::RawValue>(body).is_ok();
            prop_assert_eq!(super::scan::edits(&r, body).is_ok(), grammar, "JSON or not, as serde_json says");
            let out = r.redact(raw.as_bytes()).into_owned();
            prop_assert_eq!(&*r.redact(&out), &out[..], "not idempotent");
            if let Ok(before) = serde_json::from_str::<serde_json::Value>(&raw) {
                let after: serde_json::Value = serde_json::from_slice(&out).map_err(|e| {
                    TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&out)))
                })?;
                let messages = match (&before, raw.trim_start().starts_with('[')) {
                    (serde_json::Value::Array(_), true) => after.as_array().unwrap().clone(),
                    _ => vec![after],
                };
                for m in &messages {
                    nothing_leaks(m).map_err(TestCaseError::fail)?;
                }
            }
            let defaults_only = Redactor::new(vec![]);
            let out = defaults_only.redact(raw.as_bytes()).into_owned();
            prop_assert_eq!(&*defaults_only.redact(&out), &out[..], "not idempotent");
        }

        #[test]
        fn frames_without_secrets_come_back_as_they_were(raw in frame(SAFE_KEYS, NOT_ENVS)) {
            let r = Redactor::new(rules(&["$..nothing", "$.params[7].zz", "Z+"]));
            prop_assert!(matches!(r.redact(raw.as_bytes()), Cow::Borrowed(_)));
        }
    }
}

#[test]
fn secret_query_parameters_in_urls_are_masked_by_the_defaults() {
    let raw = concat!(
        r#"{"id":2,"method":"session/new","params":{"mcpServers":[{"type":"http","name":"w","#,
        r#""url":"https://host/mcp?api_key=SECRET2&x=1&token=T3#frag","note":"see http://a/b?access_token=T4 and http://c/?q=1"}]}}"#
    );
    let expect = concat!(
        r#"{"id":2,"method":"session/new","params":{"mcpServers":[{"type":"http","name":"w","#,
        r#""url":"https://host/mcp?api_key=[REDACTED]&x=1&token=[REDACTED]#frag","note":"see http://a/b?access_token=[REDACTED] and http://c/?q=1"}]}}"#
    );
    let r = Redactor::new(vec![]);
    assert_eq!(redact(&r, raw), expect);
    assert_eq!(redact(&r, expect), expect, "idempotent");
    assert!(matches!(r.redact(expect.as_bytes()), Cow::Borrowed(_)));
    // Escaped slashes and keys, stderr text, and the values stored beside a frame.
    let escaped = r#"{"u":"https:\/\/h\/p?Api-Key=S&keyword=k"}"#;
    assert_eq!(redact(&r, escaped), r#"{"u":"https://h/p?Api-Key=[REDACTED]&keyword=k"}"#);
    assert_eq!(redact(&r, "GET https://h/x?token=abc failed\n"), "GET https://h/x?token=[REDACTED] failed\n");
    assert_eq!(r.mask_value("sess-https://h/?password=p").as_deref(), Some("sess-https://h/?password=[REDACTED]"));
    // Without the defaults (and without patterns) nothing is touched.
    let off = Redactor::without_defaults(vec![]);
    assert!(matches!(off.redact(raw.as_bytes()), Cow::Borrowed(_)));
    // No URL, or no secret name, or an empty value: nothing to mask.
    for same in [r#"{"a":"?token=x"}"#, r#"{"a":"https://h/?q=1&sort=token"}"#, r#"{"a":"https://h/?token=&x"}"#] {
        assert!(matches!(r.redact(same.as_bytes()), Cow::Borrowed(_)), "{same}");
    }
}

#[test]
fn url_query_masking_stays_linear_on_hostile_strings() {
    let r = Redactor::new(vec![]);
    for piece in ["://?", "https://h/?token=x&", "://a?key=", "?&=://"] {
        let text = piece.repeat(200_000);
        let raw = serde_json::to_string(&serde_json::json!({ "t": text })).unwrap();
        let started = std::time::Instant::now();
        let once = redact(&r, &raw);
        assert_eq!(redact(&r, &once), once, "{piece}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{piece}: {:?}", started.elapsed());
    }
}
