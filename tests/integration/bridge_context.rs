//! `bd-sync context [ID]` (docs/agents.md) on real repositories: the actor's issue in
//! progress by default (else the next ready one), the six sections in order under the byte
//! budget, `--json` untrimmed unless given a budget, hostile text escaped, and linear cost.

use crate::support::{hermetic, ours, TestRepo};

const ISSUES: &str = concat!(
    r#"{"id":"bd-e1","title":"The epic","status":"open","priority":1,"issue_type":"epic"}"#,
    "\n",
    concat!(
        r#"{"id":"bd-a1","title":"Parser","status":"in_progress","priority":1,"#,
        r#""assignee":"Ann","acceptance_criteria":"Handles every escape","#,
        r#""dependencies":[{"depends_on_id":"bd-e1","type":"parent-child"}],"#,
        r#""comments":[{"id":1,"author":"Ann","text":"Plan: rewrite the lexer","#,
        r#""created_at":"2025-11-01T10:00:00Z"},{"id":2,"author":"Ann","#,
        r#""text":"Checkpoint: lexer done\nparser next","created_at":"2025-11-02T10:00:00Z"}]}"#
    ),
    "\n",
    r#"{"id":"bd-b2","title":"Docs","status":"open","priority":2,"dependencies":[{"depends_on_id":"bd-a1","type":"blocks"}]}"#,
    "\n",
    r#"{"id":"bd-c3","title":"Release","status":"open","priority":3}"#,
    "\n",
);

fn world() -> TestRepo {
    let repo = TestRepo::new();
    repo.commit_file(".beads/issues.jsonl", ISSUES.as_bytes(), "the tracker");
    repo.commit_file("src/lexer.rs", b"// lexer\n", "Lexer for bd-a1\n\nBeads-Issue: bd-a1");
    repo.commit_file("src/parser.rs", b"// parser\n", "Parser skeleton (bd-a1)");
    repo.write("src/parser.rs", b"// parser, edited\n");
    repo
}

fn context(repo: &TestRepo, actor: Option<&str>, args: &[&str]) -> String {
    let mut cmd = ours("bd-sync");
    cmd.current_dir(repo.path()).env_remove("BD_ACTOR").env_remove("BEADS_ACTOR").arg("context").args(args);
    if let Some(a) = actor {
        cmd.env("BD_ACTOR", a);
    }
    let out = cmd.output().expect("run bd-sync context");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn the_actors_issue_in_six_sections_under_the_budget() {
    let repo = world();
    let text = context(&repo, Some("Ann"), &[]);
    insta::assert_snapshot!("context_of_the_issue_in_progress", text);
    assert!(text.len() <= 2048);
    let order: Vec<usize> = ["## Task", "## Checkpoints", "## Commits", "## Files", "## Dependencies", "## Next"]
        .iter()
        .map(|h| text.find(h).unwrap_or_else(|| panic!("{h} missing:\n{text}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "sections in order:\n{text}");
    assert!(
        text.contains("Checkpoint: lexer done parser next") && text.find("Checkpoint").unwrap_or(0) < text.find("Plan:").unwrap_or(0),
        "newest first:\n{text}"
    );
    assert!(text.contains("- src/parser.rs (uncommitted)") && text.contains("- src/lexer.rs"), "{text}");
    assert!(text.contains("- bd-b2 Docs"), "closing bd-a1 makes bd-b2 ready:\n{text}");
    // The same by id, and a partial id.
    assert_eq!(context(&repo, None, &["a1"]), text);
}

#[test]
fn without_work_in_progress_it_is_the_next_ready_issue() {
    let repo = world();
    let text = context(&repo, Some("Bob"), &[]);
    assert!(
        text.starts_with("## Task\nsuggested: nothing is in progress for you") && text.contains("\nbd-e1 [open P1] The epic"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&context(&repo, Some("Bob"), &["--json"])).expect("json");
    assert_eq!(json[0]["suggested"], true, "{json}");
    let claimed: serde_json::Value = serde_json::from_str(&context(&repo, Some("Ann"), &["--json"])).expect("json");
    assert!(claimed[0].get("suggested").is_none(), "the actor's own issue is no suggestion: {claimed}");
    // Two issues in progress: both, within one budget.
    let two = ISSUES.replace(
        r#""id":"bd-c3","title":"Release","status":"open""#,
        r#""id":"bd-c3","title":"Release","status":"in_progress","assignee":"Ann""#,
    );
    repo.write(".beads/issues.jsonl", two.as_bytes());
    let text = context(&repo, Some("Ann"), &["--budget", "600"]);
    assert!(text.contains("bd-a1 [in_progress") && text.contains("bd-c3 [in_progress"), "{text}");
    assert!(text.len() <= 600, "{}", text.len());
}

#[test]
fn huge_and_hostile_values_stay_within_the_budget_and_are_escaped() {
    let repo = world();
    let huge = "x".repeat(1 << 20);
    let comments: String = (0..500)
        .map(|i| {
            format!(
                r#"{{"id":{i},"author":"A\u001b[2J","text":"c{i} {huge_part}","created_at":"2025-11-03T00:00:00Z"}}"#,
                huge_part = &huge[..2000]
            )
        })
        .collect::<Vec<_>>()
        .join(",");
    let hostile = format!(
        concat!(
            r#"{{"id":"bd-h1","title":"T\u001b]0;owned\u0007","status":"in_progress","#,
            r#""priority":1,"assignee":"Ann","description":"{huge}","comments":[{comments}]}}"#
        ),
        huge = huge,
        comments = comments
    );
    repo.write(".beads/issues.jsonl", format!("{hostile}\n").as_bytes());
    repo.write("evil\u{1b}[31m\nname.rs", b"x");
    let text = context(&repo, Some("Ann"), &[]);
    assert!(text.len() <= 2048, "{}", text.len());
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "escaped: {text:?}");
    assert!(text.contains("more"), "lists that did not fit say how many were left out:\n{text}");
    let json = context(&repo, Some("Ann"), &["--json", "--budget", "4096"]);
    assert!(json.len() <= 4096, "{}", json.len());
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v[0]["task"]["id"], "bd-h1");
    let whole = context(&repo, Some("Ann"), &["--json"]);
    let v: serde_json::Value = serde_json::from_str(&whole).expect("json");
    assert_eq!(v[0]["task"]["description"].as_str().map(str::len), Some(1 << 20), "--json without a budget is whole");
}

/// Gathering a context reads the dependency graph once: 4x the issues costs well under 8x.
#[test]
fn a_context_costs_linear_time_in_the_issues() {
    let time = |n: usize| {
        let repo = TestRepo::new();
        let mut lines = String::new();
        for i in 0..n {
            let dep =
                if i > 0 { format!(r#","dependencies":[{{"depends_on_id":"bd-{}","type":"blocks"}}]"#, i - 1) } else { String::new() };
            let status = if i == 0 { "in_progress" } else { "open" };
            lines.push_str(&format!(r#"{{"id":"bd-{i}","title":"Issue {i}","status":"{status}","priority":2,"assignee":"Ann"{dep}}}"#));
            lines.push('\n');
        }
        repo.commit_file(".beads/issues.jsonl", lines.as_bytes(), "bd-0 tracker");
        let mut import = hermetic(crate::support::bin("bd-sync"));
        assert!(import.current_dir(repo.path()).arg("import").output().expect("import").status.success());
        context(&repo, Some("Ann"), &[]);
        let start = std::time::Instant::now();
        for _ in 0..3 {
            assert!(context(&repo, Some("Ann"), &[]).contains("bd-0 [in_progress"));
        }
        start.elapsed()
    };
    let small = time(5_000);
    let large = time(20_000);
    assert!(large < small * 8, "5k: {small:?}, 20k: {large:?}");
}

/// A 10 MB value (acceptance criteria) costs the block one cut line, and the whole value under
/// `--json`.
#[test]
fn a_ten_megabyte_value_is_cut_in_the_text_and_whole_in_json() {
    let repo = world();
    let big = "y".repeat(10 << 20);
    let line =
        format!(r#"{{"id":"bd-t1","title":"Big","status":"in_progress","priority":1,"assignee":"Ann","acceptance_criteria":"{big}"}}"#);
    repo.write(".beads/issues.jsonl", format!("{line}\n").as_bytes());
    let text = context(&repo, Some("Ann"), &[]);
    assert!(text.len() <= 2048 && text.contains("acceptance: yyy"), "{}", text.len());
    let v: serde_json::Value = serde_json::from_str(&context(&repo, Some("Ann"), &["--json"])).expect("json");
    assert_eq!(v[0]["task"]["acceptance_criteria"].as_str().map(str::len), Some(10 << 20));
}
