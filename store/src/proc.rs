//! Small facts about processes and threads, read from the kernel.

/// How much lower than the relay the recorder's framer, store writer and
/// checkpointer, and the server's background search indexing, run (`nice`
/// steps): traffic is forwarded first, recording catches up when the CPU is
/// free.
const BACKGROUND_NICENESS: libc::c_int = 10;

/// Whether process `pid` is still running. A zombie is not: its process has
/// ended and only waits to be reaped (which may never happen in a container
/// whose init does not reap orphans).
pub fn process_exists(pid: i64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
        return !matches!(state, Some("Z") | Some("X"));
    }
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// Lowers the calling thread's scheduling priority by [`BACKGROUND_NICENESS`].
pub fn lower_priority() {
    // SAFETY: gettid and setpriority on the calling thread only; failure
    // leaves the priority as it was.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (now + BACKGROUND_NICENESS).min(19));
    }
}

/// One command-line argument `--NAME=VALUE` for a process we start, so that
/// a value beginning with `-` (a store named `-x.db`, a trace named
/// `--help`) is read as the value it is, never as an option.
pub fn option_arg(name: &str, value: impl AsRef<std::ffi::OsStr>) -> std::ffi::OsString {
    let mut arg = std::ffi::OsString::from(format!("--{name}="));
    arg.push(value.as_ref());
    arg
}

/// How many ancestors [`ancestry`] follows at most.
pub const ANCESTORS_MAX: usize = 32;

/// Process `pid` as `BOOT:PID:START`: the kernel's boot id, the pid and its
/// start time in clock ticks since boot, which no later process with the
/// same pid shares. `None` when /proc does not tell (the process is gone).
pub fn process_key(pid: u32) -> Option<String> {
    let (_, start) = stat_fields(pid)?;
    Some(key(&boot_id(), pid, start))
}

/// The parent of process `pid`, unless that is init (or `pid` is gone).
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid).map(|(parent, _)| parent).filter(|&p| p > 1)
}

fn key(boot: &str, pid: u32, start: u64) -> String {
    format!("{boot}:{pid}:{start}")
}

/// The keys ([`process_key`]) of process `pid`'s parent, its parent and so
/// on, nearest first, up to and including the first acp-tee among them (at
/// most [`ANCESTORS_MAX`]; init is left out); and whether an acp-tee ended
/// the chain.
pub fn ancestry(pid: u32) -> (Vec<String>, bool) {
    let boot = boot_id();
    let mut keys = Vec::new();
    // Each process's stat gives its start (for its key) and its parent
    // (the next step): one read per ancestor.
    let mut next = parent_of(pid);
    while let Some(at) = next.filter(|_| keys.len() < ANCESTORS_MAX) {
        let Some((parent, start)) = stat_fields(at) else { break };
        keys.push(key(&boot, at, start));
        if is_acp_tee(at) {
            return (keys, true);
        }
        next = Some(parent).filter(|&p| p > 1);
    }
    (keys, false)
}

/// Whether process `pid` runs acp-tee: its program is this one, or a file
/// named `acp-tee…` (another build or install), or, where its program
/// cannot be read (another user's process), its name is.
fn is_acp_tee(pid: u32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let named = |name: &str| name.starts_with("acp-tee");
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(exe) => {
            let same = |a: &std::path::Path, b: &str| match (std::fs::metadata(a), std::fs::metadata(b)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            exe.file_name().and_then(|n| n.to_str()).is_some_and(named) || same(&exe, "/proc/self/exe")
        }
        Err(_) => std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| named(c.trim_end())),
    }
}

/// Process `pid`'s parent and start time (clock ticks since boot), from
/// /proc/PID/stat.
fn stat_fields(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the parenthesised command name (which may hold anything): the
    // state is field 3, the parent field 4, the start time field 22.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((rest.get(1)?.parse().ok()?, rest.get(19)?.parse().ok()?))
}

/// The kernel's id of this boot, or `-` where it cannot be read.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_key_names_the_process_and_its_start() {
        let own = std::process::id();
        let key = process_key(own).unwrap();
        let parts: Vec<&str> = key.split(':').collect();
        assert_eq!(parts.len(), 3, "{key}");
        assert_eq!(parts[1], own.to_string());
        assert!(parts[2].parse::<u64>().unwrap() > 0, "{key}");
        // A child started later has a later (or equal) start and another pid.
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let theirs = process_key(child.id()).unwrap();
        assert_ne!(theirs, key);
        let start = |k: &str| k.rsplit(':').next().unwrap().parse::<u64>().unwrap();
        assert!(start(&theirs) >= start(&key));
        // The child's ancestry begins with this process.
        let (chain, _) = ancestry(child.id());
        assert_eq!(chain.first(), Some(&key));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(process_key(child.id()), None, "a reaped process has no key");
    }

    #[test]
    fn ancestry_is_bounded_and_leaves_init_out() {
        let (chain, _) = ancestry(std::process::id());
        assert!(chain.len() <= ANCESTORS_MAX);
        assert!(chain.iter().all(|k| k.split(':').nth(1) != Some("1")), "{chain:?}");
    }
}
