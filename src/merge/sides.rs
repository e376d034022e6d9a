//! The sides of a merge as a person knows them: git's labels (`%X` / `%Y`), and in a rebase,
//! where git's `ours` is upstream and `theirs` your own commit, upstream's branch name and "your
//! commit". The driver's report lines, its rename warnings and the merge log all name the sides
//! through here, so one merge's sides have one name everywhere.

use std::path::{Path, PathBuf};

use super::types::{Labels, Report, Side, SideNames};

fn git_in(dir: &Path, args: &[&str]) -> Option<String> {
    crate::git::run(dir, args).ok().filter(|s| !s.is_empty())
}

impl SideNames {
    /// The sides of a merge run in `dir` (the work tree root for the driver). `None` outside a
    /// repository. Labels git did not give become `ours` / `theirs`; in a rebase an `ours` label
    /// of `HEAD` becomes the branch (or commit) being rebased onto.
    pub fn detect(dir: &Path, ours: Option<&str>, theirs: Option<&str>) -> Option<SideNames> {
        // One git process for both paths (a merge driver's every millisecond counts).
        let paths = git_in(dir, &["rev-parse", "--path-format=absolute", "--git-path", "rebase-merge", "--git-path", "rebase-apply"])?;
        // git before 2.31 ignores `--path-format` and prints relative paths: those are not used.
        let state = paths.lines().map(PathBuf::from).filter(|p| p.is_absolute()).find(|p| p.is_dir());
        let mut labels = Labels {
            ours: ours.filter(|s| !s.is_empty()).unwrap_or("ours").to_owned(),
            theirs: theirs.filter(|s| !s.is_empty()).unwrap_or("theirs").to_owned(),
        };
        if let Some(state) = &state {
            if labels.ours == "HEAD" || labels.ours == "ours" {
                if let Some(name) = upstream_name(dir, state) {
                    labels.ours = name;
                }
            }
        } else {
            // A plain `git pull` labels the other side with the fetched commit's raw hash: named
            // by the branch that points at it (`origin/main`), else shortened.
            for label in [&mut labels.ours, &mut labels.theirs] {
                if is_object_id(label) {
                    if let Some(name) = commit_name(dir, label) {
                        *label = name;
                    }
                }
            }
        }
        Some(SideNames { labels, rebase: state.is_some() })
    }

    /// How one side is named to a person: `upstream (main)` / `your commit 1a2b3c4` in a
    /// rebase, the label itself in a merge.
    pub fn name(&self, side: Side) -> String {
        side_name(&self.labels, self.rebase, side)
    }
}

/// How one side of a merge with these labels is named to a person (see [`SideNames::name`]).
pub fn side_name(labels: &Labels, rebase: bool, side: Side) -> String {
    match (side, rebase) {
        (Side::Ours, true) => format!("upstream ({})", labels.ours),
        (Side::Theirs, true) => match labels.theirs.split_whitespace().next() {
            Some(hash) if hash != "theirs" => format!("your commit {hash}"),
            _ => "your commit".to_owned(),
        },
        (Side::Ours, false) => labels.ours.clone(),
        (Side::Theirs, false) => labels.theirs.clone(),
    }
}

/// Whether `label` is a whole object id (40 or 64 hex digits), as git labels a commit it has no
/// name for.
fn is_object_id(label: &str) -> bool {
    matches!(label.len(), 40 | 64) && label.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The name of what a rebase is replaying onto: a branch pointing at `onto`, else its short hash.
fn upstream_name(dir: &Path, state: &Path) -> Option<String> {
    let onto = std::fs::read_to_string(state.join("onto")).ok()?;
    commit_name(dir, onto.trim())
}

/// A commit as a person knows it: a local or remote-tracking branch pointing at it, else its
/// short hash.
fn commit_name(dir: &Path, onto: &str) -> Option<String> {
    if onto.is_empty() || !onto.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let points_at = format!("--points-at={onto}");
    let names = git_in(dir, &["for-each-ref", &points_at, "--format=%(refname)", "refs/heads", "refs/remotes"]);
    names
        .and_then(|n| {
            n.lines()
                .filter(|l| !l.ends_with("/HEAD"))
                .find_map(|l| l.strip_prefix("refs/heads/").or_else(|| l.strip_prefix("refs/remotes/")).map(str::to_owned))
        })
        .or_else(|| git_in(dir, &["rev-parse", "--short", onto]))
}

/// The merge's words for why, with `ours` and `theirs` replaced by the sides' names.
pub fn name_sides(detail: &str, labels: &Labels, rebase: bool) -> String {
    let mut out = String::with_capacity(detail.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match word.as_str() {
            "ours" => out.push_str(&side_name(labels, rebase, Side::Ours)),
            "theirs" => out.push_str(&side_name(labels, rebase, Side::Theirs)),
            w => out.push_str(w),
        }
        word.clear();
    };
    for c in detail.chars() {
        if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `name's`, or `name'` when the name ends in s.
pub fn possessive(name: &str) -> String {
    if name.ends_with('s') {
        format!("{name}'")
    } else {
        format!("{name}'s")
    }
}

/// The one-line stderr report of an auto-resolved conflict, naming the sides by their labels:
/// `bd-7: title: kept "A" from upstream (main) over your commit 1a2b3c4's "B" (newer updated_at)`.
pub fn describe(report: &Report, labels: &Labels, rebase: bool) -> String {
    let r = &report.resolution;
    let other = if r.kept == Side::Ours { Side::Theirs } else { Side::Ours };
    let name = |side| crate::record::printable(&side_name(labels, rebase, side), 200);
    let (kept, dropped) = (name(r.kept), name(other));
    let id = crate::record::key_label(&report.id);
    let why = crate::record::printable(&name_sides(&r.reason, labels, rebase), 400);
    if r.field == "(record)" {
        format!("{id}: {}: kept {} from {kept} over {} from {dropped} ({why})", r.field, r.kept_value, r.other_value)
    } else {
        format!("{id}: {}: kept {} from {kept} over {} {} ({why})", r.field, r.kept_value, possessive(&dropped), r.other_value)
    }
}
