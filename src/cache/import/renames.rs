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
    /// The br command that takes the merged file into br's database in this clone's state
    /// (docs/trackers.md, "After a merge moved an issue of this clone"): [`Fix::BrImportForce`]
    /// when br's database holds no unexported edit, [`Fix::BrImportMerge`] when it does and its
    /// base snapshot is the file from before the merge; `None` where br has no database yet (its
    /// first command imports the file) or cannot be asked.
    pub fix: Option<Fix>,
    /// br's database holds unexported edits and no usable base snapshot: no br command takes the
    /// merged file without losing one side, and the notice says so instead of naming one.
    pub unsettled: bool,
    /// With `git config beads.brSyncMerge true`, the fix was run: how it went.
    pub ran: Option<std::result::Result<(), String>>,
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
    let mut notice = RenameNotice { moved: report.renamed.clone(), fix: None, unsettled: false, ran: None };
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if !crate::tracker::is_br_directory(dir) {
        return Some(notice);
    }
    let top = crate::git::run(dir, &["rev-parse", "--show-toplevel"]).map(std::path::PathBuf::from).unwrap_or_else(|_| dir.to_path_buf());
    let Some((crate::tracker::Tracker::Br, program)) = crate::tracker::of_directory(dir, &top) else { return Some(notice) };
    let Some(dirty) = crate::tracker::br_dirty_count(&program, &top, std::time::Duration::from_secs(10)) else { return Some(notice) };
    if dirty == 0 {
        notice.fix = Some(Fix::BrImportForce);
    } else if base_is_the_file_before_the_merge(dir, file) {
        notice.fix = Some(Fix::BrImportMerge);
    } else {
        notice.unsettled = true;
    }
    let args: &[&str] = match notice.fix {
        Some(Fix::BrImportForce) => &["sync", "--import-only", "--force"],
        Some(Fix::BrImportMerge) => &["sync", "--merge"],
        _ => &[],
    };
    if !args.is_empty() && crate::git::git_true(crate::git::run(dir, &["config", "--get", "beads.brsyncmerge"]).ok().as_deref()) {
        notice.ran = Some(crate::tracker::run_br(&program, &top, args, std::time::Duration::from_secs(60)).map_err(|e| e.to_string()));
    }
    Some(notice)
}

/// Whether br's base snapshot (`beads.base.jsonl` beside the file) is, byte for byte, the issues
/// file of the commit before the merge (`ORIG_HEAD`): only then does `br sync --merge` merge
/// the file with the database as one three-way merge.
fn base_is_the_file_before_the_merge(dir: &std::path::Path, file: &std::path::Path) -> bool {
    let Ok(base) = std::fs::read(dir.join("beads.base.jsonl")) else { return false };
    let Some(name) = file.file_name().map(|n| n.to_string_lossy().into_owned()) else { return false };
    crate::git::file_at(dir, "ORIG_HEAD", &name).ok().flatten().is_some_and(|before| before == base)
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
