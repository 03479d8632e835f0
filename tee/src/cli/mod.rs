//! The command line: what each subcommand does (the definitions are in
//! `args.rs`).

mod args;
mod check;
mod doctor;
mod edit;
mod import;
mod list;
mod manual;
mod progress;
mod prune;
mod replay;
mod settings;
mod show;
mod show_mcp;
mod trace_ref;

pub use args::{with_default_subcommand, Cli};

use crate::config;
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
    if let Err(code) = load_config(&cli.command) {
        return code;
    }
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

/// Reads the settings of the environment and the config file for the
/// commands to use (`config::current`). What cannot be used is said on
/// stderr: a recording warns and goes on without it, as a recorder must
/// never keep an editor's agent from running; the other commands stop
/// with exit status 2 (bad input), before they start. Commands that use no
/// setting do not read them.
fn load_config(command: &Command) -> Result<(), i32> {
    let recording = match command {
        Command::Record(_) | Command::Proxy(_) | Command::HttpProxy(_) => true,
        Command::Completions(_) | Command::Man(_) => return Ok(()),
        Command::Recorder(_) => {
            // The relay that started it has warned about what it cannot
            // use; the recorder needs the retention policy only.
            config::set_current(config::Config::load(&|k| std::env::var(k).ok()).0);
            return Ok(());
        }
        _ => false,
    };
    let (config, errors) = config::Config::load(&|k| std::env::var(k).ok());
    for e in &errors {
        if recording {
            eprintln!("acp-tee: warning: {e}; {}", e.recording_goes_on());
        } else {
            eprintln!("acp-tee: error: {e}");
        }
    }
    if !recording && !errors.is_empty() {
        return Err(2);
    }
    if recording {
        // Recorders apply the retention policy in their idle steps.
        crate::recorder::retain(config.retention().into());
    }
    config::set_current(config);
    Ok(())
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
            let protocol = a.protocol.given();
            let opts =
                WrapOptions { command: a.agent, name, db: a.store.path()?, grace: a.grace, redact, otlp, protocol };
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
            let open_path = match trace_ref::pick(a.trace, a.trace_flag) {
                None => "/".to_owned(),
                Some(r) => {
                    let store = Reader::open(&db)?;
                    format!("/traces/{}", trace_ref::resolve(&store, &r)?.id)
                }
            };
            let dist = a.dist;
            let opts = crate::server::ServeOptions {
                db,
                bind: config::current().serve_bind.or_flag(a.bind).value,
                port: config::current().serve_port.or_flag(a.port).value,
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
        Command::List(a) => list::list_command(a),
        Command::Export(a) => export_command(a),
        Command::Import(a) => import::import_command(a),
        Command::Show(a) => show::show_command(a),
        Command::Diff(a) => replay::diff_command(a),
        Command::Replay(a) => replay::replay_command(a),
        Command::Check(a) => check::check_command(a),
        Command::Doctor(a) => doctor::doctor_command(a),
        Command::Completions(a) => manual::completions_command(a),
        Command::Man(a) => manual::man_command(a),
        Command::Config(a) => settings::config_command(a),
        Command::Rm(a) => edit::rm_command(a),
        Command::Rename(a) => edit::rename_command(a),
        Command::Pin(a) => edit::pin_command(a, true),
        Command::Unpin(a) => edit::pin_command(a, false),
        Command::Prune(a) => prune::prune_command(a),
        Command::Mcp(a) => {
            crate::mcp::run(a.store.open_reader()?, !a.no_redact)?;
            Ok(0)
        }
        Command::Recorder(a) => {
            ignore_terminal_signals();
            crate::recorder::retain(config::current().retention().into());
            let otlp = recorder_otlp(&a);
            let redactor = a.redact.then(|| Redactor::new(a.redact_rule));
            let data = crate::recorder::data_pipes_from(&a.data_fds);
            crate::recorder::run(&a.db, std::io::stdin().lock(), data, redactor, a.agent_group, a.resume, otlp);
            Ok(0)
        }
    }
}

/// The live export `record` and `proxy` were asked for (by a flag, the
/// environment or the config file).
/// An endpoint the environment or the config file gave (no flag) that
/// cannot be used is warned about and left off: the recording goes on.
fn live_otlp(a: &OtlpArgs) -> anyhow::Result<Option<crate::otlp::LiveOptions>> {
    let endpoint = match a.endpoint(true) {
        Ok(endpoint) => endpoint,
        Err(e) if a.otlp_endpoint.is_none() => {
            eprintln!("acp-tee: warning: otlp: {}; recording without the live export", error_text(&e));
            None
        }
        Err(e) => return Err(e),
    };
    Ok(endpoint.map(|endpoint| crate::otlp::LiveOptions { endpoint, map: a.map_options() }))
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
    let selection = match trace_ref::pick(a.trace, a.trace_flag).unwrap_or(trace_ref::TraceRef::Latest) {
        trace_ref::TraceRef::All => TraceSelection::All,
        one if a.with_children => TraceSelection::Family(trace_ref::resolve(&store, &one)?.id),
        one => TraceSelection::Id(trace_ref::resolve(&store, &one)?.id),
    };
    for trace in export::selected_traces(&store, selection)? {
        settle(&store, trace.id, !a.no_wait, "the export holds")?;
    }
    let total: i64 = export::selected_traces(&store, selection)?.iter().map(|t| t.frame_count).sum();
    let progress = progress::bar(total as u64, "frames");
    let opts = ExportOptions { format, redactor, progress, otlp: a.otlp.map_options() };
    if let Some(endpoint) = a.otlp.endpoint(false)? {
        let url = endpoint.url.clone();
        let (summary, spans) = export::send_otlp(&store, selection, &opts, &crate::otlp::Client::new(endpoint))?;
        opts.progress.finish_and_clear();
        eprintln!("acp-tee: sent {spans} spans of {} frames to {url}", summary.frames);
        return Ok(0);
    }
    // `-o -` is standard output, as everywhere on Unix.
    let summary = match a.output.as_ref().filter(|path| path.as_os_str() != "-") {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            export::export(&store, selection, &opts, &mut std::io::BufWriter::new(file))?
        }
        None => export::export(&store, selection, &opts, &mut std::io::BufWriter::new(std::io::stdout().lock()))?,
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
/// stop it before it has stored what it was handed, nor a SIGTERM sent to
/// every process under the agent's client (acpx does so when it closes an
/// agent, as tree-killing clients do): it ends when the relay's handoff
/// does. SIGXFSZ (a file size limit reached) must not kill it either: the
/// write then fails with EFBIG, which the store writer counts like a full
/// disk.
fn ignore_terminal_signals() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
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
