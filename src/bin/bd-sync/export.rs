//! `bd-sync export`: write the cache's edits back to the issues file, or a snapshot elsewhere.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use beads_git::cache::{export, import, Binding};
use beads_git::record::{escaped_path, printable};
use beads_git::tracker;

use crate::{common, explain, Global};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl]; another path gets a snapshot of the cache.
    file: Option<PathBuf>,
    /// Policy when the file changed too and must be merged first.
    #[arg(long = "conflict", value_enum, default_value_t = common::SyncConflict::Newest)]
    conflict: common::SyncConflict,
    /// Give up when another process keeps the cache locked this many seconds, a fraction allowed, 0 to 86400 (nothing is written then).
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = common::args::seconds)]
    timeout: f64,
    /// If the export changed the file, `git add` it (the pre-commit hook uses this).
    #[arg(long)]
    stage: bool,
    /// First, when a tracker's database beside the file (br's `.beads/*.db`, bd's `.beads/dolt/`) holds edits the file lacks: run the tracker's own flush if `git config beads.flushOnCommit` is true, else name it on stderr (the pre-commit hook uses this; it never fails the export).
    #[arg(long)]
    flush_tracker: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> Result<ExitCode> {
    if args.flush_tracker {
        // The issues file found as the export finds it, without git: the common case costs a stat.
        let file =
            args.file.clone().or_else(|| crate::repo_dir(None).ok().and_then(|start| beads_git::paths::find_issues_file(&start).ok()));
        if let Some(file) = file {
            flush_tracker(&file, args.stage);
        }
    }
    let (mut cache, binding) = global.open_bound(args.file.as_ref(), Duration::from_secs_f64(args.timeout))?;
    if let Binding::Other(other) = binding {
        // Another file: a snapshot of the cache there; the cache and its file stay as they are.
        let n = export::snapshot(&cache, &other)?;
        if global.json {
            Global::print_json(&serde_json::json!({ "snapshot": other.display().to_string(), "issues": n }))?;
        } else {
            eprintln!("bd-sync: wrote a snapshot of the cache to {}: {n} issue(s)", escaped_path(&other));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let paths = cache.paths.clone();
    let options = import::ImportOptions { policy: args.conflict.into(), ..Default::default() };
    let report = export::export(&mut cache, &options, args.stage).map_err(|e| explain(e, false))?;
    if global.json {
        Global::print_json(&report)?;
    } else if !report.unchanged {
        eprintln!("bd-sync: exported {}: {} written, {} removed", escaped_path(&paths.file), report.written.len(), report.removed.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// The pre-commit step for a tracker's database that holds edits the file lacks: one line on
/// stderr whatever happens, and never a failure (the commit goes on).
fn flush_tracker(file: &std::path::Path, stage: bool) {
    let shown = |b: &tracker::Behind| escaped_path(std::path::Path::new(&b.file_rel));
    match tracker::pre_commit(file, stage) {
        tracker::PreCommit::InStep => {}
        tracker::PreCommit::Behind(b) => eprintln!(
            "bd-sync: {} lacks edits in {}'s database ({}): run `{}` (and `git add {}`) before committing, or `git config beads.flushOnCommit true` to have this hook do it",
            shown(&b),
            b.tracker.program(),
            escaped_path(&b.db),
            printable(&b.flush_command(), 400),
            shown(&b),
        ),
        tracker::PreCommit::Flushed { behind, changed, staged } => match staged {
            Ok(()) if changed => eprintln!("bd-sync: ran `{}`: {} now holds {}'s edits", printable(&behind.flush_command(), 400), shown(&behind), behind.tracker.program()),
            Ok(()) => {}
            Err(e) => eprintln!("bd-sync: ran `{}`, but could not stage {}: {}", printable(&behind.flush_command(), 400), shown(&behind), printable(&e, 400)),
        },
        tracker::PreCommit::FlushFailed(b, e) => eprintln!(
            "bd-sync: {} lacks edits in {}'s database, and {}; committing the file as it is (run `{}` yourself)",
            shown(&b),
            b.tracker.program(),
            printable(&e.to_string(), 400),
            printable(&b.flush_command(), 400),
        ),
        tracker::PreCommit::Unknown(e) => eprintln!("bd-sync: could not tell whether {} is behind the tracker's database: {}", escaped_path(file), printable(&e.to_string(), 400)),
    }
}
