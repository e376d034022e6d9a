//! The merge log and `bd-merge review`, on real git: a `git pull --rebase` where both sides
//! retitled one issue, a delete-vs-modify merge, `dedupe` after `merge=union`, a rename of a
//! concurrent child, rotation, and a log directory that cannot be written.

use std::path::Path;

use predicates::prelude::*;
use serde_json::Value;

use crate::support::{bd_merge, bd_sync, bin, hermetic, issue, jsonl, ours, run, Issue, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

/// The review tests' issue: stamps in UTC.
fn titled(id: &str, title: &str) -> Issue {
    issue(id).title(title).created("2025-11-01T10:00:00Z")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn log_entries(dir: &Path) -> Vec<Value> {
    let out = bd_merge(dir, &["review", "--json"]);
    assert!(out.status.success(), "review --json: {}", text(&out.stderr));
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("review --json is an array")
}

fn common_dir(repo: &TestRepo) -> std::path::PathBuf {
    let dir = repo.git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    std::path::PathBuf::from(dir.trim())
}

/// A remote with bd-1, a clone where the user retitles it, and upstream retitling it later.
fn retitled_on_both_sides() -> (TestRepo, TestRepo) {
    let upstream = TestRepo::new();
    upstream.register_merge_driver("");
    upstream.commit_file(FILE, &jsonl(&[titled("bd-1", "Parser crash").updated("2025-11-01T10:00:00Z").line()]), "base");
    let clone = TestRepo { dir: tempfile::tempdir().expect("temp dir") };
    run(hermetic("git").args(["clone", "-q"]).arg(upstream.path()).arg(clone.path()));
    clone.register_merge_driver_config();
    clone.commit_file(
        FILE,
        &jsonl(&[titled("bd-1", "Fix parser crash on empty input").updated("2025-11-02T09:00:00Z").line()]),
        "retitle bd-1",
    );
    upstream.commit_file(
        FILE,
        &jsonl(&[titled("bd-1", "Parser: crash on empty file").updated("2025-11-02T10:00:00Z").line()]),
        "upstream retitle",
    );
    (upstream, clone)
}

impl TestRepo {
    /// The driver in this clone's config (the attributes came with the clone).
    fn register_merge_driver_config(&self) {
        let driver = format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y", bin("bd-merge").display());
        self.git(&["config", "merge.beads.driver", &driver]);
    }
}

#[test]
fn a_pull_rebase_that_lost_your_title_shows_it_with_its_labels_and_restore_brings_it_back() {
    let (_upstream, clone) = retitled_on_both_sides();
    let out = clone.git_output(&["pull", "--rebase", "-q"]);
    assert!(out.status.success(), "pull --rebase: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(r#"title: kept "Parser: crash on empty file" from upstream (origin/main) over your commit "#)
            && stderr.contains(r#"'s "Fix parser crash on empty input""#),
        "the driver names upstream and your commit: {stderr}"
    );
    // git dropped the user's commit as already upstream: only the log remembers the title.
    assert_eq!(clone.git(&["log", "--format=%s"]).lines().next(), Some("upstream retitle"));

    let entries = log_entries(clone.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!(e["command"], "bd-merge");
    assert_eq!(e["rebase"], true);
    assert_eq!(e["labels"]["ours"], "origin/main");
    assert!(e["labels"]["theirs"].as_str().is_some_and(|l| l.ends_with("(retitle bd-1)")), "{e}");
    assert_eq!((e["id"].as_str(), e["field"].as_str(), e["reason"].as_str()), (Some("bd-1"), Some("title"), Some("newest")));
    assert_eq!(e["kept"], "Parser: crash on empty file");
    assert_eq!(e["dropped"], "Fix parser crash on empty input");
    assert_eq!((e["kept_from"].as_str(), e["dropped_from"].as_str()), (Some("ours"), Some("theirs")));

    let review = bd_merge(clone.path(), &["review"]);
    assert!(review.status.success());
    let head = e["head"].as_str().expect("head");
    let human = text(&review.stdout).replace(&head[..12], "[HEAD]");
    let hash = e["labels"]["theirs"].as_str().expect("label").split(' ').next().expect("hash").to_owned();
    insta::assert_snapshot!("review_after_pull_rebase", human.replace(&hash, "[COMMIT]"));

    let restore = bd_merge(clone.path(), &["review", "--restore", "1"]);
    assert!(restore.status.success(), "restore: {}", text(&restore.stderr));
    let restored = text(&clone.read(FILE));
    assert!(restored.contains(r#""title":"Fix parser crash on empty input""#), "{restored}");
    assert!(restored.contains(r#""updated_at":"2025-11-02T10:00:01Z""#), "ticked past the current stamp: {restored}");
    clone.git(&["commit", "-q", "-am", "restore my title"]);
    let committed = clone.git(&["show", &format!("HEAD:{FILE}")]);
    assert!(committed.contains("Fix parser crash on empty input"), "the commit carries it: {committed}");

    // Restoring again: the field now holds the dropped value.
    ours("bd-merge")
        .current_dir(clone.path())
        .args(["review", "--restore", "1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("already has the dropped value"));
}

#[test]
fn restore_refuses_a_field_that_changed_again_since_the_merge() {
    let (_upstream, clone) = retitled_on_both_sides();
    assert!(clone.git_output(&["pull", "--rebase", "-q"]).status.success());
    let before = jsonl(&[titled("bd-1", "A third title").updated("2025-11-03T10:00:00Z").line()]);
    clone.write(FILE, &before);
    let out = bd_merge(clone.path(), &["review", "--restore", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("title changed again since that merge") && stderr.contains("A third title"), "{stderr}");
    assert_eq!(clone.read(FILE), before, "nothing written");
}

#[test]
fn a_merge_with_delete_vs_modify_is_logged_as_a_dropped_deletion() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    repo.commit_file(
        FILE,
        &jsonl(&[
            titled("bd-1", "One").updated("2025-11-01T10:00:00Z").line(),
            titled("bd-2", "Two").updated("2025-11-01T10:00:00Z").line(),
        ]),
        "base",
    );
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "One").updated("2025-11-01T10:00:00Z").line()]), "delete bd-2");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(
        FILE,
        &jsonl(&[
            titled("bd-1", "One").updated("2025-11-01T10:00:00Z").line(),
            titled("bd-2", "Two, edited").updated("2025-11-02T10:00:00Z").line(),
        ]),
        "edit bd-2",
    );
    let out = repo.git_output(&["merge", "-q", "--no-edit", "feature"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!((e["field"].as_str(), e["reason"].as_str()), (Some("(record)"), Some("delete-vs-modify")));
    assert_eq!((e["labels"]["ours"].as_str(), e["labels"]["theirs"].as_str()), (Some("HEAD"), Some("feature")));
    assert!(e.get("dropped").is_none(), "the deletion has no value: {e}");
    assert!(e["kept"]["title"] == "Two, edited", "{e}");
    let human = text(&bd_merge(repo.path(), &["review"]).stdout);
    assert!(!human.contains("--restore"), "a record is not restorable: {human}");
    ours("bd-merge")
        .current_dir(repo.path())
        .args(["review", "--restore", "1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("whole record"));
}

#[test]
fn dedupe_after_merge_union_logs_the_title_it_dropped() {
    let repo = TestRepo::new();
    repo.write(".gitattributes", b".beads/issues.jsonl merge=union\n");
    repo.git(&["add", ".gitattributes"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Feature title").updated("2025-11-02T10:00:00Z").line()]), "feature");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Main title").updated("2025-11-03T10:00:00Z").line()]), "main");
    assert!(repo.git_output(&["merge", "-q", "--no-edit", "feature"]).status.success());
    assert_eq!(text(&repo.read(FILE)).lines().count(), 2, "union kept both lines");
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    // The union merge is redone from its parents: the policy decided, the sides are the parents.
    assert_eq!(
        (e["command"].as_str(), e["reason"].as_str(), e["field"].as_str()),
        (Some("bd-merge dedupe"), Some("newest"), Some("title"))
    );
    assert_eq!((e["kept"].as_str(), e["dropped"].as_str()), (Some("Main title"), Some("Feature title")));
    let first_parent = repo.git(&["rev-parse", "--short", "HEAD^1"]);
    assert_eq!((e["labels"]["ours"].as_str(), e["labels"]["theirs"].as_str()), (Some(first_parent.trim()), Some("feature")));
    insta::assert_snapshot!("review_after_dedupe", text(&bd_merge(repo.path(), &["review", "--id", "bd-1"]).stdout));
}

#[test]
fn a_concurrent_child_renamed_by_the_merge_is_logged() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Epic").updated("2025-11-01T10:00:00Z").line()]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let child = |title: &str, created: &str| {
        titled("bd-1.1", title)
            .updated(created)
            .line()
            .replace("\"created_at\":\"2025-11-01T10:00:00Z\"", &format!("\"created_at\":\"{created}\""))
    };
    repo.commit_file(
        FILE,
        &jsonl(&[titled("bd-1", "Epic").updated("2025-11-01T10:00:00Z").line(), child("Feature subtask", "2025-11-02T10:00:00Z")]),
        "feature subtask",
    );
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(
        FILE,
        &jsonl(&[titled("bd-1", "Epic").updated("2025-11-01T10:00:00Z").line(), child("Main subtask", "2025-11-02T09:00:00Z")]),
        "main subtask",
    );
    let out = repo.git_output(&["merge", "-q", "--no-edit", "feature"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    let e = entries.iter().find(|e| e["reason"] == "rename").unwrap_or_else(|| panic!("a rename entry: {entries:?}"));
    assert_eq!((e["id"].as_str(), e["kept"].as_str(), e["kept_from"].as_str()), (Some("bd-1.1"), Some("bd-1.2"), Some("theirs")));
    assert!(text(&repo.read(FILE)).contains(r#""id":"bd-1.2","title":"Feature subtask""#));
    let human = text(&bd_merge(repo.path(), &["review"]).stdout);
    assert!(human.contains("feature's issue moved to \"bd-1.2\"; HEAD's issue keeps \"bd-1.1\""), "{human}");
}

/// Two branches that both retitle bd-1, `n` times over, merged into main one after the other.
fn merge_retitles(repo: &TestRepo, rounds: std::ops::Range<usize>, title_len: usize) {
    for i in rounds {
        let pad = "x".repeat(title_len);
        repo.git(&["checkout", "-q", "-b", &format!("side-{i}")]);
        repo.commit_file(
            FILE,
            &jsonl(&[titled("bd-1", &format!("side {i} {pad}")).updated(&format!("2025-11-02T10:{:02}:00Z", i % 60)).line()]),
            "side",
        );
        repo.git(&["checkout", "-q", "main"]);
        repo.commit_file(
            FILE,
            &jsonl(&[titled("bd-1", &format!("main {i} {pad}")).updated(&format!("2025-11-02T11:{:02}:00Z", i % 60)).line()]),
            "main",
        );
        let out = repo.git_output(&["merge", "-q", "--no-edit", &format!("side-{i}")]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

#[test]
fn a_log_past_its_size_bound_is_rotated_and_both_generations_are_reviewed() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    let beads = common_dir(&repo).join("beads");
    // Fill the log near its bound with real entries, then merge past it.
    merge_retitles(&repo, 0..1, 10);
    let first = std::fs::read_to_string(beads.join("merge-log.jsonl")).expect("log written");
    let line = first.lines().next().expect("one entry").to_owned();
    let mut filler = String::new();
    let mut copies = 0u64;
    while filler.len() + 2 * line.len() < (4usize << 20) {
        copies += 1;
        filler.push_str(&format!("{}\n", line.replacen("\"seq\":1,", &format!("\"seq\":{copies},"), 1)));
    }
    std::fs::write(beads.join("merge-log.jsonl"), &filler).expect("fill");
    merge_retitles(&repo, 1..3, 10);
    let rotated = std::fs::read_to_string(beads.join("merge-log.1.jsonl")).expect("rotated generation");
    let current = std::fs::read_to_string(beads.join("merge-log.jsonl")).expect("new generation");
    assert!(rotated.len() <= 4 << 20 && current.len() < 4096, "rotated at the bound: {} + {}", rotated.len(), current.len());
    assert_eq!(rotated.lines().count() + current.lines().count(), copies as usize + 2, "no entry lost");
    let listed = bd_merge(repo.path(), &["review", "--last", "3", "--json"]);
    let listed: Vec<Value> = serde_json::from_slice(&listed.stdout).expect("json");
    let got: Vec<u64> = listed.iter().map(|e| e["seq"].as_u64().expect("seq")).collect();
    assert_eq!(got, [copies + 2, copies + 1, copies], "newest first, numbering continued across both files");
}

#[test]
fn an_unwritable_log_directory_never_fails_the_merge() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    std::fs::write(common_dir(&repo).join("beads"), b"not a directory\n").expect("block the log dir");
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Side").updated("2025-11-02T10:00:00Z").line()]), "side");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Main").updated("2025-11-03T10:00:00Z").line()]), "main");
    let out = repo.git_output(&["merge", "--no-edit", "side"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "the merge succeeds: {stderr}");
    assert_eq!(stderr.matches("could not write the merge log").count(), 1, "one warning: {stderr}");
    assert!(text(&repo.read(FILE)).contains("\"title\":\"Main\""));
    assert!(repo.git(&["status", "--porcelain"]).trim().is_empty(), "merge committed");
}

#[test]
fn a_symlinked_log_is_never_written_through() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    let beads = common_dir(&repo).join("beads");
    std::fs::create_dir_all(&beads).expect("mkdir");
    let victim = repo.path().join("victim.txt");
    std::fs::write(&victim, b"precious\n").expect("victim");
    std::os::unix::fs::symlink(&victim, beads.join("merge-log.jsonl")).expect("symlink");
    merge_retitles(&repo, 0..1, 3);
    assert_eq!(std::fs::read(&victim).expect("victim"), b"precious\n");
}

#[test]
fn outside_a_repository_the_driver_logs_nothing_and_review_says_why() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, title) in [("base", "B"), ("ours", "O"), ("theirs", "T")] {
        std::fs::write(dir.path().join(name), jsonl(&[titled("bd-1", title).updated("2025-11-01T10:00:00Z").line()])).expect("write");
    }
    let out = bd_merge(dir.path(), &["base", "ours", "theirs"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("merge log"), "{}", text(&out.stderr));
    ours("bd-merge").current_dir(dir.path()).arg("review").assert().code(2).stderr(predicate::str::contains("not in a git repository"));
}

#[test]
fn the_post_merge_hook_counts_overridden_values_once_and_check_notes_the_unreviewed() {
    let repo = TestRepo::new();
    repo.commit_file(
        FILE,
        &jsonl(&[
            titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line(),
            titled("bd-2", "Two").updated("2025-11-01T10:00:00Z").line(),
        ]),
        "base",
    );
    let out = bd_sync(repo.path(), &["install"]);
    assert!(out.status.success(), "install: {}", text(&out.stderr));
    repo.git(&["add", ".gitattributes"]);
    repo.git(&["commit", "-q", "-m", "install"]);
    let two =
        |t1: &str, s1: &str, t2: &str, s2: &str| jsonl(&[titled("bd-1", t1).updated(s1).line(), titled("bd-2", t2).updated(s2).line()]);

    // Both sides retitle bd-1: one value overridden, one line from the hook.
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.commit_file(FILE, &two("Side", "2025-11-02T10:00:00Z", "Two", "2025-11-01T10:00:00Z"), "side");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &two("Main", "2025-11-03T10:00:00Z", "Two", "2025-11-01T10:00:00Z"), "main");
    let merged = repo.git_output(&["merge", "--no-edit", "side"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let announced = ONE_OVERRIDE_ANNOUNCED;
    assert_eq!(text(&merged.stderr).matches(announced).count(), 1, "{}", text(&merged.stderr));

    // check mentions them as a note, exit code unchanged.
    ours("bd-sync")
        .current_dir(repo.path())
        .arg("check")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("note unreviewed-overrides: merges in this clone overrode 1 value(s)"))
        .stderr(predicate::str::contains("1 note"));
    assert_eq!(bd_sync(repo.path(), &["check", "--strict"]).status.code(), Some(0), "a note never fails --strict");

    // A clean merge: nothing said about overrides (the old one was announced already).
    repo.git(&["checkout", "-q", "-b", "clean"]);
    repo.commit_file(FILE, &two("Main", "2025-11-03T10:00:00Z", "Two, edited", "2025-11-04T10:00:00Z"), "clean side");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &two("Main, edited", "2025-11-05T10:00:00Z", "Two", "2025-11-01T10:00:00Z"), "clean main");
    let clean = repo.git_output(&["merge", "--no-edit", "clean"]);
    assert!(clean.status.success(), "{}", text(&clean.stderr));
    assert!(!text(&clean.stderr).contains("chose for you"), "{}", text(&clean.stderr));

    // Listing another issue's entries is not reviewing these; listing them clears the note.
    assert!(bd_merge(repo.path(), &["review", "--id", "bd-2"]).status.success());
    assert!(text(&bd_sync(repo.path(), &["check"]).stdout).contains("unreviewed-overrides"));
    assert!(bd_merge(repo.path(), &["review"]).status.success());
    assert!(!text(&bd_sync(repo.path(), &["check"]).stdout).contains("unreviewed-overrides"));
}

/// main and feature retitle bd-1 (main later); returns the repository on main, no driver.
fn retitled_branches() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Feature").updated("2025-11-02T10:00:00Z").line()]), "feature");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Main").updated("2025-11-03T10:00:00Z").line()]), "main");
    repo
}

#[test]
fn resolve_and_update_branch_log_under_their_own_names() {
    let repo = retitled_branches();
    assert!(!repo.git_output(&["merge", "-q", "--no-edit", "feature"]).status.success(), "a line merge conflicts");
    let out = bd_merge(repo.path(), &["resolve"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!((entries[0]["command"].as_str(), entries[0]["dropped"].as_str()), (Some("bd-merge resolve"), Some("Feature")));
    assert_eq!((entries[0]["labels"]["ours"].as_str(), entries[0]["labels"]["theirs"].as_str()), (Some("HEAD"), Some("feature")));

    let repo = retitled_branches();
    repo.git(&["checkout", "-q", "feature"]);
    let out = bd_merge(repo.path(), &["update-branch", "main"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!(
        (e["command"].as_str(), e["kept"].as_str(), e["dropped"].as_str()),
        (Some("bd-merge update-branch"), Some("Main"), Some("Feature"))
    );
    assert_eq!((e["labels"]["ours"].as_str(), e["labels"]["theirs"].as_str()), (Some("HEAD"), Some("main")));
}

#[test]
fn an_import_three_way_merge_logs_the_file_value_it_dropped() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    let db = repo.path().join("cache.db");
    let sync = |args: &[&str]| run(ours("bd-sync").current_dir(repo.path()).arg("--db").arg(&db).args(args));
    assert!(sync(&["import"]).status.success());
    let conn = rusqlite::Connection::open(&db).expect("cache");
    conn.execute_batch("UPDATE issues SET title = 'From the cache' WHERE id = 'bd-1'").expect("edit");
    drop(conn);
    repo.write(FILE, &jsonl(&[titled("bd-1", "From the file").updated("2025-11-02T10:00:00Z").line()]));
    let out = sync(&["import"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!((e["command"].as_str(), e["path"].as_str()), (Some("bd-sync import"), Some(FILE)));
    assert_eq!((e["kept"].as_str(), e["dropped"].as_str()), (Some("From the cache"), Some("From the file")));
    assert_eq!((e["labels"]["ours"].as_str(), e["labels"]["theirs"].as_str()), (Some("the cache"), Some("the file")));
}

#[test]
fn restoring_a_dropped_status_puts_back_its_whole_group() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    repo.commit_file(
        FILE,
        &jsonl(&[
            titled("bd-1", "One").updated("2025-11-01T10:00:00Z").line(),
            titled("bd-2", "Two").updated("2025-11-01T10:00:00Z").line(),
        ]),
        "base",
    );
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let started = titled("bd-1", "One").updated("2025-11-02T10:00:00Z").line().replace(r#""status":"open""#, r#""status":"in_progress""#);
    repo.commit_file(FILE, &jsonl(&[started, titled("bd-2", "Two").updated("2025-11-01T10:00:00Z").line()]), "start bd-1");
    repo.git(&["checkout", "-q", "main"]);
    let closed = titled("bd-1", "One")
        .updated("2025-11-03T10:00:00Z")
        .line()
        .replace(r#""status":"open""#, r#""status":"closed","closed_at":"2025-11-03T10:00:00Z","close_reason":"dup""#);
    repo.commit_file(FILE, &jsonl(&[closed, titled("bd-2", "Two").updated("2025-11-01T10:00:00Z").line()]), "close bd-1");
    assert!(repo.git_output(&["merge", "-q", "--no-edit", "feature"]).status.success());
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["field"], "status");
    assert_eq!(entries[0]["dropped"], serde_json::json!({"status": "in_progress"}));
    let before = text(&repo.read(FILE));
    let out = bd_merge(repo.path(), &["review", "--restore", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let after = text(&repo.read(FILE));
    let bd1: Value = serde_json::from_str(after.lines().next().expect("bd-1")).expect("json");
    assert_eq!(bd1["status"], "in_progress");
    assert!(bd1.get("closed_at").is_none() && bd1.get("close_reason").is_none(), "an open issue has no closed_at: {bd1}");
    assert_eq!(after.lines().nth(1), before.lines().nth(1), "the other record byte for byte");
}

#[test]
fn a_pull_rebase_with_the_hooks_installed_prints_one_line_about_it() {
    let (_upstream, clone) = retitled_on_both_sides();
    let out = bd_sync(clone.path(), &["install"]);
    assert!(out.status.success(), "install: {}", text(&out.stderr));
    clone.git(&["commit", "-q", "-am", "install"]);
    let pulled = clone.git_output(&["pull", "--rebase", "-q"]);
    assert!(pulled.status.success(), "{}", text(&pulled.stderr));
    let line = ONE_OVERRIDE_ANNOUNCED;
    assert_eq!(text(&pulled.stderr).matches(line).count(), 1, "{}", text(&pulled.stderr));
}

#[test]
fn dedupe_of_two_children_created_under_one_id_logs_the_rename() {
    let repo = TestRepo::new();
    let child = |title: &str, created: &str| {
        titled("bd-1.1", title)
            .updated(created)
            .line()
            .replace("\"created_at\":\"2025-11-01T10:00:00Z\"", &format!("\"created_at\":\"{created}\""))
    };
    repo.commit_file(
        FILE,
        &jsonl(&[
            titled("bd-1", "Epic").updated("2025-11-01T10:00:00Z").line(),
            child("Earlier subtask", "2025-11-02T09:00:00Z"),
            child("Later subtask", "2025-11-02T10:00:00Z"),
        ]),
        "left by merge=union",
    );
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries = log_entries(repo.path());
    assert_eq!(entries.len(), 1, "{entries:?}");
    let e = &entries[0];
    assert_eq!((e["reason"].as_str(), e["id"].as_str(), e["kept"].as_str()), (Some("rename"), Some("bd-1.1"), Some("bd-1.2")));
    assert_eq!((e["labels"]["ours"].as_str(), e["labels"]["theirs"].as_str()), (Some("the copy on line 2"), Some("the copy on line 3")));
    assert!(text(&repo.read(FILE)).contains(r#""id":"bd-1.2","title":"Later subtask""#));
}

/// A repository with `bd-sync install`'s hooks and committed attributes, where a plain union
/// merge left two copies of bd-1 that `bd-merge dedupe` then merged (one title dropped, logged)
/// and the result was committed.
fn installed_and_deduped() -> TestRepo {
    let repo = installed_with_one_issue();
    repo.commit_file(
        FILE,
        &jsonl(&[
            titled("bd-1", "Copy one").updated("2025-11-02T10:00:00Z").line(),
            titled("bd-1", "Copy two").updated("2025-11-03T10:00:00Z").line(),
        ]),
        "left by merge=union",
    );
    let out = bd_merge(repo.path(), &["dedupe"]);
    assert!(out.status.success(), "dedupe: {}", text(&out.stderr));
    repo.git(&["commit", "-q", "-am", "dedupe"]);
    assert_eq!(log_entries(repo.path()).len(), 1, "dedupe logged the title it dropped");
    repo
}

#[test]
fn regression_a_fast_forward_after_dedupe_announced_the_dedupes_overrides() {
    let repo = installed_and_deduped();
    repo.git(&["checkout", "-q", "-b", "ahead"]);
    repo.commit_file("README", b"notes\n", "readme");
    repo.git(&["checkout", "-q", "main"]);
    let ff = repo.git_output(&["merge", "--ff-only", "ahead"]);
    assert!(ff.status.success(), "{}", text(&ff.stderr));
    assert!(!text(&ff.stderr).contains("chose for you"), "a fast-forward merged nothing: {}", text(&ff.stderr));
    // An amend rewrites a commit but merges nothing either.
    let amend = repo.git_output(&["commit", "-q", "--amend", "-m", "readme, amended"]);
    assert!(amend.status.success(), "{}", text(&amend.stderr));
    assert!(!text(&amend.stderr).contains("chose for you"), "{}", text(&amend.stderr));
}

#[test]
fn regression_a_merge_after_dedupe_counted_the_dedupes_overrides_as_its_own() {
    let repo = installed_and_deduped();
    let now = text(&repo.read(FILE));
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.commit_file(FILE, now.replace("Copy two", "Side title").replace("2025-11-03T10", "2025-11-04T10").as_bytes(), "side");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, now.replace("Copy two", "Main title").replace("2025-11-03T10", "2025-11-05T10").as_bytes(), "main");
    let merged = repo.git_output(&["merge", "--no-edit", "side"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let stderr = text(&merged.stderr);
    let announced = ONE_OVERRIDE_ANNOUNCED;
    assert_eq!(stderr.matches("chose for you").count(), 1, "{stderr}");
    assert!(stderr.contains(announced), "only this merge's override: {stderr}");
}

#[test]
fn regression_the_rename_warning_of_a_rebase_called_your_commit_theirs() {
    let upstream = TestRepo::new();
    upstream.register_merge_driver("");
    let epic = titled("bd-1", "Epic").updated("2025-11-01T10:00:00Z").line();
    upstream.commit_file(FILE, &jsonl(std::slice::from_ref(&epic)), "base");
    let clone = TestRepo { dir: tempfile::tempdir().expect("temp dir") };
    run(hermetic("git").args(["clone", "-q"]).arg(upstream.path()).arg(clone.path()));
    clone.register_merge_driver_config();
    let child = |title: &str, created: &str| {
        titled("bd-1.1", title)
            .updated(created)
            .line()
            .replace("\"created_at\":\"2025-11-01T10:00:00Z\"", &format!("\"created_at\":\"{created}\""))
    };
    clone.commit_file(FILE, &jsonl(&[epic.clone(), child("My subtask", "2025-11-02T10:00:00Z")]), "my subtask");
    upstream.commit_file(FILE, &jsonl(&[epic, child("Upstream subtask", "2025-11-02T09:00:00Z")]), "upstream subtask");
    let out = clone.git_output(&["pull", "--rebase", "-q"]);
    assert!(out.status.success(), "pull --rebase: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let warning =
        stderr.lines().find(|l| l.contains("two different issues were created under this id")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        warning.contains("the one from your commit ") && warning.contains("stays the one from upstream (origin/main)"),
        "the rename names the sides as the title line does: {warning}"
    );
    assert!(!warning.contains("theirs") && !warning.contains("ours"), "{warning}");
}

/// A plain `git pull` labels the fetched side with its raw 40-character hash; the driver's line
/// and `review` said "from 536da025…". Now the side is named by the branch that points at it.
#[test]
fn regression_a_plain_pull_named_the_other_side_by_a_raw_hash() {
    let root = tempfile::tempdir().expect("tmp");
    let git = |dir: &Path, args: &[&str]| crate::support::git(dir, args);
    let origin = root.path().join("origin.git");
    git(root.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().expect("utf-8")]);
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    git(root.path(), &["clone", "-q", origin.to_str().expect("utf-8"), a.to_str().expect("utf-8")]);
    std::fs::create_dir_all(a.join(".beads")).expect("mkdir");
    let at = |title: &str, day: u8| jsonl(&[titled("bd-1", title).updated(&format!("2025-11-0{day}T00:00:00Z")).line()]);
    std::fs::write(a.join(FILE), at("Base", 1)).expect("write");
    git(&a, &["add", "."]);
    git(&a, &["commit", "-q", "-m", "base"]);
    git(&a, &["push", "-q", "origin", "main"]);
    git(root.path(), &["clone", "-q", origin.to_str().expect("utf-8"), b.to_str().expect("utf-8")]);
    for clone in [&a, &b] {
        git(clone, &["config", "pull.rebase", "false"]);
        let out = run(hermetic(bin("bd-sync")).current_dir(clone).args(["install", "--local"]));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    std::fs::write(a.join(FILE), at("From A", 2)).expect("write");
    git(&a, &["commit", "-q", "-am", "a"]);
    git(&a, &["push", "-q", "origin", "main"]);
    std::fs::write(b.join(FILE), at("From B", 3)).expect("write");
    git(&b, &["commit", "-q", "-am", "b"]);
    let pull = run(hermetic("git").current_dir(&b).args(["pull", "-q", "--no-edit"]));
    assert!(pull.status.success(), "{}", text(&pull.stderr));
    let said = text(&pull.stderr);
    let raw_hash = |s: &str| s.split(|c: char| !c.is_ascii_hexdigit()).any(|w| w.len() == 40);
    assert!(said.contains("over origin/main's \"From A\"") && !raw_hash(&said), "{said}");
    let review = bd_merge(&b, &["review"]);
    let listed = text(&review.stdout);
    assert!(listed.contains("from origin/main") && !raw_hash(&listed), "{listed}");
}

/// The post-merge hook's line for a merge that overrode one value.
const ONE_OVERRIDE_ANNOUNCED: &str = "beads-git: the merge chose for you: 1 value(s) overridden; see them with `bd-merge review`";

/// A repository with bd-1 committed and beads-git installed (its attributes committed).
fn installed_with_one_issue() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Base").updated("2025-11-01T10:00:00Z").line()]), "base");
    let out = bd_sync(repo.path(), &["install"]);
    assert!(out.status.success(), "install: {}", text(&out.stderr));
    repo.git(&["add", ".gitattributes"]);
    repo.git(&["commit", "-q", "-m", "install"]);
    repo
}

/// In a linked worktree git runs the hooks with `GIT_DIR` set to the worktree's own directory,
/// which holds no merge log (that lives in the common one): the post-merge block must still ask
/// `bd-merge review --announce`, or a merge there is never announced and a later one elsewhere
/// moves the mark past it. Found in review of the block that skips the announcement.
#[test]
fn regression_a_merge_in_a_linked_worktree_was_never_announced() {
    let repo = installed_with_one_issue();
    repo.git(&["branch", "side"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Main").updated("2025-11-03T10:00:00Z").line()]), "main");
    let wt = repo.path().join("wt");
    repo.git(&["worktree", "add", "-q", wt.to_str().expect("utf-8"), "side"]);
    std::fs::write(wt.join(FILE), jsonl(&[titled("bd-1", "Side").updated("2025-11-02T10:00:00Z").line()])).expect("write");
    let commit = crate::support::run(crate::support::hermetic("git").current_dir(&wt).args(["commit", "-q", "-am", "side"]));
    assert!(commit.status.success(), "{}", text(&commit.stderr));
    let merged = crate::support::run(crate::support::hermetic("git").current_dir(&wt).args(["merge", "--no-edit", "main"]));
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let announced = ONE_OVERRIDE_ANNOUNCED;
    assert_eq!(text(&merged.stderr).matches(announced).count(), 1, "{}", text(&merged.stderr));
}

/// The announcement is skipped by file times alone when the merge log is older than the mark of
/// what was announced; a clock stepped back (the mark in the future) must not hide a new merge's
/// overrides: the block also asks when the mark is not older than a probe written now.
#[test]
fn a_mark_left_in_the_future_by_a_clock_stepped_back_does_not_hide_an_announcement() {
    let repo = installed_with_one_issue();
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Side").updated("2025-11-02T10:00:00Z").line()]), "side");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &jsonl(&[titled("bd-1", "Main").updated("2025-11-03T10:00:00Z").line()]), "main");
    // The mark, written "in the future": an hour ahead of the clock the merge runs with.
    let mark = repo.path().join(".git/beads/merge-log.announced");
    std::fs::create_dir_all(mark.parent().expect("dir")).expect("mkdir");
    std::fs::write(&mark, "0\n").expect("write");
    let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&mark).and_then(|f| f.set_modified(ahead)).expect("set the mark's time");
    let merged = repo.git_output(&["merge", "--no-edit", "side"]);
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    let announced = ONE_OVERRIDE_ANNOUNCED;
    assert_eq!(text(&merged.stderr).matches(announced).count(), 1, "{}", text(&merged.stderr));
}
