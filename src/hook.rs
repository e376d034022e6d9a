//! The notifier as `bd-hook` runs it: collect ids from every source, then deliver them.
//!
//! Ids come from `--id`, `--stdin` and `--from-diff`, combined in first-seen order with blanks and
//! repeats dropped. Collection errors (an unknown revision, an unreadable stdin) and delivery
//! failures are outcomes the binary maps to exit codes: fail-open by default, strict on request.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, Result};

use crate::diff::{changes, Changes, Snapshot};
use crate::git::Repo;

/// Where ids come from.
#[derive(Debug, Clone, Default)]
pub struct IdSources {
    /// Given on the command line.
    pub ids: Vec<String>,
    /// Read standard input (one id per line; `#` comments and blank lines skipped).
    pub stdin: bool,
    /// `REV` (compared with HEAD) or `REV..REV`.
    pub from_diff: Option<String>,
    /// The issues file inside the repository (default: `.beads/issues.jsonl`, else `beads.jsonl`).
    pub path: Option<String>,
}

/// Parses `REV` or `A..B` into the two revisions to compare.
pub fn diff_range(spec: &str) -> (String, String) {
    match spec.split_once("..") {
        Some((a, b)) => (if a.is_empty() { "HEAD".into() } else { a.into() }, if b.is_empty() { "HEAD".into() } else { b.into() }),
        None => (spec.to_owned(), "HEAD".to_owned()),
    }
}

/// Ids added, modified or deleted in the issues file between two revisions, read from git
/// objects in the repository containing `dir` (`GIT_DIR` honoured).
pub fn diff_ids(dir: &Path, spec: &str, path: Option<&str>) -> Result<Changes> {
    let (old_rev, new_rev) = diff_range(spec);
    // Inflating and indexing a big file dominates: do the two revisions on two threads (each
    // opens the repository itself; gix repositories are per-thread).
    let snapshot = |rev: &str| -> Result<Snapshot> {
        let bytes = Repo::discover(dir)?.issues_at(rev, path)?;
        Snapshot::parse(bytes, false, None).map_err(|e| anyhow::anyhow!("issues file at {rev}: {e}"))
    };
    let (old, new) = std::thread::scope(|s| {
        let old = s.spawn(|| snapshot(&old_rev));
        let new = snapshot(&new_rev);
        (old.join().expect("reading a revision does not panic"), new)
    });
    Ok(changes(&old?, &new?))
}

/// Collects ids from every source, first-seen order, without blanks or repeats.
pub fn collect_ids(sources: &IdSources, dir: &Path, stdin: impl BufRead) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut push = |id: &str| {
        let id = id.trim();
        if !id.is_empty() && seen.insert(id.to_owned()) {
            out.push(id.to_owned());
        }
    };
    for id in &sources.ids {
        push(id);
    }
    if sources.stdin {
        for line in stdin.lines() {
            let line = line.context("reading ids from stdin")?;
            let line = line.trim();
            if !line.starts_with('#') {
                push(line);
            }
        }
    }
    if let Some(spec) = &sources.from_diff {
        for id in diff_ids(dir, spec, sources.path.as_deref())?.ids() {
            push(&id);
        }
    }
    Ok(out)
}
