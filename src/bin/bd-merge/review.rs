//! `bd-merge review`: the values merges dropped in this clone (the merge log), and putting one
//! back with `--restore`.

use crate::common::error::{CommandError, CommandResult, Kind};
use std::path::PathBuf;
use std::process::ExitCode;

use beads_git::merge_log;

use crate::{common, default_issues_file};

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Only the newest N entries.
    #[arg(long, value_name = "N", conflicts_with = "since")]
    last: Option<usize>,
    /// Only entries logged since WHEN: an RFC 3339 instant, a date (2026-01-05) or an age (90m, 12h, 2d, 1w).
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only entries about this issue.
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    /// Put entry N's dropped value back into the working issues file, as a new edit to commit;
    /// HASH:N for the N-th decision a merge commit carries as a trailer (update-branch's).
    #[arg(long, value_name = "N", conflicts_with_all = ["last", "since", "id", "json"])]
    restore: Option<String>,
    /// The issues file --restore edits [default: the repository's .beads/issues.jsonl].
    #[arg(value_name = "FILE", requires = "restore")]
    file: Option<PathBuf>,
    /// FILE's old spelling, kept for a release.
    #[arg(long = "file", value_name = "FILE", hide = true, requires = "restore", conflicts_with = "file")]
    file_flag: Option<PathBuf>,
    /// For the post-merge / post-rewrite hook, with the hook's first argument when it could pass
    /// one on (post-merge's squash flag, post-rewrite's `amend` or `rebase`): print one line when
    /// merges dropped values since it last printed, nothing otherwise.
    #[arg(
        long,
        value_name = "HOOK-ARG",
        num_args = 0..=1,
        default_missing_value = "",
        hide = true,
        conflicts_with_all = ["last", "since", "id", "json", "restore"]
    )]
    announce: Option<String>,
    #[command(flatten)]
    pub(crate) json: crate::common::args::Json,
}

pub(crate) fn run(args: Args, global: crate::Global) -> CommandResult {
    let Args { last, since, id, restore, file, file_flag, announce, json: _ } = args;
    let (json, file) = (global.json, file.or(file_flag));
    // Given after `review`, clap refuses these together; given before it, `--json` is the
    // parent's flag, out of reach of review's rules.
    if json && (restore.is_some() || announce.is_some()) {
        return Err(CommandError::new(Kind::Usage, "review --restore has no JSON output: leave out --json"));
    }
    let cwd = std::env::current_dir()?;
    let Some(dir) = merge_log::log_dir(&cwd) else {
        if announce.is_some() {
            return Ok(ExitCode::SUCCESS);
        }
        return Err(CommandError::new(Kind::Error, "not in a git repository: the merge log lives in the repository's git directory"));
    };
    if let Some(hook_arg) = announce {
        let event = merge_log::HookEvent::from_arg(Some(hook_arg.as_str()).filter(|a| !a.is_empty()));
        if let Some(announcement) = merge_log::announce(&dir, &cwd, event)? {
            eprintln!("{}", announcement.text(&common::fix::word));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(n) = restore {
        let file = default_issues_file(file.as_ref())?;
        let outcome = match n.parse::<u64>() {
            Ok(seq) => merge_log::restore(&dir, seq, &file)?,
            Err(_) => restore_from_commit(&cwd, &n, &file)?,
        };
        return Ok(match outcome {
            merge_log::RestoreOutcome::Restored(done) => {
                eprintln!(
                    "bd-merge: {}: {}: {} restored from {}{}; commit it like any edit",
                    beads_git::record::printable(&done.path, 400),
                    beads_git::record::printable(&done.id, 200),
                    beads_git::record::printable(&done.field, 200),
                    if n.parse::<u64>().is_ok() {
                        format!("the merge log (#{n})")
                    } else {
                        format!("a merge commit's trailer (#{})", beads_git::record::printable(&n, 80))
                    },
                    done.updated_at.map(|u| format!(", updated_at {u}")).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            merge_log::RestoreOutcome::Refused(why) => {
                eprintln!("bd-merge: not restored: {}", why.text(&common::fix::word));
                ExitCode::from(1)
            }
        });
    }
    let now = beads_git::timestamp::merge_now()?;
    let since = since.map(|s| merge_log::parse_since(&s, now).map_err(|e| anyhow::anyhow!("--since {e}"))).transpose()?;
    let all = merge_log::read_all(&dir)?;
    let listed = with_commit_trailers(&cwd, all.clone());
    let shown = merge_log::select(listed, &merge_log::Filter { last, since, id });
    if json {
        outln!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        out!("{}", merge_log::render(&shown, &common::fix::word));
    }
    // Listing them is reviewing them: `bd-sync check` stops mentioning what was shown.
    let shown_here: Vec<merge_log::Entry> = shown.into_iter().filter(|e| e.commit.is_none()).collect();
    if let Err(e) = merge_log::mark_reviewed(&dir, &all, &shown_here) {
        eprintln!("bd-merge: warning: {e:#}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The local log's entries (oldest first) with the decisions that `update-branch` merge commits
/// in HEAD's history carry as trailers, in time order; a trailer this clone's own log already
/// holds (update-branch ran here) is listed once. A history that cannot be read costs the
/// trailers alone, with a warning.
fn with_commit_trailers(cwd: &std::path::Path, local: Vec<beads_git::merge_log::Entry>) -> Vec<beads_git::merge_log::Entry> {
    let from_commits = match beads_git::merge_trailers::from_history(cwd) {
        Ok(entries) => entries,
        Err(e) => {
            eprintln!("bd-merge: warning: {}", beads_git::record::printable_lines(&format!("{e:#}")));
            return local;
        }
    };
    let here = |t: &beads_git::merge_log::Entry| {
        local.iter().any(|e| e.command == t.command && e.head == t.head && e.id == t.id && e.field == t.field)
    };
    let fresh: Vec<_> = from_commits.into_iter().filter(|t| !here(t)).collect();
    if fresh.is_empty() {
        return local;
    }
    let mut all = local;
    all.extend(fresh);
    let at = |e: &beads_git::merge_log::Entry| beads_git::timestamp::parse(&e.time).map(|t| (t.seconds, t.nanos));
    all.sort_by_key(at);
    all
}

/// `--restore HASH:N`: the N-th trailer decision of a merge commit in HEAD's history, restored
/// as the local log's entries are (the field must still hold what the merge commit holds).
fn restore_from_commit(cwd: &std::path::Path, address: &str, file: &std::path::Path) -> anyhow::Result<merge_log::RestoreOutcome> {
    let entries = beads_git::merge_trailers::from_history(cwd)?;
    // A believed entry carries the value its merge commit's file holds (`from_history`).
    let entry = match beads_git::merge_trailers::find(&entries, address) {
        Ok(e) => e.clone(),
        Err(why) => return Ok(merge_log::RestoreOutcome::Refused(why)),
    };
    merge_log::restore_entry(entry, file)
}
