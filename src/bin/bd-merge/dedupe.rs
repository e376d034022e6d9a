//! `bd-merge dedupe`: merge every id that stands on several lines into one record, redoing the
//! merge that produced the copies when the repository still holds it.

use crate::common::error::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::merge::repair::{Deduped, History};
use beads_git::merge::{MergeOptions, Warning};
use beads_git::record::{escaped, escaped_path, printable_lines};

use crate::default_issues_file;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: the repository's .beads/issues.jsonl].
    file: Option<PathBuf>,
    /// Only say which ids would be merged (exit 1 when any); change nothing.
    #[arg(long = "dry-run", alias = "check")]
    dry_run: bool,
}

pub(crate) fn run(args: Args) -> CommandResult {
    use beads_git::merge::repair;
    let Args { file, dry_run } = args;
    let path = default_issues_file(file.as_ref())?;
    let content = beads_git::jsonl::read(&path)?;
    let name = escaped_path(&path);
    if dry_run {
        let (_, done, warnings) = repair::dedupe(&content, &MergeOptions::default());
        print(&name, &warnings, &done, "would become");
        return Ok(ExitCode::from(u8::from(!done.is_empty())));
    }
    let run = repair::dedupe_with_history(&path, &content, &MergeOptions::default());
    print(&name, &run.warnings, &run.done, "became");
    match &run.history {
        History::NotNeeded => {}
        History::Used { commit, merge_base, labels } => {
            for report in &run.history_reports {
                eprintln!("bd-merge: {name}: {}", beads_git::merge::sides::describe(report, labels, false));
            }
            eprintln!(
                "bd-merge: {name}: the copies came from merge commit {commit}: redone as the three-way merge of its parents ({} and {}) \
                    and their merge base {merge_base}",
                escaped(&labels.ours),
                escaped(&labels.theirs)
            );
        }
        History::Missing(why) => eprintln!(
            "bd-merge: {name}: {}, so the copies were merged field by field against an empty base (newest wins what they disagree on); \
                every field decided is in the merge log (`bd-merge review`)",
            printable_lines(&why.to_string())
        ),
    }
    if run.content != content {
        beads_git::safe_fs::write_atomic(&path, &run.content)?;
        let unlogged = beads_git::merge_log::record_dedupe(&path, &run);
        if !unlogged.is_empty() {
            let texts: Vec<String> = unlogged.iter().map(|w| w.text(&crate::common::fix::word)).collect();
            eprintln!("bd-merge: {name}: warning: {}", printable_lines(&texts.join("; ")));
        }
    } else if run.done.is_empty() {
        eprintln!("bd-merge: {name}: no id on several lines");
    }
    Ok(ExitCode::SUCCESS)
}

fn print(name: &str, warnings: &[Warning], done: &[Deduped], verb: &str) {
    for w in warnings {
        eprintln!("bd-merge: {name}: warning: {}", printable_lines(&w.text(&crate::common::fix::word)));
    }
    for d in done {
        eprintln!("bd-merge: {name}: {}: {} copies on lines {:?} {verb} one record", escaped(&d.id), d.copies, d.lines);
    }
}
