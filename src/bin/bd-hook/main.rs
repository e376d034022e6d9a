//! `bd-hook`: tell a Gemba-style server which issues changed. Fail-open: without a URL it does
//! nothing, and delivery problems never fail the caller unless `--strict`.
//!
//! A subcommand picks the mode, each in its own file: the ids given, read or found in a diff
//! (`send`, `stdin`, `from-diff`: `ids.rs`), every id changed since the last run (`since-last`:
//! `since_last.rs`), watching a directory (`watch`: `watch.rs`), the post-commit hook's work
//! (`post-commit`: `post_commit.rs`), and installing that hook (`install-hook`: `git_hook.rs`).
//! The flags that picked a mode before (`--id`, `--stdin`, `--from-diff`, `--watch`, ...,
//! mirroring the Gemba companion hook) are hidden aliases for a release: a subcommand is folded
//! into the same fields they fill. This file holds the clap tree, the rules that refuse a flag
//! outside its mode, and the dispatch; `deliver.rs` prints or sends what a mode found.

#[path = "../common/mod.rs"]
#[macro_use]
mod common;

mod deliver;
mod git_hook;
mod ids;
mod post_commit;
mod since_last;
mod watch;

use common::error::{CommandError, CommandResult, Kind};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser};

use deliver::Outlet;

/// Post-write notifier for beads issues: POST {URL}/api/workitems/notify for each changed id.
///
/// Exit codes: 0 always (fail-open), unless --strict: 1 when an id could not be delivered by the
/// deadline, 2 for a usage error, a missing URL or an id-collection error.
#[derive(Parser, Debug)]
#[command(name = "bd-hook", version = beads_git::VERSION)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    // The flags that chose a mode before the subcommands: hidden aliases, kept for a release
    // (CHANGELOG.md). A subcommand fills them in too ([`Mode::fold_into`]), so the modes read
    // one set of fields.
    /// Old spelling of `send ID`.
    #[arg(long = "id", value_name = "ID", hide = true)]
    ids: Vec<String>,
    /// Old spelling of `stdin`.
    #[arg(long, hide = true)]
    stdin: bool,
    /// Old spelling of `from-diff REV`.
    #[arg(long, value_name = "REV[..REV]", hide = true)]
    from_diff: Option<String>,
    /// Old spelling of `since-last`.
    #[arg(long, hide = true, conflicts_with_all = ["ids", "stdin", "from_diff", "watch"])]
    since_last: bool,
    /// Old spelling of `since-last --state NAME`.
    #[arg(long, value_name = "NAME", value_parser = parse_state, hide = true, conflicts_with_all = ["ids", "stdin", "from_diff", "watch"])]
    state: Option<String>,
    /// Old spelling of `since-last --source-cmd CMD`.
    #[arg(long, value_name = "CMD", hide = true, conflicts_with_all = ["ids", "stdin", "from_diff", "watch"])]
    source_cmd: Option<String>,
    /// Old spelling of `since-last --source-cmd-timeout SECS`.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = common::args::positive_seconds, requires = "source_cmd",
        hide = true)]
    source_cmd_timeout: f64,
    /// Old spelling of `from-diff --path` and `since-last --path`.
    #[arg(long, value_name = "PATH", conflicts_with = "source_cmd", hide = true)]
    path: Option<String>,
    /// Old spelling of `watch DIR`.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["ids", "stdin", "from_diff"], hide = true)]
    watch: Option<PathBuf>,
    /// Old spelling of `watch --poll MS`.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=3_600_000), hide = true)]
    poll: Option<u64>,
    /// Old spelling of `watch --debounce MS`.
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=60_000), hide = true)]
    debounce: u64,
    /// Old spelling of `post-commit` (what hooks installed before the subcommands run).
    #[arg(long, hide = true, conflicts_with_all = ["ids", "stdin", "from_diff", "since_last", "state", "source_cmd", "watch", "dry_run"])]
    post_commit: bool,
    /// Old spelling of `-C REPO install-hook`.
    #[arg(long, value_name = "REPO", conflicts_with = "uninstall_git_hook", hide = true)]
    install_git_hook: Option<PathBuf>,
    /// Old spelling of `-C REPO uninstall-hook`.
    #[arg(long, value_name = "REPO", hide = true)]
    uninstall_git_hook: Option<PathBuf>,
    /// Old place of `stdin -z` and `--dry-run -z`.
    #[arg(short = 'z', long = "null", hide = true)]
    null: bool,
    /// Old place of the subcommands' --url.
    #[arg(long, value_name = "URL", hide = true)]
    url: Option<String>,
    /// Old place of the subcommands' --auth-file.
    #[arg(long, value_name = "FILE", hide = true)]
    auth_file: Option<PathBuf>,
    /// Old place of the subcommands' --source.
    #[arg(long, value_name = "NAME", hide = true)]
    source: Option<String>,
    /// Old place of the subcommands' --workspace.
    #[arg(long, value_name = "PREFIX", hide = true)]
    workspace: Option<String>,
    /// Old place of the subcommands' --timeout.
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = common::args::positive_seconds, hide = true)]
    timeout: f64,
    /// Old place of the subcommands' --concurrency.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64), hide = true)]
    concurrency: u16,
    /// Old place of the subcommands' --dry-run.
    #[arg(long, hide = true)]
    dry_run: bool,
    /// Fail (exit 1) when an id is not delivered, and exit 2 on usage or collection errors.
    #[arg(long, global = true)]
    strict: bool,
    #[command(flatten)]
    directory: common::args::Directory,
}

/// Where and how the notices go: the options of every subcommand that sends.
#[derive(clap::Args, Debug)]
struct Delivery {
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
    /// Total time allowed for delivery, in seconds, a fraction allowed, more than 0 and at most 86400 (per batch with `watch`).
    #[arg(long, value_name = "SECS", default_value_t = 2.0, value_parser = common::args::positive_seconds)]
    timeout: f64,
    /// Requests in flight at once (1 to 64).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
}

impl Delivery {
    fn fold_into(self, cli: &mut Cli) {
        (cli.url, cli.auth_file, cli.source, cli.workspace, cli.timeout, cli.concurrency) =
            (self.url, self.auth_file, self.source, self.workspace, self.timeout, self.concurrency);
    }
}

/// `--dry-run`, for the subcommands that send.
#[derive(clap::Args, Debug)]
struct DryRun {
    /// Print what would be sent and send nothing.
    #[arg(long)]
    dry_run: bool,
}

/// The options of a subcommand that sends ids it found: `-z` for what --dry-run prints, and how
/// the notices go.
#[derive(clap::Args, Debug)]
struct Sends {
    /// Ids are NUL-separated and taken byte for byte, so any id crosses a pipe intact: as `stdin -z` reads them, and as --dry-run prints
    /// them.
    #[arg(short = 'z', long = "null", requires = "dry_run")]
    null: bool,
    #[command(flatten)]
    dry: DryRun,
    #[command(flatten)]
    delivery: Delivery,
}

impl Sends {
    fn fold_into(self, cli: &mut Cli) {
        (cli.null, cli.dry_run) = (self.null, self.dry.dry_run);
        self.delivery.fold_into(cli);
    }
}

/// What bd-hook notifies, or sets up.
#[derive(clap::Subcommand, Debug)]
enum Mode {
    /// Notify these ids.
    Send {
        /// The ids (each once, in the order given).
        #[arg(value_name = "ID", required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        sends: Sends,
    },
    /// Notify the ids read from stdin, one per line (trimmed; `#` comments and blank lines skipped), or NUL-separated with -z.
    Stdin {
        /// Ids are NUL-separated and taken byte for byte, so any id crosses a pipe intact: as `stdin -z` reads them (`bd-sync import
        /// --print-changed -z` writes them so), and as --dry-run prints them.
        #[arg(short = 'z', long = "null")]
        null: bool,
        #[command(flatten)]
        dry: DryRun,
        #[command(flatten)]
        delivery: Delivery,
    },
    /// Notify the ids added, modified or deleted in the issues file between REV and HEAD, or A..B.
    FromDiff {
        /// REV (compared with HEAD) or A..B.
        #[arg(value_name = "REV[..REV]")]
        rev: String,
        /// The issues file's path inside the repository [default: .beads/issues.jsonl, else .beads/beads.jsonl].
        #[arg(long, value_name = "PATH")]
        path: Option<String>,
        #[command(flatten)]
        sends: Sends,
    },
    /// Notify every id changed since the last successful run in this clone, whatever happened in between (commits, rebases, resets, edits);
    /// the first run records a baseline and notifies nothing.
    ///
    /// The state lives in the git dir and advances only for delivered ids.
    SinceLast {
        /// The name of the state, so several consumers keep their own [default: default].
        #[arg(long, value_name = "NAME", value_parser = parse_state)]
        state: Option<String>,
        /// Take the issues from this shell command's stdout (JSONL) instead of the issues file, e.g. `bd export` for a tracker whose JSONL
        /// export is off (the last snapshot's hashes are kept in the git dir).
        #[arg(long, value_name = "CMD")]
        source_cmd: Option<String>,
        /// How long --source-cmd may run, in seconds, a fraction allowed, more than 0 and at most 86400: then the command and every process
        /// it started are stopped (on Windows the command alone), and nothing is notified.
        #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = common::args::positive_seconds, requires = "source_cmd")]
        source_cmd_timeout: f64,
        /// The issues file's path inside the repository [default: .beads/issues.jsonl, else .beads/beads.jsonl].
        #[arg(long, value_name = "PATH", conflicts_with = "source_cmd")]
        path: Option<String>,
        #[command(flatten)]
        sends: Sends,
    },
    /// Keep watching DIR (a .beads directory, or a repo root) and notify each change.
    Watch {
        /// The directory to watch.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Poll every MS milliseconds (10 to 3600000) instead of using file-system events.
        #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
        poll: Option<u64>,
        /// Quiet time in milliseconds (0 to 60000) before a change is read; a change is read at the latest 250 ms after that, however busy
        /// the directory.
        #[arg(long, value_name = "MS", default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=60_000))]
        debounce: u64,
        #[command(flatten)]
        sends: Sends,
    },
    /// What the post-commit hook runs, in one process: notify the ids HEAD changed (as `from-diff HEAD~1`) when a server is configured,
    /// then, when `git config beads.commitComments` is true, run `bd-sync link post-commit`.
    ///
    /// With neither, it reads git config once and exits.
    PostCommit {
        #[command(flatten)]
        delivery: Delivery,
    },
    /// Install the post-commit hook block into this repository (or -C REPO's), and exit.
    InstallHook,
    /// Remove any beads-git post-commit block from this repository (or -C REPO's), and exit.
    UninstallHook,
}

impl Mode {
    /// Fills in the fields the modes read, as the old flags would have.
    fn fold_into(self, cli: &mut Cli) {
        match self {
            Mode::Send { ids, sends } => {
                cli.ids = ids;
                sends.fold_into(cli);
            }
            Mode::Stdin { null, dry, delivery } => {
                (cli.stdin, cli.null, cli.dry_run) = (true, null, dry.dry_run);
                delivery.fold_into(cli);
            }
            Mode::FromDiff { rev, path, sends } => {
                (cli.from_diff, cli.path) = (Some(rev), path);
                sends.fold_into(cli);
            }
            Mode::SinceLast { state, source_cmd, source_cmd_timeout, path, sends } => {
                cli.since_last = true;
                (cli.state, cli.source_cmd, cli.source_cmd_timeout, cli.path) = (state, source_cmd, source_cmd_timeout, path);
                sends.fold_into(cli);
            }
            Mode::Watch { dir, poll, debounce, sends } => {
                (cli.watch, cli.poll, cli.debounce) = (Some(dir), poll, debounce);
                sends.fold_into(cli);
            }
            Mode::PostCommit { delivery } => {
                cli.post_commit = true;
                delivery.fold_into(cli);
            }
            Mode::InstallHook => cli.install_git_hook = Some(PathBuf::from(".")),
            Mode::UninstallHook => cli.uninstall_git_hook = Some(PathBuf::from(".")),
        }
    }
}

/// The hidden flags that chose a mode before the subcommands, and the options given before one;
/// refused beside a subcommand. Beside `--install-git-hook` / `--uninstall-git-hook` (which install
/// or remove a hook and exit: nothing would be notified, printed or waited for), every other one
/// is refused.
const OLD_MODE_FLAGS: [&str; 22] = [
    "null",
    "url",
    "auth_file",
    "source",
    "workspace",
    "timeout",
    "concurrency",
    "dry_run",
    "ids",
    "stdin",
    "from_diff",
    "since_last",
    "state",
    "source_cmd",
    "source_cmd_timeout",
    "path",
    "watch",
    "poll",
    "debounce",
    "post_commit",
    "install_git_hook",
    "uninstall_git_hook",
];

/// Flags that only mean something beside another: each, the words that name it, and the flags
/// one of which it needs. Outside their mode they are refused, never silently ignored.
const NEEDS: [(&str, &str, &[&str], &str); 4] = [
    ("poll", "--poll", &["watch"], "`watch DIR`"),
    ("debounce", "--debounce", &["watch"], "`watch DIR`"),
    ("path", "--path", &["from_diff", "since_last", "state"], "`from-diff` or `since-last`"),
    ("null", "-z/--null", &["stdin", "dry_run"], "`stdin` or --dry-run"),
];

fn main() -> ExitCode {
    beads_git::reset_sigpipe();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = common::generate::from_args(&args, Cli::command) {
        return code;
    }
    let cli = match parse(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // Help and version are not errors; a usage error fails only under --strict.
            let strict = args.iter().any(|a| a == "--strict");
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => ExitCode::SUCCESS,
                _ if strict => ExitCode::from(2),
                _ => ExitCode::SUCCESS,
            };
        }
    };
    match cli.directory.enter().map_err(|e| CommandError::new(Kind::Error, e)).and_then(|()| run(&cli)) {
        Ok(code) => code,
        // Fail-open: exit 0, or 2 under --strict.
        Err(e) => {
            let _ = e.report("bd-hook", false);
            ExitCode::from(if cli.strict { 2 } else { 0 })
        }
    }
}

/// Parses the flags, refusing one given outside its mode ([`NEEDS`], [`OLD_MODE_FLAGS`]).
fn parse(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    let sub = matches.subcommand();
    let given_here = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    // A global flag given after the subcommand is recorded in the subcommand's matches.
    let given_global = |id: &str| {
        given_here(id)
            || sub.is_some_and(|(_, m)| m.ids().any(|i| i == id) && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
    };
    if let Some((name, _)) = sub {
        if let Some(old) = OLD_MODE_FLAGS.iter().find(|id| given_here(id)) {
            let old = if *old == "null" { "-z/--null".to_owned() } else { format!("--{}", old.replace('_', "-")) };
            let message = format!(
                "{old} is the old spelling, before the subcommands: with `{name}`, give its own options after it (`bd-hook {name} --help`)"
            );
            return Err(command.error(clap::error::ErrorKind::ArgumentConflict, message));
        }
    }
    // What the subcommand stands for, in the old flags' ids.
    let mode = sub.map(|(name, _)| match name {
        "send" => "ids",
        "install-hook" => "install_git_hook",
        "uninstall-hook" => "uninstall_git_hook",
        other => other,
    });
    let given = |id: &str| given_global(id) || mode.is_some_and(|m| m.replace('-', "_") == id);
    for (id, flag, needs, needs_words) in NEEDS {
        if given(id) && !needs.iter().any(|n| given(n)) {
            let message = format!("{flag} only applies with {needs_words}");
            return Err(command.error(clap::error::ErrorKind::MissingRequiredArgument, message));
        }
    }
    let git_hook = ["install_git_hook", "uninstall_git_hook"].into_iter().find(|id| given(id));
    if let (Some(hook), Some(other)) = (git_hook, OLD_MODE_FLAGS.iter().find(|id| !id.ends_with("git_hook") && given(id))) {
        command.build();
        let name = |id: &str| command.get_arguments().find(|a| a.get_id() == id).and_then(|a| a.get_long()).unwrap_or(id).to_owned();
        let hook = if mode.is_some() { hook.replace("_git_", "-") } else { format!("--{}", name(hook)) };
        let message = format!("{hook} installs or removes the hook and exits: --{} has nothing to do there", name(other));
        return Err(command.error(clap::error::ErrorKind::ArgumentConflict, message));
    }
    let mut cli = Cli::from_arg_matches(&matches)?;
    if let Some(mode) = cli.mode.take() {
        mode.fold_into(&mut cli);
    }
    Ok(cli)
}

/// Without a server: a silent no-op, or exit 2 under `--strict`.
fn no_server(cli: &Cli) -> ExitCode {
    if cli.strict {
        eprintln!("bd-hook: no URL (set GEMBA_NOTIFY_URL, `git config beads.notifyUrl URL`, or --url)");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// `--state`: a plain file name.
fn parse_state(text: &str) -> std::result::Result<String, String> {
    beads_git::notify::since_last::valid_state_name(text).map(|()| text.to_owned())
}

/// Runs the mode the flags chose.
fn run(cli: &Cli) -> CommandResult {
    if cli.install_git_hook.is_some() || cli.uninstall_git_hook.is_some() {
        return git_hook::run(cli);
    }
    if cli.post_commit {
        return post_commit::run(cli);
    }
    let other_mode = cli.since_last || cli.state.is_some() || cli.source_cmd.is_some() || cli.watch.is_some();
    if cli.stdin && cli.from_diff.is_none() && !other_mode {
        // The ids first: the hooks pipe the import's changes here after every pull and checkout,
        // and an empty pipe (no issue changed) then costs no git config read.
        return ids::run_stdin_first(cli);
    }
    let Some(outlet) = Outlet::new(cli)? else { return Ok(no_server(cli)) };
    if cli.since_last || cli.state.is_some() || cli.source_cmd.is_some() {
        since_last::run(cli, &outlet)
    } else if let Some(dir) = &cli.watch {
        watch::run(cli, dir, &outlet)
    } else {
        ids::run(cli, &outlet)
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_the_mode_rules_name_exists() {
        let command = super::Cli::command();
        let ids: Vec<&str> = command.get_arguments().map(|a| a.get_id().as_str()).collect();
        let named = super::NEEDS.iter().flat_map(|(id, _, needs, _)| std::iter::once(*id).chain(needs.iter().copied()));
        for id in named.chain(super::OLD_MODE_FLAGS) {
            assert!(ids.contains(&id), "{id}");
        }
    }
}
