//! `acp-tee serve` under measurement: timed API requests on a large trace, and
//! live push from a line written into a recording acp-tee to the SSE event
//! that carries it.

use crate::procs;
use crate::stats::{ms, Percentiles};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `acp-tee serve` on a free port; stopped when dropped.
pub struct Server {
    child: Child,
    /// Its base URL, without a trailing slash.
    pub url: String,
}

impl Server {
    /// Starts `acp-tee serve` on `db`, serving the app from `dist`.
    pub fn start(acp_tee: &Path, db: &Path, dist: &Path) -> Result<Server> {
        let mut child = Command::new(acp_tee)
            .args(["serve", "--port", "0", "--db"])
            .arg(db)
            .arg("--dist")
            .arg(dist)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start acp-tee serve")?;
        let line = procs::first_line(&mut child)?;
        let url = line
            .split(" at ")
            .nth(1)
            .with_context(|| format!("acp-tee serve printed no URL: {line:?}"))?
            .trim()
            .trim_end_matches('/')
            .to_owned();
        Ok(Server { child, url })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GETs `url` and returns the body; fails on any status but 200.
pub fn get(url: &str) -> Result<String> {
    match ureq::get(url).timeout(Duration::from_secs(120)).call() {
        Ok(r) => Ok(r.into_string()?),
        Err(ureq::Error::Status(code, r)) => bail!("GET {url}: {code}: {}", r.into_string().unwrap_or_default()),
        Err(e) => bail!("GET {url}: {e}"),
    }
}

/// Timings of one API request.
#[derive(Debug, Clone)]
pub struct Timed {
    /// The first request, in ms (caches cold as far as the server goes; the
    /// OS page cache holds the store since it was just written).
    pub first_ms: f64,
    /// The repeated requests after it, in ms.
    pub warm: Percentiles,
    /// Bytes of the answer.
    pub body_bytes: usize,
    /// Frames in the answer (frame pages), or `None`.
    pub frames: Option<usize>,
}

/// Times `reps + 1` GETs of `path` on `server`; the first is reported apart.
pub fn time_get(server: &Server, path: &str, reps: usize) -> Result<Timed> {
    let url = format!("{}{path}", server.url);
    let mut samples = Vec::with_capacity(reps);
    let mut first_ms = 0.0;
    let mut body = String::new();
    for rep in 0..=reps {
        let t = Instant::now();
        body = get(&url)?;
        let took = ms(t.elapsed());
        if rep == 0 {
            first_ms = took;
        } else {
            samples.push(took);
        }
    }
    let json: serde_json::Value = serde_json::from_str(&body).with_context(|| format!("GET {url}: not JSON"))?;
    let frames = json.get("frames").and_then(|f| f.as_array()).map(Vec::len);
    Ok(Timed { first_ms, warm: Percentiles::of(&samples), body_bytes: body.len(), frames })
}

/// Live push latencies in ms: from a line written into a recording acp-tee
/// (agent `cat`) to the SSE `frames` event of `/api/traces/N/live` that
/// carries it. Paced 10..30 ms apart so that pushes land at every phase of
/// the server's 15 ms change watch.
pub fn live_push(acp_tee: &Path, dir: &Path, dist: &Path, count: u64) -> Result<Percentiles> {
    std::fs::create_dir_all(dir)?;
    let db = dir.join("live.db");
    let mut tee = Command::new(acp_tee)
        .arg("--db")
        .arg(&db)
        .args(["--name", "live", "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start acp-tee")?;
    let mut stdin = tee.stdin.take().context("stdin")?;
    let mut echo = BufReader::new(tee.stdout.take().context("stdout")?);
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"bench/live-start\",\"params\":{}}\n")?;
    let mut first = String::new();
    echo.read_line(&mut first)?;
    let drain = std::thread::spawn(move || std::io::copy(&mut echo, &mut std::io::sink()));
    let trace_id = wait_for_trace(&db)?;
    let server = Server::start(acp_tee, &db, dist)?;

    let (tx, rx) = mpsc::channel::<(u64, Instant)>();
    let live_url = format!("{}/api/traces/{trace_id}/live?after=0", server.url);
    let stream = ureq::get(&live_url).call().with_context(|| format!("GET {live_url}"))?.into_reader();
    std::thread::spawn(move || watch_events(stream, tx));

    let mut samples = Vec::with_capacity(count as usize);
    for k in 0..count {
        std::thread::sleep(Duration::from_millis(10 + (k * 7) % 20));
        let t = Instant::now();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"bench/live-{k}","params":{{}}}}"#)?;
        stdin.flush()?;
        loop {
            let (got, at) =
                rx.recv_timeout(Duration::from_secs(10)).with_context(|| format!("live push {k} never arrived"))?;
            if got == k {
                samples.push(ms(at.duration_since(t)));
                break;
            }
        }
    }
    drop(stdin);
    let exit = procs::wait4(&mut tee)?;
    let _ = drain.join();
    if exit.code != 0 {
        bail!("acp-tee exited with {}", exit.code);
    }
    drop(server);
    Ok(Percentiles::of(&samples))
}

/// Waits (up to 10 s) for the recorder to create the trace; returns its id.
fn wait_for_trace(db: &Path) -> Result<i64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if db.exists() {
            let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
            let id: Option<i64> = conn.query_row("SELECT max(id) FROM traces", [], |r| r.get(0)).unwrap_or(None);
            if let Some(id) = id {
                return Ok(id);
            }
        }
        if Instant::now() > deadline {
            bail!("the recorder did not create a trace in {} within 10 s", db.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reads SSE lines and reports, once each, every `bench/live-K` seen in data.
fn watch_events(stream: impl Read, tx: mpsc::Sender<(u64, Instant)>) {
    let mut seen = std::collections::HashSet::new();
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let at = Instant::now();
        if !line.starts_with("data:") {
            continue;
        }
        for part in line.split("bench/live-").skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(k) = digits.parse::<u64>() {
                if seen.insert(k) && tx.send((k, at)).is_err() {
                    return;
                }
            }
        }
    }
}
