//! `bd-sync log ID [RANGE]`: the commits that changed one issue, newest first.

use std::process::ExitCode;

use anyhow::Result;
use beads_git::cache::query;
use beads_git::history;
use beads_git::issue_diff::{self, Style};
use beads_git::record::escaped;

use crate::show::ambiguous;
use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issue id; a unique prefix or suffix of an id in the issues file is enough.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::common::generate::issue_ids))]
    id: String,
    /// Which commits to look at: revisions as `git log` takes them (`main..topic`, `HEAD~5..`), or `-N` for the last N [default: HEAD's history]; never a git option.
    #[arg(allow_hyphen_values = true)]
    range: Option<String>,
}

pub(crate) fn run(global: &Global, args: Args) -> Result<ExitCode> {
    let dir = crate::repo_dir(None)?;
    // A partial id resolves against the issues file; an id no longer in it is taken as given.
    let id = match global.open_fresh().and_then(|cache| query::resolve_id(&cache, &args.id)) {
        Ok(query::IdMatch::Ambiguous(candidates)) => return Ok(ambiguous(global, &args.id, &candidates)),
        Ok(query::IdMatch::One(full)) => full,
        _ => args.id,
    };
    let entries = history::log(&dir, &id, args.range.as_deref())?;
    for e in &entries {
        for (id, field) in issue_diff::shown_whole(std::slice::from_ref(&e.change)) {
            eprintln!("bd-sync: {}: {}: too large for a line diff; shown whole", escaped(id), escaped(field));
        }
    }
    if global.json {
        Global::print_json(&entries)?;
        return Ok(ExitCode::SUCCESS);
    }
    for e in &entries {
        let c = &e.commit;
        let short = &c.commit[..c.commit.len().min(12)];
        println!("commit {}  {}  {} <{}>", escaped(short), escaped(&c.date), escaped(&c.author), escaped(&c.email));
        println!("    {}", escaped(&c.subject));
        for line in issue_diff::render(std::slice::from_ref(&e.change), Style::for_stdout()).lines() {
            println!("  {line}");
        }
        println!();
    }
    if entries.is_empty() {
        eprintln!("bd-sync: no commit changed {id:?}");
    }
    Ok(ExitCode::SUCCESS)
}
