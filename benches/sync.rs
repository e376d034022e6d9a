//! Cache benchmark: `bd-sync` cold import, no-op re-import, re-import after 1% of lines changed,
//! export after SQL edits to 1% of issues, and the queries agents run on every step (`ready`,
//! `ready --limit 10`, `blocked`, `check`) from a warm cache, on generated files. Each figure is
//! the median wall time of the whole `bd-sync` process over the runs; a second line gives the
//! peak RSS of each (the largest over the runs, read by `wait4`).
//!
//! Each run also measures, each as a process of its own (this binary with a `--baseline-*`
//! argument) and right before the figures it stands beside, the least any cache must do:
//! [`baseline_store`] reads the file and stores each line's id and bytes in one SQLite table, in
//! one transaction with the cache's own pragmas (beside the cold and the 1% import);
//! [`baseline_copy`] reads the file and writes it durably (beside export); [`baseline_open`]
//! opens the cache and counts its issues (beside the no-op import and the queries). A third line
//! gives each figure as a ratio to its baseline (the median of the run-by-run ratios, which holds
//! when a shared machine's speed drifts), a fourth the baselines' times, and a fifth each
//! import's peak RSS as a ratio to the file's size.
//!
//! `cargo bench --bench sync -- [--sizes 10k,100k,1m] [--runs 5] [--data target/bench-data]`

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{arg, measure, median_ms, median_of};

fn ensure_base(data: &Path, label: &str) -> PathBuf {
    let path = data.join(label).join("base.jsonl");
    if !path.exists() {
        common::gen_base(&path, common::issues_in(label), 1);
    }
    path
}

/// Runs a command that must succeed (exit 0, or below 2 with `findings_ok`: `check` reports
/// findings by its exit code); returns its wall time and peak RSS (KiB).
fn run(cmd: &mut Command, findings_ok: bool) -> (Duration, i64) {
    let m = measure(cmd.stdout(std::process::Stdio::null()));
    assert!(m.code == 0 || (findings_ok && m.code == 1), "bd-sync failed with exit {}", m.code);
    (m.wall, m.rss_kib)
}

/// Every 100th line gets a different title.
fn one_percent_changed(content: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(content);
    let mut out = String::with_capacity(text.len() + 4096);
    for (i, line) in text.lines().enumerate() {
        if i % 100 == 0 {
            out.push_str(&line.replacen("\"title\":\"", "\"title\":\"Edited: ", 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// A line's id: the leading `{"id":"..."` of the files bd writes, else the parsed `id`.
fn line_id(line: &[u8]) -> String {
    let quick = line.strip_prefix(b"{\"id\":\"").and_then(|rest| {
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        (rest[end] == b'"').then(|| String::from_utf8_lossy(&rest[..end]).into_owned())
    });
    quick.unwrap_or_else(|| {
        let value: serde_json::Value = serde_json::from_slice(line).expect("a JSON line");
        value["id"].as_str().map(str::to_owned).unwrap_or_else(|| value.to_string())
    })
}

/// The baseline: `(id, line)` of every line of `file` into a new SQLite database at `db`, in one
/// transaction through one prepared statement, with the pragmas of the cache's cold import.
fn baseline_store(file: &Path, db: &Path) {
    let content = std::fs::read(file).expect("read the file");
    let mut conn = rusqlite::Connection::open(db).expect("open");
    conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536;").expect("pragmas");
    conn.execute_batch("CREATE TABLE lines (id TEXT PRIMARY KEY, line BLOB NOT NULL) WITHOUT ROWID").expect("create");
    let tx = conn.transaction().expect("begin");
    {
        let mut insert = tx.prepare("INSERT OR REPLACE INTO lines (id, line) VALUES (?1, ?2)").expect("prepare");
        for line in content.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            insert.execute(rusqlite::params![line_id(line), line]).expect("insert");
        }
    }
    tx.commit().expect("commit");
}

/// The baseline of export: the file read and written to `out`, synced to the disk.
fn baseline_copy(file: &Path, out: &Path) {
    use std::io::Write;
    let content = std::fs::read(file).expect("read the file");
    let mut f = std::fs::File::create(out).expect("create");
    f.write_all(&content).expect("write");
    f.sync_all().expect("fsync");
}

/// The baseline of a query: open the cache and count its issues.
fn baseline_open(db: &Path) {
    let conn = rusqlite::Connection::open(db).expect("open");
    let n: i64 = conn.query_row("SELECT count(*) FROM issues", [], |r| r.get(0)).expect("count");
    assert!(n >= 0);
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(at) = argv.iter().position(|a| a == "--baseline-copy") {
        baseline_copy(Path::new(argv.get(at + 1).expect("a file")), Path::new(argv.get(at + 2).expect("an output")));
        return;
    }
    if let Some(at) = argv.iter().position(|a| a == "--baseline-open") {
        baseline_open(Path::new(argv.get(at + 1).expect("a database")));
        return;
    }
    if let Some(at) = argv.iter().position(|a| a == "--baseline-store") {
        let (file, db) = (argv.get(at + 1).expect("a file"), argv.get(at + 2).expect("a database"));
        baseline_store(Path::new(file), Path::new(db));
        return;
    }
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
        let size = std::fs::metadata(&base).expect("base").len();
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::create_dir_all(dir.path().join(".beads")).expect("mkdir");
        let file = dir.path().join(".beads/issues.jsonl");
        // The 1% variant, written once: the bench holds no file in memory while it measures (a
        // child's peak RSS starts from its parent's at fork).
        let variant = dir.path().join("variant.jsonl");
        std::fs::write(&variant, one_percent_changed(&std::fs::read(&base).expect("read base"))).expect("write the variant");
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
        // Measures, in column order: cold import, no-op import, 1% re-import, export 1%, ready,
        // ready -l10, blocked, check.
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); 8];
        let mut rss = [0i64; 8];
        let (mut baseline, mut baseline_rss) = (Vec::new(), 0i64);
        // Per column, the run-by-run ratios to its baseline; the copy and open baselines' times.
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); 8];
        let (mut copies, mut opens) = (Vec::new(), Vec::new());
        let copy_out = dir.path().join("baseline-copy.jsonl");
        let baseline_db = dir.path().join("baseline.db");
        let me = std::env::current_exe().expect("the bench binary");
        let mut record = |k: usize, (t, r): (Duration, i64), baseline: Duration| {
            times[k].push(t);
            rss[k] = rss[k].max(r);
            ratios[k].push(t.as_secs_f64() / baseline.as_secs_f64());
        };
        for _ in 0..runs {
            std::fs::copy(&base, &file).expect("copy the base");
            remove_db();
            let _ = std::fs::remove_file(&baseline_db);
            let (t_base, r_base) = run(Command::new(&me).arg("--baseline-store").arg(&file).arg(&baseline_db), false);
            baseline.push(t_base);
            baseline_rss = baseline_rss.max(r_base);
            record(0, run(&mut sync(&["import"]), false), t_base);
            let (t_open, _) = run(Command::new(&me).arg("--baseline-open").arg(&db), false);
            opens.push(t_open);
            record(1, run(&mut sync(&["import"]), false), t_open);
            std::fs::copy(&variant, &file).expect("copy the 1% variant");
            record(2, run(&mut sync(&["import"]), false), t_base);
            {
                let conn = rusqlite::Connection::open(&db).expect("open");
                conn.execute("UPDATE issues SET assignee = 'bench-' || rowid WHERE rowid % 100 = 0", []).expect("update");
            }
            let (t_copy, _) = run(Command::new(&me).arg("--baseline-copy").arg(&file).arg(&copy_out), false);
            copies.push(t_copy);
            record(3, run(&mut sync(&["export"]), false), t_copy);
            record(4, run(&mut query(&["ready"]), false), t_open);
            record(5, run(&mut query(&["ready", "--limit", "10"]), false), t_open);
            record(6, run(&mut query(&["blocked"]), false), t_open);
            record(7, run(&mut query(&["check"]), true), t_open);
        }
        let mb = size as f64 / 1e6;
        let t: Vec<f64> = times.into_iter().map(median_ms).collect();
        println!(
            "{:<6} {:>8.1} {:>9.0} ms {:>9.0} ms {:>9.0} ms {:>7.0} ms {:>6.0} ms {:>7.0} ms {:>6.0} ms {:>6.0} ms",
            label, mb, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
        );
        let m: Vec<f64> = rss.iter().map(|k| *k as f64 / 1024.0).collect();
        println!(
            "{:<6} {:>8} {:>9.0} MB {:>9.0} MB {:>9.0} MB {:>7.0} MB {:>6.0} MB {:>7.0} MB {:>6.0} MB {:>6.0} MB",
            "  RSS", "", m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
        );
        let x: Vec<f64> = ratios.into_iter().map(median_of).collect();
        println!(
            "{:<6} {:>8} {:>10.2}x {:>11.2}x {:>11.2}x {:>9.2}x {:>8.2}x {:>9.2}x {:>8.2}x {:>8.2}x",
            "  ratio", "", x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
        );
        println!(
            "{:<6} {:>8} baselines: store (id, line) {:.0} ms ({:.0} MB), for the cold and 1% imports; open + count {:.0} ms, for the \
                no-op import and the queries; read + write + fsync {:.0} ms, for export",
            "",
            "",
            median_ms(baseline),
            baseline_rss as f64 / 1024.0,
            median_ms(opens),
            median_ms(copies)
        );
        let per_file = |kib: i64| kib as f64 * 1024.0 / size as f64;
        println!(
            "{:<6} {:>8} {:>9.2} x {:>9.2} x {:>9.2} x  (peak RSS of the imports over the file's size)",
            "  RSS/f",
            "",
            per_file(rss[0]),
            per_file(rss[1]),
            per_file(rss[2])
        );
    }
}
