//! `bd-sync check`: problems in an issues file that tools should not paper over.
//!
//! The checks read the file itself (not the cache), so they also find what import refuses:
//! malformed lines and leftover conflict markers. Each finding names the line or id and says what
//! to do. Installation health (driver, attributes, hooks) is checked by [`crate::install`], and
//! [`crate::doctor`] runs both for `bd-sync check`.

use std::collections::{BTreeMap, HashMap, HashSet};

mod br_rules;
mod findings;

pub use findings::{CheckReport, Finding, FindingKind, Severity};

use crate::fix::Fix;
use crate::index::IdIndex;
use crate::record::{parse_json_str, split_array, LineProblem, RawObject};

/// Statuses seen in the wild; anything else is reported (never rejected).
pub const KNOWN_STATUSES: &[&str] =
    &["open", "in_progress", "blocked", "deferred", "closed", "tombstone", "hooked", "pinned", "not_ready", "deleted"];

/// Whether a dependency target names another project's issue (bd's `external:<project>:<id>`).
pub fn is_external_reference(target: &str) -> bool {
    target.starts_with("external:")
}

/// What the line-by-line pass of [`check_file`] gathers for the whole-file checks after it.
#[derive(Default)]
struct Scan {
    findings: Vec<Finding>,
    /// issue -> the ids it `blocks`-depends on
    blocks: HashMap<String, Vec<String>>,
    /// (issue, target, dependency type, line)
    deps: Vec<(String, String, String, usize)>,
    /// pinned `<role> Handoff` title -> issues
    handoffs: BTreeMap<String, Vec<String>>,
    /// comment id -> the (issue, line, comment without its id) that use it
    comment_ids: BTreeMap<String, Vec<(String, usize, String)>>,
    highest_comment_id: i64,
}

/// Checks file content: the findings, and the number of external references left unchecked.
pub fn check_file(content: &[u8]) -> (Vec<Finding>, usize) {
    let index = IdIndex::new(content);
    let mut scan = Scan::default();
    for (i, (line, key)) in index.file.lines.iter().zip(&index.line_ids).enumerate() {
        scan.line(&index, i, line, key.as_deref());
    }
    let Scan { mut findings, blocks, deps, handoffs, comment_ids, highest_comment_id } = scan;
    findings.extend(duplicate_ids(&index));
    let (dangling, external) = dangling_dependencies(&index, &deps);
    findings.extend(dangling);
    for cycle in blocks_cycles(&blocks) {
        findings.push(Finding::new(
            FindingKind::DependencyCycle,
            Some(&cycle[0]),
            Vec::new(),
            format!("blocks cycle: {} -> {}", cycle.join(" -> "), cycle[0]),
        ));
    }
    findings.extend(comment_id_findings(&comment_ids, highest_comment_id));
    findings.extend(br_rules::refused_lines(content));
    if crate::merge::derived::mentions_counts(content) {
        findings.extend(stale_derived_fields(&index));
    }
    for (title, ids) in handoffs {
        if ids.len() > 1 {
            findings.push(Finding::new(
                FindingKind::DuplicatePinnedHandoff,
                Some(&ids[0]),
                Vec::new(),
                format!("{} pinned beads titled {title:?}: {}", ids.len(), ids.join(", ")),
            ));
        }
    }
    (findings, external)
}

impl Scan {
    /// Line `i`: its own problems, and what it adds to the whole-file checks.
    fn line(&mut self, index: &IdIndex<'_>, i: usize, line: &crate::jsonl::Line<'_>, key: Option<&str>) {
        let obj = match RawObject::parse(line.bytes) {
            Ok(o) => o,
            Err(LineProblem::ConflictMarker) => {
                self.findings.push(
                    Finding::new(
                        FindingKind::ConflictMarker,
                        None,
                        vec![line.number],
                        "leftover git conflict marker (a merge committed or left unfinished)".into(),
                    )
                    .with_fix(Fix::ResolveThenAdd { file: None }),
                );
                return;
            }
            Err(p) => {
                self.findings.push(Finding::new(FindingKind::MalformedLine, None, vec![line.number], p.to_string()));
                return;
            }
        };
        for key in obj.repeated_keys() {
            self.findings.push(Finding::new(
                FindingKind::DuplicateKey,
                None,
                vec![line.number],
                format!(
                    "key {} appears more than once; bd (Go) and bd-sync use its last value, other readers may not: keep one",
                    crate::record::printable(key, 40)
                ),
            ));
        }
        let id = match key {
            // bd 1.0's header, memories and other record kinds: fine as they are.
            Some(key) if !crate::record::is_issue_key(key) => return,
            Some(id) => id.to_string(),
            None => {
                // `bad` is in line order: the problem of line index `i` is found by bisection.
                let problem = index.bad.binary_search_by_key(&i, |(j, _)| *j).map(|k| index.bad[k].1.to_string());
                self.findings.push(Finding::new(FindingKind::MalformedLine, None, vec![line.number], problem.unwrap_or_default()));
                return;
            }
        };
        self.status(&obj, &id, line.number);
        self.dependencies(&obj, &id, line.number);
        self.comments(&obj, &id, line.number);
    }

    /// `status` and `closed_at` agree, the status is known, pinned handoffs are collected.
    fn status(&mut self, obj: &RawObject<'_>, id: &str, number: usize) {
        let text = |k: &str| obj.get(k).and_then(parse_json_str).map(std::borrow::Cow::into_owned);
        let status = text("status");
        let has_closed_at = obj.get("closed_at").is_some_and(|v| v != "null");
        match status.as_deref() {
            Some("closed") if !has_closed_at => self.findings.push(Finding::new(
                FindingKind::ClosedWithoutClosedAt,
                Some(id),
                vec![number],
                "status is closed but closed_at is missing".into(),
            )),
            Some(s) if s != "closed" && s != "tombstone" && s != "deleted" && has_closed_at => self.findings.push(Finding::new(
                FindingKind::ClosedAtOnOpenIssue,
                Some(id),
                vec![number],
                format!("status is {s} but closed_at is set"),
            )),
            _ => {}
        }
        if let Some(s) = &status {
            if !KNOWN_STATUSES.contains(&s.as_str()) {
                self.findings.push(Finding::new(
                    FindingKind::UnknownStatus,
                    Some(id),
                    vec![number],
                    format!("status {s:?} is not one of {}", KNOWN_STATUSES.join(", ")),
                ));
            }
        }
        if status.as_deref() == Some("pinned") {
            if let Some(title) = text("title") {
                let words: Vec<&str> = title.split_whitespace().collect();
                if words.len() == 2 && words[1] == "Handoff" {
                    self.handoffs.entry(title).or_default().push(id.to_owned());
                }
            }
        }
    }

    fn dependencies(&mut self, obj: &RawObject<'_>, id: &str, number: usize) {
        for e in obj.get("dependencies").and_then(split_array).unwrap_or_default() {
            let Some(d) = RawObject::parse_trusted(e) else {
                continue;
            };
            let on = d.get("depends_on_id").and_then(parse_json_str).map(std::borrow::Cow::into_owned).unwrap_or_default();
            let kind = d.get("type").and_then(parse_json_str).map(std::borrow::Cow::into_owned).unwrap_or_else(|| "blocks".into());
            if kind == "blocks" {
                self.blocks.entry(id.to_owned()).or_default().push(on.clone());
            }
            self.deps.push((id.to_owned(), on, kind, number));
        }
    }

    fn comments(&mut self, obj: &RawObject<'_>, id: &str, number: usize) {
        for e in obj.get("comments").and_then(split_array).unwrap_or_default() {
            let Ok(serde_json::Value::Object(mut comment)) = serde_json::from_str::<serde_json::Value>(e) else {
                continue;
            };
            let Some(n) = comment.remove("id").filter(|n| !n.is_null()) else {
                continue;
            };
            self.highest_comment_id = self.highest_comment_id.max(n.as_i64().unwrap_or(0));
            let uses = self.comment_ids.entry(n.to_string()).or_default();
            let content = serde_json::Value::Object(comment).to_string();
            if !uses.iter().any(|(i, _, c)| *i == id && *c == content) {
                uses.push((id.to_owned(), number, content));
            }
        }
    }
}

/// Ids on several lines, in id order.
fn duplicate_ids(index: &IdIndex<'_>) -> Vec<Finding> {
    let mut repeated: Vec<(&str, Vec<usize>)> = index
        .issues_in_order()
        .filter(|(_, slot)| slot.indexes().len() > 1)
        .map(|(id, slot)| (id.as_ref(), slot.indexes().iter().map(|&i| index.line(i).number).collect()))
        .collect();
    repeated.sort();
    repeated
        .into_iter()
        .map(|(id, lines)| {
            let n = lines.len();
            Finding::new(FindingKind::DuplicateId, Some(id), lines, format!("id appears on {n} lines")).with_fix(Fix::DedupeFile)
        })
        .collect()
}

/// Dependencies on ids that are not in the file, and the number of external references (never
/// checked: they name another project's issue).
fn dangling_dependencies(index: &IdIndex<'_>, deps: &[(String, String, String, usize)]) -> (Vec<Finding>, usize) {
    let mut findings = Vec::new();
    let mut external = 0;
    for (id, on, kind, line) in deps {
        if is_external_reference(on) {
            external += 1;
        } else if !index.ids.contains_key(on.as_str()) || !crate::record::is_issue_key(on) {
            findings.push(Finding::new(
                FindingKind::DanglingDependency,
                Some(id),
                vec![*line],
                format!("{kind} dependency on {on}, which is not in the file"),
            ));
        }
    }
    (findings, external)
}

/// Comment ids used by different comments: within one issue (br refuses the file) or across
/// issues (importers renumber one), each with the free id to give the later one.
fn comment_id_findings(comment_ids: &BTreeMap<String, Vec<(String, usize, String)>>, highest: i64) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut next_free = highest;
    for (number, uses) in comment_ids {
        if uses.len() < 2 {
            continue;
        }
        let issues: Vec<&str> = uses.iter().map(|(i, _, _)| i.as_str()).collect();
        let lines: Vec<usize> = uses.iter().map(|(_, l, _)| *l).collect();
        next_free += 1;
        let consequence = if issues.iter().all(|i| *i == issues[0]) {
            format!("br refuses to import the file (\"duplicate import comment id {number}\")")
        } else {
            "trackers that number comments per database renumber one of them on import and rewrite the file".to_owned()
        };
        let kind = if issues.iter().all(|i| *i == issues[0]) { FindingKind::DuplicateCommentId } else { FindingKind::SharedCommentId };
        findings.push(Finding::new(
            kind,
            Some(issues[0]),
            lines,
            format!(
                "comment id {number} is used by {} different comments (on {}): {consequence}; give the later one id {next_free}, one \
                    above the file's highest comment id (a merge through bd-merge does this itself)",
                uses.len(),
                issues.join(", ")
            ),
        ));
    }
    findings
}

/// bd's derived counts and computed `parent` that disagree with what the file implies.
fn stale_derived_fields(index: &IdIndex<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let dependents = crate::merge::derived::dependents(index.file.lines.iter().map(|l| l.bytes));
    for (line, key) in index.file.lines.iter().zip(&index.line_ids) {
        for stale in crate::merge::derived::stale(line.bytes, &dependents) {
            findings.push(
                Finding::new(
                    FindingKind::StaleDerivedField,
                    key.as_deref(),
                    vec![line.number],
                    format!(
                        "{} is {} but the file implies {}: it is computed from the file, not edited",
                        stale.field,
                        crate::record::printable(&stale.written, 40),
                        crate::record::printable(&stale.computed, 40)
                    ),
                )
                .with_fix(Fix::RecomputeDerived),
            );
        }
    }
    findings
}

/// Each cycle once, starting at its smallest id.
fn blocks_cycles(graph: &HashMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let mut nodes: Vec<&String> = graph.keys().collect();
    nodes.sort();
    let mut done: HashSet<&str> = HashSet::new();
    let mut cycles = Vec::new();
    let mut seen_cycles: HashSet<Vec<String>> = HashSet::new();
    for start in nodes {
        if done.contains(start.as_str()) {
            continue;
        }
        // Iterative DFS with an explicit path.
        let mut path: Vec<&str> = vec![start];
        let mut on_path: HashSet<&str> = [start.as_str()].into();
        let mut iters: Vec<usize> = vec![0];
        while let Some(&node) = path.last() {
            let i = iters.last_mut().expect("iters and path have the same length");
            let next = graph.get(node).and_then(|v| v.get(*i));
            *i += 1;
            match next {
                Some(n) if on_path.contains(n.as_str()) => {
                    let from = path.iter().position(|p| p == n).expect("on path");
                    let mut cycle: Vec<String> = path[from..].iter().map(std::string::ToString::to_string).collect();
                    let min = cycle.iter().enumerate().min_by_key(|(_, s)| s.as_str()).map(|(i, _)| i).unwrap_or(0);
                    cycle.rotate_left(min);
                    if seen_cycles.insert(cycle.clone()) {
                        cycles.push(cycle);
                    }
                }
                Some(n) if !done.contains(n.as_str()) && graph.contains_key(n) => {
                    path.push(n);
                    on_path.insert(n);
                    iters.push(0);
                }
                Some(_) => {}
                None => {
                    done.insert(node);
                    on_path.remove(node);
                    path.pop();
                    iters.pop();
                }
            }
        }
    }
    cycles
}
