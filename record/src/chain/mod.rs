//! Proxy-chain mode: `acp-tee proxy` as a component under the ACP conductor.
//!
//! The conductor talks to a proxy over its stdio only. Messages from the
//! client side arrive plain; messages from the agent side arrive wrapped in
//! `proxy/successor` envelopes, and everything the proxy sends toward the agent
//! must be wrapped the same way. Responses are never wrapped. `proxy/initialize`
//! stands for the client's `initialize` and goes on as `initialize`.
//! `$/cancel_request` is per hop: it is passed on under our id for the request.
//! The SDK 2.x names `_proxy/initialize` and `_proxy/successor` are accepted
//! too (and then used for what we send).
//!
//! The recorder gets the logical messages: `client_to_agent` and
//! `agent_to_client` as the client side sees them (`raw`), each with its exact
//! bytes on the successor side of the hop (`envelope`).
//!
//! Architecture Invariant: a message is handed to the recorder before it is
//! sent on, and results and errors are copied as exact text, never re-encoded.

pub mod envelope;
mod router;
#[cfg(test)]
mod tests;

#[cfg(test)]
use router::Logical;
pub use router::Router;

use crate::model::{Mode, TraceEnd, TraceStart};
use crate::relay::dup_fd;
use crate::relay::recorder_process::Recorder;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What `acp-tee proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// The trace's name (which hop this is).
    pub name: Option<String>,
    /// The store to record into.
    pub db: PathBuf,
    /// Mask secrets in what is stored (default rules plus these).
    pub redact: Option<Vec<String>>,
    /// Send spans live from the recorder (docs/otlp.md).
    pub otlp: Option<crate::otlp::LiveOptions>,
}

/// Runs the proxy until the conductor closes its stdin; returns the exit code.
pub fn run(opts: &ProxyOptions) -> i32 {
    let t0 = Instant::now();
    let started_at = crate::clock::now_rfc3339();
    let recorder = Recorder::start(&opts.db, t0, opts.redact.as_deref(), None, opts.otlp.as_ref());
    let handoff = recorder.handoff.clone();
    handoff.start(&TraceStart {
        protocol: None,
        name: opts.name.clone(),
        command: std::env::args().collect(),
        cwd: std::env::current_dir().ok().map(|p| p.display().to_string()),
        mode: Mode::Proxy.to_string(),
        started_at,
    });
    let mut recorder = recorder;
    recorder.wait_until_recording();
    let recorder = Arc::new(Mutex::new(recorder));
    stop_cleanly_on_signals(recorder.clone());

    let mut input = BufReader::with_capacity(1 << 20, dup_fd(0));
    let mut output = dup_fd(1);
    let mut router = Router::new();
    let mut line = Vec::new();
    let mut reason = "the conductor closed the proxy's input".to_owned();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                reason = format!("reading from the conductor failed: {e}");
                break;
            }
        }
        let routed = router.route(&line);
        let recorded = [Some(&routed.record), routed.reply.as_ref()]
            .into_iter()
            .flatten()
            .all(|logical| handoff.frame(logical.dir, &logical.raw, logical.envelope.as_deref()));
        if !recorded {
            // A signal ended the run (the trace is finished and we are about
            // to exit): what was not recorded is not forwarded either.
            break;
        }
        if let Some(send) = routed.send {
            if let Err(e) = output.write_all(&send) {
                reason = format!("writing to the conductor failed: {e}");
                break;
            }
        }
    }
    if router.in_flight() > 0 {
        tracing::debug!("proxy: {} requests were still in flight at the end", router.in_flight());
    }
    handoff.end(&TraceEnd { exit_code: Some(0), exit_signal: None, end_reason: reason });
    handoff.close();
    // The recorder stores the rest and ends the trace on its own (its own
    // process group); the conductor need not wait for it, and readers see
    // the trace as finishing until it is done. What it warned about so far
    // reaches our stderr.
    recorder.lock().unwrap_or_else(|e| e.into_inner()).part();
    0
}

/// The conductor stops its components with SIGTERM after closing their
/// input; finish the trace as a clean end rather than a crash.
fn stop_cleanly_on_signals(recorder: Arc<Mutex<Recorder>>) {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let handoff = recorder.lock().unwrap_or_else(|e| e.into_inner()).handoff.clone();
            handoff.end(&TraceEnd {
                exit_code: Some(0),
                exit_signal: None,
                end_reason: format!("stopped by signal {sig}"),
            });
            handoff.close();
            recorder.lock().unwrap_or_else(|e| e.into_inner()).part();
            std::process::exit(0);
        }
    });
}
