//! Bridge benchmark: `bd-sync log --commits ID`, `bd-sync context ID` and `show ID` on
//! a repository of gen.py's issues with a long history of code commits, some naming an issue by a
//! trailer or by its id. Each figure is the median whole-process wall time, and its ratio to an
//! in-run baseline (`git rev-parse HEAD` in the same repository: what one git process costs
//! here). The index is built once first, and that build is timed too.
//!
//! Targets: `log --commits` under 100 ms at 100k commits; `context` under 50 ms at 10k issues and
//! 200 ms at 100k; the prepare-commit-msg block's work (`bd-sync link prepare-commit-msg`, which
//! finds the actor's issue in progress and adds the trailer) under 20 ms at 100k issues.
//!
//! `cargo bench --bench bridge -- [--issues 100k | --real] [--commits 100k] [--runs 5] [--data DIR]`
//! `--real` takes the beads project's own 5,700 issues (`../shared/data/beads-real.jsonl`)
//! instead of gen.py's, and adds `ready` (target for the real file: each query under 15 ms).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{arg, gen_base, issues_in, measure, median_ms};

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir).env("GIT_CONFIG_NOSYSTEM", "1").env("GIT_CONFIG_GLOBAL", "/dev/null");
    c
}

/// The repository (cached under `data`): gen.py's issues committed, one of them in progress for
/// the actor `bench`, then `commits` code commits; every tenth names an issue in its subject and
/// every twentieth carries a trailer. Returns its path and the issue most commits name.
fn build(data: &Path, issues: usize, commits: usize, real: Option<&Path>) -> (PathBuf, String) {
    let dir = data.join(if real.is_some() { format!("bridge-real-{commits}") } else { format!("bridge-{issues}-{commits}") });
    let file = dir.join(".beads/issues.jsonl");
    if !dir.join(".git").exists() {
        std::fs::create_dir_all(&dir).expect("mkdir");
        match real {
            Some(source) => {
                std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
                std::fs::copy(source, &file).expect("copy the real file");
            }
            None => gen_base(&file, issues, 7),
        }
        let text = std::fs::read_to_string(&file).expect("read");
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let mut first: serde_json::Value = serde_json::from_str(&lines[0]).expect("json");
        first["status"] = "in_progress".into();
        first["assignee"] = "bench".into();
        lines[0] = serde_json::to_string(&first).expect("json");
        std::fs::write(&file, lines.join("\n") + "\n").expect("write");
        assert!(git(&dir).args(["init", "-q", "-b", "main"]).status().expect("git").success());
        let ids: Vec<String> = lines
            .iter()
            .take(1000)
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["id"].as_str().unwrap_or("").to_owned())
            .collect();
        let hot = ids[0].clone();
        let mut child = git(&dir).args(["fast-import", "--quiet"]).stdin(Stdio::piped()).spawn().expect("fast-import");
        let mut w = std::io::BufWriter::new(child.stdin.take().expect("stdin"));
        let content = std::fs::read(&file).expect("read");
        write!(w, "blob\nmark :1\ndata {}\n", content.len()).expect("write");
        w.write_all(&content).expect("write");
        for c in 0..commits {
            let mut msg = format!("change {c}");
            if c % 10 == 0 {
                msg = format!("work on {} ({c})", if c % 30 == 0 { &hot } else { &ids[c % ids.len()] });
            }
            if c % 20 == 0 {
                msg.push_str(&format!("\n\nBeads-Issue: {hot}"));
            }
            msg.push('\n');
            write!(w, "commit refs/heads/main\ncommitter B <b@example.com> {} +0000\ndata {}\n{msg}", 1_700_000_000 + c, msg.len())
                .expect("write");
            if c == 0 {
                writeln!(w, "M 100644 :1 .beads/issues.jsonl").expect("write");
            }
            writeln!(w).expect("write");
        }
        drop(w);
        assert!(child.wait().expect("fast-import").success());
        assert!(git(&dir).args(["checkout", "-q", "-f", "main"]).status().expect("checkout").success());
    }
    let first = std::fs::read_to_string(&file).expect("read");
    let v: serde_json::Value = serde_json::from_str(first.lines().next().expect("a line")).expect("json");
    (dir, v["id"].as_str().expect("id").to_owned())
}

fn main() {
    // `--real`: the beads project's own file instead of gen.py's (the real file's queries).
    let real =
        std::env::args().any(|a| a == "--real").then(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/beads-real.jsonl"));
    if let Some(real) = &real {
        assert!(real.is_file(), "{} is missing", real.display());
    }
    let issues = issues_in(&arg("--issues", "100k"));
    let commits = issues_in(&arg("--commits", "100k"));
    let runs: usize = arg("--runs", "5").parse().expect("--runs N");
    let data = PathBuf::from(arg("--data", &format!("{}/bench-data", env!("CARGO_TARGET_TMPDIR"))));
    let (dir, hot) = build(&data, issues, commits, real.as_deref());
    let bd_sync = env!("CARGO_BIN_EXE_bd-sync");
    let cmd = |args: &[&str]| {
        let mut c = Command::new(bd_sync);
        c.current_dir(&dir).env("BD_ACTOR", "bench").env("NO_COLOR", "1").args(args).stdout(Stdio::null());
        c
    };
    assert_eq!(measure(&mut cmd(&["import"])).code, 0, "import");
    let _ = std::fs::remove_file(git_common_dir(&dir).join("beads/links"));
    let build_time = measure(&mut cmd(&["log", "--commits", &hot]));
    assert_eq!(build_time.code, 0, "log --commits");
    let what = if real.is_some() { "the real file's issues".to_owned() } else { format!("{issues} issues") };
    println!("bridge: {what}, {commits} commits; index built in {:.0} ms", build_time.wall.as_secs_f64() * 1e3);
    let mut baseline = Vec::new();
    let message = git_common_dir(&dir).join("COMMIT_EDITMSG");
    let message_arg = message.to_string_lossy().into_owned();
    // On the real file every query's target is 15 ms; on gen.py's, the bridge's own.
    let target = |generated: f64| if real.is_some() { 15.0 } else { generated };
    let context_target = if issues <= 10_000 { 50.0 } else { 200.0 };
    let cases: [(&str, Vec<&str>, f64); 6] = [
        ("ready", vec!["ready"], target(f64::NAN)),
        ("log --commits ID", vec!["log", "--commits", &hot], target(100.0)),
        ("context ID", vec!["context", &hot], target(context_target)),
        ("context (the actor's)", vec!["context"], target(context_target)),
        ("show ID", vec!["show", &hot], target(f64::NAN)),
        ("link prepare-commit-msg", vec!["link", "prepare-commit-msg", &message_arg, "message"], 20.0),
    ];
    let mut times: Vec<Vec<std::time::Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..runs {
        baseline.push(measure(git(&dir).args(["rev-parse", "HEAD"]).stdout(Stdio::null())).wall);
        for (n, (_, args, _)) in cases.iter().enumerate() {
            std::fs::write(&message, "Fix the thing\n").expect("write the message");
            let m = measure(&mut cmd(args));
            assert_eq!(m.code, 0, "{args:?}");
            times[n].push(m.wall);
        }
    }
    let base = median_ms(baseline);
    println!("{:<24} {:>10} {:>10} {:>8}", "command", "median ms", "x git", "target");
    println!("{:<24} {:>10.1} {:>10.1} {:>8}", "git rev-parse HEAD", base, 1.0, "-");
    for (n, (name, _, target)) in cases.iter().enumerate() {
        let ms = median_ms(times[n].clone());
        let target = if target.is_nan() { "-".to_owned() } else { format!("{target:.0} ms") };
        println!("{name:<24} {ms:>10.1} {:>10.1} {target:>8}", ms / base);
    }
    let linked = std::fs::read_to_string(&message).expect("read the message");
    assert!(linked.contains("Beads-Issue: "), "the trailer was not added: {linked:?}");
}

fn git_common_dir(dir: &Path) -> PathBuf {
    let out = git(dir).args(["rev-parse", "--path-format=absolute", "--git-common-dir"]).output().expect("git");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
