//! `bd-sync link HOOK [ARGS]`: what the prepare-commit-msg, commit-msg and post-commit blocks
//! run (docs/agents.md). The message hooks add a `Beads-Issue:` trailer naming the issue the commit is
//! for; post-commit asks the tracker to note the commit on it when `beads.commitComments` is set.
//! Fail-open: a hook must never fail or change the commit it runs in, so this always exits 0,
//! says at most one line, and leaves the message as it was on any error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use beads_git::bridge::commit_comment::{self, Outcome};
use beads_git::bridge::commit_msg::{self, Decision, Hook, Skip};
use beads_git::cache::{query, Cache, OpenMode, Paths};
use beads_git::record::{escaped, printable_lines};

use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// prepare-commit-msg, commit-msg or post-commit.
    hook: String,
    /// The message file git passed to the hook (the message hooks).
    file: Option<PathBuf>,
    /// prepare-commit-msg's source of the message (message, template, merge, squash, commit).
    source: Option<String>,
    /// prepare-commit-msg's commit whose message is reused (source `commit`: -c, -C, --amend).
    commit: Option<String>,
}

/// How long the hook waits for the cache's lock: a commit must not wait on a long import.
const LOCK_WAIT: Duration = Duration::from_secs(2);

pub(crate) fn run(global: &Global, args: Args) -> ExitCode {
    if let Err(e) = link(global, &args) {
        eprintln!("bd-sync: {}: {}", escaped(&args.hook), printable_lines(&format!("{e:#}")));
    }
    ExitCode::SUCCESS
}

fn link(global: &Global, args: &Args) -> Result<()> {
    let dir = crate::repo_dir(None)?;
    let hook = match args.hook.as_str() {
        "prepare-commit-msg" => Hook::Prepare { source: args.source.clone(), commit: args.commit.clone() },
        "commit-msg" => Hook::CommitMsg,
        "post-commit" => return note(global, &dir),
        other => anyhow::bail!("unknown hook {} (prepare-commit-msg, commit-msg, post-commit)", escaped(other)),
    };
    let Some(file) = &args.file else { anyhow::bail!("git passes the message file as the first argument") };
    let in_progress = |actor: Option<&str>, head_moved| -> Result<Vec<commit_msg::Claim>> {
        let since = commit_msg::claims_since(head_moved);
        let rows = query::in_progress_claims(&open(global, &dir)?, actor, since.as_deref())?;
        Ok(commit_msg::claims(rows, actor, head_moved))
    };
    let known = |id: &str| -> Result<bool> { query::id_or_prefix_known(&open(global, &dir)?, id) };
    match commit_msg::link_message(&dir, &hook, file, &in_progress, &known)? {
        Decision::Chose { id, over } => eprintln!(
            "bd-sync: Beads-Issue: {}, the issue you moved to in progress last (also in progress for you: {})",
            escaped(&id),
            over.iter().take(5).map(|i| escaped(i)).collect::<Vec<_>>().join(", ")
        ),
        Decision::Add(_) | Decision::Skip(Skip::LaterHook | Skip::DecidedBefore | Skip::Off | Skip::Unedited) => {}
        Decision::Skip(skip) if skip.worth_saying() => eprintln!("bd-sync: no Beads-Issue trailer: {}", said(&skip)),
        Decision::Skip(_) => {}
    }
    Ok(())
}

/// Why a commit that might have named its issue does not, as the committer reads it.
fn said(skip: &Skip) -> String {
    match skip {
        Skip::NoIssue => "you have no issue in progress (claim one, or name it: BEADS_ISSUE=<id> git commit)".into(),
        Skip::Several(ids) => format!(
            "you have {} issues in progress ({}); name the one: BEADS_ISSUE=<id> git commit",
            ids.len(),
            ids.iter().take(5).map(|i| escaped(i)).collect::<Vec<_>>().join(", ")
        ),
        Skip::BadId(id) => format!("{} is not an id a trailer can hold (letters, digits, `.`, `_` and `-`)", escaped(id)),
        Skip::UnknownIssue(id) => {
            format!("BEADS_ISSUE names {}, which no issue here has, nor any id with its prefix (a typo?)", escaped(id))
        }
        _ => String::new(),
    }
}

/// The cache as the hook reads it: brought up to date with the file when it changed, waiting
/// at most [`LOCK_WAIT`] for another writer.
fn open(global: &Global, dir: &Path) -> Result<Cache> {
    let paths = Paths::discover(dir, None, global.db.as_deref()).map_err(|e| crate::explain(e, false).into_error())?;
    let (cache, _) = Cache::open_fresh(&paths, OpenMode::read(LOCK_WAIT)).map_err(|e| crate::explain(e, false).into_error())?;
    Ok(cache)
}

/// post-commit: the opt-in note on the linked issues.
fn note(global: &Global, dir: &Path) -> Result<()> {
    let known = |ids: Vec<String>| -> Result<Vec<String>> {
        let cache = open(global, dir)?;
        let mut out = Vec::new();
        for id in ids {
            if matches!(query::resolve_id(&cache, &id)?, query::IdMatch::One(found) if found == id) {
                out.push(id);
            }
        }
        Ok(out)
    };
    let beads_dir = || -> Result<PathBuf> {
        let paths = Paths::discover(dir, None, global.db.as_deref()).map_err(|e| crate::explain(e, false).into_error())?;
        Ok(paths.file.parent().map_or_else(|| dir.join(".beads"), Path::to_path_buf))
    };
    match commit_comment::note_commit(dir, &beads_dir, &known)? {
        Outcome::NotAsked | Outcome::NotNew | Outcome::NoIssue => {}
        Outcome::NoTracker => eprintln!("bd-sync: beads.commitComments is on, but neither br nor bd is on PATH to add the comment"),
        Outcome::Asked { tracker, results, left_out, .. } => {
            // The calls stop at the first failure: it is the last result.
            if let Some((id, Err(e))) = results.last() {
                eprintln!(
                    "bd-sync: {} did not note the commit on {} ({})",
                    tracker.program(),
                    escaped(id),
                    printable_lines(&e.to_string())
                );
            } else if left_out > 0 {
                eprintln!("bd-sync: the commit names {left_out} more issue(s) than the {} noted", commit_comment::MAX_ISSUES);
            }
        }
    }
    Ok(())
}
