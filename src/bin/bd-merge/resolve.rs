//! `bd-merge resolve`: merge a conflicted issues file as the driver would have, from git's index
//! stages or from the conflict markers in the file; and the next step to run.

use crate::common::error::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::merge::MergeOptions;
use beads_git::record::{escaped, escaped_path, printable_lines};

use crate::driver::print_report;
use crate::{common, default_issues_file};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: the repository's .beads/issues.jsonl].
    file: Option<PathBuf>,
    /// How to settle what the merge rules leave open.
    #[arg(long = "conflict", value_enum, default_value_t = common::Conflict::Newest)]
    conflict: common::Conflict,
    /// `git add` the result when no conflicts are left.
    #[arg(long)]
    stage: bool,
    /// Only say whether the file needs resolving (exit 1 when it does); change nothing.
    #[arg(long = "dry-run", alias = "check")]
    dry_run: bool,
}

pub(crate) fn run(args: Args, global: crate::Global) -> CommandResult {
    use beads_git::merge::repair::{self, History, ResolveOptions, ResolveOutcome, Sides};
    let Args { file, conflict, stage, dry_run } = args;
    let quiet = global.quiet;
    let path = default_issues_file(file.as_ref())?;
    let options = ResolveOptions {
        path: path.clone(),
        merge: MergeOptions { policy: conflict.into(), ..MergeOptions::default() },
        stage,
        check: dry_run,
        log: Some(beads_git::merge_log::decision_log(beads_git::merge_log::RESOLVE_COMMAND)),
    };
    let name = escaped_path(&path);
    match repair::resolve(&options)? {
        ResolveOutcome::NothingToDo => {
            eprintln!("bd-merge: {name}: nothing to resolve (no index stages, no conflict markers)");
            Ok(ExitCode::SUCCESS)
        }
        ResolveOutcome::Merged { sides, report, history } => {
            let from = match (sides, &history) {
                (Sides::MergeCommit, History::Used { commit, merge_base, labels }) => format!(
                    "merge commit {commit}, which committed the markers: the three-way merge of its parents ({} and {}) and their merge \
                        base {merge_base}",
                    escaped(&labels.ours),
                    escaped(&labels.theirs)
                ),
                (Sides::IndexStages, _) => "git's index stages".to_owned(),
                _ => "the conflict markers in the file".to_owned(),
            };
            if let (Some(_), History::Missing(why)) = (&report, &history) {
                eprintln!(
                    "bd-merge: {name}: {}, so the sides were rebuilt from the conflict markers (a hunk without a base section merged \
                        field by field against an empty base); every field decided is in the merge log (`bd-merge review`)",
                    printable_lines(&why.to_string())
                );
            }
            let Some(report) = report else {
                eprintln!("bd-merge: {name}: needs resolving (sides from {from}): run `bd-merge resolve`");
                return Ok(ExitCode::from(1));
            };
            print_report(&name, &report, quiet);
            eprintln!(
                "bd-merge: {name}: resolved from {from}{}",
                if report.exit_code() == 0 {
                    if stage {
                        " and staged"
                    } else {
                        ""
                    }
                } else {
                    "; conflicts left for a human"
                }
            );
            if report.exit_code() == 0 {
                let shown = beads_git::paths::shown_path(&path);
                eprintln!("{}", next_step(&shown, stage));
            }
            Ok(ExitCode::from(report.exit_code()))
        }
    }
}

/// What to run after a clean `resolve`: stage the file (unless `--stage` did), then commit.
fn next_step(file: &str, staged: bool) -> String {
    if staged {
        "bd-merge: next: commit (`git commit`; `git rebase --continue` during a rebase)".to_owned()
    } else {
        format!("bd-merge: next: `git add {file}` (or resolve with --stage), then commit (`git rebase --continue` during a rebase)")
    }
}
