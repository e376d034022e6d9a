//! What every bd-sync subcommand shares once the command line is parsed: the cache database it
//! names and whether it prints JSON ([`Global`]), finding the issues file and opening the cache
//! the same way in each, and the small helpers of its printers.
//!
//! `-C DIR` is not here: `main` moves into DIR before any subcommand runs, so the current
//! directory is the one the user meant and every relative path is read from there.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use beads_git::cache::{self, Cache, OpenMode, Paths};
use beads_git::record::{escaped_path, printable_lines};

use crate::common::error::CommandResult;
use crate::explain;

/// The options every subcommand takes (before or after its name), as the commands use them.
#[derive(Debug)]
pub(crate) struct Global {
    /// `--db PATH`: the cache database, when not the default.
    pub db: Option<PathBuf>,
    /// `--json`: machine-readable output on stdout.
    pub json: bool,
}

/// The repository to work in: `repo` when a command names one, else the current directory
/// (`-C DIR` already moved there).
pub(crate) fn repo_dir(repo: Option<&PathBuf>) -> Result<PathBuf> {
    match repo {
        Some(r) => Ok(r.clone()),
        None => std::env::current_dir().context("finding the current directory"),
    }
}

impl Global {
    /// The issues file and the cache database for a command.
    pub(crate) fn paths(&self, file: Option<&PathBuf>) -> CommandResult<Paths> {
        let start = repo_dir(None)?;
        Paths::discover(&start, file.map(PathBuf::as_path), self.db.as_deref()).map_err(|e| explain(e, false))
    }

    /// Opens the cache for writing, bound to the issues file it was last synced with (the rules
    /// are the cache's: [`Cache::open_bound`]), waiting at most `timeout` for its lock.
    pub(crate) fn open_bound(&self, file: Option<&PathBuf>, timeout: Duration) -> CommandResult<(Cache, cache::Binding)> {
        let start = repo_dir(None)?;
        let options = OpenMode::write(timeout).with_notice(notice);
        Cache::open_bound(&start, file.map(PathBuf::as_path), self.db.as_deref(), options).map_err(|e| explain(e, false))
    }

    /// Opens the cache for a query, importing a changed file first (and saying so on stderr).
    pub(crate) fn open_fresh(&self) -> CommandResult<Cache> {
        let options = OpenMode::read(Duration::from_secs(60)).with_notice(notice);
        let (cache, imported) = Cache::open_fresh(&self.paths(None)?, options).map_err(|e| explain(e, false))?;
        if let Some(r) = imported.filter(|r| !r.noop) {
            eprintln!(
                "bd-sync: imported {} first: {} added, {} changed, {} removed",
                escaped_path(&cache.paths.file),
                r.added.len(),
                r.changed.len(),
                r.removed.len()
            );
        }
        Ok(cache)
    }

    /// Prints `value` as pretty JSON on stdout.
    pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
        outln!("{}", serde_json::to_string_pretty(value)?);
        Ok(())
    }
}

/// Prints what the cache tells a waiting person.
pub(crate) fn notice(notice: &cache::Notice) {
    let text = match notice {
        cache::Notice::BoundElsewhere { bound, found } => {
            format!("the cache is bound to {} (by --rebind), not {}; using the bound file", bound.display(), found.display())
        }
        other => other.to_string(),
    };
    eprintln!("bd-sync: {}", printable_lines(&text));
}

/// Whether stderr can draw a progress bar: a terminal that is not `TERM=dumb`.
pub(crate) fn progress_capable() -> bool {
    std::io::stderr().is_terminal() && std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

/// Whether `file` is larger than `bytes` (false when it cannot be read).
pub(crate) fn larger_than(file: &Path, bytes: u64) -> bool {
    std::fs::metadata(file).map(|m| m.len() > bytes).unwrap_or(false)
}
