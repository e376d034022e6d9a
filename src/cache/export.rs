//! Writing the cache back to the issues file.
//!
//! Export walks the file as it is on disk (import first brings the cache up to date with it), so
//! every clean record is copied byte for byte and the file keeps its order. Only issues in the
//! dirty set are read from SQLite and rendered by patching their stored line: key order, unknown
//! keys and untouched values keep their exact text; changed columns are re-encoded in the file's
//! escape style. The file is replaced atomically, and not at all when the bytes would not change.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result};

use super::codec::{self, render_issue};
use super::{import, line_hash, stamp, with_guard, Cache};
use crate::jsonl::{self, Jsonl, Layout};
use crate::record::{kind_rank, record_key, Key};

/// What an export did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ExportReport {
    /// Issues written from the cache's edits.
    pub written: Vec<String>,
    /// Issues removed from the file (deleted through SQL).
    pub removed: Vec<String>,
    /// True when the file's bytes did not change (no write happened).
    pub unchanged: bool,
    /// What the import that ran first (the file had changed) reported.
    pub import: Option<import::ImportReport>,
}

/// Exports the cache's edits to the issues file; with `stage`, `git add`s it when it changed
/// (both or neither: a failed stage puts the old file back and keeps the edits dirty).
pub fn export(cache: &mut Cache, options: &import::ImportOptions, stage: bool) -> Result<ExportReport> {
    let mut report = ExportReport::default();
    if cache.paths.file.exists() {
        let imported = import::import(cache, options)?;
        if !imported.noop {
            report.import = Some(imported);
        }
    }
    let dirty: Vec<String> = {
        let mut st = cache.conn.prepare("SELECT issue_id FROM dirty ORDER BY issue_id")?;
        let rows = st.query_map([], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let path = cache.paths.file.clone();
    let content = match std::fs::read(&path) {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if dirty.is_empty() && !content.is_empty() {
        report.unchanged = true;
        return Ok(report);
    }
    let style = crate::record::uses_go_escapes(&content);
    let mut rendered: HashMap<String, Option<String>> = HashMap::with_capacity(dirty.len());
    for id in &dirty {
        rendered.insert(id.clone(), render_issue(&cache.conn, id, style)?);
    }
    let file = Jsonl::split(&content);
    let layout = if content.is_empty() { Layout::default() } else { file.layout };
    // (id, line) in file order; clean lines borrowed from the file as they are.
    let mut out: Vec<(Cow<'_, str>, &[u8])> = Vec::with_capacity(file.lines.len() + rendered.len());
    let mut sorted = true;
    let mut seen_dirty: HashSet<&str> = HashSet::new();
    // The bytes change only if a replaced line differs, or a line is removed or added.
    let mut changed = false;
    for line in &file.lines {
        // Issues by id; bd 1.0's header and memory lines by their kind's place (never matched
        // against the dirty set, which holds issue ids only).
        let id = record_key(line.bytes).map(Key::into_string_key).unwrap_or(Cow::Borrowed(""));
        if out.last().is_some_and(|(prev, _)| (kind_rank(prev), prev.as_ref()) > (kind_rank(&id), id.as_ref())) {
            sorted = false;
        }
        match rendered.get_key_value(id.as_ref()) {
            Some((key, r)) if seen_dirty.insert(key.as_str()) => match r {
                Some(text) => {
                    changed |= text.as_bytes() != line.bytes;
                    out.push((id, text.as_bytes()));
                }
                None => changed = true,
            },
            _ => out.push((id, line.bytes)),
        }
    }
    let mut new_ids: Vec<&String> = rendered.keys().filter(|id| !seen_dirty.contains(id.as_str())).collect();
    new_ids.sort();
    let mut added = Vec::new();
    for id in new_ids {
        if let Some(Some(text)) = rendered.get(id) {
            added.push((Cow::Borrowed(id.as_str()), text.as_bytes()));
        }
    }
    let unchanged = !changed && added.is_empty();
    if sorted && !added.is_empty() {
        // Place new ids in id order within the sorted file.
        out.extend(added);
        out.sort_by(|a, b| (kind_rank(&a.0), &a.0).cmp(&(kind_rank(&b.0), &b.0)));
    } else {
        out.extend(added);
    }
    for (id, r) in &rendered {
        match r {
            Some(_) => report.written.push(id.clone()),
            None if seen_dirty.contains(id.as_str()) => report.removed.push(id.clone()),
            None => {}
        }
    }
    report.written.sort();
    report.removed.sort();
    // One write transaction around the file write: SQL writers wait (for a moment), so rows cannot
    // change between the last check and clearing their dirty flags. Rows were rendered before the
    // lock, so one edited meanwhile (it no longer renders as written) stays dirty, whatever its state.
    // The file is replaced (and staged, when asked) inside the transaction; if staging fails the old
    // file is put back and the transaction rolls back, so the cache still holds every edit.
    with_guard(&mut cache.conn, |tx| {
        let new_hash = if unchanged {
            report.unchanged = true;
            line_hash(&content)
        } else {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let mut hasher = xxhash_rust::xxh3::Xxh3::new();
            jsonl::write_atomic_with(&path, jsonl::Durability::Fsync, |w| {
                let mut w = HashingWriter { inner: w, hasher: &mut hasher };
                jsonl::write_lines(&mut w, layout, out.iter().map(|(_, l)| *l))
            })?;
            if stage {
                if let Err(e) = crate::git::stage(&path) {
                    jsonl::write_atomic(&path, &content).with_context(|| format!("putting {} back", path.display()))?;
                    return Err(
                        e.context(format!("staging {} failed; the file was put back and the edits stay in the cache", path.display()))
                    );
                }
            }
            hasher.digest() as i64
        };
        for (id, r) in &rendered {
            if render_issue(tx, id, style)? != *r {
                continue;
            }
            if let Some(text) = r {
                codec::store_line(tx, id, text)?;
            }
            tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        }
        stamp::record_file_state(tx, &path, new_hash)?;
        Ok(())
    })?;
    Ok(report)
}

/// Writes the cache as a whole issues file to `path` (bd's `export -o`): every issue in id order,
/// its stored line when clean, rendered when edited. Neither the cache's file, its binding nor
/// its dirty set change. Returns the number of issues written.
pub fn snapshot(cache: &Cache, path: &Path) -> Result<usize> {
    let style = cache.go_style()?;
    let rows: Vec<(String, Option<String>, bool)> = {
        let mut st =
            cache.conn.prepare("SELECT i.id, i.raw, EXISTS (SELECT 1 FROM dirty d WHERE d.issue_id = i.id) FROM issues i ORDER BY i.id")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut lines = Vec::with_capacity(rows.len());
    for (id, raw, dirty) in rows {
        match (raw, dirty) {
            (Some(raw), false) => lines.push(raw),
            _ => lines.extend(render_issue(&cache.conn, &id, style)?),
        }
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    jsonl::write_atomic_with(path, jsonl::Durability::Fsync, |w| {
        jsonl::write_lines(w, Layout::default(), lines.iter().map(|l| l.as_bytes()))
    })?;
    Ok(lines.len())
}

/// Hashes what passes through, so the written file's hash needs no second read.
struct HashingWriter<'w> {
    inner: &'w mut dyn std::io::Write,
    hasher: &'w mut xxhash_rust::xxh3::Xxh3,
}

impl std::io::Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
