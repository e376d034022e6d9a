//! `bd-sync export`: write the cache's edits back to the issues file, or a snapshot elsewhere.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use beads_git::cache::{export, import, Binding};
use beads_git::record::escaped_path;

use crate::{common, explain, Global, MAX_TIMEOUT};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl]; another path gets a snapshot of the cache.
    file: Option<PathBuf>,
    /// Policy when the file changed too and must be merged first.
    #[arg(long = "conflict", value_enum, default_value_t = common::SyncConflict::Newest)]
    conflict: common::SyncConflict,
    /// Give up when another process keeps the cache locked this many seconds, 0 to 86400 (nothing is written then).
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=MAX_TIMEOUT))]
    timeout: u64,
    /// If the export changed the file, `git add` it (the pre-commit hook uses this).
    #[arg(long)]
    stage: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> Result<ExitCode> {
    let (mut cache, binding) = global.open_bound(args.file.as_ref(), args.timeout)?;
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
