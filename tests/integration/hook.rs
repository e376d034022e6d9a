//! `bd-hook` against a real HTTP server on 127.0.0.1: wire format, retries, deadlines, fail-open
//! and strict exits, `--from-diff` on real commits, the watcher on real file-system events, and
//! the installed post-commit hook firing on real `git commit`s.

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{bd_sync, bin, hermetic, ours, run, CaptureServer, Reply, TestRepo};

/// `bd-hook ARGS` with `stdin` written to it and `url` as `GEMBA_NOTIFY_URL`.
fn hook(args: &[&str], url: Option<&str>, stdin: &str) -> Output {
    let mut cmd = ours("bd-hook");
    cmd.args(args).write_stdin(stdin);
    if let Some(u) = url {
        cmd.env("GEMBA_NOTIFY_URL", u);
    }
    run(&mut cmd)
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
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 id(s) not delivered (x)"));
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
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", spec]));
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
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", "nonexistent-rev"]));
    assert_eq!(out.status.code(), Some(2), "an unknown revision is a collection error under --strict");
}

/// Each revision is streamed out of `git cat-file` (here stored whole, as git stores a file over
/// `core.bigFileThreshold`, and then packed); an id on several lines is compared as its lines; a
/// bad line or a directory in the file's place is an error naming the revision.
#[test]
fn from_diff_streams_each_revision_and_names_what_it_cannot_read() {
    let repo = TestRepo::new();
    repo.git(&["config", "core.bigFileThreshold", "100"]);
    let base: String = (0..2000).map(|n| format!("{{\"id\":\"bd-{n}\",\"t\":1}}\n")).collect();
    repo.commit_file(FILE, base.as_bytes(), "base");
    let edited = base.replace("{\"id\":\"bd-7\",\"t\":1}", "{\"id\":\"bd-7\",\"t\":2}") + "{\"id\":\"bd-9\",\"t\":1}\n";
    repo.commit_file(FILE, edited.as_bytes(), "edit");
    repo.git(&["gc", "-q"]);
    assert_eq!(ids_from_diff(&repo, "HEAD~1"), ["bd-7", "bd-9"], "bd-9 is now on two lines");
    // Without git on PATH there is nothing to read revisions with: an error naming git.
    let no_git = tempfile::tempdir().expect("tmp");
    let out =
        run(ours("bd-hook").current_dir(repo.path()).env("PATH", no_git.path()).args(["--dry-run", "--strict", "--from-diff", "HEAD~1"]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is git installed?"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids_from_diff(&repo, "HEAD~1..HEAD~1"), Vec::<String>::new());
    repo.commit_file(FILE, format!("{edited}{{\"x\":1}}\n").as_bytes(), "bad");
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", "HEAD~1"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("issues file at HEAD") && err.contains("line 2002"), "{err}");
    repo.git(&["rm", "-q", FILE]);
    repo.commit_file(&format!("{FILE}/inside"), b"x", "a directory in its place");
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", "HEAD~1"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(".beads/issues.jsonl at HEAD is a directory, not a file"), "{err}");
    // A committed symbolic link: its blob is a path, and it is named as a link.
    repo.git(&["rm", "-q", "-r", FILE]);
    std::fs::create_dir_all(repo.path().join(".beads")).expect("mkdir");
    std::os::unix::fs::symlink("/etc/passwd", repo.path().join(FILE)).expect("symlink");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a link in its place"]);
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--dry-run", "--strict", "--from-diff", "HEAD~3..HEAD"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(".beads/issues.jsonl at HEAD is a symbolic link, not a file"), "{err}");
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
    let out = run(ours("bd-hook").arg("--install-git-hook").arg(repo));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The URL set once in git config reaches every hook, whatever shell (or cron job) made the
/// commit; `check` says where each setting comes from, and the environment still wins.
#[test]
fn the_notify_settings_in_git_config_reach_hooks_run_from_any_shell() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = TestRepo::new();
    install(repo.path());
    repo.git(&["config", "beads.notifyUrl", &server.url]);
    repo.git(&["config", "beads.notifyWorkspace", "team"]);
    std::fs::create_dir_all(repo.path().join(".beads")).expect("mkdir");
    std::fs::write(repo.path().join(FILE), b"{\"id\":\"g-1\"}\n").expect("write");
    repo.git(&["add", FILE]);
    // No GEMBA_NOTIFY_URL in this environment (hermetic removes it).
    let out = run(hermetic("git").current_dir(repo.path()).args(["commit", "-q", "-m", "from another shell"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    server.wait_for(1, std::time::Duration::from_secs(5));
    assert_eq!(server.items(), ["team/g-1"], "git config's URL and workspace were used");
    let check = run(ours("bd-sync").current_dir(repo.path()).args(["check"]));
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(said.contains("notify-settings") && said.contains("from git config beads.notifyUrl"), "{said}");
    // The environment wins over git config.
    let other = CaptureServer::start(|_, _| Reply::Status(200));
    let out = run(ours("bd-hook").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &other.url).args(["--id", "g-2"]));
    assert!(out.status.success());
    other.wait_for(1, std::time::Duration::from_secs(5));
    assert_eq!(other.items(), ["team/g-2"]);
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

    let out = run(ours("bd-hook").arg("--uninstall-git-hook").arg(repo.path()));
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

/// What a hostile server sends back to every request.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// These bytes, then the connection stays open for the next request.
    Bytes(&'static [u8]),
    /// A 30 KB `Location` on a 301.
    HugeLocation,
    /// A 1 MB header line.
    HugeHeader,
    /// This status line and headers, then body bytes forever.
    Endless(&'static [u8]),
    /// Close the connection without a word.
    Close,
}

/// A raw TCP server on 127.0.0.1 that reads each request (head and `Content-Length` body), counts
/// it, and answers with a [`Hostile`] reply.
struct HostileServer {
    url: String,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl HostileServer {
    fn start(reply: Hostile) -> HostileServer {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (count, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let (c, s) = (count.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (c, s) = (c.clone(), s.clone());
                        std::thread::spawn(move || hostile_serve(stream, reply, &c, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        HostileServer { url, count, stop }
    }

    fn requests(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn hostile_serve(
    stream: std::net::TcpStream,
    reply: Hostile,
    count: &std::sync::atomic::AtomicUsize,
    stop: &std::sync::atomic::AtomicBool,
) {
    use std::io::{BufRead, BufReader, Read};
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    loop {
        let mut len = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line.trim_end().is_empty() && !first {
                break;
            }
            first = false;
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sent = match reply {
            Hostile::Bytes(b) => writer.write_all(b).is_ok(),
            Hostile::HugeLocation => {
                let head = format!("HTTP/1.1 301 Moved\r\nLocation: /{}\r\nContent-Length: 0\r\n\r\n", "x".repeat(30_000));
                writer.write_all(head.as_bytes()).is_ok()
            }
            Hostile::HugeHeader => {
                let head = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n", "y".repeat(1 << 20));
                writer.write_all(head.as_bytes()).is_ok()
            }
            Hostile::Endless(head) => {
                if writer.write_all(head).is_err() {
                    return;
                }
                let chunk = vec![b'z'; 64 << 10];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if writer.write_all(&chunk).is_err() {
                        return;
                    }
                }
                false
            }
            Hostile::Close => false,
        };
        if !sent {
            return;
        }
    }
}

/// The replies of the hostile-server test, with a name for the table.
const HOSTILE_REPLIES: &[(&str, Hostile)] = &[
    (
        "503 Retry-After: 18446744073709551615",
        Hostile::Bytes(b"HTTP/1.1 503 X\r\nRetry-After: 18446744073709551615\r\nContent-Length: 0\r\n\r\n"),
    ),
    ("429 Retry-After: 0", Hostile::Bytes(b"HTTP/1.1 429 X\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n")),
    ("503 Retry-After: 0", Hostile::Bytes(b"HTTP/1.1 503 X\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n")),
    (
        "503 Retry-After: 10^26 (over u64)",
        Hostile::Bytes(b"HTTP/1.1 503 X\r\nRetry-After: 100000000000000000000000000\r\nContent-Length: 0\r\n\r\n"),
    ),
    (
        "503 Retry-After: a date in 1970",
        Hostile::Bytes(b"HTTP/1.1 503 X\r\nRetry-After: Thu, 01 Jan 1970 00:00:00 GMT\r\nContent-Length: 0\r\n\r\n"),
    ),
    ("503 Retry-After: -1", Hostile::Bytes(b"HTTP/1.1 503 X\r\nRetry-After: -1\r\nContent-Length: 0\r\n\r\n")),
    ("301 with a 30 KB Location", Hostile::HugeLocation),
    ("200 with a 1 MB header", Hostile::HugeHeader),
    ("200 with an endless body", Hostile::Endless(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n")),
    ("503 with an endless chunked body", Hostile::Endless(b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n")),
    ("non-HTTP bytes", Hostile::Bytes(b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff\x1b[2J\x1b]0;pwned\x07garbage\r\n\r\n")),
    ("closes without a reply", Hostile::Close),
];

/// Requests one id may cost in a 2 s budget: the retry floor (100 ms) allows at most 20 retries
/// after the first request; the jittered backoff keeps it far lower in practice.
const MAX_REQUESTS_PER_ID_IN_2S: usize = 21;

#[test]
fn regression_hostile_server_replies_crashed_or_flooded_the_notifier() {
    let mut table = String::from("| reply | exit | requests (2 ids) | time |\n|---|---|---|---|\n");
    let mut problems = Vec::new();
    for &(name, reply) in HOSTILE_REPLIES {
        let server = HostileServer::start(reply);
        let start = Instant::now();
        let out = hook(&["--id", "a", "--id", "b", "--timeout", "2"], Some(&server.url), "");
        let took = start.elapsed();
        let requests = server.requests();
        let err = String::from_utf8_lossy(&out.stderr);
        table.push_str(&format!("| {name} | {:?} | {requests} | {:.2} s |\n", out.status.code(), took.as_secs_f64()));
        if out.status.code() != Some(0) || err.contains("panicked") {
            problems.push(format!("{name}: exit {:?}: {}", out.status.code(), tail(&err)));
        }
        if requests > 2 * MAX_REQUESTS_PER_ID_IN_2S {
            problems.push(format!("{name}: {requests} requests for 2 ids in 2 s (a request storm)"));
        }
        if took > Duration::from_millis(3500) {
            problems.push(format!("{name}: took {took:?} with --timeout 2"));
        }
        if err.len() > 2048 || err.contains('\u{1b}') {
            problems.push(format!("{name}: unbounded or raw diagnostics ({} bytes)", err.len()));
        }
    }
    eprintln!("{table}");
    assert!(problems.is_empty(), "{table}\n{}", problems.join("\n"));
}

#[test]
fn regression_numeric_flags_out_of_range_panicked() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    for arg in [
        "--timeout=1e300",
        "--timeout=inf",
        "--timeout=NaN",
        "--timeout=-1",
        "--timeout=0",
        "--concurrency=0",
        "--concurrency=1000000000",
        "--debounce=18446744073709551615",
        "--poll=0",
    ] {
        let flag = arg.split('=').next().expect("a flag");
        let out = hook(&["--id", "x", arg], Some(&server.url), "");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{arg}: fail-open: {err}");
        assert!(!err.contains("panicked"), "{arg}: {err}");
        assert!(err.contains(flag), "{arg}: the usage error names the flag: {err}");
        let out = hook(&["--id", "x", arg, "--strict"], Some(&server.url), "");
        assert_eq!(out.status.code(), Some(2), "{arg}: a usage error under --strict: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(server.requests().is_empty(), "nothing is sent after a usage error");
}

#[test]
fn regression_a_down_server_printed_one_line_per_id() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let ids: String = (0..115).map(|i| format!("bd-{i}\n")).collect();
    let out = hook(&["--stdin", "--timeout", "0.5"], Some(&format!("http://127.0.0.1:{port}")), &ids);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one summary line for a batch that failed the same way: {err}");
    assert!(err.contains("115 id(s) not delivered") && err.contains("bd-0"), "{err}");
    assert!(err.len() < 600, "{err}");
}

/// The end of a long diagnostic, for a failure message.
fn tail(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars[chars.len().saturating_sub(400)..].iter().collect::<String>().escape_debug().to_string()
}

/// Ids a tracker may hold that a line-based pipe mangles: a leading `#`, surrounding spaces, a
/// newline, a tab, a carriage return, non-ASCII.
const AWKWARD_IDS: &[&str] = &["#hash", " pad ", "new\nline", "tab\tid", "cr\r", "plain", "é-ünï", "back\\slash\"q"];

fn awkward_file(version: u32) -> Vec<u8> {
    AWKWARD_IDS.iter().map(|id| format!("{}\n", serde_json::json!({ "id": id, "v": version }))).collect::<String>().into_bytes()
}

/// The ids the server received, exactly (not sorted, not trimmed).
fn received(server: &CaptureServer) -> Vec<String> {
    let mut v: Vec<String> = server.requests().iter().map(super::support::Request::item).collect();
    v.sort();
    v
}

fn sorted(ids: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ids.iter().map(std::string::ToString::to_string).collect();
    v.sort();
    v
}

#[test]
fn regression_ids_were_mangled_between_import_and_the_hook() {
    // The installed post-merge block: bd-sync import --print-changed | bd-hook --stdin.
    let repo = TestRepo::new();
    repo.commit_file(FILE, b"{\"id\":\"seed\"}\n", "seed");
    let out = bd_sync(repo.path(), &["install", "--local"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.commit_file(FILE, &awkward_file(1), "awkward ids");
    repo.git(&["checkout", "-q", "main"]);
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = run(hermetic("git").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args(["merge", "-q", "--ff-only", "side"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut expected = AWKWARD_IDS.to_vec();
    expected.push("seed");
    assert_eq!(received(&server), sorted(&expected), "every id intact through the post-merge block");

    // --from-diff neither trims nor splits.
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--dry-run", "-z", "--from-diff", "HEAD~1"]));
    assert_eq!(out.status.code(), Some(0));
    let mut got: Vec<String> =
        out.stdout.split(|&b| b == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8_lossy(s).into_owned()).collect();
    got.sort();
    assert_eq!(got, sorted(&expected));

    // --stdin -z takes NUL-separated ids as they are (a blank one is dropped).
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let input: String = AWKWARD_IDS.iter().map(|id| format!("{id}\0")).collect::<String>() + "\0";
    let out = hook(&["--stdin", "-z", "--strict"], Some(&server.url), &input);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(received(&server), sorted(AWKWARD_IDS));
}

#[test]
fn the_watcher_keeps_awkward_ids_intact() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, awkward_file(1)).expect("write");
    let mut child = start_watcher(dir.path(), &server);
    settle();
    std::fs::write(&file, awkward_file(2)).expect("write");
    server.wait_for(AWKWARD_IDS.len(), Duration::from_secs(5));
    settle();
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    assert_eq!(received(&server), sorted(AWKWARD_IDS));
}

#[test]
fn regression_other_files_churning_in_beads_starved_the_watcher() {
    let delays = crate::support::watch_delays_under_churn(&bin("bd-hook"), 20, Duration::from_millis(10), Duration::from_secs(5));
    let mut got: Vec<Duration> = delays.iter().flatten().copied().collect();
    got.sort();
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let summary = if got.is_empty() {
        "none notified".to_owned()
    } else {
        format!(
            "p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
            ms(&got[got.len() / 2]),
            ms(&got[(got.len() * 95).div_ceil(100) - 1]),
            ms(got.last().expect("one"))
        )
    };
    eprintln!(
        "watch delay with a file rewritten every 10 ms beside the issues file: {summary} ({} of {} notified)",
        got.len(),
        delays.len()
    );
    assert!(delays.iter().all(Option::is_some) && delays.len() == 20, "every change is notified: {summary}");
    // The promise is debounce (50 ms) + 250 ms; the bound here is generous for a loaded CI box.
    assert!(got.last().is_some_and(|d| *d < Duration::from_millis(1500)), "{summary}");
}

#[test]
fn regression_a_file_rewritten_every_20ms_was_never_notified_while_the_writes_lasted() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    crate::support::rewrite_one_record(dir.path(), &file, 0);
    let mut child = start_watcher(dir.path(), &server);
    settle();
    let start = Instant::now();
    let mut first = None;
    let mut i = 0;
    while start.elapsed() < Duration::from_secs(2) {
        i += 1;
        crate::support::rewrite_one_record(dir.path(), &file, i);
        if first.is_none() && !server.requests().is_empty() {
            first = Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    eprintln!("{i} rewrites in 2 s: first notice after {first:?}, {} notice(s) during the writes", server.requests().len());
    assert!(first.is_some_and(|d| d < Duration::from_secs(1)), "a notice while the writes go on: first {first:?}");
}

/// Caps a child's address space, so a watcher that reads without bound fails the test instead of
/// eating the machine.
fn cap_memory(cmd: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit(2) is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
            if libc::setrlimit(libc::RLIMIT_AS, &raw const limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn regression_the_watcher_read_a_symlink_to_dev_zero_without_bound_and_blocked_on_a_fifo() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"a\",\"v\":1}\n").expect("write");
    let mut cmd = hermetic(bin("bd-hook"));
    cmd.arg("--watch").arg(dir.path()).env("GEMBA_NOTIFY_URL", &server.url).stdout(Stdio::null()).stderr(Stdio::piped());
    cap_memory(&mut cmd, 4 << 30);
    let mut child = cmd.spawn().expect("spawn watcher");
    settle();
    std::fs::remove_file(&file).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &file).expect("symlink");
    std::thread::sleep(Duration::from_millis(800));
    assert!(child.try_wait().expect("try_wait").is_none(), "the watcher survived /dev/zero");
    // A FIFO next: opening it must not block the watcher.
    std::fs::remove_file(&file).expect("rm");
    let c = std::ffi::CString::new(file.to_str().expect("utf8")).expect("cstring");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_file(&file).expect("rm");
    std::fs::write(&file, "{\"id\":\"a\",\"v\":2}\n").expect("write");
    server.wait_for(1, Duration::from_secs(5));
    let alive = child.try_wait().expect("try_wait").is_none();
    // Peak resident memory, from the kernel.
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(alive, "the watcher is still running: {err}");
    assert!(peak_kb < 256 << 10, "peak RSS {peak_kb} kB: the watcher read /dev/zero into memory");
    assert_eq!(server.items(), ["a"], "the real file is read again once it is back: {err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(err.lines().count() <= 6, "each problem said once: {err}");
}

/// Runs `bd-hook --since-last ARGS` in `dir`, delivering to `url`.
fn since_last(dir: &std::path::Path, url: &str, args: &[&str]) -> Output {
    let out = run(ours("bd-hook").current_dir(dir).env("GEMBA_NOTIFY_URL", url).arg("--since-last").args(args));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The ids one `--since-last` run sends to a fresh server (sorted), asserting exit 0.
fn since_last_ids(dir: &std::path::Path, args: &[&str]) -> Vec<String> {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = since_last(dir, &server.url, args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    server.items()
}

fn records(pairs: &[(&str, u32)]) -> Vec<u8> {
    pairs.iter().map(|(id, v)| format!("{{\"id\":\"{id}\",\"v\":{v}}}\n")).collect::<String>().into_bytes()
}

#[test]
fn since_last_records_a_baseline_then_notifies_every_change_since_once_through_several_commits() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &records(&[("a", 1), ("b", 1), ("c", 1)]), "one");
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = since_last(repo.path(), &server.url, &[]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("baseline of 3 issue(s)") && err.contains("nothing notified"), "{err}");
    assert!(server.requests().is_empty(), "the first run notifies nothing");
    assert!(repo.path().join(".git/beads/since-last/default.json").is_file(), "the state is in the git dir");

    // Two commits between two runs: both are seen (--from-diff HEAD~1 would miss the first).
    repo.commit_file(FILE, &records(&[("a", 2), ("b", 1), ("c", 1)]), "two");
    repo.commit_file(FILE, &records(&[("a", 2), ("c", 1), ("d", 1)]), "three");
    assert_eq!(since_last_ids(repo.path(), &[]), ["a", "b", "d"]);
    // No change: nothing (a cron job every minute re-notifies nothing).
    assert_eq!(since_last_ids(repo.path(), &[]), Vec::<String>::new());
    // A working-file edit counts too, then only once.
    repo.write(FILE, &records(&[("a", 2), ("c", 2), ("d", 1)]));
    assert_eq!(since_last_ids(repo.path(), &[]), ["c"]);
    assert_eq!(since_last_ids(repo.path(), &[]), Vec::<String>::new());
    // Another state is another consumer, with its own baseline.
    let out = since_last(repo.path(), &server.url, &["--state", "other"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("baseline"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = since_last(repo.path(), &server.url, &["--state", "../escape", "--strict"]);
    assert_eq!(out.status.code(), Some(2), "a state name is a plain name");
}

#[test]
fn since_last_retries_a_failed_delivery_on_the_next_run() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &records(&[("a", 1), ("b", 1)]), "one");
    since_last_ids(repo.path(), &[]);
    repo.commit_file(FILE, &records(&[("a", 2), ("b", 2), ("c", 1)]), "two");
    // The server is down: nothing advances (exit 1 under --strict).
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let out = since_last(repo.path(), &format!("http://127.0.0.1:{port}"), &["--timeout", "0.3", "--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    // The server refuses b only: a and c advance, b is sent again next time.
    let server = CaptureServer::start(|r, _| if r.item() == "b" { Reply::Status(503) } else { Reply::Status(200) });
    let out = since_last(repo.path(), &server.url, &["--timeout", "0.5"]);
    assert_eq!(out.status.code(), Some(0));
    let mut first_try: Vec<String> = server.items();
    first_try.dedup();
    assert_eq!(first_try, ["a", "b", "c"]);
    assert_eq!(since_last_ids(repo.path(), &[]), ["b"], "only the undelivered id is sent again");
    assert_eq!(since_last_ids(repo.path(), &[]), Vec::<String>::new());
}

#[test]
fn since_last_after_a_rebase_that_rewrote_the_commits_notifies_only_new_content() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &records(&[("a", 1), ("b", 1), ("c", 1)]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &records(&[("a", 2), ("b", 1), ("c", 1)]), "feature: a");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file("other.txt", b"x", "main: unrelated");
    repo.commit_file(FILE, &records(&[("a", 1), ("b", 1), ("c", 3)]), "main: c");
    repo.git(&["checkout", "-q", "feature"]);
    since_last_ids(repo.path(), &[]); // baseline: a=2, b=1, c=1
    repo.git(&["rebase", "-q", "main"]);
    let head = repo.git(&["log", "--format=%s", "-2"]);
    assert_eq!(head, "feature: a\nmain: c\n", "the feature commit was rewritten onto main");
    assert_eq!(since_last_ids(repo.path(), &[]), ["c"], "a was already delivered; c came with the rebase");
}

#[test]
fn since_last_after_a_reset_to_an_older_commit_notifies_ids_whose_content_went_back() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &records(&[("a", 1), ("b", 1)]), "one");
    repo.commit_file(FILE, &records(&[("a", 2), ("b", 1), ("c", 1)]), "two");
    since_last_ids(repo.path(), &[]); // baseline at "two"
    repo.commit_file(FILE, &records(&[("a", 2), ("b", 2), ("c", 1)]), "three");
    assert_eq!(since_last_ids(repo.path(), &[]), ["b"]);
    repo.git(&["reset", "-q", "--hard", "HEAD~2"]);
    assert_eq!(since_last_ids(repo.path(), &[]), ["a", "b", "c"], "a and b went back, c is gone");
    assert_eq!(since_last_ids(repo.path(), &[]), Vec::<String>::new());
}

#[test]
fn since_last_refuses_a_half_written_file_and_keeps_its_state() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &records(&[("a", 1)]), "one");
    since_last_ids(repo.path(), &[]);
    repo.write(FILE, b"{\"id\":\"a\",\"v\":2}\n{\"id\":\"b\",");
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = since_last(repo.path(), &server.url, &["--strict"]);
    assert_eq!(out.status.code(), Some(2), "an id-collection error under --strict");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("state is unchanged"), "{err}");
    assert!(server.requests().is_empty());
    repo.write(FILE, &records(&[("a", 2), ("b", 1)]));
    assert_eq!(since_last_ids(repo.path(), &[]), ["a", "b"]);
}

/// A tracker whose export is a command: `tracker-export.sh` prints `db.jsonl` (outside `.beads`),
/// as `bd export` prints a Dolt database.
fn repo_with_export_script() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file("README", b"x", "init");
    repo.write("tracker-export.sh", b"#!/bin/sh\nset -e\ncat \"$(dirname \"$0\")/db.jsonl\"\n");
    run(std::process::Command::new("chmod").arg("755").arg(repo.path().join("tracker-export.sh")));
    repo
}

#[test]
fn source_cmd_takes_the_issues_from_a_command_alone_and_with_since_last() {
    let repo = repo_with_export_script();
    repo.write("db.jsonl", &records(&[("a", 1), ("b", 1)]));
    let cmd = "./tracker-export.sh";
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = run(ours("bd-hook").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args(["--source-cmd", cmd]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("baseline of 2 issue(s)"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(server.requests().is_empty());
    assert!(!repo.path().join(FILE).exists(), "the issues file plays no part");

    repo.write("db.jsonl", &records(&[("a", 2), ("b", 1), ("c", 1)]));
    assert_eq!(since_last_ids(repo.path(), &["--source-cmd", cmd]), ["a", "c"], "with --since-last");
    repo.write("db.jsonl", &records(&[("a", 2), ("c", 1)]));
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = run(ours("bd-hook").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args(["--source-cmd", cmd]));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(server.items(), ["b"], "alone: the same state, the deletion once");
    assert_eq!(since_last_ids(repo.path(), &["--source-cmd", cmd]), Vec::<String>::new());

    // A failing command or broken output: nothing sent, nothing advanced, said on stderr.
    repo.write("db.jsonl", &records(&[("a", 3), ("c", 1)]));
    for (bad, why) in [("./tracker-export.sh; exit 3", "failed"), ("printf '{\"id\":'", "line 1")] {
        let server = CaptureServer::start(|_, _| Reply::Status(200));
        let out = since_last(repo.path(), &server.url, &["--source-cmd", bad, "--strict"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(why), "{bad}: {err}");
        assert!(server.requests().is_empty());
    }
    assert_eq!(since_last_ids(repo.path(), &["--source-cmd", cmd]), ["a"]);
}

#[test]
fn source_cmd_with_the_real_br_notifies_edits_that_never_reached_the_issues_file() {
    let Some(br) = crate::support::real_br() else { return };
    let repo = TestRepo::new();
    let home = tempfile::tempdir().expect("home");
    let path = crate::support::path_with_our_binaries(&[br.parent().expect("br's directory")]);
    let br_run = |args: &[&str]| -> String {
        let out =
            run(hermetic(&br).current_dir(repo.path()).env("HOME", home.path()).env("NO_COLOR", "1").env_remove("BEADS_DB").args(args));
        assert!(out.status.success(), "br {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    br_run(&["init", "--prefix", "sc"]);
    let one = br_run(&["q", "One"]);
    let two = br_run(&["q", "Two"]);
    // br 0.7.6 has no export to stdout: flush the database to the file, then print it.
    let cmd = "br sync --flush-only >/dev/null && cat .beads/issues.jsonl";
    let hook_run = |server: &CaptureServer, since: bool| -> Output {
        let mut c = ours("bd-hook");
        c.current_dir(repo.path()).env("HOME", home.path()).env("PATH", &path).env("GEMBA_NOTIFY_URL", &server.url);
        if since {
            c.arg("--since-last");
        }
        run(c.args(["--source-cmd", cmd, "--strict"]))
    };
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = hook_run(&server, false);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("baseline of 2 issue(s)"), "{}", String::from_utf8_lossy(&out.stderr));

    // Edits with auto-flush off: the database changes, the issues file does not.
    let before = repo.read(FILE);
    br_run(&["--no-auto-flush", "update", &one, "--title", "One, edited in the database"]);
    assert_eq!(repo.read(FILE), before, "a watcher on the file would see nothing");
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    assert_eq!(hook_run(&server, true).status.code(), Some(0));
    assert_eq!(server.items(), vec![one]);
    br_run(&["--no-auto-flush", "close", &two]);
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    assert_eq!(hook_run(&server, false).status.code(), Some(0));
    assert_eq!(server.items(), vec![two]);
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    assert_eq!(hook_run(&server, true).status.code(), Some(0));
    assert!(server.requests().is_empty(), "nothing changed since");
}

#[test]
fn the_watcher_warns_once_when_a_tracker_database_is_newer_than_the_issues_file() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().expect("tmp");
    let beads = dir.path().join(".beads");
    std::fs::create_dir_all(&beads).expect("mkdir");
    let file = beads.join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"a\"}\n").expect("write");
    let old = std::time::SystemTime::now() - Duration::from_secs(600);
    std::fs::File::options().write(true).open(&file).expect("open").set_modified(old).expect("mtime");
    std::fs::write(beads.join("beads.db"), b"db").expect("write");
    let child = hermetic(bin("bd-hook"))
        .arg("--watch")
        .arg(dir.path())
        .env("GEMBA_NOTIFY_URL", &server.url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(700));
    std::fs::write(beads.join("beads.db"), b"db2").expect("write");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("--source-cmd").count(), 1, "warned once, naming --source-cmd: {err}");
    assert!(err.contains("beads.db"), "{err}");

    // A fresh file next to the database: no warning.
    std::fs::write(&file, "{\"id\":\"a\"}\n").expect("write");
    let child = hermetic(bin("bd-hook"))
        .arg("--watch")
        .arg(dir.path())
        .env("GEMBA_NOTIFY_URL", &server.url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--source-cmd"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn regression_one_hostile_reply_killed_the_watch_daemon() {
    let server = HostileServer::start(Hostile::Bytes(b"HTTP/1.1 503 X\r\nRetry-After: 18446744073709551615\r\nContent-Length: 0\r\n\r\n"));
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("issues.jsonl");
    std::fs::write(&file, "{\"id\":\"a\",\"v\":1}\n").expect("write");
    let mut child = hermetic(bin("bd-hook"))
        .arg("--watch")
        .arg(dir.path())
        .args(["--timeout", "0.5"])
        .env("GEMBA_NOTIFY_URL", &server.url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn watcher");
    settle();
    for v in 2..=3 {
        std::fs::write(&file, format!("{{\"id\":\"a\",\"v\":{v}}}\n")).expect("write");
        let start = Instant::now();
        while server.requests() < (v - 1) as usize && start.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(10));
        }
        settle();
    }
    let alive = child.try_wait().expect("try_wait").is_none();
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(alive && !err.contains("panicked"), "the watcher outlives a hostile reply: {err}");
    assert_eq!(server.requests(), 2, "one request per change: Retry-After beyond the deadline ends the tries");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn since_last_runs_of_one_state_never_overlap() {
    use std::os::unix::io::AsRawFd;
    let repo = TestRepo::new();
    repo.commit_file(FILE, &records(&[("a", 1)]), "one");
    since_last_ids(repo.path(), &[]);
    repo.commit_file(FILE, &records(&[("a", 2)]), "two");
    let lock = std::fs::File::open(repo.path().join(".git/beads/since-last/default.lock")).expect("the lock file");
    // SAFETY: flock(2) on a descriptor we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let out = since_last(repo.path(), &server.url, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("under way"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(server.requests().is_empty());
    drop(lock);
    assert_eq!(since_last_ids(repo.path(), &[]), ["a"], "the next run, once the lock is free");
}

#[test]
fn print_changed_without_z_names_the_ids_a_line_cannot_carry() {
    let repo = TestRepo::new();
    repo.commit_file(FILE, &awkward_file(1), "awkward");
    let out = bd_sync(repo.path(), &["import", "--print-changed"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot cross a line-based pipe intact") && err.contains("-z"), "{err}");
    assert!(!err.contains('\r') && !err.contains("new\nline"), "the ids are escaped: {err}");
    let out = bd_sync(repo.path(), &["import", "--print-changed", "-z", "--force"]);
    assert!(out.status.success());
}

/// A git-config setting whose value holds a newline is read whole (git config `-z`), never cut
/// at the newline.
#[test]
fn a_notify_setting_in_git_config_holding_a_newline_is_read_whole() {
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let repo = TestRepo::new();
    repo.git(&["config", "beads.notifyUrl", &server.url]);
    repo.git(&["config", "beads.notifyWorkspace", "team\nsecond line"]);
    let out = run(ours("bd-hook").current_dir(repo.path()).args(["--id", "g-1"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    server.wait_for(1, std::time::Duration::from_secs(5));
    assert_eq!(server.items(), ["team\nsecond line/g-1"]);
}
