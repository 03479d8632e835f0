//! The checker's MCP rules, for an MCP trace beside the JSON-RPC ones: the
//! lifecycle (one `initialize`, first; nothing but pings while
//! initialization is under way), the shape of an error object (ACP's are
//! judged by its schema instead) and tools called that the server's tool
//! list, read whole, does not have.

use super::rules::Rule;
use super::{cut, hash_of, quote, Checker, Request, What};
use acp_tee_wire::acp::lenient::leaf;
use acp_tee_wire::acp::{self as wire, Str};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use std::collections::HashSet;

/// Tool names of one listing remembered at most (as hashes); past this the
/// list is not judged (`check.limit`).
pub const TOOLS_MAX: usize = 10_000;

/// Tool names a finding quotes at most.
const TOOLS_QUOTED: usize = 5;

/// What the MCP rules follow.
#[derive(Debug, Default)]
pub(super) struct McpState {
    /// The frame of the first answer to `initialize`.
    initialize_answered: Option<i64>,
    /// The frame of the client's first `notifications/initialized`.
    initialized: Option<i64>,
    /// A request during initialization was told, of the server and of the
    /// client (`usize::from(from_client)`).
    early_told: [bool; 2],
    tools: Tools,
    /// Hashes of the tool names told as unlisted, each told once.
    unlisted_told: HashSet<u64>,
}

/// The server's tool list as the `tools/list` answers so far tell it.
#[derive(Debug, Default)]
struct Tools {
    /// Hashes of the names listed since the last first page.
    names: HashSet<u64>,
    /// The first of those names, cut, for a finding to quote.
    quoted: Vec<Box<str>>,
    /// The answers that listed them: the first page's, the last's, how many.
    pages: Option<(i64, i64, u32)>,
    /// The listing began with a first page (no `cursor`) and every page
    /// since had a list of tools.
    from_first: bool,
    /// The last page had no `nextCursor`: nothing more to list.
    complete: bool,
    /// A `notifications/tools/list_changed` came since the first page.
    changed: bool,
    /// More than [`TOOLS_MAX`] names.
    too_many: bool,
}

impl Tools {
    /// The answers of the whole, current list, when there is one to judge by.
    fn judged(&self) -> Option<(i64, i64, u32)> {
        self.pages.filter(|_| self.from_first && self.complete && !self.changed && !self.too_many)
    }
}

/// The params of the MCP requests the rules read.
#[derive(Deserialize, Default)]
struct Params<'a> {
    /// `tools/call`'s tool.
    #[serde(borrow, default, deserialize_with = "leaf")]
    name: Option<Str<'a>>,
    /// A paginated list's cursor (`null` is none).
    #[serde(borrow, default)]
    cursor: Option<&'a RawValue>,
}

/// A page of `tools/list`'s answer.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ToolPage<'a> {
    #[serde(borrow, default, deserialize_with = "wire::lenient::list")]
    tools: Option<Vec<Tool<'a>>>,
    /// More pages follow (`null` is none).
    #[serde(borrow, default)]
    next_cursor: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Tool<'a> {
    #[serde(borrow, default, deserialize_with = "leaf")]
    name: Option<Str<'a>>,
}

/// An error object's members as written (`null` included).
#[derive(Deserialize, Default)]
struct ErrorObject<'a> {
    #[serde(borrow, default, deserialize_with = "written")]
    code: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "written")]
    message: Option<&'a RawValue>,
}

/// A member as written, `null` included (an `Option` would read `null` as absent).
fn written<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A JSON number written without a fractional part or exponent.
fn is_integer(raw: &str) -> bool {
    matches!(raw.as_bytes().first(), Some(b'-' | b'0'..=b'9')) && !raw.contains(['.', 'e', 'E'])
}

impl Checker {
    /// A request of an MCP trace: the lifecycle's rules (one `initialize`,
    /// first, a `ping` allowed before it; then none but pings until
    /// initialization is done), a tool called, and what its answer will
    /// tell (`initialize`, `tools/list`).
    pub(super) fn mcp_request(
        &mut self,
        seq: i64,
        from_client: bool,
        method: &str,
        id: &RawValue,
        id_bad: bool,
        params: Option<&RawValue>,
    ) {
        let mut what = What::Other;
        if matches!(method, "initialize" | "proxy/initialize" | "_proxy/initialize") {
            if let Some(first) = self.initialize {
                let message =
                    format!("{} sent a second initialize (the first was frame {first})", self.who(from_client));
                self.find(Rule::SecondInitialize, vec![first, seq], message);
            } else {
                self.initialize = Some(seq);
                what = What::Initialize;
            }
        } else if self.initialize.is_none() {
            if !self.before_initialize_told && method != "ping" {
                self.before_initialize_told = true;
                let message = format!("{} sent {} before initialize", self.who(from_client), quote(method));
                self.find(Rule::BeforeInitialize, vec![seq], message);
            }
        } else {
            self.during_initialization(seq, from_client, method);
        }
        let mut keep = None;
        let params = wire::member::<Params>(params, &mut keep).unwrap_or_default();
        match method {
            "tools/list" if from_client => what = What::ToolList { first_page: params.cursor.is_none() },
            "tools/call" if from_client => {
                if let Some(name) = params.name {
                    self.tool_called(seq, &name);
                }
            }
            _ => {}
        }
        self.follow(seq, from_client, method, id, id_bad, what);
    }

    /// `lifecycle.during-initialization`: the client asked before the
    /// server answered its `initialize`, or the server before the client's
    /// `notifications/initialized`, something other than a ping (the
    /// lifecycle's SHOULD NOT). Said once per peer.
    fn during_initialization(&mut self, seq: i64, from_client: bool, method: &str) {
        let Some(init) = self.initialize else { return };
        let state = &self.mcp_state;
        if method == "ping" || state.early_told[usize::from(from_client)] {
            return;
        }
        let message = if from_client {
            if state.initialize_answered.is_some() {
                return;
            }
            format!(
                "the client sent {} before the server answered its initialize (frame {init}); the MCP lifecycle \
                 allows only pings until then",
                quote(method)
            )
        } else {
            if state.initialized.is_some() {
                return;
            }
            format!(
                "the server sent {} after the initialize of frame {init} but before the client's \
                 notifications/initialized; the MCP lifecycle allows only pings and log messages until then",
                quote(method)
            )
        };
        self.mcp_state.early_told[usize::from(from_client)] = true;
        self.find(Rule::DuringInitialization, vec![init, seq], message);
    }

    /// A notification of an MCP trace: the end of initialization, a tool
    /// list changed.
    pub(super) fn mcp_notification(&mut self, seq: i64, from_client: bool, method: &str) {
        match method {
            "notifications/initialized" if from_client => {
                self.mcp_state.initialized.get_or_insert(seq);
            }
            "notifications/tools/list_changed" if !from_client => self.mcp_state.tools.changed = true,
            _ => {}
        }
    }

    /// The answer (`ok`, its result unless it is an error) of an MCP trace's
    /// `request`: initialization answered, a page of tools listed.
    pub(super) fn mcp_answered(&mut self, seq: i64, request: Request, ok: Option<&RawValue>) {
        match (request.what, ok) {
            (What::Initialize, _) => {
                self.mcp_state.initialize_answered.get_or_insert(seq);
            }
            (What::ToolList { first_page }, Some(result)) => self.tools_listed(seq, first_page, result),
            _ => {}
        }
    }

    /// A page of the tool list: a first page starts the list again.
    fn tools_listed(&mut self, seq: i64, first_page: bool, result: &RawValue) {
        let mut keep = None;
        let page = wire::member::<ToolPage>(Some(result), &mut keep).unwrap_or_default();
        let tools = &mut self.mcp_state.tools;
        if first_page {
            *tools = Tools { from_first: true, ..Tools::default() };
        }
        tools.pages = Some(tools.pages.map_or((seq, seq, 1), |(first, _, n)| (first, seq, n + 1)));
        tools.complete = page.next_cursor.is_none();
        let Some(listed) = page.tools else {
            // A page without a list: what the server has is not known.
            tools.from_first = false;
            return;
        };
        for name in listed.iter().filter_map(|t| t.name.as_deref()) {
            if tools.names.len() >= TOOLS_MAX {
                tools.too_many = true;
                break;
            }
            if tools.names.insert(hash_of(name)) && tools.quoted.len() < TOOLS_QUOTED {
                tools.quoted.push(cut(name).into());
            }
        }
        if tools.too_many {
            self.limit(seq, &format!("the server listed more than {TOOLS_MAX} tools"));
        }
    }

    /// `mcp.unlisted-tool`: the client called a tool the whole, current
    /// tool list does not have. Said once per name.
    fn tool_called(&mut self, seq: i64, name: &str) {
        let tools = &self.mcp_state.tools;
        let Some((first, last, pages)) = tools.judged() else { return };
        let hash = hash_of(name);
        if tools.names.contains(&hash) || self.mcp_state.unlisted_told.contains(&hash) {
            return;
        }
        let answers = match pages {
            1 => format!("the tools/list answer of frame {last}"),
            n => format!("the {n} pages of the tools/list answer (frames {first} to {last})"),
        };
        let quoted = tools.quoted.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ");
        let listed = match (tools.names.len(), tools.names.len() - tools.quoted.len()) {
            (0, _) => "it listed no tools".to_owned(),
            (1, _) => format!("it listed only {quoted}"),
            (n, 0) => format!("it listed {n} tools: {quoted}"),
            (n, more) => format!("it listed {n} tools: {quoted} and {more} more"),
        };
        let message = format!("the client called the tool {}, which {answers} did not list ({listed})", quote(name));
        let seqs = if first == last { vec![last, seq] } else { vec![first, last, seq] };
        if self.mcp_state.unlisted_told.len() < TOOLS_MAX {
            self.mcp_state.unlisted_told.insert(hash);
        }
        self.find(Rule::UnlistedTool, seqs, message);
    }

    /// `rpc.error-shape`: an error object without an integer `code` or a
    /// string `message`, which JSON-RPC requires (the request it answers is
    /// frame `asked`, when known).
    pub(super) fn error_shape(&mut self, seq: i64, from_client: bool, asked: Option<i64>, error: &RawValue) {
        let mut keep = None;
        let mut problems = Vec::new();
        match wire::member::<ErrorObject>(Some(error), &mut keep) {
            None => problems.push(format!("is {}, not an object", quote(error.get()))),
            Some(e) => {
                match e.code.map(RawValue::get) {
                    None => problems.push("has no `code`".to_owned()),
                    Some(c) if !is_integer(c) => problems.push(format!("has the code {}, not an integer", quote(c))),
                    Some(_) => {}
                }
                match e.message.map(RawValue::get) {
                    None => problems.push("has no `message`".to_owned()),
                    Some(m) if !m.starts_with('"') => {
                        problems.push(format!("has the message {}, not a string", quote(m)));
                    }
                    Some(_) => {}
                }
            }
        }
        if problems.is_empty() {
            return;
        }
        let answering = asked.map(|a| format!(" answering frame {a}")).unwrap_or_default();
        let message = format!(
            "{} sent an error{answering} that {}, where JSON-RPC asks for an integer `code` and a string `message`",
            self.who(from_client),
            problems.join(" and ")
        );
        self.find(Rule::ErrorShape, asked.into_iter().chain([seq]).collect(), message);
    }
}
