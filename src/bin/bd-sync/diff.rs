//! `bd-sync diff`: what changed in issues, field by field, between revisions of the issues file.

use crate::common::error::CommandResult;
use std::process::ExitCode;

use beads_git::history;
use beads_git::issue_diff::{self, Style};
use beads_git::record::escaped;

use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// `REV` (against the working file) or `A..B` [default: HEAD against the working file].
    revs: Option<String>,
    /// Exit 1 when an issue differs, 0 when none does (as `git diff --exit-code`).
    #[arg(long)]
    exit_code: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let file = global.paths(None)?.file;
    let file = std::path::absolute(&file).unwrap_or(file);
    let report = history::diff(&history::DiffOptions { spec: args.revs, working_file: file })?;
    for (id, field) in issue_diff::shown_whole(&report.issues) {
        eprintln!("bd-sync: {}: {}: too large for a line diff; shown whole", escaped(id), escaped(field));
    }
    if global.json {
        Global::print_json(&report)?;
    } else {
        out!("{}", issue_diff::render(&report.issues, Style::for_stdout()));
        if report.issues.is_empty() {
            eprintln!("bd-sync: no issue changed between {} and {}", escaped(&report.old), escaped(&report.new));
        }
    }
    Ok(if args.exit_code && !report.issues.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
