//! How a wrapped run starts and ends: EOF both ways, crashes, signals, SIGKILL,
//! missing agents. Every test runs the real binary around a real agent process.

use crate::common::*;
use acp_tee_shared::{Direction, FrameKind};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn client_eof_stops_an_agent_that_never_exits() {
    let store = TempStore::new();
    // Like elizacp: answers, then ignores stdin EOF and keeps running.
    let agent = sh("echo $$ > pid; cat; exec sleep 1000");
    let mut cmd = tee_command(&store.db, &["--grace", "200ms"], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    // The echo shows the pid file written and `cat` running before the
    // grace period starts: a slow machine cannot stop the agent too early.
    assert_eq!(read_exact_from(&mut child, 6), b"hello\n");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, b"");
    let trace = store.only_trace();
    assert_eq!(trace.exit_signal, Some(libc::SIGTERM));
    assert!(trace.end_reason.unwrap().contains("stopped after the grace period"));
    let pid: u32 = std::fs::read_to_string(store.dir.path().join("pid")).unwrap().trim().parse().unwrap();
    assert!(wait_gone(pid), "agent still running");
}

#[test]
fn an_agent_ignoring_sigterm_is_killed_after_another_grace() {
    let store = TempStore::new();
    let agent = sh("trap '' TERM; echo ready; cat >/dev/null; exec sleep 1000");
    let mut child = tee_command(&store.db, &["--grace", "100ms"], &as_strs(&agent)).spawn().unwrap();
    // The client closes only once the agent ignores TERM, however slowly
    // the machine started it.
    assert_eq!(read_exact_from(&mut child, 6), b"ready\n");
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(store.only_trace().exit_signal, Some(libc::SIGKILL));
}

#[test]
fn agent_exit_delivers_all_output_and_passes_the_code_on() {
    let store = TempStore::new();
    let agent = sh("printf 'one\\ntwo-without-newline'; echo oops >&2; exit 3");
    let mut child = tee_command(&store.db, &[], &as_strs(&agent)).spawn().unwrap();
    // Keep our end of the client's stdin open: the agent ends the run, not us.
    let stdin = child.stdin.take().unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout, b"one\ntwo-without-newline");
    assert!(String::from_utf8_lossy(&out.stderr).contains("oops"));
    let trace = store.only_trace();
    assert_eq!((trace.exit_code, trace.exit_signal), (Some(3), None));
    assert_eq!(trace.end_reason.as_deref(), Some("the agent exited"));
    let frames = store.frames(trace.id);
    let a2c: Vec<&[u8]> = frames.iter().filter(|f| f.dir == Direction::AgentToClient).map(|f| &f.raw[..]).collect();
    assert_eq!(a2c, vec![&b"one\n"[..], b"two-without-newline"]);
    let stderr: Vec<&[u8]> = frames.iter().filter(|f| f.kind == FrameKind::Stderr).map(|f| &f.raw[..]).collect();
    assert_eq!(stderr, vec![&b"oops\n"[..]]);
}

#[test]
fn output_held_open_by_what_the_agent_started_is_waited_for_three_seconds_at_least() {
    let store = TempStore::new();
    // The background sleep keeps the agent's stdout and stderr open after
    // the agent exited; a short --grace does not shorten the wait for them.
    let agent = sh("sleep 30 & echo $! > pid; echo first; exit 5");
    let mut cmd = tee_command(&store.db, &["--grace", "100ms"], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let started = std::time::Instant::now();
    let out = run_with_input(cmd, vec![]);
    let waited = started.elapsed();
    let pid: u32 = std::fs::read_to_string(store.dir.path().join("pid")).unwrap().trim().parse().unwrap();
    // SAFETY: kill(2) on a pid this test started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(wait_gone(pid));
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(out.stdout, b"first\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("still holds its output open"));
    assert!(waited >= std::time::Duration::from_secs(3), "{waited:?}");
    assert!(waited < std::time::Duration::from_secs(30), "{waited:?}");
    assert_eq!(store.only_trace().exit_code, Some(5));
}

#[test]
fn a_crashing_agent_gives_128_plus_signal() {
    let store = TempStore::new();
    let out = run_with_input(tee_command(&store.db, &[], &as_strs(&sh("kill -SEGV $$"))), vec![]);
    assert_eq!(out.status.code(), Some(128 + libc::SIGSEGV));
    let trace = store.only_trace();
    assert_eq!(trace.exit_code, Some(128 + libc::SIGSEGV));
    assert_eq!(trace.exit_signal, Some(libc::SIGSEGV));
}

#[test]
fn agent_output_after_the_client_stopped_reading_is_still_recorded() {
    let store = TempStore::new();
    // The agent speaks only after its stdin closes, when nobody reads us any more.
    let agent = sh("cat >/dev/null; echo last-words");
    let mut child = tee_command(&store.db, &[], &as_strs(&agent)).spawn().unwrap();
    drop(child.stdout.take());
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let trace = store.only_trace();
    assert_eq!(store.stream(trace.id, Direction::AgentToClient), b"last-words\n");
}

#[test]
fn sigkill_of_acp_tee_keeps_every_forwarded_frame_and_kills_the_agent() {
    let store = TempStore::new();
    let agent = sh("echo $$ > pid; exec cat");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.current_dir(store.dir.path()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut expected = Vec::new();
    for i in 0..200 {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n");
        stdin.write_all(line.as_bytes()).unwrap();
        // Wait for the echo: once we have read it, acp-tee has forwarded it.
        assert_eq!(read_exact_from(&mut child, line.len()), line.as_bytes());
        expected.extend_from_slice(line.as_bytes());
    }
    // The instant the last reply arrived, as yopo and editors do.
    child.kill().unwrap();
    child.wait().unwrap();
    let trace = store.only_trace();
    assert_eq!(trace.end_reason.as_deref(), Some(acp_tee::RELAY_KILLED));
    assert_eq!(store.stream(trace.id, Direction::ClientToAgent), expected);
    assert_eq!(store.stream(trace.id, Direction::AgentToClient), expected);
    assert_eq!(trace.frame_count, 400);
    let pid: u32 = std::fs::read_to_string(store.dir.path().join("pid")).unwrap().trim().parse().unwrap();
    assert!(wait_gone(pid), "the agent outlived a SIGKILLed acp-tee");
}

#[test]
fn signals_are_passed_on_to_the_agent() {
    for (sig, name) in [(libc::SIGTERM, "TERM"), (libc::SIGHUP, "HUP"), (libc::SIGINT, "INT")] {
        let store = TempStore::new();
        let agent = sh(&format!("trap 'echo got-{name}; exit 42' {name}; echo ready; while :; do sleep 0.05; done"));
        let mut child = tee_command(&store.db, &[], &as_strs(&agent)).spawn().unwrap();
        assert_eq!(read_exact_from(&mut child, 6), b"ready\n");
        kill(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(42), "{name}");
        assert_eq!(out.stdout, format!("got-{name}\n").as_bytes());
        let trace = store.only_trace();
        assert_eq!(trace.exit_code, Some(42));
        assert_eq!(trace.end_reason, Some(format!("signal {sig} passed on to the agent; the agent exited")));
    }
}

#[test]
fn a_sigterm_to_every_process_under_the_client_loses_nothing() {
    // As acpx closes an agent: SIGTERM to the process it started and every
    // process under it, the recorder first here (the worst order). The
    // recorder keeps storing until the relay's handoff ends.
    let store = TempStore::new();
    let agent = sh("trap 'echo got-TERM >&2; echo bye; exit 42' TERM; echo $$; while :; do sleep 0.05; done");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut first = Vec::new();
    while !first.ends_with(b"\n") {
        first.extend(read_exact_from(&mut child, 1));
    }
    let agent_pid: u32 = String::from_utf8(first).unwrap().trim().parse().unwrap();
    let recorder = recorder_of(child.id());
    for pid in [recorder, child.id(), agent_pid] {
        // The agent may be gone already: acp-tee passed the first on.
        // SAFETY: kill(2) with a signal; no memory is involved.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(42));
    assert!(String::from_utf8_lossy(&out.stderr).contains("got-TERM"));
    let trace = store.only_trace();
    assert_eq!((trace.missing_frames, trace.missing_unknown), (0, false), "{:?}", trace.end_reason);
    assert!(!trace.end_reason.as_deref().unwrap_or_default().contains("recorder"), "{:?}", trace.end_reason);
    // (The shell may say first that its `sleep` was terminated.)
    assert!(store.stream(trace.id, Direction::AgentStderr).ends_with(b"got-TERM\n"));
    assert!(store.stream(trace.id, Direction::AgentToClient).ends_with(b"bye\n"));
}

#[test]
fn sigterm_escalates_to_sigkill_for_an_agent_ignoring_it() {
    let store = TempStore::new();
    let agent = sh("trap '' TERM; echo ready; while :; do sleep 0.05; done");
    let mut child = tee_command(&store.db, &["--grace", "100ms"], &as_strs(&agent)).spawn().unwrap();
    assert_eq!(read_exact_from(&mut child, 6), b"ready\n");
    kill(child.id(), libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGKILL));
}

#[test]
fn a_missing_agent_is_one_clear_error_and_records_nothing() {
    let store = TempStore::new();
    let out = run_with_input(tee_command(&store.db, &[], &["/nonexistent/agent", "acp"]), vec![]);
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr, "acp-tee: error: cannot start agent `/nonexistent/agent`: no such program (is it on PATH?)\n");
    assert!(out.stdout.is_empty());
    assert!(!store.db.exists(), "a store was created for a run that never started");

    let script = store.dir.path().join("not-executable");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let out = run_with_input(tee_command(&store.db, &[], &[script.to_str().unwrap()]), vec![]);
    assert_eq!(out.status.code(), Some(126));
    assert!(String::from_utf8_lossy(&out.stderr).contains("permission denied"));
    assert!(!store.db.exists());
}

/// The pipe behind one of our child-facing descriptors (`pipe:[inode]`).
fn own_fd_target(fd: &impl std::os::fd::AsRawFd) -> String {
    fd_target(std::process::id(), fd.as_raw_fd()).expect("our own descriptor")
}

#[test]
fn no_byte_reaches_the_client_after_the_trace_ended() {
    let store = TempStore::new();
    // The agent exits while something it started keeps writing to its stdout.
    let agent = sh("echo first; (while :; do echo tick; sleep 0.01; done) & echo $! > bg; exit 5");
    let mut cmd = tee_command(&store.db, &["--grace", "200ms"], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    let _stdin = child.stdin.take().unwrap();
    assert_eq!(read_exact_from(&mut child, 6), b"first\n");
    // A recorder that is slow to finish (here: stopped) must not make the
    // relay go on forwarding after the run ended.
    let recorder = recorder_of(child.id());
    store.wait_for_frames(1);
    kill(recorder, libc::SIGSTOP);
    let stdout = read_to_end_on_thread(child.stdout.take().unwrap());
    let eof = stdout.recv_timeout(Duration::from_secs(15));
    resume(recorder);
    let status = wait_within(&mut child, Duration::from_secs(60));
    kill_if_alive(pid_from_file(store.dir.path(), "bg"));
    let (received, _) = eof.expect("the client never got end-of-file while the recorder was stopped");
    assert_eq!(status.and_then(|s| s.code()), Some(5));
    let trace = store.only_trace();
    let stored = store.stream(trace.id, Direction::AgentToClient);
    let mut got = b"first\n".to_vec();
    got.extend(received);
    assert!(
        stored.starts_with(&got),
        "the client got {} bytes, the trace holds {}: bytes reached it unrecorded",
        got.len(),
        stored.len()
    );
    assert_eq!(trace.missing_frames, 0);
}

#[test]
fn the_recorder_holds_none_of_the_clients_stdio() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    let recorder = recorder_of(child.id());
    let client = [
        own_fd_target(child.stdin.as_ref().unwrap()),
        own_fd_target(child.stdout.as_ref().unwrap()),
        own_fd_target(child.stderr.as_ref().unwrap()),
    ];
    for fd in 0..3 {
        let target = fd_target(recorder, fd).unwrap_or_default();
        assert!(!client.contains(&target), "the recorder's fd {fd} is the client's {target}");
    }
    // And once acp-tee is killed, the client's stderr ends although the
    // recorder is still there (here: stopped, as if busy catching up). The
    // trace exists first: acp-tee killed before it announced the run
    // leaves no trace to wait for below (a loaded machine made that race).
    let stderr = read_to_end_on_thread(child.stderr.take().unwrap());
    store.wait_for_frames(0);
    kill(recorder, libc::SIGSTOP);
    child.kill().unwrap();
    child.wait().unwrap();
    let eof = stderr.recv_timeout(Duration::from_secs(5));
    resume(recorder);
    assert!(eof.is_ok(), "the client's stderr stayed open after acp-tee was killed");
    store.only_trace();
}

#[test]
fn acp_tee_exits_when_the_run_ends_and_the_trace_ends_then_too() {
    let store = TempStore::new();
    let spawned = Instant::now();
    let mut child = tee_command(&store.db, &[], &["cat"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let ping = |id: u32| format!("{{\"id\":{id},\"method\":\"ping\"}}\n").into_bytes();
    stdin.write_all(&ping(1)).unwrap();
    assert_eq!(read_exact_from(&mut child, ping(1).len()), ping(1));
    store.wait_for_frames(2);
    let recorder = recorder_of(child.id());
    // Storage falls behind (here: stops); the run itself ends now.
    kill(recorder, libc::SIGSTOP);
    stdin.write_all(&ping(2)).unwrap();
    assert_eq!(read_exact_from(&mut child, ping(2).len()), ping(2));
    drop(stdin);
    let status = wait_within(&mut child, Duration::from_secs(15));
    let exited = spawned.elapsed();
    // Storage resumes only once the wall clock is past the moment a trace
    // ending at its storage would end later than acp-tee's exit (with a
    // margin for the clocks' granularity): an end taken from storage then
    // fails the check below.
    let read_only =
        rusqlite::Connection::open_with_flags(&store.db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let started: String = read_only.query_row("SELECT started_at FROM traces", [], |r| r.get(0)).unwrap();
    drop(read_only);
    let started = chrono::DateTime::parse_from_rfc3339(&started).unwrap();
    let past = started + chrono::Duration::from_std(exited + Duration::from_millis(200)).unwrap();
    while chrono::Utc::now() < past {
        std::thread::sleep(Duration::from_millis(5));
    }
    resume(recorder);
    assert_eq!(status.and_then(|s| s.code()), Some(0), "acp-tee waited for storage to catch up");
    let trace = store.only_trace();
    assert_eq!(trace.frame_count, 4);
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    let duration = (at(trace.ended_at.as_deref().unwrap()) - at(&trace.started_at)).to_std().unwrap();
    assert!(duration <= exited, "the trace ends {duration:?} after its start, acp-tee exited after {exited:?}");
}

#[test]
fn the_clients_close_is_noticed_when_the_agent_stopped_reading() {
    let store = TempStore::new();
    // The agent never reads: the client's 1.1 MB fill its stdin pipe and
    // the relay blocks writing into it.
    let mut child = tee_command(&store.db, &["--grace", "500ms"], &["tail", "-f", "/dev/null"]).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let line = format!("{{\"method\":\"x\",\"params\":\"{}\"}}\n", "y".repeat(1000));
    let input = line.repeat(1100);
    let feeder = std::thread::spawn(move || {
        stdin.write_all(input.as_bytes()).unwrap();
    });
    feeder.join().unwrap();
    let status = wait_within(&mut child, Duration::from_secs(20));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "no SIGTERM after --grace: acp-tee still running");
    let trace = store.only_trace();
    assert_eq!(trace.exit_signal, Some(libc::SIGTERM));
    assert_eq!(trace.missing_frames, 0);
}

#[test]
fn what_the_agent_started_does_not_outlive_the_run() {
    let store = TempStore::new();
    let agent = sh("sleep 1000 >/dev/null 2>&1 & echo $! > bg; echo x; exit 0");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    let _stdin = child.stdin.take().unwrap();
    let status = wait_within(&mut child, Duration::from_secs(20));
    let bg = pid_from_file(store.dir.path(), "bg");
    let gone = wait_gone(bg);
    kill_if_alive(bg);
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    assert!(gone, "the agent's background process {bg} outlived acp-tee");
}

#[test]
fn what_the_agent_started_does_not_outlive_a_killed_acp_tee() {
    let store = TempStore::new();
    // Like `sh -c 'elizacp acp; true'`: the agent is a shell, the real agent its child.
    let agent = sh("sh -c 'echo $$ > inner; exec sleep 1000'; true");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    let inner = pid_from_file(store.dir.path(), "inner");
    store.wait_for_frames(0);
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = wait_gone(inner);
    kill_if_alive(inner);
    assert!(gone, "the agent's child {inner} outlived a SIGKILLed acp-tee");
    store.only_trace();
}

#[test]
fn a_client_that_never_reads_is_not_blamed_on_the_agent() {
    let store = TempStore::new();
    // 4 MB of output nobody reads; the agent blocks writing until it is stopped.
    let agent = sh("exec head -c 4000000 /dev/zero");
    let mut child = tee_command(&store.db, &["--grace", "200ms"], &as_strs(&agent)).spawn().unwrap();
    let _stdout = child.stdout.take().unwrap();
    let stderr = read_to_end_on_thread(child.stderr.take().unwrap());
    drop(child.stdin.take());
    let status = wait_within(&mut child, Duration::from_secs(30));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let (stderr, _) = stderr.recv_timeout(Duration::from_secs(10)).unwrap();
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(!stderr.contains("something it started"), "{stderr}");
    assert!(stderr.contains("the client is not reading"), "{stderr}");
}

/// Opening a store changes nothing; `acp-tee list` runs the maintenance
/// step first, which ends a trace whose recorder is gone as cut off.
#[test]
fn list_ends_a_trace_whose_recorder_is_gone_and_opening_alone_does_not() {
    let store = TempStore::new();
    let mut s = acp_tee::Store::create_or_open(&store.db).unwrap();
    s.maintain(0).unwrap();
    let s = acp_tee::Recording::new(s).unwrap();
    let start = acp_tee::TraceStart {
        protocol: None,
        name: Some("abandoned".into()),
        command: vec!["agent".into()],
        cwd: None,
        mode: acp_tee::Mode::Wrap.to_string(),
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    // A pid no process has: the recorder is gone.
    let id = s.create_trace(&start, i32::MAX as u32).unwrap();
    drop(s);
    let opened = acp_tee::Store::open_existing(&store.db).unwrap();
    assert_eq!(opened.trace(id).unwrap().ended_at, None, "opening the store ended the trace");
    let out = std::process::Command::new(bin()).args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(opened.trace(id).unwrap().end_reason.as_deref(), Some(acp_tee::CUT_OFF));
}

#[test]
fn a_store_whose_name_starts_with_a_dash_is_recorded_into() {
    // `--db=-x.db` and `--db=--help` are values, for the relay and for the
    // recorder it starts (which was once given `--db -x.db` and refused it).
    for name in ["-x.db", "--help"] {
        let store = TempStore::new();
        let mut cmd = Command::new(bin());
        cmd.current_dir(store.dir.path()).arg(format!("--db={name}")).arg("--").arg("cat");
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let out = run_with_input(cmd, b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n".to_vec());
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("recorder"), "{name}: {stderr}");
        let recorded = TempStore { db: store.dir.path().join(name), dir: store.dir };
        let trace = recorded.only_trace();
        assert_eq!(recorded.frames(trace.id).len(), 2, "{name}: the message and its echo");
    }
}

#[test]
fn the_end_reason_names_the_signal_that_ended_the_agent_and_what_was_passed_on() {
    // SIGINT is passed on and the agent only notes it; then something else
    // (the agent's own parent, in the run this was found in) ends it with
    // SIGTERM, which acp-tee never sent.
    let store = TempStore::new();
    let agent = sh("echo $$ > pid; trap 'echo got-INT' INT; echo ready; while :; do sleep 0.05; done");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    assert_eq!(read_exact_from(&mut child, 6), b"ready\n");
    kill(child.id(), libc::SIGINT);
    assert_eq!(read_exact_from(&mut child, 8), b"got-INT\n");
    kill(pid_from_file(store.dir.path(), "pid"), libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + libc::SIGTERM));
    let trace = store.only_trace();
    assert_eq!(trace.exit_signal, Some(libc::SIGTERM));
    assert_eq!(
        trace.end_reason.as_deref(),
        Some("signal 2 passed on to the agent; the agent was ended by signal 15, which acp-tee did not send")
    );
}

#[test]
fn a_file_as_stdin_with_an_agent_that_never_reads_ends_after_the_grace() {
    // A file has no writer whose exit could be noticed: it holds all the
    // client will send. 3 MB is more than the pipes on the way hold, so the
    // relay blocks writing to an agent that never reads.
    let store = TempStore::new();
    let input = store.dir.path().join("in.txt");
    std::fs::write(&input, "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n".repeat(100_000)).unwrap();
    let mut child = Command::new(bin())
        .arg("--db")
        .arg(&store.db)
        .args(["--grace", "300ms", "--", "sleep", "1000"])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_within(&mut child, Duration::from_secs(30));
    kill_if_alive(child.id());
    assert_eq!(status.and_then(|s| s.code()), Some(0), "acp-tee did not end within 30 s");
    let trace = store.only_trace();
    assert_eq!(trace.exit_signal, Some(libc::SIGTERM));
    assert_eq!(trace.end_reason.as_deref(), Some("the client closed; the agent was stopped after the grace period"));
}

#[test]
fn a_client_that_stops_reading_gives_the_agent_a_broken_pipe_and_the_trace_says_what_was_not_delivered() {
    // The client closes its end of our stdout but keeps our stdin open; the
    // agent writes for ever. Connected directly, the agent dies of SIGPIPE
    // at once: through acp-tee it must too, and the recording stays small.
    let store = TempStore::new();
    let agent = ["yes", "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"];
    let mut child = tee_command(&store.db, &[], &agent).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    drop(child.stdout.take());
    let status = wait_within(&mut child, Duration::from_secs(30));
    drop(stdin);
    assert_eq!(status.and_then(|s| s.code()), Some(128 + libc::SIGPIPE), "acp-tee did not end within 30 s");
    let trace = store.only_trace();
    assert_eq!(trace.exit_signal, Some(libc::SIGPIPE));
    let reason = trace.end_reason.unwrap();
    assert!(reason.starts_with("the agent was ended by signal 13"), "{reason}");
    let undelivered: u64 = reason
        .split("the last ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of undelivered bytes in {reason:?}"));
    // The client closed before the relay forwarded anything (it waits for
    // its recorder first), but however that raced, what was not delivered
    // is some of what was recorded.
    let recorded = store.stream(trace.id, Direction::AgentToClient).len() as u64;
    assert!(undelivered > 0 && undelivered <= recorded, "{undelivered} of {recorded}: {reason}");
    // Bounded by the pipes between the agent and the client, not by time.
    assert!(recorded < 8 << 20, "{recorded} bytes recorded");
}

#[test]
fn a_relay_held_up_by_a_stopped_recorder_says_so_and_blames_no_one_else() {
    let store = TempStore::new();
    let agent = sh("echo $$ > pid; exec yes");
    let mut cmd = tee_command(&store.db, &["--grace", "200ms"], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    // The client reads everything it is sent.
    let _out = read_to_end_on_thread(child.stdout.take().unwrap());
    let err = read_to_end_on_thread(child.stderr.take().unwrap());
    let recorder = recorder_of(child.id());
    let agent = pid_from_file(store.dir.path(), "pid");
    kill(recorder, libc::SIGSTOP);
    // The recorder takes nothing now: once the pipes on the way are full
    // the relay blocks, and so does the agent, writing.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(format!("/proc/{agent}/wchan")).unwrap_or_default().ends_with("pipe_write") {
        assert!(Instant::now() < deadline, "the agent never blocked writing");
        std::thread::sleep(Duration::from_millis(5));
    }
    kill(child.id(), libc::SIGTERM);
    let status = wait_within(&mut child, Duration::from_secs(30));
    drop(stdin);
    resume(recorder);
    kill_if_alive(recorder);
    assert_eq!(status.and_then(|s| s.code()), Some(128 + libc::SIGTERM));
    let (err, _) = err.recv_timeout(Duration::from_secs(10)).unwrap();
    let err = String::from_utf8_lossy(&err);
    assert!(err.contains("acp-tee's recorder is not taking what it is handed"), "{err}");
    assert!(!err.contains("something it started"), "{err}");
}
