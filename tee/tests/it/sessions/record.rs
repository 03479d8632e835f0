//! Recording real clients against `tests/peers/py_agent.py` through
//! acp-tee, and reading the frames back.

use crate::common::*;

use acp_tee::{Reader, StoredFrame};
use acp_tee_shared::{Direction, FrameKind};
use serde_json::Value;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the clients ask.
pub const PROMPT: &str = "please look at README.md";
/// How long one recorded run may take before the test fails it as hung.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);
/// acpx's exit code when it denied a permission request.
pub const ACPX_PERMISSION_DENIED: i32 = 5;
/// The tool call py_agent.py starts in its first turn.
pub const TOOL_CALL_ID: &str = "call-1";

/// One recorded frame with its bytes parsed as JSON.
pub struct Frame {
    pub stored: StoredFrame,
    pub json: Value,
}

/// A recorded run: its store (kept alive with its temporary directory) and
/// the trace it made.
pub struct Recorded {
    pub store: TempStore,
    pub trace_id: i64,
}

impl Recorded {
    /// The trace's frames, read through a read-only [`Reader`].
    pub fn frames(&self) -> Vec<Frame> {
        read_frames(&self.store.db, self.trace_id)
    }
}

/// Every frame of `trace_id`, read through a read-only [`Reader`] and parsed.
pub fn read_frames(db: &Path, trace_id: i64) -> Vec<Frame> {
    let reader = Reader::open(db).expect("open the recorded store read-only");
    let mut out = Vec::new();
    reader
        .for_each_frame(trace_id, |stored| -> Result<(), acp_tee::StoreError> {
            let json = serde_json::from_slice(&stored.raw).unwrap_or(Value::Null);
            out.push(Frame { stored, json });
            Ok(())
        })
        .expect("read the trace's frames");
    out
}

/// The agent script (absolute: the clients run in a temporary directory).
pub fn py_agent_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/py_agent.py")
}

/// `acp-tee --db DB -- PYTHON py_agent.py AGENT_ARGS...`, as arguments.
pub fn teed_agent(db: &Path, agent_args: &[&str]) -> Vec<String> {
    let mut cmd = vec![bin().to_string(), "--db".into(), db.display().to_string(), "--".into(), python_acp()];
    cmd.push(py_agent_script().display().to_string());
    cmd.extend(agent_args.iter().map(|a| a.to_string()));
    cmd
}

/// `argv` as one command line for acpx's `--agent` (it splits like a shell;
/// inside single quotes nothing is special).
pub fn command_line(argv: &[String]) -> String {
    argv.iter().map(|a| format!("'{}'", a.replace('\'', r"'\''"))).collect::<Vec<_>>().join(" ")
}

/// Runs `cmd` to its end within [`RUN_LIMIT`], collecting its output; fails
/// the test when it hangs.
pub fn run_within(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let stdout = read_to_end_on_thread(child.stdout.take().unwrap());
    let stderr = read_to_end_on_thread(child.stderr.take().unwrap());
    let status = wait_within(&mut child, RUN_LIMIT).unwrap_or_else(|| panic!("{cmd:?} hung"));
    Output { status, stdout: stdout.recv().unwrap().0, stderr: stderr.recv().unwrap().0 }
}

/// Waits for the store's one trace to end (the recorder may still be
/// committing after the client is gone).
pub fn finish(store: TempStore) -> Recorded {
    let trace_id = store.only_trace().id;
    Recorded { store, trace_id }
}

/// `yopo PROMPT -- acp-tee --db DB -- python py_agent.py AGENT_ARGS...`, run
/// to its end in a temporary directory. yopo selects the first allow option
/// of a permission request (the `cancelled` outcome when there is none).
pub fn record_with_yopo(agent_args: &[&str]) -> (Recorded, String) {
    let store = TempStore::new();
    let mut cmd = Command::new(peer("yopo"));
    cmd.arg(PROMPT).arg("--").args(teed_agent(&store.db, agent_args)).current_dir(store.dir.path());
    let out = run_within(cmd);
    assert!(out.status.success(), "yopo failed: {}", String::from_utf8_lossy(&out.stderr));
    (finish(store), String::from_utf8(out.stdout).unwrap())
}

/// `acpx ACPX_ARGS --format json --agent 'acp-tee --db DB -- python
/// py_agent.py AGENT_ARGS...' exec PROMPT`, run to its end in a temporary
/// directory with no terminal, expecting acpx to exit with `exit_code` (it
/// exits [`ACPX_PERMISSION_DENIED`] when a permission was denied). Returns the
/// JSON-RPC messages acpx printed.
pub fn record_with_acpx(acpx_args: &[&str], agent_args: &[&str], exit_code: i32) -> (Recorded, Vec<Value>) {
    let store = TempStore::new();
    let mut cmd = Command::new(acpx());
    cmd.args(acpx_args)
        .args(["--format", "json", "--agent", &command_line(&teed_agent(&store.db, agent_args)), "exec", PROMPT])
        .current_dir(store.dir.path());
    let out = run_within(cmd);
    assert_eq!(out.status.code(), Some(exit_code), "acpx: {}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    let messages = printed.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
    (finish(store), messages)
}

/// A run whose permission request waits on a person: acpx on a terminal (a
/// pty whose other end the test holds), without an approve flag, asks
/// "Allow Edit README.md [edit]? (y/N)" on it and waits for an answer.
pub struct PermissionWait {
    pub store: TempStore,
    pub trace_id: i64,
    acpx: Child,
    terminal: File,
    screen: Arc<Mutex<Vec<u8>>>,
}

/// Starts acpx on a pty against the recorded agent and returns once the
/// agent's `session/request_permission` is in the store and acpx shows its
/// question on the terminal.
pub fn start_permission_wait(agent_args: &[&str]) -> PermissionWait {
    let store = TempStore::new();
    let (terminal, tty) = open_pty();
    let mut acpx = Command::new(acpx())
        .args(["--format", "json", "--agent", &command_line(&teed_agent(&store.db, agent_args)), "exec", PROMPT])
        .current_dir(store.dir.path())
        .stdin(tty.try_clone().unwrap())
        .stderr(tty)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn acpx");
    let screen = Arc::new(Mutex::new(Vec::new()));
    let mut reader = terminal.try_clone().unwrap();
    let shown = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO once every process holding the tty is gone.
        while let Ok(n @ 1..) = reader.read(&mut buf) {
            shown.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let deadline = Instant::now() + RUN_LIMIT;
    let trace_id = loop {
        let asking = String::from_utf8_lossy(&screen.lock().unwrap()).contains("[permission] Allow");
        if let Some(trace) = asking.then(|| live_trace(&store.db)).flatten() {
            if read_frames(&store.db, trace).iter().any(|f| f.stored.method.as_deref() == Some(PERMISSION)) {
                break trace;
            }
        }
        if let Some(status) = acpx.try_wait().unwrap() {
            panic!("acpx ended ({status}) before asking: {}", String::from_utf8_lossy(&screen.lock().unwrap()));
        }
        assert!(Instant::now() < deadline, "acpx never asked for permission");
        std::thread::sleep(Duration::from_millis(20));
    };
    PermissionWait { store, trace_id, acpx, terminal, screen }
}

pub const PERMISSION: &str = "session/request_permission";

/// The id of the store's one trace, when there is one.
pub fn live_trace(db: &Path) -> Option<i64> {
    if !db.exists() {
        return None;
    }
    let traces = Reader::open(db).ok()?.list_traces().ok()?;
    traces.first().map(|t| t.id)
}

impl PermissionWait {
    /// The trace's frames so far.
    pub fn frames(&self) -> Vec<Frame> {
        read_frames(&self.store.db, self.trace_id)
    }

    /// Whether acpx is still running (still waiting, until answered).
    pub fn client_running(&mut self) -> bool {
        self.acpx.try_wait().unwrap().is_none()
    }

    /// Types `y` or `n` and Enter at acpx's question, then waits for acpx to
    /// exit and the trace to end.
    pub fn answer(&mut self, yes: bool) {
        self.terminal.write_all(if yes { b"y\r" } else { b"n\r" }).unwrap();
        let status = wait_within(&mut self.acpx, RUN_LIMIT).unwrap_or_else(|| {
            panic!("acpx hung after the answer: {}", String::from_utf8_lossy(&self.screen.lock().unwrap()))
        });
        assert!(status.success(), "acpx failed: {}", String::from_utf8_lossy(&self.screen.lock().unwrap()));
        self.store.only_trace();
    }
}

impl Drop for PermissionWait {
    /// Ends a client still waiting (a failed test): acp-tee then reads
    /// end-of-file from it and the agent ends too.
    fn drop(&mut self) {
        if self.client_running() {
            let _ = self.acpx.kill();
            let _ = self.acpx.wait();
        }
    }
}

/// A new pseudo-terminal: (the test's end, the end a client gets as its
/// terminal).
pub fn open_pty() -> (File, File) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two new descriptors into the two ints; the
    // name, termios and winsize pointers may be null.
    let rc =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are new and owned by nothing else.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // openpty cannot open them close-on-exec: without it, a process another
    // test of this process starts meanwhile would hold the terminal open.
    for fd in [&master, &slave] {
        // SAFETY: fcntl on a descriptor this function owns.
        let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
        assert_eq!(rc, 0, "fcntl: {}", std::io::Error::last_os_error());
    }
    (File::from(master), File::from(slave))
}

/// A turn cancelled by a real `session/cancel`: acpx's queued sessions
/// (`acpx sessions new`, `acpx prompt` in the background, `acpx cancel`,
/// `acpx sessions close`) against `py_agent.py --until-cancel`, whose turn
/// waits after starting its tool call. acpx keeps its session records under
/// `$HOME/.acpx`, so it runs with HOME in the temporary directory. Returns
/// the run of the trace that holds the prompt (`sessions new` records one
/// of its own, ended once the session is made).
pub fn record_cancel_with_acpx() -> Recorded {
    let store = TempStore::new();
    let home = store.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let agent = command_line(&teed_agent(&store.db, &["--until-cancel"]));
    let acpx_cmd = |args: &[&str]| {
        let mut cmd = Command::new(acpx());
        // A queue owner left behind by a failed test stops after this many
        // idle seconds.
        cmd.args(["--ttl", "30", "--format", "json", "--agent", &agent]).args(args);
        cmd.current_dir(store.dir.path()).env("HOME", &home);
        cmd
    };
    let made = run_within(acpx_cmd(&["sessions", "new"]));
    assert!(made.status.success(), "acpx sessions new: {}", String::from_utf8_lossy(&made.stderr));

    let mut prompt = acpx_cmd(&["prompt", PROMPT]);
    prompt.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut prompting = prompt.spawn().expect("spawn acpx prompt");
    let stderr = read_to_end_on_thread(prompting.stderr.take().unwrap());
    let deadline = Instant::now() + RUN_LIMIT;
    let trace_id = loop {
        let started = Reader::open(&store.db).ok().and_then(|r| r.list_traces().ok()).unwrap_or_default();
        let turn = started
            .iter()
            .map(|t| t.id)
            .find(|&id| !tool_updates(&read_frames(&store.db, id), "in_progress").is_empty());
        if let Some(id) = turn {
            break id;
        }
        assert!(prompting.try_wait().unwrap().is_none(), "acpx prompt ended before the tool call started");
        assert!(Instant::now() < deadline, "the tool call never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let cancel = run_within(acpx_cmd(&["cancel"]));
    assert!(cancel.status.success(), "acpx cancel: {}", String::from_utf8_lossy(&cancel.stderr));
    let status = wait_within(&mut prompting, RUN_LIMIT).expect("acpx prompt hung after the cancel");
    assert!(status.success(), "acpx prompt: {}", String::from_utf8_lossy(&stderr.recv().unwrap().0));
    let closed = run_within(acpx_cmd(&["sessions", "close"]));
    assert!(closed.status.success(), "acpx sessions close: {}", String::from_utf8_lossy(&closed.stderr));
    store.ended_traces(2);
    Recorded { store, trace_id }
}

// ---- what the frames must hold ---------------------------------------------

/// The frames that are `method` messages of `kind` going `dir`.
pub fn messages<'a>(frames: &'a [Frame], dir: Direction, kind: FrameKind, method: &str) -> Vec<&'a Frame> {
    frames
        .iter()
        .filter(|f| f.stored.dir == dir && f.stored.kind == kind && f.stored.method.as_deref() == Some(method))
        .collect()
}

/// The one `method` request going `dir`.
pub fn request<'a>(frames: &'a [Frame], dir: Direction, method: &str) -> &'a Frame {
    let found = messages(frames, dir, FrameKind::Request, method);
    assert_eq!(found.len(), 1, "expected one {method} request");
    found[0]
}

/// The response to `req`, if one was recorded.
pub fn response_to<'a>(frames: &'a [Frame], req: &Frame) -> Option<&'a Frame> {
    frames.iter().find(|f| f.stored.reply_to_seq == Some(req.stored.seq))
}

/// The agent's `session/update` notifications of `update_kind`, in order.
pub fn updates<'a>(frames: &'a [Frame], update_kind: &str) -> Vec<&'a Frame> {
    messages(frames, Direction::AgentToClient, FrameKind::Notification, "session/update")
        .into_iter()
        .filter(|f| f.json["params"]["update"]["sessionUpdate"] == update_kind)
        .collect()
}

/// The `tool_call_update`s of the scripted tool call that set `status`.
pub fn tool_updates<'a>(frames: &'a [Frame], status: &str) -> Vec<&'a Frame> {
    updates(frames, "tool_call_update")
        .into_iter()
        .filter(|f| f.json["params"]["update"]["toolCallId"] == TOOL_CALL_ID)
        .filter(|f| f.json["params"]["update"]["status"] == status)
        .collect()
}

/// Asserts the part of py_agent.py's turn that comes before the permission
/// answer: the prompt, the thought and message chunks, the plan, the tool
/// call (pending, titled, with kind and location) then in progress, and the
/// permission request for it. Returns the permission request.
pub fn assert_turn_until_permission<'a>(frames: &'a [Frame], tool_kind: &str) -> &'a Frame {
    let prompt = request(frames, Direction::ClientToAgent, "session/prompt");
    assert_eq!(prompt.json["params"]["prompt"][0]["text"], PROMPT);
    let session = prompt.json["params"]["sessionId"].clone();
    assert!(session.is_string());

    assert_eq!(updates(frames, "agent_thought_chunk").len(), 1);
    let chunks = updates(frames, "agent_message_chunk");
    assert!(chunks.len() >= 4, "{} message chunks", chunks.len());
    let text: String = chunks.iter().map(|f| f.json["params"]["update"]["content"]["text"].as_str().unwrap()).collect();
    assert!(text.starts_with("Hello from the Python SDK agent. I will look at README.md for you."), "{text:?}");
    assert!(!updates(frames, "plan").is_empty());

    let calls = updates(frames, "tool_call");
    assert_eq!(calls.len(), 1);
    let call = &calls[0].json["params"]["update"];
    assert_eq!(call["toolCallId"], TOOL_CALL_ID);
    assert_eq!(call["status"], "pending");
    assert_eq!(call["kind"], tool_kind);
    assert!(call["title"].as_str().is_some_and(|t| t.ends_with("README.md")), "{call}");
    assert!(call["locations"][0]["path"].as_str().is_some_and(|p| p.ends_with("/README.md")), "{call}");
    assert_eq!(tool_updates(frames, "in_progress").len(), 1);

    let ask = request(frames, Direction::AgentToClient, PERMISSION);
    assert_eq!(ask.stored.session_id.as_deref(), session.as_str());
    assert_eq!(ask.json["params"]["toolCall"]["toolCallId"], TOOL_CALL_ID);
    let options: Vec<&str> =
        ask.json["params"]["options"].as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect();
    assert!(options.contains(&"reject-once"), "{options:?}");
    for f in [calls[0], tool_updates(frames, "in_progress")[0]] {
        assert!(f.stored.seq < ask.stored.seq, "the tool call started after the permission request");
    }
    ask
}

/// Asserts a whole scripted turn: what [`assert_turn_until_permission`]
/// checks, the client's answer selecting `selected`, the tool call then
/// ending `tool_status` after the answer, and the prompt's response with
/// stopReason `end_turn` and the turn's usage. Returns the prompt response.
pub fn assert_whole_turn<'a>(frames: &'a [Frame], tool_kind: &str, selected: &str, tool_status: &str) -> &'a Frame {
    let ask = assert_turn_until_permission(frames, tool_kind);
    let answer = response_to(frames, ask).expect("the permission request was answered");
    assert_eq!(answer.stored.dir, Direction::ClientToAgent);
    assert_eq!(answer.stored.kind, FrameKind::Response);
    assert_eq!(answer.json["result"]["outcome"]["outcome"], "selected");
    assert_eq!(answer.json["result"]["outcome"]["optionId"], selected);
    assert!(ask.json["params"]["options"].as_array().unwrap().iter().any(|o| o["optionId"] == selected));

    let ended = tool_updates(frames, tool_status);
    assert_eq!(ended.len(), 1, "expected the tool call to end {tool_status}");
    assert!(ended[0].stored.seq > answer.stored.seq, "the tool call ended before the answer");
    assert!(ended[0].json["params"]["update"]["content"][0]["content"]["text"].is_string());

    let prompt = request(frames, Direction::ClientToAgent, "session/prompt");
    let done = response_to(frames, prompt).expect("the prompt was answered");
    assert_eq!(done.stored.dir, Direction::AgentToClient);
    assert_eq!(done.json["result"]["stopReason"], "end_turn");
    assert_eq!(done.json["result"]["usage"]["totalTokens"], 184);
    assert!(done.stored.seq > ended[0].stored.seq);
    done
}
