//! `bd-hook watch DIR`: keep watching a `.beads` directory and notify each change, until a
//! signal stops it (or, under `--strict`, a batch is not delivered).

use crate::common::error::CommandResult;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use beads_git::notify::watch::{self, WatchOptions};

use crate::deliver::Outlet;
use crate::Cli;

/// Watches `dir` with `--poll` and `--debounce`, delivering each batch of changed ids.
pub(crate) fn run(cli: &Cli, dir: &Path, outlet: &Outlet) -> CommandResult {
    let stop = watch::stop_on_signals()?;
    let mut options = WatchOptions::new(watch::beads_dir(dir));
    options.notice = |text| eprintln!("bd-hook: {}", beads_git::record::printable_lines(text));
    options.stale = |stale| eprintln!("bd-hook: {}", beads_git::record::printable_lines(&stale_warning(stale)));
    options.poll = cli.poll.map(Duration::from_millis);
    options.debounce = Duration::from_millis(cli.debounce);
    let mut failed = false;
    watch::watch(&options, &stop, |ids| {
        let ok = outlet.deliver(&ids);
        if !ok && cli.strict {
            failed = true;
            return false;
        }
        true
    })?;
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The warning about an issues file its tracker may no longer write, and what to run instead.
fn stale_warning(stale: &watch::StaleFile) -> String {
    let advice = "bd 1.0.4+ keeps issues in its database and no longer exports JSONL by default; \
                  notify from the tracker instead: bd-hook since-last --source-cmd 'bd export' (see the README)";
    match stale.behind {
        Some(behind) => format!(
            "warning: {} is {} s older than {}: the tracker may not be writing it; {advice}",
            stale.file.display(),
            behind.as_secs(),
            stale.db.display()
        ),
        None => format!("warning: {} does not exist but {} does: {advice}", stale.file.display(), stale.db.display()),
    }
}
