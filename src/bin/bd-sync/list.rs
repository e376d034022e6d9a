//! `bd-sync ready` and `bd-sync blocked`: lists of issues by priority, then age, and their
//! printer (one aligned row per issue).

use crate::common::error::CommandResult;
use std::process::ExitCode;

use anyhow::Result;
use beads_git::cache::neighbourhood::{self, Neighbourhood};
use beads_git::cache::query;
use beads_git::color::{paint, sgr};
use beads_git::issue_diff::Style;
use beads_git::record::escaped;

use crate::cli_util::priority_label;
use crate::Global;

// Filters of `ready` and `blocked` (a plain comment: clap would take a doc comment as their about text).
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// At most this many issues (the first in order), 0 to 2^63-1.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=i64::MAX as u64))]
    limit: Option<usize>,
    /// Only issues assigned to this person.
    #[arg(long, value_name = "WHO")]
    assignee: Option<String>,
    /// Only issues carrying this label.
    #[arg(long)]
    label: Option<String>,
    /// Only issues of this type (also shows the orchestrator types `ready` leaves out by default).
    #[arg(long = "type", value_name = "TYPE")]
    issue_type: Option<String>,
    /// Only issues of this priority (`1` or `P1`).
    #[arg(long, value_name = "P", value_parser = parse_priority)]
    priority: Option<i64>,
    /// Also list what `ready` leaves out by default, as bd does: merge-request, gate, molecule, message, agent, role, rig, convoy and slot
    /// types, and pinned, ephemeral or deferred issues.
    #[arg(long)]
    all_types: bool,
}

/// Which list.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Which {
    /// Open issues with no open blocker.
    Ready,
    /// Issues held up by an open blocker.
    Blocked,
}

impl Args {
    fn options(self) -> query::ListOptions {
        query::ListOptions {
            limit: self.limit,
            assignee: self.assignee,
            label: self.label,
            issue_type: self.issue_type,
            priority: self.priority,
            all_types: self.all_types,
        }
    }
}

fn parse_priority(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['P', 'p']).unwrap_or(text);
    digits.parse().map_err(|_| format!("{text:?} is not a priority (a number such as 1, or P1)"))
}

pub(crate) fn run(global: &Global, which: Which, args: Args) -> CommandResult {
    let cache = global.open_fresh()?;
    // One read transaction for every query below: one snapshot, and one shared lock taken once
    // instead of once per statement (thousands, for a long list's neighbourhood).
    let snapshot = cache.conn.unchecked_transaction()?;
    let options = args.options();
    let (list, blocking) = match which {
        Which::Ready => {
            let (list, blocking) = query::ready_and_blocking(&cache, &options)?;
            (list, Some(blocking))
        }
        Which::Blocked => (query::blocked(&cache, &options)?, None),
    };
    if let Some(blocking) = &blocking {
        let left_out = query::left_out_of_ready(&cache, &options, blocking)?;
        if !left_out.is_empty() {
            let total: usize = left_out.iter().map(|(_, n)| n).sum();
            let kinds = left_out.iter().map(|(k, n)| format!("{} {n}", escaped(k))).collect::<Vec<_>>().join(", ");
            eprintln!(
                "bd-sync: ready leaves out {total} issue(s) that are not work items ({kinds}): `bd-sync ready --all-types` lists them"
            );
        }
    }
    // Ready work knows its neighbourhood: its parent, what it blocks and what it unblocks.
    let hoods = match blocking {
        Some(blocking) => {
            let graph = neighbourhood::Graph::for_list(&cache, blocking, list.len())?;
            Some(list.iter().map(|i| graph.of(&i.id)).collect::<Result<Vec<_>>>()?)
        }
        None => None,
    };
    if global.json {
        // Full issue objects, as `bd ready --json` prints them (docs/json.md).
        let more = |n: usize| hoods.as_ref().and_then(|h| h.get(n)).map(Neighbourhood::json_keys).unwrap_or_default();
        Global::print_json(&query::full_issues(&cache, &list, &more)?)?;
    } else {
        print_issues(&list, hoods.as_deref());
    }
    snapshot.rollback()?;
    Ok(ExitCode::SUCCESS)
}

/// `  (in bd-e1 "Epic"; blocks bd-2; unblocks bd-2, bd-3)`: the neighbourhood after a ready
/// issue's title, each list cut to five ids.
fn neighbourhood_note(hood: &Neighbourhood) -> String {
    let ids = |list: &[String]| {
        let mut s = list.iter().take(5).map(|i| escaped(i).into_owned()).collect::<Vec<_>>().join(", ");
        if list.len() > 5 {
            s.push_str(&format!(" +{}", list.len() - 5));
        }
        s
    };
    let mut parts = Vec::new();
    if let Some(p) = &hood.parent {
        match &p.title {
            Some(t) => parts.push(format!("in {} \"{}\"", escaped(&p.id), beads_git::record::printable(t, 40))),
            None => parts.push(format!("in {}", escaped(&p.id))),
        }
    }
    if !hood.blocks.is_empty() {
        parts.push(format!("blocks {}", ids(&hood.blocks)));
    }
    if !hood.unblocks.is_empty() {
        parts.push(format!("unblocks {}", ids(&hood.unblocks)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("  ({})", parts.join("; "))
    }
}

fn print_issues(list: &[query::IssueSummary], hoods: Option<&[Neighbourhood]>) {
    use std::io::Write as _;
    let color = Style::for_stdout().color;
    // Written in blocks: a line-buffered stdout makes a write call per issue.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    // Each value escaped: an id holding a newline or an ESC stays one cell of one row.
    let id_width = list.iter().map(|i| escaped(&i.id).chars().count()).max().unwrap_or(0);
    let status_width = list.iter().map(|i| escaped(i.status.as_deref().unwrap_or("-")).chars().count()).max().unwrap_or(0);
    for (n, i) in list.iter().enumerate() {
        let p = priority_label(&i.priority);
        let urgent = p == "P0" || p == "P1" || p == "critical" || p == "high";
        let p = paint(color && urgent, sgr::BOLD_RED, &format!("{p:<4}"));
        let blockers = if i.blocked_by.is_empty() {
            String::new()
        } else {
            format!("  (blocked by {})", i.blocked_by.iter().map(|b| escaped(b)).collect::<Vec<_>>().join(", "))
        };
        let note = hoods.and_then(|h| h.get(n)).map(neighbourhood_note).unwrap_or_default();
        let line = format!(
            "{p} {:<id_width$}  {:<status_width$}  {}{blockers}{note}",
            escaped(&i.id),
            escaped(i.status.as_deref().unwrap_or("-")),
            escaped(i.title.as_deref().unwrap_or(""))
        );
        if writeln!(out, "{}", line.trim_end()).is_err() {
            return;
        }
    }
    let _ = out.flush();
    if list.is_empty() {
        eprintln!("(none)");
    }
}
