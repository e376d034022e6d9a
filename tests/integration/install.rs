//! `bd-sync install` end to end: two clones of a bare remote editing the same issues, merged by
//! the driver, imported by the hooks and announced to a loopback server; and the installer on
//! plain repos, worktrees, submodules, `core.hooksPath`, existing user hooks and odd files.

use std::path::{Path, PathBuf};
use std::process::Output;

use rusqlite::Connection;

use crate::support::{bd_sync, bd_sync_ok, git, hermetic, issue, records, run, CaptureServer, Reply, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

fn git_notify(dir: &Path, url: &str, args: &[&str]) -> Output {
    run(hermetic("git").current_dir(dir).env("GEMBA_NOTIFY_URL", url).args(args))
}

#[test]
fn two_clones_edit_the_same_issues_and_pull_merges_imports_and_notifies() {
    let root = tempfile::tempdir().expect("tmp");
    let remote = root.path().join("remote.git");
    git(root.path(), &["init", "-q", "--bare", "-b", "main", remote.to_str().expect("utf8")]);
    let seed = TestRepo::new();
    seed.commit_file(FILE, format!("{}\n{}\n", issue("bd-1").title("One").line(), issue("bd-2").title("Two").line()).as_bytes(), "seed");
    seed.git(&["push", "-q", remote.to_str().expect("utf8"), "main"]);
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    for clone in [&a, &b] {
        git(root.path(), &["clone", "-q", remote.to_str().expect("utf8"), clone.to_str().expect("utf8")]);
        bd_sync_ok(clone, &["install", "--local"]);
    }
    let quiet = CaptureServer::start(|_, _| Reply::Status(200));

    // A edits issue 1's title and closes issue 2, through the cache; pre-commit exports and stages.
    let cache_a = Connection::open(a.join(".git/beads/cache.db")).expect("A's cache");
    cache_a
        .execute_batch(
            "UPDATE issues SET title = 'Title from A', updated_at = '2025-11-02T10:00:00-08:00' WHERE id = 'bd-1';
             UPDATE issues SET status = 'closed', closed_at = '2025-11-02T11:00:00-08:00',
                 updated_at = '2025-11-02T11:00:00-08:00' WHERE id = 'bd-2';",
        )
        .expect("edit A's cache");
    std::fs::write(a.join("notes.txt"), "a\n").expect("write");
    git(&a, &["add", "notes.txt"]);
    let out = git_notify(&a, &quiet.url, &["commit", "-q", "-m", "A: retitle 1, close 2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(git(&a, &["show", "--name-only", "--format=", "HEAD"]).contains(FILE), "pre-commit staged the export");
    git(&a, &["push", "-q", "origin", "main"]);

    // B edits issue 1's priority, adds a label and creates issue 3, in the file.
    let b_file = format!(
        "{}\n{}\n{}\n",
        issue("bd-1")
            .title("One")
            .extra(r#""labels":["from-b"]"#)
            .line()
            .replace(r#""priority":2"#, r#""priority":0"#)
            .replace("10:00:00-08:00\"}", "12:00:00-08:00\"}")
            .replace("10:00:00-08:00\",\"labels", "12:00:00-08:00\",\"labels"),
        issue("bd-2").title("Two").line(),
        issue("bd-3").title("Three from B").line(),
    );
    std::fs::write(b.join(FILE), &b_file).expect("write");
    git(&b, &["add", FILE]);
    assert!(git_notify(&b, &quiet.url, &["commit", "-q", "-m", "B: priority, label, new issue"]).status.success());

    let pull_server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = git_notify(&b, &pull_server.url, &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"]);
    assert!(out.status.success(), "pull: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&b, &["status", "--porcelain"]), "", "the merge is clean");

    let merged = std::fs::read(b.join(FILE)).expect("read");
    let recs = records(&merged);
    assert_eq!(recs.iter().map(|r| r["id"].as_str().expect("id")).collect::<Vec<_>>(), ["bd-1", "bd-2", "bd-3"]);
    assert_eq!((recs[0]["title"].as_str(), recs[0]["priority"].as_i64()), (Some("Title from A"), Some(0)));
    assert_eq!(recs[0]["labels"][0], "from-b");
    assert_eq!((recs[1]["status"].as_str(), recs[1]["closed_at"].as_str()), (Some("closed"), Some("2025-11-02T11:00:00-08:00")));

    let cache_b = Connection::open(b.join(".git/beads/cache.db")).expect("B's cache");
    let (title, priority): (String, i64) =
        cache_b.query_row("SELECT title, priority FROM issues WHERE id = 'bd-1'", [], |r| Ok((r.get(0)?, r.get(1)?))).expect("bd-1");
    assert_eq!((title.as_str(), priority), ("Title from A", 0), "B's cache follows the merge with no manual step");
    let status: String = cache_b.query_row("SELECT status FROM issues WHERE id = 'bd-2'", [], |r| r.get(0)).expect("bd-2");
    assert_eq!(status, "closed");

    assert_eq!(pull_server.items(), ["bd-1", "bd-2"], "exactly the ids the pull changed");

    bd_sync_ok(&b, &["export"]);
    assert_eq!(std::fs::read(b.join(FILE)).expect("read"), merged, "a later export is a byte-for-byte no-op");
}

/// Every file install may touch, with its bytes (`None`: absent), and the driver config.
fn snapshot(repo: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let hooks = PathBuf::from(git(repo, &["rev-parse", "--path-format=absolute", "--git-path", "hooks"]).trim());
    let mut files: Vec<PathBuf> = vec![repo.join(".gitattributes")];
    for h in ["pre-commit", "post-commit", "post-merge", "post-rewrite", "post-checkout"] {
        files.push(hooks.join(h));
    }
    let mut out: Vec<(String, Option<Vec<u8>>)> = files.iter().map(|f| (f.display().to_string(), std::fs::read(f).ok())).collect();
    let cfg = run(hermetic("git").current_dir(repo).args(["config", "--local", "--get-regexp", "^merge\\.beads\\."]));
    out.push(("config".into(), Some(cfg.stdout)));
    out
}

fn repo_with_issues() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(FILE, format!("{}\n", issue("bd-1").title("One").line()).as_bytes(), "seed");
    repo
}

#[test]
fn install_twice_is_identical_and_uninstall_restores_every_byte() {
    let repo = repo_with_issues();
    let hooks = repo.path().join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    std::fs::write(hooks.join("post-merge"), b"#!/bin/sh\r\necho crlf user hook\r\n").expect("write");
    run(std::process::Command::new("chmod").arg("755").arg(hooks.join("post-merge")));
    std::fs::write(repo.path().join(".gitattributes"), b"*.png binary").expect("write"); // no final newline
    repo.git(&["config", "merge.beads.driver", "bd merge %A %O %A %B"]);
    let before = snapshot(repo.path());

    bd_sync_ok(repo.path(), &["install"]);
    let installed = snapshot(repo.path());
    assert!(String::from_utf8_lossy(&std::fs::read(repo.path().join(".gitattributes")).expect("attrs"))
        .contains(".beads/issues.jsonl merge=beads"));
    let driver = repo.git(&["config", "merge.beads.driver"]);
    assert!(driver.contains("bd-merge %O %A %B -l %L -p %P -s %S -x %X -y %Y"), "{driver}");
    assert!(Path::new(driver.split_whitespace().next().expect("path")).is_absolute());
    assert_eq!(bd_sync(repo.path(), &["check"]).status.code(), Some(0), "healthy after install");
    let json: serde_json::Value = serde_json::from_str(&bd_sync_ok(repo.path(), &["install", "--json"])).expect("json");
    assert!(json["actions"].as_array().expect("actions").iter().all(|a| a["change"] == "unchanged"), "{json}");
    assert_eq!(snapshot(repo.path()), installed, "a second install changes nothing");

    bd_sync_ok(repo.path(), &["uninstall"]);
    assert_eq!(snapshot(repo.path()), before, "uninstall restores every file and the replaced driver");
}

/// After `bd-sync uninstall` in a clone whose `.gitattributes` is committed (kept for the team),
/// `check` said 8 errors ("a hook manager may have regenerated it", one per hook uninstall had
/// just removed) and `info/exclude` kept our `.beads-git-tmp.*` lines. Now one line says
/// beads-git is not installed here, the exclude file is byte for byte what it was, and installing
/// again is healthy.
#[test]
fn regression_after_uninstall_check_blamed_a_hook_manager_and_the_exclude_lines_stayed() {
    let repo = repo_with_issues();
    let exclude = repo.path().join(".git/info/exclude");
    let before = std::fs::read_to_string(&exclude).ok();
    bd_sync_ok(repo.path(), &["install"]);
    bd_sync_ok(repo.path(), &["export"]);
    let lines = String::from_utf8(std::fs::read(&exclude).expect("exclude")).expect("utf-8");
    assert!(lines.contains(".beads-git-tmp.*"), "a write through a temporary file excludes them: {lines}");
    repo.git(&["add", ".gitattributes"]);
    repo.git(&["commit", "-q", "--no-verify", "-m", "the team's attributes"]);
    bd_sync_ok(repo.path(), &["uninstall"]);
    assert_eq!(std::fs::read_to_string(&exclude).ok(), before, "info/exclude as it was before install");

    let out = bd_sync(repo.path(), &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1), "the attributes still route the file to a driver this clone lacks");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "one line, not one per removed hook: {report}");
    let message = findings[0]["message"].as_str().expect("message");
    assert!(message.contains("not installed in this clone") && !message.contains("hook manager"), "{message}");

    bd_sync_ok(repo.path(), &["install"]);
    assert_eq!(bd_sync(repo.path(), &["check"]).status.code(), Some(0), "healthy after installing again");
}

/// Uninstall's clean-up of `info/exclude` never writes through a link, never waits on a FIFO,
/// and leaves a file it cannot read as it is.
#[test]
fn uninstall_leaves_an_exclude_file_behind_a_link_or_a_fifo_as_it_is() {
    for kind in ["link", "fifo"] {
        let repo = repo_with_issues();
        bd_sync_ok(repo.path(), &["install"]);
        bd_sync_ok(repo.path(), &["export"]);
        let exclude = repo.path().join(".git/info/exclude");
        let outside = tempfile::tempdir().expect("tmp");
        let target = outside.path().join("exclude");
        std::fs::copy(&exclude, &target).expect("copy");
        std::fs::remove_file(&exclude).expect("remove");
        match kind {
            "link" => std::os::unix::fs::symlink(&target, &exclude).expect("symlink"),
            _ => assert!(run(std::process::Command::new("mkfifo").arg(&exclude)).status.success()),
        }
        let before = std::fs::read(&target).expect("read");
        let started = std::time::Instant::now();
        bd_sync_ok(repo.path(), &["uninstall"]);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{kind}: uninstall finished");
        assert_eq!(std::fs::read(&target).expect("read"), before, "{kind}: nothing written through it");
        let meta = std::fs::symlink_metadata(&exclude).expect("still there");
        assert!(!meta.is_file(), "{kind}: left as it was");
    }
}

#[test]
fn dry_run_changes_nothing() {
    let repo = repo_with_issues();
    let before = snapshot(repo.path());
    let out = bd_sync_ok(repo.path(), &["install", "--dry-run"]);
    assert!(out.contains("would be"), "{out}");
    assert_eq!(snapshot(repo.path()), before);
}

#[test]
fn local_install_uses_info_attributes() {
    let repo = repo_with_issues();
    bd_sync_ok(repo.path(), &["install", "--local"]);
    assert!(!repo.path().join(".gitattributes").exists());
    let attrs = std::fs::read_to_string(repo.path().join(".git/info/attributes")).expect("info/attributes");
    assert!(attrs.contains(".beads/issues.jsonl merge=beads"));
    assert_eq!(bd_sync(repo.path(), &["check"]).status.code(), Some(0));
}

fn commit_issue(dir: &Path, url: &str, id: &str) -> Output {
    std::fs::create_dir_all(dir.join(".beads")).expect("mkdir");
    let mut content = std::fs::read_to_string(dir.join(FILE)).unwrap_or_default();
    content.push_str(&issue(id).title("new").line());
    content.push('\n');
    std::fs::write(dir.join(FILE), content).expect("write");
    git(dir, &["add", FILE]);
    git_notify(dir, url, &["commit", "-q", "-m", id])
}

#[test]
fn install_from_a_linked_worktree_runs_hooks_there() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = repo_with_issues();
    let wt_root = tempfile::tempdir().expect("tmp");
    let wt = wt_root.path().join("wt");
    repo.git(&["worktree", "add", "-q", wt.to_str().expect("utf8"), "-b", "wt"]);
    bd_sync_ok(&wt, &["install"]);
    assert!(repo.path().join(".git/hooks/post-commit").exists(), "hooks go to the common dir, where git runs them");
    assert!(!repo.path().join(".git/worktrees/wt/hooks/post-commit").exists());
    assert!(commit_issue(&wt, &server.url, "bd-wt").status.success());
    assert_eq!(server.items(), ["bd-wt"]);
}

#[test]
fn install_in_a_submodule_uses_its_own_git_dir() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let sub_origin = repo_with_issues();
    let sup = TestRepo::new();
    sup.commit_file("README", b"x", "init");
    sup.git(&["-c", "protocol.file.allow=always", "submodule", "add", "-q", sub_origin.path().to_str().expect("utf8"), "sub"]);
    let sub = sup.path().join("sub");
    bd_sync_ok(&sub, &["install"]);
    assert!(sup.path().join(".git/modules/sub/hooks/post-commit").exists());
    assert!(commit_issue(&sub, &server.url, "bd-sub").status.success());
    assert_eq!(server.items(), ["bd-sub"]);
}

#[test]
fn a_core_hooks_path_inside_the_repository_is_honoured() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    // A plain core.hooksPath (lefthook-style directory).
    let repo = repo_with_issues();
    repo.git(&["config", "core.hooksPath", ".githooks"]);
    bd_sync_ok(repo.path(), &["install"]);
    assert!(repo.path().join(".githooks/post-commit").exists());
    assert!(!repo.path().join(".git/hooks/post-commit").exists());
    assert!(commit_issue(repo.path(), &server.url, "bd-hp").status.success());
    assert_eq!(server.items(), ["bd-hp"]);
}

#[test]
fn an_existing_hook_ending_in_exec_keeps_running() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = repo_with_issues();
    let hooks = repo.path().join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    let user = b"#!/bin/sh\necho user >> user.log\nexec true\n";
    std::fs::write(hooks.join("post-commit"), user).expect("write");
    run(std::process::Command::new("chmod").arg("755").arg(hooks.join("post-commit")));
    bd_sync_ok(repo.path(), &["install"]);
    let text = std::fs::read_to_string(hooks.join("post-commit")).expect("read");
    assert!(text.find(">>> beads-git >>>").expect("block") < text.find("exec true").expect("exec"), "block above the exec");
    assert!(commit_issue(repo.path(), &server.url, "bd-exec").status.success());
    assert_eq!(server.items(), ["bd-exec"]);
    assert_eq!(std::fs::read_to_string(repo.path().join("user.log")).expect("log"), "user\n");
}

#[test]
fn an_unwritable_hooks_path_is_a_clear_error() {
    let repo = repo_with_issues();
    std::fs::write(repo.path().join("not-a-dir"), b"file").expect("write");
    repo.git(&["config", "core.hooksPath", "not-a-dir"]);
    let out = bd_sync(repo.path(), &["install"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not-a-dir"), "names the path: {err}");
}

#[test]
fn hooks_skip_when_bd_hooks_is_0() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = repo_with_issues();
    bd_sync_ok(repo.path(), &["install"]);
    let commit = |title: &str, bd_hooks: Option<&str>| {
        std::fs::write(repo.path().join(FILE), format!("{}\n", issue("bd-1").title(title).line())).expect("write");
        repo.git(&["add", FILE]);
        let mut cmd = hermetic("git");
        cmd.current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args(["commit", "-q", "-m", title]);
        if let Some(v) = bd_hooks {
            cmd.env("BD_HOOKS", v);
        }
        let out = run(&mut cmd);
        assert!(out.status.success(), "commit {title}: {}", String::from_utf8_lossy(&out.stderr));
    };
    // The positive control: without BD_HOOKS the post-commit hook announces the edit.
    commit("changed", None);
    assert_eq!(server.items(), ["bd-1"], "the hook ran without BD_HOOKS=0");
    commit("changed again", Some("0"));
    assert_eq!(server.items(), ["bd-1"], "no announcement with BD_HOOKS=0");
}

#[test]
fn check_flags_a_block_removed_by_a_hook_manager() {
    let repo = repo_with_issues();
    bd_sync_ok(repo.path(), &["install"]);
    std::fs::write(repo.path().join(".git/hooks/post-merge"), b"#!/bin/sh\n# regenerated by a hook manager\n").expect("write");
    let out = bd_sync(repo.path(), &["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let kinds: Vec<&str> = v["findings"].as_array().expect("findings").iter().map(|f| f["kind"].as_str().expect("kind")).collect();
    assert_eq!(kinds, ["hook-missing"]);
}
