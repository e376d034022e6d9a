//! `bd-merge` driven by real git: `git merge`, `git rebase` and `git cherry-pick` in temporary
//! repositories with the driver registered through `git config` and `.gitattributes`.

use serde_json::Value;

use crate::support::{bin, hermetic, run, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

fn issue(id: &str, extra: &str) -> String {
    format!(
        r#"{{"id":"{id}","title":"Issue {id}","status":"open","priority":2,"issue_type":"task","created_at":"2025-11-01T10:00:00-08:00","updated_at":"2025-11-01T10:00:00-08:00"{extra}}}"#
    )
}

fn file(lines: &[String]) -> Vec<u8> {
    lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
}

fn records(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes).lines().map(|l| serde_json::from_str(l).expect("merged line parses")).collect()
}

/// main and feature both edit bd-1 (different fields) and each adds an issue.
fn diverged_repo(driver_extra: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.register_merge_driver(driver_extra);
    repo.commit_file(FILE, &file(&[issue("bd-1", ""), issue("bd-2", ""), issue("bd-3", "")]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(
        FILE,
        &file(&[
            issue("bd-1", "").replace(r#""priority":2"#, r#""priority":0"#).replace("10:00:00-08:00\"}", "12:00:00-08:00\"}"),
            issue("bd-2", ""),
            issue("bd-3", ""),
            issue("bd-4", r#","labels":["feature"]"#),
        ]),
        "feature: bd-1 priority 0, add bd-4",
    );
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(
        FILE,
        &file(&[
            issue("bd-0", ""),
            issue("bd-1", "").replace("Issue bd-1", "Renamed on main").replace("10:00:00-08:00\"}", "11:00:00-08:00\"}"),
            issue("bd-2", ""),
            issue("bd-3", ""),
        ]),
        "main: rename bd-1, add bd-0",
    );
    repo
}

fn assert_fully_merged(bytes: &[u8]) {
    let recs = records(bytes);
    let ids: Vec<&str> = recs.iter().map(|r| r["id"].as_str().expect("id")).collect();
    assert_eq!(ids, ["bd-0", "bd-1", "bd-2", "bd-3", "bd-4"]);
    assert_eq!(recs[1]["title"], "Renamed on main");
    assert_eq!(recs[1]["priority"], 0);
    // Merged from both sides: one tick after the later side, so importers take it (SPEC §2 (b)).
    assert_eq!(recs[1]["updated_at"], "2025-11-01T12:00:01-08:00");
    assert_eq!(recs[4]["labels"][0], "feature");
}

#[test]
fn git_merge_of_different_fields_of_the_same_issue_is_clean_and_keeps_every_field() {
    let repo = diverged_repo("");
    let out = repo.git_output(&["merge", "-q", "--no-edit", "feature"]);
    assert!(out.status.success(), "merge failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_fully_merged(&repo.read(FILE));
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn git_rebase_replays_through_the_driver() {
    let repo = diverged_repo("");
    repo.git(&["checkout", "-q", "feature"]);
    let out = repo.git_output(&["rebase", "-q", "main"]);
    assert!(out.status.success(), "rebase failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_fully_merged(&repo.read(FILE));
}

#[test]
fn git_cherry_pick_goes_through_the_driver() {
    let repo = diverged_repo("");
    let out = repo.git_output(&["cherry-pick", "feature"]);
    assert!(out.status.success(), "cherry-pick failed: {}", String::from_utf8_lossy(&out.stderr));
    assert_fully_merged(&repo.read(FILE));
}

#[test]
fn conflict_markers_policy_makes_git_report_the_conflict() {
    let repo = TestRepo::new();
    repo.register_merge_driver(" --conflict markers");
    repo.git(&["config", "merge.conflictStyle", "diff3"]);
    repo.commit_file(FILE, &file(&[issue("bd-1", "")]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &file(&[issue("bd-1", "").replace("Issue bd-1", "Feature title")]), "feature title");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &file(&[issue("bd-1", "").replace("Issue bd-1", "Main title")]), "main title");
    let out = repo.git_output(&["merge", "--no-edit", "feature"]);
    assert!(!out.status.success(), "git must see the conflict");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("CONFLICT (content): Merge conflict in {FILE}")), "{stdout}");
    let text = String::from_utf8(repo.read(FILE)).expect("utf8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "<<<<<<< HEAD");
    assert!(lines[1].contains("Main title"));
    assert!(lines[2].starts_with("||||||| "), "diff3 style shows the base: {text}");
    assert!(lines[3].contains("Issue bd-1"));
    assert_eq!(lines[4], "=======");
    assert!(lines[5].contains("Feature title"));
    assert_eq!(lines[6], ">>>>>>> feature");
    assert!(repo.git(&["diff", "--name-only", "--diff-filter=U"]).contains(FILE));
}

#[test]
fn bd_merge_0_falls_back_to_a_plain_line_merge() {
    let repo = diverged_repo("");
    let driver = repo.git(&["config", "merge.beads.driver"]);
    repo.git(&["config", "merge.beads.driver", &format!("BD_MERGE=0 {}", driver.trim())]);
    let out = repo.git_output(&["merge", "--no-edit", "feature"]);
    assert!(!out.status.success(), "a line merge of the same line conflicts");
    let text = String::from_utf8(repo.read(FILE)).expect("utf8");
    assert!(text.contains("<<<<<<< "), "{text}");
}

#[test]
fn unreadable_input_exits_2_and_leaves_ours_alone() {
    let dir = tempfile::tempdir().expect("tmp");
    let ours = dir.path().join("ours.jsonl");
    std::fs::write(&ours, b"{\"id\":\"a\"}\n").expect("write");
    let out = crate::support::run(
        crate::support::hermetic(crate::support::bin("bd-merge")).arg(dir.path().join("missing")).arg(&ours).arg(&ours),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"), "names the file");
    assert_eq!(std::fs::read(&ours).expect("read"), b"{\"id\":\"a\"}\n");
}

#[test]
fn old_bd_four_argument_form_still_works() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("base"), file(&[issue("bd-1", "")])).expect("w");
    std::fs::write(p("ours"), file(&[issue("bd-1", "").replace("Issue", "Ours")])).expect("w");
    std::fs::write(p("theirs"), file(&[issue("bd-1", "").replace(r#""priority":2"#, r#""priority":1"#)])).expect("w");
    // bd's config: `bd merge %A %O %A %B`
    let out = crate::support::run(
        crate::support::hermetic(crate::support::bin("bd-merge")).arg(p("ours")).arg(p("base")).arg(p("ours")).arg(p("theirs")),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = &records(&std::fs::read(p("ours")).expect("r"))[0];
    assert_eq!((rec["title"].as_str(), rec["priority"].as_i64()), (Some("Ours bd-1"), Some(1)));
}

#[test]
fn literal_placeholders_from_old_git_are_ignored() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = |n: &str| dir.path().join(n);
    for n in ["base", "ours", "theirs"] {
        std::fs::write(p(n), file(&[issue("bd-1", "")])).expect("w");
    }
    let out = crate::support::run(
        crate::support::hermetic(crate::support::bin("bd-merge"))
            .arg(p("base"))
            .arg(p("ours"))
            .arg(p("theirs"))
            .args(["-l", "7", "-p", "x.jsonl", "-s", "%S", "-x", "%X", "-y", "%Y"]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn two_branches_of_a_bd_1_0_export_and_its_interactions_log_merge_cleanly() {
    let repo = TestRepo::new();
    let header = |c: &str| format!(r#"{{"_schema":"beads-jsonl/1","_dolt_branch":"main","_dolt_commit":"{c}","_sort":"stable-v1"}}"#);
    let issue = |id: &str, title: &str, prio: u8, at: &str| {
        format!(
            r#"{{"_type":"issue","id":"{id}","title":"{title}","status":"open","priority":{prio},"issue_type":"task","created_at":"2026-01-01T09:00:00Z","updated_at":"{at}","dependency_count":0,"dependent_count":0,"comment_count":0}}"#
        )
    };
    let memory = |k: &str, v: &str| format!(r#"{{"_type":"memory","key":"{k}","value":"{v}"}}"#);
    let interaction = |n: u32| format!(r#"{{"id":"int-{n}","kind":"tool_call","created_at":"2026-01-0{n}T00:00:00Z"}}"#);
    let lines = |ls: &[String]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    let t0 = "2026-01-01T09:00:00Z";
    // One commit with both files.
    let commit = |issues: &[String], log: &[String], message: &str| {
        repo.write(".beads/interactions.jsonl", lines(log).as_bytes());
        repo.write(FILE, lines(issues).as_bytes());
        repo.git(&["add", FILE, ".beads/interactions.jsonl"]);
        repo.git(&["commit", "-q", "-m", message]);
    };
    commit(
        &[header("c0"), issue("bd-1", "One", 2, t0), issue("bd-2", "Two", 2, t0), memory("deploy", "step one\\nstep two\\nstep three\\n")],
        &[interaction(1)],
        "seed",
    );
    let out = run(hermetic(bin("bd-sync")).current_dir(repo.path()).args(["install", "--local"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    repo.git(&["checkout", "-q", "-b", "feature"]);
    commit(
        &[
            header("c2"),
            issue("bd-1", "One", 0, "2026-01-02T00:00:00Z"),
            issue("bd-2", "Two", 2, t0),
            memory("deploy", "step one\\nstep two\\nstep three, theirs\\n"),
            memory("feature", "yes"),
        ],
        &[interaction(1), interaction(3)],
        "feature: priority, memory, log",
    );
    repo.git(&["checkout", "-q", "main"]);
    commit(
        &[
            header("c1"),
            issue("bd-1", "One, renamed on main", 2, "2026-01-03T00:00:00Z"),
            issue("bd-2", "Two", 2, t0),
            memory("deploy", "step one, ours\\nstep two\\nstep three\\n"),
        ],
        &[interaction(1), interaction(2)],
        "main: title, memory, log",
    );

    let out = repo.git_output(&["merge", "--no-edit", "feature"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("CONFLICT") && !said.contains("line merge"), "merged field by field, no fallback: {said}");
    let merged = String::from_utf8(repo.read(FILE)).expect("utf8");
    let out_lines: Vec<&str> = merged.lines().collect();
    assert!(out_lines[0].starts_with(r#"{"_schema":"beads-jsonl/1""#), "header first: {merged}");
    assert!(
        out_lines[1].contains("One, renamed on main") && out_lines[1].contains(r#""priority":0"#),
        "both issue edits: {}",
        out_lines[1]
    );
    assert!(out_lines[1].contains("2026-01-03T00:00:01Z"), "one tick newer than both sides: {}", out_lines[1]);
    assert_eq!(out_lines[3], memory("deploy", "step one, ours\\nstep two\\nstep three, theirs\\n"), "both memory edits");
    assert_eq!(out_lines[4], memory("feature", "yes"));
    let log = String::from_utf8(repo.read(".beads/interactions.jsonl")).expect("utf8");
    assert_eq!(log, lines(&[interaction(1), interaction(2), interaction(3)]), "the log keeps every record once");
}
