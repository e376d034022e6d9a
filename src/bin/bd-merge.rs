//! `bd-merge`: git merge driver for beads JSONL issue files (see the README for wiring).

use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::issue_diff;
use beads_git::merge::driver::{self, Destination, DriverOptions, DriverOutcome};
use beads_git::merge::{ConflictPolicy, Markers, MergeOptions};
use beads_git::record::{escaped, escaped_path, printable_lines};
use clap::Parser;

/// Field-level three-way merge of beads `issues.jsonl` files.
///
/// As a git merge driver: `bd-merge %O %A %B -l %L -p %P -s %S -x %X -y %Y`; the result replaces
/// %A. Also accepts the old bd form `bd-merge OUTPUT BASE LEFT RIGHT`.
/// Exit codes: 0 merged cleanly, 1 conflicts written for a human, 2 error (ours left unchanged).
/// `BD_MERGE=0` in the environment makes it a plain `git merge-file` line merge.
#[derive(Parser, Debug)]
#[command(name = "bd-merge", version = beads_git::VERSION)]
struct Cli {
    /// BASE OURS THEIRS (git's %O %A %B), or OUTPUT BASE LEFT RIGHT (old bd form).
    #[arg(num_args = 3..=4, required = true, value_names = ["BASE", "OURS", "THEIRS"])]
    files: Vec<PathBuf>,
    /// Write the result here instead of over OURS; `-` for stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// How to settle a field both sides changed when no merge rule can.
    #[arg(long = "conflict", value_enum, default_value_t = ConflictPolicy::Newest)]
    conflict: ConflictPolicy,
    /// Conflict marker size (git's %L, from a `conflict-marker-size` attribute), at most 256; below 7 counts as 7.
    #[arg(short = 'l', long = "marker-size", value_name = "N", allow_hyphen_values = true)]
    marker_size: Option<String>,
    /// Path of the file being merged, for messages (git's %P).
    #[arg(short = 'p', long = "path", value_name = "PATH")]
    path: Option<String>,
    /// Label for the base in conflict markers (git's %S).
    #[arg(short = 's', long = "base-label", value_name = "LABEL")]
    base_label: Option<String>,
    /// Label for ours in conflict markers (git's %X).
    #[arg(short = 'x', long = "ours-label", value_name = "LABEL")]
    ours_label: Option<String>,
    /// Label for theirs in conflict markers (git's %Y).
    #[arg(short = 'y', long = "theirs-label", value_name = "LABEL")]
    theirs_label: Option<String>,
    /// Do not report auto-resolved conflicts on stderr.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// The file is an append-only log (bd's interactions.jsonl, deletions.jsonl): keep every line of both sides.
    #[arg(long)]
    append: bool,
}

/// Repair an issues file that was merged without bd-merge, or read what changed in one.
#[derive(Parser, Debug)]
#[command(name = "bd-merge", version = beads_git::VERSION, propagate_version = true)]
enum Repair {
    /// Show what changed in issues between two files, field by field: scalars old -> new, label,
    /// dependency and comment additions and removals, a line diff of multi-line text.
    /// Also git's external diff (`diff.<driver>.command`, 7 arguments). Exit 0, 2 on error.
    Diff {
        /// OLD NEW, or git's PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE.
        #[arg(num_args = 2..=7, required = true, value_name = "FILES")]
        files: Vec<PathBuf>,
        /// Typed JSON on stdout (shapes in the README).
        #[arg(long)]
        json: bool,
        /// Exit 1 when an issue differs, 0 when none does (as `git diff --exit-code`).
        #[arg(long)]
        exit_code: bool,
        /// Colour the output: auto (a terminal, unless NO_COLOR is set), always or never.
        #[arg(long, value_enum, value_name = "WHEN", default_value_t = beads_git::color::ColorChoice::Auto, hide_possible_values = true)]
        color: beads_git::color::ColorChoice,
    },
    /// Print an issues file as one line per field, for git's `diff.beads.textconv` (what `bd-sync install` sets).
    Textconv {
        /// The file git converts.
        file: PathBuf,
    },
    /// Merge a conflicted issues file as the driver would have: from git's index stages during a
    /// conflicted merge, rebase, cherry-pick or stash pop, else from its conflict markers.
    /// Exit 0 merged cleanly or nothing to do, 1 conflicts left (or, with --check, work to do), 2 error.
    Resolve {
        /// The issues file [default: the repository's .beads/issues.jsonl].
        path: Option<PathBuf>,
        /// How to settle what the merge rules leave open.
        #[arg(long = "conflict", value_enum, default_value_t = ConflictPolicy::Newest)]
        conflict: ConflictPolicy,
        /// `git add` the result when no conflicts are left.
        #[arg(long)]
        stage: bool,
        /// Only say whether the file needs resolving (exit 1 when it does); change nothing.
        #[arg(long)]
        check: bool,
        /// Do not report auto-resolved conflicts on stderr.
        #[arg(short = 'q', long)]
        quiet: bool,
    },
    /// Merge BASE into the checked-out branch with the field-level driver registered for this
    /// command only (for CI, where no driver is installed): fetches BASE when missing and deepens
    /// a shallow clone until the branches meet. Exit 0 merged (or already up to date), 1 conflicts
    /// in other files (the merge is aborted, nothing changed), 2 error.
    UpdateBranch {
        /// The branch to merge in (`main`, or `origin/main`).
        base: String,
        /// Push the merge commit to the branch's upstream.
        #[arg(long)]
        push: bool,
        /// The merge commit's first line [default: "Merge BASE into BRANCH"].
        #[arg(long, value_name = "TEXT")]
        message: Option<String>,
        /// The branch this checkout is for, when HEAD is detached.
        #[arg(long, value_name = "NAME")]
        branch: Option<String>,
        /// The outcome as JSON on stdout (`outcome`: up-to-date, merged or conflicts).
        #[arg(long)]
        json: bool,
    },
    /// List the values merges dropped in this clone (the merge log), newest first, with both
    /// values, the sides' labels, the command and the time; or put one back with --restore.
    /// Exit 0, 1 when --restore refuses (the field changed again since), 2 on error.
    Review {
        /// Only the newest N entries.
        #[arg(long, value_name = "N", conflicts_with = "since")]
        last: Option<usize>,
        /// Only entries logged since WHEN: an RFC 3339 instant, a date (2026-01-05) or an age (90m, 12h, 2d, 1w).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Only entries about this issue.
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// Typed JSON on stdout, an array of log entries (shape in the README).
        #[arg(long)]
        json: bool,
        /// Put entry N's dropped value back into the working issues file, as a new edit to commit.
        #[arg(long, value_name = "N", conflicts_with_all = ["last", "since", "id", "json"])]
        restore: Option<u64>,
        /// The issues file --restore edits [default: the repository's .beads/issues.jsonl].
        #[arg(long, value_name = "PATH", requires = "restore")]
        file: Option<PathBuf>,
        /// For the post-merge / post-rewrite hook: print one line when merges dropped values since
        /// it last printed, nothing otherwise.
        #[arg(long, hide = true, conflicts_with_all = ["last", "since", "id", "json", "restore"])]
        announce: bool,
    },
    /// Merge every id that stands on several lines (left by merge=union or older tools) into one
    /// record, field by field; identical repeats collapse. Exit 0, or 1 with --check when needed.
    Dedupe {
        /// The issues file [default: the repository's .beads/issues.jsonl].
        path: Option<PathBuf>,
        /// Only say which ids would be merged (exit 1 when any); change nothing.
        #[arg(long)]
        check: bool,
    },
}

fn default_issues_file(path: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match path {
        Some(p) => Ok(p.clone()),
        None => beads_git::cache::find_issues_file(&std::env::current_dir()?),
    }
}

/// What to run after a clean `resolve`: stage the file (unless `--stage` did), then commit.
fn next_step(file: &str, staged: bool) -> String {
    if staged {
        "bd-merge: next: commit (`git commit`; `git rebase --continue` during a rebase)".to_owned()
    } else {
        format!("bd-merge: next: `git add {file}` (or resolve with --stage), then commit (`git rebase --continue` during a rebase)")
    }
}

fn repair(cmd: Repair) -> anyhow::Result<ExitCode> {
    use beads_git::merge::repair::{self, Resolution, ResolveOptions, Sides};
    match cmd {
        Repair::UpdateBranch { base, push, message, branch, json } => {
            use beads_git::update_branch::{update_branch, UpdateOptions, UpdateOutcome};
            let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("finding the running executable: {e}"))?;
            let options = UpdateOptions {
                repo: std::env::current_dir()?,
                base,
                branch,
                push,
                message,
                bd_merge: std::fs::canonicalize(&exe).unwrap_or(exe),
                notice: |line| eprintln!("{line}"),
            };
            let outcome = update_branch(&options)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&outcome)?);
            } else {
                match &outcome {
                    UpdateOutcome::UpToDate { .. } => eprintln!("bd-merge: already up to date with {}", options.base),
                    UpdateOutcome::Merged { commit, pushed, issues, overridden } => eprintln!(
                        "bd-merge: merged {} ({} issue(s) merged field by field, {} value(s) overridden): {commit}{}",
                        options.base,
                        issues.len(),
                        overridden.len(),
                        if *pushed { ", pushed" } else { "" }
                    ),
                    UpdateOutcome::Conflicts { files } => eprintln!(
                        "bd-merge: merging {} conflicts in files other than the issues file, so nothing was changed; \
                         merge it by hand:\n  {}",
                        options.base,
                        files.iter().map(|f| beads_git::record::printable(f, 400)).collect::<Vec<_>>().join("\n  ")
                    ),
                }
            }
            Ok(ExitCode::from(outcome.exit_code()))
        }
        Repair::Review { last, since, id, json, restore, file, announce } => review(last, since, id, json, restore, file, announce),
        Repair::Diff { files, json, exit_code, color } => {
            beads_git::color::set(color);
            let (label, old, new) = match files.as_slice() {
                [old, new] => (None, old, new),
                [path, old, _, _, new, _, _] => (Some(escaped_path(path)), old, new),
                _ => anyhow::bail!("diff takes OLD NEW, or git's 7 arguments (got {})", files.len()),
            };
            let changes =
                issue_diff::diff_files(beads_git::jsonl::read(old)?, beads_git::jsonl::read(new)?).map_err(|e| anyhow::anyhow!("{e}"))?;
            let differs = !changes.is_empty();
            if json {
                let report = issue_diff::FileDiff { old: old.display().to_string(), new: new.display().to_string(), issues: changes };
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                if let Some(label) = label.filter(|_| !changes.is_empty()) {
                    println!("diff --beads a/{label} b/{label}");
                }
                print!("{}", issue_diff::render(&changes, issue_diff::Style::for_stdout()));
            }
            Ok(if exit_code && differs { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        Repair::Textconv { file } => {
            let content = beads_git::jsonl::read(&file)?;
            print!("{}", issue_diff::textconv(&content));
            Ok(ExitCode::SUCCESS)
        }
        Repair::Resolve { path, conflict, stage, check, quiet } => {
            let path = default_issues_file(path.as_ref())?;
            let options =
                ResolveOptions { path: path.clone(), merge: MergeOptions { policy: conflict, ..MergeOptions::default() }, stage, check };
            let name = escaped_path(&path);
            match repair::resolve(&options)? {
                Resolution::NothingToDo => {
                    eprintln!("bd-merge: {name}: nothing to resolve (no index stages, no conflict markers)");
                    Ok(ExitCode::SUCCESS)
                }
                Resolution::Merged { sides, report } => {
                    let from = match sides {
                        Sides::IndexStages => "git's index stages",
                        Sides::ConflictMarkers => "the conflict markers in the file",
                    };
                    let Some(report) = report else {
                        eprintln!("bd-merge: {name}: needs resolving (sides from {from}): run `bd-merge resolve`");
                        return Ok(ExitCode::from(1));
                    };
                    print_report(&name, &report, quiet);
                    eprintln!(
                        "bd-merge: {name}: resolved from {from}{}",
                        if report.exit_code() == 0 {
                            if stage {
                                " and staged"
                            } else {
                                ""
                            }
                        } else {
                            "; conflicts left for a human"
                        }
                    );
                    if report.exit_code() == 0 {
                        let shown = beads_git::cache::import::shown_path(&path);
                        eprintln!("{}", next_step(&shown, stage));
                    }
                    Ok(ExitCode::from(report.exit_code()))
                }
            }
        }
        Repair::Dedupe { path, check } => {
            let path = default_issues_file(path.as_ref())?;
            let content = beads_git::jsonl::read(&path)?;
            let (out, done, warnings) = repair::dedupe(&content, &MergeOptions::default());
            let name = escaped_path(&path);
            for w in &warnings {
                eprintln!("bd-merge: {name}: warning: {}", printable_lines(w));
            }
            for d in &done {
                eprintln!(
                    "bd-merge: {name}: {}: {} copies on lines {:?} {} one record",
                    escaped(&d.id),
                    d.copies,
                    d.lines,
                    if check { "would become" } else { "became" }
                );
            }
            if check {
                return Ok(ExitCode::from(u8::from(!done.is_empty())));
            }
            if out != content {
                beads_git::jsonl::write_atomic(&path, &out)?;
                if let Some(w) = repair::log_dedupe(&path, &done) {
                    eprintln!("bd-merge: {}: warning: {w}", path.display());
                }
            } else if done.is_empty() {
                eprintln!("bd-merge: {name}: no id on several lines");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn review(
    last: Option<usize>,
    since: Option<String>,
    id: Option<String>,
    json: bool,
    restore: Option<u64>,
    file: Option<PathBuf>,
    announce: bool,
) -> anyhow::Result<ExitCode> {
    use beads_git::merge_log;
    let cwd = std::env::current_dir()?;
    let Some(dir) = merge_log::log_dir(&cwd) else {
        if announce {
            return Ok(ExitCode::SUCCESS);
        }
        anyhow::bail!("not in a git repository: the merge log lives in the repository's git directory");
    };
    if announce {
        if let Some(line) = merge_log::announce(&dir)? {
            eprintln!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(n) = restore {
        let file = default_issues_file(file.as_ref())?;
        return Ok(match merge_log::restore(&dir, n, &file)? {
            merge_log::RestoreOutcome::Restored(done) => {
                eprintln!(
                    "bd-merge: {}: {}: {} restored from the merge log (#{n}){}; commit it like any edit",
                    beads_git::record::printable(&done.path, 400),
                    beads_git::record::printable(&done.id, 200),
                    beads_git::record::printable(&done.field, 200),
                    done.updated_at.map(|u| format!(", updated_at {u}")).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            merge_log::RestoreOutcome::Refused(why) => {
                eprintln!("bd-merge: not restored: {why}");
                ExitCode::from(1)
            }
        });
    }
    let now = beads_git::timestamp::merge_now().map_err(anyhow::Error::msg)?;
    let since = since.map(|s| merge_log::parse_since(&s, now)).transpose()?;
    let all = merge_log::read_all(&dir)?;
    let shown = merge_log::select(all.clone(), &merge_log::Filter { last, since, id });
    if json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        print!("{}", merge_log::render(&shown));
    }
    // Listing them is reviewing them: `bd-sync check` stops mentioning what was shown.
    if let Err(e) = merge_log::mark_reviewed(&dir, &all, &shown) {
        eprintln!("bd-merge: warning: {e:#}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The driver's report on stderr; `name` is already escaped, and so is every line from the data
/// (a report is one line: a newline from the data is escaped too).
fn print_report(name: &str, report: &driver::DriverReport, quiet: bool) {
    for w in &report.warnings {
        eprintln!("bd-merge: {name}: warning: {}", printable_lines(w));
    }
    if !quiet {
        for r in &report.reports {
            eprintln!("bd-merge: {name}: {}", escaped(&beads_git::merge_log::describe(r, &report.labels, report.rebase)));
        }
    }
    match &report.outcome {
        DriverOutcome::Clean => {}
        DriverOutcome::Conflicted(n) => eprintln!("bd-merge: {name}: {n} record(s) left with conflict markers"),
        DriverOutcome::NeedsReview => {
            eprintln!("bd-merge: {name}: merged, but a side deleted most records: review it (exit 1 under --conflict markers)")
        }
        DriverOutcome::Fallback { reason, conflicted } => eprintln!(
            "bd-merge: {}\nbd-merge: {name}: cannot merge record by record; merged line by line{}",
            printable_lines(reason),
            if *conflicted { " and left conflict markers" } else { " cleanly" }
        ),
    }
}

/// The whole command line for completions and the man page: the driver's arguments and the
/// repair commands (which `main` parses apart) as subcommands.
fn whole_command() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command().subcommand_negates_reqs(true).args_conflicts_with_subcommands(true);
    for sub in Repair::command().get_subcommands() {
        cmd = cmd.subcommand(sub.clone());
    }
    cmd
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = beads_git::generate::from_args(&args, whole_command) {
        return code;
    }
    // `bd-merge resolve|dedupe|review ...`; anything else is the driver's BASE OURS THEIRS.
    if matches!(
        std::env::args_os().nth(1).as_deref().and_then(|a| a.to_str()),
        Some("resolve" | "dedupe" | "diff" | "textconv" | "update-branch" | "review")
    ) {
        return match repair(Repair::parse()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("bd-merge: {}", printable_lines(&format!("{e:#}")));
                ExitCode::from(2)
            }
        };
    }
    let cli = Cli::parse();
    let options = match options(&cli) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bd-merge: {}", printable_lines(&format!("{e:#}")));
            return ExitCode::from(2);
        }
    };
    let name = escaped(&driver::display_name(&options)).into_owned();
    match driver::run(&options) {
        Ok(report) => {
            print_report(&name, &report, cli.quiet);
            ExitCode::from(report.exit_code())
        }
        Err(e) => {
            let text = printable_lines(&format!("{e:#}")).into_owned();
            // A reason that already names the file is not prefixed twice.
            if text.starts_with(&format!("{name}: ")) {
                eprintln!("bd-merge: {text}");
            } else {
                eprintln!("bd-merge: {name}: {text}");
            }
            ExitCode::from(2)
        }
    }
}

/// The longest conflict marker: git's `%L` comes from a `conflict-marker-size` attribute that a
/// committed `.gitattributes` can set to anything, and a marker is written on every conflict.
const MAX_MARKER_SIZE: usize = 256;

/// `-l N`, checked: a number of at most [`MAX_MARKER_SIZE`].
fn marker_size(text: &str) -> anyhow::Result<usize> {
    let shown = escaped(text);
    match text.parse::<u64>() {
        Ok(n) if n <= MAX_MARKER_SIZE as u64 => Ok(n as usize),
        Ok(_) => anyhow::bail!(
            "marker size {shown} is out of range (at most {MAX_MARKER_SIZE}): git passes -l %L from the file's \
             conflict-marker-size attribute; set a smaller one in .gitattributes"
        ),
        Err(_) => anyhow::bail!("marker size {shown:?} is not a number (git's %L: a conflict-marker-size attribute)"),
    }
}

/// Builds driver options, treating placeholders git did not expand as not given.
fn options(cli: &Cli) -> anyhow::Result<DriverOptions> {
    let given = |v: &Option<String>| v.clone().filter(|s| !driver::is_unexpanded_placeholder(s));
    let (base, ours, theirs, destination) = match cli.files.as_slice() {
        [b, o, t] => (b, o, t, None),
        [out, b, l, r] => (b, l, r, Some(out.clone())),
        _ => anyhow::bail!("expected BASE OURS THEIRS or OUTPUT BASE LEFT RIGHT"),
    };
    let destination = match (&cli.output, destination) {
        (Some(p), _) if p.as_os_str() == "-" => Destination::Stdout,
        (Some(p), _) => Destination::File(p.clone()),
        (None, Some(out)) if out == *ours => Destination::ReplaceOurs,
        (None, Some(out)) => Destination::File(out),
        (None, None) => Destination::ReplaceOurs,
    };
    let size = match given(&cli.marker_size) {
        Some(s) => marker_size(&s)?,
        None => 7,
    };
    let default = Markers::default();
    let markers = Markers {
        size,
        ours: given(&cli.ours_label).unwrap_or(default.ours),
        base: given(&cli.base_label).unwrap_or(default.base),
        theirs: given(&cli.theirs_label).unwrap_or(default.theirs),
        diff3: false,
    };
    Ok(DriverOptions {
        base: base.clone(),
        ours: ours.clone(),
        theirs: theirs.clone(),
        destination,
        path_name: given(&cli.path),
        structural: std::env::var_os("BD_MERGE").is_none_or(|v| v != "0"),
        detect_conflict_style: true,
        merge: MergeOptions { policy: cli.conflict, markers, ..MergeOptions::default() },
        append_only: cli.append,
        log: Some("bd-merge".to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_lines_are_consistent() {
        super::Cli::command().debug_assert();
        super::Repair::command().debug_assert();
    }
}
