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
//! Entries carry a sequence number, one more than the last one logged, which `review` shows and
//! `--restore N` takes. Two small files hold the highest number the post-merge hook announced
//! (`merge-log.announced`) and the highest one a person has listed with `review`
//! (`merge-log.reviewed`), so the hook speaks only of new overrides and `check` only of unread ones.

use std::io::Write;
use std::path::{Path, PathBuf};

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
/// Largest log file read back (a rotated log never gets near it; a corrupt one is not read).
const READ_LIMIT: u64 = 16 * ROTATE_BYTES;
/// `BD_MERGE_LOG_COMMAND` names the command a driver run works for (set by `update-branch`).
pub const COMMAND_ENV: &str = "BD_MERGE_LOG_COMMAND";

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

fn side_name(labels: &Labels, rebase: bool, side: Side) -> String {
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

/// Appends `entries` to the log, numbering and timing them. Errors are for the caller to print
/// as one warning; the merge has already succeeded.
pub fn append(dir: &Path, mut entries: Vec<Entry>) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    safe_fs::refuse_symlink(dir)?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let log = dir.join(LOG_NAME);
    let rotated = dir.join(ROTATED_NAME);
    safe_fs::refuse_non_regular(&log)?;
    safe_fs::refuse_non_regular(&rotated)?;
    let size = std::fs::symlink_metadata(&log).map(|m| m.len()).unwrap_or(0);
    let last = match last_seq_in(&log)? {
        Some(seq) => Some(seq),
        None => last_seq_in(&rotated).ok().flatten(),
    };
    let now = crate::timestamp::merge_now()?;
    let time = crate::timestamp::write_like(now, "2000-01-01T00:00:00Z").unwrap_or_default();
    let mut bytes = Vec::new();
    let mut seq = last.unwrap_or(0);
    for e in &mut entries {
        seq += 1;
        e.seq = seq;
        e.time.clone_from(&time);
        serde_json::to_writer(&mut bytes, e)?;
        bytes.push(b'\n');
    }
    if size > 0 && size + bytes.len() as u64 > ROTATE_BYTES {
        std::fs::rename(&log, &rotated).with_context(|| format!("rotating {} to {}", log.display(), rotated.display()))?;
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

fn last_seq(bytes: &[u8]) -> Option<u64> {
    bytes.split(|&b| b == b'\n').rev().filter(|l| !l.is_empty()).find_map(|l| serde_json::from_slice::<Entry>(l).ok()).map(|e| e.seq)
}

/// The sequence number of the last entry of a log file, reading its last megabyte (or, when no
/// whole entry is there, all of it); `None` when it is missing or holds no entry.
fn last_seq_in(path: &Path) -> Result<Option<u64>> {
    use std::io::{Read, Seek, SeekFrom};
    let Some(mut file) = safe_fs::open_regular(path)? else { return Ok(None) };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(1 << 20);
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.take(1 << 20).read_to_end(&mut tail))
        .with_context(|| format!("reading {}", path.display()))?;
    if let Some(seq) = last_seq(&tail) {
        return Ok(Some(seq));
    }
    if start == 0 {
        return Ok(None);
    }
    Ok(safe_fs::read_regular(path, READ_LIMIT)?.and_then(|b| last_seq(&b)))
}

/// Every entry in the log (both generations), oldest first; lines that are not entries are
/// skipped. A missing log is empty.
pub fn read_all(dir: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for name in [ROTATED_NAME, LOG_NAME] {
        let bytes = safe_fs::read_regular(&dir.join(name), READ_LIMIT)?.unwrap_or_default();
        out.extend(bytes.split(|&b| b == b'\n').filter_map(|l| serde_json::from_slice::<Entry>(l).ok()));
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

/// For the post-merge / post-rewrite hook: the line to print about overrides logged since the
/// last announcement (none when there are none), and the mark moved past them.
pub fn announce(dir: &Path) -> Result<Option<String>> {
    let entries = read_all(dir)?;
    let mark = read_mark(dir, ANNOUNCED_NAME);
    let new: Vec<&Entry> = entries.iter().filter(|e| e.seq > mark).collect();
    let Some(top) = new.iter().map(|e| e.seq).max() else { return Ok(None) };
    write_mark(dir, ANNOUNCED_NAME, top)?;
    let values = new.iter().filter(|e| e.reason != Reason::Rename).count();
    let renamed = new.len() - values;
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

/// The human listing of `entries` (already selected and ordered), control characters escaped.
pub fn render(entries: &[Entry]) -> String {
    let mut out = String::new();
    if entries.is_empty() {
        out.push_str("no merge decisions logged\n");
        return out;
    }
    for e in entries {
        let p = |s: &str| crate::record::printable(s, 200);
        let side = |word: &str| side_name(&e.labels, e.rebase, if word == "ours" { Side::Ours } else { Side::Theirs });
        let head = e.head.as_deref().map(|h| format!(", HEAD {}", p(&h.chars().take(12).collect::<String>()))).unwrap_or_default();
        let during = if e.rebase { " during a rebase" } else { "" };
        out.push_str(&format!("#{} {} {}{during}: {}{head}\n", e.seq, p(&e.time), p(&e.command), p(&e.path)));
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
            out.push_str(&format!("  kept    {}  from {}\n", shown(e.kept.as_deref(), 200), p(&side(&e.kept_from))));
            out.push_str(&format!("  dropped {}  from {}\n", shown(e.dropped.as_deref(), 200), p(&side(&e.dropped_from))));
            if not_restorable(e).is_none() {
                out.push_str(&format!("  put it back: bd-merge review --restore {}\n", e.seq));
            }
        }
    }
    out
}

/// Why an entry cannot be restored (`None`: it can).
fn not_restorable(e: &Entry) -> Option<String> {
    if e.reason == Reason::Rename || e.field == "id" {
        return Some(format!("#{} is a rename, not a dropped value: both issues are in the file", e.seq));
    }
    if e.field == "(record)" {
        return Some(format!(
            "#{} is a whole record ({}); edit the issue with your tracker instead",
            e.seq,
            crate::record::printable(&e.detail, 200)
        ));
    }
    None
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

/// `bd-merge review --restore N`: puts entry `seq`'s dropped value back into the issues file at
/// `file`, as a new edit (its `updated_at` ticked past the current one and never earlier than the
/// clock), every other record byte for byte. Refuses when the record's field no longer holds the
/// value the merge kept (it changed again since), or when the entry is not a value.
pub fn restore(dir: &Path, seq: u64, file: &Path) -> Result<RestoreOutcome> {
    let refuse = |why: String| Ok(RestoreOutcome::Refused(why));
    let Some(entry) = read_all(dir)?.into_iter().find(|e| e.seq == seq) else {
        return refuse(format!("no entry #{seq} in the merge log ({}); list them with `bd-merge review`", dir.join(LOG_NAME).display()));
    };
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
    let group = entry.field == "status" && dropped.is_some_and(|d| d.trim_start().starts_with('{'));
    let path: Vec<&str> = entry.field.split('.').collect();
    let current = if group { group_of(line) } else { value_at(line, &path) };
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
