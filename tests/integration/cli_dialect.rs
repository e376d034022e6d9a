//! One command line across the three binaries: `-C DIR` on each (before or after the
//! subcommand, and refused clearly when it names no directory), `--color` and `--quiet` global
//! with one help text, `--json` with that text too but offered only by the commands that have
//! JSON output, `--dry-run` as the one spelling of "show what you would do" (the
//! old `--check` kept as a hidden alias), the issues file as a positional `[FILE]`, bd-sync's
//! `--timeout` in seconds with a fraction like bd-hook's, bd-hook's mode flags refused outside
//! their mode, and the plumbing git and hook managers call left out of `--help` but still working.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::support::{issue, jsonl, ours, run, text, TestRepo};

/// `PROGRAM ARGS` in `dir`, stopped after 20 s (a mode flag that is not refused can start a
/// watcher that never ends).
fn tool(dir: &Path, program: &str, args: &[&str]) -> Output {
    run(ours(program).current_dir(dir).args(args).env("NO_COLOR", "1").timeout(Duration::from_secs(20)))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `base.jsonl` and `ours.jsonl` (bd-1 retitled) and `theirs.jsonl` (bd-1 reprioritised) in `dir`.
fn three_files(dir: &Path) {
    let at = |title: &str, priority: u8| jsonl(&[issue("bd-1").title(title).priority(priority).line()]);
    std::fs::write(dir.join("base.jsonl"), at("Old title", 2)).expect("write");
    std::fs::write(dir.join("ours.jsonl"), at("New title", 2)).expect("write");
    std::fs::write(dir.join("theirs.jsonl"), at("Old title", 1)).expect("write");
}

/// A repository whose issues file gained bd-2 in its last commit.
fn repo_with_two_commits() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]), "one");
    repo.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line(), issue("bd-2").line()]), "two");
    repo
}

/// The help text of `flag` in a `--help` output, whichever layout clap chose (same line or the
/// next), with runs of spaces squeezed and without its `[default: ...]`.
fn option_help(help: &str, flag: &str) -> String {
    let lines: Vec<&str> = help.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with('-') && l.split([' ', ',']).any(|w| w == flag))
        .unwrap_or_else(|| panic!("{flag} in:\n{help}"));
    let rest = lines[at].trim_start().split("  ").skip(1).collect::<Vec<_>>().join(" ");
    let text = if rest.trim().is_empty() { lines.get(at + 1).copied().unwrap_or_default() } else { &rest };
    let text = text.split(" [default: ").next().unwrap_or_default();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn dash_c_works_on_every_binary_before_and_after_the_subcommand() {
    let dir = tempfile::tempdir().expect("tmp");
    let proj = dir.path().join("proj");
    std::fs::create_dir(&proj).expect("mkdir");
    three_files(&proj);
    for args in [
        &["-C", "proj", "diff", "base.jsonl", "ours.jsonl"][..],
        &["diff", "-C", "proj", "base.jsonl", "ours.jsonl"],
        &["diff", "base.jsonl", "ours.jsonl", "-C", "proj"],
        &["--repo", "proj", "diff", "base.jsonl", "ours.jsonl"],
    ] {
        let out = tool(dir.path(), "bd-merge", args);
        assert_eq!(out.status.code(), Some(0), "bd-merge {args:?}: {}", text(&out));
        assert!(stdout(&out).contains("New title"), "bd-merge {args:?}: {}", stdout(&out));
    }
    // The driver's own form too: the files are found in DIR.
    let out = tool(dir.path(), "bd-merge", &["-C", "proj", "-o", "-", "base.jsonl", "ours.jsonl", "theirs.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("New title") && stdout(&out).contains("\"priority\":1"), "{}", stdout(&out));

    let repo = repo_with_two_commits();
    let path = repo.path().to_str().expect("utf8");
    let out = tool(dir.path(), "bd-hook", &["-C", path, "--from-diff", "HEAD~1", "--dry-run", "--strict"]);
    assert_eq!((out.status.code(), stdout(&out)), (Some(0), "bd-2\n".to_owned()), "{}", text(&out));
    let out = tool(dir.path(), "bd-hook", &["--from-diff", "HEAD~1", "--dry-run", "--strict", "-C", path]);
    assert_eq!((out.status.code(), stdout(&out)), (Some(0), "bd-2\n".to_owned()), "{}", text(&out));
}

#[test]
fn dash_c_naming_a_file_a_missing_directory_or_a_dangling_link_stops_the_command() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let proj = d.join("proj");
    std::fs::create_dir(&proj).expect("mkdir");
    three_files(&proj);
    std::fs::write(proj.join(".beads-not"), "").expect("write");
    std::fs::write(d.join("a-file"), "").expect("write");
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).expect("symlink");
    std::os::unix::fs::symlink(&proj, d.join("link")).expect("symlink");
    let commands: [(&str, Vec<&str>); 3] = [
        ("bd-sync", vec!["--db", "cache.db", "install", "--dry-run"]),
        ("bd-merge", vec!["diff", "base.jsonl", "ours.jsonl"]),
        ("bd-hook", vec!["--id", "bd-1", "--dry-run", "--strict"]),
    ];
    for (program, args) in &commands {
        for (target, why) in [("a-file", "not a directory"), ("missing", "no such directory"), ("dangling", "no such directory")] {
            let mut full = vec!["-C", target];
            full.extend(args);
            let out = tool(d, program, &full);
            let err = text(&out);
            assert_eq!(out.status.code(), Some(2), "{program} {full:?}: {err}");
            assert!(err.contains(&format!("{program}: -C {target}: {why}")), "{program} {full:?}: {err}");
            assert!(stdout(&out).is_empty(), "{program} {full:?} did nothing: {}", stdout(&out));
        }
    }
    assert!(!d.join("cache.db").exists() && !d.join("missing").exists(), "nothing written anywhere");
    // A link to a directory is followed, as `git -C` and `cd` follow it.
    let out = tool(d, "bd-merge", &["-C", "link", "diff", "base.jsonl", "ours.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // bd-hook fails open: without --strict a bad -C is named and exits 0, sending nothing.
    let out = tool(d, "bd-hook", &["-C", "missing", "--id", "bd-1", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("bd-hook: -C missing: no such directory") && stdout(&out).is_empty(), "{}", text(&out));
}

#[test]
fn dash_c_makes_relative_paths_relative_to_dir_in_bd_sync_too() {
    let dir = tempfile::tempdir().expect("tmp");
    let proj = dir.path().join("proj");
    std::fs::create_dir_all(proj.join(".beads")).expect("mkdir");
    std::fs::write(proj.join(".beads/issues.jsonl"), jsonl(&[issue("bd-1").line()])).expect("write");
    let out = tool(dir.path(), "bd-sync", &["-C", "proj", "--db", "cache.db", "import"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(proj.join("cache.db").exists(), "--db cache.db is proj/cache.db, as if started in proj");
    assert!(!dir.path().join("cache.db").exists(), "not the starting directory's");
}

#[test]
fn json_color_and_quiet_are_global_in_bd_merge_with_the_help_text_bd_sync_gives_them() {
    let dir = tempfile::tempdir().expect("tmp");
    three_files(dir.path());
    let out = tool(dir.path(), "bd-merge", &["--json", "diff", "base.jsonl", "ours.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json before the subcommand gives JSON");
    assert_eq!(report["issues"][0]["id"], "bd-1", "{report}");
    let out = tool(dir.path(), "bd-merge", &["--color", "always", "diff", "base.jsonl", "ours.jsonl"]);
    assert!(stdout(&out).contains('\u{1b}'), "--color before the subcommand colours: {}", stdout(&out));
    let out = tool(dir.path(), "bd-merge", &["diff", "--color", "always", "base.jsonl", "ours.jsonl"]);
    assert!(stdout(&out).contains('\u{1b}'), "--color after it still does: {}", stdout(&out));
    // A command with no JSON output says so rather than print text a program cannot parse.
    for args in [
        &["--json", "textconv", "ours.jsonl"][..],
        &["dedupe", "--json", "ours.jsonl"],
        &["--json", "base.jsonl", "ours.jsonl", "theirs.jsonl"],
        &["--json", "review", "--restore", "1"],
    ] {
        let out = tool(dir.path(), "bd-merge", args);
        assert_eq!(out.status.code(), Some(2), "bd-merge {args:?}: {}", text(&out));
        assert!(text(&out).contains("has no JSON output"), "bd-merge {args:?}: {}", text(&out));
    }

    let sync = stdout(&tool(dir.path(), "bd-sync", &["--help"]));
    let merge = stdout(&tool(dir.path(), "bd-merge", &["--help"]));
    let hook = stdout(&tool(dir.path(), "bd-hook", &["--help"]));
    for flag in ["--color", "-C"] {
        assert_eq!(option_help(&sync, flag), option_help(&merge, flag), "{flag}: one help text in bd-sync and bd-merge");
    }
    for sub in ["diff", "review", "update-branch"] {
        let help = stdout(&tool(dir.path(), "bd-merge", &[sub, "--help"]));
        assert_eq!(option_help(&sync, "--json"), option_help(&help, "--json"), "bd-merge {sub}: --json");
    }
    assert_eq!(option_help(&sync, "-C"), option_help(&hook, "-C"), "-C: one help text in bd-sync and bd-hook");
    for sub in ["resolve", "diff", "review"] {
        let help = stdout(&tool(dir.path(), "bd-merge", &[sub, "--help"]));
        assert_eq!(option_help(&help, "--quiet"), option_help(&merge, "--quiet"), "bd-merge {sub}: --quiet");
    }
}

/// The subcommands a binary's `--help` lists (clap's `help` left out).
fn subcommands(dir: &Path, program: &str) -> Vec<String> {
    let help = stdout(&tool(dir, program, &["--help"]));
    let listed = help.lines().skip_while(|l| !l.starts_with("Commands:")).skip(1).take_while(|l| !l.trim().is_empty());
    listed.filter_map(|l| l.split_whitespace().next()).filter(|name| *name != "help").map(str::to_owned).collect()
}

/// `--help` offers `--json` exactly where the command honours it: where it is listed, `--json`
/// never meets "no JSON output" (whatever else fails, the failure is a JSON object); where it is
/// not, it is refused, as JSON, naming the command. Before, bd-merge's `--json` was global, so
/// `dedupe`, `resolve` and the driver listed a flag they refuse.
#[test]
fn regression_help_offered_json_on_commands_that_refuse_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut checked = 0;
    for program in ["bd-sync", "bd-merge"] {
        let subs = subcommands(dir.path(), program);
        assert!(subs.len() >= 5, "{program}: {subs:?}");
        for sub in subs.iter().map(|s| vec![s.as_str()]).chain([vec![]]) {
            let help = stdout(&tool(dir.path(), program, &[&sub[..], &["--help"]].concat()));
            let offered = help.lines().any(|l| l.trim_start().starts_with("--json"));
            // The driver's form needs its three files before anything is refused.
            let files: &[&str] = if sub.is_empty() { &["base.jsonl", "ours.jsonl", "theirs.jsonl"] } else { &[] };
            let out = tool(dir.path(), program, &[&sub[..], &["--json"], files].concat());
            let said = text(&out);
            let refused = said.contains("has no JSON output") || said.contains("unexpected argument '--json'");
            if program == "bd-merge" && sub.is_empty() {
                assert!(!offered, "bd-merge --help describes the driver, which has no JSON output:\n{help}");
            }
            assert_eq!(offered, !refused, "{program} {sub:?}: --json offered {offered}, refused {refused}: {said}");
            if out.status.code() == Some(2) {
                let v: serde_json::Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("{program} {sub:?} --json: stdout is not JSON ({e}): {said}"));
                assert!(v["error"]["message"].is_string(), "{program} {sub:?}: {v}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} commands checked");
}

#[test]
fn quiet_before_or_after_resolve_silences_its_report() {
    let repo = TestRepo::new();
    let ours_line = issue("bd-1").title("Ours").updated("2025-01-02T00:00:00Z").line();
    let theirs_line = issue("bd-1").title("Theirs").updated("2025-01-03T00:00:00Z").line();
    let conflicted = format!("<<<<<<< ours\n{ours_line}\n=======\n{theirs_line}\n>>>>>>> theirs\n");
    for (args, reports) in [
        (&["resolve", "a.jsonl"][..], true),
        (&["-q", "resolve", "a.jsonl"], false),
        (&["resolve", "--quiet", "a.jsonl"], false),
        (&["--quiet", "resolve", "a.jsonl"], false),
    ] {
        repo.write("a.jsonl", conflicted.as_bytes());
        let out = tool(repo.path(), "bd-merge", args);
        assert_eq!(out.status.code(), Some(0), "bd-merge {args:?}: {}", text(&out));
        assert_eq!(text(&out).contains("title"), reports, "bd-merge {args:?}: {}", text(&out));
        assert!(text(&out).contains("resolved from"), "the outcome is always said: {}", text(&out));
    }
}

#[test]
fn dry_run_is_the_one_spelling_and_check_stays_a_hidden_alias() {
    let repo = TestRepo::new();
    let line = issue("bd-1").line();
    let twice = format!("{line}\n{line}\n");
    let conflicted = format!("<<<<<<< ours\n{line}\n=======\n{}\n>>>>>>> theirs\n", issue("bd-1").title("Other").line());
    repo.write("dup.jsonl", twice.as_bytes());
    repo.write("conflicted.jsonl", conflicted.as_bytes());
    for flag in ["--dry-run", "--check"] {
        let out = tool(repo.path(), "bd-merge", &["dedupe", flag, "dup.jsonl"]);
        assert_eq!(out.status.code(), Some(1), "dedupe {flag}: {}", text(&out));
        assert!(text(&out).contains("would become one record"), "dedupe {flag}: {}", text(&out));
        let out = tool(repo.path(), "bd-merge", &["resolve", flag, "conflicted.jsonl"]);
        assert_eq!(out.status.code(), Some(1), "resolve {flag}: {}", text(&out));
        assert!(text(&out).contains("needs resolving"), "resolve {flag}: {}", text(&out));
    }
    assert_eq!(repo.read("dup.jsonl"), twice.as_bytes(), "nothing written");
    assert_eq!(repo.read("conflicted.jsonl"), conflicted.as_bytes(), "nothing written");
    for sub in ["dedupe", "resolve"] {
        let help = stdout(&tool(repo.path(), "bd-merge", &[sub, "--help"]));
        assert!(help.contains("--dry-run") && !help.contains("--check"), "bd-merge {sub} --help: {help}");
    }
}

#[test]
fn the_issues_file_is_a_positional_file_everywhere_it_is_an_input() {
    let dir = tempfile::tempdir().expect("tmp");
    for (program, sub) in [
        ("bd-merge", "resolve"),
        ("bd-merge", "dedupe"),
        ("bd-merge", "review"),
        ("bd-sync", "import"),
        ("bd-sync", "export"),
        ("bd-sync", "check"),
    ] {
        let help = stdout(&tool(dir.path(), program, &[sub, "--help"]));
        let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap_or_default();
        assert!(usage.contains("[FILE]"), "{program} {sub}: {usage}");
        assert!(!help.contains("[PATH]") && !help.contains("--file"), "{program} {sub}: {help}");
    }

    // review --restore N FILE, as --restore N --file FILE did (and still does).
    let repo = TestRepo::new();
    repo.commit_file("README", b"x\n", "init");
    std::fs::create_dir(repo.path().join("m")).expect("mkdir");
    let side = |description: &str, updated: &str| jsonl(&[issue("bd-1").description(description).updated(updated).line()]);
    for (name, content) in [
        ("base", side("base", "2025-11-01T10:00:00Z")),
        ("ours", side("ours", "2025-11-03T10:00:00Z")),
        ("theirs", side("theirs", "2025-11-02T10:00:00Z")),
    ] {
        std::fs::write(repo.path().join("m").join(name), content).expect("write");
    }
    let out = tool(repo.path(), "bd-merge", &["m/base", "m/ours", "m/theirs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = tool(repo.path(), "bd-merge", &["review", "--restore", "1", "m/ours"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&repo.read("m/ours")).contains("\"description\":\"theirs\""), "restored into FILE");
    // FILE is what --restore edits: alone it is refused, naming --restore.
    let out = tool(repo.path(), "bd-merge", &["review", "m/ours"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--restore"), "{}", text(&out));
    // The hook's argument still reaches --announce (post-merge's squash flag, post-rewrite's kind).
    for args in
        [&["review", "--announce", "0"][..], &["review", "--announce", ""], &["review", "--announce"], &["review", "--announce", "rebase"]]
    {
        let out = tool(repo.path(), "bd-merge", args);
        assert_eq!(out.status.code(), Some(0), "bd-merge {args:?}: {}", text(&out));
    }
}

#[test]
fn bd_sync_timeout_takes_seconds_with_a_fraction_as_bd_hook_does() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join(".beads")).expect("mkdir");
    std::fs::write(dir.path().join(".beads/issues.jsonl"), jsonl(&[issue("bd-1").line()])).expect("write");
    for args in [
        &["--db", "c.db", "import", "--timeout", "0.5"][..],
        &["--db", "c.db", "export", "--timeout", "2.25"],
        &["--db", "c.db", "import", "--timeout", "0"],
    ] {
        let out = tool(dir.path(), "bd-sync", args);
        assert_eq!(out.status.code(), Some(0), "bd-sync {args:?}: {}", text(&out));
    }
    for bad in ["-1", "86400.5", "NaN", "inf", "soon"] {
        let out = tool(dir.path(), "bd-sync", &["--db", "c.db", "import", "--timeout", bad]);
        assert_eq!(out.status.code(), Some(2), "--timeout {bad}: {}", text(&out));
        assert!(text(&out).contains("--timeout") || bad == "-1", "--timeout {bad}: {}", text(&out));
    }
    for (program, sub) in [("bd-sync", Some("import")), ("bd-sync", Some("export")), ("bd-hook", Some("send"))] {
        let args: Vec<&str> = sub.into_iter().chain(["--help"]).collect();
        let help = stdout(&tool(dir.path(), program, &args));
        let timeout = option_help(&help, "--timeout");
        assert!(timeout.contains("seconds, a fraction allowed"), "{program} {args:?}: {timeout}");
    }
}

#[test]
fn bd_hook_refuses_a_mode_flag_outside_its_mode() {
    let repo = repo_with_two_commits();
    let dir = repo.path().to_str().expect("utf8");
    for (args, flag) in [
        (&["--id", "bd-1", "--poll", "50"][..], "--poll"),
        (&["--id", "bd-1", "--debounce", "10"], "--debounce"),
        (&["--since-last", "--poll", "50"], "--poll"),
        (&["--id", "bd-1", "--path", ".beads/issues.jsonl"], "--path"),
        (&["--stdin", "--path", ".beads/issues.jsonl"], "--path"),
        (&["--watch", dir, "--path", ".beads/issues.jsonl"], "--path"),
        (&["--source-cmd", "cat .beads/issues.jsonl", "--path", ".beads/issues.jsonl"], "--path"),
        (&["--watch", dir, "--id", "bd-1"], "--id"),
        (&["--watch", dir, "--from-diff", "HEAD~1"], "--from-diff"),
        (&["--install-git-hook", dir, "--id", "bd-1"], "--id"),
        (&["--install-git-hook", dir, "--dry-run"], "--dry-run"),
        (&["--install-git-hook", dir, "--timeout", "3"], "--timeout"),
        (&["--uninstall-git-hook", dir, "--watch", dir], "--watch"),
    ] {
        for strict in [true, false] {
            let mut full = args.to_vec();
            // A dry run, so that a flag not refused prints instead of sending (the git-hook
            // cases install for real when not refused: the test looks for the hook file).
            if !args.iter().any(|a| a.ends_with("-git-hook") || *a == "--dry-run") {
                full.push("--dry-run");
            }
            if strict {
                full.push("--strict");
            }
            let out = tool(repo.path(), "bd-hook", &full);
            assert_eq!(out.status.code(), Some(if strict { 2 } else { 0 }), "bd-hook {full:?}: {}", text(&out));
            assert!(text(&out).contains(flag) && text(&out).starts_with("error:"), "bd-hook {full:?} names {flag}: {}", text(&out));
            assert!(stdout(&out).is_empty(), "bd-hook {full:?} did nothing: {}", stdout(&out));
        }
    }
    assert!(!repo.path().join(".git/hooks/post-commit").exists(), "no hook installed by a refused command");
    // In their mode they are taken.
    for args in [&["--from-diff", "HEAD~1", "--path", ".beads/issues.jsonl"][..], &["--since-last", "--path", ".beads/issues.jsonl"]] {
        let mut full = args.to_vec();
        full.extend(["--dry-run", "--strict"]);
        let out = tool(repo.path(), "bd-hook", &full);
        assert_eq!(out.status.code(), Some(0), "bd-hook {full:?}: {}", text(&out));
    }
}

#[test]
fn plumbing_is_left_out_of_help_and_still_runs() {
    let dir = tempfile::tempdir().expect("tmp");
    three_files(dir.path());
    let sync = stdout(&tool(dir.path(), "bd-sync", &["--help"]));
    assert!(!sync.lines().any(|l| l.trim_start().starts_with("hook ")), "bd-sync hook is plumbing: {sync}");
    let merge = stdout(&tool(dir.path(), "bd-merge", &["--help"]));
    for hidden in ["textconv", "<BASE>", "--output", "--marker-size", "--ours-label", "--append", "7 arguments"] {
        assert!(!merge.contains(hidden), "bd-merge --help lists {hidden}: {merge}");
    }
    let diff = stdout(&tool(dir.path(), "bd-merge", &["diff", "--help"]));
    assert!(!diff.contains("7 arguments") && !diff.contains("OLD-HEX"), "{diff}");

    // Each still runs, and its own help still answers.
    let out = tool(dir.path(), "bd-sync", &["hook", "no-such-hook"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(tool(dir.path(), "bd-sync", &["hook", "--help"]).status.code(), Some(0));
    let out = tool(dir.path(), "bd-merge", &["textconv", "ours.jsonl"]);
    assert!(out.status.success() && stdout(&out).contains("New title"), "{}", text(&out));
    let out = tool(dir.path(), "bd-merge", &["-o", "-", "base.jsonl", "ours.jsonl", "theirs.jsonl"]);
    assert!(out.status.success() && stdout(&out).contains("New title"), "{}", text(&out));
    let git_form = ["diff", ".beads/issues.jsonl", "base.jsonl", "0123abc", "100644", "ours.jsonl", "4567def", "100644"];
    let out = tool(dir.path(), "bd-merge", &git_form);
    assert!(out.status.success() && stdout(&out).starts_with("diff --beads a/.beads/issues.jsonl"), "{}", text(&out));
    let out = tool(dir.path(), "bd-merge", &["diff", "base.jsonl", "ours.jsonl", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("diff takes OLD NEW"), "{}", text(&out));
    // With nothing to do, bd-merge shows its commands rather than ask for the driver's files.
    let out = tool(dir.path(), "bd-merge", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("Commands:") && !text(&out).contains("<BASE>"), "{}", text(&out));
}

#[test]
fn install_repo_is_hidden_behind_dash_c_and_still_taken() {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").line()]), "issues");
    let elsewhere = tempfile::tempdir().expect("tmp");
    let path = repo.path().to_str().expect("utf8");
    for sub in ["install", "uninstall"] {
        let help = stdout(&tool(elsewhere.path(), "bd-sync", &[sub, "--help"]));
        assert!(!help.contains("[REPO]"), "bd-sync {sub}: -C DIR names the repository: {help}");
        let out = tool(elsewhere.path(), "bd-sync", &[sub, "--dry-run", path]);
        assert_eq!(out.status.code(), Some(0), "bd-sync {sub} REPO: {}", text(&out));
    }
}

#[test]
fn a_merge_driver_flag_before_a_subcommand_is_refused_not_ignored() {
    let dir = tempfile::tempdir().expect("tmp");
    three_files(dir.path());
    for (args, flag) in [
        (&["-o", "out.jsonl", "diff", "base.jsonl", "ours.jsonl"][..], "--output"),
        (&["--conflict", "ours", "textconv", "ours.jsonl"], "--conflict"),
    ] {
        let out = tool(dir.path(), "bd-merge", args);
        assert_eq!(out.status.code(), Some(2), "bd-merge {args:?}: {}", text(&out));
        assert!(text(&out).contains(&format!("{flag} <")) && text(&out).contains("merge driver's"), "bd-merge {args:?}: {}", text(&out));
        assert!(stdout(&out).is_empty() && !dir.path().join("out.jsonl").exists(), "nothing done: {}", text(&out));
    }
}

/// `bd-merge merge BASE OURS THEIRS` is the driver's visible name: the same result, exit code and
/// report as git's form, its options in its own help, and none of them in the top-level help.
#[test]
fn merge_is_the_drivers_visible_name_and_does_what_gits_form_does() {
    let mut results = Vec::new();
    for form in [&["merge"][..], &[]] {
        let dir = tempfile::tempdir().expect("tmp");
        three_files(dir.path());
        let args = [form, &["base.jsonl", "ours.jsonl", "theirs.jsonl", "-p", ".beads/issues.jsonl"]].concat();
        let out = tool(dir.path(), "bd-merge", &args);
        let merged = std::fs::read_to_string(dir.path().join("ours.jsonl")).expect("ours");
        results.push((out.status.code(), merged, String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    assert_eq!(results[0], results[1], "merge and git's form");
    assert_eq!(results[0].0, Some(0));
    assert!(results[0].1.contains("New title") && results[0].1.contains("\"priority\":1"), "{}", results[0].1);
    let dir = tempfile::tempdir().expect("tmp");
    let top = stdout(&tool(dir.path(), "bd-merge", &["--help"]));
    assert!(top.lines().any(|l| l.trim_start().starts_with("merge ")), "{top}");
    assert!(!top.contains("--marker-size"), "the driver's options stay out of the top-level help: {top}");
    let help = stdout(&tool(dir.path(), "bd-merge", &["merge", "--help"]));
    for flag in ["--marker-size", "--ours-label", "--conflict", "--output"] {
        assert!(help.contains(flag), "{flag} in merge's help:\n{help}");
    }
}

/// bd-hook's subcommands against the mode flags they replace, each in a fresh repository and
/// with a real server: the same ids reach the server, the same stdout and exit code. The old
/// flags are hidden from every `--help`, and refused beside a subcommand.
#[test]
fn bd_hook_subcommands_do_what_the_old_mode_flags_did_and_the_old_flags_are_hidden_aliases() {
    let pairs: [(&[&str], &[&str], &[u8]); 9] = [
        (&["send", "bd-1", "bd-2"], &["--id", "bd-1", "--id", "bd-2"], b""),
        (&["send", "bd-1", "--dry-run", "-z"], &["--id", "bd-1", "--dry-run", "-z"], b""),
        (&["stdin", "-z"], &["--stdin", "-z"], b"bd-7\0bd 8\0"),
        (&["stdin"], &["--stdin"], b"# a comment\nbd-7\n\n"),
        (&["from-diff", "HEAD~1"], &["--from-diff", "HEAD~1"], b""),
        (&["from-diff", "HEAD~1", "--path", ".beads/issues.jsonl"], &["--from-diff", "HEAD~1", "--path", ".beads/issues.jsonl"], b""),
        (&["since-last", "--state", "cron"], &["--state", "cron"], b""),
        (&["since-last", "--source-cmd", "cat .beads/issues.jsonl"], &["--source-cmd", "cat .beads/issues.jsonl"], b""),
        (&["post-commit"], &["--post-commit"], b""),
    ];
    for (new, old, input) in pairs {
        let outcome = |args: &[&str]| {
            let repo = repo_with_two_commits();
            let server = crate::support::CaptureServer::start(|_, _| crate::support::Reply::Status(200));
            let mut full = args.to_vec();
            full.push("--strict");
            let mut cmd = ours("bd-hook");
            cmd.current_dir(repo.path()).args(&full).env("GEMBA_NOTIFY_URL", &server.url).write_stdin(input);
            let first = run(cmd.timeout(Duration::from_secs(20)));
            // A since-last run records a baseline first: the second run is the one that sends.
            repo.commit_file(".beads/issues.jsonl", &jsonl(&[issue("bd-1").title("moved").line(), issue("bd-2").line()]), "three");
            let second = run(ours("bd-hook").current_dir(repo.path()).args(&full).env("GEMBA_NOTIFY_URL", &server.url).write_stdin(input));
            let got = |o: &Output| (o.status.code(), stdout(o));
            (got(&first), got(&second), server.items())
        };
        let (with_new, with_old) = (outcome(new), outcome(old));
        assert_eq!(with_new, with_old, "bd-hook {new:?} against {old:?}");
        assert_eq!(with_new.0 .0, Some(0), "bd-hook {new:?}: {with_new:?}");
        let did_something = !with_new.2.is_empty() || !with_new.0 .1.is_empty();
        assert!(did_something, "bd-hook {new:?} sent or printed nothing: the comparison would prove nothing");
    }
    // install-hook writes the bytes --install-git-hook wrote.
    let hook_of = |args: &[&str]| {
        let repo = repo_with_two_commits();
        let dir = repo.path().to_str().expect("utf8").to_owned();
        let args: Vec<&str> = args.iter().map(|a| if *a == "REPO" { dir.as_str() } else { a }).collect();
        let out = tool(repo.path(), "bd-hook", &args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        std::fs::read(repo.path().join(".git/hooks/post-commit")).expect("the hook")
    };
    assert_eq!(hook_of(&["-C", "REPO", "install-hook"]), hook_of(&["--install-git-hook", "REPO"]));
    let dir = tempfile::tempdir().expect("tmp");
    let old_flags = ["--id", "--stdin", "--from-diff", "--since-last", "--watch", "--post-commit", "-git-hook"];
    let subs = subcommands(dir.path(), "bd-hook");
    assert_eq!(subs, ["send", "stdin", "from-diff", "since-last", "watch", "post-commit", "install-hook", "uninstall-hook"]);
    for sub in subs.iter().map(|s| vec![s.as_str()]).chain([vec![]]) {
        let help = stdout(&tool(dir.path(), "bd-hook", &[&sub[..], &["--help"]].concat()));
        // A mode's own options are its subcommand's now: hidden only at the top.
        let own = ["--state", "--source-cmd", "--poll", "--debounce", "--path"];
        for old in old_flags.into_iter().chain(own).filter(|f| sub.is_empty() || !own.contains(f)) {
            let listed = help.lines().any(|l| l.trim_start().starts_with('-') && l.contains(old));
            assert!(!listed, "bd-hook {sub:?} --help lists the old {old}:\n{help}");
        }
    }
    // An old mode flag beside a subcommand is refused, naming it; nothing is printed or sent.
    let repo = repo_with_two_commits();
    for args in [&["--id", "bd-9", "send", "bd-1"][..], &["--stdin", "from-diff", "HEAD~1"], &["--watch", ".", "since-last"]] {
        let mut full = args.to_vec();
        full.extend(["--dry-run", "--strict"]);
        let out = tool(repo.path(), "bd-hook", &full);
        assert_eq!(out.status.code(), Some(2), "bd-hook {full:?}: {}", text(&out));
        assert!(text(&out).contains(args[0]) && text(&out).contains("old spelling"), "bd-hook {full:?}: {}", text(&out));
        assert!(stdout(&out).is_empty(), "bd-hook {full:?}: {}", stdout(&out));
    }
}

/// A value each kind of option takes (by the name its help shows).
fn sample_value(name: &str) -> &'static str {
    match name {
        "DIR" | "REPO" => ".",
        "CMD" => "true",
        "CONFLICT" => "ours",
        "WHEN" => "never",
        "URL" => "http://127.0.0.1:9",
        "ID" | "REV" | "REV[..REV]" | "BASE" => "HEAD",
        "P" => "1",
        "TYPE" => "task",
        "FILE" | "PATH" => "none.jsonl",
        "N" => "2",
        "BYTES" | "MS" | "SECS" => "100",
        _ => "x",
    }
}

/// Every option a `--help` lists, with a value when it takes one: `(flag, value)`.
fn listed_options(help: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for line in help.lines().skip_while(|l| !l.starts_with("Options:")).skip(1) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| w.starts_with("--")) else { continue };
        if !line.trim_start().starts_with('-') || ["--help", "--version"].contains(&words[at]) {
            continue;
        }
        let value = words.get(at + 1).filter(|w| w.starts_with('<')).map(|w| sample_value(w.trim_matches(['<', '>', '.'])).to_owned());
        out.push((words[at].trim_end_matches(',').to_owned(), value));
    }
    out
}

/// What a command prints when it refuses a flag it listed (or a sample value the test chose).
const REFUSALS: [&str; 5] = ["unexpected argument", "has no JSON output", "only applies with", "has nothing to do there", "invalid value"];

/// Every flag a `--help` lists is taken by that command: the parser accepts it where it is listed
/// (before `--help`), and a run with it alone, in an empty directory, never refuses it (it may
/// fail for want of a repository or a file, never for the flag). Each binary, each subcommand.
#[test]
fn every_flag_a_help_lists_is_taken_by_that_command() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut checked = 0;
    for program in ["bd-sync", "bd-merge", "bd-hook"] {
        let mut pending: Vec<Vec<String>> = vec![Vec::new()];
        while let Some(path) = pending.pop() {
            let sub: Vec<&str> = path.iter().map(String::as_str).collect();
            let help = stdout(&tool(dir.path(), program, &[&sub[..], &["--help"]].concat()));
            pending.extend(subcommands_in(&help).into_iter().map(|s| path.iter().cloned().chain([s]).collect()));
            // The required arguments the Usage line names, so a run reaches the command's own rules.
            let positionals = required_arguments(&help);
            for (flag, value) in listed_options(&help) {
                let mut args: Vec<&str> = sub.clone();
                args.push(&flag);
                args.extend(value.as_deref());
                args.extend(positionals.iter().map(String::as_str));
                let parsed = tool(dir.path(), program, &[&args[..], &["--help"]].concat());
                assert_eq!(parsed.status.code(), Some(0), "{program} {args:?} --help: {}", text(&parsed));
                // A refusal comes at once: a command still running after 2 s (a watcher) took the flag.
                let ran = run(ours(program).current_dir(dir.path()).args(&args).env("NO_COLOR", "1").timeout(Duration::from_secs(2)));
                let said = text(&ran);
                let refusal = REFUSALS.iter().find(|r| said.contains(*r));
                assert!(refusal.is_none(), "{program} {args:?} lists {flag} in its help and refuses it:\n{said}");
                checked += 1;
            }
        }
    }
    assert!(checked >= 150, "{checked} flags checked");
}

/// A sample value for each required argument (`<NAME>`) of a help's Usage line.
fn required_arguments(help: &str) -> Vec<String> {
    let Some(usage) = help.lines().find(|l| l.starts_with("Usage:")) else { return Vec::new() };
    let names = usage.split_whitespace().filter(|w| w.starts_with('<') && *w != "<COMMAND>");
    names.map(|w| sample_value(w.trim_matches(['<', '>', '.'])).to_owned()).collect()
}

/// The subcommands a `--help` lists under `Commands:` (clap's `help` left out).
fn subcommands_in(help: &str) -> Vec<String> {
    let listed = help.lines().skip_while(|l| !l.starts_with("Commands:")).skip(1).take_while(|l| l.starts_with("  "));
    listed.filter_map(|l| l.split_whitespace().next()).filter(|name| *name != "help").map(str::to_owned).collect()
}
