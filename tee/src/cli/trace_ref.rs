//! TRACE: how every subcommand names a stored trace ([`TraceRef`], parsed
//! by clap), the one resolver that finds it in a store ([`resolve`],
//! [`resolve_many`]), and what `check` and `diff` read, a stored trace or
//! a file ([`TraceInput`]).
//!
//! A TRACE is
//! - an id (digits): that trace;
//! - `latest`: the newest trace;
//! - `all`: every trace, where a command takes many (`export`, `check`);
//! - `name:NAME`: the newest trace named NAME, whatever NAME looks like;
//! - anything else: a name, the newest trace of that name. A trace's name
//!   is the one `acp-tee list` shows: its `--name` (by default the agent
//!   program's file name; an import's file name), else its command's
//!   program.

use crate::store::{Store, StoreError};
use crate::text::printable;
use acp_tee_shared::TraceMeta;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How a command names a stored trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TraceRef {
    /// The trace with this id.
    Id(i64),
    /// The newest trace.
    Latest,
    /// Every trace, oldest first (only where a command takes many).
    All,
    /// The newest trace of this name.
    Name(String),
}

impl FromStr for TraceRef {
    type Err = String;

    fn from_str(s: &str) -> Result<TraceRef, String> {
        if let Some(name) = s.strip_prefix("name:") {
            return match name {
                "" => Err("`name:` needs a name after it (name:NAME)".to_owned()),
                _ => Ok(TraceRef::Name(name.to_owned())),
            };
        }
        match s {
            "" => Err("a trace is an id from `acp-tee list`, `latest` or a name; this is empty".to_owned()),
            "latest" => Ok(TraceRef::Latest),
            "all" => Ok(TraceRef::All),
            _ if s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse().map(TraceRef::Id).map_err(|_| format!("`{s}` is too large to be a trace id"))
            }
            _ => Ok(TraceRef::Name(s.to_owned())),
        }
    }
}

impl std::fmt::Display for TraceRef {
    /// As the user would write it back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceRef::Id(id) => write!(f, "{id}"),
            TraceRef::Latest => f.write_str("latest"),
            TraceRef::All => f.write_str("all"),
            TraceRef::Name(name) if name.parse::<TraceRef>() == Ok(TraceRef::Name(name.clone())) => {
                write!(f, "{}", printable(name))
            }
            TraceRef::Name(name) => write!(f, "name:{}", printable(name)),
        }
    }
}

/// The value given as the positional TRACE or as `--trace` (clap keeps
/// both from being given).
pub(super) fn pick(positional: Option<TraceRef>, option: Option<TraceRef>) -> Option<TraceRef> {
    positional.or(option)
}

/// How many trace names an error about a missing name lists.
const NAMES_LISTED: usize = 8;

/// The one trace `r` names in `store`. `all` is refused: the command takes
/// one trace (see [`resolve_many`]).
pub(super) fn resolve(store: &Store, r: &TraceRef) -> anyhow::Result<TraceMeta> {
    match r {
        TraceRef::Id(id) => match store.trace(*id) {
            Err(StoreError::NoSuchTrace(_)) => match store.latest_trace_id() {
                Ok(newest) => {
                    anyhow::bail!("no trace {id} in the store (the newest is {newest}; `acp-tee list` lists them)")
                }
                Err(StoreError::NoTraces) => anyhow::bail!("no trace {id}: {}", StoreError::NoTraces),
                Err(e) => Err(e.into()),
            },
            other => Ok(other?),
        },
        TraceRef::Latest => Ok(store.trace(store.latest_trace_id()?)?),
        TraceRef::All => {
            anyhow::bail!("`all` names every trace, and this command takes one: an id, `latest` or a name (name:all for a trace named all)")
        }
        TraceRef::Name(name) => match store.latest_trace_named(name)? {
            Some(id) => Ok(store.trace(id)?),
            None => Err(no_such_name(store, name)?),
        },
    }
}

/// The traces `refs` name, in the order given, each once; `all` is every
/// trace, oldest first. For commands that take several (`rm TRACE...`).
pub(super) fn resolve_many(store: &Store, refs: &[TraceRef]) -> anyhow::Result<Vec<TraceMeta>> {
    let mut traces: Vec<TraceMeta> = Vec::new();
    for r in refs {
        let found = match r {
            TraceRef::All => {
                let mut all = store.list_traces()?;
                all.reverse();
                all
            }
            one => vec![resolve(store, one)?],
        };
        for t in found {
            if !traces.iter().any(|seen| seen.id == t.id) {
                traces.push(t);
            }
        }
    }
    Ok(traces)
}

/// `e`, an error resolving `r` given where a file could have been (`check`,
/// `diff`), saying that no file has that name either when none does.
pub(super) fn nor_a_file(e: anyhow::Error, r: &TraceRef) -> anyhow::Error {
    match r {
        TraceRef::Name(name) if !Path::new(name).exists() => {
            e.context(format!("`{}` is neither a file here nor a stored trace", printable(name)))
        }
        _ => e,
    }
}

/// The error for a name no trace has, naming those there are.
fn no_such_name(store: &Store, name: &str) -> anyhow::Result<anyhow::Error> {
    let mut names = store.trace_names(NAMES_LISTED + 1)?;
    let more = if names.len() > NAMES_LISTED { ", …" } else { "" };
    names.truncate(NAMES_LISTED);
    let known = if names.is_empty() {
        "the store has no traces yet".to_owned()
    } else {
        let names: Vec<String> = names.iter().map(|n| printable(n).into_owned()).collect();
        format!("names in the store, newest first: {}{more}; `acp-tee list` shows them", names.join(", "))
    };
    Ok(anyhow::anyhow!("no trace named `{}` ({known})", printable(name)))
}

/// What `check` and `diff` read: a stored trace, a trace file or standard
/// input. The rule, in order:
/// 1. `-` is standard input;
/// 2. `name:NAME` is the newest stored trace named NAME;
/// 3. an id (digits), `latest` or `all` is a stored trace (write `./3` for
///    a file named 3);
/// 4. anything containing `/` is a file;
/// 5. a name that exists as a file (or directory) here is that file;
/// 6. anything else is the name of a stored trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TraceInput {
    /// Standard input, read as a trace file.
    Stdin,
    /// A trace file, any format `acp-tee import` reads.
    File(PathBuf),
    /// A stored trace.
    Trace(TraceRef),
}

/// The rule of [`TraceInput`], as the help texts of `check` and `diff` say
/// it (a macro, for `concat!`).
macro_rules! input_rule {
    () => {
        "\
An argument naming a trace is read as: `-`, standard input (a trace file);
name:NAME, the newest stored trace named NAME; an id, `latest` or `all`, a
stored trace (write ./3 for a file named 3); anything with a `/`, a file;
a name that exists as a file here, that file; anything else, the newest
stored trace of that name."
    };
}
pub(super) use input_rule;

impl FromStr for TraceInput {
    type Err = String;

    fn from_str(s: &str) -> Result<TraceInput, String> {
        if s == "-" {
            return Ok(TraceInput::Stdin);
        }
        let r: TraceRef = s.parse()?;
        Ok(match r {
            TraceRef::Name(_) if s.starts_with("name:") => TraceInput::Trace(r),
            TraceRef::Name(_) if s.contains('/') || Path::new(s).exists() => TraceInput::File(s.into()),
            r => TraceInput::Trace(r),
        })
    }
}

impl TraceInput {
    /// How the output names this input: the file's path, `stdin` or the
    /// trace (`trace 3`).
    pub(super) fn label(&self, trace_id: i64) -> String {
        match self {
            TraceInput::Stdin => "stdin".to_owned(),
            TraceInput::File(path) => printable(&path.display().to_string()).into_owned(),
            TraceInput::Trace(_) => format!("trace {trace_id}"),
        }
    }
}

/// Standard input copied into a file of a temporary directory (removed
/// when the result is dropped), for the readers that read a file twice
/// (an import tells the format from the first line, then reads it all).
/// Memory stays bounded: the copy streams.
pub(super) fn stdin_to_file() -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    use anyhow::Context;
    let dir = tempfile::tempdir().context("cannot make a temporary directory for standard input")?;
    let path = dir.path().join("stdin");
    let mut file = std::fs::File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    std::io::copy(&mut std::io::stdin().lock(), &mut file)
        .with_context(|| format!("cannot copy standard input to {}", path.display()))?;
    Ok((dir, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_parse_as_ids_latest_all_and_names() {
        let parse = |s: &str| s.parse::<TraceRef>();
        assert_eq!(parse("12"), Ok(TraceRef::Id(12)));
        assert_eq!(parse("007"), Ok(TraceRef::Id(7)));
        assert_eq!(parse("latest"), Ok(TraceRef::Latest));
        assert_eq!(parse("all"), Ok(TraceRef::All));
        assert_eq!(parse("claude"), Ok(TraceRef::Name("claude".into())));
        assert_eq!(parse("v2.1"), Ok(TraceRef::Name("v2.1".into())));
        assert_eq!(parse("-3"), Ok(TraceRef::Name("-3".into())), "only digits are an id");
        assert_eq!(parse("name:12"), Ok(TraceRef::Name("12".into())));
        assert_eq!(parse("name:latest"), Ok(TraceRef::Name("latest".into())));
        assert_eq!(parse("name:name:x"), Ok(TraceRef::Name("name:x".into())));
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("name:").unwrap_err().contains("needs a name"));
        assert!(parse("99999999999999999999").unwrap_err().contains("too large"));
        for s in ["12", "latest", "all", "claude", "name:12", "name:all", "name:name:x"] {
            assert_eq!(parse(s).unwrap().to_string(), s, "written back as given");
        }
    }

    #[test]
    fn inputs_follow_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let parse = |s: &str| s.parse::<TraceInput>().unwrap();
        assert_eq!(parse("-"), TraceInput::Stdin);
        assert_eq!(parse("3"), TraceInput::Trace(TraceRef::Id(3)));
        assert_eq!(parse("latest"), TraceInput::Trace(TraceRef::Latest));
        assert_eq!(parse("./3"), TraceInput::File("./3".into()));
        let file = dir.path().join("t.jsons");
        assert_eq!(parse(file.to_str().unwrap()), TraceInput::File(file.clone()));
        // Here: the crate's directory, which holds Cargo.toml and no `claude`.
        assert_eq!(parse("Cargo.toml"), TraceInput::File("Cargo.toml".into()));
        assert_eq!(parse("name:Cargo.toml"), TraceInput::Trace(TraceRef::Name("Cargo.toml".into())));
        assert_eq!(parse("claude-nowhere"), TraceInput::Trace(TraceRef::Name("claude-nowhere".into())));
    }

    #[test]
    fn resolving_finds_the_newest_of_a_name_and_says_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::create_maintained(&dir.path().join("t.db"));
        let err = resolve(&store, &TraceRef::Latest).unwrap_err().to_string();
        assert!(err.contains("no traces yet"), "{err}");
        let err = resolve(&store, &TraceRef::Name("x".into())).unwrap_err().to_string();
        assert_eq!(err, "no trace named `x` (the store has no traces yet)");
        let named = |name: Option<&str>| crate::model::TraceStart {
            protocol: None,
            name: name.map(String::from),
            command: vec!["agent".into()],
            cwd: None,
            mode: "wrap".into(),
            started_at: "2026-11-30T10:00:00.000000Z".into(),
        };
        let first = store.create_trace(&named(Some("alpha")), 1).unwrap();
        let second = store.create_trace(&named(None), 1).unwrap();
        let third = store.create_trace(&named(Some("alpha")), 1).unwrap();

        let id = |r: TraceRef| resolve(&store, &r).unwrap().id;
        assert_eq!(id(TraceRef::Id(second)), second);
        assert_eq!(id(TraceRef::Latest), third);
        assert_eq!(id(TraceRef::Name("alpha".into())), third, "the newest of the name");
        assert_eq!(id(TraceRef::Name("agent".into())), second, "unnamed: the program is the name");
        let err = resolve(&store, &TraceRef::Id(99)).unwrap_err().to_string();
        assert_eq!(err, format!("no trace 99 in the store (the newest is {third}; `acp-tee list` lists them)"));
        let err = resolve(&store, &TraceRef::Name("beta".into())).unwrap_err().to_string();
        assert_eq!(
            err,
            "no trace named `beta` (names in the store, newest first: alpha, agent; `acp-tee list` shows them)"
        );
        assert!(resolve(&store, &TraceRef::All).unwrap_err().to_string().contains("takes one"));

        let many = |refs: &[TraceRef]| resolve_many(&store, refs).unwrap().iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(many(&[TraceRef::Latest, TraceRef::Id(first)]), [third, first]);
        assert_eq!(many(&[TraceRef::Id(second), TraceRef::All]), [second, first, third], "each once");
        assert!(resolve_many(&store, &[TraceRef::Latest, TraceRef::Name("beta".into())]).is_err());
    }
}
