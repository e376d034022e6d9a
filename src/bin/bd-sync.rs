//! `bd-sync`: the SQLite cache of a beads issues file (import, export, status, check, ready,
//! blocked). See the README for the schema and exit codes.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use beads_git::cache::{export, import, query, Cache, OpenOptions, Paths};
use beads_git::color::ColorChoice;
use beads_git::record::{escaped, escaped_path, printable_lines};
use beads_git::{check, install};
use clap::{Parser, Subcommand};

/// Keep a SQLite cache of `.beads/issues.jsonl` exactly in step with the file.
#[derive(Parser, Debug)]
#[command(name = "bd-sync", version = beads_git::VERSION, propagate_version = true)]
struct Cli {
    /// The cache database [default: $(git rev-parse --git-dir)/beads/cache.db, outside a repo .beads/cache.db].
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Run as if started in this directory.
    #[arg(short = 'C', long = "repo", global = true, value_name = "DIR")]
    directory: Option<PathBuf>,
    /// Machine-readable output on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Colour the output: auto (a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto, hide_possible_values = true)]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bring the cache up to date with the issues file (one transaction; a no-op when unchanged).
    Import {
        /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl].
        file: Option<PathBuf>,
        /// Print the ids added, changed or removed, one per line (for `bd-hook --stdin`).
        #[arg(long)]
        print_changed: bool,
        /// With --print-changed: end each id with NUL instead of a newline, so every id crosses a
        /// pipe intact (for `bd-hook --stdin -z`).
        #[arg(short = 'z', requires = "print_changed")]
        z: bool,
        /// Import the valid lines and list the invalid ones instead of aborting.
        #[arg(long)]
        skip_invalid: bool,
        /// Policy for issues edited both in the cache and in the file.
        #[arg(long = "conflict", value_enum, default_value_t = import::SyncPolicy::Newest)]
        conflict: import::SyncPolicy,
        /// Re-read every line even if the file looks unchanged.
        #[arg(long)]
        force: bool,
        /// Give up when another process keeps the cache locked this many seconds, 0 to 86400 (nothing is written then).
        #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=MAX_TIMEOUT))]
        timeout: u64,
        /// Make FILE the cache's issues file (import refuses another file than the one it syncs with).
        #[arg(long)]
        rebind: bool,
    },
    /// Write the cache's edits back to the issues file (atomically; untouched records byte for byte).
    Export {
        /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl]; another path gets a snapshot of the cache.
        file: Option<PathBuf>,
        /// Policy when the file changed too and must be merged first.
        #[arg(long = "conflict", value_enum, default_value_t = import::SyncPolicy::Newest)]
        conflict: import::SyncPolicy,
        /// Give up when another process keeps the cache locked this many seconds, 0 to 86400 (nothing is written then).
        #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=MAX_TIMEOUT))]
        timeout: u64,
        /// If the export changed the file, `git add` it (the pre-commit hook uses this).
        #[arg(long)]
        stage: bool,
    },
    /// Set up the merge driver, the attribute lines and the git hooks in a repository.
    Install {
        /// The repository [default: the current directory].
        repo: Option<PathBuf>,
        /// Put the attribute lines in .git/info/attributes (this clone only) instead of .gitattributes.
        #[arg(long)]
        local: bool,
        /// Show what would change and change nothing.
        #[arg(long)]
        dry_run: bool,
        /// With lefthook: add our jobs to the team's lefthook.yml (committed) instead of lefthook-local.yml.
        #[arg(long)]
        team: bool,
        /// Write into a hooks directory outside the repository (a global core.hooksPath shared by every repository).
        #[arg(long)]
        shared_hooks_dir: bool,
    },
    /// Run our hook block for HOOK (what husky, lefthook and pre-commit call); always exits 0.
    Hook {
        /// pre-commit, post-commit, post-merge, post-rewrite or post-checkout.
        hook: String,
        /// The arguments git passed to the hook.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Remove exactly what install added, and put back what it replaced.
    Uninstall {
        /// The repository [default: the current directory].
        repo: Option<PathBuf>,
        /// Show what would change and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Show paths, counts and whether the cache is in step with the file.
    Status,
    /// Look for problems in the issues file and the installation (exit 1 on errors; warnings only with --strict).
    #[command(alias = "doctor")]
    Check {
        /// The issues file [default: .beads/issues.jsonl, or .beads/beads.jsonl].
        file: Option<PathBuf>,
        /// Exit 1 on warnings too (dangling dependencies, duplicate ids, unknown statuses, ...).
        #[arg(long)]
        strict: bool,
    },
    /// Open issues with no open blocker, by priority, then age (imports the file first if it changed).
    Ready {
        #[command(flatten)]
        filter: ListArgs,
    },
    /// Issues held up by an open blocker, directly or through a parent (imports the file first if it changed).
    Blocked {
        #[command(flatten)]
        filter: ListArgs,
    },
    /// Issues in full: their fields, what blocks them, what they block (imports the file first if it changed).
    Show {
        /// Issue ids; a unique prefix or suffix of an id is enough (an ambiguous one lists the candidates).
        #[arg(required = true, value_name = "ID", add = clap_complete::ArgValueCompleter::new(beads_git::generate::issue_ids))]
        ids: Vec<String>,
    },
    /// What changed in issues, field by field: HEAD against the working file, REV against it, or A..B.
    Diff {
        /// `REV` (against the working file) or `A..B` [default: HEAD against the working file].
        revs: Option<String>,
        /// Exit 1 when an issue differs, 0 when none does (as `git diff --exit-code`).
        #[arg(long)]
        exit_code: bool,
    },
    /// JSON Schemas of the `--json` outputs: one command's, or all of them keyed by command.
    Schema {
        /// ready, blocked, show, status, check, import, export, install, uninstall, diff or log [default: all].
        command: Option<String>,
    },
    /// The commits that changed one issue, newest first, each with its field-level change.
    Log {
        /// The issue id; a unique prefix or suffix of an id in the issues file is enough.
        #[arg(add = clap_complete::ArgValueCompleter::new(beads_git::generate::issue_ids))]
        id: String,
        /// Which commits to look at: revisions as `git log` takes them (`main..topic`, `HEAD~5..`), or `-N` for the last N [default: HEAD's history]; never a git option.
        #[arg(allow_hyphen_values = true)]
        range: Option<String>,
    },
}

/// The longest `--timeout`: a day (longer waits overflow SQLite's busy timeout, in milliseconds).
const MAX_TIMEOUT: u64 = 86_400;

/// Filters of `ready` and `blocked`.
#[derive(clap::Args, Debug)]
struct ListArgs {
    /// At most this many issues (the first in order), 0 to 2^63-1.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=i64::MAX as u64))]
    limit: Option<usize>,
    /// Only issues assigned to this person.
    #[arg(long, value_name = "WHO")]
    assignee: Option<String>,
    /// Only issues carrying this label.
    #[arg(long)]
    label: Option<String>,
    /// Only issues of this type (also shows the orchestrator types `ready` leaves out by default).
    #[arg(long = "type", value_name = "TYPE")]
    issue_type: Option<String>,
    /// Only issues of this priority (`1` or `P1`).
    #[arg(long, value_name = "P", value_parser = parse_priority)]
    priority: Option<i64>,
    /// Also list what `ready` leaves out by default, as bd does: merge-request, gate, molecule, message, agent, role, rig, convoy and slot types, and pinned, ephemeral or deferred issues.
    #[arg(long)]
    all_types: bool,
}

impl ListArgs {
    fn options(&self) -> query::ListOptions {
        query::ListOptions {
            limit: self.limit,
            assignee: self.assignee.clone(),
            label: self.label.clone(),
            issue_type: self.issue_type.clone(),
            priority: self.priority,
            all_types: self.all_types,
        }
    }
}

fn parse_priority(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['P', 'p']).unwrap_or(text);
    digits.parse().map_err(|_| format!("{text:?} is not a priority (a number such as 1, or P1)"))
}

fn main() -> ExitCode {
    beads_git::reset_sigpipe();
    clap_complete::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command).var("BD_SYNC_COMPLETE").complete();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = beads_git::generate::from_args(&args, <Cli as clap::CommandFactory>::command) {
        return code;
    }
    let cli = Cli::parse();
    beads_git::color::set(cli.color);
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            if let Some(invalid) = e.downcast_ref::<import::InvalidFile>() {
                // Only `import` has --skip-invalid; every other command names only what it can run.
                let skip_invalid = matches!(cli.command, Command::Import { .. });
                eprintln!("bd-sync: {}\n{}", printable_lines(&invalid.to_string()), invalid.advice(skip_invalid));
            } else if beads_git::cache::is_busy(&e) {
                // Every write happens inside the one transaction that could not start.
                eprintln!(
                    "bd-sync: the cache database stayed locked by another SQLite writer (an open transaction, in sqlite3 say) \
                     for longer than --timeout; nothing was written ({})",
                    printable_lines(&format!("{e:#}"))
                );
            } else {
                eprintln!("bd-sync: {}", printable_lines(&format!("{e:#}")));
            }
            ExitCode::from(2)
        }
    }
}

fn paths(cli: &Cli, file: Option<&PathBuf>) -> Result<Paths> {
    let start = repo_dir(cli, None)?;
    let file = file.map(|f| if f.is_absolute() || cli.directory.is_none() { f.clone() } else { start.join(f) });
    Paths::discover(&start, file.as_deref(), cli.db.as_deref())
}

/// Opens the cache for writing, bound to the issues file it was last synced with (or the
/// repository's, for a new cache). Returns the cache and the explicit `FILE` argument when that
/// names another file.
fn open_bound(cli: &Cli, file: Option<&PathBuf>, timeout: u64) -> Result<(Cache, Option<PathBuf>)> {
    let paths = paths(cli, file)?;
    let mut cache = Cache::open(&paths, OpenOptions::write(Duration::from_secs(timeout)).with_notice(notice))?;
    let Some(explicit) = file.map(|_| paths.file.clone()) else {
        // No FILE: the file the cache is bound to (after `--rebind`, not the one found from
        // here), as the queries do; never a silent re-binding to another file.
        cache.follow_binding()?;
        if !same_file(&cache.paths.file, &paths.file) {
            notice(&format!(
                "the cache is bound to {} (by --rebind), not {}; using the bound file",
                cache.paths.file.display(),
                paths.file.display()
            ));
        }
        return Ok((cache, None));
    };
    let bound = match cache.bound_file()? {
        Some(p) => Some(p),
        None => beads_git::cache::find_issues_file(&repo_dir(cli, None)?).ok(),
    };
    match bound {
        Some(bound) if !same_file(&bound, &explicit) => {
            cache.paths.file = bound;
            Ok((cache, Some(explicit)))
        }
        _ => Ok((cache, None)),
    }
}

/// Prints what the cache tells a waiting person.
fn notice(text: &str) {
    eprintln!("bd-sync: {}", printable_lines(text));
}

/// Whether stderr can draw a progress bar: a terminal that is not `TERM=dumb`.
fn progress_capable() -> bool {
    std::io::stderr().is_terminal() && std::env::var("TERM").is_ok_and(|t| !t.is_empty() && t != "dumb")
}

/// Whether two paths name one file (comparing what exists by its canonical path).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    let canon =
        |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    canon(a) == canon(b)
}

/// Writes ids for `bd-hook --stdin`: NUL-terminated with `nul` (an id holding a NUL, which
/// cannot cross, is left out and named on stderr), else one per line (an id a line cannot carry
/// intact is named on stderr, with the fix).
fn print_ids(ids: &[&str], nul: bool) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let mut lossy = Vec::new();
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
    out.flush()?;
    if !lossy.is_empty() {
        eprintln!(
            "bd-sync: warning: {} id(s) cannot cross a line-based pipe intact (a newline, a leading '#' or surrounding spaces: {}); use --print-changed -z with bd-hook --stdin -z",
            lossy.len(),
            lossy.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

fn run(cli: &Cli) -> Result<ExitCode> {
    match &cli.command {
        Command::Import { file, print_changed, z, skip_invalid, conflict, force, timeout, rebind } => {
            let (mut cache, other) = open_bound(cli, file.as_ref(), *timeout)?;
            if let Some(other) = other {
                if !rebind {
                    eprintln!(
                        "bd-sync: the cache belongs to {}; importing {} would replace its issues with that file's \
                         (and send its unexported edits there). Nothing was changed. Pass --rebind to make {} the cache's file.",
                        cache.paths.file.display(),
                        other.display(),
                        other.display()
                    );
                    return Ok(ExitCode::from(2));
                }
                cache.paths.file = other;
            }
            let paths = cache.paths.clone();
            let progress = progress_capable() && std::fs::metadata(&paths.file).map(|m| m.len() > 16 << 20).unwrap_or(false);
            let options = import::ImportOptions { skip_invalid: *skip_invalid, policy: *conflict, force: *force, progress };
            let report = import::import(&mut cache, &options)?;
            for bad in &report.skipped {
                eprintln!("bd-sync: skipped {bad}");
            }
            for r in &report.conflicts {
                eprintln!("bd-sync: {}: {r}", paths.file.display());
            }
            if let Some(warning) = beads_git::merge_log::record_import(&paths.file, &report.conflicts, (*conflict).into()) {
                eprintln!("bd-sync: {}: warning: {warning}", paths.file.display());
            }
            if !report.repeated_keys.is_empty() {
                let lines: Vec<String> = report.repeated_keys.iter().take(10).map(|n| n.to_string()).collect();
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
                eprintln!("bd-sync: {notice}");
            }
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else if *print_changed {
                print_ids(&report.changed_ids(), *z)?;
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
        Command::Export { file, conflict, timeout, stage } => {
            let (mut cache, other) = open_bound(cli, file.as_ref(), *timeout)?;
            if let Some(other) = other {
                // Another file: a snapshot of the cache there; the cache and its file stay as they are.
                let n = export::snapshot(&cache, &other)?;
                if cli.json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&serde_json::json!({ "snapshot": other.display().to_string(), "issues": n }))?
                    );
                } else {
                    eprintln!("bd-sync: wrote a snapshot of the cache to {}: {n} issue(s)", escaped_path(&other));
                }
                return Ok(ExitCode::SUCCESS);
            }
            let paths = cache.paths.clone();
            let report = export::export(&mut cache, &import::ImportOptions { policy: *conflict, ..Default::default() }, *stage)?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else if !report.unchanged {
                eprintln!(
                    "bd-sync: exported {}: {} written, {} removed",
                    escaped_path(&paths.file),
                    report.written.len(),
                    report.removed.len()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Install { repo, local, dry_run, team, shared_hooks_dir } => {
            let repo = repo_dir(cli, repo.as_ref())?;
            let options = install::InstallOptions {
                repo: repo.clone(),
                local: *local,
                dry_run: *dry_run,
                bin_dir: install::own_bin_dir()?,
                team: *team,
                shared_hooks_dir: *shared_hooks_dir,
            };
            let actions = match install::install(&options) {
                Err(e) if e.downcast_ref::<install::InstallRefusal>().is_some() => {
                    eprintln!("bd-sync: {}", printable_lines(&e.to_string()));
                    return Ok(ExitCode::from(1));
                }
                other => other?,
            };
            let mut imported = None;
            if !dry_run {
                // Start the cache now, so the first pull reports only what it changed.
                if let Ok(paths) = Paths::discover(&repo, None, cli.db.as_deref()) {
                    let mut cache = Cache::open(&paths, OpenOptions::write(Duration::from_secs(60)).with_notice(notice))?;
                    imported = Some(import::import(&mut cache, &import::ImportOptions::default())?);
                }
            }
            print_actions(cli, &actions, *dry_run, imported.as_ref())?;
            Ok(refusal_exit(&actions))
        }
        Command::Hook { hook, args } => {
            // Fail-open: a hook must never fail the git operation it runs in.
            match install::Hook::from_name(hook) {
                None => {
                    eprintln!(
                        "bd-sync: hook: unknown hook {} (pre-commit, post-commit, post-merge, post-rewrite, post-checkout)",
                        escaped(hook)
                    )
                }
                Some(h) => {
                    if let Err(e) = install::own_bin_dir().and_then(|dir| install::run_hook(h, args, &dir)) {
                        eprintln!("bd-sync: hook {hook}: {}", printable_lines(&format!("{e:#}")));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Uninstall { repo, dry_run } => {
            let repo = repo_dir(cli, repo.as_ref())?;
            let actions = install::uninstall(&repo, *dry_run)?;
            print_actions(cli, &actions, *dry_run, None)?;
            Ok(refusal_exit(&actions))
        }
        Command::Status => {
            let s = query::status_of(&paths(cli, None)?, Duration::from_secs(10))?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else if !s.cache_exists {
                println!("file    {}", escaped(&s.file));
                println!("cache   {} (none yet: `bd-sync import`, or any query, creates it)", escaped(&s.db));
            } else {
                println!("file    {}", escaped(&s.file));
                println!("cache   {} (schema {})", escaped(&s.db), s.schema_version);
                let by: Vec<String> = s.by_status.iter().map(|(k, v)| format!("{v} {}", escaped(k))).collect();
                println!("issues  {} ({})", s.issues, by.join(", "));
                println!("dirty   {} unexported edit(s)", s.dirty);
                println!(
                    "fresh   {}",
                    if s.file_changed_since_sync { "no: the file changed since the last sync (run bd-sync import)" } else { "yes" }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { file, strict } => {
            let file = match file {
                Some(f) => f.clone(),
                None => paths(cli, None)?.file,
            };
            let report = check::check(&check::CheckOptions { file, bin_dir: Some(install::own_bin_dir()?) })?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for f in &report.findings {
                    let line = f.lines.first().map(|l| format!(":{l}")).unwrap_or_default();
                    let id = f.id.as_deref().map(|i| format!(" {}:", escaped(i))).unwrap_or_default();
                    println!("{}{line}: {} {}:{id} {}", escaped(&report.file), f.severity, f.kind, escaped(&f.message));
                }
                eprintln!("bd-sync: check {}: {}", escaped(&report.file), report.summary());
            }
            let failed = report.errors > 0 || (*strict && report.warnings > 0);
            Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Ready { filter } | Command::Blocked { filter } => {
            let cache = open_fresh(cli)?;
            let options = filter.options();
            let list = if matches!(cli.command, Command::Ready { .. }) {
                query::ready(&cache, &options)?
            } else {
                query::blocked(&cache, &options)?
            };
            if cli.json {
                // Full issue objects, as `bd ready --json` prints them (docs/json.md).
                println!("{}", serde_json::to_string_pretty(&query::full_issues(&cache, &list)?)?);
            } else {
                print_issues(&list);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Diff { revs, exit_code } => {
            let file = paths(cli, None)?.file;
            let file = std::path::absolute(&file).unwrap_or(file);
            let report = beads_git::history::diff(&beads_git::history::DiffOptions { spec: revs.clone(), working_file: file })?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", beads_git::issue_diff::render(&report.issues, beads_git::issue_diff::Style::for_stdout()));
                if report.issues.is_empty() {
                    eprintln!("bd-sync: no issue changed between {} and {}", escaped(&report.old), escaped(&report.new));
                }
            }
            Ok(if *exit_code && !report.issues.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Command::Log { id, range } => {
            let dir = repo_dir(cli, None)?;
            // A partial id resolves against the issues file; an id no longer in it is taken as given.
            let id = match open_fresh(cli).and_then(|cache| query::resolve_id(&cache, id)) {
                Ok(query::IdMatch::Ambiguous(candidates)) => return Ok(ambiguous(id, &candidates)),
                Ok(query::IdMatch::One(full)) => full,
                _ => id.clone(),
            };
            let id = &id;
            let entries = beads_git::history::log(&dir, id, range.as_deref())?;
            if cli.json {
                println!("{}", serde_json::to_string_pretty(&entries)?);
            } else {
                for e in &entries {
                    let c = &e.commit;
                    let short = &c.commit[..c.commit.len().min(12)];
                    println!("commit {}  {}  {} <{}>", escaped(short), escaped(&c.date), escaped(&c.author), escaped(&c.email));
                    println!("    {}", escaped(&c.subject));
                    for line in
                        beads_git::issue_diff::render(std::slice::from_ref(&e.change), beads_git::issue_diff::Style::for_stdout()).lines()
                    {
                        println!("  {line}");
                    }
                    println!();
                }
                if entries.is_empty() {
                    eprintln!("bd-sync: no commit changed {id:?}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema { command } => {
            let out = match command {
                Some(c) => match beads_git::schema::schema(c) {
                    Some(s) => s,
                    None => {
                        eprintln!(
                            "bd-sync: no schema for {}: one of {}",
                            escaped(&format!("{c:?}")),
                            beads_git::schema::COMMANDS.join(", ")
                        );
                        return Ok(ExitCode::from(2));
                    }
                },
                None => serde_json::Value::Object(
                    beads_git::schema::COMMANDS.iter().filter_map(|c| beads_git::schema::schema(c).map(|s| ((*c).to_owned(), s))).collect(),
                ),
            };
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { ids } => {
            let cache = open_fresh(cli)?;
            let mut all = Vec::new();
            for id in ids {
                let full = match query::resolve_id(&cache, id)? {
                    query::IdMatch::One(full) => full,
                    query::IdMatch::Ambiguous(candidates) => return Ok(ambiguous(id, &candidates)),
                    query::IdMatch::None => {
                        eprintln!("bd-sync: no issue {} in {}", escaped(&format!("{id:?}")), escaped_path(&cache.paths.file));
                        return Ok(ExitCode::from(1));
                    }
                };
                let Some(shown) = query::show(&cache, &full)? else {
                    eprintln!("bd-sync: no issue {} in {}", escaped(&format!("{full:?}")), escaped_path(&cache.paths.file));
                    return Ok(ExitCode::from(1));
                };
                all.push(shown);
            }
            if cli.json {
                // An array of full issue objects, as `bd show --json` prints (docs/json.md).
                let issues = all.iter().map(query::shown_json).collect::<Result<Vec<_>>>()?;
                println!("{}", serde_json::to_string_pretty(&issues)?);
            } else {
                for (i, shown) in all.iter().enumerate() {
                    if i > 0 {
                        println!();
                    }
                    print_shown(shown);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Reports a partial id that several issues match (exit 1), listing them.
fn ambiguous(id: &str, candidates: &[String]) -> ExitCode {
    eprintln!(
        "bd-sync: {} matches {} issues: {}; give more of the id",
        escaped(&format!("{id:?}")),
        candidates.len(),
        candidates.iter().take(20).map(|c| escaped(c)).collect::<Vec<_>>().join(", ")
    );
    ExitCode::from(1)
}

/// Opens the cache for a query, importing a changed file first (and saying so on stderr).
fn open_fresh(cli: &Cli) -> Result<Cache> {
    let (cache, imported) = Cache::open_fresh(&paths(cli, None)?, OpenOptions::read(Duration::from_secs(60)).with_notice(notice))?;
    if let Some(r) = imported.filter(|r| !r.noop) {
        eprintln!(
            "bd-sync: imported {} first: {} added, {} changed, {} removed",
            escaped_path(&cache.paths.file),
            r.added.len(),
            r.changed.len(),
            r.removed.len()
        );
    }
    Ok(cache)
}

fn repo_dir(cli: &Cli, repo: Option<&PathBuf>) -> Result<PathBuf> {
    match (repo, &cli.directory) {
        (Some(r), _) | (None, Some(r)) => Ok(r.clone()),
        (None, None) => std::env::current_dir().context("finding the current directory"),
    }
}

/// Exit 1 when install or uninstall left a file alone that the user must see to by hand.
fn refusal_exit(actions: &[install::Action]) -> ExitCode {
    if actions.iter().any(|a| a.change == install::Change::Refused) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn print_actions(cli: &Cli, actions: &[install::Action], dry_run: bool, imported: Option<&import::ImportReport>) -> Result<()> {
    if cli.json {
        let v = serde_json::json!({ "dry_run": dry_run, "actions": actions, "import": imported });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let changed = |a: &&install::Action| a.change != install::Change::Unchanged && a.change != install::Change::Absent;
    let width = actions.iter().filter(changed).map(|a| escaped(&a.what).chars().count()).max().unwrap_or(0);
    for a in actions {
        if let Some(w) = &a.warning {
            eprintln!("bd-sync: warning: {}", printable_lines(w));
        }
    }
    for a in actions.iter().filter(changed) {
        let change = format!("{:?}", a.change).to_lowercase();
        let change = if dry_run { format!("would be {change}") } else { change };
        let path = if a.path == a.what { String::new() } else { format!("  {}", escaped(&a.path)) };
        println!("{:<width$}  {change}{path}", escaped(&a.what));
    }
    if actions.iter().all(|a| matches!(a.change, install::Change::Unchanged | install::Change::Absent)) {
        println!("nothing to change");
    }
    if let Some(r) = imported.filter(|r| !r.noop) {
        println!("{:<width$}  imported {} issue(s)", "cache", r.added.len() + r.changed.len());
    }
    Ok(())
}

fn priority_label(p: &serde_json::Value) -> String {
    match p {
        serde_json::Value::Number(n) => format!("P{n}"),
        serde_json::Value::String(s) => escaped(s).into_owned(),
        _ => "P?".into(),
    }
}

fn print_issues(list: &[query::IssueSummary]) {
    let color = beads_git::issue_diff::Style::for_stdout().color;
    // Each value escaped: an id holding a newline or an ESC stays one cell of one row.
    let id_width = list.iter().map(|i| escaped(&i.id).chars().count()).max().unwrap_or(0);
    let status_width = list.iter().map(|i| escaped(i.status.as_deref().unwrap_or("-")).chars().count()).max().unwrap_or(0);
    for i in list {
        let p = priority_label(&i.priority);
        let p = if color && (p == "P0" || p == "P1" || p == "critical" || p == "high") {
            format!("\x1b[1;31m{p:<4}\x1b[0m")
        } else {
            format!("{p:<4}")
        };
        let blockers = if i.blocked_by.is_empty() {
            String::new()
        } else {
            format!("  (blocked by {})", i.blocked_by.iter().map(|b| escaped(b)).collect::<Vec<_>>().join(", "))
        };
        let line = format!(
            "{p} {:<id_width$}  {:<status_width$}  {}{blockers}",
            escaped(&i.id),
            escaped(i.status.as_deref().unwrap_or("-")),
            escaped(i.title.as_deref().unwrap_or(""))
        );
        println!("{}", line.trim_end());
    }
    if list.is_empty() {
        eprintln!("(none)");
    }
}

fn print_shown(shown: &query::Shown) {
    let issue: serde_json::Value = serde_json::from_str(shown.issue.get()).unwrap_or_default();
    // Every value escaped (one line each); long texts keep their own lines, each escaped.
    let text = |k: &str| match issue.get(k) {
        Some(serde_json::Value::String(s)) => Some(escaped(s).into_owned()),
        Some(serde_json::Value::Null) | None => None,
        Some(v) => Some(escaped(&v.to_string()).into_owned()),
    };
    let raw_text = |k: &str| issue.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
    println!("{}: {}", text("id").unwrap_or_default(), text("title").unwrap_or_default());
    let mut fields: Vec<(String, String)> = Vec::new();
    for (label, key) in [("status", "status"), ("type", "issue_type"), ("assignee", "assignee"), ("owner", "owner")] {
        if let Some(v) = text(key) {
            fields.push((label.into(), v));
        }
    }
    if let Some(p) = issue.get("priority") {
        fields.insert(1.min(fields.len()), ("priority".into(), priority_label(p)));
    }
    for (label, key) in [("created", "created_at"), ("updated", "updated_at"), ("closed", "closed_at"), ("close reason", "close_reason")] {
        if let Some(v) = text(key) {
            fields.push((label.into(), v));
        }
    }
    if let Some(serde_json::Value::Array(labels)) = issue.get("labels") {
        let names: Vec<String> = labels.iter().map(|l| escaped(l.as_str().unwrap_or(&l.to_string())).into_owned()).collect();
        fields.push(("labels".into(), names.join(", ")));
    }
    // Every dependency by type: the parent (parent-child), what it depends on (blocks), and the
    // other kinds (related, discovered-from, ...) under their own names.
    let mut by_type: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    if let Some(serde_json::Value::Array(deps)) = issue.get("dependencies") {
        for d in deps {
            let target = d.get("depends_on_id").and_then(serde_json::Value::as_str).unwrap_or_default();
            let kind = d.get("type").and_then(serde_json::Value::as_str).unwrap_or("blocks");
            if !target.is_empty() {
                by_type.entry(kind.to_owned()).or_default().push(escaped(target).into_owned());
            }
        }
    }
    let parent = by_type.remove("parent-child").map(|p| p.join(", ")).or_else(|| text("parent"));
    if let Some(p) = parent {
        fields.push(("parent".into(), p));
    }
    if let Some(on) = by_type.remove("blocks") {
        fields.push(("depends on".into(), on.join(", ")));
    }
    for (kind, ids) in by_type {
        fields.push((escaped(&kind).into_owned(), ids.join(", ")));
    }
    for (label, ids) in [("blocked by", &shown.blocked_by), ("blocks", &shown.blocks), ("children", &shown.children)] {
        if !ids.is_empty() {
            fields.push((label.into(), ids.iter().map(|i| escaped(i)).collect::<Vec<_>>().join(", ")));
        }
    }
    for (label, value) in fields {
        // A label of 13 characters or more still gets a space before its value.
        println!("  {:<13}{value}", format!("{label} "));
    }
    if shown.dirty {
        println!("  (edited in the cache, not yet exported)");
    }
    let section = |heading: Option<&str>, body: &str| {
        println!();
        if let Some(h) = heading {
            println!("  {h}");
        }
        for line in body.lines() {
            println!("  {}{}", if heading.is_some() { "  " } else { "" }, escaped(line));
        }
    };
    if let Some(d) = raw_text("description").filter(|d| !d.trim().is_empty()) {
        section(None, &d);
    }
    for (heading, key) in [("DESIGN", "design"), ("ACCEPTANCE CRITERIA", "acceptance_criteria"), ("NOTES", "notes")] {
        if let Some(body) = raw_text(key).filter(|b| !b.trim().is_empty()) {
            section(Some(heading), &body);
        }
    }
    if let Some(serde_json::Value::Array(comments)) = issue.get("comments").filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
        println!();
        println!("  COMMENTS ({})", comments.len());
        for c in comments {
            let field = |k: &str| c.get(k).and_then(serde_json::Value::as_str).map(|v| escaped(v).into_owned());
            println!(
                "    {} {}",
                field("created_at").unwrap_or_else(|| "-".into()),
                field("author").unwrap_or_else(|| "(no author)".into())
            );
            for line in c.get("text").and_then(serde_json::Value::as_str).unwrap_or_default().lines() {
                println!("      {}", escaped(line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
