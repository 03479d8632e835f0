//! Large, realistic traces for the server, viewer and export benchmarks,
//! recorded by the real `acp-tee` around a small answering agent (this binary
//! run as `acp-tee-bench __agent`).
//!
//! Request `i` (from 1) has a method picked by `i % 10` (8 in 10 are
//! `session/prompt`, then `session/set_mode`, `session/new`, `session/load`),
//! a session `sess-{i / 1000}` (one after another), or with `concurrent`
//! sessions `sess-{i % concurrent}` (all at once, interleaved); a prompt is answered with two `session/update`
//! notifications and then its response; every 41st request gets an error
//! response; every 100th writes one line to stderr. The client keeps 64
//! requests in flight, so latencies are those of a busy pipeline (tens of
//! microseconds to milliseconds).

use crate::procs;
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Requests written before their answers are read.
const IN_FLIGHT: u64 = 64;

/// A word that occurs in one prompt answer in 997: something to search for.
pub const RARE_WORD: &str = "zebra";

fn method(i: u64) -> &'static str {
    match i % 10 {
        0..=7 => "session/prompt",
        8 => "session/set_mode",
        _ if i % 20 == 9 => "session/new",
        _ => "session/load",
    }
}

/// Lines the agent writes to stdout for request `i`.
fn answers(i: u64) -> u64 {
    if method(i) == "session/prompt" {
        3
    } else {
        1
    }
}

/// Frames request `i` makes: itself, its answers and maybe a stderr line.
fn frames(i: u64) -> u64 {
    1 + answers(i) + u64::from(i.is_multiple_of(100))
}

/// How requests are spread over sessions.
#[derive(Debug, Clone, Copy)]
pub enum Sessions {
    /// `sess-{i / 1000}`: one after another.
    InTurn,
    /// `sess-{i % N}`: N sessions at once.
    Concurrent(u64),
}

fn request(i: u64, sessions: Sessions) -> String {
    let m = method(i);
    let session = match sessions {
        Sessions::InTurn => format!("sess-{}", i / 1000),
        Sessions::Concurrent(n) => format!("sess-{}", i % n),
    };
    match m {
        "session/prompt" => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"{m}","params":{{"sessionId":"{session}","prompt":[{{"type":"text","text":"please refactor module {i} and explain the change"}}]}}}}"#
        ),
        "session/new" => {
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"{m}","params":{{"cwd":"/work","mcpServers":[]}}}}"#)
        }
        _ => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"{m}","params":{{"sessionId":"{session}","modeId":"code"}}}}"#
        ),
    }
}

/// The agent: answers every request line on stdin until end-of-file.
pub fn agent() -> Result<()> {
    let stdin = std::io::stdin();
    let mut input = BufReader::with_capacity(1 << 16, stdin.lock());
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut line = String::new();
    while input.read_line(&mut line)? > 0 {
        let msg: serde_json::Value = serde_json::from_str(&line).context("the agent got a line that is not JSON")?;
        let id = msg["id"].as_u64().context("the agent got a request without a numeric id")?;
        let m = msg["method"].as_str().unwrap_or_default();
        let session = msg["params"]["sessionId"].as_str().unwrap_or("sess-new");
        if m == "session/prompt" {
            for part in 0..2 {
                let word = if id.is_multiple_of(997) && part == 1 { RARE_WORD } else { "fox" };
                writeln!(
                    out,
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"part {part} of the answer to {id}: the quick brown {word} jumps"}}}}}}}}"#
                )?;
            }
        }
        if id.is_multiple_of(41) {
            writeln!(
                out,
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"internal error: tool {id} failed"}}}}"#
            )?;
        } else if m == "session/prompt" {
            writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stopReason":"end_turn"}}}}"#)?;
        } else {
            writeln!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"{session}"}}}}"#)?;
        }
        if id.is_multiple_of(100) {
            eprintln!("agent: handled request {id} ({m})");
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
        line.clear();
    }
    out.flush()?;
    Ok(())
}

/// A trace recorded by [`generate`].
#[derive(Debug, Clone, Copy)]
pub struct Generated {
    /// Its id in the store.
    pub trace_id: i64,
    /// Frames stored (checked against what was sent).
    pub frames: u64,
    /// First request written to acp-tee's exit (trace ended).
    pub took: Duration,
    /// When the trace was seen ended.
    pub ended: Instant,
    /// `session/prompt` requests sent: the turns of its sessions.
    pub prompts: u64,
}

/// Records a trace of at least `target` frames into `db` with `acp_tee`,
/// named `name`, its requests spread over sessions as `sessions` says;
/// fails unless every frame is stored.
pub fn generate(acp_tee: &Path, db: &Path, name: &str, target: u64, sessions: Sessions) -> Result<Generated> {
    let me = std::env::current_exe().context("cannot find the bench binary itself")?;
    let mut child = Command::new(acp_tee)
        .arg("--db")
        .arg(db)
        .args(["--name", name, "--"])
        .arg(me)
        .arg("__agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start acp-tee")?;
    let mut stdin = BufWriter::with_capacity(1 << 16, child.stdin.take().context("stdin")?);
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().context("stdout")?);
    let t0 = Instant::now();
    let (mut i, mut expected, mut line) = (0u64, 0u64, Vec::new());
    while expected < target {
        let mut lines_back = 0;
        for _ in 0..IN_FLIGHT {
            if expected >= target {
                break;
            }
            i += 1;
            writeln!(stdin, "{}", request(i, sessions))?;
            expected += frames(i);
            lines_back += answers(i);
        }
        stdin.flush()?;
        for _ in 0..lines_back {
            line.clear();
            if stdout.read_until(b'\n', &mut line)? == 0 {
                bail!("acp-tee closed its stdout after {i} requests");
            }
        }
    }
    drop(stdin);
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest)?;
    let exit = procs::wait4(&mut child)?;
    crate::relay::wait_trace_end(db, Some(name))?;
    let ended = Instant::now();
    let took = ended - t0;
    if exit.code != 0 || !rest.is_empty() {
        bail!("acp-tee exited with {} after {} unexpected bytes", exit.code, rest.len());
    }
    let conn = rusqlite::Connection::open(db)?;
    let (trace_id, frame_count, missing): (i64, i64, i64) = conn.query_row(
        "SELECT id, frame_count, missing_frames FROM traces WHERE name = ?1 ORDER BY id DESC LIMIT 1",
        [name],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    if frame_count as u64 != expected || missing != 0 {
        bail!("LOSS: trace {name} stored {frame_count} frames ({missing} missing), expected {expected}");
    }
    Ok(Generated {
        trace_id,
        frames: expected,
        took,
        ended,
        prompts: (1..=i).filter(|&i| method(i) == "session/prompt").count() as u64,
    })
}
