//! `bd-hook since-last` (also `--state NAME`, `--source-cmd CMD`): notify every id changed
//! since the last successful run in this clone, from state kept in the git dir; the first run
//! records a baseline.

use crate::common::error::CommandResult;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use beads_git::notify::since_last::{self, RunOutcome};

use crate::deliver::Outlet;
use crate::Cli;

/// Runs one `since-last` pass and says what it did on stderr.
pub(crate) fn run(cli: &Cli, outlet: &Outlet) -> CommandResult {
    let name = cli.state.clone().unwrap_or_else(|| "default".into());
    let source = match &cli.source_cmd {
        Some(cmd) => since_last::Source::Command(cmd.clone()),
        None => since_last::Source::File(cli.path.clone()),
    };
    let dir = std::env::current_dir().context("finding the current directory")?;
    let dry = outlet.dry();
    let command_timeout = Duration::try_from_secs_f64(cli.source_cmd_timeout).unwrap_or(since_last::SOURCE_CMD_TIMEOUT);
    let options = since_last::Options { dir, state: name.clone(), source, command_timeout, notice: |m| eprintln!("bd-hook: {m}") };
    // A dry run prints and sends nothing, so the state stays where it is.
    let outcome = since_last::notify(&options, dry, |ids| {
        if dry {
            outlet.print(ids);
            None
        } else {
            outlet.send(ids)
        }
    })
    .map_err(word_error)?;
    Ok(match outcome {
        RunOutcome::Busy => {
            eprintln!("bd-hook: another since-last run of state {name:?} is under way; nothing done");
            ExitCode::SUCCESS
        }
        RunOutcome::Baseline { records, source, state: Some(path) } => {
            eprintln!(
                "bd-hook: since-last: first run of state {name:?} for {source}: recorded a baseline of {records} issue(s) in {}; \
                 nothing notified (later runs notify what changes from here)",
                path.display()
            );
            ExitCode::SUCCESS
        }
        RunOutcome::Baseline { records, source, state: None } => {
            eprintln!(
                "bd-hook: since-last: no earlier run of state {name:?} for {source}: a real run records a baseline of {records} issue(s) \
                    and notifies nothing"
            );
            ExitCode::SUCCESS
        }
        RunOutcome::Changed { report: Some(report), .. } if !report.all_delivered() && cli.strict => ExitCode::from(1),
        RunOutcome::Changed { .. } => ExitCode::SUCCESS,
    })
}

/// A run that did nothing, said with this binary's flags.
fn word_error(e: since_last::Error) -> anyhow::Error {
    use since_last::Error;
    match e {
        Error::SourceCommand { command, cause } => {
            anyhow::anyhow!("--source-cmd {command:?}: {cause}; nothing was notified and the state is unchanged")
        }
        Error::SourceFailed { command, status } => {
            anyhow::anyhow!("--source-cmd {command:?} failed ({status}); nothing was notified and the state is unchanged")
        }
        Error::NotInRepository { dir } => {
            anyhow::anyhow!("since-last keeps its state in the git dir, and {} is not in a git repository", dir.display())
        }
        Error::NotAState { path, cause } => anyhow::Error::new(cause)
            .context(format!("{} is not a since-last state; remove it to start again with a baseline", path.display())),
        Error::NewerState { path, version } => {
            anyhow::anyhow!("{} was written by a newer bd-hook (state version {version})", path.display())
        }
        Error::Other(e) => e,
    }
}
