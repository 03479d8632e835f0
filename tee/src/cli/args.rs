//! The command line's definitions (clap): subcommands, their arguments and
//! help texts, and the implicit `record`.

use super::trace_ref::TraceRef;
use crate::config::{self, Setting};
use crate::redact::Rule;
use crate::store::{self, Reader};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

const ABOUT: &str = "Record every Agent Client Protocol message between an editor and an agent";

const LONG_ABOUT: &str = "\
Record every Agent Client Protocol message between an editor and an agent.

acp-tee sits between an ACP client (an editor such as Zed) and an ACP agent,
forwards every byte both ways untouched, and writes each newline-delimited
frame, timestamped, to a SQLite trace store.

`record` is the default subcommand, so an editor's agent command becomes
    acp-tee -- AGENT [ARGS...]
e.g. in Zed's settings: \"command\": \"acp-tee\", \"args\": [\"--\", \"my-agent\", \"acp\"]";

/// The `acp-tee` command line.
#[derive(Debug, Parser)]
#[command(name = "acp-tee", version, about = ABOUT, long_about = LONG_ABOUT)]
#[command(subcommand_required = true, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Run AGENT, relay its stdio and record every frame (the default subcommand)
    #[command(long_about = RECORD_ABOUT)]
    Record(RecordArgs),
    /// Run as a proxy component under the ACP conductor, recording the hop
    #[command(long_about = PROXY_ABOUT)]
    Proxy(ProxyArgs),
    /// Proxy ACP over HTTP and WebSocket to an upstream agent, recording each connection
    #[command(name = "http-proxy", long_about = HTTP_PROXY_ABOUT)]
    HttpProxy(HttpProxyArgs),
    /// Serve the trace viewer (browser app and JSON API) over HTTP
    #[command(long_about = SERVE_ABOUT)]
    Serve(ServeArgs),
    /// List the traces in the store, newest first, with their sizes and the store's
    #[command(long_about = super::list::LIST_ABOUT)]
    List(super::list::ListArgs),
    /// Write traces as acp-tee-trace JSON, the conductor's .jsons, Perfetto JSON, acp-inspector-trace or
    /// OpenTelemetry spans (OTLP/JSON, or sent to a collector)
    #[command(long_about = EXPORT_ABOUT)]
    Export(ExportArgs),
    /// Read a trace file into the store: acp-tee, conductor, sacp-tee, Zed, acp-inspector, acpx
    #[command(long_about = super::import::IMPORT_ABOUT)]
    Import(super::import::ImportArgs),
    /// Show a trace's sessions: turns, tool calls, permission waits, usage, open requests
    #[command(long_about = super::show::SHOW_ABOUT)]
    Show(super::show::ShowArgs),
    /// Compare two traces message by message (exit 1 when they differ)
    #[command(long_about = super::replay::DIFF_ABOUT)]
    Diff(super::replay::DiffArgs),
    /// Replay a trace against a live agent (recorded as a new trace), or as the agent on stdio
    #[command(long_about = super::replay::REPLAY_ABOUT)]
    Replay(super::replay::ReplayArgs),
    /// Serve the trace store to a model: a Model Context Protocol server on stdio
    #[command(long_about = MCP_ABOUT)]
    Mcp(McpArgs),
    /// Check a trace against the ACP spec and schema; exit 1 on errors (for CI)
    #[command(long_about = super::check::CHECK_ABOUT)]
    Check(super::check::CheckArgs),
    /// Check the store, the viewer and the peers on PATH, each problem with its fix
    #[command(long_about = super::doctor::DOCTOR_ABOUT)]
    Doctor(super::doctor::DoctorArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell
    #[command(long_about = super::manual::COMPLETIONS_ABOUT)]
    Completions(super::manual::CompletionsArgs),
    /// Print the manual page, or write one per subcommand into a directory
    #[command(long_about = super::manual::MAN_ABOUT)]
    Man(super::manual::ManArgs),
    /// Remove traces from the store
    #[command(long_about = super::edit::RM_ABOUT)]
    Rm(super::edit::RmArgs),
    /// Give a trace a new name
    Rename(super::edit::RenameArgs),
    /// Pin traces: every prune leaves them alone
    Pin(super::edit::PinArgs),
    /// Unpin traces
    Unpin(super::edit::PinArgs),
    /// Remove traces by age, count or the store's size (a retention policy)
    #[command(long_about = super::prune::PRUNE_ABOUT)]
    Prune(super::prune::PruneArgs),
    /// Print the effective settings (config file, environment, defaults) and where each came from
    #[command(long_about = super::settings::CONFIG_ABOUT)]
    Config(super::settings::ConfigArgs),
    /// The recorder process wrap mode starts; not for people
    #[command(name = "__recorder", hide = true)]
    Recorder(RecorderArgs),
}

const RECORD_ABOUT: &str = "\
Run AGENT, relay its stdio and record every frame.

Bytes go both ways as they arrive, never altered. The agent's stderr passes
through to ours and is recorded too. When the client closes our stdin, the
agent's stdin is closed (a regular file as our stdin counts as closed from
the start: it holds all there is); if the agent has not exited after --grace it gets
SIGTERM, and SIGKILL after another --grace. SIGINT, SIGTERM and SIGHUP are
passed on to the agent (TERM and HUP are followed by SIGKILL after --grace).
Once the agent exited, its last output is forwarded; if something it started
still holds its stdout or stderr open, acp-tee stops waiting after --grace
(3 s at least) and says so.
If acp-tee itself is killed, the agent is killed with it and every frame
already forwarded is still stored.

Exit status: the agent's exit code, or 128+N when signal N killed it; 0 when
acp-tee stopped the agent after the client closed; 127 when AGENT does not
exist, 126 when it cannot be executed (nothing is recorded then).";

const MCP_ABOUT: &str = "\
Serve the trace store to a model: a Model Context Protocol server on stdio,
read-only, for an MCP client (Claude Desktop, an editor, an agent) to start.

Tools: list_traces, describe_trace (sessions, turns, tool calls, open
requests, notes), search_frames, get_frame (with its pair; the text a
window at a time), method_stats, compare_traces. Answers are paged and
bounded in size. Texts are masked like exports (--no-redact returns them
as stored). stdout is the protocol; logs go to stderr. docs/mcp-server.md shows
the client configuration.";

/// Arguments of `acp-tee mcp`.
#[derive(Debug, Args)]
pub(super) struct McpArgs {
    #[command(flatten)]
    pub(super) store: StoreArg,
    /// Return texts as stored, secrets included
    #[arg(long)]
    pub(super) no_redact: bool,
}

#[derive(Debug, Args)]
pub(super) struct StoreArg {
    /// The trace store (default: ACP_TEE_DB, else the config file's `db`, else
    /// $XDG_DATA_HOME/acp-tee/traces.db, else ~/.local/share/acp-tee/traces.db)
    #[arg(long, value_name = "PATH")]
    pub(super) db: Option<PathBuf>,
}

impl StoreArg {
    /// The store: --db, else ACP_TEE_DB, else the config file's, else the
    /// default path; and where it came from.
    pub(super) fn setting(&self) -> anyhow::Result<Setting<PathBuf>> {
        let s = config::current().db.or_flag(self.db.clone().map(Some));
        Ok(Setting {
            value: match s.value {
                Some(p) => p,
                None => store::default_path()?,
            },
            source: s.source,
        })
    }

    pub(super) fn path(&self) -> anyhow::Result<PathBuf> {
        Ok(self.setting()?.value)
    }

    /// Runs a maintenance step on the existing store, then opens it for
    /// reading only (see [`Reader`]).
    pub(super) fn open_reader(&self) -> anyhow::Result<Reader> {
        let path = self.path()?;
        super::maintain_before_reading(&path)?;
        Ok(Reader::open(&path)?)
    }
}

#[derive(Debug, Args)]
pub(super) struct RecordArgs {
    #[command(flatten)]
    pub(super) store: StoreArg,
    /// A name for the trace (default: the agent program's file name)
    #[arg(long)]
    pub(super) name: Option<String>,
    /// How long the agent may run on after the client closed, and after SIGTERM (e.g. 3s, 500ms)
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub(super) grace: Duration,
    #[command(flatten)]
    pub(super) redact: RecordRedact,
    #[command(flatten)]
    pub(super) otlp: OtlpArgs,
    /// The protocol the peer speaks: acp (an ACP agent), mcp (an MCP stdio
    /// server), or auto: known from the first initialize (MCP's
    /// protocolVersion is a string, ACP's an integer)
    #[arg(long, value_enum, default_value_t = ProtocolArg::Auto)]
    pub(super) protocol: ProtocolArg,
    /// The agent's command line, after `--`
    #[arg(last = true, required = true, value_name = "AGENT")]
    pub(super) agent: Vec<String>,
}

/// `record --protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ProtocolArg {
    Auto,
    Acp,
    Mcp,
}

impl ProtocolArg {
    /// The protocol stored at the trace's start (`None`: from `initialize`).
    pub(super) fn given(self) -> Option<acp_tee_shared::Protocol> {
        match self {
            ProtocolArg::Auto => None,
            ProtocolArg::Acp => Some(acp_tee_shared::Protocol::Acp),
            ProtocolArg::Mcp => Some(acp_tee_shared::Protocol::Mcp),
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct RecordRedact {
    /// Mask secrets in what is stored (the export's default rules, plus RULE
    /// when given as --redact=RULE; repeatable). Forwarded bytes are never changed.
    /// Without it: ACP_TEE_REDACT and ACP_TEE_REDACT_RULES, else the config file's [record]
    #[arg(long, value_name = "RULE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(super) redact: Vec<String>,
    /// Store frames unmasked, whatever the environment or the config file say
    #[arg(long, conflicts_with = "redact")]
    pub(super) no_redact: bool,
}

impl RecordRedact {
    /// `None` when off, else the user's rules (checked now, so a bad rule
    /// stops the run before it starts): the flags', else those of the
    /// environment or the config file.
    pub(super) fn rules(&self) -> anyhow::Result<Option<Vec<String>>> {
        let config = config::current();
        let on = match (self.no_redact, self.redact.is_empty()) {
            (true, _) => false,
            (false, false) => true,
            (false, true) => config.record_redact().value,
        };
        if !on {
            return Ok(None);
        }
        let flagged: Vec<String> = self.redact.iter().filter(|r| !r.is_empty()).cloned().collect();
        let rules = config.redact_rules.or_flag((!flagged.is_empty()).then_some(flagged)).value;
        for rule in &rules {
            rule.parse::<Rule>()?;
        }
        Ok(Some(rules))
    }
}

const PROXY_ABOUT: &str = "\
Run as a proxy component under the ACP conductor, recording the hop.

Put it in a chain, e.g.
    agent-client-protocol-conductor agent \"acp-tee proxy --name hop1\" \"my-agent acp\"
It answers proxy/initialize by forwarding initialize to its successor, passes
every message on unchanged (wrapped in proxy/successor toward the agent,
unwrapped toward the client), and records the logical messages (client to
agent, agent to client) with their exact envelopes. Several acp-tee proxies in
one chain each record their own trace; give each a --name.";

#[derive(Debug, Args)]
pub(super) struct ProxyArgs {
    #[command(flatten)]
    pub(super) store: StoreArg,
    /// A name for the trace, telling which hop of the chain it is (default: proxy)
    #[arg(long)]
    pub(super) name: Option<String>,
    #[command(flatten)]
    pub(super) redact: RecordRedact,
    #[command(flatten)]
    pub(super) otlp: OtlpArgs,
}

const HTTP_PROXY_ABOUT: &str = "\
Proxy ACP over HTTP and WebSocket to an upstream agent, recording each connection.

Clients talk to http://LISTEN/acp as they would to the upstream endpoint:
POST (initialize, then messages answered 202 Accepted), GET (the Server-Sent
Events streams of the connection and of each session), DELETE and the
WebSocket upgrade all go on to --upstream, headers and bodies untouched but
for the hop-by-hop headers, events and messages streamed as they come. Each
ACP connection (an Acp-Connection-Id, or a WebSocket) is recorded as a trace
of its own, its frames keeping their transport facts (HTTP status, connection
and session ids, which stream). The address is printed on stdout once the
proxy listens. SIGINT, SIGTERM or SIGHUP stop it; the traces end then.";

const SERVE_ABOUT: &str = "\
Serve the trace viewer (browser app and JSON API) over HTTP.

The viewer lists the store's traces and draws each as a sequence diagram with
timings, updating live while acp-tee records. The API under /api reads the
store; its one write path is the trace list's rename, pin and delete, taken
on loopback, beyond loopback only with the token, and refused with
--read-only. Listening beyond loopback (--bind 0.0.0.0) requires a token:
pass --token or one is generated; the printed URL carries it. Frames are
served with secrets masked as exports mask them; --no-redact serves them as
stored.";

#[derive(Debug, Args)]
pub(super) struct HttpProxyArgs {
    #[command(flatten)]
    pub(super) store: StoreArg,
    /// Address to listen on (port 0: any free port)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub(super) listen: std::net::SocketAddr,
    /// The upstream ACP endpoint (http://HOST:PORT/acp; https, ws and wss too)
    #[arg(long, value_name = "URL")]
    pub(super) upstream: String,
    /// A name for the traces (default: http-proxy)
    #[arg(long)]
    pub(super) name: Option<String>,
    /// End the trace of a connection with no stream open and no request in
    /// flight for this many seconds (its client went away without DELETE)
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub(super) idle: u64,
    #[command(flatten)]
    pub(super) redact: RecordRedact,
}

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[command(flatten)]
    pub(super) store: StoreArg,
    /// Address to listen on (default: ACP_TEE_SERVE_BIND, else the config file's serve.bind, else 127.0.0.1)
    #[arg(long, value_name = "ADDR")]
    pub(super) bind: Option<std::net::IpAddr>,
    /// Port to listen on, 0: any free port (default: ACP_TEE_SERVE_PORT, else the config file's
    /// serve.port, else 7878)
    #[arg(long)]
    pub(super) port: Option<u16>,
    /// Require this token on every request (generated when --bind is not loopback)
    #[arg(long)]
    pub(super) token: Option<String>,
    /// Open a browser on the viewer
    #[arg(long)]
    pub(super) open: bool,
    /// Which trace the printed (and opened) URL shows: an id, `latest`, or a
    /// name (the newest trace of that name; name:NAME for any name). Default:
    /// the list of traces
    #[arg(value_name = "TRACE")]
    pub(super) trace: Option<TraceRef>,
    /// The same as TRACE
    #[arg(long = "trace", value_name = "TRACE", conflicts_with = "trace")]
    pub(super) trace_flag: Option<TraceRef>,
    /// Serve the viewer app built in DIR (by scripts/build-viewer) instead of
    /// the one built into acp-tee: for working on the viewer
    #[arg(long, value_name = "DIR")]
    pub(super) dist: Option<PathBuf>,
    /// Serve frames unmasked. By default the API and the viewer mask secrets
    /// as exports do (env and headers values, members named like secrets,
    /// secret query parameters of URLs)
    #[arg(long)]
    pub(super) no_redact: bool,
    /// Refuse every change to the store: the viewer's list offers no rename,
    /// pin or delete, and the API answers them 403
    #[arg(long)]
    pub(super) read_only: bool,
}

const EXPORT_ABOUT: &str = "\
Write traces as acp-tee-trace JSON or NDJSON (docs/trace-format.md), as the
conductor's .jsons (agent-client-protocol-trace-viewer opens it), as Chrome
trace-event JSON (ui.perfetto.dev, chrome://tracing), as an
acp-inspector-trace JSONL file (one connection per trace; stderr left out),
or as OpenTelemetry spans (docs/otlp.md): OTLP/JSON with --format otlp, or
sent over OTLP/HTTP to a collector with --otlp-endpoint.

Secrets are masked by default: the values of env and headers (mcpServers,
terminal/create, auth methods) and of every field named like a token, key,
secret, password, authorization or cookie. --redact adds rules: a JSONPath
($.params.cwd, $..url, $.params.mcpServers[*].url) masks the values it
selects; anything else is a regular expression whose matches are masked in
every string. --no-redact writes the stored bytes as they are.";

#[derive(Debug, Args)]
pub(super) struct ExportArgs {
    #[command(flatten)]
    pub(super) store: StoreArg,
    /// Which trace: an id from `acp-tee list`, `latest` (the default), `all`,
    /// or a name (the newest trace of that name; name:NAME for any name)
    #[arg(value_name = "TRACE")]
    pub(super) trace: Option<TraceRef>,
    /// The same as TRACE
    #[arg(long = "trace", value_name = "TRACE", conflicts_with = "trace")]
    pub(super) trace_flag: Option<TraceRef>,
    /// Also write the trace's children (the MCP servers its agent started,
    /// recorded by acp-tee) and theirs, each after its parent
    #[arg(long)]
    pub(super) with_children: bool,
    /// Output format
    #[arg(long, value_enum, default_value = "json", conflicts_with = "otlp_endpoint")]
    pub(super) format: crate::export::ExportFormat,
    /// Write to FILE instead of stdout (`-` is stdout)
    #[arg(short = 'o', long = "output", value_name = "FILE", conflicts_with = "otlp_endpoint")]
    pub(super) output: Option<PathBuf>,
    /// Also mask what RULE selects: a JSONPath ($.params.cwd) or a regular expression (repeatable)
    #[arg(long, value_name = "JSONPATH|REGEX")]
    pub(super) redact: Vec<Rule>,
    /// Write the stored bytes as they are, secrets included
    #[arg(long, conflicts_with = "redact")]
    pub(super) no_redact: bool,
    /// Do not wait for a trace whose recorder is still storing frames after
    /// acp-tee exited (by default export waits for it, up to a minute)
    #[arg(long)]
    pub(super) no_wait: bool,
    #[command(flatten)]
    pub(super) otlp: OtlpArgs,
}

#[derive(Debug, Args)]
pub(super) struct RecorderArgs {
    #[arg(long)]
    pub(super) db: PathBuf,
    /// Mask secrets before storing (default rules plus --redact-rule)
    #[arg(long)]
    pub(super) redact: bool,
    #[arg(long = "redact-rule")]
    pub(super) redact_rule: Vec<Rule>,
    /// The data pipes' read ends, one per direction (client→agent,
    /// agent→client, agent stderr)
    #[arg(long = "data-fds", value_delimiter = ',')]
    pub(super) data_fds: Vec<i32>,
    /// The agent's process group, killed if the relay vanishes mid-run
    #[arg(long = "agent-group")]
    pub(super) agent_group: Option<u32>,
    /// This recorder replaces one that died mid-run (the handoff says which)
    #[arg(long)]
    pub(super) resume: bool,
    /// Send spans live to this OTLP/HTTP traces URL
    #[arg(long = "otlp-url")]
    pub(super) otlp_url: Option<String>,
    #[arg(long = "otlp-content")]
    pub(super) otlp_content: bool,
    #[arg(long = "otlp-trace-per", value_enum, default_value = "session")]
    pub(super) otlp_trace_per: crate::otlp::TraceScope,
}

// OpenTelemetry (docs/otlp.md): the options `record`, `proxy` and `export`
// share.
#[derive(Debug, Args, Clone)]
pub(super) struct OtlpArgs {
    /// Send OpenTelemetry spans over OTLP/HTTP to URL (e.g.
    /// http://localhost:4318; /v1/traces is appended). Without a value:
    /// ACP_TEE_OTLP_ENDPOINT, else the config file's otlp.endpoint, else
    /// OTEL_EXPORTER_OTLP_ENDPOINT. OTEL_EXPORTER_OTLP_HEADERS and
    /// OTEL_SERVICE_NAME apply. When recording, ACP_TEE_OTLP_ENDPOINT or the
    /// config file's otlp.endpoint turn the live export on without this flag
    #[arg(long, value_name = "URL", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub(super) otlp_endpoint: Option<String>,
    /// Put content in the spans (prompts, agent messages, tool input and
    /// output, stderr lines), masked as exports mask it (default:
    /// ACP_TEE_OTLP_CONTENT, else the config file's otlp.content, else off)
    #[arg(long)]
    pub(super) otlp_content: bool,
    /// One trace per ACP session, or one per recording (default:
    /// ACP_TEE_OTLP_TRACE_PER, else the config file's otlp.trace_per, else session)
    #[arg(long, value_enum, value_name = "SCOPE")]
    pub(super) otlp_trace_per: Option<crate::otlp::TraceScope>,
}

impl OtlpArgs {
    /// The mapping's options: the flags', else the environment's or the
    /// config file's.
    pub(super) fn map_options(&self) -> crate::otlp::MapOptions {
        let config = config::current();
        crate::otlp::MapOptions {
            scope: config.otlp_trace_per.or_flag(self.otlp_trace_per).value,
            content: config.otlp_content.or_flag(self.otlp_content.then_some(true)).value,
        }
    }

    /// The endpoint to send to, when asked for (checked now, so a bad one
    /// stops the run before it starts). Asked for by the flag, or, when
    /// `recording` (a live export), by ACP_TEE_OTLP_ENDPOINT or the config
    /// file. A bare flag takes the URL of these, else of the OTEL_ variables.
    pub(super) fn endpoint(&self, recording: bool) -> anyhow::Result<Option<crate::otlp::Endpoint>> {
        let configured = config::current().otlp_endpoint.value.clone();
        let url = match self.otlp_endpoint.as_deref() {
            Some("") => configured.unwrap_or_default(),
            Some(url) => url.to_owned(),
            None if recording => match configured {
                Some(url) => url,
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        Ok(Some(crate::otlp::Endpoint::resolve(&url, |k| std::env::var(k).ok())?))
    }
}

/// Parses `3s`, `500ms`, `2m` or a bare number of seconds.
pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration; write e.g. 3s, 500ms or 1m");
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

/// What may come first besides a subcommand's name (clap's own).
const TOP_LEVEL_FLAGS: [&str; 5] = ["help", "-h", "--help", "-V", "--version"];

/// Inserts the implicit `record` so `acp-tee -- AGENT` and
/// `acp-tee --db X -- AGENT` work.
pub fn with_default_subcommand(mut args: Vec<OsString>) -> Vec<OsString> {
    let cli = <Cli as clap::CommandFactory>::command();
    let known = |first: &OsString| {
        cli.get_subcommands().any(|c| first == c.get_name()) || TOP_LEVEL_FLAGS.iter().any(|f| first == *f)
    };
    let needs_record = args.get(1).is_some_and(|first| !known(first));
    if needs_record {
        args.insert(1, "record".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        with_default_subcommand(a.iter().map(OsString::from).collect())
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    #[test]
    fn record_is_the_default_subcommand() {
        assert_eq!(args(&["acp-tee", "--", "a"]), ["acp-tee", "record", "--", "a"]);
        assert_eq!(args(&["acp-tee", "--db", "x", "--", "a"]), ["acp-tee", "record", "--db", "x", "--", "a"]);
        assert_eq!(args(&["acp-tee", "list"]), ["acp-tee", "list"]);
        assert_eq!(args(&["acp-tee", "--help"]), ["acp-tee", "--help"]);
        assert_eq!(args(&["acp-tee"]), ["acp-tee"]);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("soon").unwrap_err().contains("not a duration"));
        assert!(parse_duration("3h").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn an_export_sent_over_otlp_takes_no_format_and_no_file() {
        use clap::Parser;
        let parse = |args: &[&str]| Cli::try_parse_from([&["acp-tee", "export"], args].concat());
        assert!(parse(&["--otlp-endpoint=http://127.0.0.1:4318"]).is_ok());
        for other in [&["--format", "jsons"][..], &["-o", "out.json"]] {
            let err = parse(&[&["--otlp-endpoint=http://127.0.0.1:4318"], other].concat()).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict, "{other:?}: {err}");
        }
    }
}
