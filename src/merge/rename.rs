//! Two different issues created under one id on the two sides of a merge.
//!
//! br and Go `bd` number the children of an epic `P.1`, `P.2`, ... from each clone's own
//! database, so two agents that each add a subtask to one epic both create `P.1`. Those are two
//! issues, not one issue edited twice: merging them field by field would silently drop one. An id
//! added on both sides with different `created_at` is therefore kept twice: the earlier creation
//! (by `created_at`, then content) keeps the id, the later one moves to the next free child number
//! under `P`, and every reference the later side wrote to it follows. This module holds the pieces
//! that decide and rewrite; the merge (and `dedupe`) call them.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use crate::record::{json_string, parse_json_str, render_entries, split_array, Entry, RawObject};
use crate::timestamp;

/// Splits a hierarchical id `P.N` into `P` and `N` (`N` decimal digits); `None` otherwise.
pub fn child_number(id: &str) -> Option<(&str, u64)> {
    let (parent, n) = id.rsplit_once('.')?;
    if parent.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, n.parse().ok()?))
}

/// The highest child number directly under `parent` among `ids` (0 when there is none).
pub fn highest_child<S: AsRef<str>>(parent: &str, ids: impl Iterator<Item = S>) -> u64 {
    ids.filter_map(|id| child_number(id.as_ref()).filter(|(p, _)| *p == parent).map(|(_, n)| n)).max().unwrap_or(0)
}

/// Whether two records under one id, both absent from the base, are two issues created
/// concurrently: both carry `created_at` and the two differ (as instants when both parse). Then
/// `Some(order)` of `a` against `b` by creation (`Less`: `a` was created first), ties in time
/// broken by content (compact JSON with sorted keys), so the answer never depends on which side is
/// which.
pub fn concurrent_creation(a: &Value, b: &Value) -> Option<Ordering> {
    let created = |v: &Value| v.get("created_at").and_then(Value::as_str).map(str::to_owned);
    let (ca, cb) = (created(a)?, created(b)?);
    let differ = match (timestamp::parse(&ca), timestamp::parse(&cb)) {
        (Some(x), Some(y)) => x != y,
        _ => ca != cb,
    };
    if !differ {
        return None;
    }
    Some(timestamp::compare(&ca, &cb).then_with(|| a.to_string().cmp(&b.to_string())))
}

/// Rewrites the string `field` of each object in the array entry `key` from `from` to `to`;
/// true when one changed.
fn rewrite_in_array(entries: &mut [Entry<'_>], key: &str, field: &str, from: &str, to: &str, go_style: bool, comma: &str) -> bool {
    let Some(entry) = entries.iter_mut().rfind(|e| e.key == key) else { return false };
    let Some(elements) = split_array(&entry.raw_value) else { return false };
    let mut changed = false;
    let mut rendered = Vec::with_capacity(elements.len());
    for raw in elements {
        match RawObject::parse_str(raw) {
            Ok(mut element) if element.get(field).and_then(parse_json_str).as_deref() == Some(from) => {
                if let Some(e) = element.entries.iter_mut().rfind(|e| e.key == field) {
                    e.raw_value = Cow::Owned(json_string(to, go_style));
                }
                rendered.push(element.render());
                changed = true;
            }
            _ => rendered.push(raw.to_owned()),
        }
    }
    if changed {
        entry.raw_value = Cow::Owned(format!("[{}]", rendered.join(comma)));
    }
    changed
}

/// The record `line` (whose id is `from`) under the id `to`: its `id` and the `issue_id` of its
/// own dependencies and comments. `None` when the line is not a record.
pub fn rename_record(line: &[u8], from: &str, to: &str, go_style: bool) -> Option<String> {
    let obj = RawObject::parse(line).ok()?;
    let (colon, comma) = (obj.colon.to_owned(), obj.comma.to_owned());
    let mut entries: Vec<Entry<'static>> = obj.entries.into_iter().map(Entry::into_owned).collect();
    let id = entries.iter_mut().rfind(|e| e.key == "id")?;
    id.raw_value = Cow::Owned(json_string(to, go_style));
    for key in ["dependencies", "comments"] {
        rewrite_in_array(&mut entries, key, "issue_id", from, to, go_style, &comma);
    }
    Some(render_entries(&entries, &colon, &comma))
}

/// Rewrites references to `from` in another record's merged `line`: dependencies whose
/// `depends_on_id` is `from` and a `parent` of `from`, but only those the renamed issue's side
/// wrote (`side_line` has them and `other_line`, the other side's version of this record, does
/// not: a reference both sides hold points at the issue that kept the id). The record then gets
/// the merge stamp of `side_stamps`. `None` when nothing was rewritten.
pub fn rewrite_references(
    line: &[u8],
    side_line: &[u8],
    other_line: Option<&[u8]>,
    (from, to): (&str, &str),
    go_style: bool,
    side_stamps: &[Option<String>],
    now: Option<timestamp::Instant>,
) -> Option<String> {
    let refs = |bytes: &[u8]| -> (Vec<String>, bool) {
        let Ok(obj) = RawObject::parse(bytes) else { return (Vec::new(), false) };
        let deps: Vec<Value> = obj.get("dependencies").and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
        let kinds = deps
            .iter()
            .filter(|d| d.get("depends_on_id").and_then(Value::as_str) == Some(from))
            .map(|d| d.get("type").map(Value::to_string).unwrap_or_default())
            .collect();
        (kinds, obj.get("parent").and_then(parse_json_str).as_deref() == Some(from))
    };
    let (side_kinds, side_parent) = refs(side_line);
    let (other_kinds, other_parent) = other_line.map(refs).unwrap_or_default();
    let kinds: Vec<&String> = side_kinds.iter().filter(|k| !other_kinds.contains(k)).collect();
    let parent = side_parent && !other_parent;
    if kinds.is_empty() && !parent {
        return None;
    }
    let obj = RawObject::parse(line).ok()?;
    let (colon, comma) = (obj.colon.to_owned(), obj.comma.to_owned());
    let mut entries: Vec<Entry<'static>> = obj.entries.into_iter().map(Entry::into_owned).collect();
    let mut changed = false;
    if !kinds.is_empty() {
        if let Some(entry) = entries.iter_mut().rfind(|e| e.key == "dependencies") {
            if let Some(elements) = split_array(&entry.raw_value) {
                let mut rendered = Vec::with_capacity(elements.len());
                for raw in elements {
                    let value: Value = serde_json::from_str(raw).ok()?;
                    let kind = value.get("type").map(Value::to_string).unwrap_or_default();
                    if value.get("depends_on_id").and_then(Value::as_str) == Some(from) && kinds.contains(&&kind) {
                        let mut element = RawObject::parse_str(raw).ok()?;
                        let target = element.entries.iter_mut().rfind(|e| e.key == "depends_on_id")?;
                        target.raw_value = Cow::Owned(json_string(to, go_style));
                        rendered.push(element.render());
                        changed = true;
                    } else {
                        rendered.push(raw.to_owned());
                    }
                }
                entry.raw_value = Cow::Owned(format!("[{}]", rendered.join(&comma)));
            }
        }
    }
    if parent {
        if let Some(entry) = entries.iter_mut().rfind(|e| e.key == "parent") {
            entry.raw_value = Cow::Owned(json_string(to, go_style));
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    super::writer::bump_updated_at(&mut entries, side_stamps, now);
    Some(render_entries(&entries, &colon, &comma))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn child_numbers_and_the_next_free_one() {
        assert_eq!(child_number("bd-a1b.3"), Some(("bd-a1b", 3)));
        assert_eq!(child_number("bd-a1b.3.12"), Some(("bd-a1b.3", 12)));
        assert_eq!(child_number("bd-a1b"), None);
        assert_eq!(child_number("bd-a1b.x"), None);
        assert_eq!(child_number(".3"), None);
        assert_eq!(highest_child("p", ["p.1", "p.7", "p.7.9", "q.8", "p"].into_iter()), 7);
    }

    #[test]
    fn creation_order_is_symmetric() {
        let a = json!({"id": "p.1", "created_at": "2026-01-01T10:00:00Z", "title": "a"});
        let b = json!({"id": "p.1", "created_at": "2026-01-01T02:00:00-09:00", "title": "b"});
        assert_eq!(concurrent_creation(&a, &b), Some(Ordering::Less));
        assert_eq!(concurrent_creation(&b, &a), Some(Ordering::Greater));
        let same_instant = json!({"id": "p.1", "created_at": "2026-01-01T11:00:00+01:00", "title": "c"});
        assert_eq!(concurrent_creation(&a, &same_instant), None);
        assert_eq!(concurrent_creation(&a, &json!({"id": "p.1"})), None);
    }
}
