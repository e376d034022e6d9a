//! `bd-sync import`: bring the cache up to date with the issues file.

use crate::common::error::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use beads_git::cache::{import, Binding};
use beads_git::record::{escaped, escaped_path};

use crate::{common, explain, Global};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl].
    file: Option<PathBuf>,
    /// Print the ids added, changed or removed, one per line (for `bd-hook stdin`).
    #[arg(long)]
    print_changed: bool,
    /// With --print-changed: end each id with NUL instead of a newline, so every id crosses a
    /// pipe intact (for `bd-hook stdin -z`).
    #[arg(short = 'z', long = "null", requires = "print_changed")]
    z: bool,
    /// Import the valid lines and list the invalid ones instead of aborting.
    #[arg(long)]
    skip_invalid: bool,
    /// Policy for issues edited both in the cache and in the file.
    #[arg(long = "conflict", value_enum, default_value_t = common::SyncConflict::Newest)]
    conflict: common::SyncConflict,
    /// Re-read every line even if the file looks unchanged.
    #[arg(long)]
    force: bool,
    /// Give up when another process keeps the cache locked this many seconds, a fraction allowed, 0 to 86400 (nothing is written then).
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = common::args::seconds)]
    timeout: f64,
    /// Make FILE the cache's issues file (import refuses another file than the one it syncs with).
    #[arg(long)]
    rebind: bool,
    /// Run by the post-rewrite hook after a rebase: first give the merge stamp to every record
    /// the rebase left no newer than the pre-rebase tip's (ORIG_HEAD) record of it, so the
    /// tracker takes the rebased content over what it imported before (the file is then changed:
    /// the next commit takes it).
    #[arg(long)]
    after_rebase: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let (mut cache, binding) = global.open_bound(args.file.as_ref(), Duration::from_secs_f64(args.timeout))?;
    if let Binding::Other(other) = binding {
        if !args.rebind {
            eprintln!(
                "bd-sync: the cache belongs to {}; importing {} would replace its issues with that file's \
                 (and send its unexported edits there). Nothing was changed. Pass --rebind to make {} the cache's file.",
                cache.paths.file.display(),
                other.display(),
                other.display()
            );
            return Ok(ExitCode::from(2));
        }
        cache.rebind(other);
    }
    let paths = cache.paths.clone();
    if args.after_rebase {
        let now = beads_git::timestamp::merge_now()?;
        let ids = beads_git::replay::restamp_after_rebase(&paths.file, Some(now))?;
        if !ids.is_empty() {
            let shown: Vec<String> = ids.iter().take(5).map(|id| escaped(id).into_owned()).collect();
            eprintln!(
                "bd-sync: the rebase left {} record(s) older than the tracker's copy from before it ({}{}); they now carry a new \
                    updated_at so the tracker takes them, and {} is changed: commit it",
                ids.len(),
                shown.join(", "),
                if ids.len() > 5 { ", ..." } else { "" },
                escaped_path(&paths.file)
            );
        }
    }
    let progress = crate::progress_capable() && crate::larger_than(&paths.file, 16 << 20);
    let policy: import::SyncPolicy = args.conflict.into();
    let options = import::ImportOptions { skip_invalid: args.skip_invalid, policy, force: args.force, progress };
    let report = import::import(&mut cache, &options).map_err(|e| explain(e, true))?;
    // Closed before the marker is written: it must be newer than the last write to the cache.
    // Not after skipped lines: the file may hold conflict markers the pre-commit hook must see.
    if report.skipped.is_empty() {
        beads_git::cache::in_step::mark_closing(cache);
    } else {
        drop(cache);
        let _ = std::fs::remove_file(beads_git::cache::in_step::marker(&paths.db));
    }
    for bad in &report.skipped {
        eprintln!("bd-sync: skipped {bad}");
    }
    for r in &report.conflicts {
        eprintln!("bd-sync: {}: {r}", paths.file.display());
    }
    if let Some(warning) = beads_git::merge_log::record_import(&paths.file, &report.conflicts, policy.into()) {
        eprintln!("bd-sync: {}: warning: {}", paths.file.display(), warning.text(&common::fix::word));
    }
    if !report.repeated_keys.is_empty() {
        let lines: Vec<String> = report.repeated_keys.iter().take(10).map(std::string::ToString::to_string).collect();
        eprintln!(
            "bd-sync: warning: {} record(s) repeat a key (line {}); the last value counts, as in bd (see `bd-sync check`)",
            report.repeated_keys.len(),
            lines.join(", ")
        );
    }
    if !report.duplicate_ids.is_empty() {
        eprintln!("bd-sync: warning: {} id(s) appear on several lines (see `bd-sync check`)", report.duplicate_ids.len());
    }
    if let Some(notice) = import::rename_notice(&report, &paths.file) {
        eprintln!("bd-sync: {}", crate::common::fix::rename_notice(&notice));
    }
    if global.json {
        Global::print_json(&report)?;
    } else if args.print_changed {
        print_ids(&report.changed_ids(), args.z)?;
    } else if !report.noop {
        eprintln!(
            "bd-sync: imported {}: {} added, {} changed, {} removed, {} merged with cache edits",
            escaped_path(&paths.file),
            report.added.len(),
            report.changed.len(),
            report.removed.len(),
            report.merged.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes ids for `bd-hook stdin`: NUL-terminated with `nul` (an id holding a NUL, which
/// cannot cross, is left out and named on stderr), else one per line (an id a line cannot carry
/// intact is named on stderr, with the fix).
fn print_ids(ids: &[&str], nul: bool) -> Result<()> {
    let mut lossy = Vec::new();
    match write_ids(ids, nul, &mut lossy) {
        // The reader went away (`| head`): done, as SIGPIPE ends it on unix.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        written => written?,
    }
    if !lossy.is_empty() {
        eprintln!(
            "bd-sync: warning: {} id(s) cannot cross a line-based pipe intact (a newline, a leading '#' or surrounding spaces: {}); use \
                --print-changed -z with bd-hook stdin -z",
            lossy.len(),
            lossy.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// The ids on stdout; `lossy` gets those a line cannot carry intact.
fn write_ids(ids: &[&str], nul: bool, lossy: &mut Vec<String>) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for id in ids {
        if nul {
            if id.contains('\0') {
                eprintln!("bd-sync: id {:?} holds a NUL and cannot be printed with -z; left out", beads_git::record::printable(id, 80));
                continue;
            }
            out.write_all(id.as_bytes())?;
            out.write_all(b"\0")?;
        } else {
            if id.contains(['\n', '\r']) || id.starts_with('#') || id.trim() != *id {
                lossy.push(beads_git::record::printable(id, 40));
            }
            // One per line, an id is escaped: a control character never reaches a terminal
            // and a newline never forges a second id (-z keeps every id exact).
            out.write_all(escaped(id).as_bytes())?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()
}
