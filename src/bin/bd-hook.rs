//! `bd-hook`: tell a Gemba-style server which issues changed. Fail-open: without a URL it does
//! nothing, and delivery problems never fail the caller unless `--strict`.

#[path = "common/mod.rs"]
mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use beads_git::install::{self, Hook};
use beads_git::notify::ids::{collect_ids, IdSources};
use beads_git::notify::since_last;
use beads_git::notify::watch::{self, WatchOptions};
use beads_git::notify::{Delivery, Notifier, Report, Target};
use clap::Parser;

/// Post-write notifier for beads issues: POST {URL}/api/workitems/notify for each changed id.
///
/// Exit codes: 0 always (fail-open), unless --strict: 1 when an id could not be delivered by the
/// deadline, 2 for a usage error, a missing URL or an id-collection error.
#[derive(Parser, Debug)]
#[command(name = "bd-hook", version = beads_git::VERSION)]
struct Cli {
    /// An id to notify (repeatable).
    #[arg(long = "id", value_name = "ID")]
    ids: Vec<String>,
    /// Read ids from stdin, one per line (trimmed; `#` comments and blank lines skipped).
    #[arg(long)]
    stdin: bool,
    /// Ids on stdin are NUL-separated and taken byte for byte (any id crosses a pipe intact;
    /// `bd-sync import --print-changed -z` writes them); --dry-run prints NUL-separated too.
    #[arg(short = 'z', long = "null")]
    null: bool,
    /// Notify ids added, modified or deleted in the issues file between REV and HEAD, or A..B.
    #[arg(long, value_name = "REV[..REV]")]
    from_diff: Option<String>,
    /// Notify every id changed since the last successful --since-last run in this clone, whatever
    /// happened in between (commits, rebases, resets, edits). The state lives in the git dir and
    /// advances only for delivered ids; the first run records a baseline and notifies nothing.
    #[arg(long, conflicts_with_all = ["ids", "stdin", "from_diff", "watch"])]
    since_last: bool,
    /// The name of the --since-last state, so several consumers keep their own (implies --since-last) [default: default].
    #[arg(long, value_name = "NAME", value_parser = parse_state, conflicts_with_all = ["ids", "stdin", "from_diff", "watch"])]
    state: Option<String>,
    /// Take the issues from this shell command's stdout (JSONL) instead of the issues file, e.g.
    /// `bd export` for a tracker whose JSONL export is off; implies --since-last (the last
    /// snapshot's hashes are kept in the git dir).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["ids", "stdin", "from_diff", "watch"])]
    source_cmd: Option<String>,
    /// How long --source-cmd may run, in seconds (more than 0, at most 86400): then the command
    /// and every process it started are stopped, and nothing is notified.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_timeout, requires = "source_cmd")]
    source_cmd_timeout: f64,
    /// The issues file's path inside the repository, for --from-diff and --since-last [default: .beads/issues.jsonl, else .beads/beads.jsonl].
    #[arg(long, value_name = "PATH")]
    path: Option<String>,
    /// Keep watching DIR (a .beads directory, or a repo root) and notify each change.
    #[arg(long, value_name = "DIR")]
    watch: Option<PathBuf>,
    /// With --watch: poll every MS milliseconds (10 to 3600000) instead of using file-system events.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    poll: Option<u64>,
    /// With --watch: quiet time in milliseconds (0 to 60000) before a change is read; a change is
    /// read at the latest 250 ms after that, however busy the directory.
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    debounce: u64,
    /// Server base URL [env: GEMBA_NOTIFY_URL; else git config beads.notifyUrl].
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Read the bearer token from this file [default: env GEMBA_NOTIFY_AUTH]. Never pass it in argv.
    #[arg(long, value_name = "FILE")]
    auth_file: Option<PathBuf>,
    /// The `source` of each notice [env: GEMBA_NOTIFY_SOURCE; else git config beads.notifySource; default: bd-hook].
    #[arg(long, value_name = "NAME")]
    source: Option<String>,
    /// Prefix ids as PREFIX/<id> [env: GEMBA_NOTIFY_WORKSPACE; else git config beads.notifyWorkspace].
    #[arg(long, value_name = "PREFIX")]
    workspace: Option<String>,
    /// Total time allowed for delivery, in seconds, more than 0 and at most 86400 (per batch with --watch).
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = parse_timeout)]
    timeout: f64,
    /// Requests in flight at once (1 to 64).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
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
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = common::generate::from_args(&args, <Cli as clap::CommandFactory>::command) {
        return code;
    }
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

/// `--state`: a plain file name.
fn parse_state(text: &str) -> std::result::Result<String, String> {
    beads_git::notify::since_last::valid_state_name(text).map(|()| text.to_owned())
}

/// `--timeout`: a finite number of seconds in (0, 86400], so no deadline can overflow the clock.
fn parse_timeout(text: &str) -> std::result::Result<f64, String> {
    let secs: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
        Ok(secs)
    } else {
        Err(format!("{text} is out of range: give more than 0 and at most 86400 seconds"))
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn target(cli: &Cli) -> Result<Option<Target>> {
    // The environment, else git config (`beads.notifyUrl`, ...), so a hook run from any shell or
    // cron job of this clone finds the same server.
    let settings = beads_git::notify::settings(std::path::Path::new("."));
    let setting = |name: &str| settings.iter().find(|s| s.name == name).map(|s| s.value.clone());
    let Some(url) = cli.url.clone().or_else(|| setting("url")) else {
        return Ok(None);
    };
    let token = match &cli.auth_file {
        Some(f) => {
            let bytes = beads_git::safe_fs::bounded::read_regular(f, 64 << 10)
                .with_context(|| format!("reading the token file {}", f.display()))?;
            Some(String::from_utf8(bytes).with_context(|| format!("the token file {} is not UTF-8", f.display()))?.trim().to_owned())
        }
        None => env("GEMBA_NOTIFY_AUTH"),
    };
    Ok(Some(Target {
        url,
        token: token.filter(|t| !t.is_empty()),
        source: cli.source.clone().or_else(|| setting("source")).unwrap_or_else(|| "bd-hook".into()),
        workspace: cli.workspace.clone().or_else(|| setting("workspace")),
    }))
}

fn run(cli: &Cli) -> Result<ExitCode> {
    if let Some(repo) = &cli.install_git_hook {
        let (path, change) = install::install_one(repo, Hook::PostCommit, &install::own_bin_dir()?)?;
        eprintln!("bd-hook: {}: {change}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(repo) = &cli.uninstall_git_hook {
        let (path, change) = install::uninstall_one(repo, Hook::PostCommit)?;
        eprintln!("bd-hook: {}: {change}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let total = Duration::try_from_secs_f64(cli.timeout).unwrap_or(Duration::from_secs(2));
    let concurrency = usize::from(cli.concurrency);
    let target = target(cli)?;
    if target.is_none() && !cli.dry_run {
        if cli.strict {
            eprintln!("bd-hook: no URL (set GEMBA_NOTIFY_URL, `git config beads.notifyUrl URL`, or --url)");
            return Ok(ExitCode::from(2));
        }
        return Ok(ExitCode::SUCCESS); // silent no-op
    }
    let notifier = target.clone().map(|t| Notifier::new(t, concurrency));
    let print = |ids: &[String]| {
        let mut out = std::io::stdout().lock();
        let end: &[u8] = if cli.null { b"\0" } else { b"\n" };
        for id in ids {
            // NUL-separated ids go to a program as they are; one per line, they are escaped
            // (a newline in an id would otherwise forge a second one).
            let body = target.as_ref().map(|t| t.body(id)).unwrap_or_else(|| {
                if cli.null {
                    id.clone()
                } else {
                    beads_git::record::escaped(id).into_owned()
                }
            });
            let _ = out.write_all(body.as_bytes()).and_then(|()| out.write_all(end));
        }
        let _ = out.flush();
    };
    // Sends, says in one line what did not get through, and returns the report.
    let send = |ids: &[String]| -> Option<Report> {
        let report = notifier.as_ref()?.send(ids, Delivery { concurrency, ..Delivery::within(total) });
        if let Some(line) = report.failure_summary() {
            eprintln!("bd-hook: {}", beads_git::record::escaped(&line));
        }
        Some(report)
    };
    let deliver = |ids: &[String]| -> bool {
        if cli.dry_run || notifier.is_none() {
            print(ids);
            return true;
        }
        send(ids).is_none_or(|r| r.all_delivered())
    };

    if cli.since_last || cli.state.is_some() || cli.source_cmd.is_some() {
        let name = cli.state.clone().unwrap_or_else(|| "default".into());
        let source = match &cli.source_cmd {
            Some(cmd) => since_last::Source::Command(cmd.clone()),
            None => since_last::Source::File(cli.path.clone()),
        };
        let dir = std::env::current_dir().context("finding the current directory")?;
        let dry = cli.dry_run || notifier.is_none();
        let command_timeout = Duration::try_from_secs_f64(cli.source_cmd_timeout).unwrap_or(since_last::SOURCE_CMD_TIMEOUT);
        let options = since_last::Options { dir, state: name.clone(), source, command_timeout };
        // A dry run prints and sends nothing, so the state stays where it is.
        let outcome = since_last::notify(&options, dry, |ids| {
            if dry {
                print(ids);
                None
            } else {
                send(ids)
            }
        })?;
        return Ok(match outcome {
            since_last::RunOutcome::Busy => {
                eprintln!("bd-hook: another --since-last run of state {name:?} is under way; nothing done");
                ExitCode::SUCCESS
            }
            since_last::RunOutcome::Baseline { records, source, state: Some(path) } => {
                eprintln!(
                    "bd-hook: --since-last: first run of state {name:?} for {source}: recorded a baseline of {records} issue(s) in {}; \
                     nothing notified (later runs notify what changes from here)",
                    path.display()
                );
                ExitCode::SUCCESS
            }
            since_last::RunOutcome::Baseline { records, source, state: None } => {
                eprintln!(
                    "bd-hook: --since-last: no earlier run of state {name:?} for {source}: a real run records a baseline of {records} issue(s) and notifies nothing"
                );
                ExitCode::SUCCESS
            }
            since_last::RunOutcome::Changed { report: Some(report), .. } if !report.all_delivered() && cli.strict => ExitCode::from(1),
            since_last::RunOutcome::Changed { .. } => ExitCode::SUCCESS,
        });
    }

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

    let sources =
        IdSources { ids: cli.ids.clone(), stdin: cli.stdin, nul: cli.null, from_diff: cli.from_diff.clone(), path: cli.path.clone() };
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
