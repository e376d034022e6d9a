//! Writing what a merge decided to the log: where it ran ([`Context`]), its reports and renames
//! as entries, and the functions the driver, `resolve`, `dedupe` and import's three-way merge hand
//! their decisions to.

use std::path::{Path, PathBuf};

use super::format::{append, raw};
use super::types::{Context, Entry, Reason};
use crate::merge::repair::{DedupeRun, Deduped, History};
use crate::merge::{ConflictPolicy, DecisionLog, Decisions, Labels, Rename, Report, Side, SideNames, Warning};

/// `BD_MERGE_LOG_COMMAND` names the command a driver run works for (set by `update-branch`).
pub const COMMAND_ENV: &str = "BD_MERGE_LOG_COMMAND";

/// The command name the merge driver logs under (the log's `command` field is data: older logs
/// hold these names, and the hook's announcement counts the driver's entries by it).
pub const DRIVER_COMMAND: &str = "bd-merge";
/// The command name `resolve` logs under.
pub const RESOLVE_COMMAND: &str = "bd-merge resolve";
/// The command name `dedupe` logs under.
pub const DEDUPE_COMMAND: &str = "bd-merge dedupe";
/// The command name the cache's import logs its three-way merges under.
pub const IMPORT_COMMAND: &str = "bd-sync import";

pub(super) fn git_in(dir: &Path, args: &[&str]) -> Option<String> {
    crate::git::run(dir, args).ok().filter(|s| !s.is_empty())
}

/// `<git common dir>/beads` of the repository at `dir`; `None` outside a repository.
pub fn log_dir(dir: &Path) -> Option<PathBuf> {
    Some(crate::git::common_dir(dir)?.join("beads"))
}

impl Context {
    /// The context of a merge run in `dir` (the work tree root for the driver). `None` outside a
    /// repository: nothing is logged then. The sides are named as [`SideNames::detect`] names them.
    pub fn detect(dir: &Path, command: &str, path: &str, ours: Option<&str>, theirs: Option<&str>) -> Option<Context> {
        let log = log_dir(dir)?;
        let names = SideNames::detect(dir, ours, theirs)?;
        Some(Context::in_dir(log, dir, command, path, names))
    }

    /// The context of a merge run in `dir` whose sides are already named (the driver names them
    /// for its report lines whether or not it logs). `None` outside a repository.
    pub fn with_names(dir: &Path, command: &str, path: &str, names: SideNames) -> Option<Context> {
        Some(Context::in_dir(log_dir(dir)?, dir, command, path, names))
    }

    fn in_dir(log: PathBuf, dir: &Path, command: &str, path: &str, names: SideNames) -> Context {
        let command = std::env::var(COMMAND_ENV).ok().filter(|c| !c.is_empty()).unwrap_or_else(|| command.to_owned());
        let head = git_in(dir, &["rev-parse", "--verify", "--quiet", "HEAD"]);
        // An absolute path inside the work tree is logged relative to it, as git names files.
        let path = match (Path::new(path).is_absolute(), git_in(dir, &["rev-parse", "--show-toplevel"])) {
            (true, Some(top)) => {
                let real = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
                let top = std::fs::canonicalize(&top).unwrap_or_else(|_| PathBuf::from(&top));
                real.strip_prefix(&top).map(|p| p.display().to_string()).unwrap_or_else(|_| path.to_owned())
            }
            _ => path.to_owned(),
        };
        Context { dir: log, command, path, head, labels: names.labels, rebase: names.rebase }
    }

    /// How one side is named to a person: `upstream (main)` / `your commit 1a2b3c4` in a
    /// rebase, the label itself in a merge.
    pub fn side_name(&self, side: Side) -> String {
        crate::merge::sides::side_name(&self.labels, self.rebase, side)
    }
}

pub(super) fn side_word(side: Side) -> String {
    side.to_string()
}

/// The reason of a report, given the policy that was in force (`policy` is what decided what
/// the rules left open; `None` for `dedupe`).
pub(super) fn reason_of(report: &Report, policy: Option<ConflictPolicy>) -> Reason {
    let r = &report.resolution;
    if r.field == "(record)" && r.reason.contains("deleted") {
        return Reason::DeleteVsModify;
    }
    if r.field == "(record)" && r.reason.contains("moved") {
        return Reason::Rename;
    }
    match policy {
        None => Reason::Dedupe,
        Some(ConflictPolicy::Ours) => Reason::Ours,
        Some(ConflictPolicy::Theirs) => Reason::Theirs,
        Some(ConflictPolicy::Newest | ConflictPolicy::Markers) => Reason::Newest,
    }
}

/// The entries for what one merge dropped and renamed (sequence numbers and time filled in by
/// [`append`]).
pub fn entries(ctx: &Context, reports: &[Report], renames: &[Rename], policy: Option<ConflictPolicy>) -> Vec<Entry> {
    // What every entry of this merge shares; each entry below sets the rest.
    let shared = |id: &str| Entry {
        seq: 0,
        time: String::new(),
        command: ctx.command.clone(),
        path: ctx.path.clone(),
        head: ctx.head.clone(),
        labels: ctx.labels.clone(),
        rebase: ctx.rebase,
        id: id.to_owned(),
        field: String::new(),
        kept: None,
        kept_from: String::new(),
        dropped: None,
        dropped_from: String::new(),
        reason: Reason::Rename,
        detail: String::new(),
        cut: Vec::new(),
        omitted: 0,
        commit: None,
        unverified: false,
    };
    let mut out = Vec::with_capacity(reports.len() + renames.len());
    for report in reports {
        let r = &report.resolution;
        let other = if r.kept == Side::Ours { Side::Theirs } else { Side::Ours };
        out.push(Entry {
            field: r.field.clone(),
            kept: raw(r.kept_json.as_deref()),
            kept_from: side_word(r.kept),
            dropped: raw(r.dropped_json.as_deref()),
            dropped_from: side_word(other),
            reason: reason_of(report, policy),
            detail: r.reason.clone(),
            ..shared(&report.id)
        });
    }
    for rename in renames {
        let other = if rename.side == Side::Ours { Side::Theirs } else { Side::Ours };
        out.push(Entry {
            field: "id".to_owned(),
            kept: raw(Some(&crate::record::json_string(&rename.to, false))),
            kept_from: side_word(rename.side),
            dropped: raw(Some(&crate::record::json_string(&rename.from, false))),
            dropped_from: side_word(rename.side),
            reason: Reason::Rename,
            detail: format!(
                "two issues were created under {} ; {}'s (created later) is now {}, {}'s keeps the id",
                rename.from, rename.side, rename.to, other
            )
            .replace(" ;", ";"),
            ..shared(&rename.from)
        });
    }
    out
}

/// Logs what one merge dropped; `Some(warning)` when the log could not be written (the merge
/// stands). Nothing is logged when nothing was dropped.
pub fn record(ctx: &Context, reports: &[Report], renames: &[Rename], policy: Option<ConflictPolicy>) -> Option<Warning> {
    let list = entries(ctx, reports, renames, policy);
    append(&ctx.dir, list).err().map(|e| Warning::LogUnwritten { error: format!("{e:#}"), dedupe: false })
}

/// Logs what `bd-sync import`'s three-way merges of `file` dropped (ours: the cache, theirs: the
/// file); `Some(warning)` when the log could not be written. Outside a repository nothing is logged.
pub fn record_import(file: &Path, conflicts: &[Report], policy: ConflictPolicy) -> Option<Warning> {
    if conflicts.is_empty() {
        return None;
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut ctx = Context::detect(dir, IMPORT_COMMAND, &file.display().to_string(), None, None)?;
    ctx.labels = Labels { ours: "the cache".to_owned(), theirs: "the file".to_owned() };
    ctx.rebase = false;
    record(&ctx, conflicts, &[], Some(policy))
}

/// The merge log as the place a run keeps its decisions: what the driver and `resolve` are given
/// ([`crate::merge::driver::DriverOptions::log`]) to log under `command`.
pub fn decision_log(command: &str) -> DecisionLog {
    DecisionLog { command: command.to_owned(), keep }
}

/// Logs one run's decisions ([`Decisions`]); `Some(warning)` when the log could not be written.
/// Outside a repository nothing is logged.
pub fn keep(decisions: &Decisions<'_>) -> Option<Warning> {
    let ctx = Context::with_names(decisions.dir, decisions.command, decisions.path, decisions.sides.clone())?;
    record(&ctx, decisions.reports, decisions.renames, decisions.policy)
}

/// Logs what a [`crate::merge::repair::dedupe_with_history`] run dropped (under `bd-merge dedupe`, the redone merge's
/// values labelled with the parents' names): a warning for each part that could not be written.
pub fn record_dedupe(file: &Path, run: &DedupeRun) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if let History::Used { labels, .. } = &run.history {
        if !run.history_reports.is_empty() || !run.history_renames.is_empty() {
            let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if let Some(mut ctx) = Context::detect(dir, DEDUPE_COMMAND, &file.display().to_string(), None, None) {
                ctx.labels = labels.clone();
                ctx.rebase = false;
                warnings.extend(record(&ctx, &run.history_reports, &run.history_renames, Some(run.policy)));
            }
        }
    }
    warnings.extend(record_copies(file, &run.copies_merged));
    warnings
}

/// Logs what `bd-merge dedupe` dropped from the copies of each id in `file`; `Some(warning)` when
/// the log could not be written. Outside a repository nothing is logged.
pub(super) fn record_copies(file: &Path, done: &[Deduped]) -> Option<Warning> {
    if done.iter().all(|d| d.overridden.is_empty() && d.renamed.is_empty()) {
        return None;
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = Context::detect(dir, DEDUPE_COMMAND, &file.display().to_string(), None, None)?;
    let mut list = Vec::new();
    for (report, labels) in done.iter().flat_map(|d| d.overridden.iter()) {
        let ctx = Context { labels: labels.clone(), rebase: false, ..base.clone() };
        list.extend(entries(&ctx, std::slice::from_ref(report), &[], None));
    }
    for (rename, labels) in done.iter().flat_map(|d| d.renamed.iter()) {
        let ctx = Context { labels: labels.clone(), rebase: false, ..base.clone() };
        list.extend(entries(&ctx, &[], std::slice::from_ref(rename), None));
    }
    append(&base.dir, list).err().map(|e| Warning::LogUnwritten { error: format!("{e:#}"), dedupe: true })
}
