//! Merge benchmark: `bd-merge` against `git merge-file -p` on the same generated triples, in the
//! same run. Reports median wall time and peak RSS of each, and checks the merged record count
//! against the generator's `expected.json`.
//!
//! `cargo bench --bench merge -- [--sizes 10k,100k] [--runs 5] [--data target/bench-data]`
//! Missing triples are generated with `python3 ../shared/bench/gen.py all`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Args {
    sizes: Vec<String>,
    runs: usize,
    data: PathBuf,
}

fn parse_args() -> Args {
    let mut args = Args { sizes: vec!["10k".into(), "100k".into()], runs: 5, data: PathBuf::from("target/bench-data") };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => args.sizes = it.next().expect("--sizes needs a value").split(',').map(str::to_owned).collect(),
            "--runs" => args.runs = it.next().expect("--runs needs a value").parse().expect("--runs is a number"),
            "--data" => args.data = PathBuf::from(it.next().expect("--data needs a value")),
            _ => {} // cargo passes --bench
        }
    }
    args
}

/// `10k` -> 10,000; `1m` -> 1,000,000.
fn label_to_n(label: &str) -> usize {
    let (digits, unit) = match label.strip_suffix('m') {
        Some(d) => (d, 1_000_000),
        None => (label.trim_end_matches('k'), 1000),
    };
    digits.parse::<usize>().expect("sizes like 1k, 10k, 100k, 1m") * unit
}

fn ensure_data(dir: &Path, label: &str) {
    if dir.join(label).join("theirs.jsonl").exists() {
        return;
    }
    let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/gen.py");
    eprintln!("generating {label} triple with {}", gen.display());
    let status = Command::new("python3")
        .arg(&gen)
        .args(["all", "--outdir"])
        .arg(dir)
        .args(["--sizes", &label_to_n(label).to_string()])
        .status()
        .expect("python3 runs gen.py");
    assert!(status.success(), "gen.py failed");
}

/// Runs a command to completion; returns wall time and peak RSS in KiB.
fn measure(cmd: &mut Command) -> (Duration, i64, i32) {
    let start = Instant::now();
    // Reaped by wait4 below (which also reports the peak RSS), not by Child::wait.
    #[allow(clippy::zombie_processes)]
    let child = cmd.stdin(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data, zero is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let wall = start.elapsed();
    let rss = if cfg!(target_os = "macos") { usage.ru_maxrss / 1024 } else { usage.ru_maxrss };
    (wall, rss, libc::WEXITSTATUS(status))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args = parse_args();
    let bd_merge = env!("CARGO_BIN_EXE_bd-merge");
    println!(
        "{:<6} {:>10} {:>14} {:>12} {:>14} {:>12} {:>8}",
        "size", "input MB", "bd-merge ms", "bd RSS MB", "merge-file ms", "git RSS MB", "ratio"
    );
    for label in &args.sizes {
        ensure_data(&args.data, label);
        let dir = args.data.join(label);
        let (base, ours, theirs) = (dir.join("base.jsonl"), dir.join("ours.jsonl"), dir.join("theirs.jsonl"));
        let input_bytes: u64 = [&base, &ours, &theirs].iter().map(|p| std::fs::metadata(p).expect("input").len()).sum();
        let out_bd = dir.join("merged.bd.jsonl");
        let out_git = dir.join("merged.git.jsonl");
        let (mut t_bd, mut t_git, mut rss_bd, mut rss_git) = (Vec::new(), Vec::new(), 0, 0);
        for _ in 0..args.runs {
            let (t, rss, code) = measure(Command::new(bd_merge).arg(&base).arg(&ours).arg(&theirs).arg("-q").arg("-o").arg(&out_bd));
            assert_eq!(code, 0, "bd-merge failed on {label}");
            t_bd.push(t);
            rss_bd = rss_bd.max(rss);
            let out = std::fs::File::create(&out_git).expect("create");
            let (t, rss, _) = measure(Command::new("git").args(["merge-file", "-p"]).arg(&ours).arg(&base).arg(&theirs).stdout(out));
            t_git.push(t);
            rss_git = rss_git.max(rss);
        }
        let merged_lines = std::fs::read(&out_bd).expect("merged").iter().filter(|&&b| b == b'\n').count();
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).expect("expected.json")).expect("json");
        assert_eq!(merged_lines as u64, expected["merged"].as_u64().expect("merged count"), "merged record count on {label}");
        let (m_bd, m_git) = (median(t_bd), median(t_git));
        println!(
            "{:<6} {:>10.1} {:>14.1} {:>12.1} {:>14.1} {:>12.1} {:>8.2}",
            label,
            input_bytes as f64 / 1e6,
            m_bd.as_secs_f64() * 1e3,
            rss_bd as f64 / 1024.0,
            m_git.as_secs_f64() * 1e3,
            rss_git as f64 / 1024.0,
            m_bd.as_secs_f64() / m_git.as_secs_f64()
        );
        println!("       bd-merge peak RSS is {:.2}x the three inputs", rss_bd as f64 * 1024.0 / input_bytes as f64);
    }
}
