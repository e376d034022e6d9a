//! Every error names the fix a user can run: each test below reproduces a situation a newcomer
//! or an agent met, and pins that the message points at the command that gets them out of it
//! (and never at a flag the command does not have).

use std::process::Output;

use crate::support::{ours, run, TestRepo};

const MARKED: &str = concat!(
    "<<<<<<< HEAD\n",
    concat!(
        r#"{"id":"bd-1","title":"Ours","status":"open","priority":1,"issue_type":"task","#,
        r#""created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n=======\n",
    concat!(
        r#"{"id":"bd-1","title":"Theirs","status":"open","priority":1,"issue_type":"task","#,
        r#""created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-03T00:00:00Z"}"#
    ),
    "\n>>>>>>> topic\n",
    concat!(
        r#"{"id":"bd-2","title":"Other","status":"open","priority":2,"issue_type":"task","#,
        r#""created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
);

const CLEAN: &str = concat!(
    concat!(
        r#"{"id":"bd-1","title":"One","status":"open","priority":1,"issue_type":"task","#,
        r#""created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
);

fn tool(repo: &TestRepo, program: &str, args: &[&str]) -> Output {
    let db = repo.path().join(".git/beads-test-cache.db");
    let mut cmd = ours(program);
    cmd.current_dir(repo.path()).args(args).env("NO_COLOR", "1");
    if program == "bd-sync" {
        cmd.env("HOME", repo.path()).arg("--db").arg(db);
    }
    run(&mut cmd)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn committed_markers() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", MARKED.as_bytes(), "a merge committed with its conflict markers");
    repo
}

#[test]
fn committed_conflict_markers_ready_offers_skip_invalid_which_it_lacks() {
    let repo = committed_markers();
    for args in [&["ready"][..], &["blocked"], &["show", "bd-2"], &["status"]] {
        let out = tool(&repo, "bd-sync", args);
        if args == ["status"] {
            continue;
        }
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "bd-sync {args:?}: {err}");
        assert!(err.contains("bd-merge resolve"), "bd-sync {args:?} must name `bd-merge resolve`:\n{err}");
        assert!(!err.contains("--skip-invalid"), "bd-sync {args:?} has no --skip-invalid, yet offers it:\n{err}");
    }
}

#[test]
fn committed_conflict_markers_import_names_bd_merge_resolve() {
    let repo = committed_markers();
    let out = tool(&repo, "bd-sync", &["import"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bd-merge resolve .beads/issues.jsonl"), "{err}");
    assert!(err.contains("git add"), "the step after resolve: {err}");
    assert!(err.contains("--skip-invalid"), "import has --skip-invalid: {err}");
}

#[test]
fn committed_conflict_markers_post_merge_hook_names_bd_merge_resolve() {
    let repo = committed_markers();
    let out = tool(&repo, "bd-sync", &["hook", "post-merge", "0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "hooks fail open: {err}");
    assert!(err.contains("bd-merge resolve"), "{err}");
}

#[test]
fn committed_conflict_markers_check_says_finish_the_merge_that_is_gone() {
    let repo = committed_markers();
    let out = tool(&repo, "bd-sync", &["check"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("conflict-marker"), "{text}");
    assert!(text.contains("bd-merge resolve"), "{text}");
    assert!(!text.contains("finish or redo the merge"), "{text}");
}

#[test]
fn resolve_leaves_the_user_without_the_next_step() {
    let repo = committed_markers();
    let out = tool(&repo, "bd-merge", &["resolve"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("next: `git add .beads/issues.jsonl`"), "{err}");
    assert!(err.contains("commit"), "{err}");

    let repo = committed_markers();
    let out = tool(&repo, "bd-merge", &["resolve", "--stage"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("next: commit"), "{err}");
    assert!(!err.contains("git add"), "already staged: {err}");
}

fn installed() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", CLEAN.as_bytes(), "issues");
    let out = tool(&repo, "bd-sync", &["install"]);
    assert_eq!(out.status.code(), Some(0), "install: {}", stderr(&out));
    repo.git(&["add", ".gitattributes"]);
    repo.git(&["commit", "-q", "-m", "beads-git attributes"]);
    repo
}

#[test]
fn check_is_silent_about_a_driver_binary_that_no_longer_exists() {
    let repo = installed();
    let moved = repo.path().join("gone/bd-merge");
    repo.git(&["config", "merge.beads.driver", &format!("{} %O %A %B -l %L -p %P", moved.display())]);
    let out = tool(&repo, "bd-sync", &["check"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("driver-missing-binary")).unwrap_or_else(|| panic!("no driver-missing-binary:\n{text}"));
    assert!(line.contains("gone/bd-merge"), "{line}");
    assert!(line.contains("cargo install --locked") && line.contains("bd-sync install"), "{line}");
}

#[test]
fn check_reports_zero_errors_for_a_file_git_still_marks_conflicted() {
    let repo = installed();
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.commit_file(".beads/issues.jsonl", CLEAN.replace("One", "Topic").as_bytes(), "topic");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(".beads/issues.jsonl", CLEAN.replace("One", "Main").as_bytes(), "main");
    // A driver that fails (exit 2) leaves ours without markers, and the path unmerged.
    repo.git(&["config", "merge.beads.driver", "false %O %A %B"]);
    let merge = repo.git_output(&["merge", "-q", "topic"]);
    assert!(!merge.status.success(), "the merge must stop on the failed driver");
    let out = tool(&repo, "bd-sync", &["check"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("unresolved-conflict")).unwrap_or_else(|| panic!("no unresolved-conflict:\n{text}"));
    assert!(line.contains("bd-merge resolve"), "{line}");
}

#[test]
fn install_silently_sets_up_a_repository_without_beads() {
    let repo = TestRepo::new();
    repo.commit_file("README", b"not a tracker\n", "init");
    let out = tool(&repo, "bd-sync", &["install"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("warning") && err.contains("no .beads/"), "{err}");
    assert!(err.contains("bd-sync uninstall"), "how to undo: {err}");
}

/// The first clone to install committed `.gitattributes`; teammates' clones route the issues
/// file to the driver through it. Issue: uninstall deleted it and said "commit its removal",
/// which turns the driver off for everyone.
#[test]
fn regression_uninstall_deleted_the_teams_committed_gitattributes() {
    let repo = installed();
    let committed = std::fs::read(repo.path().join(".gitattributes")).expect("read");
    let out = tool(&repo, "bd-sync", &["uninstall"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(std::fs::read(repo.path().join(".gitattributes")).expect("kept"), committed, "kept byte for byte");
    assert!(err.contains(".gitattributes is committed and kept") && err.contains("everyone"), "what removing it would do: {err}");
    assert!(err.contains("bd-sync uninstall --team"), "how to remove it anyway: {err}");
    // This clone's own parts are gone; the team's file is still recorded for --team.
    assert!(repo.git_output(&["config", "--get", "merge.beads.driver"]).stdout.is_empty());
    let out = tool(&repo, "bd-sync", &["uninstall", "--team"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!repo.path().join(".gitattributes").exists(), "--team removes what install created");
    assert!(err.contains("git add .gitattributes") && err.contains("commit"), "what to commit: {err}");
}

/// A `merge=union` in `.git/info/attributes` outranks every `.gitattributes`. Issue: check said
/// "run `bd-sync install`", install said "nothing to change", check failed again, and neither
/// named the line that decides.
#[test]
fn regression_advice_looped_on_an_info_attributes_line_that_outranks_ours() {
    let repo = installed();
    repo.write(".git/info/attributes", b"# mine\n*.jsonl merge=union\n");
    let out = tool(&repo, "bd-sync", &["check"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("info/attributes:2 sets merge=union"), "check names the file and line: {said}");
    let out = tool(&repo, "bd-sync", &["install"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert_eq!(out.status.code(), Some(1), "install refuses, never 'nothing to change' while check fails: {said}");
    assert!(said.contains("info/attributes:2 sets merge=union") && said.contains("remove that line"), "{said}");
    // Doing what it says ends it.
    repo.write(".git/info/attributes", b"# mine\n");
    let out = tool(&repo, "bd-sync", &["install"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = tool(&repo, "bd-sync", &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
}
