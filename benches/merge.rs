//! Merge benchmark: `bd-merge` against `git merge-file -p` on the same generated triples, in the
//! same run, the two in turn (A B A B ...). Reports the median wall time and peak RSS of each, the
//! time as a ratio to git's (the median of the run-by-run ratios, which holds when a shared
//! machine's speed drifts) and bd-merge's peak RSS as a ratio to the three inputs; and checks the
//! merged record count against the generator's `expected.json`.
//!
//! `cargo bench --bench merge -- [--sizes real,10k,100k,1m,1m-tiny] [--runs 7] [--data target/bench-data]`
//! bd-merge runs as git runs it (`%O %A %B`, the result over a copy of ours); each figure is a
//! median of wall and of CPU time (user + system), and `real` is the beads project's own file
//! (`../shared/data/beads-real.jsonl`) with 1% of its issues edited on each side.
//! Missing triples are generated with gen.py (through `benches/gen_scale.py`, linear at 1M);
//! `<size>-tiny` is a triple of records that hold only an id (about 20 bytes a line), each side
//! deleting, adding or changing 1%: what a merge costs per record rather than per byte.
//!
//! `cargo bench --bench merge -- --shapes 100k` instead times the worst shapes a stranger's file
//! can have (docs/merge-rules.md "Linear work") at that size and at a quarter of it, in this process: many
//! collisions under one parent, comment ids both sides added under the same numbers, comment ids
//! shared across the file, many copies of one id (driver and dedupe), one huge multi-line value
//! edited on both sides (merge and diff), derived counts. Each line gives the ratio of the two
//! times (about 4 for linear work, 16 for quadratic). CI's smoke run calls it at `1k`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use beads_git::index::IdIndex;
use common::{measure, median_ms, median_of, Measured};

struct Args {
    /// `--shapes SIZE`: time the worst shapes at SIZE instead of the triples.
    shapes: Option<usize>,
    sizes: Vec<String>,
    runs: usize,
    data: PathBuf,
}

fn parse_args() -> Args {
    let mut args =
        Args { shapes: None, sizes: vec!["real".into(), "10k".into(), "100k".into()], runs: 7, data: PathBuf::from("target/bench-data") };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sizes" => args.sizes = it.next().expect("--sizes needs a value").split(',').map(str::to_owned).collect(),
            "--runs" => args.runs = it.next().expect("--runs needs a value").parse().expect("--runs is a number"),
            "--data" => args.data = PathBuf::from(it.next().expect("--data needs a value")),
            "--shapes" => args.shapes = Some(common::issues_in(&it.next().expect("--shapes needs a size (1k, 100k)"))),
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
    if label == "real" {
        return real_triple(&dir.join(label));
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

/// The triple of a real tracker: `../shared/data/beads-real.jsonl` (the beads project's own
/// 5,700 issues) as the base, each side editing 1% of the issues (0.2% on both sides), adding
/// 0.5% and deleting 0.1%, by gen.py's scenario.
fn real_triple(dir: &Path) {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/beads-real.jsonl");
    assert!(real.is_file(), "{} is missing: the real triple is made from it", real.display());
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::copy(&real, dir.join("base.jsonl")).expect("copy the real file");
    let status = common::gen_command()
        .args(["scenario", "--base"])
        .arg(dir.join("base.jsonl"))
        .arg("--ours")
        .arg(dir.join("ours.jsonl"))
        .arg("--theirs")
        .arg(dir.join("theirs.jsonl"))
        .args(["--edit-pct", "1", "--both-pct", "0.2", "--add-pct", "0.5", "--del-pct", "0.1", "--seed", "5", "--expected"])
        .arg(dir.join("expected.json"))
        .status()
        .expect("python3 runs gen.py");
    assert!(status.success(), "gen.py scenario failed");
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

fn line(v: &serde_json::Value) -> String {
    format!("{v}\n")
}

fn stamp(k: usize) -> String {
    format!("2025-11-02T{:02}:{:02}:{:02}Z", (k / 3600) % 24, (k / 60) % 60, k % 60)
}

/// One worst shape at size `n`: a name and what to run.
type Shape = (&'static str, Box<dyn Fn(usize) -> usize>);

/// The worst shapes (docs/merge-rules.md "Linear work"), each a function of its size that does the work and
/// returns a count to check it did.
fn shapes() -> Vec<Shape> {
    use beads_git::merge::{merge, repair, MergeOptions};
    use serde_json::json;
    let fixed = || MergeOptions { now: beads_git::timestamp::parse("2025-11-05T00:00:00Z"), ..MergeOptions::default() };
    let merged_len =
        move |b: &str, o: &str, t: &str| merge(b.as_bytes(), o.as_bytes(), t.as_bytes(), &fixed()).expect("merge").to_vec().len();
    vec![
        (
            "collisions under one parent",
            Box::new(move |n| {
                let epic = line(&json!({"id": "bd-ep", "created_at": stamp(0), "updated_at": stamp(0)}));
                let side = |offset: usize| -> String {
                    let mut ids: Vec<String> = (1..=n).map(|k| format!("bd-ep.{k}")).collect();
                    ids.sort();
                    let mut out = epic.clone();
                    for id in ids {
                        let k: usize = id[6..].parse().expect("number");
                        out.push_str(&line(&json!({"id": id, "created_at": stamp(2 * k + offset), "updated_at": stamp(2 * k + offset),
                        "dependencies": [{"issue_id": id, "depends_on_id": format!("bd-ep.{}", k / 2 + 1), "type": "blocks"}]})));
                    }
                    out
                };
                merged_len(&epic, &side(0), &side(1))
            }),
        ),
        (
            "comments added under one id",
            Box::new(move |n| {
                let rec =
                    |k: usize, c: serde_json::Value| line(&json!({"id": format!("bd-{k:08}"), "updated_at": stamp(0), "comments": c}));
                let base: String = (0..n).map(|k| rec(k, json!([]))).collect();
                let side = |tag: &str| -> String {
                    (0..n).map(|k| rec(k, json!([{"id": k + 1, "author": tag, "text": tag, "created_at": stamp(k)}]))).collect()
                };
                merged_len(&base, &side("ours"), &side("theirs"))
            }),
        ),
        (
            "comment ids shared file-wide",
            Box::new(move |n| {
                let base: String = (0..n)
                    .map(|k| {
                        line(&json!({"id": format!("bd-{k:08}"), "title": "t", "comments": [{"id": k / 2 + 1, "text": format!("c{k}"),
                    "created_at": stamp(k)}]}))
                    })
                    .collect();
                let theirs = base.replacen("\"title\":\"t\"", "\"title\":\"u\"", 1);
                merged_len(&base, &base, &theirs)
            }),
        ),
        (
            "copies of one id (driver)",
            Box::new(move |n| {
                let copies: String = (0..n).map(|k| line(&json!({"id": "bd-x", "title": format!("copy {k}")}))).collect();
                let theirs = format!("{copies}{}", line(&json!({"id": "bd-y"})));
                merged_len(&copies, &copies, &theirs)
            }),
        ),
        (
            "copies of one child id (dedupe)",
            Box::new(move |n| {
                let copies: String = (0..n)
                    .map(|k| line(&json!({"id": "bd-ep.1", "title": format!("copy {k}"), "created_at": stamp(k), "updated_at": stamp(k)})))
                    .collect();
                repair::dedupe(copies.as_bytes(), &fixed()).0.len()
            }),
        ),
        (
            "one huge description, both sides",
            Box::new(move |n| {
                let text = |f: &dyn Fn(usize) -> String| -> String { (0..n).map(|k| f(k) + "\n").collect() };
                let rec = |d: String, at: &str| line(&json!({"id": "bd-1", "description": d, "updated_at": at}));
                let base = rec(text(&|k| format!("line {k}")), "2025-11-01T00:00:00Z");
                let ours = rec(text(&|k| if k % 2 == 0 { format!("ours {k}") } else { format!("line {k}") }), "2025-11-02T00:00:00Z");
                let theirs = rec(text(&|k| if k % 2 == 1 { format!("theirs {k}") } else { format!("line {k}") }), "2025-11-03T00:00:00Z");
                merged_len(&base, &ours, &theirs)
            }),
        ),
        (
            "one huge description, diff",
            Box::new(move |n| {
                let text = |word: &str| -> String { (0..n).map(|k| format!("{word} {k}\n")).collect() };
                let rec = |d: String| line(&json!({"id": "bd-1", "description": d}));
                beads_git::issue_diff::diff_files(rec(text("old")).into_bytes(), rec(text("new")).into_bytes()).expect("diff").len()
            }),
        ),
        (
            "derived counts, one target",
            Box::new(move |n| {
                let rec = |k: usize, title: &str| {
                    line(&json!({"id": format!("bd-{k:08}"), "title": title, "dependencies": [{"depends_on_id": "bd-00000000",
                            "type": "blocks"}],
                    "dependency_count": 1, "dependent_count": if k == 0 { n } else { 0 }, "comment_count": 0}))
                };
                let base: String = (0..n).map(|k| rec(k, "t")).collect();
                let theirs: String = (0..n).map(|k| rec(k, if k == n / 2 { "u" } else { "t" })).collect();
                merged_len(&base, &base, &theirs)
            }),
        ),
    ]
}

/// `--shapes SIZE`: each worst shape at a quarter of SIZE and at SIZE, the median of `runs`.
fn run_shapes(size: usize, runs: usize, data: &Path) {
    // The plain merge at the same size: gen.py's triple, merged in this process.
    let label = if size >= 1000 && size.is_multiple_of(1000) { format!("{}k", size / 1000) } else { size.to_string() };
    ensure_data(data, &label);
    let dir = data.join(&label);
    let read = |f: &str| std::fs::read(dir.join(f)).expect("the plain triple");
    let (b, o, t) = (read("base.jsonl"), read("ours.jsonl"), read("theirs.jsonl"));
    let options = beads_git::merge::MergeOptions::default();
    let plain = median_ms(
        (0..runs)
            .map(|_| {
                let start = std::time::Instant::now();
                let merged = beads_git::merge::merge(&b, &o, &t, &options).expect("the plain triple merges");
                std::hint::black_box(merged.to_vec());
                start.elapsed()
            })
            .collect(),
    );
    println!("plain merge of gen.py's {label} triple in this process: {plain:.1} ms");
    println!("{:<36} {:>10} {:>12} {:>10} {:>12} {:>7} {:>8}", "shape", "n/4", "ms", "n", "ms", "ratio", "x plain");
    for (name, run) in shapes() {
        let time = |n: usize| {
            median_ms(
                (0..runs)
                    .map(|_| {
                        let start = std::time::Instant::now();
                        assert!(run(n) > 0, "{name}: no output");
                        start.elapsed()
                    })
                    .collect(),
            )
        };
        let quarter = (size / 4).max(1);
        let (small, large) = (time(quarter), time(size));
        println!(
            "{name:<36} {quarter:>10} {small:>12.1} {size:>10} {large:>12.1} {:>7.1} {:>8.2}",
            large / small.max(1e-3),
            large / plain.max(1e-3)
        );
    }
    println!("ratio: the time at n over the time at n/4 (linear work: about 4, quadratic: 16)");
    println!("x plain: the time at n over the plain merge of gen.py's triple of n issues");
}

fn main() {
    let args = parse_args();
    if let Some(size) = args.shapes {
        return run_shapes(size, args.runs, &args.data);
    }
    let bd_merge = env!("CARGO_BIN_EXE_bd-merge");
    println!(
        "{:<8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7}",
        "size", "input MB", "bd ms", "bd cpu", "git ms", "git cpu", "x git", "x git cpu", "floor ms", "x floor", "bd RSS", "RSS/in"
    );
    for label in &args.sizes {
        ensure_data(&args.data, label);
        let dir = args.data.join(label);
        let (base, ours, theirs) = (dir.join("base.jsonl"), dir.join("ours.jsonl"), dir.join("theirs.jsonl"));
        let input_bytes: u64 = [&base, &ours, &theirs].iter().map(|p| std::fs::metadata(p).expect("input").len()).sum();
        // What git runs: `bd-merge %O %A %B`, the result written over %A (a copy of ours made
        // before each run, outside the timing).
        let scratch = dir.join("merged.bd.jsonl");
        let out_git = dir.join("merged.git.jsonl");
        let out_floor = dir.join("merged.floor.jsonl");
        let (mut bd, mut git_runs, mut floors) = (Vec::new(), Vec::new(), Vec::new());
        let (mut x_git, mut x_git_cpu, mut x_floor) = (Vec::new(), Vec::new(), Vec::new());
        let mut git_refused = false;
        // In turn, each run: bd-merge, git merge-file, the floor (read the three inputs, write one
        // file of ours' size: `cat` of the inputs, then of ours).
        for _ in 0..args.runs {
            std::fs::copy(&ours, &scratch).expect("copy ours to the scratch %A");
            let m = measure(Command::new(bd_merge).arg(&base).arg(&scratch).arg(&theirs).arg("-q"));
            assert_eq!(m.code, 0, "bd-merge failed on {label}");
            let out = std::fs::File::create(&out_git).expect("create");
            let git = measure(Command::new("git").args(["merge-file", "-p"]).arg(&ours).arg(&base).arg(&theirs).stdout(out));
            // git merge-file exits with the number of conflicts, or 255 when it refuses (it takes
            // files over 1 GB for binary: the 1M triple).
            git_refused |= git.code == 255;
            x_git.push(m.wall.as_secs_f64() / git.wall.as_secs_f64());
            x_git_cpu.push(m.cpu.as_secs_f64() / git.cpu.as_secs_f64().max(1e-6));
            let floor = measure(Command::new("sh").arg("-c").arg(r#"cat "$1" "$2" "$3" >/dev/null && cat "$2" >"$4""#).args([
                "floor", // $0
                &*base.to_string_lossy(),
                &*ours.to_string_lossy(),
                &*theirs.to_string_lossy(),
                &*out_floor.to_string_lossy(),
            ]));
            assert_eq!(floor.code, 0, "the floor command failed");
            x_floor.push(m.wall.as_secs_f64() / floor.wall.as_secs_f64());
            bd.push(m);
            git_runs.push(git);
            floors.push(floor);
        }
        let _ = std::fs::remove_file(&out_floor);
        let merged_lines = std::fs::read(&scratch).expect("merged").iter().filter(|&&b| b == b'\n').count();
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).expect("expected.json")).expect("json");
        let kept = deleted_but_changed(&base, &ours, &theirs, &expected);
        assert_eq!(
            merged_lines as u64,
            expected["merged"].as_u64().expect("merged count") + kept,
            "merged record count on {label} ({kept} records deleted on one side and changed on the other are kept)"
        );
        let wall = |runs: &[Measured]| median_ms(runs.iter().map(|m| m.wall).collect());
        let cpu = |runs: &[Measured]| median_ms(runs.iter().map(|m| m.cpu).collect());
        let rss_bd = bd.iter().map(|m| m.rss_kib).max().unwrap_or(0);
        let rss_per_input = rss_bd as f64 * 1024.0 / input_bytes as f64;
        let (git_ms, git_cpu, git_x, git_x_cpu) = if git_refused {
            ("refused".to_owned(), "-".to_owned(), "-".to_owned(), "-".to_owned())
        } else {
            (
                format!("{:.1}", wall(&git_runs)),
                format!("{:.1}", cpu(&git_runs)),
                format!("{:.2}", median_of(x_git)),
                format!("{:.2}", median_of(x_git_cpu)),
            )
        };
        println!(
            "{:<8} {:>8.1} {:>9.1} {:>9.1} {:>9} {:>9} {:>9} {:>9} {:>8.1} {:>8.2} {:>8.1} {:>7.2}",
            label,
            input_bytes as f64 / 1e6,
            wall(&bd),
            cpu(&bd),
            git_ms,
            git_cpu,
            git_x,
            git_x_cpu,
            wall(&floors),
            median_of(x_floor),
            rss_bd as f64 / 1024.0,
            rss_per_input
        );
        if git_refused {
            println!("         git merge-file refused the inputs (exit 255: files over 1 GB are binary to it)");
        }
    }
    println!("bd: `bd-merge %O %A %B` as git runs it (the result replaces a copy of ours); ms wall, cpu user+sys; medians");
    println!(
        "x git, x git cpu, x floor: bd-merge's wall (cpu) time over git merge-file -p's and over the floor's, the median of the \
        run-by-run ratios"
    );
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
