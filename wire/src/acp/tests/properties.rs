//! The property: every schema-built message reads as the schema holds it.

use super::strategies::*;
use super::*;

proptest! {
    #![proptest_config(cases())]

    /// `session/update`, every update kind acp reads: the envelope, the
    /// params, the update's members, and the kind read from the bytes.
    #[test]
    fn session_updates_read_as_the_schema_holds_them(session in text(), update in session_update(), meta in meta()) {
        let n = sc::SessionNotification::new(sc::SessionId::new(session.clone()), update.clone()).meta(meta.clone());
        let method = sc::CLIENT_METHOD_NAMES.session_update;
        let raw = notification(method, &n);
        envelope_reads(&raw, None, Some(method), FrameKind::Notification, Some(&session))?;
        let held = ParamsSeen {
            traceparent: traceparent_held(&meta),
            session_id: Some(session),
            update: Some(update_held(&update)),
            ..Default::default()
        };
        let tag = held.update.as_ref().and_then(|u| u.session_update.clone());
        prop_assert_eq!(read_params(&raw), held);
        // The kind from the bytes, unless an escape might hide a name.
        let plain = plain_update_kind(&raw);
        if raw.windows(2).any(|w| w == b"\\u") {
            prop_assert_eq!(plain, None);
        } else {
            prop_assert_eq!(plain.map(str::to_owned), tag);
        }
    }

    /// `session/prompt` and its answer: the prompt's blocks, the stop
    /// reason and the token usage.
    #[test]
    fn prompts_and_their_answers_read_as_the_schema_holds_them(
        id in request_id(),
        session in text(),
        prompt in vec(content_block(), 0..5),
        meta in meta(),
        stop in stop_reason(),
        usage in maybe(usage()),
    ) {
        let req = sc::PromptRequest::new(sc::SessionId::new(session.clone()), prompt.clone()).meta(meta.clone());
        let method = sc::AGENT_METHOD_NAMES.session_prompt;
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, Some(&session))?;
        let blocks = prompt
            .iter()
            .map(|b| match b {
                sc::ContentBlock::Text(t) => (Some(name_of_block(b)), Some(t.text.clone())),
                other => (Some(name_of_block(other)), None),
            })
            .collect();
        let held = ParamsSeen {
            traceparent: traceparent_held(&meta),
            session_id: Some(session),
            prompt: Some(blocks),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);
        let r: Envelope<Routing> = serde_json::from_slice(&raw).unwrap();
        prop_assert_eq!(r.params.and_then(|p| p.prompt).map(|p| p.len()), Some(prompt.len()));

        let resp = sc::PromptResponse::new(stop).usage(usage.clone());
        let raw = response(&id, &resp);
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, None)?;
        let held = AnswerSeen {
            stop_reason: Some(name(&stop)),
            usage: usage.map(|u| Usage {
                total_tokens: Some(u.total_tokens),
                input_tokens: Some(u.input_tokens),
                output_tokens: Some(u.output_tokens),
                thought_tokens: u.thought_tokens,
                cached_read_tokens: u.cached_read_tokens,
                cached_write_tokens: u.cached_write_tokens,
            }),
            ..Default::default()
        };
        prop_assert_eq!(read_answer(&raw), held);
    }

    /// `session/request_permission` and its answer: the tool call, the
    /// options, the outcome selected or cancelled.
    #[test]
    fn permission_requests_and_answers_read_as_the_schema_holds_them(
        id in request_id(),
        session in text(),
        tool_call in tool_call_update(),
        options in vec(permission_option(), 0..4),
        selected in maybe(text()),
    ) {
        let req = sc::RequestPermissionRequest::new(sc::SessionId::new(session.clone()), tool_call.clone(), options.clone());
        let method = sc::CLIENT_METHOD_NAMES.session_request_permission;
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, Some(&session))?;
        let mut call = UpdateSeen::default();
        tool_call_update_held(&mut call, &tool_call);
        let held = ParamsSeen {
            session_id: Some(session),
            tool_call: Some(call),
            options: Some(
                options
                    .iter()
                    .map(|o| (Some(o.option_id.0.to_string()), Some(o.name.clone()), Some(name(&o.kind))))
                    .collect(),
            ),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let outcome = match &selected {
            Some(o) => sc::RequestPermissionOutcome::Selected(sc::SelectedPermissionOutcome::new(sc::PermissionOptionId::new(o.clone()))),
            None => sc::RequestPermissionOutcome::Cancelled,
        };
        let tag = json(&outcome)["outcome"].as_str().map(str::to_owned);
        let raw = response(&id, &sc::RequestPermissionResponse::new(outcome));
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, None)?;
        let held = AnswerSeen { outcome: Some((tag, selected)), ..Default::default() };
        prop_assert_eq!(read_answer(&raw), held);
    }

    /// `initialize` and its answer: protocol version, the client's fs and
    /// terminal capabilities, the agent's loadSession, both peers' info.
    #[test]
    fn initialize_and_its_answer_read_as_the_schema_holds_them(
        id in request_id(),
        version in any::<u16>(),
        (read, write, terminal, load) in (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
        client in maybe(implementation()),
        agent in maybe(implementation()),
    ) {
        let fs = sc::FileSystemCapabilities::new().read_text_file(read).write_text_file(write);
        let req = sc::InitializeRequest::new(ProtocolVersion::from(version))
            .client_capabilities(sc::ClientCapabilities::new().fs(fs).terminal(terminal))
            .client_info(client.clone());
        let method = sc::AGENT_METHOD_NAMES.initialize;
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, None)?;
        let held = ParamsSeen {
            client_info: client.as_ref().map(info_held),
            client_capabilities: Some((Some((Some(read), Some(write))), Some(terminal))),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let resp = sc::InitializeResponse::new(ProtocolVersion::from(version))
            .agent_capabilities(sc::AgentCapabilities::new().load_session(load))
            .agent_info(agent.clone());
        let raw = response(&id, &resp);
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, None)?;
        let held = AnswerSeen {
            protocol_version: Some(i64::from(version)),
            agent_info: agent.as_ref().map(info_held),
            load_session: Some(Some(load)),
            ..Default::default()
        };
        prop_assert_eq!(read_answer(&raw), held);
    }

    /// `session/new` and its answer (cwd, session id, modes), and
    /// `session/set_mode`.
    #[test]
    fn new_sessions_and_modes_read_as_the_schema_holds_them(
        id in request_id(),
        cwd in text(),
        session in text(),
        modes in maybe((text(), vec((text(), text(), maybe(text())), 0..3))),
        mode in text(),
    ) {
        let method = sc::AGENT_METHOD_NAMES.session_new;
        let raw = request(&id, method, &sc::NewSessionRequest::new(cwd.clone()));
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, None)?;
        prop_assert_eq!(read_params(&raw), ParamsSeen { cwd: Some(cwd), ..Default::default() });

        let state = modes.as_ref().map(|(current, available)| {
            let available = available
                .iter()
                .map(|(i, n, d)| sc::SessionMode::new(sc::SessionModeId::new(i.clone()), n.clone()).description(d.clone()))
                .collect();
            sc::SessionModeState::new(sc::SessionModeId::new(current.clone()), available)
        });
        let resp = sc::NewSessionResponse::new(sc::SessionId::new(session.clone())).modes(state);
        let raw = response(&id, &resp);
        envelope_reads(&raw, Some(&id), None, FrameKind::Response, Some(&session))?;
        let held = AnswerSeen {
            session_id: Some(session.clone()),
            current_mode_id: modes.map(|(current, _)| Some(current)),
            ..Default::default()
        };
        prop_assert_eq!(read_answer(&raw), held);

        let method = sc::AGENT_METHOD_NAMES.session_set_mode;
        let req = sc::SetSessionModeRequest::new(sc::SessionId::new(session.clone()), sc::SessionModeId::new(mode.clone()));
        let raw = request(&id, method, &req);
        envelope_reads(&raw, Some(&id), Some(method), FrameKind::Request, Some(&session))?;
        let held = ParamsSeen { session_id: Some(session), mode_id: Some(mode), ..Default::default() };
        prop_assert_eq!(read_params(&raw), held);
    }

    /// An error response: code and message, whatever the data.
    #[test]
    fn errors_read_as_the_schema_holds_them(id in request_id(), code in any::<i32>(), message in text(), data in maybe(any_json())) {
        let error = sc::Error::new(code, message.clone()).data(data);
        let raw = error_response(&id, &error);
        envelope_reads(&raw, Some(&id), None, FrameKind::Error, None)?;
        let mut keep = None;
        let (answer, read) = reply(&raw, &mut keep);
        prop_assert_eq!(answer_seen(&answer), AnswerSeen::default());
        let read = read.expect("an error reads");
        prop_assert_eq!(read.code, Some(i64::from(code)));
        prop_assert_eq!(read.message.as_deref(), Some(message.as_str()));
    }

    /// The client's methods acp reads members of (fs, terminal), the
    /// config option, `$/cancel_request` and MCP-over-ACP's `mcp/message`.
    #[test]
    fn files_terminals_options_cancels_and_mcp_read_as_the_schema_holds_them(
        id in request_id(),
        session in text(),
        (file, content) in (text(), text()),
        (command, args, cwd) in (text(), vec(text(), 0..4), maybe(text())),
        (terminal, exit_code, signal) in (text(), maybe(any::<u32>()), maybe(text())),
        (config, value) in (text(), prop_oneof![any::<bool>().prop_map(sc::SessionConfigOptionValue::boolean), text().prop_map(sc::SessionConfigOptionValue::value_id)]),
        cancelled in request_id(),
        (server, mcp_id, mcp_method, mcp_params) in (text(), text(), text(), maybe((maybe(text()), maybe(text()), maybe(text())))),
    ) {
        let sid = || sc::SessionId::new(session.clone());
        let names = sc::CLIENT_METHOD_NAMES;

        let raw = request(&id, names.fs_read_text_file, &sc::ReadTextFileRequest::new(sid(), file.clone()).line(3).limit(4));
        envelope_reads(&raw, Some(&id), Some(names.fs_read_text_file), FrameKind::Request, Some(&session))?;
        let held = ParamsSeen { session_id: Some(session.clone()), path: Some(file.clone()), ..Default::default() };
        prop_assert_eq!(read_params(&raw), held);

        let raw = request(&id, names.fs_write_text_file, &sc::WriteTextFileRequest::new(sid(), file.clone(), content));
        let held = ParamsSeen { session_id: Some(session.clone()), path: Some(file), ..Default::default() };
        prop_assert_eq!(read_params(&raw), held);

        // The schema leaves out an empty `args`.
        let req = sc::CreateTerminalRequest::new(sid(), command.clone()).args(args.clone()).cwd(cwd.clone().map(std::path::PathBuf::from));
        let raw = request(&id, names.terminal_create, &req);
        let held = ParamsSeen {
            session_id: Some(session.clone()),
            command: Some(command),
            args: (!args.is_empty()).then_some(args),
            cwd,
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let raw = response(&id, &sc::CreateTerminalResponse::new(sc::TerminalId::new(terminal.clone())));
        prop_assert_eq!(read_answer(&raw), AnswerSeen { terminal_id: Some(terminal), ..Default::default() });

        let status = sc::TerminalExitStatus::new().exit_code(exit_code).signal(signal.clone());
        let raw = response(&id, &sc::WaitForTerminalExitResponse::new(status));
        let held = AnswerSeen { exit_code: exit_code.map(i64::from), signal, ..Default::default() };
        prop_assert_eq!(read_answer(&raw), held);

        let method = sc::AGENT_METHOD_NAMES.session_set_config_option;
        let req = sc::SetSessionConfigOptionRequest::new(sid(), sc::SessionConfigId::new(config.clone()), value.clone());
        let raw = request(&id, method, &req);
        let held = ParamsSeen {
            session_id: Some(session.clone()),
            config_id: Some(config),
            value: Some(json(&value)["value"].clone()),
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);

        let method = sc::PROTOCOL_LEVEL_METHOD_NAMES.cancel_request;
        let raw = notification(method, &sc::CancelRequestNotification::new(cancelled.clone()));
        envelope_reads(&raw, None, Some(method), FrameKind::Notification, None)?;
        prop_assert_eq!(read_params(&raw), ParamsSeen { request_id: Some(id_held(&cancelled)), ..Default::default() });

        // The schema's `mcp/message` names its connection `serverId`; acp
        // reads the conductor's `connectionId` (mcp/connect), which the
        // schema does not have, so that reads as absent here.
        let inner = mcp_params.as_ref().map(|(n, u, v)| {
            let mut m = serde_json::Map::new();
            for (k, x) in [("name", n), ("uri", u), ("protocolVersion", v)] {
                if let Some(x) = x {
                    m.insert(k.into(), x.clone().into());
                }
            }
            m
        });
        let req = sc::MessageMcpRequest::new(sc::McpServerAcpId::new(server), sc::McpRequestId::new(mcp_id.clone()), mcp_method.clone())
            .params(inner);
        let raw = request(&id, "mcp/message", &req);
        let held = ParamsSeen {
            method: Some(mcp_method),
            request_id: Some(Value::from(mcp_id)),
            params: mcp_params,
            ..Default::default()
        };
        prop_assert_eq!(read_params(&raw), held);
    }
}

/// The `type` the schema writes for a content block.
fn name_of_block(b: &sc::ContentBlock) -> String {
    json(b)["type"].as_str().expect("a block names its type").to_owned()
}
