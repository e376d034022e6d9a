//! `bd-sync log ID [RANGE]`: the commits that changed one issue, newest first.

use crate::common::error::CommandResult;
use std::process::ExitCode;

use beads_git::cache::query;
use beads_git::history;
use beads_git::issue_diff::{self, Style};
use beads_git::record::escaped;

use crate::cli_util::ambiguous;
use crate::Global;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The issue id; a unique prefix or suffix of an id in the issues file is enough.
    #[arg(add = clap_complete::ArgValueCompleter::new(crate::common::generate::issue_ids))]
    id: String,
    /// Which commits to look at: revisions as `git log` takes them (`main..topic`, `HEAD~5..`), or `-N` for the last N [default: HEAD's
    /// history]; never a git option.
    #[arg(allow_hyphen_values = true)]
    range: Option<String>,
    /// Only the code commits linked to the issue (a `Beads-Issue:` trailer, or its id in the message), newest first, from the index kept in
    /// the git directory; not with a RANGE.
    #[arg(long, conflicts_with = "range")]
    commits: bool,
}

pub(crate) fn run(global: &Global, args: Args) -> CommandResult {
    let dir = crate::repo_dir(None)?;
    // A partial id resolves against the issues file; an id no longer in it is taken as given.
    let cache = global.open_fresh().ok();
    let id = match cache.as_ref().map(|cache| query::resolve_id(cache, &args.id)) {
        Some(Ok(query::IdMatch::Ambiguous(candidates))) => return Err(ambiguous(&args.id, &candidates)),
        Some(Ok(query::IdMatch::One(full))) => full,
        _ => args.id,
    };
    let linked = match &cache {
        Some(cache) => beads_git::bridge::links_index(&dir, &query::id_prefixes(cache)?)?.map(|index| index.links(&id)).transpose()?,
        None => Some(Vec::new()),
    };
    if args.commits {
        if linked.is_none() {
            eprintln!("bd-sync: the git-issue bridge is off here (BEADS_BRIDGE=0 or git config beads.bridge false)");
        }
        return print_linked(global, &id, linked.as_deref().unwrap_or_default());
    }
    let linked = linked.unwrap_or_default();
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
        outln!("commit {}  {}  {} <{}>", escaped(short), escaped(&c.date), escaped(&c.author), escaped(&c.email));
        outln!("    {}", escaped(&c.subject));
        for line in issue_diff::render(std::slice::from_ref(&e.change), Style::for_stdout()).lines() {
            outln!("  {line}");
        }
        outln!();
    }
    if entries.is_empty() {
        eprintln!("bd-sync: no commit changed {id:?}");
    }
    if !linked.is_empty() {
        outln!("code commits linked to {} ({}):", escaped(&id), linked.len());
        print_links(&linked);
    }
    Ok(ExitCode::SUCCESS)
}

/// `log --commits`: the linked commits alone (`--json`: `[{commit, time, how, subject}]`).
fn print_linked(global: &Global, id: &str, linked: &[beads_git::bridge::links::Link]) -> CommandResult {
    if global.json {
        Global::print_json(&linked)?;
    } else {
        print_links(linked);
        if linked.is_empty() {
            eprintln!("bd-sync: no commit names {} (a `Beads-Issue:` trailer, or the id in its message)", escaped(id));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_links(linked: &[beads_git::bridge::links::Link]) {
    for l in linked {
        let how = match l.how {
            beads_git::bridge::links::How::Trailer => "trailer",
            beads_git::bridge::links::How::Mention => "mention",
        };
        outln!("{}  {how:<7}  {}", escaped(&l.commit[..l.commit.len().min(12)]), l.subject);
    }
}
