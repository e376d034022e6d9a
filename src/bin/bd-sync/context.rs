//! `bd-sync context [ID]`: the working context of an issue in one compact block under a byte
//! budget, for an agent starting a session or a person back from a break (docs/agents.md). Sections in
//! order: Task, Checkpoints, Commits, Files, Dependencies, Next; each keeps its first line when
//! the budget allows any, then the rest is shared out in that order.

use crate::common::error::CommandResult;
use std::process::ExitCode;

use anyhow::Result;
use beads_git::bridge::context::{self, Context};
use beads_git::cache::query;
use beads_git::record::{escaped, printable};

use crate::cli_util::{ambiguous, linked, links_index, not_found, priority_label};
use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issue [default: your issues in progress (assignee = BD_ACTOR, BEADS_ACTOR, git user.name or user.email); none: the next ready
    /// issue]; a unique prefix or suffix of an id is enough.
    #[arg(value_name = "ID", add = clap_complete::ArgValueCompleter::new(crate::common::generate::issue_ids))]
    id: Option<String>,
    /// At most this many bytes of output [default: 2048 for text; --json is untrimmed unless given].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(64..=16 * 1024 * 1024))]
    budget: Option<u64>,
}

/// The text output's budget when none is given.
const DEFAULT_BUDGET: usize = 2048;

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let cache = global.open_fresh()?;
    let dir = crate::repo_dir(None)?;
    let ids = match &args.id {
        Some(partial) => match query::resolve_id(&cache, partial)? {
            query::IdMatch::One(id) => vec![id],
            query::IdMatch::Ambiguous(candidates) => return Err(ambiguous(partial, &candidates)),
            query::IdMatch::None => return Err(not_found(partial, &cache)),
        },
        None => default_ids(&cache, &dir)?,
    };
    // Not asked for and not in progress for the actor: the next ready issue, suggested.
    let suggested = args.id.is_none() && !in_progress_for_actor(&cache, &dir, &ids)?;
    let links = links_index(&dir, &cache)?;
    let mut contexts = Vec::with_capacity(ids.len());
    for id in &ids {
        if let Some(mut c) = context::gather(&cache, &dir, id, linked(links.as_ref(), id))? {
            c.suggested = suggested;
            contexts.push(c);
        }
    }
    if global.json {
        if let Some(budget) = args.budget {
            trim_json(&mut contexts, budget as usize);
        }
        Global::print_json(&contexts)?;
        return Ok(ExitCode::SUCCESS);
    }
    if contexts.is_empty() {
        eprintln!("bd-sync: nothing in progress for you and nothing ready");
        return Ok(ExitCode::SUCCESS);
    }
    let budget = args.budget.map_or(DEFAULT_BUDGET, |b| b as usize);
    let share = budget / contexts.len();
    for c in &contexts {
        out!("{}", fit(&sections(c), share));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `ids` are the actor's issues in progress (else they are the suggestion).
fn in_progress_for_actor(cache: &beads_git::cache::Cache, dir: &std::path::Path, ids: &[String]) -> Result<bool> {
    let Some(actor) = context::actor(dir) else { return Ok(false) };
    let mine = query::in_progress_of(cache, &actor)?;
    Ok(!ids.is_empty() && ids.iter().all(|id| mine.contains(id)))
}

/// The actor's issues in progress, else the next ready issue.
fn default_ids(cache: &beads_git::cache::Cache, dir: &std::path::Path) -> Result<Vec<String>> {
    if let Some(actor) = context::actor(dir) {
        let mine = query::in_progress_of(cache, &actor)?;
        if !mine.is_empty() {
            return Ok(mine);
        }
    }
    let next = query::ready(cache, &query::ListOptions { limit: Some(1), ..Default::default() })?;
    Ok(next.into_iter().map(|i| i.id).collect())
}

/// One line of data: whitespace runs made one space, control characters escaped, at most
/// `max` characters.
fn line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    printable(&flat, max)
}

/// The sections of one context, each a heading and its lines.
fn sections(c: &Context) -> Vec<(String, Vec<String>)> {
    let t = &c.task;
    let mut task = Vec::new();
    if c.suggested {
        task.push("suggested: nothing is in progress for you, so this is the next ready issue (claim it to make it yours)".to_owned());
    }
    task.push(format!(
        "{} [{} {}] {}",
        escaped(&t.id),
        line(t.status.as_deref().unwrap_or("-"), 40),
        priority_label(&t.priority),
        line(t.title.as_deref().unwrap_or(""), 200)
    ));
    if let Some(a) = &t.assignee {
        task.push(format!("assignee: {}", line(a, 80)));
    }
    if let Some(ac) = t.acceptance_criteria.as_deref().filter(|s| !s.trim().is_empty()) {
        task.push(format!("acceptance: {}", line(ac, 600)));
    }
    if let Some(d) = t.description.as_deref().filter(|s| !s.trim().is_empty()) {
        task.push(format!("description: {}", line(d, 400)));
    }
    let checkpoints = c
        .checkpoints
        .iter()
        .map(|k| {
            let when = k.created_at.as_deref().map(|w| line(w.get(..10).unwrap_or(w), 10)).unwrap_or_default();
            format!("- {when} {}: {}", line(k.author.as_deref().unwrap_or("?"), 40), line(&k.text, 240))
        })
        .collect();
    let commits =
        c.commits.iter().map(|l| format!("- {} {}", escaped(&l.commit[..l.commit.len().min(10)]), line(&l.subject, 120))).collect();
    let mut files: Vec<String> = c.files.uncommitted.iter().map(|f| format!("- {} (uncommitted)", line(f, 200))).collect();
    files.extend(c.files.committed.iter().map(|f| format!("- {}", line(f, 200))));
    let d = &c.dependencies;
    let mut deps = Vec::new();
    if let Some(p) = &d.parent {
        deps.push(format!("parent: {} {}", escaped(&p.id), line(p.title.as_deref().unwrap_or(""), 120)));
    }
    let ids = |v: &[String]| v.iter().map(|i| escaped(i).into_owned()).collect::<Vec<_>>().join(", ");
    if !d.blocked_by.is_empty() {
        deps.push(format!("blocked by: {}", ids(&d.blocked_by)));
    }
    if !d.blocks.is_empty() {
        deps.push(format!("blocks: {}", ids(&d.blocks)));
    }
    let next = c.next.iter().map(|n| format!("- {} {}", escaped(&n.id), line(n.title.as_deref().unwrap_or(""), 120))).collect();
    vec![
        ("Task".to_owned(), task),
        ("Checkpoints".to_owned(), checkpoints),
        ("Commits".to_owned(), commits),
        ("Files".to_owned(), files),
        ("Dependencies".to_owned(), deps),
        ("Next".to_owned(), next),
    ]
}

/// The sections laid out within `budget` bytes: every non-empty section's heading and first line
/// first (in order, while they fit), then the remaining lines in section order; a section that
/// lost lines ends with `… N more`. A line longer than what is left is cut on a character
/// boundary.
fn fit(sections: &[(String, Vec<String>)], budget: usize) -> String {
    let shown: Vec<&(String, Vec<String>)> = sections.iter().filter(|(_, lines)| !lines.is_empty()).collect();
    let mut taken = vec![0usize; shown.len()];
    let mut used = 0usize;
    let cost = |l: &str| l.len() + 1;
    let more = |left: usize| if left > 0 { cost(&format!("… {left} more")) } else { 0 };
    // Pass 1: headings and first lines, each with room for its "… N more" line.
    for (n, (heading, lines)) in shown.iter().enumerate() {
        let need = cost(&format!("## {heading}")) + cost(&lines[0]) + more(lines.len() - 1);
        if used + need <= budget {
            used += need;
            taken[n] = 1;
        }
    }
    // Pass 2: the rest, in order; each line taken swaps the section's "more" line for a shorter
    // one (or none after its last line).
    for (n, (_, lines)) in shown.iter().enumerate() {
        while taken[n] > 0 && taken[n] < lines.len() {
            let left = lines.len() - taken[n];
            let next = used + cost(&lines[taken[n]]) + more(left - 1) - more(left);
            if next > budget {
                break;
            }
            used = next;
            taken[n] += 1;
        }
    }
    let mut out = String::with_capacity(budget);
    for (n, (heading, lines)) in shown.iter().enumerate() {
        if taken[n] == 0 {
            continue;
        }
        out.push_str(&format!("## {heading}\n"));
        for l in &lines[..taken[n]] {
            out.push_str(l);
            out.push('\n');
        }
        if taken[n] < lines.len() {
            out.push_str(&format!("… {} more\n", lines.len() - taken[n]));
        }
    }
    cut(out, budget)
}

/// `text` cut to at most `max` bytes on a character boundary (a guard: `fit` stays within it).
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

/// `--json --budget`: long texts cut, then the longest lists shortened from their ends, until the
/// whole output fits (or nothing is left to cut).
fn trim_json(contexts: &mut [Context], budget: usize) {
    let size = |c: &[Context]| serde_json::to_string_pretty(c).map(|s| s.len()).unwrap_or(0);
    for c in contexts.iter_mut() {
        for text in [&mut c.task.description, &mut c.task.acceptance_criteria].into_iter().flatten() {
            *text = line(text, 400);
        }
        for k in &mut c.checkpoints {
            k.text = line(&k.text, 240);
        }
    }
    while size(contexts) > budget {
        let mut longest: Option<(usize, usize, usize)> = None; // (len, context, list)
        for (n, c) in contexts.iter().enumerate() {
            let lens = [
                c.checkpoints.len(),
                c.commits.len(),
                c.files.committed.len(),
                c.files.uncommitted.len(),
                c.next.len(),
                c.dependencies.blocks.len(),
            ];
            for (k, len) in lens.into_iter().enumerate() {
                if len > 0 && longest.is_none_or(|(l, _, _)| len > l) {
                    longest = Some((len, n, k));
                }
            }
        }
        let Some((_, n, k)) = longest else { break };
        let c = &mut contexts[n];
        match k {
            0 => drop(c.checkpoints.pop()),
            1 => drop(c.commits.pop()),
            2 => drop(c.files.committed.pop()),
            3 => drop(c.files.uncommitted.pop()),
            4 => drop(c.next.pop()),
            _ => drop(c.dependencies.blocks.pop()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_keeps_every_sections_first_line_before_any_second_line() {
        let many: Vec<String> = (0..100).map(|i| format!("- checkpoint {i} {}", "x".repeat(40))).collect();
        let sections = vec![
            ("Task".to_owned(), vec!["bd-1 [open P1] Title".to_owned()]),
            ("Checkpoints".to_owned(), many),
            ("Next".to_owned(), vec!["- bd-2 Next one".to_owned()]),
        ];
        let out = fit(&sections, 400);
        assert!(out.len() <= 400, "{}", out.len());
        assert!(out.contains("## Next\n- bd-2 Next one"), "{out}");
        assert!(out.contains("more\n"), "{out}");
        let tiny = fit(&sections, 64);
        assert!(tiny.len() <= 64 && tiny.starts_with("## Task"), "{tiny}");
    }

    #[test]
    fn cut_respects_character_boundaries() {
        assert_eq!(cut("ééé".to_owned(), 3), "é");
    }
}
