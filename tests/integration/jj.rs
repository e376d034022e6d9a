//! jj (Jujutsu) runs no merge driver and no hook, so `bd-sync install` registers our merge as a
//! jj merge tool (`merge-tools.beads`) and uninstall removes it. With the real jj: two workspaces
//! of one colocated repository edit one issue, a rebase leaves the issues file conflicted,
//! `jj resolve --tool beads` merges it field by field, and the result is the bytes our driver
//! gives the same three versions in git. `.ci/tools.sh` builds jj into the tools directory;
//! `JJ` names another binary.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{bin, hermetic, issue, jsonl, path_with_our_binaries, real_tool, run};

const FILE: &str = ".beads/issues.jsonl";

/// jj in `dir`, hermetic: no user config, a fixed identity, our binaries and jj on PATH.
fn jj_cmd(jj: &Path, dir: &Path) -> Command {
    with_jj(jj, jj, dir)
}

/// `program` in `dir` with jj's environment (our binaries call jj by name).
fn with_jj(program: &Path, jj: &Path, dir: &Path) -> Command {
    let mut c = hermetic(program);
    let config = dir.parent().unwrap_or(dir).join("jj-config.toml");
    let _ = std::fs::write(&config, "");
    c.current_dir(dir)
        .env("PATH", path_with_our_binaries(&[jj.parent().unwrap_or(Path::new("/"))]))
        .env("JJ_CONFIG", config)
        .env("JJ_USER", "Test Author")
        .env("JJ_EMAIL", "author@example.com");
    c
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn jj(jj: &Path, dir: &Path, args: &[&str]) -> String {
    ok(run(jj_cmd(jj, dir).args(args)), &format!("jj {args:?}"))
}

#[test]
fn jj_resolve_with_the_installed_tool_merges_a_conflicted_issues_file_as_the_driver_does() {
    let Some(jj_bin) = real_tool("JJ", "jj-0.45.1/bin/jj") else { return };
    let root = tempfile::tempdir().expect("tmp");
    let repo = root.path().join("repo");
    std::fs::create_dir_all(repo.join(".beads")).expect("mkdir");
    let base = jsonl(&[issue("bd-1").line(), issue("bd-2").line()]);
    std::fs::write(repo.join(FILE), &base).expect("write");
    let git = |args: &[&str]| ok(run(hermetic("git").current_dir(&repo).args(args)), &format!("git {args:?}"));
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    jj(&jj_bin, &repo, &["git", "init", "--colocate"]);
    ok(run(with_jj(&bin("bd-sync"), &jj_bin, &repo).arg("install")), "bd-sync install");
    let program = jj(&jj_bin, &repo, &["config", "get", "merge-tools.beads.program"]);
    assert_eq!(program.trim(), bin("bd-merge").display().to_string(), "install registered the tool");

    // Two workspaces: each edits bd-1 and commits.
    let ws2 = root.path().join("ws2");
    jj(&jj_bin, &repo, &["workspace", "add", ws2.to_str().expect("utf-8")]);
    let ours = jsonl(&[issue("bd-1").title("Title from the first workspace").updated("2025-11-02T10:00:00Z").line(), issue("bd-2").line()]);
    std::fs::write(repo.join(FILE), &ours).expect("write");
    jj(&jj_bin, &repo, &["commit", "-m", "first"]);
    let first = jj(&jj_bin, &repo, &["log", "--no-graph", "-r", "@-", "-T", "change_id"]);
    let theirs = jsonl(&[issue("bd-1").priority(0).updated("2025-11-03T10:00:00Z").line(), issue("bd-2").line()]);
    std::fs::write(ws2.join(FILE), &theirs).expect("write");
    jj(&jj_bin, &ws2, &["commit", "-m", "second"]);
    let second = jj(&jj_bin, &ws2, &["log", "--no-graph", "-r", "@-", "-T", "change_id"]);

    // The rebase: jj's line merge conflicts on bd-1's line.
    jj(&jj_bin, &repo, &["rebase", "-r", &second, "-d", &first]);
    let conflicts = jj(&jj_bin, &repo, &["resolve", "--list", "-r", &second]);
    assert!(conflicts.contains(FILE), "the rebase left the issues file conflicted: {conflicts}");

    jj(&jj_bin, &repo, &["resolve", "-r", &second, "--tool", "beads", FILE]);
    let resolved = jj(&jj_bin, &repo, &["file", "show", "-r", &second, FILE]);

    // The driver on the same three versions, as git runs it.
    let dir = root.path().join("driver");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, bytes) in [("base", &base), ("ours", &ours), ("theirs", &theirs)] {
        std::fs::write(dir.join(name), bytes).expect("write");
    }
    let out = run(hermetic(bin("bd-merge")).current_dir(&dir).args(["merge", "base", "ours", "theirs", "-p", FILE]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let driver = std::fs::read_to_string(dir.join("ours")).expect("read");
    assert_eq!(resolved, driver, "jj resolve --tool beads gives the driver's bytes");
    assert!(resolved.contains("Title from the first workspace") && resolved.contains(r#""priority":0"#), "{resolved}");
    let after = run(jj_cmd(&jj_bin, &repo).args(["resolve", "--list", "-r", &second]));
    assert!(String::from_utf8_lossy(&after.stderr).contains("No conflicts"), "resolved: {after:?}");

    // check notes jj; uninstall takes exactly our table out.
    let check = run(with_jj(&bin("bd-sync"), &jj_bin, &repo).args(["--json", "check"]));
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).expect("json");
    let notes: Vec<&serde_json::Value> =
        report["findings"].as_array().into_iter().flatten().filter(|f| f["kind"] == "jj-repository").collect();
    assert_eq!(notes.len(), 1, "{report}");
    assert!(notes[0]["message"].as_str().is_some_and(|m| m.contains("jj resolve --tool beads")), "{report}");
    ok(run(with_jj(&bin("bd-sync"), &jj_bin, &repo).arg("uninstall")), "bd-sync uninstall");
    let gone = run(jj_cmd(&jj_bin, &repo).args(["config", "get", "merge-tools.beads.program"]));
    assert!(!gone.status.success(), "uninstall removed the tool");
}

/// A repository jj manages, on a machine without jj: install does the rest and says so; nothing
/// fails.
#[test]
fn install_in_a_jj_repository_without_jj_installs_the_rest_and_says_so() {
    let repo = crate::support::TestRepo::new();
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").line()]), "issues");
    std::fs::create_dir_all(repo.path().join(".jj")).expect("mkdir .jj");
    let bins = tempfile::tempdir().expect("tmp");
    crate::support::binaries_in(bins.path());
    // PATH: our binaries and git's directory only (no jj).
    let git_dir = std::process::Command::new("sh").args(["-c", "dirname \"$(command -v git)\""]).output().expect("sh");
    let git_dir = String::from_utf8_lossy(&git_dir.stdout).trim().to_owned();
    let path = std::env::join_paths([bins.path(), Path::new(&git_dir)]).expect("PATH");
    let out = run(hermetic(bins.path().join("bd-sync")).current_dir(repo.path()).env("PATH", &path).arg("install"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("jj is not on PATH"), "{said}");
    assert!(!repo.git(&["config", "merge.beads.driver"]).is_empty(), "the driver is installed");
}
