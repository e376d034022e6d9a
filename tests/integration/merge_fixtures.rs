//! Walks `fixtures/merge/<case>/`: runs the real `bd-merge` on `base/ours/theirs.jsonl` (with the
//! flags in `args`, if any, and the `KEY=VALUE` lines of `env`) and compares the rewritten ours
//! with `expected.jsonl`, the exit code with `exit_code` (default 0) and stderr with `stderr` (when
//! present). The merge's clock is fixed: `BD_MERGE_NOW` is [`DEFAULT_NOW`] unless `env` sets it.
//!
//! `UPDATE_FIXTURES=1` rewrites the expectations from the current behaviour (review the diff!);
//! `FIXTURE=<name>` runs one case.

use std::fs;
use std::path::Path;

use crate::support::{diff, ours, run};

/// The merge's own time in every case that does not set one: earlier than every stamp in the
/// fixtures, so their stamps are "one tick after the later side".
const DEFAULT_NOW: &str = "2000-01-01T00:00:00Z";

#[test]
fn merge_fixture_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/merge");
    let only = std::env::var("FIXTURE").ok();
    let update = std::env::var_os("UPDATE_FIXTURES").is_some();
    let mut names: Vec<String> = fs::read_dir(&root)
        .expect("fixtures/merge exists")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|n| only.as_deref().is_none_or(|o| o == n))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no fixture case matched");
    let mut failures = Vec::new();
    for name in &names {
        if let Err(msg) = check_case(&root.join(name), update) {
            failures.push(format!("--- case {name} ---\n{msg}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), names.len(), failures.join("\n"));
}

fn check_case(dir: &Path, update: bool) -> Result<(), String> {
    let work = tempfile::tempdir().expect("temp dir");
    for f in ["base.jsonl", "ours.jsonl", "theirs.jsonl"] {
        fs::copy(dir.join(f), work.path().join(f)).map_err(|e| format!("{f}: {e}"))?;
    }
    let args = fs::read_to_string(dir.join("args")).unwrap_or_default();
    let env = fs::read_to_string(dir.join("env")).unwrap_or_default();
    let mut cmd = ours("bd-merge");
    cmd.env("BD_MERGE_NOW", DEFAULT_NOW);
    for line in env.lines().filter(|l| !l.trim().is_empty()) {
        let (key, value) = line.split_once('=').ok_or_else(|| format!("env: {line:?} is not KEY=VALUE"))?;
        cmd.env(key.trim(), value.trim());
    }
    let out = run(cmd
        .current_dir(work.path())
        .args(["base.jsonl", "ours.jsonl", "theirs.jsonl", "-p", ".beads/issues.jsonl"])
        .args(args.split_whitespace()));
    let merged = fs::read(work.path().join("ours.jsonl")).expect("ours still exists");
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&work.path().display().to_string(), "$DIR");
    if update {
        fs::write(dir.join("expected.jsonl"), &merged).expect("write expected");
        write_or_remove(&dir.join("exit_code"), (code != 0).then(|| format!("{code}\n")));
        write_or_remove(&dir.join("stderr"), (!stderr.is_empty()).then_some(stderr));
        return Ok(());
    }
    let mut problems = Vec::new();
    let expected = fs::read(dir.join("expected.jsonl")).map_err(|e| format!("expected.jsonl: {e}"))?;
    if expected != merged {
        problems.push(format!("merged file differs:\n{}", diff(&expected, &merged)));
    }
    let want_code: i32 = fs::read_to_string(dir.join("exit_code")).map(|s| s.trim().parse().expect("exit_code is a number")).unwrap_or(0);
    if want_code != code {
        problems.push(format!("exit code {code}, expected {want_code}; stderr:\n{stderr}"));
    }
    let want_stderr = fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    if want_stderr != stderr {
        problems.push(format!("stderr differs:\n{}", diff(want_stderr.as_bytes(), stderr.as_bytes())));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn write_or_remove(path: &Path, content: Option<String>) {
    match content {
        Some(c) => fs::write(path, c).expect("write expectation"),
        None => {
            let _ = fs::remove_file(path);
        }
    }
}
