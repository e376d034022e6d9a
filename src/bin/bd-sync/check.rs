//! `bd-sync check` (alias `doctor`): problems in the issues file and the installation.

use crate::common::error::CommandResult;
use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::record::escaped;
use beads_git::{doctor, install};

use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl].
    file: Option<PathBuf>,
    /// Exit 1 on warnings too (dangling dependencies, duplicate ids, unknown statuses, ...).
    #[arg(long)]
    strict: bool,
    /// The CI gate: check the file alone (markers, ids on several lines, schema, stale derived
    /// fields, what the trackers refuse) and skip this clone's installation and merge-log findings.
    #[arg(long)]
    ci: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let file = match args.file {
        Some(f) => f,
        None => global.paths(None)?.file,
    };
    let bin_dir = if args.ci { None } else { Some(install::own_bin_dir()?) };
    let mut report = doctor::check(&doctor::CheckOptions { file, bin_dir })?;
    crate::common::fix::word_findings(&mut report.findings);
    if global.json {
        Global::print_json(&report)?;
    } else {
        for f in &report.findings {
            let line = f.lines.first().map(|l| format!(":{l}")).unwrap_or_default();
            let id = f.id.as_deref().map(|i| format!(" {}:", escaped(i))).unwrap_or_default();
            outln!("{}{line}: {} {}:{id} {}", escaped(&report.file), f.severity, f.kind, escaped(&f.message));
        }
        eprintln!("bd-sync: check {}: {}", escaped(&report.file), report.summary());
    }
    let failed = report.errors > 0 || (args.strict && report.warnings > 0);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
