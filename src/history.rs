//! Reading issue changes out of git: `bd-sync diff` (between revisions, or a revision and the
//! working file) and `bd-sync log ID` (the commits that changed one issue, field by field).
//!
//! Which commits touched the issues file, and its blob before and after each, is asked of git
//! (`git log --raw` over both file names: tree diffs only); each distinct blob is read once, by
//! one `git cat-file --batch`, and the issue's line in it found by its `"id":"..."` text; a commit whose
//! two lines differ is compared field by field with [`crate::issue_diff`]. A rename between `.beads/beads.jsonl` and
//! `.beads/issues.jsonl` is followed: each revision is read under whichever name it has.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::diff::Snapshot;
use crate::git::{Repo, ISSUES_PATHS};
use crate::issue_diff::{self, FileDiff, IssueChange};

/// What `bd-sync diff` compares.
#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// `None`: HEAD against the working file; `REV`: REV against the working file; `A..B`: A
    /// against B.
    pub spec: Option<String>,
    /// The working issues file.
    pub working_file: std::path::PathBuf,
}

/// The field-level diff of the issues file between two revisions, or a revision and the working
/// file, in the repository holding the working file.
pub fn diff(options: &DiffOptions) -> Result<FileDiff> {
    let dir = options.working_file.parent().unwrap_or(Path::new("."));
    let repo = Repo::discover(dir)?;
    let working = || crate::jsonl::read(&options.working_file);
    let (old_name, new_name, old, new) = match options.spec.as_deref() {
        None => ("HEAD".to_owned(), options.working_file.display().to_string(), repo.issues_at("HEAD", None)?, working()?),
        Some(spec) if spec.contains("..") => {
            let (a, b) = crate::git::diff_range(spec);
            let (old, new) = (repo.issues_at(&a, None)?, repo.issues_at(&b, None)?);
            (a, b, old, new)
        }
        Some(rev) => (rev.to_owned(), options.working_file.display().to_string(), repo.issues_at(rev, None)?, working()?),
    };
    let snapshot = |bytes: Vec<u8>, name: &str| Snapshot::parse(bytes, false, None).with_context(|| format!("issues file at {name}"));
    let issues = issue_diff::diff_snapshots(&snapshot(old, &old_name)?, &snapshot(new, &new_name)?);
    Ok(FileDiff { old: old_name, new: new_name, issues })
}

/// A commit, as `log` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CommitInfo {
    /// Full commit id.
    pub commit: String,
    /// Author name.
    pub author: String,
    /// Author email.
    pub email: String,
    /// Author date, strict ISO 8601.
    pub date: String,
    /// The commit's subject line.
    pub subject: String,
}

/// One commit that changed the issue.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    /// The commit (its fields appear inline in the JSON).
    #[serde(flatten)]
    pub commit: CommitInfo,
    /// What the commit did to the issue.
    pub change: IssueChange,
}

/// The commits in `range` (default: HEAD's history) that changed issue `id`, newest first, each
/// with its field-level change. Merge commits are not listed (the commits they bring are).
///
/// git lists the commits that touched either file name with the blob ids before and after
/// (`git log --raw`: tree diffs only, fast); each distinct blob is then read once, on every core,
/// and searched for the issue's line; a commit is listed when that line differs.
pub fn log(dir: &Path, id: &str, range: Option<&str>) -> Result<Vec<LogEntry>> {
    let mut args: Vec<String> = vec![
        "log".into(),
        "--format=%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%s".into(),
        "--raw".into(),
        "--no-abbrev".into(),
        "--no-renames".into(),
    ];
    match range.map(log_range).transpose()? {
        Some(LogRange::Last(n)) => args.push(format!("--max-count={n}")),
        // After --end-of-options git takes RANGE as a revision, whatever it holds.
        Some(LogRange::Revisions(r)) => args.extend(["--end-of-options".to_owned(), r.to_owned()]),
        None => {}
    }
    args.push("--".into());
    // From the top of the tree wherever `dir` is (and in a bare repository).
    args.extend(ISSUES_PATHS.iter().map(|p| format!(":(top){p}")));
    let listing = crate::git::run(dir, &args)?;
    let touches: Vec<Touch> = listing.split('\u{1e}').filter_map(Touch::parse).collect();
    // In history order, so each thread walks neighbouring versions (whose pack deltas share bases).
    let mut seen = std::collections::HashSet::new();
    let blobs: Vec<&str> =
        touches.iter().flat_map(|t| [t.new.as_deref(), t.old.as_deref()]).flatten().filter(|b| seen.insert(*b)).collect();
    let lines = lines_in_blobs(dir, &blobs, id)?;
    let line = |blob: &Option<String>| blob.as_deref().and_then(|b| lines.get(b)).and_then(|l| l.as_deref());
    let changes: Vec<Option<IssueChange>> = touches.iter().map(|t| issue_diff::diff_issue(id, line(&t.old), line(&t.new))).collect();
    Ok(touches.into_iter().zip(changes).filter_map(|(t, change)| Some(LogEntry { commit: t.commit, change: change? })).collect())
}

/// One commit of `git log --raw` over the issues files: the file's blob before and after (under
/// either name; `None` where it did not exist).
/// What `bd-sync log ID RANGE` accepts as RANGE.
#[derive(Debug, PartialEq, Eq)]
enum LogRange<'a> {
    /// `-N`: the last N commits.
    Last(u32),
    /// Revisions as `git log` takes them (`main..topic`, `HEAD~5..`, `v1.0`).
    Revisions(&'a str),
}

/// Checks RANGE before it reaches git: `-N`, or revisions; anything else starting with `-` would
/// be a `git log` option (`--output=FILE` writes any file) and is refused.
fn log_range(range: &str) -> Result<LogRange<'_>> {
    match range.strip_prefix('-') {
        None if !range.is_empty() => Ok(LogRange::Revisions(range)),
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            n.parse().map(LogRange::Last).map_err(|_| anyhow::anyhow!("RANGE {range}: too many commits (at most -{})", u32::MAX))
        }
        _ => anyhow::bail!(
            "RANGE {} is not a range: give revisions (`main..topic`, `HEAD~5..`) or `-N` for the last N commits; \
             git options are not passed through",
            crate::record::escaped(&format!("{range:?}"))
        ),
    }
}

struct Touch {
    commit: CommitInfo,
    old: Option<String>,
    new: Option<String>,
}

impl Touch {
    fn parse(block: &str) -> Option<Touch> {
        let mut lines = block.lines();
        let head: Vec<&str> = lines.next()?.splitn(5, '\u{1f}').collect();
        let [commit, author, email, date, subject] = head[..] else { return None };
        let (mut old, mut new) = (None, None);
        for raw in lines.filter(|l| l.starts_with(':')) {
            // :100644 100644 <old> <new> M\tpath
            let fields: Vec<&str> = raw.split_whitespace().collect();
            let nonzero = |h: &&&str| h.bytes().any(|b| b != b'0');
            if let Some(h) = fields.get(2).filter(nonzero) {
                old.get_or_insert_with(|| h.to_string());
            }
            if let Some(h) = fields.get(3).filter(nonzero) {
                new.get_or_insert_with(|| h.to_string());
            }
        }
        let commit = CommitInfo {
            commit: commit.to_owned(),
            author: author.to_owned(),
            email: email.to_owned(),
            date: date.to_owned(),
            subject: subject.to_owned(),
        };
        Some(Touch { commit, old, new })
    }
}

/// The issue's line in each blob (`None`: not there), the blobs read by one `git cat-file
/// --batch` ([`crate::git::for_each_blob`]).
fn lines_in_blobs(dir: &Path, blobs: &[&str], id: &str) -> Result<std::collections::HashMap<String, Option<Vec<u8>>>> {
    let mut out = std::collections::HashMap::with_capacity(blobs.len());
    crate::git::for_each_blob(dir, blobs, |i, content| {
        let Some(content) = content else { anyhow::bail!("reading blob {}: git cat-file says it is missing", blobs[i]) };
        out.insert(blobs[i].to_owned(), crate::record::line_of(content, id).map(<[u8]>::to_vec));
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_range_is_revisions_or_a_count_never_an_option() {
        assert_eq!(log_range("main..topic").ok(), Some(LogRange::Revisions("main..topic")));
        assert_eq!(log_range("-20").ok(), Some(LogRange::Last(20)));
        for bad in ["--output=/tmp/x", "-p", "-", "", "-1x", "-99999999999"] {
            assert!(log_range(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_issue_line_is_found_by_its_own_id_only() {
        let content = b"{\"id\":\"a\",\"dependencies\":[{\"issue_id\":\"a\",\"depends_on_id\":\"b\"}]}\n{\"id\":\"b\",\"title\":\"B\"}\n";
        assert_eq!(crate::record::line_of(content, "b"), Some(&b"{\"id\":\"b\",\"title\":\"B\"}"[..]));
        assert_eq!(crate::record::line_of(content, "c"), None);
    }
}
