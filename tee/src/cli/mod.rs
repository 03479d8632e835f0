//! The command line: what each subcommand does (the definitions are in
//! `args.rs`).

mod args;
mod check;
mod doctor;
mod import;
mod list;
mod manual;
mod progress;
mod replay;
mod show;

pub use args::{with_default_subcommand, Cli};

use crate::export::{self, ExportOptions, TraceSelection};
use crate::redact::Redactor;
use crate::relay::{self, WrapOptions};
use crate::store::{self, Reader, Store};
use acp_tee_shared::api::TraceSummary;
use anyhow::Context;
use args::OtlpArgs;
use args::{Command, ExportArgs};
use clap::Parser;
use std::ffi::OsString;
use std::io::Write;

/// The maintenance step the read commands (and `serve`) run before they
/// open readers: migrations and traces whose recorder is gone, no search
/// indexing (`serve` indexes in the background; the others never search). A
/// store that cannot be written here is left as it is.
fn maintain_before_reading(path: &std::path::Path) -> anyhow::Result<()> {
    store::maintain_existing(path, 0)?;
    Ok(())
}

/// Runs the command line; returns the process exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let cli = Cli::parse_from(with_default_subcommand(args));
    match run(cli) {
        Ok(code) => code,
        // The reader of our output went away (`acp-tee show | head`): what
        // it read was whole lines, and it chose to stop; as other Unix
        // tools, end quietly rather than report its choice as our error.
        Err(e) if stdout_closed(&e) => 0,
        Err(e) => {
            eprintln!("acp-tee: error: {}", error_text(&e));
            match e.downcast_ref::<relay::SpawnError>() {
                Some(spawn) => spawn.exit_code(),
                None => 1,
            }
        }
    }
}

/// Whether `e` is a write to a standard output whose reader has gone.
fn stdout_closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
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
            let otlp = live_otlp(&a.otlp)?;
            let opts = WrapOptions { command: a.agent, name, db: a.store.path()?, grace: a.grace, redact, otlp };
            Ok(relay::run(&opts)?)
        }
        Command::Proxy(a) => {
            let name = Some(a.name.unwrap_or_else(|| "proxy".to_owned()));
            let redact = a.redact.rules()?;
            let otlp = live_otlp(&a.otlp)?;
            Ok(crate::chain::run(&crate::chain::ProxyOptions { name, db: a.store.path()?, redact, otlp }))
        }
        Command::HttpProxy(a) => {
            let redact = a.redact.rules()?;
            crate::http_proxy::run(crate::http_proxy::HttpProxyOptions {
                listen: a.listen,
                upstream: a.upstream,
                db: a.store.path()?,
                name: a.name.unwrap_or_else(|| "http-proxy".to_owned()),
                redact,
                idle: std::time::Duration::from_secs(a.idle.max(1)),
            })
        }
        Command::Serve(a) => {
            let db = a.store.path()?;
            maintain_before_reading(&db)?;
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
                read_only: a.read_only,
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
        Command::Diff(a) => replay::diff_command(a),
        Command::Replay(a) => replay::replay_command(a),
        Command::Check(a) => check::check_command(a),
        Command::Doctor(a) => doctor::doctor_command(a),
        Command::Completions(a) => manual::completions_command(a),
        Command::Man(a) => manual::man_command(a),
        Command::Mcp(a) => {
            crate::mcp::run(a.store.open_reader()?, !a.no_redact)?;
            Ok(0)
        }
        Command::Recorder(a) => {
            ignore_terminal_signals();
            let otlp = recorder_otlp(&a);
            let redactor = a.redact.then(|| Redactor::new(a.redact_rule));
            let data = crate::recorder::data_pipes_from(&a.data_fds);
            crate::recorder::run(&a.db, std::io::stdin().lock(), data, redactor, a.agent_group, a.resume, otlp);
            Ok(0)
        }
    }
}

/// The live export `record` and `proxy` were asked for.
fn live_otlp(a: &OtlpArgs) -> anyhow::Result<Option<crate::otlp::LiveOptions>> {
    Ok(a.endpoint()?.map(|endpoint| crate::otlp::LiveOptions { endpoint, map: a.map_options() }))
}

/// The live export the recorder was given (a bad one is warned about and
/// left off: the recording goes on).
fn recorder_otlp(a: &args::RecorderArgs) -> Option<crate::otlp::LiveOptions> {
    let url = a.otlp_url.as_deref()?;
    match crate::otlp::Endpoint::resolve(url, |k| std::env::var(k).ok()) {
        Ok(endpoint) => Some(crate::otlp::LiveOptions {
            endpoint,
            map: crate::otlp::MapOptions { scope: a.otlp_trace_per, content: a.otlp_content },
        }),
        Err(e) => {
            tracing::warn!("otlp: {e}; no spans are sent");
            None
        }
    }
}

fn export_command(a: ExportArgs) -> anyhow::Result<i32> {
    let store = a.store.open_reader()?;
    let format = a.format;
    let redactor = crate::read::mask::policy(!a.no_redact, a.redact);
    for trace in export::selected_traces(&store, a.trace)? {
        settle(&store, trace.id, !a.no_wait, "the export holds")?;
    }
    let total: i64 = export::selected_traces(&store, a.trace)?.iter().map(|t| t.frame_count).sum();
    let progress = progress::bar(total as u64, "frames");
    let opts = ExportOptions { format, redactor, progress, otlp: a.otlp.map_options() };
    if let Some(endpoint) = a.otlp.endpoint()? {
        let url = endpoint.url.clone();
        let (summary, spans) = export::send_otlp(&store, a.trace, &opts, &crate::otlp::Client::new(endpoint))?;
        opts.progress.finish_and_clear();
        eprintln!("acp-tee: sent {spans} spans of {} frames to {url}", summary.frames);
        return Ok(0);
    }
    // `-o -` is standard output, as everywhere on Unix.
    let summary = match a.output.as_ref().filter(|path| path.as_os_str() != "-") {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            export::export(&store, a.trace, &opts, &mut std::io::BufWriter::new(file))?
        }
        None => export::export(&store, a.trace, &opts, &mut std::io::BufWriter::new(std::io::stdout().lock()))?,
    };
    opts.progress.finish_and_clear();
    if summary.left_out > 0 {
        eprintln!(
            "acp-tee: note: {} parts of the {} frames exported (stderr lines, invalid frames, batch elements that are no message) have no place in the {} format and were left out",
            summary.left_out,
            summary.frames,
            format.as_str()
        );
    }
    Ok(0)
}

/// How long `export`, `show`, `check` and `diff` wait, at most, for a
/// finishing trace (acp-tee gone, its recorder still storing what it was
/// handed) to end.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits (when `wait`) while trace `id` is finishing, up to [`FINISH_WAIT`]
/// (`Store::wait_while_finishing`); when it is still not complete, says on
/// stderr that `what` (`the export holds`) the frames stored so far, and
/// returns the summary (still `live`).
fn settle(store: &Store, id: i64, wait: bool, what: &str) -> anyhow::Result<TraceSummary> {
    let s = store.wait_while_finishing(id, if wait { FINISH_WAIT } else { std::time::Duration::ZERO })?;
    if s.live {
        eprintln!("acp-tee: note: trace {id} {}: {what} the {} frames stored so far", state_of(&s), s.meta.frame_count);
    }
    Ok(s)
}

/// What a trace that is not complete is doing, for a message.
fn state_of(s: &TraceSummary) -> &'static str {
    if s.finishing {
        "is still finishing (acp-tee has exited; its recorder is still storing frames)"
    } else {
        "is still being recorded"
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

    #[test]
    fn errors_name_each_cause_once() {
        let io = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let e = anyhow::Error::from(crate::export::ExportError::Io(io));
        let text = error_text(&e);
        assert_eq!(text.matches("No space left on device").count(), 1, "{text}");
        let e = anyhow::Error::from(std::io::Error::other("inner")).context("outer");
        assert_eq!(error_text(&e), "outer: inner");
    }
}
