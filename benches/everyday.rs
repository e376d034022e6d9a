//! The everyday path: what beads-git adds to the git commands a team runs hundreds of times a
//! day, measured the way a release check would measure it. Two clones of one repository side by
//! side, one without beads-git and one after `bd-sync install` (every hook, the bridge on, an
//! issue in progress for the committer), run interleaved (A B, then B A, ...) so a drifting
//! machine moves both alike:
//!
//! - `git commit -a` of a code change; of a code change with an issue edited (the tracker's
//!   write in the plain clone, an SQL edit of the cache exported by the hook in the other);
//!   `git commit -- <path>`;
//! - `git pull` bringing a code commit, and one bringing k issue edits (k = 1 and 100);
//! - `git checkout` of another branch (whose issues file differs); `git rebase` of 10 commits;
//! - and the queries (`ready`, `ready --limit 1`, `ready --json`, `blocked`, `show`, `context`)
//!   beside `git log -1` as the machine's yardstick.
//!
//! Each row prints the median of each clone, its spread (min-max), the added median (with -
//! without: what the hooks cost), the ratio of the medians, and the target from the project's
//! performance page (docs/performance.md, "The everyday path").
//!
//! `cargo bench --bench everyday -- [--sizes real,10k,100k] [--runs 15] [--data target/bench-data] [--before DIR]`
//! (`real` is the beads project's own file, `../shared/data/beads-real.jsonl`.) `--before DIR`
//! adds a third clone set up by another build's binaries in DIR (an older one, say), measured
//! in the same runs: its column and its added cost stand beside this build's.

mod common;
#[path = "../tests/integration/support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::arg;
use support::{bin, hermetic};

const FILE: &str = ".beads/issues.jsonl";
/// The committer's name in both clones; the issue in progress is assigned to it.
const ME: &str = "Bench User";

/// A command in `dir`, hermetic, with the bench user's identity.
fn cmd(dir: &Path, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Command {
    let mut c = hermetic(program);
    c.current_dir(dir).args(args).stdout(Stdio::null());
    c
}

/// Runs a command that must succeed; its output is kept for the message.
fn ok(dir: &Path, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> String {
    let out = cmd(dir, program, args).stdout(Stdio::piped()).stderr(Stdio::piped()).output().expect("spawn");
    assert!(out.status.success(), "{args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The wall time of one run of a command that must succeed.
fn timed(mut c: Command) -> Duration {
    let m = common::measure(&mut c);
    assert_eq!(m.code, 0, "{c:?} failed");
    m.wall
}

fn git(dir: &Path, args: &[&str]) -> String {
    ok(dir, "git", args)
}

/// The issues file for a size: the real one, or gen.py's (kept in `--data` for later runs), with
/// its first open issue put in progress for [`ME`].
fn issues_for(label: &str, data: &Path) -> (Vec<String>, String) {
    let text = if label == "real" {
        let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/beads-real.jsonl");
        std::fs::read_to_string(&real).expect("../shared/data/beads-real.jsonl is needed for --sizes real")
    } else {
        let path = data.join(label).join("base.jsonl");
        if !path.exists() {
            common::gen_base(&path, common::issues_in(label), 1);
        }
        std::fs::read_to_string(&path).expect("read the generated file")
    };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut mine = String::new();
    for line in &mut lines {
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if v.get("status").and_then(|s| s.as_str()) == Some("open") && v.get("id").is_some_and(serde_json::Value::is_string) {
            mine = v["id"].as_str().unwrap_or_default().to_owned();
            v["status"] = "in_progress".into();
            v["assignee"] = ME.into();
            *line = serde_json::to_string(&v).expect("json");
            break;
        }
    }
    (lines, mine)
}

/// `lines` with the title of `k` issues (spread over the file) prefixed by `tag`.
fn titles_edited(lines: &[String], k: usize, tag: &str) -> String {
    let step = (lines.len() / k.max(1)).max(1);
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum::<usize>() + k * 16);
    for (i, line) in lines.iter().enumerate() {
        if i % step == step / 2 && i / step < k {
            out.push_str(&line.replacen("\"title\":\"", &format!("\"title\":\"{tag} "), 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Everything one size needs: the upstream, the clone that pushes to it, and the two measured.
struct World {
    _root: tempfile::TempDir,
    pusher: PathBuf,
    /// Without, with this build, and with the `--before` build when given.
    clones: Vec<PathBuf>,
    /// The bd-sync of each installed clone (`None` for the plain one).
    syncs: Vec<Option<PathBuf>>,
    lines: Vec<String>,
    /// The issue in progress (for `show` and `context`).
    mine: String,
    /// The 10 commits `rebase` replays, at their first place, in each clone.
    topic: Vec<String>,
}

impl World {
    fn new(label: &str, data: &Path, before: Option<&Path>) -> World {
        let root = tempfile::tempdir().expect("temp dir");
        let (lines, mine) = issues_for(label, data);
        let origin = root.path().join("origin.git");
        git(root.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().expect("utf-8 path")]);
        let pusher = root.path().join("pusher");
        git(root.path(), &["clone", "-q", origin.to_str().expect("utf-8"), pusher.to_str().expect("utf-8")]);
        git(&pusher, &["config", "user.name", ME]);
        std::fs::create_dir_all(pusher.join(".beads")).expect("mkdir");
        std::fs::write(pusher.join(FILE), titles_edited(&lines, 0, "")).expect("write");
        std::fs::write(pusher.join("code.txt"), "0\n").expect("write");
        git(&pusher, &["add", "."]);
        git(&pusher, &["commit", "-q", "-m", "base"]);
        // The branch a checkout goes to: one issue and the code differ.
        git(&pusher, &["checkout", "-q", "-b", "other"]);
        std::fs::write(pusher.join(FILE), titles_edited(&lines, 1, "other")).expect("write");
        std::fs::write(pusher.join("code.txt"), "other\n").expect("write");
        git(&pusher, &["commit", "-q", "-am", "other"]);
        git(&pusher, &["checkout", "-q", "main"]);
        git(&pusher, &["push", "-q", "origin", "main", "other"]);
        let mut clones = vec![root.path().join("without"), root.path().join("with")];
        let mut syncs = vec![None, Some(bin("bd-sync"))];
        if let Some(dir) = before {
            clones.push(root.path().join("before"));
            syncs.push(Some(dir.join("bd-sync")));
        }
        let mut topic = Vec::new();
        for (clone, sync) in clones.iter().zip(&syncs) {
            git(root.path(), &["clone", "-q", origin.to_str().expect("utf-8"), clone.to_str().expect("utf-8")]);
            git(clone, &["config", "user.name", ME]);
            git(clone, &["config", "pull.rebase", "false"]);
            git(clone, &["branch", "-q", "other", "origin/other"]);
            if let Some(sync) = sync {
                ok(clone, sync, &["install", "--local"]);
            }
            // Ten code commits to replay.
            git(clone, &["checkout", "-q", "-b", "topic"]);
            for i in 0..10 {
                std::fs::write(clone.join(format!("topic{i}.txt")), format!("{i}\n")).expect("write");
                git(clone, &["add", "."]);
                git(clone, &["commit", "-q", "-m", &format!("topic {i}")]);
            }
            topic.push(git(clone, &["rev-parse", "HEAD"]));
            // Commits are made on a branch of their own, so every pull into main fast-forwards.
            git(clone, &["checkout", "-q", "-b", "work", "main"]);
        }
        World { _root: root, pusher, clones, syncs, lines, mine, topic }
    }

    /// A commit pushed upstream: a code change, or `k` issue edits.
    fn push_upstream(&self, run: usize, k: usize) {
        if k == 0 {
            std::fs::write(self.pusher.join("code.txt"), format!("upstream {run}\n")).expect("write");
        } else {
            std::fs::write(self.pusher.join(FILE), titles_edited(&self.lines, k, &format!("up{run}k{k}"))).expect("write");
        }
        git(&self.pusher, &["commit", "-q", "-am", "upstream"]);
        git(&self.pusher, &["push", "-q", "origin", "main"]);
    }
}

/// One measured operation: its samples in each clone.
struct Row {
    what: String,
    target: &'static str,
    /// One list per clone, in the world's order.
    samples: Vec<Vec<Duration>>,
}

impl Row {
    fn new(what: &str, target: &'static str) -> Row {
        Row { what: what.to_owned(), target, samples: vec![Vec::new(); 3] }
    }
}

/// Runs `op` in every clone, in the order the run number gives (A B C, then C B A, ...).
fn both(world: &World, run: usize, row: &mut Row, op: &dyn Fn(&Path, usize) -> Duration) {
    let mut order: Vec<usize> = (0..world.clones.len()).collect();
    if run % 2 == 1 {
        order.reverse();
    }
    for n in order {
        let t = op(&world.clones[n], n);
        row.samples[n].push(t);
    }
}

fn stats(v: &[Duration]) -> (f64, f64, f64) {
    let mut ms: Vec<f64> = v.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[0], ms[ms.len() - 1])
}

fn print_rows(label: &str, rows: &[Row]) {
    let before = rows.first().is_some_and(|r| !r.samples[2].is_empty());
    println!("\n{label}: median ms [min-max]; added = with - without; ratio = with / without");
    if before {
        println!("| what | without | before | with | added before | added | ratio | target |");
        println!("|---|---|---|---|---|---|---|---|");
    } else {
        println!("| what | without | with | added | ratio | target |");
        println!("|---|---|---|---|---|---|");
    }
    for row in rows {
        let cell = |v: &[Duration]| {
            let (m, lo, hi) = stats(v);
            (m, format!("{m:.1} [{lo:.1}-{hi:.1}]"))
        };
        let (a, a_text) = cell(&row.samples[0]);
        let (b, b_text) = cell(&row.samples[1]);
        let old = if before {
            let (c, c_text) = cell(&row.samples[2]);
            format!("{c_text} | {b_text} | {:+.1} ", c - a)
        } else {
            format!("{b_text} ")
        };
        println!("| {} | {a_text} | {old}| {:+.1} | {:.2}x | {} |", row.what, b - a, b / a, row.target);
    }
}

fn git_ops(world: &World, runs: usize, label: &str) {
    let commit_target = if label == "100k" { "<= +25 ms" } else { "<= +15 ms" };
    let mut rows = vec![
        Row::new("git commit -a, code change", commit_target),
        Row::new("git commit -a, code + one issue edited", "<= +15 ms + k"),
        Row::new("git commit -- <path>", commit_target),
        Row::new("git pull, a code commit", "<= +20 ms"),
        Row::new("git pull, 1 issue edited", if label == "100k" { "<= +60 ms" } else { "prop. to k" }),
        Row::new("git pull, 100 issues edited", "prop. to k"),
        Row::new("git checkout (the issues file differs)", "<= +15 ms"),
        Row::new("git rebase of 10 commits", "<= +15 ms per hook run"),
    ];
    for run in 0..runs {
        // Commits on the work branch.
        for dir in &world.clones {
            git(dir, &["checkout", "-q", "work"]);
        }
        both(world, run, &mut rows[0], &|dir, _| {
            std::fs::write(dir.join("code.txt"), format!("commit {run}\n")).expect("write");
            timed(cmd(dir, "git", &["commit", "-q", "-am", "code"]))
        });
        both(world, run, &mut rows[1], &|dir, n| {
            // With a code change: git commits nothing when a pre-commit hook's staging is the only
            // change (it decides before the hook runs).
            std::fs::write(dir.join("code.txt"), format!("issue {run}\n")).expect("write");
            let tag = format!("edit{run}");
            if n == 0 {
                // The tracker writes the file; the commit takes it.
                std::fs::write(dir.join(FILE), titles_edited(&world.lines, 1, &tag)).expect("write");
            } else {
                let _ = n;
                let db = dir.join(".git/beads/cache.db");
                let conn = rusqlite::Connection::open(db).expect("the cache");
                conn.execute("UPDATE issues SET title = ?1 || title WHERE id = ?2", [&format!("{tag} "), &world.mine]).expect("edit");
            }
            timed(cmd(dir, "git", &["commit", "-q", "-am", "issue"]))
        });
        both(world, run, &mut rows[2], &|dir, _| {
            std::fs::write(dir.join("code.txt"), format!("pathspec {run}\n")).expect("write");
            timed(cmd(dir, "git", &["commit", "-q", "-m", "pathspec", "--", "code.txt"]))
        });
        // Pulls into main (fast-forwards): a code commit, then k issue edits.
        for dir in &world.clones {
            git(dir, &["checkout", "-q", "main"]);
        }
        for (row, k) in [(3, 0), (4, 1), (5, 100)] {
            world.push_upstream(run, k);
            both(world, run, &mut rows[row], &|dir, _| timed(cmd(dir, "git", &["pull", "-q", "--no-edit"])));
        }
        // A branch switch there and back (each direction is a sample).
        both(world, run, &mut rows[6], &|dir, _| timed(cmd(dir, "git", &["checkout", "-q", "other"])));
        both(world, run, &mut rows[6], &|dir, _| timed(cmd(dir, "git", &["checkout", "-q", "main"])));
        // Ten commits replayed onto main.
        both(world, run, &mut rows[7], &|dir, n| {
            git(dir, &["checkout", "-q", "topic"]);
            git(dir, &["reset", "-q", "--hard", &world.topic[n]]);
            let t = timed(cmd(dir, "git", &["rebase", "-q", "main"]));
            // The bench's title edits keep `updated_at`, so the post-rewrite hook stamps the
            // records the rebase changed and leaves the file modified: drop that before leaving.
            git(dir, &["reset", "-q", "--hard"]);
            git(dir, &["checkout", "-q", "main"]);
            t
        });
    }
    print_rows(label, &rows);
}

fn queries(world: &World, runs: usize, label: &str) {
    let list: [(&str, Vec<&str>, &str); 7] = [
        ("git log -1 (yardstick)", vec!["log", "-1", "--format=%H"], "-"),
        ("bd-sync ready", vec!["ready"], "<= 120 ms at 100k"),
        ("bd-sync ready --limit 1", vec!["ready", "--limit", "1"], "<= 40 ms at 100k"),
        ("bd-sync ready --json", vec!["--json", "ready"], "-"),
        ("bd-sync blocked", vec!["blocked"], "<= 120 ms at 100k"),
        ("bd-sync show ID", vec!["show", &world.mine], "-"),
        ("bd-sync context ID", vec!["context", &world.mine], "-"),
    ];
    // This build's bd-sync in its clone, then the `--before` build's in its own.
    let builds: Vec<(&Path, &Path)> =
        world.clones.iter().zip(&world.syncs).filter_map(|(c, s)| Some((c.as_path(), s.as_deref()?))).collect();
    let mut samples: Vec<Vec<Vec<Duration>>> = vec![vec![Vec::new(); list.len()]; builds.len()];
    for run in 0..runs {
        for (n, (_, args, _)) in list.iter().enumerate() {
            let mut order: Vec<usize> = (0..builds.len()).collect();
            if run % 2 == 1 {
                order.reverse();
            }
            for b in order {
                let (dir, sync) = builds[b];
                let program = if n == 0 { PathBuf::from("git") } else { sync.to_path_buf() };
                let mut c = cmd(dir, program, args);
                c.env("NO_COLOR", "1");
                samples[b][n].push(timed(c));
            }
        }
    }
    println!("\n{label}: queries in the installed clone, median ms [min-max], and as a ratio to git log -1");
    if builds.len() > 1 {
        println!("| query | before | ratio | now | ratio | target |");
        println!("|---|---|---|---|---|---|");
    } else {
        println!("| query | time | ratio | target |");
        println!("|---|---|---|---|");
    }
    let cell = |s: &[Duration], yard: f64| {
        let (m, lo, hi) = stats(s);
        format!("{m:.1} [{lo:.1}-{hi:.1}] | {:.1}x", m / yard)
    };
    let yards: Vec<f64> = samples.iter().map(|s| stats(&s[0]).0).collect();
    for (n, (what, _, target)) in list.iter().enumerate() {
        let now = cell(&samples[0][n], yards[0]);
        match samples.get(1) {
            Some(before) => println!("| {what} | {} | {now} | {target} |", cell(&before[n], yards[1])),
            None => println!("| {what} | {now} | {target} |"),
        }
    }
}

fn main() {
    let sizes = arg("--sizes", "real,10k,100k");
    let runs: usize = arg("--runs", "15").parse().expect("--runs is a number");
    let data = PathBuf::from(arg("--data", "target/bench-data"));
    let before = std::env::args().any(|a| a == "--before").then(|| PathBuf::from(arg("--before", "")));
    for label in sizes.split(',').filter(|s| !s.is_empty()) {
        let world = World::new(label, &data, before.as_deref());
        println!("\n== {label}: {} issues, {runs} interleaved runs", world.lines.len());
        git_ops(&world, runs, label);
        queries(&world, runs, label);
    }
}
