//! `bd-sync install`: set up the merge driver, the attribute lines and the git hooks; and the
//! printer of what install and uninstall changed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use beads_git::cache::{import, Cache, OpenMode, Paths};
use beads_git::install::{self, Action, Change, InstallOutcome};
use beads_git::record::{escaped, printable_lines};

use crate::common::fix::install_warning;
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
}

pub(crate) fn run(global: &Global, args: Args) -> Result<ExitCode> {
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

/// Exit 1 when install or uninstall left a file alone that the user must see to by hand.
pub(crate) fn refusal_exit(actions: &[Action]) -> ExitCode {
    if actions.iter().any(|a| a.change == Change::Refused) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// An action as `--json` shows it: its warning worded as on stderr.
#[derive(serde::Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    action: &'a Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

/// Prints what install or uninstall did (or would do, with `dry_run`): one line per file that
/// changed, warnings on stderr, the first import's count.
pub(crate) fn print_actions(global: &Global, actions: &[Action], dry_run: bool, imported: Option<&import::ImportReport>) -> Result<()> {
    if global.json {
        let actions: Vec<Shown<'_>> =
            actions.iter().map(|action| Shown { action, warning: action.warning.as_ref().map(install_warning) }).collect();
        return Global::print_json(&serde_json::json!({ "dry_run": dry_run, "actions": actions, "import": imported }));
    }
    let changed = |a: &&Action| a.change != Change::Unchanged && a.change != Change::Absent;
    let width = actions.iter().filter(changed).map(|a| escaped(&a.what).chars().count()).max().unwrap_or(0);
    for a in actions {
        if let Some(w) = &a.warning {
            eprintln!("bd-sync: warning: {}", printable_lines(&install_warning(w)));
        }
    }
    for a in actions.iter().filter(changed) {
        let change = if dry_run { format!("would be {}", a.change) } else { a.change.to_string() };
        let path = if a.path == a.what { String::new() } else { format!("  {}", escaped(&a.path)) };
        outln!("{:<width$}  {change}{path}", escaped(&a.what));
    }
    if actions.iter().all(|a| matches!(a.change, Change::Unchanged | Change::Absent)) {
        outln!("nothing to change");
    }
    if let Some(r) = imported.filter(|r| !r.noop) {
        outln!("{:<width$}  imported {} issue(s)", "cache", r.added.len() + r.changed.len());
    }
    Ok(())
}
