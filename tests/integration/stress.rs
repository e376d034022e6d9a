//! The stress gate: eight processes at once on one repository with four linked worktrees, for a
//! while. Each of the five work trees has one writer: edits through the cache (SQL, then a
//! commit whose pre-commit hook exports), edits of the file, commits through the installed hooks,
//! and merges of the other trees' branches through the driver; two readers run `ready`,
//! `show` and `check` in any tree meanwhile (importing into the cache the writer is editing); and
//! `bd-hook watch` notifies a real server of every change in the main tree. Each writer edits
//! only its own issues, so no merge may conflict. Afterwards main merges every branch, and:
//! every acknowledged write (a commit that succeeded) is in the final file, every cache passes
//! SQLite's integrity check, no temporary file or git lock is left, `bd-sync check` is clean,
//! and the watcher ended cleanly.
//!
//! `cargo test` runs it for 4 s; `STRESS_SECS=60` (as `.ci/run` does) or more on a benchmarks
//! machine. docs/testing.md says what it proves.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{bin, hermetic, issue, jsonl, path_with_our_binaries, run, CaptureServer, Reply};

const FILE: &str = ".beads/issues.jsonl";
/// Work trees: the main one and four linked ones, one writer each.
const TREES: usize = 5;
/// Issues each writer owns.
const OWN: usize = 4;

/// A command in `dir` as the hooks see it: our binaries first on PATH, no automatic gc.
fn cmd(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut c = hermetic(program);
    c.current_dir(dir).env("PATH", path_with_our_binaries(&[])).env("GIT_CONFIG_COUNT", "1");
    c.env("GIT_CONFIG_KEY_0", "gc.auto").env("GIT_CONFIG_VALUE_0", "0");
    c
}

fn git(dir: &Path, args: &[&str]) -> Output {
    run(cmd("git", dir).args(args))
}

fn ok(out: &Output, what: &str) -> Result<(), String> {
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what}: exit {:?}: {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn id(tree: usize, n: usize) -> String {
    format!("s{tree}-{n}")
}

/// Where a tree's cache lives (its own git dir: the cache is per work tree).
fn cache_of(dir: &Path) -> PathBuf {
    let out = git(dir, &["rev-parse", "--absolute-git-dir"]);
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("beads/cache.db")
}

/// Whether `line` is the record of `id`.
fn of(line: &str, id: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|r| r["id"] == id)
}

/// Replaces the title of `id`'s line in the tree's issues file.
fn retitle_in_file(dir: &Path, id: &str, title: &str) -> Result<(), String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("read: {e}"))?;
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let line = lines.iter_mut().find(|l| of(l, id)).ok_or(format!("{id} not in the file"))?;
    // The title's bytes replaced in place, as an editor would: the rest of the line untouched.
    let record: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{id}: {e}"))?;
    let old = format!(r#""title":{}"#, record["title"]);
    *line = line.replacen(&old, &format!(r#""title":{}"#, serde_json::Value::from(title)), 1);
    std::fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).map_err(|e| format!("write: {e}"))
}

/// One writer's loop in its own tree until `stop`: returns the titles its commits acknowledged.
fn writer(
    tree: usize,
    dir: &Path,
    branches: &[String],
    stop: &AtomicBool,
    errors: &Mutex<Vec<String>>,
    writes: &AtomicUsize,
) -> BTreeMap<String, String> {
    let mut acked = BTreeMap::new();
    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ tree as u64;
    let mut next = |n: usize| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    };
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let own = id(tree, next(OWN));
        let title = format!("t{tree} r{round}");
        let step = match next(4) {
            0 => (|| {
                // An edit through the cache; the commit's pre-commit hook exports and stages it.
                ok(&run(cmd(bin("bd-sync"), dir).args(["import", "--timeout", "30"])), "import")?;
                let conn = rusqlite::Connection::open(cache_of(dir)).map_err(|e| e.to_string())?;
                conn.busy_timeout(Duration::from_secs(30)).map_err(|e| e.to_string())?;
                conn.execute("UPDATE issues SET title = ?1 WHERE id = ?2", [&title, &own]).map_err(|e| format!("sql: {e}"))?;
                drop(conn);
                std::fs::write(dir.join(format!("code{tree}.txt")), format!("{round}\n")).map_err(|e| e.to_string())?;
                ok(&git(dir, &["add", "."]), "add")?;
                ok(&git(dir, &["commit", "-q", "-m", &format!("sql {title}")]), "commit after a cache edit")?;
                acked.insert(own.clone(), title.clone());
                writes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })(),
            1 => (|| {
                retitle_in_file(dir, &own, &title)?;
                ok(&git(dir, &["commit", "-q", "-am", &format!("file {title}")]), "commit of a file edit")?;
                acked.insert(own.clone(), title.clone());
                writes.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })(),
            2 => {
                let other = &branches[next(branches.len())];
                let out = git(dir, &["merge", "-q", "--no-edit", other]);
                if !out.status.success() {
                    let _ = git(dir, &["merge", "--abort"]);
                }
                ok(&out, &format!("merge of {other}"))
            }
            _ => ok(&run(cmd(bin("bd-sync"), dir).args(["show", &own])), "show"),
        };
        if let Err(e) = step {
            errors.lock().expect("errors").push(format!("tree {tree}: {e}"));
        }
    }
    acked
}

#[test]
fn eight_processes_on_four_worktrees_lose_nothing_and_leave_nothing_behind() {
    let secs: u64 = std::env::var("STRESS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let root = tempfile::tempdir().expect("tmp");
    let main = root.path().join("main");
    std::fs::create_dir_all(main.join(".beads")).expect("mkdir");
    let lines: Vec<String> = (0..TREES).flat_map(|t| (0..OWN).map(move |n| issue(&id(t, n)).line())).collect();
    std::fs::write(main.join(FILE), jsonl(&lines)).expect("write");
    for args in [&["init", "-q", "-b", "main"][..], &["add", "."], &["commit", "-q", "-m", "seed"]] {
        ok(&git(&main, args), "seed").expect("seed");
    }
    ok(&run(cmd(bin("bd-sync"), &main).args(["install"])), "install").expect("install");
    ok(&git(&main, &["add", "."]), "add").expect("add");
    ok(&git(&main, &["commit", "-q", "-m", "attributes"]), "commit").expect("commit");
    let mut trees = vec![main.clone()];
    let mut branches = vec!["main".to_owned()];
    for t in 1..TREES {
        let dir = root.path().join(format!("wt{t}"));
        ok(&git(&main, &["worktree", "add", "-q", "-b", &format!("wt{t}"), dir.to_str().expect("utf-8")]), "worktree").expect("worktree");
        trees.push(dir);
        branches.push(format!("wt{t}"));
    }
    let server = CaptureServer::start(|_, _| Reply::Status(200));
    let watcher = cmd(bin("bd-hook"), &main)
        .args(["watch", ".beads", "--debounce", "20"])
        .env("GEMBA_NOTIFY_URL", &server.url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bd-hook watch");
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let reads = Arc::new(AtomicUsize::new(0));
    let writes = Arc::new(AtomicUsize::new(0));
    let gaps = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let acked: BTreeMap<String, String> = std::thread::scope(|s| {
        let writers: Vec<_> = trees
            .iter()
            .enumerate()
            .map(|(t, dir)| {
                let others: Vec<String> = branches.iter().enumerate().filter(|(b, _)| *b != t).map(|(_, b)| b.clone()).collect();
                let (stop, errors, writes) = (stop.clone(), errors.clone(), writes.clone());
                s.spawn(move || writer(t, dir, &others, &stop, &errors, &writes))
            })
            .collect();
        for r in 0..2 {
            let (stop, errors, reads, gaps, trees) = (stop.clone(), errors.clone(), reads.clone(), gaps.clone(), &trees);
            s.spawn(move || {
                let mut n = r;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let dir = &trees[n % TREES];
                    let args: &[&str] = if n % 3 == 0 { &["check"] } else { &["ready", "--json"] };
                    match ok(&run(cmd(bin("bd-sync"), dir).args(args)), &format!("reader: {args:?}")) {
                        // git writes a file it merges or checks out by removing it first: a
                        // reader in that moment finds none, and says so.
                        Err(e) if (e.contains(FILE) && e.contains("No such file or directory")) || e.contains("no .beads/issues.jsonl") => {
                            gaps.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => errors.lock().expect("errors").push(e),
                        Ok(()) => {}
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().flat_map(|w| w.join().expect("a writer panicked")).collect()
    });
    let ran = started.elapsed();
    // Main takes every branch: nothing may conflict.
    for b in &branches[1..] {
        ok(&git(&main, &["merge", "-q", "--no-edit", b]), &format!("final merge of {b}")).expect("final merge");
    }
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(watcher.id() as i32, libc::SIGTERM) };
    let watched = watcher.wait_with_output().expect("wait");
    let errors = errors.lock().expect("errors").clone();
    assert!(errors.is_empty(), "{} step(s) failed:\n{}", errors.len(), errors.join("\n"));
    let file = std::fs::read_to_string(main.join(FILE)).expect("read");
    let lost: Vec<String> = acked
        .iter()
        .filter(|(id, title)| !file.lines().any(|l| of(l, id) && l.contains(&format!(r#""title":"{title}""#))))
        .map(|(id, title)| format!("{id}: {title}"))
        .collect();
    assert!(lost.is_empty(), "acknowledged writes missing from the final file:\n{}", lost.join("\n"));
    for dir in &trees {
        let conn = rusqlite::Connection::open(cache_of(dir)).expect("the cache opens");
        let verdict: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("integrity_check");
        assert_eq!(verdict, "ok", "{}", dir.display());
    }
    let left: Vec<String> = walk(root.path())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(".beads-git-tmp.") || n == "index.lock"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    ok(&run(cmd(bin("bd-sync"), &main).args(["check"])), "check").expect("bd-sync check is clean");
    let said = String::from_utf8_lossy(&watched.stderr);
    assert!(watched.status.success() && !said.contains("panicked"), "bd-hook watch: {:?}: {said}", watched.status);
    eprintln!(
        "stress: 8 processes, {} s: {} acknowledged writes ({} issues), {} reads ({} in git's gap), {} notices; nothing lost or left",
        ran.as_secs(),
        writes.load(Ordering::Relaxed),
        acked.len(),
        reads.load(Ordering::Relaxed),
        gaps.load(Ordering::Relaxed),
        server.items().len()
    );
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
