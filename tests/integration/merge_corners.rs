//! The merge's corner cases that a randomised corpus found (docs/merge-rules.md "The merge rules, in plain
//! words"): duplicate ids that hold shared comment ids, a record equal to ours beside a repeat
//! that collapses, and stamps under a fixed clock. Each runs the real `bd-merge base ours theirs
//! -o out`, and again with the sides swapped.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::json;

use crate::support::{hermetic, run, text};

/// `bd-merge base ours theirs -o out` with `BD_MERGE_NOW=now`: exit code, merged bytes, output.
fn merge(dir: &Path, files: [&str; 3], now: &str) -> (Option<i32>, Vec<u8>, String) {
    let out_path = dir.join("out.jsonl");
    let _ = std::fs::remove_file(&out_path);
    let out =
        run(hermetic(crate::support::bin("bd-merge")).current_dir(dir).env("BD_MERGE_NOW", now).args(files).args(["-o", "out.jsonl"]));
    (out.status.code(), std::fs::read(&out_path).unwrap_or_default(), text(&out))
}

fn write(dir: &Path, name: &str, lines: &[String]) {
    std::fs::write(dir.join(name), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
}

fn lines(bytes: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(bytes).lines().map(str::to_owned).collect()
}

/// An id on several lines merges as a set of exact lines: the copies keep their bytes even when
/// they hold the same comment id, and swapping the sides gives the same lines.
#[test]
fn regression_duplicate_id_lines_sharing_a_comment_id_were_rewritten_by_side() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = |title: &str, text: &str, at: &str| {
        json!({"id": "bd-a", "title": title, "updated_at": "2025-11-01T00:00:00Z",
            "comments": [{"id": 1, "issue_id": "bd-a", "author": "x", "text": text, "created_at": at}]})
        .to_string()
    };
    let (a1, a2, a3) = (
        copy("one", "first", "2025-11-01T00:00:00Z"),
        copy("two", "second", "2025-11-01T00:00:00Z"),
        copy("three", "third", "2025-11-01T00:00:00Z"),
    );
    write(dir.path(), "base.jsonl", std::slice::from_ref(&a1));
    write(dir.path(), "ours.jsonl", &[a1.clone(), a2.clone()]);
    write(dir.path(), "theirs.jsonl", &[a1.clone(), a3.clone()]);
    let (code, merged, said) = merge(dir.path(), ["base.jsonl", "ours.jsonl", "theirs.jsonl"], "2000-01-01T00:00:00Z");
    assert_eq!(code, Some(0), "{said}");
    let (swapped_code, swapped, said) = merge(dir.path(), ["base.jsonl", "theirs.jsonl", "ours.jsonl"], "2000-01-01T00:00:00Z");
    assert_eq!(swapped_code, Some(0), "{said}");
    let expected: BTreeSet<String> = [a1, a2, a3].into_iter().collect();
    assert_eq!(lines(&merged), expected, "the copies are written as they were:\n{}", String::from_utf8_lossy(&merged));
    assert_eq!(lines(&swapped), expected, "and the same with the sides swapped:\n{}", String::from_utf8_lossy(&swapped));
}

/// A record that equals ours' (theirs only re-formatted it) keeps ours' bytes, also when the id
/// repeats on a byte-identical line in ours that collapses.
#[test]
fn regression_a_record_equal_to_ours_beside_a_collapsed_repeat_was_written_in_theirs_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = r#"{"id":"bd-r","title":"a < b","priority":1}"#.to_owned();
    let r_reformatted = r#"{"priority": 1, "title": "a \u003c b", "id": "bd-r"}"#.to_owned();
    let (b0, b1) = (r#"{"id":"bd-s","title":"x"}"#.to_owned(), r#"{"id":"bd-s","title":"y"}"#.to_owned());
    write(dir.path(), "base.jsonl", &[r.clone(), b0.clone()]);
    write(dir.path(), "ours.jsonl", &[r.clone(), r.clone(), b0]);
    write(dir.path(), "theirs.jsonl", &[r_reformatted, b1.clone()]);
    let (code, merged, said) = merge(dir.path(), ["base.jsonl", "ours.jsonl", "theirs.jsonl"], "2000-01-01T00:00:00Z");
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(String::from_utf8_lossy(&merged), format!("{r}\n{b1}\n"));
}

/// With `BD_MERGE_NOW` fixed, every stamp the merge writes comes from it (never from the wall
/// clock), on every path that stamps: a field merge, a child created on both sides (moved as br
/// moves it, with the references its side wrote), comment ids renumbered. Two runs give the
/// same bytes.
#[test]
fn regression_a_stamp_ignored_the_fixed_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |s: u32| format!("2001-01-01T00:00:{s:02}Z");
    let epic = json!({"id": "bd-p", "title": "Epic", "created_at": at(0), "updated_at": at(0)}).to_string();
    let other = |title: &str, s: u32, dep: bool, comment: &str| {
        let mut v = json!({"id": "bd-q", "title": title, "created_at": at(0), "updated_at": at(s),
            "comments": [{"id": 7, "issue_id": "bd-q", "author": "x", "text": comment, "created_at": at(s)}]});
        if dep {
            v["dependencies"] = json!([{"issue_id": "bd-q", "depends_on_id": "bd-p.1", "type": "blocks"}]);
        }
        v.to_string()
    };
    let child = |tag: &str, s: u32| {
        json!({"id": "bd-p.1", "title": format!("{tag} child"), "created_at": at(s), "updated_at": at(s),
            "comments": [{"id": 7, "issue_id": "bd-p.1", "author": tag, "text": tag, "created_at": at(s)}]})
        .to_string()
    };
    let q_base = json!({"id": "bd-q", "title": "q", "created_at": at(0), "updated_at": at(0)}).to_string();
    write(dir.path(), "base.jsonl", &[epic.clone(), q_base]);
    write(dir.path(), "ours.jsonl", &[epic.clone(), child("ours", 1), other("ours title", 3, false, "o")]);
    write(dir.path(), "theirs.jsonl", &[epic, child("theirs", 2), other("q", 4, true, "t")]);
    // Later than every input stamp, earlier than any wall clock this test runs under.
    let now = "2002-01-01T00:00:00Z";
    let (code, first, said) = merge(dir.path(), ["base.jsonl", "ours.jsonl", "theirs.jsonl"], now);
    assert_eq!(code, Some(0), "{said}");
    let (_, second, _) = merge(dir.path(), ["base.jsonl", "ours.jsonl", "theirs.jsonl"], now);
    assert_eq!(first, second, "two runs with one fixed clock");
    let merged = String::from_utf8_lossy(&first);
    for record in crate::support::records(&first) {
        let stamp = record["updated_at"].as_str().unwrap_or_default();
        assert!(stamp <= now, "{} stamped {stamp}, after BD_MERGE_NOW={now}:\n{merged}", record["id"]);
    }
    assert!(merged.contains(&format!("\"updated_at\":\"{now}\"")), "a merged record is stamped at the fixed clock:\n{merged}");
}
