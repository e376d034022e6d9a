//! Bringing the cache up to date with the issues file, incrementally and in one transaction.
//!
//! An unchanged file (same size, inode and nanosecond mtime as at the last sync, or the same xxh3
//! hash) is a no-op. Otherwise only lines whose hash changed are parsed; ids gone from the file are
//! removed. An issue edited through SQL and also changed in the file is merged three-way (base:
//! the line as last synced; ours: the cache; theirs: the file) with the merge engine, and stays
//! dirty for the next export. Any malformed line aborts the whole import and its transaction is
//! rolled back, so nothing is written, unless `skip_invalid` is set. The file is read in blocks
//! and never held whole, so memory does not grow with its size.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};
use rustc_hash::FxHashMap;

use super::codec::{self, store_issue, IssueRows};
use super::stamp::{freshness, record_file_state, Freshness};
use super::{line_hash, with_guard, Cache};
use crate::index::IdTable;
use crate::jsonl::LineBlocks;
use crate::merge::{self, ConflictPolicy, MergeOptions, Report};
use crate::record::{record_key, Key, LineProblem, RawObject};
use crate::safe_fs::Identity;
use crate::timestamp;

/// How to settle a field edited both in the cache and in the file. There is no `markers`: a cache
/// row cannot hold conflict markers, so the choice is made here, and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
        write!(f, "\nthe cache was left untouched")
    }
}

impl InvalidFile {
    /// Whether a refused line is a leftover git conflict marker: a merge was committed (or left
    /// unfinished) without the field-level driver, and `bd-merge resolve` is the fix.
    pub fn has_conflict_markers(&self) -> bool {
        let marker = LineProblem::ConflictMarker.to_string();
        self.0.iter().any(|b| b.reason == marker)
    }

    /// The fix a user can run, for the end of the message. `skip_invalid` says whether the
    /// command printing it has `--skip-invalid` (only `bd-sync import` does); a command without
    /// it never offers it.
    pub fn advice(&self, skip_invalid: bool) -> String {
        let mut fix = if self.has_conflict_markers() {
            let file = self.0.first().map(|b| shown_path(Path::new(&b.path))).unwrap_or_else(|| crate::jsonl::ISSUES_PATHS[0].into());
            format!(
                "fix: the file holds git conflict markers (a merge committed or left unfinished without the beads driver): \
                 run `bd-merge resolve {file}`, then `git add {file}` and commit (or `bd-merge resolve --stage {file}`, then commit)"
            )
        } else {
            "fix: correct or remove the lines listed (`bd-sync check` lists every problem in the file)".to_owned()
        };
        if skip_invalid {
            fix.push_str("; or `bd-sync import --skip-invalid` imports the other lines now");
        }
        fix
    }
}

/// A path as a user would type it: relative to the current directory when it lies below it,
/// else as given; escaped for a terminal.
pub fn shown_path(path: &Path) -> String {
    let relative = std::env::current_dir().ok().and_then(|cwd| {
        let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
        let abs = path.parent().and_then(|d| std::fs::canonicalize(d).ok()).map(|d| d.join(path.file_name().unwrap_or_default()));
        abs.and_then(|a| a.strip_prefix(&cwd).ok().map(Path::to_path_buf))
    });
    crate::record::escaped_path(relative.as_deref().unwrap_or(path))
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
    /// Issues this cache held under an id that the file now gives to another issue (a merge kept
    /// two issues created under one id and moved this one): where each went.
    pub renamed: Vec<RenamedIssue>,
    /// Ids whose record now has another `created_at` than the cache's (another issue under the
    /// id), with the cache's `created_at` and title, to find where the old issue went.
    #[serde(skip)]
    replaced: Vec<(String, String, Option<String>)>,
}

/// An issue of this cache that a merge moved to a new id.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RenamedIssue {
    /// The id it had here (the file now gives it to another issue).
    pub from: String,
    /// Its id in the file now.
    pub to: String,
}

/// The one line to tell the user after an import that found issues of this clone moved to a new
/// id by a merge (README "Two issues created under one id"). br is named only where its plain
/// import would refuse the file: br is the tracker next to `file` and a moved issue has comments
/// (br refuses a comment whose issue id changed); the line then says what `br sync --merge` does
/// to the file. `None` when nothing was moved.
pub fn rename_notice(report: &ImportReport, file: &std::path::Path) -> Option<String> {
    if report.renamed.is_empty() {
        return None;
    }
    let moves: Vec<String> = report
        .renamed
        .iter()
        .map(|r| format!("{} is now {}", crate::record::key_label(&r.from), crate::record::key_label(&r.to)))
        .collect();
    let br_here = file
        .parent()
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .is_some_and(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with(".br-")));
    let br_refuses = br_here && moved_with_comments(report, file);
    Some(format!(
        "a merge kept two issues created under one id: {}{}",
        moves.join(", "),
        if br_refuses {
            "; br's plain import refuses a moved issue that has comments, so import it with `br sync --merge`. br then writes the \
             whole issues file again in its own format (`git diff` shows every line): commit that only if `git diff --stat` \
             shows nothing but re-serialised lines, else `git checkout` the file and import again"
        } else {
            ""
        }
    ))
}

/// Whether one of the moved issues (by its new id) has a non-empty `comments` array in `file`:
/// one pass over the file's lines against a set of the moved ids.
fn moved_with_comments(report: &ImportReport, file: &std::path::Path) -> bool {
    let moved: std::collections::HashSet<&str> = report.renamed.iter().map(|r| r.to.as_str()).collect();
    let Ok(content) = crate::jsonl::read(file) else { return false };
    content.split(|&b| b == b'\n').any(|line| {
        let Ok(id) = crate::record::record_id(line) else { return false };
        if !moved.contains(id.as_ref()) {
            return false;
        }
        serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("comments").and_then(|c| c.as_array().map(|a| !a.is_empty())))
            .unwrap_or(false)
    })
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

/// The file was rewritten between the two reads of one import.
#[derive(Debug)]
struct FileChanged;

impl std::fmt::Display for FileChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the file changed while it was imported")
    }
}

impl std::error::Error for FileChanged {}

/// Imports the issues file into the cache.
///
/// The file is read twice, in blocks, so that its size never sets the memory used: a first pass
/// finds each line's id and hash, which decides what changed; a second pass, inside the write
/// transaction, decodes and stores the changed lines one block at a time. The plan (which rows are
/// edited in the cache) is made before the write lock is taken, so an SQL edit may land in
/// between; the write then finds the dirty set changed, rolls back, and the import starts over
/// with the edit in view, so it is merged, never overwritten. A file rewritten between the two
/// passes is caught the same way (every line read again must have the hash it had).
pub fn import(cache: &mut Cache, options: &ImportOptions) -> Result<ImportReport, super::Error> {
    import_unsorted(cache, options).map_err(super::Error::from)
}

fn import_unsorted(cache: &mut Cache, options: &ImportOptions) -> Result<ImportReport> {
    for _ in 0..16 {
        match import_once(cache, options, BLOCK_SIZE) {
            Err(e) if e.is::<DirtySetChanged>() || e.is::<FileChanged>() => continue,
            other => return other,
        }
    }
    anyhow::bail!("the cache or the file kept changing while importing (16 attempts); nothing was imported, try again")
}

/// Bytes read per block: large enough to keep both cores busy decoding, small next to the file.
const BLOCK_SIZE: usize = 8 << 20;

/// Decoded lines handed from the reader thread to the writer at a time.
const BATCH_LINES: usize = 4096;

fn import_once(cache: &mut Cache, options: &ImportOptions, block_size: usize) -> Result<ImportReport> {
    let path = cache.paths.file.clone();
    match freshness(cache)? {
        Freshness::SameStamp if !options.force => return Ok(ImportReport { noop: true, ..ImportReport::default() }),
        Freshness::SameContent { hash, identity } if !options.force => {
            with_guard(&mut cache.conn, |tx| record_file_state(tx, &path, identity, hash))?;
            return Ok(ImportReport { noop: true, ..ImportReport::default() });
        }
        _ => {}
    }
    let display = path.display().to_string();
    let state = CacheState::read(cache)?;
    // Both passes read this one descriptor, and the version recorded as synced is the one it
    // opened: another writer renaming a new file over the path meanwhile is seen by the next
    // look at the path, never mistaken for what was read.
    let file = crate::safe_fs::open_regular(&path)?
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        .with_context(|| format!("reading {display}"))?;
    let opened = Identity::of(&file.metadata().with_context(|| format!("reading {display}"))?);
    let mut scan = Scan::read(file.try_clone().with_context(|| format!("reading {display}"))?, &path, &display, block_size)?;
    if !state.is_empty() {
        scan.ids.build_index(); // every id of the cache is looked up in it (`remove_missing`)
    }
    let mut report = ImportReport { other_records: scan.other_records, ..ImportReport::default() };
    let mut bad = std::mem::take(&mut scan.bad);
    let plans = plan(&scan, &state, options.force, &mut report);
    let progress = options.progress.then(|| {
        let bar = indicatif::ProgressBar::new(plans.len() as u64);
        bar.set_style(indicatif::ProgressStyle::with_template("importing {bar:40} {pos}/{len} issues").expect("valid template"));
        bar
    });
    let write = Write {
        path: &path,
        file: &file,
        opened,
        display: &display,
        scan: &scan,
        state: &state,
        plans,
        options,
        block_size,
        progress: progress.as_ref(),
    };
    let outcome = write.apply(cache, &mut report, &mut bad);
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    outcome?;
    find_renamed(cache, &mut report)?;
    report.added.sort();
    report.changed.sort();
    report.removed.sort();
    report.repeated_keys.sort_unstable();
    Ok(report)
}

/// One line as the first pass saw it.
#[derive(Debug, Clone, Copy)]
struct ScannedLine {
    number: usize,
    hash: i64,
    utf8: bool,
}

/// What the first pass over the file learnt, without keeping the file: each issue id's lines
/// with their hashes, the lines that have no id, and the facts the write records.
struct Scan {
    /// xxh3 of the whole file.
    hash: i64,
    /// Whether the file escapes `<`, `>` and `&` as Go does.
    go_style: bool,
    /// Issue ids in the order of their first line.
    ids: IdTable,
    /// Each id's first line, by its position in `ids`.
    first: Vec<ScannedLine>,
    /// The later lines of ids on several lines, by position.
    more: FxHashMap<u32, Vec<ScannedLine>>,
    bad: Vec<BadLine>,
    other_records: usize,
}

impl Scan {
    fn read(file: std::fs::File, path: &std::path::Path, display: &str, block_size: usize) -> Result<Scan> {
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
        };
        while let Some(block) = blocks.next_block()? {
            hasher.update(block.bytes);
            go_escapes = go_escapes || crate::record::has_go_escapes(block.bytes);
            raw_specials = raw_specials || memchr::memchr3(b'<', b'>', b'&', block.bytes).is_some();
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
                        scan.bad.push(BadLine {
                            path: display.to_owned(),
                            line: line.number,
                            reason: problem.to_string(),
                            excerpt: excerpt(line.bytes),
                        });
                        continue;
                    }
                };
                let utf8 = std::str::from_utf8(line.bytes).is_ok();
                if !utf8 {
                    scan.bad.push(BadLine {
                        path: display.to_owned(),
                        line: line.number,
                        reason: LineProblem::InvalidUtf8.to_string(),
                        excerpt: excerpt(line.bytes),
                    });
                }
                let seen = ScannedLine { number: line.number, hash: line_hash(line.bytes), utf8 };
                match scan.ids.insert(&key) {
                    (_, true) => scan.first.push(seen),
                    (at, false) => scan.more.entry(at).or_default().push(seen),
                }
            }
        }
        scan.hash = hasher.digest() as i64;
        scan.go_style = go_escapes || !raw_specials;
        Ok(scan)
    }

    /// Every line of the id at `at`, in file order.
    fn lines(&self, at: u32) -> impl Iterator<Item = &ScannedLine> {
        std::iter::once(&self.first[at as usize]).chain(self.more.get(&at).into_iter().flatten())
    }

    fn contains(&self, id: &str) -> bool {
        self.ids.position(id).is_some()
    }
}

/// What the cache holds before an import: each issue's line hash (`None`: created through SQL and
/// never exported) and the dirty set (with the last synced line of issues deleted through SQL).
struct CacheState {
    /// Every issue id of the cache (an [`IdTable`]: at a million issues a map of strings was
    /// 80 MB of an incremental import's 316).
    ids: IdTable,
    /// Each id's line hash, by its position in `ids`.
    hashes: Vec<Option<i64>>,
    dirty: HashMap<String, Option<String>>,
}

impl CacheState {
    fn read(cache: &Cache) -> Result<CacheState> {
        let (mut ids, mut hashes) = (IdTable::default(), Vec::new());
        let mut st = cache.conn.prepare("SELECT id, line_hash FROM issues")?;
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

    fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Whether the cache already holds a line with this hash for `id` (as its synced line, or as
    /// the last synced line of an issue deleted through SQL).
    fn in_sync(&self, id: &str, hash: i64) -> bool {
        self.hash(id) == Some(Some(hash))
            || self.dirty.get(id).is_some_and(|d| d.as_deref().is_some_and(|raw| line_hash(raw.as_bytes()) == hash))
    }

    fn action(&self, id: &str, hash: i64, force: bool) -> Option<Action> {
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
fn plan(scan: &Scan, state: &CacheState, force: bool, report: &mut ImportReport) -> Vec<Plan> {
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

/// A decoded line: its rows, and whether it repeats a key.
type Decoded = Result<(IssueRows, bool), LineProblem>;

fn decode_line(text: &str) -> Decoded {
    RawObject::parse_str(text).map(|obj| (IssueRows::from_record(&obj), !obj.repeated_keys().is_empty()))
}

/// A planned line, read and decoded ahead of the write; its text is `range` of its batch's bytes.
struct DecodedLine {
    plan: usize,
    range: std::ops::Range<usize>,
    decoded: Decoded,
}

/// Planned lines handed to the writer together (at most [`BATCH_LINES`] of them, or a block's
/// worth of bytes): their texts in one buffer (handed back to the reader to be filled again, so
/// the import allocates no string per line), and their decoded rows.
#[derive(Default)]
struct Batch {
    texts: String,
    lines: Vec<DecodedLine>,
}

impl Batch {
    fn text(&self, line: &DecodedLine) -> &str {
        &self.texts[line.range.clone()]
    }

    fn push(&mut self, plan: usize, text: &str) {
        let start = self.texts.len();
        self.texts.push_str(text);
        self.lines.push(DecodedLine { plan, range: start..self.texts.len(), decoded: decode_line(text) });
    }
}

/// The write of one import: the second pass over the file, inside one transaction.
struct Write<'a> {
    path: &'a std::path::Path,
    /// The descriptor the first pass read, read again from its start by the second.
    file: &'a std::fs::File,
    /// The version of the file it opened.
    opened: Identity,
    display: &'a str,
    scan: &'a Scan,
    state: &'a CacheState,
    plans: Vec<Plan>,
    options: &'a ImportOptions,
    block_size: usize,
    progress: Option<&'a indicatif::ProgressBar>,
}

/// What the write accumulates across blocks.
struct Written<'r> {
    report: &'r mut ImportReport,
    bad: &'r mut Vec<BadLine>,
    /// The first `updated_at` values stored, to learn the file's timestamp style.
    stamps: Vec<String>,
    /// The ids added, as positions in the scan until the write is over (a cold import of a
    /// million records would otherwise hold a million strings beside SQLite's cache).
    added: Vec<u32>,
}

impl Write<'_> {
    /// Streams the file again and writes the plans in one transaction, with the triggers
    /// silenced. Fails with [`DirtySetChanged`] or [`FileChanged`] (writing nothing) if an SQL
    /// edit landed or the file changed since the plan; with [`InvalidFile`] (writing nothing) if
    /// a line is bad and `skip_invalid` is off.
    fn apply(self, cache: &mut Cache, report: &mut ImportReport, bad: &mut Vec<BadLine>) -> Result<()> {
        // A cold import into an empty cache writes every page once instead of through the WAL and
        // a checkpoint. Switching modes needs no other connection; if a reader is open, stay in WAL.
        // It also skips the fsync at commit (at 1M issues, 2.2 GB at the disk's 280 MB/s: 8 s):
        // an empty cache holds no SQL edits, so everything it is about to hold is in the file,
        // and a cache damaged by a power cut is rebuilt from the file (`import --force`, or
        // remove it). From a thousand issues on (the 10k bench file: 0.30 s -> 0.15 s, median of
        // five in turn); smaller files keep the plain path, where the switches would cost more
        // than they save.
        let cold = self.state.is_empty() && self.state.dirty.is_empty() && self.plans.len() > 1_000;
        if cold {
            let _ = cache.conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF");
        }
        cache.conn.execute_batch("PRAGMA cache_size = -65536")?;
        // One record at a time (`partial`); a merged record is stamped no earlier than now.
        let merge_options = MergeOptions {
            policy: self.options.policy.into(),
            now: Some(timestamp::merge_now()?),
            partial: true,
            ..MergeOptions::default()
        };
        let mut written = Written { report, bad, stamps: Vec::new(), added: Vec::new() };
        let result = with_guard(&mut cache.conn, |tx| {
            let now: Vec<String> = {
                let mut st = tx.prepare("SELECT issue_id FROM dirty")?;
                let rows = st.query_map([], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            if now.len() != self.state.dirty.len() || now.iter().any(|id| !self.state.dirty.contains_key(id)) {
                return Err(DirtySetChanged.into());
            }
            let schema = if cold { drop_indexes_and_triggers(tx)? } else { Vec::new() };
            tx.execute("DELETE FROM duplicate_lines", [])?;
            let copies = self.stream(tx, &merge_options, &mut written)?;
            self.settle_duplicates(tx, &copies, &merge_options, &mut written)?;
            if !written.bad.is_empty() && !self.options.skip_invalid {
                written.bad.sort_by_key(|b| b.line);
                return Err(InvalidFile(std::mem::take(written.bad)).into());
            }
            self.remove_missing(tx, written.report)?;
            restore_indexes_and_triggers(tx, &schema)?;
            // An in-place write during the reads (same inode, new size or time) is caught here.
            if Identity::of(&self.file.metadata()?) != self.opened {
                return Err(FileChanged.into());
            }
            record_file_state(tx, self.path, self.opened, self.scan.hash)?;
            tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('go_escapes', ?1)", [self.scan.go_style])?;
            if let Some(fraction) = timestamp::fraction_style(written.stamps.iter().map(String::as_str)) {
                tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('timestamp_fraction', ?1)", [fraction])?;
            }
            Ok(())
        });
        if cold {
            let _ = cache.conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
        }
        written.bad.sort_by_key(|b| b.line);
        written.report.skipped = std::mem::take(written.bad);
        if result.is_ok() {
            written.report.added.extend(written.added.iter().map(|&at| self.scan.ids.get(at).to_owned()));
        }
        result
    }

    /// The second pass: reads the file block by block, decodes the planned lines on a reader
    /// thread while this one stores them. Returns the lines of ids on several lines for
    /// [`Write::settle_duplicates`], in plan order and, within a plan, file order.
    fn stream(&self, tx: &Transaction<'_>, merge_options: &MergeOptions, written: &mut Written<'_>) -> Result<Vec<DuplicateLine>> {
        // The lines to read are the plans' first lines, in plan order (which is line order), and
        // the later lines of ids on several lines: (line number, plan, hash in the first pass),
        // sorted. The second pass walks both beside the file.
        let mut later: Vec<(usize, usize, i64)> = Vec::new();
        for (k, p) in self.plans.iter().enumerate().filter(|(_, p)| p.action.is_none()) {
            later.extend(self.scan.lines(p.at).skip(1).map(|l| (l.number, k, l.hash)));
        }
        later.sort_unstable_by_key(|n| n.0);
        let (plans, scan) = (&self.plans, self.scan);
        let mut file = self.file.try_clone()?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0))?;
        let reader = PlannedLines { path: self.path, block_size: self.block_size, scan, plans, later: &later };
        // A reader thread reads, checks and decodes the next block while this one writes: the
        // SQLite writes are the longer half, so decoding costs no wall time.
        let mut copies = std::thread::scope(|s| -> Result<Vec<DuplicateLine>> {
            let (send, receive) = std::sync::mpsc::sync_channel::<Batch>(2);
            let (recycle, recycled) = std::sync::mpsc::channel::<Batch>();
            let reader = s.spawn(move || reader.read(file, &send, &recycled));
            for mut batch in receive {
                let count = batch.lines.len() as u64;
                let mut lines = std::mem::take(&mut batch.lines);
                for line in lines.drain(..) {
                    let plan = &plans[line.plan];
                    let action = plan.action.as_ref().expect("single-line plans are decided in the first pass");
                    let number = scan.first[plan.at as usize].number;
                    self.store(tx, plan.at, number, batch.text(&line), action, line.decoded, merge_options, written)?;
                }
                batch.lines = lines;
                let _ = recycle.send(batch);
                if let Some(bar) = self.progress {
                    bar.inc(count);
                }
            }
            reader.join().expect("reading the file does not panic")
        })?;
        copies.sort_by_key(|c| c.0); // stable: each id's copies stay in file order
        Ok(copies)
    }

    /// Ids on several lines: the copy with the latest `updated_at` is the issue, the others are
    /// kept verbatim in `duplicate_lines`.
    fn settle_duplicates(
        &self,
        tx: &Transaction<'_>,
        copies: &[DuplicateLine],
        merge_options: &MergeOptions,
        written: &mut Written<'_>,
    ) -> Result<()> {
        let mut dup = tx.prepare_cached("INSERT INTO duplicate_lines (issue_id, line, raw) VALUES (?1, ?2, ?3)")?;
        for same_id in copies.chunk_by(|a, b| a.0 == b.0) {
            let at = self.plans[same_id[0].0].at;
            let id = self.scan.ids.get(at);
            let texts: Vec<(usize, &str)> = same_id.iter().map(|(_, n, t)| (*n, t.as_str())).collect();
            let primary = latest_copy(&texts);
            for (k, (n, raw)) in texts.iter().enumerate() {
                if k != primary {
                    dup.execute(params![id, *n as i64, raw])?;
                }
            }
            let (number, text) = texts[primary];
            if let Some(action) = self.state.action(id, line_hash(text.as_bytes()), self.options.force) {
                self.store(tx, at, number, text, &action, decode_line(text), merge_options, written)?;
            }
        }
        Ok(())
    }

    /// Stores one decoded line (of the id at `at` in the scan) according to its plan.
    #[allow(clippy::too_many_arguments)]
    fn store(
        &self,
        tx: &Transaction<'_>,
        at: u32,
        number: usize,
        text: &str,
        action: &Action,
        decoded: Decoded,
        merge_options: &MergeOptions,
        written: &mut Written<'_>,
    ) -> Result<()> {
        let id = self.scan.ids.get(at);
        let (rows, repeats_a_key) = match decoded {
            Ok(d) => d,
            Err(p) => {
                written.bad.push(BadLine {
                    path: self.display.to_owned(),
                    line: number,
                    reason: p.to_string(),
                    excerpt: excerpt(text.as_bytes()),
                });
                return Ok(());
            }
        };
        if repeats_a_key {
            written.report.repeated_keys.push(number);
        }
        if written.stamps.len() < 256 {
            if let Some(rusqlite::types::Value::Text(t)) = rows.columns.get("updated_at") {
                written.stamps.push(t.clone());
            }
        }
        if !written.bad.is_empty() && !self.options.skip_invalid {
            return Ok(()); // the import will be refused: keep decoding only to list every bad line
        }
        match action {
            Action::Store { is_new, changed } => {
                if !*is_new && *changed {
                    note_replacement(tx, id, &rows, written.report)?;
                }
                store_issue(tx, id, text, line_hash(text.as_bytes()), &rows, *is_new)?;
                if *is_new {
                    written.added.push(at);
                } else if *changed {
                    written.report.changed.push(id.to_owned());
                }
            }
            Action::Merge => {
                let file_ids = |parent: &str| merge::rename::highest_child(parent, self.scan.ids.iter());
                let dirty = &self.state.dirty;
                merge_dirty(tx, id, text, self.scan.go_style, merge_options, dirty, written.report, &file_ids)?;
            }
        }
        Ok(())
    }

    /// Removes the issues that left the file (unless edited in the cache: the edit wins).
    fn remove_missing(&self, tx: &Transaction<'_>, report: &mut ImportReport) -> Result<()> {
        for (id, hash) in self.state.ids.iter().zip(&self.state.hashes) {
            if self.scan.contains(id) || hash.is_none() {
                continue;
            }
            if self.state.dirty.contains_key(id) {
                report.conflicts.push(Report {
                    id: id.to_owned(),
                    resolution: merge::Resolution {
                        field: "(record)".into(),
                        kept: merge::Side::Ours,
                        kept_value: "the cache's edited record".into(),
                        other_value: "its deletion from the file".into(),
                        reason: "the file deleted it, the cache changed it; a change is never lost".into(),
                        kept_json: None,
                        dropped_json: None,
                    },
                });
                continue;
            }
            tx.prepare_cached("DELETE FROM issues WHERE id = ?1")?.execute([id])?;
            codec::remove_children(tx, id)?;
            report.removed.push(id.to_owned());
        }
        Ok(())
    }
}

/// Into an empty cache, building each index once at the end (a sort) beats keeping it up to date
/// row by row; and the triggers (silenced by the guard anyway) are dropped too, since SQLite still
/// evaluates their `WHEN` for every row: 0.2 s of 1.1 at 100k. Returns their SQL, for
/// [`restore_indexes_and_triggers`] before the commit; a rollback never loses them.
fn drop_indexes_and_triggers(tx: &Transaction<'_>) -> Result<Vec<(String, String)>> {
    let mut st =
        tx.prepare("SELECT name, sql, type FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type")?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
    let schema: Vec<(String, String, String)> = rows.collect::<rusqlite::Result<_>>()?;
    for (name, _, kind) in &schema {
        let kind = if kind == "trigger" { "TRIGGER" } else { "INDEX" };
        tx.execute_batch(&format!("DROP {kind} \"{}\"", name.replace('"', "\"\"")))?;
    }
    Ok(schema.into_iter().map(|(name, sql, _)| (name, sql)).collect())
}

/// Creates again what [`drop_indexes_and_triggers`] dropped (indexes first: `ORDER BY type`).
fn restore_indexes_and_triggers(tx: &Transaction<'_>, schema: &[(String, String)]) -> Result<()> {
    if schema.is_empty() {
        return Ok(());
    }
    // SQLite's sorter takes as much memory again as the page cache: halve both while the indexes
    // are built, so a cold import of a million records stays under 300 MB.
    tx.execute_batch("PRAGMA cache_size = -32768")?;
    for (_, sql) in schema {
        tx.execute_batch(sql)?;
    }
    tx.execute_batch("PRAGMA cache_size = -65536")?;
    Ok(())
}

/// The reading half of [`Write::stream`], on its own thread: reads the file again, checks each
/// planned line against the first pass, decodes single-line plans into batches for the writer and
/// keeps the texts of ids on several lines.
struct PlannedLines<'a> {
    path: &'a std::path::Path,
    block_size: usize,
    scan: &'a Scan,
    plans: &'a [Plan],
    /// The later lines of ids on several lines: (line number, plan, hash), sorted.
    later: &'a [(usize, usize, i64)],
}

impl PlannedLines<'_> {
    fn read(
        self,
        file: std::fs::File,
        send: &std::sync::mpsc::SyncSender<Batch>,
        recycled: &std::sync::mpsc::Receiver<Batch>,
    ) -> Result<Vec<DuplicateLine>> {
        let (scan, plans) = (self.scan, self.plans);
        let mut copies = Vec::new();
        let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
        let mut blocks = LineBlocks::from_file(file, self.path, self.block_size);
        let fresh = || {
            let mut batch: Batch = recycled.try_recv().unwrap_or_default();
            batch.texts.clear();
            batch.lines.clear();
            batch
        };
        let mut batch = fresh();
        // The plans' first lines come in plan order, which is line order.
        let mut firsts = plans.iter().enumerate().peekable();
        let mut laters = self.later.iter().peekable();
        while let Some(block) = blocks.next_block()? {
            hasher.update(block.bytes);
            for line in &block.lines {
                let first = firsts.next_if(|(_, p)| scan.first[p.at as usize].number == line.number);
                let wanted = first
                    .map(|(k, p)| (k, scan.first[p.at as usize].hash))
                    .or_else(|| laters.next_if(|n| n.0 == line.number).map(|&(_, k, hash)| (k, hash)));
                let Some((plan, hash)) = wanted else { continue };
                if line_hash(line.bytes) != hash {
                    return Err(FileChanged.into());
                }
                let text = std::str::from_utf8(line.bytes).map_err(|_| FileChanged)?;
                if plans[plan].action.is_none() {
                    copies.push((plan, line.number, text.to_owned()));
                } else {
                    batch.push(plan, text);
                }
                // A decoded row is about 500 bytes whatever its line's size: a batch is bounded by
                // lines too, so a block of tiny records stays small.
                if (batch.lines.len() >= BATCH_LINES || batch.texts.len() >= self.block_size)
                    && send.send(std::mem::replace(&mut batch, fresh())).is_err()
                {
                    return Ok(copies); // the writer stopped on an error of its own
                }
            }
        }
        if !batch.lines.is_empty() && send.send(batch).is_err() {
            return Ok(copies);
        }
        if hasher.digest() as i64 != scan.hash {
            return Err(FileChanged.into());
        }
        Ok(copies)
    }
}

/// A line of an id on several lines, as the second pass read it: (plan, line number, text).
type DuplicateLine = (usize, usize, String);

enum Action {
    Store { is_new: bool, changed: bool },
    Merge,
}

/// What to do with one id (the one at `at` in the scan). An id on one line is decided in the
/// first pass (`action`); one on several lines (`None`) gathers the copies' texts in the second
/// ([`DuplicateLine`]) and is decided then.
struct Plan {
    at: u32,
    action: Option<Action>,
}

/// Index of the copy with the latest `updated_at` (the first on ties).
fn latest_copy(copies: &[(usize, &str)]) -> usize {
    let stamps: Vec<Option<String>> = copies
        .iter()
        .map(|(_, t)| {
            RawObject::parse_str(t)
                .ok()
                .and_then(|o| o.get("updated_at").and_then(crate::record::parse_json_str).map(std::borrow::Cow::into_owned))
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

/// Notes an id whose new record has another `created_at` than the cache's: another issue now
/// holds the id (see [`find_renamed`]).
fn note_replacement(tx: &Transaction<'_>, id: &str, rows: &IssueRows, report: &mut ImportReport) -> Result<()> {
    let Some(rusqlite::types::Value::Text(new)) = rows.columns.get("created_at") else { return Ok(()) };
    let old: Option<(Option<String>, Option<String>)> =
        tx.query_row("SELECT created_at, title FROM issues WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
    if let Some((Some(old), title)) = old {
        let differ = match (timestamp::parse(&old), timestamp::parse(new)) {
            (Some(a), Some(b)) => a != b,
            _ => old != *new,
        };
        if differ {
            report.replaced.push((id.to_owned(), old, title));
        }
    }
    Ok(())
}

/// Where each replaced issue went: an id the import added that holds the old `created_at` and
/// title. An issue not found yet is remembered until the next import (a rebase first checks out
/// the upstream, whose import sees the id replaced, and only its replay adds the moved issue).
fn find_renamed(cache: &Cache, report: &mut ImportReport) -> Result<()> {
    type Displaced = Vec<(String, String, Option<String>)>;
    let pending: Displaced = cache
        .conn
        .query_row("SELECT value FROM meta WHERE key = 'displaced_issues'", [], |r| r.get::<_, String>(0))
        .optional()?
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let fresh = std::mem::take(&mut report.replaced);
    let mut unmatched: Displaced = Vec::new();
    for (i, (from, created_at, title)) in pending.iter().chain(&fresh).enumerate() {
        let to: Option<String> = cache
            .conn
            .query_row(
                "SELECT id FROM issues WHERE created_at = ?1 AND title IS ?2 AND id != ?3 ORDER BY id LIMIT 1",
                params![created_at, title, from],
                |r| r.get(0),
            )
            .optional()?;
        match to.filter(|to| report.added.contains(to)) {
            Some(to) => report.renamed.push(RenamedIssue { from: from.clone(), to }),
            None if i >= pending.len() => unmatched.push((from.clone(), created_at.clone(), title.clone())),
            None => {}
        }
    }
    if unmatched.is_empty() {
        if !pending.is_empty() {
            cache.conn.execute("DELETE FROM meta WHERE key = 'displaced_issues'", [])?;
        }
    } else {
        cache
            .conn
            .execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('displaced_issues', ?1)", [serde_json::to_string(&unmatched)?])?;
    }
    Ok(())
}

/// Three-way merge of an issue edited through SQL whose line also changed in the file.
#[allow(clippy::too_many_arguments)]
fn merge_dirty(
    tx: &Transaction<'_>,
    id: &str,
    theirs: &str,
    go_style: bool,
    options: &MergeOptions,
    dirty: &HashMap<String, Option<String>>,
    report: &mut ImportReport,
    file_children: &dyn Fn(&str) -> u64,
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
                kept_json: None,
                dropped_json: None,
            },
        });
        return Ok(());
    };
    if base.is_none() {
        let parsed = (serde_json::from_str::<serde_json::Value>(&ours), serde_json::from_str::<serde_json::Value>(theirs));
        if let (Ok(ov), Ok(tv)) = parsed {
            if let Some(order) = merge::rename::concurrent_creation(&ov, &tv) {
                let sides = Sides { ours: (&ours, &ov), theirs: (theirs, &tv) };
                return two_issues(tx, id, sides, order, go_style, options, report, file_children);
            }
        }
    }
    let base_text = base.map(|b| format!("{b}\n")).unwrap_or_default();
    let (ours_text, theirs_text) = (format!("{ours}\n"), format!("{theirs}\n"));
    let merged = merge::merge(base_text.as_bytes(), ours_text.as_bytes(), theirs_text.as_bytes(), options)
        .map_err(|u| anyhow::anyhow!("merging {id}: {u}"))?;
    report.conflicts.extend(merged.reports.iter().cloned());
    let merged_bytes = merged.to_vec();
    let merged_line = String::from_utf8_lossy(&merged_bytes).trim_end_matches('\n').to_owned();
    let obj = RawObject::parse_str(&merged_line).with_context(|| format!("merged record of {id}"))?;
    // The file's line is the new base; the merged values stay dirty for the next export.
    store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
    tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [id])?;
    report.merged.push(id.to_owned());
    Ok(())
}

/// The cache's and the file's record of one id, as text and value.
struct Sides<'s> {
    ours: (&'s str, &'s serde_json::Value),
    theirs: (&'s str, &'s serde_json::Value),
}

/// An issue created through SQL (never exported) and an issue the file brought under the same id
/// with another `created_at`: two issues (README "Two issues created under one id"). For a child
/// id `P.N` the earlier creation keeps the id and the later moves to the next free child number
/// (over the cache and the file); both end up in the cache, and what the file does not hold yet
/// stays dirty for the next export. For a plain id the policy's winner is kept whole and the other
/// reported.
#[allow(clippy::too_many_arguments)]
fn two_issues(
    tx: &Transaction<'_>,
    id: &str,
    sides: Sides<'_>,
    order: std::cmp::Ordering,
    go_style: bool,
    options: &MergeOptions,
    report: &mut ImportReport,
    file_children: &dyn Fn(&str) -> u64,
) -> Result<()> {
    let (ours, theirs) = (sides.ours.0, sides.theirs.0);
    let Some((parent, _)) = merge::rename::child_number(id) else {
        return keep_one_of_two(tx, id, &sides, options, report);
    };
    let in_cache: Vec<String> = {
        let mut st = tx.prepare("SELECT id FROM issues WHERE substr(id, 1, length(?1) + 1) = ?1 || '.'")?;
        let rows = st.query_map([parent], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let highest = file_children(parent).max(merge::rename::highest_child(parent, in_cache.iter().map(String::as_str)));
    // Checked: a child number at the top of u64 is refused, never wrapped onto one in use.
    let next = highest.checked_add(1).ok_or_else(|| {
        anyhow::anyhow!(
            "{}: two issues under this id, and no child number above {highest} under {} is free",
            crate::record::key_label(id),
            crate::record::key_label(parent)
        )
    })?;
    let to = format!("{parent}.{next}");
    // The one that moves: a new issue of the cache, to be exported.
    let (moving, kept_side) = if order.is_lt() { (theirs, merge::Side::Ours) } else { (ours, merge::Side::Theirs) };
    let renamed =
        merge::rename::rename_record(moving.as_bytes(), id, &to, go_style).ok_or_else(|| anyhow::anyhow!("{id}: not a record"))?;
    let obj = RawObject::parse_str(&renamed).with_context(|| to.clone())?;
    store_issue(tx, &to, &renamed, line_hash(renamed.as_bytes()), &IssueRows::from_record(&obj), true)?;
    tx.execute("UPDATE issues SET raw = NULL, line_hash = NULL WHERE id = ?1", [&to])?;
    tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [&to])?;
    report.added.push(to.clone());
    if kept_side == merge::Side::Ours {
        // The cache's issue keeps the id, stamped past both, so a clone that holds the file's
        // issue under it takes the replacement.
        let sides_stamps = [merge::updated_at_of(sides.ours.1), merge::updated_at_of(sides.theirs.1)];
        if let Some(next) = merge::stamp::merge_stamp(&sides_stamps, options.now) {
            tx.execute("UPDATE issues SET updated_at = ?2 WHERE id = ?1", params![id, next])?;
        }
        tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [id])?;
        report.merged.push(id.to_owned());
    } else {
        let obj = RawObject::parse_str(theirs).with_context(|| id.to_string())?;
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        report.changed.push(id.to_owned());
        report.renamed.push(RenamedIssue { from: id.to_owned(), to: to.clone() });
    }
    let moved = if kept_side == merge::Side::Ours { "the file's" } else { "the cache's" };
    report.conflicts.push(whole_record_report(
        id,
        kept_side,
        format!("its issue under {}", crate::record::key_label(id)),
        format!("{moved} issue, now {}", crate::record::key_label(&to)),
        "two different issues were created under this id; the later one moved to the next free child number".to_owned(),
        None,
    ));
    Ok(())
}

/// A report of a whole-record choice (no field merged): which side was kept, and the other.
fn whole_record_report(
    id: &str,
    kept: merge::Side,
    kept_value: String,
    other_value: String,
    reason: String,
    dropped: Option<&str>,
) -> Report {
    Report {
        id: id.to_owned(),
        resolution: merge::Resolution {
            field: "(record)".into(),
            kept,
            kept_value,
            other_value,
            reason,
            kept_json: None,
            dropped_json: dropped.map(str::to_owned),
        },
    }
}

/// Two different issues under an id with no child number to move one to: the policy (by
/// default the newer) keeps one whole, and the other is reported with its line.
fn keep_one_of_two(tx: &Transaction<'_>, id: &str, sides: &Sides<'_>, options: &MergeOptions, report: &mut ImportReport) -> Result<()> {
    let (ours, theirs) = (sides.ours.0, sides.theirs.0);
    let cache_wins = match options.policy {
        ConflictPolicy::Ours => true,
        ConflictPolicy::Theirs => false,
        _ => match (merge::updated_at_of(sides.ours.1), merge::updated_at_of(sides.theirs.1)) {
            (Some(a), Some(b)) => timestamp::compare(&a, &b).is_ge(),
            (a, b) => a.is_some() >= b.is_some(),
        },
    };
    let reason = "two different issues were created under this id, which has no child number to move one to".to_owned();
    if cache_wins {
        // The file's line becomes the base, so the export writes the cache's issue over it.
        tx.execute("UPDATE issues SET raw = ?2, line_hash = ?3 WHERE id = ?1", params![id, theirs, line_hash(theirs.as_bytes())])?;
        let printed = crate::record::printable(theirs, 2000);
        report.conflicts.push(whole_record_report(id, merge::Side::Ours, "the cache's issue".into(), printed, reason, Some(theirs)));
        report.merged.push(id.to_owned());
    } else {
        let obj = RawObject::parse_str(theirs).with_context(|| id.to_string())?;
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        let printed = crate::record::printable(ours, 2000);
        report.conflicts.push(whole_record_report(id, merge::Side::Theirs, "the file's issue".into(), printed, reason, Some(ours)));
        report.changed.push(id.to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    /// br's plain import refuses a moved issue only when it has comments: only then is br named.
    #[test]
    fn the_br_advice_after_a_rename_is_given_only_where_br_would_refuse() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("issues.jsonl");
        std::fs::write(dir.path().join(".br-lock"), "").expect("br is the tracker here");
        let report = ImportReport { renamed: vec![RenamedIssue { from: "p.1".into(), to: "p.2".into() }], ..ImportReport::default() };
        std::fs::write(&file, "{\"id\":\"p.1\"}\n{\"id\":\"p.2\",\"comments\":[]}\n").expect("write");
        let said = rename_notice(&report, &file).expect("a notice");
        assert!(said.contains("p.1 is now p.2") && !said.contains("br sync"), "no comments, no br advice: {said}");
        std::fs::write(&file, "{\"id\":\"p.1\"}\n{\"id\":\"p.2\",\"comments\":[{\"id\":1,\"text\":\"x\"}]}\n").expect("write");
        let said = rename_notice(&report, &file).expect("a notice");
        assert!(said.contains("br sync --merge") && said.contains("commit that only if"), "{said}");
    }

    use super::*;
    use crate::cache::{OpenOptions, Paths};
    use std::time::Duration;

    fn open(dir: &std::path::Path, name: &str) -> Cache {
        let paths = Paths { file: dir.join("issues.jsonl"), db: dir.join(name) };
        Cache::open(&paths, OpenOptions { write: true, timeout: Duration::from_secs(5), notice: |_| {} }).expect("open the cache")
    }

    /// Every row the cache holds, as text, in a fixed order.
    fn dump(cache: &Cache) -> Vec<String> {
        let mut out = Vec::new();
        for sql in [
            "SELECT id, title, status, priority, issue_type, assignee, updated_at, raw, line_hash, ready_exclusion FROM issues ORDER BY id",
            "SELECT issue_id, label, position FROM labels ORDER BY issue_id, label",
            "SELECT issue_id, depends_on_id, type, created_at, position, raw FROM dependencies ORDER BY issue_id, depends_on_id, type",
            "SELECT issue_id, comment_id, text, position, raw FROM comments ORDER BY issue_id, position",
            "SELECT issue_id, line, raw FROM duplicate_lines ORDER BY line",
            "SELECT key, value FROM meta WHERE key IN ('go_escapes', 'timestamp_fraction', 'file_hash') ORDER BY key",
        ] {
            let mut st = cache.conn.prepare(sql).expect("valid SQL");
            let n = st.column_count();
            let rows = st
                .query_map([], |r| {
                    (0..n).map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}"))).collect::<rusqlite::Result<Vec<_>>>()
                })
                .expect("query");
            out.extend(rows.map(|r| r.expect("row").join("|")));
        }
        out
    }

    /// Lines that cross every block boundary a small block makes: a BOM, CRLF, blank lines, an
    /// id on two distant lines (the later copy is newer), bd 1.0's header, a bad line, a repeated
    /// key, labels, dependencies and comments.
    fn awkward_file() -> Vec<u8> {
        let mut f = b"\xEF\xBB\xBF{\"_schema\":1,\"kind\":\"header\"}\r\n".to_vec();
        for i in 0..40 {
            let line = format!(
                r#"{{"id":"bd-{i:02}","title":"T{i} <&>","status":"open","priority":{},"updated_at":"2025-01-0{}T00:00:00.{}Z","labels":["b","a{i}"],"dependencies":[{{"issue_id":"bd-{i:02}","depends_on_id":"bd-{:02}","type":"blocks"}}],"comments":[{{"id":{i},"text":"c{i}"}}]}}"#,
                i % 5,
                1 + i % 8,
                100 + i,
                (i + 1) % 40
            );
            f.extend_from_slice(line.as_bytes());
            f.extend_from_slice(b"\r\n");
            if i % 9 == 0 {
                f.extend_from_slice(b"   \r\n");
            }
        }
        f.extend_from_slice(br#"{"id":"bd-03","title":"newer copy","updated_at":"2026-01-01T00:00:00Z"}"#);
        f.extend_from_slice(b"\r\n{\"id\": broken\r\n");
        f.extend_from_slice(br#"{"id":"bd-99","title":"one","title":"two"}"#);
        f
    }

    #[test]
    fn blocks_of_any_size_import_the_same_rows_and_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("issues.jsonl"), awkward_file()).expect("write");
        let options = ImportOptions { skip_invalid: true, ..ImportOptions::default() };
        let mut seen = None;
        for (k, block) in [BLOCK_SIZE, 1, 64, 333].into_iter().enumerate() {
            let mut cache = open(dir.path(), &format!("c{k}.db"));
            let report = import_once(&mut cache, &options, block).expect("import");
            assert_eq!(report.added.len(), 41, "block size {block}");
            assert_eq!(report.duplicate_ids, ["bd-03"]);
            assert_eq!(report.skipped.iter().map(|b| b.line).collect::<Vec<_>>(), [48]);
            assert_eq!(report.repeated_keys, [49]);
            assert_eq!(report.other_records, 1);
            let rows = dump(&cache);
            assert!(rows.iter().any(|r| r.contains("newer copy")), "the newer copy is the issue");
            let summary = (format!("{:?}", (&report.added, &report.skipped, &report.repeated_keys)), rows);
            match &seen {
                None => seen = Some(summary),
                Some(first) => assert_eq!(&summary, first, "block size {block}"),
            }
        }
    }

    #[test]
    fn a_file_rewritten_between_the_two_reads_is_caught() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("issues.jsonl");
        std::fs::write(&file, awkward_file()).expect("write");
        let mut cache = open(dir.path(), "c.db");
        let options = ImportOptions { skip_invalid: true, ..ImportOptions::default() };
        let display = file.display().to_string();
        let state = CacheState::read(&cache).expect("state");
        let opened_file = std::fs::File::open(&file).expect("open");
        let opened = Identity::of(&opened_file.metadata().expect("stat"));
        let scan = Scan::read(opened_file.try_clone().expect("dup"), &file, &display, 64).expect("scan");
        let mut report = ImportReport::default();
        let plans = plan(&scan, &state, false, &mut report);
        std::fs::write(&file, String::from_utf8_lossy(&awkward_file()).replace("T7 ", "T7 edited ")).expect("rewrite");
        let write = Write {
            path: &file,
            file: &opened_file,
            opened,
            display: &display,
            scan: &scan,
            state: &state,
            plans,
            options: &options,
            block_size: 64,
            progress: None,
        };
        let err = write.apply(&mut cache, &mut report, &mut Vec::new()).expect_err("the second read sees other bytes");
        assert!(err.is::<FileChanged>(), "{err:#}");
        assert_eq!(cache.conn.query_row("SELECT count(*) FROM issues", [], |r| r.get::<_, i64>(0)).expect("count"), 0, "nothing written");
        // The public entry point starts over and imports what the file now says.
        let report = import(&mut cache, &options).expect("import");
        assert_eq!(report.added.len(), 41);
        let title: String = cache.conn.query_row("SELECT title FROM issues WHERE id = 'bd-07'", [], |r| r.get(0)).expect("row");
        assert_eq!(title, "T7 edited <&>");
    }
}
