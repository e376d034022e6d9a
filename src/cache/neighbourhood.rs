//! What surrounds an issue in the dependency graph, for choosing work (docs/agents.md): its parent,
//! what it blocks, and what it unblocks (the issues that become ready when it closes, because it
//! is the only thing holding them up, directly or through a parent it unblocks).
//!
//! `ready` answers "what can I do"; this answers "what does doing it open up", so an agent or a
//! person can pick the issue that unblocks the most, and knows which epic it belongs to.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::query::{sql_strings, Blocking, DONE_STATUSES};
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
    /// For a long list: every issue's parent and what every issue blocks, read in one pass over
    /// the dependencies instead of two indexed look-ups per issue listed.
    bulk: Option<Bulk>,
}

/// Parents and `blocks` read for all issues at once.
struct Bulk {
    /// Child -> its parent (the first by id), with the parent's title.
    parent: FxHashMap<String, Parent>,
    /// Blocker -> the issues not yet done that depend on it with `blocks`, sorted.
    blocks: FxHashMap<String, Vec<String>>,
    /// The open issues among those a closing may unblock (every blocked open issue).
    open: FxHashSet<String>,
}

/// From this many issues listed on, the neighbourhood is read in one pass over the dependencies
/// (a few milliseconds at 100k issues) rather than by look-ups per issue (three each).
pub const BULK_FROM: usize = 64;

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
        let blocks_sql = format!(
            "SELECT d.issue_id FROM dependencies d JOIN issues i ON i.id = d.issue_id \
             WHERE d.depends_on_id = ?1 AND d.type = 'blocks' AND coalesce(i.status, '') NOT IN ({}) ORDER BY d.issue_id",
            sql_strings(DONE_STATUSES)
        );
        Graph { cache, blocking, held, blocks_sql, bulk: None }
    }

    /// [`Graph::new`], for a list of `listed` issues: from [`BULK_FROM`] on, every parent and
    /// every `blocks` edge is read at once, so the cost follows the dependency table, not the
    /// list times three queries.
    pub fn for_list(cache: &'c Cache, blocking: Blocking, listed: usize) -> Result<Graph<'c>> {
        let mut graph = Graph::new(cache, blocking);
        if listed >= BULK_FROM {
            graph.bulk = Some(graph.read_bulk()?);
        }
        Ok(graph)
    }

    fn read_bulk(&self) -> Result<Bulk> {
        let conn = &self.cache.conn;
        let mut parent: FxHashMap<String, Parent> = FxHashMap::default();
        let mut st = conn.prepare(
            "SELECT d.issue_id, d.depends_on_id, p.title FROM dependencies d LEFT JOIN issues p ON p.id = d.depends_on_id \
             WHERE d.type = 'parent-child'",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let (child, id, title): (String, String, Option<String>) = (r.get(0)?, r.get(1)?, r.get(2)?);
            match parent.get_mut(&child) {
                Some(p) if p.id <= id => {}
                Some(p) => *p = Parent { id, title },
                None => {
                    parent.insert(child, Parent { id, title });
                }
            }
        }
        let mut blocks: FxHashMap<String, Vec<String>> = FxHashMap::default();
        let mut st = conn.prepare(&format!(
            "SELECT d.depends_on_id, d.issue_id FROM dependencies d JOIN issues i INDEXED BY issues_status ON i.id = d.issue_id \
             WHERE d.type = 'blocks' AND coalesce(i.status, '') NOT IN ({})",
            sql_strings(DONE_STATUSES)
        ))?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            blocks.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
        for list in blocks.values_mut() {
            list.sort_unstable();
        }
        // The open issues, by the index that starts with the status; only blocked ones are kept.
        let mut open = FxHashSet::default();
        let mut st = conn.prepare("SELECT id FROM issues INDEXED BY issues_ready WHERE status = 'open'")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let id = r.get_ref(0)?.as_str()?;
            if self.blocking.blockers.contains_key(id) {
                open.insert(id.to_owned());
            }
        }
        Ok(Bulk { parent, blocks, open })
    }

    /// The neighbourhood of `id`.
    pub fn of(&self, id: &str) -> Result<Neighbourhood> {
        Ok(Neighbourhood { parent: self.parent(id)?, blocks: self.blocks(id)?, unblocks: self.unblocks(id)? })
    }

    fn parent(&self, id: &str) -> Result<Option<Parent>> {
        if let Some(bulk) = &self.bulk {
            return Ok(bulk.parent.get(id).cloned());
        }
        // `+d.type`: without it SQLite (no statistics) walks the `(type, ...)` index through
        // every parent-child link for each issue; the key `(issue_id, ...)` finds its few.
        let mut st = self.cache.conn.prepare_cached(
            "SELECT d.depends_on_id, p.title FROM dependencies d LEFT JOIN issues p ON p.id = d.depends_on_id \
             WHERE d.issue_id = ?1 AND +d.type = 'parent-child' ORDER BY d.depends_on_id LIMIT 1",
        )?;
        Ok(st.query_row([id], |r| Ok(Parent { id: r.get(0)?, title: r.get(1)? })).optional()?)
    }

    fn blocks(&self, id: &str) -> Result<Vec<String>> {
        if let Some(bulk) = &self.bulk {
            return Ok(bulk.blocks.get(id).cloned().unwrap_or_default());
        }
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
                    if self.is_open(next)? {
                        out.push(next.clone());
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Whether a blocked issue is open (only blocked issues are ever asked about).
    fn is_open(&self, id: &str) -> Result<bool> {
        if let Some(bulk) = &self.bulk {
            return Ok(bulk.open.contains(id));
        }
        let mut st = self.cache.conn.prepare_cached("SELECT status FROM issues WHERE id = ?1")?;
        let status: Option<String> = st.query_row([id], |r| r.get(0)).optional()?.flatten();
        Ok(status.as_deref() == Some("open"))
    }
}
