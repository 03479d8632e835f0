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
