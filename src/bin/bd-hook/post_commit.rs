//! `bd-hook post-commit`: the post-commit hook's work in one process. A hook runs on every
//! commit, and most commits touch no issue in a clone with no notify server and no commit
//! comments: then this reads git config once (one `git config` call for the notifier's keys and
//! `beads.commitComments`) and exits. With a server it notifies the ids HEAD changed, as
//! `from-diff HEAD~1` does; with commit comments on it runs `bd-sync link post-commit` (our
//! sibling binary, else the one on PATH), which asks the tracker to note the commit.

use crate::common::error::CommandResult;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result};
use beads_git::notify::ids::{collect_ids, IdSources};

use crate::deliver::Outlet;
use crate::Cli;

pub(crate) fn run(cli: &Cli) -> CommandResult {
    let (settings, comments) = beads_git::notify::settings_with(Path::new("."), Some("beads.commitcomments"));
    let mut outcome: Result<ExitCode> = Ok(ExitCode::SUCCESS);
    if let Some(outlet) = Outlet::with_settings(cli, &settings)? {
        let sources = IdSources { ids: Vec::new(), stdin: false, nul: false, from_diff: Some("HEAD~1".into()), path: cli.path.clone() };
        let dir = std::env::current_dir().context("finding the current directory")?;
        outcome = collect_ids(&sources, &dir, std::io::empty()).map(|ids| {
            if ids.is_empty() {
                ExitCode::SUCCESS
            } else {
                crate::ids::deliver(cli, &outlet, &ids)
            }
        });
        if let (Err(e), false) = (&outcome, cli.strict) {
            eprintln!("bd-hook: {}", beads_git::record::printable_lines(&format!("{e:#}")));
            outcome = Ok(ExitCode::SUCCESS);
        }
    }
    // The note runs whatever the notice did: one failure does not take the other's place.
    if beads_git::bridge::settings::git_true(comments.as_deref()) {
        let program = beads_git::install::sibling("bd-sync");
        // bd-sync link is fail-open itself and speaks for itself on stderr.
        if let Err(e) = Command::new(&program).args(["link", "post-commit"]).stdin(Stdio::null()).status() {
            eprintln!("bd-hook: beads.commitComments is on, but bd-sync could not run ({e})");
        }
    }
    Ok(outcome?)
}
