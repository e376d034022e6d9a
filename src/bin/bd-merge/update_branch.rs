//! `bd-merge update-branch BASE`: merge a base branch into a pull request's branch in CI, with the
//! field-level driver registered for this command only.

use crate::common::error::CommandResult;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The branch to merge in (`main`, or `origin/main`).
    base: String,
    /// Push the merge commit to the branch's upstream.
    #[arg(long)]
    push: bool,
    /// The merge commit's first line [default: "Merge BASE into BRANCH"].
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
    /// The branch this checkout is for, when HEAD is detached.
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    #[command(flatten)]
    pub(crate) json: crate::common::args::Json,
}

pub(crate) fn run(args: Args, global: crate::Global) -> CommandResult {
    let Args { base, push, message, branch, json: _ } = args;
    let json = global.json;
    use beads_git::update_branch::{update_branch, UpdateError, UpdateOptions, UpdateOutcome};
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("finding the running executable: {e}"))?;
    let options = UpdateOptions {
        repo: std::env::current_dir()?,
        base,
        branch,
        push,
        message,
        bd_merge: std::fs::canonicalize(&exe).unwrap_or(exe),
        notice: |line| eprintln!("{line}"),
    };
    // The errors a person acts on are worded here (they name flags and commands); the rest keep
    // their context chain.
    let outcome = update_branch(&options).map_err(|e| match e {
        UpdateError::Failed(e) => e,
        other => anyhow::anyhow!(other.text(&crate::common::fix::word)),
    })?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        match &outcome {
            UpdateOutcome::UpToDate { .. } => eprintln!("bd-merge: already up to date with {}", options.base),
            UpdateOutcome::Merged { commit, pushed, issues, overridden } => eprintln!(
                "bd-merge: merged {} ({} issue(s) merged field by field, {} value(s) overridden): {commit}{}",
                options.base,
                issues.len(),
                overridden.len(),
                if *pushed { ", pushed" } else { "" }
            ),
            UpdateOutcome::Conflicts { files } => eprintln!(
                "bd-merge: merging {} conflicts in files other than the issues file, so nothing was changed; \
                 merge it by hand:\n  {}",
                options.base,
                files.iter().map(|f| beads_git::record::printable(f, 400)).collect::<Vec<_>>().join("\n  ")
            ),
        }
    }
    Ok(ExitCode::from(outcome.exit_code()))
}
