//! The merge log: every value a merge dropped, kept where the person can find it later.
//!
//! Every automatic merge policy drops a value somewhere (both sides retitled an issue: one title
//! survives), and a stderr line that scrolls away is no trace. So the driver, `bd-merge resolve`,
//! `dedupe`, `update-branch` and `bd-sync import`'s three-way merge append one JSON object per
//! dropped value, dropped record and renamed issue to `<git common dir>/beads/merge-log.jsonl`:
//! per clone (every worktree shares it), never committed. `bd-merge review` reads it back and
//! `--restore` puts a dropped value back (see [`restore`]).
//!
//! Writing it never fails a merge: every error comes back as one warning for the caller to print.
//! It is never written through a symlink (a hostile repository cannot aim it at another file).
//! Past [`ROTATE_BYTES`] the log becomes `merge-log.1.jsonl` (replacing the older one) and a new
//! log starts: 4 MiB holds about ten thousand decisions (an entry is a few hundred bytes), months
//! of an agent merging dozens of branches a day, and stays small enough to read whole on every
//! `review` and `bd-sync check` in milliseconds; two generations bound the disk use to 8 MiB.
//!
//! The bound holds for every append, whatever a merge drops: a value whose JSON text is longer
//! than [`VALUE_BYTES`] is logged cut to its beginning (the entry names what was cut and its full
//! size, see [`Cut`]; such an entry cannot be restored), and when one merge drops more than a
//! generation holds, the entries that fit are logged and one more entry counts the rest
//! ([`Reason::Omitted`]).
//!
//! Entries carry a sequence number, one more than the highest one logged, which `review` shows
//! and `--restore N` takes. Appends hold a lock (`merge-log.lock`, never opened through a link)
//! while they read that number and write, so merges running at once in several worktrees never
//! share a number. The log is read line by line and a line that is not an entry is skipped: a
//! line cut short by a crash or a full disk costs that line alone, since the next append starts
//! on a fresh line; a line longer than a whole generation (an older version's huge value) is
//! skipped without being read into memory.
//!
//! Two small files hold the highest number the post-merge hook has looked at
//! (`merge-log.announced`) and the highest one a person has listed with `review`
//! (`merge-log.reviewed`), so the hook speaks only of the merge that just ended (see [`announce`])
//! and `check` only of unread entries.

use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::merge::{Rename, Report, Side};
use crate::safe_fs;

/// The log's file name inside `<git common dir>/beads`.
pub const LOG_NAME: &str = "merge-log.jsonl";
/// The previous generation, after a rotation.
pub const ROTATED_NAME: &str = "merge-log.1.jsonl";
/// Past this size the log is rotated (see the module documentation for why 4 MiB).
pub const ROTATE_BYTES: u64 = 4 << 20;
/// The highest sequence number the post-merge / post-rewrite hook announced.
const ANNOUNCED_NAME: &str = "merge-log.announced";
/// The highest sequence number `bd-merge review` listed.
const REVIEWED_NAME: &str = "merge-log.reviewed";
/// The lock an append holds while it numbers and writes its entries.
pub const LOCK_NAME: &str = "merge-log.lock";
/// The longest value (its JSON text) an entry holds whole: a description of a few pages. A longer
/// one is logged cut (see [`Cut`]).
pub const VALUE_BYTES: usize = 64 << 10;
/// When one merge drops so many values that they do not fit one generation at [`VALUE_BYTES`],
/// values are cut shorter, but never below this.
const MIN_VALUE_BYTES: usize = 256;
/// The longest id, field, path, label, command or detail an entry holds whole.
const TEXT_BYTES: usize = 4 << 10;
/// The most one append writes: one generation, so no append can push the log past its bound.
const APPEND_BYTES: usize = ROTATE_BYTES as usize;
/// What the entry counting the decisions that did not fit may take.
const SUMMARY_ROOM: usize = 64 << 10;
/// The longest line read back as an entry; of a longer one (which no append of this version
/// writes) only the sequence number at its start is read.
const LINE_BYTES: usize = ROTATE_BYTES as usize;
/// How long an append waits for another one to finish before it gives up (with a warning).
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// `BD_MERGE_LOG_COMMAND` names the command a driver run works for (set by `update-branch`).
pub const COMMAND_ENV: &str = "BD_MERGE_LOG_COMMAND";
/// The longest value (its JSON text) an `update-branch` trailer holds whole (`merge_trailers`
/// writes them; review names the bound when it cannot restore a cut one).
pub const TRAILER_VALUE_BYTES: usize = 200;

/// Why a value was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// `--conflict newest`: the other side's record had the later `updated_at`.
    Newest,
    /// `--conflict ours`.
    Ours,
    /// `--conflict theirs`.
    Theirs,
    /// One side deleted the record, the other changed it: the change was kept.
    DeleteVsModify,
    /// `bd-merge dedupe` merged copies of one id.
    Dedupe,
    /// Two issues were created under one id; one moved to a new id.
    Rename,
    /// Not one decision: the merge dropped more than the log has room for, and this entry counts
    /// those it could not log ([`Entry::omitted`]).
    Omitted,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reason::Newest => "newest",
            Reason::Ours => "ours",
            Reason::Theirs => "theirs",
            Reason::DeleteVsModify => "delete-vs-modify",
            Reason::Dedupe => "dedupe",
            Reason::Rename => "rename",
            Reason::Omitted => "omitted",
        })
    }
}

/// git's `%X` / `%Y` labels of the two sides.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    /// The side written over (`%A`): in a merge the checked-out branch, in a rebase upstream.
    pub ours: String,
    /// The side merged in (`%B`): in a merge the other branch, in a rebase your commit.
    pub theirs: String,
}

/// One dropped value, dropped record or renamed issue: one line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Its number in this clone's log (what `review --restore` takes).
    pub seq: u64,
    /// When (RFC 3339, UTC; the merge's own time, so `BD_MERGE_NOW` fixes it).
    pub time: String,
    /// The command that merged: `bd-merge` (the driver), `bd-merge resolve`, `bd-merge dedupe`,
    /// `bd-merge update-branch`, `bd-sync import`.
    pub command: String,
    /// The issues file, relative to the work tree when known.
    pub path: String,
    /// `HEAD` when the merge ran (none on an unborn branch).
    #[serde(default)]
    pub head: Option<String>,
    /// The two sides' labels.
    pub labels: Labels,
    /// The merge was a step of a rebase (ours is upstream, theirs your commit).
    #[serde(default)]
    pub rebase: bool,
    /// The issue.
    pub id: String,
    /// The field (dotted for nested objects); `(record)` for a whole record; `id` for a rename;
    /// `status` stands for its group (then `kept` and `dropped` are objects of the group's keys).
    pub field: String,
    /// The value kept, as JSON; missing when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<Box<RawValue>>,
    /// `ours` or `theirs`.
    pub kept_from: String,
    /// The value dropped, as JSON; missing when absent (a removed key, a deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Box<RawValue>>,
    /// `ours` or `theirs`.
    pub dropped_from: String,
    /// Why.
    pub reason: Reason,
    /// The merge's own words for why (`newer updated_at`, ...).
    #[serde(default)]
    pub detail: String,
    /// The parts that were too large for the log and are logged cut; such an entry cannot be
    /// restored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut: Vec<Cut>,
    /// For a [`Reason::Omitted`] entry, how many decisions of the merge it stands for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
    /// Set when the entry was read from a trailer of this merge commit (`update-branch`'s, see
    /// `merge_trailers`), not from this clone's log; `seq` is then the trailer's
    /// number within the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

// serde's `skip_serializing_if` hands a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A part of an entry too large for the log, logged cut to its beginning. For `kept` and
/// `dropped` the logged value is then a JSON string holding the beginning of the value's JSON
/// text (whatever its type); other parts hold the beginning of their text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// Which part: `kept`, `dropped`, `id`, `field`, `path`, `command`, `head`, `labels.ours`,
    /// `labels.theirs` or `detail`.
    pub part: String,
    /// Its full size in bytes (of its JSON text, for `kept` and `dropped`).
    pub bytes: u64,
}

/// Where and for what a merge runs: everything an entry has besides the decision itself.
#[derive(Debug, Clone)]
pub struct Context {
    /// `<git common dir>/beads`.
    pub dir: PathBuf,
    /// See [`Entry::command`].
    pub command: String,
    /// See [`Entry::path`].
    pub path: String,
    /// See [`Entry::head`].
    pub head: Option<String>,
    /// See [`Entry::labels`].
    pub labels: Labels,
    /// See [`Entry::rebase`].
    pub rebase: bool,
}

fn git_in(dir: &Path, args: &[&str]) -> Option<String> {
    crate::git::run(dir, args).ok().filter(|s| !s.is_empty())
}

/// `<git common dir>/beads` of the repository at `dir`; `None` outside a repository.
pub fn log_dir(dir: &Path) -> Option<PathBuf> {
    let common = git_in(dir, &["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    Some(PathBuf::from(common).join("beads"))
}

impl Context {
    /// The context of a merge run in `dir` (the work tree root for the driver). `None` outside a
    /// repository: nothing is logged then. Labels git did not give become `ours` / `theirs`; in a
    /// rebase an `ours` label of `HEAD` becomes the branch (or commit) being rebased onto.
    pub fn detect(dir: &Path, command: &str, path: &str, ours: Option<&str>, theirs: Option<&str>) -> Option<Context> {
        let log = log_dir(dir)?;
        let command = std::env::var(COMMAND_ENV).ok().filter(|c| !c.is_empty()).unwrap_or_else(|| command.to_owned());
        let head = git_in(dir, &["rev-parse", "--verify", "--quiet", "HEAD"]);
        let state = ["rebase-merge", "rebase-apply"]
            .iter()
            .filter_map(|name| git_in(dir, &["rev-parse", "--path-format=absolute", "--git-path", name]))
            .map(PathBuf::from)
            .find(|p| p.is_dir());
        let mut labels = Labels {
            ours: ours.filter(|s| !s.is_empty()).unwrap_or("ours").to_owned(),
            theirs: theirs.filter(|s| !s.is_empty()).unwrap_or("theirs").to_owned(),
        };
        if let Some(state) = &state {
            if labels.ours == "HEAD" || labels.ours == "ours" {
                if let Some(name) = upstream_name(dir, state) {
                    labels.ours = name;
                }
            }
        }
        // An absolute path inside the work tree is logged relative to it, as git names files.
        let path = match (Path::new(path).is_absolute(), git_in(dir, &["rev-parse", "--show-toplevel"])) {
            (true, Some(top)) => {
                let real = std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path));
                let top = std::fs::canonicalize(&top).unwrap_or_else(|_| PathBuf::from(&top));
                real.strip_prefix(&top).map(|p| p.display().to_string()).unwrap_or_else(|_| path.to_owned())
            }
            _ => path.to_owned(),
        };
        Some(Context { dir: log, command, path, head, labels, rebase: state.is_some() })
    }

    /// How one side is named to a person: `upstream (main)` / `your commit 1a2b3c4` in a
    /// rebase, the label itself in a merge.
    pub fn side_name(&self, side: Side) -> String {
        side_name(&self.labels, self.rebase, side)
    }
}

/// How one side of a merge with these labels is named to a person (see [`Context::side_name`]).
pub fn side_name(labels: &Labels, rebase: bool, side: Side) -> String {
    match (side, rebase) {
        (Side::Ours, true) => format!("upstream ({})", labels.ours),
        (Side::Theirs, true) => match labels.theirs.split_whitespace().next() {
            Some(hash) if hash != "theirs" => format!("your commit {hash}"),
            _ => "your commit".to_owned(),
        },
        (Side::Ours, false) => labels.ours.clone(),
        (Side::Theirs, false) => labels.theirs.clone(),
    }
}

/// The name of what a rebase is replaying onto: a branch pointing at `onto`, else its short hash.
fn upstream_name(dir: &Path, state: &Path) -> Option<String> {
    let onto = std::fs::read_to_string(state.join("onto")).ok()?;
    let onto = onto.trim();
    if onto.is_empty() || !onto.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let points_at = format!("--points-at={onto}");
    let names = git_in(dir, &["for-each-ref", &points_at, "--format=%(refname)", "refs/heads", "refs/remotes"]);
    names
        .and_then(|n| {
            n.lines()
                .filter(|l| !l.ends_with("/HEAD"))
                .find_map(|l| l.strip_prefix("refs/heads/").or_else(|| l.strip_prefix("refs/remotes/")).map(str::to_owned))
        })
        .or_else(|| git_in(dir, &["rev-parse", "--short", onto]))
}

/// The merge's words for why, with `ours` and `theirs` replaced by the sides' names.
fn name_sides(detail: &str, labels: &Labels, rebase: bool) -> String {
    let mut out = String::with_capacity(detail.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match word.as_str() {
            "ours" => out.push_str(&side_name(labels, rebase, Side::Ours)),
            "theirs" => out.push_str(&side_name(labels, rebase, Side::Theirs)),
            w => out.push_str(w),
        }
        word.clear();
    };
    for c in detail.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn possessive(name: &str) -> String {
    if name.ends_with('s') {
        format!("{name}'")
    } else {
        format!("{name}'s")
    }
}

/// The one-line stderr report of an auto-resolved conflict, naming the sides by their labels:
/// `bd-7: title: kept "A" from upstream (main) over your commit 1a2b3c4's "B" (newer updated_at)`.
pub fn describe(report: &Report, labels: &Labels, rebase: bool) -> String {
    let r = &report.resolution;
    let other = if r.kept == Side::Ours { Side::Theirs } else { Side::Ours };
    let name = |side| crate::record::printable(&side_name(labels, rebase, side), 200);
    let (kept, dropped) = (name(r.kept), name(other));
    let id = crate::record::key_label(&report.id);
    let why = crate::record::printable(&name_sides(&r.reason, labels, rebase), 400);
    if r.field == "(record)" {
        format!("{id}: {}: kept {} from {kept} over {} from {dropped} ({why})", r.field, r.kept_value, r.other_value)
    } else {
        format!("{id}: {}: kept {} from {kept} over {} {} ({why})", r.field, r.kept_value, possessive(&dropped), r.other_value)
    }
}

fn raw(json: Option<&str>) -> Option<Box<RawValue>> {
    json.and_then(|j| RawValue::from_string(j.to_owned()).ok())
}

fn side_word(side: Side) -> String {
    side.to_string()
}

/// The reason of a report, given the policy that was in force (`policy` is what decided what
/// the rules left open; `None` for `dedupe`).
fn reason_of(report: &Report, policy: Option<crate::merge::ConflictPolicy>) -> Reason {
    use crate::merge::ConflictPolicy;
    let r = &report.resolution;
    if r.field == "(record)" && r.reason.contains("deleted") {
        return Reason::DeleteVsModify;
    }
    if r.field == "(record)" && r.reason.contains("moved") {
        return Reason::Rename;
    }
    match policy {
        None => Reason::Dedupe,
        Some(ConflictPolicy::Ours) => Reason::Ours,
        Some(ConflictPolicy::Theirs) => Reason::Theirs,
        Some(ConflictPolicy::Newest | ConflictPolicy::Markers) => Reason::Newest,
    }
}

/// The entries for what one merge dropped and renamed (sequence numbers and time filled in by
/// [`append`]).
pub fn entries(ctx: &Context, reports: &[Report], renames: &[Rename], policy: Option<crate::merge::ConflictPolicy>) -> Vec<Entry> {
    // What every entry of this merge shares; each entry below sets the rest.
    let shared = |id: &str| Entry {
        seq: 0,
        time: String::new(),
        command: ctx.command.clone(),
        path: ctx.path.clone(),
        head: ctx.head.clone(),
        labels: ctx.labels.clone(),
        rebase: ctx.rebase,
        id: id.to_owned(),
        field: String::new(),
        kept: None,
        kept_from: String::new(),
        dropped: None,
        dropped_from: String::new(),
        reason: Reason::Rename,
        detail: String::new(),
        cut: Vec::new(),
        omitted: 0,
        commit: None,
    };
    let mut out = Vec::with_capacity(reports.len() + renames.len());
    for report in reports {
        let r = &report.resolution;
        let other = if r.kept == Side::Ours { Side::Theirs } else { Side::Ours };
        out.push(Entry {
            field: r.field.clone(),
            kept: raw(r.kept_json.as_deref()),
            kept_from: side_word(r.kept),
            dropped: raw(r.dropped_json.as_deref()),
            dropped_from: side_word(other),
            reason: reason_of(report, policy),
            detail: r.reason.clone(),
            ..shared(&report.id)
        });
    }
    for rename in renames {
        let other = if rename.side == Side::Ours { Side::Theirs } else { Side::Ours };
        out.push(Entry {
            field: "id".to_owned(),
            kept: raw(Some(&crate::record::json_string(&rename.to, false))),
            kept_from: side_word(rename.side),
            dropped: raw(Some(&crate::record::json_string(&rename.from, false))),
            dropped_from: side_word(rename.side),
            reason: Reason::Rename,
            detail: format!(
                "two issues were created under {} ; {}'s (created later) is now {}, {}'s keeps the id",
                rename.from, rename.side, rename.to, other
            )
            .replace(" ;", ";"),
            ..shared(&rename.from)
        });
    }
    out
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
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).mode(0o644);
    }
    let mut file = options.open(&log).with_context(|| format!("opening {}", log.display()))?;
    file.write_all(&bytes).with_context(|| format!("appending to {}", log.display()))?;
    Ok(())
}

/// Takes the log's lock, waiting at most [`LOCK_WAIT`] for another append to finish. The lock
/// file is opened without following a link: a link in its place is refused, naming it.
fn lock(dir: &Path) -> Result<std::fs::File> {
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
fn lines_within_bound(entries: Vec<Entry>, first: u64, time: &str) -> Result<Vec<u8>> {
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
fn bounded(e: &Entry, value_bytes: usize) -> Entry {
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
    }
}

/// Logs what one merge dropped; `Some(warning)` when the log could not be written (the merge
/// stands). Nothing is logged when nothing was dropped.
pub fn record(ctx: &Context, reports: &[Report], renames: &[Rename], policy: Option<crate::merge::ConflictPolicy>) -> Option<String> {
    let list = entries(ctx, reports, renames, policy);
    append(&ctx.dir, list)
        .err()
        .map(|e| format!("could not write the merge log ({e:#}); the merge itself is done, but `bd-merge review` will not show it"))
}

/// Logs what `bd-sync import`'s three-way merges of `file` dropped (ours: the cache, theirs: the
/// file); `Some(warning)` when the log could not be written. Outside a repository nothing is logged.
pub fn record_import(file: &Path, conflicts: &[Report], policy: crate::merge::ConflictPolicy) -> Option<String> {
    if conflicts.is_empty() {
        return None;
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut ctx = Context::detect(dir, "bd-sync import", &file.display().to_string(), None, None)?;
    ctx.labels = Labels { ours: "the cache".to_owned(), theirs: "the file".to_owned() };
    ctx.rebase = false;
    record(&ctx, conflicts, &[], Some(policy))
}

/// The sequence number of a log line: read from its start (`{"seq":N,`, how every entry is
/// written, so a line cut short or too long to read still says which number it took), else from
/// the whole line when it is an entry.
fn seq_of(line: &[u8], whole: bool) -> Option<u64> {
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
struct Tail {
    /// Its size (0 when missing).
    len: u64,
    /// It is empty or its last line is whole.
    ends_in_newline: bool,
    /// The highest sequence number in it.
    max_seq: Option<u64>,
}

impl Tail {
    /// Reads the last megabyte of the log at `path`, and the whole file (streamed, line by line)
    /// only when no line there has a number.
    fn of(path: &Path) -> Result<Tail> {
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
fn for_each_line(mut file: std::fs::File, mut f: impl FnMut(&[u8], bool)) -> std::io::Result<()> {
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

fn read_mark(dir: &Path, name: &str) -> u64 {
    safe_fs::read_regular(&dir.join(name), 64)
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn write_mark(dir: &Path, name: &str, seq: u64) -> Result<()> {
    let path = dir.join(name);
    safe_fs::refuse_non_regular(&path)?;
    crate::jsonl::write_atomic(&path, format!("{seq}\n").as_bytes())
}

/// What git told the post-merge / post-rewrite hook in its first argument, when our block could
/// pass it on (a hook manager's wrapper may not): which operation just ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// post-merge `0`: a merge or a fast-forward moved HEAD.
    Merge,
    /// post-merge `1`: `git merge --squash`, no commit made.
    Squash,
    /// post-rewrite `rebase`.
    Rebase,
    /// post-rewrite `amend`: nothing was merged.
    Amend,
    /// No argument, or one we do not know: the repository's state decides.
    Unknown,
}

impl HookEvent {
    /// The event for the hook's first argument.
    pub fn from_arg(arg: Option<&str>) -> HookEvent {
        match arg {
            Some("0") => HookEvent::Merge,
            Some("1") => HookEvent::Squash,
            Some("rebase") => HookEvent::Rebase,
            Some("amend") => HookEvent::Amend,
            _ => HookEvent::Unknown,
        }
    }
}

/// Whether `e` is a decision of the operation the hook runs after: only the driver's own entries
/// count (never `dedupe`'s, `resolve`'s, `import`'s, `review --restore`'s or `update-branch`'s,
/// which their commands report themselves); a merge's are those logged on `merge_parent`, the
/// first parent of the merge commit HEAD now is; a rebase's those logged during a rebase on a
/// commit HEAD now contains (`in_head`). A fast-forward, an amend and a squash made none.
fn made_by(e: &Entry, event: HookEvent, merge_parent: Option<&str>, in_head: &std::collections::HashSet<&str>) -> bool {
    if e.command != DRIVER_COMMAND {
        return false;
    }
    let merged = !e.rebase && merge_parent.is_some_and(|p| e.head.as_deref() == Some(p));
    let rebased = e.rebase && e.head.as_deref().is_some_and(|h| in_head.contains(h));
    match event {
        HookEvent::Squash | HookEvent::Amend => false,
        HookEvent::Merge => merged,
        HookEvent::Rebase => rebased,
        HookEvent::Unknown => merged || rebased,
    }
}

/// The command name the merge driver logs under.
pub const DRIVER_COMMAND: &str = "bd-merge";

/// For the post-merge / post-rewrite hook run in the work tree `repo`: the line to print about
/// the values the merge or rebase that just ended overrode (none when it overrode none, or was a
/// fast-forward, an amend or a squash), and the mark moved past every entry logged so far, so no
/// decision is announced twice nor by a later operation.
pub fn announce(dir: &Path, repo: &Path, event: HookEvent) -> Result<Option<String>> {
    let entries = read_all(dir)?;
    let mark = read_mark(dir, ANNOUNCED_NAME);
    let pending: Vec<&Entry> = entries.iter().filter(|e| e.seq > mark).collect();
    let Some(top) = pending.iter().map(|e| e.seq).max() else { return Ok(None) };
    write_mark(dir, ANNOUNCED_NAME, top)?;
    // A squash or an amend announces nothing: no git question needs asking.
    if matches!(event, HookEvent::Squash | HookEvent::Amend) {
        return Ok(None);
    }
    // HEAD is a merge commit: its first parent is where the driver ran.
    let merge_parent = if matches!(event, HookEvent::Merge | HookEvent::Unknown) {
        crate::git::run(repo, &["rev-parse", "--verify", "--quiet", "HEAD^2"])
            .ok()
            .and_then(|_| crate::git::run(repo, &["rev-parse", "--verify", "--quiet", "HEAD^1"]).ok())
    } else {
        None
    };
    // Each head asked about once, whether or not it is in HEAD.
    let mut in_head = std::collections::HashSet::new();
    let mut asked = std::collections::HashSet::new();
    if matches!(event, HookEvent::Rebase | HookEvent::Unknown) {
        for e in pending.iter().filter(|e| e.rebase && e.command == DRIVER_COMMAND) {
            if let Some(h) = e.head.as_deref() {
                if asked.insert(h) && crate::git::run(repo, &["merge-base", "--is-ancestor", h, "HEAD"]).is_ok() {
                    in_head.insert(h);
                }
            }
        }
    }
    let new: Vec<&Entry> = pending.into_iter().filter(|e| made_by(e, event, merge_parent.as_deref(), &in_head)).collect();
    if new.is_empty() {
        return Ok(None);
    }
    let values: u64 = new
        .iter()
        .map(|e| match e.reason {
            Reason::Rename => 0,
            Reason::Omitted => e.omitted,
            _ => 1,
        })
        .sum();
    let renamed = new.iter().filter(|e| e.reason == Reason::Rename).count();
    let mut parts = Vec::new();
    if values > 0 {
        parts.push(format!("{values} value(s) overridden"));
    }
    if renamed > 0 {
        parts.push(format!("{renamed} issue(s) renamed"));
    }
    Ok(Some(format!("beads-git: the merge chose for you: {}; see them with `bd-merge review`", parts.join(", "))))
}

/// Records that a person has seen `shown` (`bd-merge review`): the reviewed mark moves past
/// every entry of `all` up to the first one not shown, so `--id` or `--last` never marks entries
/// they did not list.
pub fn mark_reviewed(dir: &Path, all: &[Entry], shown: &[Entry]) -> Result<()> {
    let mark = read_mark(dir, REVIEWED_NAME);
    let seen: std::collections::HashSet<u64> = shown.iter().map(|e| e.seq).collect();
    let mut pending: Vec<u64> = all.iter().map(|e| e.seq).filter(|s| *s > mark).collect();
    pending.sort_unstable();
    let top = pending.iter().take_while(|s| seen.contains(s)).last().copied();
    match top {
        Some(top) => write_mark(dir, REVIEWED_NAME, top),
        None => Ok(()),
    }
}

/// Entries nobody has listed with `bd-merge review` yet, logged at or after `since`.
pub fn unreviewed_since(dir: &Path, since: crate::timestamp::Instant) -> Result<usize> {
    let mark = read_mark(dir, REVIEWED_NAME);
    Ok(read_all(dir)?
        .iter()
        .filter(|e| e.seq > mark)
        .filter(|e| crate::timestamp::parse(&e.time).is_some_and(|t| (t.seconds, t.nanos) >= (since.seconds, since.nanos)))
        .count())
}

/// Which entries `review` shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only the newest N.
    pub last: Option<usize>,
    /// Only those logged at or after this instant.
    pub since: Option<crate::timestamp::Instant>,
    /// Only this issue.
    pub id: Option<String>,
}

/// The entries `filter` selects, newest first.
pub fn select(mut entries: Vec<Entry>, filter: &Filter) -> Vec<Entry> {
    entries.reverse();
    entries.retain(|e| filter.id.as_ref().is_none_or(|id| *id == e.id));
    if let Some(since) = filter.since {
        entries.retain(|e| crate::timestamp::parse(&e.time).is_some_and(|t| (t.seconds, t.nanos) >= (since.seconds, since.nanos)));
    }
    if let Some(n) = filter.last {
        entries.truncate(n);
    }
    entries
}

/// `--since WHEN`: an RFC 3339 instant, a date (`2026-01-05`, midnight UTC), or an age before
/// `now` (`90m`, `12h`, `2d`, `1w`).
pub fn parse_since(text: &str, now: crate::timestamp::Instant) -> Result<crate::timestamp::Instant> {
    let t = text.trim();
    if let Some(i) = crate::timestamp::parse(t).or_else(|| crate::timestamp::parse(&format!("{t}T00:00:00Z"))) {
        return Ok(i);
    }
    let (n, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => 0,
    };
    match n.parse::<i64>() {
        Ok(n) if seconds > 0 => {
            Ok(crate::timestamp::Instant { seconds: now.seconds.saturating_sub(n.saturating_mul(seconds)), nanos: now.nanos })
        }
        _ => bail!(
            "--since {}: not a time; write an RFC 3339 instant (2026-01-05T10:00:00Z), a date (2026-01-05) or an age (90m, 12h, 2d, 1w)",
            crate::record::printable(text, 60)
        ),
    }
}

fn shown(value: Option<&RawValue>, width: usize) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(v) => crate::record::printable(v.get(), width),
    }
}

/// `kept` or `dropped` of `e` for a person: a cut value as its beginning and its full size.
fn shown_part(e: &Entry, part: &str, value: Option<&RawValue>, width: usize) -> String {
    let Some(cut) = e.cut.iter().find(|c| c.part == part) else { return shown(value, width) };
    let begins = value.and_then(|v| serde_json::from_str::<String>(v.get()).ok()).unwrap_or_default();
    format!("{}... (cut: the value is {} bytes)", crate::record::printable(&begins, width), cut.bytes)
}

/// The human listing of `entries` (already selected and ordered), control characters escaped.
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    if entries.is_empty() {
        out.push_str("no merge decisions logged\n");
        return out;
    }
    for e in entries {
        let p = |s: &str| crate::record::printable(s, 200);
        if e.reason == Reason::Omitted {
            out.push_str(&format!("#{} {} {}: {}\n  {}\n", e.seq, p(&e.time), p(&e.command), p(&e.path), p(&e.detail)));
            continue;
        }
        let side = |word: &str| side_name(&e.labels, e.rebase, if word == "ours" { Side::Ours } else { Side::Theirs });
        let head = e.head.as_deref().map(|h| format!(", HEAD {}", p(&h.chars().take(12).collect::<String>()))).unwrap_or_default();
        let during = if e.rebase { " during a rebase" } else { "" };
        let head = match &e.commit {
            Some(c) => format!(", from commit {}", p(&c.chars().take(12).collect::<String>())),
            None => head,
        };
        out.push_str(&format!("{} {} {}{during}: {}{head}\n", printable_address(e), p(&e.time), p(&e.command), p(&e.path)));
        let why = name_sides(&e.detail, &e.labels, e.rebase);
        out.push_str(&format!("  {} {} ({}: {})\n", p(&crate::record::key_label(&e.id)), p(&e.field), e.reason, p(&why)));
        if e.reason == Reason::Rename {
            out.push_str(&format!(
                "  {}'s issue moved to {}; {}'s issue keeps {}\n",
                p(&side(&e.kept_from)),
                shown(e.kept.as_deref(), 200),
                p(&side(if e.kept_from == "ours" { "theirs" } else { "ours" })),
                shown(e.dropped.as_deref(), 200)
            ));
        } else {
            out.push_str(&format!("  kept    {}  from {}\n", shown_part(e, "kept", e.kept.as_deref(), 200), p(&side(&e.kept_from))));
            out.push_str(&format!(
                "  dropped {}  from {}\n",
                shown_part(e, "dropped", e.dropped.as_deref(), 200),
                p(&side(&e.dropped_from))
            ));
            match not_restorable(e) {
                None => out.push_str(&format!("  put it back: bd-merge review --restore {}\n", p(&address(e)))),
                Some(why) if !e.cut.is_empty() => out.push_str(&format!("  not restorable: {why}\n")),
                Some(_) => {}
            }
        }
    }
    out
}

/// Why an entry cannot be restored (`None`: it can).
fn not_restorable(e: &Entry) -> Option<String> {
    if e.reason == Reason::Rename || e.field == "id" {
        return Some(format!("{} is a rename, not a dropped value: both issues are in the file", printable_address(e)));
    }
    if e.reason == Reason::Omitted {
        return Some(format!(
            "{} counts {} decision(s) the merge log had no room for; it holds no value to restore",
            printable_address(e),
            e.omitted
        ));
    }
    if e.field == "(record)" {
        return Some(format!(
            "{} is a whole record ({}); edit the issue with your tracker instead",
            printable_address(e),
            crate::record::printable(&e.detail, 200)
        ));
    }
    // A value, id or field logged cut could only be restored wrong.
    let cut = ["dropped", "kept", "id", "field"].iter().find_map(|part| e.cut.iter().find(|c| c.part == *part));
    if let (Some(cut), Some(commit)) = (cut, &e.commit) {
        let parent = if e.dropped_from == "ours" { 1 } else { 2 };
        return Some(format!(
            "{}'s trailer holds the {} value cut to its first {} bytes (it is {} bytes), so it cannot be restored from there; \
             take it from the merge's parent: git show {}^{parent}:{}",
            printable_address(e),
            cut.part,
            TRAILER_VALUE_BYTES,
            cut.bytes,
            crate::record::printable(commit, 40),
            crate::record::printable(&e.path, 200)
        ));
    }
    if let Some(cut) = cut {
        let part = if matches!(cut.part.as_str(), "dropped" | "kept") { format!("{} value", cut.part) } else { cut.part.clone() };
        let side = side_name(&e.labels, e.rebase, if e.dropped_from == "ours" { Side::Ours } else { Side::Theirs });
        return Some(format!(
            "{}'s {part} was logged cut ({} bytes, past the merge log's bound), so it cannot be restored; take the value from {} side of that merge",
            printable_address(e),
            cut.bytes,
            crate::record::printable(&possessive(&side), 200)
        ));
    }
    None
}

/// How `review` names an entry and `--restore` takes it: `#N` for this clone's log, `#HASH:N`
/// for the N-th trailer of a merge commit.
pub fn address(e: &Entry) -> String {
    match &e.commit {
        Some(c) => format!("{}:{}", &c[..c.len().min(12)], e.seq),
        None => e.seq.to_string(),
    }
}

fn printable_address(e: &Entry) -> String {
    format!("#{}", crate::record::printable(&address(e), 60))
}

/// How `restore` ended: a refusal is an outcome (the file is untouched), not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The value is back in the file.
    Restored(Restored),
    /// Nothing was written, for this reason (the field changed again since, the entry is not a
    /// value, the issue is gone, ...).
    Refused(String),
}

/// What `restore` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Restored {
    /// The issue.
    pub id: String,
    /// The field.
    pub field: String,
    /// The file written.
    pub path: String,
    /// The record's new `updated_at`, when it has one.
    pub updated_at: Option<String>,
}

fn same_json(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            x == y || serde_json::from_str::<serde_json::Value>(x).ok() == serde_json::from_str::<serde_json::Value>(y).ok()
        }
        _ => false,
    }
}

/// The value at a dotted path inside an object's text.
fn value_at(object: &str, path: &[&str]) -> Option<String> {
    let obj = crate::record::RawObject::parse_trusted(object)?;
    let (first, rest) = path.split_first()?;
    let v = obj.entries.iter().rfind(|e| e.key == *first)?.raw_value.to_string();
    if rest.is_empty() {
        Some(v)
    } else {
        value_at(&v, rest)
    }
}

/// `object` with the value at a dotted path set (`None`: removed).
fn set_at(object: &str, path: &[&str], value: Option<&str>, go_style: bool) -> Option<String> {
    let obj = crate::record::RawObject::parse_trusted(object)?;
    let (first, rest) = path.split_first()?;
    let mut entries = obj.entries.clone();
    let pos = entries.iter().rposition(|e| e.key == *first);
    let new = if rest.is_empty() {
        value.map(str::to_owned)
    } else {
        Some(set_at(&pos.map(|i| entries[i].raw_value.to_string()).unwrap_or_else(|| "{}".to_owned()), rest, value, go_style)?)
    };
    match (pos, new) {
        (Some(i), Some(v)) => entries[i].raw_value = std::borrow::Cow::Owned(v),
        (Some(i), None) => {
            entries.remove(i);
        }
        (None, Some(v)) => entries.push(crate::record::Entry::new(first, v, go_style)),
        (None, None) => {}
    }
    Some(crate::record::render_entries(&entries, obj.colon, obj.comma))
}

/// The status group's keys of a record, as an object's text.
fn group_of(record: &str) -> Option<String> {
    let obj = crate::record::RawObject::parse_trusted(record)?;
    let kept: Vec<crate::record::Entry<'_>> =
        crate::merge::field::STATUS_GROUP.iter().filter_map(|k| obj.entries.iter().rfind(|e| e.key == *k).cloned()).collect();
    Some(crate::record::render_entries(&kept, ":", ","))
}

/// An entry of `field` dropping `dropped` is about the status group (its values are objects of
/// the group's keys).
fn is_group(field: &str, dropped: Option<&str>) -> bool {
    field == "status" && dropped.is_some_and(|d| d.trim_start().starts_with('{'))
}

/// The value a record (one line's text) holds for an entry's `field` (dotted), as JSON; for a
/// grouped status entry (see `dropped`), the group's keys as an object. `None` when absent.
pub fn value_in_record(record: &str, field: &str, dropped: Option<&str>) -> Option<String> {
    if is_group(field, dropped) {
        group_of(record)
    } else {
        value_at(record, &field.split('.').collect::<Vec<_>>())
    }
}

/// `bd-merge review --restore N`: puts entry `seq`'s dropped value back into the issues file at
/// `file`, as a new edit (its `updated_at` ticked past the current one and never earlier than the
/// clock), every other record byte for byte. Refuses when the record's field no longer holds the
/// value the merge kept (it changed again since), or when the entry is not a value.
pub fn restore(dir: &Path, seq: u64, file: &Path) -> Result<RestoreOutcome> {
    let refuse = |why: String| Ok(RestoreOutcome::Refused(why));
    let mut found: Vec<Entry> = read_all(dir)?.into_iter().filter(|e| e.seq == seq).collect();
    if found.len() > 1 {
        return refuse(format!(
            "#{seq} names {} entries in the merge log (merges that ran at once before entries were numbered under a lock); \
             restore cannot tell which one you mean: see them with `bd-merge review` and edit the issue by hand",
            found.len()
        ));
    }
    let Some(entry) = found.pop() else {
        return refuse(format!("no entry #{seq} in the merge log ({}); list them with `bd-merge review`", dir.join(LOG_NAME).display()));
    };
    restore_entry(entry, file)
}

/// Puts `entry`'s dropped value back into the issues file at `file` (see [`restore`]); the
/// entry's `kept` is what the field must still hold.
pub fn restore_entry(entry: Entry, file: &Path) -> Result<RestoreOutcome> {
    let refuse = |why: String| Ok(RestoreOutcome::Refused(why));
    if let Some(why) = not_restorable(&entry) {
        return refuse(why);
    }
    let label = crate::record::printable(&crate::record::key_label(&entry.id), 200);
    let field = crate::record::printable(&entry.field, 200);
    let content = safe_fs::read_regular(file, 1 << 32)?.with_context(|| format!("{} does not exist", file.display()))?;
    let split = crate::jsonl::Jsonl::split(&content);
    let mut at = None;
    for (i, line) in split.lines.iter().enumerate() {
        if crate::record::record_id(line.bytes).ok().is_some_and(|id| id == entry.id) {
            if at.is_some() {
                return refuse(format!("{}: {label} stands on several lines; run `bd-merge dedupe` first", file.display()));
            }
            at = Some(i);
        }
    }
    let Some(at) = at else {
        return refuse(format!("{}: {label} is not in the file any more; nothing to restore it into", file.display()));
    };
    let line = std::str::from_utf8(split.lines[at].bytes)
        .map_err(|_| anyhow::anyhow!("{}, line {}: not UTF-8", file.display(), split.lines[at].number))?;
    crate::record::RawObject::parse_str(line).map_err(|e| anyhow::anyhow!("{}, line {}: {e}", file.display(), split.lines[at].number))?;
    let go_style = crate::record::uses_go_escapes(&content);
    let (kept, dropped) = (entry.kept.as_deref().map(RawValue::get), entry.dropped.as_deref().map(RawValue::get));
    let group = is_group(&entry.field, dropped);
    let path: Vec<&str> = entry.field.split('.').collect();
    let current = value_in_record(line, &entry.field, dropped);
    if same_json(current.as_deref(), dropped) {
        return refuse(format!("{}: {label}: {field} already has the dropped value; nothing to restore", file.display()));
    }
    if !same_json(current.as_deref(), kept) {
        return refuse(format!(
            "{}: {label}: {field} changed again since that merge (now {}, the merge kept {}); not restored, edit it by hand if you still want {}",
            file.display(),
            current.as_deref().map(|c| crate::record::printable(c, 80)).unwrap_or_else(|| "(absent)".into()),
            kept.map(|c| crate::record::printable(c, 80)).unwrap_or_else(|| "(absent)".into()),
            dropped.map(|c| crate::record::printable(c, 80)).unwrap_or_else(|| "(absent)".into())
        ));
    }
    let mut record = line.to_owned();
    if group {
        let values = crate::record::RawObject::parse_trusted(dropped.unwrap_or("{}")).map(|o| o.entries).unwrap_or_default();
        for key in crate::merge::field::STATUS_GROUP {
            let v = values.iter().rfind(|e| e.key == *key).map(|e| e.raw_value.to_string());
            record = set_at(&record, &[key], v.as_deref(), go_style).context("rewriting the record")?;
        }
    } else {
        record = set_at(&record, &path, dropped, go_style).context("rewriting the record")?;
    }
    let stamp = value_at(&record, &["updated_at"]).and_then(|v| crate::record::parse_json_str(&v).map(std::borrow::Cow::into_owned));
    let mut updated_at = None;
    if let Some(stamp) = stamp {
        let now = crate::timestamp::merge_now()?;
        if let Some(next) = crate::timestamp::merge_stamp([stamp.as_str()], Some(now)) {
            record = set_at(&record, &["updated_at"], Some(&crate::record::json_string(&next, go_style)), go_style)
                .context("rewriting the record")?;
            updated_at = Some(next);
        }
    }
    let mut out = Vec::with_capacity(content.len() + record.len());
    let lines = split.lines.iter().enumerate().map(|(i, l)| if i == at { record.as_bytes() } else { l.bytes });
    crate::jsonl::write_lines(&mut out, split.layout, lines).context("writing to memory")?;
    if let Some(fixed) = crate::merge::derived::recompute_file(&out) {
        out = fixed;
    }
    crate::jsonl::write_atomic(file, &out)?;
    Ok(RestoreOutcome::Restored(Restored { id: entry.id, field: entry.field, path: file.display().to_string(), updated_at }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_reads_instants_dates_and_ages() {
        let now = crate::timestamp::parse("2026-01-05T10:00:00Z").expect("instant");
        assert_eq!(parse_since("2d", now).expect("age").seconds, now.seconds - 2 * 86_400);
        assert_eq!(parse_since("2026-01-04", now).expect("date").seconds, now.seconds - 86_400 - 36_000);
        assert!(parse_since("yesterday", now).is_err());
    }

    #[test]
    fn a_hostile_log_line_is_rendered_escaped_and_never_panics() {
        let line = r#"{"seq":3,"time":"2026-01-05T10:00:00Z","command":"bd-merge\u001b[2J","path":".beads/issues.jsonl","head":"aééééééééééééééé","labels":{"ours":"HEAD","theirs":"x\ny"},"id":"bd-1\u0007","field":"title","kept":"a\u001b[31mred","kept_from":"ours","dropped":"b","dropped_from":"theirs","reason":"newest"}"#;
        let entry: Entry = serde_json::from_str(line).expect("an entry");
        let out = render(&[entry]);
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out}");
        assert!(out.contains(&format!("HEAD a{}\n", "é".repeat(11))), "{out}");
    }

    fn decision(id: &str, value_len: usize) -> Entry {
        let value = |side: &str| raw(Some(&crate::record::json_string(&format!("{side} {}", "x".repeat(value_len)), false)));
        Entry {
            kept: value("ours"),
            kept_from: "ours".into(),
            dropped: value("theirs"),
            dropped_from: "theirs".into(),
            id: id.into(),
            field: "description".into(),
            reason: Reason::Newest,
            command: "bd-merge".into(),
            path: ".beads/issues.jsonl".into(),
            ..blank()
        }
    }

    fn blank() -> Entry {
        Entry {
            seq: 0,
            time: String::new(),
            command: String::new(),
            path: String::new(),
            head: None,
            labels: Labels::default(),
            rebase: false,
            id: String::new(),
            field: String::new(),
            kept: None,
            kept_from: String::new(),
            dropped: None,
            dropped_from: String::new(),
            reason: Reason::Newest,
            detail: String::new(),
            cut: Vec::new(),
            omitted: 0,
            commit: None,
        }
    }

    #[test]
    fn a_merge_dropping_more_than_a_generation_holds_logs_what_fits_and_counts_the_rest() {
        let entries: Vec<Entry> = (0..20_000).map(|i| decision(&format!("bd-{i}"), 1000)).collect();
        let bytes = lines_within_bound(entries, 7, "2026-01-05T10:00:00Z").expect("serialized");
        assert!(bytes.len() <= APPEND_BYTES, "{} bytes", bytes.len());
        let lines: Vec<Entry> =
            bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("entry")).collect();
        let last = lines.last().expect("entries");
        assert_eq!(last.reason, Reason::Omitted);
        assert_eq!(last.omitted as usize + lines.len() - 1, 20_000, "every decision logged or counted");
        assert!(lines.iter().enumerate().all(|(i, e)| e.seq == 7 + i as u64), "numbered in order");
        assert!(lines[0].cut.iter().any(|c| c.part == "dropped" && c.bytes == 1009), "{:?}", lines[0].cut);
        assert!(not_restorable(&lines[0]).is_some_and(|why| why.contains("logged cut")));
        assert!(render(&lines[lines.len() - 1..]).contains("more decision(s) of this merge were not logged"));
    }

    #[test]
    fn a_few_decisions_are_logged_whole_and_long_texts_cut() {
        let mut long_id = decision(&"i".repeat(10_000), 10);
        long_id.detail = "d".repeat(5000);
        let bytes = lines_within_bound(vec![decision("bd-1", 10), long_id], 1, "t").expect("serialized");
        let lines: Vec<Entry> =
            bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("entry")).collect();
        assert!(lines[0].cut.is_empty() && not_restorable(&lines[0]).is_none());
        let parts: Vec<&str> = lines[1].cut.iter().map(|c| c.part.as_str()).collect();
        assert_eq!(parts, ["id", "detail"]);
        assert_eq!(lines[1].id.len(), TEXT_BYTES);
    }

    #[test]
    fn lines_are_read_whole_or_by_their_head_and_a_cut_last_line_still_comes() {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("log");
        let long = format!("{{\"seq\":41,\"x\":\"{}\"}}", "y".repeat(LINE_BYTES + 10));
        std::fs::write(&path, format!("a\n{long}\n\nb\n{{\"seq\":42,\"ti")).expect("write");
        let mut seen = Vec::new();
        for_each_line(std::fs::File::open(&path).expect("open"), |line, whole| seen.push((line.len().min(80), whole))).expect("read");
        assert_eq!(seen, [(1, true), (64, false), (0, true), (1, true), (13, true)]);
        let tail = Tail::of(&path).expect("tail");
        assert_eq!((tail.max_seq, tail.ends_in_newline), (Some(42), false), "a cut line's number still counts");
        assert_eq!(seq_of(b"{\"seq\":12,\"time\"", false), Some(12));
        assert_eq!(seq_of(b"{\"seq\":12", false), None, "digits cut short are no number");
    }

    #[test]
    fn restore_refuses_a_number_that_older_concurrent_merges_gave_twice() {
        let dir = tempfile::tempdir().expect("tmp");
        let mut one = serde_json::to_string(&Entry { seq: 1, ..decision("bd-1", 3) }).expect("json");
        one.push('\n');
        std::fs::write(dir.path().join(LOG_NAME), one.repeat(2)).expect("write");
        let file = dir.path().join("issues.jsonl");
        std::fs::write(&file, "{\"id\":\"bd-1\",\"description\":\"ours xxx\"}\n").expect("write");
        match restore(dir.path(), 1, &file).expect("an outcome") {
            RestoreOutcome::Refused(why) => assert!(why.contains("names 2 entries"), "{why}"),
            other @ RestoreOutcome::Restored(_) => panic!("{other:?}"),
        }
    }

    #[test]
    fn set_and_read_nested_values() {
        let rec = r#"{"id":"a","metadata":{"owner":"x"},"title":"t"}"#;
        assert_eq!(value_at(rec, &["metadata", "owner"]).as_deref(), Some("\"x\""));
        let set = set_at(rec, &["metadata", "owner"], Some("\"y\""), false).expect("object");
        assert_eq!(set, r#"{"id":"a","metadata":{"owner":"y"},"title":"t"}"#);
        let removed = set_at(rec, &["title"], None, false).expect("object");
        assert_eq!(removed, r#"{"id":"a","metadata":{"owner":"x"}}"#);
    }
}
