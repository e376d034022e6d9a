//! `bd-merge dedupe`: merge every id that stands on several lines into one record.

use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::merge::MergeOptions;
use beads_git::record::{escaped, escaped_path, printable_lines};

use crate::default_issues_file;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: the repository's .beads/issues.jsonl].
    path: Option<PathBuf>,
    /// Only say which ids would be merged (exit 1 when any); change nothing.
    #[arg(long)]
    check: bool,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    use beads_git::merge::repair;
    let Args { path, check } = args;
    let path = default_issues_file(path.as_ref())?;
    let content = beads_git::jsonl::read(&path)?;
    let (out, done, warnings) = repair::dedupe(&content, &MergeOptions::default());
    let name = escaped_path(&path);
    for w in &warnings {
        eprintln!("bd-merge: {name}: warning: {}", printable_lines(w));
    }
    for d in &done {
        eprintln!(
            "bd-merge: {name}: {}: {} copies on lines {:?} {} one record",
            escaped(&d.id),
            d.copies,
            d.lines,
            if check { "would become" } else { "became" }
        );
    }
    if check {
        return Ok(ExitCode::from(u8::from(!done.is_empty())));
    }
    if out != content {
        beads_git::jsonl::write_atomic(&path, &out)?;
        if let Some(w) = repair::log_dedupe(&path, &done) {
            eprintln!("bd-merge: {}: warning: {w}", path.display());
        }
    } else if done.is_empty() {
        eprintln!("bd-merge: {name}: no id on several lines");
    }
    Ok(ExitCode::SUCCESS)
}
