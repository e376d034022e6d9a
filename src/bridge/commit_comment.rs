//! The opt-in post-commit note (SPEC §13): with `git config beads.commitComments true`, the
//! tracker itself (br or bd, from `PATH`) is asked to add the comment `commit <short sha>:
//! <subject>` to each issue the new commit links to. The tracker owns its writes: nothing here
//! touches the issues file.
//!
//! Only a commit made by `git commit` is noted: git's reflog entry for it (`commit:` or
//! `commit (initial):`) tells it apart from an amend (whose commit was noted already), a merge,
//! a rebase or a cherry-pick replaying commits, so no issue hears of one piece of work twice.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};

use super::links::{is_id, trailer_ids};
use super::settings::Settings;
use crate::tracker::{self, Tracker};

/// At most this many issues are noted for one commit (a message may name hundreds).
pub const MAX_ISSUES: usize = 8;

/// How long one tracker call may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// What the post-commit note did.
#[derive(Debug)]
pub enum Outcome {
    /// `beads.commitComments` is not `true`, or the bridge is off.
    NotAsked,
    /// The commit was not made by `git commit` (an amend, merge, rebase, cherry-pick), or git
    /// keeps no reflog here.
    NotNew,
    /// The commit links to no issue.
    NoIssue,
    /// Neither br nor bd is on `PATH`.
    NoTracker,
    /// The tracker was asked, issue by issue.
    Asked {
        /// The tracker.
        tracker: Tracker,
        /// The comment text.
        text: String,
        /// Each issue, and what the tracker answered.
        results: Vec<(String, Result<(), tracker::Error>)>,
        /// Linked issues left out beyond [`MAX_ISSUES`].
        left_out: usize,
    },
}

/// The new commit `HEAD` of the repository at `dir` (its `.beads/` directory `beads_dir`),
/// noted on its issues when asked to. `known` keeps the ids mentioned in the message that are
/// issues (the trailer's are taken as they are).
pub fn note_commit(dir: &Path, beads_dir: &Path, known: &dyn Fn(Vec<String>) -> Result<Vec<String>>) -> Result<Outcome> {
    let settings = Settings::read(dir);
    let asked = settings.commit_comments.as_deref().is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if !asked || !settings.bridge_on() {
        return Ok(Outcome::NotAsked);
    }
    let Some(commit) = head_commit(dir)? else { return Ok(Outcome::NotNew) };
    let mut ids = trailer_ids(&commit.message);
    let mentioned: Vec<String> = mentioned_words(&commit.message).into_iter().filter(|w| !ids.contains(w)).collect();
    if !mentioned.is_empty() {
        ids.extend(known(mentioned)?);
    }
    ids.dedup();
    if ids.is_empty() {
        return Ok(Outcome::NoIssue);
    }
    let top = beads_dir.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let Some((tracker, program)) = tracker::of_directory(beads_dir, &top) else { return Ok(Outcome::NoTracker) };
    let left_out = ids.len().saturating_sub(MAX_ISSUES);
    ids.truncate(MAX_ISSUES);
    let text = format!("commit {}: {}", commit.short, crate::record::printable(&commit.subject, super::links::MAX_SUBJECT));
    let results = ids
        .into_iter()
        .map(|id| {
            let r = tracker::add_comment(tracker, &program, &top, &id, &text, TIMEOUT);
            (id, r)
        })
        .collect();
    Ok(Outcome::Asked { tracker, text, results, left_out })
}

struct Commit {
    short: String,
    subject: String,
    message: String,
}

/// `HEAD`, when its reflog entry says `git commit` made it anew (not an amend, not a merge).
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
    if !(reflog.starts_with("commit: ") || reflog.starts_with("commit (initial): ")) {
        return Ok(None);
    }
    Ok(Some(Commit { short: short.to_owned(), subject: subject.to_owned(), message: message.to_owned() }))
}

/// Words of `message` shaped like an issue id with a prefix (`bd-a1b2`, `proj-3.1`), each once.
fn mentioned_words(message: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in message.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))) {
        let word = word.trim_end_matches('.');
        if is_id(word) && word.contains('-') && !out.iter().any(|w| w == word) {
            out.push(word.to_owned());
            if out.len() >= super::links::MAX_IDS_PER_COMMIT {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn mentioned_words_are_id_shaped_once_and_bounded() {
        let words = super::mentioned_words("fixes bd-a1. See bd-a1, proj-3.1 and $(x) -rf\n");
        assert_eq!(words, ["bd-a1", "proj-3.1"]);
        let many: String = (0..1000).map(|i| format!("bd-{i} ")).collect();
        assert_eq!(super::mentioned_words(&many).len(), super::super::links::MAX_IDS_PER_COMMIT);
    }
}
