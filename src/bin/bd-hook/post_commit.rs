//! `bd-hook --post-commit`: the post-commit hook's work in one process. A hook runs on every
//! commit, and most commits touch no issue in a clone with no notify server and no commit
//! comments: then this reads git config once (one `git config` call for the notifier's keys and
//! `beads.commitComments`) and exits. With a server it notifies the ids HEAD changed, as
//! `--from-diff HEAD~1` does; with commit comments on it runs `bd-sync link post-commit` (our
//! sibling binary, else the one on PATH), which asks the tracker to note the commit.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result};
use beads_git::notify::ids::{collect_ids, IdSources};

use crate::deliver::Outlet;
use crate::Cli;

pub(crate) fn run(cli: &Cli) -> Result<ExitCode> {
    let (settings, comments) = beads_git::notify::settings_with(Path::new("."), Some("beads.commitcomments"));
    let mut code = ExitCode::SUCCESS;
    if let Some(outlet) = Outlet::with_settings(cli, &settings)? {
        let sources = IdSources { ids: Vec::new(), stdin: false, nul: false, from_diff: Some("HEAD~1".into()), path: cli.path.clone() };
        let dir = std::env::current_dir().context("finding the current directory")?;
        match collect_ids(&sources, &dir, std::io::empty()) {
            Ok(ids) if ids.is_empty() => {}
            Ok(ids) => {
                if !outlet.deliver(&ids) && cli.strict {
                    code = ExitCode::from(1);
                }
            }
            // The note below still runs: one failure does not take the other's place.
            Err(e) if cli.strict => return Err(e),
            Err(e) => eprintln!("bd-hook: {}", beads_git::record::printable_lines(&format!("{e:#}"))),
        }
    }
    if beads_git::bridge::settings::git_true(comments.as_deref()) {
        let sibling = beads_git::install::own_bin_dir().map(|d| d.join("bd-sync")).ok().filter(|p| p.is_file());
        let program = sibling.unwrap_or_else(|| "bd-sync".into());
        // bd-sync link is fail-open itself and speaks for itself on stderr.
        if let Err(e) = Command::new(&program).args(["link", "post-commit"]).stdin(Stdio::null()).status() {
            eprintln!("bd-hook: beads.commitComments is on, but bd-sync could not run ({e})");
        }
    }
    Ok(code)
}
