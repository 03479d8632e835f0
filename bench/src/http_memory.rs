//! `acp-tee http-proxy`'s memory under many connections sending large
//! messages both ways (#31 item 6): the peak of the proxy and of its
//! recorder processes against the bounds the proxy documents
//! (`MEMORY_BYTES`, `RECORDER_BYTES`, `PEAK_BYTES`).
//!
//! The upstream is this process (plain HTTP/1.1 on 127.0.0.1): an
//! `initialize` is answered with a new `Acp-Connection-Id`, any other `POST`
//! with a JSON-RPC result as large as its body.

use crate::procs::{self, mib};
use crate::report::{f, n, Report};
use crate::Config;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Each message's size, near `HTTP_MAX_MESSAGE_BYTES`.
const MESSAGE: usize = 15 << 20;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#;

/// Reads one HTTP/1.1 message's head and `Content-Length` body; `None` at
/// the end of the stream.
fn read_message(from: &mut BufReader<TcpStream>) -> Result<Option<(String, Vec<u8>)>> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if from.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let len = header(&head, "content-length").map_or(Ok(0), |v| v.parse::<usize>())?;
    let mut body = vec![0u8; len];
    from.read_exact(&mut body)?;
    Ok(Some((head, body)))
}

/// The value of header `name` in `head`.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// Starts the upstream; its address.
fn upstream() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let next = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let next = next.clone();
            std::thread::spawn(move || -> Result<()> {
                let mut out = conn.try_clone()?;
                let mut from = BufReader::with_capacity(1 << 20, conn);
                while let Some((head, body)) = read_message(&mut from)? {
                    let answer = if header(&head, "acp-connection-id").is_some() {
                        let id: serde_json::Value = serde_json::from_slice(&body)?;
                        let pad = "y".repeat(body.len().saturating_sub(60));
                        format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{"pad":"{pad}"}}}}"#, id["id"])
                    } else {
                        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#.to_owned()
                    };
                    write!(
                        out,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: c{}\r\n\
                         Content-Length: {}\r\n\r\n",
                        next.fetch_add(1, Ordering::SeqCst),
                        answer.len()
                    )?;
                    out.write_all(answer.as_bytes())?;
                }
                Ok(())
            });
        }
    });
    Ok(addr)
}

/// Sends a `POST` on `conn` (with `id` as its connection, if any) and
/// reads the answer; fails unless it is a 200.
fn post(conn: &mut BufReader<TcpStream>, id: Option<&str>, body: &[u8]) -> Result<(String, usize)> {
    let named = id.map(|id| format!("Acp-Connection-Id: {id}\r\n")).unwrap_or_default();
    let out = conn.get_mut();
    write!(
        out,
        "POST /acp HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n{named}Content-Length: {}\r\n\r\n",
        body.len()
    )?;
    // A 503 may come (and the socket close) before all of it is sent.
    let _ = out.write_all(body);
    let (head, answer) = read_message(conn)?.context("the proxy closed the connection")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!("a POST was answered {}", head.lines().next().unwrap_or_default());
    }
    Ok((head, answer.len()))
}

/// Each process's role and peak `VmHWM`, by pid; the largest sum of
/// `VmRSS` over the tree at one time.
type TreePeaks = (BTreeMap<u32, (String, u64)>, u64);

/// Peaks of a process tree sampled every few milliseconds.
struct Sampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Mutex<TreePeaks>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start(root: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Mutex::new((BTreeMap::new(), 0)));
        let (s, p) = (stop.clone(), peaks.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let mut now = 0;
                let mut seen = Vec::new();
                procs::each_in_tree(root, |pid, role| {
                    now += procs::vm_rss(pid).unwrap_or(0);
                    seen.push((pid, role, procs::vm_hwm(pid).unwrap_or(0)));
                });
                let mut p = p.lock().expect("sampler lock");
                for (pid, role, hwm) in seen {
                    // The role as last seen: between fork and exec a
                    // recorder still shows the proxy's command line.
                    let e = p.0.entry(pid).or_insert((String::new(), 0));
                    e.0 = role;
                    e.1 = e.1.max(hwm);
                }
                p.1 = p.1.max(now);
                drop(p);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Sampler { stop, peaks, thread: Some(thread) }
    }

    fn finish(mut self) -> TreePeaks {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peaks.lock().expect("sampler lock").clone()
    }
}

/// Messages stored in `db` (requests and responses).
fn stored(db: &std::path::Path) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return 0;
    };
    conn.query_row("SELECT count(*) FROM frames WHERE kind IN ('request', 'response')", [], |r| r.get(0)).unwrap_or(0)
}

/// The section.
pub fn section(cfg: &Config, report: &mut Report) -> Result<()> {
    report.say("## 9. http-proxy memory\n");
    let (connections, messages) = if cfg.quick { (4, 1) } else { (32, 3) };
    report.say(&format!(
        "`acp-tee http-proxy` in front of an upstream of this process; {connections} connections at once, each \
         sending {messages} messages of {} MiB and getting an answer as large to each (both ways through the \
         proxy and into one recorder process per connection). Peaks sampled every 5 ms: each process's `VmHWM`, \
         and the largest sum of `VmRSS` over the proxy and its recorders at one time. Bounds: `MEMORY_BYTES` \
         for the proxy and `RECORDER_BYTES` for each recorder, beyond what each held once every connection had \
         begun; `PEAK_BYTES` for all together.\n",
        MESSAGE >> 20
    ));
    let upstream = upstream()?;
    let db = cfg.work.join("http-proxy.db");
    let mut proxy = Command::new(&cfg.acp_tee)
        .args(["http-proxy", "--listen", "127.0.0.1:0", "--upstream", &format!("http://{upstream}/acp"), "--db"])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start acp-tee http-proxy")?;
    let line = procs::first_line(&mut proxy)?;
    let to: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .with_context(|| format!("acp-tee http-proxy printed no address: {line:?}"))?;
    let sampler = Sampler::start(proxy.id());
    let result = (|| -> Result<_> {
        let mut ids = Vec::new();
        for _ in 0..connections {
            let mut conn = BufReader::new(TcpStream::connect(to)?);
            let (head, _) = post(&mut conn, None, INITIALIZE.as_bytes())?;
            ids.push(header(&head, "acp-connection-id").context("the initialize named no connection")?);
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while stored(&db) < 2 * connections as i64 {
            if Instant::now() > deadline {
                bail!("the initializes were not stored within 120 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // What each process holds once every connection has begun.
        let mut base = BTreeMap::new();
        procs::each_in_tree(proxy.id(), |pid, role| {
            base.insert(pid, (role, procs::vm_hwm(pid).unwrap_or(0)));
        });
        let started = Instant::now();
        let pad = Arc::new("x".repeat(MESSAGE - 80));
        let clients: Vec<_> = ids
            .into_iter()
            .map(|id| {
                let pad = pad.clone();
                std::thread::spawn(move || -> Result<()> {
                    for i in 1..=messages {
                        let body =
                            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"x/big","params":{{"pad":"{pad}"}}}}"#);
                        // A 503 says "try again" (no room within BODY_DEADLINE): so it does.
                        let mut tries = 0;
                        let answer = loop {
                            let mut conn = BufReader::with_capacity(1 << 20, TcpStream::connect(to)?);
                            match post(&mut conn, Some(&id), body.as_bytes()) {
                                Ok((_, answer)) => break answer,
                                Err(e) if e.to_string().contains(" 503 ") && tries < 20 => tries += 1,
                                Err(e) => return Err(e),
                            }
                        };
                        if answer < MESSAGE - 200 {
                            bail!("an answer of {answer} bytes");
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for client in clients {
            client.join().map_err(|_| anyhow::anyhow!("a client panicked"))??;
        }
        let want = (2 * (1 + messages) * connections) as i64;
        let deadline = Instant::now() + Duration::from_secs(600);
        while stored(&db) < want {
            if Instant::now() > deadline {
                bail!("LOSS: {} of {want} messages stored within 600 s", stored(&db));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok((base, started.elapsed()))
    })();
    let (peaks, total_peak) = sampler.finish();
    // SAFETY: kill has no memory-safety preconditions; the proxy is our child.
    unsafe { libc::kill(proxy.id() as libc::pid_t, libc::SIGTERM) };
    let _ = proxy.wait();
    let (base, took) = result?;
    let base_of = |role: &str| base.values().filter(|(r, _)| r == role).map(|(_, b)| *b).max().unwrap_or(0);
    let peaks_of = |role: &str| peaks.values().filter(|(r, _)| r == role).map(|(_, p)| *p).collect::<Vec<_>>();
    let (proxy_base, recorder_base) = (base_of("relay"), base_of("recorder"));
    let proxy_peak = peaks_of("relay").into_iter().max().unwrap_or(0);
    let recorders = peaks_of("recorder");
    let recorder_peak = recorders.iter().copied().max().unwrap_or(0);
    let hwm_sum = proxy_peak + recorders.iter().sum::<u64>();
    let mb = |b: u64| f(mib(b), 0);
    report.table(
        &["what", "peak MiB", "at start MiB", "bound MiB (above start)"],
        &[
            vec!["proxy VmHWM".into(), mb(proxy_peak), mb(proxy_base), mb(acp_tee::HTTP_MEMORY_BYTES as u64)],
            vec![
                format!("largest of {} recorders' VmHWM", n(recorders.len() as u64)),
                mb(recorder_peak),
                mb(recorder_base),
                mb(acp_tee::HTTP_RECORDER_BYTES as u64),
            ],
            vec!["proxy + recorders, sum of VmHWM".into(), mb(hwm_sum), String::new(), String::new()],
            vec!["proxy + recorders, VmRSS at once".into(), mb(total_peak), String::new(), String::new()],
        ],
    );
    let ok_proxy = proxy_peak <= proxy_base + acp_tee::HTTP_MEMORY_BYTES as u64;
    let ok_recorders = recorder_peak <= recorder_base + acp_tee::HTTP_RECORDER_BYTES as u64;
    let v = report.verdict("http-proxy within MEMORY_BYTES and RECORDER_BYTES", ok_proxy && ok_recorders);
    report.say(&format!(
        "{} messages each way in {} s. Target: the proxy within `MEMORY_BYTES` and each recorder within \
         `RECORDER_BYTES` of what it held at start (`PEAK_BYTES`, {} MiB with `MAX_CONNECTIONS` recorders, \
         for all together): {v}\n",
        n((messages * connections) as u64),
        f(took.as_secs_f64(), 1),
        mb(acp_tee::HTTP_PEAK_BYTES as u64)
    ));
    Ok(())
}
