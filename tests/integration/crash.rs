//! kill -9 at random moments (seeded) of `bd-sync export` and of `bd-merge` replacing OURS: the
//! file is always the complete old or the complete new version, the cache stays usable with its
//! edits, and the temporary file a killed write leaves is invisible to git and removed by the
//! next run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{bin, git, hermetic, issue};

struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// Issue `n` of a numbered file, padded to a few hundred bytes.
fn numbered(n: usize, title: &str, updated_at: &str) -> String {
    issue(&format!("bd-{n:05}"))
        .title(&format!("{title} {n}"))
        .description(&"text ".repeat(40))
        .priority((n % 5) as u8)
        .updated(updated_at)
        .extra(r#""labels":["a"]"#)
        .line()
}

fn kill9(child: &mut std::process::Child) {
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
}

fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".beads-git-tmp."))
        .collect()
}

fn sync(dir: &Path, args: &[&str]) -> Command {
    let mut c = hermetic(bin("bd-sync"));
    c.current_dir(dir).args(args).stdout(Stdio::null()).stderr(Stdio::null());
    c
}

#[test]
fn kill_9_during_export_leaves_the_old_or_the_new_file_and_every_edit() {
    const ISSUES: usize = 4000;
    let repo = tempfile::tempdir().expect("tmp");
    let dir = repo.path();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(dir.join(".beads")).expect("mkdir");
    let old: String = (0..ISSUES).map(|n| numbered(n, "Issue", "2025-11-01T10:00:00-08:00") + "\n").collect();
    let new: String = (0..ISSUES).map(|n| numbered(n, "Edited", "2025-11-02T10:00:00-08:00") + "\n").collect();
    let file = dir.join(".beads/issues.jsonl");
    // The edit sets updated_at itself (else the trigger stamps the time of the edit).
    let edit = "UPDATE issues SET title = replace(title, 'Issue', 'Edited'), updated_at = '2025-11-02T10:00:00-08:00'";
    let mut rng = Lcg(0xc0ffee);
    let mut outcomes = (0, 0);
    for trial in 0..24 {
        std::fs::write(&file, &old).expect("write");
        assert!(sync(dir, &["import"]).status().expect("import").success());
        let conn = rusqlite::Connection::open(dir.join(".git/beads/cache.db")).expect("cache");
        conn.busy_timeout(Duration::from_secs(10)).expect("busy");
        conn.execute_batch(edit).expect("edit every row");
        drop(conn);
        let mut child = sync(dir, &["export"]).spawn().expect("spawn export");
        std::thread::sleep(Duration::from_millis(rng.next(700)));
        kill9(&mut child);
        let after = std::fs::read_to_string(&file).expect("the file is there");
        let dirty: i64 = {
            let conn = rusqlite::Connection::open(dir.join(".git/beads/cache.db")).expect("the cache opens");
            conn.query_row("SELECT count(*) FROM dirty", [], |r| r.get(0)).expect("the cache is usable")
        };
        if after == old {
            outcomes.0 += 1;
            assert_eq!(dirty as usize, ISSUES, "trial {trial}: killed before the write, every edit is still dirty");
        } else {
            assert!(after == new, "trial {trial}: the file is neither the old nor the new version");
            outcomes.1 += 1;
        }
        assert!(
            git(dir, &["status", "--porcelain", "--", ".beads"]).lines().all(|l| !l.contains(".beads-git-tmp.")),
            "trial {trial}: git never sees a temp file"
        );
        // The next run finishes the job and clears what the killed one left.
        assert!(sync(dir, &["export"]).status().expect("export").success(), "trial {trial}");
        assert_eq!(std::fs::read_to_string(&file).expect("file"), new, "trial {trial}: every edit exported");
        assert!(
            temp_files(&dir.join(".beads")).is_empty(),
            "trial {trial}: stale temp files removed: {:?}",
            temp_files(&dir.join(".beads"))
        );
        // Reset the cache for the next trial.
        std::fs::remove_file(dir.join(".git/beads/cache.db")).expect("rm cache");
        for ext in ["db-wal", "db-shm"] {
            let _ = std::fs::remove_file(dir.join(".git/beads/cache").with_extension(ext));
        }
    }
    eprintln!("export kill -9: {} old, {} new", outcomes.0, outcomes.1);
}

#[test]
fn kill_9_while_bd_merge_replaces_ours_leaves_ours_or_the_merge() {
    const ISSUES: usize = 6000;
    let work = tempfile::tempdir().expect("tmp");
    let dir = work.path();
    let base: String = (0..ISSUES).map(|n| numbered(n, "Issue", "2025-11-01T10:00:00-08:00") + "\n").collect();
    let ours: String =
        (0..ISSUES).map(|n| numbered(n, if n % 2 == 0 { "Ours" } else { "Issue" }, "2025-11-01T10:00:00-08:00") + "\n").collect();
    let theirs: String = (0..ISSUES)
        .map(|n| {
            numbered(n, "Issue", "2025-11-01T10:00:00-08:00")
                .replace("\"priority\":", if n % 3 == 0 { "\"priority\":9,\"x\":" } else { "\"priority\":" })
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("base.jsonl"), &base).expect("write");
    std::fs::write(dir.join("theirs.jsonl"), &theirs).expect("write");
    std::fs::write(dir.join("ours.jsonl"), &ours).expect("write");
    let merge = |dir: &Path| {
        hermetic(bin("bd-merge")).current_dir(dir).args(["-q", "base.jsonl", "ours.jsonl", "theirs.jsonl"]).stderr(Stdio::null()).spawn()
    };
    let started = std::time::Instant::now();
    assert!(merge(dir).expect("spawn").wait().expect("merge").success());
    // Kill anywhere from the start to a little past a whole run.
    let window = (started.elapsed().as_millis() as u64 * 2).max(20);
    eprintln!("bd-merge runs {:?}; killing within {window} ms", started.elapsed());
    let merged = std::fs::read_to_string(dir.join("ours.jsonl")).expect("merged");
    assert_ne!(merged, ours);
    let mut rng = Lcg(0xbadc0de);
    let mut outcomes = (0, 0);
    for trial in 0..24 {
        std::fs::write(dir.join("ours.jsonl"), &ours).expect("write");
        let mut child = merge(dir).expect("spawn");
        std::thread::sleep(Duration::from_millis(rng.next(window)));
        kill9(&mut child);
        let after = std::fs::read_to_string(dir.join("ours.jsonl")).expect("ours is there");
        if after == ours {
            outcomes.0 += 1;
        } else {
            assert!(after == merged, "trial {trial}: OURS is neither the original nor the merge");
            outcomes.1 += 1;
        }
    }
    // What the killed runs left behind goes with the next write in that directory.
    std::fs::write(dir.join("ours.jsonl"), &ours).expect("write");
    assert!(merge(dir).expect("spawn").wait().expect("merge").success());
    assert!(temp_files(dir).is_empty(), "stale temp files removed: {:?}", temp_files(dir));
    eprintln!("bd-merge kill -9: {} original, {} merged", outcomes.0, outcomes.1);
}
