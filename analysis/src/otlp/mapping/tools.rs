//! The mapping of `session/update` notifications: turns' chunks, tool
//! calls (`execute_tool` spans), plans and the rest as events.

use super::*;

impl Mapper {
    pub(super) fn notification(&mut self, f: &FrameIn<'_>) {
        let method = f.method.unwrap_or("");
        let mut keep = None;
        let msg: Message = read_last(f.raw, &mut keep).unwrap_or_default();
        let params = msg.params.unwrap_or_default();
        let sid = f.session_id.or(params.session_id.as_deref()).map(str::to_owned);
        let t = self.time(f.t_ns);
        let mut e = event(t, method);
        if method.starts_with("mcp/") {
            if let Some(m) = params.method.as_deref() {
                e.attributes.push(kv("mcp.method.name", m));
            }
            if let Some(c) = params.connection_id.as_deref() {
                e.attributes.push(kv("mcp.session.id", c));
            }
        }
        let Some(sid) = sid else {
            push_event(&mut self.conn, e);
            return;
        };
        if !self.ensure_session(&sid, f.t_ns, None) {
            return;
        }
        let Some(update) = params.update.filter(|_| method == "session/update") else {
            let s = self.sessions.get_mut(&sid).expect("ensured");
            push_event(s.turn.as_mut().map_or(&mut s.root, |t| &mut t.span), e);
            return;
        };
        let kind = update.session_update.as_deref().unwrap_or("").to_owned();
        e.attributes.push(kv("acp.update.kind", &kind));
        match kind.as_str() {
            "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
                let text = (self.opts.content && kind == "agent_message_chunk")
                    .then(|| {
                        let raw = self.masked(f.raw);
                        chunk_text(&raw)
                    })
                    .flatten();
                let s = self.sessions.get_mut(&sid).expect("ensured");
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
                let Some(id) = update.tool_call_id.as_deref().map(str::to_owned) else { return };
                let (input, output) =
                    if self.opts.content && (update.raw_input.is_some() || update.raw_output.is_some()) {
                        let raw = self.masked(f.raw);
                        tool_io(&raw)
                    } else {
                        (None, None)
                    };
                if !self.tool_update(&sid, &id, Some(&update), f.t_ns) {
                    let s = self.sessions.get_mut(&sid).expect("ensured");
                    e.attributes.push(kv("gen_ai.tool.call.id", &id));
                    push_event(&mut s.root, e);
                    return;
                }
                let content = self.opts.content;
                let Some(tool) = self.tool_mut(&sid, &id) else { return };
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
                    let s = self.sessions.get_mut(&sid).expect("ensured");
                    let turn = s.turn.as_mut().expect("a tool span is in a turn");
                    let mut span = turn.tools.remove(&id).expect("found above");
                    span.end_time_unix_nano = t;
                    let ended = [span.span_id.clone()];
                    self.done.push(span);
                    self.end_children(&ended, t);
                }
            }
            "usage_update" => {
                let s = self.sessions.get_mut(&sid).expect("ensured");
                push_event(s.turn.as_mut().map_or(&mut s.root, |t| &mut t.span), e);
            }
            _ => {
                let s = self.sessions.get_mut(&sid).expect("ensured");
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
