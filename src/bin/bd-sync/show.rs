//! `bd-sync show ID...`: issues in full, and the printer of one issue.

use crate::common::error::CommandResult;
use std::process::ExitCode;

use beads_git::bridge::links::Link;
use beads_git::cache::query;
use beads_git::record::escaped;

use crate::cli_util::{ambiguous, linked, links_index, not_found, priority_label};
use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Issue ids; a unique prefix or suffix of an id is enough (an ambiguous one lists the candidates).
    #[arg(required = true, value_name = "ID", add = clap_complete::ArgValueCompleter::new(crate::common::generate::issue_ids))]
    ids: Vec<String>,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let cache = global.open_fresh()?;
    let links = links_index(&crate::repo_dir(None)?, &cache)?;
    let mut all = Vec::new();
    for id in &args.ids {
        let full = match query::resolve_id(&cache, id)? {
            query::IdMatch::One(full) => full,
            query::IdMatch::Ambiguous(candidates) => return Err(ambiguous(id, &candidates)),
            query::IdMatch::None => return Err(not_found(id, &cache)),
        };
        let Some(shown) = query::show(&cache, &full)? else {
            return Err(not_found(&full, &cache));
        };
        let mut commits = linked(links.as_ref(), &full);
        commits.truncate(RECENT_COMMITS);
        all.push((shown, commits));
    }
    if global.json {
        // An array of full issue objects, as `bd show --json` prints (docs/json.md), with the
        // last commits linked to each.
        let mut issues = Vec::with_capacity(all.len());
        for (shown, commits) in &all {
            issues.push(query::with_keys_appended(&query::shown_json(shown)?, &[("commits", serde_json::to_value(commits)?)])?);
        }
        Global::print_json(&issues)?;
    } else {
        for (i, (shown, commits)) in all.iter().enumerate() {
            if i > 0 {
                outln!();
            }
            print_shown(shown);
            print_commits(commits);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How many linked commits `show` names.
const RECENT_COMMITS: usize = 5;

fn print_commits(commits: &[Link]) {
    if commits.is_empty() {
        return;
    }
    outln!();
    outln!("  COMMITS (last {})", commits.len());
    for c in commits {
        outln!("    {}  {}", escaped(&c.commit[..c.commit.len().min(12)]), c.subject);
    }
}

fn print_shown(shown: &query::Shown) {
    let issue: serde_json::Value = serde_json::from_str(shown.issue.get()).unwrap_or_default();
    // Every value escaped (one line each); long texts keep their own lines, each escaped.
    let text = |k: &str| match issue.get(k) {
        Some(serde_json::Value::String(s)) => Some(escaped(s).into_owned()),
        Some(serde_json::Value::Null) | None => None,
        Some(v) => Some(escaped(&v.to_string()).into_owned()),
    };
    let raw_text = |k: &str| issue.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
    outln!("{}: {}", text("id").unwrap_or_default(), text("title").unwrap_or_default());
    let mut fields: Vec<(String, String)> = Vec::new();
    for (label, key) in [("status", "status"), ("type", "issue_type"), ("assignee", "assignee"), ("owner", "owner")] {
        if let Some(v) = text(key) {
            fields.push((label.into(), v));
        }
    }
    if let Some(p) = issue.get("priority") {
        fields.insert(1.min(fields.len()), ("priority".into(), priority_label(p)));
    }
    for (label, key) in [("created", "created_at"), ("updated", "updated_at"), ("closed", "closed_at"), ("close reason", "close_reason")] {
        if let Some(v) = text(key) {
            fields.push((label.into(), v));
        }
    }
    if let Some(serde_json::Value::Array(labels)) = issue.get("labels") {
        let names: Vec<String> = labels.iter().map(|l| escaped(l.as_str().unwrap_or(&l.to_string())).into_owned()).collect();
        fields.push(("labels".into(), names.join(", ")));
    }
    // Every dependency by type: the parent (parent-child), what it depends on (blocks), and the
    // other kinds (related, discovered-from, ...) under their own names.
    let mut by_type: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    if let Some(serde_json::Value::Array(deps)) = issue.get("dependencies") {
        for d in deps {
            let target = d.get("depends_on_id").and_then(serde_json::Value::as_str).unwrap_or_default();
            let kind = d.get("type").and_then(serde_json::Value::as_str).unwrap_or("blocks");
            if !target.is_empty() {
                by_type.entry(kind.to_owned()).or_default().push(escaped(target).into_owned());
            }
        }
    }
    let parent = by_type.remove("parent-child").map(|p| p.join(", ")).or_else(|| text("parent"));
    if let Some(p) = parent {
        fields.push(("parent".into(), p));
    }
    if let Some(on) = by_type.remove("blocks") {
        fields.push(("depends on".into(), on.join(", ")));
    }
    for (kind, ids) in by_type {
        fields.push((escaped(&kind).into_owned(), ids.join(", ")));
    }
    for (label, ids) in [("blocked by", &shown.blocked_by), ("blocks", &shown.blocks), ("children", &shown.children)] {
        if !ids.is_empty() {
            fields.push((label.into(), ids.iter().map(|i| escaped(i)).collect::<Vec<_>>().join(", ")));
        }
    }
    for (label, value) in fields {
        // A label of 13 characters or more still gets a space before its value.
        outln!("  {:<13}{value}", format!("{label} "));
    }
    if shown.dirty {
        outln!("  (edited in the cache, not yet exported)");
    }
    let section = |heading: Option<&str>, body: &str| {
        outln!();
        if let Some(h) = heading {
            outln!("  {h}");
        }
        for line in body.lines() {
            outln!("  {}{}", if heading.is_some() { "  " } else { "" }, escaped(line));
        }
    };
    if let Some(d) = raw_text("description").filter(|d| !d.trim().is_empty()) {
        section(None, &d);
    }
    for (heading, key) in [("DESIGN", "design"), ("ACCEPTANCE CRITERIA", "acceptance_criteria"), ("NOTES", "notes")] {
        if let Some(body) = raw_text(key).filter(|b| !b.trim().is_empty()) {
            section(Some(heading), &body);
        }
    }
    if let Some(serde_json::Value::Array(comments)) = issue.get("comments").filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
        outln!();
        outln!("  COMMENTS ({})", comments.len());
        for c in comments {
            let field = |k: &str| c.get(k).and_then(serde_json::Value::as_str).map(|v| escaped(v).into_owned());
            outln!("    {} {}", field("created_at").unwrap_or_else(|| "-".into()), field("author").unwrap_or_else(|| "(no author)".into()));
            for line in c.get("text").and_then(serde_json::Value::as_str).unwrap_or_default().lines() {
                outln!("      {}", escaped(line));
            }
        }
    }
}
