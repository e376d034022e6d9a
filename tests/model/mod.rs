//! A reference model of the merge, written from docs/merge-rules.md alone and kept deliberately
//! plain: whole records as `serde_json` values, one pass, no byte runs, no shortcuts. The
//! differential test (`tests/integration/merge_model.rs`) runs it beside the engine on generated
//! triples and asks for the same bytes.
//!
//! It covers the rules for the records that test generates, stated here so a reader can check
//! each against the doc: issue records matched by `id` ("The merge rules, in plain words"); a
//! record one side changed taken from that side; adds, deletes, delete against change, adds on
//! both sides (identical: once; different: merged against an empty base); a record both sides
//! changed merged key by key (one side changed a key: that side's value, its removal included);
//! keys both changed settled by kind: `updated_at` the later instant, arrays of strings by set
//! merge (ours' order then theirs' additions, sorted when ours was sorted), `status` with
//! `closed_at` as one group, the rest (text on one line, numbers) by the `newest` policy (the
//! side whose record has the later `updated_at`, a tie to the record greater as canonical JSON);
//! a record equal to neither side stamped one tick after the later side's `updated_at`, never
//! before the merge's clock ("Timestamps of merged records"); the output in ours' order (sorted
//! by id), keys in the writer's struct order, every record nobody merged written as its side
//! wrote it. What it leaves out (duplicate ids, comments and their renumbering, dependencies and
//! derived counts, volatile keys, two issues created under one id, multi-line text, the line
//! fallback) the generator never writes.

use std::collections::BTreeMap;

use serde_json::Value;

/// How often each rule decided something, for the test that checks the generator reaches them.
#[derive(Debug, Default)]
pub struct Seen {
    /// Records both sides changed, merged key by key.
    pub field_merges: usize,
    /// Merged records equal to neither side, stamped.
    pub stamped: usize,
    /// Keys both sides changed, settled by the policy.
    pub policy: usize,
    /// String arrays both sides changed, joined as sets.
    pub set_merges: usize,
    /// `status` groups both sides changed.
    pub status_groups: usize,
    /// A record deleted on one side and changed on the other.
    pub delete_against_change: usize,
    /// An id both sides added, differently.
    pub added_on_both: usize,
    /// Multi-line strings both sides changed, merged line by line.
    pub text_merges: usize,
    /// Comment lists both sides changed, joined as sets by identity.
    pub comment_merges: usize,
    /// Comments given a new id (two comments shared one).
    pub renumbered: usize,
    /// Dependency lists both sides changed, joined as sets by `(depends_on_id, type)`.
    pub dependency_merges: usize,
    /// Records whose derived counts the merged file changed.
    pub recounted: usize,
    /// Files whose result took its order from theirs (ours only moved lines) or from an unsorted side.
    pub reordered: usize,
}

/// A comment's identity: the whole comment but its machine-local numeric id.
fn identity(comment: &Value) -> Value {
    let mut c = comment.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("id");
    }
    c
}

/// Comments compared as br sorts them: `created_at`, `author`, `text`, `id`.
fn br_comment_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let key = |c: &Value| {
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        (s("created_at"), s("author"), s("text"), c.get("id").and_then(Value::as_i64))
    };
    key(a).cmp(&key(b))
}

/// The side whose list shows the order a merged array keeps: ours when it has two elements or
/// more, else theirs when it has, else none (the preferred writer's sort).
fn witness<'v>(ours: &'v [Value], theirs: &'v [Value]) -> Option<&'v [Value]> {
    if ours.len() >= 2 {
        Some(ours)
    } else if theirs.len() >= 2 {
        Some(theirs)
    } else {
        None
    }
}

/// Set merge of comment lists by identity: removals stick, both sides' additions kept, ours'
/// order then theirs' additions; sorted as br sorts when the witness (ours with two comments or
/// more, else theirs, else none: br's) follows that sort.
fn comment_merge(base: &[Value], ours: &[Value], theirs: &[Value]) -> Value {
    let ids = |v: &[Value]| -> Vec<Value> { v.iter().map(identity).collect() };
    let (b, o, t) = (ids(base), ids(ours), ids(theirs));
    let mut out: Vec<Value> = ours.iter().zip(&o).filter(|(_, i)| t.contains(i) || !b.contains(i)).map(|(c, _)| c.clone()).collect();
    out.extend(theirs.iter().zip(&t).filter(|(_, i)| !o.contains(i) && !b.contains(i)).map(|(c, _)| c.clone()));
    let witness = witness(ours, theirs);
    if witness.is_none_or(|w| w.windows(2).all(|p| br_comment_order(&p[0], &p[1]) != std::cmp::Ordering::Greater)) {
        out.sort_by(br_comment_order);
    }
    Value::Array(out)
}

/// The second rule: every comment still sharing an id with another, different comment anywhere in
/// the file gets a new one: per shared id (ascending), the earliest comment (by `created_at`,
/// then content, then record) keeps it and each later one takes the next id above `next`.
/// Returns the records it changed.
fn renumber(records: &mut BTreeMap<String, BTreeMap<String, Value>>, next: &mut i64, seen: &mut Seen) -> Vec<String> {
    // (id, created_at, content, record, position in its list)
    let mut all: Vec<(i64, String, String, String, usize)> = Vec::new();
    for (rid, r) in records.iter() {
        for (k, c) in r.get("comments").and_then(Value::as_array).into_iter().flatten().enumerate() {
            if let Some(n) = c.get("id").and_then(Value::as_i64) {
                let at = c.get("created_at").and_then(Value::as_str).unwrap_or("").to_owned();
                all.push((n, at, identity(c).to_string(), rid.clone(), k));
            }
        }
    }
    all.sort();
    let mut changed = Vec::new();
    for group in all.chunk_by(|a, b| a.0 == b.0) {
        for (_, _, _, rid, k) in group.iter().skip(1) {
            *next += 1;
            seen.renumbered += 1;
            if let Some(Value::Array(list)) = records.get_mut(rid).and_then(|r| r.get_mut("comments")) {
                list[*k]["id"] = Value::from(*next);
            }
            changed.push(rid.clone());
        }
    }
    changed
}

/// The comments a side added: `(id, created_at, identity, record)` of each comment whose identity
/// the base record of its issue does not hold.
fn added_comments(side: &[(String, Record)], base: &BTreeMap<String, Record>) -> Vec<(i64, String, String, String)> {
    let comments = |r: &Record| r.value.get("comments").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (rid, r) in side {
        let before: Vec<Value> = base.get(rid).map(|b| comments(b).iter().map(identity).collect()).unwrap_or_default();
        for c in comments(r) {
            let Some(n) = c.get("id").and_then(Value::as_i64) else { continue };
            if !before.contains(&identity(&c)) {
                let at = c.get("created_at").and_then(Value::as_str).unwrap_or("").to_owned();
                out.push((n, at, identity(&c).to_string(), rid.clone()));
            }
        }
    }
    out
}

/// The first rule for comment ids: two different comments the two sides added never share one.
/// Per id both sides' additions hold (ascending), the earliest (by `created_at`, then content)
/// keeps it and each later one takes the next id above `next`. Returns the records changed.
fn renumber_added(
    records: &mut BTreeMap<String, BTreeMap<String, Value>>,
    ours: &[(i64, String, String, String)],
    theirs: &[(i64, String, String, String)],
    next: &mut i64,
    seen: &mut Seen,
) -> Vec<String> {
    let mut changed = Vec::new();
    let ids: std::collections::BTreeSet<i64> = ours.iter().map(|c| c.0).filter(|n| theirs.iter().any(|t| t.0 == *n)).collect();
    for n in ids {
        let mut group: Vec<&(i64, String, String, String)> = ours.iter().chain(theirs).filter(|c| c.0 == n).collect();
        group.sort_by(|a, b| (&a.1, &a.2, &a.3).cmp(&(&b.1, &b.2, &b.3)));
        group.dedup_by(|a, b| a.2 == b.2 && a.3 == b.3);
        for (_, _, ident, rid) in group.into_iter().skip(1) {
            *next += 1;
            seen.renumbered += 1;
            if let Some(Value::Array(list)) = records.get_mut(rid).and_then(|r| r.get_mut("comments")) {
                for c in list
                    .iter_mut()
                    .filter(|c| c.get("id").and_then(Value::as_i64) == Some(n) && identity(c).to_string().as_str() == ident.as_str())
                {
                    c["id"] = Value::from(*next);
                }
            }
            changed.push(rid.clone());
        }
    }
    changed
}

/// The highest numeric comment id in a file.
fn highest_comment(records: &[(String, Record)]) -> i64 {
    records
        .iter()
        .flat_map(|(_, r)| r.value.get("comments").and_then(Value::as_array).cloned().unwrap_or_default())
        .filter_map(|c| c.get("id").and_then(Value::as_i64))
        .max()
        .unwrap_or(0)
}

/// A dependency's identity: `(depends_on_id, type)`.
fn dependency_identity(d: &Value) -> (String, String) {
    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    (s("depends_on_id"), s("type"))
}

/// Set merge of dependency lists by identity, sorted as br sorts them (`depends_on_id`, `type`,
/// `created_at`) when the witness follows that sort, else by creation when it follows that, else
/// ours' order then theirs' additions.
fn dependency_merge(base: &[Value], ours: &[Value], theirs: &[Value]) -> Value {
    let ids = |v: &[Value]| -> Vec<(String, String)> { v.iter().map(dependency_identity).collect() };
    let (b, o, t) = (ids(base), ids(ours), ids(theirs));
    let mut out: Vec<Value> = ours.iter().zip(&o).filter(|(_, i)| t.contains(i) || !b.contains(i)).map(|(d, _)| d.clone()).collect();
    out.extend(theirs.iter().zip(&t).filter(|(_, i)| !o.contains(i) && !b.contains(i)).map(|(d, _)| d.clone()));
    fn br(a: &Value, z: &Value) -> std::cmp::Ordering {
        let key = |d: &Value| {
            let (on, kind) = dependency_identity(d);
            (on, kind, d.get("created_at").and_then(Value::as_str).unwrap_or("").to_owned())
        };
        key(a).cmp(&key(z))
    }
    fn created(a: &Value, z: &Value) -> std::cmp::Ordering {
        a.get("created_at").and_then(Value::as_str).cmp(&z.get("created_at").and_then(Value::as_str))
    }
    let orders: [fn(&Value, &Value) -> std::cmp::Ordering; 2] = [br, created];
    let witness = witness(ours, theirs);
    let chosen = match witness {
        None => Some(orders[0]),
        Some(w) => orders.into_iter().find(|order| w.windows(2).all(|p| order(&p[0], &p[1]) != std::cmp::Ordering::Greater)),
    };
    if let Some(order) = chosen {
        out.sort_by(order);
    }
    Value::Array(out)
}

/// Recomputes the counts of every record that carries them, from the merged records; returns
/// the records whose counts changed.
fn recount(records: &mut BTreeMap<String, BTreeMap<String, Value>>) -> Vec<String> {
    let mut dependents: BTreeMap<String, i64> = BTreeMap::new();
    for r in records.values() {
        for d in r.get("dependencies").and_then(Value::as_array).into_iter().flatten() {
            if d.get("type").and_then(Value::as_str) == Some("blocks") {
                *dependents.entry(d.get("depends_on_id").and_then(Value::as_str).unwrap_or("").to_owned()).or_default() += 1;
            }
        }
    }
    let mut changed = Vec::new();
    for (id, r) in records.iter_mut() {
        if !COUNTS.iter().any(|k| r.contains_key(*k)) {
            continue;
        }
        let blocks = r.get("dependencies").and_then(Value::as_array).map_or(0, |a| a.iter().filter(|d| d["type"] == "blocks").count());
        let comments = r.get("comments").and_then(Value::as_array).map_or(0, Vec::len);
        let counts = [blocks as i64, dependents.get(id).copied().unwrap_or(0), comments as i64];
        let before = r.clone();
        for (k, n) in COUNTS.iter().zip(counts) {
            if r.contains_key(*k) {
                r.insert((*k).to_owned(), Value::from(n));
            }
        }
        if *r != before {
            changed.push(id.clone());
        }
    }
    changed
}

/// A line of text with its line break.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The edits that turn `base` into `side`, as `(start, end, lines)`: base's lines `start..end`
/// replaced by `lines`, from a longest common subsequence (the generator's lines are distinct,
/// so there is one).
fn hunks<'a>(base: &[&'a str], side: &[&'a str]) -> Vec<(usize, usize, Vec<&'a str>)> {
    let (n, m) = (base.len(), side.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if base[i] == side[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    let mut open: Option<(usize, Vec<&str>)> = None;
    while i < n || j < m {
        if i < n && j < m && base[i] == side[j] {
            if let Some((start, lines)) = open.take() {
                out.push((start, i, lines));
            }
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            open.get_or_insert((i, Vec::new())).1.push(side[j]);
            j += 1;
        } else {
            open.get_or_insert((i, Vec::new()));
            i += 1;
        }
    }
    if let Some((start, lines)) = open {
        out.push((start, n, lines));
    }
    out
}

/// The three-way line merge: hunks of the two sides that overlap or touch form a group; a group
/// one side alone changed takes that side's text, one both changed identically takes it, and
/// any other is a conflict (`None`).
fn merge_text(base: &str, ours: &str, theirs: &str) -> Option<String> {
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let mut all: Vec<(usize, usize, bool)> =
        hunks(&b, &o).iter().map(|h| (h.0, h.1, true)).chain(hunks(&b, &t).iter().map(|h| (h.0, h.1, false))).collect();
    all.sort_unstable();
    // Groups of base ranges: hunks that overlap or touch join one.
    let mut groups: Vec<(usize, usize, bool, bool)> = Vec::new();
    for (start, end, is_ours) in all {
        match groups.last_mut() {
            Some(g) if start <= g.1 => {
                g.1 = g.1.max(end);
                g.2 |= is_ours;
                g.3 |= !is_ours;
            }
            _ => groups.push((start, end, is_ours, !is_ours)),
        }
    }
    // A side's text for base lines `start..end`, with its hunks there applied.
    let text_of = |side: &[&str], start: usize, end: usize| -> String {
        let hs = hunks(&b, side);
        let mut out = String::new();
        let mut at = start;
        for (hs_start, hs_end, lines) in hs.iter().filter(|h| h.0 >= start && h.1 <= end) {
            out.extend(b[at..*hs_start].iter().copied());
            out.extend(lines.iter().copied());
            at = *hs_end;
        }
        out.extend(b[at..end].iter().copied());
        out
    };
    let mut out = String::new();
    let mut at = 0;
    for (start, end, by_ours, by_theirs) in groups {
        out.extend(b[at..start].iter().copied());
        let (ot, tt) = (text_of(&o, start, end), text_of(&t, start, end));
        match (by_ours, by_theirs) {
            (true, false) => out.push_str(&ot),
            (false, true) => out.push_str(&tt),
            _ if ot == tt => out.push_str(&ot),
            _ => return None,
        }
        at = end;
    }
    out.extend(b[at..].iter().copied());
    Some(out)
}

/// One record: its keys (as `serde_json` sorts them) and the line a side wrote.
#[derive(Debug, Clone)]
struct Record {
    value: BTreeMap<String, Value>,
    line: String,
}

/// Go bd's struct order for the keys the generator writes (docs/merge-rules.md: a key new from
/// theirs goes where the writer puts it).
/// Keys no Go struct names (the volatile ones) go at the end.
pub const KEY_ORDER: [&str; 16] = [
    "id",
    "title",
    "description",
    "status",
    "priority",
    "created_at",
    "updated_at",
    "closed_at",
    "labels",
    "dependencies",
    "comments",
    "dependency_count",
    "dependent_count",
    "comment_count",
    "heartbeat_at",
    "lease_expires_at",
];

/// The counts Go bd 1.0.5 writes after an issue's own keys: nobody edits them, every record that
/// carries them gets them from the merged file, and they are no reason for a stamp.
const COUNTS: [&str; 3] = ["dependency_count", "dependent_count", "comment_count"];

/// Keys that change on every heartbeat: the later instant, silently, and no stamp by themselves.
const VOLATILE: [&str; 2] = ["heartbeat_at", "lease_expires_at"];

fn records(file: &str) -> Vec<(String, Record)> {
    file.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let value: BTreeMap<String, Value> = serde_json::from_str(line).expect("the generator writes JSON objects");
            let id = value["id"].as_str().expect("a string id").to_owned();
            (id, Record { value, line: line.to_owned() })
        })
        .collect()
}

/// A record written as the generator's writer writes it: compact, keys in [`KEY_ORDER`].
pub fn render(value: &BTreeMap<String, Value>) -> String {
    let fields: Vec<String> =
        KEY_ORDER.iter().filter_map(|k| value.get(*k).map(|v| format!("{}:{}", Value::String((*k).to_owned()), v))).collect();
    format!("{{{}}}", fields.join(","))
}

/// `2025-11-01T10:00:07Z` as seconds since the day's start of the generator's one day.
fn instant(stamp: &Value) -> u32 {
    let s = stamp.as_str().expect("a stamp");
    let (h, m, sec) = (&s[11..13], &s[14..16], &s[17..19]);
    h.parse::<u32>().expect("hours") * 3600 + m.parse::<u32>().expect("minutes") * 60 + sec.parse::<u32>().expect("seconds")
}

fn stamp_at(seconds: u32) -> Value {
    Value::String(format!("2025-11-01T{:02}:{:02}:{:02}Z", seconds / 3600, seconds / 60 % 60, seconds % 60))
}

/// The side the `newest` policy takes: the later `updated_at`, a tie to the record greater as
/// canonical JSON (keys sorted, compact).
fn newest_is_ours(ours: &BTreeMap<String, Value>, theirs: &BTreeMap<String, Value>) -> bool {
    let at = |r: &BTreeMap<String, Value>| r.get("updated_at").map_or(0, instant);
    match at(ours).cmp(&at(theirs)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            let canonical = |r: &BTreeMap<String, Value>| serde_json::to_string(r).expect("JSON");
            canonical(ours) >= canonical(theirs)
        }
    }
}

/// Set merge of two string arrays against the base's: removals stick, additions of both kept,
/// ours' order then theirs' additions, sorted when ours was sorted (theirs, when ours has fewer
/// than two elements).
fn set_merge(base: Option<&Value>, ours: &Value, theirs: &Value) -> Value {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    };
    let (b, o, t) = (strings(base), strings(Some(ours)), strings(Some(theirs)));
    let removed_by_theirs = |s: &String| b.contains(s) && !t.contains(s);
    let mut out: Vec<String> = o.iter().filter(|s| !removed_by_theirs(s)).cloned().collect();
    for s in &t {
        if !b.contains(s) && !out.contains(s) {
            out.push(s.clone());
        }
    }
    // Ours shows the order when it has two elements to tell by, else theirs does.
    let witness = if o.len() >= 2 { &o } else { &t };
    if witness.windows(2).all(|w| w[0] <= w[1]) {
        out.sort();
    }
    Value::Array(out.into_iter().map(Value::String).collect())
}

/// The record merged key by key from two sides that both changed it (`base` empty for an add on
/// both sides).
fn merge_fields(
    base: &BTreeMap<String, Value>,
    ours: &BTreeMap<String, Value>,
    theirs: &BTreeMap<String, Value>,
    seen: &mut Seen,
) -> BTreeMap<String, Value> {
    seen.field_merges += 1;
    let mut out = BTreeMap::new();
    let ours_wins = newest_is_ours(ours, theirs);
    // `status` and `closed_at`: one group.
    let group = |r: &BTreeMap<String, Value>| (r.get("status").cloned(), r.get("closed_at").cloned());
    let (gb, go, gt) = (group(base), group(ours), group(theirs));
    let g = if go == gt || gt == gb {
        go
    } else if go == gb {
        gt
    } else {
        seen.status_groups += 1;
        if ours_wins {
            go
        } else {
            gt
        }
    };
    let keys: std::collections::BTreeSet<&String> = base.keys().chain(ours.keys()).chain(theirs.keys()).collect();
    for key in keys {
        if key == "status" || key == "closed_at" {
            continue;
        }
        let (b, o, t) = (base.get(key), ours.get(key), theirs.get(key));
        // A list a writer left out because it was empty (Go's omitempty) is an empty list.
        let empty = Value::Array(Vec::new());
        let listed = key == "dependencies";
        let o: Option<&Value> = if listed && o.is_none() && t.is_some_and(Value::is_array) { Some(&empty) } else { o };
        let t: Option<&Value> = if listed && t.is_none() && o.is_some_and(Value::is_array) { Some(&empty) } else { t };
        // What the policy keeps of a key both sides changed and no rule settles.
        let by_policy = |seen: &mut Seen| {
            seen.policy += 1;
            if ours_wins {
                o.cloned()
            } else {
                t.cloned()
            }
        };
        let value = if o == t || t == b {
            o.cloned()
        } else if o == b {
            t.cloned()
        } else {
            match (key.as_str(), o, t) {
                ("updated_at", Some(o), Some(t)) => Some(if instant(o) >= instant(t) { o.clone() } else { t.clone() }),
                // A value and an absence: the value; two values: the later.
                (k, o, t) if VOLATILE.contains(&k) => match (o, t) {
                    (Some(o), Some(t)) => Some(if instant(o) >= instant(t) { o.clone() } else { t.clone() }),
                    (o, t) => o.or(t).cloned(),
                },
                (_, Some(Value::String(os)), Some(Value::String(ts)))
                    if os.contains('\n') || ts.contains('\n') || b.and_then(Value::as_str).is_some_and(|bs| bs.contains('\n')) =>
                {
                    match merge_text(b.and_then(Value::as_str).unwrap_or(""), os, ts) {
                        Some(text) => {
                            seen.text_merges += 1;
                            Some(Value::String(text))
                        }
                        None => by_policy(seen),
                    }
                }
                ("dependencies", Some(Value::Array(o)), Some(Value::Array(t))) => {
                    seen.dependency_merges += 1;
                    Some(dependency_merge(b.and_then(Value::as_array).map_or(&[][..], Vec::as_slice), o, t))
                }
                ("comments", Some(Value::Array(o)), Some(Value::Array(t))) => {
                    seen.comment_merges += 1;
                    Some(comment_merge(b.and_then(Value::as_array).map_or(&[][..], Vec::as_slice), o, t))
                }
                (_, Some(o @ Value::Array(_)), Some(t @ Value::Array(_))) => {
                    seen.set_merges += 1;
                    Some(set_merge(b, o, t))
                }
                _ => by_policy(seen),
            }
        };
        // An empty list is written as no key (Go's omitempty).
        let value = value.filter(|v| !(listed && v.as_array().is_some_and(Vec::is_empty)));
        if let Some(v) = value {
            out.insert(key.clone(), v);
        }
    }
    for (k, v) in [("status", g.0), ("closed_at", g.1)] {
        if let Some(v) = v {
            out.insert(k.to_owned(), v);
        }
    }
    // A record equal to neither side gets the merge's stamp: one tick after the later side's.
    stamp_if_merged(&mut out, Some(ours), Some(theirs), seen);
    out
}

/// Equal as records: volatile keys and counts aside, arrays taken as sets (the order of a side's elements
/// is no content a tracker imports).
fn lasting(r: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    let set = |v: &Value| match v {
        Value::Array(items) => {
            let mut items = items.clone();
            items.sort_by_key(ToString::to_string);
            Value::Array(items)
        }
        other => other.clone(),
    };
    r.iter().filter(|(k, _)| !VOLATILE.contains(&k.as_str()) && !COUNTS.contains(&k.as_str())).map(|(k, v)| (k.clone(), set(v))).collect()
}

/// A record the merge wrote that equals neither side gets the merge's stamp: one tick after the
/// later side's `updated_at`, never before the merge's clock.
fn stamp_if_merged(
    out: &mut BTreeMap<String, Value>,
    ours: Option<&BTreeMap<String, Value>>,
    theirs: Option<&BTreeMap<String, Value>>,
    seen: &mut Seen,
) {
    let equal = |side: Option<&BTreeMap<String, Value>>| side.is_some_and(|s| lasting(s) == lasting(out));
    if equal(ours) || equal(theirs) {
        return;
    }
    seen.stamped += 1;
    let later = [ours, theirs].into_iter().flatten().filter_map(|r| r.get("updated_at")).map(instant).max().unwrap_or(0);
    out.insert("updated_at".to_owned(), stamp_at((later + 1).max(now())));
}

/// The merge's clock (`BD_MERGE_NOW` in the test): before every stamp the generator writes.
fn now() -> u32 {
    0
}

/// The merged file of `base`, `ours` and `theirs` under the `newest` policy.
pub fn merge(base: &str, ours: &str, theirs: &str) -> String {
    merge_counting(base, ours, theirs, &mut Seen::default())
}

/// [`merge`], counting in `seen` which rules decided something.
pub fn merge_counting(base: &str, ours: &str, theirs: &str, seen: &mut Seen) -> String {
    let (bl, ol, tl) = (records(base), records(ours), records(theirs));
    let map = |v: &[(String, Record)]| -> BTreeMap<String, Record> { v.iter().cloned().collect() };
    let (b, o, t) = (map(&bl), map(&ol), map(&tl));
    let ids: std::collections::BTreeSet<&String> = b.keys().chain(o.keys()).chain(t.keys()).collect();
    let mut merged: BTreeMap<String, String> = BTreeMap::new();
    for id in ids {
        let line = match (b.get(id), o.get(id), t.get(id)) {
            (_, None, None) => None,
            // Deleted on one side: gone if the other left it alone, kept if it changed it.
            (Some(b), None, Some(t)) | (Some(b), Some(t), None) => {
                let changed = t.value != b.value;
                seen.delete_against_change += usize::from(changed);
                changed.then(|| t.line.clone())
            }
            (None, Some(o), None) => Some(o.line.clone()),
            (None, None, Some(t)) => Some(t.line.clone()),
            (base, Some(o), Some(t)) => {
                let base_value = base.map(|b| b.value.clone()).unwrap_or_default();
                if o.value == t.value || base.is_some_and(|_| t.value == base_value) {
                    Some(o.line.clone())
                } else if base.is_some_and(|_| o.value == base_value) {
                    Some(t.line.clone())
                } else {
                    seen.added_on_both += usize::from(base.is_none());
                    Some(render(&merge_fields(&base_value, &o.value, &t.value, seen)))
                }
            }
        };
        if let Some(line) = line {
            merged.insert(id.clone(), line);
        }
    }
    // Comment ids: no two different comments in the file share one; but a side that changed
    // nothing (base, byte for byte) leaves the other side's records as it wrote them.
    let one_side_as_written = ours == base || theirs == base || ours == theirs;
    let mut values: BTreeMap<String, BTreeMap<String, Value>> =
        merged.iter().map(|(id, line)| (id.clone(), serde_json::from_str(line).expect("a record"))).collect();
    let highest = highest_comment(&ol).max(highest_comment(&tl));
    let mut next = highest;
    let mut changed = Vec::new();
    if !one_side_as_written {
        changed = renumber_added(&mut values, &added_comments(&ol, &b), &added_comments(&tl, &b), &mut next, seen);
        changed.extend(renumber(&mut values, &mut next, seen));
    }
    changed.sort();
    changed.dedup();
    for id in &changed {
        let mut value = values[id].clone();
        stamp_if_merged(&mut value, o.get(id).map(|r| &r.value), t.get(id).map(|r| &r.value), seen);
        values.insert(id.clone(), value);
    }
    // Counts are recomputed after (a count is no reason for a stamp).
    let recounted = if one_side_as_written { Vec::new() } else { recount(&mut values) };
    seen.recounted += recounted.len();
    changed.extend(recounted);
    for id in changed {
        merged.insert(id.clone(), render(&values[&id]));
    }
    // Order: a side that only moved lines (it holds base's lines, each as often) is unchanged,
    // and the other side's order is the result's; sorted by id when that side is, else its order
    // with the records it lacks appended in the other side's order.
    let only_moved = |side: &[(String, Record)]| {
        let mut a: Vec<&str> = side.iter().map(|(_, r)| r.line.as_str()).collect();
        let mut z: Vec<&str> = bl.iter().map(|(_, r)| r.line.as_str()).collect();
        a.sort_unstable();
        z.sort_unstable();
        a == z
    };
    let theirs_first = only_moved(&ol) && !only_moved(&tl);
    let (first, second) = if theirs_first { (&tl, &ol) } else { (&ol, &tl) };
    let sorted = first.windows(2).all(|w| w[0].0 <= w[1].0);
    let mut order: Vec<&String> = Vec::new();
    seen.reordered += usize::from(!sorted || theirs_first);
    if sorted {
        order.extend(merged.keys());
    } else {
        for (id, _) in first.iter().chain(second.iter()) {
            if merged.contains_key(id) && !order.contains(&id) {
                order.push(id);
            }
        }
    }
    let mut out = String::new();
    for id in order {
        out.push_str(&merged[id]);
        out.push('\n');
    }
    out
}
