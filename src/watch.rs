//! Watching the issues file and reporting exactly which ids changed.
//!
//! The watch is on the directory, not the file: tools that write atomically (temp file + rename)
//! replace the file's inode, and a watch on the old inode would go silent. Events are debounced;
//! after a quiet moment the file is re-read and compared record by record with the last good
//! snapshot. A half-written file (a line that does not parse) is not a snapshot: we wait for the
//! next event instead of reporting a flood. A file that stays missing for longer than a grace
//! period means its ids were deleted; one that comes back within it is compared as usual.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use notify::Watcher;

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
}

impl WatchOptions {
    /// Defaults: 50 ms debounce, 2 s grace for a missing file, events (no polling).
    pub fn new(dir: PathBuf) -> WatchOptions {
        WatchOptions { dir, poll: None, debounce: Duration::from_millis(50), missing_grace: Duration::from_secs(2), notice: |_| {} }
    }
}

/// The directory to watch for a user's `DIR`: a repository root means its `.beads`.
pub fn beads_dir(dir: &Path) -> PathBuf {
    if dir.join(".beads").is_dir() {
        dir.join(".beads")
    } else {
        dir.to_path_buf()
    }
}

fn issues_file(dir: &Path) -> PathBuf {
    let old = dir.join("beads.jsonl");
    let new = dir.join("issues.jsonl");
    if !new.exists() && old.exists() {
        old
    } else {
        new
    }
}

/// Reads a snapshot; `Ok(None)` when the file is missing, `Err` when it is not whole yet.
fn read_snapshot(file: &Path, previous: Option<&Snapshot>) -> std::result::Result<Option<Snapshot>, String> {
    match std::fs::read(file) {
        Ok(content) => Snapshot::parse(content, true, previous).map(Some).map_err(|e| format!("{}: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// Watches until `stop` is set, calling `on_change` with the ids whose records were added,
/// changed or deleted (each batch once). `on_change` returning `false` ends the watch.
pub fn watch(options: &WatchOptions, stop: &AtomicBool, mut on_change: impl FnMut(Vec<String>) -> bool) -> Result<()> {
    let file = issues_file(&options.dir);
    let name = file.file_name().expect("a file name").to_owned();
    let (tx, rx) = mpsc::channel::<notify::Result<notify::Event>>();
    let handler = move |res| {
        let _ = tx.send(res);
    };
    let mut watcher: Box<dyn Watcher> = match options.poll {
        Some(interval) => Box::new(
            notify::PollWatcher::new(handler, notify::Config::default().with_poll_interval(interval).with_compare_contents(true))
                .context("starting the polling watcher")?,
        ),
        None => Box::new(notify::recommended_watcher(handler).context("starting the file watcher")?),
    };
    watcher.watch(&options.dir, notify::RecursiveMode::NonRecursive).with_context(|| format!("watching {}", options.dir.display()))?;

    let mut current = match read_snapshot(&file, None) {
        Ok(s) => s.unwrap_or_default(),
        Err(e) => {
            (options.notice)(&format!("waiting for a complete file: {e}"));
            Snapshot::default()
        }
    };
    let mut pending: Option<Instant> = None;
    let mut missing_since: Option<Instant> = None;
    let mut last_error = String::new();
    // The directory itself may be deleted and created again (a re-clone, `rm -rf .beads`): its
    // watch dies with the old inode, so it is checked now and then and watched afresh.
    let mut dir_id = dir_identity(&options.dir);
    let mut dir_checked = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match rx.recv_timeout(Duration::from_millis(25)) {
            Ok(Ok(event)) => {
                if event.paths.is_empty() || event.paths.iter().any(|p| p.file_name() == Some(name.as_os_str())) {
                    pending = Some(Instant::now());
                }
                continue;
            }
            Ok(Err(e)) => {
                // Report a failure once, not at every poll.
                if e.to_string() != last_error {
                    last_error = e.to_string();
                    (options.notice)(&format!("watcher: {e}"));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if dir_checked.elapsed() >= Duration::from_millis(200) {
            dir_checked = Instant::now();
            let now = dir_identity(&options.dir);
            if now != dir_id {
                match now {
                    None => (options.notice)(&format!("{} was removed; watching for it to come back", options.dir.display())),
                    Some(_) => {
                        let _ = watcher.unwatch(&options.dir);
                        match watcher.watch(&options.dir, notify::RecursiveMode::NonRecursive) {
                            Ok(()) => (options.notice)(&format!("{} is back; watching it again", options.dir.display())),
                            Err(e) => (options.notice)(&format!("watching {} again: {e}", options.dir.display())),
                        }
                        last_error.clear();
                    }
                }
                dir_id = now;
                pending = Some(Instant::now());
            }
        }
        if let Some(since) = missing_since {
            if since.elapsed() >= options.missing_grace && !current.is_empty() {
                let gone = changes(&current, &Snapshot::default()).ids();
                current = Snapshot::default();
                if !on_change(gone) {
                    return Ok(());
                }
            }
        }
        let Some(last) = pending else { continue };
        if last.elapsed() < options.debounce {
            continue;
        }
        pending = None;
        match read_snapshot(&file, Some(&current)) {
            Ok(None) => {
                missing_since.get_or_insert_with(Instant::now);
            }
            Ok(Some(next)) => {
                missing_since = None;
                let ids = changes(&current, &next).ids();
                current = next;
                if !ids.is_empty() && !on_change(ids) {
                    return Ok(());
                }
            }
            Err(_) => {} // not whole yet: the write that completes it brings another event
        }
    }
    Ok(())
}

/// The directory's device and inode, `None` while it does not exist.
fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(dir).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

/// A flag set by SIGINT or SIGTERM, for a clean stop.
pub fn stop_on_signals() -> Result<std::sync::Arc<AtomicBool>> {
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone()).context("installing signal handlers")?;
    }
    Ok(flag)
}
