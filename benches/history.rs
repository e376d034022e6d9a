//! History benchmark: `bd-sync log ID` and `bd-sync diff A..B` on a repository with thousands of
//! commits of the real beads file (../shared/data/beads-real.jsonl, 5,700 issues, 5 MB): each
//! commit edits two issues (status, title, a label), and halfway the file is renamed from
//! `.beads/beads.jsonl` to `.beads/issues.jsonl`, as the beads project did. The repository is
//! built once with `git fast-import` and cached under `--data`.
//!
//! `cargo bench --bench history -- [--commits 2000] [--runs 5] [--data target/bench-data]`

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned()).unwrap_or_else(|| default.to_owned())
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir).env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null");
    c
}

/// Builds the repository: returns its path and the ids edited most often.
fn build(data: &Path, commits: usize) -> (PathBuf, Vec<String>) {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/beads-real.jsonl");
    let content = std::fs::read_to_string(&real).expect("../shared/data/beads-real.jsonl is needed for this benchmark");
    let mut lines: Vec<String> = content.lines().map(str::to_owned).collect();
    let ids: Vec<String> =
        lines.iter().map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["id"].as_str().expect("id").to_owned()).collect();
    let watched: Vec<String> = ids.iter().step_by(97).take(8).cloned().collect();
    let dir = data.join(format!("history-{commits}"));
    if dir.join(".git").exists() {
        return (dir, watched);
    }
    std::fs::create_dir_all(&dir).expect("mkdir");
    assert!(git(&dir).args(["init", "-q", "-b", "main"]).status().expect("git").success());
    let mut child = git(&dir).args(["fast-import", "--quiet"]).stdin(Stdio::piped()).spawn().expect("fast-import");
    let mut w = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n
    };
    for c in 0..commits {
        for k in 0..2 {
            // Every tenth edit touches a watched issue, so `log` has something to find.
            let i = if k == 0 && c % 10 == 0 {
                ids.iter().position(|x| *x == watched[c / 10 % watched.len()]).expect("watched")
            } else {
                next(lines.len())
            };
            let mut v: serde_json::Value = serde_json::from_str(&lines[i]).expect("json");
            v["title"] = format!("{} (edit {c})", v["title"].as_str().unwrap_or("")).into();
            v["status"] = (if c % 2 == 0 { "open" } else { "closed" }).into();
            v["updated_at"] = format!("2026-01-01T00:00:{:02}.{c}Z", c % 60).into();
            lines[i] = serde_json::to_string(&v).expect("json");
        }
        let path = if c < commits / 2 { ".beads/beads.jsonl" } else { ".beads/issues.jsonl" };
        let body = lines.join("\n") + "\n";
        writeln!(w, "commit refs/heads/main").expect("write");
        writeln!(w, "author Bench <bench@example.com> {} +0000", 1_700_000_000 + c * 60).expect("write");
        writeln!(w, "committer Bench <bench@example.com> {} +0000", 1_700_000_000 + c * 60).expect("write");
        let msg = format!("edit {c}");
        writeln!(w, "data {}\n{msg}", msg.len()).expect("write");
        if c == commits / 2 {
            writeln!(w, "D .beads/beads.jsonl").expect("write");
        }
        writeln!(w, "M 100644 inline {path}\ndata {}", body.len()).expect("write");
        w.write_all(body.as_bytes()).expect("write");
        writeln!(w).expect("write");
    }
    drop(w);
    assert!(child.wait().expect("fast-import").success());
    assert!(git(&dir).args(["checkout", "-q", "main"]).status().expect("git").success());
    (dir, watched)
}

fn time(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("run");
    let t = start.elapsed();
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    t
}

fn main() {
    let commits: usize = arg("--commits", "2000").parse().expect("--commits is a number");
    let runs: usize = arg("--runs", "5").parse().expect("--runs is a number");
    let data = PathBuf::from(arg("--data", "target/bench-data"));
    let built = Instant::now();
    let (dir, watched) = build(&data, commits);
    eprintln!("repository ready in {:.1} s: {}", built.elapsed().as_secs_f64(), dir.display());
    let bd_sync = env!("CARGO_BIN_EXE_bd-sync");
    let back = (commits - 1).min(100);
    let (mut log, mut diff, mut git_log, mut git_diff) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..runs {
        let id = &watched[r % watched.len()];
        log.push(time(Command::new(bd_sync).current_dir(&dir).args(["log", id])));
        diff.push(time(Command::new(bd_sync).current_dir(&dir).args(["diff", &format!("HEAD~{back}..HEAD")])));
        git_log.push(time(git(&dir).args(["log", "--oneline", &format!("-G\"id\":\"{id}\""), "--", ".beads"])));
        git_diff.push(time(git(&dir).args(["diff", "--no-color", &format!("HEAD~{back}..HEAD"), "--", ".beads"])));
    }
    // Run-by-run ratios to the git command run beside each (the median of them holds when a shared
    // machine's speed drifts).
    let ratio = |a: &[Duration], b: &[Duration]| {
        let mut r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x.as_secs_f64() / y.as_secs_f64()).collect();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    let (x_log, x_diff) = (ratio(&log, &git_log), ratio(&diff, &git_diff));
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    println!(
        "{:<8} {:>14} {:>20} {:>8} {:>22} {:>16} {:>8}",
        "commits", "bd-sync log", "git log -G (alone)", "x git", "bd-sync diff ~100..", "git diff ~100..", "x git"
    );
    println!(
        "{:<8} {:>11.0} ms {:>17.0} ms {:>8.2} {:>19.0} ms {:>13.0} ms {:>8.2}",
        commits,
        median(log),
        median(git_log),
        x_log,
        median(diff),
        median(git_diff),
        x_diff
    );
}
