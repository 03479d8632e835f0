//! `acp-tee completions` and `acp-tee man`: scripts a shell loads and
//! completes with, manual pages `man` renders, made from the command line's
//! own definitions.

use crate::common::*;
use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(bin()).args(args).output().unwrap()
}

/// The visible subcommands, as `acp-tee --help` lists them.
fn subcommands() -> Vec<String> {
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    let listed = help.split("Commands:").nth(1).unwrap().split("Options:").next().unwrap();
    let names: Vec<String> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("  ").filter(|l| !l.starts_with(' ')).and_then(|l| l.split_whitespace().next()))
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() > 10 && names.contains(&"http-proxy".to_owned()), "{names:?}");
    names
}

/// What bash completes for the words `line` (the last one being completed).
fn bash_completes(script: &str, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let cword = line.len() - 1;
    let prev = if cword > 0 { line[cword - 1] } else { "" };
    let program = format!(
        "source /dev/stdin <<'SCRIPT'\n{script}\nSCRIPT\n\
         complete -p acp-tee >/dev/null || exit 3\n\
         COMP_WORDS=({}); COMP_CWORD={cword}\n\
         _acp_tee acp-tee '{}' '{prev}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words.join(" "),
        line[cword]
    );
    let out = Command::new("bash").args(["--norc", "-c", &program]).output().unwrap();
    assert!(out.status.success(), "bash: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn bash_loads_the_completions_and_completes_subcommands_options_and_values() {
    let out = run(&["completions", "bash"]);
    assert!(out.status.success());
    let script = String::from_utf8(out.stdout).unwrap();
    let syntax = Command::new("bash").args(["-n", "-c", &script]).output().unwrap();
    assert!(syntax.status.success(), "{}", String::from_utf8_lossy(&syntax.stderr));
    let mut all = bash_completes(&script, &["acp-tee", ""]);
    all.retain(|w| !w.starts_with('-') && w != "help");
    all.sort();
    let mut expected = subcommands();
    expected.sort();
    assert_eq!(all, expected, "the hidden recorder subcommand is never offered");
    assert_eq!(bash_completes(&script, &["acp-tee", "htt"]), ["http-proxy"]);
    assert!(bash_completes(&script, &["acp-tee", "show", "--fo"]).contains(&"--format".to_owned()));
    let shells = bash_completes(&script, &["acp-tee", "completions", ""]);
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        assert!(shells.contains(&shell.to_owned()), "{shells:?}");
    }
}

#[test]
fn every_shell_gets_a_script_naming_every_subcommand_and_no_hidden_one() {
    let names = subcommands();
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell}: {name} missing");
        }
        assert!(!script.contains("__recorder"), "{shell} offers the hidden recorder");
    }
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("possible values") && err.contains("zsh"), "{err}");
}

/// `man -l FILE` as text, 80 columns.
fn rendered(page: &std::path::Path) -> String {
    let out = Command::new("man").args(["-l", "-P", "cat"]).arg(page).env("MANWIDTH", "80").output().unwrap();
    assert!(out.status.success(), "man: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_manual_pages_render_one_per_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("stdout.1");
    let out = run(&["man"]);
    assert!(out.status.success());
    std::fs::write(&main, &out.stdout).unwrap();
    let text = rendered(&main);
    assert!(text.starts_with("acp-tee(1)") && text.contains("Record every Agent Client Protocol message"), "{text}");
    for name in subcommands() {
        assert!(text.contains(&format!("acp-tee-{name}(1)")), "the main page names {name}");
    }

    let pages = dir.path().join("man1");
    std::fs::create_dir(&pages).unwrap();
    let out = run(&["man", "--dir", pages.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut written: Vec<String> =
        std::fs::read_dir(&pages).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    written.sort();
    let mut expected: Vec<String> = subcommands().iter().map(|n| format!("acp-tee-{n}.1")).collect();
    expected.push("acp-tee.1".into());
    expected.sort();
    assert_eq!(written, expected);
    let show = rendered(&pages.join("acp-tee-show.1"));
    assert!(show.contains("--format") && show.contains("SYNOPSIS"), "{show}");

    let missing = run(&["man", "--dir", dir.path().join("no/such").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot write the manual pages into"));
}
