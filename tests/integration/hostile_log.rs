//! The merge log and the commands we run, against hostile input (docs/merge-log.md,
//! docs/hostile-classes.md): a merge dropping huge values, a log an older version grew past
//! every bound, merges in several worktrees appending at once, a log ending in a cut line, a
//! `--source-cmd` that leaves a process holding its stdout, and lock files replaced by links.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{bd_merge, bin, hermetic, issue, jsonl, ours, run, CaptureServer, Reply, TestRepo};

/// The merge log's size bound per generation (`merge_log::ROTATE_BYTES`).
const ROTATE_BYTES: u64 = 4 << 20;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `<git common dir>/beads` of the repository at `dir`.
fn beads_dir(dir: &Path) -> PathBuf {
    let common = crate::support::git(dir, &["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    PathBuf::from(common.trim()).join("beads")
}

/// A repository with one commit (so worktrees can be added) and nothing logged yet.
fn repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file("README", b"issues live in .beads\n", "init");
    repo
}

/// `base`, `ours` and `theirs` under `dir/name/`: `n` issues whose descriptions both sides
/// rewrote (`value(side, i)`), ours later, so the merge keeps ours and drops theirs for each.
fn write_triple(dir: &Path, name: &str, n: usize, value: impl Fn(&str, usize) -> String) {
    let at = dir.join(name);
    fs::create_dir_all(&at).expect("mkdir");
    let side = |which: &str, updated: &str| {
        let lines: Vec<String> = (0..n)
            .map(|i| {
                let description = if which == "base" { "base".to_owned() } else { value(which, i) };
                issue(&format!("bd-{i}")).title("Issue").description(&description).updated(updated).line()
            })
            .collect();
        fs::write(at.join(which), jsonl(&lines)).expect("write");
    };
    side("base", "2025-11-01T10:00:00Z");
    side("ours", "2025-11-03T10:00:00Z");
    side("theirs", "2025-11-02T10:00:00Z");
}

/// Runs the driver on `dir/name/{base,ours,theirs}` from `dir`, asserting it succeeds; stderr.
fn merge(dir: &Path, name: &str) -> String {
    let out = bd_merge(dir, &[&format!("{name}/base"), &format!("{name}/ours"), &format!("{name}/theirs")]);
    assert!(out.status.success(), "bd-merge {name}: {}", text(&out.stderr));
    text(&out.stderr)
}

fn review_json(dir: &Path) -> Vec<Value> {
    let out = bd_merge(dir, &["review", "--json"]);
    assert!(out.status.success(), "review --json: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("review --json is an array")
}

fn seqs(entries: &[Value]) -> Vec<u64> {
    entries.iter().map(|e| e["seq"].as_u64().unwrap_or_else(|| panic!("a seq in {e}"))).collect()
}

#[test]
fn huge_dropped_values_keep_the_merge_log_within_its_bound_per_append_and_are_marked_cut() {
    let repo = repo();
    // Six issues whose descriptions both sides rewrote to 1 MiB texts: 12 MiB of values in one merge.
    write_triple(repo.path(), "huge", 6, |side, i| format!("{side} {i} {}", "v".repeat(1 << 20)));
    let stderr = merge(repo.path(), "huge");
    assert!(!stderr.contains("merge log"), "logged without a warning: {stderr}");
    let log = beads_dir(repo.path()).join("merge-log.jsonl");
    let size = fs::metadata(&log).expect("the log").len();
    assert!(size <= ROTATE_BYTES, "one merge appended {size} bytes, past the log's {ROTATE_BYTES}-byte bound");

    let entries = review_json(repo.path());
    assert_eq!(seqs(&entries), [6, 5, 4, 3, 2, 1], "every decision logged");
    for e in &entries {
        let cut = e["cut"].as_array().unwrap_or_else(|| panic!("the entry says what was cut: {e:.300}"));
        let dropped = cut.iter().find(|c| c["part"] == "dropped").unwrap_or_else(|| panic!("the dropped value is cut: {cut:?}"));
        assert!(dropped["bytes"].as_u64().is_some_and(|b| b > 1 << 20), "its full size: {dropped}");
        assert!(e["dropped"].as_str().is_some_and(|d| d.starts_with("\"theirs ")), "logged: its beginning");
    }
    let human = text(&bd_merge(repo.path(), &["review", "--last", "1"]).stdout);
    assert!(human.contains("cut") && !human.contains("--restore"), "review says the value was cut, offers no restore: {human}");
    assert!(human.len() < 4096, "review shows a preview, not the value: {} bytes", human.len());

    let before = fs::read(repo.path().join("huge/ours")).expect("read");
    let out = bd_merge(repo.path(), &["review", "--restore", "1", "--file", "huge/ours"]);
    assert_eq!(out.status.code(), Some(1), "a cut value is never restored: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("cut"), "the refusal says why: {}", text(&out.stderr));
    assert_eq!(fs::read(repo.path().join("huge/ours")).expect("read"), before, "the file is untouched");
}

#[test]
fn a_merge_log_an_older_version_grew_past_every_bound_is_rotated_and_logging_goes_on() {
    let repo = repo();
    write_triple(repo.path(), "one", 3, |side, i| format!("{side} {i}"));
    merge(repo.path(), "one");
    let log = beads_dir(repo.path()).join("merge-log.jsonl");
    // What an older version appended for one huge value: a 70 MiB entry, numbered 4.
    let mut huge = fs::read_to_string(&log).expect("log").lines().next().expect("an entry").to_owned();
    huge = huge.replacen("\"seq\":1,", "\"seq\":4,", 1);
    let at = huge.find("\"dropped\":\"").expect("a dropped value") + "\"dropped\":\"".len();
    huge.insert_str(at, &"w".repeat(70 << 20));
    fs::OpenOptions::new().append(true).open(&log).expect("open").write_all(format!("{huge}\n").as_bytes()).expect("append");

    write_triple(repo.path(), "two", 1, |side, i| format!("{side} two {i}"));
    let stderr = merge(repo.path(), "two");
    assert!(!stderr.contains("merge log"), "the log takes new entries: {stderr}");
    let entries = review_json(repo.path());
    assert_eq!(seqs(&entries)[0], 5, "numbered past every entry, the huge one included");
    assert!(seqs(&entries).ends_with(&[3, 2, 1]), "the earlier entries are still listed: {:?}", seqs(&entries));
    let current = fs::metadata(&log).expect("log").len();
    assert!(current <= ROTATE_BYTES, "the oversized log was rotated away: {current} bytes");
}

#[test]
fn concurrent_merges_in_several_worktrees_number_their_entries_uniquely_and_in_order() {
    let repo = repo();
    let other = tempfile::tempdir().expect("temp dir");
    let worktree = other.path().join("wt");
    repo.git(&["worktree", "add", "-q", "-b", "wt", worktree.to_str().expect("UTF-8 path")]);
    const RUNS: usize = 6;
    const PER_RUN: usize = 1000;
    let dirs: Vec<&Path> = (0..RUNS).map(|i| if i % 2 == 0 { repo.path() } else { worktree.as_path() }).collect();
    for (i, dir) in dirs.iter().enumerate() {
        write_triple(dir, &format!("t{i}"), PER_RUN, |side, j| format!("{side} {i} {j}"));
    }
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            hermetic(bin("bd-merge"))
                .current_dir(dir)
                .args([format!("t{i}/base"), format!("t{i}/ours"), format!("t{i}/theirs")])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start bd-merge")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success() && !text(&out.stderr).contains("merge log"), "{}", text(&out.stderr));
    }
    let beads = beads_dir(repo.path());
    assert_eq!(beads, beads_dir(&worktree), "worktrees share one log");
    let mut lines = String::new();
    for name in ["merge-log.1.jsonl", "merge-log.jsonl"] {
        lines.push_str(&fs::read_to_string(beads.join(name)).unwrap_or_default());
    }
    let in_file_order: Vec<u64> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("a whole entry per line ({e}): {l:.200}"))["seq"]
                .as_u64()
                .expect("seq")
        })
        .collect();
    let expected: Vec<u64> = (1..=(RUNS * PER_RUN) as u64).collect();
    if in_file_order != expected {
        let mut sorted = in_file_order.clone();
        sorted.sort_unstable();
        let duplicates = sorted.windows(2).filter(|w| w[0] == w[1]).count();
        panic!("{} entries, {duplicates} duplicate seq number(s); expected 1..={} in file order", in_file_order.len(), RUNS * PER_RUN);
    }
}

#[test]
fn a_log_ending_in_a_cut_line_gets_the_next_entry_on_a_fresh_line_and_review_and_restore_still_work() {
    let repo = repo();
    write_triple(repo.path(), "one", 1, |side, i| format!("{side} one {i}"));
    merge(repo.path(), "one");
    let log = beads_dir(repo.path()).join("merge-log.jsonl");
    // A write cut short (a full disk, a killed process): no newline at the end.
    fs::OpenOptions::new().append(true).open(&log).expect("open").write_all(br#"{"seq":2,"time":"2026-01-0"#).expect("append");

    write_triple(repo.path(), "two", 1, |side, i| format!("{side} two {i}"));
    let stderr = merge(repo.path(), "two");
    assert!(!stderr.contains("merge log"), "{stderr}");
    let content = fs::read_to_string(&log).expect("log");
    let last = content.lines().last().expect("lines");
    assert!(serde_json::from_str::<Value>(last).is_ok(), "the new entry stands on its own line: {last:.200}");

    let entries = review_json(repo.path());
    assert_eq!(seqs(&entries), [3, 1], "both entries listed, the new one numbered past the cut line's claim");
    assert_eq!(entries[0]["dropped"], "theirs two 0");
    let out = bd_merge(repo.path(), &["review", "--restore", "3", "--file", "two/ours"]);
    assert!(out.status.success(), "restore of the new entry: {}", text(&out.stderr));
    assert!(text(&fs::read(repo.path().join("two/ours")).expect("read")).contains("\"description\":\"theirs two 0\""));
    let out = bd_merge(repo.path(), &["review", "--restore", "1", "--file", "one/ours"]);
    assert!(out.status.success(), "restore of the earlier entry: {}", text(&out.stderr));
}

/// Kills what a test started if it is still there when the test ends (a failing test included).
struct Cleanup {
    child: Option<std::process::Child>,
    pid_file: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(pid) = read_pid(&self.pid_file) {
            // SAFETY: kill(2) on a pid the test's own command started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn read_pid(path: &Path) -> Option<i32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether a process is gone (reaped, or on Linux a zombie nobody waited for yet).
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return true;
    }
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')))
}

#[test]
fn a_source_cmd_leaving_a_process_on_its_stdout_is_stopped_with_its_group_at_the_timeout_and_frees_the_lock() {
    let repo = repo();
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let pid_file = repo.path().join("sleep.pid");
    let err_file = repo.path().join("hook.err");
    let cmd = r#"printf '{"id":"a"}\n'; sleep 1000 & echo $! > sleep.pid"#;
    let start = Instant::now();
    let child = hermetic(bin("bd-hook"))
        .current_dir(repo.path())
        .env("GEMBA_NOTIFY_URL", &server.url)
        .args(["--source-cmd", cmd, "--source-cmd-timeout", "1", "--strict"])
        .stdout(Stdio::null())
        .stderr(fs::File::create(&err_file).expect("stderr file"))
        .spawn()
        .expect("start bd-hook");
    let mut cleanup = Cleanup { child: Some(child), pid_file: pid_file.clone() };
    let status = loop {
        if let Some(status) = cleanup.child.as_mut().and_then(|c| c.try_wait().expect("wait")) {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "bd-hook still running 20 s after a 1 s --source-cmd-timeout");
        std::thread::sleep(Duration::from_millis(20));
    };
    cleanup.child = None;
    let stderr = fs::read_to_string(&err_file).expect("stderr");
    assert!(start.elapsed() < Duration::from_secs(10), "returned at the timeout, not {:?} later", start.elapsed());
    assert_eq!(status.code(), Some(2), "a timed-out command is an error under --strict: {stderr}");
    assert!(stderr.contains("did not finish within 1 s"), "{stderr}");
    let sleep = read_pid(&pid_file).expect("the command wrote its background pid");
    let waited = Instant::now();
    while !gone(sleep) && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(sleep), "the background sleep ({sleep}) was killed with its group");
    assert!(server.requests().is_empty(), "nothing notified");

    let out = run(ours("bd-hook").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args([
        "--source-cmd",
        r#"printf '{"id":"a"}\n'"#,
        "--strict",
    ]));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("baseline of 1 issue(s)") && !stderr.contains("under way"), "the next run takes the lock: {stderr}");
}

/// A command that exits at once but leaves a background process holding its stdout: before,
/// bd-hook waited for the whole timeout (60 s by default). Now it reads for 2 s after the command
/// exited, then stops the group it left, uses the output and says so in one line.
#[test]
fn regression_a_source_cmd_that_exited_kept_bd_hook_waiting_for_its_background_process() {
    let repo = repo();
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let cmd = r#"printf '{"id":"a"}\n'; sleep 1000 & echo $! > sleep.pid"#;
    let start = Instant::now();
    let out = run(ours("bd-hook").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args(["--source-cmd", cmd, "--strict"]));
    let took = start.elapsed();
    let stderr = text(&out.stderr);
    assert!(took < Duration::from_secs(8), "bd-hook took {took:?} (the default timeout is 60 s)");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("baseline of 1 issue(s)") && stderr.contains("in the background still held its output"), "{stderr}");
    let sleep = read_pid(&repo.path().join("sleep.pid")).expect("the command wrote its background pid");
    let waited = Instant::now();
    while !gone(sleep) && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(sleep), "the background sleep ({sleep}) was stopped with its group");
}

#[test]
fn symlinked_lock_files_are_refused_naming_the_link() {
    let repo = repo();
    let outside = tempfile::tempdir().expect("temp dir");
    let server = CaptureServer::start(|_, _| Reply::Status(200));

    // The --since-last state's lock, aimed at a file that does not exist yet.
    let since_last = repo.path().join(".git/beads/since-last");
    fs::create_dir_all(&since_last).expect("mkdir");
    let target = outside.path().join("made-through-the-state-lock");
    std::os::unix::fs::symlink(&target, since_last.join("default.lock")).expect("symlink");
    let out = run(ours("bd-hook").current_dir(repo.path()).env("GEMBA_NOTIFY_URL", &server.url).args(["--since-last", "--strict"]));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("default.lock") && stderr.contains("symbolic link"), "names the link: {stderr}");
    assert!(!target.exists(), "nothing created through the link");

    // The merge log's lock: the merge stands, the log is not written, one warning names the link.
    let target = outside.path().join("made-through-the-log-lock");
    let beads = beads_dir(repo.path());
    std::os::unix::fs::symlink(&target, beads.join("merge-log.lock")).expect("symlink");
    write_triple(repo.path(), "t", 1, |side, i| format!("{side} {i}"));
    let stderr = merge(repo.path(), "t");
    assert!(stderr.contains("merge-log.lock") && stderr.contains("symbolic link"), "names the link: {stderr}");
    assert!(!target.exists(), "nothing created through the link");
    assert!(!beads.join("merge-log.jsonl").exists(), "nothing logged without the lock");
}
