//! The soak: K clones of one bare origin, each editing with the real br only (titles, priorities,
//! statuses, closes and reopens, labels, dependencies, comments, new issues and subtasks),
//! committing through the installed hooks, pulling through the driver (merge or rebase, chosen
//! by the seed) and pushing with races, for R rounds. At the end every clone's issues file is
//! the same bytes, `br list --all --json` agrees in every clone, no pull stopped on a conflict,
//! and no value was lost (docs/testing.md, "The soak with the real br", says what "lost" means
//! under the merge's rules).
//!
//! `cargo test` runs a short soak (3 clones, 8 rounds). `BR_SOAK=KxR` sets the size (`.ci/run`:
//! `4x100`) and `BR_SOAK_SEED=N` the seed; a failure prints the command that repeats it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::br_roundtrip::World;
use crate::support::{real_br, run};

/// A small deterministic generator (the same seed gives the same run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// What the run wrote, to hold the end state to.
#[derive(Default)]
struct Written {
    /// Every issue created, with the clone that created it, and the order they were made in.
    created: BTreeMap<String, usize>,
    order: Vec<String>,
    /// Per issue and field, every value written, in the order of the run, with its writer.
    values: BTreeMap<(String, &'static str), Vec<(Value, usize)>>,
    /// Labels added (never removed), comments added (never removed), dependencies added.
    labels: BTreeSet<(String, String)>,
    comments: BTreeSet<(String, String)>,
    deps: BTreeSet<(String, String)>,
}

impl Written {
    fn create(&mut self, id: &str, title: String, clone: usize) {
        self.created.insert(id.to_owned(), clone);
        self.order.push(id.to_owned());
        self.put(id, "title", Value::from(title), clone);
    }

    fn put(&mut self, id: &str, field: &'static str, value: Value, clone: usize) {
        self.values.entry((id.to_owned(), field)).or_default().push((value, clone));
    }
}

/// The size and seed of a run, from the environment.
fn config() -> (usize, usize, u64) {
    let (k, r) = std::env::var("BR_SOAK")
        .ok()
        .and_then(|v| v.split_once('x').and_then(|(k, r)| Some((k.trim().parse().ok()?, r.trim().parse().ok()?))))
        .unwrap_or((3, 8));
    let seed = std::env::var("BR_SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20_261_128);
    (k, r, seed)
}

/// One clone's edits in one round: one to three br commands, each writing a value nobody else
/// writes (the clone, the round and a counter in it).
fn edit(w: &World, rng: &mut Rng, written: &mut Written, known: &mut BTreeSet<String>, clone: &Path, who: usize, round: usize) {
    for n in 0..=rng.below(3) {
        let tag = format!("c{who}r{round}n{n}");
        // The issues this clone has, in the order the run made them.
        let ids: Vec<String> = written.order.iter().filter(|id| known.contains(*id)).cloned().collect();
        let id = ids[rng.below(ids.len())].clone();
        match rng.below(10) {
            0 => {
                let title = format!("Title {tag}");
                w.br(clone, &["update", &id, "--title", &title]);
                written.put(&id, "title", Value::from(title), who);
            }
            1 => {
                let p = rng.below(5);
                w.br(clone, &["update", &id, "--priority", &p.to_string()]);
                written.put(&id, "priority", Value::from(p), who);
            }
            2 => {
                if w.show(clone, &id)["status"] != "closed" {
                    w.br(clone, &["close", &id, "--force", "--reason", &format!("Closed {tag}")]);
                    written.put(&id, "status", Value::from("closed"), who);
                }
            }
            3 => {
                // Reopen what is closed here; otherwise start work on it.
                let shown = w.show(clone, &id);
                if shown["status"] == "closed" {
                    w.br(clone, &["reopen", &id]);
                    written.put(&id, "status", Value::from("open"), who);
                } else {
                    w.br(clone, &["update", &id, "--status", "in_progress", "--force"]);
                    written.put(&id, "status", Value::from("in_progress"), who);
                }
            }
            4 => {
                let label = format!("l-{tag}");
                w.br(clone, &["label", "add", &id, &label]);
                written.labels.insert((id, label));
            }
            5 => {
                let text = format!("Comment {tag}");
                w.br(clone, &["comments", "add", &id, &text]);
                written.comments.insert((id, text));
            }
            6 => {
                // Only from a later issue to an earlier one, in the order this run made them: no cycle.
                let (a, b) = (rng.below(ids.len()), rng.below(ids.len()));
                let (from, to) = (ids[a.max(b)].clone(), ids[a.min(b)].clone());
                if from != to && !written.deps.contains(&(from.clone(), to.clone())) {
                    // br refuses a cycle, and counts a parent's subtree as depending with it.
                    let out = w.br_output(clone, &["dep", "add", &from, &to]);
                    let said = String::from_utf8_lossy(&out.stderr);
                    assert!(out.status.success() || said.contains("Cycle detected"), "br dep add {from} {to}: {said}");
                    if out.status.success() {
                        written.deps.insert((from, to));
                    }
                }
            }
            7 => {
                let title = format!("Subtask {tag}");
                let child = w.br(clone, &["create", &title, "--parent", &id, "--silent"]).trim().to_owned();
                assert!(!child.is_empty(), "br create --parent printed no id");
                written.create(&child, title, who);
                known.insert(child.clone());
                written.deps.insert((child, id));
            }
            _ => {
                let title = format!("New {tag}");
                let new = w.create(clone, &title, &["-p", &rng.below(5).to_string()]);
                known.insert(new.clone());
                written.create(&new, title, who);
            }
        }
    }
}

/// br's flush, then a commit through the hooks (none when the round's edits changed nothing:
/// a close of what another clone closed, say).
fn commit(w: &World, clone: &Path, message: &str) {
    w.br(clone, &["sync", "--flush-only"]);
    w.git(clone, &["add", ".beads/issues.jsonl"]);
    if !run(w.command(Path::new("git"), clone).args(["diff", "--cached", "--quiet"])).status.success() {
        w.git(clone, &["commit", "-q", "-m", message]);
    }
}

/// `git pull`, by merge or rebase as the seed says; a pull that stops (a conflict) fails the run,
/// naming the seed.
fn pull(w: &World, clone: &Path, rebase: bool, repeat: &str) {
    let how = if rebase { "--rebase" } else { "--no-rebase" };
    let out = run(w.command(Path::new("git"), clone).args(["pull", "-q", how, "origin", "main"]));
    assert!(
        out.status.success(),
        "git pull {how} stopped in {}:\n{}{}\nrepeat with: {repeat}",
        clone.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    w.br(clone, &["sync", "--import-only"]);
}

/// Pushes, pulling again while another clone got there first; what the clone has is then
/// upstream's (`known`, `origin`: the issues each side has).
fn push(w: &World, clone: &Path, rng: &mut Rng, known: &mut BTreeSet<String>, origin: &mut BTreeSet<String>, repeat: &str) {
    for _ in 0..20 {
        let out = run(w.command(Path::new("git"), clone).args(["push", "-q", "origin", "HEAD:main"]));
        if out.status.success() {
            origin.extend(known.iter().cloned());
            return;
        }
        pull(w, clone, rng.below(2) == 0, repeat);
        known.extend(origin.iter().cloned());
    }
    panic!("{}: could not push in 20 tries\nrepeat with: {repeat}", clone.display());
}

#[test]
fn clones_editing_with_br_converge_without_conflicts_or_lost_values() {
    let Some(br) = real_br() else {
        assert!(std::env::var_os("BR_SOAK").is_none(), "BR_SOAK asks for the soak, and br is not installed (.ci/tools.sh)");
        return;
    };
    let (k, rounds, seed) = config();
    let repeat = format!("BR_SOAK={k}x{rounds} BR_SOAK_SEED={seed} cargo test --test integration br_soak");
    let started = std::time::Instant::now();
    let mut w = World::new(br);
    w.real_clock = true;
    let mut rng = Rng(seed);
    let mut written = Written::default();
    let first = w.clone("c0");
    w.br(&first, &["init", "--prefix", "sk"]);
    for n in 0..8 {
        let title = format!("Seed {n}");
        let id = w.create(&first, &title, &["-p", &(n % 5).to_string()]);
        written.create(&id, title, 0);
    }
    let mut origin: BTreeSet<String> = written.order.iter().cloned().collect();
    let mut known: Vec<BTreeSet<String>> = vec![origin.clone(); k];
    w.commit_issues(&first, "seed");
    w.git(&first, &["push", "-q", "origin", "main"]);
    let mut clones: Vec<PathBuf> = vec![first];
    for c in 1..k {
        let clone = w.clone(&format!("c{c}"));
        w.br(&clone, &["sync", "--import-only"]);
        clones.push(clone);
    }
    for clone in &clones {
        w.install(clone);
    }
    let (mut pulls, mut pushes) = (0, 0);
    for round in 0..rounds {
        // Each clone in an order of the seed's choosing; some skip the pull before editing, so
        // their push races an upstream that moved.
        let mut order: Vec<usize> = (0..k).collect();
        for i in (1..k).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for who in order {
            let clone = &clones[who];
            if rng.below(3) > 0 {
                pull(&w, clone, rng.below(2) == 0, &repeat);
                known[who].extend(origin.iter().cloned());
                pulls += 1;
            }
            edit(&w, &mut rng, &mut written, &mut known[who], clone, who, round);
            commit(&w, clone, &format!("c{who} round {round}"));
            if rng.below(4) > 0 {
                push(&w, clone, &mut rng, &mut known[who], &mut origin, &repeat);
                pushes += 1;
            }
        }
    }
    // Everyone publishes, then everyone takes the result.
    for (who, clone) in clones.iter().enumerate() {
        pull(&w, clone, false, &repeat);
        known[who].extend(origin.iter().cloned());
        push(&w, clone, &mut rng, &mut known[who], &mut origin, &repeat);
    }
    for clone in &clones {
        pull(&w, clone, false, &repeat);
    }
    let files: Vec<Vec<u8>> = clones.iter().map(|c| w.issues(c)).collect();
    for (n, file) in files.iter().enumerate() {
        assert!(file == &files[0], "clone c{n}'s issues file differs from c0's\nrepeat with: {repeat}");
        assert!(!file.windows(7).any(|x| x == b"<<<<<<<"), "conflict markers in c{n}\nrepeat with: {repeat}");
    }
    // br keeps one field of its own beside what the file says: the path of the checkout that
    // created a subtask (`source_repo_path`), which differs by clone by nature.
    let lists: Vec<Value> = clones
        .iter()
        .map(|c| {
            let mut list: Value = serde_json::from_str(&w.br(c, &["list", "--all", "--json", "--limit", "0"])).expect("br list --json");
            for issue in list["issues"].as_array_mut().into_iter().flatten() {
                issue.as_object_mut().map(|o| o.remove("source_repo_path"));
            }
            list
        })
        .collect();
    assert_eq!(lists[0]["total"], written.created.len(), "br list --all in c0\nrepeat with: {repeat}");
    for (n, list) in lists.iter().enumerate() {
        assert_eq!(list, &lists[0], "br list --all --json in c{n} differs from c0's\nrepeat with: {repeat}");
    }
    let lost = lost_values(&w, &clones[0], &written);
    assert!(lost.is_empty(), "{} value(s) lost:\n{}\nrepeat with: {repeat}", lost.len(), lost.join("\n"));
    eprintln!(
        "br soak: {k} clones x {rounds} rounds, seed {seed}: {} issues, {} field writes, {} labels, {} comments, {} dependencies, \
         {pulls} pulls, {pushes} pushes, no conflict, nothing lost, {:.0} s",
        written.created.len(),
        written.values.values().map(Vec::len).sum::<usize>(),
        written.labels.len(),
        written.comments.len(),
        written.deps.len(),
        started.elapsed().as_secs_f64()
    );
}

/// What the run wrote and the end state lacks. A field must hold the last value one of its writers
/// wrote (the only writer's, where one clone wrote it; which of several follows the merge's rule
/// for concurrent edits: the later record wins); labels, comments, dependencies and issues added
/// are all there.
fn lost_values(w: &World, clone: &Path, written: &Written) -> Vec<String> {
    let file = String::from_utf8_lossy(&w.issues(clone)).into_owned();
    let records: BTreeMap<String, Value> = file
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| Some((v.get("id")?.as_str()?.to_owned(), v)))
        .collect();
    let mut lost = Vec::new();
    for id in written.created.keys() {
        match records.get(id) {
            None => lost.push(format!("{id}: created, missing from the file")),
            Some(r) if r["status"] == "tombstone" => lost.push(format!("{id}: created, now a tombstone")),
            Some(_) => {}
        }
    }
    for ((id, field), writes) in &written.values {
        let Some(record) = records.get(id) else { continue };
        let now = record.get(*field).cloned().unwrap_or(Value::Null);
        // Each writer's last value: an earlier one its own later write replaced cannot come back.
        let last: BTreeMap<usize, &Value> = writes.iter().map(|(v, c)| (*c, v)).collect();
        let ok = last.values().any(|v| **v == now);
        if !ok {
            lost.push(format!(
                "{id} {field}: holds {now}; written {:?}",
                writes.iter().map(|(v, c)| format!("{v} by c{c}")).collect::<Vec<_>>()
            ));
        }
    }
    let strings = |id: &str, key: &str, field: &str| -> Vec<String> {
        let Some(items) = records.get(id).and_then(|r| r.get(key)).and_then(Value::as_array) else { return Vec::new() };
        items.iter().filter_map(|x| if field.is_empty() { x.as_str() } else { x.get(field)?.as_str() }.map(str::to_owned)).collect()
    };
    for (id, label) in &written.labels {
        if !strings(id, "labels", "").contains(label) {
            lost.push(format!("{id}: label {label} added, missing"));
        }
    }
    for (id, text) in &written.comments {
        if !strings(id, "comments", "text").contains(text) {
            lost.push(format!("{id}: comment {text:?} added, missing"));
        }
    }
    for (from, to) in &written.deps {
        if !strings(from, "dependencies", "depends_on_id").contains(to) {
            lost.push(format!("{from}: dependency on {to} added, missing"));
        }
    }
    lost
}
