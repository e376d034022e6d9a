//! The merge commit that produced an issues file, found again so a repair can redo that merge
//! properly (docs/repair.md).
//!
//! `merge=union` leaves an id on two lines, and a merge committed with conflict markers leaves
//! both sides in one file; either way the base is lost in the file, and merging the copies
//! against an empty base lets the newer copy override a teammate's older edit (a claim reverted).
//! The repository usually still holds the commit that made the file: its two parents and their
//! merge base are exactly the three sides the driver would have merged. This module finds that
//! commit and reads those sides; it never merges or writes anything itself.
//!
//! The search is bounded: the last [`SEARCH_DEPTH`] commits of HEAD's first-parent history (the
//! merges made on this branch), newest first. A merge commit qualifies when its version of the
//! file is what the repair starts from and neither parent's version is: for `dedupe`, an id on
//! several lines that neither parent has on several lines; for `resolve`, conflict markers that
//! neither parent has. History is used only when the working file is still that commit's file,
//! byte for byte: a later edit (a commit after the merge, or an uncommitted change) would
//! otherwise be silently undone, so then the caller is told why history was not used.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::git::{self, Repo};
use crate::jsonl::Jsonl;
use crate::record::{is_conflict_marker, record_key, Key};

/// How many commits of HEAD's first-parent history are searched for the producing merge.
pub const SEARCH_DEPTH: usize = 200;

/// What the repair starts from, so what the producing merge must have made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// Ids on several lines (`dedupe` after `merge=union`).
    CopiesOfIds,
    /// Conflict markers (`resolve` of a merge committed with them).
    ConflictMarkers,
}

/// The producing merge and the three sides it merged.
#[derive(Debug, Clone)]
pub struct MergeHistory {
    /// The merge commit, abbreviated as git abbreviates it.
    pub commit: String,
    /// The parents' merge base, abbreviated.
    pub merge_base: String,
    /// The file at the merge base (empty when it did not exist there).
    pub base: Vec<u8>,
    /// The file at the first parent (the branch merged into).
    pub ours: Vec<u8>,
    /// The file at the second parent (the branch merged in).
    pub theirs: Vec<u8>,
    /// The parents' names: a branch name when `git name-rev` finds one exactly, else a short hash.
    pub labels: crate::merge::Labels,
}

/// Why no history can be used; the caller falls back to merging against an empty base.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoHistory {
    /// The file is not in a git repository (or git is not installed).
    #[error("no merge commit was found (the file is not in a git repository)")]
    NotARepository,
    /// No merge commit in the searched history produced the file (`shallow`: the clone's history
    /// is cut off, so the parents may simply be missing).
    #[error("{}", no_merge_commit(*shallow))]
    NoMergeCommit {
        /// The repository is a shallow clone.
        shallow: bool,
    },
    /// The producing merge was found, but its parents' merge base is not in the repository (a
    /// shallow clone) or they have none.
    #[error(
        "no merge commit with a usable history was found (merge commit {commit} produced the file, but its parents' merge base is not in \
            this repository, as in a shallow clone)"
    )]
    NoMergeBase {
        /// The merge commit, abbreviated.
        commit: String,
    },
    /// The producing merge was found, but the file changed after it (a later commit or an
    /// uncommitted edit), and redoing the merge would undo that change.
    #[error(
        "no merge commit was used: merge commit {commit} produced the copies, but the file has changed since (a later commit or an \
            uncommitted edit), and redoing that merge would undo the change"
    )]
    FileChanged {
        /// The merge commit, abbreviated.
        commit: String,
    },
    /// git failed while reading the history.
    #[error("no merge commit was found (git could not read the history: {0})")]
    Unreadable(String),
    /// The parents' files cannot be merged record by record.
    #[error(
        "no merge commit was used: merge commit {commit} produced the file, but its parents' files cannot be merged record by record \
            ({reason})"
    )]
    Unmergeable {
        /// The merge commit, abbreviated.
        commit: String,
        /// The merge's words.
        reason: String,
    },
}

fn no_merge_commit(shallow: bool) -> String {
    if shallow {
        "no merge commit that produced the file was found (this is a shallow clone: its history may lack the merge's parents)".to_owned()
    } else {
        format!("no merge commit that produced the file was found in the last {SEARCH_DEPTH} commits of HEAD")
    }
}

/// Finds the merge commit that produced `working` (the file at `rel` in the work tree at `top`)
/// and reads the three sides it merged.
pub fn find(top: &Path, rel: &str, made: Made, working: &[u8]) -> Result<MergeHistory, NoHistory> {
    let run = |args: &[&str]| git::run(top, args);
    let Ok(repo) = Repo::discover(top) else {
        return Err(NoHistory::NotARepository);
    };
    let shallow = run(&["rev-parse", "--is-shallow-repository"]).is_ok_and(|s| s == "true");
    let Ok(listing) = run(&["rev-list", "--first-parent", "--parents", "-n", &SEARCH_DEPTH.to_string(), "HEAD"]) else {
        return Err(NoHistory::NoMergeCommit { shallow });
    };
    // Commits with exactly two parents: an octopus merge has no single pair of sides.
    let merges: Vec<[&str; 3]> = listing
        .lines()
        .filter_map(|l| {
            let ids: Vec<&str> = l.split_whitespace().collect();
            match ids[..] {
                [m, p1, p2] => Some([m, p1, p2]),
                _ => None,
            }
        })
        .collect();
    if merges.is_empty() {
        return Err(NoHistory::NoMergeCommit { shallow });
    }
    let specs: Vec<String> = merges.iter().flat_map(|ids| ids.iter().map(|id| format!("{id}:{rel}"))).collect();
    let blobs = blob_ids(top, &specs).map_err(NoHistory::Unreadable)?;
    let read = |id: &Option<String>| -> Result<Vec<u8>, NoHistory> {
        match id {
            None => Ok(Vec::new()),
            Some(hex) => repo.blob(hex).map_err(|e| NoHistory::Unreadable(format!("{e:#}"))),
        }
    };
    for (ids, blob) in merges.iter().zip(blobs.chunks(3)) {
        let [Some(made_blob), p1, p2] = blob else { continue };
        if Some(made_blob) == p1.as_ref() || Some(made_blob) == p2.as_ref() {
            continue; // the merge took one side's file as it was
        }
        // The merge's own file first: the parents are read only when it could be the one.
        let produced = read(&blob[0])?;
        let copies = matches!(made, Made::CopiesOfIds).then(|| ids_on_several_lines(&produced));
        let candidate = match &copies {
            None => has_markers(&produced),
            Some(ids) => !ids.is_empty(),
        };
        if !candidate {
            continue;
        }
        let (ours, theirs) = (read(p1)?, read(p2)?);
        let qualifies = match copies {
            None => !has_markers(&ours) && !has_markers(&theirs),
            Some(ids) => {
                let inherited: HashSet<String> = ids_on_several_lines(&ours).into_iter().chain(ids_on_several_lines(&theirs)).collect();
                ids.iter().any(|id| !inherited.contains(id))
            }
        };
        if !qualifies {
            continue;
        }
        let commit = short(top, ids[0]);
        if produced != working {
            return Err(NoHistory::FileChanged { commit });
        }
        let Ok(merge_base) = run(&["merge-base", ids[1], ids[2]]) else {
            return Err(NoHistory::NoMergeBase { commit });
        };
        let base = match repo.issues_blob_at(&merge_base, Some(rel)) {
            Ok(id) => read(&id.map(|id| id.as_str().to_owned()))?,
            Err(e) => return Err(NoHistory::Unreadable(format!("{e:#}"))),
        };
        let labels = crate::merge::Labels { ours: name(top, ids[1]), theirs: name(top, ids[2]) };
        return Ok(MergeHistory { commit, merge_base: short(top, &merge_base), base, ours, theirs, labels });
    }
    Err(NoHistory::NoMergeCommit { shallow })
}

/// The blob ids of `REV:PATH` specs in one `git cat-file --batch-check`; `None` where there is
/// none (the file missing at that commit, or the commit missing from a shallow clone).
fn blob_ids(top: &Path, specs: &[String]) -> Result<Vec<Option<String>>, String> {
    let mut child = Command::new("git")
        .args([OsStr::new("cat-file"), OsStr::new("--batch-check=%(objectname) %(objecttype)")])
        .current_dir(top)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("running git cat-file: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("git cat-file has no input")?;
    let input: String = specs.iter().map(|s| format!("{s}\n")).collect();
    // Written on a thread: git answers line by line, and a long input would fill both pipes.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| format!("running git cat-file: {e}"))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err("git cat-file --batch-check failed".to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let ids: Vec<Option<String>> = text
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((id, "blob")) if git::ObjectId::from_hex(id).is_some() => Some(id.to_owned()),
            _ => None,
        })
        .collect();
    if ids.len() != specs.len() {
        return Err(format!("git cat-file answered {} of {} look-ups", ids.len(), specs.len()));
    }
    Ok(ids)
}

fn has_markers(content: &[u8]) -> bool {
    content.split(|&b| b == b'\n').any(is_conflict_marker)
}

/// The keys that stand on more than one line of a file.
fn ids_on_several_lines(content: &[u8]) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut several = HashSet::new();
    for line in Jsonl::split(content).lines {
        if let Ok(key) = record_key(line.bytes) {
            let key = Key::into_string_key(key).into_owned();
            if !seen.insert(key.clone()) {
                several.insert(key);
            }
        }
    }
    several
}

fn short(top: &Path, id: &str) -> String {
    git::run(top, &["rev-parse", "--short", id]).unwrap_or_else(|_| id.chars().take(12).collect())
}

/// A branch (or tag) name that points exactly at the commit, else its short hash.
fn name(top: &Path, id: &str) -> String {
    match git::run(top, &["name-rev", "--name-only", "--no-undefined", id]) {
        Ok(n) if !n.is_empty() && !n.contains(['~', '^', ' ']) => n.strip_prefix("tags/").unwrap_or(&n).to_owned(),
        _ => short(top, id),
    }
}
