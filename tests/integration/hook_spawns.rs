//! The cheap path is taken: a commit that touches no issues file and leaves no cache
//! edit starts one of our processes per hook at most, none for `commit-msg`, and our processes
//! start no git where a stat answers. Counted, not timed: our three binaries are logging shims
//! on PATH (the hooks find ours through PATH as they do when the directory `install` wrote is
//! gone), and every git process says what it is in git's own trace (`GIT_TRACE2_EVENT`; a shim
//! would not do: git puts its own directory first on a hook's PATH).

use std::path::{Path, PathBuf};

use crate::support::{bin, hermetic, issue, jsonl, run, TestRepo};

/// A directory of shims, each logging `<name> <args>` to `log` and running the real binary.
fn shims(dir: &Path, log: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in ["bd-sync", "bd-hook", "bd-merge"] {
        let script = format!("#!/bin/sh\nprintf '%s\\n' \"{name} $*\" >> '{}'\nexec '{}' \"$@\"\n", log.display(), bin(name).display());
        let path = dir.join(name);
        std::fs::write(&path, script).expect("write shim");
        let mut perms = std::fs::metadata(&path).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).expect("chmod");
    }
    dir.to_path_buf()
}

/// Installs beads-git in `repo` from a copy of our binaries that is then removed (the blocks
/// fall back to PATH), and returns the temporary directory, the spawn log and a PATH whose first
/// directory holds the logging shims.
fn install_with_shims(repo: &TestRepo) -> (tempfile::TempDir, PathBuf, std::ffi::OsString) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let installed = tmp.path().join("installed");
    std::fs::create_dir_all(&installed).expect("mkdir");
    for name in ["bd-sync", "bd-hook", "bd-merge"] {
        std::fs::copy(bin(name), installed.join(name)).expect("copy");
    }
    let out = run(hermetic(installed.join("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&installed).expect("remove the installed copy");
    let log = tmp.path().join("spawns.log");
    let path = shims(&tmp.path().join("shims"), &log);
    let path = std::env::join_paths(std::iter::once(path).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())))
        .expect("PATH");
    (tmp, log, path)
}

/// The git subcommands started, from git's trace2 events (one JSON object a line).
fn git_commands(trace: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(trace).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "start")
        .filter_map(|v| v["argv"].get(1).and_then(serde_json::Value::as_str).map(str::to_owned))
        .collect()
}

#[test]
fn a_commit_that_touches_no_issue_starts_nothing_for_pre_commit_or_commit_msg_and_no_git_where_a_stat_answers() {
    let repo = TestRepo::new();
    // bd-2 is in progress for nobody, and last updated before the commits here: nobody's claim.
    let stale = issue("bd-2").status("in_progress").updated("2025-01-01T00:00:00Z").line();
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line(), stale]));
    repo.write("code.txt", b"0\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let (tmp, log, path) = install_with_shims(&repo);
    let trace = tmp.path().join("trace2.json");
    let commit = |n: usize| {
        repo.write("code.txt", format!("{n}\n").as_bytes());
        let mut git = hermetic("git");
        git.current_dir(repo.path()).env("PATH", &path).env("GIT_TRACE2_EVENT", &trace).args(["commit", "-q", "-am", "code"]);
        let out = run(&mut git);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    commit(1); // the first commit after install may import; the second is the everyday one
    std::fs::write(&log, "").expect("truncate");
    std::fs::write(&trace, "").expect("truncate");
    commit(2);
    let spawns = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        spawns.lines().collect::<Vec<_>>(),
        ["bd-sync link prepare-commit-msg .git/COMMIT_EDITMSG message ", "bd-hook post-commit --timeout 2"],
        "none for pre-commit (file times say nothing is to do) and commit-msg, one for each of the others, no bd-merge"
    );
    // No rev-parse either: a stat finds the git dir.
    let ours: Vec<String> = git_commands(&trace)
        .into_iter()
        .filter(|c| !["commit", "maintenance", "gc", "pack-refs", "repack"].contains(&c.as_str()))
        .collect();
    // git's own: the commit and its housekeeping; ours: none (the bridge's settings and the
    // notifier's keys are read from git's configuration files, plain here).
    assert!(ours.is_empty(), "the git processes our hooks started: {ours:?}");

    // An SQL edit of the cache, a tracker's write of the file, a write of a tracker's database:
    // each leaves the marker older than what changed, and the pre-commit export runs again.
    let edit_cache = || {
        let conn = rusqlite::Connection::open(repo.path().join(".git/beads/cache.db")).expect("cache");
        conn.execute("UPDATE issues SET title = 'edited in SQL' WHERE id = 'bd-1'", []).expect("edit");
    };
    let tracker_wrote_the_file = || {
        let text = String::from_utf8(repo.read(".beads/issues.jsonl")).expect("utf-8");
        repo.write(".beads/issues.jsonl", text.replacen("Issue bd-2", "Issue bd-2, by the tracker", 1).as_bytes());
    };
    let tracker_wrote_its_database = || repo.write(".beads/beads.db", b"a tracker's database");
    let steps: [(&str, &dyn Fn()); 3] = [
        ("an SQL edit", &edit_cache),
        ("the file rewritten", &tracker_wrote_the_file),
        ("a tracker database", &tracker_wrote_its_database),
    ];
    for (n, (what, change)) in steps.into_iter().enumerate() {
        change();
        std::fs::write(&log, "").expect("truncate");
        commit(10 + n);
        let spawns = std::fs::read_to_string(&log).expect("log");
        assert!(spawns.starts_with("bd-sync export"), "after {what} the export runs: {spawns}");
        if n == 0 {
            let committed = repo.git(&["show", "HEAD:.beads/issues.jsonl"]);
            assert!(committed.contains("edited in SQL"), "the SQL edit was committed: {committed}");
        }
    }
}

/// The review's cases against the in-step marker: each must bring the pre-commit check back.
#[test]
fn the_in_step_marker_never_hides_a_tracker_ahead_conflict_markers_a_future_marker_or_a_file_moved_in() {
    let repo = TestRepo::new();
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line(), issue("bd-2").line()]));
    repo.write("code.txt", b"0\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let marker = repo.path().join(".git/beads/cache.in-step");
    let sync = |args: &[&str]| {
        let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(args));
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let commit = |n: usize| {
        repo.write("code.txt", format!("{n}\n").as_bytes());
        let out = run(hermetic("git").current_dir(repo.path()).args(["commit", "-q", "-am", "code"]));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    sync(&["import"]);
    assert!(marker.exists(), "an import of a file in step writes the marker");

    // 1. A tracker's database ahead of the file (br with auto-flush off): no marker.
    std::thread::sleep(std::time::Duration::from_millis(20));
    repo.write(".beads/beads.db", b"a tracker's database, newer than the file");
    sync(&["import", "--force"]);
    assert!(!marker.exists(), "a tracker database newer than the file keeps the marker away");
    std::fs::remove_file(repo.path().join(".beads/beads.db")).expect("rm");
    sync(&["import", "--force"]);
    assert!(marker.exists());

    // 2. Conflict markers let through by `import --skip-invalid`: no marker, and the commit
    // resolves them.
    let marked = format!(
        "<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> theirs\n{}\n",
        issue("bd-1").title("ours").updated("2025-11-02T10:00:00-08:00").line(),
        issue("bd-1").title("theirs").updated("2025-11-03T10:00:00-08:00").line(),
        issue("bd-2").line()
    );
    repo.write(".beads/issues.jsonl", marked.as_bytes());
    let _ = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["import", "--skip-invalid"]));
    assert!(!marker.exists(), "an import that skipped lines writes no marker");
    commit(1);
    let committed = repo.git(&["show", "HEAD:.beads/issues.jsonl"]);
    assert!(!committed.contains("<<<<<<<"), "the hook resolved the markers: {committed}");

    // 3. A marker in the future (a clock stepped back) does not silence the check.
    sync(&["import"]);
    let edit = || {
        let conn = rusqlite::Connection::open(repo.path().join(".git/beads/cache.db")).expect("cache");
        conn.execute("UPDATE issues SET title = 'edited under a future marker' WHERE id = 'bd-2'", []).expect("edit");
    };
    edit();
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&marker).expect("marker").set_modified(future).expect("set time");
    commit(2);
    assert!(repo.git(&["show", "HEAD:.beads/issues.jsonl"]).contains("edited under a future marker"), "exported despite the marker");

    // 4. An issues file moved in with an old time (`cp -p` elsewhere, then `mv`): the directory's
    // time moves, the check runs, and the export writes the marker anew.
    sync(&["import"]);
    let before = std::fs::metadata(&marker).expect("marker").modified().expect("time");
    let outside = tmp.path().join("moved.jsonl");
    let text = String::from_utf8(repo.read(".beads/issues.jsonl")).expect("utf-8");
    std::fs::write(&outside, text.replacen("Issue bd-1", "moved in", 1)).expect("write");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    std::fs::File::options().write(true).open(&outside).expect("file").set_modified(old).expect("set time");
    std::fs::rename(&outside, repo.path().join(".beads/issues.jsonl")).expect("move in");
    commit(3);
    let after = std::fs::metadata(&marker).expect("the export wrote the marker again").modified().expect("time");
    assert!(after > before, "the pre-commit export ran after the move");
}

/// A repository holding bd-1 and a code file, committed, with beads-git installed (`--local`).
fn installed_with_one_issue_and_code() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]));
    repo.write("code.txt", b"0\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    repo
}

/// Puts a FIFO where `file` was.
fn replace_with_fifo(file: &Path) {
    std::fs::remove_file(file).expect("rm");
    let c = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo(3) on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// A FIFO where the issues file belongs never stalls the commit (nothing opens it for reading),
/// and a `<git dir>/beads` that is a link is never written through by the block's probe.
#[test]
fn a_fifo_issues_file_or_a_linked_cache_dir_never_stalls_or_redirects_the_hook() {
    let repo = installed_with_one_issue_and_code();
    let commit = |n: usize| {
        repo.write("code.txt", format!("{n}\n").as_bytes());
        repo.git(&["add", "code.txt"]);
        let start = std::time::Instant::now();
        let out = run(hermetic("git").current_dir(repo.path()).args(["commit", "-q", "-m", "code"]));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "the commit did not wait on anything");
    };
    commit(1);
    let file = repo.path().join(".beads/issues.jsonl");
    replace_with_fifo(&file);
    commit(2);
    std::fs::remove_file(&file).expect("rm");
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]));
    // The cache's directory moved elsewhere and linked back.
    let outside = tempfile::tempdir().expect("outside");
    let beads = repo.path().join(".git/beads");
    std::fs::rename(&beads, outside.path().join("beads")).expect("move");
    std::os::unix::fs::symlink(outside.path().join("beads"), &beads).expect("link");
    std::fs::remove_file(outside.path().join("beads/cache.now")).ok();
    commit(3);
    assert!(!outside.path().join("beads/cache.now").exists(), "nothing written through the link");
}

/// The notifier's keys are read from git's files without git only when that is certain: a
/// checkout that changes an issue starts no `git config` when no file names a notifier key, and
/// the notice still reaches the server wherever git's configuration sets `beads.notifyUrl`: the
/// system file (`GIT_CONFIG_SYSTEM`, and the place install recorded), the global one, the
/// repository's, a file an `include` names, `git -c` (`GIT_CONFIG_COUNT`), a worktree's.
#[test]
fn regression_a_hook_started_git_config_for_keys_no_config_file_names_and_still_hears_every_one_that_does() {
    use crate::support::{CaptureServer, Reply};
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = TestRepo::new();
    let edited = |title: &str| jsonl(&[issue("bd-1").title(title).line()]);
    repo.write(".beads/issues.jsonl", &edited("one"));
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write(".beads/issues.jsonl", &edited("two"));
    repo.git(&["commit", "-q", "-am", "edit"]);
    repo.git(&["checkout", "-q", "main"]);
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recorded = std::fs::read_to_string(repo.path().join(".git/beads/git-config-system")).expect("install records the system file");
    assert!(recorded.trim_end().ends_with("gitconfig"), "{recorded}");

    let tmp = tempfile::tempdir().expect("temp dir");
    let trace = tmp.path().join("trace2.json");
    let file = |name: &str, text: String| {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    };
    let notify = format!("[beads]\n\tnotifyUrl = {}\n", server.url);
    let system = file("system", notify.clone());
    let global = file("global", notify.clone());
    let included = file("included", notify.clone());
    let including = file("including", format!("[include]\n\tpath = {included}\n"));
    // (setting, its environment, whether it sets the URL): each checkout goes to the other branch.
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, bool);
    let cases: Vec<Case> = vec![
        ("no file names it", vec![], false),
        ("the system file", vec![("GIT_CONFIG_NOSYSTEM", "0".into()), ("GIT_CONFIG_SYSTEM", system)], true),
        ("the global file", vec![("GIT_CONFIG_GLOBAL", global)], true),
        ("an included file", vec![("GIT_CONFIG_GLOBAL", including)], true),
        (
            "git -c",
            vec![
                ("GIT_CONFIG_COUNT", "1".into()),
                ("GIT_CONFIG_KEY_0", "beads.notifyUrl".into()),
                ("GIT_CONFIG_VALUE_0", server.url.clone()),
            ],
            true,
        ),
        ("no file names it, again", vec![], false),
    ];
    let mut branch = ["other", "main"].into_iter().cycle();
    for (what, env, sends) in cases {
        std::fs::write(&trace, "").expect("truncate");
        let before = server.requests().len();
        let mut git = hermetic("git");
        git.current_dir(repo.path()).env("GIT_TRACE2_EVENT", &trace).args(["checkout", "-q", branch.next().expect("cycle")]);
        for (k, v) in &env {
            git.env(k, v);
        }
        let out = run(&mut git);
        assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        let configs = git_commands(&trace).into_iter().filter(|c| c == "config").count();
        if sends {
            assert_eq!(server.wait_for(before + 1, std::time::Duration::from_secs(10)).len(), before + 1, "{what}: the notice arrives");
        } else {
            assert_eq!(configs, 0, "{what}: no git config started");
            std::thread::sleep(std::time::Duration::from_millis(200));
            assert_eq!(server.requests().len(), before, "{what}: nothing sent");
        }
    }
    // The system file install recorded is read when the environment names none: one that names
    // a notifier key has git asked (git reads its own system file, which here sets nothing).
    let record = repo.path().join(".git/beads/git-config-system");
    let mut configs_started_by_a_checkout = || {
        std::fs::write(&trace, "").expect("truncate");
        let mut git = hermetic("git");
        git.current_dir(repo.path()).env("GIT_TRACE2_EVENT", &trace).env("GIT_CONFIG_NOSYSTEM", "0");
        let out = run(git.args(["checkout", "-q", branch.next().expect("cycle")]));
        assert!(out.status.success());
        git_commands(&trace).into_iter().filter(|c| c == "config").count()
    };
    std::fs::write(&record, format!("{}\n", file("recorded", notify.clone()))).expect("write");
    assert_eq!(configs_started_by_a_checkout(), 1, "the recorded system file names a key: git asked");
    // Without the record (an install by an older version), git is asked.
    std::fs::remove_file(&record).expect("remove");
    assert_eq!(configs_started_by_a_checkout(), 1, "no record: git asked");
    // The repository's own file.
    repo.git(&["config", "beads.notifyUrl", &server.url]);
    let before = server.requests().len();
    let out = run(hermetic("git").current_dir(repo.path()).args(["checkout", "-q", branch.next().expect("cycle")]));
    assert!(out.status.success());
    assert_eq!(
        server.wait_for(before + 1, std::time::Duration::from_secs(10)).len(),
        before + 1,
        "the repository's config: the notice arrives"
    );
}

/// The bridge reads the committer's name from git's files without git when they are plain, and
/// asks git when they are not (a quoted value, an include): the same trailer either way.
#[test]
fn the_bridge_reads_user_name_from_plain_config_files_and_asks_git_otherwise() {
    let repo = TestRepo::new();
    let mine = issue("bd-7").status("in_progress").updated("2020-01-01T00:00:00Z").extra("\"assignee\":\"Ada Lovelace\"").line();
    repo.write(".beads/issues.jsonl", &jsonl(&[mine]));
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tmp = tempfile::tempdir().expect("temp dir");
    let trace = tmp.path().join("trace2.json");
    let global = tmp.path().join("global");
    let config = repo.path().join(".git/config");
    let plain = std::fs::read_to_string(&config).expect("config");
    let cases = [
        ("the repository's file, plain", format!("{plain}[user]\n\tname = Ada Lovelace\n"), String::new(), 0),
        ("the global file, plain", plain.clone(), "[user]\n\tname = Ada Lovelace\n".to_owned(), 0),
        ("quoted", format!("{plain}[user]\n\tname = \"Ada Lovelace\"\n"), String::new(), 1),
        // An include may set anything: the notifier's keys are asked of git too.
        ("included", plain.clone(), format!("[include]\n\tpath = {}\n", tmp.path().join("inc").display()), 2),
    ];
    std::fs::write(tmp.path().join("inc"), "[user]\n\tname = Ada Lovelace\n").expect("write");
    for (n, (what, local, global_text, configs)) in cases.into_iter().enumerate() {
        std::fs::write(&config, local).expect("write");
        std::fs::write(&global, global_text).expect("write");
        std::fs::write(&trace, "").expect("truncate");
        repo.write("code.txt", format!("{n}\n").as_bytes());
        repo.git(&["add", "code.txt"]);
        let mut git = hermetic("git");
        git.current_dir(repo.path()).env("GIT_TRACE2_EVENT", &trace).env("GIT_CONFIG_GLOBAL", &global).env_remove("BD_ACTOR");
        let out = run(git.args(["commit", "-q", "-m", what]));
        assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
        let message = repo.git(&["log", "-1", "--format=%B"]);
        assert!(message.contains("Beads-Issue: bd-7"), "{what}: {message}");
        let started = git_commands(&trace).into_iter().filter(|c| c == "config").count();
        assert_eq!(started, configs, "{what}: git config processes");
    }
}

/// Configuration files read without git are never read whole when hostile: a file over the
/// bound is left to git, and a link is followed, as git follows it. Each is left to git
/// or read as git reads it, and the hook finishes.
#[test]
fn hostile_configuration_files_are_left_to_git_never_waited_on_or_read_whole() {
    use crate::support::{CaptureServer, Reply};
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = TestRepo::new();
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").title("one").line()]));
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").title("two").line()]));
    repo.git(&["commit", "-q", "-am", "edit"]);
    repo.git(&["checkout", "-q", "main"]);
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tmp = tempfile::tempdir().expect("temp dir");
    let trace = tmp.path().join("trace2.json");
    let big = tmp.path().join("big");
    std::fs::write(&big, format!("# {}\n", "x".repeat(2 << 20))).expect("write");
    let target = tmp.path().join("target");
    std::fs::write(&target, format!("[beads]\n\tnotifyUrl = {}\n", server.url)).expect("write");
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let mut branch = ["other", "main"].into_iter().cycle();
    // (the global file, git config processes expected, whether the notice is sent)
    // (A device or a FIFO there stops git itself before any hook: `safe_fs::bounded` refuses them
    // in our reader, tested with it.)
    for (global, configs, sends) in [(big.as_path(), 1, false), (link.as_path(), 1, true)] {
        std::fs::write(&trace, "").expect("truncate");
        let before = server.requests().len();
        let started = std::time::Instant::now();
        let mut git = hermetic("git");
        git.current_dir(repo.path()).env("GIT_TRACE2_EVENT", &trace).env("GIT_CONFIG_GLOBAL", global);
        let out = run(git.args(["checkout", "-q", branch.next().expect("cycle")]));
        assert!(out.status.success(), "{}: {}", global.display(), String::from_utf8_lossy(&out.stderr));
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{}: the hook finished", global.display());
        let started_configs = git_commands(&trace).into_iter().filter(|c| c == "config").count();
        assert_eq!(started_configs, configs, "{}: left to git", global.display());
        let expected = before + usize::from(sends);
        assert_eq!(server.wait_for(expected, std::time::Duration::from_secs(10)).len(), expected, "{}", global.display());
    }
}

/// A checkout, merge or pull that leaves the issues file as it was starts none of our processes
/// (the in-step marker is newer than the file and the cache, and the merge log has nothing to
/// announce); a merge's commit and a rebase's picks start no `bd-sync link` (git's state files
/// say what they are); one that changes the file imports it and notifies; a rebase always runs
/// the import that compares with the pre-rebase tip. Counted through the shims, not timed.
#[test]
fn a_checkout_merge_or_rebase_with_nothing_to_do_starts_nothing_and_one_with_work_imports() {
    let repo = TestRepo::new();
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line(), issue("bd-2").line()]));
    repo.write("code.txt", b"0\n");
    repo.git(&["add", "."]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let (tmp, log, path) = install_with_shims(&repo);
    let git = |args: &[&str]| -> String {
        std::fs::write(&log, "").expect("truncate");
        let out = run(hermetic("git").current_dir(repo.path()).env("PATH", &path).args(args));
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(&log).expect("log")
    };
    let code_commit = |n: usize| {
        repo.write("code.txt", format!("{n}\n").as_bytes());
        git(&["commit", "-q", "-am", &format!("code {n}")])
    };
    // The first hook run after install imports and writes the marker.
    git(&["checkout", "-q", "-b", "topic"]);
    code_commit(1);
    code_commit(2);
    // Switching between branches whose issues files are the same: nothing.
    assert_eq!(git(&["checkout", "-q", "main"]), "", "a checkout that left the issues file alone");
    assert_eq!(git(&["checkout", "-q", "topic"]), "", "and back");
    git(&["checkout", "-q", "main"]);
    // A merge commit of code only: no link for the merge's message, nothing after it.
    assert_eq!(git(&["merge", "-q", "--no-ff", "--no-edit", "topic"]), "", "a merge of code only");
    // A branch that edits an issue: the checkout imports it and notifies.
    git(&["checkout", "-q", "-b", "issues"]);
    let edited = jsonl(&[issue("bd-1").title("edited on a branch").line(), issue("bd-2").line()]);
    repo.write(".beads/issues.jsonl", &edited);
    git(&["commit", "-q", "-am", "edit bd-1"]);
    git(&["checkout", "-q", "main"]);
    let spawned = git(&["checkout", "-q", "issues"]);
    // The two ends of one pipe: either may start first.
    assert!(spawned.lines().any(|l| l.starts_with("bd-sync import --print-changed -z")), "{spawned}");
    assert!(spawned.lines().any(|l| l.starts_with("bd-hook stdin -z")), "{spawned}");
    let shown = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["show", "bd-1", "--json"]));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("edited on a branch"), "the cache followed the checkout");
    // A rebase of code commits: each pick starts no link; the post-rewrite import runs (it
    // compares with the pre-rebase tip whatever the file's time says).
    git(&["checkout", "-q", "topic"]);
    code_commit(3);
    let spawned = git(&["rebase", "-q", "issues"]);
    assert!(!spawned.contains("bd-sync link"), "a rebase's picks start no link: {spawned}");
    assert_eq!(spawned.lines().filter(|l| l.starts_with("bd-sync import") && l.contains("--after-rebase")).count(), 1, "{spawned}");
    // The rebase took bd-1 back to an older stamp than the pre-rebase tip's: its new stamp waits
    // in the file for the next commit.
    assert!(!repo.git(&["status", "--porcelain", "--", ".beads/issues.jsonl"]).is_empty(), "the stamp is left to commit");
    git(&["commit", "-q", "-am", "the stamp"]);
    // A rebase that leaves the issues file as it was: the import compares two blob ids and reads
    // neither version of the file (no `cat-file`).
    git(&["checkout", "-q", "issues"]);
    repo.write("other.txt", b"upstream code\n");
    git(&["add", "other.txt"]);
    git(&["commit", "-q", "-m", "upstream code"]);
    git(&["checkout", "-q", "topic"]);
    let trace = tmp.path().join("rebase.trace2.json");
    std::fs::write(&log, "").expect("truncate");
    let out =
        run(hermetic("git").current_dir(repo.path()).env("PATH", &path).env("GIT_TRACE2_EVENT", &trace).args(["rebase", "-q", "issues"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spawned = std::fs::read_to_string(&log).expect("log");
    assert!(spawned.contains("--after-rebase"), "{spawned}");
    let started = git_commands(&trace);
    assert!(started.iter().any(|c| c == "rev-parse"), "the blob ids are compared: {started:?}");
    assert!(!started.iter().any(|c| c == "cat-file"), "neither version of the file is read: {started:?}");
}

/// The blocks that now read file times before importing (post-checkout, post-merge) meet a FIFO
/// where the issues file belongs, and a `<git dir>/beads` that is a link: the branch switch and
/// the merge finish without waiting on the FIFO, and nothing is written through the link (not
/// the in-step probe, not the merge log's).
#[test]
fn a_checkout_or_merge_beside_a_fifo_issues_file_or_a_linked_cache_dir_never_stalls_or_writes_through_it() {
    let repo = installed_with_one_issue_and_code();
    let timed_git = |args: &[&str]| {
        let start = std::time::Instant::now();
        let out = run(hermetic("git").current_dir(repo.path()).args(args));
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "{args:?} did not wait on anything");
    };
    // A FIFO in place of the (untracked from now on) issues file.
    repo.git(&["rm", "-q", "--cached", ".beads/issues.jsonl"]);
    repo.git(&["commit", "-q", "-m", "the file leaves the index"]);
    repo.git(&["branch", "code"]);
    let file = repo.path().join(".beads/issues.jsonl");
    replace_with_fifo(&file);
    timed_git(&["checkout", "-q", "code"]);
    timed_git(&["checkout", "-q", "main"]);
    std::fs::remove_file(&file).expect("rm");
    repo.write(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]));
    // The cache's directory moved elsewhere and linked back.
    let outside = tempfile::tempdir().expect("outside");
    let beads = repo.path().join(".git/beads");
    std::fs::rename(&beads, outside.path().join("beads")).expect("move");
    std::os::unix::fs::symlink(outside.path().join("beads"), &beads).expect("link");
    std::fs::remove_file(outside.path().join("beads/cache.now")).ok();
    timed_git(&["checkout", "-q", "code"]);
    repo.write("code.txt", b"on code\n");
    repo.git(&["commit", "-q", "-am", "code"]);
    timed_git(&["checkout", "-q", "main"]);
    timed_git(&["merge", "-q", "--no-ff", "--no-edit", "code"]);
    assert!(!outside.path().join("beads/cache.now").exists(), "nothing written through the link");
}
