//! Our hooks inside real teams' tool chains: a user's failing hook still blocks the commit, and
//! husky 9.1.7, lefthook 2.2.2 and pre-commit 4.7.0 (the real ones, installed by `.ci/run` from
//! npm and PyPI) run our jobs the way each documents, before or after their own install, after
//! their re-install, with `check` green and uninstall restoring every byte.
//!
//! A test whose tool is missing skips with a message, except under CI, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rusqlite::Connection;

use crate::support::{bd_sync, bin, hermetic, issue, path_with_our_binaries, real_tool, run, CaptureServer, Reply};

const FILE: &str = ".beads/issues.jsonl";

/// A repository with one committed issue, and a PATH holding our binaries and the tools.
pub(super) struct Repo {
    dir: tempfile::TempDir,
    path_env: std::ffi::OsString,
    home: tempfile::TempDir,
}

impl Repo {
    pub(super) fn new(extra_path: &[&Path]) -> Repo {
        let path_env = path_with_our_binaries(extra_path);
        let repo = Repo { dir: tempfile::tempdir().expect("tmp"), path_env, home: tempfile::tempdir().expect("home") };
        repo.ok("git", &["init", "-q", "-b", "main"]);
        repo.write(FILE, &format!("{}\n", issue("bd-1").title("One").line()));
        repo.ok("git", &["add", FILE]);
        repo.ok("git", &["commit", "-q", "-m", "seed"]);
        repo
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = hermetic(program);
        c.current_dir(self.path()).env("PATH", &self.path_env).env("HOME", self.home.path()).env("NO_COLOR", "1");
        c.env_remove("CI").env_remove("HUSKY").env_remove("LEFTHOOK").env_remove("PRE_COMMIT");
        c
    }

    pub(super) fn out(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Output {
        run(self.cmd(program).args(args))
    }

    pub(super) fn ok(&self, program: impl AsRef<std::ffi::OsStr> + std::fmt::Debug, args: &[&str]) -> String {
        let out = self.out(&program, args);
        assert!(
            out.status.success(),
            "{program:?} {args:?} exited {:?}:\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }

    pub(super) fn sync(&self, args: &[&str]) -> Output {
        self.out(bin("bd-sync"), args)
    }

    pub(super) fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, content).expect("write");
    }

    pub(super) fn read(&self, rel: &str) -> Option<Vec<u8>> {
        std::fs::read(self.path().join(rel)).ok()
    }

    /// Adds an issue and commits it with the notify server set; returns git's output.
    fn commit_issue(&self, url: &str, id: &str) -> Output {
        let mut content = String::from_utf8(self.read(FILE).unwrap_or_default()).expect("utf8");
        content.push_str(&issue(id).title("new").line());
        content.push('\n');
        self.write(FILE, &content);
        self.ok("git", &["add", FILE]);
        run(self.cmd("git").env("GEMBA_NOTIFY_URL", url).args(["commit", "-q", "-m", id]))
    }

    /// Every file of the work tree and git dir that install may touch, with the merge config.
    fn snapshot(&self, files: &[&str]) -> Vec<(String, Option<Vec<u8>>)> {
        let mut out: Vec<_> = files.iter().map(|f| (f.to_string(), self.read(f))).collect();
        out.push(("config".into(), Some(self.out("git", &["config", "--local", "--get-regexp", "^merge\\.beads\\."]).stdout)));
        out
    }

    pub(super) fn check_exit(&self) -> (Option<i32>, String) {
        let out = self.sync(&["check"]);
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    }
}

/// The snapshot to restore: the manager's files as they are now, ours (attributes, merge config)
/// as they were before our first install.
fn as_before_our_install(
    mut now: Vec<(String, Option<Vec<u8>>)>,
    untouched: &[(String, Option<Vec<u8>>)],
) -> Vec<(String, Option<Vec<u8>>)> {
    for (name, content) in untouched {
        if let Some(entry) = now.iter_mut().find(|(n, _)| n == name) {
            entry.1 = content.clone();
        }
    }
    now
}

fn server() -> CaptureServer {
    CaptureServer::start(|_, _| Reply::Status(200))
}

fn assert_committed(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: the commit failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// Commits a new issue with a notify server listening: the commit succeeds and the server hears
/// of that issue exactly once. Returns the server for further commits.
pub(super) fn commit_is_notified_once(repo: &Repo, id: &str, what: &str) -> CaptureServer {
    let s = server();
    assert_committed(&repo.commit_issue(&s.url, id), what);
    s.wait_for(1, std::time::Duration::from_secs(5));
    assert_eq!(s.items(), [id], "{what}: notified exactly once");
    s
}

fn assert_blocked(out: &Output, what: &str) {
    assert!(!out.status.success(), "{what}: the failing hook did not block the commit");
}

// ---- plain git hooks -------------------------------------------------------------------------

#[test]
fn regression_a_failing_user_pre_commit_hook_still_blocks_the_commit_after_install() {
    for (name, user_hook) in [
        ("plain", "#!/bin/sh\necho \"lint failed\" >&2\nfalse\n"),
        ("set -e", "#!/bin/sh\nset -e\necho \"lint failed\" >&2\nfalse\necho unreachable\n"),
        ("exit 1", "#!/bin/sh\necho \"lint failed\" >&2\nexit 1\n"),
    ] {
        let repo = Repo::new(&[]);
        repo.write(".git/hooks/pre-commit", user_hook);
        run(Command::new("chmod").arg("755").arg(repo.path().join(".git/hooks/pre-commit")));
        assert!(repo.sync(&["install"]).status.success());
        // A cache edit: our pre-commit block exports it before the user's lint runs (and fails).
        let cache = Connection::open(repo.path().join(".git/beads/cache.db")).expect("cache");
        cache.execute("UPDATE issues SET title = 'Edited in the cache' WHERE id = 'bd-1'", []).expect("edit");
        let out = repo.commit_issue(&server().url, "bd-2");
        assert_blocked(&out, name);
        assert!(String::from_utf8_lossy(&out.stderr).contains("lint failed"), "{name}: the user's hook ran");
        let file = String::from_utf8(repo.read(FILE).expect("file")).expect("utf8");
        assert!(file.contains("Edited in the cache"), "{name}: our block ran first and exported the edit");
    }
}

#[test]
fn regression_a_hook_ending_in_a_compound_command_that_always_exits_still_runs_our_block() {
    let repo = Repo::new(&[]);
    // pre-commit's generated hooks end like this: our block used to land below it, never to run.
    let user_hook = "#!/usr/bin/env bash\nif [ -x /nonexistent/tool ]; then\n    exec /nonexistent/tool \"$@\"\nelse\n    echo 'tool not \
        found' >&2\n    exit 0\nfi\n";
    repo.write(".git/hooks/post-commit", user_hook);
    run(Command::new("chmod").arg("755").arg(repo.path().join(".git/hooks/post-commit")));
    assert!(repo.sync(&["install"]).status.success());
    let s = server();
    assert_committed(&repo.commit_issue(&s.url, "bd-2"), "post-commit ending in if/else exit");
    assert_eq!(s.wait_for(1, std::time::Duration::from_secs(5)).len(), 1);
    assert_eq!(s.items(), ["bd-2"]);
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");
    assert!(repo.sync(&["uninstall"]).status.success());
    assert_eq!(repo.read(".git/hooks/post-commit").expect("user hook"), user_hook.as_bytes());
}

#[test]
fn regression_uninstall_in_a_copied_clone_never_touches_the_original() {
    let a = Repo::new(&[]);
    assert!(a.sync(&["install"]).status.success());
    a.ok("git", &["add", ".gitattributes"]);
    a.ok("git", &["commit", "-q", "-m", "attributes"]);
    let before = a.snapshot(&[".gitattributes", ".git/hooks/post-commit", ".git/beads/install.json"]);
    let copy = tempfile::tempdir().expect("tmp");
    let b_path = copy.path().join("b");
    run(Command::new("cp").arg("-a").arg(a.path()).arg(&b_path));
    let out = bd_sync(&b_path, &["uninstall", "--team"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(a.snapshot(&[".gitattributes", ".git/hooks/post-commit", ".git/beads/install.json"]), before, "A is untouched");
    let b_attrs = std::fs::read_to_string(b_path.join(".gitattributes")).unwrap_or_default();
    assert!(!b_attrs.contains("merge=beads"), "B's own lines are gone: {b_attrs:?}");
    assert!(!b_path.join(".git/hooks/post-commit").exists(), "B's hook is gone");
}

#[test]
fn a_global_hooks_path_is_not_written_without_the_flag() {
    let repo = Repo::new(&[]);
    let shared = tempfile::tempdir().expect("shared hooks");
    repo.ok("git", &["config", "core.hooksPath", shared.path().to_str().expect("utf8")]);
    let out = repo.sync(&["install"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(shared.path().to_str().expect("utf8")) && err.contains("every repository"), "{err}");
    assert_eq!(std::fs::read_dir(shared.path()).expect("dir").count(), 0, "nothing written there");
    assert!(repo.sync(&["install", "--shared-hooks-dir"]).status.success());
    assert!(shared.path().join("post-commit").exists());
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "a warning: the user asked for it");
    assert!(text.contains("warning hooks-dir-shared"), "{text}");
}

#[test]
fn check_flags_a_clone_with_the_committed_attribute_but_no_driver() {
    let repo = Repo::new(&[]);
    repo.write(".gitattributes", ".beads/issues.jsonl merge=beads\n.beads/beads.jsonl merge=beads\n");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(1));
    assert!(text.contains("driver-missing") && text.contains("silently line-merges") && text.contains("`bd-sync install`"), "{text}");
}

// ---- husky -----------------------------------------------------------------------------------

fn husky() -> Option<PathBuf> {
    real_tool("HUSKY_BIN", "npm/node_modules/husky/bin.js")
}

/// `husky init` (default directory) or `husky DIR`, then a harmless team pre-commit hook (init's
/// `npm test` has no test script to run here).
fn husky_setup(repo: &Repo, husky: &Path, dir: Option<&str>) {
    let husky = husky.to_str().expect("utf8");
    match dir {
        None => repo.ok("node", &[husky, "init"]),
        Some(d) => repo.ok("node", &[husky, d]),
    };
    repo.write(&format!("{}/pre-commit", dir.unwrap_or(".husky")), "echo 'team pre-commit ran'\n");
}

/// What `npm install` runs through the `prepare` script: husky regenerating its stubs.
fn husky_reinstall(repo: &Repo, husky: &Path, dir: Option<&str>) {
    let mut args = vec![husky.to_str().expect("utf8")];
    args.extend(dir);
    repo.ok("node", &args);
}

fn husky_scenario(husky: &Path, install_first: bool, dir: Option<&str>) {
    let repo = Repo::new(&[]);
    repo.write("package.json", "{\n  \"name\": \"demo\",\n  \"private\": true\n}\n");
    let untouched = repo.snapshot(&[".gitattributes"]);
    if install_first {
        assert!(repo.sync(&["install"]).status.success());
        husky_setup(&repo, husky, dir);
        let (code, text) = repo.check_exit();
        assert_eq!(code, Some(1), "check must notice husky took over: {text}");
    } else {
        husky_setup(&repo, husky, dir);
    }
    let hdir = dir.unwrap_or(".husky");
    let user_files: Vec<String> = beads_git::install::Hook::ALL.iter().map(|h| format!("{hdir}/{}", h.file_name())).collect();
    let mut watched: Vec<&str> = user_files.iter().map(String::as_str).collect();
    watched.extend([".gitattributes", "package.json"]);
    let before = as_before_our_install(repo.snapshot(&watched), &untouched);
    let install = repo.sync(&["install"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let said = String::from_utf8_lossy(&install.stderr);
    assert!(said.contains("commit") && said.contains(&format!("{hdir}/post-commit")), "install says which files to commit: {said}");
    let post_commit = String::from_utf8(repo.read(&format!("{hdir}/post-commit")).expect("user file")).expect("utf8");
    let bin_dir = bin("bd-sync").parent().expect("dir").display().to_string();
    assert!(post_commit.contains(">>> beads-git >>>") && !post_commit.contains(&bin_dir), "no machine path in a shared file");
    assert!(
        repo.read(&format!("{hdir}/_/post-commit")).is_none_or(|s| !String::from_utf8_lossy(&s).contains("beads-git")),
        "husky's stubs untouched"
    );
    let again = String::from_utf8_lossy(&repo.sync(&["install"]).stdout).into_owned();
    assert!(again.contains("nothing to change"), "a teammate's install is a byte no-op: {again}");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");

    let s = commit_is_notified_once(&repo, "bd-h1", "husky");
    crate::bridge_hooks::commits_name_their_issue(&repo, "husky");

    // husky's own hook fails: the commit is blocked.
    let pre_commit = format!("{hdir}/pre-commit");
    let original = String::from_utf8(repo.read(&pre_commit).expect("pre-commit")).expect("utf8");
    repo.write(&pre_commit, &format!("{original}echo 'lint failed' >&2\nexit 1\n"));
    assert_blocked(&repo.commit_issue(&s.url, "bd-h2"), "husky lint");
    repo.write(&pre_commit, &original);
    repo.ok("git", &["reset", "-q", "--hard", "HEAD"]);

    // husky's re-install regenerates its stubs; our blocks live in the user's files and survive.
    husky_reinstall(&repo, husky, dir);
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "after husky's re-install: {text}");
    commit_is_notified_once(&repo, "bd-h3", "husky after re-install");
    crate::bridge_hooks::commits_name_their_issue(&repo, "husky after re-install");

    assert!(repo.sync(&["uninstall"]).status.success());
    let after = repo.snapshot(&watched);
    assert_eq!(after, before, "uninstall restores every file byte for byte");
}

#[test]
fn husky_init_then_install() {
    if let Some(h) = husky() {
        husky_scenario(&h, false, None);
    }
}

#[test]
fn install_then_husky_init_then_install_again() {
    if let Some(h) = husky() {
        husky_scenario(&h, true, None);
    }
}

#[test]
fn husky_in_a_custom_directory() {
    if let Some(h) = husky() {
        husky_scenario(&h, false, Some(".config/husky"));
    }
}

// ---- lefthook --------------------------------------------------------------------------------

pub(super) fn lefthook() -> Option<PathBuf> {
    real_tool("LEFTHOOK", "npm/node_modules/.bin/lefthook")
}

const LEFTHOOK_TEAM: &str = "# team config\npre-commit:\n  jobs:\n    - name: lint\n      run: test ! -e .fail-lint\n";

fn lefthook_scenario(lefthook: &Path, install_first: bool) {
    let tool_dir = lefthook.parent().expect("bin dir");
    let repo = Repo::new(&[tool_dir]);
    let untouched = repo.snapshot(&[".gitattributes"]);
    repo.write("lefthook.yml", LEFTHOOK_TEAM);
    repo.ok("git", &["add", "lefthook.yml"]);
    repo.ok("git", &["commit", "-q", "-m", "lefthook"]);
    if install_first {
        // Installed as plain hooks, then lefthook takes over (renaming our files to *.old).
        std::fs::remove_file(repo.path().join("lefthook.yml")).expect("hide config");
        assert!(repo.sync(&["install"]).status.success());
        repo.ok("git", &["checkout", "-q", "--", "lefthook.yml"]);
        repo.ok(lefthook, &["install"]);
        let (code, text) = repo.check_exit();
        assert_eq!(code, Some(1), "{text}");
        assert!(text.contains("hook-unreachable") && text.contains("manager-config-missing"), "{text}");
    } else {
        repo.ok(lefthook, &["install"]);
    }
    let watched = [".gitattributes", "lefthook.yml", "lefthook-local.yml"];
    let before = as_before_our_install(repo.snapshot(&watched), &untouched);
    let install = repo.sync(&["install"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    assert_eq!(repo.read("lefthook.yml").expect("team config"), LEFTHOOK_TEAM.as_bytes(), "the team's file is not ours");
    assert!(repo.read("lefthook-local.yml").is_some_and(|c| String::from_utf8_lossy(&c).contains("name: beads-git")));
    for old in ["pre-commit.old", "post-commit.old"] {
        assert!(repo.read(&format!(".git/hooks/{old}")).is_none(), "{old} (ours only) removed");
    }
    let again = String::from_utf8_lossy(&repo.sync(&["install"]).stdout).into_owned();
    assert!(again.contains("nothing to change"), "{again}");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");

    let s = commit_is_notified_once(&repo, "bd-l1", "lefthook");
    crate::bridge_hooks::commits_name_their_issue(&repo, "lefthook");

    repo.write(".fail-lint", "");
    assert_blocked(&repo.commit_issue(&s.url, "bd-l2"), "lefthook lint job");
    std::fs::remove_file(repo.path().join(".fail-lint")).expect("rm");
    repo.ok("git", &["reset", "-q", "--hard", "HEAD"]);

    // Nothing staged, only a cache edit (`git commit --allow-empty`): lefthook skips pre-commit
    // jobs when nothing is staged, but ours names the issues file through `files`, so it still
    // runs and stages the export, and the commit carries the edit.
    let cache = Connection::open(repo.path().join(".git/beads/cache.db")).expect("cache");
    cache.execute("UPDATE issues SET title = 'Edited in the cache' WHERE id = 'bd-1'", []).expect("edit");
    assert_committed(&run(repo.cmd("git").args(["commit", "-q", "--allow-empty", "-m", "cache edit only"])), "commit of a cache edit");
    let committed = repo.ok("git", &["show", "HEAD:.beads/issues.jsonl"]);
    assert!(committed.contains("Edited in the cache"), "{committed}");

    // lefthook's own re-install keeps everything working.
    repo.ok(lefthook, &["install"]);
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "after lefthook install: {text}");
    commit_is_notified_once(&repo, "bd-l3", "lefthook after re-install");
    crate::bridge_hooks::commits_name_their_issue(&repo, "lefthook after re-install");

    assert!(repo.sync(&["uninstall"]).status.success());
    assert_eq!(repo.snapshot(&watched), before, "uninstall restores every file byte for byte");
}

#[test]
fn lefthook_install_then_our_install() {
    if let Some(l) = lefthook() {
        lefthook_scenario(&l, false);
    }
}

/// A team that already uses lefthook, installed with npm: run as `npx lefthook install`, so the
/// binary is on no PATH (its hook files name it). Issue: the first issue commit was not notified
/// (install could not run `lefthook install`, so lefthook never created the post-commit hook) and
/// uninstall exited 1 (it refused to remove lefthook's stubs for our hook types).
#[test]
fn regression_lefthook_installed_first_and_on_no_path_notifies_the_first_commit_and_uninstalls_cleanly() {
    let Some(lefthook) = lefthook() else { return };
    let mut repo = Repo::new(&[]);
    let ours = bin("bd-sync").parent().expect("bin dir").to_path_buf();
    repo.path_env =
        std::env::join_paths([ours.as_path(), Path::new("/usr/local/bin"), Path::new("/usr/bin"), Path::new("/bin")]).expect("PATH");
    assert!(!repo.out("sh", &["-c", "command -v lefthook"]).status.success(), "lefthook must not be on PATH here");
    repo.write("lefthook.yml", LEFTHOOK_TEAM);
    repo.ok("git", &["add", "lefthook.yml"]);
    repo.ok("git", &["commit", "-q", "-m", "lefthook"]);
    repo.ok(&lefthook, &["install"]);
    let watched = [".gitattributes", "lefthook.yml", "lefthook-local.yml", ".git/hooks/pre-commit", ".git/hooks/post-commit"];
    let before = repo.snapshot(&watched);
    let install = repo.sync(&["install"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    assert!(!String::from_utf8_lossy(&install.stderr).contains("not on PATH"), "{}", String::from_utf8_lossy(&install.stderr));
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");
    let s = commit_is_notified_once(&repo, "bd-n1", "the first issue commit after install");
    repo.write(".fail-lint", "");
    assert_blocked(&repo.commit_issue(&s.url, "bd-n2"), "lefthook lint job");
    std::fs::remove_file(repo.path().join(".fail-lint")).expect("rm");
    repo.ok("git", &["reset", "-q", "--hard", "HEAD"]);
    let uninstall = repo.sync(&["uninstall"]);
    assert!(uninstall.status.success(), "uninstall exited {:?}:\n{}", uninstall.status.code(), String::from_utf8_lossy(&uninstall.stderr));
    assert_eq!(repo.snapshot(&watched), before, "uninstall leaves lefthook's config and hooks as they were");
    for hook in ["post-merge", "post-rewrite", "post-checkout"] {
        assert!(repo.read(&format!(".git/hooks/{hook}")).is_none(), "{hook}: lefthook's stub for our job is gone");
    }
}

#[test]
fn our_install_then_lefthook_install_then_ours_again() {
    if let Some(l) = lefthook() {
        lefthook_scenario(&l, true);
    }
}

// ---- pre-commit ------------------------------------------------------------------------------

pub(super) fn pre_commit() -> Option<PathBuf> {
    real_tool("PRE_COMMIT", "pre-commit-4.7.0/bin/pre-commit")
}

const PRE_COMMIT_CONFIG: &str = "# team hooks\nrepos:\n-   repo: local\n    hooks:\n    -   id: lint\n        name: lint\n        entry: \
    sh -c 'test ! -e .fail-lint'\n        language: system\n        pass_filenames: false\n        always_run: true\n";

fn pre_commit_scenario(pre_commit: &Path, install_first: bool) {
    let tool_dir = pre_commit.parent().expect("bin dir");
    let repo = Repo::new(&[tool_dir]);
    let untouched = repo.snapshot(&[".gitattributes"]);
    if install_first {
        assert!(repo.sync(&["install"]).status.success());
        repo.write(".pre-commit-config.yaml", PRE_COMMIT_CONFIG);
        repo.ok(pre_commit, &["install"]);
        let (code, text) = repo.check_exit();
        assert_eq!(code, Some(1), "{text}");
    } else {
        repo.write(".pre-commit-config.yaml", PRE_COMMIT_CONFIG);
        repo.ok(pre_commit, &["install"]);
    }
    let watched = [".gitattributes", ".pre-commit-config.yaml"];
    let before = as_before_our_install(repo.snapshot(&watched), &untouched);
    let install = repo.sync(&["install"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let again = String::from_utf8_lossy(&repo.sync(&["install"]).stdout).into_owned();
    assert!(again.contains("nothing to change"), "{again}");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");
    repo.ok("git", &["add", ".pre-commit-config.yaml", ".gitattributes"]);

    let s = commit_is_notified_once(&repo, "bd-p1", "pre-commit");
    crate::bridge_hooks::commits_name_their_issue(&repo, "pre-commit");

    repo.write(".fail-lint", "");
    assert_blocked(&repo.commit_issue(&s.url, "bd-p2"), "pre-commit lint hook");
    std::fs::remove_file(repo.path().join(".fail-lint")).expect("rm");
    repo.ok("git", &["reset", "-q", "--hard", "HEAD"]);

    repo.ok(pre_commit, &["install"]);
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "after pre-commit install: {text}");
    commit_is_notified_once(&repo, "bd-p3", "pre-commit after re-install");
    crate::bridge_hooks::commits_name_their_issue(&repo, "pre-commit after re-install");

    // The team committed the config with our jobs: a plain uninstall keeps it and says why.
    let config = repo.read(".pre-commit-config.yaml");
    let out = repo.sync(&["uninstall"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(repo.read(".pre-commit-config.yaml"), config, "the committed config is kept");
    assert!(String::from_utf8_lossy(&out.stderr).contains("uninstall --team"), "{}", String::from_utf8_lossy(&out.stderr));
    // --team takes it out too: every file back byte for byte.
    assert!(repo.sync(&["uninstall", "--team"]).status.success());
    assert_eq!(repo.snapshot(&watched), before, "uninstall --team restores every file byte for byte");
}

#[test]
fn pre_commit_install_then_our_install() {
    if let Some(p) = pre_commit() {
        pre_commit_scenario(&p, false);
    }
}

#[test]
fn our_install_then_pre_commit_install_then_ours_again() {
    if let Some(p) = pre_commit() {
        pre_commit_scenario(&p, true);
    }
}

#[test]
fn a_pre_commit_config_we_cannot_edit_safely_gets_the_snippet_and_exit_1() {
    let Some(p) = pre_commit() else { return };
    let repo = Repo::new(&[p.parent().expect("dir")]);
    let config = "repos: []\n";
    repo.write(".pre-commit-config.yaml", config);
    let out = repo.sync(&["install"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".pre-commit-config.yaml") && err.contains("- repo: local") && err.contains("default_install_hook_types"),
        "{err}"
    );
    assert_eq!(repo.read(".pre-commit-config.yaml").expect("config"), config.as_bytes());
}

#[test]
fn lefthook_team_install_puts_the_jobs_in_the_shared_config() {
    let Some(lefthook) = lefthook() else { return };
    let repo = Repo::new(&[lefthook.parent().expect("bin dir")]);
    repo.write("lefthook.yml", "output: [failure, summary]\n");
    repo.ok(&lefthook, &["install"]);
    let install = repo.sync(&["install", "--team"]);
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    let team = String::from_utf8(repo.read("lefthook.yml").expect("team config")).expect("utf8");
    assert!(team.starts_with("output: [failure, summary]\n# >>> beads-git >>>\n") && team.contains("name: beads-git"), "{team}");
    assert!(repo.read("lefthook-local.yml").is_none(), "nothing per clone");
    let (code, text) = repo.check_exit();
    assert_eq!(code, Some(0), "{text}");
    commit_is_notified_once(&repo, "bd-t1", "lefthook --team");
    assert!(repo.sync(&["uninstall"]).status.success());
    assert_eq!(repo.read("lefthook.yml").expect("team config"), b"output: [failure, summary]\n");
}
