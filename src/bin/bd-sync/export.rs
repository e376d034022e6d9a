//! `bd-sync export`: write the cache's edits back to the issues file, or a snapshot elsewhere.

use crate::common::error::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use beads_git::cache::{export, import, Binding, Cache, OpenMode};
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
    /// First, when a tracker's database beside the file (br's `.beads/*.db`, bd's `.beads/dolt/`) holds edits the file lacks: run the
    /// tracker's own flush if `git config beads.flushOnCommit` is true, else name it on stderr (the pre-commit hook uses this; it never
    /// fails the export).
    #[arg(long)]
    flush_tracker: bool,
    /// First, an issues file (.beads/issues.jsonl, .beads/beads.jsonl) holding conflict markers from a merge made without the driver is
    /// resolved by `bd-merge resolve --stage` (the pre-commit hook uses this).
    #[arg(long)]
    resolve_markers: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    if args.stage && names_its_paths(global, &args) {
        return Ok(ExitCode::SUCCESS);
    }
    if args.resolve_markers {
        resolve_markers();
    }
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
    // Closed first: the marker must be newer than the last write to the cache.
    drop(cache);
    beads_git::cache::in_step::mark(&paths);
    if global.json {
        Global::print_json(&report)?;
    } else if !report.unchanged {
        eprintln!("bd-sync: exported {}: {} written, {} removed", escaped_path(&paths.file), report.written.len(), report.removed.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// `git commit -- <paths>` and `git commit --only <paths>` build their commit in a temporary
/// index: a file staged there goes into a commit that did not name it, and the real index keeps
/// the old version (the next plain commit would put it back). So nothing is resolved, flushed or
/// exported into such a commit; the file waits for the next one, and one line says so when
/// something is waiting (cache edits, a tracker's database ahead of the file, conflict markers).
fn names_its_paths(global: &Global, args: &Args) -> bool {
    let Ok(dir) = crate::repo_dir(None) else { return false };
    let Some(git_dir) = beads_git::git::git_dir(&dir) else { return false };
    if beads_git::git::temporary_commit_index(&git_dir).is_none() {
        return false;
    }
    let Ok(paths) = global.paths(args.file.as_ref()) else { return true };
    let edits = paths.db.exists()
        && Cache::open(&paths, OpenMode::read(Duration::from_secs(2)))
            .and_then(|c| c.dirty_count().map_err(Into::into))
            .is_ok_and(|n| n > 0);
    let tracker =
        args.flush_tracker && matches!(tracker::behind(&paths.file, std::time::Instant::now() + Duration::from_secs(10)), Ok(Some(_)));
    let markers = args.resolve_markers && marked_files().next().is_some();
    if edits || tracker || markers {
        eprintln!(
            "bd-sync: this commit names its paths (git commit -- <paths>, --only): {} stays out of it, and {} go into your next commit",
            escaped_path(&paths.file),
            match (edits, tracker) {
                (true, true) => "the cache's and the tracker's edits",
                (true, false) => "the cache's edits",
                (false, true) => "the tracker's edits",
                (false, false) => "its conflict resolution",
            }
        );
    }
    true
}

/// The issues files (at the repository's top, where git runs hooks) with a conflict-marker line,
/// read in blocks (never whole) and never through a link or from a FIFO.
fn marked_files() -> impl Iterator<Item = &'static str> {
    [".beads/issues.jsonl", ".beads/beads.jsonl"].into_iter().filter(|f| {
        let Ok(mut blocks) = beads_git::jsonl::LineBlocks::open(std::path::Path::new(f), 1 << 20) else { return false };
        while let Ok(Some(block)) = blocks.next_block() {
            if block.lines.iter().any(|l| beads_git::record::is_conflict_marker(l.bytes)) {
                return true;
            }
        }
        false
    })
}

/// Runs `bd-merge resolve --stage FILE` (our sibling binary, else the one on PATH) on each file
/// holding conflict markers; its own lines say what it did. Never fails the export. (The common
/// commit does not get here: the hook's in-step check starts nothing.)
fn resolve_markers() {
    for file in marked_files() {
        let program = beads_git::install::sibling("bd-merge");
        let ran = std::process::Command::new(&program).args(["resolve", "--stage", file]).stdin(std::process::Stdio::null()).status();
        if let Err(e) = ran {
            eprintln!("bd-sync: {file} has conflict markers, and bd-merge could not run ({e}): run `bd-merge resolve --stage {file}`");
        }
    }
}

/// The pre-commit step for a tracker's database that holds edits the file lacks: one line on
/// stderr whatever happens, and never a failure (the commit goes on).
fn flush_tracker(file: &std::path::Path, stage: bool) {
    let shown = |b: &tracker::Behind| escaped_path(std::path::Path::new(&b.file_rel));
    match tracker::pre_commit(file, stage) {
        tracker::PreCommit::InStep => {}
        tracker::PreCommit::Behind(b) => eprintln!(
            "bd-sync: {} lacks edits in {}'s database ({}): run `{}` (and `git add {}`) before committing, or `git config \
                beads.flushOnCommit true` to have this hook do it",
            shown(&b),
            b.tracker.program(),
            escaped_path(&b.db),
            printable(&b.flush_command(), 400),
            shown(&b),
        ),
        tracker::PreCommit::Flushed { behind, changed, staged } => match staged {
            Ok(()) if changed => eprintln!(
                "bd-sync: ran `{}`: {} now holds {}'s edits",
                printable(&behind.flush_command(), 400),
                shown(&behind),
                behind.tracker.program()
            ),
            Ok(()) => {}
            Err(e) => eprintln!(
                "bd-sync: ran `{}`, but could not stage {}: {}",
                printable(&behind.flush_command(), 400),
                shown(&behind),
                printable(&e, 400)
            ),
        },
        tracker::PreCommit::FlushFailed(b, e) => eprintln!(
            "bd-sync: {} lacks edits in {}'s database, and {}; committing the file as it is (run `{}` yourself)",
            shown(&b),
            b.tracker.program(),
            printable(&e.to_string(), 400),
            printable(&b.flush_command(), 400),
        ),
        tracker::PreCommit::Unknown(e) => eprintln!(
            "bd-sync: could not tell whether {} is behind the tracker's database: {}",
            escaped_path(file),
            printable(&e.to_string(), 400)
        ),
    }
}
