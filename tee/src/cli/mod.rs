//! The command line: argument definitions and what each subcommand does.

mod import;
mod list;
mod progress;
mod show;

pub use list::printable;

use crate::export::{self, ExportFormat, ExportOptions, TraceSelection};
use crate::redact::{Redactor, Rule};
use crate::relay::{self, WrapOptions};
use crate::store::{self, Reader, Store};
use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::Write;
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
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run AGENT, relay its stdio and record every frame (the default subcommand)
    #[command(long_about = RECORD_ABOUT)]
    Record(RecordArgs),
    /// Run as a proxy component under the ACP conductor, recording the hop
    #[command(long_about = PROXY_ABOUT)]
    Proxy(ProxyArgs),
    /// Serve the trace viewer (browser app and JSON API) over HTTP
    #[command(long_about = SERVE_ABOUT)]
    Serve(ServeArgs),
    /// List the traces in the store
    List(ListArgs),
    /// Write traces as acp-tee-trace JSON, the conductor's .jsons, Perfetto JSON or acp-inspector-trace
    #[command(long_about = EXPORT_ABOUT)]
    Export(ExportArgs),
    /// Read a trace file into the store: acp-tee, conductor, sacp-tee, Zed, acp-inspector, acpx
    #[command(long_about = import::IMPORT_ABOUT)]
    Import(import::ImportArgs),
    /// Show a trace's sessions: turns, tool calls, permission waits, usage, open requests
    #[command(long_about = show::SHOW_ABOUT)]
    Show(show::ShowArgs),
    /// The recorder process wrap mode starts; not for people
    #[command(name = "__recorder", hide = true)]
    Recorder(RecorderArgs),
}

const RECORD_ABOUT: &str = "\
Run AGENT, relay its stdio and record every frame.

Bytes go both ways as they arrive, never altered. The agent's stderr passes
through to ours and is recorded too. When the client closes our stdin, the
agent's stdin is closed; if the agent has not exited after --grace it gets
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

#[derive(Debug, Args)]
struct StoreArg {
    /// The trace store (default: $XDG_DATA_HOME/acp-tee/traces.db, else ~/.local/share/acp-tee/traces.db)
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

impl StoreArg {
    fn path(&self) -> anyhow::Result<PathBuf> {
        match &self.db {
            Some(p) => Ok(p.clone()),
            None => Ok(store::default_path()?),
        }
    }

    /// Opens the existing store for reading only (see [`Reader`]).
    fn open_reader(&self) -> anyhow::Result<Reader> {
        Ok(Reader::open(&self.path()?)?)
    }
}

#[derive(Debug, Args)]
struct RecordArgs {
    #[command(flatten)]
    store: StoreArg,
    /// A name for the trace (default: the agent program's file name)
    #[arg(long)]
    name: Option<String>,
    /// How long the agent may run on after the client closed, and after SIGTERM (e.g. 3s, 500ms)
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    grace: Duration,
    #[command(flatten)]
    redact: RecordRedact,
    /// The agent's command line, after `--`
    #[arg(last = true, required = true, value_name = "AGENT")]
    agent: Vec<String>,
}

#[derive(Debug, Args)]
struct RecordRedact {
    /// Mask secrets in what is stored (the export's default rules, plus RULE
    /// when given as --redact=RULE; repeatable). Forwarded bytes are never changed.
    #[arg(long, value_name = "RULE", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    redact: Vec<String>,
}

impl RecordRedact {
    /// `None` when off, else the user's rules (checked now, so a bad rule
    /// stops the run before it starts).
    fn rules(&self) -> anyhow::Result<Option<Vec<String>>> {
        if self.redact.is_empty() {
            return Ok(None);
        }
        let rules: Vec<String> = self.redact.iter().filter(|r| !r.is_empty()).cloned().collect();
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
struct ProxyArgs {
    #[command(flatten)]
    store: StoreArg,
    /// A name for the trace, telling which hop of the chain it is (default: proxy)
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    redact: RecordRedact,
}

const SERVE_ABOUT: &str = "\
Serve the trace viewer (browser app and JSON API) over HTTP.

The viewer lists the store's traces and draws each as a sequence diagram with
timings, updating live while acp-tee records. The API under /api is read-only.
Listening beyond loopback (--bind 0.0.0.0) requires a token: pass --token or
one is generated; the printed URL carries it. Frames are served with secrets
masked as exports mask them; --no-redact serves them as stored.";

#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Port to listen on (0: any free port)
    #[arg(long, default_value_t = 7878)]
    port: u16,
    /// Require this token on every request (generated when --bind is not loopback)
    #[arg(long)]
    token: Option<String>,
    /// Open a browser on the viewer
    #[arg(long)]
    open: bool,
    /// Which trace the printed (and opened) URL shows: an id or `latest`
    #[arg(long, value_name = "ID|latest")]
    trace: Option<TraceSelection>,
    /// Serve the viewer app built in DIR (by scripts/build-viewer) instead of
    /// the one built into acp-tee: for working on the viewer
    #[arg(long, value_name = "DIR")]
    dist: Option<PathBuf>,
    /// Serve frames unmasked. By default the API and the viewer mask secrets
    /// as exports do (env and headers values, members named like secrets,
    /// secret query parameters of URLs)
    #[arg(long)]
    no_redact: bool,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    store: StoreArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    /// One JSON document: {"format":"acp-tee-trace","version":1,"traces":[...]}
    Json,
    /// Per trace, a header line then one frame per line
    Ndjson,
    /// The conductor's trace format, one event per line (one trace)
    Jsons,
    /// Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing
    Perfetto,
    /// sagikazarmark/acp-inspector's acp-inspector-trace JSONL (one connection per trace)
    AcpInspector,
}

const EXPORT_ABOUT: &str = "\
Write traces as acp-tee-trace JSON or NDJSON (docs/trace-format.md), as the
conductor's .jsons (agent-client-protocol-trace-viewer opens it), as Chrome
trace-event JSON (ui.perfetto.dev, chrome://tracing), or as an
acp-inspector-trace JSONL file (one connection per trace; stderr left out).

Secrets are masked by default: the values of env and headers (mcpServers,
terminal/create, auth methods) and of every field named like a token, key,
secret, password, authorization or cookie. --redact adds rules: a JSONPath
($.params.cwd, $..url, $.params.mcpServers[*].url) masks the values it
selects; anything else is a regular expression whose matches are masked in
every string. --no-redact writes the stored bytes as they are.";

#[derive(Debug, Args)]
struct ExportArgs {
    #[command(flatten)]
    store: StoreArg,
    /// Which trace: an id from `acp-tee list`, `latest` or `all`
    #[arg(long, default_value = "latest", value_name = "ID|latest|all")]
    trace: TraceSelection,
    /// Output format
    #[arg(long, value_enum, default_value = "json")]
    format: FormatArg,
    /// Write to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also mask what RULE selects: a JSONPath ($.params.cwd) or a regular expression (repeatable)
    #[arg(long, value_name = "JSONPATH|REGEX")]
    redact: Vec<Rule>,
    /// Write the stored bytes as they are, secrets included
    #[arg(long, conflicts_with = "redact")]
    no_redact: bool,
    /// Do not wait for a trace whose recorder is still storing frames after
    /// acp-tee exited (by default export waits for it, up to a minute)
    #[arg(long)]
    no_wait: bool,
}

#[derive(Debug, Args)]
struct RecorderArgs {
    #[arg(long)]
    db: PathBuf,
    /// Mask secrets before storing (default rules plus --redact-rule)
    #[arg(long)]
    redact: bool,
    #[arg(long = "redact-rule")]
    redact_rule: Vec<Rule>,
    /// The data pipes' read ends, one per direction (client→agent,
    /// agent→client, agent stderr)
    #[arg(long = "data-fds", value_delimiter = ',')]
    data_fds: Vec<i32>,
    /// The agent's process group, killed if the relay vanishes mid-run
    #[arg(long = "agent-group")]
    agent_group: Option<u32>,
    /// This recorder replaces one that died mid-run (the handoff says which)
    #[arg(long)]
    resume: bool,
}

/// Parses `3s`, `500ms`, `2m` or a bare number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
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

/// Subcommand names that may come first; anything else means `record`.
const SUBCOMMANDS: &[&str] = &[
    "record",
    "proxy",
    "serve",
    "list",
    "export",
    "import",
    "show",
    "__recorder",
    "help",
    "-h",
    "--help",
    "-V",
    "--version",
];

/// Inserts the implicit `record` so `acp-tee -- AGENT` and
/// `acp-tee --db X -- AGENT` work.
pub fn with_default_subcommand(mut args: Vec<OsString>) -> Vec<OsString> {
    let needs_record = args.get(1).is_some_and(|first| !SUBCOMMANDS.iter().any(|s| first == *s));
    if needs_record {
        args.insert(1, "record".into());
    }
    args
}

/// Runs the command line; returns the process exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let cli = Cli::parse_from(with_default_subcommand(args));
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("acp-tee: error: {}", error_text(&e));
            match e.downcast_ref::<relay::SpawnError>() {
                Some(spawn) => spawn.exit_code(),
                None => 1,
            }
        }
    }
}

/// An error and its causes in one line, each cause said once: most of our
/// errors already name their cause in their own text, and a cause that is
/// said already is left out with what it says of its own causes.
fn error_text(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if text.contains(&cause) {
            break;
        }
        text.push_str(": ");
        text.push_str(&cause);
    }
    text
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Record(a) => {
            let name = a
                .name
                .or_else(|| std::path::Path::new(&a.agent[0]).file_name().map(|n| n.to_string_lossy().into_owned()));
            let redact = a.redact.rules()?;
            let opts = WrapOptions { command: a.agent, name, db: a.store.path()?, grace: a.grace, redact };
            Ok(relay::run(&opts)?)
        }
        Command::Proxy(a) => {
            let name = Some(a.name.unwrap_or_else(|| "proxy".to_owned()));
            let redact = a.redact.rules()?;
            Ok(crate::chain::run(&crate::chain::ProxyOptions { name, db: a.store.path()?, redact }))
        }
        Command::Serve(a) => {
            let db = a.store.path()?;
            let open_path = match a.trace {
                None => "/".to_owned(),
                Some(sel) => {
                    let store = Reader::open(&db)?;
                    let id = match sel {
                        TraceSelection::Id(id) => store.trace(id)?.id,
                        TraceSelection::Latest | TraceSelection::All => store.latest_trace_id()?,
                    };
                    format!("/traces/{id}")
                }
            };
            let dist = a.dist;
            let opts = crate::server::ServeOptions {
                db,
                bind: a.bind,
                port: a.port,
                token: a.token,
                open: a.open,
                dist,
                open_path,
                redact: !a.no_redact,
            };
            crate::server::run(opts)?;
            Ok(0)
        }
        Command::List(a) => {
            let store = a.store.open_reader()?;
            let traces = store.trace_summaries()?;
            let mut out = std::io::stdout().lock();
            out.write_all(list::render(&traces).as_bytes())?;
            Ok(0)
        }
        Command::Export(a) => export_command(a),
        Command::Import(a) => import::import_command(a),
        Command::Show(a) => show::show_command(a),
        Command::Recorder(a) => {
            ignore_terminal_signals();
            let redactor = a.redact.then(|| Redactor::new(a.redact_rule));
            let data = crate::recorder::data_pipes_from(&a.data_fds);
            crate::recorder::run(&a.db, std::io::stdin().lock(), data, redactor, a.agent_group, a.resume);
            Ok(0)
        }
    }
}

fn export_command(a: ExportArgs) -> anyhow::Result<i32> {
    let store = a.store.open_reader()?;
    let format = match a.format {
        FormatArg::Json => ExportFormat::Json,
        FormatArg::Ndjson => ExportFormat::Ndjson,
        FormatArg::Jsons => ExportFormat::Jsons,
        FormatArg::Perfetto => ExportFormat::Perfetto,
        FormatArg::AcpInspector => ExportFormat::AcpInspector,
    };
    let redactor = if a.no_redact { Redactor::without_defaults(Vec::new()) } else { Redactor::new(a.redact) };
    for trace in export::selected_traces(&store, a.trace)? {
        settle(&store, trace.id, !a.no_wait)?;
    }
    let total: i64 = export::selected_traces(&store, a.trace)?.iter().map(|t| t.frame_count).sum();
    let opts = ExportOptions { format, redactor, progress: progress::bar(total as u64, "frames") };
    let summary = match &a.output {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            export::export(&store, a.trace, &opts, &mut std::io::BufWriter::new(file))?
        }
        None => export::export(&store, a.trace, &opts, &mut std::io::BufWriter::new(std::io::stdout().lock()))?,
    };
    opts.progress.finish_and_clear();
    if summary.left_out > 0 {
        eprintln!(
            "acp-tee: note: {} of the {} frames' parts (stderr lines, invalid frames, batch elements that are no message) have no place in the {} format and were left out",
            summary.left_out,
            summary.frames,
            format.as_str()
        );
    }
    Ok(0)
}

/// How long `export` waits, at most, for a finishing trace (acp-tee gone,
/// its recorder still storing what it was handed) to end.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits (when `wait`) while trace `id` is finishing, up to [`FINISH_WAIT`];
/// says on stderr when the export will hold a trace that is not complete.
fn settle(store: &Store, id: i64, wait: bool) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + FINISH_WAIT;
    loop {
        let s = store.trace_summary(id)?;
        if !s.live {
            return Ok(());
        }
        if s.finishing && wait && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        let state = if s.finishing {
            "is still finishing (acp-tee has exited; its recorder is still storing frames)"
        } else {
            "is still being recorded"
        };
        eprintln!(
            "acp-tee: note: trace {id} {state}: the export holds the {} frames stored so far",
            s.meta.frame_count
        );
        return Ok(());
    }
}

/// The recorder outlives the relay on purpose: a Ctrl-C or hang-up must not
/// stop it before it has stored what it was handed. SIGXFSZ (a file size
/// limit reached) must not kill it either: the write then fails with EFBIG,
/// which the store writer counts like a full disk.
fn ignore_terminal_signals() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
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
    fn errors_name_each_cause_once() {
        let io = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let e = anyhow::Error::from(crate::export::ExportError::Io(io));
        let text = error_text(&e);
        assert_eq!(text.matches("No space left on device").count(), 1, "{text}");
        let e = anyhow::Error::from(std::io::Error::other("inner")).context("outer");
        assert_eq!(error_text(&e), "outer: inner");
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
}
