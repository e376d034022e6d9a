//! An issue's working context in one call (`bd-sync context`, docs/agents.md): what an agent or a person
//! needs back after a break, gathered from the cache and the repository.
//!
//! The sections, in the order they are read: the task itself, its checkpoints (latest comments,
//! newest first), the code commits linked to it, the files those commits touched and what is
//! uncommitted now, its place in the dependency graph, and what becomes ready when it closes.
//! This module gathers values; the binary lays them out under a byte budget. Everything here
//! comes from a file or a repository someone else wrote: the binary escapes it as it prints.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result};
use serde::Serialize;

use super::links::Link;
use crate::cache::neighbourhood::{Graph, Parent};
use crate::cache::{query, Cache};

/// At most this many linked commits are read for their files.
pub const COMMITS_FOR_FILES: usize = 10;
/// At most this many comments are kept as checkpoints.
pub const CHECKPOINTS: usize = 20;
/// At most this many file names per list.
pub const FILES: usize = 200;

/// The task: what the issue asks.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Task {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: Option<String>,
    /// Its status.
    pub status: Option<String>,
    /// Its priority as the file has it.
    pub priority: serde_json::Value,
    /// Who it is assigned to.
    pub assignee: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Its acceptance criteria.
    pub acceptance_criteria: Option<String>,
}

/// One comment, as a checkpoint.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Checkpoint {
    /// When it was written, as the file has it.
    pub created_at: Option<String>,
    /// Who wrote it.
    pub author: Option<String>,
    /// What it says.
    pub text: String,
}

/// Files the work touched.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Files {
    /// Paths the linked commits changed (the latest [`COMMITS_FOR_FILES`] commits), sorted.
    pub committed: Vec<String>,
    /// Paths `git status` lists as changed and not committed, in its order.
    pub uncommitted: Vec<String>,
}

/// The issue's place in the dependency graph.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Dependencies {
    /// Its parent (epic).
    pub parent: Option<Parent>,
    /// What holds it up.
    pub blocked_by: Vec<String>,
    /// Issues not yet done that depend on it.
    pub blocks: Vec<String>,
}

/// An issue that becomes ready when this one closes.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Next {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: Option<String>,
}

/// The working context of one issue.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Context {
    /// What the issue asks.
    pub task: Task,
    /// Latest comments first.
    pub checkpoints: Vec<Checkpoint>,
    /// Linked code commits, newest first.
    pub commits: Vec<Link>,
    /// Files the work touched.
    pub files: Files,
    /// Where it stands in the graph.
    pub dependencies: Dependencies,
    /// What closing it makes ready.
    pub next: Vec<Next>,
    /// Nothing was asked for and nothing is in progress for the actor: this is the next ready
    /// issue, a suggestion (nobody claimed it).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub suggested: bool,
}

/// Gathers the context of `id` (which the cache holds) in the repository at `dir`; `links` are
/// its linked commits (empty when the bridge is off).
pub fn gather(cache: &Cache, dir: &Path, id: &str, links: Vec<Link>) -> Result<Option<Context>> {
    let Some(record) = query::record(cache, id)? else { return Ok(None) };
    let issue: serde_json::Value = serde_json::from_str(&record).with_context(|| format!("the stored record of {id}"))?;
    let text = |k: &str| issue.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
    let task = Task {
        id: id.to_owned(),
        title: text("title"),
        status: text("status"),
        priority: issue.get("priority").cloned().unwrap_or(serde_json::Value::Null),
        assignee: text("assignee"),
        description: text("description"),
        acceptance_criteria: text("acceptance_criteria"),
    };
    let mut checkpoints: Vec<Checkpoint> = issue
        .get("comments")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| Checkpoint {
            created_at: c.get("created_at").and_then(serde_json::Value::as_str).map(str::to_owned),
            author: c.get("author").and_then(serde_json::Value::as_str).map(str::to_owned),
            text: c.get("text").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned(),
        })
        .collect();
    checkpoints.reverse();
    checkpoints.truncate(CHECKPOINTS);
    let blocking = query::Blocking::compute(cache)?;
    let blocked_by = blocking.blockers.get(id).cloned().unwrap_or_default();
    let graph = Graph::new(cache, blocking);
    let hood = graph.of(id)?;
    let mut next = Vec::with_capacity(hood.unblocks.len());
    for n in &hood.unblocks {
        let title = query::record(cache, n)?
            .and_then(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
            .and_then(|v| v.get("title").and_then(serde_json::Value::as_str).map(str::to_owned));
        next.push(Next { id: n.clone(), title });
    }
    // The two git processes run side by side: each costs more in starting than in working.
    let (committed, uncommitted) = std::thread::scope(|s| {
        let status = s.spawn(|| uncommitted_files(dir));
        let committed = committed_files(dir, &links);
        (committed, status.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let files = Files { committed: committed?, uncommitted: uncommitted? };
    let dependencies = Dependencies { parent: hood.parent, blocked_by, blocks: hood.blocks };
    Ok(Some(Context { task, checkpoints, commits: links, files, dependencies, next, suggested: false }))
}

/// The paths the latest linked commits changed, in one `git log --no-walk` (sorted, unique).
fn committed_files(dir: &Path, links: &[Link]) -> Result<Vec<String>> {
    if links.is_empty() {
        return Ok(Vec::new());
    }
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).stdin(Stdio::null()).args([
        "log",
        "--no-walk=unsorted",
        "-z",
        "--name-only",
        "--format=",
        "--no-renames",
        "--ignore-missing",
    ]);
    for l in links.iter().take(COMMITS_FOR_FILES) {
        cmd.arg(&l.commit);
    }
    cmd.arg("--");
    let out = cmd.output().context("running git log")?;
    let mut files = BTreeSet::new();
    for name in out.stdout.split(|b| *b == 0) {
        let name = String::from_utf8_lossy(name);
        let name = name.trim_matches('\n');
        if !name.is_empty() && files.len() < FILES {
            files.insert(name.to_owned());
        }
    }
    Ok(files.into_iter().collect())
}

/// What `git status` lists as changed, staged or not, and untracked (`--porcelain -z`).
fn uncommitted_files(dir: &Path) -> Result<Vec<String>> {
    let out = Command::new("git")
        .current_dir(dir)
        .stdin(Stdio::null())
        .args(["status", "--porcelain=v1", "-z", "--untracked-files=normal", "--no-renames"])
        .output()
        .context("running git status")?;
    if !out.status.success() {
        return Ok(Vec::new());
    }
    Ok(out.stdout.split(|b| *b == 0).filter(|e| e.len() > 3).map(|e| String::from_utf8_lossy(&e[3..]).into_owned()).take(FILES).collect())
}

/// The actor whose work `context` shows by default: `BD_ACTOR`, else `BEADS_ACTOR`, else git's
/// `user.name`, else `user.email`, as read in `dir`.
pub fn actor(dir: &Path) -> Option<String> {
    super::settings::Settings::read(dir).actor()
}
