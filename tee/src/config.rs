//! The settings of docs/config.md: the config file
//! (`$XDG_CONFIG_HOME/acp-tee/config.toml`, else
//! `~/.config/acp-tee/config.toml`, or `$ACP_TEE_CONFIG`), the environment
//! (`ACP_TEE_DB`, ...) and the defaults, layered environment > file >
//! default. A command's flags come on top where the setting is used
//! ([`Setting::or_flag`]), so each setting is resolved in one place.
//!
//! [`Config::load`] reads the environment through a function and the file
//! from disk, and returns what it could use with the errors of what it
//! could not: a file with any error is left out whole, a bad environment
//! variable is left out alone. The command line decides what an error
//! means (recording goes on with a warning; the other commands stop).

use crate::otlp::TraceScope;
use crate::redact::Rule;
use serde::Deserialize;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use toml::Spanned;

/// The variable naming another config file (one that must exist).
pub const CONFIG_ENV: &str = "ACP_TEE_CONFIG";

/// A setting's names: its key in the file and its environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    /// `db`, `record.redact`, ...: the table and the key in the file.
    pub toml: &'static str,
    /// `ACP_TEE_DB`, ...
    pub env: &'static str,
    /// The flags that set it, for `acp-tee config` (empty: none yet).
    pub flags: &'static str,
}

pub(crate) const DB: Key = Key { toml: "db", env: "ACP_TEE_DB", flags: "--db" };
pub(crate) const REDACT: Key =
    Key { toml: "record.redact", env: "ACP_TEE_REDACT", flags: "--redact, --no-redact (record, proxy, http-proxy)" };
pub(crate) const REDACT_RULES: Key = Key {
    toml: "record.redact_rules",
    env: "ACP_TEE_REDACT_RULES",
    flags: "--redact=RULE (record, proxy, http-proxy)",
};
pub(crate) const OTLP_ENDPOINT: Key =
    Key { toml: "otlp.endpoint", env: "ACP_TEE_OTLP_ENDPOINT", flags: "--otlp-endpoint[=URL] (record, proxy, export)" };
pub(crate) const OTLP_CONTENT: Key =
    Key { toml: "otlp.content", env: "ACP_TEE_OTLP_CONTENT", flags: "--otlp-content (record, proxy, export)" };
pub(crate) const OTLP_TRACE_PER: Key =
    Key { toml: "otlp.trace_per", env: "ACP_TEE_OTLP_TRACE_PER", flags: "--otlp-trace-per (record, proxy, export)" };
pub(crate) const SERVE_BIND: Key = Key { toml: "serve.bind", env: "ACP_TEE_SERVE_BIND", flags: "--bind (serve)" };
pub(crate) const SERVE_PORT: Key = Key { toml: "serve.port", env: "ACP_TEE_SERVE_PORT", flags: "--port (serve)" };
pub(crate) const OLDER_THAN: Key =
    Key { toml: "retention.older_than", env: "ACP_TEE_RETENTION_OLDER_THAN", flags: "--older-than (prune)" };
pub(crate) const KEEP: Key = Key { toml: "retention.keep", env: "ACP_TEE_RETENTION_KEEP", flags: "--keep (prune)" };
pub(crate) const MAX_SIZE: Key =
    Key { toml: "retention.max_size", env: "ACP_TEE_RETENTION_MAX_SIZE", flags: "--max-size (prune)" };

/// Every setting, in the order `acp-tee config` shows them.
pub(crate) const KEYS: [Key; 11] = [
    DB,
    REDACT,
    REDACT_RULES,
    OTLP_ENDPOINT,
    OTLP_CONTENT,
    OTLP_TRACE_PER,
    SERVE_BIND,
    SERVE_PORT,
    OLDER_THAN,
    KEEP,
    MAX_SIZE,
];

/// Every variable the settings are read from, `ACP_TEE_CONFIG` first.
pub const ENV_VARS: [&str; 12] = [
    CONFIG_ENV,
    "ACP_TEE_DB",
    "ACP_TEE_REDACT",
    "ACP_TEE_REDACT_RULES",
    "ACP_TEE_OTLP_ENDPOINT",
    "ACP_TEE_OTLP_CONTENT",
    "ACP_TEE_OTLP_TRACE_PER",
    "ACP_TEE_SERVE_BIND",
    "ACP_TEE_SERVE_PORT",
    "ACP_TEE_RETENTION_OLDER_THAN",
    "ACP_TEE_RETENTION_KEEP",
    "ACP_TEE_RETENTION_MAX_SIZE",
];

/// The port `serve` listens on by default.
pub(crate) const DEFAULT_PORT: u16 = 7878;

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A command-line flag.
    Flag,
    /// An environment variable.
    Env(&'static str),
    /// The config file, at this line (1-based).
    File { path: PathBuf, line: usize },
    /// Nothing set it.
    Default,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Flag => f.write_str("flag"),
            Source::Env(var) => write!(f, "env {var}"),
            Source::File { path, line } => write!(f, "file {}:{line}", path.display()),
            Source::Default => f.write_str("default"),
        }
    }
}

/// A setting's value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting<T> {
    pub value: T,
    pub source: Source,
}

impl<T: Clone> Setting<T> {
    /// The flag's value when it was given, else this setting.
    pub(crate) fn or_flag(&self, flag: Option<T>) -> Setting<T> {
        match flag {
            Some(value) => Setting { value, source: Source::Flag },
            None => self.clone(),
        }
    }
}

/// What a config file or a variable holds that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The file cannot be read, is not TOML, or holds an unknown key or a
    /// bad value; `line` is 1-based (0: the file as a whole).
    #[error("{}", file_error_text(path, *line, message))]
    File { path: PathBuf, line: usize, message: String },
    /// An environment variable's value is not what its setting takes.
    #[error("{var}={value:?}: {message}")]
    Env { var: &'static str, value: String, message: String },
}

fn file_error_text(path: &Path, line: usize, message: &str) -> String {
    match line {
        0 => format!("config {}: {message}", path.display()),
        _ => format!("config {} line {line}: {message}", path.display()),
    }
}

impl ConfigError {
    /// What a recording does about it, to end its warning.
    pub(crate) fn recording_goes_on(&self) -> String {
        match self {
            ConfigError::File { .. } => "recording with the flags, environment and defaults".to_owned(),
            ConfigError::Env { var, .. } => format!("recording as if {var} were not set"),
        }
    }
}

/// The config file's path and whether it was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileInfo {
    /// None when neither `ACP_TEE_CONFIG`, `XDG_CONFIG_HOME` nor `HOME` is set.
    pub path: Option<PathBuf>,
    /// Named by `ACP_TEE_CONFIG` (rather than the default place).
    pub from_env: bool,
    pub exists: bool,
}

/// Retention: how much of the store to keep (traces older than
/// `older_than`, beyond the newest `keep`, or beyond `max_size` bytes of
/// store may be pruned). Parsed and shown here; pruning is the store's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention {
    pub older_than: Option<Duration>,
    pub keep: Option<u64>,
    /// Bytes.
    pub max_size: Option<u64>,
}

/// The settings of the environment and the file (the flags are the
/// commands').
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Config {
    pub file: FileInfo,
    /// The store; None: `store::default_path()`.
    pub db: Setting<Option<PathBuf>>,
    /// Record-time masking on or off; None when nothing set it (then it is
    /// on exactly when rules are set: see [`Config::record_redact`]).
    pub redact: Setting<Option<bool>>,
    pub redact_rules: Setting<Vec<String>>,
    /// The live export's endpoint (record, proxy); None: no live export.
    /// Also the URL of a bare `--otlp-endpoint`.
    pub otlp_endpoint: Setting<Option<String>>,
    pub otlp_content: Setting<bool>,
    pub otlp_trace_per: Setting<TraceScope>,
    pub serve_bind: Setting<IpAddr>,
    pub serve_port: Setting<u16>,
    pub older_than: Setting<Option<Duration>>,
    pub keep: Setting<Option<u64>>,
    pub max_size: Setting<Option<u64>>,
}

impl Default for Config {
    /// The defaults alone: no file, no environment.
    fn default() -> Self {
        let d = || Source::Default;
        Config {
            file: FileInfo { path: None, from_env: false, exists: false },
            db: Setting { value: None, source: d() },
            redact: Setting { value: None, source: d() },
            redact_rules: Setting { value: Vec::new(), source: d() },
            otlp_endpoint: Setting { value: None, source: d() },
            otlp_content: Setting { value: false, source: d() },
            otlp_trace_per: Setting { value: TraceScope::Session, source: d() },
            serve_bind: Setting { value: IpAddr::V4(Ipv4Addr::LOCALHOST), source: d() },
            serve_port: Setting { value: DEFAULT_PORT, source: d() },
            older_than: Setting { value: None, source: d() },
            keep: Setting { value: None, source: d() },
            max_size: Setting { value: None, source: d() },
        }
    }
}

static CURRENT: OnceLock<Config> = OnceLock::new();

/// Makes `config` the one [`current`] returns (the command line does, once,
/// before it runs a command; later calls change nothing).
pub(crate) fn set_current(config: Config) {
    let _ = CURRENT.set(config);
}

/// The settings the command runs with (the defaults when none were set).
pub(crate) fn current() -> &'static Config {
    CURRENT.get_or_init(Config::default)
}

impl Config {
    /// Reads the settings from the environment (through `env`) and the
    /// config file; returns what can be used and the errors of what cannot.
    pub(crate) fn load(env: &dyn Fn(&str) -> Option<String>) -> (Config, Vec<ConfigError>) {
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let mut errors = Vec::new();
        let file = file_info(&env);
        let values = match &file.path {
            Some(path) if file.exists || file.from_env => match read_file(path) {
                Ok(values) => values,
                Err(e) => {
                    errors.push(e);
                    FileValues::default()
                }
            },
            _ => FileValues::default(),
        };
        let mut c = Config { file: file.clone(), ..Config::default() };
        let path = file.path.clone().unwrap_or_default();
        let file_db = values.db.map(|(p, line)| (expand_home(&p, &env), line));
        macro_rules! set {
            ($field:ident, $key:expr, $file:expr, $parse:expr, $wrap:expr) => {{
                let from_env = env($key.env).and_then(|v| match $parse(v.trim()) {
                    Ok(x) => Some(x),
                    Err(message) => {
                        errors.push(ConfigError::Env { var: $key.env, value: v.clone(), message });
                        None
                    }
                });
                if let Some(x) = from_env {
                    c.$field = Setting { value: $wrap(x), source: Source::Env($key.env) };
                } else if let Some((x, line)) = $file {
                    c.$field = Setting { value: $wrap(x), source: Source::File { path: path.clone(), line } };
                }
            }};
        }
        set!(db, DB, file_db, |v: &str| Ok::<_, String>(expand_home(v, &env)), Some);
        set!(redact, REDACT, values.redact, parse_bool, Some);
        set!(redact_rules, REDACT_RULES, values.redact_rules, parse_rules_env, |x| x);
        set!(otlp_endpoint, OTLP_ENDPOINT, values.otlp_endpoint, parse_endpoint_env, |x| x);
        set!(otlp_content, OTLP_CONTENT, values.otlp_content, parse_bool, |x| x);
        set!(otlp_trace_per, OTLP_TRACE_PER, values.otlp_trace_per, parse_scope, |x| x);
        set!(serve_bind, SERVE_BIND, values.serve_bind, parse_ip, |x| x);
        set!(serve_port, SERVE_PORT, values.serve_port, parse_port, |x| x);
        set!(older_than, OLDER_THAN, values.older_than, parse_age, Some);
        set!(keep, KEEP, values.keep, parse_keep, Some);
        set!(max_size, MAX_SIZE, values.max_size, parse_size, Some);
        (c, errors)
    }

    /// Whether recording masks secrets before storing: `redact` when set,
    /// else on exactly when rules are set.
    pub(crate) fn record_redact(&self) -> Setting<bool> {
        match self.redact.value {
            Some(on) => Setting { value: on, source: self.redact.source.clone() },
            None if !self.redact_rules.value.is_empty() => {
                Setting { value: true, source: self.redact_rules.source.clone() }
            }
            None => Setting { value: false, source: Source::Default },
        }
    }

    /// The retention settings.
    pub fn retention(&self) -> Retention {
        Retention { older_than: self.older_than.value, keep: self.keep.value, max_size: self.max_size.value }
    }
}

impl From<Retention> for crate::store::Policy {
    fn from(r: Retention) -> Self {
        crate::store::Policy { older_than: r.older_than, keep: r.keep, max_size: r.max_size }
    }
}

/// Where the config file is: `ACP_TEE_CONFIG`, else
/// `$XDG_CONFIG_HOME/acp-tee/config.toml` (an absolute XDG_CONFIG_HOME), else
/// `~/.config/acp-tee/config.toml`.
fn file_info(env: &dyn Fn(&str) -> Option<String>) -> FileInfo {
    let (path, from_env) = match env(CONFIG_ENV) {
        Some(p) => (Some(expand_home(&p, env)), true),
        None => {
            let dir = env("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")));
            (dir.map(|d| d.join("acp-tee").join("config.toml")), false)
        }
    };
    let exists = path.as_ref().is_some_and(|p| p.exists());
    FileInfo { path, from_env, exists }
}

/// `~/x` as `$HOME/x` (anything else as it is).
fn expand_home(p: &str, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match (p.strip_prefix("~/"), env("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// The file's values, each with its line.
#[derive(Debug, Default)]
struct FileValues {
    db: Option<(String, usize)>,
    redact: Option<(bool, usize)>,
    redact_rules: Option<(Vec<String>, usize)>,
    otlp_endpoint: Option<(Option<String>, usize)>,
    otlp_content: Option<(bool, usize)>,
    otlp_trace_per: Option<(TraceScope, usize)>,
    serve_bind: Option<(IpAddr, usize)>,
    serve_port: Option<(u16, usize)>,
    older_than: Option<(Duration, usize)>,
    keep: Option<(u64, usize)>,
    max_size: Option<(u64, usize)>,
}

// The file as written. Unknown keys are errors, so a misspelt key is not
// quietly ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    db: Option<Spanned<String>>,
    #[serde(default)]
    record: RawRecord,
    #[serde(default)]
    otlp: RawOtlp,
    #[serde(default)]
    serve: RawServe,
    #[serde(default)]
    retention: RawRetention,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    redact: Option<Spanned<bool>>,
    redact_rules: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOtlp {
    endpoint: Option<Spanned<String>>,
    content: Option<Spanned<bool>>,
    trace_per: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServe {
    bind: Option<Spanned<String>>,
    port: Option<Spanned<u16>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetention {
    older_than: Option<Spanned<String>>,
    keep: Option<Spanned<u64>>,
    max_size: Option<Spanned<SizeValue>>,
}

/// `max_size = "2GB"` or `max_size = 2000000000`.
#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "expected a size such as \"2GB\", \"500MiB\" or a number of bytes")]
enum SizeValue {
    Bytes(u64),
    Text(String),
}

fn read_file(path: &Path) -> Result<FileValues, ConfigError> {
    let whole = |message: String| ConfigError::File { path: path.to_owned(), line: 0, message };
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => whole(format!("no such file (named by {CONFIG_ENV})")),
        _ => whole(format!("cannot be read: {e}")),
    })?;
    parse_file(path, &text)
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Parses a config file's text (`path` names it in errors).
fn parse_file(path: &Path, text: &str) -> Result<FileValues, ConfigError> {
    let error = |offset: usize, message: String| ConfigError::File {
        path: path.to_owned(),
        line: line_of(text, offset),
        message,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(span) => {
                // toml's messages do not name the key ("invalid type:
                // string \"x\", expected u16"): the line's key is put first.
                let line = text[..span.start.min(text.len())].rsplit('\n').next().unwrap_or("").to_owned()
                    + text[span.start.min(text.len())..].split('\n').next().unwrap_or("");
                let key = line
                    .split_once('=')
                    .map(|(k, _)| k.trim())
                    .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "_-.\"'".contains(c)));
                match key {
                    Some(key) if !message.contains(&format!("`{key}`")) => {
                        error(span.start, format!("{key}: {message}"))
                    }
                    _ => error(span.start, message),
                }
            }
            None => ConfigError::File { path: path.to_owned(), line: 0, message },
        }
    })?;
    // Each value checked as its environment variable is, its line added.
    fn check<T, U>(
        v: Option<Spanned<T>>,
        parse: impl Fn(&T) -> Result<U, String>,
        key: Key,
        error: &dyn Fn(usize, String) -> ConfigError,
        line: &dyn Fn(usize) -> usize,
    ) -> Result<Option<(U, usize)>, ConfigError> {
        let Some(v) = v else { return Ok(None) };
        let start = v.span().start;
        let parsed = parse(v.get_ref()).map_err(|m| error(start, format!("{}: {m}", key.toml)))?;
        Ok(Some((parsed, line(start))))
    }
    let line = |offset: usize| line_of(text, offset);
    let db = check(
        raw.db,
        |p: &String| match p.as_str() {
            p if p.starts_with("~/") || Path::new(p).is_absolute() => Ok(p.to_owned()),
            _ => Err(format!(
                "`{p}` is neither absolute nor under ~/ (a relative path would depend on where acp-tee starts)"
            )),
        },
        DB,
        &error,
        &line,
    )?;
    let rules = match raw.record.redact_rules {
        None => None,
        Some(list) => {
            let start = list.span().start;
            let mut rules = Vec::new();
            for rule in list.into_inner() {
                let at = rule.span().start;
                rule.get_ref().parse::<Rule>().map_err(|e| error(at, format!("{}: {e}", REDACT_RULES.toml)))?;
                rules.push(rule.into_inner());
            }
            Some((rules, line(start)))
        }
    };
    Ok(FileValues {
        db,
        redact: check(raw.record.redact, |b: &bool| Ok(*b), REDACT, &error, &line)?,
        redact_rules: rules,
        otlp_endpoint: check(raw.otlp.endpoint, |s: &String| parse_endpoint(s), OTLP_ENDPOINT, &error, &line)?,
        otlp_content: check(raw.otlp.content, |b: &bool| Ok(*b), OTLP_CONTENT, &error, &line)?,
        otlp_trace_per: check(raw.otlp.trace_per, |s: &String| parse_scope(s), OTLP_TRACE_PER, &error, &line)?,
        serve_bind: check(raw.serve.bind, |s: &String| parse_ip(s), SERVE_BIND, &error, &line)?,
        serve_port: check(raw.serve.port, |p: &u16| Ok(*p), SERVE_PORT, &error, &line)?,
        older_than: check(raw.retention.older_than, |s: &String| parse_age(s), OLDER_THAN, &error, &line)?,
        keep: check(raw.retention.keep, |k: &u64| Ok(*k), KEEP, &error, &line)?,
        max_size: check(
            raw.retention.max_size,
            |s: &SizeValue| match s {
                SizeValue::Bytes(n) => Ok(*n),
                SizeValue::Text(t) => parse_size(t),
            },
            MAX_SIZE,
            &error,
            &line,
        )?,
    })
}

/// `true`/`false` and their usual spellings in the environment.
fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err("not a boolean; write 1, true, yes or on, or 0, false, no or off".to_owned()),
    }
}

/// Redaction rules, one a line (a rule may hold any other character).
fn parse_rules_env(s: &str) -> Result<Vec<String>, String> {
    let rules: Vec<String> = s.lines().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned).collect();
    for rule in &rules {
        rule.parse::<Rule>().map_err(|e| e.to_string())?;
    }
    Ok(rules)
}

/// An OTLP endpoint: an http:// URL.
fn parse_endpoint(s: &str) -> Result<Option<String>, String> {
    let s = s.trim();
    if !s.starts_with("http://") {
        return Err(format!(
            "`{s}` is not an http:// URL; give one such as http://localhost:4318 (for https, run an OpenTelemetry Collector nearby)"
        ));
    }
    Ok(Some(s.to_owned()))
}

/// The environment's endpoint: a URL, or `off` (no live export, whatever
/// the file says).
fn parse_endpoint_env(s: &str) -> Result<Option<String>, String> {
    match s {
        "off" => Ok(None),
        _ => parse_endpoint(s).map_err(|e| format!("{e}, or `off`")),
    }
}

fn parse_scope(s: &str) -> Result<TraceScope, String> {
    <TraceScope as clap::ValueEnum>::from_str(s, false).map_err(|_| format!("`{s}` is neither session nor recording"))
}

fn parse_ip(s: &str) -> Result<IpAddr, String> {
    s.parse().map_err(|_| format!("`{s}` is not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)"))
}

fn parse_port(s: &str) -> Result<u16, String> {
    s.parse().map_err(|_| format!("`{s}` is not a port (0 to 65535)"))
}

fn parse_keep(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("`{s}` is not a number of traces"))
}

/// Splits `30d` into its number and its unit (spaces between allowed).
fn number_and_unit(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let i = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (number, unit) = s.split_at(i);
    (!number.is_empty()).then(|| (number, unit.trim()))
}

/// Parses an age: a whole number and a unit, `s`, `m`, `h`, `d` or `w`
/// (`30d`, `12h`, `90m`, `2w`). For clap's `value_parser` too.
pub(crate) fn parse_age(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not an age; write a number and a unit: 90m, 12h, 30d or 2w (s, m, h, d, w)");
    let (number, unit) = number_and_unit(s).ok_or_else(bad)?;
    let n: u64 = number.parse().map_err(|_| bad())?;
    let unit_secs: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_secs).map(Duration::from_secs).ok_or_else(|| format!("`{s}` is too long an age"))
}

/// Parses a size in bytes: a number, bare (bytes) or with a unit, decimal
/// (`k`/`kB`, `M`/`MB`, `G`/`GB`, `T`/`TB`: powers of 1000) or binary
/// (`KiB`, `MiB`, `GiB`, `TiB`: powers of 1024), in any case; `B` is
/// bytes. `1.5GB` is allowed. For clap's `value_parser` too.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not a size; write e.g. 500MB, 2GB, 1GiB, 500k or a number of bytes");
    let (number, unit) = number_and_unit(s).ok_or_else(bad)?;
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "m" | "mb" => 1000u64.pow(2),
        "g" | "gb" => 1000u64.pow(3),
        "t" | "tb" => 1000u64.pow(4),
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let too_big = || format!("`{s}` is too large a size");
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(multiplier).ok_or_else(too_big);
    }
    let n: f64 = number.parse().map_err(|_| bad())?;
    let bytes = (n * multiplier as f64).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(too_big());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests;
