//! The conventions of the writers whose files we merge and export (br 0.7 and Go `bd`): the
//! order a writer puts a record's keys in, the sort it gives dependency and comment arrays, and
//! what makes two array elements "the same" element.
//!
//! The merge engine (`merge::field`, `merge::comments`) and the cache's codec (`cache::codec`) both
//! write records a tracker will read back and rewrite on its next flush; both follow these rules,
//! so they live here, below both (docs/architecture.md).

use std::cmp::Ordering;

use serde_json::Value;

use crate::timestamp;

/// br 0.7's `Issue` struct order (serde writes fields in declaration order).
const BR_ORDER: &[&str] = &[
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "prerequisites",
    "notes",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "owner",
    "estimated_minutes",
    "created_at",
    "created_by",
    "updated_at",
    "closed_at",
    "close_reason",
    "closed_by_session",
    "bypassed_policy",
    "bypass_reason",
    "policy_gates_fired",
    "due_at",
    "defer_until",
    "external_ref",
    "source_system",
    "source_repo",
    "source_repo_path",
    "agent_context",
    "deleted_at",
    "deleted_by",
    "delete_reason",
    "original_type",
    "compaction_level",
    "compacted_at",
    "compacted_at_commit",
    "original_size",
    "sender",
    "ephemeral",
    "pinned",
    "is_template",
    "labels",
    "dependencies",
    "comments",
];

/// Go `bd`'s `types.Issue` struct order, tombstone fields after the close group.
const GO_ORDER: &[&str] = &[
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "spec_id",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "owner",
    "estimated_minutes",
    "created_at",
    "created_by",
    "updated_at",
    "started_at",
    "closed_at",
    "close_reason",
    "closed_by_session",
    "deleted_at",
    "deleted_by",
    "delete_reason",
    "original_type",
    "due_at",
    "defer_until",
    "external_ref",
    "source_system",
    "metadata",
    "compaction_level",
    "compacted_at",
    "compacted_at_commit",
    "original_size",
    "labels",
    "dependencies",
    "comments",
    "sender",
    "ephemeral",
    "no_history",
    "wisp_type",
    "pinned",
    "is_template",
    "bonded_from",
    "await_type",
    "await_id",
    "timeout",
    "waiters",
    "source_formula",
    "source_location",
    "mol_type",
    "work_type",
    "event_kind",
    "actor",
    "target",
    "payload",
];

fn rank(order: &[&str], key: &str) -> Option<usize> {
    order.iter().position(|k| *k == key)
}

/// The writer order `keys` follows: its known keys appear in that order's sequence. Keys the
/// order does not know are ignored (they stay where they are); at least two known keys are
/// needed to tell.
fn writer_order(keys: &[&str]) -> Option<&'static [&'static str]> {
    [BR_ORDER, GO_ORDER].into_iter().find(|order| {
        let ranks: Vec<usize> = keys.iter().filter_map(|k| rank(order, k)).collect();
        ranks.len() >= 2 && ranks.windows(2).all(|w| w[0] < w[1])
    })
}

/// Orders a merged record's keys: ours' keys keep their order, and a key new from theirs goes
/// where the record's writer puts it when the record follows a known writer order, else at the
/// end.
pub fn order_keys<'k>(ours: &[&'k str], added: &[&'k str]) -> Vec<&'k str> {
    let mut keys: Vec<&str> = ours.to_vec();
    let order = writer_order(ours);
    for &key in added {
        keys.insert(place_in(order, &keys, key), key);
    }
    keys
}

/// Where a new key goes among a record's `keys` (docs/merge-rules.md): before the first key its writer
/// puts after it, or at the end when the record follows no known writer order.
pub fn insert_position(keys: &[&str], key: &str) -> usize {
    place_in(writer_order(keys), keys, key)
}

fn place_in(order: Option<&[&str]>, keys: &[&str], key: &str) -> usize {
    order
        .and_then(|order| {
            let r = rank(order, key)?;
            Some(keys.iter().position(|k| rank(order, k).is_some_and(|kr| kr > r)).unwrap_or(keys.len()))
        })
        .unwrap_or(keys.len())
}

/// A sort a writer uses for one object array, as a comparison of two parsed elements.
pub type ElementOrder = fn(&Value, &Value) -> Ordering;

fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn by_time(a: &Value, b: &Value, key: &str) -> Ordering {
    timestamp::compare(text(a, key), text(b, key))
}

fn id_number(v: &Value) -> Option<i64> {
    v.get("id").and_then(Value::as_i64)
}

/// br: `(depends_on_id, type, created_at, created_by)`.
fn dependencies_br(a: &Value, b: &Value) -> Ordering {
    text(a, "depends_on_id")
        .cmp(text(b, "depends_on_id"))
        .then_with(|| text(a, "type").cmp(text(b, "type")))
        .then_with(|| by_time(a, b, "created_at"))
        .then_with(|| text(a, "created_by").cmp(text(b, "created_by")))
}

/// Creation order, as a database returns rows it inserted.
fn by_created(a: &Value, b: &Value) -> Ordering {
    by_time(a, b, "created_at")
}

/// br: `(created_at, author, text, id)`.
fn comments_br(a: &Value, b: &Value) -> Ordering {
    by_time(a, b, "created_at")
        .then_with(|| text(a, "author").cmp(text(b, "author")))
        .then_with(|| text(a, "text").cmp(text(b, "text")))
        .then_with(|| id_number(a).cmp(&id_number(b)))
}

/// Go `bd`: `(created_at, id)`.
fn comments_go(a: &Value, b: &Value) -> Ordering {
    by_time(a, b, "created_at").then_with(|| id_number(a).cmp(&id_number(b)))
}

fn candidates(key: &str) -> &'static [ElementOrder] {
    match key {
        "dependencies" => &[dependencies_br, by_created],
        "comments" => &[comments_br, comments_go],
        _ => &[],
    }
}

/// The sort to give a merged object array: the first known writer sort that ours' elements
/// follow (theirs' when ours has fewer than two), the preferred one when neither side has two
/// elements to tell by, and none (ours' order, then theirs' additions) when a side shows an order
/// no writer uses.
pub fn array_order(key: &str, ours: &[Value], theirs: &[Value]) -> Option<ElementOrder> {
    let list = candidates(key);
    let sorted_by = |elements: &[Value], order: ElementOrder| elements.windows(2).all(|w| order(&w[0], &w[1]) != Ordering::Greater);
    let witness = if ours.len() >= 2 {
        ours
    } else if theirs.len() >= 2 {
        theirs
    } else {
        return list.first().copied();
    };
    list.iter().copied().find(|order| sorted_by(witness, *order))
}

/// Equal as records once arrays are taken as sets (labels, dependencies and comments are sets to
/// every tracker): a merge that only reordered a side's elements did not make a record newer.
pub fn same_record(a: &Value, b: &Value) -> bool {
    fn normal(v: &Value) -> Value {
        match v {
            Value::Array(items) => {
                let mut xs: Vec<Value> = items.iter().map(normal).collect();
                xs.sort_by_key(std::string::ToString::to_string);
                Value::Array(xs)
            }
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), normal(v))).collect()),
            other => other.clone(),
        }
    }
    a == b || normal(a) == normal(b)
}

/// How new a comment id's scheme is (docs/trackers.md, "Comment ids"), judged by the
/// id's shape alone, so every clone and every command ranks an id the same way:
///
/// - 0: a JSON number: a per-database `AUTO_INCREMENT` counter (Go `bd` before its migration 0037,
///   br);
/// - 1: a string in UUID form whose version nibble is 1, 4 or 7: a random or time-based UUID (bd's
///   `CHAR(36) DEFAULT (UUID())` column of migrations 0004/0037, and the interim UUIDv7 rows bd 1.3's
///   migration 0061 rekeys);
/// - 2: any other string: an id derived from the comment's content (bd 1.3, migration 0061), which
///   is the same on every clone.
pub fn comment_id_scheme(id: Option<&Value>) -> u8 {
    match id {
        Some(Value::String(s)) => {
            let b = s.as_bytes();
            let uuid_form = b.len() == 36
                && b.iter().enumerate().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { *c == b'-' } else { c.is_ascii_hexdigit() });
            if uuid_form && matches!(b[14], b'1' | b'4' | b'7') {
                1
            } else {
                2
            }
        }
        _ => 0,
    }
}

/// Of two copies of one comment (equal but for `id`), the one whose id follows the newer
/// [`comment_id_scheme`]; between ids of one scheme, the one whose id text sorts greater. True
/// for `a`. Symmetric: swapping the arguments flips the answer unless the ids are equal.
pub fn prefer_comment_id(a: &Value, b: &Value) -> bool {
    let (ia, ib) = (a.get("id"), b.get("id"));
    let text = |v: Option<&Value>| v.map(Value::to_string).unwrap_or_default();
    (comment_id_scheme(ia), text(ia)) >= (comment_id_scheme(ib), text(ib))
}

/// The identity of an element of an object array: `(depends_on_id, type)` for dependencies, the
/// whole object but its machine-local `id` for comments, else the whole object.
pub fn identity(key: &str, element: &Value) -> String {
    let mut v = element.clone();
    if let Value::Object(map) = &mut v {
        if key == "dependencies" && map.contains_key("depends_on_id") {
            let pick = |k: &str| map.get(k).cloned().unwrap_or(Value::Null);
            return Value::Array(vec![pick("depends_on_id"), pick("type")]).to_string();
        }
        if key == "comments" {
            map.remove("id");
        }
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_keys_go_where_the_writer_puts_them() {
        let ours = ["id", "title", "status", "priority", "created_at", "updated_at", "labels"];
        assert_eq!(
            order_keys(&ours, &["close_reason", "closed_at"]),
            ["id", "title", "status", "priority", "created_at", "updated_at", "closed_at", "close_reason", "labels"]
        );
        // Not a writer order: new keys at the end.
        let odd = ["title", "id", "status"];
        assert_eq!(order_keys(&odd, &["closed_at"]), ["title", "id", "status", "closed_at"]);
        // An unknown new key goes at the end; unknown existing keys are ignored.
        assert_eq!(order_keys(&["id", "x-custom", "updated_at"], &["zzz", "title"]), ["id", "x-custom", "title", "updated_at", "zzz"]);
    }

    #[test]
    fn array_order_follows_what_ours_shows() {
        let dep = |on: &str, at: &str| serde_json::json!({"depends_on_id": on, "type": "blocks", "created_at": at});
        let by_id = [dep("a", "2026-01-02T00:00:00Z"), dep("b", "2026-01-01T00:00:00Z")];
        let order = array_order("dependencies", &by_id, &[]).expect("sorted by id");
        assert_eq!(order(&by_id[1], &by_id[0]), Ordering::Greater);
        let by_time = [dep("b", "2026-01-01T00:00:00Z"), dep("a", "2026-01-02T00:00:00Z")];
        let order = array_order("dependencies", &by_time, &[]).expect("sorted by creation");
        assert_eq!(order(&by_time[0], &by_time[1]), Ordering::Less);
        let neither = [dep("b", "2026-01-02T00:00:00Z"), dep("a", "2026-01-01T00:00:00Z"), dep("c", "2026-01-03T00:00:00Z")];
        assert!(array_order("dependencies", &neither, &[]).is_none());
        assert!(array_order("labels", &[], &[]).is_none());
    }
}
