//! A commit commits what it names. With an edit pending in the cache, the
//! pre-commit hook exports it and stages the issues file; but `git commit -- a.txt` and
//! `git commit --only a.txt` build their commit in a temporary index (git names it in
//! `GIT_INDEX_FILE`), and staging there put the file into a commit that named only `a.txt` while
//! the real index kept the old file, so the next plain commit put the old content back. Each of
//! git's ways of committing is tried here with the real hooks, and always the plain commit after.

use std::path::Path;
use std::process::Output;

use crate::support::{hermetic, issue, jsonl, path_with_our_binaries, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

/// A repository with two issues and `a.txt`, our hooks installed, the cache imported, and a
/// title edited in the cache (pending: not yet in the file).
fn repo_with_a_pending_edit() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(FILE, &jsonl(&[issue("bd-1").title("one").line(), issue("bd-2").title("two").line()]));
    repo.write("a.txt", b"a\n");
    repo.write("b.txt", b"b\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let install = run(hermetic(crate::support::bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(install.status.success(), "install: {}", String::from_utf8_lossy(&install.stderr));
    edit_in_cache(&repo.path().join(".git/beads/cache.db"), "bd-1", "edited in the cache");
    repo
}

fn edit_in_cache(db: &Path, id: &str, title: &str) {
    let conn = rusqlite::Connection::open(db).expect("the cache");
    assert_eq!(conn.execute("UPDATE issues SET title = ?1 WHERE id = ?2", [title, id]).expect("edit"), 1);
}

/// git in `dir` with our binaries on PATH (what a hook finds).
fn git_in(dir: &Path, args: &[&str]) -> std::process::Command {
    let mut cmd = hermetic("git");
    cmd.current_dir(dir).env("PATH", path_with_our_binaries(&[])).args(args);
    cmd
}

fn commit(dir: &Path, args: &[&str]) -> Output {
    let out = run(git_in(dir, &[]).arg("commit").args(args));
    assert!(out.status.success(), "git commit {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn files_of_head(dir: &Path) -> Vec<String> {
    let out = run(&mut git_in(dir, &["show", "--name-only", "--format=", "HEAD"]));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

fn committed(dir: &Path) -> String {
    String::from_utf8_lossy(&run(&mut git_in(dir, &["show", &format!("HEAD:{FILE}")])).stdout).into_owned()
}

fn staged(dir: &Path) -> String {
    String::from_utf8_lossy(&run(&mut git_in(dir, &["show", &format!(":{FILE}")])).stdout).into_owned()
}

/// A commit that names its paths leaves the issues file out, says so, and the next plain commit
/// carries the edit (nothing reverted, the index never behind the work tree).
fn names_only_its_paths(dir: &Path, form: &[&str]) {
    std::fs::write(dir.join("a.txt"), format!("a {form:?}\n")).expect("write");
    let out = commit(dir, form);
    assert_eq!(files_of_head(dir), ["a.txt"], "{form:?} commits only what it names");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("names its paths") && said.contains("next commit"), "{form:?}: one line says why: {said}");
    assert!(!committed(dir).contains("edited in the cache"), "{form:?}");
    assert_eq!(staged(dir), committed(dir), "{form:?}: the real index is not left holding another version");
    // The plain commit after it carries the edit; it reverts nothing.
    std::fs::write(dir.join("b.txt"), format!("b {form:?}\n")).expect("write");
    commit(dir, &["-q", "-am", "plain"]);
    let files = files_of_head(dir);
    assert!(files.contains(&FILE.to_owned()) && !files.contains(&"issues.jsonl".to_owned()), "staged where it lives: {files:?}");
    assert!(committed(dir).contains("edited in the cache"), "the next commit carries the edit: {}", committed(dir));
    assert_eq!(staged(dir), committed(dir));
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).expect("read"), committed(dir), "file, index and commit agree");
}

#[test]
fn regression_a_pathspec_commit_committed_the_issues_file_it_did_not_name() {
    let repo = repo_with_a_pending_edit();
    names_only_its_paths(repo.path(), &["-m", "only a", "--", "a.txt"]);
}

#[test]
fn regression_an_only_commit_committed_the_issues_file_it_did_not_name() {
    let repo = repo_with_a_pending_edit();
    names_only_its_paths(repo.path(), &["--only", "-m", "only a", "a.txt"]);
}

#[test]
fn a_pathspec_commit_with_all_tracked_changes_is_refused_by_git_and_exports_nothing() {
    // `git commit -a -- a.txt` is a usage error in git: the hook never runs, the edit stays.
    let repo = repo_with_a_pending_edit();
    repo.write("a.txt", b"changed\n");
    let out = run(&mut git_in(repo.path(), &["commit", "-a", "-m", "x", "--", "a.txt"]));
    assert!(!out.status.success());
    assert!(!std::fs::read_to_string(repo.path().join(FILE)).expect("read").contains("edited in the cache"));
}

#[test]
fn an_include_commit_takes_the_index_and_so_the_export() {
    // `--include` commits the real index plus the named paths: the export belongs there as in a
    // plain commit, and the index, the file and the commit agree after it.
    let repo = repo_with_a_pending_edit();
    repo.write("a.txt", b"included\n");
    commit(repo.path(), &["-q", "--include", "-m", "include", "a.txt"]);
    let files = files_of_head(repo.path());
    assert!(files.contains(&"a.txt".to_owned()) && files.contains(&FILE.to_owned()), "{files:?}");
    assert!(committed(repo.path()).contains("edited in the cache"));
    assert_eq!(staged(repo.path()), committed(repo.path()));
}

#[test]
fn a_pathspec_commit_in_a_linked_worktree_names_only_its_paths() {
    let repo = repo_with_a_pending_edit();
    let parent = tempfile::tempdir().expect("temp dir");
    let wt = parent.path().join("wt");
    run(git_in(repo.path(), &["worktree", "add", "-q", "-b", "side"]).arg(&wt));
    // The worktree keeps its own cache (in its own git dir): import it, then edit it.
    let out = run(hermetic(crate::support::bin("bd-sync")).current_dir(&wt).arg("import"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let git_dir = String::from_utf8_lossy(&run(&mut git_in(&wt, &["rev-parse", "--absolute-git-dir"])).stdout).trim().to_owned();
    edit_in_cache(&Path::new(&git_dir).join("beads/cache.db"), "bd-1", "edited in the cache");
    names_only_its_paths(&wt, &["-m", "only a", "--", "a.txt"]);
}

/// The issues file as a merge without the driver leaves it: conflict markers around one record.
fn with_markers() -> Vec<u8> {
    format!(
        "<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> theirs\n{}\n",
        issue("bd-1").title("ours").updated("2025-11-02T10:00:00-08:00").line(),
        issue("bd-1").title("one").description("theirs").updated("2025-11-03T10:00:00-08:00").line(),
        issue("bd-2").title("two").line()
    )
    .into_bytes()
}

#[test]
fn the_pre_commit_hook_resolves_conflict_markers_and_a_pathspec_commit_leaves_them_for_the_next() {
    // A plain commit: resolved field by field, staged, committed without markers.
    let repo = repo_with_a_pending_edit();
    repo.write(FILE, &with_markers());
    repo.write("a.txt", b"changed\n");
    commit(repo.path(), &["-q", "-am", "with markers"]);
    let committed_now = committed(repo.path());
    assert!(!committed_now.contains("<<<<<<<") && committed_now.contains("bd-2"), "{committed_now}");
    assert_eq!(staged(repo.path()), committed_now);
    // A pathspec commit: the markers stay out of it, and the line says the resolution waits.
    let repo = repo_with_a_pending_edit();
    repo.write(FILE, &with_markers());
    repo.write("a.txt", b"changed\n");
    let out = commit(repo.path(), &["-m", "only a", "--", "a.txt"]);
    assert_eq!(files_of_head(repo.path()), ["a.txt"]);
    assert!(std::fs::read_to_string(repo.path().join(FILE)).expect("read").contains("<<<<<<<"), "left for the next commit");
    assert!(String::from_utf8_lossy(&out.stderr).contains("next commit"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// bd 1.3 freezes its database for a migration with `.beads/MIGRATION-FREEZE` (and refuses its
/// own writes, exit 14): while it exists no hook exports, flushes, stages or imports, each says
/// so in one line, and `bd-sync check` reports the freeze once. Once it is gone, the next commit
/// exports as usual.
#[test]
fn a_migration_freeze_stops_every_hook_from_importing_or_exporting() {
    let repo = repo_with_a_pending_edit();
    let dir = repo.path();
    std::fs::write(dir.join(".beads/MIGRATION-FREEZE"), b"migrating to 0061\n").expect("freeze");
    std::fs::write(dir.join("a.txt"), b"a during the freeze\n").expect("write");
    let out = commit(dir, &["-q", "-am", "during the freeze"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(files_of_head(dir), ["a.txt"], "nothing exported or staged: {said}");
    assert!(said.contains("MIGRATION-FREEZE") && said.lines().filter(|l| l.contains("MIGRATION-FREEZE")).count() == 1, "{said}");
    assert!(!std::fs::read_to_string(dir.join(FILE)).expect("read").contains("edited in the cache"), "the file is untouched");
    // A checkout of another branch imports nothing either.
    run(&mut git_in(dir, &["branch", "other"]));
    let out = run(&mut git_in(dir, &["checkout", "-q", "other"]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MIGRATION-FREEZE"), "{}", String::from_utf8_lossy(&out.stderr));
    let check = run(hermetic(crate::support::bin("bd-sync")).current_dir(dir).args(["check", "--json"]));
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("check --json");
    let freezes = report["findings"].as_array().into_iter().flatten().filter(|f| f["kind"] == "migration-freeze").count();
    assert_eq!(freezes, 1, "{report}");
    std::fs::remove_file(dir.join(".beads/MIGRATION-FREEZE")).expect("thaw");
    std::fs::write(dir.join("a.txt"), b"a after\n").expect("write");
    commit(dir, &["-q", "-am", "after the freeze"]);
    assert!(committed(dir).contains("edited in the cache"), "exported once the freeze is gone");
}

/// br's database newer than the issues file, and no `br` on PATH (an alias, an absolute path, a
/// wrapper): before, the stale-file guard and `check` said nothing. Now each says, in one line,
/// what could not be checked and how to check it.
#[test]
fn regression_a_tracker_database_newer_than_the_file_without_br_on_path_was_passed_in_silence() {
    let repo = repo_with_a_pending_edit();
    let dir = repo.path();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(dir.join(".beads/beads.db"), b"br's database").expect("write");
    std::fs::write(dir.join("a.txt"), b"a later\n").expect("write");
    let out = commit(dir, &["-q", "-am", "with a newer tracker database"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        said.lines().filter(|l| l.contains("no `br` outside the repository is on PATH") && l.contains("br sync --status")).count(),
        1,
        "{said}"
    );
    // The commit exported the pending edit: the file is newer now; br writes again.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(dir.join(".beads/beads.db"), b"br's database, written again").expect("write");
    let check =
        run(hermetic(crate::support::bin("bd-sync")).current_dir(dir).env("PATH", path_with_our_binaries(&[])).args(["check", "--json"]));
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("check --json");
    let found = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|f| f["kind"] == "export-stale" && f["message"].as_str().is_some_and(|m| m.contains("could not be checked")));
    assert!(found, "{report}");
}

/// An interactive rebase in a linked worktree that drops one's own commit: the issue's record
/// goes back to an older `updated_at` than the pre-rebase tip's, which a tracker that imported
/// the dropped commit would skip. The post-rewrite hook (run in the worktree) gives that record
/// a new stamp, says so in one line, and leaves every other record's bytes alone.
#[test]
fn after_a_rebase_in_a_linked_worktree_a_record_taken_back_in_time_is_stamped() {
    let repo = TestRepo::new();
    let old = issue("bd-1").title("one").updated("2025-01-01T00:00:00Z").line();
    let other = issue("bd-2").title("two").updated("2025-01-01T00:00:00Z").line();
    repo.write(FILE, &jsonl(&[old.clone(), other.clone()]));
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let install = run(hermetic(crate::support::bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(install.status.success(), "install: {}", String::from_utf8_lossy(&install.stderr));
    let wt = repo.path().join("wt");
    run(&mut git_in(repo.path(), &["worktree", "add", "-q", wt.to_str().expect("utf8"), "-b", "side"]));
    let newer = issue("bd-1").title("one, retitled").updated("2025-06-01T00:00:00Z").line();
    std::fs::write(wt.join(FILE), jsonl(&[newer, other.clone()])).expect("write");
    commit(&wt, &["-q", "-am", "retitle bd-1"]);
    std::fs::write(wt.join("a.txt"), "x\n").expect("write");
    run(&mut git_in(&wt, &["add", "a.txt"]));
    commit(&wt, &["-q", "-m", "unrelated"]);
    // Drop the retitle: bd-1 goes back to its January record.
    let out = run(git_in(&wt, &[]).env("GIT_SEQUENCE_EDITOR", "sed -i -e '1s/^pick/drop/'").args(["rebase", "-q", "-i", "HEAD~2"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(said.lines().filter(|l| l.contains("the rebase left 1 record(s) older")).count(), 1, "{said}");
    let file = std::fs::read_to_string(wt.join(FILE)).expect("read");
    let lines: Vec<&str> = file.lines().collect();
    assert!(lines[0].contains("\"title\":\"one\"") && !lines[0].contains("2025-01-01T00:00:00Z"), "bd-1 stamped anew: {file}");
    assert_eq!(lines[1], other, "bd-2 untouched");
    // The primary checkout's file is not touched by the worktree's hook.
    assert_eq!(std::fs::read(repo.path().join(FILE)).expect("read"), jsonl(&[old, other]));
}

/// `git am` commits a mailed patch without the commit hooks (it runs the applypatch ones): the
/// patch's message is kept as written (no trailer added for work that is not the committer's),
/// its edit of the issues file reaches the cache, and neither the cache's pending edit nor the
/// patch's is reverted by the next plain commit.
#[test]
fn a_patch_applied_with_git_am_keeps_its_message_and_its_edit_and_the_pending_one() {
    let repo = repo_with_a_pending_edit();
    // The patch: bd-2 retitled, made in a scratch branch from HEAD and mailed.
    let text = String::from_utf8(std::fs::read(repo.path().join(FILE)).expect("read")).expect("utf-8");
    run(&mut git_in(repo.path(), &["checkout", "-q", "-b", "mailed"]));
    repo.write(FILE, text.replacen("\"title\":\"two\"", "\"title\":\"two, by mail\"", 1).as_bytes());
    let out = run(git_in(repo.path(), &["commit", "-q", "--no-verify", "-am", "Retitle bd-2 by mail"]).env("BD_HOOKS", "0"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let patch = run(&mut git_in(repo.path(), &["format-patch", "-1", "--stdout"])).stdout;
    run(&mut git_in(repo.path(), &["checkout", "-q", "-"]));
    let patch_file = repo.path().join(".git/mailed.patch");
    std::fs::write(&patch_file, patch).expect("write");
    run(&mut git_in(repo.path(), &["branch", "-q", "-D", "mailed"]));

    let am = run(git_in(repo.path(), &["am", "-q"]).arg(&patch_file).env("BD_ACTOR", "Alice"));
    assert!(am.status.success(), "git am: {}", String::from_utf8_lossy(&am.stderr));
    let message = String::from_utf8_lossy(&run(&mut git_in(repo.path(), &["log", "-1", "--format=%B"])).stdout).into_owned();
    assert_eq!(message.trim_end(), "Retitle bd-2 by mail", "the patch's message as written");
    assert!(committed(repo.path()).contains("two, by mail"));

    // The next plain commit carries the cache's pending edit and keeps the patch's.
    repo.write("a.txt", b"after am\n");
    commit(repo.path(), &["-q", "-am", "code"]);
    let file = committed(repo.path());
    assert!(file.contains("edited in the cache") && file.contains("two, by mail"), "{file}");
    let show = run(&mut git_in(repo.path(), &["status", "--porcelain", "--", FILE]));
    assert!(show.stdout.is_empty(), "the issues file is committed as it is: {}", String::from_utf8_lossy(&show.stdout));
}
