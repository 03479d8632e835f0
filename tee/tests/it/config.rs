//! The config file and the environment (docs/config.md) driving the real
//! binary: a wrapped agent records where and how they say, a flag beats the
//! environment, the environment beats the file; a bad file is one warning
//! naming its line while the agent is still relayed and recorded, and an
//! error for the other commands; `acp-tee config` says where each setting
//! came from.
//!
//! The other suites' acp-tee never sees a config: `common` points
//! `ACP_TEE_CONFIG` at /dev/null for the whole test process. These tests set
//! their own on each command.

use crate::common::*;
use acp_tee_shared::Direction;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A client's messages: `cwd` and a name only a user rule masks, an MCP
/// server's env value the default rules mask.
fn session() -> Vec<u8> {
    [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/me/project","mcpServers":[{"name":"gh","command":"/bin/gh-mcp","args":[],"env":[{"name":"GITHUB_TOKEN","value":"SECRET-ENV"}]}]}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"my name is Zebediah"}]}}"#,
    ]
    .map(|l| format!("{l}\n"))
    .concat()
    .into_bytes()
}

/// What a user rule or a default rule masks in [`session`].
const MASKED: [&str; 3] = ["/home/me/project", "Zebediah", "SECRET-ENV"];

/// A directory to be XDG_CONFIG_HOME, its config file holding `text`.
struct ConfigHome {
    dir: tempfile::TempDir,
}

impl ConfigHome {
    fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("acp-tee")).unwrap();
        std::fs::write(dir.path().join("acp-tee/config.toml"), text).unwrap();
        ConfigHome { dir }
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("acp-tee/config.toml")
    }

    /// `acp-tee ARGS` reading this config home's file and, of the settings'
    /// variables, only `env`.
    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        for var in acp_tee::CONFIG_ENV_VARS {
            cmd.env_remove(var);
        }
        cmd.env("XDG_CONFIG_HOME", self.dir.path()).envs(env.iter().copied());
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    /// `acp-tee [flags] -- cat` fed [`session`]: `cat` echoes every message,
    /// so what reaches the client is what the client sent.
    fn record(&self, flags: &[&str], env: &[(&str, &str)]) -> Output {
        let args = [flags, &["--", "cat"]].concat();
        let out = run_with_input(self.command(&args, env), session());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.stdout, session(), "the relay forwards the bytes untouched");
        out
    }
}

/// The store at `db`, as a [`TempStore`] reads it (the directory is the
/// test's own, kept by its owner).
fn store_at(db: &Path) -> TempStore {
    TempStore { dir: tempfile::tempdir().unwrap(), db: db.to_owned() }
}

/// What the store at `db` holds of the client's messages, once its one trace ended.
fn stored_client_side(db: &Path) -> String {
    let store = store_at(db);
    let trace = store.only_trace();
    String::from_utf8(store.stream(trace.id, Direction::ClientToAgent)).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_file_and_the_environment_drive_a_wrapped_agent() {
    let stores = tempfile::tempdir().unwrap();
    let [from_file, from_env, from_flag] = ["file.db", "env.db", "flag.db"].map(|n| stores.path().join(n));
    let home = ConfigHome::new(&format!(
        "# where and how acp-tee records\ndb = \"{}\"\n\n[record]\nredact_rules = [\"$.params.cwd\", \"Zebedi[a-z]+\"]\n",
        from_file.display()
    ));

    // The file's store, masked by the file's rules (and the default ones).
    let out = home.record(&[], &[]);
    assert_eq!(stderr(&out), "");
    let stored = stored_client_side(&from_file);
    assert!(MASKED.iter().all(|s| !stored.contains(s)), "{stored}");
    assert_eq!(stored.matches("[REDACTED]").count(), 3, "{stored}");
    assert!(stored.contains("GITHUB_TOKEN") && stored.contains("my name is [REDACTED]"), "{stored}");

    // ACP_TEE_DB beats the file's store; ACP_TEE_REDACT=off its masking.
    home.record(&[], &[("ACP_TEE_DB", from_env.to_str().unwrap()), ("ACP_TEE_REDACT", "off")]);
    let stored = stored_client_side(&from_env);
    assert!(MASKED.iter().all(|s| stored.contains(s)), "{stored}");
    assert_eq!(store_at(&from_file).ended_traces(1).len(), 1, "nothing more went to the file's store");

    // Flags beat both: --db over ACP_TEE_DB, --redact=RULE's rules over the file's.
    home.record(
        &["--db", from_flag.to_str().unwrap(), "--redact=Zebedi[a-z]+"],
        &[("ACP_TEE_DB", from_env.to_str().unwrap()), ("ACP_TEE_REDACT", "off")],
    );
    let stored = stored_client_side(&from_flag);
    assert!(stored.contains("/home/me/project"), "the file's $.params.cwd rule is replaced: {stored}");
    assert!(!stored.contains("Zebediah") && !stored.contains("SECRET-ENV"), "{stored}");
    assert_eq!(store_at(&from_env).ended_traces(1).len(), 1, "nothing more went to ACP_TEE_DB's store");

    // The readers follow the same store: `list` reads the file's.
    let out = home.command(&["list"], &[]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(listed.lines().filter(|l| l.contains("cat")).count(), 1, "{listed}");
}

#[test]
fn a_bad_file_names_its_line_and_the_agent_is_still_relayed_and_recorded() {
    let stores = tempfile::tempdir().unwrap();
    let db = stores.path().join("traces.db");
    let home = ConfigHome::new("[record]\nredact = true\nredcat_rules = [\"Zebedi[a-z]+\"]\n");
    let file = home.file().display().to_string();

    let out = home.record(&[], &[("ACP_TEE_DB", db.to_str().unwrap())]);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with(&format!("acp-tee: warning: config {file} line 3: unknown field `redcat_rules`")), "{err}");
    assert!(err.trim_end().ends_with("; recording with the flags, environment and defaults"), "{err}");
    // Recorded where the environment says, unmasked as the defaults say (the
    // file's `redact = true` went with the rest of the file).
    let stored = stored_client_side(&db);
    assert!(MASKED.iter().all(|s| stored.contains(s)), "{stored}");

    // A file that is not TOML at all: the same.
    let home = ConfigHome::new("db = \"/x.db\"\n\n[otlp\n");
    let out = home.record(&["--db", db.to_str().unwrap()], &[]);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("acp-tee: warning: config {} line 3: ", home.file().display())), "{err}");
    assert_eq!(store_at(&db).ended_traces(2).len(), 2);

    // Any other command stops on it, exit status 2 (bad input), `config` too.
    for args in [&["list"][..], &["config"]] {
        let out = home.command(args, &[("ACP_TEE_DB", db.to_str().unwrap())]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with(&format!("acp-tee: error: config {} line 3: ", home.file().display())), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }

    // A bad variable: a warning when recording, an error elsewhere.
    let home = ConfigHome::new("");
    let out = home.record(&["--db", db.to_str().unwrap()], &[("ACP_TEE_REDACT", "perhaps")]);
    assert!(
        stderr(&out).starts_with("acp-tee: warning: ACP_TEE_REDACT=\"perhaps\": not a boolean"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).trim_end().ends_with("; recording as if ACP_TEE_REDACT were not set"), "{}", stderr(&out));
    let out =
        home.command(&["list", "--db", db.to_str().unwrap()], &[("ACP_TEE_SERVE_PORT", "http")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "acp-tee: error: ACP_TEE_SERVE_PORT=\"http\": `http` is not a port (0 to 65535)\n");
}

#[test]
fn a_config_file_named_by_acp_tee_config_must_exist() {
    let home = ConfigHome::new("");
    let out = home.command(&["config"], &[("ACP_TEE_CONFIG", "/nonexistent/acp-tee.toml")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "acp-tee: error: config /nonexistent/acp-tee.toml: no such file (named by ACP_TEE_CONFIG)\n"
    );
}

#[test]
fn config_prints_each_setting_and_where_it_came_from() {
    let home = ConfigHome::new(
        "db = \"/from/file.db\"\n\n[serve]\nport = 9999\n\n[retention]\nolder_than = \"30d\"\nmax_size = \"2GB\"\n",
    );
    let file = home.file().display().to_string();
    let env = [("ACP_TEE_SERVE_BIND", "0.0.0.0"), ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer HIDDEN")];
    let out = home.command(&["config"], &env).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("HIDDEN"), "{text}");
    let row = |key: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(&format!("{key} "))).unwrap_or_else(|| panic!("{key}: {text}"));
        line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(str::to_owned).collect()
    };
    assert_eq!(text.lines().next().unwrap(), format!("config file: {file} (found)"));
    assert_eq!(row("db"), ["db", "/from/file.db", &format!("file {file}:1"), "ACP_TEE_DB"]);
    assert_eq!(row("serve.port"), ["serve.port", "9999", &format!("file {file}:4"), "ACP_TEE_SERVE_PORT"]);
    assert_eq!(row("serve.bind"), ["serve.bind", "0.0.0.0", "env ACP_TEE_SERVE_BIND", "ACP_TEE_SERVE_BIND"]);
    assert_eq!(row("record.redact"), ["record.redact", "off", "default", "ACP_TEE_REDACT"]);
    assert_eq!(row("retention.older_than")[1..3], ["30d".to_owned(), format!("file {file}:7")]);
    assert_eq!(row("retention.max_size")[1], "2000000000 bytes");
    assert_eq!(row("retention.keep")[1..3], ["not set", "default"]);
    assert!(text.contains("OTLP headers from the environment: authorization (values not shown)"), "{text}");

    // A flag, and the same as JSON.
    let out = home.command(&["config", "--db", "/from/flag.db", "--format", "json"], &env).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("HIDDEN"));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["file"], serde_json::json!({"path": file, "exists": true, "named_by": null}));
    let settings = doc["settings"].as_array().unwrap();
    assert_eq!(settings.len(), acp_tee::CONFIG_ENV_VARS.len() - 1);
    let db = &settings[0];
    assert_eq!(
        (&db["key"], &db["value"], &db["source"], &db["env"]),
        (&"db".into(), &"/from/flag.db".into(), &"flag".into(), &"ACP_TEE_DB".into())
    );
    let max = settings.iter().find(|s| s["key"] == "retention.max_size").unwrap();
    assert_eq!(max["value"], 2_000_000_000u64);
    assert_eq!(doc["otlp_headers"], serde_json::json!(["authorization"]));

    // No file: the defaults, and where a file would be read from.
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = home.command(&["config"], &[]);
    cmd.env("XDG_CONFIG_HOME", empty.path());
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let expected =
        format!("config file: {} (not found; none is needed)", empty.path().join("acp-tee/config.toml").display());
    assert_eq!(text.lines().next().unwrap(), expected);
    assert!(text.lines().skip(3).all(|l| l.is_empty() || l.contains("default")), "{text}");
}
