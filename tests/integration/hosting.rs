//! Where teams merge: the GitHub Action (`action.yml`) and the GitLab template
//! (`ci/gitlab/beads-git.yml`), run the way the services run them. Their steps are read from the
//! YAML files and executed as they are, against local bare repositories: a fresh `--depth 1`
//! clone of the pull request's branch, no global git config, no driver and no hooks installed,
//! our binaries on PATH. Afterwards a plain `git merge` of the pull request into main (no
//! driver, as GitHub's button does it) must be conflict-free with every edit of both sides in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::support::{bin, hermetic, issue, run, text, Issue};

const FILE: &str = ".beads/issues.jsonl";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Hermetic git's stdout, trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    crate::support::git(dir, args).trim().to_owned()
}

/// The hosting tests' issue: an empty description, stamps in UTC.
fn hosted(id: &str) -> Issue {
    issue(id).description("").created("2025-11-01T10:00:00Z")
}

/// A child of the epic bd-10, created at `at`: two clones each number theirs `bd-10.1`.
fn child(id: &str, title: &str, at: &str) -> String {
    hosted(id)
        .title(title)
        .at(at)
        .extra(&format!(r#""dependencies":[{{"issue_id":"{id}","depends_on_id":"bd-10","type":"parent-child","created_at":"{at}"}}]"#))
        .line()
}

fn comment(id: u32, issue: &str, text: &str, at: &str) -> String {
    format!(r#"{{"id":{id},"issue_id":"{issue}","author":"a","text":"{text}","created_at":"{at}"}}"#)
}

fn records(text: &str) -> BTreeMap<String, Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            (v["id"].as_str().expect("id").to_owned(), v)
        })
        .collect()
}

/// A bare remote with `main` and a pull request branch `topic`, both edited since they forked.
struct Scenario {
    root: tempfile::TempDir,
}

impl Scenario {
    fn remote(&self) -> PathBuf {
        self.root.path().join("remote.git")
    }

    fn url(&self) -> String {
        format!("file://{}", self.remote().display())
    }

    /// `main` and `topic` both edit the issues (fields on both sides, comments on both sides, a
    /// deletion against an edit) and a source file each; `conflicting` makes both edit one line
    /// of a source file too.
    fn new(conflicting: bool) -> Scenario {
        let root = tempfile::tempdir().expect("tmp");
        let s = Scenario { root };
        git(s.root.path(), &["init", "-q", "--bare", "-b", "main", s.remote().to_str().expect("utf8")]);
        let seed = s.root.path().join("seed");
        git(s.root.path(), &["clone", "-q", &s.url(), seed.to_str().expect("utf8")]);
        let t0 = "2025-11-01T10:00:00Z";
        let base = [
            hosted("bd-1").title("One").updated(t0).line(),
            hosted("bd-2").title("Two").updated(t0).line(),
            hosted("bd-3").title("Three").updated(t0).line(),
            hosted("bd-4").title("Four").updated(t0).line(),
            hosted("bd-5").title("Five").updated(t0).line(),
            hosted("bd-10").title("Epic").updated(t0).issue_type("epic").line(),
        ];
        let write = |dir: &Path, lines: &[String], src: &str| {
            std::fs::create_dir_all(dir.join(".beads")).expect("mkdir");
            std::fs::write(dir.join(FILE), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write");
            std::fs::write(dir.join("src.txt"), src).expect("write");
        };
        write(&seed, &base, "line 1\nline 2\nline 3\n");
        // The team committed what `bd-sync install` wrote, as the README tells them to: every CI
        // checkout has `merge=beads` and no driver.
        let attributes: String = beads_git::install::ATTRIBUTE_LINES.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(seed.join(".gitattributes"), attributes).expect("write");
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "seed"]);
        git(&seed, &["push", "-q", "origin", "main"]);
        // The pull request: title of bd-1, priority of bd-2, a comment on bd-3, bd-4 deleted.
        git(&seed, &["checkout", "-q", "-b", "topic"]);
        let t1 = "2025-11-02T10:00:00Z";
        let topic = [
            hosted("bd-1").title("One, retitled on topic").updated(t1).line(),
            hosted("bd-2").title("Two").updated(t1).priority(0).line(),
            hosted("bd-3").title("Three").updated(t1).extra(&format!(r#""comments":[{}]"#, comment(1, "bd-3", "from topic", t1))).line(),
            hosted("bd-5").title("Five").updated(t0).line(),
            hosted("bd-10").title("Epic").updated(t0).issue_type("epic").line(),
            child("bd-10.1", "Subtask added on topic", t1),
        ];
        write(&seed, &topic, if conflicting { "line 1\nline 2 on topic\nline 3\n" } else { "line 1\nline 2\nline 3\ntopic's line\n" });
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "topic edits"]);
        git(&seed, &["push", "-q", "origin", "topic"]);
        // main meanwhile: description of bd-1, status of bd-2, a comment on bd-3, an edit of bd-4.
        git(&seed, &["checkout", "-q", "main"]);
        let t2 = "2025-11-03T10:00:00Z";
        let main = [
            hosted("bd-1").title("One").updated(t2).description("described on main").line(),
            hosted("bd-2").title("Two").updated(t2).status("in_progress").line(),
            hosted("bd-3").title("Three").updated(t2).extra(&format!(r#""comments":[{}]"#, comment(1, "bd-3", "from main", t2))).line(),
            hosted("bd-4").title("Four, edited on main").updated(t2).line(),
            hosted("bd-5").title("Five").updated(t0).line(),
            hosted("bd-10").title("Epic").updated(t0).issue_type("epic").line(),
            child("bd-10.1", "Subtask added on main", t2),
        ];
        write(&seed, &main, if conflicting { "line 1\nline 2 on main\nline 3\n" } else { "line 0 from main\nline 1\nline 2\nline 3\n" });
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "main edits"]);
        git(&seed, &["push", "-q", "origin", "main"]);
        s
    }

    /// A fresh clone of `branch` at depth 1, as `actions/checkout` makes it.
    fn shallow_clone(&self, name: &str, branch: &str) -> PathBuf {
        let dir = self.root.path().join(name);
        git(self.root.path(), &["clone", "-q", "--depth", "1", "--branch", branch, &self.url(), dir.to_str().expect("utf8")]);
        dir
    }

    fn remote_rev(&self, branch: &str) -> String {
        git(&self.remote(), &["rev-parse", branch])
    }
}

/// The steps of a YAML file we ship, as the service would run them.
fn yaml(rel: &str) -> serde_norway::Value {
    let text = std::fs::read_to_string(repo_root().join(rel)).expect("read");
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{rel} does not parse: {e}"))
}

fn action_steps() -> Vec<serde_norway::Value> {
    yaml("action.yml")["runs"]["steps"].as_sequence().expect("runs.steps").clone()
}

/// What a GitHub runner does for one `run:` step of a composite action in `mode`; `None` when
/// the step's `if:` skips it.
fn action_step_env(step: &serde_norway::Value, mode: &str, inputs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    if let Some(cond) = step["if"].as_str() {
        let (_, wanted) = cond.split_once("==").expect("conditions compare the mode");
        if wanted.trim().trim_matches('\'') != mode {
            return None;
        }
    }
    let env = step["env"]
        .as_mapping()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let mut v = v.as_str().expect("string env").to_owned();
                    for (name, value) in inputs {
                        v = v.replace(&format!("${{{{ inputs.{name} }}}}"), value);
                    }
                    assert!(!v.contains("${{ inputs."), "an input the test does not give: {v}");
                    (k.as_str().expect("key").to_owned(), v)
                })
                .collect()
        })
        .unwrap_or_default();
    Some(env)
}

/// Runs every `run:` step of action.yml for `mode` in `dir`, as a runner would: bash -eo
/// pipefail, `GITHUB_PATH` entries prepended to PATH for later steps. Returns the last step's
/// output and the step summary.
fn run_action(dir: &Path, mode: &str, base: &str) -> (Output, String) {
    run_action_with(dir, mode, &[("base", base), ("pull-request", ""), ("token", "t")], &[])
}

/// [`run_action`] with the action's `inputs` and more environment (`PATH` entries first).
fn run_action_with(dir: &Path, mode: &str, inputs: &[(&str, &str)], env: &[(&str, std::ffi::OsString)]) -> (Output, String) {
    let work = tempfile::tempdir().expect("tmp");
    let home = work.path().join("home");
    // The cache restored the binaries: the install step finds them and skips cargo.
    restore_cached_binaries(&home.join(".cache/beads-git-action/bin"));
    let (output, path_file, summary) = (work.path().join("output"), work.path().join("path"), work.path().join("summary"));
    for f in [&output, &path_file, &summary] {
        std::fs::write(f, "").expect("write");
    }
    let mut last = None;
    for step in action_steps() {
        let Some(script) = step["run"].as_str() else { continue };
        let Some(step_env) = action_step_env(&step, mode, inputs) else { continue };
        let mut extra: Vec<PathBuf> = std::fs::read_to_string(&path_file).expect("read").lines().map(PathBuf::from).collect();
        extra.extend(env.iter().filter(|(k, _)| *k == "PATH").map(|(_, v)| PathBuf::from(v)));
        // Nothing of ours on PATH except what the steps put there.
        let path = std::env::join_paths(extra.iter().cloned().chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())))
            .expect("PATH");
        let out = run(hermetic("bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(dir)
            .env("HOME", &home)
            .env("PATH", path)
            .env("GITHUB_ACTION_PATH", repo_root())
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("RUNNER_TEMP", work.path())
            .envs(env.iter().filter(|(k, _)| *k != "PATH").map(|(k, v)| (k, v)))
            .envs(step_env));
        let failed = !out.status.success();
        last = Some(out);
        if failed {
            break;
        }
    }
    (last.expect("some step ran"), std::fs::read_to_string(&summary).expect("read"))
}

/// What the services' caches hold after a first run: the three binaries in `dir`.
fn restore_cached_binaries(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for b in ["bd-merge", "bd-sync", "bd-hook"] {
        std::os::unix::fs::symlink(bin(b), dir.join(b)).expect("link");
    }
}

/// After the bot's merge, main merges the pull request with plain git (no driver): clean, and
/// every edit of both sides is there, field by field.
fn assert_plain_merge_keeps_both_sides(s: &Scenario) {
    let main = s.root.path().join("main-after");
    git(s.root.path(), &["clone", "-q", &s.url(), main.to_str().expect("utf8")]);
    let out = run(hermetic("git").current_dir(&main).args(["merge", "--no-edit", "origin/topic"]));
    assert!(out.status.success(), "plain git merge of the pull request conflicts:\n{}", text(&out));
    let merged = records(&std::fs::read_to_string(main.join(FILE)).expect("read"));
    assert_eq!(merged["bd-1"]["title"], "One, retitled on topic");
    assert_eq!(merged["bd-1"]["description"], "described on main");
    assert_eq!(merged["bd-2"]["priority"], 0);
    assert_eq!(merged["bd-2"]["status"], "in_progress");
    let comments: Vec<&str> =
        merged["bd-3"]["comments"].as_array().expect("comments").iter().map(|c| c["text"].as_str().expect("text")).collect();
    assert!(comments.contains(&"from topic") && comments.contains(&"from main"), "both comments: {comments:?}");
    let ids: Vec<u64> = merged["bd-3"]["comments"].as_array().expect("comments").iter().map(|c| c["id"].as_u64().expect("id")).collect();
    assert_ne!(ids[0], ids[1], "the two comments do not share an id");
    assert_eq!(merged["bd-4"]["title"], "Four, edited on main", "an edit against a deletion keeps the edit");
    assert!(merged.contains_key("bd-5"));
    // Both clones' subtasks of the epic: one keeps bd-10.1, the later one is renumbered.
    let mut children: Vec<(&str, &str)> = merged
        .iter()
        .filter(|(id, _)| id.starts_with("bd-10."))
        .map(|(id, v)| (id.as_str(), v["title"].as_str().expect("title")))
        .collect();
    children.sort_unstable();
    assert_eq!(children, [("bd-10.1", "Subtask added on topic"), ("bd-10.2", "Subtask added on main")], "both subtasks kept");
    for (id, _) in &children {
        let deps = merged[*id]["dependencies"].as_array().expect("dependencies");
        assert_eq!(deps[0]["issue_id"], *id, "the renamed child's own dependency follows its new id");
        assert_eq!(deps[0]["depends_on_id"], "bd-10");
    }
    let src = std::fs::read_to_string(main.join("src.txt")).expect("read");
    assert!(src.contains("line 0 from main") && src.contains("topic's line"), "both sides of the source file: {src}");
}

#[test]
fn the_action_updates_a_pull_request_so_a_plain_merge_into_main_is_clean() {
    let s = Scenario::new(false);
    // Before: plain git (what GitHub's button does) conflicts on the issues file.
    let before = s.root.path().join("before");
    git(s.root.path(), &["clone", "-q", &s.url(), before.to_str().expect("utf8")]);
    let out = run(hermetic("git").current_dir(&before).args(["merge", "--no-edit", "origin/topic"]));
    assert!(!out.status.success(), "the scenario must conflict without the bot:\n{}", text(&out));
    assert!(text(&out).contains(FILE), "{}", text(&out));

    let pr = s.shallow_clone("pr", "topic");
    let (out, summary) = run_action(&pr, "update-branch", "main");
    assert!(out.status.success(), "update-branch:\n{}", text(&out));
    assert!(summary.contains("\"outcome\": \"merged\""), "{summary}");
    let message = git(&s.remote(), &["log", "-1", "--format=%B", "topic"]);
    assert!(message.starts_with("Merge main into topic"), "{message}");
    for id in ["bd-1", "bd-2", "bd-3", "bd-10.1"] {
        assert!(message.contains(&format!("  {id}\n")), "the message lists {id}:\n{message}");
    }
    assert_eq!(git(&s.remote(), &["rev-list", "--parents", "-n", "1", "topic"]).split(' ').count(), 3, "a merge commit");
    assert_plain_merge_keeps_both_sides(&s);

    // A second run, in a fresh clone: already up to date, nothing pushed.
    let before = s.remote_rev("topic");
    let again = s.shallow_clone("pr-again", "topic");
    let (out, summary) = run_action(&again, "update-branch", "main");
    assert!(out.status.success(), "{}", text(&out));
    assert!(summary.contains("\"outcome\": \"up-to-date\""), "{summary}");
    assert_eq!(s.remote_rev("topic"), before, "no new commit");
}

#[test]
fn a_conflict_in_a_source_file_changes_nothing_and_exits_1() {
    let s = Scenario::new(true);
    let before = s.remote_rev("topic");
    let pr = s.shallow_clone("pr", "topic");
    let head = git(&pr, &["rev-parse", "HEAD"]);
    let (out, summary) = run_action(&pr, "update-branch", "main");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(summary.contains("src.txt"), "the conflicted file is named: {summary}");
    assert_eq!(s.remote_rev("topic"), before, "the remote is unchanged");
    assert_eq!(git(&pr, &["rev-parse", "HEAD"]), head, "HEAD is unchanged");
    assert_eq!(git(&pr, &["status", "--porcelain"]), "", "the work tree is as it was");
}

/// Runs the GitLab template's job: `.beads-git-install`'s `before_script`, then the job's
/// `script`, in one shell as GitLab's runner does, with the merge request's variables.
fn run_gitlab_job(dir: &Path, job: &str, vars: &[(&str, &str)]) -> Output {
    let template = yaml("ci/gitlab/beads-git.yml");
    let mut script = String::new();
    for line in template[".beads-git-install"]["before_script"].as_sequence().expect("before_script") {
        script.push_str(line.as_str().expect("script line"));
        script.push('\n');
    }
    for line in template[job]["script"].as_sequence().expect("script") {
        script.push_str(line.as_str().expect("script line"));
        script.push('\n');
    }
    // The cache restored the binaries into the job's directory.
    restore_cached_binaries(&dir.join(".beads-git-bin/bin"));
    run(hermetic("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(dir)
        .env("BEADS_GIT_SOURCE", "https://example.invalid/beads-git.git")
        .envs(vars.iter().copied()))
}

#[test]
fn the_gitlab_update_job_updates_a_detached_merge_request_checkout() {
    let s = Scenario::new(false);
    let pr = s.shallow_clone("pr", "topic");
    // GitLab checks the merge request out at its commit, detached.
    git(&pr, &["checkout", "-q", "--detach"]);
    let out = run_gitlab_job(
        &pr,
        "beads-git-update-branch",
        &[("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"), ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "topic")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_plain_merge_keeps_both_sides(&s);
}

#[test]
fn the_gate_fails_on_committed_conflict_markers_and_names_the_fix() {
    let s = Scenario::new(false);
    // main merged the pull request with plain git and committed the markers.
    let broken = s.root.path().join("broken");
    git(s.root.path(), &["clone", "-q", &s.url(), broken.to_str().expect("utf8")]);
    let _ = run(hermetic("git").current_dir(&broken).args(["merge", "--no-edit", "origin/topic"]));
    git(&broken, &["add", "-A"]);
    git(&broken, &["commit", "-q", "--no-edit"]);
    let (out, summary) = run_action(&broken, "check", "main");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(summary.contains("bd-merge resolve"), "the summary names the fix: {summary}");
    let out = run_gitlab_job(&broken, "beads-git-check", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("bd-merge resolve"), "{}", text(&out));

    // The same gate passes on a clean file.
    let clean = s.shallow_clone("clean", "main");
    let (out, summary) = run_action(&clean, "check", "main");
    assert!(out.status.success(), "{}\n{summary}", text(&out));
    assert!(summary.contains("clean"), "{summary}");
}

#[test]
fn every_step_of_the_action_and_the_template_is_run_by_these_tests() {
    // The action: every `run:` step is one run_action runs (no step without `run:` except the
    // cache, which is GitHub's own action).
    for step in action_steps() {
        match (step["run"].as_str(), step["uses"].as_str()) {
            (Some(_), None) => {}
            (None, Some(uses)) => assert!(uses.starts_with("actions/cache@"), "an unexpected action step: {uses}"),
            other => panic!("a step that is neither run nor the cache: {other:?}"),
        }
        if let Some(cond) = step["if"].as_str() {
            assert!(cond == "inputs.mode == 'check'" || cond == "inputs.mode == 'update-branch'", "{cond}");
        }
    }
    // The template: the install and the two jobs, nothing else that runs a script.
    let template = yaml("ci/gitlab/beads-git.yml");
    let jobs: Vec<String> = template
        .as_mapping()
        .expect("mapping")
        .iter()
        .filter(|(_, v)| v.get("script").is_some() || v.get("before_script").is_some())
        .map(|(k, _)| k.as_str().expect("key").to_owned())
        .collect();
    assert_eq!(jobs, [".beads-git-install", "beads-git-check", "beads-git-update-branch"]);
    // The example workflow parses and uses the action in both modes.
    let workflow = yaml("examples/github/beads-git.yml");
    let modes: Vec<String> = workflow["jobs"]
        .as_mapping()
        .expect("jobs")
        .values()
        .flat_map(|j| j["steps"].as_sequence().cloned().unwrap_or_default())
        .filter_map(|s| s["with"]["mode"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(modes, ["check", "update-branch"]);
}

/// Pushes one more commit to `branch` of the scenario's remote: `files` written as given.
fn push_commit(s: &Scenario, branch: &str, files: &[(&str, &str)], message: &str) {
    let dir = s.root.path().join(format!("push-{branch}-{}", files.len()));
    git(s.root.path(), &["clone", "-q", "--branch", branch, &s.url(), dir.to_str().expect("utf8")]);
    for (rel, content) in files {
        std::fs::write(dir.join(rel), content).expect("write");
    }
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", message]);
    git(&dir, &["push", "-q", "origin", branch]);
}

#[test]
fn regression_update_branch_merged_with_a_committed_union_attribute() {
    let s = Scenario::new(false);
    // The pull request commits a union merge for the issues file (and another driver's name for
    // the old file name): a committed .gitattributes outranks core.attributesFile.
    push_commit(&s, "topic", &[(".gitattributes", ".beads/issues.jsonl merge=union\n.beads/beads.jsonl merge=evil\n")], "union");
    let pr = s.shallow_clone("pr", "topic");
    let (out, summary) = run_action(&pr, "update-branch", "main");
    assert!(out.status.success(), "update-branch:\n{}\n{summary}", text(&out));
    let pushed = git(&s.remote(), &["show", &format!("topic:{FILE}")]);
    let mut ids: Vec<String> = records(&pushed).into_keys().collect();
    let lines = pushed.lines().filter(|l| !l.trim().is_empty()).count();
    ids.dedup();
    assert_eq!(lines, ids.len(), "no id on two lines in what was pushed:\n{pushed}");
    assert!(!pushed.contains("<<<<<<<"), "{pushed}");
    let merged = records(&pushed);
    assert_eq!(merged["bd-1"]["title"], "One, retitled on topic");
    assert_eq!(merged["bd-1"]["description"], "described on main", "merged field by field");
    // Nothing of ours is left in the clone's attributes.
    let info = pr.join(".git/info/attributes");
    assert!(!std::fs::read_to_string(&info).unwrap_or_default().contains("update-branch"), "info/attributes restored");
}

#[test]
fn regression_update_branch_pushed_an_issues_file_with_an_id_on_two_lines() {
    let s = Scenario::new(false);
    // main already holds an id on two lines (a plain union merge committed there).
    let t = "2025-11-04T10:00:00Z";
    let main = git(&s.remote(), &["show", &format!("main:{FILE}")]);
    let doubled = format!("{main}\n{}\n", hosted("bd-5").title("Five, a second copy").updated(t).line());
    push_commit(&s, "main", &[(FILE, &doubled)], "a union merge left bd-5 twice");
    let before = s.remote_rev("topic");
    let pr = s.shallow_clone("pr", "topic");
    let head = git(&pr, &["rev-parse", "HEAD"]);
    let (out, summary) = run_action(&pr, "update-branch", "main");
    assert!(!out.status.success(), "update-branch must refuse:\n{}\n{summary}", text(&out));
    assert!(text(&out).contains("bd-5") && text(&out).contains("dedupe"), "names the id and the fix:\n{}", text(&out));
    assert_eq!(s.remote_rev("topic"), before, "nothing was pushed");
    assert_eq!(git(&pr, &["rev-parse", "HEAD"]), head, "nothing was committed");
    assert_eq!(git(&pr, &["status", "--porcelain"]), "", "the work tree is as it was");
}

/// Retitles bd-5 on `branch` of the scenario's remote, stamped `at`.
fn retitle_five(s: &Scenario, branch: &str, title: &str, at: &str) {
    let now = git(&s.remote(), &["show", &format!("{branch}:{FILE}")]);
    let five = hosted("bd-5").title("Five").updated("2025-11-01T10:00:00Z").line();
    assert!(now.contains(&five), "{now}");
    let retitled = format!("{}\n", now.replace(&five, &hosted("bd-5").title(title).updated(at).line()));
    push_commit(s, branch, &[(FILE, &retitled)], &format!("retitle bd-5 on {branch}"));
}

#[test]
fn regression_update_branch_kept_its_overrides_only_in_the_ci_clones_log() {
    let s = Scenario::new(false);
    retitle_five(&s, "topic", "Five on topic", "2025-11-04T10:00:00Z");
    retitle_five(&s, "main", "Five on main", "2025-11-05T10:00:00Z");
    let ci = s.shallow_clone("ci", "topic");
    let out = run(hermetic(bin("bd-merge")).current_dir(&ci).args(["update-branch", "main", "--push"]));
    assert!(out.status.success(), "update-branch:\n{}", text(&out));

    // The merge commit carries each decision as a trailer git itself parses.
    let fresh = s.root.path().join("fresh");
    git(s.root.path(), &["clone", "-q", "--branch", "topic", &s.url(), fresh.to_str().expect("utf8")]);
    let message = fresh.join("message.txt");
    std::fs::write(&message, git(&fresh, &["log", "-1", "--format=%B"])).expect("write");
    let trailers = git(&fresh, &["interpret-trailers", "--parse", message.to_str().expect("utf8")]);
    assert!(trailers.lines().any(|l| l == r#"Beads-Overridden: bd-5 title kept=theirs dropped="Five on topic""#), "{trailers}");

    // A clone that never ran the merge reviews it from the commit and restores the value.
    let commit = git(&fresh, &["rev-parse", "HEAD"]);
    let review = run(hermetic(bin("bd-merge")).current_dir(&fresh).arg("review"));
    let listed = String::from_utf8_lossy(&review.stdout).into_owned();
    assert!(review.status.success(), "review: {}", text(&review));
    assert!(listed.contains(&format!("from commit {}", &commit[..12])) && listed.contains("\"Five on topic\""), "{listed}");
    // Shown as it was: the value the merge kept, read from the merge commit (not `(absent)`).
    assert!(listed.contains("kept    \"Five on main\""), "{listed}");
    let restore = listed
        .lines()
        .find_map(|l| l.trim().strip_prefix("put it back: bd-merge review --restore "))
        .unwrap_or_else(|| panic!("a restorable entry: {listed}"))
        .to_owned();
    let out = run(hermetic(bin("bd-merge")).current_dir(&fresh).args(["review", "--restore", &restore]));
    assert!(out.status.success(), "restore {restore}: {}", text(&out));
    let file = std::fs::read_to_string(fresh.join(FILE)).expect("read");
    let five = &records(&file)["bd-5"];
    assert_eq!(five["title"], "Five on topic");
    assert_eq!(five["updated_at"], "2025-11-05T10:00:01Z", "ticked past the merged stamp");
}

/// A hand-written merge commit that never touched the issues file, with a `Beads-Overridden:`
/// line naming a value of its author's choosing, was listed by `review` as an update-branch
/// decision and `--restore` wrote that value. Now a trailer is believed only when the merge
/// commit's own files bear it out; this one is listed as unverified and never restored.
#[test]
fn regression_a_forged_update_branch_trailer_was_restored() {
    let s = Scenario::new(false);
    let fresh = s.root.path().join("fresh");
    git(s.root.path(), &["clone", "-q", "--branch", "topic", &s.url(), fresh.to_str().expect("utf8")]);
    std::fs::write(fresh.join("other.txt"), "x\n").expect("write");
    git(&fresh, &["add", "other.txt"]);
    git(&fresh, &["commit", "-q", "-m", "side work"]);
    git(&fresh, &["checkout", "-q", "-b", "forger", "HEAD~1"]);
    std::fs::write(fresh.join("more.txt"), "y\n").expect("write");
    git(&fresh, &["add", "more.txt"]);
    git(&fresh, &["commit", "-q", "-m", "more"]);
    git(&fresh, &["checkout", "-q", "topic"]);
    git(
        &fresh,
        &["merge", "-q", "--no-ff", "forger", "-m", "Merge", "-m", r#"Beads-Overridden: bd-5 assignee kept=ours dropped="mallory""#],
    );
    let file_before = std::fs::read(fresh.join(FILE)).expect("read");
    let review = run(hermetic(bin("bd-merge")).current_dir(&fresh).arg("review"));
    let listed = String::from_utf8_lossy(&review.stdout).into_owned();
    assert!(listed.contains("mallory") && listed.contains("does not bear out"), "listed, as unverified: {listed}");
    assert!(!listed.contains("put it back"), "{listed}");
    let commit = git(&fresh, &["rev-parse", "HEAD"]);
    let out = run(hermetic(bin("bd-merge")).current_dir(&fresh).args(["review", "--restore", &format!("{}:1", &commit[..12])]));
    assert!(!out.status.success(), "the restore is refused: {}", text(&out));
    assert!(text(&out).contains("does not bear out"), "{}", text(&out));
    assert_eq!(std::fs::read(fresh.join(FILE)).expect("read"), file_before, "nothing written");
}

/// A stand-in for `gh` (no GitHub is reachable here): it logs its arguments, answers `api
/// graphql` with `GH_STUB_RESPONSE` run through the real jq with the caller's `--jq`, and fails
/// where `GH_STUB_FAIL` names the subcommand.
fn stub_gh(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let script = r#"#!/bin/sh
echo "$*" >> "$GH_STUB_LOG"
case "$1 $2" in
  "api graphql")
    [ "$GH_STUB_FAIL" = api ] && exit 1
    expr=
    while [ $# -gt 0 ]; do [ "$1" = --jq ] && expr=$2; shift; done
    printf '%s' "$GH_STUB_RESPONSE" | jq -r "$expr" ;;
  "pr merge")
    [ "$GH_STUB_FAIL" = merge ] && exit 1
    exit 0 ;;
  *) exit 2 ;;
esac
"#;
    std::fs::write(dir.join("gh"), script).expect("write");
    let mut perms = std::fs::metadata(dir.join("gh")).expect("stat").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(dir.join("gh"), perms).expect("chmod");
}

/// GitHub's answer to the action's query: auto-merge on or off, and the last merge queue event.
fn merge_state(auto: bool, last: Option<&str>) -> String {
    let auto = if auto { r#"{"enabledAt":"2025-11-03T10:00:00Z"}"# } else { "null" };
    let nodes = last.map(|t| format!(r#"{{"__typename":"{t}"}}"#)).unwrap_or_default();
    format!(r#"{{"data":{{"repository":{{"pullRequest":{{"autoMergeRequest":{auto},"timelineItems":{{"nodes":[{nodes}]}}}}}}}}}}"#)
}

/// After the bot's merge, a pull request that was in the merge queue (the push takes it out) or
/// that the queue removed goes back with `gh pr merge --auto`; one with auto-merge still on, or
/// never queued, is left alone; a failing `gh` never fails the job; and the step summary says
/// which happened.
#[test]
fn after_the_merge_the_action_puts_a_queued_or_auto_merge_pull_request_back_and_says_so() {
    let cases: [(&str, String, Option<&str>, bool, &str); 6] = [
        ("in the queue: the push takes it out", merge_state(false, Some("AddedToMergeQueueEvent")), None, true, "put back"),
        ("ejected from the queue", merge_state(false, Some("RemovedFromMergeQueueEvent")), None, true, "put back"),
        ("auto-merge still on", merge_state(true, None), None, false, "auto-merge is still on"),
        ("neither", merge_state(false, None), None, false, "left for a person"),
        ("the state cannot be read", merge_state(true, None), Some("api"), false, "could not be read"),
        ("the queue refuses it", merge_state(false, Some("RemovedFromMergeQueueEvent")), Some("merge"), true, "failed: queue it by hand"),
    ];
    for (what, response, fail, merged_again, said) in cases {
        let s = Scenario::new(false);
        let pr = s.shallow_clone("pr", "topic");
        let stub = s.root.path().join("stub");
        stub_gh(&stub);
        let log = s.root.path().join("gh.log");
        let env = [
            ("PATH", stub.clone().into_os_string()),
            ("GH_STUB_LOG", log.clone().into_os_string()),
            ("GH_STUB_RESPONSE", response.into()),
            ("GH_STUB_FAIL", fail.unwrap_or("").into()),
            ("GITHUB_REPOSITORY", "owner/repo".into()),
        ];
        let (out, summary) = run_action_with(&pr, "update-branch", &[("base", "main"), ("pull-request", "7"), ("token", "secret")], &env);
        assert!(out.status.success(), "{what}: the job succeeds whatever gh did:\n{}", text(&out));
        assert!(summary.contains("\"outcome\": \"merged\"") && summary.contains(said), "{what}:\n{summary}");
        let calls = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(calls.contains("api graphql -f owner=owner -f name=repo -F number=7"), "{what}: {calls}");
        assert_eq!(calls.contains("pr merge 7 --auto --repo owner/repo"), merged_again, "{what}: {calls}");
    }
    // Nothing merged (already up to date): gh is never asked.
    let s = Scenario::new(false);
    let first = s.shallow_clone("first", "topic");
    assert!(run_action(&first, "update-branch", "main").0.status.success());
    let again = s.shallow_clone("again", "topic");
    let stub = s.root.path().join("stub");
    stub_gh(&stub);
    let log = s.root.path().join("gh.log");
    let env = [("PATH", stub.into_os_string()), ("GH_STUB_LOG", log.clone().into_os_string()), ("GITHUB_REPOSITORY", "o/r".into())];
    let (out, summary) = run_action_with(&again, "update-branch", &[("base", "main"), ("pull-request", "7"), ("token", "t")], &env);
    assert!(out.status.success() && summary.contains("nothing merged"), "{summary}");
    assert!(!log.exists(), "gh was not called: {:?}", std::fs::read_to_string(&log));
}

/// The example workflow runs the gate on the merge queue's temporary branches as on pull
/// requests (a required check that never reports there stalls the queue), and hands the update
/// job each pull request's number so the action can put it back into the queue.
#[test]
fn the_example_workflow_gates_merge_queue_runs_and_hands_the_bot_each_pull_request() {
    let workflow = yaml("examples/github/beads-git.yml");
    let on = &workflow["on"];
    assert!(on.get("merge_group").is_some() && on.get("pull_request").is_some(), "{on:?}");
    let gate = workflow["jobs"]["gate"]["if"].as_str().expect("gate's if");
    assert!(gate.contains("'pull_request'") && gate.contains("'merge_group'"), "{gate}");
    let list = workflow["jobs"]["list"]["if"].as_str().expect("list's if");
    assert!(list.contains("!= 'merge_group'"), "no update-branch run on a queue's branch: {list}");
    let steps = workflow["jobs"]["update"]["steps"].as_sequence().expect("steps");
    let action = steps.iter().find(|s| s["with"]["mode"].as_str() == Some("update-branch")).expect("the action");
    assert_eq!(action["with"]["pull-request"].as_str(), Some("${{ matrix.pull.number }}"));
    let inputs = yaml("action.yml")["inputs"].clone();
    for name in ["mode", "base", "pull-request", "token"] {
        assert!(inputs.get(name).is_some(), "action.yml lacks the input {name}");
    }
}
