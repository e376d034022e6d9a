//! `bd-hook --watch DIR`: keep watching a `.beads` directory and notify each change, until a
//! signal stops it (or, under `--strict`, a batch is not delivered).

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use beads_git::notify::watch::{self, WatchOptions};

use crate::deliver::Outlet;
use crate::Cli;

/// Watches `dir` with `--poll` and `--debounce`, delivering each batch of changed ids.
pub(crate) fn run(cli: &Cli, dir: &Path, outlet: &Outlet) -> Result<ExitCode> {
    let stop = watch::stop_on_signals()?;
    let mut options = WatchOptions::new(watch::beads_dir(dir));
    options.notice = |text| eprintln!("bd-hook: {}", beads_git::record::printable_lines(text));
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
