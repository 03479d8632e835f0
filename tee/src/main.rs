//! The `acp-tee` binary: logging set-up and the command line.

use tracing_subscriber::EnvFilter;

fn main() {
    // stdout is the protocol in wrap mode: every log line goes to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_env("ACP_TEE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_target(false)
        .without_time()
        .init();
    let code = acp_tee::cli::main(std::env::args_os().collect());
    std::process::exit(code);
}
