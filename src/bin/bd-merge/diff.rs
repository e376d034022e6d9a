//! `bd-merge diff OLD NEW`: what changed in issues between two files, field by field; also git's
//! external diff (7 arguments).

use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::issue_diff;
use beads_git::record::{escaped, escaped_path};

use crate::common;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// OLD NEW, or git's PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE.
    #[arg(num_args = 2..=7, required = true, value_name = "FILES")]
    files: Vec<PathBuf>,
    /// Typed JSON on stdout (shapes in the README).
    #[arg(long)]
    pub(crate) json: bool,
    /// Exit 1 when an issue differs, 0 when none does (as `git diff --exit-code`).
    #[arg(long)]
    exit_code: bool,
    /// Colour the output: auto (a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = common::Color::Auto, hide_possible_values = true)]
    color: common::Color,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { files, json, exit_code, color } = args;
    beads_git::color::set(color.into());
    let (label, old, new) = match files.as_slice() {
        [old, new] => (None, old, new),
        [path, old, _, _, new, _, _] => (Some(escaped_path(path)), old, new),
        _ => anyhow::bail!("diff takes OLD NEW, or git's 7 arguments (got {})", files.len()),
    };
    let changes = issue_diff::diff_files(beads_git::jsonl::read(old)?, beads_git::jsonl::read(new)?)?;
    let differs = !changes.is_empty();
    for (id, field) in issue_diff::shown_whole(&changes) {
        eprintln!("bd-merge: {}: {}: too large for a line diff; shown whole", escaped(id), escaped(field));
    }
    if json {
        let report = issue_diff::FileDiff { old: old.display().to_string(), new: new.display().to_string(), issues: changes };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        if let Some(label) = label.filter(|_| !changes.is_empty()) {
            println!("diff --beads a/{label} b/{label}");
        }
        print!("{}", issue_diff::render(&changes, issue_diff::Style::for_stdout()));
    }
    Ok(if exit_code && differs { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
