//! Bringing the cache up to date with the issues file, incrementally and in one transaction.
//!
//! An unchanged file (same size, inode and nanosecond mtime as at the last sync, or the same xxh3
//! hash) is a no-op. Otherwise only lines whose hash changed are parsed; ids gone from the file are
//! removed. An issue edited through SQL and also changed in the file is merged three-way (base:
//! the line as last synced; ours: the cache; theirs: the file) with the merge engine, and stays
//! dirty for the next export. Any malformed line aborts the whole import before anything is
//! written, unless `skip_invalid` is set.

use std::collections::HashMap;
use std::fmt;

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};
use rustc_hash::{FxHashMap, FxHashSet};

use super::codec::{self, store_issue, IssueRows};
use super::stamp::{freshness, record_file_state, Freshness};
use super::{line_hash, with_guard, Cache};
use crate::index::IdIndex;
use crate::merge::{self, ConflictPolicy, MergeOptions, Report};
use crate::record::{LineProblem, RawObject};
use crate::timestamp;

/// How to settle a field edited both in the cache and in the file. There is no `markers`: a cache
/// row cannot hold conflict markers, so the choice is made here, and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SyncPolicy {
    /// The side whose record has the later `updated_at`; ties go to the greater record.
    #[default]
    Newest,
    /// The cache's edit.
    Ours,
    /// The file's edit.
    Theirs,
}

impl From<SyncPolicy> for ConflictPolicy {
    fn from(p: SyncPolicy) -> ConflictPolicy {
        match p {
            SyncPolicy::Newest => ConflictPolicy::Newest,
            SyncPolicy::Ours => ConflictPolicy::Ours,
            SyncPolicy::Theirs => ConflictPolicy::Theirs,
        }
    }
}

/// Import settings.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Import the valid lines and list the invalid ones instead of aborting.
    pub skip_invalid: bool,
    /// Policy for three-way merges of issues edited in both the cache and the file.
    pub policy: SyncPolicy,
    /// Re-read the file even when its size, inode, mtime and hash are unchanged.
    pub force: bool,
    /// Show a progress bar (large files on a terminal).
    pub progress: bool,
}

/// A line that could not be imported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    /// The file, as given.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
    /// The start of the line.
    pub excerpt: String,
}

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}\n    {}", self.path, self.line, self.reason, self.excerpt)
    }
}

/// Import refused the file: every bad line is listed, and the cache was not touched.
#[derive(Debug, Clone)]
pub struct InvalidFile(pub Vec<BadLine>);

impl fmt::Display for InvalidFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{b}")?;
        }
        write!(f, "\nthe cache was left untouched (use --skip-invalid to import the other lines)")
    }
}

impl std::error::Error for InvalidFile {}

/// What an import did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ImportReport {
    /// Nothing had changed since the last sync.
    pub noop: bool,
    /// Ids new in the cache.
    pub added: Vec<String>,
    /// Ids whose record changed.
    pub changed: Vec<String>,
    /// Ids removed from the cache.
    pub removed: Vec<String>,
    /// Lines skipped under `--skip-invalid`.
    pub skipped: Vec<BadLine>,
    /// Ids on more than one line.
    pub duplicate_ids: Vec<String>,
    /// Ids edited in both the cache and the file, merged three-way (still dirty).
    pub merged: Vec<String>,
    /// Conflicts the three-way merges settled, one per field: `{id, field, kept: "ours"|"theirs",
    /// kept_value, other_value, reason}` (ours: the cache; theirs: the file).
    pub conflicts: Vec<Report>,
    /// Line numbers of imported records that repeat a key (the last value counts, as in bd).
    pub repeated_keys: Vec<usize>,
    /// Lines that are records but not issues (bd 1.0's header, memories, other `_type`s): not
    /// in the cache, kept in the file as they are.
    pub other_records: usize,
}

impl ImportReport {
    /// Every id added, changed or removed, sorted, for `--print-changed`.
    pub fn changed_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.added.iter().chain(&self.changed).chain(&self.removed).map(String::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

fn excerpt(bytes: &[u8]) -> String {
    crate::record::printable(&String::from_utf8_lossy(bytes), 80)
}

/// An SQL edit made another issue dirty between planning an import and writing it.
#[derive(Debug)]
struct DirtySetChanged;

impl std::fmt::Display for DirtySetChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the cache was edited during the import")
    }
}

impl std::error::Error for DirtySetChanged {}

/// Imports the issues file into the cache.
///
/// The plan (which rows are edited in the cache) is made before the write lock is taken, so an
/// SQL edit may land in between; the write then finds the dirty set changed, rolls back, and the
/// import starts over with the edit in view, so it is merged, never overwritten.
pub fn import(cache: &mut Cache, options: &ImportOptions) -> Result<ImportReport> {
    for _ in 0..16 {
        match import_once(cache, options) {
            Err(e) if e.is::<DirtySetChanged>() => continue,
            other => return other,
        }
    }
    anyhow::bail!("the cache kept being edited while importing (16 attempts); nothing was imported, try again")
}

fn import_once(cache: &mut Cache, options: &ImportOptions) -> Result<ImportReport> {
    let Some((content, content_hash)) = read_if_changed(cache, options.force)? else {
        return Ok(ImportReport { noop: true, ..ImportReport::default() });
    };
    let display = cache.paths.file.display().to_string();
    let index = IdIndex::new(&content);
    let mut report = ImportReport { other_records: index.other_records(), ..ImportReport::default() };
    let mut bad: Vec<BadLine> = index
        .bad
        .iter()
        .map(|(i, problem)| {
            let line = index.file.lines[*i];
            BadLine { path: display.clone(), line: line.number, reason: problem.to_string(), excerpt: excerpt(line.bytes) }
        })
        .collect();
    let state = CacheState::read(cache)?;
    let plans = plan(&index, &state, options.force, &display, &mut report, &mut bad);
    let rows = decode(&plans, options.progress, &display, &mut report, &mut bad);
    bad.sort_by_key(|b| b.line);
    if !bad.is_empty() && !options.skip_invalid {
        return Err(InvalidFile(bad).into());
    }
    report.skipped = bad;
    let in_file: FxHashSet<&str> = index.issues_in_order().map(|(id, _)| id.as_ref()).collect();
    let go_style = crate::record::uses_go_escapes(&content);
    let fraction = timestamp::fraction_style(rows.iter().flatten().filter_map(|r| match r.columns.get("updated_at") {
        Some(rusqlite::types::Value::Text(t)) => Some(t.as_str()),
        _ => None,
    }));
    apply(cache, &plans, &rows, &state, &in_file, Applied { content_hash, go_style, fraction, policy: options.policy }, &mut report)?;
    report.added.sort();
    report.changed.sort();
    report.removed.sort();
    Ok(report)
}

/// The file's bytes and hash, or `None` when it is the same as at the last sync (`force` reads it
/// anyway). A file touched but unchanged gets its new stamp recorded.
fn read_if_changed(cache: &mut Cache, force: bool) -> Result<Option<(Vec<u8>, i64)>> {
    let path = cache.paths.file.clone();
    Ok(match freshness(cache)? {
        Freshness::SameStamp if !force => None,
        Freshness::SameContent { hash, .. } if !force => {
            with_guard(&mut cache.conn, |tx| record_file_state(tx, &path, hash))?;
            None
        }
        Freshness::SameStamp => {
            let content = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let hash = line_hash(&content);
            Some((content, hash))
        }
        Freshness::SameContent { content, hash } | Freshness::Changed { content, hash } => Some((content, hash)),
    })
}

/// What the cache holds before an import: each issue's line hash (`None`: created through SQL and
/// never exported) and the dirty set (with the last synced line of issues deleted through SQL).
struct CacheState {
    hashes: FxHashMap<String, Option<i64>>,
    dirty: HashMap<String, Option<String>>,
}

impl CacheState {
    fn read(cache: &Cache) -> Result<CacheState> {
        let mut st = cache.conn.prepare("SELECT id, line_hash FROM issues")?;
        let hashes = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?)))?.collect::<rusqlite::Result<_>>()?;
        let mut st = cache.conn.prepare("SELECT issue_id, deleted_raw FROM dirty")?;
        let dirty = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        Ok(CacheState { hashes, dirty })
    }
}

/// Decides what each id in the file needs; only the lines of changed ids will be parsed.
fn plan<'a>(
    index: &'a IdIndex<'a>,
    state: &CacheState,
    force: bool,
    display: &str,
    report: &mut ImportReport,
    bad: &mut Vec<BadLine>,
) -> Vec<Plan<'a>> {
    let mut plans = Vec::new();
    for (id, slot) in index.issues_in_order() {
        let mut copies: Vec<(usize, &str)> = Vec::with_capacity(1);
        let mut invalid = false;
        for &i in slot.indexes() {
            let l = index.line(i);
            match std::str::from_utf8(l.bytes) {
                Ok(text) => copies.push((l.number, text)),
                Err(_) => {
                    bad.push(BadLine {
                        path: display.to_owned(),
                        line: l.number,
                        reason: LineProblem::InvalidUtf8.to_string(),
                        excerpt: excerpt(l.bytes),
                    });
                    invalid = true;
                }
            }
        }
        if invalid {
            continue;
        }
        let primary = if copies.len() > 1 {
            report.duplicate_ids.push(id.to_string());
            latest_copy(&copies)
        } else {
            0
        };
        let (number, line) = copies[primary];
        let duplicates: Vec<(usize, &str)> = copies.iter().enumerate().filter(|(k, _)| *k != primary).map(|(_, c)| *c).collect();
        let hash = line_hash(line.as_bytes());
        let stored_hash = state.hashes.get(id.as_ref());
        let dirty = state.dirty.get(id.as_ref());
        let in_sync =
            stored_hash == Some(&Some(hash)) || dirty.is_some_and(|d| d.as_deref().is_some_and(|raw| line_hash(raw.as_bytes()) == hash));
        // `--force` re-stores lines that look unchanged (to repair a cache), but reports only
        // the ids whose line really changed: what it prints feeds the notifier.
        let action = if in_sync && (!force || dirty.is_some()) {
            if duplicates.is_empty() {
                continue;
            }
            Action::KeepDuplicates
        } else if dirty.is_some() {
            Action::Merge
        } else {
            Action::Store { is_new: stored_hash.is_none(), changed: !in_sync }
        };
        plans.push(Plan { id: id.as_ref(), number, line, duplicates, action });
    }
    plans
}

/// Parses and decodes the planned lines on every core, before anything is written, so a bad line
/// leaves the cache untouched. `None` for plans that need no rows (and lines that failed).
fn decode(plans: &[Plan<'_>], progress: bool, display: &str, report: &mut ImportReport, bad: &mut Vec<BadLine>) -> Vec<Option<IssueRows>> {
    let progress = progress.then(|| {
        let bar = indicatif::ProgressBar::new(plans.len() as u64);
        bar.set_style(indicatif::ProgressStyle::with_template("importing {bar:40} {pos}/{len} issues").expect("valid template"));
        bar
    });
    let decoded: Vec<Option<Result<(IssueRows, bool), LineProblem>>> = parallel_map(
        plans,
        |p| match p.action {
            Action::KeepDuplicates => None,
            _ => Some(RawObject::parse_str(p.line).map(|obj| (IssueRows::from_record(&obj), !obj.repeated_keys().is_empty()))),
        },
        progress.as_ref(),
    );
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    let mut rows = Vec::with_capacity(plans.len());
    for (plan, d) in plans.iter().zip(decoded) {
        rows.push(match d {
            Some(Err(p)) => {
                bad.push(BadLine {
                    path: display.to_owned(),
                    line: plan.number,
                    reason: p.to_string(),
                    excerpt: excerpt(plan.line.as_bytes()),
                });
                None
            }
            Some(Ok((r, repeats_a_key))) => {
                if repeats_a_key {
                    report.repeated_keys.push(plan.number);
                }
                Some(r)
            }
            None => None,
        });
    }
    report.repeated_keys.sort_unstable();
    rows
}

/// Facts of the file that the write needs.
struct Applied {
    content_hash: i64,
    go_style: bool,
    fraction: Option<i64>,
    policy: SyncPolicy,
}

/// Writes the plans in one transaction, with the triggers silenced; fails with
/// [`DirtySetChanged`] (and writes nothing) if an SQL edit landed since `state` was read.
fn apply(
    cache: &mut Cache,
    plans: &[Plan<'_>],
    rows: &[Option<IssueRows>],
    state: &CacheState,
    in_file: &FxHashSet<&str>,
    file: Applied,
    report: &mut ImportReport,
) -> Result<()> {
    let path = cache.paths.file.clone();
    // A cold import into an empty cache writes every page once instead of through the WAL and a
    // checkpoint. Switching modes needs no other connection; if a reader is open, stay in WAL.
    let cold = state.hashes.is_empty() && plans.len() > 10_000;
    if cold {
        let _ = cache.conn.execute_batch("PRAGMA journal_mode = DELETE");
    }
    cache.conn.execute_batch("PRAGMA cache_size = -65536")?;
    let merge_options = MergeOptions { policy: file.policy.into(), ..MergeOptions::default() };
    let result = with_guard(&mut cache.conn, |tx| {
        let now: Vec<String> = {
            let mut st = tx.prepare("SELECT issue_id FROM dirty")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if now.len() != state.dirty.len() || now.iter().any(|id| !state.dirty.contains_key(id)) {
            return Err(DirtySetChanged.into());
        }
        // Into an empty cache, building each index once at the end (a sort) beats keeping it
        // up to date row by row.
        let indexes: Vec<(String, String)> = if cold {
            let mut st = tx.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        } else {
            Vec::new()
        };
        for (name, _) in &indexes {
            tx.execute_batch(&format!("DROP INDEX \"{}\"", name.replace('"', "\"\"")))?;
        }
        tx.execute("DELETE FROM duplicate_lines", [])?;
        let mut dup = tx.prepare_cached("INSERT INTO duplicate_lines (issue_id, line, raw) VALUES (?1, ?2, ?3)")?;
        for (plan, rows) in plans.iter().zip(rows) {
            for (n, raw) in &plan.duplicates {
                dup.execute(params![plan.id, *n as i64, raw])?;
            }
            let Some(rows) = rows else { continue }; // kept duplicates, or skipped as invalid
            match plan.action {
                Action::KeepDuplicates => {}
                Action::Store { is_new, changed } => {
                    store_issue(tx, plan.id, plan.line, line_hash(plan.line.as_bytes()), rows, is_new)?;
                    if is_new {
                        report.added.push(plan.id.to_owned())
                    } else if changed {
                        report.changed.push(plan.id.to_owned())
                    }
                }
                Action::Merge => merge_dirty(tx, plan.id, plan.line, file.go_style, &merge_options, &state.dirty, report)?,
            }
        }
        for (id, hash) in &state.hashes {
            if in_file.contains(id.as_str()) || hash.is_none() {
                continue;
            }
            if state.dirty.contains_key(id) {
                // Edited in the cache, deleted from the file: the edit wins (it is exported back).
                report.conflicts.push(Report {
                    id: id.clone(),
                    resolution: merge::Resolution {
                        field: "(record)".into(),
                        kept: merge::Side::Ours,
                        kept_value: "the cache's edited record".into(),
                        other_value: "its deletion from the file".into(),
                        reason: "the file deleted it, the cache changed it; a change is never lost".into(),
                    },
                });
                continue;
            }
            tx.prepare_cached("DELETE FROM issues WHERE id = ?1")?.execute([id])?;
            codec::remove_children(tx, id)?;
            report.removed.push(id.clone());
        }
        for (_, sql) in &indexes {
            tx.execute_batch(sql)?;
        }
        record_file_state(tx, &path, file.content_hash)?;
        tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('go_escapes', ?1)", [file.go_style])?;
        if let Some(fraction) = file.fraction {
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('timestamp_fraction', ?1)", [fraction])?;
        }
        Ok(())
    });
    if cold {
        let _ = cache.conn.execute_batch("PRAGMA journal_mode = WAL");
    }
    result
}

enum Action {
    Store { is_new: bool, changed: bool },
    Merge,
    KeepDuplicates,
}

struct Plan<'a> {
    id: &'a str,
    number: usize,
    line: &'a str,
    duplicates: Vec<(usize, &'a str)>,
    action: Action,
}

/// Index of the copy with the latest `updated_at` (the first on ties).
fn latest_copy(copies: &[(usize, &str)]) -> usize {
    let stamps: Vec<Option<String>> = copies
        .iter()
        .map(|(_, t)| {
            RawObject::parse_str(t).ok().and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(|s| s.into_owned()))
        })
        .collect();
    let mut best = 0;
    for k in 1..copies.len() {
        let better = match (&stamps[k], &stamps[best]) {
            (Some(a), Some(b)) => timestamp::compare(a, b).is_gt(),
            (Some(_), None) => true,
            _ => false,
        };
        if better {
            best = k;
        }
    }
    best
}

/// Maps `items` on two threads (the machines we target have two cores), keeping order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync, progress: Option<&indicatif::ProgressBar>) -> Vec<R> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 4);
    if items.len() < 256 || threads == 1 {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let f = &f;
                s.spawn(move || {
                    let out = part
                        .iter()
                        .enumerate()
                        .map(|(i, x)| {
                            if let Some(bar) = progress.filter(|_| i > 0 && i % 4096 == 0) {
                                bar.inc(4096);
                            }
                            f(x)
                        })
                        .collect::<Vec<R>>();
                    // What the loop did not count: the last (partial) block of 4096.
                    if let Some(bar) = progress {
                        bar.inc(((part.len().max(1) - 1) % 4096 + 1) as u64);
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("decoding does not panic")).collect()
    })
}

/// Three-way merge of an issue edited through SQL whose line also changed in the file.
fn merge_dirty(
    tx: &Transaction<'_>,
    id: &str,
    theirs: &str,
    go_style: bool,
    options: &MergeOptions,
    dirty: &HashMap<String, Option<String>>,
    report: &mut ImportReport,
) -> Result<()> {
    let base: Option<String> =
        match tx.query_row("SELECT raw FROM issues WHERE id = ?1", [id], |r| r.get::<_, Option<String>>(0)).optional()? {
            Some(raw) => raw,
            None => dirty.get(id).cloned().flatten(),
        };
    let ours = codec::render_issue(tx, id, go_style)?;
    let Some(ours) = ours else {
        // Deleted in the cache, changed in the file: the change wins.
        let obj = RawObject::parse_str(theirs).expect("validated");
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        report.changed.push(id.to_owned());
        report.conflicts.push(Report {
            id: id.to_owned(),
            resolution: merge::Resolution {
                field: "(record)".into(),
                kept: merge::Side::Theirs,
                kept_value: "the file's changed record".into(),
                other_value: "its deletion in the cache".into(),
                reason: "the cache deleted it, the file changed it; a change is never lost".into(),
            },
        });
        return Ok(());
    };
    let base_text = base.map(|b| format!("{b}\n")).unwrap_or_default();
    let (ours_text, theirs_text) = (format!("{ours}\n"), format!("{theirs}\n"));
    let merged = merge::merge(base_text.as_bytes(), ours_text.as_bytes(), theirs_text.as_bytes(), options)
        .map_err(|u| anyhow::anyhow!("merging {id}: {u}"))?;
    report.conflicts.extend(merged.reports.iter().cloned());
    let merged_bytes = merged.to_vec();
    let merged_line = String::from_utf8_lossy(&merged_bytes).trim_end_matches('\n').to_owned();
    let obj = RawObject::parse_str(&merged_line).map_err(|e| anyhow::anyhow!("merged record of {id}: {e}"))?;
    // The file's line is the new base; the merged values stay dirty for the next export.
    store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
    tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [id])?;
    report.merged.push(id.to_owned());
    Ok(())
}
