//! Merge benchmark: `bd-merge` against `git merge-file -p` on the same generated triples, in the
//! same run, the two in turn (A B A B ...). Reports the median wall time and peak RSS of each, the
//! time as a ratio to git's (the median of the run-by-run ratios, which holds when a shared
//! machine's speed drifts) and bd-merge's peak RSS as a ratio to the three inputs; and checks the
//! merged record count against the generator's `expected.json`.
//!
//! `cargo bench --bench merge -- [--sizes 10k,100k,1m,1m-tiny] [--runs 5] [--data target/bench-data]`
//! Missing triples are generated with gen.py (through `benches/gen_scale.py`, linear at 1M);
//! `<size>-tiny` is a triple of records that hold only an id (about 20 bytes a line), each side
//! deleting, adding or changing 1%: what a merge costs per record rather than per byte.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use beads_git::index::IdIndex;
use common::{measure, median_ms, median_of, Measured};

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
    if let Some(size) = label.strip_suffix("-tiny") {
        return tiny_triple(&dir.join(label), common::issues_in(size));
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

/// A triple of `n` id-only records, sorted by id: ours deletes every 100th and adds `n / 100`
/// new ones, theirs adds a title to every 100th (another one) and deletes every 100th (a third).
fn tiny_triple(dir: &Path, n: usize) {
    use std::io::Write;
    eprintln!("writing the tiny triple of {n} records");
    std::fs::create_dir_all(dir).expect("mkdir");
    let open = |name: &str| std::io::BufWriter::new(std::fs::File::create(dir.join(name)).expect("create"));
    let (mut base, mut ours, mut theirs) = (open("base.jsonl"), open("ours.jsonl"), open("theirs.jsonl"));
    let mut merged = 0u64;
    for i in 0..n + n / 100 {
        let line = format!("{{\"id\":\"bd-{i:08}\"}}\n");
        if i >= n {
            ours.write_all(line.as_bytes()).expect("write");
            merged += 1;
            continue;
        }
        base.write_all(line.as_bytes()).expect("write");
        let (deleted_ours, deleted_theirs) = (i % 100 == 1, i % 100 == 3);
        if !deleted_ours {
            ours.write_all(line.as_bytes()).expect("write");
        }
        match i % 100 {
            3 => {}
            2 => theirs.write_all(format!("{{\"id\":\"bd-{i:08}\",\"title\":\"t\"}}\n").as_bytes()).expect("write"),
            _ => theirs.write_all(line.as_bytes()).expect("write"),
        }
        merged += u64::from(!deleted_ours && !deleted_theirs);
    }
    for mut f in [base, ours, theirs] {
        f.flush().expect("flush");
    }
    let expected = serde_json::json!({"merged": merged, "deleted_ours": [], "deleted_theirs": []});
    std::fs::write(dir.join("expected.json"), expected.to_string()).expect("write expected.json");
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
        "{:<8} {:>9} {:>12} {:>10} {:>14} {:>11} {:>9} {:>9} {:>9} {:>8}",
        "size", "input MB", "bd-merge ms", "bd RSS MB", "merge-file ms", "git RSS MB", "x git", "floor ms", "x floor", "RSS/in"
    );
    for label in &args.sizes {
        ensure_data(&args.data, label);
        let dir = args.data.join(label);
        let (base, ours, theirs) = (dir.join("base.jsonl"), dir.join("ours.jsonl"), dir.join("theirs.jsonl"));
        let input_bytes: u64 = [&base, &ours, &theirs].iter().map(|p| std::fs::metadata(p).expect("input").len()).sum();
        let out_bd = dir.join("merged.bd.jsonl");
        let out_git = dir.join("merged.git.jsonl");
        let out_floor = dir.join("merged.floor.jsonl");
        let (mut t_bd, mut t_git, mut t_floor, mut rss_bd, mut rss_git) = (Vec::new(), Vec::new(), Vec::new(), 0, 0);
        let (mut x_git, mut x_floor) = (Vec::new(), Vec::new());
        let mut git_refused = false;
        // In turn, each run: bd-merge, git merge-file, the floor (read the three inputs, write one
        // file of ours' size: `cat` of the inputs, then of ours).
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
            x_git.push(wall.as_secs_f64() / git.wall.as_secs_f64());
            rss_git = rss_git.max(git.rss_kib);
            let floor = measure(Command::new("sh").arg("-c").arg(r#"cat "$1" "$2" "$3" >/dev/null && cat "$2" >"$4""#).args([
                "floor", // $0
                &*base.to_string_lossy(),
                &*ours.to_string_lossy(),
                &*theirs.to_string_lossy(),
                &*out_floor.to_string_lossy(),
            ]));
            assert_eq!(floor.code, 0, "the floor command failed");
            t_floor.push(floor.wall);
            x_floor.push(wall.as_secs_f64() / floor.wall.as_secs_f64());
        }
        let _ = std::fs::remove_file(&out_floor);
        let merged_lines = std::fs::read(&out_bd).expect("merged").iter().filter(|&&b| b == b'\n').count();
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).expect("expected.json")).expect("json");
        let kept = deleted_but_changed(&base, &ours, &theirs, &expected);
        assert_eq!(
            merged_lines as u64,
            expected["merged"].as_u64().expect("merged count") + kept,
            "merged record count on {label} ({kept} records deleted on one side and changed on the other are kept)"
        );
        let (m_bd, m_git, m_floor) = (median_ms(t_bd), median_ms(t_git), median_ms(t_floor));
        let rss_per_input = rss_bd as f64 * 1024.0 / input_bytes as f64;
        let (git_ms, git_mb, git_x) = if git_refused {
            ("refused".to_owned(), "-".to_owned(), "-".to_owned())
        } else {
            (format!("{m_git:.1}"), format!("{:.1}", rss_git as f64 / 1024.0), format!("{:.2}", median_of(x_git)))
        };
        println!(
            "{:<8} {:>9.1} {:>12.1} {:>10.1} {:>14} {:>11} {:>9} {:>9.1} {:>9.2} {:>8.2}",
            label,
            input_bytes as f64 / 1e6,
            m_bd,
            rss_bd as f64 / 1024.0,
            git_ms,
            git_mb,
            git_x,
            m_floor,
            median_of(x_floor),
            rss_per_input
        );
        if git_refused {
            println!("         git merge-file refused the inputs (exit 255: files over 1 GB are binary to it)");
        }
    }
    println!("x git, x floor: bd-merge's time over git merge-file -p's and over the floor's, the median of the run-by-run ratios");
    println!("RSS/in: bd-merge's peak RSS over the three inputs' size");
    // The two paths of the merge engine in this process, in turn, on the same inputs in memory:
    // what the merge-join buys over the hash index (reading and writing left out).
    println!("\n{:<8} {:>16} {:>18} {:>8}", "size", "merge-join ms", "hash index ms", "ratio");
    for label in &args.sizes {
        let dir = args.data.join(label);
        let read = |f: &str| std::fs::read(dir.join(f)).expect("input");
        let (base, ours, theirs) = (read("base.jsonl"), read("ours.jsonl"), read("theirs.jsonl"));
        let options = beads_git::merge::MergeOptions::default();
        let (mut joined, mut hashed, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..args.runs {
            let start = std::time::Instant::now();
            let a = beads_git::merge::merge_sorted(&base, &ours, &theirs, &options).expect("sorted inputs").expect("merge").to_vec().len();
            let t_join = start.elapsed();
            let start = std::time::Instant::now();
            let b = beads_git::merge::merge_indexed(&base, &ours, &theirs, &options).expect("merge").to_vec().len();
            let t_hash = start.elapsed();
            assert_eq!(a, b, "the two paths wrote different lengths");
            joined.push(t_join);
            hashed.push(t_hash);
            ratios.push(t_join.as_secs_f64() / t_hash.as_secs_f64());
        }
        println!("{:<8} {:>16.1} {:>18.1} {:>8.2}", label, median_ms(joined), median_ms(hashed), median_of(ratios));
    }
}
