//! A hostile repository and racing writers, one regression test per class of bug, each named
//! after it. The repository may be a clone of someone else's project (symlinks to secrets,
//! committed programs, hooks in other languages); other writers (br, bd) replace the issues file
//! by renaming a temporary file over it at any moment. Every test runs the real binaries, real
//! git and, for the races, real processes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::support::{bd_sync, bin, hermetic, issue, ours, run, text, TestRepo};

const FILE: &str = ".beads/issues.jsonl";
const SECRET: &str = "GEMBA_NOTIFY_AUTH=s3cr3t-token-do-not-leak";

/// A secret file outside the repository, as `~/.bashrc` or `/proc/self/environ` would be.
fn secret_file(dir: &Path) -> PathBuf {
    let p = dir.join("outside-secret");
    std::fs::write(&p, format!("{SECRET}\n")).expect("write secret");
    p
}

fn symlink(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

fn is_symlink(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// Every regular file under `dir` (outside `.git`) that holds the secret.
fn files_holding_secret(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let ft = e.file_type().expect("file type");
            if ft.is_dir() {
                if e.file_name() != ".git" {
                    stack.push(e.path());
                }
            } else if ft.is_file() && std::fs::read(e.path()).is_ok_and(|c| String::from_utf8_lossy(&c).contains(SECRET)) {
                out.push(e.path());
            }
        }
    }
    out
}

fn repo_with_issues() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(FILE, format!("{}\n", issue("bd-1").title("One").line()).as_bytes(), "seed");
    repo
}

// ---------------------------------------------------------------------------------------------
// Symlinks in the repository: never followed for reading or writing a file we manage.

#[test]
fn regression_a_symlinked_gitattributes_leaked_its_target_into_the_repository() {
    let outside = tempfile::tempdir().expect("tmp");
    let repo = repo_with_issues();
    symlink(&secret_file(outside.path()), &repo.path().join(".gitattributes"));
    let out = bd_sync(repo.path(), &["install"]);
    assert!(!out.status.success(), "install must refuse a symlinked .gitattributes:\n{}", text(&out));
    assert!(text(&out).contains(".gitattributes"), "the refusal names the file:\n{}", text(&out));
    assert!(is_symlink(&repo.path().join(".gitattributes")), "the link is left as it is");
    assert_eq!(files_holding_secret(repo.path()), Vec::<PathBuf>::new(), "the secret reached the work tree");
    assert!(!text(&out).contains(SECRET), "the secret was printed");
}

#[test]
fn regression_a_symlinked_lefthook_local_config_leaked_its_target() {
    let outside = tempfile::tempdir().expect("tmp");
    let repo = repo_with_issues();
    repo.commit_file("lefthook.yml", b"pre-commit:\n  jobs:\n    - run: echo lint\n", "lefthook");
    symlink(&secret_file(outside.path()), &repo.path().join("lefthook-local.yml"));
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert!(!out.status.success(), "install must refuse a symlinked lefthook-local.yml:\n{}", text(&out));
    assert!(text(&out).contains("lefthook-local.yml"), "{}", text(&out));
    assert!(is_symlink(&repo.path().join("lefthook-local.yml")));
    assert_eq!(files_holding_secret(repo.path()), Vec::<PathBuf>::new(), "the secret reached the work tree");
}

#[test]
fn regression_a_symlinked_husky_hook_file_leaked_its_target() {
    let outside = tempfile::tempdir().expect("tmp");
    let repo = repo_with_issues();
    repo.write(".husky/_/h", b"#!/usr/bin/env sh\n");
    repo.write(".husky/_/pre-commit", b"#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n");
    repo.git(&["config", "core.hooksPath", ".husky/_"]);
    symlink(&secret_file(outside.path()), &repo.path().join(".husky/post-merge"));
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert!(!out.status.success(), "install must refuse a husky file linked outside the repository:\n{}", text(&out));
    assert!(text(&out).contains("post-merge"), "{}", text(&out));
    assert!(is_symlink(&repo.path().join(".husky/post-merge")));
    assert_eq!(files_holding_secret(repo.path()), Vec::<PathBuf>::new(), "the secret reached the work tree");
    assert_eq!(std::fs::read_to_string(outside.path().join("outside-secret")).expect("read"), format!("{SECRET}\n"));
}

#[test]
fn regression_a_symlinked_cache_lock_in_the_work_tree_truncated_its_target() {
    // No git repository: the cache lives in .beads/, which a hostile archive controls.
    let dir = tempfile::tempdir().expect("tmp");
    let outside = tempfile::tempdir().expect("tmp");
    let precious = outside.path().join("bashrc");
    std::fs::write(&precious, "export PATH=/usr/bin\n").expect("write");
    std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
    std::fs::write(dir.path().join(FILE), format!("{}\n", issue("bd-1").title("One").line())).expect("write");
    symlink(&precious, &dir.path().join(".beads/cache.db.lock"));
    let out = bd_sync(dir.path(), &["ready"]);
    assert_eq!(std::fs::read_to_string(&precious).expect("read"), "export PATH=/usr/bin\n", "the link's target was written");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cache.db.lock"), "the error names the lock:\n{}", text(&out));
}

#[test]
fn regression_a_symlinked_cache_db_created_a_database_outside() {
    let dir = tempfile::tempdir().expect("tmp");
    let outside = tempfile::tempdir().expect("tmp");
    let target = outside.path().join("planted.db");
    std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
    std::fs::write(dir.path().join(FILE), format!("{}\n", issue("bd-1").title("One").line())).expect("write");
    symlink(&target, &dir.path().join(".beads/cache.db"));
    let out = bd_sync(dir.path(), &["import"]);
    assert!(!target.exists(), "a database was created through the link");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cache.db"), "{}", text(&out));
}

#[test]
fn regression_a_committed_beads_directory_link_was_followed_to_another_project() {
    // A sibling checkout's tracker, which the repository's committed `.beads` link points at.
    let sibling = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(sibling.path().join(".beads")).expect("mkdir");
    let theirs = format!("{}\n{}\n", issue("other-1").title("Another project's").line(), issue("other-1").title("a copy").line());
    std::fs::write(sibling.path().join(FILE), &theirs).expect("write");
    let repo = TestRepo::new();
    symlink(&sibling.path().join(".beads"), &repo.path().join(".beads"));
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a linked .beads"]);
    for args in [&["ready"][..], &["import"], &["export"], &["check"]] {
        let out = bd_sync(repo.path(), args);
        assert!(!out.status.success(), "bd-sync {args:?} must refuse the link:\n{}", text(&out));
        assert!(text(&out).contains(".beads") && text(&out).contains("symbolic link"), "names the link:\n{}", text(&out));
        assert!(!text(&out).contains("other-1"), "read the other project's issues:\n{}", text(&out));
    }
    for args in [&["dedupe"][..], &["resolve"], &["review", "--restore", "1"]] {
        let out = crate::support::bd_merge(repo.path(), args);
        assert!(!out.status.success(), "bd-merge {args:?} must refuse the link:\n{}", text(&out));
    }
    assert_eq!(std::fs::read_to_string(sibling.path().join(FILE)).expect("read"), theirs, "the other project's file was rewritten");
    assert!(!sibling.path().join(".beads/cache.db").exists(), "a cache was made in the other project");
}

#[test]
fn regression_a_linked_beads_dir_in_the_git_dir_was_followed() {
    let repo = repo_with_issues();
    let outside = tempfile::tempdir().expect("tmp");
    symlink(outside.path(), &repo.path().join(".git/beads"));
    let out = bd_sync(repo.path(), &["import"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("beads") && text(&out).contains("symbolic link"), "{}", text(&out));
    // bd-hook fails open (exit 0) but says why.
    let out = run(hermetic(bin("bd-hook")).current_dir(repo.path()).args(["--since-last", "--dry-run"]));
    assert!(text(&out).contains("symbolic link"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(outside.path()).expect("read").count(), 0, "something was written through the link");
}

#[test]
fn regression_a_symlinked_hook_became_a_copy() {
    let repo = repo_with_issues();
    let original = b"#!/bin/sh\necho team-hook\n";
    repo.write("scripts/pre-commit", original);
    std::fs::set_permissions(repo.path().join("scripts/pre-commit"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let link = repo.path().join(".git/hooks/pre-commit");
    symlink(Path::new("../../scripts/pre-commit"), &link);
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(is_symlink(&link), "the hook is still a link");
    let edited = repo.read("scripts/pre-commit");
    assert!(String::from_utf8_lossy(&edited).contains("# >>> beads-git >>>"), "the link's target (inside the repo) got our block");
    let out = bd_sync(repo.path(), &["uninstall"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(is_symlink(&link), "still a link after uninstall");
    assert_eq!(repo.read("scripts/pre-commit"), original, "uninstall restores the target byte for byte");
}

#[test]
fn regression_a_hook_symlinked_outside_the_repository_was_replaced_by_a_copy() {
    let outside = tempfile::tempdir().expect("tmp");
    let target = outside.path().join("global-hook");
    std::fs::write(&target, "#!/bin/sh\necho global\n").expect("write");
    let repo = repo_with_issues();
    let link = repo.path().join(".git/hooks/post-merge");
    symlink(&target, &link);
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert_eq!(out.status.code(), Some(1), "refused, with the reason:\n{}", text(&out));
    assert!(text(&out).contains("post-merge"), "{}", text(&out));
    assert!(is_symlink(&link), "the link stays");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "#!/bin/sh\necho global\n", "the target outside was not edited");
}

#[test]
fn regression_export_stage_on_a_symlinked_issues_file_staged_a_type_change() {
    let repo = TestRepo::new();
    repo.commit_file("data/issues.jsonl", format!("{}\n", issue("bd-1").title("One").line()).as_bytes(), "data");
    symlink(Path::new("../data/issues.jsonl"), &repo.path().join(FILE));
    repo.git(&["add", FILE]);
    repo.git(&["commit", "-q", "-m", "link"]);
    let out = bd_sync(repo.path(), &["export", "--stage"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("symbolic link"), "the error says why:\n{}", text(&out));
    assert!(is_symlink(&repo.path().join(FILE)), "the link stays a link");
    assert_eq!(repo.git(&["status", "--porcelain"]).trim(), "", "nothing staged or changed");
}

// ---------------------------------------------------------------------------------------------
// Git refusing the repository is an error, never a fallback into the work tree.

#[test]
fn regression_dubious_ownership_fell_back_to_a_cache_in_the_work_tree() {
    let repo = repo_with_issues();
    let out = run(ours("bd-sync").current_dir(repo.path()).env("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1").arg("ready"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("safe.directory"), "the error names the fix:\n{}", text(&out));
    assert!(!repo.path().join(".beads/cache.db").exists(), "no cache in the work tree");
    assert!(!repo.path().join(".beads/cache.db.lock").exists(), "no lock in the work tree");
}

// ---------------------------------------------------------------------------------------------
// Programs come from PATH, never from the repository.

#[test]
fn regression_install_ran_a_hook_manager_committed_in_node_modules() {
    for (config, program, content) in [
        ("lefthook.yml", "lefthook", "pre-commit:\n  jobs:\n    - run: echo lint\n"),
        (
            ".pre-commit-config.yaml",
            "pre-commit",
            "repos:\n-   repo: https://github.com/pre-commit/pre-commit-hooks\n    rev: v4.0.0\n    hooks:\n    -   id: \
                trailing-whitespace\n",
        ),
    ] {
        let repo = repo_with_issues();
        repo.write(config, content.as_bytes());
        let marker = repo.path().join("PWNED");
        repo.write(&format!("node_modules/.bin/{program}"), format!("#!/bin/sh\ntouch '{}'\n", marker.display()).as_bytes());
        std::fs::set_permissions(
            repo.path().join(format!("node_modules/.bin/{program}")),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        // A PATH with git and sh but no hook manager.
        let out = run(ours("bd-sync").current_dir(repo.path()).env("PATH", "/usr/bin:/bin").args(["install", "--local"]));
        assert!(!marker.exists(), "install ran the repository's {program}:\n{}", text(&out));
        assert!(text(&out).contains(&format!("{program} is not on PATH")), "{}", text(&out));
    }
}

// ---------------------------------------------------------------------------------------------
// Hooks in other languages stay byte-identical and keep working.

#[test]
fn regression_our_sh_block_broke_a_python_hook() {
    let repo = repo_with_issues();
    let marker = repo.path().join("python-hook-ran");
    let hook = format!("#!/usr/bin/env python3\nimport sys\nopen({:?}, 'w').write('yes')\nsys.exit(0)\n", marker.display().to_string());
    repo.write(".git/hooks/pre-commit", hook.as_bytes());
    std::fs::set_permissions(repo.path().join(".git/hooks/pre-commit"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert_eq!(out.status.code(), Some(1), "install says what to add by hand:\n{}", text(&out));
    assert!(text(&out).contains("bd-sync hook pre-commit"), "the snippet calls our hook entry point:\n{}", text(&out));
    assert_eq!(repo.read(".git/hooks/pre-commit"), hook.as_bytes(), "the python hook is byte-identical");
    let check = bd_sync(repo.path(), &["check"]);
    assert!(text(&check).contains("hook-foreign-interpreter"), "check reports it:\n{}", text(&check));
    repo.write("x.txt", b"x\n");
    repo.git(&["add", "x.txt"]);
    let commit = repo.git_output(&["commit", "-q", "-m", "x"]);
    assert!(commit.status.success(), "the commit works: {}", text(&commit));
    assert!(marker.exists(), "the user's python hook still runs");
}

// ---------------------------------------------------------------------------------------------
// Install is transactional.

#[test]
fn regression_a_failed_install_lost_the_previous_driver() {
    let repo = repo_with_issues();
    repo.git(&["config", "merge.beads.driver", "bd merge %A %O %A %B"]);
    // A hooks path git resolves to a regular file: writing hooks fails part way through install.
    repo.write("not-a-dir", b"file\n");
    repo.git(&["config", "core.hooksPath", "not-a-dir"]);
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bd-sync uninstall"), "the error says how to undo what was done:\n{}", text(&out));
    let out = bd_sync(repo.path(), &["uninstall"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(repo.git(&["config", "--get", "merge.beads.driver"]).trim(), "bd merge %A %O %A %B", "the old driver is back");
    let attributes = std::fs::read(repo.path().join(".git/info/attributes")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&attributes).contains("merge=beads"), "attribute lines removed");
}

// ---------------------------------------------------------------------------------------------
// SQL edits of records that repeat a key land where readers read.

fn cache_ws(lines: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
    let content: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join(FILE), content).expect("write");
    let db = dir.path().join("cache.db");
    (dir, db)
}

fn sync_db_cmd(dir: &Path, db: &Path, args: &[&str]) -> Command {
    let mut c = hermetic(bin("bd-sync"));
    c.current_dir(dir).arg("--db").arg(db).args(args);
    c
}

fn sync_db(dir: &Path, db: &Path, args: &[&str]) -> Output {
    run(&mut sync_db_cmd(dir, db, args))
}

#[test]
fn regression_an_sql_edit_of_a_record_that_repeats_a_key_was_lost() {
    let line = r#"{"id":"bd-1","title":"first","status":"open","title":"second","priority":2}"#;
    let (dir, db) = cache_ws(&[line]);
    assert!(sync_db(dir.path(), &db, &["import"]).status.success());
    let conn = Connection::open(&db).expect("cache");
    assert_eq!(conn.query_row("SELECT title FROM issues", [], |r| r.get::<_, String>(0)).expect("row"), "second");
    conn.execute("UPDATE issues SET title = 'edited' WHERE id = 'bd-1'", []).expect("edit");
    let out = sync_db(dir.path(), &db, &["export"]);
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(dir.path().join(FILE)).expect("read");
    let value: serde_json::Value = serde_json::from_str(written.trim()).expect("json");
    assert_eq!(value["title"], "edited", "a reader (the last key wins) sees the edit: {written}");
}

#[test]
fn regression_rerendering_a_dirty_record_dropped_repeated_and_non_string_labels() {
    let line = r#"{"id":"bd-1","title":"t","status":"open","labels":["x","x",7,"y"]}"#;
    let (dir, db) = cache_ws(&[line]);
    assert!(sync_db(dir.path(), &db, &["import"]).status.success());
    let conn = Connection::open(&db).expect("cache");
    conn.execute("UPDATE issues SET title = 'edited' WHERE id = 'bd-1'", []).expect("edit");
    assert!(sync_db(dir.path(), &db, &["export"]).status.success());
    let written = std::fs::read_to_string(dir.path().join(FILE)).expect("read");
    assert!(written.contains(r#""labels":["x","x",7,"y"]"#), "labels untouched by the edit are kept: {written}");
    conn.execute("INSERT INTO labels (issue_id, label, position) VALUES ('bd-1', 'z', 9)", []).expect("add label");
    conn.execute("DELETE FROM labels WHERE issue_id = 'bd-1' AND label = 'y'", []).expect("remove label");
    assert!(sync_db(dir.path(), &db, &["export"]).status.success());
    let written = std::fs::read_to_string(dir.path().join(FILE)).expect("read");
    assert!(written.contains(r#""labels":["x","x",7,"z"]"#), "only the changed elements change: {written}");
}

// ---------------------------------------------------------------------------------------------
// The binding guard.

#[test]
fn regression_a_plain_import_rebound_a_cache_bound_with_rebind() {
    let (dir, db) = cache_ws(&[&issue("bd-1").title("Repo one").line()]);
    let elsewhere = dir.path().join("other.jsonl");
    std::fs::write(&elsewhere, format!("{}\n", issue("ot-1").title("Other one").line())).expect("write");
    let repo_file_before = std::fs::read(dir.path().join(FILE)).expect("read");
    assert!(sync_db(dir.path(), &db, &["import", "--rebind", "other.jsonl"]).status.success());
    let out = sync_db(dir.path(), &db, &["import"]);
    assert!(out.status.success(), "{}", text(&out));
    let conn = Connection::open(&db).expect("cache");
    conn.execute("UPDATE issues SET title = 'edited' WHERE id = 'ot-1'", []).expect("edit");
    let out = sync_db(dir.path(), &db, &["export"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(dir.path().join(FILE)).expect("read"), repo_file_before, "the repository's file was not written");
    assert!(std::fs::read_to_string(&elsewhere).expect("read").contains("edited"), "the edit went to the bound file");
}

// ---------------------------------------------------------------------------------------------
// Other writers replace the file by renaming a temporary file over it, at any moment.

/// A small deterministic generator for the delays (seeded, so a failure can be replayed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below.max(1)
    }
}

fn big_file(n: usize, marker: &str) -> String {
    let mut s: String = (0..n)
        .map(|i| format!("{}\n", issue(&format!("bd-{i:05}")).title(&format!("Issue {i} {}", "lorem ipsum ".repeat(12))).line()))
        .collect();
    s.push_str(&format!("{}\n", issue("zz-marker").title(marker).line()));
    s
}

/// Another writer, as br and bd flush: after `delay`, write a temporary file beside the issues
/// file and rename it over it, from a separate process.
fn rename_writer(file: &Path, content: &str, delay: Duration) -> std::process::Child {
    let tmp = file.with_file_name(".issues.jsonl.other-writer.tmp");
    std::fs::write(&tmp, content).expect("stage the other writer's content");
    Command::new("sh")
        .arg("-c")
        .arg("sleep \"$1\"; mv -f \"$2\" \"$3\"")
        .arg("sh")
        .arg(format!("{:.3}", delay.as_secs_f64()))
        .arg(&tmp)
        .arg(file)
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn the other writer")
}

fn timed(mut cmd: Command) -> (Output, Duration) {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    (out, start.elapsed())
}

fn title_in_cache(db: &Path, id: &str) -> Option<String> {
    Connection::open(db).expect("cache").query_row("SELECT title FROM issues WHERE id = ?1", [id], |r| r.get(0)).ok()
}

#[test]
fn regression_another_writers_rename_during_export_was_lost() {
    let (dir, db) = cache_ws(&[]);
    let file = dir.path().join(FILE);
    std::fs::write(&file, big_file(8_000, "base")).expect("write");
    assert!(sync_db(dir.path(), &db, &["import"]).status.success());
    let sync_cmd = |args: &[&str]| sync_db_cmd(dir.path(), &db, args);
    // How long an export takes here, to place the other writer's rename inside it.
    Connection::open(&db).expect("cache").execute("UPDATE issues SET title = 'warm-up' WHERE id = 'bd-00001'", []).expect("edit");
    let (_, took) = timed(sync_cmd(&["export"]));
    let mut rng = Lcg(0x5eed_0020);
    let mut lost = Vec::new();
    for round in 0..24 {
        let ours = format!("OURS-{round}");
        let theirs = format!("THEIRS-{round}");
        Connection::open(&db).expect("cache").execute("UPDATE issues SET title = ?1 WHERE id = 'bd-00007'", [&ours]).expect("our SQL edit");
        let current = std::fs::read_to_string(&file).expect("read");
        let other = current.replacen(&format!("\"{}\"", title_of(&current, "zz-marker")), &format!("\"{theirs}\""), 1);
        let delay = Duration::from_micros(rng.next(took.as_micros() as u64 * 12 / 10));
        let mut writer = rename_writer(&file, &other, delay);
        let out = sync_cmd(&["export"]).output().expect("export");
        writer.wait().expect("writer");
        let now = std::fs::read_to_string(&file).expect("read");
        if out.status.success() && !now.contains(&theirs) {
            lost.push(round);
        }
        // Whatever happened, the other writer's change stays: either it landed first and the
        // export merged it, or it landed last (replacing ours, as any later write does).
        let out = sync_cmd(&["export"]).output().expect("export");
        assert!(out.status.success(), "round {round}: {}", text(&out));
        let now = std::fs::read_to_string(&file).expect("read");
        assert!(now.contains(&theirs), "round {round}: the other writer's change is in the file");
    }
    assert_eq!(lost, Vec::<usize>::new(), "export exited 0 having replaced the other writer's change (rounds listed)");
}

fn title_of(file: &str, id: &str) -> String {
    let line = file.lines().find(|l| l.contains(&format!("\"id\":\"{id}\""))).expect("the id is in the file");
    serde_json::from_str::<serde_json::Value>(line).expect("json")["title"].as_str().expect("title").to_owned()
}

#[test]
fn regression_another_writers_rename_during_import_left_a_cache_that_said_fresh() {
    let (dir, db) = cache_ws(&[]);
    let file = dir.path().join(FILE);
    std::fs::write(&file, big_file(8_000, "base")).expect("write");
    assert!(sync_db(dir.path(), &db, &["import"]).status.success());
    let sync_cmd = |args: &[&str]| sync_db_cmd(dir.path(), &db, args);
    let (_, took) = timed(sync_cmd(&["import", "--force"]));
    let mut rng = Lcg(0x5eed_0021);
    let mut stale = Vec::new();
    for round in 0..24 {
        // The file changes everywhere (as after a pull), so the import has real work.
        let current = std::fs::read_to_string(&file).expect("read");
        let (a, b) = if round % 2 == 0 { ("lorem ipsum ", "lorem  ipsum ") } else { ("lorem  ipsum ", "lorem ipsum ") };
        std::fs::write(&file, current.replace(a, b)).expect("write");
        let changed = std::fs::read_to_string(&file).expect("read");
        let theirs = format!("THEIRS-{round}");
        let other = changed.replacen(&format!("\"{}\"", title_of(&changed, "zz-marker")), &format!("\"{theirs}\""), 1);
        let delay = Duration::from_micros(rng.next(took.as_micros() as u64 * 12 / 10));
        let mut writer = rename_writer(&file, &other, delay);
        let out = sync_cmd(&["import"]).output().expect("import");
        writer.wait().expect("writer");
        assert!(out.status.success(), "round {round}: {}", text(&out));
        let status = sync_cmd(&["--json", "status"]).output().expect("status");
        let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status json");
        let fresh = status["file_changed_since_sync"] == serde_json::Value::Bool(false);
        if fresh && title_in_cache(&db, "zz-marker").as_deref() != Some(theirs.as_str()) {
            stale.push(round);
            // What the stale cache did next: an SQL edit and an export wrote the old line back.
            Connection::open(&db).expect("cache").execute("UPDATE issues SET priority = 0 WHERE id = 'bd-00003'", []).expect("edit");
            assert!(sync_cmd(&["export"]).output().expect("export").status.success());
            assert!(
                std::fs::read_to_string(&file).expect("read").contains(&theirs),
                "round {round}: the export put the stale line back over the other writer's change"
            );
        }
    }
    assert_eq!(stale, Vec::<usize>::new(), "the cache said fresh while missing the other writer's content (rounds listed)");
}

// ---------------------------------------------------------------------------------------------
// A pull request that commits the issues file as a link to a file outside the
// checkout. The CI gate read the target, printed its values into the log and exited 0.

/// A checkout whose `.beads/issues.jsonl` is a link to a beads-looking file outside it.
fn checkout_with_a_linked_issues_file(outside: &Path) -> TestRepo {
    let repo = TestRepo::new();
    let target = outside.join("elsewhere.jsonl");
    std::fs::write(&target, format!("{}\n{}\n", issue("bd-1").title(SECRET).line(), issue("bd-1").title(SECRET).line())).expect("write");
    symlink(&target, &repo.path().join(FILE));
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "a link"]);
    repo
}

#[test]
fn regression_the_ci_gate_and_dedupe_read_a_committed_link_to_a_file_outside() {
    let outside = tempfile::tempdir().expect("outside");
    let repo = checkout_with_a_linked_issues_file(outside.path());
    for (program, args) in [
        ("bd-sync", vec!["check", "--ci"]),
        ("bd-sync", vec!["--json", "check", "--ci"]),
        ("bd-merge", vec!["dedupe", "--dry-run"]),
        ("bd-merge", vec!["resolve", "--dry-run"]),
        ("bd-sync", vec!["ready"]),
        ("bd-sync", vec!["show", "bd-1"]),
    ] {
        let out = run(ours(program).current_dir(repo.path()).args(&args));
        let said = text(&out);
        assert!(!out.status.success(), "{program} {args:?} must refuse the link: {said}");
        assert!(!said.contains(SECRET), "{program} {args:?} printed the target's values: {said}");
        assert!(said.contains("symbolic link") && said.contains("issues.jsonl"), "{program} {args:?} names the link: {said}");
    }
    assert!(files_holding_secret(repo.path()).is_empty(), "nothing of the target was copied into the checkout");
}

// `bd-sync check` printed `beads.notifyUrl` whole, password and token included.
#[test]
fn regression_check_printed_the_credentials_in_the_notify_url() {
    let repo = repo_with_issues();
    repo.git(&["config", "beads.notifyUrl", "https://bob:hunter2@gemba.example/base?token=s3cret&team=x"]);
    for args in [vec!["check"], vec!["--json", "check"]] {
        let out = run(ours("bd-sync").current_dir(repo.path()).args(&args));
        let said = text(&out);
        assert!(said.contains("gemba.example/base"), "{args:?}: the note is there: {said}");
        assert!(!said.contains("hunter2") && !said.contains("s3cret") && !said.contains("bob"), "{args:?}: {said}");
        assert!(said.contains("***@gemba.example") && said.contains("token=***"), "{args:?}: {said}");
    }
}

/// Run outside a repository, `bd-merge dedupe` found a `.git` file (`gitdir: <anywhere>`) or a
/// `.git` link in the project directory and created directories and appended to `info/exclude`
/// where it pointed. Now the repository is found as git finds it (a `.git` git does not take for
/// a repository is never followed), so nothing is written there.
#[test]
fn regression_a_foreign_dot_git_outside_a_repository_redirected_a_write() {
    for form in ["gitdir file", "link"] {
        let project = tempfile::tempdir().expect("tmp");
        let victim = tempfile::tempdir().expect("tmp");
        match form {
            "gitdir file" => std::fs::write(project.path().join(".git"), format!("gitdir: {}\n", victim.path().display())).expect("write"),
            _ => std::os::unix::fs::symlink(victim.path(), project.path().join(".git")).expect("link"),
        }
        let line = issue("bd-1").title("one").line();
        let other = issue("bd-1").title("two").line();
        std::fs::write(project.path().join("issues.jsonl"), format!("{line}\n{other}\n")).expect("write");
        let out = run(hermetic(bin("bd-merge"))
            .current_dir(project.path())
            .env("GIT_CEILING_DIRECTORIES", project.path().parent().expect("parent"))
            .args(["dedupe", "issues.jsonl"]));
        assert!(out.status.code().is_some_and(|c| c <= 2), "{form}: {}", text(&out));
        let written: Vec<_> = walk(victim.path());
        assert!(written.is_empty(), "{form}: dedupe wrote into the .git's target: {written:?}\n{}", text(&out));
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&entry.path()));
        }
    }
    out
}
