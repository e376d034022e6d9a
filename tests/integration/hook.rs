//! `bd-hook` against a real HTTP server on 127.0.0.1: wire format, retries, deadlines, fail-open
//! and strict exits, `--from-diff` on real commits, the watcher on real file-system events, and
//! the installed post-commit hook firing on real `git commit`s.

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{bin, hermetic, run, CaptureServer, Reply, TestRepo};

fn hook(args: &[&str], url: Option<&str>, stdin: &str) -> Output {
    let mut cmd = hermetic(bin("bd-hook"));
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(u) = url {
        cmd.env("GEMBA_NOTIFY_URL", u);
    }
    let mut child = cmd.spawn().expect("spawn bd-hook");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    child.wait_with_output().expect("wait")
}

#[test]
fn sends_one_json_notice_per_id_with_headers_and_token() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let token = tempfile::NamedTempFile::new().expect("tmp");
    std::fs::write(token.path(), "s3cret-token\n").expect("write");
    let out = hook(
        &[
            "--id",
            "a",
            "--id",
            "b",
            "--stdin",
            "--source",
            "tests",
            "--workspace",
            "ws",
            "--auth-file",
            token.path().to_str().expect("utf8"),
            "--strict",
        ],
        Some(&format!("{}/", server.url)),
        "c\n# comment\n\nb\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let reqs = server.requests();
    assert_eq!(server.items(), ["ws/a", "ws/b", "ws/c"], "blanks, comments and repeats dropped");
    for r in &reqs {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/workitems/notify"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("authorization"), Some("Bearer s3cret-token"));
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("json");
        assert_eq!(v["source"], "tests");
    }
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!all.contains("s3cret"), "the token never appears in output");
}

#[test]
fn retries_after_503_then_succeeds() {
    let server = CaptureServer::start(|_, n| if n == 0 { Reply::Status(503) } else { Reply::Status(200) });
    let out = hook(&["--id", "x", "--strict"], Some(&server.url), "");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.items(), ["x", "x"], "one failed attempt, one retry");
}

#[test]
fn a_404_counts_as_delivered_unknown() {
    let server = CaptureServer::start(|_, _| Reply::Status(404));
    let out = hook(&["--id", "gone", "--strict"], Some(&server.url), "");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(server.items(), ["gone"], "not retried");
}

#[test]
fn a_hanging_server_stops_at_the_deadline_fail_open_and_strict() {
    let server = CaptureServer::start(|_, _| Reply::Hang);
    let start = Instant::now();
    let out = hook(&["--id", "x", "--timeout", "1"], Some(&server.url), "");
    let took = start.elapsed();
    assert_eq!(out.status.code(), Some(0), "fail-open");
    assert!(took < Duration::from_secs(3), "bounded by the deadline, took {took:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("x: not delivered"));
    let out = hook(&["--id", "x", "--timeout", "1", "--strict"], Some(&server.url), "");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn connection_refused_is_fail_open_and_strict_fails() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}");
    let out = hook(&["--id", "x", "--timeout", "0.5"], Some(&url), "");
    assert_eq!(out.status.code(), Some(0));
    let out = hook(&["--id", "x", "--timeout", "0.5", "--strict"], Some(&url), "");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn regression_a_301_redirect_counted_as_delivered() {
    for code in [301, 302, 307, 308] {
        let server = CaptureServer::start(move |_, _| Reply::Status(code));
        let out = hook(&["--id", "bd-1", "--timeout", "1"], Some(&server.url), "");
        assert_eq!(out.status.code(), Some(0), "fail-open");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("HTTP {code} redirect to /elsewhere")), "{code}: {err}");
        let out = hook(&["--id", "bd-1", "--timeout", "1", "--strict"], Some(&server.url), "");
        assert_eq!(out.status.code(), Some(1), "{code}: --strict reports the undelivered notice");
        assert!(server.requests().iter().all(|r| r.method == "POST"), "{code}: the redirect was never followed as a GET");
    }
}

#[test]
fn without_a_url_it_is_a_silent_no_op_unless_strict() {
    let out = hook(&["--id", "x"], None, "");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    let out = hook(&["--id", "x", "--strict"], None, "");
    assert_eq!(out.status.code(), Some(2));
}

const FILE: &str = ".beads/issues.jsonl";

fn ids_from_diff(repo: &TestRepo, spec: &str) -> Vec<String> {
    let out = run(hermetic(bin("bd-hook")).current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", spec]));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn from_diff_finds_added_modified_and_deleted_ids_on_real_commits() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, b"{\"id\":\"a\",\"t\":1}\n{\"id\":\"b\",\"t\":1}\n{\"id\":\"c\",\"t\":1}\n", "root");
    assert_eq!(ids_from_diff(&repo, "HEAD~1"), ["a", "b", "c"], "a root commit: everything is added");
    // Modify a without touching updated_at-like fields, delete b, add d.
    repo.commit_file(FILE, b"{\"id\":\"a\",\"t\":2}\n{\"id\":\"c\",\"t\":1}\n{\"id\":\"d\",\"t\":1}\n", "edit");
    assert_eq!(ids_from_diff(&repo, "HEAD~1"), ["d", "a", "b"]);
    assert_eq!(ids_from_diff(&repo, "HEAD~1..HEAD~1"), Vec::<String>::new());
    // A merge commit is compared with its first parent.
    repo.git(&["checkout", "-q", "-b", "side", "HEAD~1"]);
    repo.commit_file(FILE, b"{\"id\":\"a\",\"t\":1}\n{\"id\":\"b\",\"t\":1}\n{\"id\":\"c\",\"t\":9}\n", "side");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["merge", "-q", "--no-ff", "-s", "ours", "-m", "merge", "side"]);
    repo.commit_file(FILE, b"{\"id\":\"a\",\"t\":2}\n{\"id\":\"c\",\"t\":9}\n{\"id\":\"d\",\"t\":1}\n", "after");
    assert_eq!(ids_from_diff(&repo, "HEAD~1"), ["c"]);
    repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
    assert_eq!(ids_from_diff(&repo, "HEAD~1"), Vec::<String>::new(), "merge -s ours changed nothing against its first parent");
    // A revision without the file is an empty snapshot.
    repo.commit_file("other.txt", b"x", "unrelated");
    let out = run(hermetic(bin("bd-hook")).current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", "nonexistent-rev"]));
    assert_eq!(out.status.code(), Some(2), "an unknown revision is a collection error under --strict");
}

/// Starts a watcher on `dir` delivering to `server`.
fn start_watcher(dir: &std::path::Path, server: &CaptureServer) -> std::process::Child {
    hermetic(bin("bd-hook"))
        .args(["--watch"])
        .arg(dir)
        .env("GEMBA_NOTIFY_URL", &server.url)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn watcher")
}

fn settle() {
    std::thread::sleep(Duration::from_millis(400));
}

#[test]
fn the_watcher_reports_exactly_the_changed_ids_once() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let beads = dir.path().join(".beads");
    std::fs::create_dir_all(&beads).expect("mkdir");
    let file = beads.join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"v\":1}\n").expect("write");
    let mut child = start_watcher(dir.path(), &server);
    settle();

    // Atomic rename: a changes, b unchanged, c added.
    let tmp = beads.join(".issues.jsonl.tmp");
    std::fs::write(&tmp, "{\"id\":\"a\",\"v\":2}\n{\"id\":\"b\",\"v\":1}\n{\"id\":\"c\",\"v\":1}\n").expect("write");
    std::fs::rename(&tmp, &file).expect("rename");
    server.wait_for(2, Duration::from_secs(3));
    settle();
    assert_eq!(server.items(), ["a", "c"]);

    // In-place append, first half-written (no newline, invalid JSON), then completed.
    let mut f = std::fs::OpenOptions::new().append(true).open(&file).expect("open");
    f.write_all(b"{\"id\":\"d\",").expect("append");
    f.sync_all().expect("sync");
    settle();
    f.write_all(b"\"v\":1}\n").expect("append");
    drop(f);
    server.wait_for(3, Duration::from_secs(3));
    settle();
    assert_eq!(server.items(), ["a", "c", "d"], "the half-written line never counted");

    // Delete then recreate within the grace period: only the really changed id is sent.
    std::fs::remove_file(&file).expect("rm");
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&file, "{\"id\":\"a\",\"v\":2}\n{\"id\":\"b\",\"v\":2}\n{\"id\":\"c\",\"v\":1}\n{\"id\":\"d\",\"v\":1}\n")
        .expect("write");
    server.wait_for(4, Duration::from_secs(3));
    settle();
    assert_eq!(server.items(), ["a", "b", "c", "d"], "no flood after a brief disappearance");

    // Gone for longer than the grace period: every id is deleted.
    std::fs::remove_file(&file).expect("rm");
    server.wait_for(8, Duration::from_secs(5));
    assert_eq!(server.items(), ["a", "a", "b", "b", "c", "c", "d", "d"]);

    // SIGTERM stops it cleanly.
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn the_watcher_also_works_by_polling() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"a\",\"v\":1}\n").expect("write");
    let mut child = hermetic(bin("bd-hook"))
        .args(["--watch"])
        .arg(dir.path())
        .args(["--poll", "50"])
        .env("GEMBA_NOTIFY_URL", &server.url)
        .spawn()
        .expect("spawn");
    settle();
    std::fs::write(&file, "{\"id\":\"a\",\"v\":2}\n").expect("write");
    server.wait_for(1, Duration::from_secs(3));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().expect("wait").code(), Some(0));
    assert_eq!(server.items(), ["a"]);
}

/// Commits in `dir` with the notify URL in the environment (hooks inherit it).
fn commit_with_hook(dir: &std::path::Path, url: &str, content: &[u8], msg: &str) -> Output {
    std::fs::create_dir_all(dir.join(".beads")).expect("mkdir");
    std::fs::write(dir.join(FILE), content).expect("write");
    run(hermetic("git").current_dir(dir).args(["add", FILE]));
    run(hermetic("git").current_dir(dir).env("GEMBA_NOTIFY_URL", url).args(["commit", "-q", "-m", msg]))
}

fn install(repo: &std::path::Path) {
    let out = run(hermetic(bin("bd-hook")).arg("--install-git-hook").arg(repo));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn installed_hook_fires_on_commit_and_keeps_the_users_hook_running() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = TestRepo::new();
    let hooks = repo.path().join(".git/hooks");
    std::fs::create_dir_all(&hooks).expect("mkdir");
    let user_hook = b"#!/bin/sh\necho user-hook-ran >> user-hook.log\nexit 0\n";
    std::fs::write(hooks.join("post-commit"), user_hook).expect("write");
    run(std::process::Command::new("chmod").arg("755").arg(hooks.join("post-commit")));
    install(repo.path());
    let installed = std::fs::read(hooks.join("post-commit")).expect("read");
    install(repo.path());
    assert_eq!(std::fs::read(hooks.join("post-commit")).expect("read"), installed, "idempotent");

    let out = commit_with_hook(repo.path(), &server.url, b"{\"id\":\"n-1\"}\n{\"id\":\"n-2\"}\n", "first");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.items(), ["n-1", "n-2"]);
    commit_with_hook(repo.path(), &server.url, b"{\"id\":\"n-1\"}\n{\"id\":\"n-2\",\"x\":1}\n", "second");
    assert_eq!(server.items(), ["n-1", "n-2", "n-2"]);
    assert_eq!(std::fs::read_to_string(repo.path().join("user-hook.log")).expect("log"), "user-hook-ran\nuser-hook-ran\n");

    let out = run(hermetic(bin("bd-hook")).arg("--uninstall-git-hook").arg(repo.path()));
    assert!(out.status.success());
    assert_eq!(std::fs::read(hooks.join("post-commit")).expect("read"), user_hook, "uninstall restores the user's hook");
}

#[test]
fn installed_hook_fires_in_a_linked_worktree_and_a_submodule() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let main = TestRepo::new();
    main.commit_file("README", b"x", "init");
    let wt = tempfile::tempdir().expect("tmp");
    let wt_path = wt.path().join("wt");
    main.git(&["worktree", "add", "-q", wt_path.to_str().expect("utf8"), "-b", "wt"]);
    install(&wt_path);
    assert!(main.path().join(".git/hooks/post-commit").exists(), "linked worktrees run the common dir's hooks");
    let out = commit_with_hook(&wt_path, &server.url, b"{\"id\":\"w-1\"}\n", "in worktree");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.items(), ["w-1"]);

    let sub_origin = TestRepo::new();
    sub_origin.commit_file("README", b"sub", "init");
    main.git(&["-c", "protocol.file.allow=always", "submodule", "add", "-q", sub_origin.path().to_str().expect("utf8"), "sub"]);
    let sub = main.path().join("sub");
    install(&sub);
    let out = commit_with_hook(&sub, &server.url, b"{\"id\":\"s-1\"}\n", "in submodule");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.items(), ["s-1", "w-1"]);
}

#[test]
fn a_dead_server_never_fails_or_stalls_a_commit() {
    let server = CaptureServer::start(|_, _| Reply::Hang);
    let repo = TestRepo::new();
    install(repo.path());
    let start = Instant::now();
    let out = commit_with_hook(repo.path(), &server.url, b"{\"id\":\"h-1\"}\n", "hang");
    assert!(out.status.success());
    assert!(start.elapsed() < Duration::from_secs(4), "took {:?}", start.elapsed());
}

#[test]
fn regression_the_watcher_went_deaf_when_its_directory_was_deleted_and_recreated() {
    for poll in [None, Some("100")] {
        let server = CaptureServer::start(|_, _| Reply::Status(200));
        let dir = tempfile::tempdir().expect("tmp");
        let beads = dir.path().join(".beads");
        std::fs::create_dir_all(&beads).expect("mkdir");
        std::fs::write(beads.join("issues.jsonl"), "{\"id\":\"a\",\"v\":1}\n").expect("write");
        let mut cmd = hermetic(bin("bd-hook"));
        cmd.arg("--watch").arg(dir.path()).env("GEMBA_NOTIFY_URL", &server.url).stdout(Stdio::null()).stderr(Stdio::piped());
        if let Some(ms) = poll {
            cmd.args(["--poll", ms]);
        }
        let child = cmd.spawn().expect("spawn watcher");
        settle();
        std::fs::remove_dir_all(&beads).expect("rm -rf .beads");
        std::thread::sleep(Duration::from_millis(500));
        std::fs::create_dir_all(&beads).expect("mkdir again");
        std::fs::write(beads.join("issues.jsonl"), "{\"id\":\"a\",\"v\":1}\n{\"id\":\"b\",\"v\":1}\n").expect("write");
        server.wait_for(1, Duration::from_secs(5));
        settle();
        assert_eq!(server.items(), ["b"], "poll {poll:?}: the new directory is watched, and only b is new");
        // Later writes keep arriving.
        std::fs::write(beads.join("issues.jsonl"), "{\"id\":\"a\",\"v\":2}\n{\"id\":\"b\",\"v\":1}\n").expect("write");
        server.wait_for(2, Duration::from_secs(5));
        assert_eq!(server.items(), ["a", "b"], "poll {poll:?}: a changed");
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("was removed").count(), 1, "poll {poll:?}: the gap is reported once: {err}");
        assert!(err.lines().count() <= 4, "poll {poll:?}: no error flood: {err}");
    }
}
