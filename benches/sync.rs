//! Cache benchmark: `bd-sync` cold import, no-op re-import, re-import after 1% of lines changed,
//! export after SQL edits to 1% of issues, and the queries agents run on every step (`ready`,
//! `ready --limit 10`, `blocked`, `check`) from a warm cache, on generated files. Each figure is
//! the median wall time of the whole `bd-sync` process over the runs.
//!
//! `cargo bench --bench sync -- [--sizes 10k,100k] [--runs 5] [--data target/bench-data]`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `10k` -> 10,000; `1m` -> 1,000,000.
fn issues_in(label: &str) -> usize {
    let (digits, unit) = match label.strip_suffix('m') {
        Some(d) => (d, 1_000_000),
        None => (label.trim_end_matches('k'), 1000),
    };
    digits.parse::<usize>().expect("sizes like 1k, 10k, 100k, 1m") * unit
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned()).unwrap_or_else(|| default.to_owned())
}

fn ensure_base(data: &Path, label: &str) -> PathBuf {
    let path = data.join(label).join("base.jsonl");
    if !path.exists() {
        let n = issues_in(label);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/gen.py");
        let ok = Command::new("python3")
            .arg(gen)
            .args(["base", "--n", &n.to_string(), "--seed", "1", "--out"])
            .arg(&path)
            .status()
            .expect("python3");
        assert!(ok.success(), "gen.py failed");
    }
    path
}

fn time(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("run bd-sync");
    let t = start.elapsed();
    assert!(out.status.success(), "bd-sync failed: {}", String::from_utf8_lossy(&out.stderr));
    t
}

/// Like [`time`], for commands whose exit code reports findings (`check`).
fn time_any(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let out = cmd.output().expect("run bd-sync");
    let t = start.elapsed();
    assert!(out.status.code().is_some_and(|c| c < 2), "bd-sync failed: {}", String::from_utf8_lossy(&out.stderr));
    t
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

/// Every 100th line gets a different title (toggled by `flip`).
fn one_percent_changed(content: &[u8], flip: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(content);
    let mut out = String::with_capacity(text.len() + 4096);
    for (i, line) in text.lines().enumerate() {
        if i % 100 == 0 && flip {
            out.push_str(&line.replacen("\"title\":\"", "\"title\":\"Edited: ", 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.into_bytes()
}

fn main() {
    let sizes = arg("--sizes", "10k,100k");
    let runs: usize = arg("--runs", "5").parse().expect("--runs is a number");
    let data = PathBuf::from(arg("--data", "target/bench-data"));
    let bd_sync = env!("CARGO_BIN_EXE_bd-sync");
    println!(
        "{:<6} {:>8} {:>12} {:>12} {:>12} {:>10} {:>9} {:>10} {:>9} {:>9}",
        "size", "file MB", "cold import", "no-op import", "1% re-import", "export 1%", "ready", "ready -l10", "blocked", "check"
    );
    for label in sizes.split(',') {
        let base = ensure_base(&data, label);
        let original = std::fs::read(&base).expect("read base");
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
        let file = dir.path().join(".beads/issues.jsonl");
        let db = dir.path().join("cache.db");
        let sync = |args: &[&str]| {
            let mut c = Command::new(bd_sync);
            c.arg("--db").arg(&db).args(args).arg(&file);
            c
        };
        let remove_db = || {
            for ext in ["db", "db-wal", "db-shm", "db.lock"] {
                let _ = std::fs::remove_file(db.with_extension(ext));
            }
        };
        let query = |args: &[&str]| {
            let mut c = Command::new(bd_sync);
            c.arg("--db").arg(&db).arg("-C").arg(dir.path()).args(args);
            c
        };
        let (mut cold, mut noop, mut changed, mut export) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut ready, mut ready10, mut blocked, mut check) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for run in 0..runs {
            std::fs::write(&file, &original).expect("write");
            remove_db();
            cold.push(time(&mut sync(&["import"])));
            noop.push(time(&mut sync(&["import"])));
            std::fs::write(&file, one_percent_changed(&original, run % 2 == 0)).expect("write");
            changed.push(time(&mut sync(&["import"])));
            {
                let conn = rusqlite::Connection::open(&db).expect("open");
                conn.execute("UPDATE issues SET assignee = 'bench-' || rowid WHERE rowid % 100 = 0", []).expect("update");
            }
            export.push(time(&mut sync(&["export"])));
            ready.push(time(&mut query(&["ready"])));
            ready10.push(time(&mut query(&["ready", "--limit", "10"])));
            blocked.push(time(&mut query(&["blocked"])));
            check.push(time_any(&mut query(&["check"])));
        }
        let mb = original.len() as f64 / 1e6;
        println!(
            "{:<6} {:>8.1} {:>9.0} ms {:>9.0} ms {:>9.0} ms {:>7.0} ms {:>6.0} ms {:>7.0} ms {:>6.0} ms {:>6.0} ms",
            label,
            mb,
            median(cold),
            median(noop),
            median(changed),
            median(export),
            median(ready),
            median(ready10),
            median(blocked),
            median(check)
        );
    }
}
