//! Writing the cache back to the issues file.
//!
//! Export walks the file as it is on disk (import first brings the cache up to date with it), so
//! every clean record is copied byte for byte and the file keeps its order. Only issues in the
//! dirty set are read from SQLite and rendered by patching their stored line: key order, unknown
//! keys and untouched values keep their exact text; changed columns are re-encoded in the file's
//! escape style. The file is replaced atomically, and not at all when the bytes would not change.

use std::borrow::Cow;
use std::path::Path;

use anyhow::{Context, Result};
use rustc_hash::{FxHashMap, FxHashSet};

use super::codec::{self, render_issue};
use super::{freshness, import, with_guard, Cache, Error};
use crate::jsonl::{self, Layout};
use crate::merge::derived;
use crate::record::{key_order, record_key, Key};
use crate::safe_fs::Identity;

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

/// How many times export starts over when another writer replaces the file under it.
const ATTEMPTS: usize = 8;

/// Exports the cache's edits to the issues file; with `stage`, `git add`s it when it changed
/// (both or neither: a failed stage puts the old file back and keeps the edits dirty).
///
/// Another writer (br, bd) may rename a new file over the issues file at any moment. Export reads
/// one descriptor and replaces the file only if the path still holds the version it read (see
/// [`crate::safe_fs::replace_if_unchanged`]); otherwise it imports the new version (merging it
/// with the cache's edits) and starts over, so it never exits 0 having replaced another writer's
/// change.
pub fn export(cache: &mut Cache, options: &import::ImportOptions, stage: bool) -> Result<ExportReport, Error> {
    let mut imported = None;
    for _ in 0..ATTEMPTS {
        if let Some(mut report) = export_once(cache, options, stage, &mut imported)? {
            report.import = imported;
            return Ok(report);
        }
    }
    Err(Error::Other(anyhow::anyhow!(
        "{} kept being replaced by another writer while it was exported ({ATTEMPTS} attempts); nothing was written and \
         the edits stay in the cache: run the export again when the other writer is done",
        cache.paths.file.display()
    )))
}

/// One attempt; `None` when another writer replaced the file (nothing was written).
fn export_once(
    cache: &mut Cache,
    options: &import::ImportOptions,
    stage: bool,
    imported: &mut Option<import::ImportReport>,
) -> Result<Option<ExportReport>, Error> {
    let mut report = ExportReport::default();
    let path = cache.paths.file.clone();
    if std::fs::symlink_metadata(&path).is_ok() {
        let now = import::import(cache, options)?;
        if !now.noop {
            *imported = Some(now);
        }
    }
    let dirty = dirty_ids(&cache.conn)?;
    // The version imported is the version rewritten: one descriptor, checked against the facts
    // the import recorded.
    let file = crate::safe_fs::open_regular(&path).map_err(anyhow::Error::from)?;
    let read = match &file {
        Some(f) => {
            let id = Identity::of(&f.metadata().with_context(|| format!("reading {}", path.display()))?);
            if !freshness::is_recorded(cache, id)? {
                return Ok(None); // replaced since the import: import it first
            }
            Some(id)
        }
        None => None,
    };
    // Present at all (an empty file is put back as it was if staging fails), and with content.
    let (present, exists) = (read.is_some(), read.is_some_and(|id| id.size > 0));
    if dirty.is_empty() && exists {
        report.unchanged = true;
        return Ok(Some(report));
    }
    let style = cache.go_style()?;
    let mut rendered: FxHashMap<String, Option<String>> = FxHashMap::default();
    for id in &dirty {
        rendered.insert(id.clone(), render_issue(&cache.conn, id, style)?);
    }
    // The file is read twice in blocks, never held whole: once to learn what would change, once
    // to write it.
    let survey = Survey::read(file.as_ref(), &path, &rendered)?;
    let mut added: Vec<(&str, &str)> = rendered
        .iter()
        .filter(|(id, _)| !survey.seen_dirty.contains(id.as_str()))
        .filter_map(|(id, r)| r.as_deref().map(|text| (id.as_str(), text)))
        .collect();
    added.sort_unstable();
    let unchanged = !survey.changed && added.is_empty();
    report.list(&rendered, &survey);
    // One write transaction around the file write: SQL writers wait (for a moment), so rows cannot
    // change between the last check and clearing their dirty flags. Rows were rendered before the
    // lock, so one edited meanwhile (it no longer renders as written) stays dirty, whatever its state.
    // The file is replaced (and staged, when asked) inside the transaction; if staging fails the old
    // file is put back and the transaction rolls back, so the cache still holds every edit.
    let mut fixed: FxHashMap<String, String> = FxHashMap::default();
    let done = with_guard(&mut cache.conn, |tx| -> Result<bool, Error> {
        let (identity, new_hash) = if unchanged {
            report.unchanged = true;
            match read {
                Some(id) => (id, survey.hash),
                None => return Ok(true),
            }
        } else {
            let write = |w: &mut dyn std::io::Write| -> std::io::Result<()> {
                fixed = rewrite(file.as_ref(), &path, &survey, &rendered, &added, style, w)?;
                Ok(())
            };
            match replace_file(&path, stage, present, read, write)? {
                Some(done) => done,
                None => return Ok(false), // another writer's file is in place: start over
            }
        };
        record_written(tx, &rendered, &fixed, style)?;
        freshness::record_file_state(tx, &path, identity, new_hash)?;
        Ok(true)
    })?;
    Ok(done.then_some(report))
}

/// Replaces the issues file with what `write` writes, if the path still holds the version read
/// (`read`), and stages it when asked (putting the old file back if staging fails). Returns the
/// new file's identity and content hash, or `None` when another writer replaced the file first
/// (nothing was written).
fn replace_file(
    path: &Path,
    stage: bool,
    present: bool,
    read: Option<Identity>,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<Option<(Identity, i64)>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // Staging may fail after the rename: a hard link keeps the old file to put back.
    let backup = if stage && present { Some(keep_old_file(path)?) } else { None };
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let written = crate::safe_fs::write_atomic_if_unchanged(path, read, |w| {
        let mut w = HashingWriter { inner: w, hasher: &mut hasher };
        write(&mut w)
    });
    let identity = match written {
        Ok(Some(identity)) => identity,
        other => {
            if let Some(backup) = &backup {
                let _ = std::fs::remove_file(backup);
            }
            return other.map(|_| None);
        }
    };
    if stage {
        if let Err(e) = crate::git::stage(path) {
            match &backup {
                Some(backup) => std::fs::rename(backup, path),
                None => std::fs::remove_file(path),
            }
            .with_context(|| format!("putting {} back", path.display()))?;
            return Err(e.context(format!("staging {} failed; the file was put back and the edits stay in the cache", path.display())));
        }
    }
    if let Some(backup) = &backup {
        let _ = std::fs::remove_file(backup);
    }
    Ok(Some((identity, hasher.digest() as i64)))
}

/// After the file is written: each row still as rendered keeps the line written and is clean;
/// a row edited meanwhile stays dirty. Clean records whose derived counts the edits changed
/// (`fixed`) store their new line too: the cache holds what was written.
fn record_written(
    tx: &rusqlite::Transaction<'_>,
    rendered: &FxHashMap<String, Option<String>>,
    fixed: &FxHashMap<String, String>,
    style: bool,
) -> Result<()> {
    for (id, r) in rendered {
        if render_issue(tx, id, style)? != *r {
            continue;
        }
        if let Some(text) = r {
            codec::store_line(tx, id, fixed.get(id).unwrap_or(text))?;
        }
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
    }
    for (id, text) in fixed.iter().filter(|(id, _)| !rendered.contains_key(id.as_str())) {
        codec::store_line(tx, id, text)?;
    }
    Ok(())
}

/// The ids with unexported edits, in id order.
fn dirty_ids(conn: &rusqlite::Connection) -> Result<Vec<String>> {
    let mut st = conn.prepare("SELECT issue_id FROM dirty ORDER BY issue_id")?;
    let rows = st.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl ExportReport {
    /// Lists what an export writes (every edit that renders a record) and removes (an edit that
    /// deleted a record the file holds), each in id order.
    fn list(&mut self, rendered: &FxHashMap<String, Option<String>>, survey: &Survey) {
        for (id, r) in rendered {
            match r {
                Some(_) => self.written.push(id.clone()),
                None if survey.seen_dirty.contains(id.as_str()) => self.removed.push(id.clone()),
                None => {}
            }
        }
        self.written.sort();
        self.removed.sort();
    }
}

/// A second descriptor on the file read, positioned at its start.
fn reread(file: &std::fs::File, path: &Path) -> Result<std::fs::File> {
    let mut f = file.try_clone().with_context(|| format!("reading {}", path.display()))?;
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(0)).with_context(|| format!("reading {}", path.display()))?;
    Ok(f)
}

/// Bytes read per block when exporting.
const BLOCK_SIZE: usize = 8 << 20;

/// What the first read of the file learnt: whether the export changes any byte, whether the
/// file is in bd's order, its layout and hash, and which dirty ids it holds.
struct Survey {
    sorted: bool,
    changed: bool,
    seen_dirty: FxHashSet<String>,
    layout: Layout,
    hash: i64,
    /// The file was absent or empty (a new file gets the default layout).
    empty: bool,
    /// When the file carries bd's derived counts: how many `blocks` dependencies point at each id
    /// in the file as it will be written (dirty records as rendered).
    dependents: Option<FxHashMap<String, i64>>,
    /// Ids whose `dependent_count` a dirty record's dependencies may have changed (targets of
    /// their old and new dependencies): the clean records whose counts are recomputed.
    affected: FxHashSet<String>,
}

impl Survey {
    fn read(file: Option<&std::fs::File>, path: &Path, rendered: &FxHashMap<String, Option<String>>) -> Result<Survey> {
        let mut survey = Survey {
            sorted: true,
            changed: false,
            seen_dirty: FxHashSet::default(),
            layout: Layout::default(),
            hash: 0,
            empty: true,
            dependents: None,
            affected: FxHashSet::default(),
        };
        // bd 1.0.5+ writes the counts on every issue line, so the first block (or an edit) tells.
        let mut counts = rendered.values().flatten().any(|t| derived::mentions_counts(t.as_bytes()));
        let mut dependents: FxHashMap<String, i64> = FxHashMap::default();
        for text in rendered.values().flatten() {
            survey.affected.extend(derived::dependents(std::iter::once(text.as_bytes())).into_keys());
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let Some(file) = file else {
            survey.hash = hasher.digest() as i64;
            return Ok(survey);
        };
        let mut blocks = jsonl::LineBlocks::from_file(reread(file, path)?, path, BLOCK_SIZE);
        let mut prev: Option<String> = None;
        while let Some(block) = blocks.next_block()? {
            hasher.update(block.bytes);
            counts |= survey.empty && derived::mentions_counts(block.bytes);
            survey.empty = false;
            for line in &block.lines {
                // Issues by id; bd 1.0's header and memory lines by their kind's place (never
                // matched against the dirty set, which holds issue ids only).
                let id = record_key(line.bytes).map(Key::into_string_key).unwrap_or(Cow::Borrowed(""));
                if prev.as_deref().is_some_and(|p| key_order(p, &id).is_gt()) {
                    survey.sorted = false;
                }
                let written = match rendered.get_key_value(id.as_ref()) {
                    Some((key, r)) if survey.seen_dirty.insert(key.clone()) => {
                        survey.changed |= r.as_ref().is_none_or(|text| text.as_bytes() != line.bytes);
                        if counts {
                            survey.affected.extend(derived::dependents(std::iter::once(line.bytes)).into_keys());
                        }
                        r.as_deref().map(str::as_bytes)
                    }
                    _ => Some(line.bytes),
                };
                if counts {
                    for (target, n) in derived::dependents(written.into_iter()) {
                        *dependents.entry(target).or_default() += n;
                    }
                }
                match &mut prev {
                    Some(p) => {
                        p.clear();
                        p.push_str(&id);
                    }
                    None => prev = Some(id.into_owned()),
                }
            }
        }
        survey.layout = if survey.empty { Layout::default() } else { blocks.layout() };
        survey.hash = hasher.digest() as i64;
        if counts {
            // Records new to the file point at others too.
            for (_, text) in rendered.iter().filter(|(id, _)| !survey.seen_dirty.contains(id.as_str())) {
                for (target, n) in derived::dependents(text.as_deref().map(str::as_bytes).into_iter()) {
                    *dependents.entry(target).or_default() += n;
                }
            }
            survey.dependents = Some(dependents);
        }
        Ok(survey)
    }
}

/// The second read: copies the file to `w` with each dirty issue's line replaced by its rendering
/// (or dropped), and the new issues in id order when the file is sorted (at the end otherwise).
///
/// When the file carries bd's derived counts, the records written from the cache's edits, and the
/// clean records their dependencies point at (or stopped pointing at), get their counts
/// recomputed; every line so changed is returned by id, for the cache to store.
fn rewrite(
    file: Option<&std::fs::File>,
    path: &Path,
    survey: &Survey,
    rendered: &FxHashMap<String, Option<String>>,
    added: &[(&str, &str)],
    go_style: bool,
    w: &mut dyn std::io::Write,
) -> std::io::Result<FxHashMap<String, String>> {
    let mut fixed: FxHashMap<String, String> = FxHashMap::default();
    let mut fix = |id: &str, text: &[u8], dirty: bool| -> Option<String> {
        let deps = survey.dependents.as_ref()?;
        if !dirty && !survey.affected.contains(id) {
            return None;
        }
        let line = derived::fix_line(text, deps, go_style)?;
        fixed.insert(id.to_owned(), line.clone());
        Some(line)
    };
    let layout = survey.layout;
    let mut out = LineWriter { w, layout, first: true };
    if layout.bom {
        out.w.write_all(jsonl::BOM)?;
    }
    let mut pending = added.iter().peekable();
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    if let (false, Some(file)) = (survey.empty, file) {
        let mut blocks = jsonl::LineBlocks::from_file(reread(file, path).map_err(std::io::Error::other)?, path, BLOCK_SIZE);
        while let Some(block) = blocks.next_block().map_err(std::io::Error::other)? {
            hasher.update(block.bytes);
            for line in &block.lines {
                let id = record_key(line.bytes).map(Key::into_string_key).unwrap_or(Cow::Borrowed(""));
                if survey.sorted {
                    while let Some((n, text)) = pending.next_if(|(n, _)| key_order(n, &id).is_lt()) {
                        let text = fix(n, text.as_bytes(), true).unwrap_or_else(|| text.to_string());
                        out.line(text.as_bytes())?;
                    }
                }
                match rendered.get_key_value(id.as_ref()) {
                    Some((key, r)) if seen.insert(key.as_str()) => {
                        if let Some(text) = r {
                            let text = fix(key, text.as_bytes(), true).unwrap_or_else(|| text.clone());
                            out.line(text.as_bytes())?;
                        }
                    }
                    _ => match fix(&id, line.bytes, false) {
                        Some(text) => out.line(text.as_bytes())?,
                        None => out.line(line.bytes)?,
                    },
                }
            }
        }
    }
    if hasher.digest() as i64 != survey.hash {
        return Err(std::io::Error::other("the file changed while it was exported; nothing was written, run the export again"));
    }
    for (n, text) in pending {
        let text = fix(n, text.as_bytes(), true).unwrap_or_else(|| text.to_string());
        out.line(text.as_bytes())?;
    }
    if layout.final_newline && !out.first {
        out.w.write_all(out.eol())?;
    }
    Ok(fixed)
}

/// Writes lines with a layout's line endings: an ending between lines; the caller adds the final one.
struct LineWriter<'w> {
    w: &'w mut dyn std::io::Write,
    layout: Layout,
    first: bool,
}

impl LineWriter<'_> {
    fn eol(&self) -> &'static [u8] {
        if self.layout.crlf {
            b"\r\n"
        } else {
            b"\n"
        }
    }

    fn line(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if !self.first {
            self.w.write_all(self.eol())?;
        }
        self.first = false;
        self.w.write_all(bytes)
    }
}

/// Hard-links the file to a temporary name beside it, to put it back if staging fails.
fn keep_old_file(path: &Path) -> Result<std::path::PathBuf> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let backup = dir.join(format!("{}old.tmp", crate::safe_fs::temp_files::prefix()));
    let _ = std::fs::remove_file(&backup);
    match std::fs::hard_link(path, &backup) {
        Ok(()) => Ok(backup),
        // A file system without hard links: a copy.
        Err(_) => {
            std::fs::copy(path, &backup).with_context(|| format!("keeping a copy of {}", path.display()))?;
            Ok(backup)
        }
    }
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
    crate::safe_fs::write_atomic_with(path, crate::safe_fs::Durability::Fsync, |w| {
        jsonl::write_lines(w, Layout::default(), lines.iter().map(std::string::String::as_bytes))
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
