//! `bd-merge`: git merge driver for beads JSONL issue files, and the commands around it (see
//! docs/merge-rules.md, "Registering the merge driver with git").
//!
//! The three-file merge is the default form, the one git runs (`bd-merge %O %A %B -l %L ...`);
//! every other command is a subcommand, one file each. What git and hooks call (the driver's
//! form, `textconv`, `diff`'s seven-argument form, `review --announce`) is plumbing: it works as
//! ever but stays out of `--help`. This file holds the clap tree, the shared flags' rules and the
//! dispatch.

#[path = "../common/mod.rs"]
#[macro_use]
mod common;

mod dedupe;
mod diff;
mod driver;
mod resolve;
mod review;
mod textconv;
mod update_branch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use common::error::{CommandError, Kind};

/// Field-level three-way merge of beads `issues.jsonl` files, and the commands around it.
///
/// `bd-merge merge BASE OURS THEIRS` is the merge; git runs the same merge as the driver `bd-sync
/// install` registers (`bd-merge %O %A %B ...`, without the word `merge`). Exit codes: 0 done
/// cleanly, 1 conflicts or work left for a human, 2 error.
#[derive(Parser, Debug)]
#[command(name = "bd-merge", version = beads_git::VERSION, propagate_version = true)]
#[command(subcommand_negates_reqs = true, arg_required_else_help = true, override_usage = "bd-merge [OPTIONS] <COMMAND>")]
struct Cli {
    #[command(flatten)]
    directory: common::args::Directory,
    #[command(flatten)]
    color: common::args::ColorOnly,
    #[command(flatten)]
    json: common::args::JsonBefore,
    #[command(flatten)]
    quiet: common::args::Quiet,
    #[command(flatten)]
    merge: driver::Args,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Merge BASE OURS THEIRS field by field into OURS, as git's merge driver does (git runs the
    /// same merge as `bd-merge %O %A %B -l %L -p %P ...`, the form `bd-sync install` registers).
    /// Exit 0 merged cleanly, 1 conflicts left between markers, 2 error.
    #[command(override_usage = "bd-merge merge [OPTIONS] BASE OURS THEIRS")]
    Merge(driver::Args),
    /// Show what changed in issues between two files, field by field: scalars old -> new, label,
    /// dependency and comment additions and removals, a line diff of multi-line text. Exit 0, 2 on error.
    Diff(diff::Args),
    /// Print an issues file as one line per field, for git's `diff.beads.textconv` (what `bd-sync install` sets).
    #[command(hide = true)]
    Textconv(textconv::Args),
    /// Merge a conflicted issues file as the driver would have: from git's index stages during a
    /// conflicted merge, rebase, cherry-pick or stash pop, else from its conflict markers.
    /// Exit 0 merged cleanly or nothing to do, 1 conflicts left (or, with --dry-run, work to do), 2 error.
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
    /// record, field by field; identical repeats collapse. Exit 0, or 1 with --dry-run when needed.
    Dedupe(dedupe::Args),
}

impl Command {
    /// Whether the command was given its own `--json` (only those with JSON output declare it),
    /// or `Err` with the command's name when it has no JSON output (`--json` before its name is
    /// refused there).
    fn own_json(command: Option<&Command>) -> Result<bool, &'static str> {
        match command {
            None | Some(Command::Merge(_)) => Err("the merge driver"),
            Some(Command::Textconv(_)) => Err("textconv"),
            Some(Command::Resolve(_)) => Err("resolve"),
            Some(Command::Dedupe(_)) => Err("dedupe"),
            Some(Command::Diff(a)) => Ok(a.json.json),
            Some(Command::UpdateBranch(a)) => Ok(a.json.json),
            Some(Command::Review(a)) => Ok(a.json.json),
        }
    }
}

/// What every subcommand takes from the shared flags.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Global {
    /// `--json`.
    pub json: bool,
    /// `--quiet`.
    pub quiet: bool,
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = common::generate::from_args(&args, command) {
        return code;
    }
    let cli = parse(&args);
    let json = match Command::own_json(cli.command.as_ref()) {
        Ok(own) => own || cli.json.json,
        Err(name) if cli.json.json => common::exit_usage(no_json_output(name), &args),
        Err(_) => false,
    };
    let global = Global { json, quiet: cli.quiet.quiet };
    if let Err(e) = cli.directory.enter() {
        return CommandError::new(Kind::Error, e).report("bd-merge", global.json);
    }
    beads_git::color::set(cli.color.color.into());
    let result = match cli.command {
        None => return driver::run(cli.merge, global),
        Some(Command::Merge(args)) => return driver::run(args, global),
        Some(Command::Diff(args)) => diff::run(args, global),
        Some(Command::Textconv(args)) => textconv::run(args),
        Some(Command::Resolve(args)) => resolve::run(args, global),
        Some(Command::UpdateBranch(args)) => update_branch::run(args, global),
        Some(Command::Review(args)) => review::run(args, global),
        Some(Command::Dedupe(args)) => dedupe::run(args),
    };
    result.unwrap_or_else(|e| e.report("bd-merge", global.json))
}

/// The clap tree: [`Cli`]'s, with the driver's arguments shown under `merge` (the same arguments
/// stay out of the top-level help, where git's form takes them as plumbing).
fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().mut_subcommand("merge", |merge| merge.mut_args(|arg| arg.hide(false)))
}

/// Parses the command line. The driver's arguments belong to the form git runs, without a
/// subcommand: with one they are refused, never ignored. (clap's `args_conflicts_with_subcommands`
/// would refuse them too, but also stop a global flag such as `-C DIR` from preceding the
/// subcommand.)
fn parse(args: &[std::ffi::OsString]) -> Cli {
    use clap::FromArgMatches;
    let mut command = command();
    let matches = command.try_get_matches_from_mut(args).unwrap_or_else(|e| common::exit_usage(json_refused(e, args), args));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| common::exit_usage(e, args));
    if let Some((name, _)) = matches.subcommand() {
        let given = |id: &&&str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
        if let Some(id) = driver::Args::IDS.iter().find(given) {
            command.build();
            let flag = command.get_arguments().find(|a| a.get_id() == *id).map_or_else(|| id.to_string(), ToString::to_string);
            let message = format!(
                "{flag} before `{name}` is the merge driver's (`bd-merge BASE OURS THEIRS`): give {name}'s own options after its name"
            );
            common::exit_usage(command.error(clap::error::ErrorKind::ArgumentConflict, message), args);
        }
    }
    cli
}

/// The usage error for `--json` given to a command without JSON output.
fn no_json_output(name: &str) -> clap::Error {
    let message = format!("{name} has no JSON output: leave out --json");
    command().error(clap::error::ErrorKind::ArgumentConflict, message)
}

/// clap's "unexpected argument" for a `--json` after the name of a command that does not declare
/// it, said as what it is: that command has no JSON output.
fn json_refused(e: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let unexpected_json = e.kind() == ErrorKind::UnknownArgument
        && matches!(e.get(ContextKind::InvalidArg), Some(ContextValue::String(arg)) if arg == "--json");
    let name = args.iter().skip(1).find_map(|a| {
        let a = a.to_str()?;
        ["merge", "textconv", "resolve", "dedupe"].into_iter().find(|name| *name == a)
    });
    match name {
        Some(name) if unexpected_json => no_json_output(name),
        _ => e,
    }
}

/// The issues file a command names, else the repository's (found from the current directory).
fn default_issues_file(path: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match path {
        Some(p) => Ok(p.clone()),
        None => beads_git::paths::find_issues_file(&std::env::current_dir()?).map_err(common::fix::find_error),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        super::command().debug_assert();
    }
}
