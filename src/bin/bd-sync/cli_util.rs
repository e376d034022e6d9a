//! What several bd-sync commands share, so that no command file imports from another: finding an
//! issue by id (and saying when none or several match), its linked commits, a priority's label,
//! and the printer of what `install` and `uninstall` changed.

use std::process::ExitCode;

use anyhow::Result;
use beads_git::bridge::links::{Index, Link};
use beads_git::cache::import;
use beads_git::cache::query;
use beads_git::fix::Fix;
use beads_git::install::{Action, Change};
use beads_git::record::{escaped, escaped_path, printable_lines};

use crate::common::error::{CommandError, Kind};
use crate::common::fix::install_warning;
use crate::Global;

/// `P1` for a numeric priority, the text of a named one.
pub(crate) fn priority_label(p: &serde_json::Value) -> String {
    match p {
        serde_json::Value::Number(n) => format!("P{n}"),
        serde_json::Value::String(s) => escaped(s).into_owned(),
        _ => "P?".into(),
    }
}

/// The commits index of the repository at `dir`, brought up to date once for the command;
/// `None` when the bridge is off or git cannot say (a command never fails for want of it: the
/// reason goes to stderr).
pub(crate) fn links_index(dir: &std::path::Path, cache: &beads_git::cache::Cache) -> Result<Option<Index>> {
    let prefixes = query::id_prefixes(cache)?;
    Ok(beads_git::bridge::links_index(dir, &prefixes).unwrap_or_else(|e| {
        eprintln!("bd-sync: linked commits: {}", beads_git::record::printable_lines(&format!("{e:#}")));
        None
    }))
}

/// The commits linked to `id`, newest first (none without an index, or when it cannot be read).
pub(crate) fn linked(index: Option<&Index>, id: &str) -> Vec<Link> {
    let Some(index) = index else { return Vec::new() };
    index.links(id).unwrap_or_else(|e| {
        eprintln!("bd-sync: linked commits of {}: {}", escaped(id), beads_git::record::printable_lines(&format!("{e:#}")));
        Vec::new()
    })
}

/// An id no issue has (exit 1; kind `not-found` under `--json`).
pub(crate) fn not_found(id: &str, cache: &beads_git::cache::Cache) -> CommandError {
    let message = format!(
        "no issue {} in {}: run `{}` or `bd-sync blocked` to list ids",
        escaped(&format!("{id:?}")),
        escaped_path(&cache.paths.file),
        crate::common::fix::word(&Fix::ListIds)
    );
    CommandError::new(Kind::NotFound, message).with_fix(Fix::ListIds)
}

/// A partial id that several issues match (exit 1; kind `ambiguous` under `--json`), listing them.
pub(crate) fn ambiguous(id: &str, candidates: &[String]) -> CommandError {
    let listed = candidates.iter().take(20).map(|c| escaped(c)).collect::<Vec<_>>().join(", ");
    let message = format!("{} matches {} issues: {listed}; give more of the id", escaped(&format!("{id:?}")), candidates.len());
    CommandError::new(Kind::Ambiguous, message)
}

/// An action as `--json` shows it: its warning worded as on stderr.
#[derive(serde::Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    action: &'a Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

/// Exit 1 when install or uninstall left a file alone that the user must see to by hand.
pub(crate) fn refusal_exit(actions: &[Action]) -> ExitCode {
    if actions.iter().any(|a| a.change == Change::Refused) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints what install or uninstall did (or would do, with `dry_run`): one line per file that
/// changed, warnings on stderr, the first import's count.
pub(crate) fn print_actions(global: &Global, actions: &[Action], dry_run: bool, imported: Option<&import::ImportReport>) -> Result<()> {
    if global.json {
        let actions: Vec<Shown<'_>> =
            actions.iter().map(|action| Shown { action, warning: action.warning.as_ref().map(install_warning) }).collect();
        return Global::print_json(&serde_json::json!({ "dry_run": dry_run, "actions": actions, "import": imported }));
    }
    let changed = |a: &&Action| a.change != Change::Unchanged && a.change != Change::Absent;
    let width = actions.iter().filter(changed).map(|a| escaped(&a.what).chars().count()).max().unwrap_or(0);
    for a in actions {
        if let Some(w) = &a.warning {
            eprintln!("bd-sync: warning: {}", printable_lines(&install_warning(w)));
        }
    }
    for a in actions.iter().filter(changed) {
        let change = if dry_run { format!("would be {}", a.change) } else { a.change.to_string() };
        let path = if a.path == a.what { String::new() } else { format!("  {}", escaped(&a.path)) };
        outln!("{:<width$}  {change}{path}", escaped(&a.what));
    }
    if actions.iter().all(|a| matches!(a.change, Change::Unchanged | Change::Absent)) {
        outln!("nothing to change");
    }
    if let Some(r) = imported.filter(|r| !r.noop) {
        outln!("{:<width$}  imported {} issue(s)", "cache", r.added.len() + r.changed.len());
    }
    Ok(())
}
