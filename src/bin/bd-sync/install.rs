//! `bd-sync install`: set up the merge driver, the attribute lines and the git hooks (the printer
//! of what it changed, shared with uninstall, is in `cli_util.rs`).

use crate::common::error::{CommandError, CommandResult, Kind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use beads_git::cache::{import, Cache, OpenMode, Paths};
use beads_git::install::{self, InstallOutcome};
use beads_git::record::printable_lines;

use crate::cli_util::{print_actions, refusal_exit};
use crate::{explain, notice, Global};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The repository [default: the current directory]; `-C DIR` is the spelling every binary
    /// takes, so this one is left out of `--help` (kept for a release).
    #[arg(hide = true)]
    repo: Option<PathBuf>,
    /// Put the attribute lines in .git/info/attributes (this clone only) instead of .gitattributes.
    #[arg(long)]
    local: bool,
    /// Show what would change and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write into the committed files the team shares: with lefthook, our jobs go into lefthook.yml
    /// instead of lefthook-local.yml (`.gitattributes` is the team's either way).
    #[arg(long)]
    team: bool,
    /// Write into a hooks directory outside the repository (a global core.hooksPath shared by every repository).
    #[arg(long)]
    shared_hooks_dir: bool,
    /// Print the configuration that registers the driver with a GitLab Self-Managed or Dedicated server (Gitaly's git config, for gitlab.rb
    /// and gitaly.toml), for bd-merge at BD_MERGE on the Gitaly node; change nothing.
    #[arg(long, value_name = "BD_MERGE", conflicts_with_all = ["repo", "local", "dry_run", "team", "shared_hooks_dir"])]
    print_gitaly: Option<String>,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    if let Some(program) = &args.print_gitaly {
        if global.json {
            let message = "--print-gitaly prints configuration for a server's files, and has no JSON output";
            return Err(CommandError::new(Kind::Usage, message));
        }
        return match install::gitaly_lines(program) {
            Ok(lines) => {
                out!("{lines}");
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("bd-sync: --print-gitaly {}", printable_lines(&e.to_string()));
                Ok(ExitCode::from(2))
            }
        };
    }
    let repo = crate::repo_dir(args.repo.as_ref())?;
    let options = install::InstallOptions {
        repo: repo.clone(),
        local: args.local,
        dry_run: args.dry_run,
        bin_dir: install::own_bin_dir()?,
        team: args.team,
        shared_hooks_dir: args.shared_hooks_dir,
    };
    let actions = match install::install(&options).map_err(crate::common::fix::install_error)? {
        InstallOutcome::Refused(refusal) => {
            eprintln!("bd-sync: {}", printable_lines(&crate::common::fix::install_refusal(&refusal)));
            return Ok(ExitCode::from(1));
        }
        InstallOutcome::Installed(actions) => actions,
    };
    let mut imported = None;
    if !args.dry_run {
        // Start the cache now, so the first pull reports only what it changed.
        if let Ok(paths) = Paths::discover(&repo, None, global.db.as_deref()) {
            let mut cache =
                Cache::open(&paths, OpenMode::write(Duration::from_secs(60)).with_notice(notice)).map_err(|e| explain(e, false))?;
            imported = Some(import::import(&mut cache, &import::ImportOptions::default()).map_err(|e| explain(e, false))?);
        }
    }
    print_actions(global, &actions, args.dry_run, imported.as_ref())?;
    Ok(refusal_exit(&actions))
}
