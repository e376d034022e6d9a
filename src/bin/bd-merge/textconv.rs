//! `bd-merge textconv FILE`: an issues file as one line per field, for git's `diff.beads.textconv`
//! (plumbing: left out of `--help`, described in the reference).

use crate::common::error::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::issue_diff;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The file git converts.
    file: PathBuf,
}

pub(crate) fn run(args: Args) -> CommandResult {
    let Args { file } = args;
    let content = beads_git::jsonl::read(&file)?;
    out!("{}", issue_diff::textconv(&content));
    Ok(ExitCode::SUCCESS)
}
