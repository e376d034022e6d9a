//! Issues a merge moved to a new id: an import notes an id whose record now has another
//! `created_at` (another issue holds it), finds where the old issue went among the ids it added,
//! and tells the user, naming br's own import only where br would refuse the file.

use anyhow::Result;
use rusqlite::{params, OptionalExtension, Transaction};

use super::{ImportReport, RenamedIssue};
use crate::cache::codec::IssueRows;
use crate::cache::Cache;
use crate::fix::Fix;
use crate::timestamp;

/// What to tell the user after an import that found issues of this clone moved to a new id by a
/// merge (docs/merge-rules.md, "Two issues created under one id"). Shown as "a merge kept two issues created
/// under one id: A is now B, ...", then its fix, when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenameNotice {
    /// Where each moved issue went.
    pub moved: Vec<RenamedIssue>,
    /// br is the tracker next to the file and a moved issue has comments: br's plain import
    /// refuses the file (a comment whose issue id changed), and [`Fix::BrImportMerge`] is the way.
    pub fix: Option<Fix>,
}

impl std::fmt::Display for RenameNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let moves: Vec<String> = self
            .moved
            .iter()
            .map(|r| format!("{} is now {}", crate::record::key_label(&r.from), crate::record::key_label(&r.to)))
            .collect();
        write!(f, "a merge kept two issues created under one id: {}", moves.join(", "))
    }
}

/// What to tell the user after an import that moved issues of this clone to a new id; `None`
/// when nothing was moved. br is named (through [`RenameNotice::fix`]) only where its plain import
/// would refuse the file: br is the tracker next to `file` and a moved issue has comments.
pub fn rename_notice(report: &ImportReport, file: &std::path::Path) -> Option<RenameNotice> {
    if report.renamed.is_empty() {
        return None;
    }
    let br_here = file
        .parent()
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .is_some_and(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with(".br-")));
    let br_refuses = br_here && moved_with_comments(report, file);
    Some(RenameNotice { moved: report.renamed.clone(), fix: br_refuses.then_some(Fix::BrImportMerge) })
}

/// Whether one of the moved issues (by its new id) has a non-empty `comments` array in `file`:
/// one pass over the file's lines against a set of the moved ids.
fn moved_with_comments(report: &ImportReport, file: &std::path::Path) -> bool {
    let moved: std::collections::HashSet<&str> = report.renamed.iter().map(|r| r.to.as_str()).collect();
    let Ok(content) = crate::jsonl::read(file) else { return false };
    content.split(|&b| b == b'\n').any(|line| {
        let Ok(id) = crate::record::record_id(line) else { return false };
        if !moved.contains(id.as_ref()) {
            return false;
        }
        serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v.get("comments").and_then(|c| c.as_array().map(|a| !a.is_empty())))
            .unwrap_or(false)
    })
}

/// Notes an id whose new record has another `created_at` than the cache's: another issue now
/// holds the id (see [`find_renamed`]).
pub(super) fn note_replacement(tx: &Transaction<'_>, id: &str, rows: &IssueRows, report: &mut ImportReport) -> Result<()> {
    let Some(rusqlite::types::Value::Text(new)) = rows.columns.get("created_at") else { return Ok(()) };
    let old: Option<(Option<String>, Option<String>)> =
        tx.query_row("SELECT created_at, title FROM issues WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
    if let Some((Some(old), title)) = old {
        let differ = match (timestamp::parse(&old), timestamp::parse(new)) {
            (Some(a), Some(b)) => a != b,
            _ => old != *new,
        };
        if differ {
            report.replaced.push((id.to_owned(), old, title));
        }
    }
    Ok(())
}

/// Where each replaced issue went: an id the import added that holds the old `created_at` and
/// title. An issue not found yet is remembered until the next import (a rebase first checks out
/// the upstream, whose import sees the id replaced, and only its replay adds the moved issue).
pub(super) fn find_renamed(cache: &Cache, report: &mut ImportReport) -> Result<()> {
    type Displaced = Vec<(String, String, Option<String>)>;
    let pending: Displaced = cache
        .conn
        .query_row("SELECT value FROM meta WHERE key = 'displaced_issues'", [], |r| r.get::<_, String>(0))
        .optional()?
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let fresh = std::mem::take(&mut report.replaced);
    let mut unmatched: Displaced = Vec::new();
    for (i, (from, created_at, title)) in pending.iter().chain(&fresh).enumerate() {
        let to: Option<String> = cache
            .conn
            .query_row(
                "SELECT id FROM issues WHERE created_at = ?1 AND title IS ?2 AND id != ?3 ORDER BY id LIMIT 1",
                params![created_at, title, from],
                |r| r.get(0),
            )
            .optional()?;
        match to.filter(|to| report.added.contains(to)) {
            Some(to) => report.renamed.push(RenamedIssue { from: from.clone(), to }),
            None if i >= pending.len() => unmatched.push((from.clone(), created_at.clone(), title.clone())),
            None => {}
        }
    }
    if unmatched.is_empty() {
        if !pending.is_empty() {
            cache.conn.execute("DELETE FROM meta WHERE key = 'displaced_issues'", [])?;
        }
    } else {
        cache
            .conn
            .execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('displaced_issues', ?1)", [serde_json::to_string(&unmatched)?])?;
    }
    Ok(())
}
