//! The real br tracker (beads_rust 0.7.6) on two clones of one repository, edited with br only,
//! merged by git through our driver: br must import the merged file without `--force`, show every
//! edit of both sides, and its next flush must not change a byte (docs/merge-rules.md, "The merge rules, in plain words").
//!
//! `.ci/run` builds br into `~/.cache/beads-git-tools/br-0.7.6`; `BR` names another binary. The
//! test skips with a message when br is missing, except under CI, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{bin, hermetic, path_with_our_binaries, real_br, real_faketime, run};

/// A scratch world: a bare origin and clones, all with one private HOME and our binaries first on
/// PATH (the installed hooks call them by name).
pub(crate) struct World {
    pub(crate) dir: tempfile::TempDir,
    br: PathBuf,
    /// Clones whose br runs with a clock this far behind (libfaketime's `-f` offset).
    skewed: Vec<(PathBuf, &'static str)>,
    /// Merges use the real clock instead of the tests' fixed `BD_MERGE_NOW`.
    pub(crate) real_clock: bool,
}

impl World {
    pub(crate) fn new(br: PathBuf) -> World {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("home")).expect("mkdir home");
        let world = World { dir, br, skewed: Vec::new(), real_clock: false };
        world.git(world.dir.path(), &["init", "-q", "--bare", "-b", "main", "origin.git"]);
        world
    }

    pub(crate) fn command(&self, program: &Path, cwd: &Path) -> Command {
        // br where the hooks look for it, as an installed br is.
        let path = path_with_our_binaries(&[self.br.parent().unwrap_or(Path::new("/"))]);
        let mut cmd = hermetic(program);
        cmd.current_dir(cwd).env("HOME", self.dir.path().join("home")).env("PATH", path).env("NO_COLOR", "1").env_remove("BEADS_DB");
        if self.real_clock {
            cmd.env_remove("BD_MERGE_NOW");
        }
        cmd
    }

    pub(crate) fn git(&self, cwd: &Path, args: &[&str]) -> String {
        let out = run(self.command(Path::new("git"), cwd).args(args));
        assert!(out.status.success(), "git {args:?} in {}:\n{}", cwd.display(), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn clone(&self, name: &str) -> PathBuf {
        self.git(self.dir.path(), &["clone", "-q", "origin.git", name]);
        self.dir.path().join(name)
    }

    /// Runs br (no faketime) and returns its output whatever the exit status.
    pub(crate) fn br_output(&self, clone: &Path, args: &[&str]) -> std::process::Output {
        run(self.command(&self.br, clone).args(args))
    }

    /// Runs br and returns stdout, failing the test (with br's words) when it fails.
    pub(crate) fn br(&self, clone: &Path, args: &[&str]) -> String {
        let out = match self.skewed.iter().find(|(c, _)| c == clone) {
            Some((_, offset)) => run(self.command(Path::new("faketime"), clone).args(["-f", offset]).arg(&self.br).args(args)),
            None => run(self.command(&self.br, clone).args(args)),
        };
        assert!(
            out.status.success(),
            "br {args:?} exited {:?}:\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `br q`: creates an issue and returns its id.
    pub(crate) fn create(&self, clone: &Path, title: &str, extra: &[&str]) -> String {
        let mut args = vec!["q", title];
        args.extend_from_slice(extra);
        let id = self.br(clone, &args).trim().to_owned();
        assert!(!id.is_empty() && !id.contains(char::is_whitespace), "br q printed {id:?}");
        id
    }

    pub(crate) fn show(&self, clone: &Path, id: &str) -> Value {
        let text = self.br(clone, &["show", id, "--json"]);
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("br show --json {id}: {e}: {text}"));
        match value {
            Value::Array(mut items) if items.len() == 1 => items.remove(0),
            other => other,
        }
    }

    pub(crate) fn install(&self, clone: &Path) {
        let out = run(self.command(&bin("bd-sync"), clone).arg("install"));
        assert!(out.status.success(), "bd-sync install:\n{}", String::from_utf8_lossy(&out.stderr));
    }

    pub(crate) fn commit_issues(&self, clone: &Path, message: &str) {
        self.br(clone, &["sync", "--flush-only"]);
        self.git(clone, &["add", ".beads/issues.jsonl"]);
        self.git(clone, &["commit", "-q", "-m", message]);
    }
}

const DESCRIPTION: &str =
    "Paragraph one: the original problem statement.\n\nParagraph two: context nobody edits.\n\nParagraph three: the original plan.";

/// The ids of the seed issues, by role in the scenario.
struct Seed {
    ids: Vec<String>,
}

impl Seed {
    fn id(&self, n: usize) -> &str {
        &self.ids[n]
    }
}

/// Clone A creates 30 issues with labels, dependencies, comments and multi-paragraph
/// descriptions, and pushes them.
fn seed(w: &World, a: &Path) -> Seed {
    w.br(a, &["init", "--prefix", "rt"]);
    let mut ids = Vec::new();
    for n in 0..30 {
        let title = format!("Seed issue {n}");
        let (priority, kind, label) = ((n % 5).to_string(), ["task", "bug", "feature"][n % 3], format!("area-{}", n % 4));
        let description = format!("{DESCRIPTION}\n\nIssue {n}.");
        ids.push(w.create(a, &title, &["-p", &priority, "-t", kind, "-l", &label, "-d", &description]));
    }
    for (from, to) in [(1, 2), (2, 3), (20, 21)] {
        w.br(a, &["dep", "add", &ids[from], &ids[to]]);
    }
    for n in [12, 15, 16] {
        w.br(a, &["comments", "add", &ids[n], &format!("Seed comment on issue {n}.")]);
    }
    w.commit_issues(a, "seed: 30 issues");
    w.git(a, &["push", "-q", "origin", "main"]);
    Seed { ids }
}

/// What one side changed, checked after the merge.
struct Expect {
    field: &'static str,
    id: String,
    value: Value,
}

fn edits_of_a(w: &World, a: &Path, s: &Seed) -> (Vec<Expect>, Vec<String>) {
    let mut expect = Vec::new();
    let mut put = |field: &'static str, id: &str, value: Value| expect.push(Expect { field, id: id.to_owned(), value });
    for n in [3, 4, 5] {
        let title = format!("Retitled by A: {n}");
        w.br(a, &["update", s.id(n), "--title", &title]);
        put("title", s.id(n), Value::from(title));
    }
    for n in [6, 7] {
        let reason = format!("A finished {n}");
        w.br(a, &["close", s.id(n), "--reason", &reason]);
        put("status", s.id(n), Value::from("closed"));
        put("close_reason", s.id(n), Value::from(reason));
    }
    w.br(a, &["label", "add", s.id(8), "from-a"]);
    w.br(a, &["dep", "add", s.id(9), s.id(10)]);
    w.br(a, &["comments", "add", s.id(12), "Comment from A."]);
    let description =
        DESCRIPTION.replace("Paragraph one: the original problem statement.", "Paragraph one, rewritten by A.") + "\n\nIssue 13.";
    w.br(a, &["update", s.id(13), "--description", &description]);
    let new: Vec<String> = (1..=3).map(|n| w.create(a, &format!("New from A {n}"), &["-l", "from-a"])).collect();
    (expect, new)
}

fn edits_of_b(w: &World, b: &Path, s: &Seed) -> (Vec<Expect>, Vec<String>) {
    let mut expect = Vec::new();
    let mut put = |field: &'static str, id: &str, value: Value| expect.push(Expect { field, id: id.to_owned(), value });
    for (n, p) in [(3, 0), (4, 1), (5, 4)] {
        w.br(b, &["update", s.id(n), "--priority", &p.to_string()]);
        put("priority", s.id(n), Value::from(p));
    }
    for (n, who) in [(6, "bob"), (17, "carol")] {
        w.br(b, &["update", s.id(n), "--assignee", who]);
        put("assignee", s.id(n), Value::from(who));
    }
    w.br(b, &["label", "remove", s.id(8), "area-0"]);
    w.br(b, &["dep", "add", s.id(9), s.id(11)]);
    w.br(b, &["comments", "add", s.id(12), "Comment from B."]);
    let description = DESCRIPTION.replace("Paragraph three: the original plan.", "Paragraph three, rewritten by B.") + "\n\nIssue 13.";
    w.br(b, &["update", s.id(13), "--description", &description]);
    w.br(b, &["delete", s.id(14)]);
    let new: Vec<String> = (1..=3).map(|n| w.create(b, &format!("New from B {n}"), &["-l", "from-b"])).collect();
    (expect, new)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Pull {
    Merge,
    Rebase,
}

/// The whole scenario; prints the row of the closing note's table.
fn round_trip(br: PathBuf, pull: Pull) {
    let w = World::new(br);
    let a = w.clone("a");
    let s = seed(&w, &a);
    let b = w.clone("b");
    w.br(&b, &["sync", "--import-only"]);
    w.install(&a);
    w.install(&b);

    let (mut expected, new_a) = edits_of_a(&w, &a, &s);
    w.commit_issues(&a, "A: titles, closes, label, dependency, comment, paragraph 1, new issues");
    w.git(&a, &["push", "-q", "origin", "main"]);

    let (expected_b, new_b) = edits_of_b(&w, &b, &s);
    expected.extend(expected_b);
    w.commit_issues(&b, "B: priorities, assignees, label removal, dependency, comment, paragraph 3, deletion, new issues");
    match pull {
        Pull::Merge => w.git(&b, &["pull", "-q", "--no-rebase", "origin", "main"]),
        Pull::Rebase => w.git(&b, &["pull", "-q", "--rebase", "origin", "main"]),
    };
    let merged = std::fs::read(b.join(".beads/issues.jsonl")).expect("merged file");
    assert!(!merged.windows(7).any(|x| x == b"<<<<<<<"), "the merge left conflict markers");
    let check = run(w.command(&bin("bd-sync"), &b).arg("check"));
    assert_eq!(check.status.code(), Some(0), "bd-sync check on the merged clone:\n{}", String::from_utf8_lossy(&check.stdout));

    // No --force: br must accept the file as it is (it validates comment ids per record) and take
    // every merged record (it skips one whose updated_at equals what it holds).
    w.br(&b, &["sync", "--import-only"]);

    let mut checked = 0;
    let mut missing = Vec::new();
    let mut check = |ok: bool, what: String| {
        checked += 1;
        if !ok {
            missing.push(what);
        }
    };
    for e in &expected {
        let shown = w.show(&b, &e.id).get(e.field).cloned();
        check(shown.as_ref() == Some(&e.value), format!("{} {}: want {}, br shows {shown:?}", e.id, e.field, e.value));
    }
    let strings = |v: &Value, key: &str, field: &str| -> Vec<String> {
        v.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter().filter_map(|x| if field.is_empty() { x.as_str() } else { x.get(field)?.as_str() }.map(str::to_owned)).collect()
            })
            .unwrap_or_default()
    };
    let labels = strings(&w.show(&b, s.id(8)), "labels", "");
    check(labels.contains(&"from-a".to_owned()), format!("{}: labels {labels:?} lack from-a (added by A)", s.id(8)));
    check(!labels.contains(&"area-0".to_owned()), format!("{}: labels {labels:?} still hold area-0 (removed by B)", s.id(8)));
    let deps = strings(&w.show(&b, s.id(9)), "dependencies", "id"); // br show names the target "id"
    for want in [s.id(10), s.id(11)] {
        check(deps.iter().any(|d| d == want), format!("{}: dependencies {deps:?} lack {want}", s.id(9)));
    }
    let twelve = w.show(&b, s.id(12));
    let texts = strings(&twelve, "comments", "text");
    for want in ["Seed comment on issue 12.", "Comment from A.", "Comment from B."] {
        check(texts.iter().any(|t| t == want), format!("{}: comments {texts:?} lack {want:?}", s.id(12)));
    }
    let description = w.show(&b, s.id(13))["description"].as_str().unwrap_or("").to_owned();
    for want in ["rewritten by A", "rewritten by B"] {
        check(description.contains(want), format!("{}: description lost the paragraph {want}: {description:?}", s.id(13)));
    }
    let status = w.show(&b, s.id(14)).get("status").cloned();
    check(status == Some(Value::from("tombstone")), format!("{}: deleted by B, br shows status {status:?}", s.id(14)));
    for id in new_a.iter().chain(&new_b) {
        let shown = w.show(&b, id).get("id").cloned();
        check(shown == Some(Value::from(id.as_str())), format!("new issue {id}: br shows {shown:?}"));
    }
    assert!(
        missing.is_empty(),
        "{pull:?}: br shows {} of {checked} expected values; missing:\n{}",
        checked - missing.len(),
        missing.join("\n")
    );
    let total = checked;

    // br's next flush writes the same bytes: keys, arrays and timestamps are where br puts them.
    w.br(&b, &["sync", "--flush-only"]);
    let flushed = std::fs::read(b.join(".beads/issues.jsonl")).expect("flushed file");
    if flushed != merged {
        let changed: Vec<String> = String::from_utf8_lossy(&flushed)
            .lines()
            .zip(String::from_utf8_lossy(&merged).lines())
            .filter(|(x, y)| x != y)
            .map(|(x, y)| format!("merged: {y}\nbr:     {x}"))
            .collect();
        panic!("{pull:?}: br's flush rewrote {} line(s) of the merged file:\n{}", changed.len(), changed.join("\n"));
    }
    eprintln!("{pull:?}: br import ok | {total} of {total} expected values shown | 0 bytes changed by br's flush");

    // And A, pulling the result, sees the same: its edits are older than the merged records.
    w.git(&b, &["push", "-q", "origin", "HEAD:main"]);
    w.git(&a, &["pull", "-q", "--no-rebase", "origin", "main"]);
    w.br(&a, &["sync", "--import-only"]);
    for e in &expected {
        assert_eq!(w.show(&a, &e.id).get(e.field), Some(&e.value), "clone A after pulling the merge: {} {}", e.id, e.field);
    }
}

#[test]
fn regression_br_refused_merged_comment_ids_and_skipped_merged_records_after_git_merge() {
    if let Some(br) = real_br() {
        round_trip(br, Pull::Merge);
    }
}

#[test]
fn regression_br_refused_merged_comment_ids_and_skipped_merged_records_after_pull_rebase() {
    if let Some(br) = real_br() {
        round_trip(br, Pull::Rebase);
    }
}

impl World {
    /// Runs git and returns its whole output (hooks write to its stderr), failing the test when
    /// git fails.
    pub(crate) fn git_output(&self, cwd: &Path, args: &[&str]) -> std::process::Output {
        let out = run(self.command(Path::new("git"), cwd).args(args));
        assert!(out.status.success(), "git {args:?} in {}:\n{}", cwd.display(), String::from_utf8_lossy(&out.stderr));
        out
    }

    // A method like the other helpers of the world, though it needs nothing of it.
    #[allow(clippy::unused_self)]
    pub(crate) fn issues(&self, clone: &Path) -> Vec<u8> {
        std::fs::read(clone.join(".beads/issues.jsonl")).expect("issues file")
    }

    /// `br sync --flush-only` must not change a byte of the file.
    fn assert_flush_is_a_no_op(&self, clone: &Path, what: &str) {
        let before = self.issues(clone);
        self.br(clone, &["sync", "--flush-only"]);
        let after = self.issues(clone);
        assert!(
            before == after,
            "{what}: br's flush rewrote the file:\n--- before\n{}\n--- after\n{}",
            String::from_utf8_lossy(&before),
            String::from_utf8_lossy(&after)
        );
    }
}

/// What one clone's br shows of a child: (id, title, comment texts, labels, parent).
fn child_view(w: &World, clone: &Path, id: &str) -> (String, String, Vec<String>, Vec<String>, String) {
    let v = w.show(clone, id);
    let list = |key: &str, field: &str| -> Vec<String> {
        v[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| if field.is_empty() { x.as_str() } else { x[field].as_str() }.map(str::to_owned))
            .collect()
    };
    (
        v["id"].as_str().unwrap_or("").to_owned(),
        v["title"].as_str().unwrap_or("").to_owned(),
        list("comments", "text"),
        list("labels", ""),
        v["parent"].as_str().unwrap_or("").to_owned(),
    )
}

/// Both clones add a child to one epic (br numbers children per clone: both get `EPIC.1`), each
/// with a comment and a label, and B pulls. Both children must survive in both clones' br.
fn concurrent_children(br: PathBuf, pull: Pull) {
    let w = World::new(br);
    let a = w.clone("a");
    w.br(&a, &["init", "--prefix", "rt"]);
    let epic = w.create(&a, "Epic", &["-t", "epic"]);
    w.commit_issues(&a, "epic");
    w.git(&a, &["push", "-q", "origin", "main"]);
    let b = w.clone("b");
    w.br(&b, &["sync", "--import-only"]);
    w.install(&a);
    w.install(&b);

    let child = |clone: &Path, who: &str| -> String {
        let id = w.br(clone, &["create", &format!("Subtask from {who}"), "--parent", &epic, "--silent"]).trim().to_owned();
        w.br(clone, &["comments", "add", &id, &format!("{who}'s note")]);
        w.br(clone, &["label", "add", &id, &format!("from-{}", who.to_lowercase())]);
        id
    };
    let from_a = child(&a, "A");
    w.commit_issues(&a, "A: a subtask");
    w.git(&a, &["push", "-q", "origin", "main"]);
    let from_b = child(&b, "B");
    assert_eq!(from_a, from_b, "br numbers an epic's children per clone: both are {epic}.1");
    w.commit_issues(&b, "B: a subtask");

    let out = match pull {
        Pull::Merge => w.git_output(&b, &["pull", "--no-rebase", "origin", "main"]),
        Pull::Rebase => w.git_output(&b, &["pull", "--rebase", "origin", "main"]),
    };
    let hook_said = String::from_utf8_lossy(&out.stderr).into_owned();
    let merged = w.issues(&b);
    assert!(!merged.windows(7).any(|x| x == b"<<<<<<<"), "the merge left conflict markers");
    let ids_of = |bytes: &[u8], title: &str| -> Vec<String> {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["title"] == title)
            .filter_map(|v| v["id"].as_str().map(str::to_owned))
            .collect()
    };
    let (in_file_a, in_file_b) = (ids_of(&merged, "Subtask from A"), ids_of(&merged, "Subtask from B"));
    assert!(
        in_file_a.len() == 1 && in_file_b.len() == 1 && in_file_a != in_file_b,
        "{pull:?}: the merged file holds A's subtask as {in_file_a:?} and B's as {in_file_b:?}:\n{}",
        String::from_utf8_lossy(&merged)
    );
    // B's subtask was created later, so it moved; B's br holds it under the old id with a
    // comment, which a plain import refuses (br's known issue): the hook names the command right
    // for B's state (br flushed every edit, so its database holds none unexported: the forced
    // import; never `br sync --merge` without a base snapshot, which br refuses).
    assert_eq!(in_file_b[0], format!("{epic}.2"), "{pull:?}");
    let notice: Vec<&str> = hook_said.lines().filter(|l| l.starts_with("bd-sync: a merge kept two issues")).collect();
    assert!(
        notice.len() == 1
            && notice[0].contains(&format!("{epic}.1 is now {epic}.2"))
            && notice[0].contains("`br sync --import-only --force`"),
        "{pull:?}: the hook's one line names the move and the forced import; git said:\n{hook_said}"
    );
    w.br(&b, &["sync", "--import-only", "--force"]);

    let expect = |clone: &Path, name: &str| {
        let a_view = child_view(&w, clone, &in_file_a[0]);
        let b_view = child_view(&w, clone, &in_file_b[0]);
        let want = |id: &str, who: &str| {
            (
                id.to_owned(),
                format!("Subtask from {who}"),
                vec![format!("{who}'s note")],
                vec![format!("from-{}", who.to_lowercase())],
                epic.clone(),
            )
        };
        assert_eq!(a_view, want(&in_file_a[0], "A"), "{pull:?}: clone {name}'s br");
        assert_eq!(b_view, want(&in_file_b[0], "B"), "{pull:?}: clone {name}'s br");
    };
    expect(&b, "B");
    w.assert_flush_is_a_no_op(&b, "clone B");
    let b_file = w.issues(&b);
    eprintln!("{pull:?}: clone B's br shows {} and {} with their comments, labels and parent", in_file_a[0], in_file_b[0]);

    // A pulls the result: a plain import (A's own subtask kept its id).
    if b_file != merged {
        w.git(&b, &["commit", "-q", "-am", "br's import"]);
    }
    w.git(&b, &["push", "-q", "origin", "HEAD:main"]);
    let pulled = w.git_output(&a, &["pull", "--no-rebase", "origin", "main"]);
    let a_said = String::from_utf8_lossy(&pulled.stderr);
    assert!(!a_said.contains("a merge kept two issues"), "{pull:?}: nothing of A's moved, yet A's hook says:\n{a_said}");
    w.br(&a, &["sync", "--import-only"]);
    expect(&a, "A");
    w.assert_flush_is_a_no_op(&a, "clone A");
    assert_eq!(String::from_utf8_lossy(&w.issues(&a)), String::from_utf8_lossy(&w.issues(&b)), "{pull:?}: the clones' files differ");
    eprintln!("{pull:?}: clone A's br shows both too; 0 bytes changed by either br's flush; the files are identical");
}

#[test]
fn regression_two_clones_created_the_same_child_id_and_one_subtask_vanished_after_git_merge() {
    if let Some(br) = real_br() {
        concurrent_children(br, Pull::Merge);
    }
}

#[test]
fn regression_two_clones_created_the_same_child_id_and_one_subtask_vanished_after_pull_rebase() {
    if let Some(br) = real_br() {
        concurrent_children(br, Pull::Rebase);
    }
}

/// `git pull --rebase` drops a merge commit whose result br already imported and merges the same
/// commit again against a newer upstream. A stamp that depended on the inputs alone came out the
/// same for the new content, br skipped the record as equal, and its next flush put the old value
/// back: the merge stamp is never earlier than the merge's own time.
#[test]
fn regression_a_rebase_re_merge_repeated_a_stamp_and_br_put_the_old_value_back() {
    let Some(br) = real_br() else { return };
    let mut w = World::new(br);
    w.real_clock = true;
    let a = w.clone("a");
    w.br(&a, &["init", "--prefix", "rt"]);
    let r = w.create(&a, "Shared issue", &["-p", "2"]);
    w.create(&a, "Another issue", &[]);
    w.commit_issues(&a, "seed");
    w.git(&a, &["push", "-q", "origin", "main"]);
    let b = w.clone("b");
    w.br(&b, &["sync", "--import-only"]);
    w.install(&a);
    w.install(&b);

    w.br(&a, &["update", &r, "--title", "Retitled by A"]);
    w.commit_issues(&a, "A: title");
    w.git(&a, &["push", "-q", "origin", "main"]);
    w.br(&a, &["update", &r, "--assignee", "alice"]);
    w.commit_issues(&a, "A: assignee (pushed later)");
    // B's edit is the latest of the three, so it decides the merged record's stamp.
    w.br(&b, &["update", &r, "--priority", "0"]);
    w.commit_issues(&b, "B: priority");

    w.git(&b, &["pull", "-q", "--no-rebase", "origin", "main"]);
    w.br(&b, &["sync", "--import-only"]);
    let first = w.show(&b, &r);
    assert_eq!((first["title"].as_str(), first["priority"].as_i64()), (Some("Retitled by A"), Some(0)), "{first}");

    w.git(&a, &["push", "-q", "origin", "main"]);
    w.git(&b, &["pull", "-q", "--rebase", "origin", "main"]);
    w.br(&b, &["sync", "--import-only"]);
    let shown = w.show(&b, &r);
    let view = |v: &Value| (v["title"].as_str().map(str::to_owned), v["assignee"].as_str().map(str::to_owned), v["priority"].as_i64());
    let want = (Some("Retitled by A".to_owned()), Some("alice".to_owned()), Some(0));
    assert_eq!(
        view(&shown),
        want,
        "clone B's br after the rebase re-merge (first merge stamped {}, second {})",
        first["updated_at"],
        shown["updated_at"]
    );
    w.assert_flush_is_a_no_op(&b, "clone B");
    w.git(&b, &["push", "-q", "origin", "HEAD:main"]);
    w.git(&a, &["pull", "-q", "--no-rebase", "origin", "main"]);
    w.br(&a, &["sync", "--import-only"]);
    assert_eq!(view(&w.show(&a, &r)), want, "clone A's br");
    assert_eq!(w.issues(&a), w.issues(&b), "the clones' files differ");
    eprintln!(
        "rebase re-merge: both clones' br show title, assignee and priority; stamps {} then {}",
        first["updated_at"], shown["updated_at"]
    );
}

/// One clone's clock is two days behind: its edit of a record gets an `updated_at` earlier than
/// the base's, while the other clone edits the same record at the right time. Both edits must
/// reach both clones' br (the merged stamp follows the later side, not the merged value).
fn skewed_clock(br: PathBuf, pull: Pull) {
    let mut w = World::new(br);
    let a = w.clone("a");
    w.br(&a, &["init", "--prefix", "rt"]);
    // The issue was created five days ago and last edited yesterday (br refuses an updated_at
    // before created_at, so the skewed edit below lands between the two).
    w.skewed.push((a.clone(), "-5d"));
    let r = w.create(&a, "Shared issue", &["-p", "2"]);
    w.skewed[0].1 = "-1d";
    w.br(&a, &["update", &r, "--description", "Edited yesterday."]);
    w.commit_issues(&a, "seed");
    w.skewed.clear();
    w.git(&a, &["push", "-q", "origin", "main"]);
    let b = w.clone("b");
    w.skewed.push((b.clone(), "-2d"));
    w.br(&b, &["sync", "--import-only"]);
    w.install(&a);
    w.install(&b);

    w.br(&b, &["update", &r, "--priority", "0", "--assignee", "bob"]);
    let behind = w.show(&b, &r)["updated_at"].as_str().unwrap_or("").to_owned();
    w.commit_issues(&b, "B (clock behind): priority, assignee");
    w.br(&a, &["update", &r, "--title", "Retitled by A"]);
    w.commit_issues(&a, "A: title");
    w.git(&a, &["push", "-q", "origin", "main"]);
    match pull {
        Pull::Merge => w.git(&b, &["pull", "-q", "--no-rebase", "origin", "main"]),
        Pull::Rebase => w.git(&b, &["pull", "-q", "--rebase", "origin", "main"]),
    };
    w.br(&b, &["sync", "--import-only"]);
    let view = |v: &Value| (v["title"].as_str().map(str::to_owned), v["priority"].as_i64(), v["assignee"].as_str().map(str::to_owned));
    let want = (Some("Retitled by A".to_owned()), Some(0), Some("bob".to_owned()));
    assert_eq!(view(&w.show(&b, &r)), want, "{pull:?}: clone B's br (its own edit stamped {behind})");
    w.assert_flush_is_a_no_op(&b, "clone B");
    w.git(&b, &["push", "-q", "origin", "HEAD:main"]);
    w.git(&a, &["pull", "-q", "--no-rebase", "origin", "main"]);
    w.br(&a, &["sync", "--import-only"]);
    assert_eq!(view(&w.show(&a, &r)), want, "{pull:?}: clone A's br");
    w.assert_flush_is_a_no_op(&a, "clone A");
    assert_eq!(w.issues(&a), w.issues(&b), "{pull:?}: the clones' files differ");
    eprintln!("{pull:?} with B's clock 2 days behind: both clones' br show title, priority and assignee");
}

#[test]
fn a_clone_whose_clock_is_behind_edits_a_record_the_other_clone_also_edited_after_git_merge() {
    if let (Some(br), Some(_)) = (real_br(), real_faketime()) {
        skewed_clock(br, Pull::Merge);
    }
}

#[test]
fn a_clone_whose_clock_is_behind_edits_a_record_the_other_clone_also_edited_after_pull_rebase() {
    if let (Some(br), Some(_)) = (real_br(), real_faketime()) {
        skewed_clock(br, Pull::Rebase);
    }
}

/// The chain a multi-clone soak with br found: clone A's `git pull` merges B's close of an issue
/// into A's assignee edit (merge commit M, imported by A's br: closed), A's push is rejected, and
/// meanwhile C undid the close (here with `git revert`, so upstream's record is the one A's edit
/// started from). `git pull --rebase` drops M and replays A's commit: git takes A's record whole
/// (upstream left the file as A's parent had it, so no driver runs), with A's own `updated_at`,
/// older than the close br imported from M. br skipped it, and its next flush wrote `closed` back:
/// the reopen was reverted in every clone. After the rebase the post-rewrite hook stamps such
/// records, so br takes the rebased content.
#[test]
fn regression_a_rebase_dropped_a_merged_close_and_br_wrote_it_back_over_the_reopen() {
    let Some(br) = real_br() else { return };
    let mut w = World::new(br);
    w.real_clock = true;
    let a = w.clone("a");
    w.br(&a, &["init", "--prefix", "rt"]);
    let x = w.create(&a, "The issue that is closed and reopened", &["-p", "2"]);
    w.create(&a, "Another issue", &[]);
    w.commit_issues(&a, "seed");
    w.git(&a, &["push", "-q", "origin", "main"]);
    let (b, c) = (w.clone("b"), w.clone("c"));
    for clone in [&a, &b, &c] {
        w.install(clone);
    }
    w.br(&b, &["sync", "--import-only"]);
    w.br(&c, &["sync", "--import-only"]);

    w.br(&a, &["update", &x, "--assignee", "alice"]);
    w.commit_issues(&a, "A: assignee");
    w.br(&b, &["close", &x]);
    w.commit_issues(&b, "B: close");
    w.git(&b, &["push", "-q", "origin", "main"]);

    // A merges the close in; its br imports the merge commit.
    w.git(&a, &["pull", "-q", "--no-rebase", "origin", "main"]);
    w.br(&a, &["sync", "--import-only"]);
    let merged = w.show(&a, &x);
    assert_eq!((merged["status"].as_str(), merged["assignee"].as_str()), (Some("closed"), Some("alice")), "{merged}");

    // C undoes the close and pushes first.
    w.git(&c, &["pull", "-q", "--no-rebase", "origin", "main"]);
    w.git(&c, &["revert", "--no-edit", "HEAD"]);
    w.git(&c, &["push", "-q", "origin", "main"]);

    w.git(&a, &["pull", "-q", "--rebase", "origin", "main"]);
    w.br(&a, &["sync", "--import-only"]);
    let shown = w.show(&a, &x);
    assert_eq!(
        (shown["status"].as_str(), shown["assignee"].as_str()),
        (Some("open"), Some("alice")),
        "after the rebase A's br must hold upstream's reopen with A's assignee (merged close stamped {}, now {}):\n{shown}",
        merged["updated_at"],
        shown["updated_at"]
    );
    w.br(&a, &["sync", "--flush-only"]);
    let file = String::from_utf8_lossy(&w.issues(&a)).into_owned();
    let line = file.lines().find(|l| l.contains(&format!("\"id\":\"{x}\""))).unwrap_or_default();
    assert!(line.contains("\"status\":\"open\"") && line.contains("\"assignee\":\"alice\""), "A's next flush writes:\n{line}");
}

/// br's `orphans` (issues still open that a commit names) reads commit subjects only, as `(id)`
/// or a bare id: with `git config beads.commitLink subject` (or `both`) the bridge appends
/// ` (id)` to the subject, and br finds the commit; with the default trailer it does not.
#[test]
fn br_orphans_finds_the_commits_the_bridge_links_by_subject() {
    let Some(br) = real_br() else { return };
    let w = World::new(br);
    let a = w.clone("a");
    w.br(&a, &["init", "--prefix", "rt"]);
    let ids: Vec<String> = ["trailer", "subject", "both"].iter().map(|k| w.create(&a, &format!("Linked by {k}"), &[])).collect();
    w.commit_issues(&a, "seed");
    w.install(&a);
    for (link, id) in ["trailer", "subject", "both"].iter().zip(&ids) {
        w.git(&a, &["config", "beads.commitLink", link]);
        std::fs::write(a.join(format!("{link}.txt")), link).expect("write");
        w.git(&a, &["add", &format!("{link}.txt")]);
        let out = run(w.command(Path::new("git"), &a).env("BEADS_ISSUE", id).args(["commit", "-q", "-m", &format!("Work by {link}")]));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let message = w.git(&a, &["log", "-1", "--format=%B"]);
        assert_eq!(message.lines().next() == Some(&format!("Work by {link} ({id})")[..]), *link != "trailer", "{link}: {message}");
        assert_eq!(message.contains(&format!("Beads-Issue: {id}")), *link != "subject", "{link}: {message}");
    }
    let orphans: Value = serde_json::from_str(&w.br(&a, &["orphans", "--json"])).expect("br orphans --json");
    let found: Vec<&str> = orphans.as_array().into_iter().flatten().filter_map(|o| o["issue_id"].as_str()).collect();
    assert!(!found.contains(&ids[0].as_str()) && found.contains(&ids[1].as_str()) && found.contains(&ids[2].as_str()), "{orphans}");
    // Our own index reads both forms.
    for id in &ids {
        let out = run(w.command(&crate::support::bin("bd-sync"), &a).args(["show", id, "--json"]));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Work by"), "bd-sync show {id} lists its commit: {text}");
    }
}

/// The advice after a merge moved an issue of this clone fits the clone's state (br 0.7.6,
/// tried in each): no unexported edit in br's database: `br sync --import-only --force` (with
/// `git config beads.brSyncMerge true` the hook runs it); unexported edits and a base snapshot
/// that is the file from before the merge: `br sync --merge`, which keeps them; unexported edits
/// and no such base: no command at all (each would lose one side), and the line says why.
#[test]
fn the_advice_after_a_merge_moved_an_issue_fits_the_clones_state() {
    let Some(br) = real_br() else { return };
    for state in ["run by the hook", "unexported edit, base", "unexported edit, no base"] {
        let w = World::new(br.clone());
        let a = w.clone("a");
        w.br(&a, &["init", "--prefix", "rt"]);
        let epic = w.create(&a, "Epic", &["-t", "epic"]);
        w.commit_issues(&a, "epic");
        w.git(&a, &["push", "-q", "origin", "main"]);
        let b = w.clone("b");
        w.br(&b, &["sync", "--import-only"]);
        w.install(&a);
        w.install(&b);
        let child = |clone: &Path, who: &str| -> String {
            let id = w.br(clone, &["create", &format!("Subtask from {who}"), "--parent", &epic, "--silent"]).trim().to_owned();
            w.br(clone, &["comments", "add", &id, &format!("{who}'s note")]);
            id
        };
        child(&a, "A");
        w.commit_issues(&a, "A: a subtask");
        w.git(&a, &["push", "-q", "origin", "main"]);
        child(&b, "B");
        w.commit_issues(&b, "B: a subtask");
        match state {
            "run by the hook" => {
                w.git(&b, &["config", "beads.brSyncMerge", "true"]);
            }
            _ => {
                w.br(&b, &["--no-auto-flush", "update", &epic, "--title", "Epic, retitled in B"]);
                if state.ends_with("no base") {
                    std::fs::remove_file(b.join(".beads/beads.base.jsonl")).expect("a base snapshot after the flush");
                }
            }
        }
        let out = w.git_output(&b, &["pull", "--no-rebase", "origin", "main"]);
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        let notice = said.lines().find(|l| l.starts_with("bd-sync: a merge kept two issues")).unwrap_or_else(|| panic!("{state}: {said}"));
        match state {
            "run by the hook" => assert!(notice.contains("ran `br sync --import-only --force`"), "{state}: {notice}"),
            "unexported edit, base" => {
                assert!(notice.contains("`br sync --merge`"), "{state}: {notice}");
                w.br(&b, &["sync", "--merge"]);
            }
            _ => {
                assert!(!notice.contains("`br sync") && notice.contains("no br command takes the merged file"), "{state}: {notice}");
                continue;
            }
        }
        let listed = w.br(&b, &["list", "--all", "--json"]);
        assert!(listed.contains("Subtask from A") && listed.contains("Subtask from B"), "{state}: B's br holds both:\n{listed}");
        if state == "unexported edit, base" {
            assert!(listed.contains("Epic, retitled in B"), "{state}: the unexported edit is kept:\n{listed}");
        }
    }
}
