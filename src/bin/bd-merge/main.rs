//! `bd-merge`: git merge driver for beads JSONL issue files, and the commands around it (see the
//! README for wiring).
//!
//! The three-file merge is the default form, the one git runs (`bd-merge %O %A %B -l %L ...`);
//! every other command is a subcommand, one file each. This file holds the clap tree and the
//! dispatch.

mod dedupe;
mod diff;
mod driver;
mod resolve;
mod review;
mod textconv;
mod update_branch;

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::record::printable_lines;
use clap::{Parser, Subcommand};

/// Field-level three-way merge of beads `issues.jsonl` files.
///
/// As a git merge driver: `bd-merge %O %A %B -l %L -p %P -s %S -x %X -y %Y`; the result replaces
/// %A. Also accepts the old bd form `bd-merge OUTPUT BASE LEFT RIGHT`.
/// Exit codes: 0 merged cleanly, 1 conflicts written for a human, 2 error (ours left unchanged).
/// `BD_MERGE=0` in the environment makes it a plain `git merge-file` line merge.
#[derive(Parser, Debug)]
#[command(name = "bd-merge", version = beads_git::VERSION, propagate_version = true)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct Cli {
    #[command(flatten)]
    merge: driver::Args,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show what changed in issues between two files, field by field: scalars old -> new, label,
    /// dependency and comment additions and removals, a line diff of multi-line text.
    /// Also git's external diff (`diff.<driver>.command`, 7 arguments). Exit 0, 2 on error.
    Diff(diff::Args),
    /// Print an issues file as one line per field, for git's `diff.beads.textconv` (what `bd-sync install` sets).
    Textconv(textconv::Args),
    /// Merge a conflicted issues file as the driver would have: from git's index stages during a
    /// conflicted merge, rebase, cherry-pick or stash pop, else from its conflict markers.
    /// Exit 0 merged cleanly or nothing to do, 1 conflicts left (or, with --check, work to do), 2 error.
    Resolve(resolve::Args),
    /// Merge BASE into the checked-out branch with the field-level driver registered for this
    /// command only (for CI, where no driver is installed): fetches BASE when missing and deepens
    /// a shallow clone until the branches meet. Exit 0 merged (or already up to date), 1 conflicts
    /// in other files (the merge is aborted, nothing changed), 2 error.
    UpdateBranch(update_branch::Args),
    /// List the values merges dropped in this clone (the merge log), newest first, with both
    /// values, the sides' labels, the command and the time; or put one back with --restore.
    /// Exit 0, 1 when --restore refuses (the field changed again since), 2 on error.
    Review(review::Args),
    /// Merge every id that stands on several lines (left by merge=union or older tools) into one
    /// record, field by field; identical repeats collapse. Exit 0, or 1 with --check when needed.
    Dedupe(dedupe::Args),
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = common::generate::from_args(&args, <Cli as clap::CommandFactory>::command) {
        return code;
    }
    let cli = Cli::parse();
    let json = match &cli.command {
        Some(Command::Diff(a)) => a.json,
        Some(Command::Review(a)) => a.json,
        Some(Command::UpdateBranch(a)) => a.json,
        _ => false,
    };
    let result = match cli.command {
        None => return driver::run(cli.merge),
        Some(Command::Diff(args)) => diff::run(args),
        Some(Command::Textconv(args)) => textconv::run(args),
        Some(Command::Resolve(args)) => resolve::run(args),
        Some(Command::UpdateBranch(args)) => update_branch::run(args),
        Some(Command::Review(args)) => review::run(args),
        Some(Command::Dedupe(args)) => dedupe::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if json {
                common::print_json_error("error", &format!("{e:#}"));
            }
            eprintln!("bd-merge: {}", printable_lines(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

/// The issues file a command names, else the repository's (found from the current directory).
fn default_issues_file(path: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match path {
        Some(p) => Ok(p.clone()),
        None => beads_git::paths::find_issues_file(&std::env::current_dir()?),
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
