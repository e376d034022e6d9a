//! `bd-hook`: tell a Gemba-style server which issues changed. Fail-open: without a URL it does
//! nothing, and delivery problems never fail the caller unless `--strict`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use beads_git::hook::{collect_ids, IdSources};
use beads_git::install::{self, Hook};
use beads_git::notify::{Delivery, Notifier, Target};
use beads_git::watch::{self, WatchOptions};
use clap::Parser;

/// Post-write notifier for beads issues: POST {URL}/api/workitems/notify for each changed id.
///
/// Exit codes: 0 always (fail-open), unless --strict: 1 when an id could not be delivered by the
/// deadline, 2 for a usage error, a missing URL or an id-collection error.
#[derive(Parser, Debug)]
#[command(version, about, long_about)]
struct Cli {
    /// An id to notify (repeatable).
    #[arg(long = "id", value_name = "ID")]
    ids: Vec<String>,
    /// Read ids from stdin, one per line (`#` comments and blank lines skipped).
    #[arg(long)]
    stdin: bool,
    /// Notify ids added, modified or deleted in the issues file between REV and HEAD, or A..B.
    #[arg(long, value_name = "REV[..REV]")]
    from_diff: Option<String>,
    /// The issues file's path inside the repository, for --from-diff [default: .beads/issues.jsonl, else .beads/beads.jsonl].
    #[arg(long, value_name = "PATH")]
    path: Option<String>,
    /// Keep watching DIR (a .beads directory, or a repo root) and notify each change.
    #[arg(long, value_name = "DIR")]
    watch: Option<PathBuf>,
    /// With --watch: poll every MS milliseconds instead of using file-system events.
    #[arg(long, value_name = "MS")]
    poll: Option<u64>,
    /// With --watch: quiet time in milliseconds before a change is read.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    debounce: u64,
    /// Server base URL [env: GEMBA_NOTIFY_URL].
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Read the bearer token from this file [default: env GEMBA_NOTIFY_AUTH]. Never pass it in argv.
    #[arg(long, value_name = "FILE")]
    auth_file: Option<PathBuf>,
    /// The `source` of each notice [env: GEMBA_NOTIFY_SOURCE; default: bd-hook].
    #[arg(long, value_name = "NAME")]
    source: Option<String>,
    /// Prefix ids as PREFIX/<id> [env: GEMBA_NOTIFY_WORKSPACE].
    #[arg(long, value_name = "PREFIX")]
    workspace: Option<String>,
    /// Total time allowed for delivery, in seconds (per batch with --watch).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    timeout: f64,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: usize,
    /// Fail (exit 1) when an id is not delivered, and exit 2 on usage or collection errors.
    #[arg(long)]
    strict: bool,
    /// Print what would be sent and send nothing.
    #[arg(long)]
    dry_run: bool,
    /// Install the post-commit hook block into the repository at REPO, and exit.
    #[arg(long, value_name = "REPO", conflicts_with = "uninstall_git_hook")]
    install_git_hook: Option<PathBuf>,
    /// Remove any beads-git post-commit block from the repository at REPO, and exit.
    #[arg(long, value_name = "REPO")]
    uninstall_git_hook: Option<PathBuf>,
}

fn main() -> ExitCode {
    beads_git::reset_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Help and version are not errors; a usage error fails only under --strict.
            let strict = std::env::args().any(|a| a == "--strict");
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ if strict => ExitCode::from(2),
                _ => ExitCode::SUCCESS,
            };
        }
    };
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bd-hook: {}", beads_git::record::printable_lines(&format!("{e:#}")));
            ExitCode::from(if cli.strict { 2 } else { 0 })
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn target(cli: &Cli) -> Result<Option<Target>> {
    let Some(url) = cli.url.clone().or_else(|| env("GEMBA_NOTIFY_URL")) else {
        return Ok(None);
    };
    let token = match &cli.auth_file {
        Some(f) => Some(std::fs::read_to_string(f).with_context(|| format!("reading the token file {}", f.display()))?.trim().to_owned()),
        None => env("GEMBA_NOTIFY_AUTH"),
    };
    Ok(Some(Target {
        url,
        token: token.filter(|t| !t.is_empty()),
        source: cli.source.clone().or_else(|| env("GEMBA_NOTIFY_SOURCE")).unwrap_or_else(|| "bd-hook".into()),
        workspace: cli.workspace.clone().or_else(|| env("GEMBA_NOTIFY_WORKSPACE")),
    }))
}

fn run(cli: &Cli) -> Result<ExitCode> {
    if let Some(repo) = &cli.install_git_hook {
        let (path, change) = install::install_one(repo, Hook::PostCommit, &install::own_bin_dir()?)?;
        eprintln!("bd-hook: {}: {change:?}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(repo) = &cli.uninstall_git_hook {
        let (path, change) = install::uninstall_one(repo, Hook::PostCommit)?;
        eprintln!("bd-hook: {}: {change:?}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let total = Duration::from_secs_f64(cli.timeout.max(0.0));
    let target = target(cli)?;
    if target.is_none() && !cli.dry_run {
        if cli.strict {
            eprintln!("bd-hook: no URL (set GEMBA_NOTIFY_URL or --url)");
            return Ok(ExitCode::from(2));
        }
        return Ok(ExitCode::SUCCESS); // silent no-op
    }
    let notifier = target.clone().map(|t| Notifier::new(t, cli.concurrency));
    let deliver = |ids: &[String]| -> bool {
        if cli.dry_run || notifier.is_none() {
            let mut out = std::io::stdout().lock();
            for id in ids {
                let body = target.as_ref().map(|t| t.body(id)).unwrap_or_else(|| beads_git::record::escaped(id).into_owned());
                let _ = writeln!(out, "{body}");
            }
            return true;
        }
        let report =
            notifier.as_ref().expect("checked above").send(ids, Delivery { concurrency: cli.concurrency, ..Delivery::within(total) });
        for (id, reason) in report.failed() {
            eprintln!("bd-hook: {}: not delivered: {}", beads_git::record::escaped(id), beads_git::record::escaped(reason));
        }
        report.all_delivered()
    };

    if let Some(dir) = &cli.watch {
        let stop = watch::stop_on_signals()?;
        let mut options = WatchOptions::new(watch::beads_dir(dir));
        options.notice = |text| eprintln!("bd-hook: {}", beads_git::record::printable_lines(text));
        options.poll = cli.poll.map(Duration::from_millis);
        options.debounce = Duration::from_millis(cli.debounce);
        let mut failed = false;
        watch::watch(&options, &stop, |ids| {
            let ok = deliver(&ids);
            if !ok && cli.strict {
                failed = true;
                return false;
            }
            true
        })?;
        return Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }

    let sources = IdSources { ids: cli.ids.clone(), stdin: cli.stdin, from_diff: cli.from_diff.clone(), path: cli.path.clone() };
    let dir = std::env::current_dir().context("finding the current directory")?;
    let ids = collect_ids(&sources, &dir, std::io::stdin().lock())?;
    if ids.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if deliver(&ids) || !cli.strict { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
