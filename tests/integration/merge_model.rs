//! The engine against the reference model (`tests/model/mod.rs`): generated triples of issue
//! files, merged by both in both argument orders, must give the same bytes and no conflict.
//! `MODEL_CASES` sets the number of triples (10,000 by default: 20,000 merges each way); a
//! difference shrinks to a minimal triple, printed in the failure and kept by proptest in
//! `tests/proptest-regressions/` so the next run tries it first.

use std::collections::BTreeMap;

use beads_git::merge::{merge, ConflictPolicy, MergeOptions};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};

#[path = "../model/mod.rs"]
mod model;

/// `2025-11-01T01:00:00Z` plus `seconds`, as the model's stamps are written.
fn stamp(seconds: u32) -> Value {
    let s = 3600 + seconds;
    json!(format!("2025-11-01T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60))
}

#[derive(Debug, Clone)]
enum Edit {
    Title(u8),
    /// Replace line `.0` of the description with one named by `.1`.
    ReplaceLine(u8, u8),
    /// Insert a line named by `.1` before line `.0`.
    InsertLine(u8, u8),
    DeleteLine(u8),
    Heartbeat(u8),
    /// A comment, numbered by the side's own counter (each clone's database numbers its own).
    AddComment(u8),
    /// The last comment but the first removed.
    DeleteComment,
    /// A dependency on `bd-0N`, `blocks` or `related`.
    AddDependency(u8, bool),
    /// The last dependency removed (the key with it when the list empties: Go's omitempty).
    RemoveDependency,
    Priority(u8),
    Close(u8),
    Reopen,
    Progress,
    AddLabel(u8),
    /// A label added at the end, the list left unsorted (a writer that does not sort).
    AppendLabel(u8),
    RemoveLabel(u8),
    Bump(u8),
    Delete,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0u8..4).prop_map(Edit::Title),
        (0u8..5, 0u8..2).prop_map(|(k, v)| Edit::ReplaceLine(k, v)),
        (0u8..6, 0u8..2).prop_map(|(k, v)| Edit::InsertLine(k, v)),
        (0u8..5).prop_map(Edit::DeleteLine),
        (0u8..4).prop_map(Edit::Heartbeat),
        (0u8..4).prop_map(Edit::AddComment),
        (0u8..4).prop_map(Edit::AddComment),
        Just(Edit::DeleteComment),
        (0u8..4, any::<bool>()).prop_map(|(k, blocks)| Edit::AddDependency(k, blocks)),
        Just(Edit::RemoveDependency),
        (0u8..4).prop_map(Edit::Priority),
        (0u8..3).prop_map(Edit::Close),
        Just(Edit::Reopen),
        Just(Edit::Progress),
        (0u8..4).prop_map(Edit::AddLabel),
        (0u8..4).prop_map(Edit::AppendLabel),
        (0u8..4).prop_map(Edit::RemoveLabel),
        (0u8..6).prop_map(Edit::Bump),
        Just(Edit::Delete),
    ]
}

type Rec = BTreeMap<String, Value>;

fn record(id: &str, n: u8) -> Rec {
    let value = json!({
        "id": id,
        "title": format!("t{}", n % 4),
        "description": (0..5).map(|k| format!("line {k} of d{}\n", n % 3)).collect::<String>(),
        "status": "open",
        "priority": n % 4,
        "created_at": "2025-11-01T00:00:00Z",
        "updated_at": stamp(u32::from(n % 3) * 60),
        "labels": ["core"],
        "comments": [comment(i64::from(n) + 1, id, "base", u32::from(n))],
        "dependency_count": 0,
        "dependent_count": 0,
        "comment_count": 1,
    });
    serde_json::from_value(value).expect("an object")
}

/// A comment, its keys in the order `serde_json` writes them (so the model's rendering is the
/// line's own).
fn comment(number: i64, issue: &str, author: &str, at: u32) -> Value {
    json!({"author": author, "created_at": stamp(2400 + at), "id": number, "issue_id": issue, "text": format!("{author} at {at}")})
}

/// Applies `edits` to a record; `None` when one deletes it. A tracker's edit may or may not move
/// `updated_at` (`Bump`). New comments are numbered from `counter` and written by `who`.
fn apply(mut r: Rec, edits: &[Edit], who: &str, counter: &mut i64) -> Option<Rec> {
    for e in edits {
        match e {
            Edit::Title(x) => drop(r.insert("title".into(), json!(format!("t{x}")))),
            Edit::ReplaceLine(k, v) | Edit::InsertLine(k, v) | Edit::DeleteLine(k @ v) => {
                let text = r.get("description").and_then(Value::as_str).unwrap_or("").to_owned();
                let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
                let k = usize::from(*k);
                let new = match e {
                    Edit::ReplaceLine(..) => format!("line {k} replaced {v}\n"),
                    _ => format!("line inserted before {k} ({v})\n"),
                };
                // Lines stay distinct (the model's line diff assumes so): an edit that would
                // repeat a line is left out.
                if !lines.contains(&new) {
                    match e {
                        Edit::ReplaceLine(..) if k < lines.len() => lines[k] = new,
                        Edit::InsertLine(..) if k <= lines.len() => lines.insert(k, new),
                        Edit::DeleteLine(_) if k < lines.len() => drop(lines.remove(k)),
                        _ => {}
                    }
                }
                r.insert("description".into(), json!(lines.concat()));
            }
            Edit::Heartbeat(x) => drop(r.insert("heartbeat_at".into(), stamp(1800 + u32::from(*x) * 7))),
            Edit::AddComment(x) => {
                let id = r["id"].as_str().unwrap_or("").to_owned();
                let at = 100 + u32::from(*x) * 13 + if who == "ours" { 0 } else { 5 };
                let new = comment(*counter + 1, &id, who, at);
                let list = r.get_mut("comments").and_then(Value::as_array_mut)?;
                // One comment twice in a list is not something a tracker writes.
                let same = |c: &Value| c["text"] == new["text"];
                if !list.iter().any(same) {
                    *counter += 1;
                    list.push(new);
                }
            }
            Edit::AddDependency(k, blocks) => {
                let id = r["id"].as_str().unwrap_or("").to_owned();
                let on = format!("bd-0{k}");
                let kind = if *blocks { "blocks" } else { "related" };
                let dep = json!({"created_at": stamp(3000 + u32::from(*k) * 11), "depends_on_id": on, "issue_id": id, "type": kind});
                if on != id {
                    let list = r.entry("dependencies".to_owned()).or_insert_with(|| json!([]));
                    let same = |d: &Value| d["depends_on_id"] == dep["depends_on_id"] && d["type"] == dep["type"];
                    if let Some(list) = list.as_array_mut().filter(|l| !l.iter().any(same)) {
                        list.push(dep);
                    }
                }
            }
            Edit::RemoveDependency => {
                if let Some(list) = r.get_mut("dependencies").and_then(Value::as_array_mut) {
                    list.pop();
                    if list.is_empty() {
                        r.remove("dependencies");
                    }
                }
            }
            Edit::DeleteComment => {
                let list = r.get_mut("comments").and_then(Value::as_array_mut)?;
                if list.len() > 1 {
                    list.pop();
                }
            }
            Edit::Priority(x) => drop(r.insert("priority".into(), json!(x))),
            Edit::Close(x) => {
                r.insert("status".into(), json!("closed"));
                r.insert("closed_at".into(), stamp(600 + u32::from(*x) * 60));
            }
            Edit::Reopen | Edit::Progress => {
                r.insert("status".into(), json!(if matches!(e, Edit::Reopen) { "open" } else { "in_progress" }));
                r.remove("closed_at");
            }
            Edit::AddLabel(x) | Edit::AppendLabel(x) | Edit::RemoveLabel(x) => {
                let label = json!(format!("l{x}"));
                let labels = r.get_mut("labels").and_then(Value::as_array_mut)?;
                labels.retain(|l| *l != label);
                if matches!(e, Edit::AddLabel(_) | Edit::AppendLabel(_)) {
                    labels.push(label);
                }
                if matches!(e, Edit::AddLabel(_)) {
                    labels.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                }
            }
            Edit::Bump(x) => drop(r.insert("updated_at".into(), stamp(1200 + u32::from(*x) * 61))),
            Edit::Delete => return None,
        }
    }
    Some(r)
}

/// A side's records: each base record edited (or not), then the side's new ones (ids
/// `bd-9N`, the same `created_at` on both sides: one issue); sorted by id, or in reverse when
/// the side's writer moved lines (`reversed`).
fn side(base: &[Rec], edits: &[Vec<Edit>], added: &[(u8, u8)], reversed: bool, who: &str) -> Vec<Rec> {
    let mut counter =
        base.iter().flat_map(|r| r["comments"].as_array().cloned().unwrap_or_default()).filter_map(|c| c["id"].as_i64()).max().unwrap_or(0);
    let mut out: Vec<Rec> = base.iter().zip(edits).filter_map(|(r, e)| apply(r.clone(), e, who, &mut counter)).collect();
    for (id, n) in added {
        out.push(record(&format!("bd-9{id}"), *n));
    }
    out.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    out.dedup_by(|a, b| a["id"] == b["id"]);
    counted(&mut out);
    if reversed {
        out.reverse();
    }
    out
}

/// The counts bd 1.0.5 writes, true for the file (each side's writer keeps them so).
fn counted(records: &mut [Rec]) {
    let blocks = |r: &Rec| -> Vec<String> {
        r.get("dependencies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|d| d["type"] == "blocks")
            .filter_map(|d| d["depends_on_id"].as_str().map(str::to_owned))
            .collect()
    };
    let pointed: Vec<String> = records.iter().flat_map(blocks).collect();
    for r in records.iter_mut() {
        let id = r["id"].as_str().unwrap_or("").to_owned();
        let comments = r.get("comments").and_then(Value::as_array).map_or(0, Vec::len);
        r.insert("dependency_count".into(), json!(blocks(r).len()));
        r.insert("dependent_count".into(), json!(pointed.iter().filter(|p| **p == id).count()));
        r.insert("comment_count".into(), json!(comments));
    }
}

fn file(records: &[Rec]) -> String {
    records.iter().map(|r| model::render(r) + "\n").collect()
}

#[derive(Debug, Clone)]
struct Triple {
    base: String,
    ours: String,
    theirs: String,
}

fn triple() -> impl Strategy<Value = Triple> {
    (1usize..7)
        .prop_flat_map(|n| {
            let edits = || proptest::collection::vec(proptest::collection::vec(edit(), 0..3), n);
            let added = || proptest::collection::vec((0u8..3, 0u8..12), 0..3);
            // Mostly sorted sides; now and then one whose writer moved lines.
            let reversed = || prop_oneof![4 => Just(false), 1 => Just(true)];
            (proptest::collection::vec(0u8..12, n), (edits(), added(), reversed()), (edits(), added(), reversed()))
        })
        .prop_map(|(seeds, (ours_edits, ours_added, ours_reversed), (theirs_edits, theirs_added, theirs_reversed))| {
            let mut base: Vec<Rec> = seeds.iter().enumerate().map(|(k, n)| record(&format!("bd-{k:02}"), *n)).collect();
            // Some base records already depend on another.
            for (k, r) in base.iter_mut().enumerate().filter(|(k, _)| k % 3 == 1) {
                let _ = apply(std::mem::take(r), &[Edit::AddDependency(0, k % 2 == 1)], "base", &mut 0).map(|d| *r = d);
            }
            counted(&mut base);
            Triple {
                base: file(&base),
                ours: file(&side(&base, &ours_edits, &ours_added, ours_reversed, "ours")),
                theirs: file(&side(&base, &theirs_edits, &theirs_added, theirs_reversed, "theirs")),
            }
        })
}

fn engine(base: &str, ours: &str, theirs: &str) -> (String, usize) {
    let options = MergeOptions {
        policy: ConflictPolicy::Newest,
        now: beads_git::timestamp::parse("2000-01-01T00:00:00Z"),
        ..MergeOptions::default()
    };
    let merged = merge(base.as_bytes(), ours.as_bytes(), theirs.as_bytes(), &options).expect("the generator writes mergeable files");
    (String::from_utf8(merged.to_vec()).expect("UTF-8"), merged.conflicts)
}

fn cases() -> u32 {
    std::env::var("MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Both argument orders: the model is not symmetric by construction (ours' bytes and order
    /// win where the rules say so), so each order is checked against the model's own answer.
    #[test]
    fn the_engine_merges_as_the_reference_model_does(t in triple()) {
        for (ours, theirs) in [(&t.ours, &t.theirs), (&t.theirs, &t.ours)] {
            let (merged, conflicts) = engine(&t.base, ours, theirs);
            let expected = model::merge(&t.base, ours, theirs);
            prop_assert_eq!(conflicts, 0);
            prop_assert_eq!(
                &merged, &expected,
                "base:\n{}\nours:\n{}\ntheirs:\n{}", t.base, ours, theirs
            );
        }
    }
}

/// The generator reaches the rules the model states: over a fixed sample, records merged key by
/// key, stamped by the merge, settled by the policy and joined as sets all occur (a generator
/// that drifted into only trivial triples would make the differential test vacuous).
#[test]
fn the_generated_triples_reach_every_rule_the_model_states() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen = model::Seen::default();
    for _ in 0..2000 {
        let t = triple().new_tree(&mut runner).expect("a triple").current();
        model::merge_counting(&t.base, &t.ours, &t.theirs, &mut seen);
    }
    println!("{seen:?}");
    assert!(seen.field_merges > 200, "{seen:?}");
    assert!(seen.stamped > 100, "{seen:?}");
    assert!(seen.policy > 100, "{seen:?}");
    assert!(seen.set_merges > 20, "{seen:?}");
    assert!(seen.status_groups > 20, "{seen:?}");
    assert!(seen.delete_against_change > 20, "{seen:?}");
    assert!(seen.added_on_both > 20, "{seen:?}");
    assert!(seen.text_merges > 20, "{seen:?}");
    assert!(seen.reordered > 20, "{seen:?}");
    assert!(seen.comment_merges > 20, "{seen:?}");
    assert!(seen.renumbered > 20, "{seen:?}");
    assert!(seen.dependency_merges > 20, "{seen:?}");
    assert!(seen.recounted > 20, "{seen:?}");
}
