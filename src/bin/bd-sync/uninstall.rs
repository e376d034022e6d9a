//! `bd-sync uninstall`: remove exactly what install added, and put back what it replaced.

use crate::common::error::CommandResult;
use std::path::PathBuf;

use beads_git::install;

use crate::cli_util::{print_actions, refusal_exit};
use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The repository [default: the current directory]; `-C DIR` is the spelling every binary
    /// takes, so this one is left out of `--help` (kept for a release).
    #[arg(hide = true)]
    repo: Option<PathBuf>,
    /// Show what would change and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Also take our lines out of the committed files the team shares (`.gitattributes`, a
    /// committed hook manager config): this turns beads-git off for everyone who pulls the commit.
    #[arg(long)]
    team: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let repo = crate::repo_dir(args.repo.as_ref())?;
    let actions = install::uninstall(&repo, args.dry_run, args.team)?;
    print_actions(global, &actions, args.dry_run, None)?;
    Ok(refusal_exit(&actions))
}
