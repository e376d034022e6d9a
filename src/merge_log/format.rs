//! The log on disk: one JSON object per line, numbered under a lock, bounded per append and per
//! generation, rotated past [`ROTATE_BYTES`], and read back line by line so a damaged line costs
//! that line alone (see the module documentation of [`super`] for the bounds and why).

use std::io::{Read as _, Seek as _, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde_json::value::RawValue;

use super::types::{Cut, Entry, Reason};
use crate::merge::Labels;
use crate::safe_fs;

/// The log's file name inside `<git common dir>/beads`.
pub const LOG_NAME: &str = "merge-log.jsonl";
/// The previous generation, after a rotation.
pub const ROTATED_NAME: &str = "merge-log.1.jsonl";
/// Past this size the log is rotated (see the module documentation for why 4 MiB).
pub const ROTATE_BYTES: u64 = 4 << 20;
/// The lock an append holds while it numbers and writes its entries.
pub const LOCK_NAME: &str = "merge-log.lock";
/// The longest value (its JSON text) an entry holds whole: a description of a few pages. A longer
/// one is logged cut (see [`Cut`]).
pub const VALUE_BYTES: usize = 64 << 10;
/// When one merge drops so many values that they do not fit one generation at [`VALUE_BYTES`],
/// values are cut shorter, but never below this.
pub(super) const MIN_VALUE_BYTES: usize = 256;
/// The longest id, field, path, label, command or detail an entry holds whole.
pub(super) const TEXT_BYTES: usize = 4 << 10;
/// The most one append writes: one generation, so no append can push the log past its bound.
pub(super) const APPEND_BYTES: usize = ROTATE_BYTES as usize;
/// What the entry counting the decisions that did not fit may take.
pub(super) const SUMMARY_ROOM: usize = 64 << 10;
/// The longest line read back as an entry; of a longer one (which no append of this version
/// writes) only the sequence number at its start is read.
pub(super) const LINE_BYTES: usize = ROTATE_BYTES as usize;
/// How long an append waits for another one to finish before it gives up (with a warning).
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(10);

pub(super) fn raw(json: Option<&str>) -> Option<Box<RawValue>> {
    json.and_then(|j| RawValue::from_string(j.to_owned()).ok())
}

/// Appends `entries` to the log, numbering and timing them, under the log's lock. One append
/// never writes more than one generation: long values are cut, and what still does not fit is
/// counted in one last entry. Errors are for the caller to print as one warning; the merge has
/// already succeeded.
pub fn append(dir: &Path, entries: Vec<Entry>) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    safe_fs::refuse_symlink(dir)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let _lock = lock(dir)?;
    let log = dir.join(LOG_NAME);
    let rotated = dir.join(ROTATED_NAME);
    safe_fs::refuse_non_regular(&log)?;
    safe_fs::refuse_non_regular(&rotated)?;
    let tail = Tail::of(&log)?;
    let last = match tail.max_seq {
        Some(seq) => Some(seq),
        None => Tail::of(&rotated).ok().and_then(|t| t.max_seq),
    };
    let now = crate::timestamp::merge_now()?;
    let time = crate::timestamp::write_like(now, "2000-01-01T00:00:00Z").unwrap_or_default();
    let mut bytes = lines_within_bound(entries, last.unwrap_or(0) + 1, &time)?;
    let fresh_line = u64::from(!tail.ends_in_newline);
    if tail.len > 0 && tail.len + fresh_line + bytes.len() as u64 > ROTATE_BYTES {
        std::fs::rename(&log, &rotated).with_context(|| format!("rotating {} to {}", log.display(), rotated.display()))?;
    } else if fresh_line == 1 {
        // The last line was cut short (a crash, a full disk): it stays one bad line, skipped by
        // every reader, instead of swallowing the first entry written after it.
        bytes.insert(0, b'\n');
    }
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    safe_fs::no_follow(&mut options, &log).with_context(|| format!("opening {}", log.display()))?;
    let mut file = options.open(&log).with_context(|| format!("opening {}", log.display()))?;
    file.write_all(&bytes).with_context(|| format!("appending to {}", log.display()))?;
    Ok(())
}

/// Takes the log's lock, waiting at most [`LOCK_WAIT`] for another append to finish. The lock
/// file is opened without following a link: a link in its place is refused, naming it.
pub(super) fn lock(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join(LOCK_NAME);
    let file = safe_fs::open_for_update(&path).with_context(|| format!("opening the lock {}", path.display()))?;
    let start = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => std::thread::sleep(Duration::from_millis(5)),
            Err(std::fs::TryLockError::WouldBlock) => {
                bail!("another merge held {} for {} s; gave up waiting", path.display(), LOCK_WAIT.as_secs())
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e).with_context(|| format!("locking {}", path.display())),
        }
    }
}

/// The entries as log lines, numbered from `first`, no more than [`APPEND_BYTES`] in all: every
/// part cut to its bound, values cut shorter when a merge dropped very many, and past that the
/// decisions that do not fit counted in one [`Reason::Omitted`] entry.
pub(super) fn lines_within_bound(entries: Vec<Entry>, first: u64, time: &str) -> Result<Vec<u8>> {
    let render = |value_bytes: usize| -> Result<Vec<Vec<u8>>> {
        let mut seq = first;
        entries
            .iter()
            .map(|e| {
                let mut e = bounded(e, value_bytes);
                e.seq = seq;
                seq += 1;
                e.time = time.to_owned();
                let mut line = serde_json::to_vec(&e)?;
                line.push(b'\n');
                Ok(line)
            })
            .collect()
    };
    let total = |lines: &[Vec<u8>]| lines.iter().map(Vec::len).sum::<usize>();
    let mut lines = render(VALUE_BYTES)?;
    if total(&lines) > APPEND_BYTES {
        let shorter = (APPEND_BYTES / entries.len() / 4).clamp(MIN_VALUE_BYTES, VALUE_BYTES);
        lines = render(shorter)?;
    }
    if total(&lines) <= APPEND_BYTES {
        return Ok(lines.concat());
    }
    let mut out = Vec::new();
    let mut fitted = 0;
    for line in &lines {
        if out.len() + line.len() > APPEND_BYTES - SUMMARY_ROOM {
            break;
        }
        out.extend_from_slice(line);
        fitted += 1;
    }
    let rest = &entries[fitted..];
    let first_left = &rest[0];
    let summary = Entry {
        seq: first + fitted as u64,
        time: time.to_owned(),
        id: String::new(),
        field: "(omitted)".to_owned(),
        kept: None,
        kept_from: String::new(),
        dropped: None,
        dropped_from: String::new(),
        reason: Reason::Omitted,
        detail: format!(
            "{} more decision(s) of this merge were not logged: one merge logs at most {} MiB; the first of them: {} {}",
            rest.len(),
            APPEND_BYTES >> 20,
            crate::record::printable(&crate::record::key_label(&first_left.id), 200),
            crate::record::printable(&first_left.field, 200)
        ),
        cut: Vec::new(),
        omitted: rest.len() as u64,
        commit: None,
        ..first_left.clone_context()
    };
    serde_json::to_writer(&mut out, &bounded(&summary, MIN_VALUE_BYTES))?;
    out.push(b'\n');
    Ok(out)
}

impl Entry {
    /// Where and for what the entry's merge ran, with no decision (for a summary entry).
    fn clone_context(&self) -> Entry {
        Entry {
            seq: 0,
            time: String::new(),
            command: self.command.clone(),
            path: self.path.clone(),
            head: self.head.clone(),
            labels: self.labels.clone(),
            rebase: self.rebase,
            id: String::new(),
            field: String::new(),
            kept: None,
            kept_from: String::new(),
            dropped: None,
            dropped_from: String::new(),
            reason: self.reason,
            detail: String::new(),
            cut: Vec::new(),
            omitted: 0,
            commit: None,
            unverified: false,
        }
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A copy of `e` with `kept` and `dropped` at most `value_bytes` of JSON text and its other texts
/// at most [`TEXT_BYTES`], each cut part named in [`Entry::cut`].
pub(super) fn bounded(e: &Entry, value_bytes: usize) -> Entry {
    let mut cut = e.cut.clone();
    let mut value = |part: &str, v: &Option<Box<RawValue>>| -> Option<Box<RawValue>> {
        let v = v.as_ref()?;
        let text = v.get();
        if text.len() <= value_bytes {
            return Some(v.clone());
        }
        cut.push(Cut { part: part.to_owned(), bytes: text.len() as u64 });
        raw(Some(&crate::record::json_string(prefix(text, value_bytes), false)))
    };
    let (kept, dropped) = (value("kept", &e.kept), value("dropped", &e.dropped));
    let mut text = |part: &str, t: &str| -> String {
        if t.len() <= TEXT_BYTES {
            return t.to_owned();
        }
        cut.push(Cut { part: part.to_owned(), bytes: t.len() as u64 });
        prefix(t, TEXT_BYTES).to_owned()
    };
    let id = text("id", &e.id);
    let field = text("field", &e.field);
    let path = text("path", &e.path);
    let command = text("command", &e.command);
    let head = e.head.as_deref().map(|h| text("head", h));
    let labels = Labels { ours: text("labels.ours", &e.labels.ours), theirs: text("labels.theirs", &e.labels.theirs) };
    let detail = text("detail", &e.detail);
    Entry {
        seq: e.seq,
        time: e.time.clone(),
        command,
        path,
        head,
        labels,
        rebase: e.rebase,
        id,
        field,
        kept,
        kept_from: e.kept_from.clone(),
        dropped,
        dropped_from: e.dropped_from.clone(),
        reason: e.reason,
        detail,
        cut,
        omitted: e.omitted,
        commit: e.commit.clone(),
        unverified: e.unverified,
    }
}

/// The sequence number of a log line: read from its start (`{"seq":N,`, how every entry is
/// written, so a line cut short or too long to read still says which number it took), else from
/// the whole line when it is an entry.
pub(super) fn seq_of(line: &[u8], whole: bool) -> Option<u64> {
    if let Some(rest) = line.strip_prefix(b"{\"seq\":") {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && rest.get(digits).is_some_and(|b| matches!(b, b',' | b'}')) {
            if let Some(n) = std::str::from_utf8(&rest[..digits]).ok().and_then(|d| d.parse().ok()) {
                return Some(n);
            }
        }
    }
    if whole {
        return serde_json::from_slice::<Entry>(line).ok().map(|e| e.seq);
    }
    None
}

/// What an append needs to know of a log file.
pub(super) struct Tail {
    /// Its size (0 when missing).
    pub(super) len: u64,
    /// It is empty or its last line is whole.
    pub(super) ends_in_newline: bool,
    /// The highest sequence number in it.
    pub(super) max_seq: Option<u64>,
}

impl Tail {
    /// Reads the last megabyte of the log at `path`, and the whole file (streamed, line by line)
    /// only when no line there has a number.
    pub(super) fn of(path: &Path) -> Result<Tail> {
        let Some(mut file) = safe_fs::open_regular(path)? else {
            return Ok(Tail { len: 0, ends_in_newline: true, max_seq: None });
        };
        let len = file.metadata().map(|m| m.len()).with_context(|| format!("reading {}", path.display()))?;
        let start = len.saturating_sub(1 << 20);
        let mut tail = Vec::new();
        file.seek(std::io::SeekFrom::Start(start))
            .and_then(|_| (&mut file).take(1 << 20).read_to_end(&mut tail))
            .with_context(|| format!("reading {}", path.display()))?;
        let ends_in_newline = tail.last().is_none_or(|b| *b == b'\n');
        // The window's first line starts before it (unless the window is the whole file).
        let whole_lines = if start == 0 { &tail[..] } else { memchr::memchr(b'\n', &tail).map(|i| &tail[i + 1..]).unwrap_or_default() };
        let mut max_seq = whole_lines.split(|&b| b == b'\n').filter_map(|l| seq_of(l, true)).max();
        if max_seq.is_none() && start > 0 {
            file.rewind().with_context(|| format!("reading {}", path.display()))?;
            for_each_line(file, |line, whole| {
                max_seq = max_seq.max(seq_of(line, whole));
            })
            .with_context(|| format!("reading {}", path.display()))?;
        }
        Ok(Tail { len, ends_in_newline, max_seq })
    }
}

/// Calls `f` with each line of `file` (without its newline; the last one even when it has none)
/// and whether it is whole: a line longer than [`LINE_BYTES`] comes as its first bytes only, so
/// a damaged log costs no more memory than a healthy one.
pub(super) fn for_each_line(mut file: std::fs::File, mut f: impl FnMut(&[u8], bool)) -> std::io::Result<()> {
    const HEAD: usize = 64;
    let mut chunk = vec![0u8; 1 << 20];
    let mut line = Vec::new();
    let mut overlong = false;
    let mut pending = false;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            let (piece, end) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], Some(i + 1)),
                None => (rest, None),
            };
            if !overlong {
                line.extend_from_slice(piece);
                if line.len() > LINE_BYTES {
                    line.truncate(HEAD);
                    overlong = true;
                }
            }
            pending = true;
            match end {
                Some(i) => {
                    f(&line, !overlong);
                    line.clear();
                    overlong = false;
                    pending = false;
                    rest = &rest[i..];
                }
                None => rest = &[],
            }
        }
    }
    if pending {
        f(&line, !overlong);
    }
    Ok(())
}

/// Every entry in the log (both generations), oldest first; lines that are not entries (cut
/// short, too long, foreign) are skipped. A missing log is empty.
pub fn read_all(dir: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for name in [ROTATED_NAME, LOG_NAME] {
        let path = dir.join(name);
        let Some(file) = safe_fs::open_regular(&path)? else { continue };
        for_each_line(file, |line, whole| {
            if whole {
                out.extend(serde_json::from_slice::<Entry>(line).ok());
            }
        })
        .with_context(|| format!("reading {}", path.display()))?;
    }
    Ok(out)
}
