//! The opt-in post-commit note (docs/agents.md): with `git config beads.commitComments true`, the
//! tracker itself (br or bd, from `PATH`) is asked to add the comment `commit <short sha>:
//! <subject>` to each issue the new commit links to. The tracker owns its writes: nothing here
//! touches the issues file.
//!
//! Only a commit made by `git commit` is noted: git's reflog entry for it (`commit:` or
//! `commit (initial):`) tells it apart from an amend (whose commit was noted already), a merge,
//! a rebase or a cherry-pick replaying commits, so no issue hears of one piece of work twice.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::links::{mentioned_ids, trailer_ids};
use super::settings::Settings;
use crate::tracker::{self, Tracker};

/// At most this many issues are noted for one commit (a message may name hundreds).
pub const MAX_ISSUES: usize = 8;

/// How long the tracker may take over one commit's comments, in all: the commit has been made,
/// and the person is waiting for their prompt.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// What the post-commit note did.
#[derive(Debug)]
pub enum Outcome {
    /// `beads.commitComments` is not on, or the bridge is off.
    NotAsked,
    /// The commit was not made anew by `git commit` (an amend, a merge, a squash, a rebase or a
    /// cherry-pick, a commit of the issues files alone), or git keeps no reflog here.
    NotNew,
    /// The commit links to no issue.
    NoIssue,
    /// Neither br nor bd is on `PATH`.
    NoTracker,
    /// The tracker was asked, issue by issue, until one call failed or the time was up.
    Asked {
        /// The tracker.
        tracker: Tracker,
        /// The comment text.
        text: String,
        /// Each issue asked about, and what the tracker answered.
        results: Vec<(String, Result<(), tracker::Error>)>,
        /// Linked issues not asked about: beyond [`MAX_ISSUES`], or after a failure.
        left_out: usize,
    },
}

/// The new commit `HEAD` of the repository at `dir`, noted on its issues when asked to.
/// `beads_dir` finds the `.beads/` directory (only once the note is wanted); `known` keeps the
/// ids that are issues of the file (a message may name any word shaped like an id).
pub fn note_commit(
    dir: &Path,
    beads_dir: &dyn Fn() -> Result<PathBuf>,
    known: &dyn Fn(Vec<String>) -> Result<Vec<String>>,
) -> Result<Outcome> {
    let settings = Settings::read(dir);
    if !settings.commit_comments_on() || !settings.bridge_on() {
        return Ok(Outcome::NotAsked);
    }
    let Some(commit) = head_commit(dir)? else { return Ok(Outcome::NotNew) };
    let mut linked: Vec<String> = Vec::new();
    for id in trailer_ids(&commit.message).into_iter().chain(mentioned_ids(&commit.message, None)) {
        if !linked.contains(&id) {
            linked.push(id);
        }
    }
    if linked.is_empty() {
        return Ok(Outcome::NoIssue);
    }
    // Ids that are not issues of the file are dropped; when the cache cannot say, the
    // trailer's ids are taken as they are.
    let ids = known(linked).or_else(|_| Ok::<_, anyhow::Error>(trailer_ids(&commit.message)))?;
    if ids.is_empty() {
        return Ok(Outcome::NoIssue);
    }
    let beads_dir = beads_dir()?;
    let top = beads_dir.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let Some((tracker, program)) = tracker::of_directory(&beads_dir, &top) else { return Ok(Outcome::NoTracker) };
    let text = format!("commit {}: {}", commit.short, crate::record::printable(&commit.subject, super::links::MAX_SUBJECT));
    let deadline = Instant::now() + TIMEOUT;
    let mut results = Vec::new();
    for id in ids.iter().take(MAX_ISSUES) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let result = tracker::add_comment(tracker, &program, &top, id, &text, left);
        let failed = result.is_err();
        results.push((id.clone(), result));
        if failed {
            break;
        }
    }
    let left_out = ids.len() - results.len();
    Ok(Outcome::Asked { tracker, text, results, left_out })
}

struct Commit {
    short: String,
    subject: String,
    message: String,
}

/// `HEAD`, when git's reflog says `git commit` made it anew (`commit:` or `commit (initial):`,
/// not an amend or a merge), no rebase, cherry-pick or revert is under way (a stopped rebase
/// goes on with `git commit`), it is not a `--squash` of a branch (whose commits were noted one
/// by one), and it changed more than the `.beads/` files (the tracker's own comment is written
/// there, and noting its commit would write another).
fn head_commit(dir: &Path) -> Result<Option<Commit>> {
    let out = Command::new("git")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .args(["log", "-g", "-1", "--no-show-signature", "--format=%gs%x00%h%x00%s%x00%B", "HEAD", "--"])
        .output()
        .context("running git log")?;
    if !out.status.success() || out.stdout.len() > (super::commit_msg::MAX_MESSAGE as usize) * 2 {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.splitn(4, '\0');
    let (Some(reflog), Some(short), Some(subject), Some(message)) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Ok(None);
    };
    if !(reflog.starts_with("commit: ") || reflog.starts_with("commit (initial): "))
        || message.starts_with("Squashed commit of the following:")
    {
        return Ok(None);
    }
    let Some(git_dir) = crate::git::git_dir(dir) else { return Ok(None) };
    let state = super::commit_msg::InProgress::of(&git_dir);
    if state.merge || state.squash || state.replay {
        return Ok(None);
    }
    let changed = crate::git::run(dir, &["diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "HEAD", "--"]).unwrap_or_default();
    let paths: Vec<&str> = changed.lines().collect();
    if !paths.is_empty() && paths.iter().all(|path| path.starts_with(".beads/")) {
        return Ok(None);
    }
    Ok(Some(Commit { short: short.to_owned(), subject: subject.to_owned(), message: message.to_owned() }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn mentioned_words_are_id_shaped_once_and_bounded() {
        use super::super::links::{mentioned_ids, MAX_IDS_PER_COMMIT};
        let words = mentioned_ids("fixes bd-a1. See bd-a1, proj-3.1 and $(x) -rf\n", None);
        assert_eq!(words, ["bd-a1", "proj-3.1"]);
        let many: String = (0..1000).map(|i| format!("bd-{i} ")).collect();
        assert_eq!(mentioned_ids(&many, None).len(), MAX_IDS_PER_COMMIT);
    }
}
