//! Property tests of the merge engine over random triples (2,000 cases each): base records, and two sides that
//! each edit fields, add labels and comments (numbered by each side's own counter, as a tracker's
//! database does, so the two sides' new comments share ids), re-format records as other writers
//! do (spaced separators, Go escapes, other key orders), delete and add records; and duplicate
//! ids with a line that is not UTF-8.

use std::collections::{BTreeMap, BTreeSet};

use beads_git::merge::{merge, ConflictPolicy, MergeOptions};
use proptest::prelude::*;
use serde_json::{json, Value};

const STAMPS: &[&str] = &[
    "2025-11-01T10:00:00-08:00",
    "2025-11-01T18:00:00Z",
    "2025-11-02T09:00:00.5-08:00",
    "2025-11-02T17:00:00.5Z",
    "2025-11-03T01:00:00+07:00",
];

#[derive(Debug, Clone)]
enum Edit {
    Title(u8),
    Priority(u8),
    Status(bool),
    AddLabel(u8),
    RemoveLabels,
    DescriptionLine(u8, u8),
    Stamp(u8),
    Comment(u8),
    /// The same value written another way (another writer: spaced separators, Go escapes,
    /// another key order).
    Reformat(u8),
    Delete,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<u8>().prop_map(Edit::Title),
        any::<u8>().prop_map(Edit::Priority),
        any::<bool>().prop_map(Edit::Status),
        any::<u8>().prop_map(Edit::AddLabel),
        Just(Edit::RemoveLabels),
        (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Edit::DescriptionLine(a, b)),
        any::<u8>().prop_map(Edit::Stamp),
        any::<u8>().prop_map(Edit::Comment),
        any::<u8>().prop_map(Edit::Reformat),
        any::<u8>().prop_map(Edit::Reformat),
        Just(Edit::Delete),
    ]
}

fn base_record(n: usize) -> Value {
    json!({
        "id": format!("bd-{n:02}"),
        "title": format!("Issue <{n}>"),
        "description": "one\ntwo\nthree\nfour\nfive\n",
        "status": "open",
        "priority": n % 5,
        "updated_at": STAMPS[n % 2],
        "labels": ["a", "m"],
        "custom": {"k": n},
        "comments": [{"id": n + 1, "issue_id": format!("bd-{n:02}"), "author": "base", "text": "seed", "created_at": STAMPS[0]}],
    })
}

fn apply(rec: &Value, e: &Edit) -> Option<Value> {
    let mut r = rec.clone();
    match e {
        Edit::Title(x) => r["title"] = json!(format!("T{x} & more")),
        Edit::Priority(x) => r["priority"] = json!(x % 5),
        Edit::Status(true) => {
            r["status"] = json!("closed");
            r["closed_at"] = json!(STAMPS[2]);
        }
        Edit::Status(false) => r["status"] = json!("in_progress"),
        Edit::AddLabel(x) => r["labels"].as_array_mut()?.push(json!(format!("l{}", x % 6))),
        Edit::RemoveLabels => {
            r.as_object_mut()?.remove("labels");
        }
        Edit::DescriptionLine(line, x) => {
            let d = r["description"].as_str()?.to_owned();
            let mut lines: Vec<String> = d.lines().map(str::to_owned).collect();
            let i = *line as usize % lines.len();
            lines[i] = format!("edit {x}");
            r["description"] = json!(lines.join("\n") + "\n");
        }
        Edit::Stamp(x) => r["updated_at"] = json!(STAMPS[*x as usize % STAMPS.len()]),
        Edit::Comment(x) => {
            let comment = json!({"id": null, "issue_id": r["id"], "author": format!("a{}", x % 3), "text": format!("c{x}"),
                "created_at": STAMPS[*x as usize % STAMPS.len()]});
            r["comments"].as_array_mut()?.push(comment);
        }
        Edit::Reformat(_) => {}
        Edit::Delete => return None,
    }
    Some(r)
}

/// A side: per base record an optional list of edits, plus new records.
fn side(n: usize) -> impl Strategy<Value = (Vec<Vec<Edit>>, Vec<u8>)> {
    (proptest::collection::vec(proptest::collection::vec(edit(), 0..3), n), proptest::collection::vec(0u8..20, 0..3))
}

fn render(records: &[Value]) -> Vec<u8> {
    records.iter().map(|r| format!("{r}\n")).collect::<String>().into_bytes()
}

/// One value as different writers write it: 0 compact with sorted keys (the default here),
/// 1 with `": "` and `", "` separators, 2 with Go's `\u003c \u003e \u0026` escapes and keys in
/// reverse order, 3 keys in reverse order.
fn styled(v: &Value, style: u8) -> String {
    fn write(v: &Value, style: u8, out: &mut String) {
        let (colon, comma) = if style == 1 { (": ", ", ") } else { (":", ",") };
        match v {
            Value::Object(map) => {
                out.push('{');
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                if style >= 2 {
                    entries.reverse();
                }
                for (i, (k, val)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push_str(colon);
                    write(val, style, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    write(item, style, out);
                }
                out.push(']');
            }
            Value::String(_) if style == 2 => {
                // `<`, `>`, `&` only occur inside strings in JSON text, so this keeps it valid.
                out.push_str(&v.to_string().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026"));
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, style, &mut out);
    out
}

fn build(base: &[Value], (edits, adds): &(Vec<Vec<Edit>>, Vec<u8>), tag: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut styles: BTreeMap<String, u8> = BTreeMap::new();
    for (rec, es) in base.iter().zip(edits) {
        let mut cur = Some(rec.clone());
        for e in es {
            if let (Edit::Reformat(x), Some(r)) = (e, &cur) {
                styles.insert(r["id"].as_str().unwrap_or_default().to_owned(), 1 + x % 3);
            }
            cur = cur.and_then(|c| apply(&c, e));
        }
        out.extend(cur);
    }
    for a in adds {
        let mut r = base_record(50 + *a as usize);
        r["title"] = json!(format!("new from {tag}"));
        if !out.iter().any(|x: &Value| x["id"] == r["id"]) {
            out.push(r);
        }
    }
    out.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    // Each side's database numbers its new comments from the same counter.
    let mut next = 100;
    for comment in out.iter_mut().filter_map(|r| r.get_mut("comments")?.as_array_mut()).flatten() {
        if comment["id"].is_null() {
            comment["id"] = json!(next);
            next += 1;
        }
    }
    out.iter()
        .map(|r| styled(r, styles.get(r["id"].as_str().unwrap_or_default()).copied().unwrap_or(0)) + "\n")
        .collect::<String>()
        .into_bytes()
}

fn by_id(bytes: &[u8]) -> BTreeMap<String, (Value, Vec<u8>)> {
    String::from_utf8(bytes.to_vec())
        .expect("utf8")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("every output line parses");
            (v["id"].as_str().expect("string id").to_owned(), (v, l.as_bytes().to_vec()))
        })
        .collect()
}

/// Arrays compared as sets, so the symmetric check does not depend on whose order was kept.
fn normalised(v: &Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut xs: Vec<Value> = items.iter().map(normalised).collect();
            xs.sort_by_key(std::string::ToString::to_string);
            Value::Array(xs)
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), normalised(v))).collect()),
        other => other.clone(),
    }
}

pub(crate) fn triple() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, Vec<u8>)> {
    (1usize..12).prop_flat_map(|n| {
        let base: Vec<Value> = (0..n).map(base_record).collect();
        (Just(base), side(n), side(n)).prop_map(|(base, o, t)| {
            let (o, t) = (build(&base, &o, "ours"), build(&base, &t, "theirs"));
            (render(&base), o, t)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn merge_never_loses_records_and_output_parses((base, ours, theirs) in triple()) {
        let merged = merge(&base, &ours, &theirs, &MergeOptions::default()).expect("structural merge");
        let (b, o, t, m) = (by_id(&base), by_id(&ours), by_id(&theirs), by_id(&merged.to_vec()));
        let ids: BTreeSet<&String> = o.keys().chain(t.keys()).collect();
        for id in ids {
            let deleted_by_table = match (b.get(id), o.get(id), t.get(id)) {
                (Some(bv), None, Some(tv)) => bv.0 == tv.0,
                (Some(bv), Some(ov), None) => bv.0 == ov.0,
                _ => false,
            };
            prop_assert_eq!(m.contains_key(id), !deleted_by_table, "id {}", id);
        }
        for (id, (bv, _)) in &b {
            if let (Some((ov, obytes)), Some((tv, _))) = (o.get(id), t.get(id)) {
                if ov == bv && tv == bv {
                    prop_assert_eq!(&m[id].1, obytes, "unchanged record {} is byte-identical to ours", id);
                }
            }
        }
    }

    #[test]
    fn merging_the_same_change_on_both_sides_gives_it_back_byte_for_byte((base, ours, _t) in triple()) {
        let merged = merge(&base, &ours, &ours, &MergeOptions::default()).expect("merge");
        prop_assert_eq!(merged.to_vec(), ours);
    }

    #[test]
    fn swapping_the_sides_gives_the_same_records((base, ours, theirs) in triple()) {
        let a = merge(&base, &ours, &theirs, &MergeOptions::default()).expect("merge");
        let b = merge(&base, &theirs, &ours, &MergeOptions::default()).expect("merge");
        let (ma, mb) = (by_id(&a.to_vec()), by_id(&b.to_vec()));
        prop_assert_eq!(ma.keys().collect::<Vec<_>>(), mb.keys().collect::<Vec<_>>());
        for (id, (va, _)) in &ma {
            prop_assert_eq!(normalised(va), normalised(&mb[id].0), "record {}", id);
        }
    }

    #[test]
    fn no_two_comments_in_the_merged_file_share_an_id((base, ours, theirs) in triple()) {
        let merged = merge(&base, &ours, &theirs, &MergeOptions::default()).expect("merge");
        let mut seen = BTreeMap::new();
        for (id, (record, _)) in by_id(&merged.to_vec()) {
            for comment in record["comments"].as_array().into_iter().flatten() {
                let number = comment["id"].as_i64().expect("numeric comment id");
                if let Some(other) = seen.insert(number, (id.clone(), comment.clone())) {
                    prop_assert!(false, "comment id {} on {} and {}: {} / {}", number, other.0, id, other.1, comment);
                }
            }
        }
    }

    #[test]
    fn every_policy_produces_parseable_output((base, ours, theirs) in triple(), p in 0usize..3) {
        let policy = [ConflictPolicy::Newest, ConflictPolicy::Ours, ConflictPolicy::Theirs][p];
        let merged = merge(&base, &ours, &theirs, &MergeOptions { policy, ..MergeOptions::default() }).expect("merge");
        by_id(&merged.to_vec());
    }

    /// Duplicate ids with a line that is not UTF-8 (a latin-1 editor, a truncated write): the set
    /// merge of that id needs the line, so the merge refuses (the driver then line-merges and
    /// says which line), unless all three inputs hold the bad line as it is.
    #[test]
    fn a_duplicate_id_with_a_non_utf8_line_is_never_merged_silently((base, ours, theirs) in triple(), pick in any::<u8>(),
        everywhere in any::<bool>()) {
        let text = String::from_utf8(ours.clone()).expect("generated as UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        prop_assume!(!lines.is_empty());
        let victim = lines[pick as usize % lines.len()];
        let id = victim.split("\"id\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("bd-00").to_owned();
        let mut bad = format!("{{\"id\":\"{id}\",\"title\":\"caf").into_bytes();
        bad.extend_from_slice(b"\xe9\"}\n");
        let with_bad = |content: &[u8]| [content, &bad[..]].concat();
        let (b, o, t) = if everywhere { (with_bad(&base), with_bad(&ours), with_bad(&theirs)) } else { (base.clone(), with_bad(&ours),
            theirs.clone()) };
        match merge(&b, &o, &t, &MergeOptions::default()) {
            // Theirs changed nothing: the result is ours as it is, and no line of it was needed.
            Ok(merged) if t == b => prop_assert_eq!(merged.to_vec(), o),
            Ok(merged) => {
                prop_assert!(everywhere, "merged a duplicate id with a non-UTF-8 line silently");
                prop_assert!(merged.to_vec().windows(bad.len()).any(|w| w == &bad[..]), "the bad line, the same in all three, is kept");
            }
            Err(u) => {
                prop_assert!(!everywhere || u.problem != beads_git::record::LineProblem::InvalidUtf8 ||
                    u.input != beads_git::merge::Input::Ours, "{}", u);
                prop_assert_eq!(u.problem, beads_git::record::LineProblem::InvalidUtf8);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(base in proptest::collection::vec(any::<u8>(), 0..200), ours in proptest::collection::vec(any::<u8>(),
        0..200), theirs in "[{}\\[\\]\":,a-z0-9 \n]{0,200}") {
        let _ = merge(&base, &ours, theirs.as_bytes(), &MergeOptions::default());
    }
}

/// A fixed merge clock for the properties (symmetry and idempotence hold for a fixed clock).
fn fixed_clock() -> MergeOptions {
    MergeOptions { now: beads_git::timestamp::parse("2025-11-02T12:00:00Z"), ..MergeOptions::default() }
}

/// Two sides that each add children to one epic, numbered from the side's own counter (as br and
/// bd do), so both create `bd-ep.1`, ...; each side also adds a record that a `blocks` dependency
/// ties to its own first child.
pub(crate) fn concurrent_children() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, Vec<u8>, usize, usize)> {
    (0usize..3, 0usize..4, 0usize..4, any::<u8>(), any::<u8>()).prop_map(|(existing, n_ours, n_theirs, ours_clock, theirs_clock)| {
        let epic = json!({"id": "bd-ep", "title": "Epic", "created_at": STAMPS[0], "updated_at": STAMPS[0]});
        let mut base = vec![epic];
        for k in 1..=existing {
            base.push(json!({"id": format!("bd-ep.{k}"), "title": format!("old child {k}"), "created_at": STAMPS[0],
                "updated_at": STAMPS[0]}));
        }
        let side = |tag: &str, n: usize, clock: u8| -> Vec<Value> {
            let mut out = base.clone();
            for k in 0..n {
                let child = format!("bd-ep.{}", existing + 1 + k);
                // Creation times differ between the sides (seconds from each side's own clock).
                let created = format!("2025-11-02T{:02}:{:02}:{:02}Z", 10 + k, clock % 60, if tag == "ours" { 1 } else { 2 });
                out.push(json!({"id": child, "title": format!("{tag} child {k}"), "created_at": created, "updated_at": created,
                    "dependencies": [{"issue_id": child, "depends_on_id": "bd-ep", "type": "parent-child"}],
                    "comments": [{"id": 10 + k, "issue_id": child, "author": tag, "text": format!("{tag} note {k}"),
                        "created_at": created}]}));
            }
            if n > 0 {
                let referrer = format!("bd-ref-{tag}");
                out.push(json!({"id": referrer, "title": format!("{tag} referrer"), "created_at": STAMPS[1], "updated_at": STAMPS[1],
                    "dependencies": [{"issue_id": referrer, "depends_on_id": format!("bd-ep.{}", existing + 1), "type": "blocks"}]}));
            }
            out.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
            out
        };
        (render(&base), render(&side("ours", n_ours, ours_clock)), render(&side("theirs", n_theirs, theirs_clock)), n_ours, n_theirs)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// No merge writes two different issues' content under one id from an add/add with different
    /// `created_at`: every child either side created is in the result, under its own id, with its
    /// comment, and each side's `blocks` dependency still points at that side's child.
    #[test]
    fn concurrent_children_under_one_id_are_all_kept((base, ours, theirs, n_ours, n_theirs) in concurrent_children()) {
        let merged = merge(&base, &ours, &theirs, &fixed_clock()).expect("merge").to_vec();
        let text = String::from_utf8(merged.clone()).expect("utf8");
        let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("parses")).collect();
        let ids: BTreeSet<&str> = records.iter().filter_map(|r| r["id"].as_str()).collect();
        prop_assert_eq!(ids.len(), records.len(), "an id written twice:\n{}", text);
        for (tag, n) in [("ours", n_ours), ("theirs", n_theirs)] {
            for k in 0..n {
                let title = format!("{tag} child {k}");
                let found: Vec<&Value> = records.iter().filter(|r| r["title"] == json!(title)).collect();
                prop_assert_eq!(found.len(), 1, "{} is written {} times:\n{}", title, found.len(), text);
                let record = found[0];
                let id = record["id"].as_str().expect("string id");
                prop_assert!(id.starts_with("bd-ep."), "{} moved out of the epic: {}", title, id);
                prop_assert_eq!(&record["comments"][0]["issue_id"], &json!(id));
                prop_assert_eq!(&record["comments"][0]["text"], &json!(format!("{tag} note {k}")));
                prop_assert_eq!(&record["dependencies"][0]["issue_id"], &json!(id));
            }
            if n > 0 {
                let referrer = records.iter().find(|r| r["id"] == json!(format!("bd-ref-{tag}"))).expect("referrer kept");
                let target = referrer["dependencies"][0]["depends_on_id"].as_str().expect("target");
                let pointed = records.iter().find(|r| r["id"] == json!(target)).expect("target exists");
                prop_assert_eq!(&pointed["title"], &json!(format!("{tag} child 0")), "{}'s dependency points at another issue", tag);
            }
        }
        // Symmetric and idempotent for a fixed clock.
        let swapped = merge(&base, &theirs, &ours, &fixed_clock()).expect("merge").to_vec();
        let (a, b) = (by_id(&merged), by_id(&swapped));
        prop_assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
        for (id, (va, _)) in &a {
            prop_assert_eq!(normalised(va), normalised(&b[id].0), "record {}", id);
        }
        let again = merge(&base, &ours, &theirs, &fixed_clock()).expect("merge").to_vec();
        prop_assert_eq!(again, merged);
    }
}

/// bd 1.0.5's derived fields, computed as the test understands them: `blocks` dependencies out
/// and in, and comments.
fn with_counts(records: &mut [Value]) {
    let mut dependents: BTreeMap<String, i64> = BTreeMap::new();
    for r in records.iter() {
        for d in r["dependencies"].as_array().into_iter().flatten() {
            if d["type"] == json!("blocks") {
                *dependents.entry(d["depends_on_id"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
            }
        }
    }
    for r in records.iter_mut() {
        let out = r["dependencies"].as_array().map_or(0, |a| a.iter().filter(|d| d["type"] == json!("blocks")).count());
        let comments = r["comments"].as_array().map_or(0, Vec::len);
        let id = r["id"].as_str().unwrap_or_default().to_owned();
        r["dependency_count"] = json!(out);
        r["dependent_count"] = json!(dependents.get(&id).copied().unwrap_or(0));
        r["comment_count"] = json!(comments);
    }
}

/// A file of `n` records with counts, and two sides that add and remove `blocks` dependencies
/// and add comments (each side's file has true counts, as bd writes them).
pub(crate) fn counted_triple() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, Vec<u8>)> {
    let edits = || proptest::collection::vec((0usize..6, 0usize..6, 0u8..3), 0..5);
    (edits(), edits()).prop_map(|(ours, theirs)| {
        let base: Vec<Value> = (0..6)
            .map(|n| {
                let id = format!("bd-{n}");
                let deps = if n == 0 { json!([{"issue_id": id, "depends_on_id": "bd-1", "type": "blocks"}]) } else { json!([]) };
                json!({"id": id, "updated_at": STAMPS[0], "dependencies": deps, "comments": []})
            })
            .collect();
        let side = |edits: &[(usize, usize, u8)], tag: &str| -> Vec<Value> {
            let mut records = base.clone();
            for (k, (from, to, what)) in edits.iter().enumerate() {
                let id = format!("bd-{from}");
                let r = &mut records[*from];
                r["updated_at"] = json!(STAMPS[1 + k % 3]);
                match what {
                    0 if from != to => {
                        let dep = json!({"issue_id": id, "depends_on_id": format!("bd-{to}"), "type": "blocks"});
                        let deps = r["dependencies"].as_array_mut().expect("array");
                        if !deps.contains(&dep) {
                            deps.push(dep);
                        }
                    }
                    1 => r["dependencies"] = json!([]),
                    _ => {
                        let c = json!({"id": 100 + k, "issue_id": id, "author": tag, "text": format!("{tag} {k}"),
                            "created_at": STAMPS[k % 5]});
                        r["comments"].as_array_mut().expect("array").push(c);
                    }
                }
            }
            with_counts(&mut records);
            records
        };
        let mut b = base.clone();
        with_counts(&mut b);
        (render(&b), render(&side(&ours, "ours")), render(&side(&theirs, "theirs")))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Every derived count the merge writes equals the one recomputed from the merged file.
    #[test]
    fn derived_counts_always_equal_the_recomputed_ones((base, ours, theirs) in counted_triple()) {
        let merged = merge(&base, &ours, &theirs, &fixed_clock()).expect("merge").to_vec();
        let written: Vec<Value> = by_id(&merged).into_values().map(|(v, _)| v).collect();
        let mut recomputed = written.clone();
        with_counts(&mut recomputed);
        for (w, r) in written.iter().zip(&recomputed) {
            for key in ["dependency_count", "dependent_count", "comment_count"] {
                prop_assert_eq!(&w[key], &r[key], "{} of {}", key, w["id"]);
            }
        }
    }
}

/// The shapes a randomised corpus found short of the merge rules, on top of a [`triple`]: `shape`
/// bit 0 repeats one of ours' lines byte for byte (a repeat that collapses, beside records theirs
/// may have re-formatted); bit 1 gives one base id a second line on each side, each copy holding
/// the first line's comment id (duplicate ids that share comment ids).
pub(crate) fn corner_triple() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, Vec<u8>)> {
    (triple(), any::<u8>(), any::<u8>(), 1u8..4).prop_map(|((base, ours, theirs), pick, pick_id, shape)| {
        let lines = |x: &[u8]| -> Vec<String> { String::from_utf8_lossy(x).lines().map(str::to_owned).collect() };
        let join = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes();
        let (base_lines, mut o, mut t) = (lines(&base), lines(&ours), lines(&theirs));
        if shape & 1 == 1 && !o.is_empty() {
            let i = pick as usize % o.len();
            let repeat = o[i].clone();
            o.insert(i + 1, repeat);
        }
        if shape & 2 == 2 {
            let n = pick_id as usize % base_lines.len().max(1);
            for (side, tag) in [(&mut o, "ours"), (&mut t, "theirs")] {
                let mut copy = base_record(n);
                copy["title"] = json!(format!("copy from {tag}"));
                copy["comments"][0]["text"] = json!(format!("{tag}'s copy"));
                side.push(copy.to_string());
            }
        }
        (base, join(&o), join(&t))
    })
}

/// A record without its comments' ids and its `updated_at` (what renumbering changes).
fn without_comment_ids(v: &Value) -> Value {
    let mut v = v.clone();
    for c in v.get_mut("comments").and_then(Value::as_array_mut).into_iter().flatten() {
        c.as_object_mut().map(|c| c.remove("id"));
    }
    v.as_object_mut().map(|o| o.remove("updated_at"));
    v
}

/// Each line of a file, parsed, with its bytes.
fn parsed_lines(bytes: &[u8]) -> Vec<(String, Value, String)> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("every line parses");
            (v["id"].as_str().expect("string id").to_owned(), v, l.to_owned())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// With a fixed clock the merge is a function of its inputs (twice: the same bytes) and
    /// symmetric (swapped sides: the same records); the lines of an id on several lines stay
    /// exact; a record equal to one of ours' is written in ours' bytes.
    #[test]
    fn corner_shapes_merge_exactly_and_symmetrically((base, ours, theirs) in corner_triple()) {
        let merged = merge(&base, &ours, &theirs, &fixed_clock()).expect("merge").to_vec();
        let again = merge(&base, &ours, &theirs, &fixed_clock()).expect("merge").to_vec();
        prop_assert_eq!(&again, &merged, "two runs with one fixed clock");
        let swapped = merge(&base, &theirs, &ours, &fixed_clock()).expect("merge").to_vec();
        let values = |bytes: &[u8]| -> BTreeSet<(String, String)> {
            parsed_lines(bytes).into_iter().map(|(id, v, _)| (id, normalised(&v).to_string())).collect()
        };
        prop_assert_eq!(values(&merged), values(&swapped), "swapping the sides changed the records");
        let (b, o, t) = (parsed_lines(&base), parsed_lines(&ours), parsed_lines(&theirs));
        let count = |lines: &[(String, Value, String)], id: &str| lines.iter().filter(|(i, _, _)| i == id).count();
        for (id, value, bytes) in parsed_lines(&merged) {
            // The lines of a duplicated id are written as they were; only a comment id another
            // record also holds may be renumbered (a collision the trackers see), and then the
            // line is an input line but for its comment ids, stamped.
            if [&b, &o, &t].iter().any(|f| count(f, &id) > 1) {
                let exact = [&b, &o, &t].iter().any(|f| f.iter().any(|(_, _, l)| *l == bytes));
                let renumbered = [&b, &o, &t].iter().any(|f| f.iter().any(|(i, v, _)| *i == id &&
                    without_comment_ids(v) == without_comment_ids(&value)));
                prop_assert!(exact || renumbered, "{} line in no input: {}", id, bytes);
            }
            let ours_equal: Vec<&String> = o.iter().filter(|(i, v, _)| *i == id && *v == value).map(|(_, _, l)| l).collect();
            if !ours_equal.is_empty() {
                prop_assert!(ours_equal.contains(&&bytes), "{} equals ours' record but is written as {}", id, bytes);
            }
        }
    }
}

/// A heartbeat stamp (volatile, docs/trackers.md) in one of several offsets, or none.
fn volatile_stamp() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        4 => (0u32..6, 0u32..60, any::<bool>()).prop_map(|(h, m, utc)| Some(if utc {
            format!("2026-03-02T{:02}:{m:02}:00Z", 18 + h)
        } else {
            format!("2026-03-02T{:02}:{m:02}:00-08:00", 10 + h)
        })),
    ]
}

/// A record line whose volatile keys come last, so "the same except those fields" is "the same
/// bytes before `,\"heartbeat_at\"`".
fn volatile_line(n: usize, heartbeat: Option<&String>, lease: Option<&String>) -> String {
    let mut line = format!(
        r#"{{"id":"bd-{n:02}","title":"Task <{n}>","status":"in_progress","assignee":"agent-{n}","updated_at":"{}""#,
        STAMPS[n % 2]
    );
    for (key, value) in [("heartbeat_at", heartbeat), ("lease_expires_at", lease)] {
        if let Some(v) = value {
            line.push_str(&format!(r#","{key}":"{v}""#));
        }
    }
    line.push('}');
    line
}

/// The volatile rule as the test understands it: a one-sided change wins; when both moved, the
/// later instant, and a value over an absent key.
fn expected_volatile(b: Option<&String>, o: Option<&String>, t: Option<&String>) -> Option<String> {
    if o == t || t == b {
        return o.cloned();
    }
    if o == b {
        return t.cloned();
    }
    match (o, t) {
        (Some(x), Some(y)) => Some(if beads_git::timestamp::compare(x, y).is_ge() { x.clone() } else { y.clone() }),
        _ => o.or(t).cloned(),
    }
}

type VolatileTriple = Vec<[(Option<String>, Option<String>); 3]>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Two sides that differ only in volatile fields (docs/trackers.md): the result is ours byte for byte
    /// except those fields, which hold the later instant; no report, no conflict (even under
    /// markers), no new `updated_at` stamp; and swapping the sides changes nothing.
    #[test]
    fn sides_that_differ_only_in_volatile_fields_merge_to_one_side(
        records in proptest::collection::vec(proptest::array::uniform3((volatile_stamp(), volatile_stamp())), 1..8),
    ) {
        let records: VolatileTriple = records;
        let file = |side: usize| -> Vec<u8> {
            records.iter().enumerate().flat_map(|(n, r)| (volatile_line(n, r[side].0.as_ref(),
                r[side].1.as_ref()) + "\n").into_bytes()).collect()
        };
        let (b, o, t) = (file(0), file(1), file(2));
        let markers = MergeOptions { policy: ConflictPolicy::Markers, ..fixed_clock() };
        let merged = merge(&b, &o, &t, &markers).expect("merge");
        prop_assert_eq!(merged.conflicts, 0);
        prop_assert!(merged.reports.is_empty(), "volatile fields were reported: {:?}", merged.reports);
        let out = String::from_utf8(merged.to_vec()).expect("utf8");
        let ours_text = String::from_utf8(o.clone()).expect("utf8");
        prop_assert_eq!(out.lines().count(), records.len());
        for ((n, r), (line, ours_line)) in records.iter().enumerate().zip(out.lines().zip(ours_text.lines())) {
            let cut = |l: &str| [l.find(r#","heartbeat_at""#),
                l.find(r#","lease_expires_at""#)].into_iter().flatten().min().unwrap_or(l.len() - 1);
            prop_assert_eq!(&line[..cut(line)], &ours_line[..cut(ours_line)], "record {} differs beyond its volatile fields", n);
            let value: Value = serde_json::from_str(line).expect("parses");
            let want_heartbeat = expected_volatile(r[0].0.as_ref(), r[1].0.as_ref(), r[2].0.as_ref());
            let want_lease = expected_volatile(r[0].1.as_ref(), r[1].1.as_ref(), r[2].1.as_ref());
            prop_assert_eq!(value.get("heartbeat_at").and_then(Value::as_str), want_heartbeat.as_deref(), "heartbeat of record {}", n);
            prop_assert_eq!(value.get("lease_expires_at").and_then(Value::as_str), want_lease.as_deref(), "lease of record {}", n);
        }
        let swapped = merge(&b, &t, &o, &markers).expect("merge").to_vec();
        let (x, y) = (by_id(&merged.to_vec()), by_id(&swapped));
        for (id, (vx, _)) in &x {
            prop_assert_eq!(vx, &y[id].0, "record {} depends on the order of the sides", id);
        }
    }
}
