//! Read-only questions for the cache: status, the dependency-aware ready and blocked lists, and
//! one issue in full.
//!
//! Agents ask `ready` on every step, so it must answer in a few milliseconds per thousand issues
//! whatever the graph. The blocked set is computed once per query in Rust (one pass over the
//! `blocks` dependencies whose blocker is open, then a walk down `parent-child` edges with a
//! visited set, so cycles end), put in a temporary table, and the list itself is one indexed SQL
//! query that stops at `--limit`. The SQL views `ready_issues` and `blocked_issues` answer the
//! same question for people writing SQL.

use std::collections::BTreeMap;

use anyhow::Result;
use rusqlite::types::Value as SqlValue;
use rusqlite::OptionalExtension;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::{freshness, Cache, SCHEMA_VERSION};

/// `bd-sync status`: where things are and whether the cache is fresh.
#[derive(Debug, Serialize)]
pub struct Status {
    /// Whether the cache database exists (`status` never creates it).
    pub cache_exists: bool,
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

/// Collects the status without creating a cache that does not exist yet.
pub fn status_of(paths: &super::Paths, timeout: std::time::Duration) -> Result<Status> {
    if !paths.db.exists() {
        return Ok(Status {
            cache_exists: false,
            file: paths.file.display().to_string(),
            db: paths.db.display().to_string(),
            schema_version: SCHEMA_VERSION,
            issues: 0,
            by_status: BTreeMap::new(),
            dirty: 0,
            file_changed_since_sync: true,
            synced_at_unix: None,
        });
    }
    let mut cache = Cache::open(paths, super::OpenMode::read(timeout))?;
    cache.follow_binding()?;
    status(&cache)
}

/// Collects the status of an open cache.
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
        cache_exists: true,
        file: cache.paths.file.display().to_string(),
        db: cache.paths.db.display().to_string(),
        schema_version: SCHEMA_VERSION,
        issues,
        by_status,
        dirty: cache.dirty_count()?,
        file_changed_since_sync: !cache.paths.file.exists() || freshness::file_changed_since_sync(cache)?,
        synced_at_unix,
    })
}

/// Issue types the default `ready` list leaves out, as bd does: bd's `readyWorkExcludeTypes`
/// (internal/storage/domain/db/ready_work.go: merge-request, gate, molecule, message, agent, role,
/// rig), plus the other orchestrator types bd's types.go names (convoy, slot). `--type` or
/// `--all-types` shows them.
pub const NOT_WORK_TYPES: &[&str] = &["merge-request", "gate", "molecule", "message", "agent", "role", "rig", "convoy", "slot"];

/// Statuses whose issues never block anything (and are never listed as blocked).
pub const DONE_STATUSES: &[&str] = &["closed", "tombstone", "deleted"];

/// `'a', 'b'`: a list of SQL string literals for `IN (...)` (our constants, no quotes in them).
pub(super) fn sql_strings(values: &[&str]) -> String {
    values.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ")
}

/// Filters for `ready` and `blocked`.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// At most this many issues (the first in order).
    pub limit: Option<usize>,
    /// Only issues assigned to this person.
    pub assignee: Option<String>,
    /// Only issues carrying this label.
    pub label: Option<String>,
    /// Only issues of this type (this also shows types `ready` leaves out by default).
    pub issue_type: Option<String>,
    /// Only issues of this priority.
    pub priority: Option<i64>,
    /// Include the types in [`NOT_WORK_TYPES`] and pinned, ephemeral or deferred issues.
    pub all_types: bool,
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
    /// What holds it up: open issues it depends on with `blocks`, and blocked parents.
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

/// Every blocked issue with what blocks it directly.
pub struct Blocking {
    /// Blocked id -> its blockers (sorted, unique).
    pub blockers: FxHashMap<String, Vec<String>>,
}

impl Blocking {
    /// Computes the blocked set: an issue with a `blocks` dependency on an issue in the cache that
    /// is not done is blocked, and so is every `parent-child` descendant of a blocked issue. A
    /// blocker that is not in the cache does not block (`check` reports it as dangling).
    pub fn compute(cache: &Cache) -> Result<Blocking> {
        let done = sql_strings(DONE_STATUSES);
        let mut blockers: FxHashMap<String, Vec<String>> = FxHashMap::default();
        let mut st = cache.conn.prepare(&format!(
            "SELECT d.issue_id, d.depends_on_id FROM dependencies d JOIN issues b INDEXED BY issues_status ON b.id = d.depends_on_id \
             WHERE d.type = 'blocks' AND coalesce(b.status, '') NOT IN ({done})"
        ))?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            blockers.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
        let mut children: FxHashMap<String, Vec<String>> = FxHashMap::default();
        let mut st = cache.conn.prepare("SELECT depends_on_id, issue_id FROM dependencies WHERE type = 'parent-child'")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            children.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
        // Walk down from every directly blocked issue; each issue is entered once, so cycles end.
        let mut queue: Vec<String> = blockers.keys().cloned().collect();
        let mut seen: FxHashSet<String> = queue.iter().cloned().collect();
        while let Some(parent) = queue.pop() {
            for child in children.get(&parent).into_iter().flatten() {
                blockers.entry(child.clone()).or_default().push(parent.clone());
                if seen.insert(child.clone()) {
                    queue.push(child.clone());
                }
            }
        }
        for list in blockers.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        Ok(Blocking { blockers })
    }

    /// Puts the blocked ids in `temp.blocked_now` for the `blocked` list (`ready` filters by hash).
    fn load(&self, cache: &Cache) -> Result<()> {
        cache.conn.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS blocked_now (id TEXT PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.blocked_now",
        )?;
        // One transaction for all the rows (autocommit ended one per row: 17% of `ready --limit
        // 10` at 1M in `pager_end_transaction`), in id order so each insert appends.
        let mut ids: Vec<&String> = self.blockers.keys().collect();
        ids.sort_unstable();
        // A savepoint, which also nests in the caller's read transaction (the temporary table
        // needs no write lock on the cache).
        cache.conn.execute_batch("SAVEPOINT blocked_now")?;
        let inserted = (|| -> rusqlite::Result<()> {
            let mut st = cache.conn.prepare("INSERT INTO temp.blocked_now (id) VALUES (?1)")?;
            for id in ids {
                st.execute([id])?;
            }
            Ok(())
        })();
        if let Err(e) = inserted {
            // Never left open: outside a caller's transaction it would hold the connection in one.
            let _ = cache.conn.execute_batch("ROLLBACK TO blocked_now; RELEASE blocked_now");
            return Err(e.into());
        }
        cache.conn.execute_batch("RELEASE blocked_now")?;
        Ok(())
    }
}

/// The filter clauses and their parameters (named `:assignee`, `:label`, `:type`, `:priority`).
fn filter_sql(options: &ListOptions, ready: bool) -> String {
    let mut clauses = Vec::new();
    if options.assignee.is_some() {
        clauses.push("i.assignee = :assignee".to_owned());
    }
    if options.label.is_some() {
        clauses.push("EXISTS (SELECT 1 FROM labels l WHERE l.issue_id = i.id AND l.label = :label)".to_owned());
    }
    if options.issue_type.is_some() {
        clauses.push("i.issue_type = :type".to_owned());
    }
    if options.priority.is_some() {
        clauses.push("i.priority = :priority".to_owned());
    }
    if ready && !options.all_types {
        clauses.extend(default_ready_clauses(options));
    }
    clauses.iter().map(|c| format!(" AND {c}")).collect()
}

/// The values of [`filter_sql`]'s named parameters, for the filters asked for.
fn filter_params(options: &ListOptions) -> Vec<(&'static str, &dyn rusqlite::ToSql)> {
    let mut params: Vec<(&str, &dyn rusqlite::ToSql)> = Vec::new();
    if let Some(a) = &options.assignee {
        params.push((":assignee", a));
    }
    if let Some(l) = &options.label {
        params.push((":label", l));
    }
    if let Some(t) = &options.issue_type {
        params.push((":type", t));
    }
    if let Some(p) = &options.priority {
        params.push((":priority", p));
    }
    params
}

/// What the default `ready` list leaves out beyond the filters asked for: the types in
/// [`NOT_WORK_TYPES`] (unless a type was asked for), and, as bd does, pinned and ephemeral
/// issues and those deferred to a later time.
fn default_ready_clauses(options: &ListOptions) -> Vec<String> {
    let mut clauses = Vec::new();
    if options.issue_type.is_none() {
        clauses.push(format!("coalesce(i.issue_type, '') NOT IN ({})", sql_strings(NOT_WORK_TYPES)));
    }
    clauses.push(
        "(i.ready_exclusion IS NULL OR (i.ready_exclusion LIKE 'defer:%' \
         AND coalesce(julianday(substr(i.ready_exclusion, 7)) > julianday('now'), 0) = 0))"
            .to_owned(),
    );
    clauses
}

fn list(cache: &Cache, options: &ListOptions, ready: bool) -> Result<Vec<IssueSummary>> {
    list_with(cache, options, ready, &Blocking::compute(cache)?)
}

fn list_with(cache: &Cache, options: &ListOptions, ready: bool, blocking: &Blocking) -> Result<Vec<IssueSummary>> {
    // Ready: the open issues in list order, blocked ones skipped here by a hash lookup instead of
    // a probe of a temporary table per row, stopping at the limit. Blocked: the blocked ids
    // joined to their rows.
    let (which, limit) = if ready {
        ("FROM issues i WHERE i.status = 'open'".to_owned(), String::new())
    } else {
        blocking.load(cache)?;
        (
            format!(
                "FROM temp.blocked_now b JOIN issues i ON i.id = b.id WHERE coalesce(i.status, '') NOT IN ({})",
                sql_strings(DONE_STATUSES)
            ),
            options.limit.map(|n| format!(" LIMIT {n}")).unwrap_or_default(),
        )
    };
    let sql = format!(
        "SELECT i.id, i.title, i.status, i.priority, i.issue_type, i.assignee, i.created_at {which}{} ORDER BY i.priority, i.created_at, \
            i.id{limit}",
        filter_sql(options, ready)
    );
    let mut st = cache.conn.prepare(&sql)?;
    let mut rows = st.query(filter_params(options).as_slice())?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if options.limit.is_some_and(|n| out.len() >= n) {
            break;
        }
        if ready && blocking.blockers.contains_key(r.get_ref(0)?.as_str()?) {
            continue;
        }
        let id: String = r.get(0)?;
        let blocked_by = blocking.blockers.get(&id).cloned().unwrap_or_default();
        out.push(IssueSummary {
            id,
            title: r.get(1)?,
            status: r.get(2)?,
            priority: sql_json(r.get(3)?),
            issue_type: r.get(4)?,
            assignee: r.get(5)?,
            created_at: r.get(6)?,
            blocked_by,
        });
    }
    Ok(out)
}

/// What the default `ready` list left out that `--all-types` would list, counted by issue type
/// (pinned, ephemeral and deferred issues of a working type count under `pinned, ephemeral or
/// deferred`), largest first. Empty when `options` already lists everything.
///
/// `blocking` is the blocked set the list was computed from. Only the open issues the default
/// list's own filter excludes are read (a not-work type, pinned, ephemeral or deferred): a few,
/// where listing everything again would read every open issue twice.
pub fn left_out_of_ready(cache: &Cache, options: &ListOptions, blocking: &Blocking) -> Result<Vec<(String, usize)>> {
    if options.all_types || options.issue_type.is_some() {
        return Ok(Vec::new());
    }
    let every = filter_sql(&ListOptions { all_types: true, ..options.clone() }, true);
    let default = default_ready_clauses(options).join(" AND ");
    let sql = format!("SELECT i.id, i.issue_type FROM issues i WHERE i.status = 'open'{every} AND NOT ({default})");
    let mut st = cache.conn.prepare(&sql)?;
    let mut counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    // No type was asked for here (the count is empty then), so `:type` is not bound.
    let mut rows = st.query(filter_params(options).as_slice())?;
    while let Some(r) = rows.next()? {
        if blocking.blockers.contains_key(r.get_ref(0)?.as_str()?) {
            continue;
        }
        let issue_type: Option<String> = r.get(1)?;
        let kind = match issue_type.as_deref() {
            Some(t) if NOT_WORK_TYPES.contains(&t) => t.to_owned(),
            _ => "pinned, ephemeral or deferred".to_owned(),
        };
        *counts.entry(kind).or_default() += 1;
    }
    let mut out: Vec<(String, usize)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// Open issues with no open blocker, by priority, then creation time, then id; by default without
/// the types, pinned, ephemeral and deferred issues bd leaves out.
pub fn ready(cache: &Cache, options: &ListOptions) -> Result<Vec<IssueSummary>> {
    list(cache, options, true)
}

/// [`ready`], and the blocked set it was computed from (for the neighbourhood of its issues,
/// without computing the set twice).
pub fn ready_and_blocking(cache: &Cache, options: &ListOptions) -> Result<(Vec<IssueSummary>, Blocking)> {
    let blocking = Blocking::compute(cache)?;
    Ok((list_with(cache, options, true, &blocking)?, blocking))
}

/// Issues held up by an open blocker (directly or through a parent) that are not done, same order.
pub fn blocked(cache: &Cache, options: &ListOptions) -> Result<Vec<IssueSummary>> {
    list(cache, options, false)
}

/// One issue in full, for `show`.
#[derive(Debug, Serialize)]
pub struct Shown {
    /// The record as the file would hold it now (edits in the cache rendered).
    pub issue: Box<serde_json::value::RawValue>,
    /// Edited in the cache and not yet exported.
    pub dirty: bool,
    /// What holds it up (empty when it is not blocked).
    pub blocked_by: Vec<String>,
    /// Issues that depend on it with `blocks`.
    pub blocks: Vec<String>,
    /// Issues whose parent it is.
    pub children: Vec<String>,
}

/// The id prefixes of the issues (`bd` of `bd-a1b2`), for telling an issue id from any other
/// hyphenated word in a commit message.
pub fn id_prefixes(cache: &Cache) -> Result<std::collections::BTreeSet<String>> {
    let mut st = cache.conn.prepare("SELECT DISTINCT substr(id, 1, instr(id, '-') - 1) FROM issues WHERE instr(id, '-') > 1")?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// What a possibly partial id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdMatch {
    /// Exactly one issue: its full id.
    One(String),
    /// Several issues (their ids, sorted).
    Ambiguous(Vec<String>),
    /// No issue.
    None,
}

/// Resolves an id as `bd show` does: the exact id, else the one id that starts or ends with it
/// (`bd-a1` or `a1` for `bd-a1b2` / `bd-a1`); several matches are listed, never guessed.
pub fn resolve_id(cache: &Cache, partial: &str) -> Result<IdMatch> {
    let exact: Option<String> = cache.conn.query_row("SELECT id FROM issues WHERE id = ?1", [partial], |r| r.get(0)).optional()?;
    if let Some(id) = exact {
        return Ok(IdMatch::One(id));
    }
    if partial.is_empty() {
        return Ok(IdMatch::None);
    }
    let mut st = cache.conn.prepare("SELECT id FROM issues ORDER BY id")?;
    let mut found: Vec<String> = Vec::new();
    for id in st.query_map([], |r| r.get::<_, String>(0))? {
        let id = id?;
        if id.starts_with(partial) || id.ends_with(partial) {
            found.push(id);
        }
    }
    Ok(match found.len() {
        0 => IdMatch::None,
        1 => IdMatch::One(found.remove(0)),
        _ => IdMatch::Ambiguous(found),
    })
}

/// The record of `id` as the file would hold it now (edits in the cache rendered), its keys in
/// the file's order; `None` when the cache has no such issue.
pub fn record(cache: &Cache, id: &str) -> Result<Option<String>> {
    Ok(current_line(cache, id)?.map(|(line, _)| line))
}

/// [`record`], and whether the issue holds unexported edits.
fn current_line(cache: &Cache, id: &str) -> Result<Option<(String, bool)>> {
    let row: Option<(Option<String>, bool)> = cache
        .conn
        .query_row("SELECT raw, EXISTS (SELECT 1 FROM dirty WHERE issue_id = ?1) FROM issues WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let Some((raw, dirty)) = row else { return Ok(None) };
    let line = match (raw, dirty) {
        (Some(raw), false) => raw,
        _ => super::codec::render_issue(&cache.conn, id, cache.go_style()?)?.unwrap_or_default(),
    };
    Ok(Some((line, dirty)))
}

/// A record with computed keys appended (those the record lacks), its own keys kept in the
/// file's order and bytes.
fn with_keys(id: &str, record: &str, extra: &[(&str, serde_json::Value)]) -> Result<Box<serde_json::value::RawValue>> {
    let parsed: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(record).map_err(|e| anyhow::anyhow!("the stored record of {id} is not a JSON object: {e}"))?;
    let body = record.trim_end();
    let body = body.strip_suffix('}').ok_or_else(|| anyhow::anyhow!("the stored record of {id} is not a JSON object"))?;
    let mut out = body.to_owned();
    let mut empty = parsed.is_empty();
    for (key, value) in extra.iter().filter(|(k, _)| !parsed.contains_key(*k)) {
        if !empty {
            out.push(',');
        }
        empty = false;
        out.push_str(&serde_json::to_string(key)?);
        out.push(':');
        out.push_str(&serde_json::to_string(value)?);
    }
    out.push('}');
    Ok(serde_json::value::RawValue::from_string(out)?)
}

/// `ready`/`blocked` as `bd ready --json` prints them: each issue's full record, in list order,
/// with `blocked_by` added when something holds it up, and the keys `more(n)` gives for the n-th
/// issue (`ready`'s neighbourhood). A key the record already has is left as the record has it.
pub fn full_issues(
    cache: &Cache,
    list: &[IssueSummary],
    more: &dyn Fn(usize) -> Vec<(&'static str, serde_json::Value)>,
) -> Result<Vec<Box<serde_json::value::RawValue>>> {
    let mut out = Vec::with_capacity(list.len());
    for (n, summary) in list.iter().enumerate() {
        let Some(line) = record(cache, &summary.id)? else { continue };
        let mut extra: Vec<(&str, serde_json::Value)> = Vec::new();
        if !summary.blocked_by.is_empty() {
            extra.push(("blocked_by", summary.blocked_by.clone().into()));
        }
        extra.extend(more(n));
        out.push(with_keys(&summary.id, &line, &extra)?);
    }
    Ok(out)
}

/// A JSON object with `extra` keys appended (a key it already has is left as it is).
pub fn with_keys_appended(
    object: &serde_json::value::RawValue,
    extra: &[(&str, serde_json::Value)],
) -> Result<Box<serde_json::value::RawValue>> {
    with_keys("the issue", object.get(), extra)
}

/// `show --json` of one issue: its full record, with what `show` computes appended:
/// `blocked_by`, `blocks`, `children` (ids) and `dirty` (edited in the cache, not yet exported).
/// A key the record already has is left as the record has it.
pub fn shown_json(shown: &Shown) -> Result<Box<serde_json::value::RawValue>> {
    with_keys(
        "the issue",
        shown.issue.get(),
        &[
            ("blocked_by", shown.blocked_by.clone().into()),
            ("blocks", shown.blocks.clone().into()),
            ("children", shown.children.clone().into()),
            ("dirty", shown.dirty.into()),
        ],
    )
}

/// The issue `id`, or `None` when the cache has no such issue.
pub fn show(cache: &Cache, id: &str) -> Result<Option<Shown>> {
    let Some((line, dirty)) = current_line(cache, id)? else { return Ok(None) };
    let issue =
        serde_json::value::RawValue::from_string(line).map_err(|e| anyhow::anyhow!("the stored record of {id} is not JSON: {e}"))?;
    let blocking = Blocking::compute(cache)?;
    let ids = |sql: &str| -> Result<Vec<String>> {
        let mut st = cache.conn.prepare(sql)?;
        let rows = st.query_map([id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    Ok(Some(Shown {
        issue,
        dirty,
        blocked_by: blocking.blockers.get(id).cloned().unwrap_or_default(),
        blocks: ids("SELECT issue_id FROM dependencies WHERE depends_on_id = ?1 AND type = 'blocks' ORDER BY issue_id")?,
        children: ids("SELECT issue_id FROM dependencies WHERE depends_on_id = ?1 AND type = 'parent-child' ORDER BY issue_id")?,
    }))
}

/// Whether `id` is an issue of the cache, or at least an id with its prefix (the part before its
/// last `-`) is: a commit may name an issue created since the last import, never one of a prefix
/// the project does not use.
pub fn id_or_prefix_known(cache: &Cache, id: &str) -> Result<bool> {
    let exists = |sql: &str, arg: &str| -> Result<bool> { Ok(cache.conn.query_row(sql, [arg], |_| Ok(())).optional()?.is_some()) };
    if exists("SELECT 1 FROM issues WHERE id = ?1", id)? {
        return Ok(true);
    }
    let Some((prefix, _)) = id.rsplit_once('-') else { return Ok(false) };
    // `substr` rather than LIKE: `_` and `%` in a prefix are plain characters.
    exists("SELECT 1 FROM issues WHERE substr(id, 1, length(?1) + 1) = ?1 || '-' LIMIT 1", prefix)
}

/// The issues in progress that may be the committer's, as `(id, assignee, updated_at)`, most
/// urgent first (priority, then creation): those assigned to `actor`, and those assigned to
/// nobody updated on or after the day `since` names (`YYYY-MM-DD`; a coarse bound that
/// [`crate::bridge::commit_msg::claims`] makes exact). What the commit hooks choose from.
pub fn in_progress_claims(cache: &Cache, actor: Option<&str>, since: Option<&str>) -> Result<Vec<(String, Option<String>, String)>> {
    let mut st = cache.conn.prepare(
        "SELECT id, assignee, COALESCE(updated_at, '') FROM issues WHERE status = 'in_progress' \
         AND (assignee = ?1 OR (COALESCE(assignee, '') = '' AND updated_at >= ?2)) ORDER BY priority, created_at, id",
    )?;
    let rows = st.query_map(rusqlite::params![actor, since], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The issues in progress assigned to `actor` (status `in_progress`), by priority, then age.
pub fn in_progress_of(cache: &Cache, actor: &str) -> Result<Vec<String>> {
    let mut st =
        cache.conn.prepare("SELECT id FROM issues WHERE status = 'in_progress' AND assignee = ?1 ORDER BY priority, created_at, id")?;
    let rows = st.query_map([actor], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
