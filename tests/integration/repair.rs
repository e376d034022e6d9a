//! `bd-merge resolve` and `dedupe` after merges done where our driver did not run: git's own
//! line merge (merge, diff3 and zdiff3 styles), a rebase stopped on the file, `git stash pop`, a
//! file committed with markers, and `merge=union`. Where git kept the three sides, the result is
//! byte for byte what the driver would have written.

use std::path::Path;
use std::process::Output;

use crate::support::{bd_merge, bd_sync, hermetic, issue, jsonl, ours, path_with_our_binaries, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

const T0: &str = "2025-11-01T10:00:00-08:00";

fn base_file() -> Vec<u8> {
    jsonl(&[
        issue("bd-1").title("One").updated(T0).line(),
        issue("bd-2").title("Two").updated(T0).extra(r#""labels":["a"]"#).line(),
        issue("bd-3").title("Three").updated(T0).line(),
    ])
}

fn main_file() -> Vec<u8> {
    jsonl(&[
        issue("bd-1").title("One, retitled on main").updated("2025-11-02T10:00:00-08:00").line(),
        issue("bd-2").title("Two").updated("2025-11-02T10:00:00-08:00").extra(r#""labels":["a","main"]"#).line(),
        issue("bd-3").title("Three").updated(T0).line(),
    ])
}

fn feature_file() -> Vec<u8> {
    jsonl(&[
        issue("bd-1").title("One").priority(0).updated("2025-11-03T10:00:00-08:00").line(),
        issue("bd-2").title("Two").updated("2025-11-03T10:00:00-08:00").extra(r#""labels":["a","feature"]"#).line(),
        issue("bd-3").title("Three").updated(T0).line(),
        issue("bd-4").title("Four").priority(1).updated("2025-11-03T10:00:00-08:00").line(),
    ])
}

/// main and feature edit the same issues with no driver configured: git merges line by line.
fn diverged(style: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.git(&["config", "merge.conflictStyle", style]);
    repo.commit_file(FILE, &base_file(), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &feature_file(), "feature");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &main_file(), "main");
    repo
}

/// What the driver writes for (base, ours, theirs).
fn driver_result(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, bytes) in [("base", base), ("ours", ours), ("theirs", theirs)] {
        std::fs::write(dir.path().join(name), bytes).expect("write");
    }
    let out = bd_merge(dir.path(), &["-q", "base", "ours", "theirs", "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn resolve(dir: &Path, args: &[&str]) -> Output {
    run(ours("bd-merge").current_dir(dir).arg("resolve").args(args))
}

fn has_markers(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).lines().any(|l| l.starts_with("<<<<<<<") || l.starts_with(">>>>>>>"))
}

#[test]
fn a_git_line_merge_is_resolved_from_the_index_stages_as_the_driver_would() {
    for style in ["merge", "diff3", "zdiff3"] {
        let repo = diverged(style);
        let out = repo.git_output(&["merge", "--no-edit", "feature"]);
        assert!(!out.status.success(), "{style}: git's line merge conflicts");
        assert!(has_markers(&repo.read(FILE)));
        let check = resolve(repo.path(), &["--check"]);
        assert_eq!(check.status.code(), Some(1), "{style}: --check says it needs resolving");
        let out = resolve(repo.path(), &["--stage"]);
        assert_eq!(out.status.code(), Some(0), "{style}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("index stages"));
        assert_eq!(repo.read(FILE), driver_result(&base_file(), &main_file(), &feature_file()), "{style}");
        repo.git(&["commit", "-q", "--no-edit"]);
        assert_eq!(resolve(repo.path(), &["--check"]).status.code(), Some(0), "{style}: nothing left to do");
    }
}

#[test]
fn a_file_committed_with_diff3_or_zdiff3_markers_is_repaired_as_the_driver_would() {
    for style in ["diff3", "zdiff3"] {
        let repo = diverged(style);
        assert!(!repo.git_output(&["merge", "--no-edit", "feature"]).status.success());
        // Someone commits the markers (a hosting service's editor, `git add -A`).
        repo.git(&["add", FILE]);
        repo.git(&["commit", "-q", "--no-edit"]);
        assert_eq!(resolve(repo.path(), &["--check"]).status.code(), Some(1), "{style}");
        let out = resolve(repo.path(), &[]);
        assert_eq!(out.status.code(), Some(0), "{style}: {}", String::from_utf8_lossy(&out.stderr));
        // The merge commit that committed the markers is redone from its parents and their base.
        assert!(String::from_utf8_lossy(&out.stderr).contains("merge commit"), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(repo.read(FILE), driver_result(&base_file(), &main_file(), &feature_file()), "{style}");
    }
}

#[test]
fn plain_markers_without_a_base_still_keep_both_sides() {
    let repo = diverged("merge");
    assert!(!repo.git_output(&["merge", "--no-edit", "feature"]).status.success());
    repo.git(&["add", FILE]);
    repo.git(&["commit", "-q", "--no-edit"]);
    let out = resolve(repo.path(), &["--conflict", "newest"]);
    let merged = String::from_utf8(repo.read(FILE)).expect("utf8");
    // The base of each hunk is lost: what both sides hold counts as added by both, and every
    // edit of either side is kept (the newer wins where they disagree).
    assert!(out.status.code() == Some(0) && !has_markers(merged.as_bytes()), "{merged}");
    assert!(merged.contains(r#""id":"bd-4""#) && merged.contains(r#""main""#) && merged.contains(r#""feature""#), "{merged}");
}

#[test]
fn a_rebase_stopped_on_the_issues_file_continues_after_resolve() {
    let repo = diverged("merge");
    repo.git(&["checkout", "-q", "feature"]);
    let out = repo.git_output(&["rebase", "main"]);
    assert!(!out.status.success(), "the rebase stops on the file");
    let out = resolve(repo.path(), &["--stage"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // During a rebase, ours is the branch being rebased onto (main) and theirs the replayed commit.
    assert_eq!(repo.read(FILE), driver_result(&base_file(), &main_file(), &feature_file()));
    let out = run(hermetic("git").current_dir(repo.path()).env("GIT_EDITOR", "true").args(["rebase", "--continue"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_conflicted_stash_pop_is_resolved_from_the_index_stages() {
    let repo = diverged("merge");
    // Uncommitted feature-like edits stashed, then main moves on.
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
    repo.write(FILE, &feature_file());
    repo.git(&["stash", "-q"]);
    repo.commit_file(FILE, &main_file(), "main again");
    assert!(!repo.git_output(&["stash", "pop"]).status.success(), "the pop conflicts");
    let out = resolve(repo.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(repo.read(FILE), driver_result(&base_file(), &main_file(), &feature_file()));
}

#[test]
fn merge_union_leaves_duplicate_ids_that_dedupe_merges() {
    let repo = TestRepo::new();
    repo.write(".gitattributes", b".beads/issues.jsonl merge=union\n");
    repo.git(&["add", ".gitattributes"]);
    repo.commit_file(FILE, &base_file(), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &feature_file(), "feature");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &main_file(), "main");
    assert!(repo.git_output(&["merge", "--no-edit", "feature"]).status.success(), "union never conflicts");
    let unioned = String::from_utf8(repo.read(FILE)).expect("utf8");
    assert!(unioned.matches(r#""id":"bd-1""#).count() >= 2, "{unioned}");
    let check = bd_sync(repo.path(), &["check"]);
    assert!(String::from_utf8_lossy(&check.stdout).contains("bd-merge dedupe"), "check points to dedupe");
    let dedupe = |args: &[&str]| run(ours("bd-merge").current_dir(repo.path()).arg("dedupe").args(args));
    assert_eq!(dedupe(&["--check"]).status.code(), Some(1));
    let out = dedupe(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let merged = String::from_utf8(repo.read(FILE)).expect("utf8");
    assert_eq!(merged.matches(r#""id":"bd-1""#).count(), 1, "{merged}");
    let bd1 = merged.lines().find(|l| l.contains(r#""id":"bd-1""#)).expect("bd-1");
    assert!(bd1.contains(r#""priority":0"#), "the newer copy's fields win what they disagree on: {bd1}");
    let bd2 = merged.lines().find(|l| l.contains(r#""id":"bd-2""#)).expect("bd-2");
    assert!(bd2.contains(r#""main""#) && bd2.contains(r#""feature""#), "sets are merged: {bd2}");
    assert_eq!(dedupe(&["--check"]).status.code(), Some(0));
}

#[test]
fn the_pre_commit_hook_resolves_a_file_with_markers_before_committing_it() {
    let repo = diverged("diff3");
    assert!(!repo.git_output(&["merge", "--no-edit", "feature"]).status.success());
    let with_markers = repo.read(FILE);
    repo.git(&["merge", "--abort"]);
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The markers arrive as a plain edit (pasted from a hosting service's conflict editor, say).
    repo.write(FILE, &with_markers);
    repo.git(&["add", FILE]);
    let out = run(hermetic("git").current_dir(repo.path()).env("PATH", path_with_our_binaries(&[])).args(["commit", "-q", "-m", "paste"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let committed = repo.git(&["show", &format!("HEAD:{FILE}")]);
    assert!(!has_markers(committed.as_bytes()), "the hook resolved the markers: {committed}");
    assert_eq!(committed.as_bytes(), driver_result(&base_file(), &main_file(), &feature_file()));
}

fn commented(id: &str, title: &str, comments: &[(i64, &str, &str)], at: &str) -> String {
    let list: Vec<String> = comments
        .iter()
        .map(|(n, text, when)| format!(r#"{{"id":{n},"issue_id":"{id}","author":"ann","text":"{text}","created_at":"{when}"}}"#))
        .collect();
    format!(
        concat!(
            r#"{{"id":"{id}","title":"{title}","status":"open","priority":2,"#,
            r#""created_at":"2025-11-01T10:00:00-08:00","updated_at":"{at}","comments":[{}]}}"#
        ),
        list.join(","),
        id = id,
        title = title,
        at = at
    )
}

/// Comment ids shared by two records no line of the conflict touched: git merged both records
/// cleanly (outside any hunk), so the sides rebuilt from plain markers hold both in common.
#[test]
fn regression_resolve_from_committed_markers_left_comment_ids_shared_across_records() {
    let repo = TestRepo::new();
    let filler = |n: u8| issue(&format!("bd-f{n}")).title("Filler").updated(T0).line();
    let lines = |one: String, two: String, three: String| jsonl(&[one, filler(1), filler(2), two, filler(3), filler(4), three]);
    let base = lines(commented("bd-1", "One", &[], T0), issue("bd-2").title("Two").updated(T0).line(), commented("bd-3", "Three", &[], T0));
    let t1 = "2025-11-02T10:00:00-08:00";
    let main = lines(
        commented("bd-1", "One", &[(5, "main's note", t1)], t1),
        issue("bd-2").title("Two on main").updated(t1).line(),
        commented("bd-3", "Three", &[], T0),
    );
    let t2 = "2025-11-03T10:00:00-08:00";
    let feature = lines(
        commented("bd-1", "One", &[], T0),
        issue("bd-2").title("Two on feature").updated(t2).line(),
        commented("bd-3", "Three", &[(5, "feature's note", t2)], t2),
    );
    repo.commit_file(FILE, &base, "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &feature, "feature");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &main, "main");
    assert!(!repo.git_output(&["merge", "--no-edit", "feature"]).status.success());
    repo.git(&["add", FILE]);
    repo.git(&["commit", "-q", "--no-edit"]);
    let out = resolve(repo.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let merged = String::from_utf8(repo.read(FILE)).expect("utf8");
    let mut seen = std::collections::BTreeMap::new();
    for line in merged.lines() {
        let record: serde_json::Value = serde_json::from_str(line).expect("parses");
        for c in record["comments"].as_array().into_iter().flatten() {
            if let Some(other) = seen.insert(c["id"].as_i64().expect("id"), record["id"].clone()) {
                panic!("comment id {} on {} and {}:\n{merged}", c["id"], other, record["id"]);
            }
        }
    }
    assert!(merged.contains("main's note") && merged.contains("feature's note"), "{merged}");
    let check = bd_sync(repo.path(), &["check"]);
    assert!(!String::from_utf8_lossy(&check.stdout).contains("comment id"), "{}", String::from_utf8_lossy(&check.stdout));
}

/// Two subtasks created under one child id in two clones, joined by `merge=union`: two issues,
/// not two copies of one.
#[test]
fn regression_dedupe_merged_two_subtasks_created_under_one_id_into_one() {
    let repo = TestRepo::new();
    let child = |title: &str, created: &str, comment: i64| {
        format!(
            concat!(
                r#"{{"id":"bd-ep.1","title":"{title}","status":"open","priority":2,"#,
                r#""created_at":"{created}","updated_at":"{created}","#,
                r#""dependencies":[{{"issue_id":"bd-ep.1","depends_on_id":"bd-ep","#,
                r#""type":"parent-child"}}],"comments":[{{"id":{comment},"issue_id":"bd-ep.1","#,
                r#""author":"ann","text":"on {title}","created_at":"{created}"}}]}}"#
            ),
            title = title,
            created = created,
            comment = comment
        )
    };
    let content = jsonl(&[
        issue("bd-ep").title("Epic").priority(1).updated(T0).line(),
        child("A's subtask", "2025-11-02T10:00:00-08:00", 1),
        child("B's subtask", "2025-11-02T11:00:00-08:00", 1),
    ]);
    repo.write(FILE, &content);
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let merged = String::from_utf8(repo.read(FILE)).expect("utf8");
    let records: Vec<serde_json::Value> = merged.lines().map(|l| serde_json::from_str(l).expect("parses")).collect();
    let find = |title: &str| records.iter().find(|r| r["title"] == title).unwrap_or_else(|| panic!("{title} is gone:\n{merged}"));
    assert_eq!(find("A's subtask")["id"], "bd-ep.1", "{merged}");
    let b = find("B's subtask");
    assert_eq!(b["id"], "bd-ep.2", "{merged}");
    assert_eq!(b["comments"][0]["issue_id"], "bd-ep.2");
    assert_eq!(b["dependencies"][0]["issue_id"], "bd-ep.2");
    assert_ne!(b["comments"][0]["id"], find("A's subtask")["comments"][0]["id"], "comment ids stay unique:\n{merged}");
}

/// bd 1.0.5's derived counts that disagree with the file: `check` warns and names the fix, which
/// makes them true.
#[test]
fn a_stale_derived_count_is_a_check_warning_that_dedupe_fixes() {
    let repo = TestRepo::new();
    let content = concat!(
        concat!(
            r#"{"_type":"issue","id":"bd-1","title":"One","dependencies":[{"issue_id":"bd-1","#,
            r#""depends_on_id":"bd-2","type":"blocks"}],"dependency_count":1,"#,
            r#""dependent_count":0,"comment_count":0}"#
        ),
        "\n",
        r#"{"_type":"issue","id":"bd-2","title":"Two","dependency_count":0,"dependent_count":0,"comment_count":0}"#,
        "\n"
    );
    repo.write(FILE, content.as_bytes());
    let check = || bd_sync(repo.path(), &["check"]);
    let report = String::from_utf8_lossy(&check().stdout).into_owned();
    assert!(report.contains("dependent_count is 0 but the file implies 1") && report.contains("bd-merge dedupe"), "{report}");
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(repo.read(FILE))
        .expect("utf8")
        .contains(r#""id":"bd-2","title":"Two","dependency_count":0,"dependent_count":1"#));
    assert!(!String::from_utf8_lossy(&check().stdout).contains("stale"), "fixed");
}

/// Comment ids across an upgrade (docs/trackers.md): one side's tracker wrote a new comment under its old
/// numeric id, the other (upgraded, bd 1.3 migration 0061) under a content-derived id. The driver,
/// `resolve` after a git line merge and `dedupe` after `merge=union` all write it once, under the
/// newer id, and agree byte for byte (fixture
/// `comment_added_on_both_sides_under_an_old_and_a_new_id_is_one_comment_under_the_new_id`).
#[test]
fn one_comment_under_an_old_and_a_new_id_is_one_comment_in_the_driver_resolve_and_dedupe() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/merge/comment_added_on_both_sides_under_an_old_and_a_new_id_is_one_comment_under_the_new_id");
    let read = |name: &str| std::fs::read(case.join(name)).expect("fixture");
    let (base, main, feature) = (read("base.jsonl"), read("ours.jsonl"), read("theirs.jsonl"));
    let expected = driver_result(&base, &main, &feature);
    assert_eq!(expected, read("expected.jsonl"), "the driver");
    let once = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        assert_eq!(text.matches("done, see PR").count(), 1, "one comment:\n{text}");
        assert!(text.contains(r#""id":"9f2c4e1ab7d05e83c6f1a2b4d8e07c95""#), "under the new id:\n{text}");
    };
    once(&expected);

    // resolve, after git's own line merge left markers.
    let repo = TestRepo::new();
    repo.commit_file(FILE, &base, "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &feature, "feature");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &main, "main");
    assert!(!repo.git_output(&["merge", "--no-edit", "feature"]).status.success(), "git's line merge conflicts");
    let out = resolve(repo.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&repo.read(FILE)), String::from_utf8_lossy(&expected), "resolve");

    // dedupe, after merge=union kept both lines.
    let repo = TestRepo::new();
    repo.write(FILE, &[main.clone(), feature.clone()].concat());
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    once(&repo.read(FILE));
}
