//! Fault suite: kill -9 mid-burst, a store that runs out of space, agents
//! that die or half-close, and 10,000 random streams through the real binary.
//! docs/reliability.md lists each case with what held.

use crate::common::*;
use acp_tee::{Store, CUT_OFF};
use acp_tee_shared::Direction;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `lines` distinct JSON-RPC requests of about 100 bytes.
fn burst(lines: usize) -> Vec<u8> {
    (0..lines)
        .flat_map(|i| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"burst/item\",\"params\":{{\"n\":{i}}}}}\n")
                .into_bytes()
        })
        .collect()
}

fn integrity_ok(store: &TempStore) {
    let conn = rusqlite::Connection::open(&store.db).unwrap();
    let result: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(result, "ok");
}

/// Starts `acp-tee -- cat`, feeds `input` and reads the echo until `stop_after`
/// bytes came back; returns the child, the bytes received so far and the feeder.
///
/// The first line goes alone and the burst starts once its echo is back and
/// both its frames are stored: a burst now passes at pipe speed and is stored
/// after it, so without this a kill "mid-burst" could come before the
/// recorder has even created the trace.
fn start_burst(store: &TempStore, input: Vec<u8>, stop_after: usize) -> (std::process::Child, Vec<u8>) {
    let mut child = tee_command(&store.db, &[], &["cat"]).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let first = input.iter().position(|&b| b == b'\n').expect("a first line") + 1;
    stdin.write_all(&input[..first]).unwrap();
    let mut echo = vec![0u8; first];
    child.stdout.as_mut().unwrap().read_exact(&mut echo).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let first_stored = || {
        store.db.exists()
            && Store::open_existing(&store.db)
                .is_ok_and(|s| s.list_traces().unwrap().first().is_some_and(|t| t.frame_count == 2))
    };
    while !first_stored() {
        assert!(Instant::now() < deadline, "the recorder never stored the first line's two frames");
        std::thread::sleep(Duration::from_millis(5));
    }
    let input = input[first..].to_vec();
    let stop_after = stop_after - first;
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut got = vec![0u8; stop_after];
    child.stdout.as_mut().unwrap().read_exact(&mut got).unwrap();
    echo.extend(got);
    (child, echo)
}

#[test]
fn kill_9_of_acp_tee_mid_burst_keeps_every_forwarded_frame() {
    let store = TempStore::new();
    let input = burst(100_000);
    let (mut child, received) = start_burst(&store, input.clone(), input.len() / 3);
    child.kill().unwrap();
    child.wait().unwrap();
    let trace = store.only_trace();
    assert_eq!(trace.end_reason.as_deref(), Some(acp_tee::RELAY_KILLED));
    integrity_ok(&store);
    let c2a = store.stream(trace.id, Direction::ClientToAgent);
    let a2c = store.stream(trace.id, Direction::AgentToClient);
    // Everything the client got was forwarded, so it was recorded first.
    assert!(a2c.len() >= received.len() && a2c.starts_with(&received));
    assert!(input.starts_with(&c2a) && c2a.starts_with(&a2c));
    eprintln!("kill -9 at {} of {} bytes: {} frames stored", received.len(), input.len(), trace.frame_count);
}

#[test]
fn kill_9_of_both_processes_mid_burst_leaves_a_clean_store_and_a_cut_off_trace() {
    let store = TempStore::new();
    let input = burst(100_000);
    let (mut child, _) = start_burst(&store, input.clone(), input.len() / 3);
    let recorder = recorder_of(child.id());
    // acp-tee is stopped first, so that it cannot replace its recorder
    // between the two kills (it would, given the time).
    kill(child.id(), libc::SIGSTOP);
    kill(recorder, libc::SIGKILL);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_gone(recorder));
    integrity_ok(&store);
    // Opening the store changes nothing; maintenance (which `acp-tee list`
    // runs first) marks the trace whose recorder is gone as cut off.
    let mut opened = Store::open_existing(&store.db).unwrap();
    assert_eq!(opened.list_traces().unwrap()[0].ended_at, None);
    assert_eq!(opened.maintain(0).unwrap().ended, 1);
    let trace = opened.list_traces().unwrap().remove(0);
    assert_eq!(trace.end_reason.as_deref(), Some(CUT_OFF));
    assert!(trace.ended_at.is_some());
    // What was committed is a prefix of the run: seq 1..n without gaps.
    let frames = store.frames(trace.id);
    assert_eq!(frames.len() as i64, trace.frame_count);
    assert!(frames.len() >= 2, "the frames committed before the burst are gone");
    assert!(frames.iter().enumerate().all(|(i, f)| f.seq == i as i64 + 1));
    let c2a = store.stream(trace.id, Direction::ClientToAgent);
    assert!(input.starts_with(&c2a));
    eprintln!("kill -9 of both: {} frames committed before the kill", trace.frame_count);
}

#[test]
fn a_store_out_of_space_still_forwards_everything_and_counts_what_is_missing() {
    let store = TempStore::new();
    // 400 frames of 64 KiB each way, into a store whose files may not grow
    // past 2 MiB (RLIMIT_FSIZE; SQLite then gets EFBIG, as on a full disk).
    // That is more than the recorder can hold back (spool, queue, pipes:
    // about 24 MiB), so the store fails while acp-tee still runs: a failure
    // after acp-tee exited has no stderr to go to, only the trace's count.
    let frames = 400;
    let line = |i: usize| format!("{{\"id\":{i},\"method\":\"big\",\"params\":\"{}\"}}\n", "x".repeat(64 * 1024));
    let input: Vec<u8> = (0..frames).flat_map(|i| line(i).into_bytes()).collect();
    // `cat` ends on EOF by itself; a long grace keeps a slow machine (the
    // relay waits on a recorder whose spool cannot grow) from stopping it.
    let mut cmd = tee_command(&store.db, &["--grace", "60s"], &["cat"]);
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 2 << 20, rlim_max: 2 << 20 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = run_with_input(cmd, input.clone());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout == input, "forwarded bytes changed");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
    assert!(stderr.contains("not recording to"), "{stderr}");
    let trace = store.only_trace();
    assert!(trace.missing_frames > 0, "nothing counted as missing");
    assert_eq!(trace.frame_count + trace.missing_frames, 2 * frames as i64, "stored + missing = every frame");
    integrity_ok(&store);
    eprintln!("out of space: {} frames stored, {} missing", trace.frame_count, trace.missing_frames);
}

#[test]
fn an_agent_dying_mid_request_ends_the_run_with_its_code() {
    let store = TempStore::new();
    let agent = sh("echo $$ > pid; read req; echo 'half an ans' ; exit 7");
    let mut cmd = tee_command(&store.db, &[], &as_strs(&agent));
    cmd.current_dir(store.dir.path());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{{}}}}"#).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(out.stdout, b"half an ans\n");
    let trace = store.only_trace();
    assert_eq!(trace.exit_code, Some(7));
    let frames = store.frames(trace.id);
    assert_eq!(frames[0].method.as_deref(), Some("session/prompt"));
    assert!(frames.iter().all(|f| f.reply_to_seq.is_none()), "the request was never answered");
    let pid: u32 = std::fs::read_to_string(store.dir.path().join("pid")).unwrap().trim().parse().unwrap();
    assert!(wait_gone(pid));
}

#[test]
fn an_agent_that_closes_stdout_but_keeps_running_is_waited_for() {
    let store = TempStore::new();
    // Says one thing, closes stdout, keeps reading until the client is done.
    let agent = sh("echo bye; exec 1>&-; cat >/dev/null; exit 4");
    let out = run_with_input(tee_command(&store.db, &[], &as_strs(&agent)), b"a\nb\n".to_vec());
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(out.stdout, b"bye\n");
    let trace = store.only_trace();
    assert_eq!(store.stream(trace.id, Direction::ClientToAgent), b"a\nb\n");
    assert_eq!(trace.end_reason.as_deref(), Some("the client closed; the agent exited"));
}

/// A small deterministic generator (xorshift64*), so a failing case can be
/// replayed from its number.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_stream(case: u64) -> Vec<u8> {
    let mut r = Rng(case.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut out = Vec::new();
    for _ in 0..r.below(12) {
        match r.below(8) {
            0 => out.extend((0..r.below(200)).map(|_| r.next() as u8)),
            1 => out.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m/{}\"}}\n", r.below(99), r.below(9)).as_bytes(),
            ),
            2 => out.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{}}}}\r\n", r.below(99)).as_bytes(),
            ),
            3 => out.extend_from_slice(b"\n"),
            4 => out.extend_from_slice(b"[{\"id\":1,\"method\":\"a\"},{\"method\":\"b\"}]\n"),
            5 => out.extend_from_slice(b"\xff\xfe\xc3(\n"),
            6 => out.extend(std::iter::repeat_n(b'z', r.below(70_000) as usize)),
            _ => out.extend_from_slice("{\"text\":\"caf\u{e9} \u{1F600}\"}".as_bytes()),
        }
    }
    out
}

#[test]
fn ten_thousand_random_streams_through_the_real_binary() {
    let cases: u64 = std::env::var("ACP_TEE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000);
    let store = TempStore::new();
    let started = Instant::now();
    let workers: Vec<_> = (0..2u64)
        .map(|w| {
            let db = store.db.clone();
            std::thread::spawn(move || {
                for case in (w..cases).step_by(2) {
                    let input = random_stream(case);
                    let out =
                        run_with_input(tee_command(&db, &["--name", &format!("case-{case}")], &["cat"]), input.clone());
                    assert!(out.status.success(), "case {case}: {}", String::from_utf8_lossy(&out.stderr));
                    assert!(out.stdout == input, "case {case}: output differs");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Every stored trace concatenates back to its input, both ways.
    let traces = store.ended_traces(cases as usize);
    assert_eq!(traces.len() as u64, cases);
    let opened = store.open();
    for t in &traces {
        let case: u64 = t.name.as_deref().unwrap().trim_start_matches("case-").parse().unwrap();
        let input = random_stream(case);
        let mut c2a = Vec::new();
        let mut a2c = Vec::new();
        opened
            .for_each_frame(t.id, |f| -> Result<(), acp_tee::StoreError> {
                match f.dir {
                    Direction::ClientToAgent => c2a.extend(f.raw),
                    Direction::AgentToClient => a2c.extend(f.raw),
                    Direction::AgentStderr => panic!("cat wrote to stderr"),
                }
                Ok(())
            })
            .unwrap();
        assert!(c2a == input && a2c == input, "case {case}: stored frames differ from the stream");
        assert_eq!(t.missing_frames, 0);
    }
    eprintln!("{cases} random streams through acp-tee -- cat in {:?}", started.elapsed());
}

#[test]
fn no_process_is_left_behind() {
    // The agent of a normal run, of a SIGKILLed run, and of a client-EOF run are all gone.
    for (extra, kill_it) in [(&[][..], false), (&[][..], true), (&["--grace", "50ms"][..], false)] {
        let store = TempStore::new();
        let mut cmd = tee_command(&store.db, extra, &as_strs(&sh("echo $$ > pid; exec sleep 1000")));
        cmd.current_dir(store.dir.path());
        let mut child = cmd.spawn().unwrap();
        let pid_file = store.dir.path().join("pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&pid_file).map(|s| s.trim().is_empty()).unwrap_or(true) {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid: u32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        if kill_it {
            child.kill().unwrap();
        } else {
            drop(child.stdin.take());
        }
        child.wait().unwrap();
        assert!(wait_gone(pid), "agent {pid} left running (kill: {kill_it})");
        let _ = Command::new("true").status();
    }
}

#[test]
fn a_stderr_that_cannot_be_written_changes_nothing_even_with_the_store_out_of_space() {
    let store = TempStore::new();
    let lines = 10_000;
    let input: Vec<u8> = (0..lines)
        .flat_map(|i| format!("{{\"id\":{i},\"method\":\"big\",\"params\":\"{}\"}}\n", "x".repeat(1000)).into_bytes())
        .collect();
    let mut cmd = tee_command(&store.db, &["--grace", "60s"], &["cat"]);
    // Every warning fails to be written (ENOSPC), and the store runs out of space.
    cmd.stderr(std::fs::File::options().write(true).open("/dev/full").unwrap());
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 2 << 20, rlim_max: 2 << 20 };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = {
        let input = input.clone();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    };
    let stdout = read_to_end_on_thread(child.stdout.take().unwrap());
    let status = wait_within(&mut child, Duration::from_secs(90));
    feeder.join().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "acp-tee hung or failed");
    let (out, _) = stdout.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(out == input, "forwarded bytes changed");
    let trace = store.only_trace();
    assert!(trace.missing_frames > 0, "nothing counted as missing");
    assert_eq!(trace.frame_count + trace.missing_frames, 2 * lines, "stored + missing = every frame");
}

/// `lines` JSON-RPC requests of about 60 bytes, numbered from `from`.
fn requests(from: usize, lines: usize) -> Vec<u8> {
    (from..from + lines)
        .flat_map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"after/kill\"}}\n").into_bytes())
        .collect()
}

#[test]
fn a_killed_recorder_is_replaced_and_the_rest_of_the_run_is_recorded() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let before = requests(0, 1);
    stdin.write_all(&before).unwrap();
    assert_eq!(read_exact_from(&mut child, before.len()), before);
    store.wait_for_frames(2);
    // The recorder alone is killed; it had stored everything so far. (What
    // is handed to it while its threads are still exiting is lost with it:
    // the next test.)
    let recorder = recorder_of(child.id());
    kill(recorder, libc::SIGKILL);
    assert!(wait_all_threads_gone(recorder));
    let after = requests(1, 1000);
    stdin.write_all(&after).unwrap();
    assert_eq!(read_exact_from(&mut child, after.len()), after);
    drop(stdin);
    let stderr = read_to_end_on_thread(child.stderr.take().unwrap());
    assert_eq!(wait_within(&mut child, Duration::from_secs(60)).and_then(|s| s.code()), Some(0));
    let (stderr, _) = stderr.recv_timeout(Duration::from_secs(10)).unwrap();
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(stderr.contains("died mid-run; a new one records the rest"), "{stderr}");
    let trace = store.only_trace();
    // The run's real end, and every frame: the first recorder had stored
    // its part, the second the rest.
    assert_eq!(trace.end_reason.as_deref(), Some("the client closed; the agent exited"));
    assert_eq!(trace.exit_code, Some(0));
    assert_eq!((trace.frame_count, trace.missing_frames), (2002, 0));
    let mut input = before.clone();
    input.extend_from_slice(&after);
    assert!(store.stream(trace.id, Direction::ClientToAgent) == input);
    assert!(store.stream(trace.id, Direction::AgentToClient) == input);
    let frames = store.frames(trace.id);
    assert!(frames.iter().enumerate().all(|(i, f)| f.seq == i as i64 + 1), "seqs go on where they were");
}

#[test]
fn a_recorder_killed_mid_burst_loses_only_its_backlog_and_the_trace_says_so() {
    let store = TempStore::new();
    let input = burst(100_000);
    let (mut child, _) = start_burst(&store, input.clone(), input.len() / 3);
    let recorder = recorder_of(child.id());
    kill(recorder, libc::SIGKILL);
    assert!(wait_gone(recorder));
    // The rest of the burst still goes through; then the client is done.
    let mut rest = Vec::new();
    child.stdout.as_mut().unwrap().read_to_end(&mut rest).unwrap();
    assert_eq!(wait_within(&mut child, Duration::from_secs(120)).and_then(|s| s.code()), Some(0));
    let trace = store.only_trace();
    let reason = trace.end_reason.clone().unwrap();
    assert!(reason.starts_with("the client closed; the agent exited"), "{reason}");
    integrity_ok(&store);
    // What the killed recorder held is counted (in bytes in the end reason,
    // and at least one frame per direction that lost some); the end of the
    // run is stored.
    assert!(trace.missing_frames > 0, "nothing counted as missing");
    assert!(reason.contains("a recorder was killed mid-run"), "{reason}");
    let a2c = store.stream(trace.id, Direction::AgentToClient);
    let tail = &input[input.len() - 10_000..];
    assert!(a2c.ends_with(tail), "the end of the run was not recorded");
    eprintln!("recorder killed mid-burst: {} frames stored; {reason}", trace.frame_count);
}

#[test]
fn a_recorder_killed_before_it_made_the_trace_is_replaced_and_the_trace_made() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).stderr(Stdio::null()).spawn().unwrap();
    let recorder = recorder_of(child.id());
    kill(recorder, libc::SIGKILL);
    assert!(wait_all_threads_gone(recorder));
    let input = requests(0, 500);
    let out = {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&input).unwrap();
        drop(stdin);
        let mut out = Vec::new();
        child.stdout.as_mut().unwrap().read_to_end(&mut out).unwrap();
        out
    };
    assert_eq!(wait_within(&mut child, Duration::from_secs(60)).and_then(|s| s.code()), Some(0));
    assert!(out == input);
    let trace = store.only_trace();
    assert_eq!(trace.end_reason.as_deref(), Some("the client closed; the agent exited"));
    assert_eq!((trace.frame_count, trace.missing_frames), (1000, 0));
    assert!(store.stream(trace.id, Direction::AgentToClient) == input);
}

/// The one trace of `store` as the store's next opener leaves it (the
/// maintenance step ends a trace whose recorder is gone), once every one of
/// `recorders` is gone.
fn trace_once_no_recorder_is_left(store: &TempStore, recorders: &[u32]) -> acp_tee_shared::TraceMeta {
    for &pid in recorders {
        assert!(wait_gone(pid), "recorder {pid} is still there");
    }
    let traces = store.open().list_traces().unwrap();
    assert_eq!(traces.len(), 1);
    traces.into_iter().next().unwrap()
}

/// The parts of an end reason left by a relay whose recorders all died
/// with bytes unstored: (the relay's own reason, bytes lost, bytes crossed).
fn lost_bytes(reason: &str) -> (String, u64, u64) {
    let (own, rest) = reason.split_once("; no recorder survived to store the whole run: ").unwrap_or_else(|| {
        panic!("the end does not say that bytes were lost: {reason:?}");
    });
    let mut words = rest.split(' ');
    let lost = words.next().and_then(|w| w.parse().ok()).unwrap();
    let crossed = words.nth(2).and_then(|w| w.parse().ok()).unwrap();
    (own.to_owned(), lost, crossed)
}

/// A normal run (exit 0) of 2,000 requests through `cat`, with `extra`
/// flags, whose recorder is killed while it still stores (the store's write
/// lock is held here meanwhile): the trace as the next opener leaves it,
/// and the input.
fn run_whose_recorder_dies_finishing(store: &TempStore, extra: &[&str]) -> (acp_tee_shared::TraceMeta, Vec<u8>) {
    let mut child = tee_command(&store.db, extra, &["cat"]).stderr(Stdio::null()).spawn().unwrap();
    let recorder = recorder_of(child.id());
    store.wait_for_frames(0);
    let lock = rusqlite::Connection::open(&store.db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let input = requests(0, 2000);
    let out = run_to_end(&mut child, &input);
    assert!(out == input);
    assert_eq!(wait_within(&mut child, Duration::from_secs(60)).and_then(|s| s.code()), Some(0));
    kill(recorder, libc::SIGKILL);
    assert!(wait_gone(recorder));
    drop(lock);
    (trace_once_no_recorder_is_left(store, &[recorder]), input)
}

#[test]
fn a_recorder_killed_while_finishing_leaves_the_relays_end_and_an_unknown_missing_count() {
    let store = TempStore::new();
    let (trace, input) = run_whose_recorder_dies_finishing(&store, &[]);
    assert_eq!(trace.exit_code, Some(0), "{trace:?}");
    let reason = trace.end_reason.clone().unwrap();
    let (own, lost, crossed) = lost_bytes(&reason);
    assert_eq!(own, "the client closed; the agent exited");
    assert_eq!(crossed, 2 * input.len() as u64);
    let stored = (store.stream(trace.id, Direction::ClientToAgent).len()
        + store.stream(trace.id, Direction::AgentToClient).len()) as u64;
    assert_eq!(lost, crossed - stored, "{reason}");
    assert!(trace.missing_unknown && trace.missing_frames >= 1, "{trace:?}");
    assert!(!store.dir.path().join("traces.db-ends").exists(), "the note is removed once used");
}

#[test]
fn with_masking_a_recorder_killed_while_finishing_leaves_an_end_that_claims_no_count() {
    // Masked frames are not the bytes that crossed: no loss is claimed from
    // comparing them, and none is denied.
    let store = TempStore::new();
    let (trace, _) = run_whose_recorder_dies_finishing(&store, &["--redact"]);
    assert_eq!(trace.exit_code, Some(0), "{trace:?}");
    let reason = trace.end_reason.clone().unwrap();
    assert!(reason.starts_with("the client closed; the agent exited; "), "{reason}");
    assert!(reason.contains("whether it had stored every frame cannot be told"), "{reason}");
    assert!(trace.missing_unknown, "{trace:?}");
}

#[test]
fn recorders_dying_more_often_than_they_are_replaced_leave_the_relays_end() {
    let store = TempStore::new();
    let mut child = tee_command(&store.db, &[], &["cat"]).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut killed = Vec::new();
    // One death more than the relay replaces: the last dies for good.
    for round in 0..4 {
        let lines = requests(round * 100, 100);
        stdin.write_all(&lines).unwrap();
        assert_eq!(read_exact_from(&mut child, lines.len()), lines);
        let recorder = recorder_of(child.id());
        kill(recorder, libc::SIGKILL);
        assert!(wait_all_threads_gone(recorder));
        killed.push(recorder);
        // The relay notices the death (and replaces it, the first three times).
        let deadline = Instant::now() + Duration::from_secs(10);
        while round < 3 && recorders_of(child.id()).is_empty() {
            assert!(Instant::now() < deadline, "recorder {recorder} was not replaced");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let rest = requests(400, 400);
    stdin.write_all(&rest).unwrap();
    assert_eq!(read_exact_from(&mut child, rest.len()), rest);
    drop(stdin);
    assert_eq!(wait_within(&mut child, Duration::from_secs(60)).and_then(|s| s.code()), Some(0));
    let trace = trace_once_no_recorder_is_left(&store, &killed);
    // Not "killed": acp-tee exited 0, and the 400 requests after the last
    // death crossed unrecorded, in a number of frames nobody counted.
    assert_eq!(trace.exit_code, Some(0), "{trace:?}");
    let reason = trace.end_reason.clone().unwrap();
    let (own, lost, _) = lost_bytes(&reason);
    assert_eq!(own, "the client closed; the agent exited");
    assert!(lost >= 2 * rest.len() as u64, "{reason}");
    assert!(trace.missing_unknown, "{trace:?}");
}

/// Writes `input` to the child's stdin, closes it, and reads its stdout to the end.
fn run_to_end(child: &mut std::process::Child, input: &[u8]) -> Vec<u8> {
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let mut out = Vec::new();
    child.stdout.as_mut().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap();
    out
}
