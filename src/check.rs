//! `bd-sync check`: problems in an issues file that tools should not paper over.
//!
//! The checks read the file itself (not the cache), so they also find what import refuses:
//! malformed lines and leftover conflict markers. Each finding names the line or id and says what
//! to do. Installation health (driver, attributes, hooks) is checked by [`crate::install`].

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::jsonl::Jsonl;
use crate::record::{parse_json_str, record_id, split_array, LineProblem, RawObject};

/// Statuses seen in the wild; anything else is reported (never rejected).
pub const KNOWN_STATUSES: &[&str] =
    &["open", "in_progress", "blocked", "deferred", "closed", "tombstone", "hooked", "pinned", "not_ready", "deleted"];

/// One problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Machine-readable class: `duplicate-id`, `dangling-dependency`, `dependency-cycle`,
    /// `closed-without-closed-at`, `closed-at-on-open-issue`, `conflict-marker`, `malformed-line`,
    /// `unknown-status`, `duplicate-pinned-handoff`, `duplicate-comment-id`, `duplicate-key`, or an installation
    /// class.
    pub kind: String,
    /// The issue concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// 1-based line numbers concerned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<usize>,
    /// What is wrong, for a human.
    pub message: String,
}

impl Finding {
    /// A finding of `kind`, about `id` and `lines` when known.
    pub fn new(kind: &str, id: Option<&str>, lines: Vec<usize>, message: String) -> Finding {
        Finding { kind: kind.to_owned(), id: id.map(str::to_owned), lines, message }
    }
}

/// Checks file content; `path` is only used in messages.
pub fn check_file(content: &[u8]) -> Vec<Finding> {
    let file = Jsonl::split(content);
    let mut findings = Vec::new();
    let mut lines_of: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut blocks: HashMap<String, Vec<String>> = HashMap::new();
    let mut deps: Vec<(String, String, String, usize)> = Vec::new();
    let mut handoffs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // comment id -> the (issue, line, comment without its id) that use it
    let mut comment_ids: BTreeMap<String, Vec<(String, usize, String)>> = BTreeMap::new();
    let mut highest_comment_id = 0i64;
    for line in &file.lines {
        let obj = match RawObject::parse(line.bytes) {
            Ok(o) => o,
            Err(LineProblem::ConflictMarker) => {
                findings.push(Finding::new(
                    "conflict-marker",
                    None,
                    vec![line.number],
                    "leftover git conflict marker: finish or redo the merge".into(),
                ));
                continue;
            }
            Err(p) => {
                findings.push(Finding::new("malformed-line", None, vec![line.number], p.to_string()));
                continue;
            }
        };
        for key in obj.repeated_keys() {
            findings.push(Finding::new(
                "duplicate-key",
                None,
                vec![line.number],
                format!(
                    "key {} appears more than once; bd (Go) and bd-sync use its last value, other readers may not: keep one",
                    crate::record::printable(key, 40)
                ),
            ));
        }
        let id = match record_id(line.bytes) {
            Ok(id) => id,
            // bd 1.0's header, memories and other record kinds: fine as they are.
            Err(LineProblem::NotAnIssue) => continue,
            Err(problem) => {
                findings.push(Finding::new("malformed-line", None, vec![line.number], problem.to_string()));
                continue;
            }
        };
        let id = id.into_owned();
        lines_of.entry(id.clone()).or_default().push(line.number);
        let text = |k: &str| obj.get(k).and_then(parse_json_str).map(|s| s.into_owned());
        let status = text("status");
        let has_closed_at = obj.get("closed_at").is_some_and(|v| v != "null");
        match status.as_deref() {
            Some("closed") if !has_closed_at => findings.push(Finding::new(
                "closed-without-closed-at",
                Some(&id),
                vec![line.number],
                "status is closed but closed_at is missing".into(),
            )),
            Some(s) if s != "closed" && s != "tombstone" && s != "deleted" && has_closed_at => findings.push(Finding::new(
                "closed-at-on-open-issue",
                Some(&id),
                vec![line.number],
                format!("status is {s} but closed_at is set"),
            )),
            _ => {}
        }
        if let Some(s) = &status {
            if !KNOWN_STATUSES.contains(&s.as_str()) {
                findings.push(Finding::new(
                    "unknown-status",
                    Some(&id),
                    vec![line.number],
                    format!("status {s:?} is not one of {}", KNOWN_STATUSES.join(", ")),
                ));
            }
        }
        if status.as_deref() == Some("pinned") {
            if let Some(title) = text("title") {
                let words: Vec<&str> = title.split_whitespace().collect();
                if words.len() == 2 && words[1] == "Handoff" {
                    handoffs.entry(title).or_default().push(id.clone());
                }
            }
        }
        for e in obj.get("dependencies").and_then(split_array).unwrap_or_default() {
            let Some(d) = RawObject::parse_trusted(e) else {
                continue;
            };
            let on = d.get("depends_on_id").and_then(parse_json_str).map(|s| s.into_owned()).unwrap_or_default();
            let kind = d.get("type").and_then(parse_json_str).map(|s| s.into_owned()).unwrap_or_else(|| "blocks".into());
            if kind == "blocks" {
                blocks.entry(id.clone()).or_default().push(on.clone());
            }
            deps.push((id.clone(), on, kind, line.number));
        }
        for e in obj.get("comments").and_then(split_array).unwrap_or_default() {
            let Ok(serde_json::Value::Object(mut comment)) = serde_json::from_str::<serde_json::Value>(e) else {
                continue;
            };
            let Some(number) = comment.remove("id").filter(|n| !n.is_null()) else {
                continue;
            };
            highest_comment_id = highest_comment_id.max(number.as_i64().unwrap_or(0));
            let uses = comment_ids.entry(number.to_string()).or_default();
            let content = serde_json::Value::Object(comment).to_string();
            if !uses.iter().any(|(i, _, c)| *i == id && *c == content) {
                uses.push((id.clone(), line.number, content));
            }
        }
    }
    for (id, lines) in &lines_of {
        if lines.len() > 1 {
            findings.push(Finding::new(
                "duplicate-id",
                Some(id),
                lines.clone(),
                format!(
                    "id appears on {} lines; `bd-merge dedupe` merges them into one record (bd-merge and bd-sync keep all copies until then)",
                    lines.len()
                ),
            ));
        }
    }
    for (id, on, kind, line) in &deps {
        if !lines_of.contains_key(on) {
            findings.push(Finding::new(
                "dangling-dependency",
                Some(id),
                vec![*line],
                format!("{kind} dependency on {on}, which is not in the file"),
            ));
        }
    }
    for cycle in blocks_cycles(&blocks) {
        findings.push(Finding::new(
            "dependency-cycle",
            Some(&cycle[0]),
            Vec::new(),
            format!("blocks cycle: {} -> {}", cycle.join(" -> "), cycle[0]),
        ));
    }
    let mut next_free = highest_comment_id;
    for (number, uses) in &comment_ids {
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
        findings.push(Finding::new(
            "duplicate-comment-id",
            Some(issues[0]),
            lines,
            format!(
                "comment id {number} is used by {} different comments (on {}): {consequence}; give the later one id {next_free}, one above the file's highest comment id (a merge through bd-merge does this itself)",
                uses.len(),
                issues.join(", ")
            ),
        ));
    }
    for (title, ids) in handoffs {
        if ids.len() > 1 {
            findings.push(Finding::new(
                "duplicate-pinned-handoff",
                Some(&ids[0]),
                Vec::new(),
                format!("{} pinned beads titled {title:?}: {}", ids.len(), ids.join(", ")),
            ));
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
                    let mut cycle: Vec<String> = path[from..].iter().map(|s| s.to_string()).collect();
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
