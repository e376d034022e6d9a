//! The marker that lets the pre-commit hook start nothing on a commit with nothing to do.
//!
//! Every commit runs the pre-commit block, and almost every commit has no cache edit to export,
//! no tracker database ahead of the file and no conflict markers to resolve. A process to find
//! that out costs more than the answer, so the block reads file times instead
//! (hooks/pre-commit.sh): `cache.in-step`, beside the cache, is written when the cache held no
//! unexported edit and was in step with its issues file, and the block starts `bd-sync` only
//! when the cache, its journal, the issues file or a tracker's database is newer than it. An SQL
//! edit writes the cache (or its journal), a tracker writes its database and the file, so each
//! makes the marker older than what changed; a file moved into `.beads/` with an old time moves
//! the directory's time. A shell whose `test -nt` sees whole seconds only (macOS's bash 3.2)
//! takes an equal second as "not newer": it starts `bd-sync`, which is safe. A clock stepped back
//! would leave the marker in the future: the block first writes a probe file, and skips only when
//! the probe is newer than the marker. (Known limit: `cp -p` over the issues file in place, which
//! keeps an old time and moves no directory, is seen by the next import, not by this check.)

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Cache, OpenMode, Paths};

/// Where the marker of the cache at `db` lives: `cache.in-step` beside `cache.db`.
pub fn marker(db: &Path) -> PathBuf {
    db.with_extension("in-step")
}

/// Writes the marker when the cache holds no unexported edit, its issues file is the version it
/// last synced with, and no tracker's database may be ahead of that file; removes it otherwise.
/// (A caller that let invalid lines through, `import --skip-invalid`, must not call it: such a
/// file may hold conflict markers the hook would resolve.) Call it with the cache closed: SQLite's last close
/// may write the database, which would leave the marker older than the cache (and the next
/// commit would only start `bd-sync` for nothing). The state is read again after the marker is
/// written, so an edit that landed in between is never hidden behind a marker newer than it.
/// Returns whether the marker stands; never fails (without it the hook does the work).
pub fn mark(paths: &Paths) -> bool {
    let first = Cache::open(paths, OpenMode::read(Duration::from_millis(500))).is_ok_and(|cache| in_step(&cache));
    mark_after(paths, first)
}

/// [`mark`] for a caller that has the cache open (an import that just wrote it): the first look
/// is taken through its connection, which is then closed, saving an open of the cache (the
/// schema read, the locks) on every hook run that imports.
pub fn mark_closing(cache: Cache) -> bool {
    let first = in_step(&cache);
    let paths = cache.paths.clone();
    drop(cache);
    mark_after(&paths, first)
}

/// Whether the cache holds no unexported edit, is in step with its issues file, and no tracker's
/// database may be ahead of that file.
fn in_step(cache: &Cache) -> bool {
    // A tracker's database that may be ahead of the file keeps the hook's check running.
    !crate::tracker::may_be_behind(&cache.paths.file)
        && cache.dirty_count().is_ok_and(|n| n == 0)
        && cache.file_untouched_since_sync().unwrap_or(false)
}

/// Writes the marker when `first` (the state before it) and the state read again after it both
/// say in step; removes it otherwise.
fn mark_after(paths: &Paths, first: bool) -> bool {
    let marker = marker(&paths.db);
    let again = || Cache::open(paths, OpenMode::read(Duration::from_millis(500))).is_ok_and(|cache| in_step(&cache));
    if first && write(&marker) && again() {
        return true;
    }
    let _ = std::fs::remove_file(&marker);
    false
}

/// Writes the current time into the marker (a write, so its modification time moves even when
/// its content would not), never through a link.
fn write(marker: &Path) -> bool {
    let Ok(mut file) = crate::safe_fs::open_for_update(marker) else { return false };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    file.set_len(0).is_ok() && std::io::Write::write_all(&mut file, format!("{now}\n").as_bytes()).is_ok()
}
