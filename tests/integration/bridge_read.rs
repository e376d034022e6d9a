//! Reading the git–issue bridge from the command line (docs/agents.md): `bd-sync log
//! --commits ID` lists the code commits linked to an issue, `show ID` names the last five, and
//! the switch (`BEADS_BRIDGE=0`, `git config beads.bridge false`) turns both off. Real
//! repositories, real commits, the real binary.

use crate::support::{bd_sync, TestRepo};

fn repo_with_issues() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(
        ".beads/issues.jsonl",
        b"{\"id\":\"bd-a1\",\"title\":\"One\",\"status\":\"in_progress\",\"priority\":1}\n{\"id\":\"bd-b2\",\"title\":\"Two\",\"status\":\
            \"open\",\"priority\":2}\n",
        "the tracker",
    );
    repo
}

fn commit(repo: &TestRepo, message: &str) {
    let file = repo.path().join(".git/test-message");
    std::fs::write(&file, message).expect("message");
    repo.git(&["commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", file.to_str().expect("utf8")]);
}

fn stdout(repo: &TestRepo, args: &[&str]) -> String {
    let out = bd_sync(repo.path(), args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn log_commits_lists_trailer_and_mention_links_newest_first() {
    let repo = repo_with_issues();
    commit(&repo, "Parser rewrite\n\nBeads-Issue: bd-a1\n");
    commit(&repo, "Unrelated: bd-sync and pre-commit words\n");
    commit(&repo, "Follow-up for bd-a1.\n");
    let text = stdout(&repo, &["log", "--commits", "bd-a1"]);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows[0].contains("mention") && rows[0].ends_with("Follow-up for bd-a1."), "{text}");
    assert!(rows[1].contains("trailer") && rows[1].ends_with("Parser rewrite"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&repo, &["log", "--commits", "bd-a1", "--json"])).expect("json");
    assert_eq!(json.as_array().map(Vec::len), Some(2));
    assert_eq!(json[1]["how"], "trailer");
    assert_eq!(json[1]["commit"].as_str().map(str::len), Some(40));
    // A partial id resolves as everywhere.
    assert_eq!(stdout(&repo, &["log", "--commits", "a1"]), text);
    // The field history names them after its own entries.
    assert!(stdout(&repo, &["log", "bd-a1"]).contains("code commits linked to bd-a1 (2):"));
    let with_range = bd_sync(repo.path(), &["log", "--commits", "bd-a1", "HEAD~1.."]);
    assert_eq!(with_range.status.code(), Some(2), "--commits takes no range");
}

#[test]
fn show_names_the_last_five_and_escapes_a_hostile_subject() {
    let repo = repo_with_issues();
    for i in 0..6 {
        commit(&repo, &format!("step {i} of bd-a1\n"));
    }
    commit(&repo, "\u{1b}]0;owned\u{7}bd-a1 \u{1b}[2J\n");
    let text = stdout(&repo, &["show", "bd-a1"]);
    assert!(text.contains("COMMITS (last 5)"), "{text}");
    assert!(!text.contains('\u{1b}'), "no raw escape reaches the terminal: {text:?}");
    assert!(text.contains("\\u{1b}]0;owned"), "{text}");
    assert!(!text.contains("step 0 of"), "only the last five: {text}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&repo, &["show", "bd-a1", "--json"])).expect("json");
    assert_eq!(json[0]["commits"].as_array().map(Vec::len), Some(5));
    let other: serde_json::Value = serde_json::from_str(&stdout(&repo, &["show", "bd-b2", "--json"])).expect("json");
    assert_eq!(other[0]["commits"], serde_json::json!([]));
}

#[test]
fn the_switch_turns_the_bridge_off_per_clone_and_per_process() {
    let repo = repo_with_issues();
    commit(&repo, "Fix bd-a1\n");
    let mut env_off = crate::support::ours("bd-sync");
    env_off.current_dir(repo.path()).env("BEADS_BRIDGE", "0").args(["log", "--commits", "bd-a1"]);
    let out = env_off.output().expect("run");
    assert!(out.status.success() && out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bridge is off"));
    let check = |repo: &TestRepo| String::from_utf8_lossy(&bd_sync(repo.path(), &["check", "--json"]).stdout).into_owned();
    assert!(!check(&repo).contains("bridge-off"), "on is the default and says nothing");
    repo.git(&["config", "beads.bridge", "false"]);
    assert!(check(&repo).contains("\"bridge-off\""), "check reports the switch: {}", check(&repo));
    assert_eq!(stdout(&repo, &["log", "--commits", "bd-a1"]), "");
    assert!(!stdout(&repo, &["show", "bd-a1"]).contains("COMMITS"));
    assert!(!repo.path().join(".git/beads/links").exists(), "off means no index is written either");
    repo.git(&["config", "beads.bridge", "true"]);
    assert!(stdout(&repo, &["log", "--commits", "bd-a1"]).contains("Fix bd-a1"));
}
