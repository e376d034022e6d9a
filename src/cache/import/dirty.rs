//! Issues edited both in the cache (through SQL, still dirty) and in the file: merged three-way
//! with the merge engine (base: the line as last synced; ours: the cache; theirs: the file), or,
//! when the two are different issues created under one id, both kept (the later one under the id
//! br gives it) or, when no id can be minted, one kept whole and the other reported.

use std::collections::HashMap;

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};

use super::{ImportReport, RenamedIssue};
use crate::cache::codec::{self, store_issue, IssueRows};
use crate::cache::line_hash;
use crate::merge::{self, ConflictPolicy, MergeOptions, Report};
use crate::record::RawObject;
use crate::timestamp;

/// Three-way merge of an issue edited through SQL whose line also changed in the file.
#[allow(clippy::too_many_arguments)]
pub(super) fn merge_dirty(
    tx: &Transaction<'_>,
    id: &str,
    theirs: &str,
    go_style: bool,
    options: &MergeOptions,
    dirty: &HashMap<String, Option<String>>,
    report: &mut ImportReport,
    taken: &mut Taken<'_>,
) -> Result<()> {
    let base: Option<String> =
        match tx.query_row("SELECT raw FROM issues WHERE id = ?1", [id], |r| r.get::<_, Option<String>>(0)).optional()? {
            Some(raw) => raw,
            None => dirty.get(id).cloned().flatten(),
        };
    let ours = codec::render_issue(tx, id, go_style)?;
    let Some(ours) = ours else {
        // Deleted in the cache, changed in the file: the change wins.
        let obj = RawObject::parse_str(theirs).expect("validated");
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        report.changed.push(id.to_owned());
        report.conflicts.push(Report {
            id: id.to_owned(),
            resolution: merge::Resolution {
                field: "(record)".into(),
                kept: merge::Side::Theirs,
                kept_value: "the file's changed record".into(),
                other_value: "its deletion in the cache".into(),
                reason: "the cache deleted it, the file changed it; a change is never lost".into(),
                kept_json: None,
                dropped_json: None,
            },
        });
        return Ok(());
    };
    if base.is_none() {
        let parsed = (serde_json::from_str::<serde_json::Value>(&ours), serde_json::from_str::<serde_json::Value>(theirs));
        if let (Ok(ov), Ok(tv)) = parsed {
            if let Some(order) = merge::collisions::concurrent_creation(&ov, &tv) {
                let sides = Sides { ours: (&ours, &ov), theirs: (theirs, &tv) };
                return two_issues(tx, id, sides, order, go_style, options, report, taken);
            }
        }
    }
    let base_text = base.map(|b| format!("{b}\n")).unwrap_or_default();
    let (ours_text, theirs_text) = (format!("{ours}\n"), format!("{theirs}\n"));
    let merged = merge::merge(base_text.as_bytes(), ours_text.as_bytes(), theirs_text.as_bytes(), options)
        .map_err(|u| anyhow::anyhow!("merging {id}: {u}"))?;
    report.conflicts.extend(merged.reports.iter().cloned());
    let merged_bytes = merged.to_vec();
    let merged_line = String::from_utf8_lossy(&merged_bytes).trim_end_matches('\n').to_owned();
    let obj = RawObject::parse_str(&merged_line).with_context(|| format!("merged record of {id}"))?;
    // The file's line is the new base; the merged values stay dirty for the next export.
    store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
    tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [id])?;
    report.merged.push(id.to_owned());
    Ok(())
}

/// The ids in use for an import's moves (the cache's and the file's), read once, the first time
/// an import moves an issue, and kept up to date as it hands out new ones: one pass over the ids
/// however many issues move.
pub(super) struct Taken<'f> {
    /// The file's ids, read when first needed.
    pub(super) file_ids: &'f dyn Fn() -> Vec<String>,
    pub(super) ids: Option<merge::collisions::Taken>,
}

impl Taken<'_> {
    fn get(&mut self, tx: &Transaction<'_>) -> Result<&mut merge::collisions::Taken> {
        if self.ids.is_none() {
            let in_cache: Vec<String> = {
                let mut st = tx.prepare("SELECT id FROM issues")?;
                let rows = st.query_map([], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            self.ids = Some(merge::collisions::Taken::new(in_cache.into_iter().chain((self.file_ids)())));
        }
        Ok(self.ids.get_or_insert_with(merge::collisions::Taken::default))
    }
}

/// The cache's and the file's record of one id, as text and value.
struct Sides<'s> {
    ours: (&'s str, &'s serde_json::Value),
    theirs: (&'s str, &'s serde_json::Value),
}

/// An issue created through SQL (never exported) and an issue the file brought under the same id
/// with another `created_at`: two issues (docs/merge-rules.md, "Two issues created under one id"). For a child
/// id `P.N` the earlier creation keeps the id and the later moves to the next free child number
/// (over the cache and the file); both end up in the cache, and what the file does not hold yet
/// stays dirty for the next export. For a plain id the policy's winner is kept whole and the other
/// reported.
#[allow(clippy::too_many_arguments)]
fn two_issues(
    tx: &Transaction<'_>,
    id: &str,
    sides: Sides<'_>,
    order: std::cmp::Ordering,
    go_style: bool,
    options: &MergeOptions,
    report: &mut ImportReport,
    taken: &mut Taken<'_>,
) -> Result<()> {
    let (ours, theirs) = (sides.ours.0, sides.theirs.0);
    // The one that moves: a new issue of the cache, to be exported, under the id br would give
    // it over every id of the cache and the file.
    let (moving, kept_side) = if order.is_lt() { (theirs, merge::Side::Ours) } else { (ours, merge::Side::Theirs) };
    let taken = taken.get(tx)?;
    let Some(to) = merge::collisions::Facts::of(moving.as_bytes()).and_then(|facts| merge::collisions::mint(id, &facts, taken)) else {
        return keep_one_of_two(tx, id, &sides, options, report);
    };
    taken.insert(to.clone());
    let renamed =
        merge::collisions::rename_record(moving.as_bytes(), id, &to, go_style).ok_or_else(|| anyhow::anyhow!("{id}: not a record"))?;
    let obj = RawObject::parse_str(&renamed).with_context(|| to.clone())?;
    store_issue(tx, &to, &renamed, line_hash(renamed.as_bytes()), &IssueRows::from_record(&obj), true)?;
    tx.execute("UPDATE issues SET raw = NULL, line_hash = NULL WHERE id = ?1", [&to])?;
    tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [&to])?;
    report.added.push(to.clone());
    if kept_side == merge::Side::Ours {
        // The cache's issue keeps the id, stamped past both, so a clone that holds the file's
        // issue under it takes the replacement.
        let sides_stamps = [merge::updated_at_of(sides.ours.1), merge::updated_at_of(sides.theirs.1)];
        if let Some(next) = merge::stamp::merge_stamp(&sides_stamps, options.now) {
            tx.execute("UPDATE issues SET updated_at = ?2 WHERE id = ?1", params![id, next])?;
        }
        tx.execute("INSERT OR IGNORE INTO dirty (issue_id) VALUES (?1)", [id])?;
        report.merged.push(id.to_owned());
    } else {
        let obj = RawObject::parse_str(theirs).with_context(|| id.to_string())?;
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        report.changed.push(id.to_owned());
        report.renamed.push(RenamedIssue { from: id.to_owned(), to: to.clone() });
    }
    let moved = if kept_side == merge::Side::Ours { "the file's" } else { "the cache's" };
    report.conflicts.push(whole_record_report(
        id,
        kept_side,
        format!("its issue under {}", crate::record::key_label(id)),
        format!("{moved} issue, now {}", crate::record::key_label(&to)),
        "two different issues were created under this id; the later one moved to the id br gives it".to_owned(),
        None,
    ));
    Ok(())
}

/// A report of a whole-record choice (no field merged): which side was kept, and the other.
fn whole_record_report(
    id: &str,
    kept: merge::Side,
    kept_value: String,
    other_value: String,
    reason: String,
    dropped: Option<&str>,
) -> Report {
    Report {
        id: id.to_owned(),
        resolution: merge::Resolution {
            field: "(record)".into(),
            kept,
            kept_value,
            other_value,
            reason,
            kept_json: None,
            dropped_json: dropped.map(str::to_owned),
        },
    }
}

/// Two different issues under an id for which no free id can be minted (an id br cannot parse,
/// or every candidate taken): the policy (by default the newer) keeps one whole, and the other is
/// reported with its whole line, so nothing is lost from the report.
fn keep_one_of_two(tx: &Transaction<'_>, id: &str, sides: &Sides<'_>, options: &MergeOptions, report: &mut ImportReport) -> Result<()> {
    let (ours, theirs) = (sides.ours.0, sides.theirs.0);
    let cache_wins = match options.policy {
        ConflictPolicy::Ours => true,
        ConflictPolicy::Theirs => false,
        _ => match (merge::updated_at_of(sides.ours.1), merge::updated_at_of(sides.theirs.1)) {
            (Some(a), Some(b)) => timestamp::compare(&a, &b).is_ge(),
            (a, b) => a.is_some() >= b.is_some(),
        },
    };
    let reason = "two different issues were created under this id, and no free id can be minted for the later one".to_owned();
    if cache_wins {
        // The file's line becomes the base, so the export writes the cache's issue over it.
        tx.execute("UPDATE issues SET raw = ?2, line_hash = ?3 WHERE id = ?1", params![id, theirs, line_hash(theirs.as_bytes())])?;
        let printed = crate::record::printable(theirs, 2000);
        report.conflicts.push(whole_record_report(id, merge::Side::Ours, "the cache's issue".into(), printed, reason, Some(theirs)));
        report.merged.push(id.to_owned());
    } else {
        let obj = RawObject::parse_str(theirs).with_context(|| id.to_string())?;
        store_issue(tx, id, theirs, line_hash(theirs.as_bytes()), &IssueRows::from_record(&obj), false)?;
        tx.execute("DELETE FROM dirty WHERE issue_id = ?1", [id])?;
        let printed = crate::record::printable(ours, 2000);
        report.conflicts.push(whole_record_report(id, merge::Side::Theirs, "the file's issue".into(), printed, reason, Some(ours)));
        report.changed.push(id.to_owned());
    }
    Ok(())
}
