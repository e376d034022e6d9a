//! `bd-merge diff OLD NEW`: what changed in issues between two files, field by field; also git's
//! external diff (7 arguments, plumbing: left out of `--help`, described in the reference).

use crate::common::error::{CommandError, CommandResult, Kind};
use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::issue_diff;
use beads_git::record::{escaped, escaped_path};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The older issues file.
    old: PathBuf,
    /// The newer issues file.
    new: PathBuf,
    /// Git's external diff passes 7: PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE;
    /// the last five land here.
    #[arg(num_args = 1..=5, value_name = "GIT-ARG", hide = true)]
    git: Vec<PathBuf>,
    /// Exit 1 when an issue differs, 0 when none does (as `git diff --exit-code`).
    #[arg(long)]
    exit_code: bool,
    #[command(flatten)]
    pub(crate) json: crate::common::args::Json,
}

pub(crate) fn run(args: Args, global: crate::Global) -> CommandResult {
    let Args { old, new, git, exit_code, json: _ } = args;
    let json = global.json;
    // In git's form the first two are PATH and OLD-FILE, and NEW-FILE is the third of the rest.
    let (label, old, new) = match git.as_slice() {
        [] => (None, &old, &new),
        [_, _, new_file, _, _] => (Some(escaped_path(&old)), &new, new_file),
        _ => return Err(CommandError::new(Kind::Usage, format!("diff takes OLD NEW, or git's 7 arguments (got {})", git.len() + 2))),
    };
    let changes = issue_diff::diff_files(beads_git::jsonl::read(old)?, beads_git::jsonl::read(new)?)?;
    let differs = !changes.is_empty();
    for (id, field) in issue_diff::shown_whole(&changes) {
        eprintln!("bd-merge: {}: {}: too large for a line diff; shown whole", escaped(id), escaped(field));
    }
    if json {
        let report = issue_diff::FileDiff { old: old.display().to_string(), new: new.display().to_string(), issues: changes };
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        if let Some(label) = label.filter(|_| !changes.is_empty()) {
            outln!("diff --beads a/{label} b/{label}");
        }
        out!("{}", issue_diff::render(&changes, issue_diff::Style::for_stdout()));
    }
    Ok(if exit_code && differs { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
