//! A stale issues file is never committed silently (docs/setup.md, "What install does"): when br's
//! database holds edits the file lacks, the pre-commit hook names `br sync --flush-only`, or runs
//! it with `git config beads.flushOnCommit true`, and `bd-sync check` reports `export-stale`. The
//! hook never blocks the commit: a database file that is a FIFO or a link is not opened, and a
//! flush that hangs is stopped at `beads.flushTimeout`. And `check` names the hook-ownership
//! traps: `core.hooksPath` pointing where our blocks are not, and a manager told to skip our job.
//!
//! The real br (beads_rust 0.7.6) drives the first tests; the hostile ones use a stand-in `br`
//! on PATH that logs its calls.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{bd_sync, bd_sync_ok, hermetic, path_with_our_binaries, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

/// A repository tracked by br, with our hooks installed, `tools` first on PATH after ours.
struct World {
    repo: TestRepo,
    home: tempfile::TempDir,
    path: std::ffi::OsString,
}

impl World {
    fn new(tools: &Path) -> World {
        let repo = TestRepo::new();
        let home = tempfile::tempdir().expect("home");
        let path = path_with_our_binaries(&[tools]);
        World { repo, home, path }
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = hermetic(program);
        cmd.current_dir(self.repo.path()).env("HOME", self.home.path()).env("PATH", &self.path).env("NO_COLOR", "1").env_remove("BEADS_DB");
        cmd
    }

    fn ok(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
        let out = run(self.command(program).args(args));
        assert!(out.status.success(), "{args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// `git commit` of a change to another file; the commit must succeed. Returns git's stderr
    /// (where the hook speaks).
    fn commit_other_file(&self, n: usize) -> String {
        self.repo.write("notes.txt", format!("note {n}\n").as_bytes());
        self.ok("git", &["add", "notes.txt"]);
        let out = run(self.command("git").args(["commit", "-q", "-m", &format!("note {n}")]));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "the commit must go through: {err}");
        err
    }

    fn committed_file(&self) -> String {
        self.ok("git", &["show", &format!("HEAD:{FILE}")])
    }

    fn check(&self) -> String {
        let out = run(self.command(crate::support::bin("bd-sync")).args(["check"]));
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }
}

/// br initialised, one issue flushed and committed, our hooks installed; returns the issue's id.
fn br_world(br: &Path) -> (World, String) {
    let w = World::new(br.parent().expect("br's directory"));
    w.ok(br, &["init", "--prefix", "se"]);
    let id = w.ok(br, &["q", "One"]);
    w.ok("git", &["add", FILE]);
    w.ok("git", &["commit", "-q", "-m", "issues"]);
    bd_sync_ok(w.repo.path(), &["install"]);
    w.ok("git", &["add", "-A"]);
    w.ok("git", &["commit", "-q", "-m", "install"]);
    // A second apart, so file times tell the edit from the flush on any file system.
    std::thread::sleep(Duration::from_millis(1100));
    (w, id)
}

#[test]
fn regression_a_commit_after_a_br_edit_without_flush_said_nothing() {
    let Some(br) = crate::support::real_br() else { return };
    let (w, id) = br_world(&br);
    w.ok(&br, &["--no-auto-flush", "update", &id, "--title", "One, edited in the database"]);
    let before = w.repo.read(FILE);
    let err = w.commit_other_file(1);
    assert!(err.contains("br sync --flush-only"), "the hook names br's flush: {err}");
    assert_eq!(err.lines().filter(|l| l.contains("br sync --flush-only")).count(), 1, "one line: {err}");
    assert_eq!(w.repo.read(FILE), before, "without beads.flushOnCommit the hook never writes the file");
    assert!(!w.committed_file().contains("edited in the database"));
}

#[test]
fn regression_flush_on_commit_committed_the_stale_file() {
    let Some(br) = crate::support::real_br() else { return };
    let (w, id) = br_world(&br);
    w.ok("git", &["config", "beads.flushOnCommit", "true"]);
    w.ok(&br, &["--no-auto-flush", "update", &id, "--title", "One, edited in the database"]);
    w.commit_other_file(1);
    assert!(w.committed_file().contains("One, edited in the database"), "the commit holds br's edit:\n{}", w.committed_file());
    assert_eq!(w.ok("git", &["status", "--porcelain", "--", FILE]), "", "the flushed file is staged and committed whole");
    // In step now: the next commit says nothing.
    let err = w.commit_other_file(2);
    assert!(!err.contains("br sync"), "{err}");
}

#[test]
fn regression_check_did_not_report_an_export_stale_file() {
    let Some(br) = crate::support::real_br() else { return };
    let (w, id) = br_world(&br);
    assert!(!w.check().contains("export-stale"), "{}", w.check());
    w.ok(&br, &["--no-auto-flush", "update", &id, "--title", "One, edited in the database"]);
    let said = w.check();
    assert!(said.contains("export-stale") && said.contains("br sync --flush-only"), "{said}");
    w.ok(&br, &["sync", "--flush-only"]);
    let said = w.check();
    assert!(!said.contains("export-stale"), "after the flush: {said}");
}

/// A stand-in br in a directory of its own: logs each call's arguments to `br.log` there, says
/// the database is dirty, and runs `flush` for `sync --flush-only`.
fn fake_br(flush: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tools");
    let log = dir.path().join("br.log");
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$*\" in\n  *--status*) printf '{{\"dirty_count\": 1, \"db_newer\": true}}\\n' ;;\n  \
            *--flush-only*) {flush} ;;\nesac\n",
        log.display()
    );
    let br = dir.path().join("br");
    std::fs::write(&br, script).expect("write br");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&br, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    dir
}

fn br_calls(tools: &Path) -> Vec<String> {
    std::fs::read_to_string(tools.join("br.log")).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// A repository with an issues file committed and our hooks installed, and the file's time set
/// an hour back so any database written now is newer.
fn fake_world(tools: &Path) -> World {
    let w = World::new(tools);
    w.repo.write(FILE, b"{\"id\":\"se-1\",\"title\":\"One\",\"status\":\"open\"}\n");
    w.ok("git", &["add", FILE]);
    w.ok("git", &["commit", "-q", "-m", "issues"]);
    bd_sync_ok(w.repo.path(), &["install"]);
    w.ok("git", &["add", "-A"]);
    w.ok("git", &["commit", "-q", "-m", "install"]);
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(w.repo.path().join(FILE)).expect("open").set_modified(old).expect("mtime");
    w
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

#[test]
fn regression_a_database_fifo_or_link_is_neither_opened_nor_followed() {
    let tools = fake_br("exit 0");
    let w = fake_world(tools.path());
    let beads = w.repo.path().join(".beads");
    mkfifo(&beads.join("beads.db"));
    std::os::unix::fs::symlink("/dev/zero", beads.join("beads.db-wal")).expect("link");
    let start = Instant::now();
    let err = w.commit_other_file(1);
    assert!(start.elapsed() < Duration::from_secs(20), "the commit waited {:?}", start.elapsed());
    assert!(br_calls(tools.path()).is_empty(), "a FIFO and a link are no database: br was asked {:?}", br_calls(tools.path()));
    assert!(!err.contains("br sync"), "{err}");

    // A real database beside them is looked at, and named; the FIFO and the link still are not.
    std::fs::write(beads.join("other.db"), b"db").expect("write");
    let err = w.commit_other_file(2);
    assert!(err.contains("br sync --flush-only") && err.contains("other.db"), "{err}");
    assert!(!err.contains("beads.db"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
}

#[test]
fn regression_a_hanging_flush_is_stopped_at_its_timeout_and_the_commit_goes_through() {
    let tools = fake_br("sleep 600");
    let w = fake_world(tools.path());
    std::fs::write(w.repo.path().join(".beads/beads.db"), b"db").expect("write");
    w.ok("git", &["config", "beads.flushOnCommit", "true"]);
    w.ok("git", &["config", "beads.flushTimeout", "2"]);
    let start = Instant::now();
    let err = w.commit_other_file(1);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(15), "the commit waited {took:?}: {err}");
    assert!(br_calls(tools.path()).iter().any(|c| c == "sync --flush-only"), "{:?}", br_calls(tools.path()));
    assert!(err.contains("did not finish within 2 s") && err.contains("br sync --flush-only"), "{err}");
}

#[test]
fn nothing_newer_than_the_file_asks_no_br() {
    let tools = fake_br("exit 0");
    let w = fake_world(tools.path());
    std::fs::write(w.repo.path().join(".beads/beads.db"), b"db").expect("write");
    let old = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options().write(true).open(w.repo.path().join(".beads/beads.db")).expect("open").set_modified(old).expect("mtime");
    let err = w.commit_other_file(1);
    assert!(br_calls(tools.path()).is_empty(), "{:?}", br_calls(tools.path()));
    assert!(!err.contains("br sync"), "{err}");
}

/// bd 1.0.4+ (a stand-in `bd`): its Dolt directory changed after the file and after its own export
/// state, so the hook names `bd export`, or runs it with `beads.flushOnCommit`.
#[test]
fn regression_a_commit_after_a_bd_edit_without_export_said_nothing() {
    let tools = tempfile::tempdir().expect("tools");
    let bd = tools.path().join("bd");
    let line = r#"{"id":"se-1","title":"One, edited in Dolt","status":"open"}"#;
    std::fs::write(&bd, format!("#!/bin/sh\n[ \"$1 $2\" = 'export -o' ] && printf '%s\\n' '{line}' > \"$3\"\n")).expect("write bd");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bd, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let w = fake_world(tools.path());
    let noms = w.repo.path().join(".beads/dolt/beads/.dolt/noms");
    std::fs::create_dir_all(&noms).expect("mkdir");
    std::fs::write(w.repo.path().join(".beads/export-state.json"), br#"{"last_dolt_commit":"x","timestamp":"2020-01-01T00:00:00Z"}"#)
        .expect("write");
    std::fs::write(noms.join("manifest"), b"m").expect("write");
    let err = w.commit_other_file(1);
    assert!(err.contains("bd export -o .beads/issues.jsonl"), "{err}");
    assert!(!w.committed_file().contains("edited in Dolt"));

    w.ok("git", &["config", "beads.flushOnCommit", "true"]);
    w.commit_other_file(2);
    assert!(w.committed_file().contains("edited in Dolt"), "{}", w.committed_file());
    let err = w.commit_other_file(3);
    assert!(!err.contains("bd export"), "in step after the export: {err}");
}

// ---- item 6: hook-ownership traps ---------------------------------------------------------------

#[test]
fn regression_check_did_not_name_a_hooks_path_that_another_tool_took() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, b"{\"id\":\"bd-1\",\"title\":\"One\",\"status\":\"open\"}\n", "issues");
    bd_sync_ok(repo.path(), &["install"]);
    repo.write(".githooks/pre-commit", b"#!/bin/sh\nnpx some-linter\n");
    repo.git(&["config", "core.hooksPath", ".githooks"]);
    let out = bd_sync(repo.path(), &["check"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("hooks-path-without-blocks"), "{said}");
    assert!(said.contains("core.hooksPath = .githooks") && said.contains(".git/config:"), "names the setting and where: {said}");
    assert!(said.contains("bd-sync install") && said.contains("git config --unset core.hooksPath"), "{said}");
    assert!(!said.contains("hook-missing"), "said once, not per hook: {said}");

    // After install, the blocks are where git looks: the finding goes.
    bd_sync_ok(repo.path(), &["install"]);
    let said = String::from_utf8_lossy(&bd_sync(repo.path(), &["check"]).stdout).into_owned();
    assert!(!said.contains("hooks-path-without-blocks"), "{said}");
}

#[test]
fn regression_check_did_not_name_a_lefthook_skip_on_our_job() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, b"{\"id\":\"bd-1\",\"title\":\"One\",\"status\":\"open\"}\n", "issues");
    let team = "pre-commit:\n  jobs:\n    - name: lint\n      run: \"true\"\n";
    repo.commit_file("lefthook.yml", team.as_bytes(), "lefthook");
    let _ = bd_sync(repo.path(), &["install"]);
    assert!(String::from_utf8_lossy(&repo.read("lefthook-local.yml")).contains("name: beads-git"), "install wrote the local jobs");
    let said = String::from_utf8_lossy(&bd_sync(repo.path(), &["check"]).stdout).into_owned();
    assert!(!said.contains("manager-skips-block"), "{said}");

    repo.write("lefthook.yml", format!("{team}    - name: beads-git\n      skip: true\n").as_bytes());
    let said = String::from_utf8_lossy(&bd_sync(repo.path(), &["check"]).stdout).into_owned();
    assert!(said.contains("manager-skips-block"), "{said}");
    assert!(said.contains("lefthook.yml:6") && said.contains("beads-git job of pre-commit"), "names file:line: {said}");
}

#[test]
fn regression_check_did_not_name_a_pre_commit_skip_of_our_hook() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, b"{\"id\":\"bd-1\",\"title\":\"One\",\"status\":\"open\"}\n", "issues");
    repo.commit_file(".pre-commit-config.yaml", b"repos: []\n", "pre-commit");
    let _ = bd_sync(repo.path(), &["install"]);
    let out = run(crate::support::ours("bd-sync").current_dir(repo.path()).env("SKIP", "flake8,beads-git-pre-commit").arg("check"));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("manager-skips-block") && said.contains("SKIP=flake8,beads-git-pre-commit"), "{said}");
}
