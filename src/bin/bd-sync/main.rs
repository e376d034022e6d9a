//! `bd-sync`: the SQLite cache of a beads issues file (import, export, status, check, ready,
//! blocked, show, diff, log, schema) and the one-command setup of the merge driver, attributes
//! and hooks (install, uninstall, hook). See docs/cache.md for the schema and docs/exit-codes.md for exit codes.
//!
//! This file holds the clap tree and the dispatch; what every subcommand shares is in
//! `global.rs` ([`Global`]), and each subcommand is one file holding its arguments, its `run` and
//! its printer.

#[path = "../common/mod.rs"]
#[macro_use]
mod common;

mod check;
mod cli_util;
mod context;
mod diff;
mod export;
mod global;
mod hook;
mod import;
mod install;
mod link;
mod list;
mod log;
mod schema;
mod show;
mod status;
mod uninstall;

/// bd-sync's allocator. The cold import allocates a few strings per field on one thread and
/// frees them on another: under glibc's allocator a fifth of its samples were `malloc`, `free`
/// and the arena locks between the two threads (docs/performance.md, "Round 3"). bd-merge and
/// bd-hook keep the system allocator, which returned memory sooner in their benches.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::cache;
use clap::{Parser, Subcommand};
use common::error::{CommandError, CommandResult, Kind};

pub(crate) use global::{larger_than, notice, progress_capable, repo_dir, Global};

/// Keep a SQLite cache of `.beads/issues.jsonl` exactly in step with the file.
#[derive(Parser, Debug)]
#[command(name = "bd-sync", version = beads_git::VERSION, propagate_version = true)]
struct Cli {
    /// The cache database [default: $(git rev-parse --git-dir)/beads/cache.db, outside a repo .beads/cache.db].
    #[arg(long, global = true, value_name = "PATH", display_order = 899)]
    db: Option<PathBuf>,
    #[command(flatten)]
    directory: common::args::Directory,
    #[command(flatten)]
    output: common::args::Output,
    #[command(subcommand)]
    command: Command,
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
    #[command(hide = true)]
    Hook(hook::Args),
    /// What the commit hooks run: the `Beads-Issue:` trailer, and the opt-in commit comment; always exits 0.
    #[command(hide = true)]
    Link(link::Args),
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
    /// An issue's working context in one compact block: task, checkpoints, commits, files, dependencies, next.
    Context(context::Args),
}

fn main() -> ExitCode {
    beads_git::reset_sigpipe();
    common::complete::answer("BD_SYNC_COMPLETE", <Cli as clap::CommandFactory>::command);
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = common::generate::from_args(&args, <Cli as clap::CommandFactory>::command) {
        return code;
    }
    let cli = <Cli as clap::Parser>::try_parse_from(&args).unwrap_or_else(|e| common::exit_usage(e, &args));
    beads_git::color::set(cli.output.color.into());
    let global = Global { db: cli.db, json: cli.output.json };
    let done = cli.directory.enter().map_err(|e| CommandError::new(Kind::Error, e)).and_then(|()| run(&global, cli.command));
    done.unwrap_or_else(|e| e.report("bd-sync", global.json))
}

/// A failed open, import or export as the user reads it: a refused file gets the fix a user can
/// run (`--skip-invalid` only from a command that has it, `skip_invalid`).
pub(crate) fn explain(e: cache::Error, skip_invalid: bool) -> CommandError {
    let e = match e {
        cache::Error::InvalidFile(invalid) => {
            let text = format!("{invalid}\n{}", common::fix::invalid_file_advice(&invalid, skip_invalid));
            return CommandError::new(Kind::Error, text).with_fix(invalid.fix());
        }
        cache::Error::UnknownSchema { db, version, supported, dirty } => anyhow::anyhow!(
            "{} was written by schema version {version} (this bd-sync writes {supported}) and holds {dirty} unexported edit(s); \
             export them with the bd-sync that made it, or remove the file to rebuild from the issues file (losing those edits)",
            db.display()
        ),
        cache::Error::NotADatabase { db } => anyhow::anyhow!(
            "{} is not a SQLite database (it does not start with the SQLite header), so it cannot be the cache; \
             nothing was changed: pass another --db, or remove the file if it really is a broken cache",
            db.display()
        ),
        cache::Error::IssuesFile(e) => common::fix::find_error(e),
        other => other.into(),
    };
    e.into()
}

fn run(global: &Global, command: Command) -> CommandResult {
    match command {
        Command::Import(args) => import::run(global, args),
        Command::Export(args) => export::run(global, args),
        Command::Install(args) => install::run(global, args),
        Command::Hook(args) => Ok(hook::run(args)),
        Command::Link(args) => Ok(link::run(global, args)),
        Command::Uninstall(args) => uninstall::run(global, args),
        Command::Status => status::run(global),
        Command::Check(args) => check::run(global, args),
        Command::Ready(args) => list::run(global, list::Which::Ready, args),
        Command::Blocked(args) => list::run(global, list::Which::Blocked, args),
        Command::Show(args) => show::run(global, args),
        Command::Diff(args) => diff::run(global, args),
        Command::Schema(args) => schema::run(args),
        Command::Log(args) => log::run(global, args),
        Command::Context(args) => context::run(global, args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
