//! `bd-hook send ID...`, `stdin` and `from-diff REV`: notify the ids given, read, or found in a
//! diff of the issues file (the old flags `--id`, `--stdin`, `--from-diff` may still mix the
//! three; each id once).

use crate::common::error::CommandResult;
use std::process::ExitCode;

use anyhow::{Context, Result};
use beads_git::notify::ids::{collect_ids, IdSources};

use crate::deliver::Outlet;
use crate::Cli;

/// Collects the ids and delivers them in one batch.
pub(crate) fn run(cli: &Cli, outlet: &Outlet) -> CommandResult {
    let ids = collect(cli)?;
    if ids.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(deliver(cli, outlet, &ids))
}

/// `stdin` (with `--id`s, without a diff): the ids are read before the server is looked up,
/// so nothing to notify costs nothing.
pub(crate) fn run_stdin_first(cli: &Cli) -> CommandResult {
    let ids = collect(cli)?;
    if ids.is_empty() && !cli.strict {
        return Ok(ExitCode::SUCCESS);
    }
    // Under --strict a missing server is an error even with nothing to send, as in every mode.
    let Some(outlet) = Outlet::new(cli)? else { return Ok(crate::no_server(cli)) };
    if ids.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(deliver(cli, &outlet, &ids))
}

fn collect(cli: &Cli) -> Result<Vec<String>> {
    let sources =
        IdSources { ids: cli.ids.clone(), stdin: cli.stdin, nul: cli.null, from_diff: cli.from_diff.clone(), path: cli.path.clone() };
    let dir = std::env::current_dir().context("finding the current directory")?;
    collect_ids(&sources, &dir, std::io::stdin().lock())
}

/// Delivers `ids`: exit 1 under `--strict` when one was not delivered.
pub(crate) fn deliver(cli: &Cli, outlet: &Outlet, ids: &[String]) -> ExitCode {
    if outlet.deliver(ids) || !cli.strict {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
