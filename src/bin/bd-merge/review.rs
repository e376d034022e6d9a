//! `bd-merge review`: the values merges dropped in this clone (the merge log), and putting one
//! back with `--restore`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::default_issues_file;

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
    /// Typed JSON on stdout, an array of log entries (shape in the README).
    #[arg(long)]
    pub(crate) json: bool,
    /// Put entry N's dropped value back into the working issues file, as a new edit to commit.
    #[arg(long, value_name = "N", conflicts_with_all = ["last", "since", "id", "json"])]
    restore: Option<u64>,
    /// The issues file --restore edits [default: the repository's .beads/issues.jsonl].
    #[arg(long, value_name = "PATH", requires = "restore")]
    file: Option<PathBuf>,
    /// For the post-merge / post-rewrite hook: print one line when merges dropped values since
    /// it last printed, nothing otherwise.
    #[arg(long, hide = true, conflicts_with_all = ["last", "since", "id", "json", "restore"])]
    announce: bool,
    /// With --announce: the hook's first argument (post-merge's squash flag, post-rewrite's
    /// `amend` or `rebase`), when the hook could pass it on.
    #[arg(hide = true, requires = "announce", allow_hyphen_values = true)]
    hook_arg: Option<String>,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { last, since, id, json, restore, file, announce, hook_arg } = args;
    use beads_git::merge_log;
    let cwd = std::env::current_dir()?;
    let Some(dir) = merge_log::log_dir(&cwd) else {
        if announce {
            return Ok(ExitCode::SUCCESS);
        }
        anyhow::bail!("not in a git repository: the merge log lives in the repository's git directory");
    };
    if announce {
        let event = merge_log::HookEvent::from_arg(hook_arg.as_deref().filter(|a| !a.is_empty()));
        if let Some(line) = merge_log::announce(&dir, &cwd, event)? {
            eprintln!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(n) = restore {
        let file = default_issues_file(file.as_ref())?;
        return Ok(match merge_log::restore(&dir, n, &file)? {
            merge_log::RestoreOutcome::Restored(done) => {
                eprintln!(
                    "bd-merge: {}: {}: {} restored from the merge log (#{n}){}; commit it like any edit",
                    beads_git::record::printable(&done.path, 400),
                    beads_git::record::printable(&done.id, 200),
                    beads_git::record::printable(&done.field, 200),
                    done.updated_at.map(|u| format!(", updated_at {u}")).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            merge_log::RestoreOutcome::Refused(why) => {
                eprintln!("bd-merge: not restored: {why}");
                ExitCode::from(1)
            }
        });
    }
    let now = beads_git::timestamp::merge_now()?;
    let since = since.map(|s| merge_log::parse_since(&s, now)).transpose()?;
    let all = merge_log::read_all(&dir)?;
    let shown = merge_log::select(all.clone(), &merge_log::Filter { last, since, id });
    if json {
        println!("{}", serde_json::to_string_pretty(&shown)?);
    } else {
        print!("{}", merge_log::render(&shown));
    }
    // Listing them is reviewing them: `bd-sync check` stops mentioning what was shown.
    if let Err(e) = merge_log::mark_reviewed(&dir, &all, &shown) {
        eprintln!("bd-merge: warning: {e:#}");
    }
    Ok(ExitCode::SUCCESS)
}
