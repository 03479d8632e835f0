//! `acp-tee completions SHELL` and `acp-tee man`: shell completions
//! (`clap_complete`) and manual pages (`clap_mangen`), made from the same
//! clap definitions as the command line, so they say what it takes.

use super::args::Cli;
use anyhow::Context;
use clap::{Args, CommandFactory};
use std::io::Write;
use std::path::PathBuf;

pub(super) const COMPLETIONS_ABOUT: &str = "\
Print the completion script of a shell for acp-tee: its subcommands, options
and their values, as this binary defines them.

    acp-tee completions bash > ~/.local/share/bash-completion/completions/acp-tee
    acp-tee completions zsh > \"${fpath[1]}/_acp-tee\"
    acp-tee completions fish > ~/.config/fish/completions/acp-tee.fish";

pub(super) const MAN_ABOUT: &str = "\
Print acp-tee's manual page (roff) to stdout, or with --dir write one page per
subcommand into a directory (acp-tee.1, acp-tee-show.1, ...).

    acp-tee man | man -l -
    acp-tee man --dir ~/.local/share/man/man1";

/// `acp-tee completions`.
#[derive(Debug, Args)]
pub(super) struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// `acp-tee man`.
#[derive(Debug, Args)]
pub(super) struct ManArgs {
    /// Write a page per subcommand into DIR instead of the main page to stdout
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub(super) fn completions_command(a: CompletionsArgs) -> anyhow::Result<i32> {
    let mut cmd = visible(Cli::command());
    let mut out = Vec::new();
    if a.shell == clap_complete::Shell::Bash {
        // The bash generator spells its functions' names from the binary's
        // name and mangles a hyphen in it two different ways (`acp__tee`,
        // `acp__subcmd__tee`), so that no subcommand's options complete:
        // it is given a name without one, and the script registers itself
        // for `acp-tee`.
        clap_complete::generate(a.shell, &mut cmd, "acp_tee", &mut out);
        let script = String::from_utf8(out).context("the bash completions are not UTF-8")?;
        out = script.replace(" -o default acp_tee\n", " -o default acp-tee\n").into_bytes();
    } else {
        clap_complete::generate(a.shell, &mut cmd, "acp-tee", &mut out);
    }
    std::io::stdout().lock().write_all(&out).context("cannot write the completions")?;
    Ok(0)
}

/// `cmd` without its hidden subcommands (`__recorder`), which the
/// completion generators would offer.
fn visible(cmd: clap::Command) -> clap::Command {
    let mut out = clap::Command::new("acp-tee").version(env!("CARGO_PKG_VERSION"));
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    out.args(cmd.get_arguments().cloned()).subcommands(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
}

pub(super) fn man_command(a: ManArgs) -> anyhow::Result<i32> {
    match a.dir {
        Some(dir) => {
            clap_mangen::generate_to(Cli::command(), &dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out).context("cannot render the manual page")?;
            std::io::stdout().lock().write_all(&out).context("cannot write the manual page")?;
        }
    }
    Ok(0)
}
