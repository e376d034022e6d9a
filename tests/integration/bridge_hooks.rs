//! Commits linked to their issue by our commit hooks (docs/agents.md): real git
//! repositories, real `git commit` with `-m`, an editor, amends, merges, squashes and
//! cherry-picks, the hooks `bd-sync install` writes, and the real br for the opt-in commit
//! comment and an agent's whole session.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::managers::Repo;
use crate::support::{bd_sync_ok, issue, real_br, run};

const FILE: &str = ".beads/issues.jsonl";

/// An installed repository whose issues file holds `issues` (one JSON line each).
fn installed(issues: &[String]) -> Repo {
    let repo = Repo::new(&[]);
    repo.write(FILE, &(issues.join("\n") + "\n"));
    repo.ok("git", &["add", FILE]);
    repo.ok("git", &["commit", "-q", "-m", "issues"]);
    let out = repo.sync(&["install"]);
    assert!(out.status.success(), "install: {}", String::from_utf8_lossy(&out.stderr));
    repo
}

fn mine(id: &str, actor: &str) -> String {
    let actor = serde_json::to_string(actor).expect("a string serialises");
    issue(id).status("in_progress").extra(&format!("\"assignee\":{actor}")).line()
}

/// `git commit` with `args`, as `actor`, with `env` set; returns git's output.
fn commit(repo: &Repo, actor: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = repo.cmd("git");
    cmd.env("BD_ACTOR", actor);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd.args(["commit", "-q", "--allow-empty"]).args(args))
}

fn committed(out: &Output) -> String {
    assert!(out.status.success(), "the commit failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `Beads-Issue` values of HEAD's message, as git parses its trailers.
fn trailers(repo: &Repo) -> Vec<String> {
    let message = head_message(repo);
    let file = repo.path().join(".git/test-head-message");
    std::fs::write(&file, &message).expect("write");
    let parsed = repo.ok("git", &["interpret-trailers", "--parse", file.to_str().expect("utf8")]);
    parsed.lines().filter_map(|l| l.strip_prefix("Beads-Issue: ")).map(str::to_owned).collect()
}

fn head_message(repo: &Repo) -> String {
    repo.ok("git", &["log", "-1", "--format=%B"])
}

/// An editor that writes `text` as the message (keeping git's comment lines below it).
fn editor(text: &str) -> String {
    format!("f() {{ {{ printf '%s\\n' '{text}'; cat \"$1\"; }} > \"$1.new\" && mv \"$1.new\" \"$1\"; }}; f")
}

#[test]
fn a_commit_names_the_actors_one_issue_with_m_with_the_editor_and_once_through_amends() {
    let repo = installed(&[mine("bd-a1", "Alice"), issue("bd-b2").line()]);
    committed(&commit(&repo, "Alice", &[], &["-m", "Parser rewrite"]));
    assert_eq!(trailers(&repo), ["bd-a1"], "-m: {}", head_message(&repo));
    committed(&commit(&repo, "Alice", &[("GIT_EDITOR", &editor("Written in the editor"))], &[]));
    assert_eq!(trailers(&repo), ["bd-a1"], "the editor: {}", head_message(&repo));
    assert!(head_message(&repo).starts_with("Written in the editor\n"), "{}", head_message(&repo));
    committed(&commit(&repo, "Alice", &[], &["--amend", "--no-edit"]));
    assert_eq!(trailers(&repo), ["bd-a1"], "amend --no-edit: never twice");
    committed(&commit(&repo, "Alice", &[("GIT_EDITOR", "true")], &["--amend"]));
    assert_eq!(trailers(&repo), ["bd-a1"], "amend in the editor: never twice");
    // A message that names the issue already is a link as it is.
    committed(&commit(&repo, "Alice", &[], &["-m", "fixes bd-a1."]));
    assert!(trailers(&repo).is_empty(), "{}", head_message(&repo));
    // BEADS_ISSUE names it explicitly, whoever is in progress.
    committed(&commit(&repo, "Bob", &[("BEADS_ISSUE", "bd-b2")], &["-m", "Other work"]));
    assert_eq!(trailers(&repo), ["bd-b2"]);
    // `git commit -v`: the trailer goes above the scissors line, in the message git keeps.
    committed(&commit(&repo, "Alice", &[("GIT_EDITOR", &editor("Verbose"))], &["-v"]));
    assert_eq!(trailers(&repo), ["bd-a1"], "{}", head_message(&repo));
    assert!(!head_message(&repo).contains("diff --git"), "{}", head_message(&repo));
    // The links index reads them back.
    let commits = bd_sync_ok(repo.path(), &["log", "--commits", "bd-a1"]);
    assert_eq!(commits.lines().filter(|l| l.contains("trailer")).count(), 3, "{commits}");
}

#[test]
fn merges_squashes_replays_and_an_emptied_message_are_left_alone() {
    let repo = installed(&[mine("bd-a1", "Alice")]);
    let alice = |args: &[&str]| commit(&repo, "Alice", &[("BD_HOOKS", "1")], args);
    repo.ok("git", &["checkout", "-q", "-b", "side"]);
    repo.write("side.txt", "side\n");
    repo.ok("git", &["add", "side.txt"]);
    committed(&commit(&repo, "Alice", &[("BEADS_BRIDGE", "0")], &["-m", "side work"]));
    let side = repo.ok("git", &["rev-parse", "HEAD"]).trim().to_owned();
    repo.ok("git", &["checkout", "-q", "main"]);
    repo.write("main.txt", "main\n");
    repo.ok("git", &["add", "main.txt"]);
    committed(&alice(&["-m", "main work"]));

    // A merge commit, by `git merge` and by `git commit` concluding one.
    let merge = run(repo.cmd("git").env("BD_ACTOR", "Alice").args(["merge", "-q", "--no-ff", "--no-edit", "side"]));
    committed(&merge);
    assert!(trailers(&repo).is_empty(), "git merge: {}", head_message(&repo));
    repo.ok("git", &["reset", "-q", "--hard", "HEAD~1"]);
    let merge = run(repo.cmd("git").env("BD_ACTOR", "Alice").args(["merge", "-q", "--no-ff", "--no-commit", "side"]));
    assert!(merge.status.success(), "{}", String::from_utf8_lossy(&merge.stderr));
    committed(&alice(&["--no-edit"]));
    assert!(trailers(&repo).is_empty(), "git commit of a merge: {}", head_message(&repo));
    repo.ok("git", &["reset", "-q", "--hard", "HEAD~1"]);

    // A squash.
    repo.ok("git", &["merge", "-q", "--squash", "side"]);
    committed(&alice(&["--no-edit"]));
    assert!(trailers(&repo).is_empty(), "squash: {}", head_message(&repo));
    repo.ok("git", &["reset", "-q", "--hard", "HEAD~1"]);

    // A cherry-pick replays a commit as it was.
    let pick = run(repo.cmd("git").env("BD_ACTOR", "Alice").args(["cherry-pick", &side]));
    assert!(pick.status.success(), "{}", String::from_utf8_lossy(&pick.stderr));
    assert!(trailers(&repo).is_empty(), "cherry-pick: {}", head_message(&repo));

    // An editor that leaves the message empty still aborts the commit.
    let head = repo.ok("git", &["rev-parse", "HEAD"]);
    let out = commit(&repo, "Alice", &[("GIT_EDITOR", "true")], &[]);
    assert!(!out.status.success(), "an empty message must abort the commit");
    assert_eq!(repo.ok("git", &["rev-parse", "HEAD"]), head);
    // ... and the next commit is decided afresh.
    committed(&commit(&repo, "Alice", &[], &["-m", "after the abort"]));
    assert_eq!(trailers(&repo), ["bd-a1"]);
}

/// Found by the review of this change: each of these added a trailer it must not add, or lost
/// one it must add.
#[test]
fn reverts_amended_merges_squash_commits_dividers_and_templates_are_handled_as_git_does() {
    let repo = installed(&[mine("bd-a1", "Alice")]);
    let alice = |env: &[(&str, &str)], args: &[&str]| commit(&repo, "Alice", env, args);
    // A clean revert leaves only MERGE_MSG: it replays a commit, it is not new work.
    repo.write("f.txt", "1\n");
    repo.ok("git", &["add", "f.txt"]);
    committed(&alice(&[("BEADS_BRIDGE", "0")], &["-m", "add f"]));
    let out = run(repo.cmd("git").env("BD_ACTOR", "Alice").args(["revert", "--no-edit", "HEAD"]));
    committed(&out);
    assert!(trailers(&repo).is_empty(), "revert: {}", head_message(&repo));
    // Amending a merge keeps it a merge.
    repo.ok("git", &["checkout", "-q", "-b", "side"]);
    committed(&alice(&[("BEADS_BRIDGE", "0")], &["-m", "side"]));
    repo.ok("git", &["checkout", "-q", "main"]);
    committed(&run(repo.cmd("git").env("BEADS_BRIDGE", "0").args(["merge", "-q", "--no-ff", "--no-edit", "side"])));
    committed(&alice(&[], &["--amend", "--no-edit"]));
    assert!(trailers(&repo).is_empty(), "amended merge: {}", head_message(&repo));
    // A commit made to be squashed into another gets none (it would stand twice after).
    for subject in ["fixup! side", "squash! side"] {
        committed(&alice(&[], &["-m", subject]));
        assert!(trailers(&repo).is_empty(), "{subject}: {}", head_message(&repo));
    }
    // A `---` line in the body: the trailer still ends the message, where git reads trailers.
    committed(&alice(&[], &["-m", "Subject", "-m", "Body\n---\nNotes"]));
    let parsed = repo.ok("git", &["log", "-1", "--format=%(trailers:key=Beads-Issue,valueonly)"]);
    assert_eq!(parsed.trim(), "bd-a1", "{}", head_message(&repo));
    // A subject that starts with `#`, given with -m: git keeps it, and so do we.
    committed(&alice(&[], &["-m", "#123: fix parser"]));
    assert_eq!(trailers(&repo), ["bd-a1"], "{}", head_message(&repo));
    // A template left as it was still aborts the commit.
    let template = repo.path().join(".git/test-template");
    std::fs::write(&template, "Summary:\n\nWhy:\n").expect("template");
    repo.ok("git", &["config", "commit.template", template.to_str().expect("utf8")]);
    let head = repo.ok("git", &["rev-parse", "HEAD"]);
    let out = alice(&[("GIT_EDITOR", "true")], &[]);
    assert!(!out.status.success(), "an unedited template must abort the commit");
    assert_eq!(repo.ok("git", &["rev-parse", "HEAD"]), head);
    committed(&alice(&[("GIT_EDITOR", &editor("Filled in"))], &[]));
    assert_eq!(trailers(&repo), ["bd-a1"], "{}", head_message(&repo));
    repo.ok("git", &["config", "--unset", "commit.template"]);
    // core.commentChar=auto: a message emptied of all but git's help lines still aborts.
    repo.ok("git", &["config", "core.commentChar", "auto"]);
    std::fs::write(&template, "# Title here\n").expect("template");
    repo.ok("git", &["config", "commit.template", template.to_str().expect("utf8")]);
    let out = alice(&[("GIT_EDITOR", r#"f() { grep "^;" "$1" > "$1.n"; mv "$1.n" "$1"; }; f"#)], &[]);
    assert!(!out.status.success(), "an emptied message must abort the commit: {}", head_message(&repo));
}

#[test]
fn none_or_several_in_progress_is_said_once_and_the_message_kept() {
    let repo = installed(&[mine("bd-a1", "Alice"), mine("bd-c3", "Alice"), issue("bd-b2").line()]);
    for env in [vec![], vec![("GIT_EDITOR", "f() { printf 'In the editor\\n' > \"$1\"; }; f")]] {
        let said = committed(&commit(&repo, "Alice", &env, if env.is_empty() { &["-m", "Two at once"] } else { &[] }));
        assert!(trailers(&repo).is_empty());
        let lines: Vec<&str> = said.lines().filter(|l| l.contains("Beads-Issue")).collect();
        assert_eq!(lines.len(), 1, "said once: {said}");
        assert!(lines[0].contains("bd-a1, bd-c3") && lines[0].contains("BEADS_ISSUE"), "{said}");
    }
    let said = committed(&commit(&repo, "Nobody", &[], &["-m", "Nothing claimed"]));
    assert!(trailers(&repo).is_empty());
    assert_eq!(said.lines().filter(|l| l.contains("no issue in progress")).count(), 1, "{said}");
    assert_eq!(head_message(&repo), "Nothing claimed\n\n");
}

/// A committer who moved an issue to in progress without assigning it, while a teammate had
/// assigned another to them, got the teammate's issue in the trailer without a word. Now the issue
/// moved since HEAD last moved counts, the last moved wins, and the choice is said in one line; an
/// unassigned issue nobody here moved (it came with the last commit or pull) is nobody's.
#[test]
fn regression_a_teammates_assignment_took_the_trailer_of_the_issue_the_committer_moved() {
    let past = "2020-01-01T00:00:00Z";
    let assigned = issue("bd-7").status("in_progress").updated(past).extra("\"assignee\":\"Alice\"").line();
    let pulled = issue("bd-9").status("in_progress").updated(past).line();
    let repo = installed(&[assigned.clone(), pulled.clone(), issue("bd-5").updated(past).line()]);
    // Control: before any move, the one assigned issue, silently.
    let said = committed(&commit(&repo, "Alice", &[], &["-m", "Before"]));
    assert_eq!(trailers(&repo), ["bd-7"], "{said}");
    assert!(!said.contains("Beads-Issue"), "{said}");
    // Alice moves bd-5 to in progress, unassigned (as `br update bd-5 --status in_progress`).
    let moved = issue("bd-5").status("in_progress").updated("2099-01-01T00:00:00-08:00").line();
    repo.write(FILE, &[assigned, pulled, moved].join("\n"));
    let said = committed(&commit(&repo, "Alice", &[], &["-m", "After"]));
    assert_eq!(trailers(&repo), ["bd-5"], "{said}");
    let lines: Vec<&str> = said.lines().filter(|l| l.contains("Beads-Issue")).collect();
    assert_eq!(lines.len(), 1, "said once: {said}");
    assert!(lines[0].contains("bd-5") && lines[0].contains("also in progress for you: bd-7") && !lines[0].contains("bd-9"), "{said}");
    // Someone else's commit: bd-5 is in progress for nobody assigned, and this clone moved it, so
    // it is the committer's whoever commits; bd-7 is Alice's, not Bob's.
    let said = committed(&commit(&repo, "Bob", &[], &["-m", "Bob's"]));
    assert_eq!(trailers(&repo), ["bd-5"], "{said}");
}

#[test]
fn hostile_ids_actors_and_messages_never_reach_a_trailer_a_shell_or_the_screen() {
    let hostile = issue("bd-x$(touch PWNED)").status("in_progress").extra("\"assignee\":\"Mallory\"").line();
    let actor = "Eve\u{1b}]0;owned\u{7}'; touch PWNED2; '";
    let repo = installed(&[hostile, mine("bd-e5", actor)]);
    // The one issue in progress has an id no trailer can hold.
    let said = committed(&commit(&repo, "Mallory", &[], &["-m", "hostile id"]));
    assert!(trailers(&repo).is_empty(), "{}", head_message(&repo));
    assert!(said.contains("not an id a trailer can hold") && !said.contains('\u{1b}'), "{said}");
    // A newline in BEADS_ISSUE would forge a second trailer.
    let said = committed(&commit(&repo, "Mallory", &[("BEADS_ISSUE", "bd-1\nEvil: \u{1b}[2Jyes")], &["-m", "forged"]));
    assert!(!head_message(&repo).contains("Evil"), "{}", head_message(&repo));
    assert!(!said.contains('\u{1b}'), "{said:?}");
    // An actor full of quotes and escapes is a query value, nothing more.
    committed(&commit(&repo, actor, &[], &["-m", "the odd actor"]));
    assert_eq!(trailers(&repo), ["bd-e5"]);
    assert!(!repo.path().join("PWNED").exists() && !repo.path().join("PWNED2").exists());
    // A 1 MB message: one trailer at its end.
    let big = format!("Big\n\n{}\n", "lorem ipsum bd-a ".repeat(64 * 1024));
    let file = repo.path().join(".git/test-big-message");
    std::fs::write(&file, &big).expect("write");
    committed(&commit(&repo, actor, &[], &["-F", file.to_str().expect("utf8")]));
    assert_eq!(trailers(&repo), ["bd-e5"]);
    // A message over the limit is left as it is, and the commit goes through.
    let huge = format!("Huge\n\n{}\n", "x".repeat(17 << 20));
    std::fs::write(&file, &huge).expect("write");
    let said = committed(&commit(&repo, actor, &[], &["-F", file.to_str().expect("utf8")]));
    assert!(trailers(&repo).is_empty() && said.lines().count() <= 2, "{said}");
}

#[test]
fn a_broken_or_busy_cache_and_the_switch_leave_the_commit_as_it_was() {
    let repo = installed(&[mine("bd-a1", "Alice")]);
    // The switch, per clone and per process.
    repo.ok("git", &["config", "beads.bridge", "false"]);
    committed(&commit(&repo, "Alice", &[], &["-m", "off for the clone"]));
    assert!(trailers(&repo).is_empty());
    repo.ok("git", &["config", "--unset", "beads.bridge"]);
    committed(&commit(&repo, "Alice", &[("BEADS_BRIDGE", "0")], &["-m", "off for the process"]));
    assert!(trailers(&repo).is_empty());
    // A cache that is not a database: one line, the commit unchanged.
    let db = repo.path().join(".git/beads/cache.db");
    let _ = std::fs::remove_file(db.with_extension("db-wal"));
    std::fs::write(&db, "not sqlite").expect("write");
    let said = committed(&commit(&repo, "Alice", &[], &["-m", "broken cache"]));
    assert_eq!(head_message(&repo), "broken cache\n\n");
    assert!(said.contains("prepare-commit-msg"), "{said}");
    // A marker left where git keeps its state, as a directory: the hook says so and goes on.
    std::fs::remove_file(&db).expect("rm");
    std::fs::create_dir(repo.path().join(".git/BEADS_LINK_PENDING")).expect("mkdir");
    let out = commit(&repo, "Alice", &[], &["-m", "odd marker"]);
    committed(&out);
    assert_eq!(head_message(&repo), "odd marker\n\n");
}

#[test]
fn a_linked_worktree_commits_with_its_own_state() {
    let repo = installed(&[mine("bd-a1", "Alice")]);
    let wt = repo.path().join("wt");
    repo.ok("git", &["worktree", "add", "-q", "-b", "wt", wt.to_str().expect("utf8")]);
    let out = run(repo.cmd("git").current_dir(&wt).env("BD_ACTOR", "Alice").env("GIT_EDITOR", editor("In the worktree")).args([
        "commit",
        "-q",
        "--allow-empty",
    ]));
    committed(&out);
    let message = repo.ok("git", &["log", "-1", "--format=%B", "refs/heads/wt"]);
    assert!(message.starts_with("In the worktree\n") && message.contains("Beads-Issue: bd-a1"), "{message}");
    assert!(!repo.path().join(".git/worktrees/wt/BEADS_LINK_PENDING").exists());
}

/// The message work is linear in the message: 4x the bytes cost under 8x the time.
/// `bd-sync link prepare-commit-msg` on `.git/COMMIT_EDITMSG` (a `-m` message) as `actor`.
fn prepare_commit_msg(repo: &Repo, actor: &str) -> Output {
    run(repo.cmd(crate::support::bin("bd-sync")).env("BD_ACTOR", actor).args([
        "link",
        "prepare-commit-msg",
        ".git/COMMIT_EDITMSG",
        "message",
    ]))
}

#[test]
fn the_hook_costs_linear_time_in_the_message() {
    let repo = installed(&[mine("bd-a1", "Alice")]);
    let time = |n: usize| {
        let file = repo.path().join(".git/COMMIT_EDITMSG");
        // Near misses of the id everywhere: the word match must not go quadratic.
        std::fs::write(&file, format!("Subject\n\n{}\n", "bd-a1b bd-a1.2 xbd-a1 ".repeat(n))).expect("write");
        let start = Instant::now();
        let out = prepare_commit_msg(&repo, "Alice");
        assert!(out.status.success());
        let took = start.elapsed();
        assert!(std::fs::read_to_string(&file).expect("read").ends_with("Beads-Issue: bd-a1\n"));
        took
    };
    time(1000);
    let small = (0..3).map(|_| time(40_000)).min().expect("runs");
    let large = (0..3).map(|_| time(160_000)).min().expect("runs");
    assert!(large < small * 8 + Duration::from_millis(50), "40k: {small:?}, 160k: {large:?}");
}

// ---- the opt-in commit comment, with the real br ---------------------------------------------

/// A repository br initialised, with one issue claimed by `agent`, and our install.
fn br_repo(br: &Path) -> (Repo, String) {
    let repo = Repo::new(&[br.parent().expect("dir")]);
    std::fs::remove_file(repo.path().join(FILE)).expect("rm");
    repo.ok("git", &["rm", "-q", "--cached", FILE]);
    repo.ok("git", &["commit", "-q", "-m", "no file yet"]);
    let br_ok = |args: &[&str]| {
        let out = run(repo.cmd(br).env("BD_ACTOR", "agent").args(args));
        assert!(out.status.success(), "br {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    br_ok(&["init", "--prefix", "demo"]);
    let created: serde_json::Value = serde_json::from_str(&br_ok(&["create", "Parser rewrite", "-p", "1", "--json"])).expect("json");
    let id = created["id"].as_str().expect("id").to_owned();
    br_ok(&["create", "Docs for the parser", "-p", "2", "--json"]);
    br_ok(&["update", &id, "--claim"]);
    repo.ok("git", &["add", ".beads"]);
    repo.ok("git", &["commit", "-q", "-m", "tracker"]);
    assert!(repo.sync(&["install"]).status.success());
    (repo, id)
}

fn br_comments(repo: &Repo, br: &Path, id: &str) -> Vec<String> {
    let out = run(repo.cmd(br).args(["comments", "list", id, "--json"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let list = v.as_array().cloned().or_else(|| v["comments"].as_array().cloned()).unwrap_or_default();
    list.iter().filter_map(|c| c["text"].as_str().or(c["body"].as_str()).map(str::to_owned)).collect()
}

#[test]
fn commit_comments_are_asked_of_the_real_br_once_per_new_commit() {
    let Some(br) = real_br() else { return };
    let (repo, id) = br_repo(&br);
    let agent = |args: &[&str]| commit(&repo, "agent", &[], args);
    // Off by default.
    committed(&agent(&["-m", "Before the opt-in"]));
    assert_eq!(trailers(&repo), [id.as_str()]);
    assert!(br_comments(&repo, &br, &id).is_empty());
    repo.ok("git", &["config", "beads.commitComments", "true"]);
    committed(&agent(&["-m", "Tokenizer \u{1b}[31mred\u{1b}[0m"]));
    let short = repo.ok("git", &["rev-parse", "--short", "HEAD"]).trim().to_owned();
    let comments = br_comments(&repo, &br, &id);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].starts_with(&format!("commit {short}: Tokenizer ")) && !comments[0].contains('\u{1b}'), "{comments:?}");
    // An amend is the same piece of work: no second comment.
    committed(&agent(&["--amend", "--no-edit"]));
    assert_eq!(br_comments(&repo, &br, &id).len(), 1);
    // The tracker wrote its own file; the comment reaches git with the next commit.
    assert!(String::from_utf8_lossy(&repo.read(FILE).expect("file")).contains(&format!("commit {short}")));
}

/// The tracker is given 5 s in all for one commit's comments, and one line says what failed;
/// a commit of the issues files alone (the tracker's own comment, flushed) is not noted again.
#[test]
fn commit_comments_are_bounded_in_time_and_not_asked_for_the_trackers_own_writes() {
    let fake = tempfile::tempdir().expect("tmp");
    let log = fake.path().join("calls");
    let br = fake.path().join("br");
    std::fs::write(&br, format!("#!/bin/sh\necho \"$*\" >> '{}'\nsleep 30\n", log.display())).expect("write");
    std::fs::set_permissions(&br, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let repo = Repo::new(&[fake.path()]);
    repo.write(FILE, &format!("{}\n{}\n", mine("bd-a1", "Alice"), issue("bd-b2").line()));
    repo.ok("git", &["add", FILE]);
    repo.ok("git", &["commit", "-q", "-m", "issues"]);
    assert!(repo.sync(&["install"]).status.success());
    repo.ok("git", &["config", "beads.commitComments", "yes"]);
    repo.write("code.txt", "x\n");
    repo.ok("git", &["add", "code.txt"]);
    let start = Instant::now();
    let said = committed(&commit(&repo, "Alice", &[], &["-m", "Work", "-m", "Beads-Issue: bd-a1\nBeads-Issue: bd-b2\nBeads-Issue: bd-a1"]));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(15), "the commit waited {took:?} for the tracker");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(calls.lines().count(), 1, "one call, then the time was up: {calls}");
    assert_eq!(said.lines().filter(|l| l.contains("did not note")).count(), 1, "{said}");
    // A commit of the issues file alone is the tracker's own write: not noted.
    std::fs::remove_file(&log).expect("rm");
    repo.write(FILE, &format!("{}\n{}\n", mine("bd-a1", "Alice"), issue("bd-b2").title("Renamed").line()));
    repo.ok("git", &["add", FILE]);
    committed(&commit(&repo, "Alice", &[], &["-m", "tracker flush"]));
    assert!(!log.exists(), "the tracker was asked about its own write");
}

/// An agent's whole session as a test: an agent claims with br, commits twice, asks
/// for its context, closes with br, and asks for the next issue.
#[test]
fn an_agent_session_with_the_real_br_claim_commit_context_close_next() {
    let Some(br) = real_br() else { return };
    let (repo, id) = br_repo(&br);
    committed(&commit(&repo, "agent", &[], &["-m", "Parser: tokenizer"]));
    committed(&commit(&repo, "agent", &[], &["-m", "Parser: error recovery"]));
    let context = run(repo.cmd(crate::support::bin("bd-sync")).env("BD_ACTOR", "agent").args(["context"]));
    let text = String::from_utf8_lossy(&context.stdout);
    assert!(context.status.success() && text.contains(&id), "{text}");
    assert!(text.contains("Parser: tokenizer") && text.contains("Parser: error recovery"), "{text}");
    assert!(text.len() <= 2048, "{}", text.len());
    let out = run(repo.cmd(&br).env("BD_ACTOR", "agent").args(["close", &id, "--reason", "done"]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let next = run(repo.cmd(crate::support::bin("bd-sync")).args(["ready", "--limit", "1"]));
    let next = String::from_utf8_lossy(&next.stdout);
    assert!(next.contains("Docs for the parser") && !next.contains("Parser rewrite"), "{next}");
}

/// Under a hook manager: a commit made with `-m` and one made in the editor both name the issue
/// `BEADS_ISSUE` gives, once each (the managers' scenarios call this).
pub(super) fn commits_name_their_issue(repo: &Repo, what: &str) {
    let named = [("BEADS_ISSUE", "bd-1")];
    committed(&commit(repo, "someone", &named, &["-m", "Linked with -m"]));
    assert_eq!(trailers(repo), ["bd-1"], "{what}, -m: {}", head_message(repo));
    let in_editor = [named[0], ("GIT_EDITOR", &editor("Linked in the editor"))];
    committed(&commit(repo, "someone", &in_editor, &[]));
    assert_eq!(trailers(repo), ["bd-1"], "{what}, the editor: {}", head_message(repo));
    assert!(head_message(repo).starts_with("Linked in the editor\n"), "{what}: {}", head_message(repo));
}

/// Links and FIFOs where the hook reads and writes: a marker that is a link to a file elsewhere
/// is removed, never followed (the file it points to keeps its bytes); a message "file" that is
/// a FIFO is refused at once, not waited on; the commit goes on in both cases.
#[test]
fn a_linked_marker_and_a_fifo_message_are_neither_followed_nor_waited_on() {
    let repo = installed(&[mine("bd-a1", "Alice")]);
    let outside = tempfile::tempdir().expect("tmp");
    let precious = outside.path().join("precious");
    std::fs::write(&precious, "keep me\n").expect("write");
    std::os::unix::fs::symlink(&precious, repo.path().join(".git/BEADS_LINK_PENDING")).expect("link");
    committed(&commit(&repo, "Alice", &[("GIT_EDITOR", &editor("After the link"))], &[]));
    assert_eq!(std::fs::read_to_string(&precious).expect("read"), "keep me\n");
    assert_eq!(trailers(&repo), ["bd-a1"], "{}", head_message(&repo));
    let fifo = repo.path().join(".git/FIFO_MSG");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let start = Instant::now();
    let out = run(repo.cmd(crate::support::bin("bd-sync")).env("BD_ACTOR", "Alice").args([
        "link",
        "prepare-commit-msg",
        ".git/FIFO_MSG",
        "message",
    ]));
    assert!(out.status.success(), "fail-open");
    assert!(start.elapsed() < Duration::from_secs(10), "waited on the FIFO");
    assert!(String::from_utf8_lossy(&out.stderr).contains("FIFO_MSG"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A `br` committed in the primary checkout, with PATH naming its directory, must not run on a
/// commit made in a linked worktree of the same repository (before, only the worktree's own top
/// was skipped): no checkout of the repository, nor its git directory, is a place programs are
/// taken from.
#[test]
fn regression_a_tracker_committed_in_another_checkout_ran_on_a_commit_in_a_worktree() {
    let repo = Repo::new(&[]);
    let ran = repo.path().join("ran");
    repo.write("bin/br", &format!("#!/bin/sh\necho \"$*\" >> '{}'\n", ran.display()));
    std::fs::set_permissions(repo.path().join("bin/br"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    repo.write(FILE, &format!("{}\n", mine("bd-a1", "Alice")));
    repo.ok("git", &["add", "bin/br", FILE]);
    repo.ok("git", &["commit", "-q", "-m", "a tracker in the tree"]);
    assert!(repo.sync(&["install"]).status.success());
    repo.ok("git", &["config", "beads.commitComments", "true"]);
    let worktree = repo.path().join("wt");
    repo.ok("git", &["worktree", "add", "-q", worktree.to_str().expect("utf8"), "-b", "side"]);
    let path = std::env::join_paths(
        std::iter::once(repo.path().join("bin")).chain(std::env::split_paths(&crate::support::path_with_our_binaries(&[]))),
    )
    .expect("PATH");
    let out = run(repo.cmd("git").current_dir(&worktree).env("PATH", &path).env("BD_ACTOR", "Alice").args([
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "Work",
        "-m",
        "Beads-Issue: bd-a1",
    ]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!ran.exists(), "the primary checkout's bin/br ran: {}", std::fs::read_to_string(&ran).unwrap_or_default());
}

/// A commit made by `git rebase --exec 'git commit …'` is new work and gets its trailer (the
/// rebase's own picks do not); a `sequencer/` left by an abandoned cherry-pick (`reset --hard`)
/// no longer makes every later commit a "replay".
#[test]
fn regression_rebase_exec_commits_and_commits_after_an_abandoned_cherry_pick_got_no_trailer() {
    let repo = installed(&[mine("bd-a1", "Alice"), issue("bd-b2").line()]);
    let named = [("BEADS_ISSUE", "bd-b2")];
    committed(&commit(&repo, "Alice", &named, &["-m", "First"]));
    committed(&commit(&repo, "Alice", &named, &["-m", "Second"]));
    let out = run(repo.cmd("git").env("BD_ACTOR", "Alice").env("BEADS_ISSUE", "bd-a1").args([
        "rebase",
        "-q",
        "--force-rebase",
        "--exec",
        "git commit -q --allow-empty -m 'Made by exec'",
        "HEAD~2",
    ]));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = repo.ok("git", &["log", "-6", "--format=%s|%(trailers:key=Beads-Issue,valueonly,separator=%x2C)"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.iter().filter(|l| l.starts_with("Made by exec|bd-a1")).count(), 2, "each exec'd commit names its issue:\n{log}");
    assert!(lines.contains(&"First|bd-b2") && lines.contains(&"Second|bd-b2"), "the picks keep theirs, once:\n{log}");
    // An abandoned cherry-pick's sequencer/ stays after `reset --hard`.
    std::fs::create_dir_all(repo.path().join(".git/sequencer")).expect("mkdir");
    std::fs::write(repo.path().join(".git/sequencer/todo"), "pick 0000000 gone\n").expect("write");
    committed(&commit(&repo, "Alice", &[], &["-m", "After the abandoned pick"]));
    assert_eq!(trailers(&repo), ["bd-a1"], "{}", head_message(&repo));
}

/// `BEADS_ISSUE=zz-999`, neither an issue nor a prefix the project uses, was written as a
/// trailer without a word. Now it is refused with one line; an id of a known prefix that the
/// cache does not have yet (created since the last import) is still taken.
#[test]
fn regression_an_unknown_beads_issue_became_a_trailer_silently() {
    let repo = installed(&[mine("bd-a1", "Alice"), issue("bd-b2").line()]);
    let said = committed(&commit(&repo, "Alice", &[("BEADS_ISSUE", "zz-999")], &["-m", "Typo in the id"]));
    assert!(trailers(&repo).is_empty(), "{}", head_message(&repo));
    assert_eq!(said.lines().filter(|l| l.contains("zz-999") && l.contains("no issue here has")).count(), 1, "{said}");
    committed(&commit(&repo, "Alice", &[("BEADS_ISSUE", "bd-new9")], &["-m", "A new issue"]));
    assert_eq!(trailers(&repo), ["bd-new9"]);
}

/// The choice among issues in progress costs linear time in how many there are: 4x as many
/// unassigned issues moved since HEAD last moved (the worst shape: every one a candidate) cost
/// at most about 4x, and the choice still names the one moved last, escaping hostile ids in the
/// line that says so.
#[test]
fn choosing_among_many_moved_issues_costs_linear_time_and_escapes_what_it_names() {
    let moved = |id: &str, day: u32| issue(id).status("in_progress").updated(&format!("2099-01-{day:02}T00:00:00Z")).line();
    let repo_with = |n: usize| {
        let mut lines: Vec<String> = (0..n).map(|i| moved(&format!("bd-m{i}"), 1)).collect();
        lines.push(moved("bd-last", 2));
        lines.push(issue("bd-\\u001b[31mred").status("in_progress").updated("2099-01-01T00:00:00Z").line());
        let repo = installed(&[issue("bd-0").line()]);
        repo.write(FILE, &(lines.join("\n") + "\n"));
        repo
    };
    let time = |repo: &Repo| {
        let file = repo.path().join(".git/COMMIT_EDITMSG");
        std::fs::write(&file, "Work\n").expect("write");
        let start = Instant::now();
        let out = prepare_commit_msg(repo, "Alice");
        let took = start.elapsed();
        assert!(out.status.success());
        assert!(std::fs::read_to_string(&file).expect("read").ends_with("Beads-Issue: bd-last\n"));
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(said.contains("bd-last, the issue you moved to in progress last") && !said.contains('\u{1b}'), "{said}");
        took
    };
    let (small, large) = (repo_with(2_000), repo_with(8_000));
    time(&small);
    time(&large);
    let small = (0..3).map(|_| time(&small)).min().expect("runs");
    let large = (0..3).map(|_| time(&large)).min().expect("runs");
    assert!(large < small * 8 + Duration::from_millis(50), "2k: {small:?}, 8k: {large:?}");
}
