//! `bd-merge` driven by real git: `git merge`, `git rebase` and `git cherry-pick` in temporary
//! repositories with the driver registered through `git config` and `.gitattributes`.

use serde_json::Value;

use crate::support::{bd_merge, bd_sync, issue, jsonl, records, TestRepo};

const FILE: &str = ".beads/issues.jsonl";

/// main and feature both edit bd-1 (different fields) and each adds an issue.
fn diverged_repo(driver_extra: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.register_merge_driver(driver_extra);
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").line(), issue("bd-2").line(), issue("bd-3").line()]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(
        FILE,
        &jsonl(&[
            issue("bd-1").priority(0).updated("2025-11-01T12:00:00-08:00").line(),
            issue("bd-2").line(),
            issue("bd-3").line(),
            issue("bd-4").extra(r#""labels":["feature"]"#).line(),
        ]),
        "feature: bd-1 priority 0, add bd-4",
    );
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(
        FILE,
        &jsonl(&[
            issue("bd-0").line(),
            issue("bd-1").title("Renamed on main").updated("2025-11-01T11:00:00-08:00").line(),
            issue("bd-2").line(),
            issue("bd-3").line(),
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
    // Merged from both sides: one tick after the later side, so importers take it (docs/merge-rules.md, "The merge rules, in plain words").
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
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").line()]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").title("Feature title").line()]), "feature title");
    repo.git(&["checkout", "-q", "main"]);
    repo.commit_file(FILE, &jsonl(&[issue("bd-1").title("Main title").line()]), "main title");
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
    let out = crate::support::run(crate::support::ours("bd-merge").arg(dir.path().join("missing")).arg(&ours).arg(&ours));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing"), "names the file");
    assert_eq!(std::fs::read(&ours).expect("read"), b"{\"id\":\"a\"}\n");
}

#[test]
fn old_bd_four_argument_form_still_works() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("base"), jsonl(&[issue("bd-1").line()])).expect("w");
    std::fs::write(p("ours"), jsonl(&[issue("bd-1").title("Ours bd-1").line()])).expect("w");
    std::fs::write(p("theirs"), jsonl(&[issue("bd-1").priority(1).line()])).expect("w");
    // bd's config: `bd merge %A %O %A %B`
    let out = crate::support::run(crate::support::ours("bd-merge").arg(p("ours")).arg(p("base")).arg(p("ours")).arg(p("theirs")));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = &records(&std::fs::read(p("ours")).expect("r"))[0];
    assert_eq!((rec["title"].as_str(), rec["priority"].as_i64()), (Some("Ours bd-1"), Some(1)));
}

/// Git before 2.44 passes the placeholders it does not know (`%S`, `%X`, `%Y`, older ones `%P`
/// and `%L` too) as literal text. The inputs differ, so a merge that took them literally would
/// show: `-l %L` is not a number (exit 2), `%X`/`%Y` would label the conflict markers and `%P`
/// would name the file in the report.
#[test]
fn literal_placeholders_from_old_git_are_ignored() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = |n: &str| dir.path().join(n);
    let later = "2025-11-02T10:00:00-08:00";
    std::fs::write(p("base"), jsonl(&[issue("bd-1").line(), issue("bd-2").line()])).expect("w");
    // bd-1: one field per side (merges clean); bd-2: both retitle it (a conflict, in markers).
    let ours = jsonl(&[issue("bd-1").title("Ours bd-1").updated(later).line(), issue("bd-2").title("Ours bd-2").updated(later).line()]);
    let theirs = jsonl(&[issue("bd-1").priority(0).updated(later).line(), issue("bd-2").title("Theirs bd-2").updated(later).line()]);
    std::fs::write(p("ours"), ours).expect("w");
    std::fs::write(p("theirs"), theirs).expect("w");
    let out = bd_merge(
        dir.path(),
        &[
            p("base").to_str().expect("utf8"),
            p("ours").to_str().expect("utf8"),
            p("theirs").to_str().expect("utf8"),
            "--conflict",
            "markers",
            // Every placeholder as old git passes it: literally.
            "-l",
            "%L",
            "-p",
            "%P",
            "-s",
            "%S",
            "-x",
            "%X",
            "-y",
            "%Y",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "one record left in markers:\n{stderr}");
    let merged = String::from_utf8(std::fs::read(p("ours")).expect("read")).expect("utf8");
    let lines: Vec<&str> = merged.lines().collect();
    assert_eq!(lines.len(), 6, "bd-1 merged, bd-2 in markers:\n{merged}");
    let bd1: Value = serde_json::from_str(lines[0]).expect("bd-1 parses");
    assert_eq!((bd1["title"].as_str(), bd1["priority"].as_u64()), (Some("Ours bd-1"), Some(0)), "{merged}");
    // The default labels and the 7-character markers, not the literal placeholders.
    assert_eq!(lines[1], "<<<<<<< ours", "{merged}");
    assert!(lines[2].contains("Ours bd-2"), "{merged}");
    assert_eq!(lines[3], "=======", "{merged}");
    assert!(lines[4].contains("Theirs bd-2"), "{merged}");
    assert_eq!(lines[5], ">>>>>>> theirs", "{merged}");
    assert!(!merged.contains('%'), "{merged}");
    // Without %P the report names the ours file.
    assert!(stderr.contains(&p("ours").display().to_string()), "{stderr}");
    assert!(!stderr.contains('%'), "{stderr}");
}

#[test]
fn two_branches_of_a_bd_1_0_export_and_its_interactions_log_merge_cleanly() {
    let repo = TestRepo::new();
    let header = |c: &str| format!(r#"{{"_schema":"beads-jsonl/1","_dolt_branch":"main","_dolt_commit":"{c}","_sort":"stable-v1"}}"#);
    let issue = |id: &str, title: &str, prio: u8, at: &str| {
        format!(
            concat!(
                r#"{{"_type":"issue","id":"{id}","title":"{title}","status":"open","#,
                r#""priority":{prio},"issue_type":"task","created_at":"2026-01-01T09:00:00Z","#,
                r#""updated_at":"{at}","dependency_count":0,"dependent_count":0,"comment_count":0}}"#
            ),
            id = id,
            title = title,
            prio = prio,
            at = at
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
    let out = bd_sync(repo.path(), &["install", "--local"]);
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

/// Reordering (docs/trackers.md): bd's export moves lines between runs. Two branches that only reordered
/// the file merge through the driver as a no-op: the merge commit's file is main's, byte for byte.
#[test]
fn git_merge_of_two_reorders_is_a_no_op() {
    let repo = TestRepo::new();
    repo.register_merge_driver("");
    let at = "2026-03-02T10:00:00-08:00";
    let lines = [
        issue("bd-c3").title("C").updated(at).line(),
        issue("bd-a1").title("A").updated(at).line(),
        issue("bd-b2").title("B").updated(at).line(),
        r#"{"_type":"memory","key":"style","value":"tabs"}"#.to_owned(),
        r#"{"_type":"memory","key":"deploy","value":"step one"}"#.to_owned(),
    ];
    let pick = |order: [usize; 5]| jsonl(&order.map(|i| lines[i].clone()));
    repo.commit_file(FILE, &pick([0, 1, 2, 3, 4]), "base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.commit_file(FILE, &pick([2, 0, 1, 4, 3]), "feature reorders");
    repo.git(&["checkout", "-q", "main"]);
    let main = pick([1, 2, 0, 3, 4]);
    repo.commit_file(FILE, &main, "main reorders");
    assert!(repo.git_output(&["merge", "--no-edit", "feature"]).status.success(), "clean");
    assert_eq!(String::from_utf8_lossy(&repo.read(FILE)), String::from_utf8_lossy(&main));
    assert_eq!(repo.git(&["diff", "HEAD^1", "HEAD", "--", FILE]), "", "the merge changed nothing");
}
