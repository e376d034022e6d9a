//! Two issues under one id, ours beside the real br 0.7.6 (docs/trackers.md, "Two issues under
//! one id"): for generated histories (root and child collisions, chains where the next child
//! number is taken, grandchildren, comments and dependencies on the moved issue, references from
//! other records, an issue a clone already moved, three clones merging in two orders), the file
//! `bd-merge` writes and the one `br sync --merge` exports from the same base, ours and theirs
//! hold the same issues under the same ids (issues matched by `created_at` and title). br's plain
//! import of our result (`br sync --import-only`) must then succeed in the clone whose own issues
//! all kept their ids; where br refuses in the other clone, its message is counted by kind.
//!
//! `BR_COLLISION_CASES` sets how many cases (default 100; a longer run: 1000). The test fails
//! under CI when br is missing and skips otherwise.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{hermetic, ours, real_br, run};

/// A small deterministic generator (xorshift64*): every run of a case count sees the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[usize::try_from(self.below(items.len() as u64)).unwrap_or(0)]
    }
}

/// One issue as a JSON line br accepts.
fn issue(id: &str, title: &str, created: &str, by: Option<&str>, description: Option<&str>) -> Value {
    let mut v = json!({
        "id": id, "title": title, "status": "open", "priority": 2, "issue_type": "task",
        "created_at": created, "updated_at": created, "source_repo": ".", "compaction_level": 0, "original_size": 0,
    });
    if let Some(by) = by {
        v["created_by"] = json!(by);
    }
    if let Some(d) = description {
        v["description"] = json!(d);
    }
    v
}

fn stamp(day: u64, second: u64, nanos: u64) -> String {
    format!("2026-11-{:02}T{:02}:{:02}:{:02}.{nanos:09}Z", 10 + day, second / 3600 % 24, second / 60 % 60, second % 60)
}

fn add_dep(issue: &mut Value, on: &str, kind: &str, created: &str) {
    let id = issue["id"].as_str().unwrap_or_default().to_owned();
    let deps = issue.as_object_mut().map(|o| o.entry("dependencies").or_insert_with(|| json!([])));
    if let Some(Value::Array(deps)) = deps {
        deps.push(json!({"issue_id": id, "depends_on_id": on, "type": kind, "created_at": created, "created_by": "gen"}));
    }
}

fn add_comment(issue: &mut Value, n: i64, text: &str, created: &str) {
    let id = issue["id"].as_str().unwrap_or_default().to_owned();
    let comments = issue.as_object_mut().map(|o| o.entry("comments").or_insert_with(|| json!([])));
    if let Some(Value::Array(c)) = comments {
        c.push(json!({"id": n, "issue_id": id, "author": "gen", "text": text, "created_at": created}));
    }
}

fn lines(issues: &[Value]) -> String {
    let mut sorted: Vec<&Value> = issues.iter().collect();
    sorted.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    sorted.iter().fold(String::new(), |mut s, v| {
        let _ = writeln!(s, "{v}");
        s
    })
}

/// A generated history: the base and the two sides.
struct Case {
    name: String,
    base: Vec<Value>,
    ours: Vec<Value>,
    theirs: Vec<Value>,
    /// A third clone's file, merged after (for the order test).
    third: Option<Vec<Value>>,
}

fn generate(rng: &mut Rng, n: usize) -> Case {
    let prefixes = ["bd", "br", "my-proj", "x"];
    let prefix = rng.pick(&prefixes).to_owned();
    let hash_len = 2 + usize::try_from(rng.below(5)).unwrap_or(0);
    let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
    // Fresh hash ids, never one handed out before in this case.
    let used = std::cell::RefCell::new(BTreeSet::new());
    let hash = |rng: &mut Rng| -> String {
        loop {
            let h: String = (0..hash_len).map(|_| alphabet[usize::try_from(rng.below(36)).unwrap_or(0)] as char).collect();
            if used.borrow_mut().insert(h.clone()) {
                return h;
            }
        }
    };
    let creators = ["alice", "bob", "", "carol"];
    let mut base = Vec::new();
    let epic = format!("{prefix}-{}", hash(rng));
    base.push(issue(&epic, "Epic", &stamp(0, 100, 1), Some("alice"), Some("the epic")));
    // Children the base already has (a chain the new number must skip).
    let existing = rng.below(3);
    for k in 1..=existing {
        let mut child = issue(&format!("{epic}.{k}"), &format!("Existing child {k}"), &stamp(0, 200 + k, 0), Some("alice"), None);
        add_dep(&mut child, &epic, "parent-child", &stamp(0, 200 + k, 0));
        base.push(child);
    }
    if rng.chance(20) {
        // A grandchild under a number nobody holds: br counts it under the epic.
        base.push(issue(&format!("{epic}.{}.1", existing + 5), "Grandchild", &stamp(0, 300, 0), None, None));
    }
    let (mut ours, mut theirs) = (base.clone(), base.clone());
    let collisions = 1 + rng.below(3);
    let mut kinds = Vec::new();
    for c in 0..collisions {
        let child = rng.chance(50);
        let id = if child { format!("{epic}.{}", existing + 1 + c) } else { format!("{prefix}-{}", hash(rng)) };
        kinds.push(if child { "child" } else { "root" });
        let (day_a, day_b) = (1 + rng.below(3), 1 + rng.below(3));
        let (sec_a, sec_b) = (rng.below(80_000), rng.below(80_000));
        let nanos = rng.below(1_000_000_000);
        let title_a = format!("Issue {c} made in A");
        let title_b = if rng.chance(10) { title_a.clone() } else { format!("Issue {c} made in B") };
        let desc = |rng: &mut Rng| if rng.chance(50) { Some("why it matters") } else { None };
        let (by_a, by_b) = (rng.pick(&creators).to_owned(), rng.pick(&creators).to_owned());
        let by = |s: &str| if s.is_empty() { None } else { Some(s.to_owned()) };
        let mut a = issue(&id, &title_a, &stamp(day_a, sec_a, nanos), by(&by_a).as_deref(), desc(rng));
        let mut b = issue(&id, &title_b, &stamp(day_b, sec_b, (nanos + 1 + rng.below(5)) % 1_000_000_000), by(&by_b).as_deref(), desc(rng));
        if child {
            add_dep(&mut a, &epic, "parent-child", &stamp(day_a, sec_a, 0));
            add_dep(&mut b, &epic, "parent-child", &stamp(day_b, sec_b, 0));
        }
        if rng.chance(30) {
            add_comment(&mut a, 1, "A's note", &stamp(day_a, sec_a + 1, 0));
        }
        if rng.chance(30) {
            add_comment(&mut b, 1, "B's note", &stamp(day_b, sec_b + 1, 0));
        }
        // A reference from another record on the same side.
        if rng.chance(40) {
            let mut r = issue(&format!("{prefix}-{}", hash(rng)), &format!("Blocked by B's {c}"), &stamp(4, sec_b, 7), Some("bob"), None);
            add_dep(&mut r, &id, "blocks", &stamp(4, sec_b, 7));
            theirs.push(r);
        }
        // More children on one side: the next free number is further up.
        if child && rng.chance(40) {
            let extra = format!("{epic}.{}", existing + collisions + 1 + rng.below(3));
            if !ours.iter().any(|v| v["id"] == json!(extra)) {
                ours.push(issue(&extra, &format!("Another child of A {c}"), &stamp(5, 10 + c, 0), Some("alice"), None));
            }
        }
        ours.push(a);
        theirs.push(b);
    }
    // An issue a clone already moved: ours holds theirs' issue under a new id too.
    let mut third = None;
    if rng.chance(25) {
        let id = format!("{prefix}-{}", hash(rng));
        let b = issue(&id, "Made in B, moved before", &stamp(2, 500, 5), Some("bob"), None);
        let a = issue(&id, "Made in A", &stamp(1, 500, 5), Some("alice"), None);
        let mut moved = b.clone();
        moved["id"] = json!(format!("{prefix}-{}", hash(rng)));
        ours.push(a);
        ours.push(moved);
        theirs.push(b);
        kinds.push("moved-before");
    } else if rng.chance(30) {
        // A third clone that created the first colliding id too.
        let id = theirs.last().and_then(|v| v["id"].as_str()).unwrap_or_default().to_owned();
        let mut c = base.clone();
        c.push(issue(&id, "Made in C", &stamp(3, 900, 9), Some("carol"), None));
        third = Some(c);
        kinds.push("three-clones");
    }
    Case { name: format!("case {n} ({})", kinds.join(", ")), base, ours, theirs, third }
}

/// Runs br in a workspace `dir`; (exit code, stdout + stderr).
fn br(br: &Path, dir: &Path, args: &[&str]) -> (i32, String) {
    let out = run(hermetic(br).current_dir(dir).env("HOME", dir).env("NO_COLOR", "1").env_remove("BEADS_DB").args(args));
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A br workspace whose database holds `db` (imported from JSONL), with `base` as its base
/// snapshot and `file` as its issues file.
fn workspace(brp: &Path, root: &Path, name: &str, prefix: &str, db: &str, base: &str, file: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let ok = |r: (i32, String), what: &str| assert_eq!(r.0, 0, "br {what} in {}:\n{}", dir.display(), r.1);
    run(hermetic("git").current_dir(&dir).args(["init", "-q", "."]));
    ok(br(brp, &dir, &["init", "--prefix", prefix]), "init");
    std::fs::write(dir.join(".beads/issues.jsonl"), db).expect("write");
    ok(br(brp, &dir, &["sync", "--import-only"]), "sync --import-only (the clone's own issues)");
    std::fs::write(dir.join(".beads/beads.base.jsonl"), base).expect("write base");
    std::fs::write(dir.join(".beads/issues.jsonl"), file).expect("write");
    dir
}

/// br's merge of `theirs` into a clone holding `ours`; the file it exports.
fn br_merge(brp: &Path, root: &Path, name: &str, prefix: &str, texts: [&str; 3]) -> Result<String, String> {
    let [base, ours_text, theirs] = texts;
    let dir = workspace(brp, root, name, prefix, ours_text, base, theirs);
    let (code, said) = br(brp, &dir, &["sync", "--merge"]);
    if code != 0 {
        return Err(format!("br sync --merge exited {code}: {said}"));
    }
    Ok(std::fs::read_to_string(dir.join(".beads/issues.jsonl")).expect("br exported"))
}

/// Our driver's merge; the file it writes and its exit code.
fn our_merge(root: &Path, name: &str, texts: [&str; 3], args: &[&str]) -> (String, i32, String) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (f, t) in ["base.jsonl", "ours.jsonl", "theirs.jsonl"].iter().zip(texts) {
        std::fs::write(dir.join(f), t).expect("write");
    }
    let out = run(ours("bd-merge").current_dir(&dir).args(["base.jsonl", "ours.jsonl", "theirs.jsonl"]).args(args));
    let merged = std::fs::read_to_string(dir.join("ours.jsonl")).expect("ours");
    (merged, out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Issue (created_at as an instant, title) -> id.
fn ids_by_issue(file: &str) -> Result<BTreeMap<(String, String), String>, String> {
    let mut map = BTreeMap::new();
    for line in file.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        let Some(id) = v["id"].as_str() else { continue };
        let created = v["created_at"].as_str().unwrap_or_default();
        let instant = beads_git::timestamp::parse(created).map_or_else(|| created.to_owned(), |i| format!("{}.{:09}", i.seconds, i.nanos));
        let key = (instant, v["title"].as_str().unwrap_or_default().to_owned());
        if let Some(other) = map.insert(key.clone(), id.to_owned()) {
            return Err(format!("{key:?} twice: {other} and {id}"));
        }
    }
    Ok(map)
}

fn prefix_of(case: &Case) -> String {
    let id = case.base[0]["id"].as_str().unwrap_or_default();
    id.rsplit_once('-').map(|(p, _)| p.to_owned()).unwrap_or_default()
}

#[test]
fn two_issues_under_one_id_get_the_ids_br_gives_them() {
    let Some(brp) = real_br() else { return };
    let cases: usize = std::env::var("BR_COLLISION_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(100);
    let root = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0x5eed_bead_0007_0006);
    let (mut identical, mut deduped_identical, mut imported, mut refused_other): (usize, usize, usize, BTreeMap<String, usize>) =
        (0, 0, 0, BTreeMap::new());
    let mut failures = Vec::new();
    for n in 0..cases {
        let case = generate(&mut rng, n);
        let prefix = prefix_of(&case);
        let (base, o, t) = (lines(&case.base), lines(&case.ours), lines(&case.theirs));
        let policy: &[&str] = match n % 4 {
            1 => &["--conflict", "ours"],
            2 => &["--conflict", "theirs"],
            3 => &["--conflict", "markers"],
            _ => &[],
        };
        let (mine, code, said) = our_merge(root.path(), &format!("{n}-ours"), [&base, &o, &t], policy);
        if code != 0 {
            failures.push(format!("{}: bd-merge {policy:?} exited {code}: {said}", case.name));
            continue;
        }
        let theirs_br = match br_merge(&brp, root.path(), &format!("{n}-br"), &prefix, [&base, &o, &t]) {
            Ok(f) => f,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        let (a, b) = (ids_by_issue(&mine), ids_by_issue(&theirs_br));
        match (a, b) {
            (Ok(a), Ok(b)) if a == b => identical += 1,
            (a, b) => {
                failures.push(format!("{}: ids differ\nours: {a:?}\nbr:   {b:?}\nbase:\n{base}ours:\n{o}theirs:\n{t}", case.name));
                continue;
            }
        }
        // `dedupe` of the file git's `merge=union` writes (both sides' lines): the same ids, where
        // the union still says which copy is which issue (no issue a clone had moved before).
        if !case.name.contains("moved-before") {
            let mut union: Vec<&str> = o.lines().collect();
            union.extend(t.lines().filter(|l| !o.lines().any(|x| x == *l)));
            let dir = root.path().join(format!("{n}-dedupe"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("issues.jsonl"), union.join("\n") + "\n").expect("write");
            let out = run(ours("bd-merge").current_dir(&dir).args(["dedupe", "issues.jsonl"]));
            let deduped = std::fs::read_to_string(dir.join("issues.jsonl")).expect("read");
            match (ids_by_issue(&deduped), ids_by_issue(&theirs_br)) {
                (Ok(a), Ok(b)) if a == b && out.status.success() => deduped_identical += 1,
                (a, b) => {
                    failures.push(format!(
                        "{}: dedupe of the union (exit {:?}) differs from br\nours: {a:?}\nbr:   {b:?}\n{}",
                        case.name,
                        out.status.code(),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                    continue;
                }
            }
        }
        // br's plain import of our result, in the clone that held ours.
        let ours_ids: BTreeSet<String> = ids_by_issue(&o).map(|m| m.into_values().collect()).unwrap_or_default();
        let kept_all = ids_by_issue(&mine).is_ok_and(|m| ids_by_issue(&o).is_ok_and(|own| own.iter().all(|(k, id)| m.get(k) == Some(id))));
        let dir = workspace(&brp, root.path(), &format!("{n}-import"), &prefix, &o, &base, &mine);
        let (code, said) = br(&brp, &dir, &["sync", "--import-only"]);
        if kept_all {
            if code == 0 {
                imported += 1;
            } else {
                failures.push(format!(
                    "{}: br refused our result in the clone whose issues kept their ids ({ours_ids:?}), exit {code}: {said}",
                    case.name
                ));
            }
        } else if code != 0 {
            // br's own words: its #549 (the moved issue has comments), or a moved issue whose
            // database copy is not the file's.
            let kind = if said.contains("has comments that cannot be assigned") {
                "#549: local issue has comments that cannot be assigned to a different replacement issue"
            } else if said.contains("does not contain the local one") {
                "ID collision: the JSONL does not contain the local one (unchanged)"
            } else {
                "other"
            };
            *refused_other.entry(format!("exit {code}: {kind}")).or_default() += 1;
        } else {
            imported += 1;
        }
        // Three clones: (ours + theirs) + third == (ours + third) + theirs, ids alike.
        if let Some(third) = &case.third {
            let c = lines(third);
            let (first, _, _) = our_merge(root.path(), &format!("{n}-o1"), [&base, &o, &t], &[]);
            let (one, _, _) = our_merge(root.path(), &format!("{n}-o2"), [&base, &first, &c], &[]);
            let (second, _, _) = our_merge(root.path(), &format!("{n}-o3"), [&base, &o, &c], &[]);
            let (other, _, _) = our_merge(root.path(), &format!("{n}-o4"), [&base, &second, &t], &[]);
            let br_one = br_merge(&brp, root.path(), &format!("{n}-b2"), &prefix, [&base, &first, &c]);
            match (ids_by_issue(&one), ids_by_issue(&other), br_one.map(|f| ids_by_issue(&f))) {
                (Ok(x), Ok(y), Ok(Ok(z))) if x.keys().eq(y.keys()) && x == z => {}
                (x, y, z) => {
                    failures.push(format!("{}: three clones: ours in one order {x:?}\nthe other order {y:?}\nbr {z:?}", case.name));
                }
            }
        }
    }
    eprintln!(
        "br collisions: {cases} cases, {identical} identical to br's ids ({deduped_identical} of them also through dedupe of the union), \
            br's plain import took our result {imported} times; refused in the clone whose issue moved: {refused_other:?}"
    );
    assert!(failures.is_empty(), "{} of {cases} cases failed:\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
#[ignore = "a debugging aid: prints generated case BR_COLLISION_DUMP"]
fn dump_a_generated_case() {
    let n: usize = std::env::var("BR_COLLISION_DUMP").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut rng = Rng(0x5eed_bead_0007_0006);
    let mut case = generate(&mut rng, 0);
    for k in 1..=n {
        case = generate(&mut rng, k);
    }
    eprintln!("{}\nbase:\n{}ours:\n{}theirs:\n{}", case.name, lines(&case.base), lines(&case.ours), lines(&case.theirs));
}
