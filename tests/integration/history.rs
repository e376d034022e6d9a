//! Reading what changed: `bd-merge diff`, `bd-sync diff`, `bd-sync log`, and git's own `diff` and
//! `log -p` through the text conversion `bd-sync install` sets. Real git history in a temporary
//! repository: scripted commits, a branch and a merge commit, a rename from `beads.jsonl` to
//! `issues.jsonl`.

use crate::support::{bd_sync_ok, bin, issue, jsonl, ours, run, shared_file, TestRepo};

/// The history tests' issue: a description, labels (JSON strings joined by commas), no type.
fn bead(id: &str, status: &str, labels: &str, description: &str) -> String {
    issue(id)
        .title(&format!("Title of {id}"))
        .description(description)
        .status(status)
        .no_type()
        .at("2025-01-01T00:00:00Z")
        .extra(&format!(r#""labels":[{labels}]"#))
        .line()
}

/// History: create (beads.jsonl) -> close a -> [branch: label b] + [main: edit a's description]
/// -> merge -> rename to issues.jsonl -> add c, delete b.
fn scripted_history() -> TestRepo {
    let repo = TestRepo::new();
    let driver = format!("{} %O %A %B -l %L -p %P -s %S -x %X -y %Y", bin("bd-merge").display());
    repo.git(&["config", "merge.beads.driver", &driver]);
    repo.commit_file(".gitattributes", b".beads/beads.jsonl merge=beads\n.beads/issues.jsonl merge=beads\n", "attributes");
    let desc = "First paragraph.\nSecond line.\nThird line.";
    repo.commit_file(".beads/beads.jsonl", &jsonl(&[bead("a", "open", "", desc), bead("b", "open", r#""x""#, "")]), "create");
    repo.commit_file(".beads/beads.jsonl", &jsonl(&[bead("a", "closed", "", desc), bead("b", "open", r#""x""#, "")]), "close a");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.commit_file(".beads/beads.jsonl", &jsonl(&[bead("a", "closed", "", desc), bead("b", "open", r#""x","y""#, "")]), "label b");
    repo.git(&["checkout", "-q", "main"]);
    let edited = "First paragraph.\nSecond line, edited.\nThird line.";
    repo.commit_file(".beads/beads.jsonl", &jsonl(&[bead("a", "closed", "", edited), bead("b", "open", r#""x""#, "")]), "edit a");
    // Neighbouring lines changed on each side: git's line merge would conflict, bd-merge merges.
    repo.git(&["merge", "-q", "--no-edit", "topic"]);
    repo.git(&["mv", ".beads/beads.jsonl", ".beads/issues.jsonl"]);
    repo.git(&["commit", "-q", "-m", "rename"]);
    repo.commit_file(".beads/issues.jsonl", &jsonl(&[bead("a", "closed", "", edited), bead("c", "open", "", "")]), "add c, delete b");
    repo
}

#[test]
fn log_follows_one_issue_through_a_branch_a_merge_and_a_rename() {
    let repo = scripted_history();
    let entries: serde_json::Value = serde_json::from_str(&bd_sync_ok(repo.path(), &["--json", "log", "a"])).expect("json");
    let subjects: Vec<&str> = entries.as_array().expect("array").iter().map(|e| e["subject"].as_str().expect("subject")).collect();
    assert_eq!(subjects, ["edit a", "close a", "create"], "newest first; the merge and the rename changed nothing of a");
    assert_eq!(entries[1]["change"]["fields"][0], serde_json::json!({"kind": "scalar", "field": "status", "old": "open", "new": "closed"}));
    assert_eq!(entries[0]["change"]["fields"][0]["kind"], "text");
    assert_eq!(entries[2]["change"]["change"], "added");
    assert_eq!(entries[0]["author"], "Test Author");
    let b: serde_json::Value = serde_json::from_str(&bd_sync_ok(repo.path(), &["--json", "log", "b"])).expect("json");
    let b_subjects: Vec<&str> = b.as_array().expect("array").iter().map(|e| e["subject"].as_str().expect("subject")).collect();
    assert_eq!(b_subjects, ["add c, delete b", "label b", "create"]);
    assert_eq!(b[1]["change"]["fields"][0], serde_json::json!({"kind": "set", "field": "labels", "added": ["y"], "removed": []}));
    assert_eq!(b[0]["change"]["change"], "removed");
    let limited: serde_json::Value = serde_json::from_str(&bd_sync_ok(repo.path(), &["--json", "log", "a", "-1"])).expect("json");
    assert_eq!(limited.as_array().expect("array").len(), 0, "a range limits the commits looked at");
    insta::assert_snapshot!(
        "log_a",
        bd_sync_ok(repo.path(), &["log", "a"]).lines().filter(|l| !l.starts_with("commit ")).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn diff_between_revisions_and_against_the_working_file() {
    let repo = scripted_history();
    let report: serde_json::Value = serde_json::from_str(&bd_sync_ok(repo.path(), &["--json", "diff", "HEAD~1..HEAD"])).expect("json");
    let changes: Vec<(&str, &str)> = report["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|i| (i["id"].as_str().expect("id"), i["change"].as_str().expect("change")))
        .collect();
    assert_eq!(changes, [("c", "added"), ("b", "removed")], "across the rename, by revision");
    assert!(bd_sync_ok(repo.path(), &["diff"]).is_empty(), "a clean working file");
    let now = String::from_utf8(repo.read(".beads/issues.jsonl")).expect("utf8").replace(r#""status":"open""#, r#""status":"in_progress""#);
    repo.write(".beads/issues.jsonl", now.as_bytes());
    insta::assert_snapshot!("diff_working", bd_sync_ok(repo.path(), &["diff"]));
    insta::assert_snapshot!("diff_since_create", bd_sync_ok(repo.path(), &["diff", "HEAD~5"]));
}

#[test]
fn git_diff_and_log_show_fields_after_install() {
    let repo = scripted_history();
    bd_sync_ok(repo.path(), &["install"]);
    repo.git(&["add", ".gitattributes"]);
    repo.git(&["commit", "-q", "-m", "attributes"]);
    let now = String::from_utf8(repo.read(".beads/issues.jsonl")).expect("utf8").replace(r#""status":"open""#, r#""status":"in_progress""#);
    repo.write(".beads/issues.jsonl", now.as_bytes());
    let diff = repo.git(&["diff"]);
    assert!(diff.contains("-c status: open\n+c status: in_progress\n"), "{diff}");
    let log = repo.git(&["log", "-p", "-n", "1", "--format=%s", "HEAD~1", "--", ".beads/issues.jsonl"]);
    assert!(log.contains("+c title: Title of c") && log.contains("-b labels: x"), "{log}");
    // A re-formatted record converts to the same text: no change shown.
    repo.git(&["checkout", "--", ".beads/issues.jsonl"]);
    let reformatted = String::from_utf8(repo.read(".beads/issues.jsonl")).expect("utf8").replacen(r#""priority":2"#, r#""priority": 2"#, 2);
    repo.write(".beads/issues.jsonl", reformatted.as_bytes());
    let quiet = repo.git(&["diff"]);
    let changed: Vec<&str> =
        quiet.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++") && !l.starts_with("---")).collect();
    assert!(changed.is_empty(), "{quiet}");
    bd_sync_ok(repo.path(), &["uninstall"]);
    assert!(repo.git_output(&["config", "--get", "diff.beads.textconv"]).stdout.is_empty(), "uninstall removes the text conversion");
}

#[test]
fn bd_merge_diff_on_the_real_beads_file_and_an_edited_copy() {
    let Some(real) = shared_file("data/beads-real.jsonl") else { return };
    let content = std::fs::read_to_string(&real).expect("read");
    let mut lines: Vec<String> = content.lines().map(str::to_owned).collect();
    let open: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.contains(r#""status":"open""#)).map(|(i, _)| i).take(2).collect();
    let first_id = serde_json::from_str::<serde_json::Value>(&lines[open[0]]).expect("json")["id"].as_str().expect("id").to_owned();
    lines[open[0]] = lines[open[0]].replacen(r#""status":"open""#, r#""status":"closed""#, 1);
    // The second only re-formatted: a space after the first colon.
    lines[open[1]] = lines[open[1]].replacen(r#""id":"#, r#""id": "#, 1);
    let removed = serde_json::from_str::<serde_json::Value>(&lines[7]).expect("json")["id"].as_str().expect("id").to_owned();
    lines.remove(7);
    let dir = tempfile::tempdir().expect("tmp");
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, lines.join("\n") + "\n").expect("write");
    let out = run(ours("bd-merge").args(["diff", "--json"]).arg(&real).arg(&edited));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let issues = v["issues"].as_array().expect("issues");
    assert_eq!(issues.len(), 3, "{v}");
    assert_eq!(issues[0]["id"], first_id.as_str());
    assert_eq!(issues[0]["fields"], serde_json::json!([{"kind": "scalar", "field": "status", "old": "open", "new": "closed"}]));
    assert_eq!(issues[1]["change"], "reformatted");
    assert_eq!((issues[2]["id"].as_str(), issues[2]["change"].as_str()), (Some(removed.as_str()), Some("removed")));
}

#[test]
fn bd_merge_diff_as_git_external_diff() {
    let repo = scripted_history();
    repo.git(&["config", "diff.beads.command", &format!("{} diff", bin("bd-merge").display())]);
    repo.write(".gitattributes", b".beads/issues.jsonl merge=beads diff=beads\n");
    let now = String::from_utf8(repo.read(".beads/issues.jsonl")).expect("utf8").replace(r#""status":"open""#, r#""status":"closed""#);
    repo.write(".beads/issues.jsonl", now.as_bytes());
    let out = repo.git(&["diff", "--", ".beads/issues.jsonl"]);
    assert_eq!(out, "diff --beads a/.beads/issues.jsonl b/.beads/issues.jsonl\n~ c \"Title of c\"\n    status: open -> closed\n");
}
