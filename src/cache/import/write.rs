//! The writing half of the import's second pass: one transaction that stores the planned lines
//! as the reader thread decodes them, settles ids on several lines, removes issues that left the
//! file and records the version synced, or writes nothing.

use anyhow::Result;
use rusqlite::{params, Transaction};

use super::dirty::merge_dirty;
use super::read::{decode_line, Batch, Decoded, PlannedLines};
use super::renames::note_replacement;
use super::scan::{excerpt, Action, CacheState, DuplicateLine, Plan, Scan};
use super::{BadLine, ImportOptions, ImportReport, InvalidFile, Stop};
use crate::cache::codec::{self, store_issue};
use crate::cache::freshness::record_file_state;
use crate::cache::{line_hash, with_guard, Cache};
use crate::merge::{self, MergeOptions, Report};
use crate::record::RawObject;
use crate::safe_fs::Identity;
use crate::timestamp;

/// The write of one import: the second pass over the file, inside one transaction.
pub(super) struct Write<'a> {
    pub(super) path: &'a std::path::Path,
    /// The descriptor the first pass read, read again from its start by the second.
    pub(super) file: &'a std::fs::File,
    /// The version of the file it opened.
    pub(super) opened: Identity,
    /// Its inode change time then ([`change_time`]).
    pub(super) opened_ctime: (i64, i64),
    pub(super) display: &'a str,
    pub(super) scan: &'a Scan,
    pub(super) state: &'a CacheState,
    pub(super) plans: Vec<Plan>,
    pub(super) options: &'a ImportOptions,
    pub(super) block_size: usize,
    pub(super) progress: Option<&'a indicatif::ProgressBar>,
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
    /// The ids in use, once an issue moves (two issues under one id).
    taken: super::dirty::Taken<'r>,
}

impl Write<'_> {
    /// Streams the file again and writes the plans in one transaction, with the triggers
    /// silenced. Fails with [`Stop::DirtySetChanged`] or [`Stop::FileChanged`] (writing nothing) if an SQL
    /// edit landed or the file changed since the plan; with [`InvalidFile`] (writing nothing) if
    /// a line is bad and `skip_invalid` is off.
    pub(super) fn apply(self, cache: &mut Cache, report: &mut ImportReport, bad: &mut Vec<BadLine>) -> Result<(), Stop> {
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
            now: Some(timestamp::merge_now().map_err(anyhow::Error::from)?),
            partial: true,
            ..MergeOptions::default()
        };
        let file_ids = || self.scan.ids.iter().map(ToString::to_string).collect::<Vec<String>>();
        let mut written =
            Written { report, bad, stamps: Vec::new(), added: Vec::new(), taken: super::dirty::Taken { file_ids: &file_ids, ids: None } };
        let result = with_guard(&mut cache.conn, |tx| -> Result<(), Stop> {
            let now: Vec<String> = {
                let mut st = tx.prepare("SELECT issue_id FROM dirty")?;
                let rows = st.query_map([], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            if now.len() != self.state.dirty.len() || now.iter().any(|id| !self.state.dirty.contains_key(id)) {
                return Err(Stop::DirtySetChanged);
            }
            let schema = if cold { drop_indexes_and_triggers(tx)? } else { Vec::new() };
            tx.execute("DELETE FROM duplicate_lines", [])?;
            let copies = self.stream(tx, &merge_options, &mut written)?;
            self.settle_duplicates(tx, &copies, &merge_options, &mut written)?;
            if !written.bad.is_empty() && !self.options.skip_invalid {
                written.bad.sort_by_key(|b| b.line);
                return Err(Stop::Failed(InvalidFile(std::mem::take(written.bad)).into()));
            }
            self.remove_missing(tx, written.report)?;
            restore_indexes_and_triggers(tx, &schema)?;
            // An in-place write during the reads (same inode, new size or time) is caught here;
            // the change time too, which no writer can set back (the second pass may read only a
            // few lines by offset, so this stands in for hashing the whole file again).
            let now = self.file.metadata()?;
            if Identity::of(&now) != self.opened || change_time(&now) != self.opened_ctime {
                return Err(Stop::FileChanged);
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
    fn stream(&self, tx: &Transaction<'_>, merge_options: &MergeOptions, written: &mut Written<'_>) -> Result<Vec<DuplicateLine>, Stop> {
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
        let mut copies = std::thread::scope(|s| -> Result<Vec<DuplicateLine>, Stop> {
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
                written.bad.push(BadLine { path: self.display.to_owned(), line: number, problem: p, excerpt: excerpt(text.as_bytes()) });
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
                let dirty = &self.state.dirty;
                merge_dirty(tx, id, text, self.scan.go_style, merge_options, dirty, written.report, &mut written.taken)?;
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

/// A file's inode change time (seconds, nanoseconds); `(0, 0)` where the platform has none (the
/// other facts are compared there).
pub(super) fn change_time(meta: &std::fs::Metadata) -> (i64, i64) {
    #[cfg(unix)]
    if crate::platform::unix_calls() {
        use std::os::unix::fs::MetadataExt as _;
        return (meta.ctime(), meta.ctime_nsec());
    }
    let _ = meta;
    (0, 0)
}
