//! `resolve`: the three sides of a conflicted issues file found again (git's index stages, the
//! merge commit that committed the markers, or the markers themselves) and merged as the driver
//! would have merged them.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::super::driver::{self, Destination, DriverOptions, DriverReport};
use super::super::producing::{self, Made};
use super::super::{Decisions, Labels, Markers, MergeOptions, Report, Side, SideNames};
use super::shared::{in_repository, log_every_difference};
use super::types::{History, ResolveOptions, ResolveOutcome, Sides};
use crate::git::run as git;
use crate::jsonl::{self, Jsonl};
use crate::record::{is_conflict_marker, record_key, Key};

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
pub fn resolve(options: &ResolveOptions) -> Result<ResolveOutcome> {
    let (top, rel) = in_repository(&options.path)?;
    let (sides, three, history) = match index_stages(&top, &rel)? {
        Some([b, o, t]) => (Sides::IndexStages, [b.unwrap_or_default(), o.unwrap_or_default(), t.unwrap_or_default()], History::NotNeeded),
        None => {
            let content = crate::jsonl::read(&options.path)?;
            let Some(from_markers) = sides_from_markers(&content).with_context(|| format!("{}", options.path.display()))? else {
                return Ok(ResolveOutcome::NothingToDo);
            };
            if options.check {
                return Ok(ResolveOutcome::Merged { sides: Sides::ConflictMarkers, report: None, history: History::NotNeeded });
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
        return Ok(ResolveOutcome::Merged { sides, report: None, history });
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
) -> Result<ResolveOutcome> {
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
        log: options.log.clone(),
    };
    let mut report = driver::run(&driver_options).with_context(|| format!("merging {}", crate::record::escaped(rel)))?;
    if matches!(history, History::Missing(_)) && report.exit_code() == 0 {
        log_rule_decisions(options, &[&base, &ours, &theirs], &mut report);
    }
    if options.stage && report.exit_code() == 0 {
        git(top, &["add", "--", rel])?;
    }
    Ok(ResolveOutcome::Merged { sides, report: Some(report), history })
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
    let mut reports_of: std::collections::HashMap<&str, Vec<&Report>> = std::collections::HashMap::new();
    for r in &report.reports {
        reports_of.entry(r.id.as_str()).or_default().push(r);
    }
    for (key, o) in &ours {
        let (Some(t), Some(merged)) = (theirs.get(key), result.get(key)) else { continue };
        if base.contains_key(key) || o == t {
            continue;
        }
        let reported: Vec<(Report, Labels)> =
            reports_of.get(key.as_str()).map(|rs| rs.iter().map(|r| ((*r).clone(), report.labels.clone())).collect()).unwrap_or_default();
        // Each side's values the result does not hold: the kept value is the other side's (or
        // both sides' joined).
        for (side, copy) in [(Side::Ours, o), (Side::Theirs, t)] {
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
    let Some(log) = &options.log else { return };
    // The sides as the driver named them; whether this is a rebase step, asked as the driver asks.
    let Some(detected) = SideNames::detect(Path::new("."), None, None) else { return };
    let sides = SideNames { labels: report.labels.clone(), rebase: detected.rebase };
    let path = display_path(options);
    let decisions = Decisions {
        dir: Path::new("."),
        command: &log.command,
        path: &path,
        sides: &sides,
        reports: &extra,
        renames: &[],
        policy: Some(options.merge.policy),
    };
    if let Some(w) = (log.keep)(&decisions) {
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
    let default = Markers::default();
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
