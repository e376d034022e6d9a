//! Repairing an issues file that was merged where our driver did not run (README, "When git says CONFLICT"): a hosting
//! service's merge button, a clone without `bd-sync install`, `git stash pop`, `merge=union`.
//!
//! `resolve` finds the three sides again, from git's index stages (`:1:` `:2:` `:3:`) during a
//! conflicted merge, rebase, cherry-pick or stash pop, or else from the conflict markers left in
//! the file (diff3/zdiff3 markers carry the base; plain markers are merged against an empty base
//! for their hunks; lines outside hunks are common to all three), and merges them exactly as the
//! driver would have. `dedupe` turns an id left on several lines into one record.
//!
//! Markers and copies in a committed file have lost their base, so both repairs first look for
//! the merge commit that produced the file ([`super::producing`]) and, when the working file is
//! still that commit's, redo its merge from the parents and their merge base, exactly as the
//! driver would have merged them. Only without such history do they merge against an empty base,
//! and then they say why ([`History::Missing`]) and log every value they dropped.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::driver::{self, Destination, DriverOptions, DriverReport};
use super::producing::{self, Made, NoHistory};
use super::{merge, rename, MergeOptions};
use crate::git::run as git;
use crate::jsonl::{self, Jsonl};
use crate::merge_log;
use crate::record::{is_conflict_marker, record_key, Key};

/// Where the three sides came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    /// git's index stages of a conflicted path.
    IndexStages,
    /// The conflict markers in the file.
    ConflictMarkers,
    /// The parents of the merge commit that committed the markers, and their merge base.
    MergeCommit,
}

/// Whether a repair found the history that produced the file, and what came of it.
#[derive(Debug, Clone)]
pub enum History {
    /// Not looked for: git's index stages are the real sides, `--check` only reports, or there was
    /// nothing to repair.
    NotNeeded,
    /// The producing merge was redone from its parents and their merge base.
    Used {
        /// The merge commit, abbreviated.
        commit: String,
        /// The parents' merge base, abbreviated.
        merge_base: String,
        /// The parents' names.
        labels: merge_log::Labels,
    },
    /// No usable history: the repair merged against an empty base, for this reason.
    Missing(NoHistory),
}

impl History {
    fn used(found: &producing::MergeHistory) -> History {
        History::Used { commit: found.commit.clone(), merge_base: found.merge_base.clone(), labels: found.labels.clone() }
    }
}

/// What `resolve` found (and, unless checking, did).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one value per `resolve` run, returned once
pub enum Resolution {
    /// No index stages and no conflict markers: nothing to resolve.
    NothingToDo,
    /// The file was (or, with `check`, would be) merged from these sides.
    Merged {
        /// Where the sides came from.
        sides: Sides,
        /// The merge's report (`None` under `check`).
        report: Option<DriverReport>,
        /// For sides from conflict markers: whether the merge that committed them was redone.
        history: History,
    },
}

/// `bd-merge resolve` settings.
#[derive(Debug, Clone)]
pub struct ResolveOptions {
    /// The issues file.
    pub path: PathBuf,
    /// Policy and markers, as for the driver.
    pub merge: MergeOptions,
    /// `git add` the result when it has no conflicts left.
    pub stage: bool,
    /// Only say what would be done.
    pub check: bool,
}

/// The repository-relative path of `path` and the work tree it is in.
fn in_repository(path: &Path) -> Result<(PathBuf, String)> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let top = PathBuf::from(
        git(dir, &["rev-parse", "--show-toplevel"]).with_context(|| format!("{} is not in a git repository", path.display()))?,
    );
    let absolute = std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))?;
    let canonical_top = std::fs::canonicalize(&top).unwrap_or(top.clone());
    let canonical_dir = std::fs::canonicalize(absolute.parent().unwrap_or(Path::new("/"))).unwrap_or_default();
    let rel_dir = canonical_dir.strip_prefix(&canonical_top).with_context(|| format!("{} is outside {}", path.display(), top.display()))?;
    let rel = rel_dir.join(absolute.file_name().context("a file name")?);
    Ok((top, rel.to_string_lossy().replace('\\', "/")))
}

/// The index stages (1 base, 2 ours, 3 theirs) of a conflicted path; `None` when not conflicted.
fn index_stages(top: &Path, rel: &str) -> Result<Option<[Option<Vec<u8>>; 3]>> {
    let listing = git(top, &["ls-files", "-u", "--", rel])?;
    if listing.trim().is_empty() {
        return Ok(None);
    }
    let mut stages: [Option<Vec<u8>>; 3] = [None, None, None];
    for line in listing.lines() {
        let Some((meta, _path)) = line.split_once('\t') else { continue };
        let fields: Vec<&str> = meta.split_whitespace().collect();
        let (Some(sha), Some(stage)) = (fields.get(1), fields.get(2).and_then(|s| s.parse::<usize>().ok())) else { continue };
        if (1..=3).contains(&stage) {
            let out = std::process::Command::new("git")
                .current_dir(top)
                .args(["cat-file", "blob", sha])
                .output()
                .context("running git cat-file")?;
            if !out.status.success() {
                bail!("reading stage {stage} of {rel}: {}", String::from_utf8_lossy(&out.stderr).trim());
            }
            stages[stage - 1] = Some(out.stdout);
        }
    }
    Ok(Some(stages))
}

/// The three sides rebuilt from conflict markers; `None` when the file has none. Lines outside
/// hunks are common; a hunk without a base section (plain markers) has an empty base.
pub fn sides_from_markers(content: &[u8]) -> Result<Option<[Vec<u8>; 3]>> {
    #[derive(PartialEq)]
    enum At {
        Common,
        Ours,
        Base,
        Theirs,
    }
    let file = Jsonl::split(content);
    if !file.lines.iter().any(|l| is_conflict_marker(l.bytes)) {
        return Ok(None);
    }
    let mut sides: [Vec<&[u8]>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let mut at = At::Common;
    for line in &file.lines {
        let b = line.bytes;
        let marker = is_conflict_marker(b).then(|| b[0]);
        at = match (at, marker) {
            (At::Common, Some(b'<')) => At::Ours,
            (At::Ours, Some(b'|')) => At::Base,
            (At::Ours | At::Base, Some(b'=')) => At::Theirs,
            (At::Theirs, Some(b'>')) => At::Common,
            (state, None) => {
                match state {
                    At::Common => sides.iter_mut().for_each(|s| s.push(b)),
                    At::Ours => sides[1].push(b),
                    At::Base => sides[0].push(b),
                    At::Theirs => sides[2].push(b),
                }
                state
            }
            (_, Some(_)) => bail!("line {}: a conflict marker out of order; the hunks cannot be told apart", line.number),
        };
    }
    if at != At::Common {
        bail!("the file ends inside a conflict hunk; the sides cannot be told apart");
    }
    let join = |lines: &[&[u8]]| {
        let mut out = Vec::new();
        jsonl::write_lines(&mut out, file.layout, lines.iter().copied()).expect("writing to a Vec cannot fail");
        out
    };
    Ok(Some([join(&sides[0]), join(&sides[1]), join(&sides[2])]))
}

/// `bd-merge resolve`. Without index stages, the merge commit that committed the markers is
/// redone from its parents and their merge base when the repository has it and the file is still
/// that commit's; otherwise the sides come from the markers ([`History::Missing`] says why).
/// `check` reads no history and changes nothing.
pub fn resolve(options: &ResolveOptions) -> Result<Resolution> {
    let (top, rel) = in_repository(&options.path)?;
    let (sides, three, history) = match index_stages(&top, &rel)? {
        Some([b, o, t]) => (Sides::IndexStages, [b.unwrap_or_default(), o.unwrap_or_default(), t.unwrap_or_default()], History::NotNeeded),
        None => {
            let content = crate::jsonl::read(&options.path)?;
            let Some(from_markers) = sides_from_markers(&content).with_context(|| format!("{}", options.path.display()))? else {
                return Ok(Resolution::NothingToDo);
            };
            if options.check {
                return Ok(Resolution::Merged { sides: Sides::ConflictMarkers, report: None, history: History::NotNeeded });
            }
            match producing::find(&top, &rel, Made::ConflictMarkers, &content) {
                Ok(found) => {
                    let history = History::used(&found);
                    (Sides::MergeCommit, [found.base, found.ours, found.theirs], history)
                }
                Err(why) => (Sides::ConflictMarkers, from_markers, History::Missing(why)),
            }
        }
    };
    if options.check {
        return Ok(Resolution::Merged { sides, report: None, history });
    }
    resolve_sides(options, &top, &rel, sides, three, history)
}

/// Merges the three sides `resolve` found over the file, as the driver would, logging what it
/// dropped under `bd-merge resolve`.
fn resolve_sides(
    options: &ResolveOptions,
    top: &Path,
    rel: &str,
    sides: Sides,
    [base, ours, theirs]: [Vec<u8>; 3],
    history: History,
) -> Result<Resolution> {
    let scratch = tempfile::tempdir().context("creating a scratch directory")?;
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf> {
        let p = scratch.path().join(name);
        std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?;
        Ok(p)
    };
    let driver_options = DriverOptions {
        base: write("base.jsonl", &base)?,
        ours: write("ours.jsonl", &ours)?,
        theirs: write("theirs.jsonl", &theirs)?,
        destination: Destination::File(options.path.clone()),
        path_name: Some(rel.to_owned()),
        structural: true,
        detect_conflict_style: true,
        merge: labelled(top, sides, &history, &options.merge),
        append_only: false,
        log: Some("bd-merge resolve".to_owned()),
    };
    let mut report = driver::run(&driver_options)?;
    if matches!(history, History::Missing(_)) && report.exit_code() == 0 {
        log_rule_decisions(options, &[&base, &ours, &theirs], &mut report);
    }
    if options.stage && report.exit_code() == 0 {
        git(top, &["add", "--", rel])?;
    }
    Ok(Resolution::Merged { sides, report: Some(report), history })
}

/// Without history, a record both sides hold and the base lacks (a plain hunk's) was merged
/// against an empty base: every field on which a side differs from the result was decided, by the
/// policy (already logged by the driver) or by a field rule (a value one side lacks kept, sets
/// joined). The latter are logged here too, so `review` lists every field decided.
fn log_rule_decisions(options: &ResolveOptions, [base, ours, theirs]: &[&Vec<u8>; 3], report: &mut DriverReport) {
    let Ok(result) = crate::jsonl::read(&options.path) else { return };
    let lines_by_key = |content: &[u8]| -> std::collections::HashMap<String, Vec<u8>> {
        Jsonl::split(content)
            .lines
            .iter()
            .filter_map(|l| Some((Key::into_string_key(record_key(l.bytes).ok()?).into_owned(), l.bytes.to_vec())))
            .collect()
    };
    let (base, ours, theirs, result) = (lines_by_key(base), lines_by_key(ours), lines_by_key(theirs), lines_by_key(&result));
    let mut extra = Vec::new();
    // The driver's reports grouped by id once, not filtered again for every record.
    let mut reports_of: std::collections::HashMap<&str, Vec<&super::Report>> = std::collections::HashMap::new();
    for r in &report.reports {
        reports_of.entry(r.id.as_str()).or_default().push(r);
    }
    for (key, o) in &ours {
        let (Some(t), Some(merged)) = (theirs.get(key), result.get(key)) else { continue };
        if base.contains_key(key) || o == t {
            continue;
        }
        let reported: Vec<(super::Report, merge_log::Labels)> =
            reports_of.get(key.as_str()).map(|rs| rs.iter().map(|r| ((*r).clone(), report.labels.clone())).collect()).unwrap_or_default();
        // Each side's values the result does not hold: the kept value is the other side's (or
        // both sides' joined).
        for (side, copy) in [(super::Side::Ours, o), (super::Side::Theirs, t)] {
            let mut found = reported.clone();
            log_every_difference(&[copy], merged, &[0], &mut found, 0);
            extra.extend(found.into_iter().skip(reported.len()).map(|(mut r, _)| {
                r.resolution.kept = side.other();
                r.resolution.reason = "no base: both sides were merged field by field against an empty base".to_owned();
                r
            }));
        }
    }
    if extra.is_empty() {
        return;
    }
    let Some(ctx) = merge_log::Context::detect(Path::new("."), "bd-merge resolve", &display_path(options), None, None) else { return };
    let ctx = merge_log::Context { labels: report.labels.clone(), ..ctx };
    if let Some(w) = merge_log::record(&ctx, &extra, &[], Some(options.merge.policy)) {
        report.warnings.push(w);
    }
}

fn display_path(options: &ResolveOptions) -> String {
    options.path.display().to_string()
}

/// The merge options with the sides labelled as git labels them, when the caller gave no labels:
/// during a merge `HEAD` and the merged branch, during a rebase (or cherry-pick) the commit being
/// applied; from history, the merge commit's parents. So the report lines and the merge log name them.
fn labelled(top: &Path, sides: Sides, history: &History, merge: &MergeOptions) -> MergeOptions {
    let mut merge = merge.clone();
    let default = super::Markers::default();
    if merge.markers.ours != default.ours || merge.markers.theirs != default.theirs {
        return merge;
    }
    if let (Sides::MergeCommit, History::Used { labels, .. }) = (sides, history) {
        merge.markers.ours.clone_from(&labels.ours);
        merge.markers.theirs.clone_from(&labels.theirs);
        return merge;
    }
    if sides != Sides::IndexStages {
        return merge;
    }
    if let Ok(name) = git(top, &["name-rev", "--name-only", "--no-undefined", "MERGE_HEAD"]) {
        merge.markers.ours = "HEAD".to_owned();
        merge.markers.theirs = name;
    } else if let Ok(hash) = git(top, &["rev-parse", "--short", "--verify", "--quiet", "REBASE_HEAD"]) {
        merge.markers.theirs = hash;
    }
    merge
}

/// What `dedupe` did to one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deduped {
    /// The id.
    pub id: String,
    /// Its line numbers in the file.
    pub lines: Vec<usize>,
    /// How many distinct copies were merged into one.
    pub copies: usize,
    /// Values one copy had that the merged record does not (ours: the copies before, theirs:
    /// the copy on the line named in `labels`), for the merge log.
    pub overridden: Vec<(super::Report, crate::merge_log::Labels)>,
    /// Copies that were another issue created under the id, moved to a new id (ours: the
    /// earliest creation, which keeps the id; theirs: the moved copy), for the merge log.
    pub renamed: Vec<(super::Rename, crate::merge_log::Labels)>,
}

/// Merges every id that stands on several lines into one record, field by field (against an
/// empty base, so what the copies disagree on goes to the policy, `newest` by default); identical
/// repeats collapse. The record stays where its first copy was. Copies of a child id `P.N` with
/// different `created_at` are different issues (created under one id in two clones): the earliest
/// creation keeps the id and each later one moves to the next free child number under `P`. The
/// result gives no two comments one id and keeps derived counts true. Returns the new content and
/// what was done; a copy that is not a valid record leaves that id's lines as they are.
pub fn dedupe(content: &[u8], options: &MergeOptions) -> (Vec<u8>, Vec<Deduped>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut options = MergeOptions { partial: true, ..options.clone() };
    if options.now.is_none() {
        match crate::timestamp::merge_now() {
            Ok(now) => options.now = Some(now),
            Err(e) => warnings.push(e.to_string()),
        }
    }
    let file = Jsonl::split(content);
    let keys: Vec<Option<String>> =
        file.lines.iter().map(|l| record_key(l.bytes).ok().map(|k| Key::into_string_key(k).into_owned())).collect();
    let mut groups: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            groups.entry(k.as_str()).or_default().push(i);
        }
    }
    let mut next_child = rename::ChildNumbers::default();
    let ctx = DedupeCtx { file: &file, keys: &keys, options: &options, go_style: crate::record::uses_go_escapes(content) };
    let mut replace: std::collections::HashMap<usize, Vec<Vec<u8>>> = std::collections::HashMap::new();
    let mut done = Vec::new();
    let mut ids: Vec<(&str, &Vec<usize>)> = groups.iter().filter(|(_, v)| v.len() > 1).map(|(k, v)| (*k, v)).collect();
    ids.sort_by_key(|(_, v)| v[0]);
    for (id, indexes) in ids {
        let Some((merged_lines, deduped)) = ctx.one_id(id, indexes, &mut next_child, &mut warnings) else {
            continue;
        };
        replace.insert(indexes[0], merged_lines);
        for &i in &indexes[1..] {
            replace.insert(i, Vec::new());
        }
        done.push(deduped);
    }
    let mut lines: Vec<Vec<u8>> = file
        .lines
        .iter()
        .enumerate()
        .flat_map(|(i, l)| match replace.get(&i) {
            Some(merged) => merged.clone(),
            None => vec![l.bytes.to_vec()],
        })
        .collect();
    let renumbered = give_comments_distinct_ids(&mut lines, options.now);
    if renumbered > 0 {
        warnings.push(format!("{renumbered} comment(s) shared an id with another comment and were given new ids"));
    }
    let mut out = if done.is_empty() && renumbered == 0 {
        content.to_vec()
    } else {
        let mut out = Vec::with_capacity(content.len());
        jsonl::write_lines(&mut out, file.layout, lines.iter().map(Vec::as_slice)).expect("writing to a Vec cannot fail");
        out
    };
    // Derived counts follow what is written (and stale ones elsewhere are made true).
    if let Some(fixed) = super::derived::recompute_file(&out) {
        warnings.push("derived counts (dependency_count, dependent_count, comment_count, parent) recomputed".to_owned());
        out = fixed;
    }
    (out, done, warnings)
}

/// What `bd-merge dedupe` did to a file, with or without the history that produced it.
#[derive(Debug)]
pub struct DedupeRun {
    /// The repaired file.
    pub content: Vec<u8>,
    /// Each id that stood on several lines (for the report lines).
    pub done: Vec<Deduped>,
    /// Warnings that did not stop the repair.
    pub warnings: Vec<String>,
    /// Whether the producing merge was redone.
    pub history: History,
    /// What the redone merge settled by policy (empty without history).
    pub history_reports: Vec<super::Report>,
    /// Issues the redone merge moved to a new id (empty without history).
    pub history_renames: Vec<super::Rename>,
    /// What merging copies against an empty base dropped: every copy's without history, and with
    /// history only ids the parents themselves had on several lines.
    copies_merged: Vec<Deduped>,
    policy: super::ConflictPolicy,
}

/// `bd-merge dedupe` of the file at `path` holding `content`: when ids stand on several lines,
/// looks for the merge commit that produced the file ([`producing::find`]) and, when the file is
/// still that commit's, writes the parents' three-way merge (then merges any copies the parents
/// already had); otherwise merges the copies against an empty base ([`dedupe`]) and says why in
/// [`DedupeRun::history`]. Nothing is written: see [`log_dedupe_run`] for the merge log.
pub fn dedupe_with_history(path: &Path, content: &[u8], options: &MergeOptions) -> DedupeRun {
    let (out, done, warnings) = dedupe(content, options);
    let fallback = |history, out, warnings, done: Vec<Deduped>| DedupeRun {
        content: out,
        done: done.clone(),
        warnings,
        history,
        history_reports: Vec::new(),
        history_renames: Vec::new(),
        copies_merged: done,
        policy: options.policy,
    };
    if done.is_empty() {
        return fallback(History::NotNeeded, out, warnings, done);
    }
    let found = match in_repository(path) {
        Err(_) => Err(NoHistory::NotARepository),
        Ok((top, rel)) => producing::find(&top, &rel, Made::CopiesOfIds, content),
    };
    let found = match found {
        Ok(found) => found,
        Err(why) => return fallback(History::Missing(why), out, warnings, done),
    };
    let mut merge_options = options.clone();
    merge_options.markers.ours.clone_from(&found.labels.ours);
    merge_options.markers.theirs.clone_from(&found.labels.theirs);
    if merge_options.now.is_none() {
        merge_options.now = crate::timestamp::merge_now().ok();
    }
    let merged = match merge(&found.base, &found.ours, &found.theirs, &merge_options) {
        Ok(m) if m.conflicts == 0 && m.written_twice.is_empty() => m,
        Ok(_) => {
            let reason = "the merge left records it could not write as one line".to_owned();
            return fallback(History::Missing(NoHistory::Unmergeable { commit: found.commit.clone(), reason }), out, warnings, done);
        }
        Err(u) => {
            let reason = u.to_string();
            return fallback(History::Missing(NoHistory::Unmergeable { commit: found.commit.clone(), reason }), out, warnings, done);
        }
    };
    // Copies the parents already had (older tools) are still merged as copies.
    let (content, copies_merged, mut more) = dedupe(&merged.to_vec(), options);
    let mut warnings: Vec<String> = merged.warnings.clone();
    warnings.append(&mut more);
    DedupeRun {
        content,
        done,
        warnings,
        history: History::used(&found),
        history_reports: merged.reports.clone(),
        history_renames: merged.renames.clone(),
        copies_merged,
        policy: options.policy,
    }
}

/// Logs what a [`dedupe_with_history`] run dropped (under `bd-merge dedupe`, the redone merge's
/// values labelled with the parents' names); `Some(warning)` when the log could not be written.
pub fn log_dedupe_run(file: &Path, run: &DedupeRun) -> Option<String> {
    let mut warnings = Vec::new();
    if let History::Used { labels, .. } = &run.history {
        if !run.history_reports.is_empty() || !run.history_renames.is_empty() {
            let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if let Some(mut ctx) = merge_log::Context::detect(dir, "bd-merge dedupe", &file.display().to_string(), None, None) {
                ctx.labels = labels.clone();
                ctx.rebase = false;
                warnings.extend(merge_log::record(&ctx, &run.history_reports, &run.history_renames, Some(run.policy)));
            }
        }
    }
    warnings.extend(log_dedupe(file, &run.copies_merged));
    (!warnings.is_empty()).then(|| warnings.join("; "))
}

/// What every id's dedupe reads: the file, each line's key, the merge options, the file's escapes.
struct DedupeCtx<'c> {
    file: &'c Jsonl<'c>,
    keys: &'c [Option<String>],
    options: &'c MergeOptions,
    go_style: bool,
}

impl DedupeCtx<'_> {
    /// Merges the copies of one id (on lines `indexes`) into the lines that replace them, or
    /// `None` (with a warning) when a copy is not a record that can be merged.
    fn one_id(
        &self,
        id: &str,
        indexes: &[usize],
        next_child: &mut rename::ChildNumbers,
        warnings: &mut Vec<String>,
    ) -> Option<(Vec<Vec<u8>>, Deduped)> {
        let file = self.file;
        // Each distinct copy once, with the line it first stands on.
        let mut first_line: rustc_hash::FxHashMap<&[u8], usize> = rustc_hash::FxHashMap::default();
        let mut distinct: Vec<&[u8]> = Vec::new();
        for &i in indexes {
            if let std::collections::hash_map::Entry::Vacant(v) = first_line.entry(file.lines[i].bytes) {
                v.insert(file.lines[i].number);
                distinct.push(file.lines[i].bytes);
            }
        }
        let label = crate::record::key_label(id).into_owned();
        let numbers: Vec<usize> = indexes.iter().map(|&i| file.lines[i].number).collect();
        let unmergeable = || format!("{label} (lines {numbers:?}): a copy is not a record that can be merged; left as it is");
        let Some(issues) = issues_among(id, &distinct) else {
            warnings.push(unmergeable());
            return None;
        };
        let mut merged_lines = Vec::with_capacity(issues.len());
        let mut overridden = Vec::new();
        let line_of = |copy: &[u8]| first_line.get(copy).copied().unwrap_or(0);
        for copies in &issues {
            let numbers: Vec<usize> = copies.iter().map(|c| line_of(c)).collect();
            match merge_copies(copies, self.options, &numbers, &mut overridden) {
                Some(line) => merged_lines.push(line),
                None => {
                    warnings.push(unmergeable());
                    return None;
                }
            }
        }
        let mut renamed = Vec::new();
        if merged_lines.len() > 1 {
            let first_lines: Vec<usize> = issues.iter().map(|copies| copies.first().map(|c| line_of(c)).unwrap_or(0)).collect();
            renamed = self.split_issues(id, &label, &distinct, &mut merged_lines, &first_lines, next_child, warnings);
        }
        Some((merged_lines, Deduped { id: label, lines: numbers, copies: distinct.len(), overridden, renamed }))
    }

    /// Two issues under one child id: the first keeps the id, stamped past every copy; each
    /// other one moves to the next free child number under the same parent.
    #[allow(clippy::too_many_arguments)]
    fn split_issues(
        &self,
        id: &str,
        label: &str,
        distinct: &[&[u8]],
        merged_lines: &mut [Vec<u8>],
        first_lines: &[usize],
        next_child: &mut rename::ChildNumbers,
        warnings: &mut Vec<String>,
    ) -> Vec<(super::Rename, crate::merge_log::Labels)> {
        let stamps: Vec<Option<String>> = distinct.iter().map(|l| stamp_of(l)).collect();
        if let Ok(obj) = crate::record::RawObject::parse(&merged_lines[0]) {
            let mut entries = obj.entries.clone();
            if super::writer::bump_updated_at(&mut entries, &stamps, self.options.now) {
                merged_lines[0] = crate::record::render_entries(&entries, obj.colon, obj.comma).into_bytes();
            }
        }
        let (parent, _) = rename::child_number(id).expect("only child ids are split");
        let mut renamed = Vec::new();
        if !next_child.tracks(parent) {
            // One pass over the file's ids per parent (the first split under it), checked numbers.
            next_child.track(parent);
            for key in self.keys.iter().flatten() {
                next_child.note(key);
            }
        }
        for (k, line) in merged_lines.iter_mut().enumerate().skip(1) {
            let Some(n) = next_child.next_free(parent) else {
                warnings.push(format!(
                    "{label}: its copies are different issues, but no child number under {} is free; left as they are",
                    crate::record::key_label(parent)
                ));
                continue;
            };
            let to = format!("{parent}.{n}");
            if let Some(text) = rename::rename_record(line, id, &to, self.go_style) {
                *line = text.into_bytes();
            }
            warnings.push(format!(
                "{label}: its copies are different issues (created at different times); the later one is now {}",
                crate::record::key_label(&to)
            ));
            renamed.push((
                super::Rename { from: id.to_owned(), to, side: super::Side::Theirs },
                crate::merge_log::Labels {
                    ours: format!("the copy on line {}", first_lines[0]),
                    theirs: format!("the copy on line {}", first_lines[k]),
                },
            ));
        }
        renamed
    }
}

/// Gives comments that share an id with another comment, file-wide, new ids (as the merge driver
/// writes them); returns how many were renumbered.
fn give_comments_distinct_ids(lines: &mut [Vec<u8>], now: Option<crate::timestamp::Instant>) -> usize {
    let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
    let changes = super::writer::shared_comment_ids(&refs);
    let mut by_line: std::collections::HashMap<usize, Vec<&super::writer::Renumbering>> = std::collections::HashMap::new();
    for (line, change) in &changes {
        by_line.entry(*line).or_default().push(change);
    }
    let mut renumbered = Vec::new();
    for (i, mine) in by_line {
        let stamps = vec![stamp_of(&lines[i])];
        if let Some(text) = super::writer::apply_renumbering(&lines[i], &mine, &stamps, now) {
            renumbered.push((i, text.into_bytes()));
        }
    }
    for (i, text) in renumbered {
        lines[i] = text;
    }
    changes.len()
}

/// A record line's `updated_at`.
fn stamp_of(line: &[u8]) -> Option<String> {
    crate::record::RawObject::parse(line).ok()?.get("updated_at").and_then(crate::record::parse_json_str).map(std::borrow::Cow::into_owned)
}

/// The distinct copies of one id grouped by issue: one group, unless the id is a child id `P.N`
/// and the copies were created at different times (then one group per creation, earliest first).
/// `None` when a copy is not a record.
fn issues_among<'c>(id: &str, copies: &[&'c [u8]]) -> Option<Vec<Vec<&'c [u8]>>> {
    if rename::child_number(id).is_none() {
        return Some(vec![copies.to_vec()]);
    }
    let values: Vec<serde_json::Value> = copies.iter().map(|c| serde_json::from_slice(c).ok()).collect::<Option<_>>()?;
    // Two copies are one issue when their creation is the same instant (the same text, when one
    // does not parse); a copy without `created_at` belongs to the first issue. Grouped through a
    // map of creations, not by comparing each copy with every issue found so far.
    #[derive(PartialEq, Eq, Hash)]
    enum Created {
        At(i64, u32),
        Text(String),
    }
    let created = |v: &serde_json::Value| -> Option<Created> {
        let text = v.get("created_at")?.as_str()?;
        Some(crate::timestamp::parse(text).map_or_else(|| Created::Text(text.to_owned()), |t| Created::At(t.seconds, t.nanos)))
    };
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_creation: rustc_hash::FxHashMap<Created, usize> = rustc_hash::FxHashMap::default();
    let mut first_has_none = false;
    for (i, value) in values.iter().enumerate() {
        let key = created(value);
        if groups.is_empty() {
            first_has_none = key.is_none();
            if let Some(key) = key {
                by_creation.insert(key, 0);
            }
            groups.push(vec![i]);
            continue;
        }
        let group = match key {
            _ if first_has_none => Some(0),
            None => Some(0),
            Some(key) => match by_creation.get(&key) {
                Some(&g) => Some(g),
                None => {
                    by_creation.insert(key, groups.len());
                    None
                }
            },
        };
        match group {
            Some(g) => groups[g].push(i),
            None => groups.push(vec![i]),
        }
    }
    groups.sort_by(|a, b| rename::concurrent_creation(&values[a[0]], &values[b[0]]).unwrap_or(std::cmp::Ordering::Equal));
    Some(groups.into_iter().map(|g| g.into_iter().map(|i| copies[i]).collect()).collect())
}

/// The copies of one issue merged into one line (against an empty base); what the merge of each
/// copy into the ones before it dropped goes to `overridden`, labelled with the copies' lines.
fn merge_copies(
    copies: &[&[u8]],
    options: &MergeOptions,
    lines: &[usize],
    overridden: &mut Vec<(super::Report, crate::merge_log::Labels)>,
) -> Option<Vec<u8>> {
    let mut acc = copies[0].to_vec();
    // Only this issue's reports count as already decided below (`overridden` holds earlier
    // issues' too: reading all of them per issue made many issues under one id quadratic).
    let start = overridden.len();
    for (k, next) in copies[1..].iter().enumerate() {
        // The copies merged so far named by their first and last line, never listed one by one
        // (a list per step is quadratic in the number of copies).
        let labels = crate::merge_log::Labels {
            ours: match k {
                0 => format!("the copy on line {}", lines[0]),
                1 => format!("the copies on lines {}, {}", lines[0], lines[1]),
                _ => format!("the {} copies on lines {} to {}", k + 1, lines[0], lines[k]),
            },
            theirs: format!("the copy on line {}", lines[k + 1]),
        };
        let (mut a, mut b) = (acc.clone(), next.to_vec());
        a.push(b'\n');
        b.push(b'\n');
        match merge(b"", &a, &b, options) {
            Ok(m) if m.conflicts == 0 => {
                overridden.extend(m.reports.iter().map(|r| (r.clone(), labels.clone())));
                let mut out = m.to_vec();
                while out.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
                    out.pop();
                }
                acc = out;
            }
            _ => return None,
        }
    }
    log_every_difference(copies, &acc, lines, overridden, start);
    Some(acc)
}

/// Without a base, every field on which a copy differs from the merged record was decided, even
/// where the field rules (not the policy) decided it: a value one copy lacks is kept, a set takes
/// both copies' members. Each such field not already reported is logged against that copy, so
/// `bd-merge review` lists it and `--restore` can put the copy's value back (`updated_at` is left
/// out: the merge stamps it).
/// Only `overridden[from..]` (the reports of this record's merge) count as already reported.
fn log_every_difference(
    copies: &[&[u8]],
    merged: &[u8],
    lines: &[usize],
    overridden: &mut Vec<(super::Report, merge_log::Labels)>,
    from: usize,
) {
    let Ok(serde_json::Value::Object(merged)) = serde_json::from_slice::<serde_json::Value>(merged) else { return };
    let id = merged.get("id").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
    let reported: std::collections::HashSet<String> =
        overridden[from.min(overridden.len())..].iter().map(|(r, _)| r.resolution.field.clone()).collect();
    for (copy, &line) in copies.iter().zip(lines) {
        let Ok(serde_json::Value::Object(copy)) = serde_json::from_slice::<serde_json::Value>(copy) else { continue };
        let fields: Vec<&String> = merged.keys().chain(copy.keys().filter(|k| !merged.contains_key(*k))).collect();
        for field in fields {
            let (kept, dropped) = (merged.get(field), copy.get(field));
            let skip = field == "updated_at"
                || reported.contains(field)
                || (reported.contains("status") && super::field::STATUS_GROUP.contains(&field.as_str()));
            if kept == dropped || skip {
                continue;
            }
            let json = |v: Option<&serde_json::Value>| v.map(serde_json::Value::to_string);
            let excerpt = |v: &Option<String>| v.as_deref().map_or_else(|| "(absent)".to_owned(), |t| crate::record::printable(t, 45));
            let (kept_json, dropped_json) = (json(kept), json(dropped));
            let resolution = super::Resolution {
                field: field.clone(),
                kept: super::Side::Ours,
                kept_value: excerpt(&kept_json),
                other_value: excerpt(&dropped_json),
                reason: "no base: the copies were merged field by field against an empty base".to_owned(),
                kept_json,
                dropped_json,
            };
            let labels = merge_log::Labels { ours: "the merged copies".to_owned(), theirs: format!("the copy on line {line}") };
            overridden.push((super::Report { id: id.clone(), resolution }, labels));
        }
    }
}

/// Logs what `bd-merge dedupe` dropped from the copies of each id in `file`; `Some(warning)` when
/// the log could not be written. Outside a repository nothing is logged.
pub fn log_dedupe(file: &Path, done: &[Deduped]) -> Option<String> {
    if done.iter().all(|d| d.overridden.is_empty() && d.renamed.is_empty()) {
        return None;
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let base = merge_log::Context::detect(dir, "bd-merge dedupe", &file.display().to_string(), None, None)?;
    let mut list = Vec::new();
    for (report, labels) in done.iter().flat_map(|d| d.overridden.iter()) {
        let ctx = merge_log::Context { labels: labels.clone(), rebase: false, ..base.clone() };
        list.extend(merge_log::entries(&ctx, std::slice::from_ref(report), &[], None));
    }
    for (rename, labels) in done.iter().flat_map(|d| d.renamed.iter()) {
        let ctx = merge_log::Context { labels: labels.clone(), rebase: false, ..base.clone() };
        list.extend(merge_log::entries(&ctx, &[], std::slice::from_ref(rename), None));
    }
    merge_log::append(&base.dir, list)
        .err()
        .map(|e| format!("could not write the merge log ({e:#}); `bd-merge review` will not show this dedupe"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_come_back_from_plain_and_diff3_markers() {
        let plain =
            b"{\"id\":\"a\"}\n<<<<<<< HEAD\n{\"id\":\"b\",\"v\":1}\n=======\n{\"id\":\"b\",\"v\":2}\n>>>>>>> feature\n{\"id\":\"c\"}\n";
        let [b, o, t] = sides_from_markers(plain).expect("well formed").expect("has markers");
        assert_eq!(b, b"{\"id\":\"a\"}\n{\"id\":\"c\"}\n");
        assert_eq!(o, b"{\"id\":\"a\"}\n{\"id\":\"b\",\"v\":1}\n{\"id\":\"c\"}\n");
        assert_eq!(t, b"{\"id\":\"a\"}\n{\"id\":\"b\",\"v\":2}\n{\"id\":\"c\"}\n");
        let diff3 = b"<<<<<<< ours\n{\"id\":\"b\",\"v\":1}\n||||||| base\n{\"id\":\"b\",\"v\":0}\n=======\n{\"id\":\"b\",\"v\":2}\n>>>>>>> theirs\n";
        let [b, _, _] = sides_from_markers(diff3).expect("well formed").expect("has markers");
        assert_eq!(b, b"{\"id\":\"b\",\"v\":0}\n");
        assert!(sides_from_markers(b"<<<<<<< ours\n{\"id\":\"b\"}\n").is_err());
        assert!(sides_from_markers(b"{\"id\":\"b\"}\n").expect("fine").is_none());
    }

    #[test]
    fn dedupe_merges_copies_field_by_field() {
        let content = b"{\"id\":\"a\",\"title\":\"T\",\"labels\":[\"x\"],\"updated_at\":\"2026-01-01T00:00:00Z\"}\n{\"id\":\"b\"}\n{\"id\":\"a\",\"title\":\"T\",\"labels\":[\"y\"],\"updated_at\":\"2026-01-02T00:00:00Z\"}\n{\"id\":\"b\"}\n";
        let (out, done, warnings) = dedupe(content, &MergeOptions::default());
        assert!(warnings.is_empty());
        assert_eq!(done.len(), 2);
        let text = String::from_utf8(out).expect("utf8");
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.starts_with("{\"id\":\"a\",\"title\":\"T\",\"labels\":[\"x\",\"y\"]"), "{text}");
    }
}
