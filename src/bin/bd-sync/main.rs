//! `bd-sync`: the SQLite cache of a beads issues file (import, export, status, check, ready,
//! blocked, show, diff, log, schema) and the one-command setup of the merge driver, attributes
//! and hooks (install, uninstall, hook). See the README for the schema and exit codes.
//!
//! This file holds the clap tree, the options every subcommand shares ([`Global`]) and the
//! dispatch; each subcommand is one file holding its arguments, its `run` and its printer.

mod check;
mod diff;
mod export;
mod hook;
mod import;
mod install;
mod list;
mod log;
mod schema;
mod show;
mod status;
mod uninstall;

#[path = "../common/mod.rs"]
mod common;

/// bd-sync's allocator. The cold import allocates a few strings per field on one thread and
/// frees them on another: under glibc's allocator a fifth of its samples were `malloc`, `free`
/// and the arena locks between the two threads (docs/performance.md, "Round 3"). bd-merge and
/// bd-hook keep the system allocator, which returned memory sooner in their benches.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use beads_git::cache::{self, Cache, OpenMode, Paths};
use beads_git::record::{escaped_path, printable_lines};
use clap::{Parser, Subcommand};

/// Keep a SQLite cache of `.beads/issues.jsonl` exactly in step with the file.
#[derive(Parser, Debug)]
#[command(name = "bd-sync", version = beads_git::VERSION, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// The options every subcommand takes (before or after its name).
#[derive(clap::Args, Debug)]
pub(crate) struct Global {
    /// The cache database [default: $(git rev-parse --git-dir)/beads/cache.db, outside a repo .beads/cache.db].
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Run as if started in this directory.
    #[arg(short = 'C', long = "repo", global = true, value_name = "DIR")]
    pub directory: Option<PathBuf>,
    /// Machine-readable output on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Colour the output: auto (a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = common::Color::Auto, hide_possible_values = true)]
    pub color: common::Color,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bring the cache up to date with the issues file (one transaction; a no-op when unchanged).
    Import(import::Args),
    /// Write the cache's edits back to the issues file (atomically; untouched records byte for byte).
    Export(export::Args),
    /// Set up the merge driver, the attribute lines and the git hooks in a repository.
    Install(install::Args),
    /// Run our hook block for HOOK (what husky, lefthook and pre-commit call); always exits 0.
    Hook(hook::Args),
    /// Remove exactly what install added, and put back what it replaced.
    Uninstall(uninstall::Args),
    /// Show paths, counts and whether the cache is in step with the file.
    Status,
    /// Look for problems in the issues file and the installation (exit 1 on errors; warnings only with --strict).
    #[command(alias = "doctor")]
    Check(check::Args),
    /// Open issues with no open blocker, by priority, then age (imports the file first if it changed).
    Ready(list::Args),
    /// Issues held up by an open blocker, directly or through a parent (imports the file first if it changed).
    Blocked(list::Args),
    /// Issues in full: their fields, what blocks them, what they block (imports the file first if it changed).
    Show(show::Args),
    /// What changed in issues, field by field: HEAD against the working file, REV against it, or A..B.
    Diff(diff::Args),
    /// JSON Schemas of the `--json` outputs: one command's, or all of them keyed by command.
    Schema(schema::Args),
    /// The commits that changed one issue, newest first, each with its field-level change.
    Log(log::Args),
}

/// The longest `--timeout`: a day (longer waits overflow SQLite's busy timeout, in milliseconds).
pub(crate) const MAX_TIMEOUT: u64 = 86_400;

fn main() -> ExitCode {
    beads_git::reset_sigpipe();
    common::complete::answer("BD_SYNC_COMPLETE", <Cli as clap::CommandFactory>::command);
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = common::generate::from_args(&args, <Cli as clap::CommandFactory>::command) {
        return code;
    }
    let cli = Cli::parse();
    beads_git::color::set(cli.global.color.into());
    match run(&cli.global, cli.command) {
        Ok(code) => code,
        Err(e) => {
            if cli.global.json {
                common::print_json_error("error", &format!("{e:#}"));
            }
            eprintln!("bd-sync: {}", printable_lines(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// A failed open, import or export as the user reads it: a refused file gets the fix a user can
/// run (`--skip-invalid` only from a command that has it, `skip_invalid`).
pub(crate) fn explain(e: cache::Error, skip_invalid: bool) -> anyhow::Error {
    match e {
        cache::Error::InvalidFile(invalid) => anyhow::anyhow!("{invalid}\n{}", common::fix::invalid_file_advice(&invalid, skip_invalid)),
        other => other.into(),
    }
}

fn run(global: &Global, command: Command) -> Result<ExitCode> {
    match command {
        Command::Import(args) => import::run(global, args),
        Command::Export(args) => export::run(global, args),
        Command::Install(args) => install::run(global, args),
        Command::Hook(args) => Ok(hook::run(args)),
        Command::Uninstall(args) => uninstall::run(global, args),
        Command::Status => status::run(global),
        Command::Check(args) => check::run(global, args),
        Command::Ready(args) => list::run(global, list::Which::Ready, args),
        Command::Blocked(args) => list::run(global, list::Which::Blocked, args),
        Command::Show(args) => show::run(global, args),
        Command::Diff(args) => diff::run(global, args),
        Command::Schema(args) => schema::run(args),
        Command::Log(args) => log::run(global, args),
    }
}

impl Global {
    /// The repository to work in: `repo` when a command names one, else `-C DIR`, else the
    /// current directory.
    pub(crate) fn repo_dir(&self, repo: Option<&PathBuf>) -> Result<PathBuf> {
        match (repo, &self.directory) {
            (Some(r), _) | (None, Some(r)) => Ok(r.clone()),
            (None, None) => std::env::current_dir().context("finding the current directory"),
        }
    }

    /// A `FILE` argument as the user meant it: relative to `-C DIR` when one was given.
    pub(crate) fn named_file(&self, file: Option<&PathBuf>) -> Result<Option<PathBuf>> {
        let start = self.repo_dir(None)?;
        Ok(file.map(|f| if f.is_absolute() || self.directory.is_none() { f.clone() } else { start.join(f) }))
    }

    /// The issues file and the cache database for a command.
    pub(crate) fn paths(&self, file: Option<&PathBuf>) -> Result<Paths> {
        let start = self.repo_dir(None)?;
        Paths::discover(&start, self.named_file(file)?.as_deref(), self.db.as_deref())
    }

    /// Opens the cache for writing, bound to the issues file it was last synced with (the rules
    /// are the cache's: [`Cache::open_bound`]).
    pub(crate) fn open_bound(&self, file: Option<&PathBuf>, timeout: u64) -> Result<(Cache, cache::Binding)> {
        let start = self.repo_dir(None)?;
        let options = OpenMode::write(Duration::from_secs(timeout)).with_notice(notice);
        Cache::open_bound(&start, self.named_file(file)?.as_deref(), self.db.as_deref(), options).map_err(|e| explain(e, false))
    }

    /// Opens the cache for a query, importing a changed file first (and saying so on stderr).
    pub(crate) fn open_fresh(&self) -> Result<Cache> {
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
        println!("{}", serde_json::to_string_pretty(value)?);
        Ok(())
    }
}

/// Prints what the cache tells a waiting person.
pub(crate) fn notice(text: &str) {
    eprintln!("bd-sync: {}", printable_lines(text));
}

/// Whether stderr can draw a progress bar: a terminal that is not `TERM=dumb`.
pub(crate) fn progress_capable() -> bool {
    std::io::stderr().is_terminal() && std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

/// Whether `file` is larger than `bytes` (false when it cannot be read).
pub(crate) fn larger_than(file: &Path, bytes: u64) -> bool {
    std::fs::metadata(file).map(|m| m.len() > bytes).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
