//! Read-only questions for the cache: status, and the dependency-aware ready/blocked lists.

use std::collections::BTreeMap;

use anyhow::Result;
use rusqlite::types::Value as SqlValue;
use serde::Serialize;

use super::{import, Cache, SCHEMA_VERSION};

/// `bd-sync status`: where things are and whether the cache is fresh.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The issues file.
    pub file: String,
    /// The cache database.
    pub db: String,
    /// Schema version of the cache.
    pub schema_version: i64,
    /// Issues in the cache.
    pub issues: i64,
    /// Issues per status.
    pub by_status: BTreeMap<String, i64>,
    /// Issues with SQL edits not yet exported.
    pub dirty: i64,
    /// Whether the file changed since the last import or export.
    pub file_changed_since_sync: bool,
    /// When the cache last synced with the file (Unix seconds).
    pub synced_at_unix: Option<i64>,
}

/// Collects the status.
pub fn status(cache: &Cache) -> Result<Status> {
    let issues = cache.conn.query_row("SELECT count(*) FROM issues", [], |r| r.get(0))?;
    let mut by_status = BTreeMap::new();
    let mut st = cache.conn.prepare("SELECT coalesce(status, '(none)'), count(*) FROM issues GROUP BY 1")?;
    for row in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (s, n) = row?;
        by_status.insert(s, n);
    }
    let synced_at_unix = match cache.meta("synced_at_unix")? {
        Some(SqlValue::Integer(i)) => Some(i),
        _ => None,
    };
    Ok(Status {
        file: cache.paths.file.display().to_string(),
        db: cache.paths.db.display().to_string(),
        schema_version: SCHEMA_VERSION,
        issues,
        by_status,
        dirty: cache.dirty_count()?,
        file_changed_since_sync: !cache.paths.file.exists() || import::file_changed_since_sync(cache)?,
        synced_at_unix,
    })
}

/// One line of `ready` / `blocked`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct IssueSummary {
    /// Issue id.
    pub id: String,
    /// Title.
    pub title: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Priority as in the file (a number, or a string in other dialects).
    pub priority: serde_json::Value,
    /// Type.
    pub issue_type: Option<String>,
    /// Assignee.
    pub assignee: Option<String>,
    /// Creation time as written.
    pub created_at: Option<String>,
    /// Open issues blocking it directly (`blocks`), or through its parent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<String>,
}

fn sql_json(v: SqlValue) -> serde_json::Value {
    match v {
        SqlValue::Integer(i) => i.into(),
        SqlValue::Real(f) => serde_json::Number::from_f64(f).map(Into::into).unwrap_or(serde_json::Value::Null),
        SqlValue::Text(s) => s.into(),
        _ => serde_json::Value::Null,
    }
}

fn list(cache: &Cache, view: &str, with_blockers: bool) -> Result<Vec<IssueSummary>> {
    let sql = format!("SELECT id, title, status, priority, issue_type, assignee, created_at FROM {view} ORDER BY priority, created_at, id");
    let mut st = cache.conn.prepare(&sql)?;
    let rows = st.query_map([], |r| {
        Ok(IssueSummary {
            id: r.get(0)?,
            title: r.get(1)?,
            status: r.get(2)?,
            priority: sql_json(r.get(3)?),
            issue_type: r.get(4)?,
            assignee: r.get(5)?,
            created_at: r.get(6)?,
            blocked_by: Vec::new(),
        })
    })?;
    let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    if with_blockers {
        let mut st = cache.conn.prepare(
            "SELECT d.depends_on_id FROM dependencies d JOIN issues b ON b.id = d.depends_on_id \
             WHERE d.issue_id = ?1 AND ((d.type = 'blocks' AND b.status NOT IN ('closed','tombstone','deleted')) \
             OR (d.type = 'parent-child' AND b.id IN (SELECT id FROM blocked_ids))) ORDER BY d.depends_on_id",
        )?;
        for issue in &mut out {
            issue.blocked_by = st.query_map([&issue.id], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        }
    }
    Ok(out)
}

/// Open issues with no active blocker, by priority, then creation time, then id.
pub fn ready(cache: &Cache) -> Result<Vec<IssueSummary>> {
    list(cache, "ready_issues", false)
}

/// Issues held up by an open blocker (directly or through a parent), same order.
pub fn blocked(cache: &Cache) -> Result<Vec<IssueSummary>> {
    list(cache, "blocked_issues", true)
}
