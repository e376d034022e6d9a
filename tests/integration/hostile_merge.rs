//! A stranger's input against the merge (docs/merge-rules.md "Linear work", "Two issues created under one id"):
//! shapes a fork's pull request can push through CI's driver, `resolve`, `dedupe` and `diff`.
//! Each class of quadratic work is timed at N and at 4N in the same test: linear work takes about
//! 4x, quadratic work 16x, and the test fails at 8x. The rename classes check what the merge
//! writes: every reference a moving side wrote follows its issue, child numbers never wrap, and
//! no id is written twice.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{bd_merge, records, text};

/// A triple written to `dir` as base/ours/theirs.jsonl.
fn write_triple(dir: &Path, base: &str, ours: &str, theirs: &str) {
    for (name, content) in [("base.jsonl", base), ("ours.jsonl", ours), ("theirs.jsonl", theirs)] {
        std::fs::write(dir.join(name), content).expect("write input");
    }
}

/// `bd-merge base ours theirs -o out` in `dir`: its output, the merged bytes and how long it took.
fn merge_in(dir: &Path, extra: &[&str]) -> (std::process::Output, Vec<u8>, Duration) {
    let _ = std::fs::remove_file(dir.join("out.jsonl"));
    let mut args = vec!["base.jsonl", "ours.jsonl", "theirs.jsonl", "-o", "out.jsonl"];
    args.extend_from_slice(extra);
    let start = Instant::now();
    let out = bd_merge(dir, &args);
    let took = start.elapsed();
    let merged = std::fs::read(dir.join("out.jsonl")).unwrap_or_default();
    (out, merged, took)
}

/// Times `run` at `n` and at `4n` (best of two each) and fails when the larger takes 8x or more.
fn assert_linear(what: &str, n: usize, run: impl Fn(usize) -> Duration) {
    let best = |k: usize| run(k).min(run(k));
    let (small, large) = (best(n), best(4 * n));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("{what}: N={n}: {small:?}, 4N: {large:?} ({ratio:.1}x)");
    assert!(ratio < 8.0, "{what}: N={n} took {small:?}, 4N took {large:?}: {ratio:.1}x (linear work is about 4x, quadratic 16x)");
}

fn line(v: &Value) -> String {
    format!("{v}\n")
}

fn stamp(k: usize) -> String {
    format!("2025-11-02T{:02}:{:02}:{:02}Z", (k / 3600) % 24, (k / 60) % 60, k % 60)
}

/// Both sides add `n` children to one epic, numbered from their own counters: `n` collisions,
/// every later child moved.
fn colliding_children(n: usize) -> (String, String, String) {
    let epic = line(&json!({"id": "bd-ep", "title": "Epic", "created_at": "2025-11-01T00:00:00Z", "updated_at": "2025-11-01T00:00:00Z"}));
    let side = |tag: &str, offset: usize| -> String {
        let mut out = epic.clone();
        let mut children: Vec<String> = (1..=n).map(|k| format!("bd-ep.{k}")).collect();
        children.sort();
        for child in children {
            let k: usize = child.rsplit('.').next().and_then(|s| s.parse().ok()).unwrap_or(0);
            out.push_str(&line(&json!({"id": child, "title": format!("{tag} {k}"), "created_at": stamp(2 * k + offset),
                "updated_at": stamp(2 * k + offset),
                "dependencies": [{"issue_id": child, "depends_on_id": "bd-ep", "type": "parent-child"}]})));
        }
        out
    };
    (epic.clone(), side("ours", 0), side("theirs", 1))
}

#[test]
fn regression_renames_scanned_every_record_per_collision() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_linear("concurrent-child renames", 500, |n| {
        let (b, o, t) = colliding_children(n);
        write_triple(dir.path(), &b, &o, &t);
        let (out, merged, took) = merge_in(dir.path(), &["-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(records(&merged).len(), 2 * n + 1, "every child is kept");
        took
    });
}

/// Both sides create `n` root issues under the same `n` short hash ids (another creation each):
/// `n` collisions, each later issue given a freshly minted hash id. Grouping, ordering and minting
/// are linear in the collisions (br's own loop asks "does a later group hold this id" of every later
/// group; ours looks it up).
#[test]
fn many_root_collisions_are_settled_in_linear_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_linear("root-id collisions", 500, |n| {
        let side = |tag: &str, offset: usize| -> String {
            let mut ids: Vec<String> = (0..n).map(|k| format!("bd-{k:04}")).collect();
            ids.sort();
            ids.iter()
                .enumerate()
                .map(|(k, id)| {
                    line(&json!({"id": id, "title": format!("{tag} {k}"), "created_at": stamp(2 * k + offset),
                    "updated_at": stamp(2 * k + offset)}))
                })
                .collect()
        };
        write_triple(dir.path(), "", &side("ours", 0), &side("theirs", 1));
        let (out, merged, took) = merge_in(dir.path(), &["-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let all = records(&merged);
        let ids: std::collections::BTreeSet<&str> = all.iter().filter_map(|r| r["id"].as_str()).collect();
        assert_eq!((all.len(), ids.len()), (2 * n, 2 * n), "every issue kept, each under its own id");
        took
    });
}

/// After a rebase every record of the file is compared with the pre-rebase tip's: one pass over
/// each, however many records changed backward in time.
#[test]
fn restamping_after_a_rebase_is_linear() {
    assert_linear("restamp after a rebase", 20_000, |n| {
        let file = |tag: &str, second: usize| -> String {
            (0..n).map(|k| line(&json!({"id": format!("bd-{k}"), "title": format!("{tag} {k}"), "updated_at": stamp(second)}))).collect()
        };
        let (old, new) = (file("old", 100), file("new", 50));
        let start = Instant::now();
        let (_, ids) = beads_git::replay::restamp(old.as_bytes(), new.as_bytes(), None);
        let took = start.elapsed();
        assert_eq!(ids.len(), n);
        took
    });
}

#[test]
fn regression_comment_id_renumbering_was_quadratic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let record =
        |comments: Vec<Value>| line(&json!({"id": "bd-1", "title": "t", "updated_at": "2025-11-01T00:00:00Z", "comments": comments}));
    // Comments as small as they come, so the test times the renumbering, not the parsing.
    let comment = |number: usize, tag: &str, k: usize| json!({"id": number, "text": format!("{tag}{k}")});
    // Both sides add n comments to one record, each side numbering from 1: n shared ids.
    assert_linear("comments the two sides added under one id", 4_000, |n| {
        let side = |tag: &str| record((0..n).map(|k| comment(k + 1, tag, k)).collect());
        write_triple(dir.path(), &record(Vec::new()), &side("ours"), &side("theirs"));
        let (out, merged, took) = merge_in(dir.path(), &["-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let ids: std::collections::BTreeSet<i64> =
            records(&merged)[0]["comments"].as_array().into_iter().flatten().filter_map(|c| c["id"].as_i64()).collect();
        assert_eq!(ids.len(), 2 * n, "every comment has its own id");
        took
    });
    // A record whose comments share ids in pairs, merged with a change of its title.
    assert_linear("comment ids shared across the file", 8_000, |n| {
        let base = record((0..n).map(|k| comment(k / 2 + 1, "a", k)).collect());
        let theirs = base.replacen("\"title\":\"t\"", "\"title\":\"changed\"", 1);
        write_triple(dir.path(), &base, &base, &theirs);
        let (out, merged, took) = merge_in(dir.path(), &["-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(records(&merged).len(), 1);
        took
    });
}

#[test]
fn regression_duplicate_id_grouping_was_quadratic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copies = |n: usize| -> String {
        (0..n)
            .map(|k| line(&json!({"id": "bd-ep.1", "title": format!("copy {k}"), "created_at": stamp(k), "updated_at": stamp(k)})))
            .collect()
    };
    assert_linear("dedupe --check over copies of one child id", 1_000, |n| {
        std::fs::write(dir.path().join("issues.jsonl"), copies(n)).expect("write");
        let start = Instant::now();
        let out = bd_merge(dir.path(), &["dedupe", "--check", "issues.jsonl"]);
        let took = start.elapsed();
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        took
    });
    // Issues that each stand on two lines with different titles under one id: every issue's
    // merge reports a value, and looking at every earlier issue's reports per issue was quadratic.
    let pairs = |n: usize| -> String {
        (0..n)
            .map(|k| line(&json!({"id": "bd-ep.1", "title": format!("copy {k}"), "created_at": stamp(k / 2), "updated_at": stamp(k)})))
            .collect()
    };
    assert_linear("dedupe of many issues under one child id, two copies each", 4_000, |n| {
        std::fs::write(dir.path().join("pairs.jsonl"), pairs(n)).expect("write");
        let start = Instant::now();
        let out = bd_merge(dir.path(), &["dedupe", "pairs.jsonl"]);
        let took = start.elapsed();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        took
    });
    assert_linear("the driver over copies of one id", 2_000, |n| {
        let other = line(&json!({"id": "bd-other", "title": "x"}));
        let ours = format!("{}{other}", copies(n));
        let theirs = format!("{}{}", copies(n), line(&json!({"id": "bd-other", "title": "y"})));
        write_triple(dir.path(), &ours, &ours, &theirs);
        let (out, merged, took) = merge_in(dir.path(), &["-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(records(&merged).len(), n + 1);
        took
    });
}

/// A description of `n` lines, every line of which each side edits (the edits interleave, so the
/// line merge has the most work and still conflicts).
fn long_descriptions(n: usize) -> (String, String, String) {
    let text = |f: &dyn Fn(usize) -> String| -> String { (0..n).map(|k| f(k) + "\n").collect() };
    let base = text(&|k| format!("line {k}"));
    let ours = text(&|k| if k % 2 == 0 { format!("ours {k}") } else { format!("line {k}") });
    let theirs = text(&|k| if k % 2 == 1 { format!("theirs {k}") } else { format!("line {k}") });
    let rec = |d: &str, at: &str| line(&json!({"id": "bd-1", "title": "t", "description": d, "updated_at": at}));
    (rec(&base, "2025-11-01T00:00:00Z"), rec(&ours, "2025-11-02T00:00:00Z"), rec(&theirs, "2025-11-03T00:00:00Z"))
}

#[test]
fn regression_a_long_description_edited_on_both_sides_was_merged_in_quadratic_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_linear("line merge of one multi-line value", 2_000, |n| {
        let (b, o, t) = long_descriptions(n);
        write_triple(dir.path(), &b, &o, &t);
        let (out, merged, took) = merge_in(dir.path(), &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(records(&merged).len(), 1);
        took
    });
    // Past the bound the value is decided whole, and stderr says so, naming the field.
    let (b, o, t) = long_descriptions(16_000);
    write_triple(dir.path(), &b, &o, &t);
    let (out, merged, _) = merge_in(dir.path(), &[]);
    let said = text(&out);
    assert!(said.contains("description") && said.contains("too large for a line merge"), "{said}");
    assert!(records(&merged)[0]["description"].as_str().is_some_and(|d| d.starts_with("line 0\ntheirs 1\n")), "newest side kept whole");
}

#[test]
fn regression_a_long_description_was_diffed_in_quadratic_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_linear("bd-merge diff of one multi-line value", 2_000, |n| {
        let (b, _, t) = long_descriptions(n);
        let theirs_all = t.replace("line ", "new ");
        std::fs::write(dir.path().join("old.jsonl"), &b).expect("write");
        std::fs::write(dir.path().join("new.jsonl"), theirs_all).expect("write");
        let start = Instant::now();
        let out = bd_merge(dir.path(), &["diff", "old.jsonl", "new.jsonl"]);
        let took = start.elapsed();
        assert!(out.status.code().is_some_and(|c| c <= 1), "{}", text(&out));
        took
    });
}

/// Both clones split one epic the same way: `P.1`, `P.2` blocked by `P.1`, `P.1.1` a child of
/// `P.1`. Theirs were created later, so all three of theirs move, and what theirs wrote between
/// them must move with them.
#[test]
fn regression_references_between_moving_issues_pointed_at_the_other_sides_issue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let epic = json!({"id": "bd-p", "title": "Epic", "created_at": "2025-11-01T00:00:00Z", "updated_at": "2025-11-01T00:00:00Z"});
    let side = |tag: &str, second: u32| -> String {
        let at = format!("2025-11-02T10:00:{second:02}Z");
        let rec = |id: &str, what: &str, deps: Value| {
            line(&json!({"id": id, "title": format!("{tag} {what}"), "created_at": at, "updated_at": at, "dependencies": deps}))
        };
        [
            line(&epic),
            rec("bd-p.1", "first", json!([{"issue_id": "bd-p.1", "depends_on_id": "bd-p", "type": "parent-child"}])),
            rec("bd-p.1.1", "sub", json!([{"issue_id": "bd-p.1.1", "depends_on_id": "bd-p.1", "type": "parent-child"}])),
            rec("bd-p.2", "second", json!([{"issue_id": "bd-p.2", "depends_on_id": "bd-p.1", "type": "blocks"}])),
        ]
        .concat()
    };
    write_triple(dir.path(), &line(&epic), &side("ours", 1), &side("theirs", 2));
    let (out, merged, _) = merge_in(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = records(&merged);
    let by_title =
        |t: &str| all.iter().find(|r| r["title"] == json!(t)).unwrap_or_else(|| panic!("{t} kept:\n{}", String::from_utf8_lossy(&merged)));
    let ids: std::collections::BTreeSet<&str> = all.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(ids.len(), all.len(), "an id written twice:\n{}", String::from_utf8_lossy(&merged));
    for tag in ["ours", "theirs"] {
        let first = by_title(&format!("{tag} first"))["id"].as_str().expect("id").to_owned();
        for what in ["sub", "second"] {
            let r = by_title(&format!("{tag} {what}"));
            assert_eq!(
                r["dependencies"][0]["depends_on_id"].as_str(),
                Some(first.as_str()),
                "{tag} {what} points at another side's issue:\n{}",
                String::from_utf8_lossy(&merged)
            );
            assert_eq!(r["dependencies"][0]["issue_id"], r["id"]);
        }
    }
}

/// br counts child numbers in 32 bits: with `P.4294967295` in use there is no next number, and
/// br then leaves the collision to a human. So do we: both issues between conflict markers (exit
/// 1), never a wrapped number, never an id written twice, nothing dropped.
#[test]
fn regression_a_child_number_near_the_top_of_u64_wrapped_and_wrote_one_id_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = json!({"id": format!("bd-p.{}", u32::MAX), "title": "the highest", "created_at": "2025-11-01T00:00:00Z"});
    let base = line(&top);
    let side = |tag: &str, second: u32| -> String {
        let at = format!("2025-11-02T10:00:{second:02}Z");
        let mut out = base.clone();
        for k in 1..=2 {
            out.push_str(&line(&json!({"id": format!("bd-p.{k}"), "title": format!("{tag} {k}"), "created_at": at, "updated_at": at})));
        }
        out
    };
    write_triple(dir.path(), &base, &side("ours", 1), &side("theirs", 2));
    let (out, merged, _) = merge_in(dir.path(), &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("no free id can be minted"), "{said}");
    let text = String::from_utf8_lossy(&merged);
    for tag in ["ours", "theirs"] {
        for k in 1..=2 {
            assert!(text.contains(&format!("\"{tag} {k}\"")), "{tag} {k} kept:\n{text}");
        }
    }
    assert!(!text.contains("bd-p.0") && !text.contains("bd-p.4294967296"), "no wrapped or overflowed number:\n{text}");
}

/// Reordering (docs/trackers.md): a side that only moved its lines (bd's unsorted export) against a side
/// that edited one record: the result is theirs, in theirs' order, and finding "only moved" is a
/// pass over each file, not a search per line.
#[test]
fn a_side_that_only_reordered_its_lines_is_recognised_in_linear_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_linear("ours only reordered", 20_000, |n| {
        let lines: Vec<String> =
            (0..n).map(|k| line(&json!({"_type": "issue", "id": format!("bd-{k:06}"), "title": "t", "updated_at": stamp(k)}))).collect();
        let base: String = lines.concat();
        // Ours: the same lines reversed; theirs: one record retitled, in base's order.
        let ours: String = lines.iter().rev().cloned().collect();
        let theirs = base.replacen("\"title\":\"t\"", "\"title\":\"changed\"", 1);
        write_triple(dir.path(), &base, &ours, &theirs);
        let (out, merged, took) = merge_in(dir.path(), &["-q"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(merged == theirs.as_bytes(), "the result is theirs, in theirs' order");
        took
    });
}
