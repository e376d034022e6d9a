//! Bringing the cache up to date with the issues file, incrementally and in one transaction.
//!
//! An unchanged file (same size, inode and nanosecond mtime as at the last sync, or the same xxh3
//! hash) is a no-op. Otherwise only lines whose hash changed are parsed; ids gone from the file are
//! removed. An issue edited through SQL and also changed in the file is merged three-way (base:
//! the line as last synced; ours: the cache; theirs: the file) with the merge engine, and stays
//! dirty for the next export. Any malformed line aborts the whole import before anything is
//! written, unless `skip_invalid` is set.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};

use super::{export, line_hash, store_issue, with_guard, Cache, Rows};
use crate::jsonl::Jsonl;
use crate::merge::{self, ConflictPolicy, MergeOptions, Report};
use crate::record::{record_id, LineProblem, RawObject};
use crate::timestamp;

/// Import settings.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Import the valid lines and list the invalid ones instead of aborting.
    pub skip_invalid: bool,
    /// Policy for three-way merges of issues edited in both the cache and the file.
    pub policy: ConflictPolicy,
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
    /// Conflicts the three-way merges settled, one per field.
    #[serde(serialize_with = "reports_as_strings")]
    pub conflicts: Vec<Report>,
}

fn reports_as_strings<S: serde::Serializer>(reports: &[Report], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(reports.iter().map(|r| r.to_string()))
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

/// The file facts kept in `meta` to tell whether it changed.
#[derive(Debug, PartialEq, Eq)]
struct FileStamp {
    size: i64,
    mtime_ns: i64,
    inode: i64,
}

fn stamp(path: &Path) -> Result<FileStamp> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos() as i64).unwrap_or(0);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta) as i64;
    #[cfg(not(unix))]
    let inode = 0;
    Ok(FileStamp { size: meta.len() as i64, mtime_ns, inode })
}

fn stored_stamp(cache: &Cache) -> Result<Option<(FileStamp, String, i64)>> {
    let get = |k: &str| -> Result<Option<rusqlite::types::Value>> { cache.meta(k) };
    let int = |v: Option<rusqlite::types::Value>| match v {
        Some(rusqlite::types::Value::Integer(i)) => Some(i),
        _ => None,
    };
    let path = match get("file_path")? {
        Some(rusqlite::types::Value::Text(p)) => p,
        _ => return Ok(None),
    };
    let (Some(size), Some(mtime_ns), Some(inode), Some(hash)) = (int(get("file_size")?), int(get("file_mtime_ns")?), int(get("file_inode")?), int(get("file_hash")?))
    else {
        return Ok(None);
    };
    Ok(Some((FileStamp { size, mtime_ns, inode }, path, hash)))
}

/// Records the file's current state as "in sync".
pub(crate) fn record_file_state(tx: &Transaction<'_>, path: &Path, content: &[u8]) -> Result<()> {
    let s = stamp(path)?;
    let mut st = tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
    st.execute(params!["file_path", path.display().to_string()])?;
    st.execute(params!["file_size", s.size])?;
    st.execute(params!["file_mtime_ns", s.mtime_ns])?;
    st.execute(params!["file_inode", s.inode])?;
    st.execute(params!["file_hash", line_hash(content)])?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    st.execute(params!["synced_at_unix", now])?;
    Ok(())
}

/// True when the file differs from what the cache last synced with.
pub fn file_changed_since_sync(cache: &Cache) -> Result<bool> {
    let Some((old, path, hash)) = stored_stamp(cache)? else { return Ok(true) };
    if path != cache.paths.file.display().to_string() {
        return Ok(true);
    }
    if stamp(&cache.paths.file)? == old {
        return Ok(false);
    }
    let content = std::fs::read(&cache.paths.file).with_context(|| format!("reading {}", cache.paths.file.display()))?;
    Ok(line_hash(&content) != hash)
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut s: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        s.push_str("...");
    }
    s
}

/// Imports the issues file into the cache.
pub fn import(cache: &mut Cache, options: &ImportOptions) -> Result<ImportReport> {
    let path = cache.paths.file.clone();
    let display = path.display().to_string();
    let stored = stored_stamp(cache)?;
    let now = stamp(&path)?;
    let same_path = stored.as_ref().is_some_and(|(_, p, _)| *p == display);
    if !options.force && same_path && stored.as_ref().is_some_and(|(s, _, _)| *s == now) {
        return Ok(ImportReport { noop: true, ..ImportReport::default() });
    }
    let content = std::fs::read(&path).with_context(|| format!("reading {display}"))?;
    if !options.force && same_path && stored.as_ref().is_some_and(|(_, _, h)| *h == line_hash(&content)) {
        with_guard(&mut cache.conn, |tx| record_file_state(tx, &path, &content))?;
        return Ok(ImportReport { noop: true, ..ImportReport::default() });
    }

    let file = Jsonl::split(&content);
    let mut report = ImportReport::default();
    let mut bad = Vec::new();
    let mut ids: Vec<(String, Vec<usize>)> = Vec::with_capacity(file.lines.len());
    let mut index: HashMap<String, usize> = HashMap::with_capacity(file.lines.len());
    for (i, line) in file.lines.iter().enumerate() {
        match record_id(line.bytes) {
            Ok(id) => match index.get(id.as_ref()) {
                Some(&k) => ids[k].1.push(i),
                None => {
                    index.insert(id.to_string(), ids.len());
                    ids.push((id.into_owned(), vec![i]));
                }
            },
            Err(problem) => bad.push(BadLine { path: display.clone(), line: line.number, reason: problem.to_string(), excerpt: excerpt(line.bytes) }),
        }
    }

    // `None`: created through SQL and never exported.
    let stored_hashes: HashMap<String, Option<i64>> = {
        let mut st = cache.conn.prepare("SELECT id, line_hash FROM issues")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let dirty: HashMap<String, Option<String>> = {
        let mut st = cache.conn.prepare("SELECT issue_id, deleted_raw FROM dirty")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };

    // Parse every changed line before writing anything, so a bad line leaves the cache untouched.
    enum Plan<'a> {
        Store { id: &'a str, line: &'a str, is_new: bool, duplicates: Vec<(usize, &'a str)> },
        Merge { id: &'a str, line: &'a str, duplicates: Vec<(usize, &'a str)> },
        Duplicates { id: &'a str, duplicates: Vec<(usize, &'a str)> },
    }
    let progress = options.progress.then(|| {
        let bar = indicatif::ProgressBar::new(ids.len() as u64);
        bar.set_style(indicatif::ProgressStyle::with_template("importing {bar:40} {pos}/{len} issues").expect("valid template"));
        bar
    });
    let mut plans = Vec::new();
    for (n, (id, lines)) in ids.iter().enumerate() {
        if let Some(bar) = &progress {
            if n % 4096 == 0 {
                bar.set_position(n as u64);
            }
        }
        let mut copies: Vec<(usize, &str)> = Vec::with_capacity(lines.len());
        let mut invalid = false;
        for &i in lines {
            let l = file.lines[i];
            match std::str::from_utf8(l.bytes).map_err(|_| LineProblem::InvalidUtf8) {
                Ok(text) => copies.push((l.number, text)),
                Err(p) => {
                    bad.push(BadLine { path: display.clone(), line: l.number, reason: p.to_string(), excerpt: excerpt(l.bytes) });
                    invalid = true;
                }
            }
        }
        if invalid || copies.is_empty() {
            continue;
        }
        // With several copies, the row is the one with the latest updated_at.
        let primary = if copies.len() > 1 {
            report.duplicate_ids.push(id.clone());
            let stamp_of = |t: &str| RawObject::parse_str(t).ok().and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(|s| s.into_owned()));
            let mut best = 0;
            for k in 1..copies.len() {
                let better = match (stamp_of(copies[k].1), stamp_of(copies[best].1)) {
                    (Some(a), Some(b)) => timestamp::compare(&a, &b).is_gt(),
                    (Some(_), None) => true,
                    _ => false,
                };
                if better {
                    best = k;
                }
            }
            best
        } else {
            0
        };
        let line = copies[primary].1;
        let duplicates: Vec<(usize, &str)> = copies.iter().enumerate().filter(|(k, _)| *k != primary).map(|(_, c)| *c).collect();
        let hash = line_hash(line.as_bytes());
        let stored_hash = stored_hashes.get(id.as_str());
        let in_sync = stored_hash == Some(&Some(hash)) || dirty.get(id.as_str()).is_some_and(|d| d.as_deref().is_some_and(|raw| line_hash(raw.as_bytes()) == hash));
        if in_sync && !options.force {
            if !duplicates.is_empty() {
                plans.push(Plan::Duplicates { id, duplicates });
            }
            continue;
        }
        if let Err(p) = RawObject::parse_str(line) {
            bad.push(BadLine { path: display.clone(), line: copies[primary].0, reason: p.to_string(), excerpt: excerpt(line.as_bytes()) });
            continue;
        }
        if dirty.contains_key(id.as_str()) {
            plans.push(Plan::Merge { id, line, duplicates });
        } else {
            plans.push(Plan::Store { id, line, is_new: stored_hash.is_none(), duplicates });
        }
    }
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    bad.sort_by_key(|b| b.line);
    if !bad.is_empty() && !options.skip_invalid {
        return Err(InvalidFile(bad).into());
    }
    report.skipped = bad;

    let in_file: HashSet<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
    let merge_options = MergeOptions { policy: options.policy, ..MergeOptions::default() };
    let style = export::go_style(&content);
    with_guard(&mut cache.conn, |tx| {
        tx.execute("DELETE FROM duplicate_lines", [])?;
        let mut dup = tx.prepare_cached("INSERT INTO duplicate_lines (issue_id, line, raw) VALUES (?1, ?2, ?3)")?;
        for plan in &plans {
            let (id, duplicates) = match plan {
                Plan::Store { id, duplicates, .. } | Plan::Merge { id, duplicates, .. } | Plan::Duplicates { id, duplicates } => (id, duplicates),
            };
            for (n, raw) in duplicates {
                dup.execute(params![id, *n as i64, raw])?;
            }
            match plan {
                Plan::Duplicates { .. } => {}
                Plan::Store { id, line, is_new, .. } => {
                    let obj = RawObject::parse_str(line).expect("validated above");
                    store_issue(tx, id, line, line_hash(line.as_bytes()), &Rows::from_record(&obj), *is_new)?;
                    if *is_new { report.added.push(id.to_string()) } else { report.changed.push(id.to_string()) }
                }
                Plan::Merge { id, line, .. } => {
                    merge_dirty(tx, id, line, style, &merge_options, &dirty, &mut report)?;
                }
            }
        }
        for (id, hash) in &stored_hashes {
            if in_file.contains(id.as_str()) || hash.is_none() {
                continue;
            }
            if dirty.contains_key(id) {
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
            super::remove_children(tx, id)?;
            report.removed.push(id.clone());
        }
        record_file_state(tx, &path, &content)?;
        Ok(())
    })?;
    report.added.sort();
    report.changed.sort();
    report.removed.sort();
    Ok(report)
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
    let base: Option<String> = match tx.query_row("SELECT raw FROM issues WHERE id = ?1", [id], |r| r.get::<_, Option<String>>(0)).optional()? {
        Some(raw) => raw,
        None => dirty.get(id).cloned().flatten(),
    };
    let ours = export::render_issue(tx, id, go_style)?;
    let Some(ours) = ours else {
        // Deleted in the cache, changed in the file: the change wins.
        let obj = RawObject::parse_str(theirs).expect("validated");
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &Rows::from_record(&obj), false)?;
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
    store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &Rows::from_record(&obj), false)?;
    tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [id])?;
    report.merged.push(id.to_owned());
    Ok(())
}
