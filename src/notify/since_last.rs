//! `bd-hook since-last`: every id changed since the last successful run, exactly once.
//!
//! A cron job or a wrapper around a tracker cannot know which commits landed, were rewritten or
//! thrown away since it last ran, and `from-diff HEAD~1` misses or repeats changes when several
//! commits, none, a rebase or a reset happened in between. This mode does not look at history at
//! all: it compares the issues as they are now (the working file, or the output of a command such
//! as `bd export`) with what it last delivered, kept in the git dir. The state holds, per source
//! (the issues file's path, or the command), a 128-bit hash of every id's record bytes; an id is
//! notified when its hash differs (added, changed, deleted, or changed back to older content).
//!
//! The state advances only for ids the server took (a 2xx or a 404), so a failed delivery is
//! retried by the next run: at least once, never silently lost. The first run of a state records
//! a baseline and notifies nothing. Runs of one state are serialized by a lock beside it, opened
//! without following a link; a `--source-cmd` is stopped at its timeout (see [`crate::command`]),
//! so no run holds the lock past it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::diff::{changes, Snapshot};

/// The most bytes of an issues file or a command's output read.
pub const MAX_SNAPSHOT: u64 = 4 << 30;

/// How long `--source-cmd` may run before it is stopped with its process group, unless
/// `--source-cmd-timeout` says otherwise.
pub const SOURCE_CMD_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a run did nothing, for the cases a person acts on; the binary words them with its own
/// flags. Nothing was notified and the state is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source command could not be started, or was stopped at its timeout.
    #[error("the source command {command:?} did not finish; nothing was notified and the state is unchanged")]
    SourceCommand {
        /// The command.
        command: String,
        /// What happened.
        #[source]
        cause: crate::command::CommandError,
    },
    /// The source command exited with a failure.
    #[error("the source command {command:?} failed ({status}); nothing was notified and the state is unchanged")]
    SourceFailed {
        /// The command.
        command: String,
        /// How it exited.
        status: std::process::ExitStatus,
    },
    /// The state is kept in the git dir, and the directory is in no git repository.
    #[error("the state is kept in the git dir, and {} is not in a git repository", .dir.display())]
    NotInRepository {
        /// The directory the run was started in.
        dir: PathBuf,
    },
    /// The state file does not hold a state.
    #[error("{} is not a notifier state; remove it to start again with a baseline", .path.display())]
    NotAState {
        /// The state file.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        cause: serde_json::Error,
    },
    /// The state file was written by a newer version, in a format this one does not know.
    #[error("{} was written by a newer version (state version {version})", .path.display())]
    NewerState {
        /// The state file.
        path: PathBuf,
        /// Its format version.
        version: u32,
    },
    /// Anything else, with its context.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Where the issues come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The working file: this path inside the work tree, or the usual candidates.
    File(Option<String>),
    /// A shell command printing the issues as JSONL on stdout, run at the work tree's top.
    Command(String),
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// A directory inside the repository.
    pub dir: PathBuf,
    /// The state's name (`--state`), so several consumers can keep their own.
    pub state: String,
    /// Where the issues come from.
    pub source: Source,
    /// How long a [`Source::Command`] may run ([`SOURCE_CMD_TIMEOUT`] by default).
    pub command_timeout: Duration,
    /// Told, in one line, what the run did that did not stop it (a process the command left
    /// holding its output was stopped).
    pub notice: fn(&str),
}

/// Checks a state name: 1 to 64 of `A-Z a-z 0-9 . _ -`, not starting with a dot.
pub fn valid_state_name(name: &str) -> std::result::Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(format!("{name:?} is not a state name: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'"))
    }
}

/// One source's last delivered state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SourceState {
    /// Id -> hex hash of its record's lines.
    records: BTreeMap<String, String>,
}

/// The state file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct State {
    /// Format version.
    version: u32,
    /// Source key (`file:<path>` or `cmd:<command>`) -> its state.
    sources: BTreeMap<String, SourceState>,
}

const VERSION: u32 = 1;

/// A run in progress: the ids to notify and what to record once they are delivered. Holds the
/// state's lock until dropped.
pub struct Run {
    /// Ids to notify: added and changed in the snapshot's order, then deleted ones.
    pub ids: Vec<String>,
    /// True when there was no state for this source: [`Run::record`] records a baseline, and
    /// `ids` is empty.
    pub baseline: bool,
    /// Records in the snapshot taken now.
    pub records: usize,
    /// What was read, for messages (a path or the command).
    pub source_name: String,
    path: PathBuf,
    key: String,
    state: State,
    now: BTreeMap<String, String>,
    _lock: std::fs::File,
}

impl Run {
    /// Where the state lives.
    pub fn state_path(&self) -> &Path {
        &self.path
    }

    /// Records what got through: every id for which `delivered` says yes takes its new hash (or
    /// is forgotten when deleted); the rest keep their old one, so the next run sends them again.
    /// A baseline records everything.
    pub fn record(mut self, delivered: impl Fn(&str) -> bool) -> Result<()> {
        let entry = self.state.sources.entry(self.key.clone()).or_default();
        if self.baseline {
            entry.records = std::mem::take(&mut self.now);
        } else {
            for id in &self.ids {
                if !delivered(id) {
                    continue;
                }
                match self.now.get(id) {
                    Some(hash) => {
                        entry.records.insert(id.clone(), hash.clone());
                    }
                    None => {
                        entry.records.remove(id);
                    }
                }
            }
        }
        self.state.version = VERSION;
        let bytes = serde_json::to_vec(&self.state).context("encoding the notifier's state")?;
        crate::safe_fs::write_atomic(&self.path, &bytes).with_context(|| format!("writing {}", self.path.display()))
    }
}

/// The hash of each id's record lines, from issues file bytes (every line must parse).
fn record_hashes(content: Vec<u8>, what: &str) -> Result<BTreeMap<String, String>> {
    let snapshot = Snapshot::parse(content, true, None).map_err(|e| {
        anyhow::anyhow!("{what}: {e}; nothing was notified and the state is unchanged (fix the file, or wait for the write to finish)")
    })?;
    Ok(ordered_hashes(&snapshot).into_iter().collect())
}

/// `(id, hash)` in the snapshot's order.
fn ordered_hashes(snapshot: &Snapshot) -> Vec<(String, String)> {
    changes(&Snapshot::default(), snapshot)
        .added
        .into_iter()
        .map(|id| {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            for line in snapshot.lines(&id) {
                h.update(line);
                h.update(b"\n");
            }
            let hash = format!("{:032x}", h.digest128());
            (id, hash)
        })
        .collect()
}

/// Runs `sh -c command` in `dir` and returns its stdout (at most [`MAX_SNAPSHOT`] bytes); its
/// stderr goes to ours. At `timeout` the command and every process it started in its process
/// group are stopped and this returns at once (see [`crate::command`]), so the caller's lock is
/// never held past it.
pub fn run_source_command(command: &str, dir: &Path, timeout: Duration, notice: fn(&str)) -> Result<Vec<u8>, Error> {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(dir).stdin(std::process::Stdio::null());
    let done = crate::command::run_captured(&mut cmd, timeout, MAX_SNAPSHOT)
        .map_err(|cause| Error::SourceCommand { command: command.to_owned(), cause })?;
    if !done.status.success() {
        return Err(Error::SourceFailed { command: command.to_owned(), status: done.status });
    }
    if done.lingering {
        notice(&format!(
            "--source-cmd {}: it exited, but a process it started in the background still held its output {} s later; {} and the output \
                read until then was used (redirect a background process's output, e.g. `>/dev/null`)",
            crate::record::printable(command, 200),
            crate::command::AFTER_EXIT.as_secs(),
            crate::command::lingering_stopped()
        ));
    }
    Ok(done.stdout)
}

/// Takes the snapshot, compares it with the state and returns the run (holding the lock).
/// `Ok(None)` when another run of the same state holds the lock.
pub fn prepare(options: &Options) -> Result<Option<Run>, Error> {
    valid_state_name(&options.state).map_err(anyhow::Error::msg)?;
    let git_dir = crate::git::git_dir(&options.dir).ok_or_else(|| Error::NotInRepository { dir: options.dir.clone() })?;
    let top = crate::git::run(&options.dir, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .with_context(|| format!("finding the work tree of {}", options.dir.display()))?;
    let dir = crate::safe_fs::managed_dir(&git_dir, &["beads", "since-last"]).map_err(anyhow::Error::from)?;
    let path = dir.join(format!("{}.json", options.state));
    let Some(lock) = lock(&dir.join(format!("{}.lock", options.state)))? else {
        return Ok(None);
    };

    let (key, source_name, content) = match &options.source {
        Source::File(rel) => {
            let rel = match rel {
                Some(r) => r.clone(),
                None => crate::git::ISSUES_PATHS.iter().find(|p| top.join(p).exists()).unwrap_or(&crate::git::ISSUES_PATHS[0]).to_string(),
            };
            crate::safe_fs::refuse_linked_dir(&top.join(crate::jsonl::BEADS_DIR)).map_err(anyhow::Error::from)?;
            let file = top.join(&rel);
            let content = match crate::safe_fs::bounded::read_regular(&file, MAX_SNAPSHOT) {
                Ok(c) => c,
                Err(crate::safe_fs::bounded::SafeReadError::NotFound) => Vec::new(),
                Err(e) => return Err(anyhow::anyhow!("{}: {e}", file.display()).into()),
            };
            (format!("file:{rel}"), file.display().to_string(), content)
        }
        Source::Command(cmd) => (
            format!("cmd:{cmd}"),
            format!("the output of {cmd:?}"),
            run_source_command(cmd, &top, options.command_timeout, options.notice)?,
        ),
    };
    let now = record_hashes(content, &source_name)?;

    let state: State = match crate::safe_fs::bounded::read_regular(&path, MAX_SNAPSHOT) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|cause| Error::NotAState { path: path.clone(), cause })?,
        Err(crate::safe_fs::bounded::SafeReadError::NotFound) => State::default(),
        Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", path.display()).into()),
    };
    if state.version > VERSION {
        return Err(Error::NewerState { path, version: state.version });
    }
    let Some(old) = state.sources.get(&key) else {
        return Ok(Some(Run { ids: Vec::new(), baseline: true, records: now.len(), source_name, path, key, state, now, _lock: lock }));
    };
    let mut ids = Vec::new();
    // Added and changed ids in id order (the hashes are kept sorted by id), then deleted ones.
    for (id, hash) in &now {
        if old.records.get(id) != Some(hash) {
            ids.push(id.clone());
        }
    }
    for id in old.records.keys() {
        if !now.contains_key(id) {
            ids.push(id.clone());
        }
    }
    Ok(Some(Run { ids, baseline: false, records: now.len(), source_name, path, key, state, now, _lock: lock }))
}

/// How a `--since-last` run ended.
#[derive(Debug)]
pub enum RunOutcome {
    /// Another run of the same state holds its lock: nothing was done.
    Busy,
    /// There was no state for this source: a baseline of `records` issues was recorded in
    /// `state` (`None` in a dry run, which records nothing) and nothing was notified.
    Baseline {
        /// Issues in the snapshot.
        records: usize,
        /// What was read (a path, or the command).
        source: String,
        /// The state file written.
        state: Option<PathBuf>,
    },
    /// These ids changed since the last run; `report` is what the sender returned (`None`:
    /// nothing was sent, and the state did not move).
    Changed {
        /// The changed ids (empty when nothing changed).
        ids: Vec<String>,
        /// What happened to each.
        report: Option<super::post::Report>,
    },
}

/// One `--since-last` run: takes the snapshot, hands the changed ids to `send` (not called when
/// nothing changed), and advances the state for the ids its report says got through (a 2xx or a
/// 404). `dry_run` only matters for a first run: it then records no baseline.
pub fn notify(options: &Options, dry_run: bool, send: impl FnOnce(&[String]) -> Option<super::post::Report>) -> Result<RunOutcome, Error> {
    let Some(run) = prepare(options)? else { return Ok(RunOutcome::Busy) };
    if run.baseline {
        let (records, source) = (run.records, run.source_name.clone());
        if dry_run {
            return Ok(RunOutcome::Baseline { records, source, state: None });
        }
        let path = run.state_path().to_path_buf();
        run.record(|_| true)?;
        return Ok(RunOutcome::Baseline { records, source, state: Some(path) });
    }
    if run.ids.is_empty() {
        return Ok(RunOutcome::Changed { ids: Vec::new(), report: None });
    }
    let ids = run.ids.clone();
    let report = send(&ids);
    if let Some(report) = &report {
        let through: std::collections::HashSet<&str> =
            report.results.iter().filter(|(_, o)| !matches!(o, super::post::Outcome::Failed { .. })).map(|(id, _)| id.as_str()).collect();
        run.record(|id| through.contains(id))?;
    }
    Ok(RunOutcome::Changed { ids, report })
}

/// Takes an exclusive lock on `path` without waiting: `None` when another process holds it. The
/// lock file is opened without following a link (a link in its place is refused, naming it).
fn lock(path: &Path) -> Result<Option<std::fs::File>> {
    let file = crate::safe_fs::open_for_update(path).with_context(|| format!("opening the lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("locking {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_are_plain() {
        assert!(valid_state_name("default").is_ok());
        assert!(valid_state_name("gemba.prod-1").is_ok());
        for bad in ["", ".hidden", "a/b", "../x", "sp ace", &"x".repeat(65)] {
            assert!(valid_state_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_record_changed_back_has_its_old_hash() {
        let one = record_hashes(b"{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\"}\n".to_vec(), "t").expect("parse");
        let two = record_hashes(b"{\"id\":\"a\",\"v\":2}\n{\"id\":\"b\"}\n".to_vec(), "t").expect("parse");
        let back = record_hashes(b"{\"id\":\"b\"}\n{\"id\":\"a\",\"v\":1}\n".to_vec(), "t").expect("parse");
        assert_ne!(one["a"], two["a"]);
        assert_eq!(one["b"], two["b"]);
        assert_eq!(one, back, "order does not matter, bytes do");
        assert!(record_hashes(b"{\"id\":\"a\",".to_vec(), "t").is_err());
    }
}
