//! Bringing the cache up to date with the issues file, incrementally and in one transaction.
//!
//! An unchanged file (same size, inode and nanosecond mtime as at the last sync, or the same xxh3
//! hash) is a no-op. Otherwise only lines whose hash changed are parsed; ids gone from the file are
//! removed. An issue edited through SQL and also changed in the file is merged three-way (base:
//! the line as last synced; ours: the cache; theirs: the file) with the merge engine, and stays
//! dirty for the next export. Any malformed line aborts the whole import and its transaction is
//! rolled back, so nothing is written, unless `skip_invalid` is set. The file is read in blocks
//! and never held whole, so memory does not grow with its size.
//!
//! The operation's public types (options, report) are in [`types`]; its algorithm is in phases:
//! [`scan`] (the first pass and the plan), [`read`] and [`write`] (the second pass and the one
//! transaction), [`dirty`] (issues edited in the cache and in the file) and [`renames`] (issues a
//! merge moved to a new id).

mod dirty;
mod read;
mod renames;
mod scan;
#[cfg(test)]
mod tests;
mod types;
mod write;

pub use super::error::{BadLine, InvalidFile};
pub use renames::{rename_notice, RenameNotice};
pub use types::{ImportOptions, ImportReport, RenamedIssue, SyncPolicy};

use anyhow::Context;

use super::freshness::{facts_unchanged, record_file_state, stored_hash};
use super::{with_guard, Cache, Error};
use crate::safe_fs::Identity;
use renames::find_renamed;
use scan::{plan, CacheState, Scan};
use write::Write;

/// Why one attempt at an import stopped: the two reasons to start over, or a failure.
#[derive(Debug, thiserror::Error)]
enum Stop {
    /// An SQL edit made another issue dirty between planning an import and writing it.
    #[error("the cache was edited during the import")]
    DirtySetChanged,
    /// The file was rewritten between the two reads of one import.
    #[error("the file changed while it was imported")]
    FileChanged,
    /// Anything else, as the caller sees it.
    #[error(transparent)]
    Failed(#[from] Error),
}

impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Stop {
        Stop::Failed(Error::Other(e))
    }
}

impl From<rusqlite::Error> for Stop {
    fn from(e: rusqlite::Error) -> Stop {
        Stop::Failed(Error::from(e))
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Stop {
        Stop::Failed(Error::Other(e.into()))
    }
}

/// Imports the issues file into the cache.
///
/// The file is read twice, in blocks, so that its size never sets the memory used: a first pass
/// finds each line's id and hash, which decides what changed; a second pass, inside the write
/// transaction, decodes and stores the changed lines one block at a time. The plan (which rows are
/// edited in the cache) is made before the write lock is taken, so an SQL edit may land in
/// between; the write then finds the dirty set changed, rolls back, and the import starts over
/// with the edit in view, so it is merged, never overwritten. A file rewritten between the two
/// passes is caught the same way (every line read again must have the hash it had).
pub fn import(cache: &mut Cache, options: &ImportOptions) -> Result<ImportReport, Error> {
    for _ in 0..16 {
        match import_once(cache, options, BLOCK_SIZE) {
            Ok(report) => return Ok(report),
            Err(Stop::DirtySetChanged | Stop::FileChanged) => continue,
            Err(Stop::Failed(e)) => return Err(e),
        }
    }
    Err(Error::Other(anyhow::anyhow!("the cache or the file kept changing while importing (16 attempts); nothing was imported, try again")))
}

/// Bytes read per block: large enough to keep both cores busy decoding, small next to the file.
const BLOCK_SIZE: usize = 8 << 20;

/// Decoded lines handed from the reader thread to the writer at a time.
const BATCH_LINES: usize = 4096;

fn import_once(cache: &mut Cache, options: &ImportOptions, block_size: usize) -> Result<ImportReport, Stop> {
    let path = cache.paths.file.clone();
    // A stat decides the common case. A file whose stat changed is not hashed whole first: the
    // scan below hashes it anyway, and a touched file with the same bytes is told by that hash
    // (one read of the file, not two, before the changed lines are read).
    if !options.force && facts_unchanged(cache)? {
        return Ok(ImportReport { noop: true, ..ImportReport::default() });
    }
    let stored_hash = stored_hash(cache)?;
    let display = path.display().to_string();
    let state = CacheState::read(cache)?;
    // Both passes read this one descriptor, and the version recorded as synced is the one it
    // opened: another writer renaming a new file over the path meanwhile is seen by the next
    // look at the path, never mistaken for what was read.
    let file = crate::safe_fs::open_existing(&path).with_context(|| format!("reading {display}"))?;
    let opened_meta = file.metadata().with_context(|| format!("reading {display}"))?;
    let (opened, opened_ctime) = (Identity::of(&opened_meta), write::change_time(&opened_meta));
    let mut scan = Scan::read(file.try_clone().with_context(|| format!("reading {display}"))?, &path, &display, block_size)?;
    if !options.force && stored_hash == Some(scan.hash) {
        // Touched, but the same bytes: only the facts of the version read are recorded.
        with_guard::<_, Stop>(&mut cache.conn, |tx| Ok(record_file_state(tx, &path, opened, scan.hash)?))?;
        return Ok(ImportReport { noop: true, ..ImportReport::default() });
    }
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
        opened_ctime,
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
