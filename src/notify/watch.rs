//! Watching the issues file and reporting exactly which ids changed.
//!
//! The watch is on the directory, not the file: tools that write atomically (temp file + rename)
//! replace the file's inode, and a watch on the old inode would go silent. Events are debounced;
//! after a quiet moment the file is re-read and compared record by record with the last good
//! snapshot. A half-written file (a line that does not parse) is not a snapshot: we wait for the
//! next event instead of reporting a flood. A file that stays missing for longer than a grace
//! period means its ids were deleted; one that comes back within it is compared as usual.
//!
//! The directory is busy: bd and br keep their databases (and SQLite's WAL) beside the issues
//! file. Events for other files are drained without delaying anything, and the debounce has a
//! maximum wait: a change to the issues file is read at the latest [`MAX_EXTRA_WAIT`] after the
//! debounce, however often the file itself or its neighbours keep changing. The file is read
//! through [`crate::safe_fs::bounded`]: a regular file of bounded size, never a device or a FIFO a
//! branch swapped in.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use ::notify::Watcher;
use anyhow::{Context, Result};

use crate::diff::{changes, Snapshot};

/// Watch settings.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    /// The directory holding the issues file (`.beads`).
    pub dir: PathBuf,
    /// Poll every so often instead of using file-system events.
    pub poll: Option<Duration>,
    /// Quiet time after the last event before the file is re-read.
    pub debounce: Duration,
    /// How long the file may be missing before its ids count as deleted.
    pub missing_grace: Duration,
    /// Told what a person watching should know (a half-written file, a watcher error, the
    /// directory gone or back). The library never prints.
    pub notice: fn(&str),
    /// Told once when the issues file looks left behind by its tracker ([`stale_file`]); the
    /// binary says what to watch instead.
    pub stale: fn(&StaleFile),
    /// The largest issues file read (a larger one is reported, not read).
    pub max_bytes: u64,
}

impl WatchOptions {
    /// Defaults: 50 ms debounce, 2 s grace for a missing file, events (no polling), files up to
    /// 4 GiB.
    pub fn new(dir: PathBuf) -> WatchOptions {
        WatchOptions {
            dir,
            poll: None,
            debounce: Duration::from_millis(50),
            missing_grace: Duration::from_secs(2),
            notice: |_| {},
            stale: |_| {},
            max_bytes: 4 << 30,
        }
    }
}

/// How long after the debounce a change is read at the latest, while events keep coming.
pub const MAX_EXTRA_WAIT: Duration = Duration::from_millis(200);

/// Events drained in one round before the timers are looked at.
const MAX_EVENTS_PER_ROUND: usize = 4096;

/// How much older than a tracker database beside it the issues file may be before the watcher
/// says the tracker may not be writing it any more.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// The directory to watch for a user's `DIR`: a repository root means its `.beads`.
pub fn beads_dir(dir: &Path) -> PathBuf {
    if dir.join(".beads").is_dir() {
        dir.join(".beads")
    } else {
        dir.to_path_buf()
    }
}

fn issues_file(dir: &Path) -> PathBuf {
    let [new, old] = crate::jsonl::ISSUES_FILE_NAMES.map(|name| dir.join(name));
    if !new.exists() && old.exists() {
        old
    } else {
        new
    }
}

/// Why a snapshot could not be taken.
enum ReadError {
    /// A line does not parse: a write is under way, the next event brings the rest.
    NotWhole(String),
    /// The file cannot be read as an issues file (a device, a FIFO, too large, an I/O error).
    Unreadable(String),
}

/// Reads a snapshot; `Ok(None)` when the file is missing.
fn read_snapshot(file: &Path, previous: Option<&Snapshot>, max_bytes: u64) -> std::result::Result<Option<Snapshot>, ReadError> {
    match crate::safe_fs::bounded::read_regular(file, max_bytes) {
        Ok(content) => {
            Snapshot::parse(content, true, previous).map(Some).map_err(|e| ReadError::NotWhole(format!("{}: {e}", file.display())))
        }
        Err(crate::safe_fs::bounded::SafeReadError::NotFound) => Ok(None),
        Err(e) => Err(ReadError::Unreadable(format!("{}: {e}", file.display()))),
    }
}

/// The newest modification time of a tracker database beside the issues file (`*.db` files and
/// the `dolt/` directory tree, looked at to a small depth and entry count), with its path.
fn newest_database(dir: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    let mut consider = |path: PathBuf, meta: &std::fs::Metadata| {
        if let Ok(t) = meta.modified() {
            if newest.as_ref().is_none_or(|(n, _)| t > *n) {
                newest = Some((t, path));
            }
        }
    };
    for entry in std::fs::read_dir(dir).ok()?.flatten().take(1000) {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_file() && path.extension().is_some_and(|e| e == "db") {
            consider(path, &meta);
        }
    }
    let mut stack = vec![(dir.join("dolt"), 0u32)];
    let mut seen = 0usize;
    while let Some((d, depth)) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&d) else { continue };
        if !meta.is_dir() {
            continue;
        }
        consider(d.clone(), &meta);
        if depth >= 4 {
            continue;
        }
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            seen += 1;
            if seen > 2000 {
                return newest;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push((entry.path(), depth + 1));
            } else {
                consider(entry.path(), &meta);
            }
        }
    }
    newest
}

/// The issues file looks left behind by its tracker, which keeps its issues in a database
/// beside it and may not export them to the file any more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleFile {
    /// The issues file.
    pub file: PathBuf,
    /// The newest tracker database file.
    pub db: PathBuf,
    /// How much older than the database the file is; `None` when the file does not exist.
    pub behind: Option<Duration>,
}

/// Whether the issues file is older than a tracker database beside it by more than
/// `STALE_AFTER` (a minute), or missing while a database exists.
pub fn stale_file(dir: &Path) -> Option<StaleFile> {
    let file = issues_file(dir);
    let (db_time, db) = newest_database(dir)?;
    match std::fs::metadata(&file).and_then(|m| m.modified()) {
        Ok(file_time) => {
            let behind = db_time.duration_since(file_time).ok()?;
            (behind > STALE_AFTER).then_some(StaleFile { file, db, behind: Some(behind) })
        }
        Err(_) => Some(StaleFile { file, db, behind: None }),
    }
}

/// Watches until `stop` is set, calling `on_change` with the ids whose records were added,
/// changed or deleted (each batch once). `on_change` returning `false` ends the watch.
pub fn watch(options: &WatchOptions, stop: &AtomicBool, mut on_change: impl FnMut(Vec<String>) -> bool) -> Result<()> {
    let file = issues_file(&options.dir);
    let name = file.file_name().expect("a file name").to_owned();
    let (tx, rx) = mpsc::channel::<::notify::Result<::notify::Event>>();
    let handler = move |res| {
        let _ = tx.send(res);
    };
    let mut watcher: Box<dyn Watcher> = match options.poll {
        Some(interval) => Box::new(
            ::notify::PollWatcher::new(handler, ::notify::Config::default().with_poll_interval(interval).with_compare_contents(true))
                .context("starting the polling watcher")?,
        ),
        None => Box::new(::notify::recommended_watcher(handler).context("starting the file watcher")?),
    };
    watcher.watch(&options.dir, ::notify::RecursiveMode::NonRecursive).with_context(|| format!("watching {}", options.dir.display()))?;

    let current = match read_snapshot(&file, None, options.max_bytes) {
        Ok(s) => s.unwrap_or_default(),
        Err(ReadError::NotWhole(e)) => {
            (options.notice)(&format!("waiting for a complete file: {e}"));
            Snapshot::default()
        }
        Err(ReadError::Unreadable(e)) => {
            (options.notice)(&e);
            Snapshot::default()
        }
    };
    let now = Instant::now();
    let mut state = Watching {
        options,
        file,
        name,
        current,
        first_pending: None,
        last_event: now,
        missing_since: None,
        last_error: String::new(),
        last_read_error: String::new(),
        dir_id: dir_identity(&options.dir),
        dir_checked: now,
        stale_checked: None,
        stale_warned: false,
        max_wait: options.debounce.saturating_add(MAX_EXTRA_WAIT),
    };
    while !stop.load(Ordering::Relaxed) {
        let Some(events) = state.next_events(&rx) else { break };
        state.take(events);
        state.warn_once_if_stale();
        state.rewatch_if_replaced(watcher.as_mut());
        if let Some(gone) = state.gone_for_good() {
            if !on_change(gone) {
                return Ok(());
            }
        }
        if let Some(ids) = state.read_when_due() {
            if !ids.is_empty() && !on_change(ids) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The watch loop's state between rounds.
struct Watching<'o> {
    options: &'o WatchOptions,
    file: PathBuf,
    name: std::ffi::OsString,
    /// What the file held at the last read.
    current: Snapshot,
    /// When the first change since the last read came, and the latest one.
    first_pending: Option<Instant>,
    last_event: Instant,
    missing_since: Option<Instant>,
    last_error: String,
    last_read_error: String,
    /// The directory itself may be deleted and created again (a re-clone, `rm -rf .beads`): its
    /// watch dies with the old inode, so it is checked now and then and watched afresh.
    dir_id: Option<(u64, u64)>,
    dir_checked: Instant,
    stale_checked: Option<Instant>,
    stale_warned: bool,
    max_wait: Duration,
}

impl Watching<'_> {
    /// Sleeps until the next event, at most 25 ms, less when a read falls due sooner; then takes
    /// whatever else is queued, so a busy neighbour never holds the timers off. `None` when the
    /// watcher is gone.
    fn next_events(&self, rx: &mpsc::Receiver<::notify::Result<::notify::Event>>) -> Option<Vec<::notify::Result<::notify::Event>>> {
        let mut timeout = Duration::from_millis(25);
        if let Some(first) = self.first_pending {
            let due = (self.last_event + self.options.debounce).min(first + self.max_wait);
            timeout = timeout.min(due.saturating_duration_since(Instant::now()));
        }
        let mut events = Vec::new();
        match rx.recv_timeout(timeout) {
            Ok(event) => events.push(event),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
        while events.len() < MAX_EVENTS_PER_ROUND {
            match rx.try_recv() {
                Ok(event) => events.push(event),
                Err(_) => break,
            }
        }
        Some(events)
    }

    /// Events about the file start (or extend) the wait before a read; failures are reported once.
    fn take(&mut self, events: Vec<::notify::Result<::notify::Event>>) {
        for event in events {
            match event {
                Ok(event) => {
                    if event.paths.is_empty() || event.paths.iter().any(|p| p.file_name() == Some(self.name.as_os_str())) {
                        self.last_event = Instant::now();
                        self.first_pending.get_or_insert(self.last_event);
                    }
                }
                Err(e) => {
                    // Report a failure once, not at every poll.
                    if e.to_string() != self.last_error {
                        self.last_error = e.to_string();
                        (self.options.notice)(&format!("watcher: {e}"));
                    }
                }
            }
        }
    }

    /// Once every 5 s until it has warned once: is a tracker database newer than the file?
    fn warn_once_if_stale(&mut self) {
        if !self.stale_warned && self.stale_checked.is_none_or(|t| t.elapsed() >= Duration::from_secs(5)) {
            self.stale_checked = Some(Instant::now());
            if let Some(stale) = stale_file(&self.options.dir) {
                (self.options.stale)(&stale);
                self.stale_warned = true;
            }
        }
    }

    /// Every 200 ms: a directory removed is reported, one created again is watched afresh (and
    /// read, as a change).
    fn rewatch_if_replaced(&mut self, watcher: &mut dyn Watcher) {
        if self.dir_checked.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.dir_checked = Instant::now();
        let now = dir_identity(&self.options.dir);
        if now == self.dir_id {
            return;
        }
        let dir = &self.options.dir;
        match now {
            None => (self.options.notice)(&format!("{} was removed; watching for it to come back", dir.display())),
            Some(_) => {
                let _ = watcher.unwatch(dir);
                match watcher.watch(dir, ::notify::RecursiveMode::NonRecursive) {
                    Ok(()) => (self.options.notice)(&format!("{} is back; watching it again", dir.display())),
                    Err(e) => (self.options.notice)(&format!("watching {} again: {e}", dir.display())),
                }
                self.last_error.clear();
            }
        }
        self.dir_id = now;
        self.last_event = Instant::now();
        self.first_pending.get_or_insert(self.last_event);
    }

    /// The ids of every record, once the file has been missing for the grace period.
    fn gone_for_good(&mut self) -> Option<Vec<String>> {
        let since = self.missing_since?;
        if since.elapsed() >= self.options.missing_grace && !self.current.is_empty() {
            let gone = changes(&self.current, &Snapshot::default()).ids();
            self.current = Snapshot::default();
            return Some(gone);
        }
        None
    }

    /// Reads the file once it has been quiet for the debounce (or changes kept coming for too
    /// long): the ids that changed since the last read, `None` when nothing was due or readable.
    fn read_when_due(&mut self) -> Option<Vec<String>> {
        let first = self.first_pending?;
        if self.last_event.elapsed() < self.options.debounce && first.elapsed() < self.max_wait {
            return None;
        }
        self.first_pending = None;
        match read_snapshot(&self.file, Some(&self.current), self.options.max_bytes) {
            Ok(None) => {
                self.missing_since.get_or_insert_with(Instant::now);
                None
            }
            Ok(Some(next)) => {
                self.missing_since = None;
                self.last_read_error.clear();
                let ids = changes(&self.current, &next).ids();
                self.current = next;
                Some(ids)
            }
            Err(ReadError::NotWhole(_)) => None, // the write that completes it brings another event
            Err(ReadError::Unreadable(e)) => {
                self.missing_since = None;
                if e != self.last_read_error {
                    (self.options.notice)(&e);
                    self.last_read_error = e;
                }
                None
            }
        }
    }
}

/// The directory's device and inode, `None` while it does not exist. Elsewhere than unix there is
/// no inode number ([`crate::safe_fs::Identity`]): a directory replaced between two looks is then
/// noticed only when a look finds it missing.
fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    let id = crate::safe_fs::Identity::of(&std::fs::metadata(dir).ok()?);
    Some((id.dev, id.ino))
}

/// A flag set by SIGINT or SIGTERM, for a clean stop.
pub fn stop_on_signals() -> Result<std::sync::Arc<AtomicBool>> {
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone()).context("installing signal handlers")?;
    }
    Ok(flag)
}
