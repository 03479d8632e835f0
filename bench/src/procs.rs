//! Processes under measurement: waiting with `wait4` for their resource use,
//! and sampling the peak resident memory (`VmHWM`) of a process tree.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How a waited-for child ended.
///
/// (Its `ru_maxrss` is not reported: Linux folds the peak of the process
/// that spawned it, this benchmark with its large payloads, into it at
/// `exec`, so peaks are sampled from `VmHWM` instead.)
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// The exit code, or 128 + signal.
    pub code: i32,
}

/// Waits for `child` with `wait4`, returning how it exited.
pub fn wait4(child: &mut Child) -> Result<Exit> {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            bail!("wait4 of process {pid} failed: {err}");
        }
    }
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
    Ok(Exit { code })
}

/// `VmHWM` (peak resident set) of `pid` in bytes, while it is alive.
pub fn vm_hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `VmRSS` (resident set now) of `pid` in bytes, while it is alive.
pub fn vm_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The short command name of `pid`.
fn comm(pid: u32) -> Option<String> {
    Some(std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim().to_owned())
}

/// The children of `pid` (every thread's list).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(list.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// The peak `VmHWM` seen per process of a tree, keyed by role.
pub type Peaks = BTreeMap<String, u64>;

/// CPU seconds (user + system) used so far by `pid` (all its threads);
/// `None` once it is gone.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit(')').next()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks as f64 / hz)
}

/// CPU seconds used so far, per role: `client` (this process: the bench
/// client's writer and reader), `relay` (the root), `recorder` (acp-tee's
/// recorders) and the other processes of the tree by command name (`cat`:
/// the agent, and for the cat relay its copying processes too).
pub fn cpu_by_role(root: u32) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(s) = cpu_seconds("self") {
        out.insert("client".to_owned(), s);
    }
    each_in_tree(root, |pid, role| {
        if let Some(s) = cpu_seconds(&pid.to_string()) {
            *out.entry(role).or_insert(0.0) += s;
        }
    });
    out
}

/// Calls `each` with every process of the tree under `root` and its role:
/// `relay` for the root, `recorder` for an `acp-tee __recorder`, else its
/// command name.
pub fn each_in_tree(root: u32, mut each: impl FnMut(u32, String)) {
    let mut stack = vec![(root, true)];
    while let Some((pid, is_root)) = stack.pop() {
        let role = if is_root {
            "relay".to_owned()
        } else if is_recorder(pid) {
            "recorder".to_owned()
        } else {
            comm(pid).unwrap_or_else(|| "?".into())
        };
        each(pid, role);
        stack.extend(children(pid).into_iter().map(|c| (c, false)));
    }
}

/// Samples the `VmHWM` of a process tree every few milliseconds until stopped.
/// `VmHWM` only grows, so the last sample misses at most the growth of the
/// final interval.
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    peaks: Arc<Mutex<Peaks>>,
    thread: Option<JoinHandle<()>>,
}

impl RssSampler {
    /// Starts sampling `root` and its descendants. Roles: `relay` for the
    /// root, `recorder` for a child whose command line has `__recorder`, else
    /// the command name.
    pub fn start(root: u32) -> RssSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Mutex::new(Peaks::new()));
        let (s, p) = (stop.clone(), peaks.clone());
        let thread = std::thread::spawn(move || {
            // A recorder outlives its relay (it stores what it was handed
            // after the relay exits) and is then no longer in the tree.
            let mut recorders = Vec::new();
            while !s.load(Ordering::Relaxed) {
                for pid in sample_tree(root, &p) {
                    if !recorders.contains(&pid) {
                        recorders.push(pid);
                    }
                }
                recorders.retain(|&pid| is_recorder(pid));
                for &pid in &recorders {
                    note_peak(&p, pid, "recorder".to_owned());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        RssSampler { stop, peaks, thread: Some(thread) }
    }

    /// Stops sampling and returns the peaks.
    pub fn finish(mut self) -> Peaks {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peaks.lock().expect("rss sampler lock").clone()
    }
}

/// Whether `pid` is an `acp-tee __recorder` process.
fn is_recorder(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == b"__recorder"))
}

/// Samples `root` and its descendants; returns the recorders among them.
fn sample_tree(root: u32, peaks: &Mutex<Peaks>) -> Vec<u32> {
    let mut recorders = Vec::new();
    each_in_tree(root, |pid, role| {
        if role == "recorder" {
            recorders.push(pid);
        }
        note_peak(peaks, pid, role);
    });
    recorders
}

/// Keeps `pid`'s `VmHWM` as `role`'s peak if it is the highest seen.
fn note_peak(peaks: &Mutex<Peaks>, pid: u32, role: String) {
    if let Some(hwm) = vm_hwm(pid) {
        let mut p = peaks.lock().expect("rss sampler lock");
        let e = p.entry(role).or_insert(0);
        *e = (*e).max(hwm);
    }
}

/// Mebibytes, for reports.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Finds `name` on PATH.
pub fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Reads the first line a child prints on stdout (e.g. `acp-tee serve`'s URL).
pub fn first_line(child: &mut Child) -> Result<String> {
    use std::io::BufRead;
    let out = child.stdout.take().context("the child's stdout was not piped")?;
    let mut line = String::new();
    std::io::BufReader::new(out).read_line(&mut line)?;
    Ok(line)
}
