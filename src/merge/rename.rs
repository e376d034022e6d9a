//! Two different issues created under one id on the two sides of a merge.
//!
//! br and Go `bd` number the children of an epic `P.1`, `P.2`, ... from each clone's own
//! database, so two agents that each add a subtask to one epic both create `P.1`. Those are two
//! issues, not one issue edited twice: merging them field by field would silently drop one. An id
//! added on both sides with different `created_at` is therefore kept twice: the earlier creation
//! (by `created_at`, then content) keeps the id, the later one moves to the next free child number
//! under `P`, and every reference the later side wrote to it follows, also from issues that are
//! themselves moving (two clones that split one epic the same way). Child numbers are handed out
//! with checked arithmetic ([`ChildNumbers`]): never a wrapped number, never one in use. This
//! module holds the pieces that decide and rewrite; the merge (and `dedupe`) call them.

use std::borrow::Cow;
use std::cmp::Ordering;

use rustc_hash::{FxHashMap, FxHashSet};
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

/// Whether a record line may hold a reference to another issue (a fast textual pre-check).
pub fn mentions_references(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"\"depends_on_id\"").is_some() || memchr::memmem::find(line, b"\"parent\"").is_some()
}

/// A dependency as a reference: its target and its `type` (as JSON text; empty when absent).
pub type Reference = (String, String);

/// The references a record line holds: its dependencies' `(depends_on_id, type)` and its
/// `parent`. Empty when the line is not a record.
pub fn references(line: &[u8]) -> (Vec<Reference>, Option<String>) {
    let Ok(obj) = RawObject::parse(line) else { return (Vec::new(), None) };
    let deps: Vec<Value> = obj.get("dependencies").and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
    let refs = deps
        .iter()
        .filter_map(|d| Some((d.get("depends_on_id")?.as_str()?.to_owned(), d.get("type").map(Value::to_string).unwrap_or_default())))
        .collect();
    (refs, obj.get("parent").and_then(parse_json_str).map(Cow::into_owned))
}

/// Rewrites, in a merged record `line`, each dependency whose `(depends_on_id, type)` is a key of
/// `deps` to point at the id it maps to, and a `parent` equal to `parent.0` to `parent.1`; the
/// record then gets the merge stamp of `sides_updated_at`. `None` when nothing was rewritten. One pass
/// over the record, however many of its references follow a rename.
pub fn follow_references(
    line: &[u8],
    deps: &FxHashMap<Reference, String>,
    parent: Option<(&str, &str)>,
    go_style: bool,
    sides_updated_at: &[Option<String>],
    now: Option<timestamp::Instant>,
) -> Option<String> {
    let obj = RawObject::parse(line).ok()?;
    let (colon, comma) = (obj.colon.to_owned(), obj.comma.to_owned());
    let mut entries: Vec<Entry<'static>> = obj.entries.into_iter().map(Entry::into_owned).collect();
    let mut changed = false;
    if !deps.is_empty() {
        if let Some(entry) = entries.iter_mut().rfind(|e| e.key == "dependencies") {
            if let Some(elements) = split_array(&entry.raw_value) {
                let mut rendered = Vec::with_capacity(elements.len());
                let mut any = false;
                for raw in elements {
                    let value: Value = serde_json::from_str(raw).ok()?;
                    let target = value.get("depends_on_id").and_then(Value::as_str).map(str::to_owned);
                    let kind = value.get("type").map(Value::to_string).unwrap_or_default();
                    match target.and_then(|t| deps.get(&(t, kind))) {
                        Some(to) => {
                            let mut element = RawObject::parse_str(raw).ok()?;
                            let at = element.entries.iter_mut().rfind(|e| e.key == "depends_on_id")?;
                            at.raw_value = Cow::Owned(json_string(to, go_style));
                            rendered.push(element.render());
                            any = true;
                        }
                        None => rendered.push(raw.to_owned()),
                    }
                }
                if any {
                    entry.raw_value = Cow::Owned(format!("[{}]", rendered.join(&comma)));
                    changed = true;
                }
            }
        }
    }
    if let Some((from, to)) = parent {
        if let Some(entry) = entries.iter_mut().rfind(|e| e.key == "parent") {
            if parse_json_str(&entry.raw_value).as_deref() == Some(from) {
                entry.raw_value = Cow::Owned(json_string(to, go_style));
                changed = true;
            }
        }
    }
    if !changed {
        return None;
    }
    super::stamp::bump_updated_at(&mut entries, sides_updated_at, now);
    Some(render_entries(&entries, &colon, &comma))
}

/// The child numbers in use under the parents a merge must move an issue under, handing out free
/// ones: 1 + the highest in use, and once that would pass `u64::MAX`, the lowest number not in
/// use (never a wrapped one). Built from one pass over every id, so a thousand collisions under a
/// thousand parents cost one pass, not a thousand.
#[derive(Debug, Default)]
pub struct ChildNumbers {
    parents: FxHashMap<String, Numbers>,
}

#[derive(Debug, Default)]
struct Numbers {
    highest: u64,
    used: FxHashSet<u64>,
    /// Below it every number is in use (the search for a free one once `highest` is `u64::MAX`).
    low: u64,
}

impl ChildNumbers {
    /// Tracks the children of `parents`.
    pub fn new<S: AsRef<str>>(parents: impl IntoIterator<Item = S>) -> Self {
        ChildNumbers { parents: parents.into_iter().map(|p| (p.as_ref().to_owned(), Numbers::default())).collect() }
    }

    /// Whether the children of `parent` are tracked.
    pub fn tracks(&self, parent: &str) -> bool {
        self.parents.contains_key(parent)
    }

    /// Tracks the children of `parent` too (note its ids next).
    pub fn track(&mut self, parent: &str) {
        self.parents.entry(parent.to_owned()).or_default();
    }

    /// Notes an id in use (ignored unless it is a child of a tracked parent).
    pub fn note(&mut self, id: &str) {
        if let Some((parent, n)) = child_number(id) {
            if let Some(numbers) = self.parents.get_mut(parent) {
                numbers.highest = numbers.highest.max(n);
                numbers.used.insert(n);
            }
        }
    }

    /// A child number under `parent` that no id holds and none handed out before; `None` when
    /// every number is taken (or the parent is not tracked).
    pub fn next_free(&mut self, parent: &str) -> Option<u64> {
        let numbers = self.parents.get_mut(parent)?;
        let n = match numbers.highest.checked_add(1) {
            Some(n) => {
                numbers.highest = n;
                n
            }
            None => {
                let mut n = numbers.low.max(1);
                while numbers.used.contains(&n) {
                    n = n.checked_add(1)?;
                }
                numbers.low = n;
                n
            }
        };
        numbers.used.insert(n);
        Some(n)
    }
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
    fn child_numbers_never_wrap_and_never_repeat() {
        let mut numbers = ChildNumbers::new(["p", "q"]);
        for id in ["p.3", "p.1", "q.18446744073709551615", "q.1", "q.3", "r.9"] {
            numbers.note(id);
        }
        assert_eq!(numbers.next_free("p"), Some(4));
        assert_eq!(numbers.next_free("p"), Some(5));
        assert_eq!(numbers.next_free("q"), Some(2), "past u64::MAX: the lowest free number");
        assert_eq!(numbers.next_free("q"), Some(4));
        assert_eq!(numbers.next_free("r"), None, "an untracked parent");
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
