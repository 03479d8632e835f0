//! Helpers shared by the integration tests: running the real `acp-tee` binary
//! and reading back the real SQLite store it wrote.
#![allow(dead_code)]

pub mod webdriver;

use acp_tee::{Store, StoredFrame};
use acp_tee_shared::{Direction, TraceMeta};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Every acp-tee the tests start inherits this process's environment, so
/// the user's config file and `ACP_TEE_DB`, `ACP_TEE_REDACT`, ... must not
/// be in it: this runs before `main` (one thread then, nothing reading the
/// environment), removes the variables of the settings and points
/// `ACP_TEE_CONFIG` at an empty file. A test of the settings sets its own
/// on the command it starts.
#[used]
#[link_section = ".init_array"]
static ISOLATE_FROM_USER_CONFIG: extern "C" fn() = isolate_from_user_config;

extern "C" fn isolate_from_user_config() {
    // SAFETY: before main, no other thread exists to read the environment.
    unsafe {
        for var in acp_tee::CONFIG_ENV_VARS {
            std::env::remove_var(var);
        }
        std::env::set_var("ACP_TEE_CONFIG", "/dev/null");
    }
}

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_acp-tee")
}

/// A temporary directory holding a store path (not yet created).
pub struct TempStore {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl TempStore {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("traces.db");
        TempStore { dir, db }
    }

    /// Opens the store the test recorded into and runs the maintenance step
    /// `acp-tee list` runs before it reads (traces whose recorder is gone
    /// are ended as cut off).
    pub fn open(&self) -> Store {
        let mut store = Store::open_existing(&self.db).expect("open the store the test recorded into");
        store.maintain(0).expect("maintain the store");
        store
    }

    /// Waits until `count` traces exist and all have ended (the recorder is a
    /// separate process that may still be committing), then returns them,
    /// oldest first.
    pub fn ended_traces(&self, count: usize) -> Vec<TraceMeta> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.db.exists() {
                let mut traces = self.open().list_traces().expect("list traces");
                if traces.len() >= count && traces.iter().all(|t| t.ended_at.is_some()) {
                    traces.reverse();
                    return traces;
                }
            }
            assert!(Instant::now() < deadline, "traces did not end within 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The one trace, once ended.
    pub fn only_trace(&self) -> TraceMeta {
        let traces = self.ended_traces(1);
        assert_eq!(traces.len(), 1, "expected exactly one trace");
        traces.into_iter().next().unwrap()
    }

    pub fn frames(&self, trace_id: i64) -> Vec<StoredFrame> {
        let mut out = Vec::new();
        self.open()
            .for_each_frame(trace_id, |f| -> Result<(), acp_tee::StoreError> {
                out.push(f);
                Ok(())
            })
            .unwrap();
        out
    }

    /// The stored bytes of one direction, concatenated.
    pub fn stream(&self, trace_id: i64, dir: Direction) -> Vec<u8> {
        self.frames(trace_id).into_iter().filter(|f| f.dir == dir).flat_map(|f| f.raw).collect()
    }
}

/// `acp-tee --db DB [extra...] -- agent...` with piped stdio.
pub fn tee_command(db: &Path, extra: &[&str], agent: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--db").arg(db).args(extra).arg("--").args(agent);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Runs `cmd`, feeding `input` on stdin (then closing it) while collecting output.
pub fn run_with_input(mut cmd: Command, input: Vec<u8>) -> Output {
    let mut child = cmd.spawn().expect("spawn acp-tee");
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait for acp-tee");
    feeder.join().unwrap();
    out
}

/// Reads exactly `n` bytes from the child's stdout.
pub fn read_exact_from(child: &mut Child, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    child.stdout.as_mut().unwrap().read_exact(&mut buf).expect("read from acp-tee");
    buf
}

/// True while `pid` is a live (not zombie) process (the store's own check).
pub fn process_alive(pid: u32) -> bool {
    acp_tee::process_exists(pid as i64)
}

/// Waits up to 10 s until every thread of `pid` is gone (a killed process
/// whose main thread is a zombie may have others still exiting, holding its
/// descriptors open).
pub fn wait_all_threads_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0);
        if !process_alive(pid) && threads <= 1 {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits up to 10 s for `pid` to be gone.
pub fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// A shell agent script: `sh -c SCRIPT`.
pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

pub fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Sends `sig` to `pid`.
pub fn kill(pid: u32, sig: i32) {
    let status = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().unwrap();
    assert!(status.success(), "kill -{sig} {pid}");
}

/// The path of a real peer program on PATH; panics with the install command
/// when it is missing (the tests never skip silently).
pub fn peer(name: &str) -> String {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    // What scripts/install-tools calls the tool that provides `name`.
    let tool = match name {
        "agent-client-protocol-conductor" => "conductor",
        "agent-client-protocol-trace-viewer" => "trace-viewer",
        "chromedriver" => "chromium",
        other => other,
    };
    match found {
        Some(p) => p.display().to_string(),
        None => panic!(
            "`{name}` is not on PATH: this test runs it for real; install it with \
             `scripts/install-tools {tool}` (or every tool the tests use: `scripts/install-tools tests`)"
        ),
    }
}

/// Where `scripts/install-tools` puts the peers that are not crates:
/// `$ACP_TEE_PEERS`, by default `~/.cache/acp-tee-peers`.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("ACP_TEE_PEERS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/acp-tee-peers"),
    }
}

/// The path of a peer that `scripts/install-tools TOOL` installs under
/// [`peers_dir`] (`relative` inside it); panics with the install command
/// when it is missing (the tests never skip silently).
pub fn installed_peer(relative: &str, tool: &str) -> String {
    let path = peers_dir().join(relative);
    assert!(
        path.is_file(),
        "`{}` is missing: this test runs it for real; install it with `scripts/install-tools {tool}` \
         (or every tool the tests use: `scripts/install-tools tests`)",
        path.display()
    );
    path.display().to_string()
}

/// The Python of the venv that holds the official Python ACP SDK
/// (`agent-client-protocol` from PyPI).
pub fn python_acp() -> String {
    installed_peer("venv/bin/python", "python-acp")
}

/// The Python of the venv that holds the official Python MCP SDK (`mcp`
/// from PyPI).
pub fn python_mcp() -> String {
    installed_peer("mcp-venv/bin/python", "python-mcp")
}

/// The acpx client (npm `acpx`).
pub fn acpx() -> String {
    installed_peer("node_modules/.bin/acpx", "acpx")
}

/// Parses an `acp-tee export` of one trace and returns its frames.
pub fn exported_frames(db: &Path, trace_id: i64) -> Vec<serde_json::Value> {
    let out = Command::new(bin())
        .args(["export", "--db", db.to_str().unwrap(), "--trace", &trace_id.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["format"], "acp-tee-trace");
    doc["traces"][0]["frames"].as_array().unwrap().clone()
}

/// Checks that `method` was requested client to agent and answered agent to
/// client, with the pairing and latency filled in.
pub fn assert_paired(frames: &[serde_json::Value], method: &str) {
    let req = frames
        .iter()
        .find(|f| f["kind"] == "request" && f["method"] == method)
        .unwrap_or_else(|| panic!("no {method} request"));
    assert_eq!(req["dir"], "client_to_agent", "{method}");
    let resp =
        frames.iter().find(|f| f["reply_to_seq"] == req["seq"]).unwrap_or_else(|| panic!("no response to {method}"));
    assert_eq!(resp["dir"], "agent_to_client");
    assert_eq!(resp["kind"], "response");
    assert_eq!(resp["id"], req["id"]);
    assert_eq!(resp["method"], method);
    let latency = resp["latency_ns"].as_i64().unwrap();
    assert!(latency > 0);
    assert_eq!(latency, resp["t_ns"].as_i64().unwrap() - req["t_ns"].as_i64().unwrap());
}

/// Kills every process named `comm` that has `ACP_TEE_TEST_MARK=marker` in its
/// environment (what a killed conductor left behind: it does not stop its
/// agent when it is SIGKILLed). Returns how many there were.
pub fn kill_marked(marker: &str, comm: &str) -> usize {
    let needle = format!("ACP_TEE_TEST_MARK={marker}");
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id() && process_alive(pid))
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect();
    for &pid in &pids {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    pids.len()
}

/// A marker unique to this test process and this call (every module's tests
/// share the one process, so a tag alone could repeat).
pub fn unique_marker(tag: &str) -> String {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{call}-{tag}", std::process::id())
}

/// Waits up to `limit` for `child` to exit; on timeout kills it and returns
/// `None` (the caller fails the test: the run hung).
pub fn wait_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads `from` to its end on a thread; the receiver gets the bytes and the
/// moment end-of-file came.
pub fn read_to_end_on_thread(mut from: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<(Vec<u8>, Instant)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = from.read_to_end(&mut out);
        let _ = tx.send((out, Instant::now()));
    });
    rx
}

/// The pid written into file `name` under `dir`, once it is there.
pub fn pid_from_file(dir: &Path, name: &str) -> u32 {
    let path = dir.join(name);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(Instant::now() < deadline, "{} was never written", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Resumes a process stopped with SIGSTOP, if it is still there (the kernel
/// resumes a stopped recorder itself once its relay exits: its process
/// group is then orphaned).
pub fn resume(pid: u32) {
    // SAFETY: kill(2) on a pid the test started.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
}

/// Kills `pid` (SIGKILL) if it is still there; for clean-up after a test.
pub fn kill_if_alive(pid: u32) {
    if process_alive(pid) {
        // SAFETY: kill(2) on a pid the test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}

/// The acp-tee recorder process started by `parent`.
pub fn recorder_of(parent: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = recorders_of(parent).first() {
            return *pid;
        }
        assert!(Instant::now() < deadline, "no recorder process under {parent}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The live acp-tee recorder processes whose parent is `parent`.
pub fn recorders_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let after_comm = stat.rsplit(')').next().unwrap_or_default();
        let mut fields = after_comm.split_whitespace();
        let state = fields.next().unwrap_or_default();
        let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == parent && state != "Z" && cmdline.windows(10).any(|w| w == b"__recorder") {
            found.push(pid);
        }
    }
    found
}

/// What descriptor `fd` of process `pid` refers to (`pipe:[123]`, a path, ...).
pub fn fd_target(pid: u32, fd: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok().map(|p| p.display().to_string())
}

impl TempStore {
    /// Waits until the store's first trace holds at least `count` frames.
    pub fn wait_for_frames(&self, count: i64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.db.exists() {
                if let Ok(store) = Store::open_existing(&self.db) {
                    if store.list_traces().ok().and_then(|t| t.last().map(|t| t.frame_count)) >= Some(count) {
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "the store never held {count} frames");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `acp-tee serve` on 127.0.0.1, any free port; killed when dropped.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub url: String,
}

impl Served {
    /// Serves the store `db` with `extra` arguments.
    pub fn start(db: &Path, extra: &[&str]) -> Served {
        let mut child = Command::new(bin())
            .args(["serve", "--db", db.to_str().unwrap(), "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        let url = line.trim().split(" at ").nth(1).unwrap_or_else(|| panic!("serve printed no URL: {line:?}"));
        let url = url.split("/traces").next().unwrap().trim_end_matches('/').to_owned();
        Served { child, url }
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path` as JSON of type `T`.
    pub fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        ureq::get(&format!("{}{path}", self.url)).call().unwrap().into_json().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The longest line an import reads (`acp_tee::MAX_LINE_BYTES`).
pub const MAX_LINE: u64 = 256 << 20;

/// What `run_bounded` saw.
pub struct Bounded {
    /// The exit code, or `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stderr: String,
    /// Peak resident memory, KiB.
    pub peak_kib: i64,
}

/// Runs `acp-tee ARGS` with its address space limited to `limit` bytes, so a
/// runaway allocation fails instead of taking the machine's memory, and with
/// `feed` writing its stdin when given. Returns its exit, stderr and peak RSS
/// (see [`PeakRss`]).
pub fn run_bounded(args: &[&str], limit: u64, feed: Option<fn(std::process::ChildStdin)>) -> Bounded {
    use std::io::Read;
    let (mut cmd, peak) = PeakRss::command(bin(), Some(limit));
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd.stdin(if feed.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().unwrap();
    let feeder = feed.zip(child.stdin.take()).map(|(f, stdin)| std::thread::spawn(move || f(stdin)));
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let status = child.wait().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    Bounded { code: status.code(), stderr: reader.join().unwrap(), peak_kib: peak.kib() }
}

/// Forks `argv` from this small Python process (not from the test process)
/// with SIGPIPE and SIGXFSZ back at their defaults and its address space
/// limited when `limit` is not 0; writes its `ru_maxrss` (KiB) to `out`, then
/// ends as it ended (its exit code, or the same signal).
const PEAK_RSS_PY: &str = r#"
import os, resource, signal, sys
out, limit, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
pid = os.fork()
if pid == 0:
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.execv(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
"#;

/// The peak resident memory of one process, its own: what `wait4` says for
/// a process forked from a small parent. (A process this test process
/// starts directly inherits this process's peak in its `ru_maxrss`: with
/// `posix_spawn`'s vfork the whole high-water mark of this process, with
/// fork its resident size then; and this process runs every integration
/// test. The parent used here is Python: its resident size at the fork,
/// about 10 MiB, is the least a figure can be.)
pub struct PeakRss {
    out: tempfile::TempDir,
}

impl PeakRss {
    /// A command that runs `program` (add its arguments and stdio) with its
    /// address space limited to `limit` bytes when given, and the figure
    /// to read once it has ended.
    pub fn command(program: &str, limit: Option<u64>) -> (Command, PeakRss) {
        let out = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(python_acp());
        cmd.args(["-c", PEAK_RSS_PY]).arg(out.path().join("maxrss")).arg(limit.unwrap_or(0).to_string()).arg(program);
        (cmd, PeakRss { out })
    }

    /// The peak, KiB; call after the command has ended.
    pub fn kib(&self) -> i64 {
        let path = self.out.path().join("maxrss");
        let text = std::fs::read_to_string(&path).expect("the peak RSS of a process that has ended");
        text.trim().parse().unwrap()
    }
}
