//! Every word the three CLIs print, pinned: the help of every command and subcommand, and
//! transcripts of the commands people and agents run (status, check, ready, blocked, show, install,
//! errors). A change of wording shows up in review as a snapshot diff (`cargo insta review`, or
//! `INSTA_UPDATE=always cargo test` to rewrite them).

use std::path::Path;
use std::process::Output;

use crate::support::{ours, run};

/// `$ command`, the exit code, stdout and stderr, with temporary paths replaced by `[TMP]`.
fn transcript(dir: &Path, program: &str, args: &[&str]) -> String {
    let out: Output = run(ours(program).current_dir(dir).args(args).env("NO_COLOR", "1"));
    let clean = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        text.replace(&real.display().to_string(), "[TMP]").replace(&dir.display().to_string(), "[TMP]")
    };
    format!(
        "$ {program} {}\nexit {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status.code().map(|c| c.to_string()).unwrap_or_else(|| "signal".into()),
        clean(&out.stdout),
        clean(&out.stderr)
    )
}

/// The subcommand names listed under `Commands:` in a help text.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

/// The plumbing subcommands git and hook managers call, left out of `Commands:`: their help is
/// pinned too.
const HIDDEN: [(&str, &str); 2] = [("bd-sync", "hook"), ("bd-merge", "textconv")];

/// One snapshot per help text, `help__<program>[__<subcommand>...]`, for every subcommand found
/// (recursively) under `Commands:` and every hidden one, so a new subcommand gets its snapshot
/// without editing this test.
#[test]
fn help_of_every_command_and_subcommand() {
    let dir = tempfile::tempdir().expect("tmp");
    for program in ["bd-sync", "bd-hook", "bd-merge"] {
        let hidden = HIDDEN.iter().filter(|(p, _)| *p == program).map(|(_, sub)| vec![(*sub).to_owned()]);
        let mut pending: Vec<Vec<String>> = std::iter::once(Vec::new()).chain(hidden).collect();
        while let Some(path) = pending.pop() {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push("--help");
            let help = transcript(dir.path(), program, &args);
            assert!(help.contains("\nexit 0\n"), "{help}");
            for sub in subcommands(&help) {
                pending.push(path.iter().cloned().chain([sub]).collect());
            }
            let name = std::iter::once(program.to_owned()).chain(path).collect::<Vec<_>>().join("__");
            insta::assert_snapshot!(format!("help__{name}"), help);
        }
    }
}

const ISSUES: &str = concat!(
    concat!(
        r#"{"id":"bd-1","title":"Ship the release","status":"open","priority":1,"#,
        r#""issue_type":"epic","created_at":"2025-01-01T00:00:00Z","#,
        r#""updated_at":"2025-01-02T00:00:00Z","labels":["release"]}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-2","title":"Write the notes","status":"open","priority":2,"#,
        r#""issue_type":"task","assignee":"ann","created_at":"2025-01-01T00:00:00Z","#,
        r#""updated_at":"2025-01-02T00:00:00Z","dependencies":[{"issue_id":"bd-2","#,
        r#""depends_on_id":"bd-1","type":"parent-child"}]}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-3","title":"Fix the flaky test","status":"in_progress","priority":0,"#,
        r#""issue_type":"bug","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-a-very-long-identifier-4","title":"Tag the build","status":"open","#,
        r#""priority":1,"issue_type":"task","created_at":"2025-01-03T00:00:00Z","#,
        r#""updated_at":"2025-01-03T00:00:00Z","#,
        r#""dependencies":[{"issue_id":"bd-a-very-long-identifier-4","#,
        r#""depends_on_id":"bd-3","type":"blocks"},"#,
        r#"{"issue_id":"bd-a-very-long-identifier-4","depends_on_id":"external:other:x-1","#,
        r#""type":"blocks"},{"issue_id":"bd-a-very-long-identifier-4","#,
        r#""depends_on_id":"bd-gone","type":"related"}]}"#
    ),
    "\n",
    concat!(
        r#"{"id":"bd-5","title":"An agent bead","status":"open","priority":2,"#,
        r#""issue_type":"agent","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-02T00:00:00Z"}"#
    ),
    "\n",
);

#[test]
fn transcripts_of_the_everyday_commands() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    std::fs::create_dir_all(d.join(".beads")).expect("mkdir");
    std::fs::write(d.join(".beads/issues.jsonl"), ISSUES).expect("write");
    let db = d.join("cache.db");
    let db = db.to_str().expect("utf8");
    let mut all = String::new();
    for args in [
        vec!["status"],
        vec!["ready"],
        vec!["status"],
        vec!["ready", "--limit", "1"],
        vec!["ready", "--all-types"],
        vec!["blocked"],
        vec!["blocked", "--json"],
        vec!["show", "bd-2"],
        vec!["show", "bd-9"],
        vec!["check"],
        vec!["check", "--json"],
        vec!["check", "--strict"],
        vec!["import"],
        vec!["export"],
        vec!["ready", "--priority", "urgent"],
        vec!["frobnicate"],
    ] {
        let mut full = vec!["--db", db];
        full.extend(args);
        all.push_str(&transcript(d, "bd-sync", &full).replace(db, "[DB]"));
    }
    std::fs::write(d.join(".beads/issues.jsonl"), "{\"id\":\"bd-1\",\n<<<<<<< ours\n").expect("write");
    for args in [vec!["import"], vec!["check"], vec!["ready"]] {
        let mut full = vec!["--db", db];
        full.extend(args);
        all.push_str(&transcript(d, "bd-sync", &full).replace(db, "[DB]"));
    }
    insta::assert_snapshot!("everyday", all);
}

#[test]
fn transcript_of_install_check_and_uninstall() {
    let repo = crate::support::TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", ISSUES.as_bytes(), "issues");
    let d = repo.path();
    let mut all = String::new();
    for args in [vec!["install", "--dry-run"], vec!["install"], vec!["install"], vec!["check"], vec!["uninstall"], vec!["check"]] {
        all.push_str(&transcript(d, "bd-sync", &args));
    }
    // Where the binaries live differs per machine.
    let bins = crate::support::bin("bd-sync").parent().expect("dir").display().to_string();
    insta::assert_snapshot!("install", all.replace(&bins, "[BIN]"));
}

#[test]
fn transcripts_of_bd_merge_and_bd_hook() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let base = ISSUES.lines().take(3).map(|l| format!("{l}\n")).collect::<String>();
    let ours = base.replace(r#""status":"in_progress""#, r#""status":"closed","closed_at":"2025-02-01T00:00:00Z""#);
    let theirs = base.replace(r#""assignee":"ann""#, r#""assignee":"bob""#);
    for (name, content) in [("base.jsonl", &base), ("ours.jsonl", &ours), ("theirs.jsonl", &theirs)] {
        std::fs::write(d.join(name), content).expect("write");
    }
    std::fs::write(d.join("broken.jsonl"), "{\"id\":\"bd-1\",\n").expect("write");
    let mut all = String::new();
    for (program, args) in [
        ("bd-merge", vec!["diff", "base.jsonl", "ours.jsonl"]),
        ("bd-merge", vec!["diff", "--json", "base.jsonl", "theirs.jsonl"]),
        ("bd-merge", vec!["textconv", "ours.jsonl"]),
        ("bd-merge", vec!["-o", "-", "base.jsonl", "ours.jsonl", "theirs.jsonl"]),
        ("bd-merge", vec!["-o", "-", "base.jsonl", "broken.jsonl", "theirs.jsonl"]),
        ("bd-merge", vec!["base.jsonl", "missing.jsonl", "theirs.jsonl"]),
        ("bd-merge", vec!["diff", "base.jsonl"]),
        ("bd-hook", vec!["--id", "bd-1", "--dry-run", "--url", "http://127.0.0.1:9"]),
        ("bd-hook", vec!["--id", "bd-1", "--strict"]),
        ("bd-hook", vec!["--url", "not a url", "--id", "bd-1", "--strict"]),
    ] {
        all.push_str(&transcript(d, program, &args));
    }
    insta::assert_snapshot!("merge_and_hook", all);
}
