//! `bd-hook --id ID`, `--stdin` and `--from-diff REV`: notify the ids given, read, or found in a
//! diff of the issues file (any mix of the three, each id once).

use std::process::ExitCode;

use anyhow::{Context, Result};
use beads_git::notify::ids::{collect_ids, IdSources};

use crate::deliver::Outlet;
use crate::Cli;

/// Collects the ids and delivers them in one batch.
pub(crate) fn run(cli: &Cli, outlet: &Outlet) -> Result<ExitCode> {
    let sources =
        IdSources { ids: cli.ids.clone(), stdin: cli.stdin, nul: cli.null, from_diff: cli.from_diff.clone(), path: cli.path.clone() };
    let dir = std::env::current_dir().context("finding the current directory")?;
    let ids = collect_ids(&sources, &dir, std::io::stdin().lock())?;
    if ids.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if outlet.deliver(&ids) || !cli.strict { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
