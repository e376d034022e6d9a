//! Merge benchmark: `bd-merge` against `git merge-file -p` on the same generated triples, in the
//! same run. Reports median wall time and peak RSS of each, and checks the merged record count
//! against the generator's `expected.json`.
//!
//! `cargo bench --bench merge -- [--sizes 10k,100k] [--runs 5] [--data target/bench-data]`
//! Missing triples are generated with gen.py (through `benches/gen_scale.py`, linear at 1M).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use beads_git::index::IdIndex;
use common::{measure, median_ms, Measured};

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

fn ensure_data(dir: &Path, label: &str) {
    if dir.join(label).join("theirs.jsonl").exists() {
        return;
    }
    eprintln!("generating the {label} triple with gen.py");
    let status = common::gen_command()
        .args(["all", "--outdir"])
        .arg(dir)
        .args(["--sizes", &common::issues_in(label).to_string()])
        .status()
        .expect("python3 runs gen.py");
    assert!(status.success(), "gen.py failed");
    // gen.py names a million `1000k`.
    let generated = dir.join(format!("{}k", common::issues_in(label) / 1000));
    if !dir.join(label).exists() && generated.exists() {
        std::fs::rename(generated, dir.join(label)).expect("rename");
    }
}

/// Records one side deleted and the other changed: the merge keeps them (a change is never lost),
/// so they are on top of gen.py's count. gen.py makes them when a side drops the dependency links
/// to its deletions from a record the other side deleted (3 in its 1M triple, none at 100k).
fn deleted_but_changed(base: &Path, ours: &Path, theirs: &Path, expected: &serde_json::Value) -> u64 {
    let read = |p: &Path| std::fs::read(p).expect("input");
    let (b, o, t) = (read(base), read(ours), read(theirs));
    let (b, o, t) = (IdIndex::new(&b), IdIndex::new(&o), IdIndex::new(&t));
    let mut kept = 0;
    for (deleted, other) in [("deleted_ours", &t), ("deleted_theirs", &o)] {
        for id in expected[deleted].as_array().expect("id list").iter().filter_map(|v| v.as_str()) {
            let line = |index: &IdIndex<'_>| index.single(id).map(|l| l.bytes.to_vec());
            if line(other).is_some() && line(other) != line(&b) {
                kept += 1;
            }
        }
    }
    kept
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
        let mut git_refused = false;
        for _ in 0..args.runs {
            let Measured { wall, rss_kib, code } =
                measure(Command::new(bd_merge).arg(&base).arg(&ours).arg(&theirs).arg("-q").arg("-o").arg(&out_bd));
            assert_eq!(code, 0, "bd-merge failed on {label}");
            t_bd.push(wall);
            rss_bd = rss_bd.max(rss_kib);
            let out = std::fs::File::create(&out_git).expect("create");
            let git = measure(Command::new("git").args(["merge-file", "-p"]).arg(&ours).arg(&base).arg(&theirs).stdout(out));
            // git merge-file exits with the number of conflicts, or 255 when it refuses (it takes
            // files over 1 GB for binary: the 1M triple).
            git_refused |= git.code == 255;
            t_git.push(git.wall);
            rss_git = rss_git.max(git.rss_kib);
        }
        let merged_lines = std::fs::read(&out_bd).expect("merged").iter().filter(|&&b| b == b'\n').count();
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).expect("expected.json")).expect("json");
        let kept = deleted_but_changed(&base, &ours, &theirs, &expected);
        assert_eq!(
            merged_lines as u64,
            expected["merged"].as_u64().expect("merged count") + kept,
            "merged record count on {label} ({kept} records deleted on one side and changed on the other are kept)"
        );
        let (m_bd, m_git) = (median_ms(t_bd), median_ms(t_git));
        if git_refused {
            println!(
                "{:<6} {:>10.1} {:>14.1} {:>12.1} {:>14} {:>12} {:>8}",
                label,
                input_bytes as f64 / 1e6,
                m_bd,
                rss_bd as f64 / 1024.0,
                "refused",
                "-",
                "-"
            );
            println!("       git merge-file refused the inputs (exit 255: files over 1 GB are binary to it)");
            println!("       bd-merge peak RSS is {:.2}x the three inputs", rss_bd as f64 * 1024.0 / input_bytes as f64);
            continue;
        }
        println!(
            "{:<6} {:>10.1} {:>14.1} {:>12.1} {:>14.1} {:>12.1} {:>8.2}",
            label,
            input_bytes as f64 / 1e6,
            m_bd,
            rss_bd as f64 / 1024.0,
            m_git,
            rss_git as f64 / 1024.0,
            m_bd / m_git
        );
        println!("       bd-merge peak RSS is {:.2}x the three inputs", rss_bd as f64 * 1024.0 / input_bytes as f64);
    }
}
