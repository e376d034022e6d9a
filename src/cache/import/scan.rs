//! The import's first pass and its plan: each line's id and hash, read without keeping the file,
//! set against what the cache holds, decide which ids the second pass reads again, and how.

use std::collections::HashMap;

use anyhow::Result;
use rustc_hash::FxHashMap;

use super::{BadLine, ImportReport};
use crate::cache::{line_hash, Cache};
use crate::index::IdTable;
use crate::jsonl::LineBlocks;
use crate::record::{record_key, Key, LineProblem};

/// The start of a line, escaped for a terminal.
pub(super) fn excerpt(bytes: &[u8]) -> String {
    crate::record::printable(&String::from_utf8_lossy(bytes), 80)
}

/// One line as the first pass saw it.
#[derive(Debug, Clone, Copy)]
pub(super) struct ScannedLine {
    pub(super) number: usize,
    pub(super) hash: i64,
    pub(super) utf8: bool,
    /// Where its bytes start in the file, and how many there are (the second pass reads a
    /// few changed lines by these instead of the whole file).
    pub(super) offset: u64,
    pub(super) len: usize,
}

/// What the first pass over the file learnt, without keeping the file: each issue id's lines
/// with their hashes, the lines that have no id, and the facts the write records.
pub(super) struct Scan {
    /// xxh3 of the whole file.
    pub(super) hash: i64,
    /// Whether the file escapes `<`, `>` and `&` as Go does.
    pub(super) go_style: bool,
    /// Issue ids in the order of their first line.
    pub(super) ids: IdTable,
    /// Each id's first line, by its position in `ids`.
    pub(super) first: Vec<ScannedLine>,
    /// The later lines of ids on several lines, by position.
    pub(super) more: FxHashMap<u32, Vec<ScannedLine>>,
    pub(super) bad: Vec<BadLine>,
    pub(super) other_records: usize,
    /// Lines read (records of every kind, and bad lines).
    pub(super) line_count: usize,
}

impl Scan {
    pub(super) fn read(file: std::fs::File, path: &std::path::Path, display: &str, block_size: usize) -> Result<Scan> {
        let mut blocks = LineBlocks::from_file(file, path, block_size);
        let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
        let (mut go_escapes, mut raw_specials) = (false, false);
        let mut scan = Scan {
            hash: 0,
            go_style: false,
            ids: IdTable::default(),
            first: Vec::new(),
            more: FxHashMap::default(),
            bad: Vec::new(),
            other_records: 0,
            line_count: 0,
        };
        let mut block_offset = 0u64;
        while let Some(block) = blocks.next_block()? {
            hasher.update(block.bytes);
            let block_start = block.bytes.as_ptr() as usize;
            go_escapes = go_escapes || crate::record::has_go_escapes(block.bytes);
            raw_specials = raw_specials || memchr::memchr3(b'<', b'>', b'&', block.bytes).is_some();
            scan.line_count += block.lines.len();
            for line in &block.lines {
                // An issue's id, borrowed from the line (no string per line); other kinds, and an
                // id starting with NUL (which their keys start with), are not issues.
                let key = match record_key(line.bytes) {
                    Ok(Key::Issue(id)) if crate::record::is_issue_key(&id) => id,
                    Ok(_) => {
                        scan.other_records += 1;
                        continue;
                    }
                    Err(problem) => {
                        scan.bad.push(BadLine { path: display.to_owned(), line: line.number, problem, excerpt: excerpt(line.bytes) });
                        continue;
                    }
                };
                let utf8 = std::str::from_utf8(line.bytes).is_ok();
                if !utf8 {
                    let problem = LineProblem::InvalidUtf8;
                    scan.bad.push(BadLine { path: display.to_owned(), line: line.number, problem, excerpt: excerpt(line.bytes) });
                }
                let offset = block_offset + (line.bytes.as_ptr() as usize - block_start) as u64;
                let seen = ScannedLine { number: line.number, hash: line_hash(line.bytes), utf8, offset, len: line.bytes.len() };
                match scan.ids.insert(&key) {
                    (_, true) => scan.first.push(seen),
                    (at, false) => scan.more.entry(at).or_default().push(seen),
                }
            }
            block_offset += block.bytes.len() as u64;
        }
        scan.hash = hasher.digest() as i64;
        scan.go_style = go_escapes || !raw_specials;
        Ok(scan)
    }

    /// Every line of the id at `at`, in file order.
    pub(super) fn lines(&self, at: u32) -> impl Iterator<Item = &ScannedLine> {
        std::iter::once(&self.first[at as usize]).chain(self.more.get(&at).into_iter().flatten())
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.ids.position(id).is_some()
    }
}

/// What the cache holds before an import: each issue's line hash (`None`: created through SQL and
/// never exported) and the dirty set (with the last synced line of issues deleted through SQL).
pub(super) struct CacheState {
    /// Every issue id of the cache (an [`IdTable`]: at a million issues a map of strings was
    /// 80 MB of an incremental import's 316).
    pub(super) ids: IdTable,
    /// Each id's line hash, by its position in `ids`.
    pub(super) hashes: Vec<Option<i64>>,
    pub(super) dirty: HashMap<String, Option<String>>,
}

impl CacheState {
    pub(super) fn read(cache: &Cache) -> Result<CacheState> {
        let (mut ids, mut hashes) = (IdTable::default(), Vec::new());
        // From the index of the two columns: the table's rows carry every record's text.
        let mut st = cache.conn.prepare("SELECT id, line_hash FROM issues INDEXED BY issues_line_hash")?;
        let mut rows = st.query([])?;
        while let Some(row) = rows.next()? {
            if let (_, true) = ids.insert(row.get_ref(0)?.as_str()?) {
                hashes.push(row.get::<_, Option<i64>>(1)?);
            }
        }
        ids.build_index(); // every id of the file is looked up in it
        let mut st = cache.conn.prepare("SELECT issue_id, deleted_raw FROM dirty")?;
        let dirty = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
        Ok(CacheState { ids, hashes, dirty })
    }

    /// The cache's line hash of `id`: `None` when the cache has no such issue, `Some(None)` for
    /// one created through SQL and never exported.
    fn hash(&self, id: &str) -> Option<Option<i64>> {
        self.ids.position(id).map(|k| self.hashes[k as usize])
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether the cache already holds a line with this hash for `id` (as its synced line, or as
    /// the last synced line of an issue deleted through SQL).
    fn in_sync(&self, id: &str, hash: i64) -> bool {
        self.hash(id) == Some(Some(hash))
            || self.dirty.get(id).is_some_and(|d| d.as_deref().is_some_and(|raw| line_hash(raw.as_bytes()) == hash))
    }

    pub(super) fn action(&self, id: &str, hash: i64, force: bool) -> Option<Action> {
        let dirty = self.dirty.contains_key(id);
        let in_sync = self.in_sync(id, hash);
        // `--force` re-stores lines that look unchanged (to repair a cache), but reports only
        // the ids whose line really changed: what it prints feeds the notifier.
        if in_sync && (!force || dirty) {
            None
        } else if dirty {
            Some(Action::Merge)
        } else {
            Some(Action::Store { is_new: self.hash(id).is_none(), changed: !in_sync })
        }
    }
}

/// Decides what each id in the file needs; only the lines of changed ids will be read again and
/// parsed. An id on several lines is decided in the second pass, which brings their texts.
pub(super) fn plan(scan: &Scan, state: &CacheState, force: bool, report: &mut ImportReport) -> Vec<Plan> {
    let mut plans = Vec::new();
    for (at, id) in (0u32..).zip(scan.ids.iter()) {
        if scan.lines(at).any(|l| !l.utf8) {
            continue; // listed as bad by the scan
        }
        if scan.more.contains_key(&at) {
            report.duplicate_ids.push(id.to_owned());
            plans.push(Plan { at, action: None });
            continue;
        }
        if let Some(action) = state.action(id, scan.first[at as usize].hash, force) {
            plans.push(Plan { at, action: Some(action) });
        }
    }
    plans
}

/// A line of an id on several lines, as the second pass read it: (plan, line number, text).
pub(super) type DuplicateLine = (usize, usize, String);

pub(super) enum Action {
    Store { is_new: bool, changed: bool },
    Merge,
}

/// What to do with one id (the one at `at` in the scan). An id on one line is decided in the
/// first pass (`action`); one on several lines (`None`) gathers the copies' texts in the second
/// ([`DuplicateLine`]) and is decided then.
pub(super) struct Plan {
    pub(super) at: u32,
    pub(super) action: Option<Action>,
}
