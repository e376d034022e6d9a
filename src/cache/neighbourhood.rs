//! What surrounds an issue in the dependency graph, for choosing work (SPEC §13): its parent,
//! what it blocks, and what it unblocks (the issues that become ready when it closes, because it
//! is the only thing holding them up, directly or through a parent it unblocks).
//!
//! `ready` answers "what can I do"; this answers "what does doing it open up", so an agent or a
//! person can pick the issue that unblocks the most, and knows which epic it belongs to.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::query::{Blocking, DONE_STATUSES};
use super::Cache;
use anyhow::Result;
use rusqlite::OptionalExtension;

/// An issue's parent (through a `parent-child` dependency).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Parent {
    /// The parent's id.
    pub id: String,
    /// Its title, when the parent is in the file.
    pub title: Option<String>,
}

/// The neighbourhood of one issue.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Neighbourhood {
    /// Its parent, if it has one (the first by id when a file gives several).
    pub parent: Option<Parent>,
    /// Issues not yet done that depend on it with `blocks`, sorted.
    pub blocks: Vec<String>,
    /// Open issues that become ready when it closes, sorted.
    pub unblocks: Vec<String>,
}

impl Neighbourhood {
    /// The keys `ready --json` appends to the record.
    pub fn json_keys(&self) -> Vec<(&'static str, serde_json::Value)> {
        let parent = match &self.parent {
            Some(p) => serde_json::json!({"id": p.id, "title": p.title}),
            None => serde_json::Value::Null,
        };
        vec![("parent", parent), ("blocks", self.blocks.clone().into()), ("unblocks", self.unblocks.clone().into())]
    }
}

/// The dependency graph around every issue, computed once for a list.
pub struct Graph<'c> {
    cache: &'c Cache,
    blocking: Blocking,
    /// Blocker -> the issues it holds up (directly, or as their blocked parent).
    held: FxHashMap<String, Vec<String>>,
    /// The query of what an issue blocks (issues not yet done), built once.
    blocks_sql: String,
}

impl<'c> Graph<'c> {
    /// The graph around `blocking` (the blocked set, computed once); each [`Graph::of`] then
    /// costs a few indexed look-ups.
    pub fn new(cache: &'c Cache, blocking: Blocking) -> Graph<'c> {
        let mut held: FxHashMap<String, Vec<String>> = FxHashMap::default();
        for (blocked, blockers) in &blocking.blockers {
            for b in blockers {
                held.entry(b.clone()).or_default().push(blocked.clone());
            }
        }
        let done = DONE_STATUSES.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
        let blocks_sql = format!(
            "SELECT d.issue_id FROM dependencies d JOIN issues i ON i.id = d.issue_id \
             WHERE d.depends_on_id = ?1 AND d.type = 'blocks' AND coalesce(i.status, '') NOT IN ({done}) ORDER BY d.issue_id"
        );
        Graph { cache, blocking, held, blocks_sql }
    }

    /// The neighbourhood of `id`.
    pub fn of(&self, id: &str) -> Result<Neighbourhood> {
        Ok(Neighbourhood { parent: self.parent(id)?, blocks: self.blocks(id)?, unblocks: self.unblocks(id)? })
    }

    fn parent(&self, id: &str) -> Result<Option<Parent>> {
        // `+d.type`: without it SQLite (no statistics) walks the `(type, ...)` index through
        // every parent-child link for each issue; the key `(issue_id, ...)` finds its few.
        let mut st = self.cache.conn.prepare_cached(
            "SELECT d.depends_on_id, p.title FROM dependencies d LEFT JOIN issues p ON p.id = d.depends_on_id \
             WHERE d.issue_id = ?1 AND +d.type = 'parent-child' ORDER BY d.depends_on_id LIMIT 1",
        )?;
        Ok(st.query_row([id], |r| Ok(Parent { id: r.get(0)?, title: r.get(1)? })).optional()?)
    }

    fn blocks(&self, id: &str) -> Result<Vec<String>> {
        let mut st = self.cache.conn.prepare_cached(&self.blocks_sql)?;
        let rows = st.query_map([id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Issues every one of whose blockers is `id` or an issue this closing unblocks, walked out
    /// from `id` (each issue entered once, so cycles end); only open ones are listed.
    fn unblocks(&self, id: &str) -> Result<Vec<String>> {
        let mut freed: FxHashSet<&str> = FxHashSet::default();
        freed.insert(id);
        let mut queue: Vec<&str> = vec![id];
        let mut out = Vec::new();
        while let Some(at) = queue.pop() {
            for next in self.held.get(at).into_iter().flatten() {
                if freed.contains(next.as_str()) {
                    continue;
                }
                let blockers = self.blocking.blockers.get(next).map(Vec::as_slice).unwrap_or_default();
                if blockers.iter().all(|b| freed.contains(b.as_str())) {
                    freed.insert(next);
                    queue.push(next);
                    if self.status(next)?.as_deref() == Some("open") {
                        out.push(next.clone());
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn status(&self, id: &str) -> Result<Option<String>> {
        let mut st = self.cache.conn.prepare_cached("SELECT status FROM issues WHERE id = ?1")?;
        Ok(st.query_row([id], |r| r.get(0)).optional()?.flatten())
    }
}
