//! The two marks beside the log: the highest entry the post-merge / post-rewrite hook announced
//! (so it speaks only of the merge that just ended) and the highest one a person listed with
//! `review` (so `check` speaks only of unread entries).

use std::path::Path;

use anyhow::Result;

use super::format::read_all;
use super::record::DRIVER_COMMAND;
use super::types::{Announcement, Entry, HookEvent, Reason};
use crate::safe_fs;

/// The highest sequence number the post-merge / post-rewrite hook announced.
pub(super) const ANNOUNCED_NAME: &str = "merge-log.announced";

/// The highest sequence number `bd-merge review` listed.
pub(super) const REVIEWED_NAME: &str = "merge-log.reviewed";

pub(super) fn read_mark(dir: &Path, name: &str) -> u64 {
    safe_fs::read_regular(&dir.join(name), 64)
        .ok()
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

pub(super) fn write_mark(dir: &Path, name: &str, seq: u64) -> Result<()> {
    let path = dir.join(name);
    safe_fs::refuse_non_regular(&path)?;
    crate::safe_fs::write_atomic(&path, format!("{seq}\n").as_bytes())
}

/// Whether `e` is a decision of the operation the hook runs after: only the driver's own entries
/// count (never `dedupe`'s, `resolve`'s, `import`'s, `review --restore`'s or `update-branch`'s,
/// which their commands report themselves); a merge's are those logged on `merge_parent`, the
/// first parent of the merge commit HEAD now is; a rebase's those logged during a rebase on a
/// commit HEAD now contains (`in_head`). A fast-forward, an amend and a squash made none.
pub(super) fn made_by(e: &Entry, event: HookEvent, merge_parent: Option<&str>, in_head: &std::collections::HashSet<&str>) -> bool {
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

/// For the post-merge / post-rewrite hook run in the work tree `repo`: what to say about
/// the values the merge or rebase that just ended overrode (none when it overrode none, or was a
/// fast-forward, an amend or a squash), and the mark moved past every entry logged so far, so no
/// decision is announced twice nor by a later operation.
pub fn announce(dir: &Path, repo: &Path, event: HookEvent) -> Result<Option<Announcement>> {
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
    Ok(Some(Announcement { values, renamed }))
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
