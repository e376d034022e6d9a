//! Whether a tracker's own database holds edits the issues file lacks, and running the tracker's
//! own flush.
//!
//! br keeps its issues in `.beads/*.db` and writes `.beads/issues.jsonl` only when it flushes
//! (`br --no-auto-flush`, `sync.auto_flush: false`); bd 1.0.4 and later keep theirs in Dolt
//! (`.beads/dolt/`) and export JSONL only on request (`export.auto` is off by default, and it
//! stops silently after some migrations). A file committed in that state is merged and imported
//! by every clone, and undoes the newer edits there. So before a commit the pre-commit block asks
//! [`behind`], and `bd-sync check` reports `export-stale`.
//!
//! The common case must cost a commit nothing: file times come first (a `stat` of the database
//! files and of the issues file), and br is asked (`br sync --status --json`) only when a database
//! file is newer than the issues file and not in the state last found in step. That state is kept
//! in `<git dir>/beads/tracker-in-step`, because br touches its database after every flush. A
//! database file that is a symbolic link, a FIFO or a device is never followed or opened. The
//! tracker runs from `PATH` only (never from inside the repository), in its own process group,
//! within a deadline ([`crate::command::run_captured`]). Nothing here writes the issues file: only
//! the tracker's own flush does.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::command::{run_captured, CommandError};

/// A tracker that keeps its issues in a database beside the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracker {
    /// beads_rust: `.beads/*.db` (SQLite, with its `-wal`), flushed by `br sync --flush-only`.
    Br,
    /// bd 1.0.4 and later: `.beads/dolt/`, exported by `bd export -o <file>`; its export state
    /// (`.beads/export-state.json`, written by its auto-export) says when it last exported.
    Bd,
}

impl Tracker {
    /// The program's name, as found on `PATH`.
    pub fn program(self) -> &'static str {
        match self {
            Tracker::Br => "br",
            Tracker::Bd => "bd",
        }
    }

    /// The arguments of the tracker's own flush of `file` (named relative to the top of the work
    /// tree, where it runs).
    pub fn flush_args(self, file: &str) -> Vec<String> {
        match self {
            Tracker::Br => vec!["sync".into(), "--flush-only".into()],
            Tracker::Bd => vec!["export".into(), "-o".into(), file.into()],
        }
    }

    /// The flush as a person types it.
    pub fn flush_command(self, file: &str) -> String {
        std::iter::once(self.program().to_owned()).chain(self.flush_args(file)).collect::<Vec<_>>().join(" ")
    }
}

/// The issues file lacks edits the tracker's database holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    /// Which tracker.
    pub tracker: Tracker,
    /// The newest database file (or Dolt directory entry) that is newer than the issues file.
    pub db: PathBuf,
    /// The issues file.
    pub file: PathBuf,
    /// The issues file relative to the top of the work tree (what the flush command names).
    pub file_rel: String,
    /// The top of the work tree: the parent of `.beads/`.
    pub top: PathBuf,
}

impl Behind {
    /// The command that brings the file up to date.
    pub fn flush_command(&self) -> String {
        self.tracker.flush_command(&self.file_rel)
    }
}

/// Why the tracker could not be asked, or its flush did not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tracker could not be run, or was stopped at the deadline.
    #[error("`{command}` {source}")]
    Command {
        /// The command line.
        command: String,
        /// What happened.
        #[source]
        source: CommandError,
    },
    /// The tracker exited with a failure.
    #[error("`{command}` failed ({status})")]
    Failed {
        /// The command line.
        command: String,
        /// How it exited.
        status: std::process::ExitStatus,
    },
    /// Its answer was not what this version of the tracker prints.
    #[error("`{command}` printed something unexpected: {why}")]
    Unexpected {
        /// The command line.
        command: String,
        /// What was wrong with it.
        why: String,
    },
    /// File times say the tracker's database may hold edits the file lacks, and no program of
    /// the tracker's name is on `PATH` (outside the repository) to ask: an alias, an absolute
    /// path or a wrapper is not found.
    #[error(
        "{} is newer than the issues file, and no `{program}` outside the repository is on PATH to ask whether it holds edits the file \
            lacks; check with `{program} sync --status` (it says \"Dirty issues\" when the file is behind)",
        .db.display()
    )]
    NotOnPath {
        /// The tracker's program name.
        program: &'static str,
        /// Its database file that is newer.
        db: PathBuf,
    },
}

/// At most this many directory entries are looked at (a hostile `.beads/` may hold millions).
const MAX_ENTRIES: usize = 2000;

/// What br prints for `sync --status --json`: at most this many bytes are read.
const STATUS_LIMIT: u64 = 1 << 20;

/// Whether the issues file at `file` (`.beads/issues.jsonl`) lacks edits a tracker's database
/// beside it holds. `Ok(None)` when no tracker database is there, when file times show nothing
/// newer, or when br (not on `PATH`) cannot be asked. br runs only when the times say it may be
/// behind, and must answer before `deadline`.
pub fn behind(file: &Path, deadline: Instant) -> Result<Option<Behind>, Error> {
    behind_by(file, &|| deadline)
}

/// [`behind`], with the deadline computed only when the tracker must be asked (reading the
/// timeout from git config costs a git process the common case does without).
fn behind_by(file: &Path, deadline: &dyn Fn() -> Instant) -> Result<Option<Behind>, Error> {
    let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) else { return Ok(None) };
    let Some(top) = dir.parent() else { return Ok(None) };
    let top = if top.as_os_str().is_empty() { Path::new(".") } else { top };
    let file_rel = file.strip_prefix(top).unwrap_or(file).to_string_lossy().into_owned();
    let make = |tracker, db: PathBuf| Behind { tracker, db, file: file.to_path_buf(), file_rel: file_rel.clone(), top: top.to_path_buf() };
    let suspects = Suspects::of(file);

    // br: asked, when file times suspect its database and it is on PATH.
    if let Some(db) = suspects.br {
        if let Some(br) = on_path(Tracker::Br.program(), top) {
            let shown = "br sync --status --json".to_owned();
            let status = br_status(&br, top, remaining(deadline()))?;
            let dirty = status.get("dirty_count").and_then(serde_json::Value::as_u64);
            let db_newer = status.get("db_newer").and_then(serde_json::Value::as_bool);
            if dirty.is_none() && db_newer.is_none() {
                return Err(Error::Unexpected { command: shown, why: "neither `dirty_count` nor `db_newer`".into() });
            }
            if dirty.unwrap_or(0) > 0 || db_newer == Some(true) {
                return Ok(Some(make(Tracker::Br, db)));
            }
            // br may touch its files while answering: what is recorded is the state after.
            record_in_step(dir, file, &br_database_files(dir));
        } else {
            return Err(Error::NotOnPath { program: Tracker::Br.program(), db });
        }
    }
    // bd: file times against the file and bd's own export state decide.
    Ok(suspects.bd.map(|db| make(Tracker::Bd, db)))
}

/// The tracker databases beside an issues file that file times alone say may hold edits the file
/// lacks (newer than the file, and not recorded as in step with it); nobody is asked.
struct Suspects {
    /// br's newest `.beads/*.db` or `*.db-wal`.
    br: Option<PathBuf>,
    /// bd's newest file under `.beads/dolt/`, when it is also newer than bd's own export.
    bd: Option<PathBuf>,
}

impl Suspects {
    fn of(file: &Path) -> Suspects {
        let none = Suspects { br: None, bd: None };
        let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) else { return none };
        let file_time = match std::fs::symlink_metadata(file) {
            Ok(m) if m.file_type().is_file() => m.modified().ok(),
            // A link, a FIFO, a device: other checks report it; nothing here reads it.
            Ok(_) => return none,
            Err(_) => None,
        };
        let newer = |t: SystemTime| file_time.is_none_or(|f| t > f);
        let br_files = br_database_files(dir);
        let br =
            br_files.iter().max_by_key(|(t, _)| *t).filter(|(t, _)| newer(*t) && !in_step(dir, file, &br_files)).map(|(_, db)| db.clone());
        let dolt = dir.join("dolt");
        let bd = if std::fs::symlink_metadata(&dolt).is_ok_and(|m| m.file_type().is_dir()) {
            newest_in_tree(&dolt).filter(|(t, db)| {
                let behind_export = bd_export_time(dir).is_none_or(|e| *t > e);
                newer(*t) && behind_export && !in_step(dir, file, &[(*t, db.clone())])
            })
        } else {
            None
        };
        Suspects { br, bd: bd.map(|(_, db)| db) }
    }
}

/// Whether file times alone say a tracker's database beside `file` may hold edits the file lacks
/// (the case in which [`behind`] asks the tracker); starts no process. The cache's in-step marker
/// (`cache::in_step`) is not written then, so the pre-commit hook runs its check.
pub fn may_be_behind(file: &Path) -> bool {
    let suspects = Suspects::of(file);
    suspects.br.is_some() || suspects.bd.is_some()
}

/// Runs the tracker's own flush (`br sync --flush-only`, `bd export -o FILE`) at the top of the
/// work tree, stopped after `timeout`. Returns whether the issues file changed (its size, time or
/// inode), and remembers the database as in step with the file.
pub fn flush(behind: &Behind, timeout: Duration) -> Result<bool, Error> {
    let command = behind.flush_command();
    let Some(program) = on_path(behind.tracker.program(), &behind.top) else {
        return Err(Error::Command {
            command,
            source: CommandError::Start(std::io::Error::new(std::io::ErrorKind::NotFound, "not found on PATH")),
        });
    };
    let before = crate::safe_fs::Identity::at(&behind.file);
    let mut cmd = Command::new(program);
    cmd.args(behind.tracker.flush_args(&behind.file_rel)).current_dir(&behind.top).stdin(Stdio::null()).stderr(Stdio::null());
    if behind.tracker == Tracker::Bd {
        // bd's own hooks skip their auto-export under this; an explicit export is unaffected.
        cmd.env("BD_GIT_HOOK", "1");
    }
    let out = run_captured(&mut cmd, timeout, STATUS_LIMIT).map_err(|source| Error::Command { command: command.clone(), source })?;
    if !out.status.success() {
        return Err(Error::Failed { command, status: out.status });
    }
    let dir = behind.file.parent().unwrap_or(Path::new("."));
    let files = match behind.tracker {
        Tracker::Br => br_database_files(dir),
        Tracker::Bd => newest_in_tree(&dir.join("dolt")).into_iter().collect(),
    };
    record_in_step(dir, &behind.file, &files);
    Ok(crate::safe_fs::Identity::at(&behind.file) != before)
}

/// What the pre-commit step did about a tracker database holding edits the file lacks.
#[derive(Debug)]
pub enum PreCommit {
    /// Nothing to do: no tracker database, or it is in step with the file.
    InStep,
    /// The file is behind and `beads.flushOnCommit` is not set: the caller names the flush.
    Behind(Behind),
    /// The tracker's flush ran; `changed` says whether it changed the file, `staged` whether
    /// staging it failed (with git's words).
    Flushed {
        /// What was behind.
        behind: Behind,
        /// Whether the flush changed the file.
        changed: bool,
        /// `Err` with git's words when `git add` failed.
        staged: Result<(), String>,
    },
    /// The flush failed or was stopped at its timeout; the commit goes on with the file as it is.
    FlushFailed(Behind, Error),
    /// The tracker could not be asked whether the file is behind.
    Unknown(Error),
}

/// The default bound of each tracker run, its status question and its flush
/// (`beads.flushTimeout`, seconds).
pub const DEFAULT_FLUSH_TIMEOUT: Duration = Duration::from_secs(60);

/// The pre-commit step: when a tracker's database holds edits the issues file lacks, either run
/// the tracker's own flush (with `git config beads.flushOnCommit true`) and, when `stage` and it
/// changed the file, `git add` the file; or leave the file alone for the caller to name the flush.
/// Each tracker run is bounded by `beads.flushTimeout` seconds (default 60). Never fails: every
/// outcome is a value.
pub fn pre_commit(file: &Path, stage: bool) -> PreCommit {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Read lazily: the common case (nothing behind) runs no git.
    let config = |key: &str| crate::git::run(dir, &["config", "--get", key]).ok();
    let timeout = std::cell::OnceCell::new();
    let timeout = || {
        *timeout.get_or_init(|| {
            config("beads.flushTimeout")
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|s| (1..=86_400).contains(s))
                .map_or(DEFAULT_FLUSH_TIMEOUT, Duration::from_secs)
        })
    };
    let start = Instant::now();
    let found = match behind_by(file, &|| start + timeout()) {
        Ok(None) => return PreCommit::InStep,
        Ok(Some(b)) => b,
        Err(e) => return PreCommit::Unknown(e),
    };
    let on = config("beads.flushOnCommit").is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1"));
    if !on {
        return PreCommit::Behind(found);
    }
    // The flush has the whole bound of its own: the status question before it was quick or failed.
    match flush(&found, timeout()) {
        Err(e) => PreCommit::FlushFailed(found, e),
        Ok(changed) => {
            let staged = if changed && stage { crate::git::stage(&found.file).map_err(|e| format!("{e:#}")) } else { Ok(()) };
            PreCommit::Flushed { behind: found, changed, staged }
        }
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))
}

/// Whether the `.beads/` directory `dir` holds br's database (br keeps this clone's issues).
pub fn is_br_directory(dir: &Path) -> bool {
    !br_database_files(dir).is_empty()
}

/// br's database files in `dir`: regular `*.db` / `*.db-wal` files (links, FIFOs and devices are
/// never followed), without our own cache (`cache.db`, which lives there outside a repository).
fn br_database_files(dir: &Path) -> Vec<(SystemTime, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten().take(MAX_ENTRIES) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.ends_with(".db") || name.ends_with(".db-wal")) || name.starts_with("cache.db") {
            continue;
        }
        // `DirEntry::metadata` does not follow a symbolic link.
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.file_type().is_file() {
            continue;
        }
        if let Ok(t) = meta.modified() {
            out.push((t, entry.path()));
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// The newest entry of a Dolt directory tree (to a small depth and entry count, never through a
/// symbolic link).
fn newest_in_tree(root: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    let mut stack = vec![(root.to_path_buf(), 0u32)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return newest;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.file_type().is_dir() && depth < 5 {
                stack.push((entry.path(), depth + 1));
            } else if meta.file_type().is_file() {
                if let Ok(t) = meta.modified() {
                    if newest.as_ref().is_none_or(|(n, _)| t > *n) {
                        newest = Some((t, entry.path()));
                    }
                }
            }
        }
    }
    newest
}

/// When bd last exported, from its export state (`.beads/export-state.json`, `timestamp`).
fn bd_export_time(dir: &Path) -> Option<SystemTime> {
    let bytes = crate::safe_fs::read_regular(&dir.join("export-state.json"), 1 << 20).ok()??;
    let state: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let at = crate::timestamp::parse(state.get("timestamp")?.as_str()?)?;
    let secs = u64::try_from(at.seconds).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::new(secs, at.nanos))
}

/// The record of the database and file found in step: their paths, sizes and times, one a line.
fn fingerprint(file: &Path, db_files: &[(SystemTime, PathBuf)]) -> String {
    let mut s = String::new();
    for path in std::iter::once(file).chain(db_files.iter().map(|(_, p)| p.as_path())) {
        let (len, nanos, ino) = crate::safe_fs::Identity::at(path).map_or((0, 0, 0), |id| (id.size, id.mtime_ns, id.ino));
        s.push_str(&format!("{}\t{len}\t{nanos}\t{ino}\n", path.display()));
    }
    s
}

/// Where the in-step record lives: `<git dir>/beads/tracker-in-step` (per worktree, like the
/// cache), or `None` outside a repository.
fn record_path(dir: &Path) -> Option<PathBuf> {
    let git_dir = crate::git::git_dir(dir)?;
    Some(git_dir.join("beads").join("tracker-in-step"))
}

fn in_step(dir: &Path, file: &Path, db_files: &[(SystemTime, PathBuf)]) -> bool {
    let Some(path) = record_path(dir) else { return false };
    let Ok(Some(recorded)) = crate::safe_fs::read_regular(&path, 1 << 20) else { return false };
    recorded == fingerprint(file, db_files).as_bytes()
}

/// Remembers that the tracker's database and the file are in step as they are now. Best effort:
/// without the record the next commit asks the tracker again.
fn record_in_step(dir: &Path, file: &Path, db_files: &[(SystemTime, PathBuf)]) {
    let Some(git_dir) = crate::git::git_dir(dir) else { return };
    let Ok(beads) = crate::safe_fs::managed_dir(&git_dir, &["beads"]) else { return };
    let _ = crate::safe_fs::write_atomic(&beads.join("tracker-in-step"), fingerprint(file, db_files).as_bytes());
}

/// The tracker that keeps the issues of the `.beads/` directory `dir` and is on `PATH` (from
/// outside the work tree `top`): br beside `.beads/*.db`, bd beside `.beads/dolt/`, else
/// whichever of the two is on `PATH` (br first). With its program's path.
pub fn of_directory(dir: &Path, top: &Path) -> Option<(Tracker, PathBuf)> {
    let dolt = std::fs::symlink_metadata(dir.join("dolt")).is_ok_and(|m| m.file_type().is_dir());
    let order = if !br_database_files(dir).is_empty() {
        [Tracker::Br, Tracker::Bd]
    } else if dolt {
        [Tracker::Bd, Tracker::Br]
    } else {
        [Tracker::Br, Tracker::Bd]
    };
    order.into_iter().find_map(|t| on_path(t.program(), top).map(|p| (t, p)))
}

/// Asks the tracker at `program` (run at `top`, stopped after `timeout`) to add the comment
/// `text` to the issue `id`: the tracker writes its own database and file.
pub fn add_comment(tracker: Tracker, program: &Path, top: &Path, id: &str, text: &str, timeout: Duration) -> Result<(), Error> {
    run_tracker(program, top, &["comments", "add", id, text], format!("{} comments add {id} …", tracker.program()), timeout)
}

/// br's own account of its database and file (`br sync --status --json`, which imports and
/// exports nothing), run at `top` with the program at `program`, stopped after `timeout`.
fn br_status(program: &Path, top: &Path, timeout: Duration) -> Result<serde_json::Value, Error> {
    let shown = "br sync --status --json".to_owned();
    let mut cmd = Command::new(program);
    cmd.args(["sync", "--status", "--json"]).current_dir(top).stdin(Stdio::null()).stderr(Stdio::null()).env("NO_COLOR", "1");
    let out = run_captured(&mut cmd, timeout, STATUS_LIMIT).map_err(|source| Error::Command { command: shown.clone(), source })?;
    if !out.status.success() {
        return Err(Error::Failed { command: shown, status: out.status });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Unexpected { command: shown, why: format!("not JSON ({e})") })
}

/// br's count of unexported edits ([`br_status`]'s `dirty_count`); `None` when br cannot tell.
pub fn br_dirty_count(program: &Path, top: &Path, timeout: Duration) -> Option<u64> {
    br_status(program, top, timeout).ok()?.get("dirty_count")?.as_u64()
}

/// Runs the tracker at `program` with `args` at `top`, stopped after `timeout`; `shown` names
/// the command in errors.
fn run_tracker(program: &Path, top: &Path, args: &[&str], shown: String, timeout: Duration) -> Result<(), Error> {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(top).stdin(Stdio::null()).stderr(Stdio::null());
    let out = run_captured(&mut cmd, timeout, STATUS_LIMIT).map_err(|source| Error::Command { command: shown.clone(), source })?;
    if !out.status.success() {
        return Err(Error::Failed { command: shown, status: out.status });
    }
    Ok(())
}

/// Runs br's command `args` at `top` (the program at `program`, stopped after `timeout`): the
/// import a merge that moved an issue of this clone needs (`git config beads.brSyncMerge`).
pub fn run_br(program: &Path, top: &Path, args: &[&str], timeout: Duration) -> Result<(), Error> {
    run_tracker(program, top, args, format!("br {}", args.join(" ")), timeout)
}

/// The program `name` in an absolute `PATH` directory outside every checkout of the repository
/// at `top` (its work trees, linked worktrees and git directory: [`crate::git::checkouts`]); a
/// program a repository can commit is never run.
fn on_path(name: &str, top: &Path) -> Option<PathBuf> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let path = std::env::var_os("PATH")?;
    let mut found = std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        .peekable();
    // The checkouts are read only when a candidate exists (most PATHs have no tracker).
    found.peek()?;
    let checkouts: Vec<PathBuf> = crate::git::checkouts(top).iter().map(|c| canonical(c)).collect();
    found.find(|p| {
        let dir = canonical(p.parent().unwrap_or(p));
        !checkouts.iter().any(|c| dir.starts_with(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_commands_are_the_trackers_own() {
        assert_eq!(Tracker::Br.flush_command(".beads/issues.jsonl"), "br sync --flush-only");
        assert_eq!(Tracker::Bd.flush_command(".beads/issues.jsonl"), "bd export -o .beads/issues.jsonl");
    }

    #[test]
    fn database_links_and_fifos_are_not_database_files() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("beads.db"), b"x").expect("write");
        std::fs::write(dir.path().join("cache.db"), b"x").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("other.db")).expect("link");
        let files = br_database_files(dir.path());
        assert_eq!(files.iter().map(|(_, p)| p.file_name().expect("name").to_owned()).collect::<Vec<_>>(), ["beads.db"]);
    }
}
