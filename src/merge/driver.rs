//! The merge driver as git runs it: read `%O %A %B`, merge, write the result over `%A`.
//!
//! This is the porcelain around the pure [`merge`]: it reads the inputs (an
//! unreadable input, or one that is not a regular file, is an error and `%A` is left alone;
//! inputs are read, never mapped, see [`jsonl::read`]), asks git for the conflict style when
//! markers may be written, falls back to `git merge-file` for input that cannot be merged record
//! by record (or when `BD_MERGE=0`), and writes the result atomically.

use std::path::{Path, PathBuf};

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use super::{merge, DecisionLog, Decisions, Labels, Markers, MergeOptions, Report, SideNames, Unmergeable, Warning};
use crate::git;
use crate::jsonl;
use crate::safe_fs::Durability;

/// Runs `git merge-file -p` (ours, base, theirs) and returns the merged bytes and whether
/// conflict markers were left.
fn merge_file(ours: &Path, base: &Path, theirs: &Path, markers: &Markers) -> Result<(Vec<u8>, bool)> {
    let mut cmd = Command::new("git");
    cmd.arg("merge-file").arg("-p").arg(format!("--marker-size={}", markers.size.max(7)));
    if markers.diff3 {
        cmd.arg("--diff3");
    }
    cmd.args(["-L", &markers.ours, "-L", &markers.base, "-L", &markers.theirs]);
    cmd.arg(git::not_an_option(ours).as_os_str())
        .arg(git::not_an_option(base).as_os_str())
        .arg(git::not_an_option(theirs).as_os_str())
        .stdin(Stdio::null());
    let output = cmd.output().context("running `git merge-file` (is git installed?)")?;
    match output.status.code() {
        Some(0) => Ok((output.stdout, false)),
        Some(n) if (1..=127).contains(&n) => Ok((output.stdout, true)),
        _ => bail!("`git merge-file` failed: {}", String::from_utf8_lossy(&output.stderr).trim()),
    }
}

/// Where the merged file goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Replace the ours file (git's `%A`), as a merge driver must.
    ReplaceOurs,
    /// Write to this file.
    File(PathBuf),
    /// Write to standard output.
    Stdout,
}

/// Everything one driver run needs.
#[derive(Debug, Clone)]
pub struct DriverOptions {
    /// Common ancestor (`%O`).
    pub base: PathBuf,
    /// Current branch's version (`%A`); replaced by the result unless `destination` says otherwise.
    pub ours: PathBuf,
    /// Other branch's version (`%B`).
    pub theirs: PathBuf,
    /// Where the result goes.
    pub destination: Destination,
    /// The path being merged (`%P`), for messages.
    pub path_name: Option<String>,
    /// Merge record by record (false under `BD_MERGE=0`: line merge only).
    pub structural: bool,
    /// Ask `git config merge.conflictStyle` whether to show the base in markers.
    pub detect_conflict_style: bool,
    /// Policy and markers.
    pub merge: MergeOptions,
    /// The file is an append-only log (`interactions.jsonl`, `deletions.jsonl`): union of lines.
    pub append_only: bool,
    /// Where to keep what the merge dropped (the clone's merge log, `merge_log::decision_log`),
    /// and under which command name; `None` keeps nothing.
    pub log: Option<DecisionLog>,
}

/// How a driver run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverOutcome {
    /// Merged with no conflicts left for a human.
    Clean,
    /// Records written with conflict markers.
    Conflicted(usize),
    /// Merged, but under `--conflict markers` a side deleted most of the records: a human should
    /// confirm (the warnings say which side and how many).
    NeedsReview,
    /// Structural merge refused the input; a line merge was done instead.
    Fallback {
        /// Why: which version, and its line (the caller names the file, [`display_name`]).
        reason: String,
        /// Whether the line merge left conflict markers.
        conflicted: bool,
    },
}

/// The outcome plus what to tell the user.
#[derive(Debug, Clone)]
pub struct DriverReport {
    /// How it ended.
    pub outcome: DriverOutcome,
    /// Auto-resolved conflicts.
    pub reports: Vec<Report>,
    /// Warnings that did not stop the merge.
    pub warnings: Vec<Warning>,
    /// Issues created on both sides under one id, the later one moved to a new id.
    pub renames: Vec<super::Rename>,
    /// The sides' labels (git's `%X` / `%Y`; in a rebase, upstream's name), for the report lines.
    pub labels: Labels,
    /// The merge was a step of a rebase.
    pub rebase: bool,
}

impl DriverReport {
    /// Exit code for git: 0 clean, 1 conflicts left for a human.
    pub fn exit_code(&self) -> u8 {
        match self.outcome {
            DriverOutcome::Clean | DriverOutcome::Fallback { conflicted: false, .. } => 0,
            DriverOutcome::Conflicted(_) | DriverOutcome::NeedsReview | DriverOutcome::Fallback { conflicted: true, .. } => 1,
        }
    }
}

/// Runs the driver. Errors mean nothing was written; neither they nor a fallback's reason name
/// the file (the caller does, with [`display_name`]).
pub fn run(options: &DriverOptions) -> Result<DriverReport> {
    let (base, ours, theirs) = read_inputs(options)?;
    let mut merge_options = options.merge.clone();
    if merge_options.now.is_none() {
        merge_options.now = Some(crate::timestamp::merge_now()?);
    }
    let wants_markers = merge_options.policy == super::ConflictPolicy::Markers;
    if options.detect_conflict_style && wants_markers {
        merge_options.markers.diff3 = git::conflict_style_shows_base();
    }
    if options.append_only && options.structural {
        let merged = super::merge_append_only(&base, &ours, &theirs);
        if !(merged == *ours && options.destination == Destination::ReplaceOurs) {
            write_result(options, |w| w.write_all(&merged))?;
        }
        return Ok(DriverReport {
            outcome: DriverOutcome::Clean,
            reports: Vec::new(),
            warnings: Vec::new(),
            renames: Vec::new(),
            labels: labels_of(&merge_options),
            rebase: false,
        });
    }
    let structural = if options.structural {
        merge(&base, &ours, &theirs, &merge_options).map_err(|u| describe(options, &u))
    } else {
        Err("BD_MERGE=0 is set".to_owned())
    };
    let report = match structural {
        Ok(merged) => {
            if let Some(id) = merged.written_twice.first() {
                bail!(
                    "the merge would write id {} on more than one line ({} such ids); nothing was written",
                    crate::record::key_label(id),
                    merged.written_twice.len()
                );
            }
            if !(merged.is_ours_unchanged() && options.destination == Destination::ReplaceOurs) {
                write_result(options, |w| merged.write_to(w))?;
            }
            let outcome = if merged.conflicts > 0 {
                DriverOutcome::Conflicted(merged.conflicts)
            } else if merged.needs_review {
                DriverOutcome::NeedsReview
            } else {
                DriverOutcome::Clean
            };
            let mut report = DriverReport {
                outcome,
                reports: merged.reports,
                warnings: merged.warnings,
                renames: merged.renames,
                labels: labels_of(&merge_options),
                rebase: false,
            };
            if !report.reports.is_empty() || !report.renames.is_empty() {
                log(options, &merge_options, &mut report);
            }
            name_renamed_sides(&mut report);
            report
        }
        Err(reason) => {
            if options.detect_conflict_style && !wants_markers {
                merge_options.markers.diff3 = git::conflict_style_shows_base();
            }
            line_merge(options, &merge_options, reason)?
        }
    };
    Ok(report)
}

/// The fallback for input that cannot be merged record by record (`reason` says why):
/// `git merge-file`, written like a structural result.
fn line_merge(options: &DriverOptions, merge_options: &MergeOptions, reason: String) -> Result<DriverReport> {
    let (content, conflicted) = merge_file(&options.ours, &options.base, &options.theirs, &merge_options.markers)
        .with_context(|| format!("{reason}; falling back to a line merge with `git merge-file`"))?;
    // Markers that came in with an input and survived the line merge are still markers:
    // never report such a result as clean.
    let conflicted = conflicted || content.split(|&b| b == b'\n').any(crate::record::is_conflict_marker);
    write_result(options, |w| w.write_all(&content))?;
    Ok(DriverReport {
        outcome: DriverOutcome::Fallback { reason, conflicted },
        reports: Vec::new(),
        warnings: Vec::new(),
        renames: Vec::new(),
        labels: labels_of(merge_options),
        rebase: false,
    })
}

/// Reads base, ours and theirs on two threads (copying a big file out of the page cache is a
/// good part of a merge); the first error in the order base, ours, theirs is the one reported.
fn read_inputs(options: &DriverOptions) -> Result<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    // Reading is copying from the page cache into fresh memory, as much work per byte in each
    // file: one thread per file shares it out evenly over the cores there are.
    let (base, ours, theirs) = std::thread::scope(|s| {
        let base = s.spawn(|| jsonl::read(&options.base));
        let theirs = s.spawn(|| jsonl::read(&options.theirs));
        let ours = jsonl::read(&options.ours);
        let join =
            |h: std::thread::ScopedJoinHandle<'_, Result<Vec<u8>>>| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (join(base), ours, join(theirs))
    });
    Ok((base?, ours?, theirs?))
}

fn labels_of(options: &MergeOptions) -> Labels {
    Labels { ours: options.markers.ours.clone(), theirs: options.markers.theirs.clone() }
}

/// Names the sides as the person knows them (a rebase's upstream and commit) and hands what was
/// dropped to the decision log; a log that cannot be written is one warning, never an error.
/// Outside a repository nothing is logged.
fn log(options: &DriverOptions, merge_options: &MergeOptions, report: &mut DriverReport) {
    let markers = &merge_options.markers;
    let Some(sides) = SideNames::detect(Path::new("."), Some(&markers.ours), Some(&markers.theirs)) else {
        return;
    };
    report.labels = sides.labels.clone();
    report.rebase = sides.rebase;
    if let Some(log) = &options.log {
        let path = display_name(options);
        let decisions = Decisions {
            dir: Path::new("."),
            command: &log.command,
            path: &path,
            sides: &sides,
            reports: &report.reports,
            renames: &report.renames,
            policy: Some(merge_options.policy),
        };
        if let Some(warning) = (log.keep)(&decisions) {
            report.warnings.push(warning);
        }
    }
}

/// The engine's rename warnings name the sides `ours` / `theirs`; the driver's report names them
/// as its title lines do ([`super::sides::describe`]): git's labels, and in a rebase
/// upstream and your commit.
fn name_renamed_sides(report: &mut DriverReport) {
    let name = |side| crate::record::printable(&super::sides::side_name(&report.labels, report.rebase, side), 200);
    for w in &mut report.warnings {
        if let Warning::Rename { rename, moved, kept } = w {
            *moved = name(rename.side);
            *kept = name(rename.side.other());
        }
    }
}

fn describe(options: &DriverOptions, u: &Unmergeable) -> String {
    let path = match u.input {
        super::Input::Base => &options.base,
        super::Input::Ours => &options.ours,
        super::Input::Theirs => &options.theirs,
    };
    format!("{} version ({}), line {}: {}", u.input, path.display(), u.line, u.problem)
}

/// The name to use in messages: `%P` when git gave it, else the ours path.
pub fn display_name(options: &DriverOptions) -> String {
    options.path_name.clone().unwrap_or_else(|| options.ours.display().to_string())
}

/// Writes the result. Git's `%A` is its own scratch file, read back at once, so it is replaced
/// atomically but not fsynced; a file named with `-o` is a user's file and is.
fn write_result(options: &DriverOptions, produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    match &options.destination {
        Destination::ReplaceOurs => crate::safe_fs::write_atomic_with(&options.ours, Durability::GitScratch, produce),
        Destination::File(path) => crate::safe_fs::write_atomic_with(path, Durability::Fsync, produce),
        Destination::Stdout => {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
            produce(&mut out).and_then(|()| out.flush()).context("writing the merge to stdout")
        }
    }
}

/// True when `arg` is a placeholder git did not expand (git before 2.44 passes `%S` literally).
pub fn is_unexpanded_placeholder(arg: &str) -> bool {
    arg.len() == 2 && arg.starts_with('%')
}
