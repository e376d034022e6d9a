//! `bd-merge dedupe` and `resolve` use the history that produced the file (docs/repair.md): after a `merge=union` merge or a merge
//! committed with conflict markers, the merge
//! commit's parents and their merge base are in the repository, so the repair is the real
//! three-way merge and a teammate's claim survives. Without that history (a copy of the file in
//! another repository, a shallow clone) they fall back to merging against an empty base, say so on
//! stderr and log every field they decided.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{bd_merge, hermetic, issue, jsonl, run, Issue, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

const BASE_AT: &str = "2025-11-01T10:00:00Z";
const CLAIM_AT: &str = "2025-11-02T10:00:00Z";
const EDIT_AT: &str = "2025-11-03T10:00:00Z";

fn at(id: &str, updated: &str) -> Issue {
    issue(id).created(BASE_AT).updated(updated)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The record of `id` in a file, failing the test unless it stands on exactly one line.
fn the_record(file: &[u8], id: &str) -> Value {
    let needle = format!(r#""id":"{id}""#);
    let lines: Vec<&str> = std::str::from_utf8(file).expect("utf8").lines().filter(|l| l.contains(&needle)).collect();
    assert_eq!(lines.len(), 1, "{id} on one line:\n{}", text(file));
    serde_json::from_str(lines[0]).expect("a record")
}

/// Two clones of one repository: `ours` claims bd-1 (status in_progress, an assignee), the
/// teammate's clone (`theirs`) raises its priority later. `ours` has bd-2 untouched.
fn claimed_and_edited() -> (TestRepo, TestRepo) {
    let ours = TestRepo::new();
    ours.commit_file(FILE, &jsonl(&[at("bd-1", BASE_AT).line(), at("bd-2", BASE_AT).line()]), "base");
    let theirs = TestRepo { dir: tempfile::tempdir().expect("temp dir") };
    let out = run(hermetic("git").args(["clone", "-q"]).arg(ours.path()).arg(theirs.path()));
    assert!(out.status.success(), "{}", text(&out.stderr));
    ours.commit_file(
        FILE,
        &jsonl(&[at("bd-1", CLAIM_AT).status("in_progress").extra(r#""assignee":"alice""#).line(), at("bd-2", BASE_AT).line()]),
        "claim bd-1",
    );
    theirs.commit_file(FILE, &jsonl(&[at("bd-1", EDIT_AT).priority(0).line(), at("bd-2", BASE_AT).line()]), "bd-1 is urgent");
    (ours, theirs)
}

/// `git pull --no-rebase` of the teammate's main into `ours`.
fn pull(ours: &TestRepo, theirs: &TestRepo) -> Output {
    run(hermetic("git").current_dir(ours.path()).args(["pull", "-q", "--no-rebase", "--no-edit"]).arg(theirs.path()).arg("main"))
}

/// The claim and the edit joined by `merge=union` (in `.git/info/attributes`) and committed.
fn union_merged() -> TestRepo {
    let (ours, theirs) = claimed_and_edited();
    ours.write(".git/info/attributes", b".beads/issues.jsonl merge=union\n");
    let out = pull(&ours, &theirs);
    assert!(out.status.success(), "union never conflicts: {}", text(&out.stderr));
    assert_eq!(text(&ours.read(FILE)).matches(r#""id":"bd-1""#).count(), 2, "union kept both copies");
    ours
}

/// The claim and the edit merged by git's line merge, the conflict markers committed as they are.
fn markers_committed() -> TestRepo {
    let (ours, theirs) = claimed_and_edited();
    assert!(!pull(&ours, &theirs).status.success(), "the line merge conflicts");
    ours.git(&["add", FILE]);
    ours.git(&["commit", "-q", "--no-edit"]);
    assert!(text(&ours.read(FILE)).contains("<<<<<<<"), "the markers are committed");
    ours
}

fn review_json(dir: &Path) -> Vec<Value> {
    let out = bd_merge(dir, &["review", "--json"]);
    assert!(out.status.success(), "review --json: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("review --json is an array")
}

/// Both edits are in bd-1: the claim (status and assignee) and the teammate's priority.
fn assert_both_edits_kept(file: &[u8]) {
    let bd1 = the_record(file, "bd-1");
    assert_eq!(
        (bd1["status"].as_str(), bd1["assignee"].as_str(), bd1["priority"].as_u64()),
        (Some("in_progress"), Some("alice"), Some(0)),
        "the claim and the priority both survive: {bd1}"
    );
    assert_eq!(the_record(file, "bd-2")["title"].as_str(), Some("Issue bd-2"));
}

const FALLBACK: &str = "no merge commit";

#[test]
fn regression_dedupe_after_a_union_merge_kept_the_newer_copy_over_a_teammates_claim() {
    let repo = union_merged();
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_both_edits_kept(&repo.read(FILE));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("merge commit") && stderr.contains("three-way"), "says where the sides came from: {stderr}");
    assert!(!stderr.contains(FALLBACK), "{stderr}");
    assert_eq!(bd_merge(repo.path(), &["dedupe", "--check"]).status.code(), Some(0), "nothing left to do");
}

#[test]
fn dedupe_check_stays_read_only_with_history() {
    let repo = union_merged();
    let before = repo.read(FILE);
    assert_eq!(bd_merge(repo.path(), &["dedupe", "--check"]).status.code(), Some(1));
    assert_eq!(repo.read(FILE), before);
    assert!(review_json(repo.path()).is_empty(), "--check logs nothing");
}

#[test]
fn regression_resolve_of_committed_markers_merged_against_an_empty_base_and_lost_the_claim() {
    let repo = markers_committed();
    assert_eq!(bd_merge(repo.path(), &["resolve", "--check"]).status.code(), Some(1));
    let out = bd_merge(repo.path(), &["resolve"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let merged = repo.read(FILE);
    assert!(!text(&merged).contains("<<<<<<<"), "{}", text(&merged));
    assert_both_edits_kept(&merged);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("merge commit") && !stderr.contains(FALLBACK), "{stderr}");
}

#[test]
fn history_is_not_used_when_the_file_changed_since_the_merge_and_that_is_said() {
    let repo = union_merged();
    // A later commit edits bd-2: the file is no longer the merge commit's.
    let mut later = repo.read(FILE);
    later.extend_from_slice(at("bd-3", EDIT_AT).line().as_bytes());
    later.push(b'\n');
    repo.commit_file(FILE, &later, "bd-3");
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("changed since"), "{stderr}");
    let merged = repo.read(FILE);
    the_record(&merged, "bd-1");
    the_record(&merged, "bd-3");
}

#[test]
fn without_history_dedupe_and_resolve_say_so_and_log_every_field_they_decided() {
    // The unioned file copied into a fresh repository: no merge commit made it.
    let unioned = union_merged().read(FILE);
    let fresh = TestRepo::new();
    fresh.commit_file(FILE, &unioned, "copied");
    let out = bd_merge(fresh.path(), &["dedupe"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(FALLBACK) && stderr.contains("empty base"), "{stderr}");
    let entries = review_json(fresh.path());
    let fields: Vec<(&str, &str)> =
        entries.iter().map(|e| (e["command"].as_str().unwrap_or(""), e["field"].as_str().unwrap_or(""))).collect();
    assert!(fields.contains(&("bd-merge dedupe", "status")), "review lists the decided status: {fields:?}");
    // The claim's assignee was kept by a field rule (one copy lacks it), not the policy: still a
    // decision, listed so the other copy's value can be restored.
    assert!(fields.contains(&("bd-merge dedupe", "assignee")), "review lists every field decided: {fields:?}");
    assert!(text(&bd_merge(fresh.path(), &["review"]).stdout).contains("status"));

    let with_markers = markers_committed().read(FILE);
    let fresh = TestRepo::new();
    fresh.commit_file(FILE, &with_markers, "copied");
    let out = bd_merge(fresh.path(), &["resolve"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(FALLBACK) && stderr.contains("empty base"), "{stderr}");
    let entries = review_json(fresh.path());
    for field in ["status", "assignee"] {
        assert!(
            entries.iter().any(|e| e["command"].as_str() == Some("bd-merge resolve") && e["field"].as_str() == Some(field)),
            "review lists {field}: {entries:?}"
        );
    }
}

#[test]
fn a_shallow_clone_without_the_merge_parents_falls_back_cleanly() {
    let repo = union_merged();
    let with_markers = markers_committed();
    for (source, command) in [(&repo, "dedupe"), (&with_markers, "resolve")] {
        for depth in ["1", "2"] {
            let shallow = tempfile::tempdir().expect("temp dir");
            let url = format!("file://{}", source.path().display());
            let out = run(hermetic("git").args(["clone", "-q", "--depth", depth, &url]).arg(shallow.path()));
            assert!(out.status.success(), "{}", text(&out.stderr));
            let out = bd_merge(shallow.path(), &[command]);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{command} at depth {depth}: {stderr}");
            assert!(stderr.contains(FALLBACK) && stderr.contains("empty base"), "{command} at depth {depth}: {stderr}");
            let merged = std::fs::read(shallow.path().join(FILE)).expect("read");
            assert!(!text(&merged).contains("<<<<<<<"), "{}", text(&merged));
            the_record(&merged, "bd-1");
        }
    }
}

/// `n` issues, every one claimed on one side and re-prioritised on the other, joined by
/// `merge=union`: `n` ids on two lines each.
fn union_of(n: usize) -> TestRepo {
    let ours = TestRepo::new();
    let file = |f: &dyn Fn(&str) -> Issue| jsonl(&(0..n).map(|i| f(&format!("bd-{i}")).line()).collect::<Vec<_>>());
    ours.commit_file(FILE, &file(&|id| at(id, BASE_AT)), "base");
    ours.write(".git/info/attributes", b".beads/issues.jsonl merge=union\n");
    ours.git(&["checkout", "-q", "-b", "feature"]);
    ours.commit_file(FILE, &file(&|id| at(id, EDIT_AT).priority(0)), "feature");
    ours.git(&["checkout", "-q", "main"]);
    ours.commit_file(FILE, &file(&|id| at(id, CLAIM_AT).status("in_progress").extra(r#""assignee":"alice""#)), "claim");
    assert!(ours.git_output(&["merge", "-q", "--no-edit", "feature"]).status.success());
    ours
}

#[test]
fn dedupe_with_history_takes_linear_time() {
    let timed = |n: usize| -> Duration {
        let repo = union_of(n);
        let start = Instant::now();
        let out = bd_merge(repo.path(), &["dedupe"]);
        let took = start.elapsed();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let merged = repo.read(FILE);
        assert_eq!(text(&merged).lines().count(), n);
        let last = the_record(&merged, &format!("bd-{}", n - 1));
        assert_eq!((last["status"].as_str(), last["priority"].as_u64()), (Some("in_progress"), Some(0)));
        took
    };
    let small = timed(500);
    let large = timed(2_000);
    assert!(large < small * 8, "4x the issues took {large:?} against {small:?}");
}
