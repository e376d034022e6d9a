//! Repairing an issues file that was merged where our driver did not run (README, "When git says CONFLICT"): a hosting
//! service's merge button, a clone without `bd-sync install`, `git stash pop`, `merge=union`.
//!
//! `resolve` finds the three sides again, from git's index stages (`:1:` `:2:` `:3:`) during a
//! conflicted merge, rebase, cherry-pick or stash pop, or else from the conflict markers left in
//! the file (diff3/zdiff3 markers carry the base; plain markers are merged against an empty base
//! for their hunks; lines outside hunks are common to all three), and merges them exactly as the
//! driver would have. `dedupe` turns an id left on several lines into one record.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::driver::{self, Destination, DriverOptions, DriverReport};
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
}

/// What `resolve` found (and, unless checking, did).
#[derive(Debug)]
pub enum Resolution {
    /// No index stages and no conflict markers: nothing to resolve.
    NothingToDo,
    /// The file was (or, with `check`, would be) merged from these sides.
    Merged {
        /// Where the sides came from.
        sides: Sides,
        /// The merge's report (`None` under `check`).
        report: Option<DriverReport>,
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

/// `bd-merge resolve`.
pub fn resolve(options: &ResolveOptions) -> Result<Resolution> {
    let (top, rel) = in_repository(&options.path)?;
    let (sides, [base, ours, theirs]) = match index_stages(&top, &rel)? {
        Some([b, o, t]) => (Sides::IndexStages, [b.unwrap_or_default(), o.unwrap_or_default(), t.unwrap_or_default()]),
        None => {
            let content = crate::jsonl::read(&options.path)?;
            match sides_from_markers(&content).with_context(|| format!("{}", options.path.display()))? {
                Some(sides) => (Sides::ConflictMarkers, sides),
                None => return Ok(Resolution::NothingToDo),
            }
        }
    };
    if options.check {
        return Ok(Resolution::Merged { sides, report: None });
    }
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
        path_name: Some(rel.clone()),
        structural: true,
        detect_conflict_style: true,
        merge: labelled(&top, sides, &options.merge),
        append_only: false,
        log: Some("bd-merge resolve".to_owned()),
    };
    let report = driver::run(&driver_options)?;
    if options.stage && report.exit_code() == 0 {
        git(&top, &["add", "--", &rel])?;
    }
    Ok(Resolution::Merged { sides, report: Some(report) })
}

/// The merge options with the sides labelled as git labels them, when the caller gave no labels:
/// during a merge `HEAD` and the merged branch, during a rebase (or cherry-pick) the commit being
/// applied, so the report lines and the merge log name them.
fn labelled(top: &Path, sides: Sides, merge: &MergeOptions) -> MergeOptions {
    let mut merge = merge.clone();
    let default = super::Markers::default();
    if sides != Sides::IndexStages || merge.markers.ours != default.ours || merge.markers.theirs != default.theirs {
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
    for (k, next) in copies[1..].iter().enumerate() {
        let before: Vec<String> = lines[..=k].iter().map(std::string::ToString::to_string).collect();
        let labels = crate::merge_log::Labels {
            ours: if k == 0 { format!("the copy on line {}", lines[0]) } else { format!("the copies on lines {}", before.join(", ")) },
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
    Some(acc)
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
