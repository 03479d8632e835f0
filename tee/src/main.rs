//! The `acp-tee` binary: logging set-up and the command line.

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// Log lines read `acp-tee: warning: ...`, like the CLI's own errors.
struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        write!(w, "acp-tee[{}]: {level}: ", std::process::id())?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

fn main() {
    // stdout is the protocol in wrap mode: every log line goes to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(EnvFilter::try_from_env("ACP_TEE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")))
        // A log line that cannot be written (stderr closed or full) is
        // dropped: never a panic, never a second attempt on stderr.
        .log_internal_errors(false)
        .event_format(Plain)
        .init();
    let code = acp_tee::main(std::env::args_os().collect());
    std::process::exit(code);
}
