//! Putting a dropped value back: the entry's field must still hold what the merge kept; the
//! record gets the dropped value as a new edit (its `updated_at` stamped past the current one),
//! every other record byte for byte.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::value::RawValue;

use super::format::{read_all, LOG_NAME};
use super::review::not_restorable;
use super::types::{Entry, Refusal, RestoreOutcome, Restored};
use crate::safe_fs;

pub(super) fn same_json(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => {
            x == y || serde_json::from_str::<serde_json::Value>(x).ok() == serde_json::from_str::<serde_json::Value>(y).ok()
        }
        _ => false,
    }
}

/// The value at a dotted path inside an object's text.
pub(super) fn value_at(object: &str, path: &[&str]) -> Option<String> {
    let obj = crate::record::RawObject::parse_trusted(object)?;
    let (first, rest) = path.split_first()?;
    let v = obj.entries.iter().rfind(|e| e.key == *first)?.raw_value.to_string();
    if rest.is_empty() {
        Some(v)
    } else {
        value_at(&v, rest)
    }
}

/// `object` with the value at a dotted path set (`None`: removed).
pub(super) fn set_at(object: &str, path: &[&str], value: Option<&str>, go_style: bool) -> Option<String> {
    let obj = crate::record::RawObject::parse_trusted(object)?;
    let (first, rest) = path.split_first()?;
    let mut entries = obj.entries.clone();
    let pos = entries.iter().rposition(|e| e.key == *first);
    let new = if rest.is_empty() {
        value.map(str::to_owned)
    } else {
        Some(set_at(&pos.map(|i| entries[i].raw_value.to_string()).unwrap_or_else(|| "{}".to_owned()), rest, value, go_style)?)
    };
    match (pos, new) {
        (Some(i), Some(v)) => entries[i].raw_value = std::borrow::Cow::Owned(v),
        (Some(i), None) => {
            entries.remove(i);
        }
        (None, Some(v)) => entries.push(crate::record::Entry::new(first, v, go_style)),
        (None, None) => {}
    }
    Some(crate::record::render_entries(&entries, obj.colon, obj.comma))
}

/// The status group's keys of a record, as an object's text.
pub(super) fn group_of(record: &str) -> Option<String> {
    let obj = crate::record::RawObject::parse_trusted(record)?;
    let kept: Vec<crate::record::Entry<'_>> =
        crate::merge::field::STATUS_GROUP.iter().filter_map(|k| obj.entries.iter().rfind(|e| e.key == *k).cloned()).collect();
    Some(crate::record::render_entries(&kept, ":", ","))
}

/// An entry of `field` dropping `dropped` is about the status group (its values are objects of
/// the group's keys).
pub(super) fn is_group(field: &str, dropped: Option<&str>) -> bool {
    field == "status" && dropped.is_some_and(|d| d.trim_start().starts_with('{'))
}

/// The value a record (one line's text) holds for an entry's `field` (dotted), as JSON; for a
/// grouped status entry (see `dropped`), the group's keys as an object. `None` when absent.
pub fn value_in_record(record: &str, field: &str, dropped: Option<&str>) -> Option<String> {
    if is_group(field, dropped) {
        group_of(record)
    } else {
        value_at(record, &field.split('.').collect::<Vec<_>>())
    }
}

/// `bd-merge review --restore N`: puts entry `seq`'s dropped value back into the issues file at
/// `file`, as a new edit (its `updated_at` ticked past the current one and never earlier than the
/// clock), every other record byte for byte. Refuses when the record's field no longer holds the
/// value the merge kept (it changed again since), or when the entry is not a value.
pub fn restore(dir: &Path, seq: u64, file: &Path) -> Result<RestoreOutcome> {
    let refuse = |why: Refusal| Ok(RestoreOutcome::Refused(why));
    let mut found: Vec<Entry> = read_all(dir)?.into_iter().filter(|e| e.seq == seq).collect();
    if found.len() > 1 {
        return refuse(Refusal::Ambiguous { seq, count: found.len() });
    }
    let Some(entry) = found.pop() else {
        return refuse(Refusal::NoEntry { seq, log: dir.join(LOG_NAME) });
    };
    restore_entry(entry, file)
}

/// Puts `entry`'s dropped value back into the issues file at `file` (see [`restore`]); the
/// entry's `kept` is what the field must still hold.
pub fn restore_entry(entry: Entry, file: &Path) -> Result<RestoreOutcome> {
    let refuse = |why: Refusal| Ok(RestoreOutcome::Refused(why));
    if let Some(why) = not_restorable(&entry) {
        return refuse(Refusal::NotRestorable(why));
    }
    let label = crate::record::printable(&crate::record::key_label(&entry.id), 200);
    let field = crate::record::printable(&entry.field, 200);
    let shown = file.display().to_string();
    let content = safe_fs::read_regular(file, 1 << 32)?.with_context(|| format!("{} does not exist", file.display()))?;
    let split = crate::jsonl::Jsonl::split(&content);
    let mut at = None;
    for (i, line) in split.lines.iter().enumerate() {
        if crate::record::record_id(line.bytes).ok().is_some_and(|id| id == entry.id) {
            if at.is_some() {
                return refuse(Refusal::SeveralLines { file: shown, label });
            }
            at = Some(i);
        }
    }
    let Some(at) = at else {
        return refuse(Refusal::Gone { file: shown, label });
    };
    let line = std::str::from_utf8(split.lines[at].bytes)
        .map_err(|_| anyhow::anyhow!("{}, line {}: not UTF-8", file.display(), split.lines[at].number))?;
    crate::record::RawObject::parse_str(line).map_err(|e| anyhow::anyhow!("{}, line {}: {e}", file.display(), split.lines[at].number))?;
    let go_style = crate::record::uses_go_escapes(&content);
    let (kept, dropped) = (entry.kept.as_deref().map(RawValue::get), entry.dropped.as_deref().map(RawValue::get));
    let group = is_group(&entry.field, dropped);
    let path: Vec<&str> = entry.field.split('.').collect();
    let current = value_in_record(line, &entry.field, dropped);
    if same_json(current.as_deref(), dropped) {
        return refuse(Refusal::AlreadyThere { file: shown, label, field });
    }
    if !same_json(current.as_deref(), kept) {
        let shown_value = |v: Option<&str>| v.map(|c| crate::record::printable(c, 80)).unwrap_or_else(|| "(absent)".into());
        let values = Box::new([shown_value(current.as_deref()), shown_value(kept), shown_value(dropped)]);
        return refuse(Refusal::ChangedSince { file: shown, label, field, values });
    }
    let mut record = line.to_owned();
    if group {
        let values = crate::record::RawObject::parse_trusted(dropped.unwrap_or("{}")).map(|o| o.entries).unwrap_or_default();
        for key in crate::merge::field::STATUS_GROUP {
            let v = values.iter().rfind(|e| e.key == *key).map(|e| e.raw_value.to_string());
            record = set_at(&record, &[key], v.as_deref(), go_style).context("rewriting the record")?;
        }
    } else {
        record = set_at(&record, &path, dropped, go_style).context("rewriting the record")?;
    }
    let current_updated_at =
        value_at(&record, &["updated_at"]).and_then(|v| crate::record::parse_json_str(&v).map(std::borrow::Cow::into_owned));
    let mut updated_at = None;
    if let Some(current) = current_updated_at {
        let now = crate::timestamp::merge_now()?;
        if let Some(next) = crate::timestamp::merge_stamp([current.as_str()], Some(now)) {
            record = set_at(&record, &["updated_at"], Some(&crate::record::json_string(&next, go_style)), go_style)
                .context("rewriting the record")?;
            updated_at = Some(next);
        }
    }
    let mut out = Vec::with_capacity(content.len() + record.len());
    let lines = split.lines.iter().enumerate().map(|(i, l)| if i == at { record.as_bytes() } else { l.bytes });
    crate::jsonl::write_lines(&mut out, split.layout, lines).context("writing to memory")?;
    if let Some(fixed) = crate::merge::derived::recompute_file(&out) {
        out = fixed;
    }
    crate::safe_fs::write_atomic(file, &out)?;
    Ok(RestoreOutcome::Restored(Restored { id: entry.id, field: entry.field, path: file.display().to_string(), updated_at }))
}
