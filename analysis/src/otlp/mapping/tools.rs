//! The mapping of `session/update` notifications: turns' chunks, tool
//! calls (`execute_tool` spans), plans and the rest as events.

use super::*;

impl Mapper {
    /// A notification other than `session/update`: an event on its
    /// session's open turn or root, or on the recording's span; `kept` is
    /// the place of the session the fold kept for it.
    pub(super) fn notification(&mut self, f: &FrameIn<'_>, kept: Option<usize>) {
        let method = f.method.unwrap_or("");
        let mut keep = None;
        let params = wire::params(f.raw, &mut keep).unwrap_or_default();
        let mut e = event(self.time(f.t_ns), method);
        if method.starts_with("mcp/") {
            if let Some(m) = params.method.as_deref() {
                e.attributes.push(kv("mcp.method.name", m));
            }
            if let Some(c) = params.connection_id.as_deref() {
                e.attributes.push(kv("mcp.session.id", c));
            }
        }
        match (f.session_id, kept) {
            (None, _) => push_event(&mut self.conn, e),
            // A session past the fold's bound: counted there.
            (Some(_), None) => {}
            (Some(sid), Some(_)) => {
                let Some(s) = self.sessions.get_mut(sid) else { return };
                push_event(s.turn.as_mut().map_or(&mut s.root, |t| &mut t.span), e);
            }
        }
    }

    /// A `session/update` of a kept session: a turn's chunks, tool calls
    /// (`execute_tool` spans), the rest as events.
    pub(super) fn update(&mut self, f: &FrameIn<'_>, u: &crate::fold::Update<'_, '_>) {
        let sid: &str = u.session.id;
        let t = self.time(f.t_ns);
        let mut e = event(t, "session/update");
        let kind = u.kind.unwrap_or("").to_owned();
        if u.kind.is_some() {
            e.attributes.push(kv("acp.update.kind", &kind));
        }
        if u.replayed {
            // The past shown again by a load or resume: no turn, no tool span.
            e.attributes.push(kv_bool("acp.update.replayed", true));
            let Some(s) = self.sessions.get_mut(sid) else { return };
            push_event(&mut s.root, e);
            return;
        }
        match kind.as_str() {
            "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
                let text = (self.opts.content && kind == "agent_message_chunk")
                    .then(|| {
                        let raw = self.masked(f.raw);
                        chunk_text(&raw)
                    })
                    .flatten();
                let Some(s) = self.sessions.get_mut(sid) else { return };
                let Some(turn) = s.turn.as_mut() else { return };
                turn.chunks += 1;
                if let Some(text) = text {
                    push_cut(&mut turn.output, &text);
                }
                if !turn.first_chunk && kind != "user_message_chunk" {
                    turn.first_chunk = true;
                    let secs = f.t_ns.saturating_sub(turn.start_t) as f64 / 1e9;
                    turn.span.attributes.push(kv_f64("gen_ai.response.time_to_first_chunk", secs));
                    let mut first = event(t, "gen_ai.first_chunk");
                    first.attributes.push(kv("acp.update.kind", &kind));
                    push_event(&mut turn.span, first);
                }
            }
            "tool_call" | "tool_call_update" => {
                let Some(update) = u.update else { return };
                let Some(id) = update.tool_call_id.as_deref().map(str::to_owned) else { return };
                let (input, output) =
                    if self.opts.content && (update.raw_input.is_some() || update.raw_output.is_some()) {
                        let raw = self.masked(f.raw);
                        tool_io(&raw)
                    } else {
                        (None, None)
                    };
                if !self.tool_update(sid, &id, Some(update), f.t_ns) {
                    let Some(s) = self.sessions.get_mut(sid) else { return };
                    e.attributes.push(kv("gen_ai.tool.call.id", &id));
                    push_event(&mut s.root, e);
                    return;
                }
                let content = self.opts.content;
                let Some(tool) = self.tool_mut(sid, &id) else { return };
                if let Some(status) = update.status.as_deref() {
                    let mut change = event(t, "acp.tool.status");
                    change.attributes.push(kv("acp.tool.status", status));
                    push_event(tool, change);
                }
                if content {
                    if let Some(i) = input {
                        set(tool, "gen_ai.tool.call.arguments", &i);
                    }
                    if let Some(o) = output {
                        set(tool, "gen_ai.tool.call.result", &o);
                    }
                }
                if matches!(update.status.as_deref(), Some("completed" | "failed")) {
                    let Some(turn) = self.sessions.get_mut(sid).and_then(|s| s.turn.as_mut()) else { return };
                    let Some(mut span) = turn.tools.remove(&id) else { return };
                    span.end_time_unix_nano = t;
                    let ended = [span.span_id.clone()];
                    self.done.push(span);
                    self.end_children(&ended, t);
                }
            }
            _ => {
                let Some(s) = self.sessions.get_mut(sid) else { return };
                push_event(s.turn.as_mut().map_or(&mut s.root, |t| &mut t.span), e);
            }
        }
    }

    /// Starts or updates the span of tool call `id` in session `sid`'s open
    /// turn; false when there is no open turn (or past
    /// [`TOOLS_PER_TURN_MAX`]).
    pub(super) fn tool_update(&mut self, sid: &str, id: &str, update: Option<&Update<'_>>, t_ns: i64) -> bool {
        let start = self.time(t_ns);
        let key = &self.key;
        let Some(turn) = self.sessions.get_mut(sid).and_then(|s| s.turn.as_mut()) else { return false };
        if !turn.tools.contains_key(id) {
            if turn.tools.len() >= TOOLS_PER_TURN_MAX {
                self.left_out += 1;
                return false;
            }
            let mut span =
                new_span(child_of(&turn.span), span_id(key, &format!("tool\0{id}"), turn.request), "execute_tool");
            span.kind = span::SpanKind::Internal as i32;
            span.start_time_unix_nano = start;
            span.attributes.push(kv("gen_ai.operation.name", "execute_tool"));
            span.attributes.push(kv("gen_ai.tool.call.id", id));
            span.attributes.push(kv("gen_ai.tool.type", "function"));
            turn.tools.insert(id.to_owned(), span);
        }
        let span = turn.tools.get_mut(id).expect("inserted above");
        if let Some(u) = update {
            if let Some(title) = u.title.as_deref() {
                span.name = format!("execute_tool {title}");
                set(span, "gen_ai.tool.name", title);
            }
            if let Some(kind) = u.kind.as_deref() {
                set(span, "acp.tool.kind", kind);
            }
            if let Some(status) = u.status.as_deref() {
                set(span, "acp.tool.status", status);
                if status == "failed" {
                    span.status = Some(Status { code: status::StatusCode::Error as i32, message: "failed".into() });
                    set(span, "error.type", "tool_call_failed");
                }
            }
        }
        true
    }

    pub(super) fn tool_mut(&mut self, sid: &str, id: &str) -> Option<&mut Span> {
        self.sessions.get_mut(sid)?.turn.as_mut()?.tools.get_mut(id)
    }

    pub(super) fn tool_context(&self, sid: &str, id: &str) -> Option<Context> {
        Some(child_of(self.sessions.get(sid)?.turn.as_ref()?.tools.get(id)?))
    }
}
